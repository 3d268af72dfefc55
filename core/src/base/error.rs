//! The one error type of zklock: a kind (what a face maps to its idiom, in one table per face), a
//! message for people (naming the path or value involved and the cause), and the ZooKeeper
//! error behind it when there is one. `docs/contract.md` lists the kinds and each face's names.

use std::sync::Arc;

use zklock_wire::client as zk;

/// What went wrong, without the details: each face maps these to its own names once.
/// Non-exhaustive: a later release may add a kind, and a match must have an arm for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The deadline passed before the lock was acquired.
    Timeout,
    /// The caller cancelled the acquire.
    Cancelled,
    /// The lease was lost while it was held.
    LockLost,
    /// The client's ZooKeeper session expired.
    SessionExpired,
    /// The ensemble could not be reached within the connect timeout, or the system refused what
    /// a client needs to connect (a socket, the C face's callback thread).
    Connection,
    /// Release by a caller that holds nothing.
    NotHeld,
    /// A read holder asked for the write lock.
    UpgradeNotAllowed,
    /// A bad path, connect string, duration, name or option.
    InvalidArgument,
    /// Use after the client was closed.
    Closed,
    /// ZooKeeper's ACL refused the operation.
    Permission,
    /// Any other server error; ZooKeeper's own wording is in the message.
    ZooKeeper,
    /// A bug in zklock (a task panicked); the C face reports it as `ZKLOCK_PANIC`.
    Internal,
    /// A write was sent but its answer was lost with the connection: it may or may not have
    /// been applied (kazoo's `ConnectionLoss`). Read back before retrying.
    OutcomeUnknown,
    /// An election refused to lead beside a participant of another layout on its path (a
    /// Curator latch beside a selector, Curator beside kazoo): each would lead in its own order.
    Conflict,
}

impl ErrorKind {
    /// Every kind, in the contract's order.
    pub const ALL: [ErrorKind; 14] = [
        ErrorKind::Timeout,
        ErrorKind::Cancelled,
        ErrorKind::LockLost,
        ErrorKind::SessionExpired,
        ErrorKind::Connection,
        ErrorKind::NotHeld,
        ErrorKind::UpgradeNotAllowed,
        ErrorKind::InvalidArgument,
        ErrorKind::Closed,
        ErrorKind::Permission,
        ErrorKind::ZooKeeper,
        ErrorKind::Internal,
        ErrorKind::OutcomeUnknown,
        ErrorKind::Conflict,
    ];

