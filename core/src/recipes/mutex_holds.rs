//! The re-entrant holder's bookkeeping of a lock value (`LockInner`): who holds it and how many
//! times (`Owner`, the shared owner's lock-free count), re-entering, counting down, the last
//! release that deletes the node, and a write node kept for its downgraded read (CURATOR-621).
//! The queue (`mutex_queue`) hands each new node here; nothing here names the queue.

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex, OnceLock, Weak};
use std::time::Duration;

use crate::base::error::{Error, ErrorKind, Result};
use crate::base::protocol::{self, ElectionStyle, NodeKind};
use crate::base::state::{LeaseState, Released};
use crate::leases::lease::Lease;
use crate::leases::node::LeaseShared;
use crate::leases::parts::{NodeRef, Part, Reentry};
use crate::sessions::connection::Connection;

/// The state of one lock value (a `Lock` and its clones): its settings, and its holders'
/// bookkeeping. The holds are this file's alone; the gates are the queue's (`mutex_queue`),
/// which lines up first acquisitions of one value.
pub(crate) struct LockInner {
    pub(crate) client: Arc<Connection>,
    pub(crate) path: String,
    pub(crate) kind: NodeKind,
    pub(crate) reentrant: bool,
    /// The live holds of this value, by owner (rarely more than one), but for `shared`'s.
    holds: StdMutex<Vec<(Owner, Hold)>>,
    /// The hold of [`Owner::SHARED`] (elections', and a caller's who asks for it), counted
    /// without taking `holds`.
    shared: SharedHold,
    /// Serialises first acquisitions among tasks sharing this value, so they share one node:
    /// one permit, taken by a `GatePass` (owned, so it can wait in the caller's future).
    pub(super) gate: tokio::sync::Semaphore,
    /// The gates of the other owners, made while an owner has an acquire going: each owner's
    /// first acquisitions are serialised among themselves only, so owners never wait for each
    /// other here (a write holder's downgrade must not wait behind another owner's read).
    pub(super) owner_gates: StdMutex<Vec<(Owner, Arc<tokio::sync::Semaphore>, usize)>>,
    /// The other side of a read/write lock.
    pub(crate) peer: OnceLock<Weak<LockInner>>,
    /// A semaphore's N (see `semaphore`): `Some` makes this value a semaphore, never
    /// re-entrant, each acquire one lease.
    pub(crate) max_leases: Option<u32>,
    /// Set for an election (see `election`): its layout, and its participant id as the
    /// node's data instead of the client's identity.
    pub(crate) election: Option<(ElectionStyle, Vec<u8>)>,
    /// The longest a lease of this value is held before the runtime ends it (`max_hold`).
    pub(crate) max_hold: Option<Duration>,
    /// The longest a lease may be held counting its extensions (`hold_ceiling`).
    pub(crate) hold_ceiling: Option<Duration>,
    /// How long a successor waits after a holder's node vanished without a clean release
    /// (`lock_delay`, Chubby's lock-delay); `None`: no wait, and releases write no marker.
    pub(crate) lock_delay: Option<Duration>,
}

struct Hold {
    shared: Arc<LeaseShared>,
    count: usize,
}

/// The hold of [`Owner::SHARED`], apart from the other owners' so that re-entering and counting
/// down take no mutex (bench s2, issue 17): a re-entrant acquire is one compare-and-swap on
/// `count` and a release another. Rules that keep `node` safe to read without a lock:
/// - `node` owns one strong count of its lease's node while not null, and changes only under
///   the lock value's `holds` mutex: set while `count` is 0 (then `count` becomes 1), taken
///   out as `count` goes from 1 to 0.
/// - `count` goes up only from a value above 0 (`pin`), so whoever counted up holds a unit
///   that keeps `node` in place until it counts down again.
///
/// A lost hold stays here (its other holders still count on it) until its last release; a new
/// acquire of `SHARED` meanwhile takes a node of its own, kept in `holds` like another owner's.
struct SharedHold {
    count: AtomicUsize,
    node: AtomicPtr<LeaseShared>,
}

