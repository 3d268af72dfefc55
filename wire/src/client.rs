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

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use thiserror::Error;
use tokio::sync::{oneshot, watch, Notify};

use crate::conn::{self, Connection, Event, Events, Reply, Request, Response};
use crate::frame;
use crate::jute::*;

mod watches;
use watches::{strip_chroot, WatchKind, Watches};

/// A request's failure, by what the caller does about it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Error {
    #[error("node does not exist")]
    NoNode,
    #[error("node already exists")]
    NodeExists,
    #[error("node has children")]
    NotEmpty,
    #[error("version does not match")]
    BadVersion,
    #[error("ephemeral nodes may not have children")]
    NoChildrenForEphemerals,
    #[error("not authorized")]
    NoAuth,
    #[error("authentication failed")]
    AuthFailed,
    #[error("invalid ACL")]
    InvalidAcl,
    #[error("session expired")]
    SessionExpired,
    #[error("session moved to another server")]
    SessionMoved,
    /// The connection broke (or there is none right now): the request may or may not have been
    /// applied.
    #[error("connection lost{}", if .0.is_empty() { String::new() } else { format!(": {}", .0) })]
    ConnectionLoss(String),
    /// No server could be reached.
    #[error("no server reachable: {0}")]
    NoHosts(String),
    #[error("timed out")]
    Timeout,
    #[error("client closed")]
    ClientClosed,
    #[error("bad arguments: {0}")]
    BadArguments(&'static str),
    #[error("operation not implemented by the server")]
    Unimplemented,
    /// Any other `KeeperException.Code`.
    #[error("server error {name} ({0})", name = code::name(*.0))]
    Server(i32),
}

impl Error {
    /// The error for a server's reply code.
    pub fn from_code(c: i32) -> Error {
        match c {
            code::NO_NODE => Error::NoNode,
            code::NODE_EXISTS => Error::NodeExists,
            code::NOT_EMPTY => Error::NotEmpty,
            code::BAD_VERSION => Error::BadVersion,
            code::NO_CHILDREN_FOR_EPHEMERALS => Error::NoChildrenForEphemerals,
            code::NO_AUTH => Error::NoAuth,
            code::AUTH_FAILED => Error::AuthFailed,
            code::INVALID_ACL => Error::InvalidAcl,
            code::SESSION_EXPIRED => Error::SessionExpired,
            code::SESSION_MOVED => Error::SessionMoved,
            code::CONNECTION_LOSS => Error::ConnectionLoss(String::new()),
            code::UNIMPLEMENTED => Error::Unimplemented,
            code::BAD_ARGUMENTS => Error::BadArguments("the server refused the arguments"),
            code::OPERATION_TIMEOUT | code::REQUEST_TIMEOUT => Error::Timeout,
            other => Error::Server(other),
        }
    }

    /// Whether the request's fate is unknown and the session may still be alive: wait for the
    /// connection and look.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Error::ConnectionLoss(_) | Error::NoHosts(_) | Error::Timeout
        )
    }
}

fn connection_error(e: conn::Error) -> Error {
    match e {
        // Only a request of ours: bad bytes from the server (`conn::Error::Frame`, a length
        // over the limit included) break the connection, and the request is retried on another.
        conn::Error::RequestTooLarge { .. } => {
            Error::BadArguments("the request is larger than the server's packet limit")
        }
        conn::Error::SessionExpired => Error::SessionExpired,
        other => Error::ConnectionLoss(other.to_string()),
    }
}

/// Where the session stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    /// Connected to a server that serves the session.
    SyncConnected,
    /// Between connections; the session may still be alive on the servers.
    Disconnected,
    /// The servers expired the session (or no server was reached for a whole timeout).
    Expired,
    /// The servers refused the credentials.
    AuthFailed,
    /// Closed by this side.
    Closed,
}

impl SessionState {
    /// Whether the session is over for good.
    pub fn is_terminated(self) -> bool {
        matches!(
            self,
            SessionState::Expired | SessionState::AuthFailed | SessionState::Closed
        )
    }
}

