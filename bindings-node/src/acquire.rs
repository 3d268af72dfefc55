//! A core acquire seen from JS ([`NativeAcquire`]): `wait()` once, `cancel()` any time. Made by
//! the locks and the elections.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;

use napi::bindgen_prelude::Object;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use napi_derive::napi;
use zklock::{Acquire, ErrorKind};

use crate::lease::NativeLease;
use crate::queue::settle_from_core;

/// `onQueued(position)`, called from the core's callback thread (weak: the event loop may end).
pub(crate) type QueuedCallback = ThreadsafeFunction<u32, (), u32, Status, false, true>;

/// A core acquire ([`zklock::Acquire`]) seen from JS: `wait()` once, `cancel()` any time.
#[napi]
pub struct NativeAcquire {
    /// Shared with the `wait()` promise, which polls it, so that `cancel()` still reaches it.
    pub(crate) acquire: Arc<Mutex<Option<Acquire>>>,
}

#[napi]
impl NativeAcquire {
    /// Resolves with the lease, or rejects (`ZKLOCK_TIMEOUT`, `ZKLOCK_ABORTED`, ...).
    #[napi(ts_return_type = "Promise<NativeLease>")]
    pub fn wait<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let acquire = self.acquire.clone();
        settle_from_core(env, async move {
            std::future::poll_fn(|cx| {
                let mut slot = acquire.lock().unwrap_or_else(|e| e.into_inner());
                let Some(a) = slot.as_mut() else {
                    return Poll::Ready(Err(zklock::Error::new(
                        ErrorKind::Internal,
                        "wait() was called twice for one acquire",
                    )));
                };
                let done = Pin::new(a).poll(cx);
                if done.is_ready() {
                    *slot = None;
                }
                done
            })
            .await
            .map(NativeLease::new)
        })
    }

    /// `callback(position)` on the JS thread when the acquire is queued behind others and each
    /// time its place changes ([`zklock::QueuePosition::on_queued`]); never for an acquire that
    /// holds at once. The callback does not keep the event loop alive.
    #[napi(catch_unwind)]
    pub fn on_queued(&self, callback: QueuedCallback) {
        let slot = self.acquire.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(acquire) = slot.as_ref() {
            acquire.queue_position().on_queued(move |position| {
                callback.call(position, ThreadsafeFunctionCallMode::NonBlocking);
            });
        }
    }

    /// Aborts the acquire: its waiting node is removed and `wait()` rejects with
    /// `ZKLOCK_ABORTED` (unless the lock was already acquired).
    #[napi]
    pub fn cancel(&self) {
        if let Some(a) = self
            .acquire
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            a.cancel();
        }
    }
}
