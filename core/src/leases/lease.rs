//! Leases: what a successful acquire returns. A lease knows its fencing token (the czxid of its
//! node), its node, its state, and fires its lost signal exactly once.

mod parts;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use crate::base::error::{Error, ErrorKind, Result};
use crate::base::signal::{wait_any, Signal};
use crate::base::state::{LeaseState, Released};
use crate::engine::nodes::delete_node;
use crate::ops::observe;
use crate::ops::runtime::{self, on_runtime};
use crate::sessions::own_watch::{OwnWatch, Watched};
use crate::sessions::session::{Member, Session};

use parts::Parts;
pub(crate) use parts::{NodeRef, Part, Reentry};

/// One lock node we own. Shared by the re-entrant holds of one lock value.
pub(crate) struct LeaseShared {
    session: Arc<Session>,
    registration: u64,
    node: String,
    token: i64,
    /// A `LeaseState` as its discriminant.
    state: Signal,
    released: AtomicBool,
    /// What few leases ever need (riders, a lost reason): boxed when first needed, so that
    /// every held lock does not carry its room (memory per held lock, bench s6).
    rare: Mutex<Option<Box<Rare>>>,
    /// The watch on our own node (see `own_watch`); dropped before we delete the node ourselves.
    pub(crate) own_watch: Mutex<OwnWatch>,
    /// When we got the node, for the hold time; `hold_counted` turns true once the end of the
    /// hold (release or loss, whichever comes first) was counted.
    since: std::time::Instant,
    hold_counted: AtomicBool,
    /// True once someone asked us to let go (Curator's revocation: our node's data
    /// `__REVOKE__`). Told through `state`'s signal rather than one of its own: its 40 bytes
    /// on every held lock (bench s6), for a wake-up that waiters on the state re-check.
    revoke: AtomicBool,
}

/// The rare part of a lease's node.
#[derive(Default)]
struct Rare {
    /// Nodes to delete with this one (a write node kept to cover a downgraded read, see rw).
    riders: Vec<Arc<LeaseShared>>,
    /// Why the lease was lost, once it was.
    lost_reason: Option<String>,
    /// Set on a read lease taken while our own write lease was held (a downgrade).
    downgrade_of: Option<String>,
    /// When a maximum hold ends the lease (`limit_hold`): `valid_until` is never later.
    hold_end: Option<std::time::Instant>,
}

/// The data that asks a holder to let go (Curator's `LockInternals.REVOKE_MESSAGE`, written by
/// its `Revoker.attemptRevoke` and by `zklock revoke`).
pub(crate) const REVOKE_MESSAGE: &[u8] = b"__REVOKE__";

impl LeaseShared {
    pub(crate) fn new(
        session: Arc<Session>,
        node: String,
        token: i64,
        downgrade_of: Option<String>,
    ) -> Arc<Self> {
        let lease = Arc::new_cyclic(|weak: &Weak<LeaseShared>| LeaseShared {
            session: session.clone(),
            registration: session.register(weak.clone()),
            node,
            token,
            state: Signal::new(LeaseState::Held as u8),
            released: AtomicBool::new(false),
            rare: Mutex::new(downgrade_of.map(|writer| {
                Box::new(Rare {
                    downgrade_of: Some(writer),
                    ..Rare::default()
                })
            })),
            own_watch: Mutex::new(OwnWatch::Idle),
            since: std::time::Instant::now(),
            hold_counted: AtomicBool::new(false),
            revoke: AtomicBool::new(false),
        });
        session.counters.hold_started();
        if session.is_dead() {
            lease.lose(
                session
                    .dead_reason()
                    .map(|e| e.message().to_owned())
                    .as_deref()
                    .unwrap_or("session closed"),
            );
        }
        let watched: Weak<dyn Watched> = Arc::downgrade(&lease) as Weak<LeaseShared>;
        session.own_watches.schedule(watched);
        lease
    }

    pub(crate) fn node(&self) -> &str {
        &self.node
    }

    pub(crate) fn token(&self) -> i64 {
        self.token
    }

    pub(crate) fn state(&self) -> LeaseState {
        LeaseState::from_u8(self.state.get())
    }

