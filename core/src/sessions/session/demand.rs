//! What needs a session's proof of life, and when its deadline binds (`session`, `lifeline`):
//! the session counts its registered leases and its acquires under way; an acquire arms the
//! deadline once it is fresh, and the session disarms it after `lifeline::warm` of idleness.
//!
//! The deadline gives a session up only while it holds a lease. A session that only waits
//! holds nothing another could take from it: when its proof lapses (a slow server, a starved
//! process) it is disarmed, not given up, its acquires keep their place in the queue, and each
//! waits for a fresh proof before its lock becomes a lease (`proven`, `holds_proof`).

use std::sync::atomic::Ordering;

use tokio::time::Instant;

use super::Session;
use crate::base::clock::BootInstant;
use crate::base::error::{Error, ErrorKind, Result};
use crate::sessions::lifeline;

/// What needs a session's proof of life (`lifeline`): its registered leases and the acquires
/// under way (each from its first request to its lease or its failure).
pub(super) struct Demand {
    pub(super) count: usize,
    /// How many of `count` are registered leases: while there is one, a passed deadline gives
    /// the session up.
    pub(super) leases: usize,
    /// Until when an idle session keeps proving (`lifeline::warm` after the count fell to 0);
    /// `None` for a session that never had demand.
    pub(super) warm_until: Option<Instant>,
}

impl Session {
    pub(super) fn is_armed(&self) -> bool {
        self.armed.load(Ordering::Acquire)
    }

    /// Whether a lock may become a lease now, with no further wait: the deadline binds and is
    /// still ahead. Otherwise the acquire waits for a fresh proof (`proven`).
    pub(crate) fn holds_proof(&self) -> bool {
        self.is_armed() && !self.lifeline.is_past()
    }

    /// A lease of this session was made: it counts as demand, and the deadline binds from now
    /// on (its acquire found it fresh, `proven`; had it passed since, the lease is lost at
    /// once, on the safe side).
    pub(super) fn lease_began(&self) {
        let mut demand = self.demand.lock().unwrap();
        demand.count += 1;
        demand.leases += 1;
        self.armed.store(true, Ordering::Release);
    }

    /// Leases ended (released, lost, or the session ended with them).
    pub(super) fn leases_ended(&self, n: usize) {
        {
            let mut demand = self.demand.lock().unwrap();
            demand.leases = demand.leases.saturating_sub(n);
        }
        self.drop_demand(n);
    }

    /// An acquire begins: the session proves from now on (`Session::demand_ended` when it ends).
    pub(crate) fn demand_began(&self) {
        let mut demand = self.demand.lock().unwrap();
        demand.count += 1;
        if demand.count == 1 {
            self.beat_now.notify_one();
        }
    }

    /// An acquire ended (its lease, if it got one, counts on its own: `register`).
    pub(crate) fn demand_ended(&self) {
        self.drop_demand(1);
    }

    fn drop_demand(&self, n: usize) {
        let mut demand = self.demand.lock().unwrap();
        demand.count = demand.count.saturating_sub(n);
        if demand.count == 0 {
            demand.warm_until = Some(Instant::now() + lifeline::warm(self.timeout));
        }
    }

    /// Whether the lifeline runs at `now`: demand, or its warm time after the last.
    pub(super) fn is_active(&self, now: Instant) -> bool {
        let demand = self.demand.lock().unwrap();
        demand.count > 0 || demand.warm_until.is_some_and(|w| now < w)
    }

    /// Arms the deadline when there is demand and the deadline is at least `lifeline::floor`
    /// ahead (true when armed); disarms it once the session is idle past its warm time, and
    /// when it passed while the session holds no lease. So true with the deadline passed means
    /// a lease is lost: the session is given up.
    pub(super) fn rearm(&self, now: Instant) -> bool {
        let demand = self.demand.lock().unwrap();
        if demand.count == 0 && demand.warm_until.is_none_or(|w| now >= w) {
            self.armed.store(false, Ordering::Release);
            return false;
        }
        // The deadline is on the boot clock (`base::clock`); `now` only times the demand.
        let boot = BootInstant::now();
        if self.is_armed() {
            if demand.leases > 0 || boot < self.lifeline.lost_at() {
                return true;
            }
            // Only waiting: the lapse loses nothing. The next lock waits for a fresh proof.
            self.armed.store(false, Ordering::Release);
            tracing::debug!(
                session = format_args!("0x{:x}", self.id),
                "proof of life lapsed while the session holds no lease: its acquires wait for a \
                 fresh one"
            );
        }
        let floor = lifeline::floor(self.timeout, self.lifeline.tick());
        let fresh = demand.count > 0 && self.lifeline.lost_at() >= boot + floor;
        if fresh {
            self.armed.store(true, Ordering::Release);
        }
        fresh
    }

    /// Waits until the session's proof binds, fresh (armed): an acquire under way (its demand
    /// counted) calls it beside its first requests, and again before a lock it waited for
    /// becomes a lease unless `holds_proof`, so no lease ever carries a deadline from the
    /// session's idle time or from a lapse while it waited. Bounded by `deadline`, but given at
    /// least a session timeout (a try still gets its proof).
    pub(crate) async fn proven(&self, deadline: Option<Instant>, what: &str) -> Result<()> {
        let by = deadline.map(|d| d.max(Instant::now() + self.timeout));
        loop {
            let moved = self.proof_moved.notified();
            let changed = self.link.changed();
            if let Some(err) = self.dead_reason() {
                return Err(err);
            }
            if self.rearm(Instant::now()) {
                return Ok(());
            }
            let wait = async {
                tokio::select! {
                    _ = moved => {}
                    _ = changed => {}
                }
            };
            match by {
                None => wait.await,
                Some(by) => tokio::time::timeout_at(by, wait).await.map_err(|_| {
                    Error::new(
                        ErrorKind::Timeout,
                        format!(
                            "{what}: timed out waiting for proof that the ZooKeeper leader \
                             hears of session 0x{:x}",
                            self.id
                        ),
                    )
                })?,
            }
        }
    }
}
