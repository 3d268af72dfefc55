//! `zklock exec PATH -- CMD...`: run a command while holding a lock, stop it if the lock is lost.

use std::ffi::OsString;
use std::process::ExitStatus;
use std::time::Duration;

use tokio::signal::unix::{signal, Signal, SignalKind};
use zklock::{LeaseState, Lock, Released};

use crate::status::{self, Failure};
use crate::Settings;

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

/// SIGINT, SIGTERM and SIGHUP, caught from the start so none kills us with a node behind.
struct Signals {
    int: Signal,
    term: Signal,
    hup: Signal,
}

impl Signals {
    fn new() -> Result<Signals, Failure> {
        let make = |kind| {
            signal(kind).map_err(|e| Failure::software(format!("cannot catch signals: {e}")))
        };
        Ok(Signals {
            int: make(SignalKind::interrupt())?,
            term: make(SignalKind::terminate())?,
            hup: make(SignalKind::hangup())?,
        })
    }

    async fn recv(&mut self) -> i32 {
        tokio::select! {
            _ = self.int.recv() => libc::SIGINT,
            _ = self.term.recv() => libc::SIGTERM,
            _ = self.hup.recv() => libc::SIGHUP,
        }
    }
}

/// Whether a signal we got should be passed to the command. SIGINT and SIGHUP typed at (or
/// raised by) the terminal already reach the whole foreground process group, the command
/// included; passing them on again would deliver them twice.
fn should_forward(sig: i32) -> bool {
    if sig == libc::SIGTERM {
        return true;
    }
    // SAFETY: plain syscalls on a descriptor we own.
    unsafe {
        let fd = libc::open(
            c"/dev/tty".as_ptr(),
            libc::O_RDONLY | libc::O_NOCTTY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return true;
        }
        let foreground = libc::tcgetpgrp(fd);
        libc::close(fd);
        foreground != libc::getpgrp()
    }
}

fn send(pid: i32, sig: i32) {
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(pid, sig);
    }
}

fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(sig)) => 128 + sig,
        _ => status::SOFTWARE,
    }
}

pub async fn run(cli: &Settings, args: Args<'_>) -> Result<i32, Failure> {
    let path = args.path;
    let mut signals = Signals::new()?;
    // --timeout bounds the whole wait, connecting included: an unreachable ensemble fails
    // within it, not after --connect-timeout (a try still gets the connect timeout: it makes
    // one attempt at the lock, and connecting comes before that attempt).
    let started = std::time::Instant::now();
    let try_now = args.try_lock || cli.timeout == Some(Duration::ZERO);
    let connect_within = match cli.timeout {
        Some(limit) if !try_now => limit.min(cli.connect_timeout),
        _ => cli.connect_timeout,
    };
    let client = tokio::select! {
        c = crate::connect_within(cli, path, connect_within) => c?,
        sig = signals.recv() => return Ok(128 + sig),
    };
    let (mutex, rw);
    let lock: &Lock = match args.side {
        Side::Mutex => {
            mutex = client.mutex(path)?;
            &mutex
        }
        Side::Semaphore(n) => {
            mutex = client.semaphore(path, n)?;
            &mutex
        }
        Side::Read | Side::Write => {
            rw = client.rw_lock(path)?;
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
    let acquire = lock.acquire_with(deadline, cancel.clone());
    tokio::pin!(acquire);
    let acquired = tokio::select! {
        r = &mut acquire => match r {
            Ok(lease) => Ok(lease),
            Err(e) if e.kind() == zklock::ErrorKind::Timeout => Err(if try_now {
                busy(lock, path).await
            } else {
                let limit = cli.timeout.unwrap_or_default();
                Failure::new(
                    status::BUSY,
                    format!("timed out after {limit:?} waiting for the lock {path}"),
                )
            }),
            Err(e) => Err(Failure::from(e)),
        },
        sig = signals.recv() => {
            cancel.cancel();
            // The lock may have come in the same instant: then give it back.
            if let Ok(lease) = acquire.await {
                let _ = lease.release().await;
            }
            Err(Failure::new(128 + sig, String::new()))
        }
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
    let program = &args.command[0];
    let mut command = tokio::process::Command::new(program);
    command
        .args(&args.command[1..])
        .env("ZKLOCK_TOKEN", token.to_string())
        .env("ZKLOCK_PATH", path)
        .env("ZKLOCK_NODE", lease.path());
    // If zklock itself dies (SIGKILL, OOM), its session and so the lock go soon after: the
    // command then gets SIGTERM instead of running on unprotected.
    let parent = std::process::id() as i32;
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        command.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            if libc::getppid() != parent {
                libc::raise(libc::SIGTERM);
            }
            Ok(())
        });
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            let _ = lease.release().await;
            close(&client).await;
            let status = if e.kind() == std::io::ErrorKind::NotFound {
                status::NOT_FOUND
            } else {
                status::CANNOT_EXECUTE
            };
            return Err(Failure::new(
                status,
                format!("cannot run {}: {e}", program.to_string_lossy()),
            ));
        }
    };
    let pid = child.id().map(|p| p as i32).unwrap_or(0);
    let (state_tx, mut states) = tokio::sync::mpsc::unbounded_channel();
    lease.on_state(move |s| {
        let _ = state_tx.send(s);
    });
    let lost = lease.lost();
    tokio::pin!(lost);
    let outcome = loop {
        tokio::select! {
            st = child.wait() => break Some(st),
            _ = &mut lost => break None,
            sig = signals.recv() => {
                if should_forward(sig) {
                    send(pid, sig);
                }
            }
            Some(state) = states.recv() => match state {
                LeaseState::Suspended => eprintln!(
                    "zklock: lost contact with ZooKeeper; the lock {path} is suspended (lost unless contact is back within the session timeout)"
                ),
                LeaseState::Held => eprintln!("zklock: contact with ZooKeeper is back; still holding {path}"),
                _ => {}
            },
        }
    };
    match outcome {
        Some(waited) => {
            let status = waited
                .map(exit_code)
                .map_err(|e| Failure::software(format!("waiting for the command: {e}")))?;
            let released = lease.release().await;
            if args.stats {
                print_stats(&client, path);
            }
            close(&client).await;
            match released {
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
                        crate::one_line(e.message())
                    );
                    Ok(status)
                }
            }
        }
        None => {
            eprintln!(
                "zklock: lost the lock {path} (token {token}): session expired, node deleted or no contact with ZooKeeper; sending SIGTERM to the command"
            );
            send(pid, libc::SIGTERM);
            let stopped = tokio::time::timeout(args.kill_after, async {
                loop {
                    tokio::select! {
                        st = child.wait() => return st,
                        sig = signals.recv() => send(pid, sig),
                    }
                }
            })
            .await;
            if stopped.is_err() {
                eprintln!(
                    "zklock: the command did not stop within {:?}; sending SIGKILL",
                    args.kill_after
                );
                send(pid, libc::SIGKILL);
                let _ = child.wait().await;
            }
            let _ = lease.release().await;
            if args.stats {
                print_stats(&client, path);
            }
            close(&client).await;
            Err(Failure::new(
                status::LOST,
                format!("the command was stopped because the lock {path} was lost"),
            ))
        }
    }
}

/// The busy failure, naming the holder when we can see it.
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
                crate::one_line(&p.identity)
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
async fn close(client: &zklock::Client) {
    client.close().await;
    tokio::time::sleep(Duration::from_millis(20)).await;
}
