//! The session layer: one ZooKeeper session over a list of servers, above [`conn`] and still
//! knowing nothing of locks.
//!
//! What it adds to one connection, after ZooKeeper's own client (apache/zookeeper
//! release-3.8.4, `zookeeper-server/src/main/java/org/apache/zookeeper/ClientCnxn.java`,
//! `ZKWatchManager.java`, `client/StaticHostProvider.java`):
//! - a host list, shuffled once, tried in turn with a growing pause after each full round
//!   (`StaticHostProvider.next`); the session is re-established on any member with its id,
//!   password and the last zxid seen, and a member whose data is behind that zxid refuses it
//!   (`ZooKeeperServer.processConnectRequest` closes the connection): the next is tried;
//! - no connection for a whole session timeout, or a server that answers "expired", ends the
//!   session (`SessionState::Expired`);
//! - credentials (digest `AuthPacket`s, SASL DIGEST-MD5) sent again on every connection before
//!   any request (`ClientCnxn.SendThread.primeConnection`);
//! - watches: a request that sets one gets a [`OneshotWatcher`]; it is armed when its reply is
//!   read (in stream order, see [`conn::Event::Answered`]), fired by the server's notification
//!   following `ZKWatchManager.materialize`, re-armed after a reconnect by `SetWatches` with the
//!   last zxid (so a node deleted while disconnected is still reported) and ended with a
//!   session event when the session ends;
//! - the chroot of the connect string, put before every path sent and taken off every path
//!   received.
//!
//! Requests are not queued while disconnected: they fail at once with
//! [`Error::ConnectionLoss`], and the caller decides whether to wait for
//! [`SessionState::SyncConnected`].

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use thiserror::Error;
use tokio::sync::{watch, Notify};

use crate::conn::{self, Connection};
use crate::frame;
use crate::jute::*;

// The session layer's rooms, from the bottom up: the errors; the session's states and watch
// events; the options and connect string; the watches; the session's task; the requests (methods
// of `Client`). This file holds the handle: connect, the session's facts, close.
mod error;
mod options;
mod requests;
mod session;
mod state;
mod watches;

use error::op_error;
pub use error::{Error, MultiError};
pub use options::{validate_path, ClientOptions, ConnectString, SaslLogin, Secure};
pub use requests::{AllNames, CreateMode, EachName, Op, OpResult};
use session::{run, shuffle, Attempt, Shared};
pub use state::{EventType, OneshotWatcher, SessionState, StateWatcher, WatchedEvent};

/// A client handle. Clones share the session; dropping the last one closes it.
#[derive(Clone)]
pub struct Client {
    handle: Arc<Handle>,
}

struct Handle {
    shared: Arc<Shared>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shared.request_close();
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("session_id", &format_args!("{:#x}", self.session_id()))
            .field("state", &self.state())
            .finish()
    }
}

/// Why a connect failed.
#[derive(Debug, Clone, Error)]
pub enum ConnectError {
    #[error(transparent)]
    Client(#[from] Error),
    /// Every server was tried once and none took the session; the last reason, and
    /// `conn::Error::Frame(FrameError::Http)` only when every server answered in HTTP.
    #[error("no server reachable: {0}")]
    Unreachable(conn::Error),
}

impl Client {
    /// Opens a new session on the first server of `connect_string` (shuffled) that takes it.
    /// Tries every server once; the caller retries as it sees fit.
    pub async fn connect(
        connect_string: &str,
        options: ClientOptions,
        secure: Option<Secure>,
    ) -> Result<Client, ConnectError> {
        let parsed = ConnectString::parse(connect_string)?;
        let mut hosts = parsed.hosts;
        shuffle(&mut hosts);
        let (state, _) = watch::channel(SessionState::Disconnected);
        let last_zxid_seen = options.last_zxid_seen.max(0);
        let shared = Arc::new(Shared {
            hosts,
            chroot: parsed.chroot,
            options,
            secure,
            session: Mutex::new(conn::Session {
                id: 0,
                passwd: Vec::new(),
                timeout: Duration::ZERO,
            }),
            current: Mutex::new(None),
            state,
            watches: Mutex::default(),
            next_tag: AtomicU64::new(1),
            last_zxid: AtomicI64::new(last_zxid_seen),
            closing: AtomicBool::new(false),
            abandoned: AtomicBool::new(false),
            close_now: Notify::new(),
            next_host: Mutex::new(0),
            last_failure: Mutex::new(None),
            generation: AtomicU64::new(0),
        });
        let mut last = None;
        for _ in 0..shared.hosts.len() {
            match shared.attempt(last_zxid_seen, &[]).await {
                Ok((conn, events)) => {
                    *shared.session.lock().unwrap() = conn.session().clone();
                    *shared.current.lock().unwrap() = Some(conn);
                    shared.state.send_replace(SessionState::SyncConnected);
                    tokio::spawn(run(shared.clone(), events));
                    return Ok(Client {
                        handle: Arc::new(Handle { shared }),
                    });
                }
                Err(Attempt::Refused(e)) => return Err(ConnectError::Client(e)),
                // A server that answered in another protocol is reported only when every one
                // did: then no retry can help (see `ConnectError::Unreachable`).
                Err(Attempt::Failed(conn::Error::Frame(frame::FrameError::Http)))
                    if last.is_some() => {}
                Err(Attempt::Failed(e)) => last = Some(e),
            }
        }
        Err(ConnectError::Unreachable(
            last.unwrap_or(conn::Error::Closed),
        ))
    }

