//! The `Book` of the leases taken through one lock object: a file of `lease`'s own (a `Lease`
//! leaves its book when released), to keep each file readable.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::sync::MutexExt;

use super::{drop_unreleased, LeaseInfo, PyLease};
use crate::runtime::lock;

/// The leases taken through one lock object and not yet released, oldest first, each with its
/// owner. `acquire()` returns a bool and `release()` finds the lease again, so a hold taken that
/// way keeps only the core's lease here; a `Lease` object is made when Python asks for one
/// (`with`, `lock.lease`, asyncio) and then kept instead, so that it stays the same object.
///
/// Locked only for list work, with the GIL held and never across a Python call (a Python
/// object is neither made nor dropped under it); a thread that finds it taken waits detached
/// (`lock_py_attached`), so it cannot deadlock with the GIL.
pub(crate) struct Book {
    pub(crate) held: Mutex<Vec<Held>>,
}

pub(crate) struct Held {
    pub(crate) owner: u64,
    /// Taken by `with lock` / `async with lock`: that exit releases it, and it stays here
    /// (released or not) until then.
    pub(crate) entered: bool,
    pub(crate) slot: Slot,
}

pub(crate) enum Slot {
    /// A hold taken by `acquire()`: the core's lease and the process it was taken in.
    Bare(zklock::Lease, u32),
    Object(Py<PyLease>),
}

impl Slot {
    /// Released (or tried to be): no longer this owner's to release.
    pub(crate) fn done(&self) -> bool {
        match self {
            Slot::Bare(..) => false,
            Slot::Object(lease) => lease.get().done(),
        }
    }
}

impl Book {
    pub(crate) fn new() -> Arc<Book> {
        Arc::new(Book {
            held: Mutex::new(Vec::new()),
        })
    }

    pub(crate) fn entries<'a>(&'a self, py: Python<'_>) -> std::sync::MutexGuard<'a, Vec<Held>> {
        self.held
            .lock_py_attached(py)
            .unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn push(&self, py: Python<'_>, held: Held) {
        let mut entries = self.entries(py);
        if entries.capacity() == 0 {
            // Most locks hold one lease at a time: room for one, not the four `push` makes
            // first (more holds grow the list as usual).
            entries.reserve_exact(1);
        }
        entries.push(held);
    }

    /// The index of `owner`'s most recent lease that is not released.
    pub(crate) fn latest(entries: &[Held], owner: u64) -> Option<usize> {
        entries
            .iter()
            .rposition(|h| h.owner == owner && !h.slot.done())
    }

    /// Forgets a `Lease` object that was released (or tried to be), unless a `with` still has
    /// to exit it. Returns what to drop once the book is unlocked.
    pub(crate) fn forget(&self, py: Python<'_>, lease: *mut pyo3::ffi::PyObject) -> Option<Held> {
        let mut entries = self.entries(py);
        let i = entries.iter().rposition(|h| {
            matches!(&h.slot, Slot::Object(o) if o.as_ptr() == lease) && !h.entered
        })?;
        Some(entries.remove(i))
    }

    /// Makes the entry at `i` (of `owner`) a `Lease` object if it is not one yet, and returns
    /// the object. The object is made with the book unlocked (making a Python object may run
    /// the garbage collector and other threads), empty, and the lease moved into it after.
    pub(crate) fn object_at(self: &Arc<Self>, py: Python<'_>, i: usize) -> PyResult<Py<PyLease>> {
        let (owner, info) = {
            let entries = self.entries(py);
            let held = &entries[i];
            match &held.slot {
                Slot::Object(lease) => return Ok(lease.clone_ref(py)),
                Slot::Bare(lease, pid) => (held.owner, LeaseInfo::of(lease, *pid)),
            }
        };
        let token = info.token;
        let object = Py::new(py, PyLease::empty(info))?;
        let mut entries = self.entries(py);
        // Other threads may have changed the list meanwhile (a semaphore's release() takes any
        // thread's lease): find the entry again. This owner's bare holds of one node are alike.
        let same = |h: &Held| {
            h.owner == owner && matches!(&h.slot, Slot::Bare(l, _) if l.token() == token)
        };
        let found = match entries.get(i) {
            Some(h) if same(h) => Some(i),
            _ => entries.iter().rposition(same),
        };
        if let Some(i) = found {
            let slot = std::mem::replace(&mut entries[i].slot, Slot::Object(object.clone_ref(py)));
            if let Slot::Bare(lease, _) = slot {
                *lock(&object.get().lease) = Some(lease);
            }
        }
        drop(entries);
        object.get().set_book(Arc::downgrade(self));
        if found.is_none() {
            // Released meanwhile by another thread: the empty object reads 'released'.
            object.get().done.store(true, Ordering::Relaxed);
        }
        Ok(object)
    }
}

/// Garbage collection never releases a lock: the holds of a collected lock object that
/// `acquire()` took are detached, each with a `ResourceWarning` (see `drop_unreleased`).
impl Drop for Book {
    fn drop(&mut self) {
        let entries = std::mem::take(self.held.get_mut().unwrap_or_else(|e| e.into_inner()));
        for held in entries {
            if let Slot::Bare(lease, pid) = held.slot {
                drop_unreleased(lease, pid);
            }
        }
    }
}
