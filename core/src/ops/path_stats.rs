//! Statistics per lock path (issue 37, point 4: "which job holds the table lock too long"),
//! kept beside the client-wide ones (`stats`) and bounded: at most `Options::path_stats_limit`
//! paths get series of their own; an acquire on any later path is counted in one overflow
//! series ([`PathStats::path`] `None`), and `folded` says how many acquires went there. So the
//! memory stays bounded whatever paths a program passes: the table never grows past its limit.
//! A full table first makes room by evicting its least recently used idle path (none held, no
//! acquire or lease using its counters), whose counts move into the overflow series: a program
//! that passes thousands of short-lived paths still gets a series of its own for the lock it
//! holds for long (issue 51); only when every path is busy does a new one fold.
//!
//! The cost on the acquire and release path: one lookup of the path (a read lock and a hash of
//! the path, no allocation) when an acquire goes to ZooKeeper; then relaxed atomic adds, and a
//! short uncontended lock on the path's list of hold start times at each hold's start and end
//! (its room is kept after the first hold, so a known path allocates nothing per cycle). A path
//! allocates once, when it first enters the table.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use crate::ops::outcome::Outcome;

/// Why a lease turned lost, as counted per path: the lost reason's first word for the reasons
/// that have one (`broken`, `max-hold`, `conflict`), `session` for every other (the session
/// expired or was closed, or our node was gone after a reconnect).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossReason {
    /// The node was deleted by someone else (`zklock break`, an operator).
    Broken,
    /// The lock's maximum hold ended the lease.
    MaxHold,
    /// A node of another library's layout appeared beside ours.
    Conflict,
    /// The session expired or was closed, or our node was gone after a reconnect.
    Session,
}

impl LossReason {
    /// Every reason, in the order statistics list them.
    pub const ALL: [LossReason; 4] = [
        LossReason::Broken,
        LossReason::MaxHold,
        LossReason::Conflict,
        LossReason::Session,
    ];

    /// The reason word (the lost reason's first word, and the `reason` label).
    pub const fn as_str(self) -> &'static str {
        match self {
            LossReason::Broken => "broken",
            LossReason::MaxHold => "max-hold",
            LossReason::Conflict => "conflict",
            LossReason::Session => "session",
        }
    }

    /// The reason of a lost reason's text (without its `lease on <node> lost: `).
    pub(crate) fn of(why: &str) -> LossReason {
        let word = why.split(':').next().unwrap_or("");
        [
            LossReason::Broken,
            LossReason::MaxHold,
            LossReason::Conflict,
        ]
        .into_iter()
        .find(|r| r.as_str() == word)
        .unwrap_or(LossReason::Session)
    }
}

/// The live counters of one path (or of the overflow series).
#[derive(Default)]
pub(crate) struct PathCounters {
    outcomes: [AtomicU64; 4],
    wait_sum_us: AtomicU64,
    lost: [AtomicU64; 4],
    /// The start of every hold current now (its length is the held count): few per path.
    holds: Mutex<Vec<Instant>>,
    /// The table's clock at the last lookup of this path: the least recent idle path is the
    /// one evicted to make room.
    used: AtomicU64,
}

impl PathCounters {
    pub(crate) fn wait_ended(&self, outcome: Outcome, waited: Duration) {
        let i = match outcome {
            Outcome::Acquired => {
                let us = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
                self.wait_sum_us.fetch_add(us, Relaxed);
                0
            }
            Outcome::TimedOut => 1,
            Outcome::Cancelled => 2,
            Outcome::Failed => 3,
        };
        self.outcomes[i].fetch_add(1, Relaxed);
    }

    pub(crate) fn hold_started(&self, since: Instant) {
        self.holds.lock().unwrap().push(since);
    }

    /// A hold counted by `hold_started(since)` ended (once per hold). Holds that started at
    /// the same instant are alike, so removing any one of them is right.
    pub(crate) fn hold_ended(&self, since: Instant) {
        let mut holds = self.holds.lock().unwrap();
        if let Some(i) = holds.iter().position(|s| *s == since) {
            holds.swap_remove(i);
        }
    }

    pub(crate) fn lost(&self, reason: LossReason) {
        let i = LossReason::ALL
            .iter()
            .position(|r| *r == reason)
            .unwrap_or(3);
        self.lost[i].fetch_add(1, Relaxed);
    }

