//! `zklock exec PATH -- CMD...`: run a command while holding a lock, stop it if the lock is lost.

use std::ffi::OsString;
use std::time::Duration;

use zklock::{Lease, LeaseState, Lock, Released};

use crate::child::{self, Signals};
use crate::settings::Settings;
use crate::status::{self, Failure};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Mutex,
    Read,
    Write,
    /// One lease of a semaphore of this many leases.
    Semaphore(u32),
}

pub struct Args<'a> {
    pub path: &'a str,
    pub side: Side,
    pub try_lock: bool,
    pub kill_after: Duration,
    /// Print the wait and hold time (`--stats`) when the command ends.
    pub stats: bool,
    /// `--max-hold`: the core ends the lease after this long (lost, reason max-hold).
    pub max_hold: Option<Duration>,
    /// `--lock-delay`: Chubby's lock-delay on the mutex (`Lock::lock_delay`).
    pub lock_delay: Option<Duration>,
    pub command: &'a [OsString],
}

/// `--stats`: the core's statistics of this run's client, on stderr (the command's stdout stays
/// its own): how long the lock was waited for and held, and what happened to the lease.
fn print_stats(client: &zklock::Client, path: &str) {
    let s = client.stats();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    eprintln!(
        "zklock: stats for {path}: waited {:.1} ms, held {:.1} ms (acquired {}, timed out {}, suspended {}, lost {}, reconnects {}, session expiries {})",
        ms(s.wait.max),
        ms(s.hold.max),
        s.acquired,
        s.timed_out,
        s.suspended,
        s.lost,
        s.reconnects,
        s.session_expiries
    );
}

pub async fn run(cli: &Settings, args: Args<'_>) -> Result<i32, Failure> {
    let path = args.path;
    crate::settings::announce_lock_delay(args.lock_delay);
    let mut signals = Signals::new()?;
    // --timeout bounds the whole wait, connecting included: an unreachable ensemble fails
    // within it, not after --connect-timeout (a try still gets the connect timeout: it makes
    // one attempt at the lock, and connecting comes before that attempt).
    let started = std::time::Instant::now();
    let try_now = args.try_lock || cli.timeout == Some(Duration::ZERO);
    let client = match connect(cli, path, try_now, &mut signals).await? {
        Ok(client) => client,
        Err(sig) => return Ok(128 + sig),
    };
    let (mutex, rw);
    let lock: &Lock = match args.side {
        Side::Mutex => {
            mutex = client
                .mutex(path)?
                .max_hold(args.max_hold)?
                .lock_delay(args.lock_delay)?;
            &mutex
        }
        Side::Semaphore(n) => {
            mutex = client
                .semaphore(path, n)?
                .max_hold(args.max_hold)?
                .lock_delay(args.lock_delay)?;
            &mutex
        }
        Side::Read | Side::Write => {
            if args.lock_delay.is_some() {
                return Err(Failure::new(
                    crate::status::USAGE,
                    "--lock-delay applies to a mutex, not to --read or --write",
                ));
            }
            rw = client.rw_lock(path)?.max_hold(args.max_hold)?;
            if args.side == Side::Read {
                rw.read()
            } else {
                rw.write()
            }
        }
    };
    // A timeout too large for the clock is the same as none.
    let deadline = if try_now {
        Some(std::time::Instant::now())
    } else {
        cli.timeout.and_then(|limit| started.checked_add(limit))
    };
    // Cancelling through the token (not by dropping the future) makes the acquire remove its
    // node before it returns, so exiting afterwards leaves nothing behind.
    let cancel = zklock::CancelToken::new();
    let acquired = match until_signal(
        lock.acquire_with(deadline, cancel.clone()),
        &cancel,
        &mut signals,
    )
    .await
    {
        Err(sig) => Err(Failure::new(128 + sig, String::new())),
        Ok(Ok(lease)) => Ok(lease),
        Ok(Err(e)) if e.kind() == zklock::ErrorKind::Timeout => Err(if try_now {
            busy(lock, path).await
        } else {
            let limit = cli.timeout.unwrap_or_default();
            Failure::new(
                status::BUSY,
                format!(
                    "timed out after {} waiting for the lock {path}{}",
                    zklock::support::duration_text(limit),
                    noted(&e)
                ),
            )
        }),
        Ok(Err(e)) => Err(Failure::from(e)),
    };
    let lease = match acquired {
        Ok(lease) => lease,
        Err(failure) => {
            close(&client).await;
            return if failure.message.is_empty() {
                Ok(failure.status)
            } else {
                Err(failure)
            };
        }
    };
    let token = lease.token();
    let env = [
        ("ZKLOCK_TOKEN", token.to_string()),
        ("ZKLOCK_PATH", path.to_owned()),
        ("ZKLOCK_NODE", lease.path().to_owned()),
    ];
    let what = format!("the lock {path}");
    let ended = match supervise(
        &lease,
        &mut signals,
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
            close(&client).await;
            return Err(failure);
        }
    };
    let released = lease.release().await;
    if args.stats {
        print_stats(&client, path);
    }
    close(&client).await;
    match ended {
        Ended::Exited { status, .. } => match released {
            Ok(Released::WasLost) => Err(Failure::new(
                status::LOST,
                format!(
                    "the lock {path} (token {token}) was lost as the command ended (its status was {status})"
                ),
            )),
            Ok(_) => Ok(status),
            Err(e) => {
                eprintln!(
                    "zklock: warning: releasing {path}: {} (the node goes with the session)",
                    status::one_line(e.message())
                );
                Ok(status)
            }
        },
        Ended::Lost { reason } => Err(Failure::new(
            status::LOST,
            format!("the command was stopped because the lock {path} was lost ({reason})"),
        )),
    }
}

