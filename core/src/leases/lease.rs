//! Leases: what a successful acquire returns. A lease knows its fencing token (the czxid of its
//! node), its node, its state, and fires its lost signal exactly once.

use std::sync::Arc;

use crate::base::error::Result;
use crate::base::signal::{wait_any, Signal};
use crate::base::state::{LeaseState, Released};
use crate::ops::runtime::{self, in_runtime};

use crate::leases::node::LeaseShared;
use crate::leases::parts::{Part, Parts};

/// A held lock. Dropping a lease releases it in the background; call [`Lease::release`] to
/// know when the node is gone.
///
/// ```no_run
/// # async fn run(lock: zklock::Lock) -> zklock::Result<()> {
/// // Bound to a name: `let _ = lock.acquire().await?;` would release it on the same line.
/// let lease = lock.acquire().await?;
/// println!("holding {} with fencing token {}", lease.path(), lease.token());
/// lease.release().await?;
/// # Ok(())
/// # }
/// ```
#[must_use = "dropping a Lease releases the lock at once: bind it (`let _lease = ...`, not `let _ = ...`) for as long as the lock must be held"]
pub struct Lease {
    parts: Parts,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("path", &self.path())
            .field("token", &self.token())
            .field("state", &self.state())
            .finish()
    }
}

impl Lease {
    /// A lease of no member yet, which a multi-lock fills with [`Lease::absorb`].
    pub(crate) fn empty() -> Lease {
        Lease {
            parts: Parts::default(),
        }
    }

    /// A lease of one node.
    pub(crate) fn one(part: Part) -> Lease {
        Lease {
            parts: Parts {
                first: Some(part),
                rest: None,
            },
        }
    }

    /// Moves the members of `other` into this lease (a multi-lock taking its members one by
    /// one: until it returns, dropping it releases what it took).
    pub(crate) fn absorb(&mut self, mut other: Lease) {
        for part in std::mem::take(&mut other.parts).into_members() {
            self.parts.push(part);
        }
    }

    /// The fencing token: the czxid of our lock node. For a multi-lock, the largest of its
    /// members' tokens (each member's is in [`Lease::tokens`]).
    pub fn token(&self) -> i64 {
        self.parts
            .iter()
            .map(|p| p.shared.token())
            .max()
            .unwrap_or(0)
    }

    /// Every member's token, in acquisition (path) order.
    pub fn tokens(&self) -> Vec<i64> {
        self.parts.iter().map(|p| p.shared.token()).collect()
    }

    /// Full path of our lock node (the first member's for a multi-lock).
    pub fn path(&self) -> &str {
        self.parts.first.as_ref().map_or("", |p| p.shared.node())
    }

    /// Full paths of every member's node.
    pub fn paths(&self) -> Vec<String> {
        self.parts
            .iter()
            .map(|p| p.shared.node().to_owned())
            .collect()
    }

    /// Where the lease stands at this instant (the lifeline's deadline is checked on the spot).
    pub fn state(&self) -> LeaseState {
        LeaseState::combine(self.parts.iter().map(|p| p.shared.current_state()))
    }

    /// Why the lease was lost (session expired, node deleted, client closed, no server contact
    /// for the session timeout), once it was; `None` while it is not lost.
    pub fn lost_reason(&self) -> Option<String> {
        self.parts.iter().find_map(|p| p.shared.lost_reason())
    }

    /// The moment until which no one else can hold this lease's lock (Chubby's local lease):
    /// the lifeline's deadline, by which the ZooKeeper leader provably cannot have expired the
    /// session (docs/safety.md), given a clock rate drift within the margin, and never later
    /// than the end of a maximum hold (`max_hold`), when the lease is taken away. Later than
    /// now while held (it moves forward with every answered heartbeat, up to the maximum
    /// hold's end); while suspended it stays where the last proof put it; `None` once released
    /// or lost. Check the time left before a side effect; a pause after the check is what
    /// fencing tokens are for.
    ///
    /// The deadline runs on a clock that counts a suspended machine's time (CLOCK_BOOTTIME on
    /// Linux; docs/contract.md, "The clock") and is converted to an `Instant` at this call.
    /// `Instant` stands still while the machine is suspended, so a value kept across a suspend
    /// reads later than it is: read [`Lease::time_left`] (or this again) right before acting.
    pub fn valid_until(&self) -> Option<std::time::Instant> {
        if self.state().is_final() {
            return None;
        }
        self.parts
            .iter()
            .map(|p| p.shared.valid_until())
            .try_fold(None, |min: Option<std::time::Instant>, until| {
                until.map(|u| Some(min.map_or(u, |m| m.min(u))))
            })
            .flatten()
    }

