//! The settle queue: every promise of the addon is settled from the core's runtime through one
//! threadsafe function per JS environment, and [`settle_from_core`], which runs a future there
//! and hands its outcome to the JS thread. Below the lease (keepalive.rs counts held leases in
//! it) and everything that returns a promise.

use std::future::Future;
use std::sync::Arc;

use napi::bindgen_prelude::{Object, ToNapiValue};
use napi::sys;
use napi::{Env, Status};
use zklock::ErrorKind;

use crate::error::{make_js_error, Settled};

// ---------------------------------------------------------------------------------------------
// The settle queue
//
// napi-rs makes a threadsafe function for every promise it settles from another thread (its
// create, cleanup hook, uv_close and finalize were about 5-8 % of a Node worker's CPU in bench
// s1 and s4, issue 17). Every promise of this addon is settled through one threadsafe function
// per JS environment instead (the main thread and each worker thread have their own). It does
// not keep the event loop alive by itself, only while a promise made here is pending or a lease
// made here is held (keepalive.rs); when its environment ends, Node finalizes it and later
// outcomes are dropped (nobody can see them).

/// What the JS thread runs to make a promise's outcome: its value, or the error to reject with.
type SettleFn = Box<dyn FnOnce(sys::napi_env) -> napi::Result<sys::napi_value> + Send>;

/// The threadsafe function of one environment; `None` once Node finalized it.
pub(crate) struct QueueShared {
    tsfn: std::sync::RwLock<Option<RawTsfn>>,
}

#[derive(Clone, Copy)]
struct RawTsfn(sys::napi_threadsafe_function);

// A threadsafe function is made to be called from any thread (napi's own contract).
unsafe impl Send for RawTsfn {}
unsafe impl Sync for RawTsfn {}

/// The JS thread's side of its environment's queue: how many promises are pending and how
/// many leases keep the process alive; the queue is referenced while either is not zero.
pub(crate) struct QueueLocal {
    pub(crate) env: sys::napi_env,
    pub(crate) shared: Arc<QueueShared>,
    pending: std::cell::Cell<usize>,
    /// Counted by keepalive.rs.
    pub(crate) holds: std::cell::Cell<usize>,
}

impl QueueLocal {
    /// Whether something keeps the event loop alive through this queue.
    pub(crate) fn busy(&self) -> bool {
        self.pending.get() + self.holds.get() > 0
    }

    /// After a count went up from nothing: the queue keeps the loop alive again (JS thread).
    pub(crate) fn wake(&self) {
        if let Some(t) = *self.shared.tsfn.read().unwrap_or_else(|e| e.into_inner()) {
            unsafe { sys::napi_ref_threadsafe_function(self.env, t.0) };
        }
    }

    /// After a count went down: an idle queue lets the process end (JS thread).
    pub(crate) fn rest_if_idle(&self) {
        if !self.busy() {
            if let Some(t) = *self.shared.tsfn.read().unwrap_or_else(|e| e.into_inner()) {
                unsafe { sys::napi_unref_threadsafe_function(self.env, t.0) };
            }
        }
    }
}

thread_local! {
    pub(crate) static QUEUE: std::cell::RefCell<Option<std::rc::Rc<QueueLocal>>> =
        const { std::cell::RefCell::new(None) };
}

/// This environment's queue, made on first use (on the JS thread).
pub(crate) fn settle_queue(env: sys::napi_env) -> napi::Result<std::rc::Rc<QueueLocal>> {
    if let Some(q) = QUEUE.with(|q| q.borrow().clone()) {
        if q.env == env {
            return Ok(q);
        }
    }
    let shared = Arc::new(QueueShared {
        tsfn: std::sync::RwLock::new(None),
    });
    let mut name = std::ptr::null_mut();
    let mut tsfn = std::ptr::null_mut();
    let label = "zklock_settle";
    let finalize_data = Arc::into_raw(shared.clone()) as *mut std::ffi::c_void;
    let status = unsafe {
        let s = sys::napi_create_string_utf8(
            env,
            label.as_ptr().cast(),
            label.len() as isize,
            &mut name,
        );
        if s != sys::Status::napi_ok {
            s
        } else {
            sys::napi_create_threadsafe_function(
                env,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                name,
                0,
                1,
                finalize_data,
                Some(queue_finalized),
                std::ptr::null_mut(),
                Some(queue_settle),
                &mut tsfn,
            )
        }
    };
    if status != sys::Status::napi_ok {
        drop(unsafe { Arc::from_raw(finalize_data as *const QueueShared) });
        return Err(napi::Error::new(
            Status::GenericFailure,
            format!("cannot make the settle queue (napi status {status})"),
        ));
    }
    // Idle, it must not keep the process alive: referenced only while promises are pending.
    unsafe { sys::napi_unref_threadsafe_function(env, tsfn) };
    *shared.tsfn.write().unwrap_or_else(|e| e.into_inner()) = Some(RawTsfn(tsfn));
    let local = std::rc::Rc::new(QueueLocal {
        env,
        shared,
        pending: std::cell::Cell::new(0),
        holds: std::cell::Cell::new(0),
    });
    QUEUE.with(|q| *q.borrow_mut() = Some(local.clone()));
    Ok(local)
}

/// Node let go of the queue (its environment ends): later outcomes are dropped.
unsafe extern "C" fn queue_finalized(
    env: sys::napi_env,
    data: *mut std::ffi::c_void,
    _hint: *mut std::ffi::c_void,
) {
    let shared = unsafe { Arc::from_raw(data as *const QueueShared) };
    *shared.tsfn.write().unwrap_or_else(|e| e.into_inner()) = None;
    let _ = QUEUE.try_with(|q| {
        let mut q = q.borrow_mut();
        if q.as_ref().is_some_and(|l| l.env == env) {
            *q = None;
        }
    });
}