/// Follows a client's session states.
#[derive(Debug, Clone)]
pub struct StateWatcher(watch::Receiver<SessionState>);

impl StateWatcher {
    /// Waits for the next change and returns the state then (the latest, not every one between).
    /// Once the client is gone it returns the last state at once.
    pub async fn changed(&mut self) -> SessionState {
        let _ = self.0.changed().await;
        *self.0.borrow_and_update()
    }

    pub fn peek_state(&self) -> SessionState {
        *self.0.borrow()
    }
}

/// What a watch notification says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// The session ended (see [`WatchedEvent::session_state`]): the watch will not fire.
    Session,
    NodeCreated,
    NodeDeleted,
    NodeDataChanged,
    NodeChildrenChanged,
}

/// A fired watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchedEvent {
    pub event_type: EventType,
    pub session_state: SessionState,
    /// The node's path, without the chroot (empty for a session event).
    pub path: String,
}

impl WatchedEvent {
    fn session(state: SessionState) -> WatchedEvent {
        WatchedEvent {
            event_type: EventType::Session,
            session_state: state,
            path: String::new(),
        }
    }
}

/// One watch, fired once.
#[derive(Debug)]
pub struct OneshotWatcher(oneshot::Receiver<WatchedEvent>);

impl OneshotWatcher {
    /// The event that fired the watch; a session event if the session ended first.
    pub async fn changed(self) -> WatchedEvent {
        self.0
            .await
            .unwrap_or_else(|_| WatchedEvent::session(SessionState::Closed))
    }
}

/// How a node is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateMode {
    Persistent,
    PersistentSequential,
    Ephemeral,
    EphemeralSequential,
    /// Deleted by the server once its last child is (`ContainerManager`).
    Container,
}

impl CreateMode {
    fn flags(self) -> i32 {
        match self {
            CreateMode::Persistent => create_mode::PERSISTENT,
            CreateMode::PersistentSequential => create_mode::PERSISTENT_SEQUENTIAL,
            CreateMode::Ephemeral => create_mode::EPHEMERAL,
            CreateMode::EphemeralSequential => create_mode::EPHEMERAL_SEQUENTIAL,
            CreateMode::Container => create_mode::CONTAINER,
        }
    }
}

/// One operation of a multi.
#[derive(Debug, Clone)]
pub enum Op<'a> {
    /// The node's version must be this (-1: the node must exist).
    Check {
        path: &'a str,
        version: i32,
    },
    Create {
        path: &'a str,
        data: &'a [u8],
        mode: CreateMode,
        acl: &'a [Acl],
    },
    SetData {
        path: &'a str,
        data: &'a [u8],
        version: i32,
    },
    Delete {
        path: &'a str,
        version: i32,
    },
}

/// One result of a successful multi.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpResult {
    Check,
    /// The created node's path (without the chroot).
    Create {
        path: String,
    },
    SetData {
        stat: Stat,
    },
    Delete,
}

/// Why a multi was not applied.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MultiError {
    /// Op `index` failed, so none was applied.
    #[error("operation {index} failed: {source}")]
    OperationFailed { index: usize, source: Error },
    /// The request itself failed (it may have been applied if the error is transient).
    #[error(transparent)]
    RequestFailed { source: Error },
}

/// A SASL DIGEST-MD5 login.
#[derive(Clone)]
pub struct SaslLogin {
    pub user: String,
    pub password: String,
}

impl std::fmt::Debug for SaslLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslLogin")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

