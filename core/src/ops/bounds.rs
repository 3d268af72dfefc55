//! The time rules every acquire keeps, whatever the connection does.
//!
//! While the link is down or slow, a request can wait in the transport until a reconnect or the
//! session's end, many seconds past any deadline. So an acquire is bounded from outside its
//! steps:
//! - it **decides** by `max(deadline, start + ATTEMPT)`: a lock obtained after that moment is
//!   released again (in the background) and the acquire fails with `Timeout`, so a caller that
//!   gave up never holds a lock it did not expect; a timeout shorter than `ATTEMPT` (a try
//!   included) is one attempt of at most `ATTEMPT`;
//! - it **settles** at the latest `GRACE` after deciding, or `GRACE` after a cancel: the steps
//!   are dropped there, and the removal of a node that may exist goes on in the background (the
//!   protected prefix finds a node whose create reply never came).
//!
//! On a healthy link nothing of this shows: a timed-out acquire removes its node within the
//! grace, before it returns.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::time::Instant;

use crate::base::cancel::CancelToken;
use crate::base::error::Error;
use crate::ops::runtime;

/// The longest a try (or any timeout shorter than this) may wait for ZooKeeper's answer.
pub(crate) const ATTEMPT: Duration = Duration::from_millis(150);
/// How long after deciding (or a cancel) the acquire may still take to remove its node.
pub(crate) const GRACE: Duration = Duration::from_millis(100);

/// The deadline `timeout` from now; `None` (wait forever) when it lies beyond what an instant
/// can hold.
pub(crate) fn deadline_after(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

/// When an acquire with `deadline` must have decided (`None`: it waits for as long as it takes).
pub(crate) fn decide_by(deadline: Option<Instant>) -> Option<Instant> {
    deadline.map(|d| d.max(Instant::now() + ATTEMPT))
}

/// True when a lock obtained now came too late for an acquire that had to decide by `decide_by`.
pub(crate) fn too_late(decide_by: Option<Instant>) -> bool {
    decide_by.is_some_and(|d| Instant::now() > d)
}

/// The outer bound of an acquire: resolves with the error it settles with, `GRACE` after
/// `decide_by` or after a cancel. `None` when there is neither (nothing to bound). Its timers
/// are made on the private runtime, so it can be polled from any thread.
pub(crate) fn guard(
    decide_by: Option<Instant>,
    cancel: Option<CancelToken>,
    what: String,
) -> Option<Guard> {
    if decide_by.is_none() && cancel.is_none() {
        return None;
    }
    let settle_by = decide_by.map(|d| sleep_until(d + GRACE));
    Some(Box::pin(async move {
        let timed_out = async {
            match settle_by {
                Some(sleep) => sleep.await,
                None => std::future::pending().await,
            }
        };
        let cancelled = async {
            match &cancel {
                Some(token) => {
                    token.cancelled().await;
                    sleep_until(Instant::now() + GRACE).await
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = timed_out => Error::timeout(format!(
                "timed out waiting for the lock {what} (no answer from ZooKeeper in time; \
                 any node of this attempt is removed in the background)"
            )),
            _ = cancelled => Error::cancelled(format!("the acquire of {what} was cancelled")),
        }
    }))
}

/// A timer made on the private runtime (a timer needs a runtime to be made, not to be polled).
fn sleep_until(at: Instant) -> Pin<Box<tokio::time::Sleep>> {
    let _on_runtime = runtime::handle().enter();
    Box::pin(tokio::time::sleep_until(at))
}

/// The outer bound of an acquire, as made by [`guard`].
pub(crate) type Guard = Pin<Box<dyn Future<Output = Error> + Send>>;

/// Runs `work` within `guard`: the guard's error when it fires first, else the work's result.
/// A hand-written future rather than a `select!` in an `async fn`: the work is stored once,
/// whether there is a guard or not (memory per waiting lock, bench scenario 6).
pub(crate) fn within<F>(guard: Option<Guard>, work: F) -> Within<F> {
    Within { guard, work }
}

pub(crate) struct Within<F> {
    guard: Option<Guard>,
    work: F,
}

impl<T, F: Future<Output = crate::Result<T>>> Future for Within<F> {
    type Output = crate::Result<T>;

    fn poll(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        // SAFETY: `work` is pinned where it is: it is never moved out of the struct or replaced
        // (the guard is a Box, Unpin, and may be touched freely).
        let this = unsafe { self.get_unchecked_mut() };
        if let Some(guard) = this.guard.as_mut() {
            if let std::task::Poll::Ready(err) = guard.as_mut().poll(cx) {
                return std::task::Poll::Ready(Err(err));
            }
        }
        unsafe { Pin::new_unchecked(&mut this.work) }.poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_beyond_an_instant_waits_forever() {
        assert!(deadline_after(Duration::MAX).is_none());
        assert!(deadline_after(Duration::from_secs(1)).is_some());
    }

    #[test]
    fn a_try_gets_one_attempt_and_a_wait_decides_at_its_deadline() {
        let now = Instant::now();
        let try_by = decide_by(Some(now)).unwrap();
        assert!(try_by >= now + ATTEMPT);
        let later = now + Duration::from_secs(5);
        assert_eq!(decide_by(Some(later)), Some(later));
        assert_eq!(decide_by(None), None);
        assert!(!too_late(None));
        assert!(too_late(Some(now)) || Instant::now() == now);
    }
}
