//! Per-client lock statistics, counted once here for every face: acquires by outcome, wait and
//! hold times, leases held and acquires waiting now, lease state events, reconnects and session
//! expiries. Recording is a few relaxed atomic adds (no lock; one allocation, a histogram's
//! buckets at its first record), so the hot path of
//! an acquire pays next to nothing; a snapshot ([`Stats`]) reads the counters when asked.
//!
//! What counts: every acquire that goes to ZooKeeper (takes a node, or tries to) settles as
//! exactly one of `acquired`, `timed_out` (a try that found the lock taken included),
//! `cancelled` (a cancel token, or the acquire dropped before it settled) or `failed` (any other
//! error). A re-entrant acquire that only counts a hold up is not an acquire here: it neither
//! waits nor holds a node of its own. A multi-lock counts each member. The wait time is recorded
//! for acquired locks only (from the call to the lease); the hold time from the lease to its
//! release or loss.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::base::options::DEFAULT_PATH_STATS_LIMIT;
use crate::ops::outcome::Outcome;
use crate::ops::path_stats::PathTable;

/// Buckets per power of two: a recorded time lands in a bucket at most 1/4 wider than itself,
/// so a percentile is reported within 25% (as its bucket's upper bound, capped at the maximum).
const SUB: u32 = 4;
/// Enough powers of two for any microsecond count a `u64` holds.
const BUCKETS: usize = (64 * SUB) as usize;

/// A histogram of durations in fixed logarithmic buckets of microseconds. The buckets (2 KB)
/// are allocated at the first record (issue 34, point 3): a client that never takes a lock, or
/// whose acquires still wait, keeps 16 bytes here instead of 2 KB.
pub(crate) struct Histogram {
    buckets: OnceLock<Box<[AtomicU64; BUCKETS]>>,
    max_us: AtomicU64,
}

impl Histogram {
    fn new() -> Histogram {
        Histogram {
            buckets: OnceLock::new(),
            max_us: AtomicU64::new(0),
        }
    }

    pub(crate) fn record(&self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        // One atomic add (and a second only for a new maximum); the count is the buckets' sum,
        // made when asked. The first record allocates the buckets, once.
        let buckets = self
            .buckets
            .get_or_init(|| Box::new(std::array::from_fn(|_| AtomicU64::new(0))));
        buckets[bucket_of(us)].fetch_add(1, Relaxed);
        if us > self.max_us.load(Relaxed) {
            self.max_us.fetch_max(us, Relaxed);
        }
    }

    fn snapshot(&self) -> Percentiles {
        let counts: Vec<u64> = match self.buckets.get() {
            Some(buckets) => buckets.iter().map(|b| b.load(Relaxed)).collect(),
            None => Vec::new(),
        };
        let count: u64 = counts.iter().sum();
        let max = self.max_us.load(Relaxed);
        let at = |q: f64| -> Duration {
            if count == 0 {
                return Duration::ZERO;
            }
            // The smallest bucket whose cumulative count reaches the rank of `q`.
            let rank = ((q * count as f64).ceil() as u64).clamp(1, count);
            let mut seen = 0;
            for (i, c) in counts.iter().enumerate() {
                seen += c;
                if seen >= rank {
                    return Duration::from_micros(upper_bound(i).min(max));
                }
            }
            Duration::from_micros(max)
        };
        Percentiles {
            count,
            p50: at(0.50),
            p90: at(0.90),
            p99: at(0.99),
            max: Duration::from_micros(max),
        }
    }
}

/// The bucket of `us` microseconds: values below `SUB` have one each; above, each power of two
/// is split in `SUB` equal parts.
fn bucket_of(us: u64) -> usize {
    if us < u64::from(SUB) {
        return us as usize;
    }
    let log = 63 - us.leading_zeros(); // at least 2
    let sub = (us >> (log - SUB.trailing_zeros())) & u64::from(SUB - 1);
    ((log - SUB.trailing_zeros() + 1) * SUB + sub as u32) as usize
}

