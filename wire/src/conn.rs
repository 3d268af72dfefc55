//! One connection to one ZooKeeper server, driven by a task on the caller's tokio runtime.
//!
//! The client side of the protocol follows `ClientCnxn.java` and `ClientCnxnSocketNIO.java`
//! (apache/zookeeper release-3.8.4, `zookeeper-server/src/main/java/org/apache/zookeeper/`):
//! - the first frame out is a `ConnectRequest`, the first frame in a `ConnectResponse`; a
//!   response with a timeout `<= 0` means the session expired (`ClientCnxn.SendThread.onConnected`);
//!   a read-only server is refused here (a lock must not be granted by a partitioned member);
//! - every later request is `RequestHeader` + record; the server answers each in the order it
//!   was sent, so replies are matched against the oldest outstanding request and a reply with any
//!   other xid is a protocol error that closes the connection (`ClientCnxn.readResponse`:
//!   "Xid out of order");
//! - xid -1 is a watch notification, -2 a ping's reply (`ClientCnxn.NOTIFICATION_XID`, `PING_XID`);
//!   notifications are delivered in stream order with the replies: an event the server sent
//!   before a reply is in [`Events`] before that reply's future completes;
//! - a ping goes out when nothing was sent for a third of the negotiated timeout, and the
//!   connection is closed when nothing was heard for two thirds of it (`ClientCnxn`'s
//!   `readTimeout = sessionTimeout * 2 / 3`).
//!
//! The task owns the stream (a `TcpStream`, a TLS stream over one, or any
//! `AsyncRead + AsyncWrite` through [`connect_stream`]) and polls it by hand — read, then the
//! requests submitted, then one `poll_write` of all of them and a `poll_flush` — so a stream
//! without readiness of its own (TLS) is driven like a socket and no other task or thread is
//! needed. A reply is read, decoded and completes its request on the runtime's thread. Requests
//! queued while the task was busy are encoded into one buffer and leave in one write. Each reply
//! carries when its request left (the flush that carried its last byte completed: handed to the
//! kernel) and when the reply arrived; [`Connection::stats`] exposes when the server was last
//! heard from.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use thiserror::Error;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Sleep;

use crate::frame::{self, FrameDecoder, FrameError};
use crate::jute::*;

/// How many events may wait in [`Events`]: a server that sends them faster than the client
/// takes them (a flood of notifications, whatever their content) has the connection closed with
/// [`Error::EventFlood`], so the client's memory stays bounded whatever the server does. A real
/// server sends a notification once per watch set, so even a large burst is far below this.
pub const EVENT_QUEUE: usize = 4096;

/// The smallest and largest single read (see `Driver::read`).
const MIN_READ: usize = 2 * 1024;
const MAX_READ: usize = 64 * 1024;

/// Why a connection closed, or could not be made. Cloned to every request it fails.
#[derive(Debug, Clone, Error)]
pub enum Error {
    #[error("i/o error: {0}")]
    Io(Arc<std::io::Error>),
    /// The bytes read from the server are not ZooKeeper's framing: a length below zero or
    /// over the limit, a stream cut inside a frame, or another protocol (HTTP).
    #[error("bad bytes from the server: {0}")]
    Frame(#[from] FrameError),
    /// A request over the packet limit, refused before it was queued (never sent): the
    /// caller's, unlike [`Error::Frame`], which is the server's.
    #[error("the request is {len} bytes, over the server's packet limit of {limit}")]
    RequestTooLarge { len: usize, limit: usize },
    #[error("malformed record from the server: {0}")]
    Jute(#[from] JuteError),
    /// A reply that is not for the oldest outstanding request.
    #[error("reply with xid {got}, expected {expected:?}")]
    UnexpectedXid { got: i32, expected: Option<i32> },
    /// The server answered the connect request with a zero timeout: the session is gone.
    #[error("session expired")]
    SessionExpired,
    /// The server is in read-only mode.
    #[error("server is read-only")]
    ReadOnlyServer,
    #[error("connect timed out after {0:?}")]
    ConnectTimeout(Duration),
    /// The TLS handshake failed: the server's certificate is not trusted or does not name the
    /// host dialled, the server refused ours, or it does not speak TLS as configured.
    #[error("TLS handshake failed: {}", tls_reason(.0))]
    Tls(rustls::Error),
    /// Nothing heard from the server for two thirds of the session timeout.
    #[error("nothing heard from the server for {0:?}")]
    ReadTimeout(Duration),
    /// The server closed the connection.
    #[error("connection closed by the server")]
    ServerClosed,
    /// The connection was closed on this side (CloseSession done, or every handle dropped).
    #[error("connection closed")]
    Closed,
    /// A reply whose record is not the one its request calls for.
    #[error("reply of an unexpected shape")]
    UnexpectedShape,
    /// The server sent events faster than they were taken: [`EVENT_QUEUE`] were waiting.
    #[error("the server sent events faster than the client takes them ({0} waiting); closed to bound the client's memory")]
    EventFlood(usize),
    /// The server sent watch notifications for watches this client never set (closed by the
    /// session layer through [`Connection::abort`]).
    #[error("the server sent {0} watch notifications nobody asked for; closed to bound the client's work")]
    Unsolicited(u64),
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(Arc::new(e))
    }
}

/// A request's failure: the connection's, or the server's error code.
#[derive(Debug, Clone, Error)]
pub enum OpError {
    #[error(transparent)]
    Connection(#[from] Error),
    /// The reply header's `err`, a `KeeperException.Code` (see [`code`]).
    #[error("server error {name} ({0})", name = code::name(*.0))]
    Server(i32),
}

/// TLS for [`connect`]: the client configuration (see `tls::client_config`, feature `ring`, or
/// [`crate::tls::client_config_with_provider`]) and the name the server's certificate is checked
/// against (see [`crate::tls::server_name`]).
#[derive(Clone)]
pub struct TlsConnect {
    pub config: Arc<rustls::ClientConfig>,
    pub server_name: rustls::pki_types::ServerName<'static>,
}

impl std::fmt::Debug for TlsConnect {
    // The configuration holds the client's private key: only the name is shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConnect")
            .field("server_name", &self.server_name.to_str())
            .finish_non_exhaustive()
    }
}

/// What to connect with.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// The timeout asked for; the server negotiates it into its min/max session timeouts.
    pub session_timeout: Duration,
    /// 0 for a new session.
    pub session_id: i64,
    /// Empty for a new session (sent as 16 zero bytes, as the Java client does).
    pub passwd: Vec<u8>,
    pub last_zxid_seen: i64,
    /// How long the TCP connect, the TLS handshake and the ZooKeeper handshake may take.
    pub connect_timeout: Duration,
    /// The largest request payload sent, and reply payload accepted (`jute.maxbuffer`).
    pub max_packet: usize,
    /// TLS over the TCP connection, or `None` for plain TCP.
    pub tls: Option<TlsConnect>,
    /// Close the connection when nothing was heard for this long: at most two thirds of the
    /// negotiated timeout (`ClientCnxn`'s `readTimeout`), which is also the default. Pings go
    /// out after half of it without a send, so a healthy idle link is heard from twice as often.
    pub read_timeout: Option<Duration>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            session_timeout: Duration::from_secs(10),
            session_id: 0,
            passwd: Vec::new(),
            last_zxid_seen: 0,
            connect_timeout: Duration::from_secs(5),
            max_packet: frame::DEFAULT_MAX,
            tls: None,
            read_timeout: None,
        }
    }
}

