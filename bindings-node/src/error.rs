//! Errors on their way to JS: the `ZKLOCK_*` code of each core error kind (one table,
//! [`code_of`]), `napi::Error<Code>` for sync functions, and [`Settled`], the outcome of an async
//! one, which becomes the promise's value or the JS error it rejects with (on the JS thread). A
//! leaf: every other room reports through it.

use napi::bindgen_prelude::ToNapiValue;
use napi::sys;
use napi::{Status, Unknown};
use zklock::ErrorKind;

/// The `err.code` of a zklock error (docs/contract.md's error table).
pub fn code_of(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Timeout => "ZKLOCK_TIMEOUT",
        ErrorKind::Cancelled => "ZKLOCK_ABORTED",
        ErrorKind::LockLost => "ZKLOCK_LOST",
        ErrorKind::SessionExpired => "ZKLOCK_SESSION_EXPIRED",
        ErrorKind::Connection => "ZKLOCK_CONNECTION",
        ErrorKind::NotHeld => "ZKLOCK_NOT_HELD",
        ErrorKind::UpgradeNotAllowed => "ZKLOCK_UPGRADE",
        ErrorKind::InvalidArgument => "ZKLOCK_INVALID_ARGUMENT",
        ErrorKind::Closed => "ZKLOCK_CLOSED",
        ErrorKind::Permission => "ZKLOCK_PERMISSION",
        ErrorKind::ZooKeeper => "ZKLOCK_ZOOKEEPER",
        ErrorKind::Internal => "ZKLOCK_INTERNAL",
        ErrorKind::OutcomeUnknown => "ZKLOCK_OUTCOME_UNKNOWN",
        ErrorKind::Conflict => "ZKLOCK_CONFLICT",
        // ErrorKind is non-exhaustive: a kind this face does not map yet is the general
        // "any other error" code, its message saying what happened.
        _ => "ZKLOCK_ZOOKEEPER",
    }
}

/// A status that is one of our codes (napi sets it as the JS error's `code`).
pub struct Code(pub(crate) &'static str);

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        self.0
    }
}

/// A failure of napi itself (making a promise) as our `ZKLOCK_INTERNAL`.
pub(crate) fn internal(e: napi::Error) -> napi::Error<Code> {
    napi::Error::new(Code("ZKLOCK_INTERNAL"), e.reason.clone())
}

pub(crate) fn js_err(e: zklock::Error) -> napi::Error<Code> {
    let e = node_spelling(e);
    napi::Error::new(Code(code_of(e.kind())), e.message().to_owned())
}

/// The core names options as Rust, Python and C spell them (`tls_ca`); a Node user wrote
/// `tlsCa`, so its errors say that (issue 27, item 14). The core decides which words are
/// option names ([`zklock::OPTION_NAMES`]); this only camel-cases them.
fn node_spelling(e: zklock::Error) -> zklock::Error {
    e.respell_options(|name| {
        // Node takes the maximum hold in milliseconds, as `maxHoldMs`.
        if name == "max_hold" {
            return "maxHoldMs".to_owned();
        }
        if name == "lock_delay" {
            return "lockDelayMs".to_owned();
        }
        let mut out = String::with_capacity(name.len());
        let mut upper = false;
        for c in name.chars() {
            if c == '_' {
                upper = true;
            } else if upper {
                out.push(c.to_ascii_uppercase());
                upper = false;
            } else {
                out.push(c);
            }
        }
        out
    })
}

/// The outcome of an async call. Its conversion to JS runs on the JS thread: a success becomes
/// the value, a failure a JS `Error` with our `code`, with which napi rejects the promise.
pub struct Settled<T>(pub(crate) Result<T, zklock::Error>);

impl<T> From<Result<T, zklock::Error>> for Settled<T> {
    fn from(r: Result<T, zklock::Error>) -> Self {
        Settled(r)
    }
}

impl<T: ToNapiValue> ToNapiValue for Settled<T> {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        match val.0 {
            Ok(v) => unsafe { T::to_napi_value(env, v) },
            Err(e) => Err(unsafe { make_js_error(env, &e) }),
        }
    }
}

/// Builds `new Error(message)` with `code` set, as a napi error that carries that very object.
pub(crate) unsafe fn make_js_error(env: sys::napi_env, e: &zklock::Error) -> napi::Error {
    let e = node_spelling(e.clone());
    let code = code_of(e.kind());
    let msg = e.message();
    let mut js_code = std::ptr::null_mut();
    let mut js_msg = std::ptr::null_mut();
    let mut js_error = std::ptr::null_mut();
    let ok = unsafe {
        sys::napi_create_string_utf8(env, code.as_ptr().cast(), code.len() as isize, &mut js_code)
            == sys::Status::napi_ok
            && sys::napi_create_string_utf8(
                env,
                msg.as_ptr().cast(),
                msg.len() as isize,
                &mut js_msg,
            ) == sys::Status::napi_ok
            && sys::napi_create_error(env, js_code, js_msg, &mut js_error) == sys::Status::napi_ok
    };
    if !ok {
        return napi::Error::new(Status::GenericFailure, format!("{code}: {msg}"));
    }
    napi::Error::from(unsafe { Unknown::from_raw_unchecked(env, js_error) })
}
