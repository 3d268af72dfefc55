//! `zklock elect PATH -- CMD...`: run a command while leader of an election (the core's
//! `Election`, issue 25), with exec's kill-on-loss; `zklock elect --listen PATH`: print the
//! leader at every change; `zklock check PATH TOKEN`: is TOKEN a current holder's or leader's.

use std::ffi::OsString;
use std::io::Write as _;
use std::time::Duration;

use serde_json::json;
use zklock::{ElectionStyle, Participant, Released, Wait};

use crate::child::Signals;
use crate::exec::{self, Ended};
use crate::settings::Settings;
use crate::status::{self, Failure};

pub struct Args<'a> {
    pub path: &'a str,
    pub style: ElectionStyle,
    pub id: Option<&'a str>,
    pub requeue: bool,
    pub kill_after: Duration,
    pub max_hold: Option<Duration>,
    pub lock_delay: Option<Duration>,
    pub command: &'a [OsString],
}

/// The failure of a run for leader: the core's error with the command line's status (a
/// timeout is "busy", a refusal beside another layout is [`status::CONFLICT`]).
fn lead_failure(e: zklock::Error, path: &str, timeout: Option<Duration>) -> Failure {
    match e.kind() {
        zklock::ErrorKind::Timeout => match timeout {
            Some(limit) if !limit.is_zero() => Failure::new(
                status::BUSY,
                format!(
                    "timed out after {} waiting to lead {path}{}",
                    zklock::support::duration_text(limit),
                    crate::exec::noted(&e)
                ),
            ),
            _ => Failure::new(status::BUSY, format!("{path} has another leader")),
        },
        zklock::ErrorKind::Conflict => {
            Failure::new(status::CONFLICT, status::one_line(e.message()))
        }
        _ => Failure::from(e),
    }
}

pub async fn run(cli: &Settings, args: Args<'_>) -> Result<i32, Failure> {
    let path = args.path;
    let mut signals = Signals::new()?;
    let started = std::time::Instant::now();
    let try_now = cli.timeout == Some(Duration::ZERO);
    let client = match exec::connect(cli, path, try_now, &mut signals).await? {
        Ok(client) => client,
        Err(sig) => return Ok(128 + sig),
    };
    let result = lead_and_run(cli, &args, &client, &mut signals, started, try_now).await;
    exec::close(&client).await;
    result
}

async fn lead_and_run(
    cli: &Settings,
    args: &Args<'_>,
    client: &zklock::Client,
    signals: &mut Signals,
    started: std::time::Instant,
    try_now: bool,
) -> Result<i32, Failure> {
    let path = args.path;
    crate::settings::announce_lock_delay(args.lock_delay);
    let election = client
        .election(path, args.style, args.id)?
        .max_hold(args.max_hold)?
        .lock_delay(args.lock_delay)?;
    let wait = if try_now {
        Wait::Try
    } else {
        cli.timeout
            .and_then(|limit| started.checked_add(limit))
            .map_or(Wait::Forever, Wait::Until)
    };
    // The first run for leader is bounded by --timeout; a requeued one (the core's resign with
    // requeue) waits without limit.
    let cancel = zklock::CancelToken::new();
    let first = election.lead_with(wait, Some(cancel.clone()));
    let mut lease = match exec::until_signal(first, &cancel, signals).await {
        Err(sig) => return Ok(128 + sig),
        Ok(Ok(lease)) => lease,
        Ok(Err(e)) if e.kind() == zklock::ErrorKind::Timeout && try_now => {
            return Err(busy(&election, path).await)
        }
        Ok(Err(e)) => return Err(lead_failure(e, path, cli.timeout)),
    };
    let what = format!("the leadership of {path}");
    loop {
        let token = lease.token();
        let env = [
            ("ZKLOCK_LEADER", "1".to_owned()),
            ("ZKLOCK_LEADER_ID", election.id().to_owned()),
            ("ZKLOCK_TOKEN", token.to_string()),
            ("ZKLOCK_NODE", lease.path().to_owned()),
            ("ZKLOCK_PATH", path.to_owned()),
        ];
        let ended = match exec::supervise(
            &lease,
            signals,
            args.command,
            &env,
            args.kill_after,
            &what,
        )
        .await
        {
            Ok(ended) => ended,
            Err(failure) => {
                let _ = lease.release().await;
                return Err(failure);
            }
        };
        let again = match ended {
            Ended::Exited { status, signalled } if !args.requeue || signalled => {
                return match lease.release().await {
                    Ok(Released::WasLost) => Err(Failure::new(
                        status::LOST,
                        format!(
                            "the leadership of {path} (token {token}) was lost as the command ended (its status was {status})"
                        ),
                    )),
                    Ok(_) => Ok(status),
                    Err(e) => {
                        eprintln!(
                            "zklock: warning: resigning the leadership of {path}: {} (the node goes with the session)",
                            status::one_line(e.message())
                        );
                        Ok(status)
                    }
                };
            }
            Ended::Lost { reason } if !args.requeue => {
                let _ = lease.release().await;
                return Err(Failure::new(
                    status::LOST,
                    format!(
                        "the command was stopped because the leadership of {path} was lost ({reason})"
                    ),
                ));
            }
            Ended::Exited { status, .. } => {
                eprintln!(
                    "zklock: the command exited with status {status}; resigning and running for leader of {path} again"
                );
                requeue(&election, lease).await
            }
            Ended::Lost { .. } => {
                eprintln!("zklock: running for leader of {path} again");
                requeue(&election, lease).await
            }
        };
        let cancel = again.canceller();
        lease = match exec::until_signal(again, &cancel, signals).await {
            Err(sig) => return Ok(128 + sig),
            Ok(Ok(lease)) => lease,
            Ok(Err(e)) => return Err(lead_failure(e, path, None)),
        };
    }
}