/// The session as the server granted it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub id: i64,
    pub passwd: Vec<u8>,
    /// The negotiated timeout.
    pub timeout: Duration,
}

/// A request this crate can send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Create(CreateRequest),
    Create2(CreateRequest),
    /// A container node (`CreateMode.CONTAINER`): op 19, answered like create2
    /// (`ZooKeeper.create` picks `OpCode.createContainer` for it).
    CreateContainer(CreateRequest),
    Delete(DeleteRequest),
    Exists(ExistsRequest),
    GetData(GetDataRequest),
    SetData(SetDataRequest),
    GetChildren2(GetChildren2Request),
    Multi(MultiRequest),
    Sync(SyncRequest),
    /// A SASL token (op 102); see [`crate::sasl`].
    Sasl(GetSASLRequest),
    /// WhoAmI (op 107), no record.
    WhoAmI,
    CloseSession,
}

impl Request {
    pub fn op_code(&self) -> i32 {
        match self {
            Request::Create(_) => op::CREATE,
            Request::Create2(_) => op::CREATE2,
            Request::CreateContainer(_) => op::CREATE_CONTAINER,
            Request::Delete(_) => op::DELETE,
            Request::Exists(_) => op::EXISTS,
            Request::GetData(_) => op::GET_DATA,
            Request::SetData(_) => op::SET_DATA,
            Request::GetChildren2(_) => op::GET_CHILDREN2,
            Request::Multi(_) => op::MULTI,
            Request::Sync(_) => op::SYNC,
            Request::Sasl(_) => op::SASL,
            Request::WhoAmI => op::WHO_AM_I,
            Request::CloseSession => op::CLOSE_SESSION,
        }
    }

    /// The record after the header (none for CloseSession and WhoAmI).
    pub fn encode_body(&self, out: &mut Vec<u8>) {
        match self {
            Request::Create(r) | Request::Create2(r) | Request::CreateContainer(r) => r.encode(out),
            Request::Delete(r) => r.encode(out),
            Request::Exists(r) => r.encode(out),
            Request::GetData(r) => r.encode(out),
            Request::SetData(r) => r.encode(out),
            Request::GetChildren2(r) => r.encode(out),
            Request::Multi(r) => r.encode(out),
            Request::Sync(r) => r.encode(out),
            Request::Sasl(r) => r.encode(out),
            Request::CloseSession | Request::WhoAmI => {}
        }
    }
}

/// A reply's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    Create(CreateResponse),
    Create2(Create2Response),
    Delete,
    Exists(ExistsResponse),
    GetData(GetDataResponse),
    SetData(SetDataResponse),
    GetChildren2(GetChildren2Response),
    Multi(MultiResponse),
    Sync(SyncResponse),
    Sasl(SetSASLResponse),
    WhoAmI(WhoAmIResponse),
    CloseSession,
}

