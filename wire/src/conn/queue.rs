//! The two queues between a connection's task and the rest: commands in (from every clone of
//! the `Connection`), events out (to the session layer). A mutex around a `VecDeque` and the
//! waker of the one side that waits. tokio's mpsc channel keeps a cache-padded shared state
//! and a first block of 32 slots for as long as it lives, about 1 KB per channel, which every
//! idle session paid twice (issue 34); this keeps a few words and what is queued. A bound, where
//! one applies, is the sender's to check ([`Sender::len`]). A buffer grown by a burst is kept
//! while traffic goes on (regrowing it at every burst cost s4 a tenth of its CPU) and given
//! back when the owner says the connection is idle ([`Sender::release_idle`]) or when it grew
//! past what a busy session needs.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{ready, Context, Poll, Waker};

/// An idle queue keeps at most this many slots ([`Sender::release_idle`]).
const KEEP: usize = 8;
/// A queue drained to nothing gives its buffer back at once past this many slots (a flood of
/// notifications must not stay allocated until the connection is idle).
const LARGE: usize = 1024;

struct State<T> {
    items: VecDeque<T>,
    /// Senders alive: at 0 the receiver gets `None` once the queue is empty.
    senders: usize,
    /// The receiver closed or dropped: sends fail.
    closed: bool,
    /// The receiver's waker while it waits.
    waker: Option<Waker>,
}

type Shared<T> = Arc<Mutex<State<T>>>;

fn lock<T>(shared: &Shared<T>) -> MutexGuard<'_, State<T>> {
    // Nothing panics while holding it; a poisoned lock still holds a consistent queue.
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// The sending side; clones share the queue.
pub(crate) struct Sender<T> {
    shared: Shared<T>,
}

/// The receiving side.
pub(crate) struct Receiver<T> {
    shared: Shared<T>,
}

pub(crate) fn queue<T>() -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Mutex::new(State {
        items: VecDeque::new(),
        senders: 1,
        closed: false,
        waker: None,
    }));
    (
        Sender {
            shared: shared.clone(),
        },
        Receiver { shared },
    )
}