/// Resigns (the next participant leads) and runs again at the tail: the core's
/// `Election::resign(lease, requeue = true)`. A resign that fails (no contact: the node goes
/// with the session) still runs again.
async fn requeue(election: &zklock::Election, lease: zklock::Lease) -> zklock::Acquire {
    match election.resign(lease, true).await {
        Ok(Some(again)) => again,
        Ok(None) => election.start_lead(Wait::Forever),
        Err(e) => {
            eprintln!(
                "zklock: warning: resigning the leadership of {}: {} (the node goes with the session)",
                election.path(),
                status::one_line(e.message())
            );
            election.start_lead(Wait::Forever)
        }
    }
}

/// The busy failure of a try, naming the leader when we can see it.
async fn busy(election: &zklock::Election, path: &str) -> Failure {
    let leader = tokio::time::timeout(Duration::from_secs(2), election.leader())
        .await
        .ok()
        .and_then(|r| r.ok())
        .flatten();
    let who = match leader {
        Some(p) => format!(" ({}, token {})", shown_id(&p), p.token),
        None => String::new(),
    };
    Failure::new(status::BUSY, format!("{path} has another leader{who}"))
}

fn shown_id(p: &Participant) -> String {
    if p.identity.is_empty() {
        "an unnamed leader".to_owned()
    } else {
        format!("led by {}", status::one_line(&p.identity))
    }
}

/// One line of `elect --listen`: the leader's id (on one line), or `none`.
pub fn listen_line(leader: Option<&Participant>) -> String {
    match leader {
        Some(p) => status::one_line(&p.identity),
        None => "none".to_owned(),
    }
}

/// One line of `elect --listen --json`: every key always present, null when nobody leads.
pub fn listen_json(path: &str, leader: Option<&Participant>) -> serde_json::Value {
    match leader {
        Some(p) => json!({
            "path": path,
            "id": p.identity,
            "node": p.node,
            "token": p.token,
            "session_id": format!("0x{:x}", p.session_id),
            "style": p.election_style().map(|s| s.as_str()),
            "library": p.library.as_str(),
            "kind": p.kind.as_str(),
        }),
        None => json!({
            "path": path,
            "id": null,
            "node": null,
            "token": null,
            "session_id": null,
            "style": null,
            "library": null,
            "kind": null,
        }),
    }
}

/// `zklock elect --listen PATH`: one line per leader change, the first one the leader now,
/// until interrupted (or after `count` lines).
pub async fn listen(
    cli: &Settings,
    path: &str,
    json: bool,
    count: Option<u64>,
) -> Result<i32, Failure> {
    let client = crate::settings::connect(cli, path).await?;
    let watch = client.observe_leader(path)?;
    let mut printed = 0u64;
    while count.is_none_or(|n| printed < n) {
        let leader = match watch.next(Wait::Forever).await {
            Ok(leader) => leader,
            Err(e) => {
                client.close().await;
                return Err(e.into());
            }
        };
        let line = if json {
            listen_json(path, leader.as_ref()).to_string()
        } else {
            listen_line(leader.as_ref())
        };
        let mut out = std::io::stdout().lock();
        if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
            // The reader went away (a closed pipe): stop quietly.
            break;
        }
        printed += 1;
    }
    client.close().await;
    Ok(0)
}

/// `zklock check PATH TOKEN`: 0 when TOKEN is a current holder's or leader's token (the core's
/// `Client::check`, Chubby's CheckSequencer), [`status::NOT_CURRENT`] when not.
pub async fn check(
    cli: &Settings,
    path: &str,
    token: i64,
    max_leases: Option<u32>,
    quiet: bool,
) -> Result<i32, Failure> {
    let client = crate::settings::connect(cli, path).await?;
    let current = client.check(path, token, max_leases).await;
    client.close().await;
    let current = current?;
    if !quiet {
        let is = if current { "is" } else { "is not" };
        println!("{path}: token {token} {is} a current holder's or leader's");
    }
    Ok(if current { 0 } else { status::NOT_CURRENT })
}

#[cfg(test)]
mod tests {
    use super::*;
    use zklock::{Library, NodeKind};

    #[test]
    fn listen_lines_name_the_leader_or_none() {
        let p = Participant {
            node: "/e/_c_x-latch-0000000003".into(),
            identity: "worker\n1".into(),
            token: 42,
            library: Library::Zklock,
            kind: NodeKind::Latch,
            session_id: 0xabc,
            created_ms: 0,
            max_leases: None,
        };
        assert_eq!(listen_line(Some(&p)), "worker 1");
        assert_eq!(listen_line(None), "none");
        let v = listen_json("/e", Some(&p));
        assert_eq!(v["id"], "worker\n1");
        assert_eq!(v["style"], "latch");
        assert_eq!(v["kind"], "latch");
        assert_eq!(v["session_id"], "0xabc");
        assert_eq!(v["token"], 42);
        let none = listen_json("/e", None);
        assert!(none["id"].is_null() && none["node"].is_null());
        assert_eq!(none["path"], "/e");
    }
}