    /// Adds an evicted path's counts to these (the overflow series'); its holds are none.
    fn absorb(&self, other: &PathCounters) {
        let load = |a: &AtomicU64| a.load(Relaxed);
        for (mine, theirs) in self.outcomes.iter().zip(&other.outcomes) {
            mine.fetch_add(load(theirs), Relaxed);
        }
        self.wait_sum_us
            .fetch_add(load(&other.wait_sum_us), Relaxed);
        for (mine, theirs) in self.lost.iter().zip(&other.lost) {
            mine.fetch_add(load(theirs), Relaxed);
        }
    }

    fn acquires(&self) -> u64 {
        self.outcomes.iter().map(|a| a.load(Relaxed)).sum()
    }

    fn snapshot(&self, path: Option<&str>, now: Instant) -> PathStats {
        let load = |a: &AtomicU64| a.load(Relaxed);
        let holds = self.holds.lock().unwrap();
        let oldest = holds
            .iter()
            .min()
            .map(|s| now.saturating_duration_since(*s));
        PathStats {
            path: path.map(str::to_owned),
            acquired: load(&self.outcomes[0]),
            timed_out: load(&self.outcomes[1]),
            cancelled: load(&self.outcomes[2]),
            failed: load(&self.outcomes[3]),
            wait_sum: Duration::from_micros(load(&self.wait_sum_us)),
            lost: std::array::from_fn(|i| (LossReason::ALL[i], load(&self.lost[i]))),
            held: holds.len() as u64,
            oldest_hold: oldest.unwrap_or_default(),
        }
    }
}

/// The table of one client's paths, bounded by its limit.
pub(crate) struct PathTable {
    limit: usize,
    paths: RwLock<HashMap<Box<str>, Arc<PathCounters>>>,
    /// Made at the first fold: a client that never passes its limit keeps no heap here (an
    /// empty map allocates nothing either; memory per idle session, bench s6).
    overflow: OnceLock<Arc<PathCounters>>,
    folded: AtomicU64,
    /// Counts lookups: each path keeps the value of its last one.
    clock: AtomicU64,
}

impl PathTable {
    pub(crate) fn new(limit: usize) -> PathTable {
        PathTable {
            limit,
            paths: RwLock::new(HashMap::new()),
            overflow: OnceLock::new(),
            folded: AtomicU64::new(0),
            clock: AtomicU64::new(0),
        }
    }

    /// The counters of `path` for one acquire: its own when it has (or gets) a place in the
    /// table, else the overflow series (and the acquire counts as folded). `None` when per-path
    /// statistics are off (a limit of 0).
    pub(crate) fn acquire_on(&self, path: &str) -> Option<Arc<PathCounters>> {
        self.counters_of(path, true)
    }

    /// The counters of `path` for a hold (a lease made without a counted acquire, a
    /// semaphore's): as [`PathTable::acquire_on`], but nothing counts as folded.
    pub(crate) fn hold_on(&self, path: &str) -> Option<Arc<PathCounters>> {
        self.counters_of(path, false)
    }

    fn counters_of(&self, path: &str, acquire: bool) -> Option<Arc<PathCounters>> {
        if self.limit == 0 {
            return None;
        }
        let now = self.clock.fetch_add(1, Relaxed);
        if let Some(known) = self.paths.read().unwrap().get(path) {
            known.used.store(now, Relaxed);
            return Some(known.clone());
        }
        let mut paths = self.paths.write().unwrap();
        if let Some(known) = paths.get(path) {
            known.used.store(now, Relaxed);
            return Some(known.clone());
        }
        if paths.len() >= self.limit {
            self.evict_one(&mut paths);
        }
        if paths.len() < self.limit {
            let counters = Arc::new(PathCounters::default());
            counters.used.store(now, Relaxed);
            paths.insert(path.into(), counters.clone());
            return Some(counters);
        }
        if acquire {
            self.folded.fetch_add(1, Relaxed);
        }
        Some(self.overflow.get_or_init(Arc::default).clone())
    }