/// What a client connects with.
#[derive(Clone)]
pub struct ClientOptions {
    pub session_timeout: Duration,
    /// How long one connection attempt (TCP, TLS and ZooKeeper handshakes) may take.
    pub connect_timeout: Duration,
    /// `(scheme, auth)` pairs sent as `AuthPacket`s on every connection, e.g. `digest`.
    pub auth: Vec<(String, Vec<u8>)>,
    pub sasl: Option<SaslLogin>,
    /// The largest request sent and reply accepted (`jute.maxbuffer`).
    pub max_packet: usize,
    /// The largest zxid an earlier session of the caller saw, sent as `lastZxidSeen` from the
    /// first connection on: a server whose history is older refuses the session, closing the
    /// connection unanswered (`ZooKeeperServer.processConnectRequest`, apache/zookeeper
    /// release-3.8.4, `zookeeper-server/src/main/java/org/apache/zookeeper/server/
    /// ZooKeeperServer.java`: "Refusing session request for client ... as it has seen zxid
    /// ...", `DisconnectReason.CLIENT_ZXID_AHEAD`), as it refuses a reconnect.
    /// 0: none.
    pub last_zxid_seen: i64,
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientOptions")
            .field("session_timeout", &self.session_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field(
                "auth_schemes",
                &self.auth.iter().map(|a| &a.0).collect::<Vec<_>>(),
            )
            .field("sasl", &self.sasl)
            .finish_non_exhaustive()
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            session_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(5),
            auth: Vec::new(),
            sasl: None,
            max_packet: frame::DEFAULT_MAX,
            last_zxid_seen: 0,
        }
    }
}

/// A connect string: `host:port,host:port/chroot`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectString {
    /// `(host, port)`; an IPv6 address without its brackets.
    pub hosts: Vec<(String, u16)>,
    /// Empty for none.
    pub chroot: String,
}

impl ConnectString {
    pub fn parse(s: &str) -> Result<ConnectString, Error> {
        let (list, chroot) = match s.find('/') {
            Some(i) => (&s[..i], &s[i..]),
            None => (s, ""),
        };
        let chroot = if chroot == "/" { "" } else { chroot };
        if !chroot.is_empty() {
            validate_path(chroot)?;
        }
        let mut hosts = Vec::new();
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (host, port) =
                if let Some(rest) = entry.strip_prefix('[') {
                    let (h, after) = rest
                        .split_once(']')
                        .ok_or(Error::BadArguments("unclosed [ in the connect string"))?;
                    (h, after.strip_prefix(':'))
                } else {
                    match entry.rsplit_once(':') {
                        Some((h, p)) if !h.contains(':') => (h, Some(p)),
                        // `a:b:c`, `::1:22201`: where the address ends is a guess.
                        Some(_) => return Err(Error::BadArguments(
                            "a host with more than one ':' must be an IPv6 address in brackets, \
                             as [::1]:2181",
                        )),
                        None => (entry, None),
                    }
                };
            let port = match port {
                None => 2181,
                Some(p) => p
                    .parse()
                    .map_err(|_| Error::BadArguments("bad port in the connect string"))?,
            };
            if host.is_empty() {
                return Err(Error::BadArguments("empty host in the connect string"));
            }
            hosts.push((host.to_owned(), port));
        }
        if hosts.is_empty() {
            return Err(Error::BadArguments("no host in the connect string"));
        }
        Ok(ConnectString {
            hosts,
            chroot: chroot.to_owned(),
        })
    }
}

fn address(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `PathUtils.validatePath`, the part a client can get wrong.
pub fn validate_path(path: &str) -> Result<(), Error> {
    if !path.starts_with('/') {
        return Err(Error::BadArguments("path must start with /"));
    }
    if path.len() > 1 && path.ends_with('/') {
        return Err(Error::BadArguments("path must not end with /"));
    }
    if path.len() > 1
        && path[1..]
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return Err(Error::BadArguments("path has an empty, . or .. component"));
    }
    if path.contains('\0') {
        return Err(Error::BadArguments("path contains a NUL character"));
    }
    Ok(())
}

/// How to speak TLS to a host of the connect string: the caller's (the session layer knows no
/// certificates). A host a certificate cannot name fails the attempt.
pub type Secure = Arc<dyn Fn(&str) -> Result<conn::TlsConnect, conn::Error> + Send + Sync>;

