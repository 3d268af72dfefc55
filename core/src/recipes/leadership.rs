//! The leaderships one election object took (issue 33): what lets it refuse to resign (or
//! proclaim through) a lease that another participant's object took on the same path, which
//! would otherwise delete that participant's node and leave nobody leading, and refuse a
//! second lead while it leads, which would queue a node behind its own and wait for itself.

use std::sync::{Arc, Mutex, Weak};

use crate::leases::lease::Lease;
use crate::leases::node::LeaseShared;

/// Weak references to the nodes of the leaderships this object took: a released leadership
/// is let go by its lease, and its entry is pruned at the next record.
#[derive(Default)]
pub(crate) struct Leaderships(Mutex<Vec<Weak<LeaseShared>>>);

impl Leaderships {
    /// Remembers a leadership this object took, and marks its node as one, so that the
    /// messages about it name a leadership, not a lock (`Ended::leave_scope`).
    pub(crate) fn record(&self, leadership: &Lease) {
        let mut taken = self.0.lock().unwrap();
        taken.retain(|w| w.strong_count() > 0);
        let parts = leadership.shared_parts();
        for part in &parts {
            part.mark_leadership();
        }
        taken.extend(parts.iter().map(Arc::downgrade));
    }

    /// True when `lease` is one this object took (whatever its state now).
    pub(crate) fn took(&self, lease: &Lease) -> bool {
        let taken = self.0.lock().unwrap();
        let parts = lease.shared_parts();
        !parts.is_empty()
            && parts.iter().all(|p| {
                taken
                    .iter()
                    .any(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(p)))
            })
    }

    /// The node of a leadership of this object that is neither released nor lost, if any.
    pub(crate) fn leading(&self) -> Option<String> {
        let taken = self.0.lock().unwrap();
        taken
            .iter()
            .filter_map(Weak::upgrade)
            .find(|p| !p.is_finished() && !p.current_state().is_final())
            .map(|p| p.node().to_owned())
    }
}
