//! A small observable value: the state of a lease, a cancel flag, a session's connection. An
//! atomic byte plus one `Notify` (40 bytes inline) instead of a `watch` channel, whose shared
//! block is about 330 bytes on the heap. There is one per held lock, so this is most of the
//! difference in bench scenario 6 (memory per lock).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll};

use tokio::sync::futures::Notified;
use tokio::sync::Notify;

pub(crate) struct Signal {
    value: AtomicU8,
    changed: Notify,
}

impl Signal {
    pub(crate) const fn new(value: u8) -> Signal {
        Signal {
            value: AtomicU8::new(value),
            changed: Notify::const_new(),
        }
    }

    pub(crate) fn get(&self) -> u8 {
        self.value.load(Ordering::Acquire)
    }

    /// Stores `f(current)` when it is `Some` and differs, and wakes every waiter. True if the
    /// value changed.
    pub(crate) fn update(&self, f: impl Fn(u8) -> Option<u8>) -> bool {
        let changed = self
            .value
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
                f(v).filter(|new| *new != v)
            })
            .is_ok();
        if changed {
            self.changed.notify_waiters();
        }
        changed
    }

    /// A future that resolves at the next change (for waits written out by hand: create it,
    /// poll it, then read the value).
    pub(crate) fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }

    /// Wakes every waiter without a change of the value: for a flag kept beside it that its
    /// waiters re-check (a lease's revocation request beside its state).
    pub(crate) fn wake(&self) {
        self.changed.notify_waiters();
    }

    pub(crate) fn set(&self, value: u8) -> bool {
        self.update(|_| Some(value))
    }

    /// Resolves with the value once `holds(value)`.
    pub(crate) async fn wait_until(&self, holds: impl Fn(u8) -> bool) -> u8 {
        loop {
            // Registered before the value is read, so a change in between is not missed.
            let notified = self.changed.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            let value = self.get();
            if holds(value) {
                return value;
            }
            notified.await;
        }
    }
}

/// For futures written out by hand: polls `changed` (a signal's `Notified`, so registered
/// before the value is read) and true once `holds()`. A `Notified` that fired for another change
/// (a disconnect, not the death we wait for) is replaced by `renew()` and polled again.
pub(crate) fn poll_until<'a>(
    mut changed: Pin<&mut Notified<'a>>,
    cx: &mut Context<'_>,
    holds: impl Fn() -> bool,
    renew: impl Fn() -> Notified<'a>,
) -> bool {
    loop {
        let fired = changed.as_mut().poll(cx).is_ready();
        if holds() {
            return true;
        }
        if !fired {
            return false;
        }
        changed.set(renew());
    }
}

/// Waits until `done()` holds, re-checking whenever any of `signals` changes (a lease made of
/// several nodes watches all of them).
pub(crate) async fn wait_any<'a>(signals: &'a [&'a Signal], mut done: impl FnMut() -> bool) {
    loop {
        let mut waits: Vec<_> = signals
            .iter()
            .map(|s| Box::pin(s.changed.notified()))
            .collect();
        for w in waits.iter_mut() {
            w.as_mut().enable();
        }
        if done() {
            return;
        }
        AnyReady(&mut waits).await;
    }
}

/// Ready when the first of several futures is.
struct AnyReady<'a, F>(&'a mut [Pin<Box<F>>]);

impl<F: Future> Future for AnyReady<'_, F> {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        for f in self.0.iter_mut() {
            if f.as_mut().poll(cx).is_ready() {
                return Poll::Ready(());
            }
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn a_waiter_sees_a_change_made_after_it_started() {
        let signal = Arc::new(Signal::new(0));
        let waiter = tokio::spawn({
            let signal = signal.clone();
            async move { signal.wait_until(|v| v == 2).await }
        });
        tokio::task::yield_now().await;
        assert!(signal.set(1));
        assert!(!signal.set(1), "setting the same value is not a change");
        assert!(signal.set(2));
        assert_eq!(waiter.await.unwrap(), 2);
    }

    #[tokio::test]
    async fn update_keeps_the_value_when_told_to() {
        let signal = Signal::new(3);
        assert!(!signal.update(|v| if v == 3 { None } else { Some(0) }));
        assert_eq!(signal.get(), 3);
    }

    #[tokio::test]
    async fn wait_any_wakes_on_either_signal() {
        let a = Arc::new(Signal::new(0));
        let b = Arc::new(Signal::new(0));
        let waiter = tokio::spawn({
            let (a, b) = (a.clone(), b.clone());
            async move { wait_any(&[&a, &b], || b.get() == 1).await }
        });
        tokio::task::yield_now().await;
        a.set(1);
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        b.set(1);
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .expect("wait_any did not wake")
            .unwrap();
    }
}
