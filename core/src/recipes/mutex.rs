//! The exclusive lock (Curator's `InterProcessMutex`), which is also each side of a read/write
//! lock, and its queue introspection. Re-entrancy is per owner of a lock value, with a hold
//! count: the face says who the owner is (Python's thread or asyncio task, C's thread, Node's
//! `Mutex` object; Rust's default is the value itself, [`Owner::SHARED`]). Two owners of one
//! value contend like two clients, as Curator's per-thread rule has it.

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex, OnceLock, Weak};
use std::time::Duration;

use tokio::time::Instant;

use crate::base::cancel::CancelToken;
use crate::base::error::{Error, ErrorKind, Result};
use crate::base::protocol::{self, ElectionStyle, Library, NodeKind};
use crate::base::state::{LeaseState, Released};
use crate::base::wait::Wait;
use crate::engine::internals::{self, Request};
use crate::leases::acquire::Acquire;
use crate::leases::lease::Lease;
use crate::leases::node::LeaseShared;
use crate::leases::parts::{NodeRef, Part, Reentry};
use crate::ops::bounds;
use crate::ops::observe::AcquireWatch;
use crate::ops::runtime;
use crate::ops::runtime::on_runtime;
use crate::sessions::connection::Connection;

/// A lock on one path: a mutex, one side of a [`RwLock`], or a semaphore. Re-entrant per value
/// by default: while this value holds the lock, acquiring it again (from any task) only counts
/// up (a semaphore never is: each acquire is a lease of its own).
pub struct Lock {
    pub(crate) inner: Arc<LockInner>,
}

/// The exclusive lock (Curator's `InterProcessMutex`).
pub type Mutex = Lock;

pub(crate) struct LockInner {
    pub(crate) client: Arc<Connection>,
    pub(crate) path: String,
    pub(crate) kind: NodeKind,
    pub(crate) reentrant: bool,
    /// The live holds of this value, by owner (rarely more than one), but for `shared`'s.
    holds: StdMutex<Vec<(Owner, Hold)>>,
    /// The hold of [`Owner::SHARED`] (Rust's default), counted without taking `holds`.
    shared: SharedHold,
    /// Serialises first acquisitions among tasks sharing this value, so they share one node:
    /// one permit, taken by a `GatePass` (owned, so it can wait in the caller's future).
    gate: tokio::sync::Semaphore,
    /// The gates of the other owners, made while an owner has an acquire going: each owner's
    /// first acquisitions are serialised among themselves only, so owners never wait for each
    /// other here (a write holder's downgrade must not wait behind another owner's read).
    owner_gates: StdMutex<Vec<(Owner, Arc<tokio::sync::Semaphore>, usize)>>,
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
    /// The lock value itself: every task using one value shares its hold (Rust's default).
    pub const SHARED: Owner = Owner(0);
}

/// Holds an owner's gate on a lock value (its one permit) until dropped.
struct GatePass(Arc<LockInner>, Owner);

impl Drop for GatePass {
    fn drop(&mut self) {
        let (lock, owner) = (&self.0, self.1);
        if owner == Owner::SHARED {
            lock.gate.add_permits(1);
            return;
        }
        lock.leave_owner_gate(owner, true);
    }
}

/// Where an acquire stands after a step on the runtime.
enum Step {
    Done(Lease),
    Wait(Waiting),
}

/// An acquire waiting for its turn, kept in the caller's future between steps.
struct Waiting {
    lock: Arc<LockInner>,
    owner: Owner,
    gate: Option<GatePass>,
    queued: internals::Queued,
    cancel: Option<CancelToken>,
    /// Made on the runtime (a timer needs one to be made), polled wherever the caller is. Its
    /// deadline is the acquire's (not kept twice: memory per waiting lock).
    timer: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl Waiting {
    /// Step 2, in the caller's future: the watched node's event (true if deleted).
    fn wait_turn(&mut self) -> internals::EventWait<'_> {
        self.queued
            .wait_turn(&self.lock.path, self.cancel.as_ref(), self.timer.as_mut())
    }

    /// Step 3, on the runtime: look at the queue again after the event.
    async fn resume(mut self, turn: Result<bool>) -> Result<Step> {
        let advanced = match turn {
            Ok(deleted) => {
                let deadline = self.timer.as_ref().map(|t| t.deadline());
                let request = self.lock.request(deadline, None, self.cancel.as_ref());
                self.queued.advance(&request, deleted).await
            }
            Err(e) => Err(e),
        };
        match advanced {
            Ok(()) => self.settle(None).await,
            Err(e) => Err(self.queued.abandon(e).await),
        }
    }