/// One promise's outcome, on the JS thread (`env` null: the environment ends, drop it).
unsafe extern "C" fn queue_settle(
    env: sys::napi_env,
    _js_callback: sys::napi_value,
    _context: *mut std::ffi::c_void,
    data: *mut std::ffi::c_void,
) {
    if data.is_null() {
        return;
    }
    let item = unsafe { Box::from_raw(data as *mut QueueItem) };
    if env.is_null() {
        return;
    }
    let SettleItem { deferred, make } = match *item {
        QueueItem::Settle(item) => item,
        QueueItem::Run(run) => {
            // No panic may cross into Node; a JS-thread chore has nobody to report one to.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(env)));
            return;
        }
    };
    if let Ok(Some(q)) = QUEUE.try_with(|q| q.borrow().clone()) {
        q.pending.set(q.pending.get().saturating_sub(1));
        q.rest_if_idle();
    }
    // No panic may cross into Node: one becomes the promise's ZKLOCK_INTERNAL rejection.
    let made =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| make(env))).unwrap_or_else(|_| {
            Err(unsafe {
                make_js_error(
                    env,
                    &zklock::Error::new(ErrorKind::Internal, "a promise's outcome panicked"),
                )
            })
        });
    unsafe {
        match made {
            Ok(value) => sys::napi_resolve_deferred(env, deferred.0, value),
            Err(e) => {
                sys::napi_reject_deferred(env, deferred.0, napi::JsError::from(e).into_value(env))
            }
        };
    }
}

#[derive(Clone, Copy)]
struct RawDeferred(sys::napi_deferred);

// Only ever used on the JS thread (in `queue_settle`); carried there through the queue.
unsafe impl Send for RawDeferred {}

pub(crate) struct SettleItem {
    deferred: RawDeferred,
    make: SettleFn,
}

/// What goes through the queue: a promise's outcome, or a chore for the JS thread (a lease's
/// end letting the process go, keepalive.rs).
pub(crate) enum QueueItem {
    Settle(SettleItem),
    Run(Box<dyn FnOnce(sys::napi_env) + Send>),
}

/// Hands `item` to the JS thread of `shared`'s environment (from any thread); dropped when
/// that environment ended.
pub(crate) fn post_to_queue(shared: &QueueShared, item: QueueItem) {
    let tsfn = shared.tsfn.read().unwrap_or_else(|e| e.into_inner());
    let Some(t) = *tsfn else {
        return; // The environment ended: nobody waits for this any more.
    };
    let data = Box::into_raw(Box::new(item));
    let status = unsafe {
        sys::napi_call_threadsafe_function(
            t.0,
            data.cast(),
            sys::ThreadsafeFunctionCallMode::nonblocking,
        )
    };
    if status != sys::Status::napi_ok {
        // Closing: the environment ends. Take the item back and drop it.
        drop(unsafe { Box::from_raw(data) });
    }
}

/// A pending promise of the queue: settled once by `send`, or (dropped unsent) rejected.
struct Settle {
    shared: Arc<QueueShared>,
    deferred: Option<RawDeferred>,
}

impl Settle {
    fn new(env: &Env) -> napi::Result<(Settle, Object<'_>)> {
        let queue = settle_queue(env.raw())?;
        let mut deferred = std::ptr::null_mut();
        let mut promise = std::ptr::null_mut();
        let status = unsafe { sys::napi_create_promise(env.raw(), &mut deferred, &mut promise) };
        if status != sys::Status::napi_ok {
            return Err(napi::Error::new(
                Status::GenericFailure,
                format!("cannot make a promise (napi status {status})"),
            ));
        }
        if !queue.busy() {
            queue.wake();
        }
        queue.pending.set(queue.pending.get() + 1);
        let settle = Settle {
            shared: queue.shared.clone(),
            deferred: Some(RawDeferred(deferred)),
        };
        Ok((settle, Object::from_raw(env.raw(), promise)))
    }

    /// Hands the outcome to the JS thread (from any thread).
    fn send(mut self, make: SettleFn) {
        if let Some(deferred) = self.deferred.take() {
            self.post(SettleItem { deferred, make });
        }
    }

    fn post(&self, item: SettleItem) {
        post_to_queue(&self.shared, QueueItem::Settle(item));
    }
}

impl Drop for Settle {
    fn drop(&mut self) {
        // A task dropped before its outcome (the runtime going away): reject rather than leave
        // the promise, and the event loop it keeps alive, pending forever.
        if let Some(deferred) = self.deferred.take() {
            self.post(SettleItem {
                deferred,
                make: Box::new(|env| {
                    Err(unsafe {
                        make_js_error(
                            env,
                            &zklock::Error::new(ErrorKind::Internal, "the operation was dropped"),
                        )
                    })
                }),
            });
        }
    }
}

/// A promise settled from the core's runtime thread: `fut` runs there and its outcome goes
/// straight to the JS thread (no hop through napi's own runtime), through this environment's
/// one settle queue ([`settle_queue`]).
pub(crate) fn settle_from_core<'env, T: ToNapiValue + Send + 'static>(
    env: &'env Env,
    fut: impl Future<Output = zklock::Result<T>> + Send + 'static,
) -> napi::Result<Object<'env>> {
    let (settle, promise) = Settle::new(env)?;
    zklock::support::spawn(async move {
        let result = fut.await;
        settle.send(Box::new(move |env| unsafe {
            Settled::<T>::to_napi_value(env, Settled(result))
        }));
    });
    Ok(promise)
}
