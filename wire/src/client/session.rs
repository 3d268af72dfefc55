//! The session's life over its connections: the state client handles share, one connection
//! attempt (handshake, credentials, watches re-armed), and the task that dispatches a
//! connection's events and reconnects with a backoff until the session ends. The handles
//! (`client.rs`) start it and ask it to close; it never names them.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{watch, Notify};

use super::error::{connection_error, Error};
use super::options::{address, ClientOptions, Secure};
use super::state::SessionState;
use super::watches::Watches;
use crate::conn::{self, Connection, Event, Events, Request};
use crate::jute::*;

/// What the client handles and the session's task share.
pub(super) struct Shared {
    pub(super) hosts: Vec<(String, u16)>,
    pub(super) chroot: String,
    pub(super) options: ClientOptions,
    pub(super) secure: Option<Secure>,
    /// The session as granted (id and password do not change; the timeout may on reconnect).
    pub(super) session: Mutex<conn::Session>,
    pub(super) current: Mutex<Option<Connection>>,
    pub(super) state: watch::Sender<SessionState>,
    pub(super) watches: Mutex<Watches>,
    pub(super) next_tag: AtomicU64,
    /// The largest zxid seen in a reply, over every connection of the session (sent as
    /// `lastZxidSeen` and as SetWatches' `relativeZxid`).
    pub(super) last_zxid: AtomicI64,
    pub(super) closing: AtomicBool,
    /// Closing without a CloseSession (`Client::abandon`): the connection is cut and the
    /// server keeps the session until it expires or someone else closes it.
    pub(super) abandoned: AtomicBool,
    pub(super) close_now: Notify,
    /// Index of the next host to try.
    pub(super) next_host: Mutex<usize>,
    /// Why the last connection broke or the last attempt failed, and when (see
    /// [`Client::last_connection_failure`](super::Client::last_connection_failure)).
    pub(super) last_failure: Mutex<Option<(Instant, conn::Error)>>,
    /// How many connections replaced the one that opened the session (see
    /// [`Client::connection_generation`](super::Client::connection_generation)): raised before
    /// a new connection is installed, so a reader that sees 0 after reading anything of the
    /// current connection read the first one's.
    pub(super) generation: AtomicU64,
}

/// How one connection attempt ended.
pub(super) enum Attempt {
    /// This server could not take the session now: try the next.
    Failed(conn::Error),
    /// Final: the session expired, or the credentials were refused.
    Refused(Error),
}

impl Shared {
    pub(super) fn connection(&self) -> Result<Connection, Error> {
        if let Some(c) = self.current.lock().unwrap().as_ref() {
            return Ok(c.clone());
        }
        Err(self.no_connection())
    }

    /// Queues a request on the current connection (without cloning its handle: this is every
    /// request's path).
    pub(super) fn submit(
        &self,
        req: &Request,
        tag: u64,
        read: Option<conn::OnReply>,
    ) -> Result<conn::ReplyFuture, Error> {
        match self.current.lock().unwrap().as_ref() {
            Some(c) => c.submit_reading(req, tag, read).map_err(connection_error),
            None => Err(self.no_connection()),
        }
    }

    fn no_connection(&self) -> Error {
        match *self.state.borrow() {
            SessionState::Expired => Error::SessionExpired,
            SessionState::AuthFailed => Error::AuthFailed,
            SessionState::Closed => Error::ClientClosed,
            _ => Error::ConnectionLoss("disconnected".into()),
        }
    }

    /// How long a silent link is trusted: half the session timeout, or the connect timeout
    /// when that is shorter than three fifths of it. A black-holed link is then given up with
    /// time left in the session for a connect or two to other members, and the lock layer
    /// hears of the disconnect (suspended) well before its own deadline. Half, not less: an
    /// idle connection pings every third of the timeout, as the peers' clients do (see
    /// `conn::ping_interval`), and the ping's answer has the sixth left to arrive.
    fn read_timeout(&self, granted: Duration) -> Duration {
        let t = if granted.is_zero() {
            self.options.session_timeout
        } else {
            granted
        };
        let c = self.options.connect_timeout;
        if c > t * 3 / 5 {
            t / 2
        } else {
            c
        }
    }

    pub(super) fn request_close(&self) {
        if !self.closing.swap(true, Ordering::AcqRel) {
            self.close_now.notify_one();
        }
    }

