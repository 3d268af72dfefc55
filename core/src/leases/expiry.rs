//! The end of a maximum hold, moved and announced (issue 37, point 3; CURATOR-28, Redisson
//! #1395): [`Lease::extend`] moves it, up to the lock's `hold_ceiling`, and
//! [`Lease::on_expiring`] warns ahead of it. The token stays the same: an extension is the same
//! hold, not a new one. `valid_until` follows the moved end at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::base::clock::{self, BootInstant};
use crate::base::error::{Error, ErrorKind, Result};
use crate::base::state::LeaseState;
use crate::leases::lease::Lease;
use crate::leases::node::{LeaseShared, HOLD_STEP};
use crate::ops::runtime;

impl Lease {
    /// Moves the end of this lease's maximum hold to `by` from now (never earlier than it is),
    /// every member of a multi-lock alike. `LockLost` after a loss, `NotHeld` after a release,
    /// `InvalidArgument` for a lease without a maximum hold or an end past the lock's
    /// `hold_ceiling` (nothing moves then). Returns the new end.
    pub fn extend(&self, by: Duration) -> Result<Instant> {
        let parts = self.shared_parts();
        match LeaseState::combine(parts.iter().map(|p| p.state())) {
            LeaseState::Lost => {
                let reason = self
                    .lost_reason()
                    .unwrap_or_else(|| "the lease was lost".into());
                return Err(Error::new(
                    ErrorKind::LockLost,
                    format!("not extended: {reason}"),
                ));
            }
            LeaseState::Released => {
                return Err(Error::new(
                    ErrorKind::NotHeld,
                    "not extended: the lease was released",
                ))
            }
            _ => {}
        }
        // The end runs on the boot clock (a suspend cannot stretch it, issue 50); the end
        // returned is an `Instant`, converted at this call. The boot clock is read first, so the
        // conversion errs late by the nanoseconds between the reads: the returned end is never
        // before `by` from a moment the caller read before the call, and `valid_until` (which
        // errs early) never after it.
        let beyond = || Error::invalid("an extension beyond what the clock holds");
        let boot_now = BootInstant::now();
        let now = Instant::now();
        let to = boot_now.checked_add(by).ok_or_else(beyond)?;
        // All members or none: check each against its ceiling first.
        let mut ends = Vec::with_capacity(parts.len());
        for p in &parts {
            ends.push(p.extend_hold_checked(to).map_err(Error::invalid)?);
        }
        let end = ends.into_iter().min().unwrap_or(to);
        let end = now.checked_add(end - boot_now).ok_or_else(beyond)?;
        for p in &parts {
            p.extend_hold(to).map_err(Error::invalid)?;
        }
        Ok(end)
    }

    /// Calls `callback` with the time left once the maximum hold is `before` from its end (at
    /// once when less is left), on the process-wide callback thread; again before the new end
    /// after each [`Lease::extend`]. Never for a lease without a maximum hold, nor after it
    /// ended (released or lost).
    pub fn on_expiring(
        &self,
        before: Duration,
        callback: impl Fn(Duration) + Send + Sync + 'static,
    ) {
        self.on_expiring_in(runtime::CallbackQueue::process(), before, callback)
    }

    /// [`Lease::on_expiring`] with the callbacks run on `queue` (a client's own callback thread).
    pub fn on_expiring_in(
        &self,
        queue: runtime::CallbackQueue,
        before: Duration,
        callback: impl Fn(Duration) + Send + Sync + 'static,
    ) {
        let parts: Vec<std::sync::Weak<LeaseShared>> =
            self.shared_parts().iter().map(Arc::downgrade).collect();
        let callback = Arc::new(callback);
        runtime::spawn(async move {
            let mut warned_for: Option<BootInstant> = None;
            loop {
                let Some(end) = hold_end(&parts) else {
                    return;
                };
                if warned_for == Some(end) {
                    // Warned for this end: wait for it to pass or move.
                    clock::sleep_until(end, HOLD_STEP).await;
                    if hold_end(&parts) == Some(end) {
                        return;
                    }
                    continue;
                }
                clock::sleep_until(end - before, HOLD_STEP).await;
                if hold_end(&parts) != Some(end) {
                    continue; // moved while we slept
                }
                let left = end.remaining();
                let cb = callback.clone();
                queue.run(move || cb(left));
                warned_for = Some(end);
            }
        });
    }
}

impl Lease {
    /// One maximum hold for every member, counted from now (a multi-lock's, once all its
    /// members are ours): `limit` from now, extensions up to `ceiling` from now (never less
    /// than `limit`). A member whose hold already ends earlier keeps its end.
    pub(crate) fn limit_hold(&self, limit: Duration, ceiling: Option<Duration>) {
        let now = BootInstant::now();
        let end = now + limit;
        let ceiling = ceiling.map(|c| now + c.max(limit));
        for p in self.shared_parts() {
            p.limit_hold_until(end, ceiling);
        }
    }
}

/// The earliest end of the members' maximum holds, while every member is held or suspended.
fn hold_end(parts: &[std::sync::Weak<LeaseShared>]) -> Option<BootInstant> {
    let mut end: Option<BootInstant> = None;
    for p in parts {
        let p = p.upgrade()?;
        if p.state().is_final() {
            return None;
        }
        let e = p.hold_end()?;
        end = Some(end.map_or(e, |m| m.min(e)));
    }
    end
}