/// The largest value of bucket `i` (inverse of `bucket_of`).
fn upper_bound(i: usize) -> u64 {
    let i = i as u32;
    if i < SUB {
        return u64::from(i);
    }
    let shift = i / SUB - 1;
    let sub = u64::from(i % SUB);
    let low = (u64::from(SUB) + sub) << shift;
    low.saturating_add((1u64 << shift) - 1)
}

/// The last client id handed out ([`Counters::client`]); ids start at 1 and are never reused.
static LAST_CLIENT: AtomicU64 = AtomicU64::new(0);

/// The live counters of one client (shared by its sessions and leases). They also carry the
/// client's id, because every function that tells of a client's event (`observe`) is handed
/// them already: its log records say whose they are without another parameter everywhere.
pub(crate) struct Counters {
    /// The client's id ([`crate::Client::id`]), unique in the process.
    client: u64,
    acquired: AtomicU64,
    timed_out: AtomicU64,
    cancelled: AtomicU64,
    failed: AtomicU64,
    pub(crate) wait: Histogram,
    pub(crate) hold: Histogram,
    held: AtomicU64,
    waiting: AtomicU64,
    suspended: AtomicU64,
    lost: AtomicU64,
    reconnects: AtomicU64,
    session_expiries: AtomicU64,
    /// The same per lock path, bounded (`path_stats`).
    pub(crate) paths: PathTable,
}

impl Default for Counters {
    fn default() -> Counters {
        Counters::new(DEFAULT_PATH_STATS_LIMIT)
    }
}

impl Counters {
    /// Counters whose per-path table keeps at most `path_limit` paths (0: none).
    pub(crate) fn new(path_limit: usize) -> Counters {
        Counters {
            client: LAST_CLIENT.fetch_add(1, Relaxed) + 1,
            acquired: AtomicU64::new(0),
            timed_out: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            wait: Histogram::new(),
            hold: Histogram::new(),
            held: AtomicU64::new(0),
            waiting: AtomicU64::new(0),
            suspended: AtomicU64::new(0),
            lost: AtomicU64::new(0),
            reconnects: AtomicU64::new(0),
            session_expiries: AtomicU64::new(0),
            paths: PathTable::new(path_limit),
        }
    }
}

impl Counters {
    /// The id of the client these counters belong to.
    pub(crate) fn client(&self) -> u64 {
        self.client
    }

    pub(crate) fn wait_started(&self) {
        self.waiting.fetch_add(1, Relaxed);
    }

    /// An acquire counted by `wait_started` settled.
    pub(crate) fn wait_ended(&self, outcome: Outcome, waited: Duration) {
        self.waiting.fetch_sub(1, Relaxed);
        let counter = match outcome {
            Outcome::Acquired => {
                self.wait.record(waited);
                &self.acquired
            }
            Outcome::TimedOut => &self.timed_out,
            Outcome::Cancelled => &self.cancelled,
            Outcome::Failed => &self.failed,
        };
        counter.fetch_add(1, Relaxed);
    }

    pub(crate) fn hold_started(&self) {
        self.held.fetch_add(1, Relaxed);
    }

    /// A lease counted by `hold_started` was released or lost (called once per lease).
    pub(crate) fn hold_ended(&self, since: Instant) {
        self.held.fetch_sub(1, Relaxed);
        self.hold.record(since.elapsed());
    }

    pub(crate) fn suspended(&self) {
        self.suspended.fetch_add(1, Relaxed);
    }

    pub(crate) fn lost(&self) {
        self.lost.fetch_add(1, Relaxed);
    }

    pub(crate) fn reconnected(&self) {
        self.reconnects.fetch_add(1, Relaxed);
    }

    pub(crate) fn session_expired(&self) {
        self.session_expiries.fetch_add(1, Relaxed);
    }

    pub(crate) fn snapshot(&self) -> Stats {
        Stats {
            acquired: self.acquired.load(Relaxed),
            timed_out: self.timed_out.load(Relaxed),
            cancelled: self.cancelled.load(Relaxed),
            failed: self.failed.load(Relaxed),
            wait: self.wait.snapshot(),
            hold: self.hold.snapshot(),
            held: self.held.load(Relaxed),
            waiting: self.waiting.load(Relaxed),
            suspended: self.suspended.load(Relaxed),
            lost: self.lost.load(Relaxed),
            reconnects: self.reconnects.load(Relaxed),
            session_expiries: self.session_expiries.load(Relaxed),
        }
    }
}

