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

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use crate::frame::{self, FrameDecoder};
use crate::jute::*;

// The connection's rooms, from the bottom up: the errors; the requests and replies; the events
// and statistics; the task that owns the stream. This file holds the handle and the handshake.
mod driver;
mod error;
mod events;
mod message;
mod queue;

use driver::{Cmd, Shared, Submit};
use error::{is_eof, tls_error, too_large};
pub use error::{Error, OpError};
pub use events::{Event, Events, Stats, EVENT_QUEUE};
pub use message::{
    decode_reply_body, read_children_reply, ChildrenSink, OnReply, ReadChildren, Reply, Request,
    Response,
};

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
    /// out after a third of the negotiated timeout without a send, or sooner when this is
    /// shorter than half the timeout (see [`ping_interval`]).
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

/// A handle on one connection. Clones share it; when the last is dropped the task closes the
/// socket (the session itself lives on until its timeout).
#[derive(Clone)]
pub struct Connection {
    tx: queue::Sender<Cmd>,
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
    let ping_interval = ping_interval(session.timeout, read_timeout);
    let (tx, shared, events) = driver::start(
        stream,
        decoder,
        read_timeout,
        ping_interval,
        opts.last_zxid_seen,
    );
    Ok((
        Connection {
            tx,
            shared,
            session,
            max_packet: opts.max_packet,
        },
        events,
    ))
}

/// How long a connection stays silent before it pings: a third of the negotiated session
/// timeout, as ZooKeeper's own client (`ClientCnxn.SendThread.run` pings when nothing was sent
/// for `readTimeout / 2`, its `readTimeout` being two thirds of the timeout) and kazoo
/// (`protocol/connection.py`, the same less a jitter of up to 0.4 s) do, so an idle session
/// costs its server what a peer's does. Sooner when the read timeout is short: the ping's
/// answer always has a third of the read timeout to arrive before the link is given up.
pub fn ping_interval(session_timeout: Duration, read_timeout: Duration) -> Duration {
    (session_timeout / 3).min(read_timeout * 2 / 3)
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
        self.submit_reading(req, tag, None)
    }

    /// `submit_tagged`, and `read` reads the reply as it is decoded ([`OnReply`]): for a
    /// getChildren2 read by [`OnReply::Names`] or [`OnReply::EachName`], its names go there and
    /// the reply is then [`Response::ChildrenRead`].
    pub fn submit_reading(
        &self,
        req: &Request,
        tag: u64,
        read: Option<OnReply>,
    ) -> Result<ReplyFuture, Error> {
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
            .send(Cmd::Request(Box::new(Submit {
                op,
                frame,
                tx,
                tag,
                read,
            })))
            .map_err(|_| self.closed().unwrap_or(Error::Closed))?;
        Ok(ReplyFuture(rx))
    }

    /// Closes the connection with `why` (the session layer's judgement of what the server
    /// sent): outstanding requests fail with it and [`Event::Closed`] carries it.
    pub fn abort(&self, why: Error) {
        let _ = self.tx.send(Cmd::Abort(Box::new(why)));
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
            .send(Cmd::Fixed(Box::new(frame)))
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

#[cfg(test)]
mod tests {
    use super::ping_interval;
    use std::time::Duration;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    /// Within a millisecond (a third of a duration is not a whole number of them).
    fn ms_of(d: Duration) -> u128 {
        d.as_millis()
    }

    #[test]
    fn an_idle_connection_pings_every_third_of_the_session_timeout_as_the_peers_clients_do() {
        // The read timeout zklock's session asks for: half of T, or the 5 s connect timeout.
        assert_eq!(ms_of(ping_interval(MS(10_000), MS(5_000))), 3_333);
        assert_eq!(ms_of(ping_interval(MS(4_000), MS(2_000))), 1_333);
        // No read timeout asked for: ClientCnxn's two thirds of T.
        assert_eq!(ms_of(ping_interval(MS(6_000), MS(4_000))), 2_000);
    }

    #[test]
    fn a_short_read_timeout_pings_sooner_so_the_answer_has_a_third_of_it_to_arrive() {
        // T = 30 s with the 5 s connect timeout as the read timeout.
        let ping = ping_interval(MS(30_000), MS(5_000));
        assert_eq!(ms_of(ping), 3_333);
        assert!(MS(5_000) - ping >= MS(5_000) / 3);
    }
}
