//! The exclusive lock (Curator's `InterProcessMutex`), which is also each side of a read/write
//! lock, and its queue introspection. Re-entrancy is per owner of a lock value, with a hold
//! count: the face says who the owner is (Python's thread or asyncio task, C's thread, Node's
//! async caller; Rust's default is the caller, [`Owner::current`]: its tokio task, or its thread
//! outside a task). Two owners of one value contend like two clients, as Curator's per-thread
//! rule has it, so concurrent callers sharing one value exclude each other (issue 50).
//!
//! This file is the lock's API; an acquire's way through the queue is `mutex_queue`'s, the
//! holds it counts are `mutex_holds`'s (one way: this file, then the queue, then the holds).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::base::cancel::CancelToken;
use crate::base::error::{Error, ErrorKind, Result};
use crate::base::protocol::{self, NodeKind};
use crate::base::state::Released;
use crate::base::wait::Wait;
use crate::leases::acquire::Acquire;
use crate::leases::lease::Lease;
use crate::leases::position::QueuePosition;
use crate::ops::bounds;
use crate::ops::runtime;
use crate::ops::runtime::in_runtime;
use crate::recipes::mutex_holds::{LockInner, Owner};
use crate::recipes::mutex_queue::{participants, with_max, within, Participant};
use crate::sessions::connection::Connection;

/// A lock on one path: a mutex, one side of a [`RwLock`](crate::RwLock), or a semaphore.
/// Re-entrant per caller by default ([`Owner::current`]): while a task (or, outside a task, a thread) holds the lock
/// through this value, its acquiring it again only counts up, and other tasks sharing the value
/// (an `Arc<Lock>` in an app state) wait their turn like other clients. `acquire_as(owner, ..)`
/// picks the owner: [`Owner::SHARED`] for one hold shared by every caller of the value. A
/// semaphore is never re-entrant: each acquire is a lease of its own.
///
/// ```no_run
/// # async fn run(client: zklock::Client) -> zklock::Result<()> {
/// let lock = client.mutex("/locks/orders")?;
/// let lease = lock.acquire().await?;
/// // The critical section: lease.token() fences writes made elsewhere.
/// lease.release().await?;
/// # Ok(())
/// # }
/// ```
pub struct Lock {
    pub(crate) inner: Arc<LockInner>,
}

/// What a lock is, for logs: its path and kind, the limits set on it. Nothing of the client
/// (its credentials) is shown.
impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = &self.inner;
        f.debug_struct("Lock")
            .field("path", &inner.path)
            .field("kind", &inner.kind)
            .field("reentrant", &inner.reentrant)
            .field("max_leases", &inner.max_leases)
            .finish_non_exhaustive()
    }
}

/// The exclusive lock (Curator's `InterProcessMutex`).
pub type Mutex = Lock;

impl Lock {
    pub(crate) fn new(client: Arc<Connection>, path: &str, kind: NodeKind) -> Result<Lock> {
        protocol::validate_path(path)?;
        Ok(Lock {
            inner: Arc::new(LockInner::new(client, path, kind)),
        })
    }

