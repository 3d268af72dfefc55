//! What a request of the session layer fails with, by what the caller does about it, and how a
//! connection's failure becomes one. A leaf of `client`: every other room returns these.

use thiserror::Error;

use crate::conn;
use crate::jute::*;

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

pub(super) fn connection_error(e: conn::Error) -> Error {
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

pub(super) fn op_error(e: conn::OpError) -> Error {
    match e {
        conn::OpError::Connection(c) => connection_error(c),
        conn::OpError::Server(c) => Error::from_code(c),
    }
}

pub(super) fn shape() -> Error {
    Error::ConnectionLoss(conn::Error::UnexpectedShape.to_string())
}
