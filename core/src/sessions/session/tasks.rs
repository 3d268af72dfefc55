//! The tasks of one session (`session`): the monitor that follows its connection states and
//! the lifeline's heartbeat loop.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use tokio::time::Instant;
use zklock_wire::client as zk;

use super::Session;
use crate::base::clock::{self, BootInstant};
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
                // The state changes before the listeners hear of it, so a listener that reads
                // `connection_state()` on hearing `suspended` reads `suspended` too.
                if s.set_connected(false) {
                    s.event("disconnected", "");
                }
                for lease in s.live_leases() {
                    lease.set_state(LeaseState::Suspended);
                }
            }
            zk::SessionState::SyncConnected => {
                if let Some(sent) = answered_before_disconnect.take() {
                    s.lifeline.reconnected(sent);
                }
                // Prove the session alive at once: the last answer before the break is old, and
                // the heartbeat sent last most likely broke with the old connection (issue 50:
                // after a 5 s stop, as long as the link's read timeout, it waited a whole
                // `beat_interval` more, and the proof landed after the deadline).
                s.relinked.store(true, Ordering::Release);
                s.beat_now.notify_one();
                if s.set_connected(true) {
                    s.event("reconnected", "");
                }
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

/// The lifeline of one session, while something needs it (`Session::is_active`): `sync`
/// heartbeats every `beat_interval` (pipelined: a slow answer does not hold up the next), each
/// answer feeding the proof of `Lifeline::answered`, and, whenever the deadline is less than
/// `lifeline::floor` ahead (from idle, after a slow spell or a stop; the task wakes when it
/// comes within the floor), one more as soon as it can move the proof
/// (`Lifeline::catch_up_at`: k at once, m when k is answered). After a reconnect the next
/// heartbeat goes at once: it is j of the proof that catches up. While its deadline binds
/// (`armed`) every lease of the session is lost at it and the session closed (`give_up`). An
/// idle session sends nothing and sleeps until an acquire wakes it. Runs until the session dies
/// or is dropped.
pub(super) async fn keep_alive(session: Weak<Session>) {
    let in_flight = Arc::new(AtomicU64::new(0));
    let mut last_beat: Option<Instant> = None;
    let mut pings_skew = PingsSkew::now();
    loop {
        let Some(s) = session.upgrade() else { return };
        if s.is_dead() {
            return;
        }
        let now = Instant::now();
        let armed = s.rearm(now);
        // The deadline and the proof are on the boot clock (`base::clock`); the beats' pacing
        // on tokio's. A wake-up for the deadline is converted when going to sleep and capped,
        // so that after a suspend (which tokio's clock does not count) the loop looks again
        // within `clock::MAX_SLEEP` and fires the lost signal.
        let boot = BootInstant::now();
        let lost_at = s.lifeline.lost_at();
        if armed && boot >= lost_at {
            s.give_up();
            return;
        }
        let mut wake = armed.then(|| lost_at.to_tokio().min(now + clock::MAX_SLEEP));
        if s.is_active(now) {
            note_pings(&s, &mut pings_skew);
            let tick = s.lifeline.tick();
            let interval = lifeline::beat_interval(s.timeout, tick);
            let floor = lifeline::floor(s.timeout, tick);
            let relinked = s.relinked.swap(false, Ordering::AcqRel);
            let mut beat = relinked || last_beat.is_none_or(|b| now >= b + interval);
            if boot + floor < lost_at {
                // The catch-up begins when the deadline comes within `floor`, not at the next
                // wake that happens to come after that: after a stop or a reconnect the next
                // regular heartbeat can be too late for the proof it starts (issue 50).
                let at = (lost_at - floor).to_tokio();
                wake = Some(wake.map_or(at, |w| w.min(at)));
            } else if !beat && in_flight.load(Ordering::Relaxed) == 0 {
                let at = s.lifeline.catch_up_at(boot);
                beat = at <= boot;
                let at = at.to_tokio();
                wake = Some(wake.map_or(at, |w| w.min(at)));
            }
            if beat {
                heartbeat(&s, &in_flight);
                last_beat = Some(now);
            }
            if let Some(b) = last_beat {
                let next = b + interval;
                wake = Some(wake.map_or(next, |w| w.min(next)));
            }
        }
        let beat_now = s.beat_now.clone();
        // Not holding the session while asleep: its last user may drop it meanwhile. A killed
        // session ends this loop at the next wake-up.
        drop(s);
        let sleep = async {
            match wake {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = sleep => {}
            _ = beat_now.notified() => {}
        }
    }
}

/// Gives the lifeline the transport's latest answered pings: each can be j of a proof. The
/// transport stamps them on `std::time::Instant`, which does not count a suspend, so they are
/// converted to the boot clock with the clocks' offset read now, which is right only if no
/// suspend came between a ping's send and now: only pings sent since the offset last moved
/// are taken (the heartbeats, stamped on the boot clock, prove regardless).
fn note_pings(session: &Session, seen: &mut PingsSkew) {
    let skew = clock::skew();
    let moved = skew
        .saturating_sub(seen.skew)
        .max(seen.skew.saturating_sub(skew));
    if moved > SKEW_TOLERANCE {
        *seen = PingsSkew::now();
    }
    let since = seen.since;
    let Ok(zk) = session.zk() else { return };
    let Some(stats) = zk.link_stats() else { return };
    for (sent, answered) in stats.pings_answered.into_iter().flatten() {
        if sent < since {
            continue;
        }
        session.lifeline.server_answered(
            BootInstant::from_past(sent),
            BootInstant::from_past(answered),
        );
    }
}

/// The clocks' offset as last seen (`clock::skew`), and since when it has not moved: pings sent
/// since then convert to the boot clock exactly (`note_pings`).
struct PingsSkew {
    skew: std::time::Duration,
    since: std::time::Instant,
}

impl PingsSkew {
    /// From now on (the lifeline task starts with its session, before any of its pings).
    fn now() -> PingsSkew {
        PingsSkew {
            skew: clock::skew(),
            since: std::time::Instant::now(),
        }
    }
}

/// How much the offset between the boot clock and `Instant` may move between two reads without
/// a suspend: reads of two clocks are not simultaneous.
const SKEW_TOLERANCE: std::time::Duration = std::time::Duration::from_millis(2);

/// Heartbeats sent by every session of this process (`zklock::support::heartbeats`: tests
/// count them).
static HEARTBEATS: AtomicU64 = AtomicU64::new(0);

/// How many lifeline heartbeats (`sync`s) this process's sessions have sent.
pub fn heartbeats() -> u64 {
    HEARTBEATS.load(Ordering::Relaxed)
}

/// Sends one `sync` (forwarded by a follower to the leader; see `lifeline`) and records its send
/// and answer times, then wakes the lifeline task (an answer may call for the next heartbeat at
/// once, and arms a waiting acquire's proof). Bounded by the session timeout and by
/// `lifeline::MAX_BEATS_IN_FLIGHT`.
fn heartbeat(session: &Arc<Session>, in_flight: &Arc<AtomicU64>) {
    let Ok(zk) = session.zk() else { return };
    if in_flight.load(Ordering::Relaxed) >= lifeline::MAX_BEATS_IN_FLIGHT {
        return;
    }
    in_flight.fetch_add(1, Ordering::Relaxed);
    HEARTBEATS.fetch_add(1, Ordering::Relaxed);
    let (weak, timeout, in_flight) = (Arc::downgrade(session), session.timeout, in_flight.clone());
    let sent = BootInstant::now();
    tokio::spawn(async move {
        let reply = zk.sync("/");
        let answered = tokio::time::timeout(timeout, reply).await;
        in_flight.fetch_sub(1, Ordering::Relaxed);
        let Some(s) = weak.upgrade() else { return };
        if let Ok(Ok(_)) = answered {
            s.lifeline.answered(sent, BootInstant::now());
            s.rearm(Instant::now());
            s.proof_moved.notify_waiters();
        }
        s.beat_now.notify_one();
    });
}
