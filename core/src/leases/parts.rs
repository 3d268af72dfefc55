//! The members of a lease: each one node, and the re-entrant lock value that counts its holds
//! (apart from `lease`, which holds them, and `node`, which they reach; nothing here is public
//! outside the crate).

use std::sync::Arc;

use crate::base::error::Result;
use crate::base::state::Released;
use crate::leases::node::LeaseShared;

/// What counts the re-entrant holds of a node: the lock value that took it (the recipes come
/// after this module; they implement it).
pub(crate) trait Reentry: Send + Sync {
    /// Counts down a hold of `shared` that is held more than once; false when this release is
    /// the last one, which must go through `release_hold`.
    fn count_down_if_shared(&self, shared: &LeaseShared) -> bool;
    /// One re-entrant release: counts down, and deletes the node at zero.
    fn release_hold(
        self: Arc<Self>,
        shared: Arc<LeaseShared>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Released>> + Send>>;
}

/// One member of a lease: the node, and the re-entrant lock value that counts its holds.
pub(crate) struct Part {
    pub(crate) shared: NodeRef,
    pub(crate) owner: Option<Arc<dyn Reentry>>,
}

/// How a part reaches its node: a strong count of its own, or (a re-entrant hold of a lock
/// value's shared owner, bench s2) through the hold it counts, without touching the node's
/// reference count.
pub(crate) enum NodeRef {
    Owned(Arc<LeaseShared>),
    /// A node that the part's `owner` keeps alive for as long as the part holds one of the
    /// hold's counts (the lock value's rule for its shared hold): made only with that owner,
    /// and never read after the count was given back.
    Counted(std::ptr::NonNull<LeaseShared>),
}

// SAFETY: a `Counted` node is a `LeaseShared` (Send + Sync) kept alive by the part's owner, as
// an `Arc` would; the pointer is only read as `&LeaseShared`.
unsafe impl Send for NodeRef {}
unsafe impl Sync for NodeRef {}

impl NodeRef {
    /// The node with a strong count of its own (for work that may outlive the part's count).
    pub(crate) fn to_arc(&self) -> Arc<LeaseShared> {
        match self {
            NodeRef::Owned(shared) => shared.clone(),
            NodeRef::Counted(node) => {
                // SAFETY: alive while the part holds its count (see `Counted`), and it came
                // from an `Arc` (the hold's own strong count).
                unsafe {
                    Arc::increment_strong_count(node.as_ptr());
                    Arc::from_raw(node.as_ptr())
                }
            }
        }
    }
}

impl std::ops::Deref for NodeRef {
    type Target = LeaseShared;
    fn deref(&self) -> &LeaseShared {
        match self {
            NodeRef::Owned(shared) => shared,
            // SAFETY: alive while the part holds its count (see `Counted`).
            NodeRef::Counted(node) => unsafe { node.as_ref() },
        }
    }
}

/// The members of a lease: the first one inline, so that the common lease of one node (every
/// mutex, read/write side and semaphore lease; each re-entrant acquire) allocates nothing
/// (bench s2, issue 17); a multi-lock's further members in `rest`.
#[derive(Default)]
pub(crate) struct Parts {
    pub(crate) first: Option<Part>,
    /// Boxed: a lease is moved by every caller that awaits an acquire or a release, and the
    /// fewer its bytes the cheaper each move (bench s2). One word where a `Vec` is three.
    #[allow(clippy::box_collection)]
    pub(crate) rest: Option<Box<Vec<Part>>>,
}

impl Parts {
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Part> {
        self.first
            .iter()
            .chain(self.rest.iter().flat_map(|rest| rest.iter()))
    }

    pub(crate) fn push(&mut self, part: Part) {
        match self.first {
            None => self.first = Some(part),
            Some(_) => self.rest.get_or_insert_with(Box::default).push(part),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// The only member, when there is exactly one.
    pub(crate) fn single(&self) -> Option<&Part> {
        self.first.as_ref().filter(|_| self.rest.is_none())
    }

    /// The members, first first.
    pub(crate) fn into_members(self) -> impl Iterator<Item = Part> {
        self.first
            .into_iter()
            .chain(self.rest.into_iter().flat_map(|rest| *rest))
    }

    /// The members, last first (the order of release).
    pub(crate) fn into_reversed(self) -> impl Iterator<Item = Part> {
        let rest = self.rest.map_or_else(Vec::new, |rest| *rest);
        rest.into_iter().rev().chain(self.first)
    }
}
