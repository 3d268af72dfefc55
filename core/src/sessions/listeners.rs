//! A client's connection-state listeners (kazoo's `add_listener`). Its sessions tell them of
//! every change as it happens (`Session::event`); each listener runs on its own callback queue,
//! in order, and hears a state once even when it is told twice (its current state at
//! subscription, then a change that raced with it). Held by the client and its sessions, never
//! by a task, so a listener keeps no session open after its client is gone.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::base::state::ConnectionState;
use crate::ops::runtime::CallbackQueue;

type Callback = Arc<dyn Fn(ConnectionState) + Send + Sync>;

struct Listener {
    id: u64,
    queue: CallbackQueue,
    callback: Callback,
    /// The state this listener heard last (read and written on its queue only).
    heard: Arc<Mutex<Option<ConnectionState>>>,
}

#[derive(Default)]
pub(crate) struct ConnectionListeners {
    list: Mutex<Vec<Listener>>,
    next: AtomicU64,
}

impl ConnectionListeners {
    /// Adds a listener and tells it `now()`, read after it was added so that no change is missed
    /// in between. Returns its id for `remove`.
    pub(crate) fn add(
        &self,
        queue: CallbackQueue,
        callback: Callback,
        now: impl FnOnce() -> ConnectionState,
    ) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let listener = Listener {
            id,
            queue,
            callback,
            heard: Arc::default(),
        };
        let (queue, callback, heard) = (
            listener.queue.clone(),
            listener.callback.clone(),
            listener.heard.clone(),
        );
        self.list.lock().unwrap().push(listener);
        deliver(&queue, &callback, &heard, now());
        id
    }

    /// Removes the listener `id`; false when there is none (removed already).
    pub(crate) fn remove(&self, id: u64) -> bool {
        let mut list = self.list.lock().unwrap();
        let before = list.len();
        list.retain(|l| l.id != id);
        list.len() != before
    }

    /// Tells every listener that the connection is now `state`.
    pub(crate) fn tell(&self, state: ConnectionState) {
        for l in self.list.lock().unwrap().iter() {
            deliver(&l.queue, &l.callback, &l.heard, state);
        }
    }
}

fn deliver(
    queue: &CallbackQueue,
    callback: &Callback,
    heard: &Arc<Mutex<Option<ConnectionState>>>,
    state: ConnectionState,
) {
    let (callback, heard) = (callback.clone(), heard.clone());
    queue.run(move || {
        let new = {
            let mut heard = heard.lock().unwrap();
            let new = *heard != Some(state);
            *heard = Some(state);
            new
        };
        // Outside the lock: the callback may add or remove listeners.
        if new {
            callback(state);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listener_hears_its_current_state_then_each_change_once() {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let listeners = ConnectionListeners::default();
        let sink = heard.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let queue = CallbackQueue::own_thread().unwrap();
        let id = listeners.add(
            queue.clone(),
            Arc::new(move |s: ConnectionState| {
                sink.lock().unwrap().push(s.as_str());
                tx.send(()).unwrap();
            }),
            || ConnectionState::Connected,
        );
        listeners.tell(ConnectionState::Connected); // raced with the subscription: heard once
        listeners.tell(ConnectionState::Suspended);
        listeners.tell(ConnectionState::Lost);
        for _ in 0..3 {
            rx.recv_timeout(std::time::Duration::from_secs(5)).unwrap();
        }
        assert!(listeners.remove(id));
        assert!(!listeners.remove(id));
        listeners.tell(ConnectionState::Connected); // nobody listens any more
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        queue.run(move || done_tx.send(()).unwrap());
        done_rx
            .recv_timeout(std::time::Duration::from_secs(5))
            .unwrap();
        assert_eq!(*heard.lock().unwrap(), ["connected", "suspended", "lost"]);
    }
}
