//! Several locks taken as one (Curator's `InterProcessMultiLock`).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::base::cancel::CancelToken;
use crate::base::error::{Error, Result};
use crate::base::protocol::NodeKind;
use crate::base::wait::Wait;
use crate::leases::acquire::Acquire;
use crate::leases::lease::Lease;
use crate::leases::position::QueuePosition;
use crate::ops::bounds;
use crate::ops::runtime::{self, in_runtime};
use crate::recipes::mutex::{none_on_timeout, Lock};
use crate::recipes::mutex_holds::{LockInner, Owner};
use crate::sessions::connection::Connection;

/// Several locks taken as one (Curator's `InterProcessMultiLock`): all or nothing, one deadline
/// for all, members taken in path order (no deadlock between differently ordered lists), and
/// released in reverse order. A maximum hold ([`MultiLock::max_hold`]) is one end for the
/// whole hold.
pub struct MultiLock {
    members: Vec<Arc<LockInner>>,
    /// The whole hold's limit, counted from when every member is ours.
    max_hold: Option<Duration>,
    /// The longest the whole hold may last counting its extensions.
    hold_ceiling: Option<Duration>,
}

/// Its members' paths and the hold limits, nothing of the client (its credentials).
impl std::fmt::Debug for MultiLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiLock")
            .field("paths", &self.paths())
            .field("max_hold", &self.max_hold)
            .field("hold_ceiling", &self.hold_ceiling)
            .finish()
    }
}

impl MultiLock {
    pub(crate) fn from_paths<S: AsRef<str>>(
        client: &Arc<Connection>,
        paths: impl IntoIterator<Item = S>,
    ) -> Result<MultiLock> {
        let locks = paths
            .into_iter()
            .map(|p| Lock::new(client.clone(), p.as_ref(), NodeKind::Mutex))
            .collect::<Result<Vec<_>>>()?;
        Self::from_locks(locks.iter())
    }