    /// A semaphore of `max_leases` leases on `path` (Curator's `InterProcessSemaphoreV2`
    /// layout); not re-entrant: every acquire takes a lease of its own.
    pub(crate) fn semaphore(client: Arc<Connection>, path: &str, max_leases: u32) -> Result<Lock> {
        protocol::validate_path(path)?;
        crate::recipes::semaphore::validate_max_leases(path, max_leases)?;
        let lock = Lock::new(client, path, NodeKind::Lease)?.reentrant(false);
        let mut inner = Arc::try_unwrap(lock.inner).unwrap_or_else(|_| unreachable!("just made"));
        inner.max_leases = Some(max_leases);
        Ok(Lock {
            inner: Arc::new(inner),
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
                .acquire_until(Owner::SHARED, deadline, cancel.clone(), None)
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
        crate::base::options::check_hold_limit(limit, "max_hold", "no limit")?;
        self.change(|inner| inner.max_hold = limit);
        Ok(())
    }

    /// The limit [`Lock::max_hold`] set.
    pub fn max_hold_limit(&self) -> Option<Duration> {
        self.inner.max_hold
    }

    /// The longest a lease of this value may be held counting its extensions
    /// ([`crate::Lease::extend`]); `None` (the default): no ceiling. An extension past it is
    /// refused with `InvalidArgument`. `InvalidArgument` for zero.
    pub fn hold_ceiling(mut self, ceiling: Option<Duration>) -> Result<Lock> {
        self.set_hold_ceiling(ceiling)?;
        Ok(self)
    }

    /// [`Lock::hold_ceiling`] in place (refused, it leaves the value as it was).
    pub fn set_hold_ceiling(&mut self, ceiling: Option<Duration>) -> Result<()> {
        crate::base::options::check_hold_limit(ceiling, "hold_ceiling", "no ceiling")?;
        self.change(|inner| inner.hold_ceiling = ceiling);
        Ok(())
    }

    /// Chubby's lock-delay (`None`: off, the default): after a holder's node vanished without
    /// a clean release (its session expired, it was broken, its maximum hold ended), the
    /// acquire that waited behind it gets its lease only `delay` later, for resources that
    /// cannot check a fencing token. A clean release of a value with a lock-delay writes a
    /// marker in the same multi as its delete (the lock path's data), so the next holder
    /// proceeds at once; every zklock user of the path sets the same delay (a release without
    /// the marker costs its successor the delay). Curator and kazoo ignore the marker.
    /// Mutexes, semaphores (a lease freed without a clean release; the marker on `leases`)
    /// and elections; `InvalidArgument` for a zero delay.
    pub fn lock_delay(mut self, delay: Option<Duration>) -> Result<Lock> {
        self.set_lock_delay(delay)?;
        Ok(self)
    }

    /// [`Lock::lock_delay`] in place, for a face that keeps the value behind a handle:
    /// refused, it leaves the value as it was.
    pub fn set_lock_delay(&mut self, delay: Option<Duration>) -> Result<()> {
        if delay.is_some_and(|d| d.is_zero()) {
            return Err(Error::invalid(
                "lock_delay must be longer than zero (leave it unset for none)",
            ));
        }
        self.change(|inner| inner.lock_delay = delay);
        Ok(())
    }

    /// The delay [`Lock::lock_delay`] set.
    pub fn lock_delay_limit(&self) -> Option<Duration> {
        self.inner.lock_delay
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

impl Lock {
    /// The lock's path.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// Whether a second acquire by the same owner re-enters (counts up) instead of queueing.
    pub fn is_reentrant(&self) -> bool {
        self.inner.reentrant
    }

    /// How many holds the caller ([`Owner::current`]) has on this value (0 when not held, or
    /// lost).
    pub fn hold_count(&self) -> usize {
        self.hold_count_as(Owner::current())
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
        in_runtime(async move { inner.release_one_hold(shared).await }).await
    }

    /// Blocking twin of [`Lock::release_as`].
    pub fn blocking_release_as(&self, owner: Owner) -> Result<Released> {
        let lock = Lock {
            inner: self.inner.clone(),
        };
        runtime::block_on(async move { lock.release_as(owner).await })
    }

    /// Takes the lock again if the caller ([`Owner::current`]) already holds it through this
    /// value (a re-entrant hold, no I/O); `None` when it does not (then acquire it normally).
    pub fn reenter(&self) -> Option<Lease> {
        self.inner.try_reenter(Owner::current())
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
        self.inner.clone().acquire_until(
            owner,
            wait.deadline().map(Instant::from_std),
            cancel,
            None,
        )
    }

    /// [`Lock::acquire_as`] that reports its place in the lock's queue to `position` (read
    /// it, or be called back on each change: [`QueuePosition`]). For a mutex or a write side:
    /// the nodes ahead; a read side: the write nodes ahead; a semaphore: the leases that must
    /// go first (docs/contract.md, "Queue position").
    pub fn acquire_watched(
        &self,
        owner: Owner,
        wait: Wait,
        cancel: Option<CancelToken>,
        position: QueuePosition,
    ) -> impl std::future::Future<Output = Result<Lease>> + Send + 'static {
        let deadline = wait.deadline().map(Instant::from_std);
        self.inner
            .clone()
            .acquire_until(owner, deadline, cancel, Some(position))
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
        Acquire::start(|cancel, position| self.acquire_watched(owner, wait, Some(cancel), position))
    }

    /// Waits until the lock is the caller's ([`Owner::current`], the task that awaits this).
    ///
    /// Cancel safety: dropping this future (the losing branch of a `tokio::select!`, an outer
    /// `tokio::time::timeout`) leaves nothing held: a lease it obtained is released and its
    /// queue node removed, both in the background, so the next waiter may wait a round trip
    /// longer. To have the node gone when the call returns, bound the wait with
    /// [`Lock::acquire_timeout`] (`Timeout`) or cancel through [`Lock::acquire_with`] and a
    /// [`crate::CancelToken`] (`Cancelled`) instead of dropping the future.
    pub async fn acquire(&self) -> Result<Lease> {
        // The re-entrant case first, and the rest boxed: this future stays a few words instead
        // of the 568 bytes of the acquire's, which every call moved (bench s2, issue 17).
        let owner = Owner::current();
        if let Some(lease) = self.inner.try_reenter(owner) {
            return Ok(lease);
        }
        Box::pin(self.inner.clone().acquire_until(owner, None, None, None)).await
    }

    /// Waits at most `timeout`; `Timeout` error after it (no node left behind).
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Lease> {
        self.inner
            .clone()
            .acquire_until(
                Owner::current(),
                bounds::deadline_after(timeout),
                None,
                None,
            )
            .await
    }

    /// One attempt: `None` when someone else holds the lock (no node left behind).
    pub async fn try_acquire(&self) -> Result<Option<Lease>> {
        none_on_timeout(
            self.inner
                .clone()
                .acquire_until(Owner::current(), Some(Instant::now()), None, None)
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
        // The owner is the calling thread (or task), taken here: `block_on` runs the acquire
        // elsewhere. The re-entrant case needs no runtime hop.
        let owner = Owner::current();
        if let Some(lease) = self.inner.try_reenter(owner) {
            return Ok(lease);
        }
        let inner = self.inner.clone();
        runtime::block_on(async move { inner.acquire_until(owner, deadline, None, None).await })
    }

    /// The acquire future for bindings that drive their own waiting (deadline `None` = forever).
    /// Its owner is the caller of this function ([`Owner::current`]), wherever the future runs.
    pub fn acquire_until(
        &self,
        deadline: Option<std::time::Instant>,
    ) -> impl std::future::Future<Output = Result<Lease>> + Send + 'static {
        self.inner.clone().acquire_until(
            Owner::current(),
            deadline.map(Instant::from_std),
            None,
            None,
        )
    }

    /// The acquire future with a cancellation token: `cancel.cancel()` makes it remove its node
    /// and fail with `Cancelled` (deadline `None` = forever). Its owner is the caller of this
    /// function ([`Owner::current`]).
    pub fn acquire_with(
        &self,
        deadline: Option<std::time::Instant>,
        cancel: CancelToken,
    ) -> impl std::future::Future<Output = Result<Lease>> + Send + 'static {
        self.inner.clone().acquire_until(
            Owner::current(),
            deadline.map(Instant::from_std),
            Some(cancel),
            None,
        )
    }

    /// The queue: holder first, then waiters in order.
    pub async fn participants(&self) -> Result<Vec<Participant>> {
        let client = self.inner.client.clone();
        let path = self.inner.path.clone();
        let max = self.inner.max_leases;
        in_runtime(async move { Ok(with_max(participants(&client, &path).await?, max)) }).await
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
        in_runtime(async move {
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

pub(crate) fn none_on_timeout(result: Result<Lease>) -> Result<Option<Lease>> {
    match result {
        Ok(lease) => Ok(Some(lease)),
        Err(e) if e.kind() == ErrorKind::Timeout => Ok(None),
        Err(e) => Err(e),
    }
}
