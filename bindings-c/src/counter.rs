//! `zklock_counter`: the core's shared counter on Curator's layouts ([`zklock::Counter`]), and
//! the increment a lease guards. Blocking calls; out-parameters written only on success.

use std::ffi::c_char;

use crate::client::client_ref;
use crate::client::zklock_client;
use crate::error::{guard, guard_value, zklock_status, Failure};
use crate::handles::{self, Kind};
use crate::lease::zklock_lease;
use crate::str_arg;

/// A shared counter. Opaque; free it with `zklock_counter_free`.
pub struct zklock_counter {
    counter: zklock::Counter,
}

/// A count and the data version it was read at (`version` -1: the node does not exist yet).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct zklock_count {
    pub value: i64,
    pub version: i32,
}

impl From<zklock::Count> for zklock_count {
    fn from(c: zklock::Count) -> Self {
        zklock_count {
            value: c.value,
            version: c.version,
        }
    }
}

/// A shared counter on `path`: `width` "int32" (Curator's SharedCount, also for NULL) or
/// "int64" (DistributedAtomicLong), so a Curator process shares the node. On success `*out`
/// gets the handle; `ZKLOCK_INVALID_ARGUMENT` for a bad path or width.
#[no_mangle]
pub unsafe extern "C" fn zklock_counter_new(
    client: *mut zklock_client,
    path: *const c_char,
    width: *const c_char,
    out: *mut *mut zklock_counter,
) -> zklock_status {
    guard(|| {
        let client = client_ref(client)?;
        let path = str_arg(path, "path")?;
        let width = if width.is_null() {
            zklock::CounterWidth::Int32
        } else {
            zklock::CounterWidth::parse(str_arg(width, "width")?)?
        };
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        let counter = client.client.counter(path, width)?;
        let handle = Box::into_raw(Box::new(zklock_counter { counter }));
        *out = handles::register(handle, Kind::Counter);
        Ok(())
    })
}

/// Frees a counter handle. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn zklock_counter_free(counter: *mut zklock_counter) {
    guard_value((), || handles::free(counter, Kind::Counter, "counter"))
}

/// Reads the count and its version into `*out` (count 0 at version -1 while the node does not
/// exist). Blocks until ZooKeeper answered.
#[no_mangle]
pub unsafe extern "C" fn zklock_counter_get(
    counter: *const zklock_counter,
    out: *mut zklock_count,
) -> zklock_status {
    guard(|| {
        let counter = handles::get(counter, Kind::Counter, "counter")?;
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        zklock::support::refuse_on_runtime_thread()?;
        *out = counter.counter.blocking_get()?.into();
        Ok(())
    })
}

/// Sets the count to `value` if it is still at `seen->version` (creating the node when `seen`
/// is the missing node's). On success `*applied` says whether it was set, and when it was,
/// `*out` (may be NULL) gets the new count; when the count moved meanwhile `*applied` is false
/// and `*out` is untouched (read it again).
#[no_mangle]
pub unsafe extern "C" fn zklock_counter_compare_and_set(
    counter: *const zklock_counter,
    seen: *const zklock_count,
    value: i64,
    applied: *mut bool,
    out: *mut zklock_count,
) -> zklock_status {
    guard(|| {
        let counter = handles::get(counter, Kind::Counter, "counter")?;
        if seen.is_null() {
            return Err(Failure::null("seen"));
        }
        if applied.is_null() {
            return Err(Failure::null("applied"));
        }
        let seen = zklock::Count {
            value: (*seen).value,
            version: (*seen).version,
        };
        zklock::support::refuse_on_runtime_thread()?;
        let set = counter.counter.blocking_compare_and_set(seen, value)?;
        *applied = set.is_some();
        if let (Some(set), false) = (set, out.is_null()) {
            *out = set.into();
        }
        Ok(())
    })
}

/// Adds `by` to `counter` only while `lease` holds its lock: one multi with the lock node's
/// check, at the version just read (read again when the count moved). On success `*out` (may
/// be NULL) gets the new count. `ZKLOCK_LOST` after a loss (nothing written),
/// `ZKLOCK_INVALID_ARGUMENT` when the sum does not fit the counter's width.
#[no_mangle]
pub unsafe extern "C" fn zklock_lease_guarded_increment(
    lease: *const zklock_lease,
    counter: *const zklock_counter,
    by: i64,
    out: *mut zklock_count,
) -> zklock_status {
    guard(|| {
        let lease = handles::get(lease, Kind::Lease, "lease")?;
        let counter = handles::get(counter, Kind::Counter, "counter")?;
        let guarded = lease.guarded().ok_or_else(|| {
            Failure::new(zklock_status::ZKLOCK_NOT_HELD, "the lease was released")
        })?;
        zklock::support::refuse_on_runtime_thread()?;
        let count = guarded.blocking_increment(&counter.counter, by)?;
        if !out.is_null() {
            *out = count.into();
        }
        Ok(())
    })
}