    /// Removes the least recently used idle path, if any, its counts moved to the overflow
    /// series. Idle: the table's is the only reference to its counters (no acquire, lease or
    /// hold of it is live, so nothing can count on it any more) and it has no hold. One pass
    /// over the table, only when a new path meets a full one.
    fn evict_one(&self, paths: &mut HashMap<Box<str>, Arc<PathCounters>>) {
        let idle = paths
            .iter()
            .filter(|(_, c)| Arc::strong_count(c) == 1 && c.holds.lock().unwrap().is_empty())
            .min_by_key(|(_, c)| c.used.load(Relaxed))
            .map(|(path, _)| path.clone());
        let Some(counters) = idle.and_then(|path| paths.remove(&path)) else {
            return;
        };
        self.folded.fetch_add(counters.acquires(), Relaxed);
        self.overflow.get_or_init(Arc::default).absorb(&counters);
    }

    pub(crate) fn snapshot(&self) -> PathStatsSnapshot {
        let now = Instant::now();
        let mut paths: Vec<PathStats> = self
            .paths
            .read()
            .unwrap()
            .iter()
            .map(|(path, c)| c.snapshot(Some(path), now))
            .collect();
        paths.sort_by(|a, b| a.path.cmp(&b.path));
        let folded = self.folded.load(Relaxed);
        PathStatsSnapshot {
            limit: self.limit,
            overflow: self.overflow.get().map(|o| o.snapshot(None, now)),
            paths,
            folded,
        }
    }
}

/// What one path's statistics say ([`crate::Client::path_stats`]), counted since the client
/// was made: the same outcomes as [`crate::Stats`], for acquires on this path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathStats {
    /// The lock or election path; `None` for the overflow series, where the acquires on the
    /// paths past the limit are counted.
    pub path: Option<String>,
    /// Acquires that got the lock.
    pub acquired: u64,
    /// Acquires whose deadline passed (a try that found the lock taken included).
    pub timed_out: u64,
    /// Acquires cancelled before they got the lock.
    pub cancelled: u64,
    /// Acquires that failed otherwise (connection, permission, ...).
    pub failed: u64,
    /// The sum of the waits of the acquired ones (`acquired` is their count).
    pub wait_sum: Duration,
    /// Leases lost, by reason (every reason, in [`LossReason::ALL`]'s order).
    pub lost: [(LossReason, u64); 4],
    /// Leases held now on this path (nodes of ours).
    pub held: u64,
    /// How long the oldest of those has been held (zero when none is).
    pub oldest_hold: Duration,
}

/// Every path's statistics ([`crate::Client::path_stats`]), sorted by path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PathStatsSnapshot {
    /// The client's `path_stats_limit` (0: off, nothing is kept).
    pub limit: usize,
    /// The paths with statistics of their own, sorted by path.
    pub paths: Vec<PathStats>,
    /// The overflow series, once an acquire or a hold on a path past the limit went to it.
    pub overflow: Option<PathStats>,
    /// Acquires on paths past the limit, counted in `overflow`.
    pub folded: u64,
}

