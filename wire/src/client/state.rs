//! What a session tells its users besides replies: where it stands ([`SessionState`], followed
//! with a [`StateWatcher`]) and what a watch reports ([`WatchedEvent`], through a
//! [`OneshotWatcher`]). A leaf of `client`.

use tokio::sync::{oneshot, watch};

/// Where the session stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    /// Connected to a server that serves the session.
    SyncConnected,
    /// Between connections; the session may still be alive on the servers.
    Disconnected,
    /// The servers expired the session (or no server was reached for a whole timeout).
    Expired,
    /// The servers refused the credentials.
    AuthFailed,
    /// Closed by this side.
    Closed,
}

impl SessionState {
    /// Whether the session is over for good.
    pub fn is_terminated(self) -> bool {
        matches!(
            self,
            SessionState::Expired | SessionState::AuthFailed | SessionState::Closed
        )
    }
}

/// Follows a client's session states.
#[derive(Debug, Clone)]
pub struct StateWatcher(pub(super) watch::Receiver<SessionState>);

impl StateWatcher {
    /// Waits for the next change and returns the state then (the latest, not every one between).
    /// Once the client is gone it returns the last state at once.
    pub async fn changed(&mut self) -> SessionState {
        let _ = self.0.changed().await;
        *self.0.borrow_and_update()
    }

    pub fn peek_state(&self) -> SessionState {
        *self.0.borrow()
    }
}

/// What a watch notification says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// The session ended (see [`WatchedEvent::session_state`]): the watch will not fire.
    Session,
    NodeCreated,
    NodeDeleted,
    NodeDataChanged,
    NodeChildrenChanged,
}

/// A fired watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchedEvent {
    pub event_type: EventType,
    pub session_state: SessionState,
    /// The node's path, without the chroot (empty for a session event).
    pub path: String,
}

impl WatchedEvent {
    pub(super) fn session(state: SessionState) -> WatchedEvent {
        WatchedEvent {
            event_type: EventType::Session,
            session_state: state,
            path: String::new(),
        }
    }
}

/// One watch, fired once.
#[derive(Debug)]
pub struct OneshotWatcher(pub(super) oneshot::Receiver<WatchedEvent>);

impl OneshotWatcher {
    /// The event that fired the watch; a session event if the session ended first.
    pub async fn changed(self) -> WatchedEvent {
        self.0
            .await
            .unwrap_or_else(|_| WatchedEvent::session(SessionState::Closed))
    }
}
