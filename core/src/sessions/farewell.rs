//! Closing a session we gave up, on whatever direction of the link still works.
//!
//! When the lifeline gives a session up, the transport may be unable to say goodbye: with only
//! the server-to-client direction broken, its reconnect attempts reach the server, which
//! revalidates the session on each (`ZooKeeperServer.reopenSession`, `Leader.revalidateSession`
//! touch it) and so keeps our lock nodes alive for a session timeout after the last attempt, while
//! nothing comes back to finish the attempt. So the session sends, on a fresh plain connection
//! to each server of the connect string, a ConnectRequest for the session followed at once by a
//! CloseSession, without waiting for any answer. The server reads the second request only once
//! the first revalidated the session (`NIOServerCnxn` stops reading while a connect is pending),
//! then closes the session and deletes its ephemeral nodes. A server that does not know the
//! session (already closed or expired) refuses the connect, which is harmless.
//!
//! The farewell is the only goodbye: the give-up abandons the transport (`Session::give_up`),
//! whose own CloseSession would otherwise go out as soon as its last request in flight was
//! answered, before the waits below.
//!
//! The farewell hands the lock on, so it waits (issue 33): with the direction to the server
//! working, a farewell sent when the lease turned lost let the next holder in a few
//! milliseconds after the lost signal, while ours was still stopping. It goes out only once
//! (1) the lost signal has had as long as the lifeline promises it before the server's own
//! expiry: the moment the leader could first expire the session by itself (the proven touch
//! plus the session timeout), and at least margin + tick after the give-up; and (2) the holder
//! let go of every lease it lost (released or dropped: it has stopped using them). If (2) has
//! not happened one session timeout after the give-up, nothing is sent: the server heard our last
//! requests at the give-up or later, so it cannot expire the session by itself before then, and
//! a farewell could only hand the lock on sooner than it would, under a holder that has not
//! stopped (docs/safety.md, "Closing a session we gave up").
//!
//! Only for plain connections: a TLS handshake needs both directions, and where both work the
//! transport says goodbye itself.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crate::sessions::member::Member;

/// ZooKeeper's `OpCode.closeSession`.
const CLOSE_SESSION: i32 = -11;
/// How long each step of a farewell may take (connect, write, the wait for the server).
const FAREWELL_WAIT: Duration = Duration::from_millis(1500);
/// ZooKeeper's client port, for hosts given without one.
const DEFAULT_PORT: u16 = 2181;

/// The two frames: ConnectRequest {protocolVersion, lastZxidSeen, timeOut, sessionId, passwd,
/// readOnly} and RequestHeader {xid, type} of a CloseSession, each behind its length
/// (`zookeeper.jute`'s `ConnectRequest` and `RequestHeader`). `lastZxidSeen` is 0, which every
/// server accepts (a larger one than the server's own is refused).
pub(crate) fn frames(session_id: i64, password: &[u8], timeout: Duration) -> Vec<u8> {
    let timeout_ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
    let password_len = i32::try_from(password.len()).unwrap_or(0);
    let password = &password[..password_len as usize];
    let mut connect = Vec::with_capacity(64);
    connect.extend_from_slice(&0i32.to_be_bytes());
    connect.extend_from_slice(&0i64.to_be_bytes());
    connect.extend_from_slice(&timeout_ms.to_be_bytes());
    connect.extend_from_slice(&session_id.to_be_bytes());
    connect.extend_from_slice(&password_len.to_be_bytes());
    connect.extend_from_slice(password);
    connect.push(0); // not read-only
    let mut out = Vec::with_capacity(connect.len() + 16);
    out.extend_from_slice(&(connect.len() as i32).to_be_bytes());
    out.extend_from_slice(&connect);
    out.extend_from_slice(&8i32.to_be_bytes());
    out.extend_from_slice(&1i32.to_be_bytes()); // xid
    out.extend_from_slice(&CLOSE_SESSION.to_be_bytes());
    out
}