/// Decodes the body of a reply to a request of type `op` whose header carried `err`.
///
/// A non-zero `err` has no record (the server sends the header alone; like `ClientCnxn` any
/// bytes after it are not read), except a multi, which answers with its per-op results. A
/// record of the wrong shape — short, malformed or with bytes left over — is an error.
pub fn decode_reply_body(
    op: i32,
    err: i32,
    body: &[u8],
) -> Result<Result<Response, i32>, JuteError> {
    if err != 0 && (op != op::MULTI || body.is_empty()) {
        return Ok(Err(err));
    }
    let r = match op {
        op::CREATE => Response::Create(CreateResponse::decode_all(body)?),
        op::CREATE2 | op::CREATE_CONTAINER => Response::Create2(Create2Response::decode_all(body)?),
        op::DELETE => Reader::new(body).finish().map(|_| Response::Delete)?,
        op::EXISTS => Response::Exists(ExistsResponse::decode_all(body)?),
        op::GET_DATA => Response::GetData(GetDataResponse::decode_all(body)?),
        op::SET_DATA => Response::SetData(SetDataResponse::decode_all(body)?),
        op::GET_CHILDREN2 => Response::GetChildren2(GetChildren2Response::decode_all(body)?),
        op::MULTI => Response::Multi(MultiResponse::decode_all(body)?),
        op::SYNC => Response::Sync(SyncResponse::decode_all(body)?),
        op::SASL => Response::Sasl(SetSASLResponse::decode_all(body)?),
        op::WHO_AM_I => Response::WhoAmI(WhoAmIResponse::decode_all(body)?),
        op::CLOSE_SESSION => Reader::new(body).finish().map(|_| Response::CloseSession)?,
        other => return Err(JuteError::UnknownOp(other)),
    };
    Ok(Ok(r))
}

/// A reply, with the times the lifeline needs.
#[derive(Debug, Clone)]
pub struct Reply {
    pub xid: i32,
    pub zxid: i64,
    /// The record, or the server's error code.
    pub result: Result<Response, i32>,
    /// When the request's last byte was handed to the kernel.
    pub sent_at: Instant,
    /// When the reply was read.
    pub received_at: Instant,
}

/// A watch notification, or the end of the connection.
#[derive(Debug, Clone)]
pub enum Event {
    Watch {
        event: WatcherEvent,
        zxid: i64,
    },
    /// A request submitted with a tag (`Connection::submit_tagged`) was answered with this
    /// error code (0: success). Sent before the reply completes and after every event the
    /// server sent before the reply: the session layer arms a watch here, in stream order, so
    /// no event for it can be missed.
    Answered {
        tag: u64,
        err: i32,
    },
    /// The reply to an `AuthPacket` (xid -4): 0, or `AUTH_FAILED` (the server then closes the
    /// connection). The server answers auth at once, out of order with other requests
    /// (`ZooKeeperServer.processPacket`), so it is not matched against the outstanding queue.
    Auth {
        err: i32,
    },
    /// The connection closed; nothing follows.
    Closed(Error),
}

/// The connection's events, in the order they arrived relative to replies.
#[derive(Debug)]
pub struct Events(mpsc::Receiver<Event>);

impl Events {
    /// The next event; `None` after [`Event::Closed`] was taken.
    pub async fn recv(&mut self) -> Option<Event> {
        self.0.recv().await
    }
    pub fn try_recv(&mut self) -> Option<Event> {
        self.0.try_recv().ok()
    }
}

/// What the transport knows about its link, for the lifeline.
#[derive(Debug, Clone)]
pub struct Stats {
    /// When the last frame (reply, ping reply or event) was read.
    pub last_recv: Instant,
    /// When bytes were last handed to the kernel.
    pub last_send: Instant,
    /// When the last ping left, and when its reply came (if it has).
    pub last_ping_sent: Option<Instant>,
    pub last_ping_reply: Option<Instant>,
    /// The two latest answered pings as (sent, answered), newest first, each reply matched to
    /// the oldest ping in flight (the server answers in order).
    pub pings_answered: [Option<(Instant, Instant)>; 2],
    /// The largest zxid seen in a reply.
    pub last_zxid: i64,
    /// Write calls made and frames sent, pings included.
    pub writes: u64,
    pub frames_sent: u64,
    /// Requests sent and not yet answered.
    pub outstanding: usize,
}

struct Shared {
    stats: Stats,
    closed: Option<Error>,
}

enum Cmd {
    Request {
        op: i32,
        frame: Vec<u8>,
        tx: oneshot::Sender<Result<Reply, Error>>,
        tag: u64,
    },
    /// A frame with a reserved xid (auth, SetWatches) whose reply is not queued.
    Fixed { frame: Vec<u8> },
    /// Close the connection now, with this reason (see [`Connection::abort`]).
    Abort(Error),
}

/// A handle on one connection. Clones share it; when the last is dropped the task closes the
/// socket (the session itself lives on until its timeout).
#[derive(Clone)]
pub struct Connection {
    tx: mpsc::UnboundedSender<Cmd>,
    shared: Arc<Mutex<Shared>>,
    session: Session,
    max_packet: usize,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("session_id", &format_args!("{:#x}", self.session.id))
            .finish()
    }
}

/// A reply to come.
#[derive(Debug)]
pub struct ReplyFuture(oneshot::Receiver<Result<Reply, Error>>);

impl Future for ReplyFuture {
    type Output = Result<Reply, Error>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0)
            .poll(cx)
            .map(|r| r.unwrap_or(Err(Error::Closed)))
    }
}

