//! `zklock break PATH [NODE|--holder] [--token T] [--if-older-than D] [--force] --reason TEXT`:
//! shows the holder (node, token, identity, session, age: what `zklock ls` shows), then deletes
//! its node through the core's `Client::break_lock` (version-checked) and prints the broken
//! token. Breaking is never the default: without NODE it only shows the holders and refuses
//! (status 64), printing the exact command that breaks the holder shown.
//!
//! `--holder` alone is refused too (issue 51): it means "whoever holds when this runs", so a
//! second operator running the same command a moment later (or the same command retried)
//! broke the innocent next holder, 3 times of 3. `--token T` or `--if-older-than D` make the
//! command idempotent: the next holder has another token and a young node. A NODE named is
//! safe already (the next holder has another node).
//!
//! A holder of another library (Curator, kazoo) watches nothing once it holds, so it goes on
//! believing it holds after its node is deleted (docs/interop.md, "Breaking a lock"): the
//! command warns naming the library and asks for `--force`.

use std::time::Duration;

use zklock::{Library, Participant};

use crate::settings::Settings;
use crate::status::{one_line, Failure, NOBODY, USAGE};

/// One contender as the command shows it before breaking it.
fn describe(p: &Participant, now_ms: i64) -> String {
    format!(
        "{}  token {}  identity {:?}  session 0x{:x}  age {}  ({})",
        p.node,
        p.token,
        p.identity.chars().take(64).collect::<String>(),
        p.session_id,
        crate::ls::age(now_ms, p.created_ms),
        p.library.as_str(),
    )
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The holders of `path`, as `zklock ls` decides them.
fn holders_of(queue: &[Participant]) -> Vec<&Participant> {
    let holds = crate::ls::holders(queue);
    queue
        .iter()
        .zip(holds)
        .filter(|(_, h)| *h)
        .map(|(p, _)| p)
        .collect()
}

/// What the operator asked to break, and the guards that keep a repeated command from
/// breaking a later holder.
pub struct Wanted<'a> {
    pub node: Option<&'a str>,
    pub holder: bool,
    pub token: Option<i64>,
    pub older_than: Option<Duration>,
    pub force: bool,
}

/// Runs `zklock break`. Prints the broken token on stdout; the holder and the reason on stderr.
pub async fn run(
    cli: &Settings,
    path: &str,
    wanted: Wanted<'_>,
    reason: &str,
) -> Result<i32, Failure> {
    let client = crate::settings::connect(cli, path).await?;
    let result = run_on(&client, path, &wanted, reason).await;
    client.close().await;
    result
}

/// A word as a POSIX shell reads it back unchanged (single quotes when it needs any).
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_./:=,@%+-".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// This very command line with `--holder --token T` after `break`: the command that breaks the
/// holder shown and nobody after it, with the operator's own connection options and reason.
fn safe_command(args: &[String], token: i64) -> String {
    let mut out: Vec<String> = Vec::with_capacity(args.len() + 3);
    let mut after_break = false;
    let mut skip_value = false;
    for (i, a) in args.iter().enumerate() {
        if skip_value {
            skip_value = false;
            continue;
        }
        if i == 0 {
            out.push("zklock".into());
            continue;
        }
        // The guards given are replaced by the token, the one that names this holder alone.
        if after_break && (a == "--token" || a == "--if-older-than") {
            skip_value = true;
            continue;
        }
        if after_break
            && (a == "--holder" || a.starts_with("--token=") || a.starts_with("--if-older-than="))
        {
            continue;
        }
        out.push(shell_word(a));
        if a == "break" && !after_break {
            after_break = true;
            out.extend(["--holder".into(), "--token".into(), token.to_string()]);
        }
    }
    out.join(" ")
}

/// The refusal of a break that names no guard: the holders shown, each with its safe command.
fn refuse(holders: &[&Participant], now: i64, why: &str) -> Failure {
    let args: Vec<String> = std::env::args().collect();
    for h in holders {
        eprintln!("holder: {}", describe(h, now));
        eprintln!("  to break it: {}", safe_command(&args, h.token));
    }
    Failure::new(USAGE, format!("not broken: {why}"))
}

/// Whether `p` passes the guards: its token is T, its node older than D.
fn guarded(p: &Participant, wanted: &Wanted<'_>, now: i64) -> bool {
    let old_enough = wanted.older_than.is_none_or(|d| {
        (now - p.created_ms).max(0) > i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
    });
    wanted.token.is_none_or(|t| t == p.token) && old_enough
}

