//! One lock node we own (`LeaseShared`): its session, token, state and lost signal, its own-node
//! watch and maximum hold; shared by the re-entrant holds of one lock value and by the leases
//! (`lease`) and their members (`parts`) that reach it. A file of its own so that `parts` can
//! name a node without naming the lease that holds the parts (no circle).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use crate::base::clock::{self, BootInstant};
use crate::base::error::{Error, ErrorKind, Result};
use crate::base::signal::Signal;
use crate::base::state::{LeaseState, Released};
use crate::engine::nodes::{delete_node, delete_node_marked};
use crate::ops::observe;
use crate::ops::path_stats::{LossReason, PathCounters};
use crate::ops::runtime;
use crate::sessions::own_watch::{OwnWatch, Watched};
use crate::sessions::session::{Member, Session};

/// One lock node we own. Shared by the re-entrant holds of one lock value.
pub(crate) struct LeaseShared {
    session: Arc<Session>,
    registration: u64,
    node: String,
    token: i64,
    /// A `LeaseState` as its discriminant (`lease` waits on it for a state or a revoke).
    pub(crate) state: Signal,
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
    /// The lock path's own statistics (or the overflow series'); `None` when they are off.
    path_stats: Option<Arc<PathCounters>>,
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
    /// `Lease::extend` moves it, up to `hold_ceiling`. On the boot clock (`base::clock`), so a
    /// suspend cannot stretch it (issue 50, part 3).
    hold_end: Option<BootInstant>,
    /// The latest `hold_end` an extension may reach (the lock's `hold_ceiling`), if any.
    hold_ceiling: Option<BootInstant>,
    /// When the node became ours on the boot clock, taken when the maximum hold was set (right
    /// after the acquire): the durations in its messages count a later suspend.
    hold_start: Option<BootInstant>,
    /// The lock path on which a clean release writes its marker (a lock with a lock-delay).
    release_marker_on: Option<String>,
    /// Set on an election's node once it leads (`Leaderships::record`): what the holder holds
    /// is a leadership, and the messages a person reads say so (issue 51).
    leadership: bool,
}

/// The data that asks a holder to let go (Curator's `LockInternals.REVOKE_MESSAGE`, written by
/// its `Revoker.attemptRevoke` and by `zklock revoke`).
pub(crate) const REVOKE_MESSAGE: &[u8] = b"__REVOKE__";

/// How long a maximum hold's timer (and its warning's) sleeps at most before it looks at the
/// boot clock again: how late, after a suspend, the node of an ended hold goes. Longer than the
/// lifeline's `MAX_SLEEP` because nobody else can hold before the node goes, and a state read
/// says lost at once; a timer per held lock wakes only once a second.
pub(crate) const HOLD_STEP: std::time::Duration = std::time::Duration::from_secs(1);

impl LeaseShared {
    /// `lock_path`: the lock (or election, or semaphore) path whose statistics count the hold.
    pub(crate) fn new(
        session: Arc<Session>,
        lock_path: &str,
        node: String,
        token: i64,
        downgrade_of: Option<String>,
    ) -> Arc<Self> {
        let since = std::time::Instant::now();
        let path_stats = session.counters.paths.hold_on(lock_path);
        if let Some(p) = &path_stats {
            p.hold_started(since);
        }
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
            since,
            hold_counted: AtomicBool::new(false),
            path_stats,
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
        if state.is_final() {
            return state;
        }
        if let Some(end) = self.hold_end().filter(|e| e.remaining().is_zero()) {
            // The maximum hold ended and its timer has not woken yet (a resumed holder).
            self.end_max_hold(end);
            return self.state();
        }
        if !self.session.is_lost_now() {
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
            if let (LeaseState::Lost, Some(p)) = (new, &self.path_stats) {
                p.lost(LossReason::of(reason.unwrap_or("")));
            }
            if new.is_final() {
                self.end_hold();
            }
        }
    }