/// Connects to one server (`host:port`) and establishes or resumes a session: TCP, then TLS if
/// `opts.tls` is set, then ZooKeeper's handshake, all within `opts.connect_timeout`.
pub async fn connect(addr: &str, opts: &ConnectOptions) -> Result<(Connection, Events), Error> {
    let attempt = async {
        let tcp = TcpStream::connect(addr).await?;
        tcp.set_nodelay(true)?;
        match &opts.tls {
            None => establish(tcp, opts).await,
            Some(tls) => {
                let stream = tokio_rustls::TlsConnector::from(tls.config.clone())
                    .connect(tls.server_name.clone(), tcp)
                    .await
                    .map_err(tls_error)?;
                establish(stream, opts).await
            }
        }
    };
    tokio::time::timeout(opts.connect_timeout, attempt)
        .await
        .map_err(|_| Error::ConnectTimeout(opts.connect_timeout))?
}

/// Establishes or resumes a session over a stream already connected (and secured, if it is to
/// be), within `opts.connect_timeout`; `opts.tls` is not used. The connection's task owns the
/// stream from then on.
pub async fn connect_stream<S>(
    stream: S,
    opts: &ConnectOptions,
) -> Result<(Connection, Events), Error>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    tokio::time::timeout(opts.connect_timeout, establish(stream, opts))
        .await
        .map_err(|_| Error::ConnectTimeout(opts.connect_timeout))?
}

/// A TLS handshake's failure: rustls' own reason if it has one (tokio-rustls wraps it in an
/// `io::Error`); the server closing the connection in the middle (what a port without TLS does
/// with a ClientHello) is a TLS failure too; any other i/o error stays one.
fn tls_error(e: std::io::Error) -> Error {
    if let Some(tls) = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    {
        return Error::Tls(tls.clone());
    }
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        return Error::Tls(rustls::Error::General(
            "the server closed the connection during the handshake (is the port a TLS port?)"
                .into(),
        ));
    }
    e.into()
}

/// [`Error::Tls`]'s message: the common cases in words, with rustls' own detail.
fn tls_reason(e: &rustls::Error) -> String {
    use rustls::CertificateError as C;
    match e {
        rustls::Error::InvalidCertificate(C::UnknownIssuer) => {
            "the server's certificate is not trusted (not signed by the configured CA: UnknownIssuer)"
                .into()
        }
        rustls::Error::InvalidCertificate(C::NotValidForName | C::NotValidForNameContext { .. }) => {
            format!("the server's certificate does not name the host dialled ({e})")
        }
        rustls::Error::AlertReceived(_) => format!("the server refused the handshake ({e})"),
        rustls::Error::General(why) => why.clone(),
        _ => e.to_string(),
    }
}

/// A frame this side would write over the limit (the only error `write_frame` gives).
fn too_large(e: FrameError) -> Error {
    match e {
        FrameError::TooLarge { len, limit } => Error::RequestTooLarge { len, limit },
        other => Error::Frame(other),
    }
}

/// Whether a read error means the peer closed the stream (a TLS stream, for one, reports a close
/// without `close_notify` as `UnexpectedEof`).
fn is_eof(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::UnexpectedEof
}

/// ZooKeeper's handshake: the `ConnectRequest` out, the `ConnectResponse` in. Returns the
/// decoder, which may already hold frames that followed the response.
async fn handshake<S>(
    stream: &mut S,
    opts: &ConnectOptions,
) -> Result<(FrameDecoder, ConnectResponse), Error>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut out = Vec::new();
    let req = ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: opts.last_zxid_seen,
        timeout: opts.session_timeout.as_millis().min(i32::MAX as u128) as i32,
        session_id: opts.session_id,
        passwd: if opts.passwd.is_empty() {
            vec![0; 16]
        } else {
            opts.passwd.clone()
        },
        read_only: false,
    };
    frame::write_frame(&mut out, opts.max_packet, |o| req.encode(o)).map_err(too_large)?;
    stream.write_all(&out).await?;
    stream.flush().await?;
    let mut decoder = FrameDecoder::new(opts.max_packet);
    let mut buf = vec![0u8; 4096];
    let resp = loop {
        if let Some(f) = decoder.next_frame()? {
            // Decoded leniently at the end, like the Java client: fields a later server
            // might append are not read.
            break ConnectResponse::decode(&mut Reader::new(f))?;
        }
        match stream.read(&mut buf).await {
            Ok(0) => {
                decoder.finish()?;
                return Err(Error::ServerClosed);
            }
            Ok(n) => decoder.extend(&buf[..n]),
            Err(e) if is_eof(&e) => {
                decoder.finish()?;
                return Err(Error::ServerClosed);
            }
            Err(e) => return Err(e.into()),
        }
    };
    if resp.timeout <= 0 {
        return Err(Error::SessionExpired);
    }
    if resp.read_only {
        return Err(Error::ReadOnlyServer);
    }
    Ok((decoder, resp))
}