    /// A multi-lock over existing lock values (their re-entrancy is shared with them).
    pub fn from_locks<'a>(locks: impl IntoIterator<Item = &'a Lock>) -> Result<MultiLock> {
        let mut members: Vec<Arc<LockInner>> = locks.into_iter().map(|l| l.inner.clone()).collect();
        if members.is_empty() {
            return Err(Error::invalid("a multi-lock needs at least one lock"));
        }
        members
            .sort_by(|a, b| (a.path.as_str(), a.kind as u8).cmp(&(b.path.as_str(), b.kind as u8)));
        for pair in members.windows(2) {
            if Arc::ptr_eq(&pair[0], &pair[1])
                || (pair[0].path == pair[1].path && pair[0].kind == pair[1].kind)
            {
                return Err(Error::invalid(format!(
                    "the multi-lock lists {} twice",
                    pair[0].path
                )));
            }
        }
        Ok(MultiLock {
            members,
            max_hold: None,
            hold_ceiling: None,
        })
    }

    /// Every lease of this multi-lock ends `limit` after all its members became ours (`None`:
    /// no limit), whatever its holder does: at the limit every member turns lost with the
    /// reason `max-hold` and the runtime deletes every member's node (see
    /// [`Lock::max_hold`]). One end for the whole hold: [`Lease::extend`] moves it for all
    /// members, [`Lease::on_expiring`] warns before it, [`Lease::valid_until`] never passes it.
    /// A member whose own lock value ends its hold earlier (a lock with a `max_hold` of its
    /// own given to [`MultiLock::from_locks`], or already held by that value: one node, one
    /// end) keeps the earlier end. A lease taken before this call keeps the limit it had.
    /// `InvalidArgument` for zero.
    pub fn max_hold(mut self, limit: Option<Duration>) -> Result<MultiLock> {
        self.set_max_hold(limit)?;
        Ok(self)
    }

    /// [`MultiLock::max_hold`] in place (refused, it leaves the value as it was).
    pub fn set_max_hold(&mut self, limit: Option<Duration>) -> Result<()> {
        crate::base::options::check_hold_limit(limit, "max_hold", "no limit")?;
        self.max_hold = limit;
        Ok(())
    }

    /// The limit [`MultiLock::max_hold`] set.
    pub fn max_hold_limit(&self) -> Option<Duration> {
        self.max_hold
    }

    /// The longest the whole hold may last counting its extensions, from when every member
    /// became ours (see [`Lock::hold_ceiling`]); `None` (the default): no ceiling.
    /// `InvalidArgument` for zero.
    pub fn hold_ceiling(mut self, ceiling: Option<Duration>) -> Result<MultiLock> {
        self.set_hold_ceiling(ceiling)?;
        Ok(self)
    }

    /// [`MultiLock::hold_ceiling`] in place (refused, it leaves the value as it was).
    pub fn set_hold_ceiling(&mut self, ceiling: Option<Duration>) -> Result<()> {
        crate::base::options::check_hold_limit(ceiling, "hold_ceiling", "no ceiling")?;
        self.hold_ceiling = ceiling;
        Ok(())
    }

    fn limits(&self) -> Limits {
        self.max_hold.map(|limit| (limit, self.hold_ceiling))
    }

    /// The member paths, in the order they are acquired (sorted).
    pub fn paths(&self) -> Vec<&str> {
        self.members.iter().map(|m| m.path.as_str()).collect()
    }

    /// Waits until every member is held: one lease of them all. On failure no member stays held.
    pub async fn acquire(&self) -> Result<Lease> {
        self.acquire_until_instant(None).await
    }

    /// As [`MultiLock::acquire`], `Timeout` once `timeout` passed (nothing held).
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Lease> {
        self.acquire_until_instant(bounds::deadline_after(timeout))
            .await
    }

    /// One attempt: the lease, or `None` when a member is taken (nothing held).
    pub async fn try_acquire(&self) -> Result<Option<Lease>> {
        none_on_timeout(self.acquire_until_instant(Some(Instant::now())).await)
    }

    /// Blocking twin of [`MultiLock::acquire`] (from a thread that is not the runtime's).
    pub fn blocking_acquire(&self) -> Result<Lease> {
        runtime::block_on(self.acquire_until(None))
    }

    /// Blocking twin of [`MultiLock::acquire_timeout`].
    pub fn blocking_acquire_timeout(&self, timeout: Duration) -> Result<Lease> {
        runtime::block_on(self.acquire_until_instant(bounds::deadline_after(timeout)))
    }

    /// Blocking twin of [`MultiLock::try_acquire`].
    pub fn blocking_try_acquire(&self) -> Result<Option<Lease>> {
        none_on_timeout(runtime::block_on(
            self.acquire_until(Some(std::time::Instant::now())),
        ))
    }

    /// The acquire future for bindings (deadline `None` = forever).
    pub fn acquire_until(
        &self,
        deadline: Option<std::time::Instant>,
    ) -> impl std::future::Future<Output = Result<Lease>> + Send + 'static {
        self.acquire_from(deadline, None)
    }

    /// The acquire future with a cancellation token (see [`Lock::acquire_with`]).
    pub fn acquire_with(
        &self,
        deadline: Option<std::time::Instant>,
        cancel: CancelToken,
    ) -> impl std::future::Future<Output = Result<Lease>> + Send + 'static {
        self.acquire_from(deadline, Some(cancel))
    }

    fn acquire_from(
        &self,
        deadline: Option<std::time::Instant>,
        cancel: Option<CancelToken>,
    ) -> impl std::future::Future<Output = Result<Lease>> + Send + 'static {
        // The caller is the owner (issue 50), taken here: the future may run elsewhere.
        self.acquire_for(
            Owner::current(),
            deadline.map(Instant::from_std),
            cancel,
            None,
        )
    }

    /// Acquires every member for `owner` (see [`Lock::acquire_as`]).
    pub fn acquire_as(
        &self,
        owner: Owner,
        wait: Wait,
        cancel: Option<CancelToken>,
    ) -> impl std::future::Future<Output = Result<Lease>> + Send + 'static {
        self.acquire_for(owner, wait.deadline().map(Instant::from_std), cancel, None)
    }

    /// [`MultiLock::acquire_as`] that reports its place to `position`: the place of the member
    /// it waits for (the members before it are held, those after it not yet queued), so the
    /// figure may rise when it moves on to the next member (docs/contract.md, "Queue
    /// position").
    pub fn acquire_watched(
        &self,
        owner: Owner,
        wait: Wait,
        cancel: Option<CancelToken>,
        position: QueuePosition,
    ) -> impl std::future::Future<Output = Result<Lease>> + Send + 'static {
        let deadline = wait.deadline().map(Instant::from_std);
        self.acquire_for(owner, deadline, cancel, Some(position))
    }

    /// Blocking twin of [`MultiLock::acquire_as`].
    pub fn blocking_acquire_as(
        &self,
        owner: Owner,
        wait: Wait,
        cancel: Option<CancelToken>,
    ) -> Result<Lease> {
        runtime::block_on(self.acquire_as(owner, wait, cancel))
    }

    /// Starts acquiring every member for `owner` on the runtime (see [`Acquire`]).
    pub fn start_acquire(&self, owner: Owner, wait: Wait) -> Acquire {
        Acquire::start(|cancel, position| self.acquire_watched(owner, wait, Some(cancel), position))
    }

    fn acquire_until_instant(
        &self,
        deadline: Option<Instant>,
    ) -> impl std::future::Future<Output = Result<Lease>> + Send + 'static {
        self.acquire_for(Owner::current(), deadline, None, None)
    }

    /// Every way to acquire ends here: this multi-lock's members and limits, taken by `owner`.
    fn acquire_for(
        &self,
        owner: Owner,
        deadline: Option<Instant>,
        cancel: Option<CancelToken>,
        position: Option<QueuePosition>,
    ) -> impl std::future::Future<Output = Result<Lease>> + Send + 'static {
        let members = self.members.clone();
        acquire_all(members, owner, deadline, cancel, self.limits(), position)
    }
}