    /// The state at this instant: also lost when the session's lifeline deadline has passed and
    /// its task has not woken up yet (a holder resumed after a pause must not read `held`).
    pub(crate) fn current_state(&self) -> LeaseState {
        let state = self.state();
        if state.is_final() || !self.session.is_lost_now() {
            return state;
        }
        if !self.state().is_final() {
            let why = self.session.dead_reason().map(|e| e.message().to_owned());
            self.lose(why.as_deref().unwrap_or("session closed"));
        }
        self.state()
    }

    pub(crate) fn set_state(&self, new: LeaseState) {
        let old = self.state();
        if self
            .state
            .update(|s| (!LeaseState::from_u8(s).is_final()).then_some(new as u8))
        {
            let reason = self.lost_reason();
            // The reason without its "lease on <node> lost: " (the record names the node).
            let reason = reason
                .as_deref()
                .filter(|_| new == LeaseState::Lost)
                .map(|r| r.split_once(" lost: ").map_or(r, |(_, why)| why));
            observe::lease_state(&self.session.counters, &self.node, old, new, reason);
            if new.is_final() {
                self.end_hold();
            }
        }
    }

    /// Counts the end of the hold once, at its release or loss.
    fn end_hold(&self) {
        if !self.hold_counted.swap(true, Ordering::AcqRel) {
            self.session.counters.hold_ended(self.since);
        }
    }

    /// Released by us, or lost.
    pub(crate) fn is_finished(&self) -> bool {
        self.is_released() || self.state().is_final()
    }

    /// Drops the watch on our own node (the client queues its removal at once) and never
    /// watches again.
    pub(crate) fn stop_watching(&self) {
        let watch = std::mem::replace(&mut *self.own_watch.lock().unwrap(), OwnWatch::Stopped);
        drop(watch);
    }

    pub(crate) fn lose_unless_released(&self, why: &str) {
        if !self.is_released() {
            self.lose(why);
        }
    }

    pub(crate) fn lose(&self, why: &str) {
        if self.state().is_final() {
            return;
        }
        self.rare
            .lock()
            .unwrap()
            .get_or_insert_with(Box::default)
            .lost_reason
            .get_or_insert_with(|| format!("lease on {} lost: {why}", self.node));
        self.set_state(LeaseState::Lost);
        self.stop_watching();
    }

    pub(crate) fn lost_reason(&self) -> Option<String> {
        let rare = self.rare.lock().unwrap();
        rare.as_ref().and_then(|r| r.lost_reason.clone())
    }

    /// When the maximum hold ends this lease, if it has one.
    pub(crate) fn hold_end(&self) -> Option<std::time::Instant> {
        self.rare.lock().unwrap().as_ref().and_then(|r| r.hold_end)
    }

    /// Until when no one else can hold this node: the session's proof of life, cut at the end
    /// of the maximum hold (after which the node is deleted and the next holder may proceed).
    pub(crate) fn valid_until(&self) -> Option<std::time::Instant> {
        let proof = self.session.valid_until()?.into_std();
        Some(self.hold_end().map_or(proof, |end| end.min(proof)))
    }

    /// The write node this read lease was taken as a downgrade of, if it was.
    pub(crate) fn downgrade_of(&self) -> Option<String> {
        let rare = self.rare.lock().unwrap();
        rare.as_ref().and_then(|r| r.downgrade_of.clone())
    }

    /// True once a revocation was requested.
    fn revoke_asked(&self) -> bool {
        self.revoke.load(Ordering::Acquire)
    }

    /// A node to delete with this one (a write node kept to cover a downgraded read).
    pub(crate) fn add_rider(&self, rider: Arc<LeaseShared>) {
        let mut rare = self.rare.lock().unwrap();
        rare.get_or_insert_with(Box::default).riders.push(rider);
    }