    /// The time left until [`Lease::valid_until`], measured at this call on the clock that counts
    /// a suspended machine's time: zero once it passed (also when a suspend outlasted it), `None`
    /// once released or lost. The form that cannot be misread after a suspend.
    pub fn time_left(&self) -> Option<std::time::Duration> {
        if self.state().is_final() {
            return None;
        }
        self.parts
            .iter()
            .map(|p| p.shared.time_left())
            .try_fold(None, |min: Option<std::time::Duration>, left| {
                left.map(|l| Some(min.map_or(l, |m| m.min(l))))
            })
            .flatten()
    }

    /// True while the state is `Held`.
    pub fn is_held(&self) -> bool {
        self.state() == LeaseState::Held
    }

    /// Resolves once the lease is lost (never, if it is released first).
    pub fn lost(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let shared = self.shared_parts();
        async move {
            let signals: Vec<&Signal> = shared.iter().map(|p| &p.state).collect();
            wait_any(&signals, || combined_state(&shared) == LeaseState::Lost).await
        }
    }

    /// Calls `callback` on the library's callback thread at every change of the lease's state
    /// (held, suspended, lost, released), ending after a final state. Lost is reported once.
    pub fn on_state(&self, callback: impl Fn(LeaseState) + Send + Sync + 'static) {
        self.on_state_in(runtime::CallbackQueue::process(), callback)
    }

    /// [`Lease::on_state`] with the callbacks run on `queue` (a client's own callback thread).
    pub fn on_state_in(
        &self,
        queue: runtime::CallbackQueue,
        callback: impl Fn(LeaseState) + Send + Sync + 'static,
    ) {
        self.watch_states(queue, Arc::new(callback), self.state());
    }

    /// Calls `callback` with the current state, then at every change (held, suspended, lost,
    /// released), on the process-wide callback thread; `lost` comes exactly once, and nothing
    /// comes after a final state. What the faces' state subscriptions are built on.
    pub fn subscribe(&self, callback: impl Fn(LeaseState) + Send + Sync + 'static) {
        self.subscribe_in(runtime::CallbackQueue::process(), callback)
    }

    /// [`Lease::subscribe`] with the callbacks run on `queue` (a client's own callback thread).
    pub fn subscribe_in(
        &self,
        queue: runtime::CallbackQueue,
        callback: impl Fn(LeaseState) + Send + Sync + 'static,
    ) {
        let callback = Arc::new(callback);
        let now = self.state();
        let first = callback.clone();
        queue.run(move || first(now));
        if !now.is_final() {
            self.watch_states(queue, callback, now);
        }
    }

    /// Reports every change of the combined state after `last` until a final state.
    fn watch_states(
        &self,
        queue: runtime::CallbackQueue,
        callback: Arc<dyn Fn(LeaseState) + Send + Sync>,
        mut last: LeaseState,
    ) {
        let shared = self.shared_parts();
        runtime::spawn(async move {
            let signals: Vec<&Signal> = shared.iter().map(|p| &p.state).collect();
            while !last.is_final() {
                let mut now = last;
                wait_any(&signals, || {
                    now = combined_state(&shared);
                    now != last
                })
                .await;
                last = now;
                let cb = callback.clone();
                queue.run(move || cb(now));
            }
        });
    }

    /// Calls `callback` once, on the callback thread, if the lease is lost.
    pub fn on_lost(&self, callback: impl FnOnce() + Send + 'static) {
        self.on_lost_in(runtime::CallbackQueue::process(), callback)
    }

    /// [`Lease::on_lost`] with the callback run on `queue` (a client's own callback thread).
    pub fn on_lost_in(
        &self,
        queue: runtime::CallbackQueue,
        callback: impl FnOnce() + Send + 'static,
    ) {
        let shared = self.shared_parts();
        runtime::spawn(async move {
            let signals: Vec<&Signal> = shared.iter().map(|p| &p.state).collect();
            let all_released = || shared.iter().all(|p| p.state() == LeaseState::Released);
            wait_any(&signals, || {
                combined_state(&shared) == LeaseState::Lost || all_released()
            })
            .await;
            if combined_state(&shared) == LeaseState::Lost {
                queue.run(callback);
            }
        });
    }

    /// True once someone asked this lease's holder to let go: the data of one of its nodes was
    /// set to `__REVOKE__` (Curator's `Revoker.attemptRevoke`, `zklock revoke`, or
    /// [`crate::Client::revoke`]). Noticed by the watch every held node gets after 100 ms, so a
    /// request made earlier is seen then. Only a request: the lease stays held until released.
    pub fn is_revoke_requested(&self) -> bool {
        self.parts.iter().any(|p| p.shared.revoke_asked())
    }

    /// Resolves once a revocation is requested (see [`Lease::is_revoke_requested`]); never if
    /// the lease ends first. Curator's `makeRevocable` for every lease, opt-in by awaiting it.
    pub fn revoke_requested(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let shared = self.shared_parts();
        async move {
            let signals: Vec<&Signal> = shared.iter().map(|p| &p.state).collect();
            wait_any(&signals, || shared.iter().any(|p| p.revoke_asked())).await
        }
    }

