//! Status codes, the thread-local last error, and the panic guard every `extern "C"` body runs in.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What a zklock function reports: `ZKLOCK_OK` (0) or a negative error kind (see docs/contract.md's
/// error kinds). `zklock_last_error()` then holds a message naming the path or value involved.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum zklock_status {
    /// Success.
    ZKLOCK_OK = 0,
    /// The deadline passed: before the lock was acquired (also a failed try, timeout 0), or
    /// before a guarded write or a listing was sent.
    ZKLOCK_TIMEOUT = -1,
    /// The acquire was cancelled by the caller (`zklock_op_cancel`).
    ZKLOCK_CANCELLED = -2,
    /// The lease was lost while it was held.
    ZKLOCK_LOST = -3,
    /// The client's ZooKeeper session expired.
    ZKLOCK_SESSION_EXPIRED = -4,
    /// The ensemble could not be reached within the connect timeout, or the system refused what
    /// a client needs (a socket, its callback thread: see the message).
    ZKLOCK_CONNECTION = -5,
    /// Nobody holds it: a release of a lease not held, a revoke of a path nobody holds (or a
    /// node that is gone), a guarded write after release.
    ZKLOCK_NOT_HELD = -6,
    /// A read holder asked for the write lock.
    ZKLOCK_UPGRADE = -7,
    /// A NULL pointer, bad path, connect string, timeout or option.
    ZKLOCK_INVALID_ARGUMENT = -8,
    /// Use after the client was closed.
    ZKLOCK_CLOSED = -9,
    /// ZooKeeper refused the credentials (a wrong SASL password; SASL asked of a server without
    /// it) or its ACL refused the operation.
    ZKLOCK_PERMISSION = -10,
    /// Any other server error; ZooKeeper's code is in the message.
    ZKLOCK_ZOOKEEPER = -11,
    /// A bug in zklock: a Rust panic was caught at the library boundary.
    ZKLOCK_PANIC = -12,
    /// A write was sent but no answer came (the connection broke, or the write's timeout
    /// passed): it may or may not have been applied. Read back before retrying.
    ZKLOCK_OUTCOME_UNKNOWN = -13,
    /// An election refused to lead beside a participant of another layout on its path.
    ZKLOCK_CONFLICT = -14,
}

use zklock_status::*;

impl zklock_status {
    pub(crate) fn from_kind(kind: zklock::ErrorKind) -> zklock_status {
        use zklock::ErrorKind as K;
        match kind {
            K::Timeout => ZKLOCK_TIMEOUT,
            K::Cancelled => ZKLOCK_CANCELLED,
            K::LockLost => ZKLOCK_LOST,
            K::SessionExpired => ZKLOCK_SESSION_EXPIRED,
            K::Connection => ZKLOCK_CONNECTION,
            K::NotHeld => ZKLOCK_NOT_HELD,
            K::UpgradeNotAllowed => ZKLOCK_UPGRADE,
            K::InvalidArgument => ZKLOCK_INVALID_ARGUMENT,
            K::Closed => ZKLOCK_CLOSED,
            K::Permission => ZKLOCK_PERMISSION,
            K::ZooKeeper => ZKLOCK_ZOOKEEPER,
            K::Internal => ZKLOCK_PANIC,
            K::OutcomeUnknown => ZKLOCK_OUTCOME_UNKNOWN,
            K::Conflict => ZKLOCK_CONFLICT,
            // ErrorKind is non-exhaustive: a kind this face does not map yet is the general
            // "any other error" status, its message (zklock_last_error) saying what happened.
            _ => ZKLOCK_ZOOKEEPER,
        }
    }

    fn name(code: c_int) -> &'static str {
        match code {
            0 => "ZKLOCK_OK: success\0",
            -1 => "ZKLOCK_TIMEOUT: the deadline passed (before the lock was acquired, or before a guarded write or listing was sent)\0",
            -2 => "ZKLOCK_CANCELLED: the acquire was cancelled\0",
            -3 => "ZKLOCK_LOST: the lease was lost while it was held\0",
            -4 => "ZKLOCK_SESSION_EXPIRED: the ZooKeeper session expired\0",
            -5 => "ZKLOCK_CONNECTION: cannot reach the ZooKeeper ensemble, or the system refused a client its socket or thread\0",
            -6 => "ZKLOCK_NOT_HELD: nobody holds it (a release of a lease not held, a revoke or guarded write with no holder)\0",
            -7 => "ZKLOCK_UPGRADE: a read holder cannot take the write lock\0",
            -8 => "ZKLOCK_INVALID_ARGUMENT: invalid argument\0",
            -9 => "ZKLOCK_CLOSED: the client is closed\0",
            -10 => "ZKLOCK_PERMISSION: ZooKeeper refused the credentials (a wrong SASL password, SASL not configured) or its ACL refused the operation\0",
            -11 => "ZKLOCK_ZOOKEEPER: ZooKeeper error\0",
            -12 => "ZKLOCK_PANIC: internal error in zklock (a bug)\0",
            -13 => {
                "ZKLOCK_OUTCOME_UNKNOWN: a write was sent and no answer came (the connection broke or its timeout passed): it may have been applied\0"
            }
            -14 => "ZKLOCK_CONFLICT: an election refused to lead beside a participant of another layout\0",
            _ => "unknown zklock status\0",
        }
    }
}