struct Shared {
    hosts: Vec<(String, u16)>,
    chroot: String,
    options: ClientOptions,
    secure: Option<Secure>,
    /// The session as granted (id and password do not change; the timeout may on reconnect).
    session: Mutex<conn::Session>,
    current: Mutex<Option<Connection>>,
    state: watch::Sender<SessionState>,
    watches: Mutex<Watches>,
    next_tag: AtomicU64,
    /// The largest zxid seen in a reply, over every connection of the session (sent as
    /// `lastZxidSeen` and as SetWatches' `relativeZxid`).
    last_zxid: AtomicI64,
    closing: AtomicBool,
    close_now: Notify,
    /// Index of the next host to try.
    next_host: Mutex<usize>,
    /// Why the last connection broke or the last attempt failed, and when (see
    /// [`Client::last_connection_failure`]).
    last_failure: Mutex<Option<(Instant, conn::Error)>>,
}

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
            close_now: Notify::new(),
            next_host: Mutex::new(0),
            last_failure: Mutex::new(None),
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

    fn path(&self, path: &str) -> Result<String, Error> {
        validate_path(path)?;
        let chroot = &self.shared().chroot;
        Ok(if chroot.is_empty() {
            path.to_owned()
        } else if path == "/" {
            chroot.clone()
        } else {
            format!("{chroot}{path}")
        })
    }

    /// Submits now; the returned future only waits for the reply.
    fn call(
        &self,
        req: Result<Request, Error>,
        watch: Option<(WatchKind, String, oneshot::Sender<WatchedEvent>)>,
    ) -> impl Future<Output = Result<Reply, Error>> + Send + 'static {
        let submitted = req.and_then(|req| {
            let shared = self.shared();
            let tag = match watch {
                None => 0,
                Some(w) => {
                    let tag = shared.next_tag.fetch_add(1, Ordering::Relaxed);
                    shared.watches.lock().unwrap().pending.insert(tag, w);
                    tag
                }
            };
            let submitted = shared.submit(&req, tag);
            if submitted.is_err() && tag != 0 {
                shared.watches.lock().unwrap().pending.remove(&tag);
            }
            submitted
        });
        async move { submitted?.await.map_err(connection_error) }
    }

    fn expect(
        &self,
        req: Result<Request, Error>,
        watch: Option<(WatchKind, String, oneshot::Sender<WatchedEvent>)>,
    ) -> impl Future<Output = Result<Response, Error>> + Send + 'static {
        let reply = self.call(req, watch);
        async move { reply.await?.result.map_err(Error::from_code) }
    }

    /// Create (create2, or createContainer for a container): the node's stat and path
    /// (without the chroot).
    pub fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        acl: &[Acl],
    ) -> impl Future<Output = Result<(Stat, String), Error>> + Send + 'static {
        let chroot = self.shared().chroot.clone();
        let req = self.path(path).map(|path| {
            let r = CreateRequest {
                path,
                data: data.to_vec(),
                acl: acl.to_vec(),
                flags: mode.flags(),
            };
            match mode {
                CreateMode::Container => Request::CreateContainer(r),
                _ => Request::Create2(r),
            }
        });
        let reply = self.expect(req, None);
        async move {
            match reply.await? {
                Response::Create2(r) => Ok((r.stat, strip_chroot(&r.path, &chroot))),
                _ => Err(shape()),
            }
        }
    }

    /// Creates `path` and every missing ancestor with `mode` and `acl`; an existing node is
    /// fine.
    pub async fn mkdir(&self, path: &str, mode: CreateMode, acl: &[Acl]) -> Result<(), Error> {
        validate_path(path)?;
        if path == "/" {
            return Ok(());
        }
        match self.create(path, b"", mode, acl).await {
            Ok(_) | Err(Error::NodeExists) => return Ok(()),
            Err(Error::NoNode) => {}
            Err(e) => return Err(e),
        }
        let mut end = 0;
        while let Some(i) = path[end + 1..].find('/') {
            end += 1 + i;
            match self.create(&path[..end], b"", mode, acl).await {
                Ok(_) | Err(Error::NodeExists) => {}
                Err(e) => return Err(e),
            }
        }
        match self.create(path, b"", mode, acl).await {
            Ok(_) | Err(Error::NodeExists) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Delete; `None` for any version.
    pub fn delete(
        &self,
        path: &str,
        version: Option<i32>,
    ) -> impl Future<Output = Result<(), Error>> + Send + 'static {
        let req = self.path(path).map(|path| {
            Request::Delete(DeleteRequest {
                path,
                version: version.unwrap_or(-1),
            })
        });
        let reply = self.expect(req, None);
        async move { reply.await.map(|_| ()) }
    }

    pub fn get_data(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat), Error>> + Send + 'static {
        let req = self
            .path(path)
            .map(|path| Request::GetData(GetDataRequest { path, watch: false }));
        let reply = self.expect(req, None);
        async move {
            match reply.await? {
                Response::GetData(r) => Ok((r.data, r.stat)),
                _ => Err(shape()),
            }
        }
    }

    /// getData with a watch on the node (armed only if the node exists).
    pub fn get_and_watch_data(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat, OneshotWatcher), Error>> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let req = self.path(path);
        let watch = req.as_ref().ok().map(|p| (WatchKind::Data, p.clone(), tx));
        let req = req.map(|path| Request::GetData(GetDataRequest { path, watch: true }));
        let reply = self.expect(req, watch);
        async move {
            match reply.await? {
                Response::GetData(r) => Ok((r.data, r.stat, OneshotWatcher(rx))),
                _ => Err(shape()),
            }
        }
    }

    /// exists: the node's stat, or `None`.
    pub fn check_stat(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<Option<Stat>, Error>> + Send + 'static {
        let req = self
            .path(path)
            .map(|path| Request::Exists(ExistsRequest { path, watch: false }));
        let reply = self.expect(req, None);
        async move {
            match reply.await {
                Ok(Response::Exists(r)) => Ok(Some(r.stat)),
                Err(Error::NoNode) => Ok(None),
                Err(e) => Err(e),
                Ok(_) => Err(shape()),
            }
        }
    }

    /// exists with a watch: fires when the node is created, changed or deleted.
    pub fn check_and_watch_stat(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Option<Stat>, OneshotWatcher), Error>> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let req = self.path(path);
        let watch = req.as_ref().ok().map(|p| (WatchKind::Exist, p.clone(), tx));
        let req = req.map(|path| Request::Exists(ExistsRequest { path, watch: true }));
        let reply = self.expect(req, watch);
        async move {
            match reply.await {
                Ok(Response::Exists(r)) => Ok((Some(r.stat), OneshotWatcher(rx))),
                Err(Error::NoNode) => Ok((None, OneshotWatcher(rx))),
                Err(e) => Err(e),
                Ok(_) => Err(shape()),
            }
        }
    }

    pub fn list_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<Vec<String>, Error>> + Send + 'static {
        let req = self
            .path(path)
            .map(|path| Request::GetChildren2(GetChildren2Request { path, watch: false }));
        let reply = self.expect(req, None);
        async move {
            match reply.await? {
                Response::GetChildren2(r) => Ok(r.children),
                _ => Err(shape()),
            }
        }
    }

    /// getChildren2 with a watch on the children.
    pub fn list_and_watch_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, OneshotWatcher), Error>> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let req = self.path(path);
        let watch = req.as_ref().ok().map(|p| (WatchKind::Child, p.clone(), tx));
        let req = req.map(|path| Request::GetChildren2(GetChildren2Request { path, watch: true }));
        let reply = self.expect(req, watch);
        async move {
            match reply.await? {
                Response::GetChildren2(r) => Ok((r.children, OneshotWatcher(rx))),
                _ => Err(shape()),
            }
        }
    }

    /// setData; `None` for any version.
    pub fn set_data(
        &self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> impl Future<Output = Result<Stat, Error>> + Send + 'static {
        let req = self.path(path).map(|path| {
            Request::SetData(SetDataRequest {
                path,
                data: data.to_vec(),
                version: version.unwrap_or(-1),
            })
        });
        let reply = self.expect(req, None);
        async move {
            match reply.await? {
                Response::SetData(r) => Ok(r.stat),
                _ => Err(shape()),
            }
        }
    }

    /// sync: the server catches up with the leader. The reply's send and receive times are
    /// the lifeline's evidence.
    pub fn sync(&self, path: &str) -> impl Future<Output = Result<Reply, Error>> + Send + 'static {
        let req = self
            .path(path)
            .map(|path| Request::Sync(SyncRequest { path }));
        let reply = self.call(req, None);
        async move {
            let reply = reply.await?;
            match &reply.result {
                Ok(_) => Ok(reply),
                Err(c) => Err(Error::from_code(*c)),
            }
        }
    }

    /// A multi: all of `ops` or none.
    pub fn multi(
        &self,
        ops: &[Op<'_>],
    ) -> impl Future<Output = Result<Vec<OpResult>, MultiError>> + Send + 'static {
        let chroot = self.shared().chroot.clone();
        let built: Result<Vec<MultiOp>, Error> = ops
            .iter()
            .map(|op| {
                Ok(match *op {
                    Op::Check { path, version } => MultiOp::Check(CheckVersionRequest {
                        path: self.path(path)?,
                        version,
                    }),
                    Op::Create {
                        path,
                        data,
                        mode,
                        acl,
                    } => MultiOp::Create(CreateRequest {
                        path: self.path(path)?,
                        data: data.to_vec(),
                        acl: acl.to_vec(),
                        flags: mode.flags(),
                    }),
                    Op::SetData {
                        path,
                        data,
                        version,
                    } => MultiOp::SetData(SetDataRequest {
                        path: self.path(path)?,
                        data: data.to_vec(),
                        version,
                    }),
                    Op::Delete { path, version } => MultiOp::Delete(DeleteRequest {
                        path: self.path(path)?,
                        version,
                    }),
                })
            })
            .collect();
        let reply = self.expect(built.map(|ops| Request::Multi(MultiRequest { ops })), None);
        async move {
            let response = match reply.await {
                Ok(Response::Multi(r)) => r,
                Ok(_) => return Err(MultiError::RequestFailed { source: shape() }),
                Err(source) => return Err(MultiError::RequestFailed { source }),
            };
            // The op that failed; the others of a failed multi say RUNTIMEINCONSISTENCY (or OK).
            let failed = response
                .results
                .iter()
                .enumerate()
                .find_map(|(i, r)| match r {
                    MultiResult::Error(c)
                        if *c != code::OK && *c != code::RUNTIME_INCONSISTENCY =>
                    {
                        Some((i, *c))
                    }
                    _ => None,
                });
            if let Some((index, c)) = failed {
                return Err(MultiError::OperationFailed {
                    index,
                    source: Error::from_code(c),
                });
            }
            response
                .results
                .into_iter()
                .map(|r| match r {
                    MultiResult::Check => Ok(OpResult::Check),
                    MultiResult::Create(c) => Ok(OpResult::Create {
                        path: strip_chroot(&c.path, &chroot),
                    }),
                    MultiResult::Create2(c) => Ok(OpResult::Create {
                        path: strip_chroot(&c.path, &chroot),
                    }),
                    MultiResult::SetData(s) => Ok(OpResult::SetData { stat: s.stat }),
                    MultiResult::Delete => Ok(OpResult::Delete),
                    MultiResult::Error(c) => Err(MultiError::RequestFailed {
                        source: Error::from_code(c),
                    }),
                })
                .collect()
        }
    }
}