    /// Calls `callback` once, on the callback thread, when a revocation is requested while the
    /// lease is held or suspended (Curator's `RevocationListener`); not after it ended.
    pub fn on_revoke(&self, callback: impl FnOnce() + Send + 'static) {
        self.on_revoke_in(runtime::CallbackQueue::process(), callback)
    }

    /// [`Lease::on_revoke`] with the callback run on `queue` (a client's own callback thread).
    pub fn on_revoke_in(
        &self,
        queue: runtime::CallbackQueue,
        callback: impl FnOnce() + Send + 'static,
    ) {
        let shared = self.shared_parts();
        runtime::spawn(async move {
            // A revocation request wakes the state's signal too.
            let signals: Vec<&Signal> = shared.iter().map(|p| &p.state).collect();
            let asked = || shared.iter().any(|p| p.revoke_asked());
            let ended = || shared.iter().any(|p| p.is_finished());
            wait_any(&signals, || asked() || ended()).await;
            if asked() && !ended() {
                queue.run(callback);
            }
        });
    }

    /// Whether this lease is an election's leadership (its messages say "leadership").
    pub(crate) fn is_leadership(&self) -> bool {
        let parts = self.shared_parts();
        !parts.is_empty() && parts.iter().all(|p| p.is_leadership())
    }

    pub(crate) fn shared_parts(&self) -> Vec<Arc<LeaseShared>> {
        self.parts.iter().map(|p| p.shared.to_arc()).collect()
    }

    /// Releases the lease: the node is deleted (members in reverse order for a multi-lock), or a
    /// re-entrant hold count goes down. Releasing a lost lease succeeds with `WasLost`.
    pub fn release(
        mut self,
    ) -> impl std::future::Future<Output = Result<Released>> + Send + 'static {
        // The re-entrant count-down here, and the release that goes to ZooKeeper boxed: this
        // future stays a few words, where an `async fn` would be the size of the whole release,
        // copied by every caller that awaits it (bench s2, issue 17). Dropped unawaited, the
        // lease in it releases in the background as a dropped lease does.
        let counted = self.count_down_reentrant();
        async move {
            if counted {
                return Ok(Released::StillHeld);
            }
            let parts = std::mem::take(&mut self.parts);
            in_runtime(release_parts(parts)).await
        }
    }

    /// Blocking twin of [`Lease::release`].
    pub fn blocking_release(mut self) -> Result<Released> {
        if self.count_down_reentrant() {
            return Ok(Released::StillHeld);
        }
        let parts = std::mem::take(&mut self.parts);
        runtime::block_on(release_parts(parts))
    }

    /// Releases here and now when this only counts a re-entrant hold down (no I/O, no runtime):
    /// `Ok(StillHeld)`; else the lease back, to release as usual. For faces that would
    /// otherwise let go of their interpreter lock around a release that does not wait.
    #[doc(hidden)]
    pub fn release_counted(mut self) -> std::result::Result<Released, Lease> {
        if self.count_down_reentrant() {
            return Ok(Released::StillHeld);
        }
        Err(self)
    }

    /// Gives up this handle without releasing: the lock stays held (and its lock value keeps
    /// counting the hold) until the client closes, the session ends or the process exits.
    /// For faces whose objects are collected by a garbage collector, where dropping the last
    /// reference must not release a lock the program may still be working under (Curator and
    /// kazoo keep such locks too).
    pub fn detach(mut self) {
        self.parts = Parts::default();
    }

    /// The common re-entrant case without a trip to the runtime: one member whose lock value
    /// holds it more than once only counts down.
    fn count_down_reentrant(&mut self) -> bool {
        let Some(Part {
            shared,
            owner: Some(owner),
        }) = self.parts.single()
        else {
            return false;
        };
        if owner.count_down_if_shared(shared) {
            self.parts = Parts::default();
            return true;
        }
        false
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if !self.parts.is_empty() && !self.count_down_reentrant() {
            let parts = std::mem::take(&mut self.parts);
            runtime::spawn(async move {
                let _ = release_parts(parts).await;
            });
        }
    }
}

fn combined_state(shared: &[Arc<LeaseShared>]) -> LeaseState {
    LeaseState::combine(shared.iter().map(|p| p.state()))
}

async fn release_parts(parts: Parts) -> Result<Released> {
    let mut outcome = Released::StillHeld;
    let mut first_error = None;
    for part in parts.into_reversed() {
        let result = match &part.owner {
            Some(owner) => owner.clone().release_hold(part.shared.to_arc()).await,
            None => part.shared.to_arc().delete().await,
        };
        match result {
            Ok(Released::WasLost) => outcome = Released::WasLost,
            Ok(Released::Released) if outcome != Released::WasLost => outcome = Released::Released,
            Ok(_) => {}
            Err(e) => first_error = first_error.or(Some(e)),
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(outcome),
    }
}