impl SharedHold {
    fn new() -> SharedHold {
        SharedHold {
            count: AtomicUsize::new(0),
            node: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// Counts up a hold that exists; false when there is none.
    fn pin(&self) -> bool {
        let mut count = self.count.load(Ordering::Relaxed);
        while count > 0 {
            match self.count.compare_exchange_weak(
                count,
                count + 1,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => count = now,
            }
        }
        false
    }

    /// The node of the hold, as a part that counts one hold: only while holding a unit
    /// (after `pin`) and for the lease that takes that unit over.
    fn counted_node(&self) -> NodeRef {
        let node = self.node.load(Ordering::Acquire);
        NodeRef::Counted(std::ptr::NonNull::new(node).expect("a counted shared hold has its node"))
    }

    /// The node of the hold; only while holding a unit or under the `holds` mutex with
    /// `count` above 0.
    fn node(&self) -> Arc<LeaseShared> {
        // The unit (or the mutex) keeps the node in place while its strong count is taken.
        self.counted_node().to_arc()
    }

    /// True when `shared` is this hold's node. Stable for a caller holding `shared`: its node
    /// comes here only new (under `holds`), and leaves only at its own last release.
    fn is(&self, shared: &LeaseShared) -> bool {
        std::ptr::eq(self.node.load(Ordering::Acquire), shared)
    }

    /// The count, under the `holds` mutex (0: no hold).
    fn count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Counts down one of several holds; false, changing nothing, for the last one.
    fn count_down_unless_last(&self) -> bool {
        let mut count = self.count.load(Ordering::Relaxed);
        while count > 1 {
            match self.count.compare_exchange_weak(
                count,
                count - 1,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => count = now,
            }
        }
        false
    }

    /// Under the `holds` mutex, with `count` 0: `shared` becomes the hold, counted once.
    fn install(&self, shared: Arc<LeaseShared>) {
        debug_assert_eq!(self.count(), 0);
        let old = self
            .node
            .swap(Arc::into_raw(shared).cast_mut(), Ordering::AcqRel);
        debug_assert!(old.is_null());
        self.count.store(1, Ordering::Release);
    }

    /// Under the `holds` mutex: counts one hold down; true when that was the last one (the
    /// node left this slot: the caller deletes it).
    fn count_down_locked(&self) -> bool {
        loop {
            if self.count_down_unless_last() {
                return false;
            }
            // A concurrent `pin` makes this fail and the loop count down instead.
            if self
                .count
                .compare_exchange(1, 0, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                let node = self.node.swap(std::ptr::null_mut(), Ordering::AcqRel);
                // SAFETY: the strong count `install` gave this slot; no one can read `node`
                // any more (the count is 0, and `pin` never counts up from 0).
                drop(unsafe { Arc::from_raw(node) });
                return true;
            }
        }
    }
}

impl Drop for SharedHold {
    fn drop(&mut self) {
        let node = *self.node.get_mut();
        if !node.is_null() {
            // SAFETY: the strong count `install` gave this slot (a detached hold never
            // released); nothing else can reach the slot once its lock value is dropped.
            drop(unsafe { Arc::from_raw(node) });
        }
    }
}

/// Who a re-entrant hold belongs to: acquiring again with the same owner only counts up; another
/// owner contends. The number means whatever the face makes it mean (a thread id, a task id, an
/// object id), as long as two owners alive at once never share one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Owner(pub u64);

impl Owner {
    /// The lock value itself: every caller using `acquire_as(Owner::SHARED, ..)` on one value
    /// shares its hold (the default before issue 50; elections still take it).
    pub const SHARED: Owner = Owner(0);

    /// The caller (Rust's default owner, issue 50): the tokio task that runs it, or, outside a
    /// task (a thread of its own, a `block_on`, the `blocking_` twins), the thread. Two tasks or
    /// two threads sharing one lock value so exclude each other, and a nested acquire by the
    /// same one counts up. Its numbers have one of the two top bits set, so they never meet
    /// `SHARED` nor a small `Owner(n)` a caller picks.
    pub fn current() -> Owner {
        match tokio::task::try_id() {
            Some(task) => Owner(TASK_OWNER | (task_number(task) & !OWNER_TAGS)),
            None => Owner(THREAD_OWNER | thread_number()),
        }
    }
}

/// The tag of a task's owner number, and of a thread's (`Owner::current`).
const TASK_OWNER: u64 = 1 << 63;
const THREAD_OWNER: u64 = 1 << 62;
const OWNER_TAGS: u64 = TASK_OWNER | THREAD_OWNER;

/// A task id's number: tokio shows it only as text (its `Display`), read here digit by digit
/// without allocating (a re-entrant acquire costs a few words, bench s2).
fn task_number(task: tokio::task::Id) -> u64 {
    struct Digits(u64);
    impl std::fmt::Write for Digits {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            for digit in s.bytes().filter(u8::is_ascii_digit) {
                self.0 = self
                    .0
                    .wrapping_mul(10)
                    .wrapping_add(u64::from(digit - b'0'));
            }
            Ok(())
        }
    }
    let mut digits = Digits(0);
    let _ = std::fmt::Write::write_fmt(&mut digits, format_args!("{task}"));
    digits.0
}

/// The calling thread's number of its own (`ThreadId::as_u64` is unstable): given on first
/// use, never reused while the process lives.
fn thread_number() -> u64 {
    use std::sync::atomic::AtomicU64;
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static ME: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    // During thread teardown the slot may be gone: a fresh number contends like a new thread.
    ME.try_with(|me| *me)
        .unwrap_or_else(|_| NEXT.fetch_add(1, Ordering::Relaxed))
        & !OWNER_TAGS
}

impl LockInner {
    /// A new value on `path`: re-entrant, no holds, no peer, no limits (`Lock::new`).
    pub(super) fn new(client: Arc<Connection>, path: &str, kind: NodeKind) -> LockInner {
        LockInner {
            client,
            path: path.to_owned(),
            kind,
            reentrant: true,
            holds: StdMutex::new(Vec::new()),
            shared: SharedHold::new(),
            gate: tokio::sync::Semaphore::new(1),
            owner_gates: StdMutex::new(Vec::new()),
            peer: OnceLock::new(),
            max_leases: None,
            election: None,
            max_hold: None,
            hold_ceiling: None,
            lock_delay: None,
        }
    }