    fn shared(&self) -> &Arc<Shared> {
        &self.handle.shared
    }

    pub fn session_id(&self) -> i64 {
        self.shared().session.lock().unwrap().id
    }

    /// The session's password (to close it from another connection; never log it).
    pub fn session_password(&self) -> Vec<u8> {
        self.shared().session.lock().unwrap().passwd.clone()
    }

    /// The negotiated session timeout.
    pub fn session_timeout(&self) -> Duration {
        self.shared().session.lock().unwrap().timeout
    }

    pub fn state(&self) -> SessionState {
        *self.shared().state.borrow()
    }

    pub fn state_watcher(&self) -> StateWatcher {
        StateWatcher(self.shared().state.subscribe())
    }

    /// The address (`host:port`) of the member the last connection attempt went to: the
    /// current connection's while connected.
    pub fn connected_host(&self) -> String {
        let shared = self.shared();
        let next = *shared.next_host.lock().unwrap();
        let (host, port) = &shared.hosts[(next + shared.hosts.len() - 1) % shared.hosts.len()];
        options::address(host, *port)
    }

    /// Which connection of the session is current: 0 for the one that opened it, raised by
    /// one before each reconnect's connection is installed. A session's id names the member
    /// that created it (ZooKeeper's `SessionTrackerImpl.initializeNextSessionId` puts the
    /// server id in the top byte), and a TCP connection never changes its backend, so while
    /// this reads 0 the session is on that member; an answer read while it still reads 0
    /// afterwards came over the first connection.
    pub fn connection_generation(&self) -> u64 {
        self.shared().generation.load(Ordering::Acquire)
    }

    /// What the current connection knows of its link (`None` while disconnected).
    pub fn link_stats(&self) -> Option<conn::Stats> {
        self.shared()
            .current
            .lock()
            .unwrap()
            .as_ref()
            .map(Connection::stats)
    }

    /// The largest zxid this session has seen in a reply (or was given as
    /// [`ClientOptions::last_zxid_seen`]).
    pub fn last_zxid(&self) -> i64 {
        let shared = self.shared();
        let current = shared
            .current
            .lock()
            .unwrap()
            .as_ref()
            .map(|c| c.stats().last_zxid);
        shared
            .last_zxid
            .load(Ordering::Acquire)
            .max(current.unwrap_or(0))
    }

    /// Why the last connection of this session broke, or the last attempt to make one failed,
    /// and when: what a caller whose wait ran out while the link kept failing reports as the
    /// cause. `None` while no connection has failed.
    pub fn last_connection_failure(&self) -> Option<(Instant, conn::Error)> {
        self.shared().last_failure.lock().unwrap().clone()
    }

    /// whoAmI (op 107, ZooKeeper 3.7+): the identities the server gave this session.
    pub async fn who_am_i(&self) -> Result<Vec<ClientInfo>, Error> {
        let conn = self.shared().connection()?;
        conn.who_am_i().await.map_err(op_error)
    }

    /// Closes the session: CloseSession is sent (the servers delete its ephemeral nodes) and
    /// the state becomes `Closed` once the server answered or the connection ended.
    pub fn close(&self) {
        self.shared().request_close();
    }

    /// Ends the session here without telling the server: the connection is cut, nothing more
    /// is sent on it (no CloseSession, no ping, no reconnect) and the state becomes `Closed`.
    /// The server keeps the session, and its ephemeral nodes, until it expires the session or
    /// someone closes it with its id and password. For a caller that must not hand its nodes on
    /// yet (zklock's lifeline, which gives a session up before its holder has stopped).
    pub fn abandon(&self) {
        let shared = self.shared();
        shared.abandoned.store(true, Ordering::Release);
        shared.request_close();
    }
}

/// What a probe session learned ([`probe_session`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probed {
    /// The session timeout the server granted a session that asked for 1 ms.
    pub granted: Duration,
    /// One answer per probe sent, in the order asked: the probes after the first the server
    /// did not know (or after the connection ended) are not sent.
    pub answers: Vec<ProbeAnswer>,
}

