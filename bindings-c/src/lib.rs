//! zklock's C face: `libzklock.so` / `libzklock.a` and the cbindgen-generated `include/zklock.h`.
//!
//! Conventions after rustls-ffi: fallible functions return a [`zklock_status`]; out-parameters
//! are written only on success; every handle is opaque with a `_new`/`_free` (or connect/free)
//! pair; every pointer is NULL-checked; every `extern "C"` body runs under `catch_unwind`, so a
//! Rust panic becomes `ZKLOCK_PANIC` instead of an abort; the message of the last failure is kept
//! per thread ([`zklock_last_error`]). Callbacks run on their client's callback thread, never
//! while an internal lock is held, and may call any zklock function. Every handle is recorded
//! in a registry of live handles while it lives ([`handles`]), so that a freed handle passed
//! again is reported (`ZKLOCK_INVALID_ARGUMENT`) instead of read.
#![allow(non_camel_case_types)]
// Every pointer a C caller hands us is checked for NULL; the rest of the contract is the C
// caller's (documented in the header), as for any C library.
#![allow(clippy::missing_safety_doc)]

// cbindgen writes include/zklock.h in the order of these declarations, so the participants'
// listing and the leader's observers (once part of election.rs) stay right after the election
// in the header: the blank lines keep rustfmt from sorting them away.
mod client;
mod counter;
mod election;

mod participants;

mod leader;

mod error;
mod gate;
mod handles;
mod lease;
mod lock;
mod observe;
mod op;
mod semaphore;

pub use client::*;
pub use counter::*;
pub use election::*;
pub use error::*;
pub use leader::*;
pub use lease::*;
pub use lock::*;
pub use observe::*;
pub use op::*;
pub use participants::*;
pub use semaphore::*;

use std::ffi::{c_char, CStr, CString};

/// The library version, e.g. "0.1.0" (a static string).
#[no_mangle]
pub extern "C" fn zklock_version() -> *const c_char {
    error::guard_value(c"".as_ptr(), || {
        Ok(concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast())
    })
}

/// Borrows a C string argument as UTF-8 (`what` names the argument in the error).
pub(crate) unsafe fn str_arg<'a>(ptr: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if ptr.is_null() {
        return Err(Failure::null(what));
    }
    CStr::from_ptr(ptr)
        .to_str()
        .map_err(|_| Failure::invalid(format!("{what} is not valid UTF-8")))
}

/// A C string of `s` for the caller to read (a NUL inside becomes a space).
pub(crate) fn c_text(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

/// A C `void *user` that we only hand back to the C callback (on the callback thread): the
/// caller promises it may be used from there.
#[derive(Clone, Copy)]
pub(crate) struct UserPtr(pub *mut std::ffi::c_void);
unsafe impl Send for UserPtr {}
unsafe impl Sync for UserPtr {}