/// A multi-lock's maximum hold and its ceiling, when it has one.
type Limits = Option<(Duration, Option<Duration>)>;

/// Takes every member in order within one deadline (and one outer bound, see `bounds`); with
/// `limits`, one maximum hold for all members from the moment the last one is ours.
async fn acquire_all(
    members: Vec<Arc<LockInner>>,
    owner: Owner,
    deadline: Option<Instant>,
    cancel: Option<CancelToken>,
    limits: Limits,
    position: Option<QueuePosition>,
) -> Result<Lease> {
    let decide_by = bounds::decide_by(deadline);
    let what = format!("the multi-lock on {}", members[0].path);
    let guard = bounds::guard(decide_by, cancel.clone(), what);
    let steps = in_runtime(async move {
        // What was taken so far: dropped (when the outer bound gives up), it is released in
        // the background.
        let mut lease = Lease::empty();
        for member in members {
            let member_position = position.clone();
            match member
                .acquire_until(owner, deadline, cancel.clone(), member_position)
                .await
            {
                Ok(member_lease) => lease.absorb(member_lease),
                Err(e) => {
                    // Roll back, in reverse order, in a task of its own: it goes on when the
                    // outer bound gives up on waiting for it.
                    let _ = runtime::spawn(lease.release()).await;
                    return Err(e);
                }
            }
        }
        if bounds::too_late(decide_by) {
            let _ = runtime::spawn(lease.release()).await;
            return Err(crate::engine::nodes::timeout_error("the multi-lock"));
        }
        if let Some((limit, ceiling)) = limits {
            lease.limit_hold(limit, ceiling);
        }
        Ok(lease)
    });
    bounds::within(guard, steps).await
}
