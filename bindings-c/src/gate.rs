//! The gate every registered C callback runs through (lease states, revocation, a client's
//! connection states).

use std::sync::{Condvar, Mutex};
use std::thread::ThreadId;

/// What keeps a C callback from running after its lease (or client) is freed: no call starts once it is
/// deactivated, and deactivating waits for a running call (on another thread) to end.
pub(crate) struct CallGate {
    /// Active, and the thread running the callback now.
    inner: Mutex<(bool, Option<ThreadId>)>,
    idle: Condvar,
}

impl CallGate {
    pub(crate) fn new() -> CallGate {
        CallGate {
            inner: Mutex::new((true, None)),
            idle: Condvar::new(),
        }
    }

    pub(crate) fn call(&self, f: impl FnOnce()) {
        {
            let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            if !inner.0 {
                return;
            }
            inner.1 = Some(std::thread::current().id());
        }
        f();
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).1 = None;
        self.idle.notify_all();
    }

    /// No call starts after this returns, and none is running unless on this very thread
    /// (a callback releasing its own lease).
    pub(crate) fn deactivate(&self) {
        let me = std::thread::current().id();
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.0 = false;
        while inner.1.is_some() && inner.1 != Some(me) {
            inner = self.idle.wait(inner).unwrap_or_else(|e| e.into_inner());
        }
    }
}