    /// Counts the end of the hold once, at its release or loss.
    fn end_hold(&self) {
        if !self.hold_counted.swap(true, Ordering::AcqRel) {
            self.session.counters.hold_ended(self.since);
            if let Some(p) = &self.path_stats {
                p.hold_ended(self.since);
            }
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

    /// Marks this node as an election's leadership (see `Rare::leadership`).
    pub(crate) fn mark_leadership(&self) {
        self.rare
            .lock()
            .unwrap()
            .get_or_insert_with(Box::default)
            .leadership = true;
    }

    /// Whether this node is an election's leadership.
    pub(crate) fn is_leadership(&self) -> bool {
        self.rare
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|r| r.leadership)
    }

    pub(crate) fn lost_reason(&self) -> Option<String> {
        let rare = self.rare.lock().unwrap();
        rare.as_ref().and_then(|r| r.lost_reason.clone())
    }

    /// When the maximum hold ends this lease, if it has one.
    pub(crate) fn hold_end(&self) -> Option<BootInstant> {
        self.rare.lock().unwrap().as_ref().and_then(|r| r.hold_end)
    }

    /// When the node became ours, on the boot clock (converted now from `since`: right unless
    /// the machine was suspended since, so kept as `hold_start` when a maximum hold is set).
    fn since_boot(&self) -> BootInstant {
        BootInstant::from_past(self.since)
    }

    /// `hold_start`, or `since_boot` for a lease without a maximum hold.
    fn hold_start(&self) -> BootInstant {
        let kept = self
            .rare
            .lock()
            .unwrap()
            .as_ref()
            .and_then(|r| r.hold_start);
        kept.unwrap_or_else(|| self.since_boot())
    }

    /// Ends a maximum hold that ended at `end`, unless the lease ended before: lost first
    /// (reason `max-hold`), then the node is deleted, so the next holder can only get the lock
    /// after the signal. A failed delete leaves an ephemeral node that goes with the session, as
    /// after any loss. The timer and a state read may both get here: the second delete finds
    /// no node.
    fn end_max_hold(&self, end: BootInstant) {
        if self.state().is_final() {
            return;
        }
        self.lose(&format!(
            "{MAX_HOLD}: held for its maximum of {}",
            crate::base::text::duration(end - self.hold_start())
        ));
        let (session, node) = (self.session.clone(), self.node.clone());
        runtime::spawn(async move {
            let _ = delete_node(&session, &node).await;
        });
    }

    /// Moves the end of the maximum hold to `to` (never earlier than it is), within the
    /// ceiling: the new end, or what refused it (no maximum hold, past the ceiling).
    pub(crate) fn extend_hold(&self, to: BootInstant) -> Result<BootInstant, String> {
        self.move_hold(to, true)
    }

    /// What [`LeaseShared::extend_hold`] would do, without doing it.
    pub(crate) fn extend_hold_checked(&self, to: BootInstant) -> Result<BootInstant, String> {
        self.move_hold(to, false)
    }

    fn move_hold(&self, to: BootInstant, apply: bool) -> Result<BootInstant, String> {
        let mut rare = self.rare.lock().unwrap();
        let Some(rare) = rare.as_mut().filter(|r| r.hold_end.is_some()) else {
            return Err(
                "this lease has no maximum hold to extend (set max_hold on the lock)".into(),
            );
        };
        let end = rare.hold_end.expect("filtered").max(to);
        if let Some(ceiling) = rare.hold_ceiling.filter(|c| end > *c) {
            let since = rare.hold_start.unwrap_or_else(|| self.since_boot());
            return Err(format!(
                "an extension to {} after the acquire is past the lock's hold ceiling of {}",
                crate::base::text::duration(end - since),
                crate::base::text::duration(ceiling - since)
            ));
        }
        if apply {
            rare.hold_end = Some(end);
        }
        Ok(end)
    }

    /// Until when no one else can hold this node: the session's proof of life, cut at the end
    /// of the maximum hold (after which the node is deleted and the next holder may proceed).
    pub(crate) fn valid_until(&self) -> Option<std::time::Instant> {
        // Converted from the boot clock at this read: right until the next suspend.
        let proof = self.session.valid_until()?;
        Some(self.hold_end().map_or(proof, |end| end.min(proof)).to_std())
    }

    /// The time left until `valid_until`, measured on the boot clock (`base::clock`) for the
    /// proof: what a suspend cannot make look longer than it is.
    pub(crate) fn time_left(&self) -> Option<std::time::Duration> {
        let proof = self.session.valid_until()?;
        Some(
            self.hold_end()
                .map_or(proof, |end| end.min(proof))
                .remaining(),
        )
    }

    /// A clean release of this node writes its marker on the lock path `dir`, in the same
    /// multi as the delete (a lock with a lock-delay).
    pub(crate) fn mark_release_on(&self, dir: &str) {
        let mut rare = self.rare.lock().unwrap();
        rare.get_or_insert_with(Box::default).release_marker_on = Some(dir.to_owned());
    }

    /// The write node this read lease was taken as a downgrade of, if it was.
    pub(crate) fn downgrade_of(&self) -> Option<String> {
        let rare = self.rare.lock().unwrap();
        rare.as_ref().and_then(|r| r.downgrade_of.clone())
    }

    /// True once a revocation was requested.
    pub(crate) fn revoke_asked(&self) -> bool {
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
        let marker_on = self
            .rare
            .lock()
            .unwrap()
            .as_ref()
            .and_then(|r| r.release_marker_on.clone());
        let deleted = match marker_on {
            Some(dir) => delete_node_marked(&self.session, &self.node, &dir).await,
            None => delete_node(&self.session, &self.node).await,
        };
        match deleted {
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
    pub(crate) fn limit_hold(
        self: &Arc<Self>,
        limit: std::time::Duration,
        ceiling: Option<std::time::Duration>,
    ) {
        // One end for the timer and for `valid_until`, counted from when the node became ours:
        // the lease reads valid no later than the moment the timer takes it away.
        let since = self.since_boot();
        let end = since + limit;
        let ceiling = ceiling.map(|c| since + c.max(limit));
        self.limit_hold_until(end, ceiling);
    }

    /// Ends the hold at `end` (the ceiling of its extensions at `ceiling`), as
    /// [`LeaseShared::limit_hold`]; a multi-lock's one end for all its members. The earlier
    /// end wins: a node whose hold already ends earlier keeps its end (and its ceiling is the
    /// earlier of the two).
    pub(crate) fn limit_hold_until(
        self: &Arc<Self>,
        end: BootInstant,
        ceiling: Option<BootInstant>,
    ) {
        {
            let mut rare = self.rare.lock().unwrap();
            let rare = rare.get_or_insert_with(Box::default);
            rare.hold_start.get_or_insert_with(|| self.since_boot());
            rare.hold_ceiling = match (rare.hold_ceiling, ceiling) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if rare.hold_end.is_some_and(|e| e <= end) {
                // Its own timer ends it first.
                return;
            }
            rare.hold_end = Some(end);
        }
        let lease = Arc::downgrade(self);
        runtime::spawn(async move {
            let mut end = end;
            let lease = loop {
                // Awake at least every `HOLD_STEP` to look at the boot clock: after a suspend
                // the node goes within that step (the lease already reads lost, see
                // `current_state`).
                clock::sleep_until(end, HOLD_STEP).await;
                let Some(lease) = lease.upgrade() else {
                    return;
                };
                if lease.is_finished() {
                    return;
                }
                // An extension moved the end while we slept: sleep again until the new one.
                match lease.hold_end() {
                    Some(moved) if moved > end => end = moved,
                    _ => break lease,
                }
            };
            lease.end_max_hold(end);
        });
    }
}

/// A lease dropped without a release (its holder's `Lease` releases on drop, so this is rare)
/// stops counting as demand for the session's proof of life.
impl Drop for LeaseShared {
    fn drop(&mut self) {
        self.session.deregister(self.registration);
    }
}

/// The reason word of a lease whose node someone else deleted (`Client::break_lock`,
/// `zklock break`, an operator's `deleteall`).
pub const BROKEN: &str = LossReason::Broken.as_str();

/// The reason word of a lease ended by its maximum hold (`LeaseShared::limit_hold`).
pub const MAX_HOLD: &str = LossReason::MaxHold.as_str();

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
        self.lose_unless_released(&format!(
            "{BROKEN}: our lock node was deleted by someone else"
        ));
    }
    fn data_seen(&self, data: &[u8]) {
        if data == REVOKE_MESSAGE && !self.revoke.swap(true, Ordering::AcqRel) {
            self.state.wake();
        }
    }
}