    fn cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(CancelToken::is_cancelled)
    }

    /// The lease once the lock is ours (unless cancelled meanwhile), else wait again.
    async fn settle(self, downgrade_of: Option<String>) -> Result<Step> {
        if !self.queued.is_ours() {
            return Ok(Step::Wait(self));
        }
        if self.cancelled() {
            let err = crate::engine::nodes::cancelled_error(&self.lock.path);
            return Err(self.queued.abandon(err).await);
        }
        Ok(Step::Done(self.finish(downgrade_of)))
    }

    /// The lease of a lock that is ours: the hold of this value, and the gate let go. No I/O,
    /// so it runs wherever the caller is.
    fn finish(self, downgrade_of: Option<String>) -> Lease {
        let Waiting {
            lock,
            owner,
            gate,
            queued,
            ..
        } = self;
        let (session, node, token) = queued.into_node();
        let shared = LeaseShared::new(session, node, token, downgrade_of);
        if let Some(limit) = lock.max_hold {
            shared.limit_hold(limit);
        }
        if let Some((style, _)) = &lock.election {
            crate::recipes::conflict::guard(&shared, *style, &lock.path);
        }
        let counted_by = if lock.reentrant {
            let mut holds = lock.holds.lock().unwrap();
            holds.retain(|(o, _)| *o != owner);
            if owner == Owner::SHARED && lock.shared.count() == 0 {
                lock.shared.install(shared.clone());
            } else {
                holds.push((
                    owner,
                    Hold {
                        shared: shared.clone(),
                        count: 1,
                    },
                ));
            }
            drop(holds);
            Some(lock)
        } else {
            None
        };
        drop(gate);
        Lease::one(Part {
            shared: NodeRef::Owned(shared),
            owner: counted_by.map(|l| l as Arc<dyn Reentry>),
        })
    }
}

impl Lock {
    pub(crate) fn new(client: Arc<Connection>, path: &str, kind: NodeKind) -> Result<Lock> {
        protocol::validate_path(path)?;
        Ok(Lock {
            inner: Arc::new(LockInner {
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
            }),
        })
    }

    /// A semaphore of `max_leases` leases on `path` (Curator's `InterProcessSemaphoreV2`
    /// layout); not re-entrant: every acquire takes a lease of its own.
    pub(crate) fn semaphore(client: Arc<Connection>, path: &str, max_leases: u32) -> Result<Lock> {
        protocol::validate_path(path)?;
        crate::recipes::semaphore::validate_max_leases(path, max_leases)?;
        let lock = Lock::new(client, path, NodeKind::Lease)?.reentrant(false);
        let inner = Arc::try_unwrap(lock.inner).unwrap_or_else(|_| unreachable!("just made"));
        Ok(Lock {
            inner: Arc::new(LockInner {
                max_leases: Some(max_leases),
                ..inner
            }),
        })
    }

    /// A semaphore's N; `None` for a mutex or a side of a read/write lock.
    pub fn max_leases(&self) -> Option<u32> {
        self.inner.max_leases
    }

    /// Takes `count` leases of a semaphore as one: all of them within one deadline, or none
    /// (those taken are released before it fails). `InvalidArgument` on a lock that is no
    /// semaphore, and for a count of 0 or above its N. Like Curator's `acquire(qty)`, the
    /// leases are taken one after the other.
    pub async fn acquire_many(
        &self,
        count: u32,
        wait: Wait,
        cancel: Option<CancelToken>,
    ) -> Result<Lease> {
        let max = self.inner.max_leases.ok_or_else(|| {
            Error::invalid(format!(
                "acquire_many needs a semaphore; {} is a {} lock",
                self.inner.path, self.inner.kind
            ))
        })?;
        if count == 0 || count > max {
            return Err(Error::invalid(format!(
                "cannot take {count} leases of the semaphore {} of {max}: take 1 to {max}",
                self.inner.path
            )));
        }
        let deadline = wait.deadline().map(Instant::from_std);
        let mut all: Option<Lease> = None;
        for _ in 0..count {
            let one = self
                .inner
                .clone()
                .acquire_until(Owner::SHARED, deadline, cancel.clone())
                .await;
            match (one, all.as_mut()) {
                (Ok(lease), Some(all)) => all.absorb(lease),
                (Ok(lease), None) => all = Some(lease),
                (Err(e), _) => {
                    if let Some(taken) = all {
                        let _ = taken.release().await;
                    }
                    return Err(e);
                }
            }
        }
        Ok(all.expect("count is at least 1"))
    }