/// How the server answered one probe request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeAnswer {
    /// A reply: its error code (`code::OK` for success). `code::UNIMPLEMENTED`: the server does
    /// not know the op.
    Answered(i32),
    /// No reply: the connection ended first.
    Lost,
}

/// A short session on the first reachable server of `connect_string` (zklock gives it one: the
/// member its session is on), which asks for 1 ms and sends `probes` (op and encoded record;
/// harmless requests only: reads, or a check of the probe session's own watches), then ends.
///
/// **The granted timeout.** ZooKeeper clamps a requested timeout to `[minSessionTimeout,
/// maxSessionTimeout]` (`ZooKeeperServer.processConnectRequest`), whose bounds are 2 and 20
/// ticks unless the operator set them (`ZooKeeperServer.getMinSessionTimeout`:
/// `minSessionTimeout == -1 ? tickTime * 2`; `QuorumPeerConfig.parse` the same), so the answer
/// is two ticks, or the operator's larger minimum.
///
/// **The probes.** A server answers an op it does not know with UNIMPLEMENTED and then *closes
/// the connection*: `ZooKeeperServer.submitRequest` hands a request whose `Request.isValid` is
/// false to `UnimplementedRequestProcessor`, which sends the reply and `sendCloseSession()`
/// (apache/zookeeper release-3.4.13 `src/java/main/org/apache/zookeeper/server/
/// UnimplementedRequestProcessor.java`, unchanged through 3.9). That is why the probes run here
/// and never on a client's own session: the connection they may cost is this one's. They go
/// one at a time, each after the last was answered, and stop at the first the server did not
/// know or the connection's end: so the server closes with nothing unread, which TCP would
/// answer with a reset that can drop the reply still in flight.
///
/// One connection, no credentials (the handshake needs none), no retry and no reconnect: the
/// caller decides. While the connection lives, CloseSession is sent and awaited for at most the
/// granted timeout; when the server closed it, the probe session is abandoned and expires after
/// that timeout (two ticks), as it does on a server that refuses the close.
pub async fn probe_session(
    connect_string: &str,
    options: &ClientOptions,
    secure: Option<Secure>,
    probes: &[(i32, Vec<u8>)],
) -> Result<Probed, ConnectError> {
    let parsed = ConnectString::parse(connect_string)?;
    let mut last = None;
    for (host, port) in &parsed.hosts {
        let tls = match secure.as_ref().map(|s| s(host)).transpose() {
            Ok(tls) => tls,
            Err(e) => {
                last = Some(e);
                continue;
            }
        };
        let opts = conn::ConnectOptions {
            session_timeout: Duration::from_millis(1),
            session_id: 0,
            passwd: Vec::new(),
            last_zxid_seen: 0,
            connect_timeout: options.connect_timeout,
            max_packet: options.max_packet,
            tls,
            // The connection's own limit (two thirds of the granted timeout), not one derived
            // from the 1 ms asked for.
            read_timeout: None,
        };
        match conn::connect(&options::address(host, *port), &opts).await {
            Ok((conn, _events)) => {
                let granted = conn.session().timeout;
                let mut answers = Vec::with_capacity(probes.len());
                for (op, body) in probes {
                    // Bounded as the close is: a server that holds a reply longer than the
                    // session it granted has lost the probe anyway.
                    let probe = conn::Request::Probe(*op, body.clone());
                    let answer = match tokio::time::timeout(granted, conn.call(&probe)).await {
                        Ok(Ok(reply)) => ProbeAnswer::Answered(reply.result.err().unwrap_or(0)),
                        _ => ProbeAnswer::Lost,
                    };
                    answers.push(answer);
                    if answer == ProbeAnswer::Answered(code::UNIMPLEMENTED)
                        || answer == ProbeAnswer::Lost
                        || conn.closed().is_some()
                    {
                        break;
                    }
                }
                if conn.closed().is_none() {
                    let closing = conn.call(&conn::Request::CloseSession);
                    let _ = tokio::time::timeout(granted, closing).await;
                }
                return Ok(Probed { granted, answers });
            }
            Err(e) => last = Some(e),
        }
    }
    Err(ConnectError::Unreachable(
        last.unwrap_or(conn::Error::Closed),
    ))
}
