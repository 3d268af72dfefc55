//! A pending acquire's place in its lock's queue (CURATOR-316's queued count, CURATOR-592's
//! "queued" callback): the number the recipe computes from the listings it already reads, kept
//! for `position()` and told to an `on_queued` callback when it changes.
//!
//! The number is how many contenders must leave before this acquire can hold, by the recipe's
//! own rule (each recipe says how it counts: `Queued::ahead` for a mutex, a read or a write
//! node, `semaphore` for lease nodes, `multi` for a multi-lock). It is as of the acquire's last
//! listing: a waiter watches one node only, so nodes that leave further ahead are seen at the
//! next listing. Nodes only leave from ahead and join behind, so for a queue it is an upper
//! bound (docs/contract.md, "Queue position").

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};

use crate::ops::runtime::CallbackQueue;

type OnQueued = Arc<dyn Fn(u32) + Send + Sync>;

#[derive(Default)]
struct Shared {
    /// 0: not waiting in a queue (not yet placed, held at once, or ended).
    now: AtomicU32,
    /// The callback and where it runs; the lock also orders its calls with the figure.
    on_queued: Mutex<Option<(CallbackQueue, OnQueued)>>,
}

/// Where one pending acquire stands in its queue. Clones share the figure; the acquire reports
/// to it, the caller reads it or is called back. Made by the faces' handles
/// ([`crate::Acquire::position`]) or given to [`crate::Lock::acquire_watched`].
#[derive(Clone, Default)]
pub struct QueuePosition {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for QueuePosition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("QueuePosition").field(&self.get()).finish()
    }
}

impl QueuePosition {
    /// A position not known yet (no acquire reported one).
    pub fn new() -> QueuePosition {
        QueuePosition::default()
    }

    /// How many contenders must leave before the acquire can hold (at least 1) while it waits
    /// in the queue, as of its last listing; `None` before its node is placed, when it held at
    /// once, and once it has ended.
    pub fn get(&self) -> Option<u32> {
        match self.shared.now.load(Ordering::Acquire) {
            0 => None,
            n => Some(n),
        }
    }

    /// Calls `on_queued(position)` on the process-wide callback thread when the acquire is
    /// placed and does not hold at once, and again each time the figure changes while it
    /// waits; never for an acquire that holds at once. Set while the acquire waits already, it
    /// is called at once with the current figure. Replaces a callback set before.
    pub fn on_queued(&self, on_queued: impl Fn(u32) + Send + Sync + 'static) {
        self.on_queued_in(CallbackQueue::process(), on_queued)
    }

    /// [`QueuePosition::on_queued`] on `queue` (a client's own callback thread).
    pub fn on_queued_in(
        &self,
        queue: CallbackQueue,
        on_queued: impl Fn(u32) + Send + Sync + 'static,
    ) {
        let callback: OnQueued = Arc::new(on_queued);
        let mut slot = self.shared.on_queued.lock().unwrap();
        if let Some(now) = self.get() {
            let call = callback.clone();
            queue.run(move || call(now));
        }
        *slot = Some((queue, callback));
    }

    /// The recipe's report after a listing: `ahead` contenders must leave first (0: none, the
    /// lock is ours). A new figure of at least 1 goes to the callback.
    pub(crate) fn report(&self, ahead: usize) {
        let ahead = u32::try_from(ahead).unwrap_or(u32::MAX);
        let slot = self.shared.on_queued.lock().unwrap();
        if self.shared.now.swap(ahead, Ordering::AcqRel) == ahead || ahead == 0 {
            return;
        }
        if let Some((queue, callback)) = slot.as_ref() {
            let call = callback.clone();
            queue.run(move || call(ahead));
        }
    }

    /// The acquire is no longer waiting (it holds, failed, or moves on to a multi-lock's next
    /// member).
    pub(crate) fn clear(&self) {
        self.report(0);
    }
}

/// The positions of the acquires started through one face object (a Python or Node lock
/// object), for its `position`: the first of them in the queue, the rule of docs/contract.md
/// ("Queue position") decided here once rather than in each face. It keeps no acquire alive:
/// an acquire's entry goes once the acquire and its handle are gone.
#[derive(Default)]
pub struct QueuePositions {
    list: Mutex<Vec<Weak<Shared>>>,
}

impl std::fmt::Debug for QueuePositions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("QueuePositions")
            .field(&self.least())
            .finish()
    }
}

impl QueuePositions {
    /// An empty set of positions.
    pub fn new() -> QueuePositions {
        QueuePositions::default()
    }

    /// Counts `position`'s acquire among this object's until it is gone.
    pub fn track(&self, position: &QueuePosition) {
        let mut list = self.list.lock().unwrap();
        // Entries of ended acquires go here, so the list holds no more than the acquires alive.
        list.retain(|w| w.strong_count() > 0);
        list.push(Arc::downgrade(&position.shared));
    }

    /// The smallest position among the tracked acquires waiting in their queues now; `None`
    /// when none of them is queued.
    pub fn least(&self) -> Option<u32> {
        let list = self.list.lock().unwrap();
        list.iter()
            .filter_map(Weak::upgrade)
            .filter_map(|shared| QueuePosition { shared }.get())
            .min()
    }
}

/// An acquire's position while its steps run: cleared when this is dropped (the acquire held,
/// failed, or was given up), so no copy of it is kept beside the acquire's state.
pub(crate) struct Clearing(pub(crate) Option<QueuePosition>);

impl Clearing {
    pub(crate) fn get(&self) -> Option<&QueuePosition> {
        self.0.as_ref()
    }
}

impl Drop for Clearing {
    fn drop(&mut self) {
        if let Some(position) = &self.0 {
            position.clear();
        }
    }
}

/// Reports to `position` when there is one.
pub(crate) fn report(position: Option<&QueuePosition>, ahead: usize) {
    if let Some(position) = position {
        position.report(ahead);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_is_told_once_per_change_and_zero_never() {
        let position = QueuePosition::new();
        let (tx, rx) = std::sync::mpsc::channel();
        position.on_queued(move |n| tx.send(n).unwrap());
        for ahead in [2, 2, 1, 0, 0] {
            position.report(ahead);
        }
        let heard: Vec<u32> = (0..2)
            .map(|_| rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap())
            .collect();
        assert_eq!(heard, [2, 1]);
        assert_eq!(position.get(), None);
        assert!(rx
            .recv_timeout(std::time::Duration::from_millis(200))
            .is_err());
    }

    #[test]
    fn an_objects_position_is_its_first_queued_acquires_and_forgets_ended_ones() {
        let positions = QueuePositions::new();
        assert_eq!(positions.least(), None);
        let (first, second, unplaced) = (
            QueuePosition::new(),
            QueuePosition::new(),
            QueuePosition::new(),
        );
        for p in [&first, &second, &unplaced] {
            positions.track(p);
        }
        first.report(4);
        second.report(2);
        assert_eq!(positions.least(), Some(2));
        second.clear();
        assert_eq!(positions.least(), Some(4));
        drop((first, second, unplaced));
        assert_eq!(positions.least(), None);
        positions.track(&QueuePosition::new());
        assert_eq!(
            positions.list.lock().unwrap().len(),
            1,
            "ended acquires' entries are dropped"
        );
    }

    #[test]
    fn a_callback_set_while_waiting_hears_the_current_figure_at_once() {
        let position = QueuePosition::new();
        position.report(3);
        assert_eq!(position.get(), Some(3));
        let (tx, rx) = std::sync::mpsc::channel();
        position.on_queued(move |n| tx.send(n).unwrap());
        assert_eq!(
            rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap(),
            3
        );
    }
}
