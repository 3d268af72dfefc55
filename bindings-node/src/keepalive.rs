//! A held lease keeps its Node process alive (issue 33).
//!
//! Node ends a process when nothing referenced is left on its event loop. A leader whose only
//! remaining work is `await once(lead, 'lost')` or the `signal` inside `election.run(fn)` would
//! exit with code 0 while leading, dropping the leadership, and a supervisor restarting it
//! makes leadership flap. So a lease counts as work, like a pending promise: while it is held
//! (or suspended) it keeps its environment's settle queue referenced, until it is released or
//! lost, or until the user opts out with `unref()` (Node's Timer convention; `ref()` undoes it).
//!
//! No threadsafe function or handle per lease (issue 17 made an unwatched acquire cost none):
//! the lease adds to the settle queue's count, and the core's `on_lost` posts the end of a loss
//! through that same queue. Every count change happens on the JS thread, where napi allows
//! referencing a threadsafe function. Before a loss lets the process go, index.js's `onLost`
//! runs (it applies the loss: 'lost', the aborted signal), so that whatever those start keeps
//! the loop alive in turn; the lease's own state reports come through a threadsafe function
//! that does not keep the loop alive, and could otherwise arrive after Node decided to exit.

use std::sync::{Arc, Mutex};

use napi::sys;

use crate::queue::{post_to_queue, settle_queue, QueueItem, QUEUE};

/// One lease's share in keeping the event loop alive.
#[derive(Default)]
pub(crate) struct KeepAlive {
    state: Mutex<Share>,
}

#[derive(Default)]
struct Share {
    /// Counted in the queue's `holds` now.
    counted: bool,
    /// Released or lost: never counted again.
    ended: bool,
    /// The core was asked to tell us about a loss (once per lease).
    watching: bool,
    /// index.js's `onLost`, run on the JS thread when the core reports the loss.
    on_lost: Option<JsRef>,
}

/// A reference to a JS function; made, called and deleted on the JS thread only.
struct JsRef(sys::napi_ref);

// Carried inside the lease's share, which the core's threads hold; only touched on the JS thread.
unsafe impl Send for JsRef {}

impl KeepAlive {
    fn share(&self) -> std::sync::MutexGuard<'_, Share> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts the lease while `lease` is held or suspended (JS thread).
    pub(crate) fn keep(
        self: &Arc<Self>,
        env: sys::napi_env,
        lease: Option<&zklock::Lease>,
        on_lost: Option<sys::napi_value>,
    ) -> napi::Result<()> {
        let mut share = self.share();
        if share.ended || share.counted {
            return Ok(());
        }
        let Some(lease) = lease.filter(|l| !l.state().is_final()) else {
            share.ended = true;
            return Ok(());
        };
        let queue = settle_queue(env)?;
        if !share.watching {
            share.watching = true;
            if let Some(f) = on_lost {
                let mut r = std::ptr::null_mut();
                if unsafe { sys::napi_create_reference(env, f, 1, &mut r) } == sys::Status::napi_ok
                {
                    share.on_lost = Some(JsRef(r));
                }
            }
            // Strong: a lease garbage-collected while held still stops counting when lost.
            let me = self.clone();
            let shared = queue.shared.clone();
            // The loss is noticed on the core's side; its end is applied on the JS thread.
            lease.on_lost(move || {
                post_to_queue(&shared, QueueItem::Run(Box::new(move |env| me.lost(env))));
            });
        }
        share.counted = true;
        if !queue.busy() {
            queue.wake();
        }
        queue.holds.set(queue.holds.get() + 1);
        Ok(())
    }

    /// Stops counting the lease, for now (`unref()`) or for good (`end`) (JS thread).
    pub(crate) fn uncount(&self, env: sys::napi_env) {
        let mut share = self.share();
        if !share.counted {
            return;
        }
        share.counted = false;
        drop(share);
        let _ = QUEUE.try_with(|q| {
            if let Some(q) = q.borrow().as_ref().filter(|q| q.env == env) {
                q.holds.set(q.holds.get().saturating_sub(1));
                q.rest_if_idle();
            }
        });
    }

    /// The lease was released: the process may end without it (JS thread).
    pub(crate) fn end(&self, env: sys::napi_env) {
        let on_lost = {
            let mut share = self.share();
            share.ended = true;
            share.on_lost.take()
        };
        if let Some(f) = on_lost {
            unsafe { sys::napi_delete_reference(env, f.0) };
        }
        self.uncount(env);
    }

    /// The core reported the loss: index.js applies it, then the process may end (JS thread).
    fn lost(&self, env: sys::napi_env) {
        let on_lost = self.share().on_lost.take();
        if let Some(f) = on_lost {
            unsafe {
                let mut callback = std::ptr::null_mut();
                let mut undefined = std::ptr::null_mut();
                let mut result = std::ptr::null_mut();
                if sys::napi_get_reference_value(env, f.0, &mut callback) == sys::Status::napi_ok
                    && !callback.is_null()
                    && sys::napi_get_undefined(env, &mut undefined) == sys::Status::napi_ok
                {
                    let called = sys::napi_call_function(
                        env,
                        undefined,
                        callback,
                        0,
                        std::ptr::null(),
                        &mut result,
                    );
                    if called != sys::Status::napi_ok {
                        // onLost reports its listeners' errors itself; nothing may stay pending.
                        let mut error = std::ptr::null_mut();
                        sys::napi_get_and_clear_last_exception(env, &mut error);
                    }
                }
                sys::napi_delete_reference(env, f.0);
            }
        }
        self.end(env);
    }

    pub(crate) fn counted(&self) -> bool {
        self.share().counted
    }
}