    /// A value with `shared`'s settings and no holds.
    pub(super) fn settings_of(shared: &LockInner) -> LockInner {
        LockInner {
            client: shared.client.clone(),
            path: shared.path.clone(),
            kind: shared.kind,
            reentrant: shared.reentrant,
            holds: StdMutex::new(Vec::new()),
            shared: SharedHold::new(),
            gate: tokio::sync::Semaphore::new(1),
            owner_gates: StdMutex::new(Vec::new()),
            peer: OnceLock::new(),
            max_leases: shared.max_leases,
            election: shared.election.clone(),
            max_hold: shared.max_hold,
            hold_ceiling: shared.hold_ceiling,
            lock_delay: shared.lock_delay,
        }
    }

    /// The node of a re-entrant acquire that got the lock becomes `owner`'s hold, counted once
    /// (`Waiting::finish` in `mutex_queue`).
    pub(super) fn record_hold(&self, owner: Owner, shared: &Arc<LeaseShared>) {
        // An earlier hold of `owner` here is a lost one (a live one is re-entered, never
        // acquired anew): it stays until its holders have counted it down, as `SHARED`'s does.
        let mut holds = self.holds.lock().unwrap();
        if owner == Owner::SHARED && self.shared.count() == 0 {
            self.shared.install(shared.clone());
        } else {
            holds.push((
                owner,
                Hold {
                    shared: shared.clone(),
                    count: 1,
                },
            ));
        }
    }
}

impl LockInner {
    /// Counts up an existing, not lost hold of `owner` (not in a forked child, nor after close).
    pub(super) fn try_reenter(self: &Arc<Self>, owner: Owner) -> Option<Lease> {
        if !self.reentrant || self.client.check_usable().is_err() {
            return None;
        }
        if owner == Owner::SHARED && self.shared.pin() {
            // The lease takes the unit over: it reaches the node through this hold, which
            // keeps it alive while counted (no reference count of its own to change).
            let node = self.shared.counted_node();
            let lost = node.state() == LeaseState::Lost;
            let lease = Lease::one(Part {
                shared: node,
                owner: Some(self.clone()),
            });
            if !lost {
                return Some(lease);
            }
            // Counted down again (a lost hold is never re-entered); a new hold of `SHARED`
            // taken since the loss is in `holds`.
            drop(lease);
        }
        let mut holds = self.holds.lock().unwrap();
        let (_, h) = holds
            .iter_mut()
            .find(|(o, h)| *o == owner && h.shared.state() != LeaseState::Lost)?;
        h.count += 1;
        Some(Lease::one(Part {
            shared: NodeRef::Owned(h.shared.clone()),
            owner: Some(self.clone()),
        }))
    }

    /// The node and count of `owner`'s live hold, if any.
    pub(super) fn held(&self, owner: Owner) -> Option<(Arc<LeaseShared>, usize)> {
        self.hold_of(owner)
            .filter(|(shared, _)| shared.state() != LeaseState::Lost)
    }

    /// The node and count of `owner`'s hold, lost or not: a live one (taken since a lost
    /// one) before a lost one, which stays until its holders counted it down.
    pub(super) fn hold_of(&self, owner: Owner) -> Option<(Arc<LeaseShared>, usize)> {
        let holds = self.holds.lock().unwrap();
        // Under `holds`, the shared hold's node stays in place while counted.
        let slot = (owner == Owner::SHARED && self.shared.count() > 0)
            .then(|| (self.shared.node(), self.shared.count()));
        let mut lost = None;
        for (node, count) in holds
            .iter()
            .filter(|(o, _)| *o == owner)
            .map(|(_, h)| (h.shared.clone(), h.count))
            .chain(slot)
        {
            if node.state() != LeaseState::Lost {
                return Some((node, count));
            }
            lost.get_or_insert((node, count));
        }
        lost
    }

