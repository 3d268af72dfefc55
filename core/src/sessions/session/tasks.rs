//! The tasks of one session (`session`): the monitor that follows its connection states and
//! the lifeline's heartbeat loop.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use tokio::time::Instant;
use zklock_wire::client as zk;

use super::{Session, CONNECTED, DISCONNECTED};
use crate::base::error::{Error, ErrorKind};
use crate::base::state::LeaseState;
use crate::sessions::lifeline;

/// Follows the connection states of one session until it ends. Whether a disconnected session
/// still holds its locks is the lifeline's to decide (`keep_alive`), not the transport's notice.
pub(super) async fn monitor(session: Weak<Session>, mut states: zk::StateWatcher) {
    // The send time of the latest heartbeat answered before the transport was seen
    // disconnected. The state watcher gives the latest state, so every answer recorded before
    // that read came over a connection that had broken by then, and the next reconnect was
    // sent after it: the reconnect proves the leader heard of us after that send (see
    // `Lifeline::reconnected`). A disconnect and reconnect seen as one change proves nothing.
    let mut answered_before_disconnect = None;
    loop {
        let state = states.changed().await;
        let Some(s) = session.upgrade() else { return };
        match state {
            zk::SessionState::Disconnected => {
                answered_before_disconnect.get_or_insert_with(|| s.lifeline.latest_answered());
                if s.link.get() == CONNECTED {
                    s.event("disconnected", "");
                }
                s.set_connected(false);
                for lease in s.live_leases() {
                    lease.set_state(LeaseState::Suspended);
                }
            }
            zk::SessionState::SyncConnected => {
                if let Some(sent) = answered_before_disconnect.take() {
                    s.lifeline.reconnected(sent);
                }
                // Prove the session alive at once: the last answer before the break is old.
                s.beat_now.notify_one();
                if s.link.get() == DISCONNECTED {
                    s.event("reconnected", "");
                }
                s.set_connected(true);
                tokio::spawn(s.clone().verify_leases());
            }
            zk::SessionState::Expired => {
                s.kill(Error::new(
                    ErrorKind::SessionExpired,
                    format!("ZooKeeper session 0x{:x} expired", s.id),
                ));
                return;
            }
            zk::SessionState::AuthFailed => {
                s.kill(Error::new(
                    ErrorKind::Permission,
                    format!("ZooKeeper session 0x{:x} failed authentication", s.id),
                ));
                return;
            }
            _ => {
                s.kill(Error::new(
                    ErrorKind::Closed,
                    format!("ZooKeeper session 0x{:x} closed", s.id),
                ));
                return;
            }
        }
    }
}

/// The lifeline of one session: a `sync` heartbeat every `beat_interval` (pipelined: a slow
/// answer does not hold up the next), each answer feeding the proof of `Lifeline::answered`; at
/// its deadline every lease of the session is lost and the session is closed (`give_up`). Runs
/// until the session dies or is dropped.
pub(super) async fn keep_alive(session: Weak<Session>) {
    let in_flight = Arc::new(AtomicU64::new(0));
    let mut next_beat = Instant::now();
    loop {
        let Some(s) = session.upgrade() else { return };
        if s.is_dead() {
            return;
        }
        let now = Instant::now();
        let lost_at = s.lifeline.lost_at();
        if now >= lost_at {
            s.give_up();
            return;
        }
        if now >= next_beat {
            heartbeat(&s, &in_flight);
            next_beat = now + lifeline::beat_interval(s.timeout, s.lifeline.tick());
        }
        let wake = lost_at.min(next_beat);
        let beat_now = s.beat_now.clone();
        // Not holding the session while asleep: its last user may drop it meanwhile. A killed
        // session ends this loop at the next wake-up.
        drop(s);
        tokio::select! {
            _ = tokio::time::sleep_until(wake) => {}
            _ = beat_now.notified() => next_beat = Instant::now(),
        }
    }
}

/// At most this many heartbeats wait for their answers at once (a black hole holds them all).
const MAX_BEATS_IN_FLIGHT: u64 = 16;

/// Sends one `sync` (forwarded by a follower to the leader; see `lifeline`) and records its send
/// and answer times. Bounded by the session timeout and by `MAX_BEATS_IN_FLIGHT`.
fn heartbeat(session: &Arc<Session>, in_flight: &Arc<AtomicU64>) {
    let Ok(zk) = session.zk() else { return };
    if in_flight.load(Ordering::Relaxed) >= MAX_BEATS_IN_FLIGHT {
        return;
    }
    in_flight.fetch_add(1, Ordering::Relaxed);
    let (weak, timeout, in_flight) = (Arc::downgrade(session), session.timeout, in_flight.clone());
    let sent = Instant::now();
    tokio::spawn(async move {
        let reply = zk.sync("/");
        let answered = tokio::time::timeout(timeout, reply).await;
        in_flight.fetch_sub(1, Ordering::Relaxed);
        if let Ok(Ok(_)) = answered {
            if let Some(s) = weak.upgrade() {
                s.lifeline.answered(sent, Instant::now());
            }
        }
    });
}