/// Counts this thread's allocations, for the test that a known path allocates nothing per cycle
/// (the lib's unit tests only).
#[cfg(test)]
mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        pub(super) static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    }

    struct Counting;

    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
            System.alloc(layout)
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            System.dealloc(ptr, layout)
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, size: usize) -> *mut u8 {
            let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
            System.realloc(ptr, layout, size)
        }
    }

    #[global_allocator]
    static COUNTING: Counting = Counting;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_path_allocates_nothing_per_acquire_and_release_cycle() {
        let table = PathTable::new(4);
        let cycle = |path: &str| {
            let c = table.acquire_on(path).unwrap();
            c.wait_ended(Outcome::Acquired, Duration::from_micros(300));
            let since = Instant::now();
            c.hold_started(since);
            table.hold_on(path).unwrap();
            c.hold_ended(since);
        };
        let count = || counting::ALLOCATIONS.with(|n| n.get());
        let first = count();
        cycle("/known"); // the path enters the table, its list of holds gets its room
        assert!(count() > first, "the count sees a new path's allocations");
        let before = counting::ALLOCATIONS.with(|n| n.get());
        for _ in 0..1000 {
            cycle("/known");
        }
        let after = counting::ALLOCATIONS.with(|n| n.get());
        assert_eq!(
            after - before,
            0,
            "allocations in 1000 cycles of a known path"
        );
    }

    #[test]
    fn paths_past_the_limit_fold_into_one_overflow_series_while_every_known_path_is_busy() {
        let table = PathTable::new(2);
        let mut busy = Vec::new();
        for i in 0..10 {
            let c = table.acquire_on(&format!("/p{}", i % 5)).unwrap();
            c.wait_ended(Outcome::Acquired, Duration::from_millis(2));
            busy.push(c); // a lease still using it: the path cannot be evicted
        }
        let s = table.snapshot();
        let names: Vec<_> = s.paths.iter().map(|p| p.path.as_deref().unwrap()).collect();
        assert_eq!(names, ["/p0", "/p1"]);
        assert_eq!((s.paths[0].acquired, s.paths[1].acquired), (2, 2));
        assert_eq!(s.folded, 6);
        let overflow = s.overflow.unwrap();
        assert_eq!((overflow.path, overflow.acquired), (None, 6));
        assert_eq!(s.paths[0].wait_sum, Duration::from_millis(4));
    }

    #[test]
    fn after_two_thousand_short_lived_paths_a_held_one_still_gets_a_series_of_its_own() {
        let table = PathTable::new(100);
        let long = table.hold_on("/jobs/nightly").unwrap();
        let since = Instant::now();
        long.hold_started(since);
        drop(long); // the lease keeps the hold counted; the table keeps the counters
        for i in 0..2000 {
            let c = table.acquire_on(&format!("/short/{i}")).unwrap();
            c.wait_ended(Outcome::Acquired, Duration::from_millis(1));
        }
        let again = table.hold_on("/jobs/other-long").unwrap();
        again.hold_started(since);
        let s = table.snapshot();
        let names: Vec<_> = s.paths.iter().filter_map(|p| p.path.as_deref()).collect();
        assert!(
            names.contains(&"/jobs/nightly"),
            "a held path is never evicted"
        );
        assert!(names.contains(&"/jobs/other-long"), "a new path found room");
        assert!(s.paths.len() <= 100, "the table stays within its limit");
        // Every acquire is counted once: in its path's series or, evicted, in the overflow.
        let own: u64 = s.paths.iter().map(|p| p.acquired).sum();
        let overflow = s
            .overflow
            .expect("evicted paths' counts moved to the overflow series");
        assert_eq!(own + overflow.acquired, 2000);
        assert_eq!(s.folded, overflow.acquired);
        let nightly = s
            .paths
            .iter()
            .find(|p| p.path.as_deref() == Some("/jobs/nightly"));
        assert_eq!(nightly.unwrap().held, 1);
    }

    #[test]
    fn a_limit_of_zero_keeps_nothing() {
        let table = PathTable::new(0);
        assert!(table.acquire_on("/a").is_none());
        assert_eq!(table.snapshot().paths.len(), 0);
    }

    #[test]
    fn held_counts_current_holds_and_the_oldest_one_ages() {
        let c = PathCounters::default();
        let early = Instant::now() - Duration::from_secs(5);
        let late = Instant::now();
        c.hold_started(early);
        c.hold_started(late);
        let s = c.snapshot(Some("/x"), Instant::now());
        assert_eq!(s.held, 2);
        assert!(s.oldest_hold >= Duration::from_secs(5));
        c.hold_ended(early);
        let s = c.snapshot(Some("/x"), Instant::now());
        assert_eq!(s.held, 1);
        assert!(s.oldest_hold < Duration::from_secs(5));
        c.hold_ended(late);
        assert_eq!(c.snapshot(None, Instant::now()).oldest_hold, Duration::ZERO);
    }

    #[test]
    fn a_lost_reason_is_counted_by_its_first_word() {
        assert_eq!(LossReason::of("broken: deleted"), LossReason::Broken);
        assert_eq!(
            LossReason::of("max-hold: held for 1 s"),
            LossReason::MaxHold
        );
        assert_eq!(LossReason::of("conflict: a node"), LossReason::Conflict);
        assert_eq!(LossReason::of("session expired"), LossReason::Session);
        let c = PathCounters::default();
        c.lost(LossReason::MaxHold);
        let lost = c.snapshot(None, Instant::now()).lost;
        assert_eq!(lost[1], (LossReason::MaxHold, 1));
        assert_eq!(lost[0], (LossReason::Broken, 0));
    }
}