/// The `host:port` addresses of a connect string (its chroot dropped).
pub(crate) fn addresses(hosts: &str) -> Vec<(String, u16)> {
    let list = hosts.split('/').next().unwrap_or_default();
    list.split(',')
        .filter_map(|entry| {
            let entry = entry.trim();
            if entry.is_empty() {
                return None;
            }
            let (host, port) = match entry.rsplit_once(':') {
                // an unbracketed IPv6 address has no port
                Some((h, _)) if h.contains(':') && !h.starts_with('[') => (entry, None),
                Some((h, p)) => (h, p.parse::<u16>().ok()),
                None => (entry, None),
            };
            let host = host.trim_start_matches('[').trim_end_matches(']');
            Some((host.to_owned(), port.unwrap_or(DEFAULT_PORT)))
        })
        .collect()
}

/// How often a waiting farewell looks whether its holder let go: a few atomic loads, for at most
/// one session timeout, in a case as rare as a given-up session. Polling spares every release
/// path (locks, elections, semaphores, multi-locks, each face) a notification of its own.
const LET_GO_POLL: Duration = Duration::from_millis(10);

/// A session's farewell, from its give-up until it was sent or skipped.
pub(crate) struct Farewell {
    hosts: String,
    session_id: i64,
    password: Vec<u8>,
    timeout: Duration,
    /// Not before this moment (see the module's comment, condition 1).
    due: Instant,
    /// Nothing is sent from this moment on (condition 2 never came).
    skip_at: Instant,
    /// The leases the session lost; each must be let go first (condition 2).
    leases: Vec<Weak<dyn Member>>,
    /// True once sent (every server's send ended) or skipped.
    done: tokio::sync::watch::Sender<bool>,
}

impl Farewell {
    /// A farewell for a session given up at `given_up`, whose leader was last proven to have
    /// touched it at `proven`; `leases` are the leases it lost.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        hosts: &str,
        session_id: i64,
        password: Vec<u8>,
        timeout: Duration,
        tick: Duration,
        proven: Instant,
        given_up: Instant,
        leases: Vec<Weak<dyn Member>>,
    ) -> Arc<Farewell> {
        let due =
            (proven + timeout).max(given_up + crate::sessions::lifeline::margin(timeout) + tick);
        Arc::new(Farewell {
            hosts: hosts.to_owned(),
            session_id,
            password,
            timeout,
            due,
            skip_at: given_up + timeout,
            leases,
            done: tokio::sync::watch::Sender::new(false),
        })
    }

    /// Whether the holder let go of every lease the session lost.
    pub(crate) fn let_go(&self) -> bool {
        self.leases.iter().all(|w| match w.upgrade() {
            Some(lease) => lease.let_go(),
            None => true, // dropped: let go
        })
    }

    /// Hands the farewell to the process's farewell thread (kept off the runtime so that a
    /// stalled runtime cannot hold it up), which waits until it is due and let go, then sends it
    /// to every server of the connect string at once; or skips it at `skip_at`. Errors are
    /// ignored: this is a last attempt, the server's own expiry remains the fallback.
    pub(crate) fn start(self: &Arc<Self>) {
        if !waiting::add(self.clone()) {
            self.done.send_replace(true);
        }
    }

    /// What the farewell thread does with it at `now`: wait until the returned moment, or
    /// nothing more (`None`: sent, now being sent, or skipped).
    fn step(self: &Arc<Self>, now: Instant) -> Option<Instant> {
        if now >= self.skip_at {
            self.done.send_replace(true);
            return None;
        }
        if now >= self.due && self.let_go() {
            let farewell = self.clone();
            let sending = std::thread::Builder::new()
                .name("zklock-farewell".into())
                .spawn(move || {
                    farewell.send_to_all();
                    farewell.done.send_replace(true);
                });
            if sending.is_err() {
                self.done.send_replace(true);
            }
            return None;
        }
        let wake = if now < self.due {
            self.due
        } else {
            now + LET_GO_POLL
        };
        Some(wake.min(self.skip_at))
    }

    /// Resolves once the farewell was sent or skipped.
    pub(crate) async fn finished(&self) {
        let mut done = self.done.subscribe();
        let _ = done.wait_for(|d| *d).await;
    }

    fn send_to_all(&self) {
        let frames = Arc::new(frames(self.session_id, &self.password, self.timeout));
        let sends: Vec<_> = addresses(&self.hosts)
            .into_iter()
            .filter_map(|(host, port)| {
                let frames = frames.clone();
                std::thread::Builder::new()
                    .name("zklock-farewell".into())
                    .spawn(move || send(&host, port, &frames))
                    .ok()
            })
            .collect();
        for send in sends {
            let _ = send.join();
        }
    }
}