/// Connects for a command that waits for a lease: `--timeout` bounds connecting too (a try
/// gets the connect timeout). `Err(signal)` when SIGINT, SIGTERM or SIGHUP came first.
pub async fn connect(
    cli: &Settings,
    path: &str,
    try_now: bool,
    signals: &mut Signals,
) -> Result<Result<zklock::Client, i32>, Failure> {
    let connect_within = match cli.timeout {
        Some(limit) if !try_now => limit.min(cli.connect_timeout),
        _ => cli.connect_timeout,
    };
    tokio::select! {
        c = crate::settings::connect_within(cli, path, connect_within) => Ok(Ok(c?)),
        sig = signals.recv() => Ok(Err(sig)),
    }
}

/// Waits for an acquire (or a run for leader) unless a signal comes first: then `cancel` makes
/// it remove its node, a lease that came in the same instant is given back, and the signal's
/// number is the error.
pub async fn until_signal(
    acquire: impl std::future::Future<Output = zklock::Result<Lease>>,
    cancel: &zklock::CancelToken,
    signals: &mut Signals,
) -> Result<zklock::Result<Lease>, i32> {
    tokio::pin!(acquire);
    tokio::select! {
        r = &mut acquire => Ok(r),
        sig = signals.recv() => {
            cancel.cancel();
            // The lock may have come in the same instant: then give it back.
            if let Ok(lease) = acquire.await {
                let _ = lease.release().await;
            }
            Err(sig)
        }
    }
}

/// How a command run under a lease ended.
#[derive(Debug)]
pub enum Ended {
    /// It exited by itself (or after a signal passed on to it) with this status (128+N when
    /// signal N killed it); `signalled` when zklock got SIGINT, SIGTERM or SIGHUP meanwhile.
    Exited { status: i32, signalled: bool },
    /// The lease was lost while it ran: it got SIGTERM (SIGKILL after `kill_after`) and has
    /// stopped. `reason`: the core's lost reason.
    Lost { reason: String },
}

/// Runs `command` with `env` while `lease` lasts: signals to zklock are passed on, the
/// suspended / back states are reported on stderr (`what` names the lease: "the lock /x"),
/// and when the lease is lost the command gets SIGTERM, then SIGKILL after `kill_after`.
/// Does not release the lease. A command that cannot start is a failure (126 or 127).
pub async fn supervise(
    lease: &Lease,
    signals: &mut Signals,
    argv: &[OsString],
    env: &[(&str, String)],
    kill_after: Duration,
    what: &str,
) -> Result<Ended, Failure> {
    let mut child = child::spawn(argv, env)?;
    let command = child.signaller();
    // The watchdog keeps the lease's deadline while zklock cannot (stopped, issue 50): it is
    // fed `valid_until` from here on, at once and then as it moves.
    child.guard(kill_after);
    let mut next_feed = feed(&mut child, lease);
    let (state_tx, mut states) = tokio::sync::mpsc::unbounded_channel();
    lease.on_state(move |s| {
        let _ = state_tx.send(s);
    });
    let lost = lease.lost();
    tokio::pin!(lost);
    let mut signalled = false;
    let outcome = loop {
        tokio::select! {
            st = child.wait() => break Some(st),
            _ = &mut lost => break None,
            _ = tokio::time::sleep_until(next_feed) => next_feed = feed(&mut child, lease),
            sig = signals.recv() => {
                signalled = true;
                command.pass_on(sig);
            }
            Some(state) = states.recv() => match state {
                LeaseState::Suspended => eprintln!(
                    "zklock: lost contact with ZooKeeper; {what} is suspended (lost unless contact is back within the session timeout)"
                ),
                LeaseState::Held => eprintln!("zklock: contact with ZooKeeper is back; still holding {what}"),
                _ => {}
            },
        }
    };
    match outcome {
        Some(waited) => {
            let status =
                waited.map_err(|e| Failure::software(format!("waiting for the command: {e}")))?;
            if child.stopped_by_watchdog() {
                // The watchdog's deadline came before zklock's own notice (zklock was stopped,
                // or the two met at the deadline): the command stopped because the lease ended,
                // so this ends as lost. The core says so within moments; its reason is wanted.
                let _ = tokio::time::timeout(Duration::from_secs(1), &mut lost).await;
                let reason = lost_reason(lease);
                let kill = if child.killed_by_watchdog() {
                    format!(
                        ", and SIGKILL {} later",
                        zklock::support::duration_text(kill_after)
                    )
                } else {
                    String::new()
                };
                say(&format!(
                    "zklock: lost {what} (token {}): {reason}; its watchdog sent the command SIGTERM at the lease's deadline{kill}",
                    lease.token()
                ));
                return Ok(Ended::Lost { reason });
            }
            Ok(Ended::Exited { status, signalled })
        }
        None => {
            let reason = lost_reason(lease);
            say(&format!(
                "zklock: lost {what} (token {}): {reason}; {}",
                lease.token(),
                child::STOPPING
            ));
            child.stop();
            let stopped = tokio::time::timeout(kill_after, async {
                loop {
                    tokio::select! {
                        st = child.wait() => return st,
                        sig = signals.recv() => command.pass_on(sig),
                    }
                }
            })
            .await;
            let within = zklock::support::duration_text(kill_after);
            if stopped.is_err() {
                eprintln!("zklock: the command did not stop within {within}; sending SIGKILL");
                command.send(child::SIGKILL);
                let _ = child.wait().await;
            } else if child.killed_by_watchdog() {
                // Its SIGKILL, counted from its own SIGTERM, came before zklock's.
                eprintln!(
                    "zklock: the command did not stop within {within}; its watchdog sent SIGKILL"
                );
            }
            Ok(Ended::Lost { reason })
        }
    }
}

