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
use crate::sessions::carrier::Relay;
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
                // The next connection may reach another member: the sharing ends here.
                s.leave_chain();
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
        let carrying = s.carrying();
        let carries = carrying.as_ref().is_some_and(|relay| relay.needed(now));
        if s.is_active(now) || carries {
            note_pings(&s, &mut pings_skew);
            let tick = s.lifeline.tick();
            let floor = lifeline::floor(s.timeout, tick);
            if let Some(relay) = s.sharing() {
                // A sharer sends no heartbeat of its own: its transport's pings are its j's,
                // the carrier's syncs its k's and m's (`carrier`).
                let at = share_catch_up(&s, &relay, &in_flight, boot, lost_at, floor);
                wake = Some(wake.map_or(at, |w| w.min(at)));
            } else {
                // A carrier beats for its sharers as often as they need (`carrier_interval`).
                let interval = match carries {
                    true => lifeline::carrier_interval(s.timeout, tick),
                    false => lifeline::beat_interval(s.timeout, tick),
                };
                let relinked = s.relinked.swap(false, Ordering::AcqRel);
                let asked = carrying.as_ref().is_some_and(|relay| relay.take_asked());
                let mut beat = relinked || asked || last_beat.is_none_or(|b| now >= b + interval);
                if boot + floor < lost_at {
                    // The catch-up begins when the deadline comes within `floor`, not at the
                    // next wake that happens to come after that: after a stop or a reconnect
                    // the next regular heartbeat can be too late for the proof it starts
                    // (issue 50).
                    let at = (lost_at - floor).to_tokio();
                    wake = Some(wake.map_or(at, |w| w.min(at)));
                } else if !beat && in_flight.load(Ordering::Relaxed) == 0 {
                    let at = s.lifeline.catch_up_at(boot);
                    beat = at <= boot;
                    let at = at.to_tokio();
                    wake = Some(wake.map_or(at, |w| w.min(at)));
                }
                if beat {
                    let sent = heartbeat(&s, &in_flight, carrying.clone());
                    if asked && !sent {
                        // Too many in flight: the ask waits for the next look.
                        if let Some(relay) = &carrying {
                            relay.ask();
                        }
                    }
                    last_beat = Some(now);
                }
                if let Some(b) = last_beat {
                    let next = b + interval;
                    wake = Some(wake.map_or(next, |w| w.min(next)));
                }
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

/// A sharer's catch-up (`carrier`), as the model runs it (`model/src/client.rs`): nothing while
/// its deadline is more than `floor` ahead; within it, a request of the sharer's own goes first
/// when no answered one is newer than the proof (a carrier's sync is never j), and the carrier
/// is asked for a sync when `catch_up_at` says one sent now would move the proof (k or m).
/// Returns when to look again.
fn share_catch_up(
    session: &Arc<Session>,
    relay: &Relay,
    in_flight: &Arc<AtomicU64>,
    boot: BootInstant,
    lost_at: BootInstant,
    floor: std::time::Duration,
) -> Instant {
    if boot + floor < lost_at {
        return (lost_at - floor).to_tokio();
    }
    // Looks again a carrier interval on, should the ask or the request bring nothing.
    let retry = Instant::now() + lifeline::carrier_interval(session.timeout, session.tick());
    if in_flight.load(Ordering::Relaxed) > 0 {
        // Its own request is under way: its answer wakes the task.
        return retry;
    }
    if !session.lifeline.has_own_since_proof() {
        own_request(session, in_flight);
        return retry;
    }
    let at = session.lifeline.catch_up_at(boot);
    if at <= boot {
        relay.ask();
        return retry;
    }
    // A j newer than the proof, answered less than a gap ago: k may go a gap after it.
    at.to_tokio().min(retry)
}

/// A sharer's request of its own, for j: the cheapest read its member answers alone (and
/// touches the session for, as every request: `ZooKeeperServer.submitRequestNow`).
fn own_request(session: &Arc<Session>, in_flight: &Arc<AtomicU64>) {
    let Ok(zk) = session.zk() else { return };
    in_flight.fetch_add(1, Ordering::Relaxed);
    let (weak, timeout, in_flight) = (Arc::downgrade(session), session.timeout, in_flight.clone());
    let sent = BootInstant::now();
    tokio::spawn(async move {
        let answered = tokio::time::timeout(timeout, zk.check_stat("/")).await;
        in_flight.fetch_sub(1, Ordering::Relaxed);
        let Some(s) = weak.upgrade() else { return };
        if let Ok(Ok(_)) = answered {
            s.lifeline.server_answered(sent, BootInstant::now());
        }
        s.beat_now.notify_one();
    });
}

/// Sends one `sync` (forwarded by a follower to the leader; see `lifeline`) and records its send
/// and answer times, then wakes the lifeline task (an answer may call for the next heartbeat at
/// once, and arms a waiting acquire's proof). A carrier hands the answer on to its sharers when
/// it came over the session's first connection (`carrier`). Bounded by the session timeout and
/// by `lifeline::MAX_BEATS_IN_FLIGHT`; false when that many wait already.
fn heartbeat(
    session: &Arc<Session>,
    in_flight: &Arc<AtomicU64>,
    relay: Option<Arc<Relay>>,
) -> bool {
    let Ok(zk) = session.zk() else { return false };
    if in_flight.load(Ordering::Relaxed) >= lifeline::MAX_BEATS_IN_FLIGHT {
        return false;
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
            let at = BootInstant::now();
            s.lifeline.answered(sent, at);
            // Read after the answer: 0 means the answer came over the first connection.
            if let (Some(relay), 0) = (relay, zk.connection_generation()) {
                relay.hand_on(sent, at);
            }
            s.rearm(Instant::now());
            s.proof_moved.notify_waiters();
        }
        s.beat_now.notify_one();
    });
    true
}