    /// One connection to the next host: handshake, credentials, then the watches re-armed.
    pub(super) async fn attempt(
        &self,
        last_zxid: i64,
        rearm: &[SetWatches],
    ) -> Result<(Connection, Events), Attempt> {
        let (host, port) = {
            let mut next = self.next_host.lock().unwrap();
            let h = self.hosts[*next % self.hosts.len()].clone();
            *next = (*next + 1) % self.hosts.len();
            h
        };
        let session = self.session.lock().unwrap().clone();
        let opts = conn::ConnectOptions {
            session_timeout: if session.id == 0 {
                self.options.session_timeout
            } else {
                session.timeout
            },
            session_id: session.id,
            passwd: session.passwd,
            last_zxid_seen: last_zxid,
            connect_timeout: self.options.connect_timeout,
            max_packet: self.options.max_packet,
            tls: self
                .secure
                .as_ref()
                .map(|s| s(&host))
                .transpose()
                .map_err(Attempt::Failed)?,
            read_timeout: Some(self.read_timeout(session.timeout)),
        };
        let (conn, mut events) = match conn::connect(&address(&host, port), &opts).await {
            Ok(c) => c,
            Err(conn::Error::SessionExpired) => {
                return Err(Attempt::Refused(Error::SessionExpired))
            }
            Err(e) => return Err(Attempt::Failed(e)),
        };
        let credentials = async {
            for (scheme, auth) in &self.options.auth {
                conn.send_auth(scheme, auth).map_err(Attempt::Failed)?;
            }
            // The server answers each AuthPacket at once (ZooKeeperServer.processPacket); a
            // refusal closes the connection after its answer.
            for _ in &self.options.auth {
                match events.recv().await {
                    Some(Event::Auth { err: code::OK }) => {}
                    Some(Event::Auth { err }) if err == code::AUTH_FAILED => {
                        return Err(Attempt::Refused(Error::AuthFailed))
                    }
                    Some(Event::Closed(e)) => return Err(Attempt::Failed(*e)),
                    Some(_) => {
                        return Err(Attempt::Failed(conn::Error::UnexpectedShape));
                    }
                    None => return Err(Attempt::Failed(conn::Error::Closed)),
                }
            }
            if let Some(login) = &self.options.sasl {
                match crate::sasl::authenticate(&conn, &login.user, &login.password).await {
                    Ok(()) => {}
                    // A server without SASL answers OK with no challenge: the caller learns
                    // it from whoAmI (no `sasl` identity) and decides.
                    Err(crate::sasl::SaslError::NotOnServer) => {}
                    Err(crate::sasl::SaslError::Connection(c)) => return Err(Attempt::Failed(c)),
                    Err(_) => return Err(Attempt::Refused(Error::AuthFailed)),
                }
            }
            for w in rearm {
                conn.send_set_watches(w).map_err(Attempt::Failed)?;
            }
            Ok(())
        };
        let limit = self.options.connect_timeout;
        match tokio::time::timeout(limit, credentials).await {
            Ok(Ok(())) => Ok((conn, events)),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Attempt::Failed(conn::Error::ConnectTimeout(limit))),
        }
    }

    fn failed(&self, why: conn::Error) {
        *self.last_failure.lock().unwrap() = Some((Instant::now(), why));
    }

    fn end(&self, state: SessionState) {
        *self.current.lock().unwrap() = None;
        self.watches.lock().unwrap().end(state);
        self.state.send_replace(state);
    }
}

/// The session's task: dispatches the current connection's events, and reconnects when it
/// breaks, until the session ends.
pub(super) async fn run(shared: Arc<Shared>, mut events: Events) {
    let mut backoff = Backoff::default();
    loop {
        let connected_at = Instant::now();
        let mut unsolicited = 0u64;
        let closed = loop {
            tokio::select! {
                ev = events.recv() => match ev {
                    Some(Event::Watch { event, .. }) => {
                        let fired = shared.watches.lock().unwrap().fire(&event, &shared.chroot);
                        if !fired {
                            unsolicited += 1;
                            if unsolicited == UNSOLICITED_LIMIT {
                                if let Some(c) = shared.current.lock().unwrap().as_ref() {
                                    c.abort(conn::Error::Unsolicited(unsolicited));
                                }
                            }
                        }
                    }
                    Some(Event::Answered { tag, err }) => {
                        shared.watches.lock().unwrap().armed(tag, err);
                    }
                    Some(Event::Auth { err }) if err == code::AUTH_FAILED => {
                        shared.end(SessionState::AuthFailed);
                        return;
                    }
                    Some(Event::Auth { .. }) => {}
                    Some(Event::Closed(e)) => break Some(*e),
                    None => break None,
                },
                _ = shared.close_now.notified() => {
                    Box::pin(close_session(&shared, &mut events)).await;
                    return;
                }
            }
        };
        if let Some(e) = closed {
            shared.failed(e);
        }
        // The connection is gone but its stats are not.
        let stats = shared.current.lock().unwrap().take().map(|c| c.stats());
        let broke_at = stats.as_ref().map_or_else(Instant::now, |s| s.last_recv);
        if let Some(s) = &stats {
            shared.last_zxid.fetch_max(s.last_zxid, Ordering::AcqRel);
        }
        if shared.closing.load(Ordering::Acquire) {
            shared.end(SessionState::Closed);
            return;
        }
        shared.state.send_replace(SessionState::Disconnected);
        // A connection that broke right after it was made is a failed attempt: the backoff
        // goes on growing (a server that takes every handshake and then breaks the connection
        // would otherwise be redialled at once, a thousand times a second). One that served a
        // while is redialled at once: a single break costs no pause.
        let pause = if connected_at.elapsed() < SETTLED {
            Some(backoff.next())
        } else {
            backoff.reset();
            None
        };
        if let Some(pause) = pause {
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = shared.close_now.notified() => {
                    shared.end(SessionState::Closed);
                    return;
                }
            }
        }
        // Boxed, as is the close below: a task is as large as its largest state, and this one
        // lives as long as the session, while a reconnect's state (the handshake's futures and
        // buffers) lives only while it runs (3.7 KB of a 14 KB idle session, issue 34).
        match Box::pin(reconnect(&shared, broke_at, &mut backoff)).await {
            Ok(e) => events = e,
            Err(state) => {
                shared.end(state);
                return;
            }
        }
    }
}