/// Feeds the watchdog the lease's `valid_until`; returns when to look again. The deadline
/// moves with each answered heartbeat, and the core says so to no one, so it is read often:
/// every 100 ms, and as often as every 5 ms in the last stretch before the fed deadline (a
/// renewal read later than the deadline would be a stop while the lease still holds).
fn feed(child: &mut child::Child, lease: &Lease) -> tokio::time::Instant {
    let now = std::time::Instant::now();
    let again = match lease.valid_until() {
        Some(until) => {
            child.feed(until);
            (until.saturating_duration_since(now) / 4)
                .clamp(Duration::from_millis(5), Duration::from_millis(100))
        }
        None => Duration::from_millis(100),
    };
    tokio::time::Instant::from_std(now + again)
}

/// The core's reason for a lost lease, one line, without the path it repeats
/// ("the lease on /x lost: max-hold: ..." → "max-hold: ...").
pub fn lost_reason(lease: &Lease) -> String {
    let reason = lease
        .lost_reason()
        .unwrap_or_else(|| "session expired, node deleted or no contact with ZooKeeper".to_owned());
    let reason = reason
        .split_once(" lost: ")
        .map_or(reason.as_str(), |(_, why)| why);
    status::one_line(reason)
}

/// The busy failure, naming the holder when we can see it.
/// The core's note on an error (what the connection did meanwhile), as "; note", for a message
/// the command line words its own way: a timeout filled by a server that kept breaking the
/// connection must not read as a contended lock.
pub fn noted(e: &zklock::Error) -> String {
    e.note().map(|n| format!("; {n}")).unwrap_or_default()
}

async fn busy(lock: &Lock, path: &str) -> Failure {
    let holder = tokio::time::timeout(Duration::from_secs(2), lock.participants())
        .await
        .ok()
        .and_then(|r| r.ok())
        .and_then(|q| q.into_iter().next());
    let who = match holder {
        Some(p) => format!(
            " (held by {}, token {}, {} node)",
            if p.identity.is_empty() {
                "an unnamed holder".to_owned()
            } else {
                status::one_line(&p.identity)
            },
            p.token,
            p.library.as_str()
        ),
        None => String::new(),
    };
    Failure::new(status::BUSY, format!("the lock {path} is busy{who}"))
}

/// Closes the session and gives its close request a moment to reach the server (which then
/// drops the session at once instead of after the session timeout).
pub async fn close(client: &zklock::Client) {
    client.close().await;
    tokio::time::sleep(Duration::from_millis(20)).await;
}

/// Writes one line to stderr in one write. The command shares the stream, and `eprintln!`
/// writes its pieces one by one: a shell's "Terminated", printed as the watchdog's SIGTERM met
/// zklock's own notice, landed inside "zklock: lost … the leadership of …" (a loaded run of
/// `cli/tests/elect.rs`). A line under `PIPE_BUF` (4096 bytes) written at once is never split.
fn say(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr()
        .lock()
        .write_all(format!("{line}\n").as_bytes());
}
