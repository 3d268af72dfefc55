//! `zklock_op`: an asynchronous acquire in flight, completed through a callback.

use std::ffi::c_void;

use crate::error::{guard, guard_value, set_last_error, zklock_status, Failure};
use crate::handles::{self, Kind};
use crate::lease::zklock_lease;
use crate::lock::{lock_ref, zklock_lock};
use crate::UserPtr;

/// Called once when an asynchronous acquire ends, on its client's callback thread. `status` is
/// `ZKLOCK_OK` with a `lease` the callee now owns (release it with `zklock_lease_release`, from
/// any thread), or an error with `lease` NULL and `zklock_last_error()` holding the message.
/// It may call any zklock function.
pub type zklock_acquire_cb = Option<
    unsafe extern "C" fn(user: *mut c_void, status: zklock_status, lease: *mut zklock_lease),
>;

/// An asynchronous acquire: cancel it with `zklock_op_cancel`, free it with `zklock_op_free`
/// (at any time: freeing does not cancel, and the callback still comes).
pub struct zklock_op {
    cancel: zklock::CancelToken,
}

/// Starts acquiring the lock without blocking; `cb(user, status, lease)` is called exactly once
/// on the client's callback thread when it ends. `timeout_ms` as for `zklock_acquire` (0 tries
/// once and reports `ZKLOCK_TIMEOUT` through the callback when the lock is held). The attempt
/// belongs to the calling thread's re-entrancy. On success `*op` gets a handle to free with
/// `zklock_op_free`; on failure the callback is never called.
#[no_mangle]
pub unsafe extern "C" fn zklock_acquire_async(
    lock: *mut zklock_lock,
    timeout_ms: i64,
    cb: zklock_acquire_cb,
    user: *mut c_void,
    op: *mut *mut zklock_op,
) -> zklock_status {
    guard(|| {
        let lock = lock_ref(lock)?;
        let cb = cb.ok_or_else(|| Failure::null("cb"))?;
        if op.is_null() {
            return Err(Failure::null("op"));
        }
        let acquire = lock.start_acquire(zklock::Wait::from_millis_i64(timeout_ms)?);
        let cancel = acquire.canceller();
        let (user, queue) = (UserPtr(user), lock.callbacks.clone());
        acquire.on_complete_in(queue.clone(), move |result| {
            deliver(cb, user, result, queue)
        });
        op.write(zklock_op::boxed(cancel));
        Ok(())
    })
}

impl zklock_op {
    /// A registered handle cancelling `cancel` (an acquire or a run for leader).
    pub(crate) fn boxed(cancel: zklock::CancelToken) -> *mut zklock_op {
        handles::register(Box::into_raw(Box::new(zklock_op { cancel })), Kind::Op)
    }
}

pub(crate) fn deliver(
    cb: unsafe extern "C" fn(*mut c_void, zklock_status, *mut zklock_lease),
    user: UserPtr,
    result: zklock::Result<zklock::Lease>,
    callbacks: zklock::CallbackQueue,
) {
    match result {
        Ok(lease) => {
            let lease = zklock_lease::boxed(lease, callbacks);
            unsafe { cb(user.0, zklock_status::ZKLOCK_OK, lease) }
        }
        Err(e) => {
            let failure = Failure::from(e);
            set_last_error(&failure.message);
            unsafe { cb(user.0, failure.status, std::ptr::null_mut()) }
        }
    }
}

/// Cancels the acquire: the waiting node is removed and the callback gets `ZKLOCK_CANCELLED`,
/// unless the acquire had already ended (then the callback reports how). Returns `ZKLOCK_OK`
/// for any live op; safe to call more than once and from inside callbacks. A freed op is
/// `ZKLOCK_INVALID_ARGUMENT` in the common case (see the header's note on handles).
#[no_mangle]
pub unsafe extern "C" fn zklock_op_cancel(op: *mut zklock_op) -> zklock_status {
    guard(|| {
        let op = handles::get(op, Kind::Op, "op")?;
        op.cancel.cancel();
        Ok(())
    })
}

/// Frees the handle; does not cancel (the callback still comes). NULL is a no-op; an op already
/// freed is detected in the common case (nothing happens and `zklock_last_error()` says so).
#[no_mangle]
pub unsafe extern "C" fn zklock_op_free(op: *mut zklock_op) {
    guard_value((), || handles::free(op, Kind::Op, "op"))
}