    /// Blocking twin of [`Lock::acquire_many`].
    pub fn blocking_acquire_many(
        &self,
        count: u32,
        wait: Wait,
        cancel: Option<CancelToken>,
    ) -> Result<Lease> {
        let lock = Lock {
            inner: self.inner.clone(),
        };
        runtime::block_on(async move { lock.acquire_many(count, wait, cancel).await })
    }

    /// `reentrant(false)`: every acquire takes its own place in the queue (acquiring twice from
    /// one holder waits for itself). It stays a mutex on the path's own children, excluding
    /// Curator's `InterProcessMutex`, not its `InterProcessSemaphoreMutex`: for that one, use
    /// [`crate::Client::semaphore_mutex`]. A semaphore stays non-re-entrant whatever is asked.
    pub fn reentrant(self, reentrant: bool) -> Lock {
        // A semaphore is never re-entrant: each acquire is a lease of its own.
        self.rebuilt(|inner| inner.reentrant = reentrant && inner.max_leases.is_none())
    }

    /// Every lease of this value ends after `limit` (`None`: no limit), whatever its holder
    /// does: at the limit the core's runtime turns it lost with the reason `max-hold` and
    /// deletes its node (CURATOR-28). For a re-entrant hold the limit runs from its first
    /// acquire. A lease taken before this call keeps the limit it had. `InvalidArgument` for
    /// a zero limit (a lease that ends as it starts).
    pub fn max_hold(mut self, limit: Option<Duration>) -> Result<Lock> {
        self.set_max_hold(limit)?;
        Ok(self)
    }

    /// [`Lock::max_hold`] in place, for a face that keeps the value behind a handle: refused,
    /// it leaves the value as it was.
    pub fn set_max_hold(&mut self, limit: Option<Duration>) -> Result<()> {
        if limit.is_some_and(|l| l.is_zero()) {
            return Err(Error::invalid(
                "max_hold must be longer than zero (leave it unset for no limit)",
            ));
        }
        self.change(|inner| inner.max_hold = limit);
        Ok(())
    }

    /// The limit [`Lock::max_hold`] set.
    pub fn max_hold_limit(&self) -> Option<Duration> {
        self.inner.max_hold
    }

    /// This value with its settings changed; a value shared with clones (or holding) is
    /// copied with no holds, like a new value on the same path.
    pub(crate) fn rebuilt(mut self, change: impl FnOnce(&mut LockInner)) -> Lock {
        self.change(change);
        self
    }

    /// Changes this value's settings in place; a value shared with clones (or holding) is
    /// first copied with no holds, like a new value on the same path.
    fn change(&mut self, change: impl FnOnce(&mut LockInner)) {
        if Arc::get_mut(&mut self.inner).is_none() {
            self.inner = Arc::new(LockInner::settings_of(&self.inner));
        }
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            change(inner);
        }
    }
}

impl LockInner {
    /// A value with `shared`'s settings and no holds.
    fn settings_of(shared: &LockInner) -> LockInner {
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
        }
    }
}

impl Lock {
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    pub fn is_reentrant(&self) -> bool {
        self.inner.reentrant
    }

    /// How many holds this value has for [`Owner::SHARED`] (0 when not held, or lost).
    pub fn hold_count(&self) -> usize {
        self.hold_count_as(Owner::SHARED)
    }

    /// How many holds `owner` has on this value (0 when not held, or after the lease was lost).
    pub fn hold_count_as(&self, owner: Owner) -> usize {
        self.inner.held(owner).map_or(0, |(_, count)| count)
    }

    /// Releases one hold of `owner` without its lease (`threading.Lock.release()`, C's release
    /// by handle): counts down (`StillHeld`), or deletes the node at the last hold
    /// (`Released`; `WasLost` when the lease had been lost). `NotHeld` when `owner` holds
    /// nothing here. A face that releases this way drops its leases with [`Lease::detach`].
    pub async fn release_as(&self, owner: Owner) -> Result<Released> {
        let inner = self.inner.clone();
        let Some((shared, _)) = inner.hold_of(owner) else {
            return Err(Error::new(
                ErrorKind::NotHeld,
                format!("the lock {} is not held by this owner", inner.path),
            ));
        };
        if inner.count_down_hold(&shared) {
            return Ok(Released::StillHeld);
        }
        on_runtime(async move { inner.release_one_hold(shared).await }).await
    }

