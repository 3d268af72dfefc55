//! A lease nobody releases: garbage collection never releases a lock; the lease is detached
//! with a `ResourceWarning` (kept apart from `lease.rs`, the `Lease` class itself).

use pyo3::prelude::*;
use zklock::LeaseState;

use super::PyLease;

/// A lease nobody will release (its lock object or `Lease` was collected): a lease that is
/// still held (or suspended) is detached, not released, with a `ResourceWarning` naming the
/// path; its node stays until the client closes, its session ends or the process exits (as
/// with kazoo and Curator). A released or lost lease has nothing to keep and is dropped as
/// usual; a lease inherited through fork() belongs to the parent and is left alone.
pub(crate) fn drop_unreleased(lease: zklock::Lease, pid: u32) {
    if pid != zklock::support::current_pid() {
        lease.detach();
        return;
    }
    if !matches!(lease.state(), LeaseState::Held | LeaseState::Suspended) {
        return;
    }
    let message = format!(
        "a zklock lease on {} was garbage-collected while held; the lock stays held until \
         its client is closed or the process exits (release the lease, or use `with`)",
        lease.path()
    );
    lease.detach();
    // Dropped by the garbage collector, with the GIL held; after the interpreter is gone
    // there is nobody left to warn.
    let _ = Python::try_attach(|py| warn_resource(py, &message));
}

/// Garbage collection never releases a lock (see `drop_unreleased`).
impl Drop for PyLease {
    fn drop(&mut self) {
        if let Some(lease) = self
            .lease
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            drop_unreleased(lease, self.pid);
        }
    }
}

/// Issues a `ResourceWarning` from a destructor: an exception being raised meanwhile is kept,
/// and a warning turned into an error (`-W error`) goes to `sys.unraisablehook`.
pub(crate) fn warn_resource(py: Python<'_>, message: &str) {
    let pending = PyErr::take(py);
    let text = std::ffi::CString::new(message.replace('\0', ""))
        .unwrap_or_else(|_| c"a zklock lease was garbage-collected while held".to_owned());
    let category = py.get_type::<pyo3::exceptions::PyResourceWarning>();
    if let Err(err) = PyErr::warn(py, category.as_any(), &text, 1) {
        err.write_unraisable(py, None);
    }
    if let Some(pending) = pending {
        pending.restore(py);
    }
}
