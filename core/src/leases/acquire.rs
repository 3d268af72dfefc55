//! An acquire running on the private runtime, for the faces that cannot poll a Rust future:
//! Python's asyncio and blocking calls, Node's promises, C's async calls. One handle gives every
//! way to end it: cancel it, block for it (with a bound, so a face can look at its signals in
//! between), await it, or be called back once it ends. The lease of an acquire whose handle was
//! dropped, or that ended after a cancel nobody waited for, is released by the core.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::base::cancel::CancelToken;
use crate::base::error::Result;
use crate::leases::lease::Lease;
use crate::leases::position::QueuePosition;
use crate::ops::runtime::{self, CallbackQueue};

type Completion = Box<dyn FnOnce(Result<Lease>) + Send>;

/// Where the result of a running acquire stands.
enum Slot {
    Running {
        waker: Option<Waker>,
        completion: Option<(CallbackQueue, Completion)>,
    },
    Done(Result<Lease>),
    /// Taken by the handle, or handed to the completion callback.
    Taken,
}

struct Shared {
    slot: Mutex<Slot>,
    done: Condvar,
}

/// A running acquire. Dropping the handle cancels the acquire (its node is removed) and releases
/// a lease it may still obtain.
#[must_use = "dropping an Acquire cancels it at once (and releases a lease it obtains): keep it until it is done"]
pub struct Acquire {
    shared: Arc<Shared>,
    cancel: CancelToken,
    position: QueuePosition,
}

impl std::fmt::Debug for Acquire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Acquire")
            .field("done", &self.is_done())
            .field("cancelled", &self.cancel.is_cancelled())
            .field("position", &self.position.get())
            .finish()
    }
}

impl Acquire {
    /// Spawns the acquire that `start` makes (given the handle's cancel token and the queue
    /// position it reports to) on the runtime.
    pub(crate) fn start<F>(start: impl FnOnce(CancelToken, QueuePosition) -> F) -> Acquire
    where
        F: Future<Output = Result<Lease>> + Send + 'static,
    {
        let cancel = CancelToken::new();
        let shared = Arc::new(Shared {
            slot: Mutex::new(Slot::Running {
                waker: None,
                completion: None,
            }),
            done: Condvar::new(),
        });
        let position = QueuePosition::new();
        let acquire = runtime::spawn(start(cancel.clone(), position.clone()));
        let slot = shared.clone();
        // Awaited through its task handle, so that a panic (a bug) still ends the acquire, as
        // an Internal error, instead of leaving its waiter waiting.
        runtime::spawn(async move {
            let result = acquire
                .await
                .unwrap_or_else(|e| Err(crate::Error::from_join(e)));
            finish(&slot, result);
        });
        Acquire {
            shared,
            cancel,
            position,
        }
    }

    /// Where the acquire stands in its lock's queue: how many contenders must leave before it
    /// can hold, as of its last listing (see [`QueuePosition::get`]); `None` before its node
    /// is placed, when it held at once, and once it has ended. An election's lead reports
    /// nothing.
    pub fn position(&self) -> Option<u32> {
        self.position.get()
    }

    /// The position this acquire reports to, to read it or set an `on_queued` callback
    /// ([`QueuePosition::on_queued`]) before the handle is given to [`Acquire::on_complete`].
    pub fn queue_position(&self) -> QueuePosition {
        self.position.clone()
    }

    /// Cancels the acquire: it removes its node and ends with `Cancelled` (within 100 ms, whatever
    /// the connection does), unless it ended already.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// A token that cancels this acquire (like [`Acquire::cancel`]), to keep when the handle is
    /// given to [`Acquire::on_complete`] (an AbortSignal, `zklock_op_cancel`).
    pub fn canceller(&self) -> CancelToken {
        self.cancel.clone()
    }

    /// True once the acquire has ended (its result may have been taken already).
    pub fn is_done(&self) -> bool {
        !matches!(*self.shared.slot.lock().unwrap(), Slot::Running { .. })
    }

    /// Blocks the calling thread until the acquire ends. Not on the runtime's thread.
    pub fn wait(self) -> Result<Lease> {
        let mut slot = self.shared.slot.lock().unwrap();
        loop {
            if let Some(result) = take_done(&mut slot) {
                return result;
            }
            slot = self.shared.done.wait(slot).unwrap();
        }
    }

    /// Blocks at most `limit`: the result if the acquire ended by then, else `None` and the
    /// handle stays usable (a face looks at its signals, Ctrl-C, between two calls).
    pub fn wait_for(&mut self, limit: Duration) -> Option<Result<Lease>> {
        let slot = self.shared.slot.lock().unwrap();
        let (mut slot, _) = self
            .shared
            .done
            .wait_timeout_while(slot, limit, |s| matches!(s, Slot::Running { .. }))
            .unwrap();
        take_done(&mut slot)
    }

    /// Calls `completion` once with the result, on the process-wide callback thread (at once if
    /// the acquire has ended already).
    pub fn on_complete(self, completion: impl FnOnce(Result<Lease>) + Send + 'static) {
        self.on_complete_in(CallbackQueue::process(), completion)
    }

    /// [`Acquire::on_complete`] on `queue` (a client's own callback thread).
    pub fn on_complete_in(
        self,
        queue: CallbackQueue,
        completion: impl FnOnce(Result<Lease>) + Send + 'static,
    ) {
        let mut slot = self.shared.slot.lock().unwrap();
        match &mut *slot {
            Slot::Running {
                completion: pending,
                ..
            } => *pending = Some((queue, Box::new(completion))),
            done => {
                if let Slot::Done(result) = std::mem::replace(done, Slot::Taken) {
                    queue.run(move || completion(result));
                }
            }
        }
    }
}

/// Stores the result and tells whoever waits: the completion callback, a blocked thread, a
/// polling task.
fn finish(shared: &Shared, result: Result<Lease>) {
    let mut slot = shared.slot.lock().unwrap();
    let Slot::Running { waker, completion } = std::mem::replace(&mut *slot, Slot::Taken) else {
        return; // the handle was dropped: `result` is dropped here, a lease released
    };
    match completion {
        Some((queue, completion)) => queue.run(move || completion(result)),
        None => *slot = Slot::Done(result),
    }
    drop(slot);
    shared.done.notify_all();
    if let Some(waker) = waker {
        waker.wake();
    }
}

fn take_done(slot: &mut Slot) -> Option<Result<Lease>> {
    match std::mem::replace(slot, Slot::Taken) {
        Slot::Done(result) => Some(result),
        other => {
            *slot = other;
            None
        }
    }
}

impl Future for Acquire {
    type Output = Result<Lease>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<Lease>> {
        let mut slot = self.shared.slot.lock().unwrap();
        if let Some(result) = take_done(&mut slot) {
            return Poll::Ready(result);
        }
        match &mut *slot {
            Slot::Running { waker, .. } => {
                *waker = Some(cx.waker().clone());
                Poll::Pending
            }
            _ => Poll::Ready(Err(crate::Error::invalid(
                "this acquire's result was already taken",
            ))),
        }
    }
}

impl Drop for Acquire {
    fn drop(&mut self) {
        let mut slot = self.shared.slot.lock().unwrap();
        // Nobody will take the result: end the acquire, and drop its lease (released in the
        // background) when it comes anyway. A completion callback still gets it.
        let abandoned = matches!(
            *slot,
            Slot::Running {
                completion: None,
                ..
            }
        );
        if abandoned || matches!(*slot, Slot::Done(_)) {
            *slot = Slot::Taken;
        }
        drop(slot);
        if abandoned {
            self.cancel.cancel();
        }
    }
}