    /// Blocking twin of [`Lock::release_as`].
    pub fn blocking_release_as(&self, owner: Owner) -> Result<Released> {
        let lock = Lock {
            inner: self.inner.clone(),
        };
        runtime::block_on(async move { lock.release_as(owner).await })
    }

    /// Takes the lock again if this value already holds it (a re-entrant hold, no I/O);
    /// `None` when it does not (then acquire it normally).
    pub fn reenter(&self) -> Option<Lease> {
        self.inner.try_reenter(Owner::SHARED)
    }

    /// [`Lock::reenter`] for `owner`.
    pub fn reenter_as(&self, owner: Owner) -> Option<Lease> {
        self.inner.try_reenter(owner)
    }

    /// Acquires for `owner`, waiting as `wait` says; a try that finds the lock taken and a
    /// deadline that passes are `Timeout` errors. `cancel` makes it remove its node and fail with
    /// `Cancelled`. The future needs no runtime of the caller's.
    pub fn acquire_as(
        &self,
        owner: Owner,
        wait: Wait,
        cancel: Option<CancelToken>,
    ) -> impl std::future::Future<Output = Result<Lease>> + Send + 'static {
        self.inner
            .clone()
            .acquire_until(owner, wait.deadline().map(Instant::from_std), cancel)
    }

    /// Blocking twin of [`Lock::acquire_as`] (from a thread that is not the runtime's).
    pub fn blocking_acquire_as(
        &self,
        owner: Owner,
        wait: Wait,
        cancel: Option<CancelToken>,
    ) -> Result<Lease> {
        if let Some(lease) = self.inner.try_reenter(owner) {
            return Ok(lease);
        }
        runtime::block_on(self.acquire_as(owner, wait, cancel))
    }

    /// Starts an acquire for `owner` on the runtime: a handle to cancel it, wait for it, await
    /// it or be called back when it ends (see [`Acquire`]).
    pub fn start_acquire(&self, owner: Owner, wait: Wait) -> Acquire {
        Acquire::start(|cancel| self.acquire_as(owner, wait, Some(cancel)))
    }

    /// Waits until the lock is ours.
    pub async fn acquire(&self) -> Result<Lease> {
        // The re-entrant case first, and the rest boxed: this future stays a few words instead
        // of the 568 bytes of the acquire's, which every call moved (bench s2, issue 17).
        if let Some(lease) = self.inner.try_reenter(Owner::SHARED) {
            return Ok(lease);
        }
        Box::pin(self.inner.clone().acquire_until(Owner::SHARED, None, None)).await
    }

    /// Waits at most `timeout`; `Timeout` error after it (no node left behind).
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Lease> {
        self.inner
            .clone()
            .acquire_until(Owner::SHARED, bounds::deadline_after(timeout), None)
            .await
    }

    /// One attempt: `None` when someone else holds the lock (no node left behind).
    pub async fn try_acquire(&self) -> Result<Option<Lease>> {
        none_on_timeout(
            self.inner
                .clone()
                .acquire_until(Owner::SHARED, Some(Instant::now()), None)
                .await,
        )
    }

    /// Blocking twin of [`Lock::acquire`].
    pub fn blocking_acquire(&self) -> Result<Lease> {
        self.blocking_acquire_until(None)
    }

    /// Blocking twin of [`Lock::acquire_timeout`].
    pub fn blocking_acquire_timeout(&self, timeout: Duration) -> Result<Lease> {
        self.blocking_acquire_until(bounds::deadline_after(timeout))
    }

    /// Blocking twin of [`Lock::try_acquire`].
    pub fn blocking_try_acquire(&self) -> Result<Option<Lease>> {
        none_on_timeout(self.blocking_acquire_until(Some(Instant::now())))
    }

    fn blocking_acquire_until(&self, deadline: Option<Instant>) -> Result<Lease> {
        // The re-entrant case needs no runtime hop.
        if let Some(lease) = self.inner.try_reenter(Owner::SHARED) {
            return Ok(lease);
        }
        let inner = self.inner.clone();
        runtime::block_on(async move { inner.acquire_until(Owner::SHARED, deadline, None).await })
    }

    /// The acquire future for bindings that drive their own waiting (deadline `None` = forever).
    pub fn acquire_until(
        &self,
        deadline: Option<std::time::Instant>,
    ) -> impl std::future::Future<Output = Result<Lease>> + Send + 'static {
        self.inner
            .clone()
            .acquire_until(Owner::SHARED, deadline.map(Instant::from_std), None)
    }

    /// The acquire future with a cancellation token: `cancel.cancel()` makes it remove its node
    /// and fail with `Cancelled` (deadline `None` = forever).
    pub fn acquire_with(
        &self,
        deadline: Option<std::time::Instant>,
        cancel: CancelToken,
    ) -> impl std::future::Future<Output = Result<Lease>> + Send + 'static {
        self.inner.clone().acquire_until(
            Owner::SHARED,
            deadline.map(Instant::from_std),
            Some(cancel),
        )
    }

    /// The queue: holder first, then waiters in order.
    pub async fn participants(&self) -> Result<Vec<Participant>> {
        let client = self.inner.client.clone();
        let path = self.inner.path.clone();
        let max = self.inner.max_leases;
        on_runtime(async move { Ok(with_max(participants(&client, &path).await?, max)) }).await
    }

    /// Blocking twin of [`Lock::participants`].
    pub fn blocking_participants(&self) -> Result<Vec<Participant>> {
        let client = self.inner.client.clone();
        let path = self.inner.path.clone();
        let max = self.inner.max_leases;
        runtime::block_on(async move { Ok(with_max(participants(&client, &path).await?, max)) })
    }

    /// [`Lock::participants`] that fails with `Timeout` when the listing is not complete within
    /// `timeout` (connecting, or waiting for a reconnect, included); `None` waits as long as the
    /// session lives.
    pub async fn participants_timeout(
        &self,
        timeout: Option<Duration>,
    ) -> Result<Vec<Participant>> {
        let client = self.inner.client.clone();
        let path = self.inner.path.clone();
        let max = self.inner.max_leases;
        on_runtime(async move {
            let listed = within(timeout, &path, participants(&client, &path)).await?;
            Ok(with_max(listed, max))
        })
        .await
    }

    /// Blocking twin of [`Lock::participants_timeout`].
    pub fn blocking_participants_timeout(
        &self,
        timeout: Option<Duration>,
    ) -> Result<Vec<Participant>> {
        let client = self.inner.client.clone();
        let path = self.inner.path.clone();
        let max = self.inner.max_leases;
        runtime::block_on(async move {
            let listed = within(timeout, &path, participants(&client, &path)).await?;
            Ok(with_max(listed, max))
        })
    }
}