/// Tries the servers in turn until one takes the session, the session timeout passes since
/// the server was last heard from, or the client is closed.
async fn reconnect(
    shared: &Arc<Shared>,
    last_heard: Instant,
    backoff: &mut Backoff,
) -> Result<Events, SessionState> {
    let timeout = shared.session.lock().unwrap().timeout;
    let give_up_at = last_heard + timeout;
    let last_zxid = shared.last_zxid.load(Ordering::Acquire);
    loop {
        for _ in 0..shared.hosts.len() {
            if shared.closing.load(Ordering::Acquire) {
                return Err(SessionState::Closed);
            }
            let left = give_up_at.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(SessionState::Expired);
            }
            let rearm = {
                let mut w = shared.watches.lock().unwrap();
                w.prune();
                w.set_watches(last_zxid)
            };
            let attempt = tokio::select! {
                a = tokio::time::timeout(left, shared.attempt(last_zxid, &rearm)) => a,
                _ = shared.close_now.notified() => return Err(SessionState::Closed),
            };
            match attempt {
                Ok(Ok((conn, events))) => {
                    {
                        let mut s = shared.session.lock().unwrap();
                        s.timeout = conn.session().timeout;
                    }
                    shared.generation.fetch_add(1, Ordering::AcqRel);
                    *shared.current.lock().unwrap() = Some(conn);
                    shared.state.send_replace(SessionState::SyncConnected);
                    return Ok(events);
                }
                Ok(Err(Attempt::Refused(Error::AuthFailed))) => {
                    return Err(SessionState::AuthFailed)
                }
                Ok(Err(Attempt::Refused(_))) => return Err(SessionState::Expired),
                Ok(Err(Attempt::Failed(e))) => shared.failed(e),
                Err(_) => return Err(SessionState::Expired),
            }
        }
        let pause = backoff.next();
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = shared.close_now.notified() => return Err(SessionState::Closed),
        }
    }
}

/// CloseSession on the current connection, waiting for its answer or the connection's end
/// (bounded by the connection's own read timeout).
async fn close_session(shared: &Arc<Shared>, events: &mut Events) {
    let conn = shared.current.lock().unwrap().clone();
    if shared.abandoned.load(Ordering::Acquire) {
        if let Some(conn) = conn {
            conn.abort(conn::Error::Closed);
        }
        shared.end(SessionState::Closed);
        return;
    }
    if let Some(conn) = conn {
        if let Ok(reply) = conn.submit(&Request::CloseSession) {
            let limit = conn.session().timeout / 3 + Duration::from_millis(100);
            let drain = async {
                loop {
                    match events.recv().await {
                        Some(Event::Closed(_)) | None => break,
                        Some(Event::Watch { event, .. }) => {
                            shared.watches.lock().unwrap().fire(&event, &shared.chroot);
                        }
                        Some(_) => {}
                    }
                }
            };
            let _ = tokio::time::timeout(limit, async {
                let _ = reply.await;
                drain.await
            })
            .await;
        }
    }
    shared.end(SessionState::Closed);
}

/// See `run`: a connection that broke sooner than this after its handshake counts as a failed
/// attempt for the backoff.
const SETTLED: Duration = Duration::from_secs(1);

/// Notifications for watches this client did not set (or that already fired) that one
/// connection may bring before it is closed with `conn::Error::Unsolicited`. A real server
/// sends one per watch it holds for the session, so the few a race leaves (a watch dropped here
/// that the server still holds) are far below this; a server or relay that sends more is
/// broken or hostile, and its notifications were dropped on arrival anyway.
const UNSOLICITED_LIMIT: u64 = 1000;

/// The pause between rounds of connection attempts: 10 ms, doubling to 1 s, plus up to half
/// again at random so that clients broken off together do not come back together
/// (`StaticHostProvider` sleeps up to 1 s after trying every server). It is kept across
/// connections that break right after their handshake, and reset by one that served.
#[derive(Debug, Default)]
struct Backoff {
    round: u32,
}

impl Backoff {
    fn next(&mut self) -> Duration {
        let base = Duration::from_millis((10u64 << self.round.min(7)).min(1000));
        self.round = self.round.saturating_add(1);
        base + Duration::from_millis(jitter() % (base.as_millis() as u64 / 2 + 1))
    }

    fn reset(&mut self) {
        self.round = 0;
    }
}

fn jitter() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(Instant::now().elapsed().as_nanos());
    h.finish()
}

/// A Fisher-Yates shuffle seeded from the standard library's random hasher keys (no
/// dependency for one shuffle per client).
pub(super) fn shuffle<T>(v: &mut [T]) {
    for i in (1..v.len()).rev() {
        let j = (jitter() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
}