/// The handshake, then the connection's task on the runtime.
async fn establish<S>(mut stream: S, opts: &ConnectOptions) -> Result<(Connection, Events), Error>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (decoder, resp) = handshake(&mut stream, opts).await?;

    let session = Session {
        id: resp.session_id,
        passwd: resp.passwd,
        timeout: Duration::from_millis(resp.timeout as u64),
    };
    let longest = session.timeout * 2 / 3;
    let read_timeout = opts.read_timeout.map_or(longest, |r| r.min(longest));
    let now = Instant::now();
    let shared = Arc::new(Mutex::new(Shared {
        stats: Stats {
            last_recv: now,
            last_send: now,
            last_ping_sent: None,
            last_ping_reply: None,
            pings_answered: [None; 2],
            last_zxid: opts.last_zxid_seen,
            writes: 0,
            frames_sent: 0,
            outstanding: 0,
        },
        closed: None,
    }));
    let (tx, rx) = mpsc::unbounded_channel();
    let (etx, erx) = mpsc::channel(EVENT_QUEUE + 1);
    let driver = Driver {
        stream,
        rx,
        events: etx,
        shared: shared.clone(),
        decoder,
        pending: VecDeque::new(),
        wbuf: Vec::new(),
        wpos: 0,
        queued: 0,
        written: 0,
        next_xid: 1,
        ping_interval: read_timeout / 2,
        pings_sent: VecDeque::new(),
        read_timeout,
        read_chunk: MIN_READ,
        last_send: now,
        last_recv: now,
        closing: false,
        unflushed: false,
    };
    tokio::spawn(driver.run());
    Ok((
        Connection {
            tx,
            shared,
            session,
            max_packet: opts.max_packet,
        },
        Events(erx),
    ))
}

impl Connection {
    pub fn session(&self) -> &Session {
        &self.session
    }

    pub fn stats(&self) -> Stats {
        self.shared.lock().unwrap().stats.clone()
    }

    /// Why the connection closed, once it has.
    pub fn closed(&self) -> Option<Error> {
        self.shared.lock().unwrap().closed.clone()
    }

    /// Queues a request without waiting: requests submitted before the task next runs leave in
    /// one write. A request over the packet limit is refused here and never sent.
    pub fn submit(&self, req: &Request) -> Result<ReplyFuture, Error> {
        self.submit_tagged(req, 0)
    }

    /// `submit`, and an [`Event::Answered`] with `tag` (non-zero) when the reply comes.
    pub fn submit_tagged(&self, req: &Request, tag: u64) -> Result<ReplyFuture, Error> {
        let mut frame = Vec::new();
        let op = req.op_code();
        frame::write_frame(&mut frame, self.max_packet, |o| {
            // The xid is written by the task, which numbers requests in the order they leave.
            RequestHeader { xid: 0, op }.encode(o);
            req.encode_body(o);
        })
        .map_err(too_large)?;
        let (tx, rx) = oneshot::channel();
        self.tx
            .send(Cmd::Request { op, frame, tx, tag })
            .map_err(|_| self.closed().unwrap_or(Error::Closed))?;
        Ok(ReplyFuture(rx))
    }

    /// Closes the connection with `why` (the session layer's judgement of what the server
    /// sent): outstanding requests fail with it and [`Event::Closed`] carries it.
    pub fn abort(&self, why: Error) {
        let _ = self.tx.send(Cmd::Abort(why));
    }

    /// Sends an `AuthPacket` (xid -4); its answer comes as [`Event::Auth`].
    pub fn send_auth(&self, scheme: &str, auth: &[u8]) -> Result<(), Error> {
        let packet = AuthPacket {
            auth_type: 0,
            scheme: scheme.into(),
            auth: auth.to_vec(),
        };
        self.send_fixed(xid::AUTH, op::AUTH, |o| packet.encode(o))
    }

    /// Sends `SetWatches` (xid -8): the server re-arms the watches and fires those whose node
    /// changed after `relative_zxid` (`DataTree.setWatches`). Its answer is not waited for.
    pub fn send_set_watches(&self, watches: &SetWatches) -> Result<(), Error> {
        self.send_fixed(xid::SET_WATCHES, op::SET_WATCHES, |o| watches.encode(o))
    }

    fn send_fixed(&self, xid: i32, op: i32, body: impl FnOnce(&mut Vec<u8>)) -> Result<(), Error> {
        let mut frame = Vec::new();
        frame::write_frame(&mut frame, self.max_packet, |o| {
            RequestHeader { xid, op }.encode(o);
            body(o);
        })
        .map_err(too_large)?;
        self.tx
            .send(Cmd::Fixed { frame })
            .map_err(|_| self.closed().unwrap_or(Error::Closed))
    }

    /// Sends a request and waits for its reply.
    pub async fn call(&self, req: &Request) -> Result<Reply, Error> {
        self.submit(req)?.await
    }

    async fn expect(&self, req: Request) -> Result<Response, OpError> {
        self.call(&req).await?.result.map_err(OpError::Server)
    }

    /// Create (op 1); returns the created path (with its sequence suffix if sequential).
    pub async fn create(&self, path: &str, data: &[u8], flags: i32) -> Result<String, OpError> {
        match self
            .expect(Request::Create(create_request(path, data, flags)))
            .await?
        {
            Response::Create(r) => Ok(r.path),
            other => unreachable_shape(other),
        }
    }

    /// Create2 (op 15); returns the created path and its stat.
    pub async fn create2(
        &self,
        path: &str,
        data: &[u8],
        flags: i32,
    ) -> Result<Create2Response, OpError> {
        match self
            .expect(Request::Create2(create_request(path, data, flags)))
            .await?
        {
            Response::Create2(r) => Ok(r),
            other => unreachable_shape(other),
        }
    }

    pub async fn delete(&self, path: &str, version: i32) -> Result<(), OpError> {
        self.expect(Request::Delete(DeleteRequest {
            path: path.into(),
            version,
        }))
        .await
        .map(|_| ())
    }

