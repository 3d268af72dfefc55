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

/// Called with an asynchronous acquire's place in its lock's queue (`zklock_op_on_queued`).
pub type zklock_queued_cb = Option<unsafe extern "C" fn(user: *mut c_void, position: u32)>;

/// An asynchronous acquire: cancel it with `zklock_op_cancel`, free it with `zklock_op_free`
/// (at any time: freeing does not cancel, and the callback still comes).
pub struct zklock_op {
    cancel: zklock::CancelToken,
    /// The acquire's place in the queue, and the client's callback thread (`None`: a run for
    /// leader, which reports no place).
    position: Option<(zklock::QueuePosition, zklock::CallbackQueue)>,
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
        let position = (acquire.queue_position(), lock.callbacks.clone());
        let (user, queue) = (UserPtr(user), lock.callbacks.clone());
        acquire.on_complete_in(queue.clone(), move |result| {
            deliver(cb, user, result, queue)
        });
        op.write(zklock_op::registered(cancel, Some(position)));
        Ok(())
    })
}

impl zklock_op {
    /// A registered handle cancelling `cancel` (an acquire or a run for leader).
    pub(crate) fn boxed(cancel: zklock::CancelToken) -> *mut zklock_op {
        Self::registered(cancel, None)
    }

    fn registered(
        cancel: zklock::CancelToken,
        position: Option<(zklock::QueuePosition, zklock::CallbackQueue)>,
    ) -> *mut zklock_op {
        let op = zklock_op { cancel, position };
        handles::register(Box::into_raw(Box::new(op)), Kind::Op)
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

/// The acquire's place in its lock's queue: how many contenders must leave before it can hold,
/// as of its last look at the queue (the core's figure, docs/contract.md "Queue position"), or
/// 0 when it is not waiting in the queue (not yet placed, held at once, ended; always 0 for
/// `zklock_election_lead_async`'s op). `*position` is written only on `ZKLOCK_OK`.
#[no_mangle]
pub unsafe extern "C" fn zklock_op_position(
    op: *mut zklock_op,
    position: *mut u32,
) -> zklock_status {
    guard(|| {
        let op = handles::get(op, Kind::Op, "op")?;
        if position.is_null() {
            return Err(Failure::null("position"));
        }
        let now = op.position.as_ref().and_then(|(p, _)| p.get()).unwrap_or(0);
        position.write(now);
        Ok(())
    })
}

/// Sets `cb(user, position)`, called on the client's callback thread when the acquire is queued
/// behind others and each time its place changes (at once when it waits already); never for an
/// acquire that holds at once, and never after its completion callback. Replaces a callback
/// set before. `ZKLOCK_INVALID_ARGUMENT` for a NULL `cb`, and for the op of
/// `zklock_election_lead_async` (a lead reports no place).
#[no_mangle]
pub unsafe extern "C" fn zklock_op_on_queued(
    op: *mut zklock_op,
    cb: zklock_queued_cb,
    user: *mut c_void,
) -> zklock_status {
    guard(|| {
        let op = handles::get(op, Kind::Op, "op")?;
        let cb = cb.ok_or_else(|| Failure::null("cb"))?;
        let Some((position, queue)) = op.position.as_ref() else {
            return Err(Failure::from(zklock::Error::new(
                zklock::ErrorKind::InvalidArgument,
                "a lead has no queue position: zklock_op_on_queued is for a lock's acquire",
            )));
        };
        let user = UserPtr(user);
        position.on_queued_in(queue.clone(), move |n| {
            let user = &user;
            unsafe { cb(user.0, n) }
        });
        Ok(())
    })
}