/// A failure on its way to the C caller: a status and the message for `zklock_last_error()`.
#[derive(Debug)]
pub(crate) struct Failure {
    pub status: zklock_status,
    pub message: String,
}

impl Failure {
    pub fn new(status: zklock_status, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
        }
    }
    pub fn invalid(message: impl Into<String>) -> Failure {
        Failure::new(ZKLOCK_INVALID_ARGUMENT, message)
    }
    pub fn null(what: &str) -> Failure {
        Failure::invalid(format!("{what} is NULL"))
    }
}

impl From<zklock::Error> for Failure {
    fn from(e: zklock::Error) -> Failure {
        Failure::new(zklock_status::from_kind(e.kind()), e.message())
    }
}

thread_local! {
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

/// Records `message` as this thread's last error.
pub(crate) fn set_last_error(message: &str) {
    let c = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    // During thread teardown the slot may be gone; then there is nobody to read it.
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = Some(c));
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("internal error in zklock (please report it): {what}")
}

/// Runs a fallible `extern "C"` body: panics become `ZKLOCK_PANIC`, failures set the last error.
pub(crate) fn guard(body: impl FnOnce() -> Result<(), Failure>) -> zklock_status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => ZKLOCK_OK,
        Ok(Err(failure)) => {
            set_last_error(&failure.message);
            failure.status
        }
        Err(payload) => {
            set_last_error(&panic_message(payload.as_ref()));
            ZKLOCK_PANIC
        }
    }
}

/// Runs an infallible-looking `extern "C"` body (getters, `_free`): a failure or a panic yields
/// `fallback` and sets the last error.
pub(crate) fn guard_value<T>(fallback: T, body: impl FnOnce() -> Result<T, Failure>) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(v)) => v,
        Ok(Err(failure)) => {
            set_last_error(&failure.message);
            fallback
        }
        Err(payload) => {
            set_last_error(&panic_message(payload.as_ref()));
            fallback
        }
    }
}

/// A static, human-readable description of a status code (never NULL). Any integer may be
/// passed; unknown values give "unknown zklock status".
#[no_mangle]
pub extern "C" fn zklock_status_str(status: c_int) -> *const c_char {
    guard_value(c"ZKLOCK_PANIC".as_ptr(), || {
        Ok(zklock_status::name(status).as_ptr().cast())
    })
}

/// The message of the last failed zklock call on this thread (never NULL; "" when none failed
/// yet). Valid until the next failing zklock call on this thread. In an acquire callback that
/// reports an error, it holds that error's message.
#[no_mangle]
pub extern "C" fn zklock_last_error() -> *const c_char {
    guard_value(c"".as_ptr(), || {
        Ok(LAST_ERROR
            .try_with(|slot| {
                slot.borrow()
                    .as_ref()
                    .map(|c| c.as_ptr())
                    .unwrap_or(c"".as_ptr())
            })
            .unwrap_or(c"".as_ptr()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn last() -> String {
        unsafe { CStr::from_ptr(zklock_last_error()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn a_panic_becomes_the_panic_status_with_a_message() {
        let status = guard(|| panic!("boom"));
        assert_eq!(status, ZKLOCK_PANIC);
        assert!(last().contains("boom"), "{}", last());
        assert_eq!(guard_value(7, || panic!("bang")), 7);
        assert!(last().contains("bang"));
    }

    #[test]
    fn failures_set_the_last_error() {
        let status = guard(|| Err(Failure::invalid("bad thing")));
        assert_eq!(status, ZKLOCK_INVALID_ARGUMENT);
        assert_eq!(last(), "bad thing");
        assert_eq!(guard(|| Ok(())), ZKLOCK_OK);
        assert_eq!(last(), "bad thing", "success leaves the message alone");
    }

    #[test]
    fn every_kind_maps_to_a_distinct_negative_status_and_internal_is_the_panic_status() {
        let kinds = zklock::ErrorKind::ALL;
        let mut seen = std::collections::HashSet::new();
        for k in kinds {
            let s = zklock_status::from_kind(k) as c_int;
            assert!(s < 0);
            assert!(seen.insert(s));
            let text = unsafe { CStr::from_ptr(zklock_status_str(s)) };
            assert!(text.to_str().unwrap().starts_with("ZKLOCK_"));
        }
        assert_eq!(
            zklock_status::from_kind(zklock::ErrorKind::Internal),
            ZKLOCK_PANIC
        );
        let unknown = unsafe { CStr::from_ptr(zklock_status_str(42)) };
        assert_eq!(unknown.to_str().unwrap(), "unknown zklock status");
    }

    #[test]
    fn the_timeout_and_outcome_unknown_strings_fit_a_guarded_write_too() {
        // Issue 33: a guarded write's timeout gives both statuses, with no lock being acquired
        // and no connection broken.
        let text = |code| unsafe { CStr::from_ptr(zklock_status_str(code)) }.to_string_lossy();
        assert!(text(-1).contains("guarded write"), "{}", text(-1));
        assert!(!text(-13).starts_with("ZKLOCK_OUTCOME_UNKNOWN: the connection broke"));
        assert!(text(-13).contains("timeout passed"), "{}", text(-13));
    }
}