    /// Exists (op 3): `None` if the node does not exist (the watch, if asked, is set anyway).
    pub async fn exists(&self, path: &str, watch: bool) -> Result<Option<Stat>, OpError> {
        match self
            .expect(Request::Exists(ExistsRequest {
                path: path.into(),
                watch,
            }))
            .await
        {
            Ok(Response::Exists(r)) => Ok(Some(r.stat)),
            Err(OpError::Server(code::NO_NODE)) => Ok(None),
            Err(e) => Err(e),
            Ok(other) => unreachable_shape(other),
        }
    }

    pub async fn get_data(&self, path: &str, watch: bool) -> Result<GetDataResponse, OpError> {
        match self
            .expect(Request::GetData(GetDataRequest {
                path: path.into(),
                watch,
            }))
            .await?
        {
            Response::GetData(r) => Ok(r),
            other => unreachable_shape(other),
        }
    }

    pub async fn set_data(&self, path: &str, data: &[u8], version: i32) -> Result<Stat, OpError> {
        match self
            .expect(Request::SetData(SetDataRequest {
                path: path.into(),
                data: data.to_vec(),
                version,
            }))
            .await?
        {
            Response::SetData(r) => Ok(r.stat),
            other => unreachable_shape(other),
        }
    }

    pub async fn get_children2(
        &self,
        path: &str,
        watch: bool,
    ) -> Result<GetChildren2Response, OpError> {
        match self
            .expect(Request::GetChildren2(GetChildren2Request {
                path: path.into(),
                watch,
            }))
            .await?
        {
            Response::GetChildren2(r) => Ok(r),
            other => unreachable_shape(other),
        }
    }

    /// Multi (op 14). A failed multi is still `Ok`: its results hold the per-op errors
    /// ([`MultiResponse::first_error`]), and nothing was applied.
    pub async fn multi(&self, ops: Vec<MultiOp>) -> Result<MultiResponse, OpError> {
        match self.expect(Request::Multi(MultiRequest { ops })).await? {
            Response::Multi(r) => Ok(r),
            other => unreachable_shape(other),
        }
    }

    /// Sync (op 9): the server this connection talks to catches up with the leader.
    pub async fn sync(&self, path: &str) -> Result<String, OpError> {
        match self
            .expect(Request::Sync(SyncRequest { path: path.into() }))
            .await?
        {
            Response::Sync(r) => Ok(r.path),
            other => unreachable_shape(other),
        }
    }

    /// CloseSession (op -11): the server deletes the session's ephemerals and closes the
    /// connection.
    pub async fn close_session(&self) -> Result<(), OpError> {
        self.expect(Request::CloseSession).await.map(|_| ())
    }
}

fn create_request(path: &str, data: &[u8], flags: i32) -> CreateRequest {
    CreateRequest {
        path: path.into(),
        data: data.to_vec(),
        acl: Acl::open_unsafe(),
        flags,
    }
}

/// The task decodes a reply by its request's op, so a helper never sees another shape.
fn unreachable_shape<T>(_: Response) -> Result<T, OpError> {
    Err(OpError::Connection(Error::UnexpectedShape))
}

struct Pending {
    xid: i32,
    op: i32,
    /// Stream offset just past this request's frame.
    end: u64,
    sent_at: Option<Instant>,
    tx: oneshot::Sender<Result<Reply, Error>>,
    /// Non-zero: announce the answer on `Events` (see `Event::Answered`).
    tag: u64,
}

/// The connection's task: owns the stream (plain TCP, TLS, or any other) and is polled by hand
/// so that a TLS stream, which has no readiness of its own, is driven like a socket.
struct Driver<S> {
    stream: S,
    rx: mpsc::UnboundedReceiver<Cmd>,
    /// Bounded: one place more than [`EVENT_QUEUE`], kept for [`Event::Closed`].
    events: mpsc::Sender<Event>,
    shared: Arc<Mutex<Shared>>,
    decoder: FrameDecoder,
    pending: VecDeque<Pending>,
    wbuf: Vec<u8>,
    wpos: usize,
    /// Bytes queued / written since the handshake.
    queued: u64,
    written: u64,
    next_xid: i32,
    ping_interval: Duration,
    /// When each ping in flight was queued, oldest first.
    pings_sent: VecDeque<Instant>,
    read_timeout: Duration,
    /// The size of the next read (see `read`).
    read_chunk: usize,
    last_send: Instant,
    last_recv: Instant,
    closing: bool,
    /// Bytes were handed to the stream and it has not yet been flushed: a TLS stream holds
    /// records until flushed (a `TcpStream`'s flush does nothing).
    unflushed: bool,
}