/// The farewells of this process that wait to be due and let go, and the one thread that
/// watches them: a thread per farewell polled its holder every `LET_GO_POLL`, so thousands of
/// sessions given up at once (a process of many sessions on an overloaded ensemble) made as many
/// threads and a hundred times as many wake-ups a second, on the machine that was already slow.
mod waiting {
    use std::sync::{Arc, Condvar, Mutex};
    use std::time::Instant;

    use super::Farewell;
    use crate::ops::runtime::current_pid;

    struct Waiting {
        farewells: Mutex<Vec<Arc<Farewell>>>,
        added: Condvar,
    }

    /// The thread's state, and the process it was started in: a fork's child has no such thread
    /// and starts its own.
    static WAITING: Mutex<Option<(u32, Arc<Waiting>)>> = Mutex::new(None);

    /// Adds a farewell for the thread to watch; false when no thread could be started (the next
    /// farewell tries again).
    pub(super) fn add(farewell: Arc<Farewell>) -> bool {
        let waiting = {
            let mut slot = WAITING.lock().unwrap_or_else(|e| e.into_inner());
            match slot.as_ref() {
                Some((pid, waiting)) if *pid == current_pid() => waiting.clone(),
                _ => {
                    let Some(waiting) = start() else { return false };
                    *slot = Some((current_pid(), waiting.clone()));
                    waiting
                }
            }
        };
        waiting.farewells.lock().unwrap().push(farewell);
        waiting.added.notify_one();
        true
    }

    fn start() -> Option<Arc<Waiting>> {
        let waiting = Arc::new(Waiting {
            farewells: Mutex::new(Vec::new()),
            added: Condvar::new(),
        });
        let watched = waiting.clone();
        std::thread::Builder::new()
            // 15 characters: the most a Linux thread name keeps.
            .name("zklock-fw-watch".into())
            .spawn(move || watch(&watched))
            .ok()?;
        Some(waiting)
    }

    /// Steps every farewell when it asked to be, sleeping until the earliest such moment or a
    /// new farewell. No step runs under the lock: a step may drop the last reference to a
    /// lease, and nothing that drop does may wait for `add`.
    fn watch(waiting: &Waiting) {
        let mut kept: Vec<Arc<Farewell>> = Vec::new();
        loop {
            kept.append(&mut waiting.farewells.lock().unwrap());
            let now = Instant::now();
            let mut next: Option<Instant> = None;
            kept.retain(|f| match f.step(now) {
                Some(at) => {
                    next = Some(next.map_or(at, |n| n.min(at)));
                    true
                }
                None => false,
            });
            let added = waiting.farewells.lock().unwrap();
            if !added.is_empty() {
                continue;
            }
            // `add` pushes under the lock held from the check to the wait: no wake-up is missed.
            drop(match next {
                None => waiting.added.wait(added).unwrap(),
                Some(at) => {
                    let wait = at.saturating_duration_since(Instant::now());
                    waiting.added.wait_timeout(added, wait).unwrap().0
                }
            });
        }
    }
}