fn op_error(e: conn::OpError) -> Error {
    match e {
        conn::OpError::Connection(c) => connection_error(c),
        conn::OpError::Server(c) => Error::from_code(c),
    }
}

fn shape() -> Error {
    Error::ConnectionLoss(conn::Error::UnexpectedShape.to_string())
}

/// How one connection attempt ended.
enum Attempt {
    /// This server could not take the session now: try the next.
    Failed(conn::Error),
    /// Final: the session expired, or the credentials were refused.
    Refused(Error),
}

impl Shared {
    fn connection(&self) -> Result<Connection, Error> {
        if let Some(c) = self.current.lock().unwrap().as_ref() {
            return Ok(c.clone());
        }
        Err(self.no_connection())
    }

    /// Queues a request on the current connection (without cloning its handle: this is every
    /// request's path).
    fn submit(&self, req: &Request, tag: u64) -> Result<conn::ReplyFuture, Error> {
        match self.current.lock().unwrap().as_ref() {
            Some(c) => c.submit_tagged(req, tag).map_err(connection_error),
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

    /// How long a silent link is trusted: two fifths of the session timeout, or the connect
    /// timeout when that is shorter than three fifths of it. A black-holed link is then given
    /// up with time left in the session for two connects to other members, and the lock layer
    /// hears of the disconnect (suspended) well before its own deadline.
    fn read_timeout(&self, granted: Duration) -> Duration {
        let t = if granted.is_zero() {
            self.options.session_timeout
        } else {
            granted
        };
        let c = self.options.connect_timeout;
        if c > t * 3 / 5 {
            t * 2 / 5
        } else {
            c
        }
    }

    fn request_close(&self) {
        if !self.closing.swap(true, Ordering::AcqRel) {
            self.close_now.notify_one();
        }
    }

    /// One connection to the next host: handshake, credentials, then the watches re-armed.
    async fn attempt(
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
                    Some(Event::Closed(e)) => return Err(Attempt::Failed(e)),
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
async fn run(shared: Arc<Shared>, mut events: Events) {
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
                    Some(Event::Closed(e)) => break Some(e),
                    None => break None,
                },
                _ = shared.close_now.notified() => {
                    close_session(&shared, &mut events).await;
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
        match reconnect(&shared, broke_at, &mut backoff).await {
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
fn shuffle<T>(v: &mut [T]) {
    for i in (1..v.len()).rev() {
        let j = (jitter() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connect_string_gives_its_hosts_ports_and_chroot() {
        let c = ConnectString::parse("a:1,b,[::1]:3/app/x").unwrap();
        assert_eq!(
            c.hosts,
            vec![
                ("a".to_owned(), 1),
                ("b".to_owned(), 2181),
                ("::1".to_owned(), 3)
            ]
        );
        assert_eq!(c.chroot, "/app/x");
        assert_eq!(ConnectString::parse("a:1/").unwrap().chroot, "");
        assert!(ConnectString::parse("a:x").is_err());
        assert!(ConnectString::parse("/x").is_err());
    }

    #[test]
    fn a_host_with_more_than_one_colon_outside_brackets_is_refused() {
        for bad in ["a:b:c", "::1:22201", "::1"] {
            let err = ConnectString::parse(bad).unwrap_err();
            assert!(err.to_string().contains("[::1]:2181"), "{bad}: {err}");
        }
        assert_eq!(
            ConnectString::parse("[::1]:22201").unwrap().hosts,
            vec![("::1".to_owned(), 22201)]
        );
    }

    #[test]
    fn paths_a_server_would_refuse_are_refused_before_sending() {
        for bad in ["", "x", "/a/", "/a//b", "/a/./b", "/a/../b", "/a\0"] {
            assert!(validate_path(bad).is_err(), "{bad:?} accepted");
        }
        for good in ["/", "/a", "/a/b-", "/a/b c"] {
            assert!(validate_path(good).is_ok(), "{good:?} refused");
        }
    }
}
