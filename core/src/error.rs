//! The one error type of zklock. Every face maps these variants once (see ../shared/API.md).

use zookeeper_client as zk;

/// Every failure zklock reports. Each variant carries a message that names the path or value
/// involved and the cause, ready to show to a person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The deadline passed before the lock was acquired.
    #[error("{0}")]
    Timeout(String),
    /// The caller cancelled the acquire.
    #[error("{0}")]
    Cancelled(String),
    /// The lease was lost while it was held.
    #[error("{0}")]
    LockLost(String),
    /// The client's ZooKeeper session expired.
    #[error("{0}")]
    SessionExpired(String),
    /// The ensemble could not be reached within the connect timeout.
    #[error("{0}")]
    Connection(String),
    /// Release by a caller that holds nothing.
    #[error("{0}")]
    NotHeld(String),
    /// A read holder asked for the write lock.
    #[error("{0}")]
    UpgradeNotAllowed(String),
    /// A bad path, connect string, duration or option.
    #[error("{0}")]
    InvalidArgument(String),
    /// Use after the client was closed.
    #[error("{0}")]
    Closed(String),
    /// ZooKeeper's ACL refused the operation.
    #[error("{0}")]
    Permission(String),
    /// Any other server error; ZooKeeper's own wording is in the message.
    #[error("{0}")]
    ZooKeeper(String),
}

/// The kind of an [`Error`] without its message, for the faces' one mapping table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    Timeout,
    Cancelled,
    LockLost,
    SessionExpired,
    Connection,
    NotHeld,
    UpgradeNotAllowed,
    InvalidArgument,
    Closed,
    Permission,
    ZooKeeper,
}

impl Error {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Timeout(_) => ErrorKind::Timeout,
            Error::Cancelled(_) => ErrorKind::Cancelled,
            Error::LockLost(_) => ErrorKind::LockLost,
            Error::SessionExpired(_) => ErrorKind::SessionExpired,
            Error::Connection(_) => ErrorKind::Connection,
            Error::NotHeld(_) => ErrorKind::NotHeld,
            Error::UpgradeNotAllowed(_) => ErrorKind::UpgradeNotAllowed,
            Error::InvalidArgument(_) => ErrorKind::InvalidArgument,
            Error::Closed(_) => ErrorKind::Closed,
            Error::Permission(_) => ErrorKind::Permission,
            Error::ZooKeeper(_) => ErrorKind::ZooKeeper,
        }
    }

    pub fn message(&self) -> &str {
        match self {
            Error::Timeout(m)
            | Error::Cancelled(m)
            | Error::LockLost(m)
            | Error::SessionExpired(m)
            | Error::Connection(m)
            | Error::NotHeld(m)
            | Error::UpgradeNotAllowed(m)
            | Error::InvalidArgument(m)
            | Error::Closed(m)
            | Error::Permission(m)
            | Error::ZooKeeper(m) => m,
        }
    }

    pub(crate) fn invalid(msg: impl Into<String>) -> Error {
        Error::InvalidArgument(msg.into())
    }

    /// Maps a ZooKeeper client error met while doing `what` (e.g. "create /locks/a/_c_..").
    pub(crate) fn from_zk(err: zk::Error, what: &str) -> Error {
        let msg = format!("{what}: {err}");
        match err {
            zk::Error::NoAuth | zk::Error::AuthFailed | zk::Error::InvalidAcl => {
                Error::Permission(msg)
            }
            zk::Error::SessionExpired | zk::Error::SessionMoved => Error::SessionExpired(msg),
            zk::Error::ConnectionLoss | zk::Error::NoHosts | zk::Error::Timeout => {
                Error::Connection(msg)
            }
            zk::Error::ClientClosed => Error::Closed(msg),
            zk::Error::BadArguments(_) => Error::InvalidArgument(msg),
            _ => Error::ZooKeeper(msg),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors that say nothing about the data, only that the connection broke under the request
/// (ConnectionLoss, or the raw I/O error the client hands to requests in flight): wait for the
/// reconnect and try again.
pub(crate) fn is_transient(err: &zk::Error) -> bool {
    matches!(
        err,
        zk::Error::ConnectionLoss
            | zk::Error::Custom(_)
            | zk::Error::UnexpectedError(_)
            | zk::Error::Timeout
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zk_errors_map_to_kinds() {
        assert_eq!(
            Error::from_zk(zk::Error::NoAuth, "create /a").kind(),
            ErrorKind::Permission
        );
        assert_eq!(
            Error::from_zk(zk::Error::SessionExpired, "x").kind(),
            ErrorKind::SessionExpired
        );
        assert_eq!(
            Error::from_zk(zk::Error::ConnectionLoss, "x").kind(),
            ErrorKind::Connection
        );
        let other = Error::from_zk(zk::Error::NotEmpty, "delete /a");
        assert_eq!(other.kind(), ErrorKind::ZooKeeper);
        assert!(other.message().starts_with("delete /a: "), "{other}");
    }
}