/// Runs a listing within `timeout` (`None`: no bound), failing with `Timeout` past it.
async fn within<T>(
    timeout: Option<Duration>,
    path: &str,
    listing: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    let Some(timeout) = timeout else {
        return listing.await;
    };
    let too_long = || {
        Err(Error::timeout(format!(
            "listing the participants of {} took longer than {timeout:?}",
            crate::base::protocol::shown(path)
        )))
    };
    // No time at all fails without asking: a zero tokio timeout races a fast reply.
    if timeout.is_zero() {
        return too_long();
    }
    tokio::time::timeout(timeout, listing)
        .await
        .unwrap_or_else(|_| too_long())
}

pub(crate) fn none_on_timeout(result: Result<Lease>) -> Result<Option<Lease>> {
    match result {
        Ok(lease) => Ok(Some(lease)),
        Err(e) if e.kind() == ErrorKind::Timeout => Ok(None),
        Err(e) => Err(e),
    }
}

impl LockInner {
    /// Counts up an existing, not lost hold of `owner` (not in a forked child, nor after close).
    fn try_reenter(self: &Arc<Self>, owner: Owner) -> Option<Lease> {
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
        let (_, h) = holds.iter_mut().find(|(o, _)| *o == owner)?;
        if h.shared.state() == LeaseState::Lost {
            return None;
        }
        h.count += 1;
        Some(Lease::one(Part {
            shared: NodeRef::Owned(h.shared.clone()),
            owner: Some(self.clone()),
        }))
    }

    /// The node and count of `owner`'s live hold, if any.
    fn held(&self, owner: Owner) -> Option<(Arc<LeaseShared>, usize)> {
        self.hold_of(owner)
            .filter(|(shared, _)| shared.state() != LeaseState::Lost)
    }

    /// The node and count of `owner`'s hold, lost or not: for `SHARED`, one taken since its
    /// lost hold (in `holds`) before that lost one.
    fn hold_of(&self, owner: Owner) -> Option<(Arc<LeaseShared>, usize)> {
        let holds = self.holds.lock().unwrap();
        if let Some((_, h)) = holds.iter().find(|(o, _)| *o == owner) {
            return Some((h.shared.clone(), h.count));
        }
        // Under `holds`, the shared hold's node stays in place while counted.
        (owner == Owner::SHARED && self.shared.count() > 0)
            .then(|| (self.shared.node(), self.shared.count()))
    }