/// Why no contender passed the guards: the same command run after the holder changed.
fn unguarded(path: &str, wanted: &Wanted<'_>, seen: &[&Participant], now: i64) -> Failure {
    for h in seen {
        eprintln!("holder: {}", describe(h, now));
    }
    let mut want = Vec::new();
    if let Some(t) = wanted.token {
        want.push(format!("token {t}"));
    }
    if let Some(d) = wanted.older_than {
        want.push(format!("held over {}", zklock::support::duration_text(d)));
    }
    Failure::new(
        NOBODY,
        format!(
            "not broken: no holder of {path} is {} (it was released or broken already, and \
             whoever holds now is another)",
            want.join(" and ")
        ),
    )
}

/// The library of a holder that cannot notice its node deleted, if it is one.
fn blind(p: &Participant) -> Option<&'static str> {
    match p.library {
        Library::Zklock => None,
        Library::Curator => Some("Curator"),
        Library::Kazoo => Some("kazoo"),
        Library::GoZookeeper => Some("go-zookeeper"),
        _ => Some("an unknown library"),
    }
}

async fn run_on(
    client: &zklock::Client,
    path: &str,
    wanted: &Wanted<'_>,
    reason: &str,
) -> Result<i32, Failure> {
    let queue = client.mutex(path)?.participants().await?;
    let holders = holders_of(&queue);
    let now = now_ms();
    let has_guard = wanted.token.is_some() || wanted.older_than.is_some();
    let target = match wanted.node {
        Some(node) => {
            let named = queue
                .iter()
                .find(|p| p.node == node || p.node.rsplit('/').next() == Some(node))
                .ok_or_else(|| {
                    Failure::new(
                        NOBODY,
                        format!(
                            "no node {:?} among the contenders of {path}: nothing to break",
                            node.chars().take(64).collect::<String>()
                        ),
                    )
                })?;
            if !guarded(named, wanted, now) {
                return Err(unguarded(path, wanted, &[named], now));
            }
            named
        }
        None if holders.is_empty() => {
            return Err(Failure::new(
                NOBODY,
                format!("nobody holds {path}: nothing to break"),
            ))
        }
        None if !wanted.holder && !has_guard => {
            return Err(refuse(
                &holders,
                now,
                "name the NODE to break, or confirm with --holder and the holder's --token",
            ))
        }
        None if !has_guard => {
            return Err(refuse(
                &holders,
                now,
                "--holder alone breaks whoever holds when it runs (run again, the next \
                 holder): add --token (or --if-older-than, or name the NODE)",
            ))
        }
        None => {
            let passing: Vec<&Participant> = holders
                .iter()
                .copied()
                .filter(|p| guarded(p, wanted, now))
                .collect();
            match passing[..] {
                [] => return Err(unguarded(path, wanted, &holders, now)),
                [one] => one,
                _ => {
                    return Err(refuse(
                        &passing,
                        now,
                        "more than one holder passes: name the NODE or its --token",
                    ))
                }
            }
        }
    };
    eprintln!("breaking: {}", describe(target, now));
    // Only a holder is told apart: a waiter of any library lists its queue again and finds its
    // node gone (Curator's `internalLockLoop`, kazoo's `_inner_acquire`).
    if let Some(library) = blind(target).filter(|_| holders.iter().any(|h| h.node == target.node)) {
        // The library is told by the node's name; a zklock election in kazoo's style names its
        // nodes as kazoo does (a random uuid4), so the name cannot tell it from kazoo.
        let alike = if target.library == Library::Kazoo {
            " (or a `zklock elect --style kazoo` participant, which would notice)"
        } else {
            ""
        };
        eprintln!(
            "warning: {} is held by {library}{alike}, which does not watch its node once it \
             holds: that process will go on believing it holds the lock (docs/interop.md, \
             \"Breaking a lock\"); stop it too",
            target.node
        );
        if !wanted.force {
            return Err(Failure::new(
                USAGE,
                format!("not broken: {library}'s holder cannot notice a break; add --force"),
            ));
        }
    }
    eprintln!("reason: {}", one_line(reason));
    eprintln!("by: {}", zklock::support::operator_identity());
    let broken = client.break_lock(path, &target.node, Some(reason)).await;
    match broken {
        Ok(p) => {
            println!("{}", p.token);
            Ok(0)
        }
        Err(e) if e.kind() == zklock::ErrorKind::NotHeld => {
            Err(Failure::new(NOBODY, one_line(e.message())))
        }
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn the_safe_command_is_the_one_run_with_the_token_in_place_of_other_guards() {
        let args = words(
            "/usr/bin/zklock --servers zk1:2181 break --holder --if-older-than 2h --reason x /l",
        );
        assert_eq!(
            safe_command(&args, 42),
            "zklock --servers zk1:2181 break --holder --token 42 --reason x /l"
        );
        let mut quoted = words("zklock break --reason");
        quoted.extend(["job's hung".into(), "/l".into()]);
        assert_eq!(
            safe_command(&quoted, 7),
            r"zklock break --holder --token 7 --reason 'job'\''s hung' /l"
        );
    }
}