impl<S> Driver<S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    async fn run(mut self) {
        let err = self.drive().await;
        {
            let mut s = self.shared.lock().unwrap();
            s.closed = Some(err.clone());
            s.stats.outstanding = 0;
        }
        self.rx.close();
        for p in self.pending.drain(..) {
            let _ = p.tx.send(Err(err.clone()));
        }
        while let Ok(cmd) = self.rx.try_recv() {
            if let Cmd::Request { tx, .. } = cmd {
                let _ = tx.send(Err(err.clone()));
            }
        }
        // The place kept free by `event` (this task is the only sender).
        let _ = self.events.try_send(Event::Closed(err));
    }

    /// Queues an event for the session layer, or fails the connection when the queue is full:
    /// the server outran the client, and reading on would only pile events up (or stall the
    /// replies behind them). One place is always left for the final `Event::Closed`.
    fn event(&mut self, event: Event) -> Result<(), Error> {
        if self.events.is_closed() {
            return Ok(());
        }
        if self.events.capacity() <= 1 {
            return Err(Error::EventFlood(EVENT_QUEUE));
        }
        let _ = self.events.try_send(event);
        Ok(())
    }

    async fn drive(&mut self) -> Error {
        // Frames that arrived with the handshake's reply.
        if let Err(e) = self.on_frames() {
            return e;
        }
        let ping = tokio::time::sleep_until((self.last_send + self.ping_interval).into());
        let dead = tokio::time::sleep_until((self.last_recv + self.read_timeout).into());
        tokio::pin!(ping, dead);
        std::future::poll_fn(|cx| self.poll_drive(cx, ping.as_mut(), dead.as_mut())).await
    }

    /// Runs the connection until it ends, with the reason. Each turn reads what arrived, takes
    /// every request submitted since the last turn, adds a ping if one is due, and hands all
    /// of it to the stream in one write; it returns `Pending` only when nothing could progress
    /// (every source polled has registered the task's waker).
    fn poll_drive(
        &mut self,
        cx: &mut Context<'_>,
        mut ping: Pin<&mut Sleep>,
        mut dead: Pin<&mut Sleep>,
    ) -> Poll<Error> {
        loop {
            let mut progress = false;
            match self.read(cx) {
                Poll::Ready(Ok(())) => progress = true,
                Poll::Ready(Err(e)) => return Poll::Ready(e),
                Poll::Pending => {}
            }
            // Nothing after CloseSession: what is submitted later is failed when the task ends.
            while !self.closing {
                match self.rx.poll_recv(cx) {
                    Poll::Ready(Some(Cmd::Abort(e))) => return Poll::Ready(e),
                    Poll::Ready(Some(cmd)) => self.enqueue(cmd),
                    Poll::Ready(None) => return Poll::Ready(Error::Closed),
                    Poll::Pending => break,
                }
            }
            // Not while a write is stuck: the ping would only pile up behind it.
            let want_write = self.wpos < self.wbuf.len() || self.unflushed;
            if !self.closing && !want_write {
                let at = tokio::time::Instant::from_std(self.last_send + self.ping_interval);
                if ping.deadline() != at {
                    ping.as_mut().reset(at);
                }
                if ping.as_mut().poll(cx).is_ready() {
                    self.ping();
                }
            }
            match self.flush(cx) {
                Ok(wrote) => progress |= wrote,
                Err(e) => return Poll::Ready(e),
            }
            let at = tokio::time::Instant::from_std(self.last_recv + self.read_timeout);
            if dead.deadline() != at {
                dead.as_mut().reset(at);
            }
            if dead.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Error::ReadTimeout(self.read_timeout));
            }
            if !progress {
                return Poll::Pending;
            }
        }
    }

    /// One read straight into the decoder's buffer, and the frames it completed. The read's
    /// size follows the traffic: it doubles after a read that filled it (up to 64 KiB) and the
    /// buffer is given back when idle, so an idle session holds a few KiB, not 64.
    fn read(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        let want = self.read_chunk;
        let mut rb = ReadBuf::new(self.decoder.read_space(want));
        let polled = Pin::new(&mut self.stream).poll_read(cx, &mut rb);
        let filled = rb.filled().len();
        self.decoder.commit(want, filled);
        let n = match ready!(polled) {
            Ok(()) => filled,
            Err(e) if is_eof(&e) => 0,
            Err(e) => return Poll::Ready(Err(e.into())),
        };
        if n == 0 {
            if let Err(e) = self.decoder.finish() {
                return Poll::Ready(Err(e.into()));
            }
            return Poll::Ready(Err(if self.closing {
                Error::Closed
            } else {
                Error::ServerClosed
            }));
        }
        if n == want {
            self.read_chunk = (want * 2).min(MAX_READ);
        } else if n < want / 4 {
            self.read_chunk = (want / 2).max(MIN_READ);
        }
        let decoded = self.on_frames();
        // Idle again: back to small reads, and a buffer grown for a large reply is freed (a
        // thousand sessions that each read a long listing once must not keep it).
        if self.decoder.buffered() == 0 && self.read_chunk > MIN_READ {
            self.read_chunk = MIN_READ;
        }
        self.decoder.shrink_when_idle(2 * MIN_READ);
        Poll::Ready(decoded)
    }

    fn enqueue(&mut self, cmd: Cmd) {
        let (op, mut frame, tx, tag) = match cmd {
            Cmd::Request { op, frame, tx, tag } => (op, frame, tx, tag),
            Cmd::Fixed { frame } => {
                self.queued += frame.len() as u64;
                self.wbuf.extend_from_slice(&frame);
                return;
            }
            // Taken by `poll_drive` before it gets here.
            Cmd::Abort(_) => return,
        };
        let xid = self.next_xid;
        self.next_xid = if xid == i32::MAX { 1 } else { xid + 1 };
        frame[4..8].copy_from_slice(&xid.to_be_bytes());
        self.queued += frame.len() as u64;
        self.wbuf.extend_from_slice(&frame);
        self.pending.push_back(Pending {
            xid,
            op,
            end: self.queued,
            sent_at: None,
            tx,
            tag,
        });
        if op == op::CLOSE_SESSION {
            // Nothing after CloseSession: the server closes the connection.
            self.closing = true;
        }
    }

    fn ping(&mut self) {
        let mut frame = Vec::with_capacity(12);
        // Cannot fail: 8 bytes.
        let _ = frame::write_frame(&mut frame, usize::MAX, |o| {
            RequestHeader {
                xid: xid::PING,
                op: op::PING,
            }
            .encode(o)
        });
        self.queued += frame.len() as u64;
        self.wbuf.extend_from_slice(&frame);
        let now = Instant::now();
        self.pings_sent.push_back(now);
        self.shared.lock().unwrap().stats.last_ping_sent = Some(now);
    }

    /// Hands the queued bytes to the stream (one `poll_write` for all of them when it takes
    /// them, as a socket with room does) and flushes it; a request's `sent_at` is when the
    /// flush that carried its last byte completed. Returns whether anything moved.
    fn flush(&mut self, cx: &mut Context<'_>) -> Result<bool, Error> {
        let mut writes = 0;
        while self.wpos < self.wbuf.len() {
            match Pin::new(&mut self.stream).poll_write(cx, &self.wbuf[self.wpos..]) {
                Poll::Ready(Ok(0)) => {
                    return Err(std::io::Error::from(std::io::ErrorKind::WriteZero).into())
                }
                Poll::Ready(Ok(n)) => {
                    writes += 1;
                    self.wpos += n;
                    self.written += n as u64;
                    self.unflushed = true;
                }
                Poll::Ready(Err(e)) => return Err(e.into()),
                Poll::Pending => break,
            }
        }
        if self.wpos == self.wbuf.len() {
            self.wbuf.clear();
            self.wpos = 0;
        }
        let mut flushed = false;
        if self.unflushed {
            match Pin::new(&mut self.stream).poll_flush(cx) {
                Poll::Ready(Ok(())) => {
                    self.unflushed = false;
                    flushed = true;
                }
                Poll::Ready(Err(e)) => return Err(e.into()),
                Poll::Pending => {}
            }
        }
        if writes == 0 && !flushed {
            return Ok(false);
        }
        let now = Instant::now();
        self.last_send = now;
        let mut sent_frames = 0;
        if !self.unflushed {
            for p in self.pending.iter_mut().rev() {
                if p.sent_at.is_some() {
                    break;
                }
                if p.end <= self.written {
                    p.sent_at = Some(now);
                    sent_frames += 1;
                }
            }
        }
        let mut s = self.shared.lock().unwrap();
        s.stats.last_send = now;
        s.stats.writes += writes;
        s.stats.frames_sent += sent_frames;
        s.stats.outstanding = self.pending.len();
        Ok(true)
    }

    fn on_frames(&mut self) -> Result<(), Error> {
        let now = Instant::now();
        let mut any = false;
        while let Some(payload) = self.decoder.next_frame()? {
            any = true;
            let mut r = Reader::new(payload);
            let h = ReplyHeader::decode(&mut r)?;
            let body = &payload[payload.len() - r.remaining()..];
            match h.xid {
                xid::NOTIFICATION => {
                    let event = WatcherEvent::decode_all(body)?;
                    self.event(Event::Watch {
                        event,
                        zxid: h.zxid,
                    })?;
                }
                xid::PING => {
                    Reader::new(body).finish()?;
                    let sent = self.pings_sent.pop_front();
                    let mut shared = self.shared.lock().unwrap();
                    shared.stats.last_ping_reply = Some(now);
                    if let Some(sent) = sent {
                        let answered = &mut shared.stats.pings_answered;
                        *answered = [Some((sent, now)), answered[0]];
                    }
                }
                xid::AUTH => {
                    self.event(Event::Auth { err: h.err })?;
                }
                // Nothing to do with the answer: the server re-armed what it could.
                xid::SET_WATCHES => {}
                got => {
                    let Some(p) = self.pending.front() else {
                        return Err(Error::UnexpectedXid {
                            got,
                            expected: None,
                        });
                    };
                    if p.xid != got {
                        return Err(Error::UnexpectedXid {
                            got,
                            expected: Some(p.xid),
                        });
                    }
                    let result = decode_reply_body(p.op, h.err, body)?;
                    let tag = p.tag;
                    if tag != 0 {
                        let err = match &result {
                            Ok(_) => 0,
                            Err(e) => *e,
                        };
                        // Before the request leaves `pending`, so a flood fails it too.
                        self.event(Event::Answered { tag, err })?;
                    }
                    let p = self.pending.pop_front().expect("front checked above");
                    if h.zxid > 0 {
                        let mut s = self.shared.lock().unwrap();
                        s.stats.last_zxid = s.stats.last_zxid.max(h.zxid);
                    }
                    let _ = p.tx.send(Ok(Reply {
                        xid: got,
                        zxid: h.zxid,
                        result,
                        sent_at: p.sent_at.unwrap_or(now),
                        received_at: now,
                    }));
                }
            }
        }
        if any {
            self.last_recv = now;
            let mut s = self.shared.lock().unwrap();
            s.stats.last_recv = now;
            s.stats.outstanding = self.pending.len();
        }
        Ok(())
    }
}