    fn peer(&self) -> Option<Arc<LockInner>> {
        self.peer.get().and_then(Weak::upgrade)
    }

    /// The acquire, as the caller's future. The steps that talk to ZooKeeper run on the runtime;
    /// the wait for our turn runs here, in the caller's future, so a waiting acquire has no
    /// task of its own on the runtime (memory per waiting lock, bench scenario 6).
    #[allow(clippy::manual_async_fn)] // an `async fn` would keep a second copy of its arguments
    pub(crate) fn acquire_until(
        self: Arc<Self>,
        owner: Owner,
        deadline: Option<Instant>,
        cancel: Option<CancelToken>,
    ) -> impl std::future::Future<Output = Result<Lease>> + Send + 'static {
        // The bound is made here and the steps are one async block: each argument is stored
        // once in the caller's future (memory per waiting lock, bench scenario 6).
        let decide_by = bounds::decide_by(deadline);
        let guard = match decide_by.is_some() || cancel.is_some() {
            true => bounds::guard(decide_by, cancel.clone(), self.path.clone()),
            false => None,
        };
        // A timeout says what filled it when the connection kept failing meanwhile (issue 33):
        // the lock may never have been contended.
        let client = self.client.clone();
        let started = Instant::now();
        let bounded = bounds::within(guard, async move {
            if let Some(lease) = self.try_reenter(owner) {
                return Ok(lease);
            }
            // Made only for an acquire that goes to ZooKeeper (a re-entrant one pays nothing);
            // disabled, at the cost of a check, unless a `tracing` subscriber wants it.
            let span = tracing::debug_span!(
                "acquire",
                path = self.path.as_str(),
                kind = self.kind.as_str(),
                outcome = tracing::field::Empty,
                wait_ms = tracing::field::Empty,
            );
            let counters = self.client.counters();
            let mut watch = AcquireWatch::start(counters, &self.path, self.kind, &decide_by, span);
            let result = async {
                // A lock obtained after `decide_by` is given back (released in the background).
                let in_time = |lease: Lease, lock: &LockInner| {
                    if bounds::too_late(decide_by) {
                        drop(lease);
                        return Err(crate::engine::nodes::timeout_error(&lock.path));
                    }
                    Ok(lease)
                };
                // One `waiting` across the awaits, never a `Step` beside it: the state of a
                // waiting acquire is stored once in this future (memory per waiting lock).
                let mut waiting =
                    match on_runtime(self.clone().begin(owner, deadline, cancel)).await? {
                        Step::Done(lease) => return in_time(lease, &self),
                        Step::Wait(waiting) => waiting,
                    };
                loop {
                    let turn = waiting.wait_turn().await;
                    if matches!(turn, Ok(true))
                        && !waiting.cancelled()
                        && waiting.queued.take_turn_if_next()
                    {
                        return in_time(waiting.finish(None), &self);
                    }
                    waiting = match on_runtime(waiting.resume(turn)).await? {
                        Step::Done(lease) => return in_time(lease, &self),
                        Step::Wait(waiting) => waiting,
                    };
                }
            };
            let result = watch.in_span(result).await;
            watch.settle(&result);
            result
        });
        async move { client.explain_timeout(bounded.await, started) }
    }

    /// Waits for the gate that serialises first acquisitions of this value.
    async fn enter_gate(
        self: Arc<Self>,
        owner: Owner,
        deadline: Option<Instant>,
        cancel: Option<&CancelToken>,
    ) -> Result<GatePass> {
        if owner != Owner::SHARED {
            return self.enter_owner_gate(owner, deadline, cancel).await;
        }
        let wait = async {
            let permit = match deadline {
                None => self.gate.acquire().await,
                Some(d) => tokio::time::timeout_at(d, self.gate.acquire())
                    .await
                    .map_err(|_| {
                        Error::new(
                            ErrorKind::Timeout,
                            format!("timed out waiting for the lock {}", self.path),
                        )
                    })?,
            };
            permit
                .map(|p| p.forget())
                .map_err(|_| Error::closed("the lock's gate was closed"))
        };
        let cancelled = async {
            match cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            entered = wait => entered?,
            _ = cancelled => return Err(crate::engine::nodes::cancelled_error(&self.path)),
        }
        Ok(GatePass(self.clone(), Owner::SHARED))
    }

    /// The gate of one owner other than `SHARED`: made on first use, gone when its last user
    /// leaves. Boxed: rare next to the shared gate, and the acquire future stays small.
    fn enter_owner_gate<'a>(
        self: Arc<Self>,
        owner: Owner,
        deadline: Option<Instant>,
        cancel: Option<&'a CancelToken>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<GatePass>> + Send + 'a>> {
        Box::pin(async move {
            let gate = {
                let mut gates = self.owner_gates.lock().unwrap();
                match gates.iter_mut().find(|(o, _, _)| *o == owner) {
                    Some((_, gate, users)) => {
                        *users += 1;
                        gate.clone()
                    }
                    None => {
                        let gate = Arc::new(tokio::sync::Semaphore::new(1));
                        gates.push((owner, gate.clone(), 1));
                        gate
                    }
                }
            };
            let wait = async {
                match deadline {
                    None => gate.acquire().await.map(|p| p.forget()).ok(),
                    Some(d) => match tokio::time::timeout_at(d, gate.acquire()).await {
                        Ok(permit) => permit.map(|p| p.forget()).ok(),
                        Err(_) => None,
                    },
                }
            };
            let cancelled = async {
                match cancel {
                    Some(token) => token.cancelled().await,
                    None => std::future::pending().await,
                }
            };
            // Until we hold the permit, leaving (an error, or this future dropped) only counts
            // this user out of the gate.
            struct Waiter<'l>(&'l LockInner, Owner);
            impl Drop for Waiter<'_> {
                fn drop(&mut self) {
                    self.0.leave_owner_gate(self.1, false);
                }
            }
            let waiter = Waiter(&self, owner);
            let entered = tokio::select! {
                entered = wait => entered.is_some(),
                _ = cancelled => return Err(crate::engine::nodes::cancelled_error(&self.path)),
            };
            if !entered {
                return Err(crate::engine::nodes::timeout_error(&self.path));
            }
            std::mem::forget(waiter);
            Ok(GatePass(self.clone(), owner))
        })
    }

    /// One user of `owner`'s gate leaves (giving its permit back when it held it).
    fn leave_owner_gate(&self, owner: Owner, held: bool) {
        let mut gates = self.owner_gates.lock().unwrap();
        if let Some(i) = gates.iter().position(|(o, _, _)| *o == owner) {
            if held {
                gates[i].1.add_permits(1);
            }
            gates[i].2 -= 1;
            if gates[i].2 == 0 {
                gates.swap_remove(i);
            }
        }
    }

    fn request<'a>(
        &'a self,
        deadline: Option<Instant>,
        downgrade_of: Option<String>,
        cancel: Option<&'a CancelToken>,
    ) -> Request<'a> {
        Request {
            dir: &self.path,
            kind: self.kind,
            identity: match &self.election {
                Some((_, id)) => id,
                None => self.client.identity(),
            },
            acl: self.client.acl(),
            deadline,
            downgrade_of,
            cancel,
            style: self.election.as_ref().map(|(style, _)| *style),
        }
    }

    /// Step 1, on the runtime: the gate, our node, our place in the queue.
    async fn begin(
        self: Arc<Self>,
        owner: Owner,
        deadline: Option<Instant>,
        cancel: Option<CancelToken>,
    ) -> Result<Step> {
        if let Some(max_leases) = self.max_leases {
            let session = self.client.session_by(deadline).await?;
            let request = crate::recipes::semaphore::SemaphoreRequest {
                path: &self.path,
                max_leases,
                identity: self.client.identity(),
                acl: self.client.acl(),
                deadline,
                cancel: cancel.as_ref(),
            };
            let lease = crate::recipes::semaphore::acquire(&session, &request).await?;
            if let Some(limit) = self.max_hold {
                lease
                    .shared_parts()
                    .iter()
                    .for_each(|p| p.limit_hold(limit));
            }
            return Ok(Step::Done(lease));
        }
        let gate = if self.reentrant {
            Some(
                self.clone()
                    .enter_gate(owner, deadline, cancel.as_ref())
                    .await?,
            )
        } else {
            None
        };
        if let Some(lease) = self.try_reenter(owner) {
            return Ok(Step::Done(lease));
        }
        let downgrade_of = self.downgrade_of(owner)?;
        let session = self.client.session_by(deadline).await?;
        let request = self.request(deadline, downgrade_of.clone(), cancel.as_ref());
        let queued = internals::enqueue(&session, &request).await?;
        let waiting = Waiting {
            owner,
            timer: deadline.map(|d| Box::pin(tokio::time::sleep_until(d))),
            lock: self.clone(),
            gate,
            queued,
            cancel,
        };
        waiting.settle(downgrade_of).await
    }

    /// For a read taken while this value's write side is held: the write node (a downgrade,
    /// granted at once). Taking the write while holding the read is refused.
    fn downgrade_of(&self, owner: Owner) -> Result<Option<String>> {
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
    fn count_down_hold(&self, shared: &LeaseShared) -> bool {
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
    async fn release_one_hold(self: Arc<Self>, shared: Arc<LeaseShared>) -> Result<Released> {
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

/// One contender in a lock's queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Participant {
    /// Full path of the node.
    pub node: String,
    /// The node's data (zklock writes its identity there; Curator its IP address).
    pub identity: String,
    /// The node's czxid: the fencing token its holder got.
    pub token: i64,
    /// Which library created it.
    pub library: Library,
    /// Mutex, read or write.
    pub kind: NodeKind,
    /// The ZooKeeper session that owns the node.
    pub session_id: i64,
    /// When the node was made (ZooKeeper's ctime: milliseconds since the Unix epoch, by the
    /// server's clock): since when its holder has held or waited.
    pub created_ms: i64,
    /// A semaphore's N, when known (asked of a semaphore value; ZooKeeper does not store it).
    pub max_leases: Option<u32>,
}

impl Participant {
    /// The election layout its node has (`None` for a read, write or lease node): what an
    /// election's `participants()` shows as the participant's family.
    pub fn election_style(&self) -> Option<ElectionStyle> {
        ElectionStyle::of(&protocol::Contender {
            name: String::new(),
            sequence: 0,
            kind: self.kind,
            library: self.library,
        })
    }
}

/// Sets the semaphore's N on its lease participants.
fn with_max(mut queue: Vec<Participant>, max: Option<u32>) -> Vec<Participant> {
    for p in queue.iter_mut().filter(|p| p.kind == NodeKind::Lease) {
        p.max_leases = max;
    }
    queue
}

/// The lock nodes of `path` (holder first, then waiters in order), followed, when `path` is a
/// semaphore (it has a `leases` child: Curator's layout), by its lease nodes in order and the
/// waiters for its guard (`locks`), reported as kind `lease`: they wait for a lease.
pub(crate) async fn participants(client: &Connection, path: &str) -> Result<Vec<Participant>> {
    let session = client.session().await?;
    let children = crate::engine::nodes::list_children(&session, path, None, None).await?;
    let mut out = participants_of(&session, path, &children, None).await?;
    if children
        .iter()
        .any(|c| c == crate::recipes::semaphore::LEASES)
    {
        for (dir, kind) in [
            (crate::recipes::semaphore::LEASES, None),
            (crate::recipes::semaphore::LOCKS, Some(NodeKind::Lease)),
        ] {
            let dir = format!("{path}/{dir}");
            let children = crate::engine::nodes::list_children(&session, &dir, None, None).await?;
            out.extend(participants_of(&session, &dir, &children, kind).await?);
        }
    }
    Ok(out)
}

/// The lock nodes among `children` of `path`, in queue order, read with one pipelined batch of
/// getData; `kind` overrides the kind read from their names.
async fn participants_of(
    session: &crate::sessions::session::Session,
    path: &str,
    children: &[String],
    kind: Option<NodeKind>,
) -> Result<Vec<Participant>> {
    let queue = protocol::queue_of(children, None);
    let zk = session.zk()?;
    let nodes: Vec<String> = queue.iter().map(|c| format!("{path}/{}", c.name)).collect();
    // Pipelined: every getData is sent before the first reply is awaited.
    let pending: Vec<_> = nodes.iter().map(|n| zk.get_data(n)).collect();
    let mut out = Vec::with_capacity(queue.len());
    for ((contender, node), reply) in queue.into_iter().zip(nodes).zip(pending) {
        if let Ok((data, stat)) = reply.await {
            out.push(Participant {
                identity: String::from_utf8_lossy(&data).into_owned(),
                node,
                token: stat.czxid,
                library: contender.library,
                kind: kind.unwrap_or(contender.kind),
                session_id: stat.ephemeral_owner,
                created_ms: stat.ctime,
                max_leases: None,
            });
        }
    }
    Ok(out)
}