    fn peer(&self) -> Option<Arc<LockInner>> {
        self.peer.get().and_then(Weak::upgrade)
    }

    /// For a read taken while this value's write side is held: the write node (a downgrade,
    /// granted at once). Taking the write while holding the read is refused.
    pub(super) fn downgrade_of(&self, owner: Owner) -> Result<Option<String>> {
        let Some(peer) = self.peer() else {
            return Ok(None);
        };
        match (self.kind, peer.held(owner).map(|(node, _)| node)) {
            (NodeKind::Write, Some(_)) => Err(Error::new(ErrorKind::UpgradeNotAllowed, format!(
                "cannot take the write lock on {} while holding its read lock (upgrade is not allowed; release the read lock first)",
                self.path
            ))),
            (NodeKind::Read, Some(writer)) => Ok(Some(writer.node().to_owned())),
            _ => Ok(None),
        }
    }

    /// The live read hold that was taken as a downgrade of the write node `writer`, if any.
    fn downgraded_from(&self, writer: &str) -> Option<Arc<LeaseShared>> {
        let holds = self.holds.lock().unwrap();
        let shared = (self.shared.count() > 0).then(|| self.shared.node());
        holds
            .iter()
            .map(|(_, h)| &h.shared)
            .chain(shared.as_ref())
            .find(|s| s.state() != LeaseState::Lost && s.downgrade_of().as_deref() == Some(writer))
            .cloned()
    }

    /// Counts down a hold of `shared` that is held more than once; false if this release is the
    /// last one (or the hold is another node's), which must go through `release_hold`.
    pub(super) fn count_down_hold(&self, shared: &LeaseShared) -> bool {
        if self.shared.is(shared) {
            return self.shared.count_down_unless_last();
        }
        let mut holds = self.holds.lock().unwrap();
        match holds
            .iter_mut()
            .find(|(_, h)| std::ptr::eq(Arc::as_ptr(&h.shared), shared))
        {
            Some((_, h)) if h.count > 1 => {
                h.count -= 1;
                true
            }
            _ => false,
        }
    }

    /// One re-entrant release: counts down, and deletes the node at zero.
    pub(super) async fn release_one_hold(
        self: Arc<Self>,
        shared: Arc<LeaseShared>,
    ) -> Result<Released> {
        {
            let mut holds = self.holds.lock().unwrap();
            if self.shared.is(&shared) {
                if !self.shared.count_down_locked() {
                    return Ok(Released::StillHeld);
                }
            } else if let Some(i) = holds
                .iter()
                .position(|(_, h)| Arc::ptr_eq(&h.shared, &shared))
            {
                holds[i].1.count -= 1;
                if holds[i].1.count > 0 {
                    return Ok(Released::StillHeld);
                }
                holds.swap_remove(i);
            }
        }
        if self.kind == NodeKind::Write && self.keep_for_downgrade(&shared).await {
            return Ok(Released::Released);
        }
        shared.delete().await
    }

    /// A write node whose holder downgraded to a read node that sorts after another writer's
    /// waiting node must stay until the read is released: deleting it would let that writer in
    /// beside our reader (CURATOR-621). Returns true when the node was handed to the read lease.
    async fn keep_for_downgrade(&self, writer: &Arc<LeaseShared>) -> bool {
        let Some(reader) = self.peer().and_then(|p| p.downgraded_from(writer.node())) else {
            return false;
        };
        if reader.downgrade_of().as_deref() != Some(writer.node()) {
            return false;
        }
        let Ok(children) =
            crate::engine::nodes::list_children(writer.session(), &self.path, None, None).await
        else {
            return false;
        };
        let name_of = |node: &str| node.rsplit('/').next().unwrap_or_default().to_owned();
        let (w, r) = (name_of(writer.node()), name_of(reader.node()));
        let queue =
            protocol::queue_of(&children, protocol::parse_contender(&w).map(|c| c.sequence));
        let (Some(wi), Some(ri)) = (
            queue.iter().position(|c| c.name == w),
            queue.iter().position(|c| c.name == r),
        ) else {
            return false;
        };
        let writer_between = queue[wi + 1..ri.max(wi + 1)]
            .iter()
            .any(|c| c.kind.is_exclusive());
        if writer_between {
            reader.add_rider(writer.clone());
        }
        writer_between
    }
}

impl Reentry for LockInner {
    fn count_down_if_shared(&self, shared: &LeaseShared) -> bool {
        self.count_down_hold(shared)
    }

    fn release_hold(
        self: Arc<Self>,
        shared: Arc<LeaseShared>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Released>> + Send>> {
        Box::pin(self.release_one_hold(shared))
    }
}