impl<T> Sender<T> {
    /// Queues `item`, or gives it back when the receiver is closed or gone.
    pub(crate) fn send(&self, item: T) -> Result<(), T> {
        let waker = {
            let mut state = lock(&self.shared);
            if state.closed {
                return Err(item);
            }
            state.items.push_back(item);
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        Ok(())
    }

    /// How many items wait to be received.
    pub(crate) fn len(&self) -> usize {
        lock(&self.shared).items.len()
    }

    /// True once the receiver is closed or gone.
    pub(crate) fn is_closed(&self) -> bool {
        lock(&self.shared).closed
    }

    /// Gives back a buffer grown past [`KEEP`] slots if nothing is queued: the owner's word
    /// that the connection is idle (no request outstanding).
    pub(crate) fn release_idle(&self) {
        release_idle(&self.shared);
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        lock(&self.shared).senders += 1;
        Sender {
            shared: self.shared.clone(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let waker = {
            let mut state = lock(&self.shared);
            state.senders -= 1;
            match state.senders {
                0 => state.waker.take(),
                _ => None,
            }
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl<T> std::fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = lock(&self.shared);
        f.debug_struct("Receiver")
            .field("queued", &state.items.len())
            .field("senders", &state.senders)
            .field("closed", &state.closed)
            .finish()
    }
}

impl<T> Receiver<T> {
    /// The next item; `None` once the queue is empty and every sender is gone or the receiver
    /// closed. Takes part in tokio's cooperative budget, as a channel does, so that a task
    /// draining a queue that others keep filling still yields.
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let coop = ready!(tokio::task::coop::poll_proceed(cx));
        let mut state = lock(&self.shared);
        if let Some(item) = take(&mut state) {
            coop.made_progress();
            return Poll::Ready(Some(item));
        }
        if state.senders == 0 || state.closed {
            coop.made_progress();
            return Poll::Ready(None);
        }
        match &state.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => state.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    pub(crate) async fn recv(&mut self) -> Option<T> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// The next item if one is queued now.
    pub(crate) fn try_recv(&mut self) -> Option<T> {
        take(&mut lock(&self.shared))
    }

    /// Refuses further sends; what is queued can still be taken.
    pub(crate) fn close(&mut self) {
        lock(&self.shared).closed = true;
    }

    /// [`Sender::release_idle`], from the receiving side.
    pub(crate) fn release_idle(&self) {
        release_idle(&self.shared);
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let left = {
            let mut state = lock(&self.shared);
            state.closed = true;
            state.waker = None;
            std::mem::take(&mut state.items)
        };
        // Dropped outside the lock: an item's drop (a reply's sender) may run other code.
        drop(left);
    }
}

fn release_idle<T>(shared: &Shared<T>) {
    let mut state = lock(shared);
    if state.items.is_empty() && state.items.capacity() > KEEP {
        state.items = VecDeque::new();
    }
}

fn take<T>(state: &mut State<T>) -> Option<T> {
    let item = state.items.pop_front();
    if state.items.is_empty() && state.items.capacity() > LARGE {
        state.items = VecDeque::new();
    }
    item
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn waker() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        (count.clone(), Waker::from(count))
    }

    #[test]
    fn items_come_out_in_order_and_a_waiting_receiver_is_woken_by_a_send() {
        let (tx, mut rx) = queue();
        let (woken, waker) = waker();
        let mut cx = Context::from_waker(&waker);
        assert!(rx.poll_recv(&mut cx).is_pending());
        tx.send(1).unwrap();
        tx.clone().send(2).unwrap();
        assert_eq!(woken.0.load(Ordering::SeqCst), 1);
        assert_eq!(tx.len(), 2);
        assert_eq!(rx.poll_recv(&mut cx), Poll::Ready(Some(1)));
        assert_eq!(rx.try_recv(), Some(2));
        assert_eq!(rx.try_recv(), None);
    }

    #[test]
    fn the_receiver_ends_when_the_last_sender_goes_and_sends_fail_once_it_is_closed() {
        let (tx, mut rx) = queue();
        let other = tx.clone();
        let (woken, waker) = waker();
        let mut cx = Context::from_waker(&waker);
        tx.send("queued").unwrap();
        drop(tx);
        assert_eq!(rx.poll_recv(&mut cx), Poll::Ready(Some("queued")));
        assert!(rx.poll_recv(&mut cx).is_pending());
        drop(other);
        assert_eq!(woken.0.load(Ordering::SeqCst), 1);
        assert_eq!(rx.poll_recv(&mut cx), Poll::Ready(None));

        let (tx, mut rx) = queue();
        tx.send(1).unwrap();
        rx.close();
        assert!(tx.is_closed());
        assert_eq!(tx.send(2), Err(2));
        assert_eq!(rx.try_recv(), Some(1));
        assert_eq!(rx.poll_recv(&mut cx), Poll::Ready(None));
        drop(rx);
        assert_eq!(tx.send(3), Err(3));
    }

    #[test]
    fn a_burst_keeps_its_buffer_until_idle_and_a_flood_gives_it_back_once_drained() {
        let capacity = |rx: &Receiver<usize>| lock(&rx.shared).items.capacity();
        let (tx, mut rx) = queue();
        for i in 0..64 {
            tx.send(i).unwrap();
        }
        while rx.try_recv().is_some() {}
        assert!(capacity(&rx) >= 64, "kept while traffic goes on");
        tx.send(1).unwrap();
        tx.release_idle();
        assert!(
            capacity(&rx) >= 64,
            "not released while something is queued"
        );
        rx.try_recv();
        tx.release_idle();
        assert_eq!(capacity(&rx), 0);
        for i in 0..=LARGE {
            tx.send(i).unwrap();
        }
        while rx.try_recv().is_some() {}
        assert_eq!(capacity(&rx), 0, "a flood's buffer goes once drained");
        tx.send(1).unwrap();
        rx.release_idle();
        assert!(capacity(&rx) > 0, "not released while something is queued");
    }

    #[test]
    fn a_receiver_dropped_drops_what_was_queued() {
        let (tx, rx) = queue();
        let item = Arc::new(());
        tx.send(item.clone()).unwrap();
        drop(rx);
        assert_eq!(Arc::strong_count(&item), 1);
    }
}