/// Percentiles of a histogram of durations. Each percentile is the upper bound of the bucket it
/// falls in (buckets are at most 25% wide), never more than `max`, which is exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Percentiles {
    /// How many durations were recorded.
    pub count: u64,
    /// The median.
    pub p50: Duration,
    /// The 90th percentile.
    pub p90: Duration,
    /// The 99th percentile.
    pub p99: Duration,
    /// The longest, exact.
    pub max: Duration,
}

/// A snapshot of a client's lock statistics ([`crate::Client::stats`]), counted since the client
/// was made, across its sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Acquires that got the lock.
    pub acquired: u64,
    /// Acquires whose deadline passed (a try that found the lock taken included).
    pub timed_out: u64,
    /// Acquires cancelled by their caller (a cancel token, an abort signal, or the acquire
    /// dropped before it settled).
    pub cancelled: u64,
    /// Acquires that failed otherwise (connection, session, permission, ...).
    pub failed: u64,
    /// How long acquired locks were waited for.
    pub wait: Percentiles,
    /// How long leases were held, until released or lost.
    pub hold: Percentiles,
    /// Leases held now (nodes of ours; a re-entrant hold counts once).
    pub held: u64,
    /// Acquires waiting now.
    pub waiting: u64,
    /// Times a held lease turned `suspended` (the connection broke).
    pub suspended: u64,
    /// Times a lease turned `lost`.
    pub lost: u64,
    /// Times the connection came back to the same session after a break.
    pub reconnects: u64,
    /// Sessions that expired (told by the server, or declared so by the lifeline).
    pub session_expiries: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_falls_in_a_bucket_whose_upper_bound_is_within_a_quarter_of_it() {
        let mut last = 0;
        for us in (0..5000u64).chain([1 << 20, (1 << 40) + 12345, u64::MAX / 3, u64::MAX]) {
            let b = bucket_of(us);
            assert!(b < BUCKETS, "{us} -> bucket {b}");
            assert!(b >= last || us > 5000, "buckets grow with values");
            last = b;
            let upper = upper_bound(b);
            assert!(upper >= us, "{us} in bucket {b} with upper bound {upper}");
            assert!(
                upper as f64 <= us as f64 * 1.25 + 1.0,
                "{us}: bound {upper} too far"
            );
        }
    }

    #[test]
    fn percentiles_come_from_the_recorded_times_and_never_exceed_the_maximum() {
        let h = Histogram::new();
        for ms in 1..=100u64 {
            h.record(Duration::from_millis(ms));
        }
        let p = h.snapshot();
        assert_eq!(p.count, 100);
        assert_eq!(p.max, Duration::from_millis(100));
        let near = |d: Duration, ms: u64| {
            let want = ms as f64 * 1000.0;
            let got = d.as_micros() as f64;
            got >= want && got <= want * 1.25
        };
        assert!(near(p.p50, 50), "p50 {:?}", p.p50);
        assert!(near(p.p90, 90), "p90 {:?}", p.p90);
        assert!(p.p99 <= p.max && near(p.p99, 99), "p99 {:?}", p.p99);
        assert_eq!(Histogram::new().snapshot(), Percentiles::default());
    }

    #[test]
    fn each_client_gets_an_id_of_its_own() {
        let (a, b) = (Counters::default(), Counters::default());
        assert!(a.client() > 0 && b.client() > a.client());
    }

    #[test]
    fn each_outcome_has_its_counter_and_only_acquired_records_a_wait() {
        let c = Counters::default();
        for outcome in [
            Outcome::Acquired,
            Outcome::TimedOut,
            Outcome::Cancelled,
            Outcome::Failed,
        ] {
            c.wait_started();
            assert_eq!(c.snapshot().waiting, 1);
            c.wait_ended(outcome, Duration::from_millis(3));
        }
        let s = c.snapshot();
        assert_eq!(
            (s.acquired, s.timed_out, s.cancelled, s.failed, s.waiting),
            (1, 1, 1, 1, 0)
        );
        assert_eq!(s.wait.count, 1);
    }
}