    pub(crate) fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// Deletes our node (and riders). Runs on the runtime. Retries across connection loss until
    /// the session dies, in which case the ephemeral node is gone anyway.
    pub(crate) async fn delete(self: Arc<Self>) -> Result<Released> {
        if self.released.swap(true, Ordering::AcqRel) {
            return Err(Error::new(
                ErrorKind::NotHeld,
                format!("the lease on {} was already released", self.node),
            ));
        }
        let was_lost = self.state() == LeaseState::Lost;
        self.set_state(LeaseState::Released);
        self.session.deregister(self.registration);
        let riders = match self.rare.lock().unwrap().as_mut() {
            Some(rare) => std::mem::take(&mut rare.riders),
            None => Vec::new(),
        };
        for rider in riders {
            Box::pin(rider.delete()).await.ok();
        }
        if was_lost {
            return Ok(Released::WasLost);
        }
        // Stop watching our node first: dropping the watcher queues its removal on the server
        // ahead of our delete, so the delete notifies only the next waiter.
        self.stop_watching();
        match delete_node(&self.session, &self.node).await {
            Ok(()) => Ok(Released::Released),
            Err(e)
                if e.kind() == crate::ErrorKind::SessionExpired
                    || e.kind() == crate::ErrorKind::Closed =>
            {
                Ok(Released::WasLost)
            }
            Err(e) => Err(e),
        }
    }

    fn is_released(&self) -> bool {
        self.released.load(Ordering::Acquire)
    }

    /// Ends the hold after `limit` unless it ended before (a maximum hold, CURATOR-28): the
    /// runtime's timer turns the lease lost (reason `max-hold`) and then deletes its node, so
    /// a holder that hangs while its process stays connected cannot keep the lock. Lost comes
    /// first: the next holder can only get the lock after the deletion, by which time the
    /// signal was given.
    pub(crate) fn limit_hold(self: &Arc<Self>, limit: std::time::Duration) {
        // One end for the timer and for `valid_until`, counted from when the node became ours:
        // the lease reads valid no later than the moment the timer takes it away.
        let end = self.since + limit;
        self.rare
            .lock()
            .unwrap()
            .get_or_insert_with(Box::default)
            .hold_end = Some(end);
        let lease = Arc::downgrade(self);
        runtime::spawn(async move {
            tokio::time::sleep_until(tokio::time::Instant::from_std(end)).await;
            let Some(lease) = lease.upgrade() else {
                return;
            };
            if lease.is_finished() {
                return;
            }
            lease.lose(&format!(
                "{MAX_HOLD}: held for its maximum of {}",
                crate::base::text::duration(limit)
            ));
            // Lost was logged with its reason; a failed delete leaves an ephemeral node that
            // goes with the session, as after any loss.
            let _ = delete_node(&lease.session, &lease.node).await;
        });
    }
}

/// The reason word of a lease ended by its maximum hold (`LeaseShared::limit_hold`).
pub const MAX_HOLD: &str = "max-hold";

impl Member for LeaseShared {
    fn node(&self) -> &str {
        LeaseShared::node(self)
    }
    fn state(&self) -> LeaseState {
        LeaseShared::state(self)
    }
    fn set_state(&self, state: LeaseState) {
        LeaseShared::set_state(self, state)
    }
    fn lose(&self, why: &str) {
        LeaseShared::lose(self, why)
    }
    fn let_go(&self) -> bool {
        self.is_released()
    }
}

impl Watched for LeaseShared {
    fn slot(&self) -> &Mutex<OwnWatch> {
        &self.own_watch
    }
    fn node(&self) -> &str {
        LeaseShared::node(self)
    }
    fn is_finished(&self) -> bool {
        LeaseShared::is_finished(self)
    }
    fn zk(&self) -> Result<zklock_wire::client::Client> {
        self.session.zk()
    }
    fn recovery(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>> + Send>> {
        let session = self.session.clone();
        Box::pin(async move { session.recover(None, "watch").await })
    }
    fn deleted_by_someone_else(&self) {
        self.stop_watching();
        self.lose_unless_released("our lock node was deleted by someone else");
    }
    fn data_seen(&self, data: &[u8]) {
        if data == REVOKE_MESSAGE && !self.revoke.swap(true, Ordering::AcqRel) {
            self.state.wake();
        }
    }
}

/// A held lock. Dropping a lease releases it in the background; call [`Lease::release`] to
/// know when the node is gone.
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
            Box::pin(on_runtime(release_parts(parts))).await
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
