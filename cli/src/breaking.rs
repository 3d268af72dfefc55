//! `zklock break PATH [NODE|--holder] --reason TEXT`: shows the holder (node, token, identity,
//! session, age: what `zklock ls` shows), then deletes its node through the core's
//! `Client::break_lock` (version-checked) and prints the broken token. Without an explicit
//! NODE or `--holder` it only shows the holders and refuses (status 64): breaking is never the
//! default.

use zklock::Participant;

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

/// Runs `zklock break`. Prints the broken token on stdout; the holder and the reason on stderr.
pub async fn run(
    cli: &Settings,
    path: &str,
    node: Option<&str>,
    holder: bool,
    reason: &str,
) -> Result<i32, Failure> {
    let client = crate::settings::connect(cli, path).await?;
    let result = run_on(&client, path, node, holder, reason).await;
    client.close().await;
    result
}

async fn run_on(
    client: &zklock::Client,
    path: &str,
    node: Option<&str>,
    holder: bool,
    reason: &str,
) -> Result<i32, Failure> {
    let queue = client.mutex(path)?.participants().await?;
    let holders = holders_of(&queue);
    let now = now_ms();
    let target = match (node, holder) {
        (Some(node), _) => queue
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
            })?,
        (None, _) if holders.is_empty() => {
            return Err(Failure::new(
                NOBODY,
                format!("nobody holds {path}: nothing to break"),
            ))
        }
        (None, true) if holders.len() == 1 => holders[0],
        (None, confirmed) => {
            for h in &holders {
                eprintln!("holder: {}", describe(h, now));
            }
            let why = if confirmed {
                "more than one holder: name the NODE to break"
            } else {
                "name the NODE to break, or pass --holder to break the holder shown"
            };
            return Err(Failure::new(USAGE, format!("not broken: {why}")));
        }
    };
    eprintln!("breaking: {}", describe(target, now));
    eprintln!("reason: {}", one_line(reason));
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