    /// The kind's name in the contract (and the conformance cases): `Timeout`, `LockLost`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Timeout => "Timeout",
            ErrorKind::Cancelled => "Cancelled",
            ErrorKind::LockLost => "LockLost",
            ErrorKind::SessionExpired => "SessionExpired",
            ErrorKind::Connection => "Connection",
            ErrorKind::NotHeld => "NotHeld",
            ErrorKind::UpgradeNotAllowed => "UpgradeNotAllowed",
            ErrorKind::InvalidArgument => "InvalidArgument",
            ErrorKind::Closed => "Closed",
            ErrorKind::Permission => "Permission",
            ErrorKind::ZooKeeper => "ZooKeeper",
            ErrorKind::Internal => "Internal",
            ErrorKind::OutcomeUnknown => "OutcomeUnknown",
            ErrorKind::Conflict => "Conflict",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ErrorKind {
    type Err = Error;

    fn from_str(name: &str) -> Result<ErrorKind> {
        ErrorKind::ALL
            .into_iter()
            .find(|k| k.as_str() == name)
            .ok_or_else(|| Error::invalid(format!("no error kind is called {name:?}")))
    }
}

/// The option names the core's messages may contain, spelled as Rust, Python and C spell them
/// (snake_case). A face whose options are spelled otherwise respells them with
/// [`Error::respell_options`]; a message naming an option names it by one of these.
pub const OPTION_NAMES: &[&str] = &[
    "tls_verify_hostname",
    "tls_cert",
    "tls_key",
    "tls_ca",
    "sasl_user",
    "sasl_password",
    "timeout_ms",
    "max_hold",
    "lock_delay",
    "path_stats_limit",
];

/// Every failure zklock reports.
#[derive(Debug, Clone)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    /// The ZooKeeper error this one reports, when there is one.
    source: Option<Arc<zk::Error>>,
    /// What the connection did meanwhile, when it explains this error (a timeout filled by a
    /// server that kept breaking the connection); also at the end of `message`.
    note: Option<Arc<str>>,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// Two errors are equal when their kinds and messages are.
impl PartialEq for Error {
    fn eq(&self, other: &Error) -> bool {
        self.kind == other.kind && self.message == other.message
    }
}

impl Eq for Error {}

impl Error {
    /// An error of `kind` with `message` (what a face or a test builds; zklock's own come with
    /// their cause).
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
            source: None,
            note: None,
        }
    }

    /// What kind of failure this is: what a caller matches on.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message for people: what failed and why, inputs quoted and shortened.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// This error with every option name of [`OPTION_NAMES`] in its message respelled by
    /// `spell`, for a face whose options have another idiom (Node's `tlsCa` for `tls_ca`). The
    /// core still decides what is wrong and which option to name; the face only decides how
    /// its users write that name. A name counts only as a whole word, not inside a longer one
    /// nor in a path (`/locks/tls_ca` stays).
    pub fn respell_options(mut self, spell: impl Fn(&str) -> String) -> Error {
        let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let mut out = String::with_capacity(self.message.len());
        let mut rest = self.message.as_str();
        let mut prev: Option<char> = None;
        'scan: while !rest.is_empty() {
            if !matches!(prev, Some(p) if is_word(p) || p == '/' || p == '-') {
                for name in OPTION_NAMES {
                    if let Some(after) = rest.strip_prefix(name) {
                        if !after.starts_with(is_word) {
                            out.push_str(&spell(name));
                            rest = after;
                            prev = name.chars().last();
                            continue 'scan;
                        }
                    }
                }
            }
            let c = rest.chars().next().expect("rest is not empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
            prev = Some(c);
        }
        self.message = out;
        self
    }

    /// This error with `note` (what the connection did meanwhile) added to its message.
    pub(crate) fn noted(mut self, note: String) -> Error {
        self.message = format!("{}; {note}", self.message);
        self.note = Some(note.into());
        self
    }

    /// What the connection did while this error came about, when that explains it: "meanwhile
    /// the connection to ZooKeeper kept failing (last: ...)" on a `Timeout` whose wait was filled
    /// by a server that kept breaking the connection. Already part of [`Error::message`]; a face
    /// that words the error its own way adds it to its own words.
    pub fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// The ZooKeeper error behind this one, if any.
    pub fn zookeeper_error(&self) -> Option<&zk::Error> {
        self.source.as_deref()
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::InvalidArgument, message)
    }

    pub(crate) fn timeout(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Timeout, message)
    }

    pub(crate) fn cancelled(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Cancelled, message)
    }

    pub(crate) fn closed(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Closed, message)
    }

    /// Maps a ZooKeeper client error met while doing `what` (e.g. "create /locks/a/_c_..").
    pub(crate) fn from_zk(err: zk::Error, what: &str) -> Error {
        let kind = match err {
            zk::Error::NoAuth | zk::Error::AuthFailed | zk::Error::InvalidAcl => {
                ErrorKind::Permission
            }
            zk::Error::SessionExpired | zk::Error::SessionMoved => ErrorKind::SessionExpired,
            zk::Error::ConnectionLoss(_) | zk::Error::NoHosts(_) | zk::Error::Timeout => {
                ErrorKind::Connection
            }
            zk::Error::ClientClosed => ErrorKind::Closed,
            zk::Error::BadArguments(_) => ErrorKind::InvalidArgument,
            _ => ErrorKind::ZooKeeper,
        };
        Error {
            kind,
            message: format!("{what}: {err}"),
            source: Some(Arc::new(err)),
            note: None,
        }
    }

    /// The ZooKeeper error this one reports, when there is one (a recipe that retries on
    /// `BadVersion` looks here).
    pub(crate) fn zk_error(&self) -> Option<&zk::Error> {
        self.source.as_deref()
    }

    /// A write whose answer was lost with the connection (`what` names it).
    pub(crate) fn outcome_unknown(err: zk::Error, what: &str) -> Error {
        Error {
            kind: ErrorKind::OutcomeUnknown,
            message: format!(
                "{what}: the connection broke before ZooKeeper answered, so it may or may not \
                 have been applied ({err}); read back before retrying"
            ),
            source: Some(Arc::new(err)),
            note: None,
        }
    }

    /// A task of the runtime that did not finish: cancelled (dropped), or a bug (it panicked).
    pub fn from_join(err: tokio::task::JoinError) -> Error {
        if err.is_cancelled() {
            Error::cancelled("the operation was cancelled")
        } else {
            Error::new(
                ErrorKind::Internal,
                "internal error: a zklock task panicked (please report it)",
            )
        }
    }
}

/// zklock's result: an [`Error`] on failure.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors that say nothing about the data, only that the connection broke under the request
/// (or there was none): wait for the reconnect and try again.
pub(crate) fn is_transient(err: &zk::Error) -> bool {
    err.is_transient()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_names_are_respelled_as_whole_words_only() {
        let e = Error::invalid(
            "tls_cert, tls_key and tls_verify_hostname need tls_ca; timeout_ms; /locks/tls_ca; tls_cax",
        )
        .respell_options(|n| format!("<{n}>"));
        assert_eq!(
            e.message(),
            "<tls_cert>, <tls_key> and <tls_verify_hostname> need <tls_ca>; <timeout_ms>; /locks/tls_ca; tls_cax"
        );
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    }

    #[test]
    fn zk_errors_map_to_kinds_and_keep_the_zookeeper_error() {
        let denied = Error::from_zk(zk::Error::NoAuth, "create /a");
        assert_eq!(denied.kind(), ErrorKind::Permission);
        assert_eq!(denied.zookeeper_error(), Some(&zk::Error::NoAuth));
        assert!(std::error::Error::source(&denied).is_some());
        assert_eq!(
            Error::from_zk(zk::Error::SessionExpired, "x").kind(),
            ErrorKind::SessionExpired
        );
        assert_eq!(
            Error::from_zk(zk::Error::ConnectionLoss(String::new()), "x").kind(),
            ErrorKind::Connection
        );
        let other = Error::from_zk(zk::Error::NotEmpty, "delete /a");
        assert_eq!(other.kind(), ErrorKind::ZooKeeper);
        assert!(other.message().starts_with("delete /a: "), "{other}");
    }

    #[test]
    fn kind_names_read_back() {
        for kind in ErrorKind::ALL {
            assert_eq!(kind.as_str().parse::<ErrorKind>().unwrap(), kind);
        }
        assert_eq!(
            "Nope".parse::<ErrorKind>().unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }

    #[test]
    fn a_panicked_task_is_an_internal_error() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let join = rt.block_on(async { tokio::spawn(async { panic!("boom") }).await });
        let err = Error::from_join(join.unwrap_err());
        assert_eq!(err.kind(), ErrorKind::Internal);
    }
}
