//! Watching our own lock nodes, so that a node deleted by anyone but us makes its lease lost.
//!
//! A lease is watched only once it has been held for `DELAY`: most holds are shorter, and an
//! unwatched node costs the server no watch and no extra notification when we delete it (one
//! notification per release: the next waiter's). A deletion by someone else is therefore noticed
//! at most `DELAY` late.
//!
//! One queue per session does this for every lease, rather than a task per lease: a held lock
//! keeps only its boxed watch future (about 170 bytes) here, not a sleeping task of a kilobyte
//! (bench scenario 6, memory per held lock). The watch future lives in the lease, so the
//! release path can drop it synchronously right before it deletes the node: the client then
//! queues the watch's removal ahead of our delete.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use zklock_wire::client as zk;

use crate::base::error::{is_transient, Result};

/// What the own-node watch needs of a lease: the lease implements it (this module comes before
/// the lease module and does not know its type).
pub(crate) trait Watched: Send + Sync + 'static {
    /// Where the lease keeps its watch.
    fn slot(&self) -> &Mutex<OwnWatch>;
    fn node(&self) -> &str;
    /// Released by us, or lost.
    fn is_finished(&self) -> bool;
    /// A handle for requests of the lease's session, or why there is none.
    fn zk(&self) -> Result<zk::Client>;
    /// Waits out a disconnect of the lease's session (owning what it needs: the lease itself
    /// is not kept alive meanwhile).
    fn recovery(&self) -> Pin<Box<dyn Future<Output = Result<()>> + Send>>;
    /// Our node was deleted by someone else: stop watching, and lose the lease unless released.
    fn deleted_by_someone_else(&self);
    /// The node's data, read each time its watch is set (a revocation request is data).
    fn data_seen(&self, _data: &[u8]) {}
}

/// How long a lease is held before we watch its node.
pub(crate) const DELAY: Duration = Duration::from_millis(100);

/// How much earlier than its `DELAY` a lease may be watched, to batch the queue's wake-ups.
const SLACK: Duration = Duration::from_millis(10);

type EventFuture = Pin<Box<dyn Future<Output = zk::WatchedEvent> + Send>>;

/// Where one lease's own-node watch stands (kept in the lease).
#[derive(Default)]
pub(crate) enum OwnWatch {
    /// Waiting in the session's queue, or being re-registered.
    #[default]
    Idle,
    /// The getData-with-watch request is in flight.
    Registering,
    /// The server holds our watch; the future resolves at its event.
    Watching(EventFuture),
    /// Released or lost: never watch again.
    Stopped,
}

/// The leases of one session waiting out `DELAY` before their node is watched. Entries are in
/// due order because the delay is the same for all.
#[derive(Default)]
pub(crate) struct Queue {
    due: Mutex<VecDeque<(Instant, Weak<dyn Watched>)>>,
    closed: std::sync::atomic::AtomicBool,
    changed: Notify,
}

impl Queue {
    /// Queues `lease` to be watched after `DELAY`.
    pub(crate) fn schedule(&self, lease: Weak<dyn Watched>) {
        let mut due = self.due.lock().unwrap();
        let was_empty = due.is_empty();
        due.push_back((Instant::now() + DELAY, lease));
        drop(due);
        if was_empty {
            self.changed.notify_one();
        }
    }

    /// Ends the queue's task (the session is gone).
    pub(crate) fn close(&self) {
        self.closed
            .store(true, std::sync::atomic::Ordering::Release);
        self.due.lock().unwrap().clear();
        self.changed.notify_one();
    }

    fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// The session's queue task: starts the watch of each lease that is still held when its delay
/// is over. Ends when the queue is closed.
pub(crate) async fn run(queue: Arc<Queue>) {
    loop {
        if queue.is_closed() {
            return;
        }
        let next = queue.due.lock().unwrap().front().map(|(at, _)| *at);
        match next {
            None => queue.changed.notified().await,
            Some(at) if at > Instant::now() => {
                tokio::select! {
                    _ = tokio::time::sleep_until(at) => {}
                    _ = queue.changed.notified() => {}
                }
            }
            Some(_) => {
                // Entries due a little later are taken too: one wake-up per `SLACK` at most
                // under a steady stream of short holds, instead of one per lease.
                let until = Instant::now() + SLACK;
                let mut due = queue.due.lock().unwrap();
                while due.front().is_some_and(|(at, _)| *at <= until) {
                    let (_, lease) = due.pop_front().expect("front checked");
                    if lease.strong_count() > 0 {
                        tokio::spawn(register(lease));
                    }
                }
            }
        }
    }
}

/// Sets the watch on the lease's node (a getData watch, like the waiters' watches) and keeps
/// its future in the lease. A node already gone makes the lease lost.
async fn register(lease: Weak<dyn Watched>) {
    loop {
        let Some(l) = lease.upgrade() else { return };
        {
            let mut slot = l.slot().lock().unwrap();
            if !matches!(*slot, OwnWatch::Idle) || l.is_finished() {
                return;
            }
            *slot = OwnWatch::Registering;
        }
        let recovery = l.recovery();
        let Ok(zk) = l.zk() else { return };
        let watched = Box::pin(zk.get_and_watch_data(l.node())).await;
        drop(zk);
        match watched {
            Ok((data, _, watcher)) => {
                l.data_seen(&data);
                let mut slot = l.slot().lock().unwrap();
                if matches!(*slot, OwnWatch::Registering) {
                    // A `Stopped` slot drops the watcher here instead (released meanwhile).
                    *slot = OwnWatch::Watching(Box::pin(watcher.changed()));
                    drop(slot);
                    poll(&l);
                }
                return;
            }
            Err(zk::Error::NoNode) => {
                l.deleted_by_someone_else();
                return;
            }
            Err(e) if is_transient(&e) => {
                *l.slot().lock().unwrap() = OwnWatch::Idle;
                drop(l);
                if recovery.await.is_err() {
                    return;
                }
            }
            Err(_) => {
                *l.slot().lock().unwrap() = OwnWatch::Idle;
                return;
            }
        }
    }
}

/// Wakes a lease's watch future: polls it on a short task of its own (watch events are rare).
struct LeaseWaker(Weak<dyn Watched>);

impl Wake for LeaseWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref()
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let lease = self.0.clone();
        crate::ops::runtime::spawn(async move {
            if let Some(l) = lease.upgrade() {
                poll(&l);
            }
        });
    }
}

/// Polls the lease's watch future once and acts on its event.
fn poll(lease: &Arc<dyn Watched>) {
    let mut slot = lease.slot().lock().unwrap();
    let OwnWatch::Watching(future) = &mut *slot else {
        return;
    };
    let waker = Waker::from(Arc::new(LeaseWaker(Arc::downgrade(lease))));
    let Poll::Ready(event) = future.as_mut().poll(&mut Context::from_waker(&waker)) else {
        return;
    };
    *slot = OwnWatch::Idle;
    drop(slot);
    match event.event_type {
        zk::EventType::NodeDeleted => lease.deleted_by_someone_else(),
        // Someone wrote to our node: it is still ours, watch it again.
        zk::EventType::NodeDataChanged | zk::EventType::NodeCreated => {
            tokio::spawn(register(Arc::downgrade(lease)));
        }
        // The session ended: its monitor makes the lease lost.
        _ => {}
    }
}