fn send(host: &str, port: u16, frames: &[u8]) -> Option<()> {
    let address = (host, port).to_socket_addrs().ok()?.next()?;
    let mut stream = TcpStream::connect_timeout(&address, FAREWELL_WAIT).ok()?;
    stream.set_write_timeout(Some(FAREWELL_WAIT)).ok()?;
    stream.set_read_timeout(Some(FAREWELL_WAIT)).ok()?;
    stream.write_all(frames).ok()?;
    // Wait for the server's answer or close (either shows it read the requests), but do not
    // need it: the direction back may be the broken one.
    let mut sink = [0u8; 256];
    while stream.read(&mut sink).ok()? > 0 {}
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frames_are_a_connect_request_then_a_close_session_each_behind_its_length() {
        let bytes = frames(0x0102030405060708, b"pw", Duration::from_millis(4000));
        let connect_len: i32 = 4 + 8 + 4 + 8 + 4 + 2 + 1;
        assert_eq!(&bytes[..4], &connect_len.to_be_bytes());
        assert_eq!(&bytes[4..8], &0i32.to_be_bytes(), "protocol version");
        assert_eq!(&bytes[16..20], &4000i32.to_be_bytes(), "timeout");
        assert_eq!(&bytes[20..28], &0x0102030405060708i64.to_be_bytes());
        assert_eq!(&bytes[28..32], &2i32.to_be_bytes());
        assert_eq!(&bytes[32..34], b"pw");
        assert_eq!(bytes[34], 0, "not read-only");
        assert_eq!(&bytes[35..39], &8i32.to_be_bytes());
        assert_eq!(&bytes[43..47], &(-11i32).to_be_bytes(), "closeSession");
        assert_eq!(bytes.len(), 47);
    }

    /// How many threads of this process have this name (Linux keeps 15 characters of it).
    #[cfg(target_os = "linux")]
    fn threads_named(name: &str) -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .filter(|comm| comm.trim_end() == name)
            .count()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn many_waiting_farewells_share_one_thread_and_each_ends() {
        let now = Instant::now();
        // Nothing listens on port 1: each send fails at once, once the farewell is due.
        let farewells: Vec<_> = (0..300)
            .map(|id| {
                Farewell::new(
                    "127.0.0.1:1",
                    id,
                    b"pw".to_vec(),
                    Duration::from_millis(1500),
                    Duration::from_millis(300),
                    now,
                    now,
                    Vec::new(),
                )
            })
            .collect();
        for farewell in &farewells {
            farewell.start();
        }
        // Due 1.5 s from now: all 300 wait, on the one watching thread (which names itself
        // once it runs; a loaded machine may take a while to run it).
        let named_by = Instant::now() + Duration::from_secs(10);
        while threads_named("zklock-fw-watch") == 0 && Instant::now() < named_by {
            std::thread::sleep(Duration::from_millis(5));
        }
        let before_due = Instant::now() < now + Duration::from_millis(1400);
        assert_eq!(threads_named("zklock-fw-watch"), 1);
        let ended = |f: &Arc<Farewell>| *f.done.borrow();
        if before_due {
            assert_eq!(threads_named("zklock-farewell"), 0, "a send went early");
            assert!(!farewells.iter().any(ended), "a farewell ended before due");
        }
        let by = Instant::now() + Duration::from_secs(20);
        while !farewells.iter().all(ended) {
            assert!(Instant::now() < by, "farewells still waiting after 20 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(now.elapsed() >= Duration::from_millis(1500));
    }

    #[test]
    fn addresses_take_every_host_with_its_port_or_2181_and_drop_the_chroot() {
        assert_eq!(
            addresses("a:1,b,[::1]:3,::2/chroot/x"),
            vec![
                ("a".to_owned(), 1),
                ("b".to_owned(), 2181),
                ("::1".to_owned(), 3),
                ("::2".to_owned(), 2181),
            ]
        );
    }
}
