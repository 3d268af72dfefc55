//! Why a connection closed or could not be made, and why a request failed: the errors every
//! part of the connection reports, with the words for TLS failures. A leaf of `conn`: it names
//! nothing else of it, so the handshake, the task and the handle can all return these.

use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;

use crate::frame::FrameError;
use crate::jute::*;

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
    /// The server sent events faster than they were taken: [`EVENT_QUEUE`](super::EVENT_QUEUE) were waiting.
    #[error("the server sent events faster than the client takes them ({0} waiting); closed to bound the client's memory")]
    EventFlood(usize),
    /// The server sent watch notifications for watches this client never set (closed by the
    /// session layer through [`Connection::abort`](super::Connection::abort)).
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

/// A TLS handshake's failure: rustls' own reason if it has one (tokio-rustls wraps it in an
/// `io::Error`); the server closing the connection in the middle (what a port without TLS does
/// with a ClientHello) is a TLS failure too; any other i/o error stays one.
pub(super) fn tls_error(e: std::io::Error) -> Error {
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
pub(super) fn too_large(e: FrameError) -> Error {
    match e {
        FrameError::TooLarge { len, limit } => Error::RequestTooLarge { len, limit },
        other => Error::Frame(other),
    }
}

/// Whether a read error means the peer closed the stream (a TLS stream, for one, reports a close
/// without `close_notify` as `UnexpectedEof`).
pub(super) fn is_eof(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::UnexpectedEof
}
