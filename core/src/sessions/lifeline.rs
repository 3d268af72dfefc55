//! Until when a session can still be believed alive by the ZooKeeper *leader*, measured from our
//! side of the wire (docs/safety.md, "When a lease turns lost", has the derivation and its worst
//! cases; this module is its code).
//!
//! Sessions are expired by the leader alone (`SessionTrackerImpl`, one session timeout after
//! its last *touch*). A client connected to a follower touches the session only on that
//! follower, which reports the sessions it touched in its reply to the leader's next PING
//! (`Learner.ping`, `LearnerHandler`'s `case Leader.PING`); the leader pings every half tick
//! (`Leader.lead`). So an answer from our server proves nothing about the leader: a follower
//! answers reads from its own copy, also after it lost the leader. Our heartbeat is therefore a
//! `sync`, which a follower forwards to the leader on the same stream as its ping replies
//! (`FollowerRequestProcessor`, `ObserverRequestProcessor`), and the proof takes three answered
//! requests j, k, m, of which k and m are such heartbeats and j is **any request our server
//! answered** (a heartbeat, or the transport's own ping):
//!
//! - our server touched the session for j after j was sent and before it answered it: every
//!   request, pings included, goes `ZooKeeperServer.processPacket` → `submitRequest` →
//!   `submitRequestNow`, which calls `touch` before handing it on (ZooKeeper 3.8);
//! - k was sent at least [`gap`] (half a tick and some) after j was answered, so the leader
//!   answered k at least that long after j's touch: in between it queued at least one PING to
//!   the follower, ahead of k's answer on the same stream. The follower handled that PING after
//!   touching our session for j and before it answered k; its reply carried the touch of j;
//! - m was sent after k was answered: the follower forwarded m after that ping reply, on the
//!   same stream, and the leader answered m, so it had read the touch of j first.
//!
//! Then the leader touched the session after j was sent, and cannot expire it before `t_j +
//! timeout`. A reconnect in between only helps: re-establishing a session on a follower
//! revalidates it at the leader (`Learner.validateSession`, `Leader.revalidateSession`, which
//! touches it), and the new connection's request went out after the old one's replies were read.
//! Leases turn lost at `t_j + timeout - margin - tick`: the margin for the clocks' rates, and one
//! tick because a leader cut off from its quorum answers (and touches) for up to one and a half
//! ticks after its followers stopped hearing it, while a new leader starts every session's clock
//! afresh.
//!
//! The proof is made on demand only (the session's `keep_alive`): while the session holds a
//! lease or an acquire is under way (an election's included), and for one session timeout after
//! the last of them ended ([`warm`]). An idle session sends no heartbeat (its transport's pings
//! keep it alive, as a peer's do), and its deadline binds nothing: it is *armed* only when an
//! acquire finds it at least [`floor`] ahead. From idle, the first heartbeat goes at once (k,
//! with j the transport's latest ping answered a gap before) and the next as soon as k is
//! answered (m), so an acquire from idle has its proof in about two round trips, beside its own
//! create and listing. While the proof is needed, heartbeats go every [`beat_interval`]. The
//! deadline gives the session up only while it holds a lease: a session that only waits is
//! disarmed when its proof lapses, and its lock becomes a lease only on a fresh proof
//! (`session/demand.rs`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

// Every time of the proof is on the boot clock, which counts a suspended machine's time as the
// leader does (`base::clock`, issue 50 part 3): callers read `BootInstant::now()`.
use crate::base::clock::BootInstant as Instant;
use crate::base::error::{Error, ErrorKind, Result};
use crate::sessions::lifeline_math::Chain;
#[cfg(test)]
use crate::sessions::lifeline_math::{keep, SAMPLE_TICK};
// The formulas live in `lifeline_math` (pure, so that the model in `model/` runs them too);
// the rest of the crate names them here.
pub(crate) use crate::sessions::lifeline_math::{
    beat_interval, carrier_interval, floor, gap, margin, sharing_fits, warm, MAX_BEATS_IN_FLIGHT,
};

/// Refuses a session too short for its server's tick: the lost deadline would come before the
/// next heartbeats could be answered, and the session would be given up at once.
pub(crate) fn check_timing(timeout: Duration, tick: Duration) -> Result<()> {
    if !crate::sessions::lifeline_math::timing_fits(timeout, tick) {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "the session timeout the server granted, {}, is shorter than four of its \
                 ticks (server tick {}): zklock could not know of a loss before the server \
                 acts and still keep the lease; ask for a longer session timeout",
                crate::base::text::duration(timeout),
                crate::base::text::duration(tick)
            ),
        ));
    }
    Ok(())
}

/// The proof of one session: the answered heartbeats and what they prove.
pub(crate) struct Lifeline {
    chain: Mutex<Chain<Instant>>,
    /// `lost_at` as nanoseconds after `base`, readable without the lock (lease state reads).
    lost_at_nanos: AtomicU64,
    base: Instant,
    timeout: Duration,
    tick: Duration,
}

impl Lifeline {
    /// `sent`: when the request that opened the session was sent (the leader created it later).
    pub(crate) fn new(timeout: Duration, tick: Duration, sent: Instant) -> Lifeline {
        let line = Lifeline {
            chain: Mutex::new(Chain::new(sent)),
            lost_at_nanos: AtomicU64::new(0),
            base: sent,
            timeout,
            tick,
        };
        line.publish(sent);
        line
    }

    pub(crate) fn tick(&self) -> Duration {
        self.tick
    }

    /// A heartbeat (`sync`) sent at `sent` was answered at `answered`.
    pub(crate) fn answered(&self, sent: Instant, answered: Instant) {
        self.record(sent, answered, true);
    }

    /// A request our server answered that did not reach the leader (the transport's ping): it
    /// can be j of a proof (see the module's header). Recording the same one twice is harmless.
    pub(crate) fn server_answered(&self, sent: Instant, answered: Instant) {
        self.record(sent, answered, false);
    }

    /// A `sync` of the carrier this session shares (`sessions::carrier`), sent at `sent` and
    /// answered at `answered` over the carrier's first connection to this session's member:
    /// k or m of this session's proof, never j (it touched the carrier's session).
    pub(crate) fn carried(&self, sent: Instant, answered: Instant) {
        let mut chain = self.chain.lock().unwrap();
        if let Some(t_j) = chain.record_carried(sent, answered, gap(self.tick)) {
            self.publish(t_j);
        }
    }

    /// Whether a request of this session's own newer than the proof was answered (a j).
    pub(crate) fn has_own_since_proof(&self) -> bool {
        self.chain.lock().unwrap().has_own_since_proof()
    }

    fn record(&self, sent: Instant, answered: Instant, leader: bool) {
        let mut chain = self.chain.lock().unwrap();
        if let Some(t_j) = chain.record(sent, answered, leader, gap(self.tick)) {
            self.publish(t_j);
        }
    }

    /// When a heartbeat sent now or later can move the proof: now when a heartbeat sent now
    /// would be m of a newer proof, or k of one (a request answered a gap ago is newer than the
    /// proof); else a gap after the latest answer (k then has it for j).
    pub(crate) fn catch_up_at(&self, now: Instant) -> Instant {
        self.chain.lock().unwrap().catch_up_at(now, gap(self.tick))
    }

    /// The latest send time of an answered heartbeat: read when the transport is seen
    /// disconnected, it bounds from below when the next reconnect was sent (see `reconnected`).
    pub(crate) fn latest_answered(&self) -> Instant {
        self.chain.lock().unwrap().latest
    }

    /// The session was re-established by a connect request sent after `sent_after`. A follower
    /// revalidates a re-established session at the leader, which touches it
    /// (`Learner.validateSession`, `Leader.revalidateSession`), and a leader touches it itself:
    /// that proves the leader heard of the session after `sent_after`.
    pub(crate) fn reconnected(&self, sent_after: Instant) {
        let mut chain = self.chain.lock().unwrap();
        if let Some(proven) = chain.reconnected(sent_after) {
            self.publish(proven);
        }
    }

    fn publish(&self, proven: Instant) {
        let lost_at = crate::sessions::lifeline_math::deadline(proven, self.timeout, self.tick);
        let nanos = lost_at.saturating_duration_since(self.base).as_nanos();
        self.lost_at_nanos
            .store(u64::try_from(nanos).unwrap_or(u64::MAX), Ordering::Release);
    }

    /// The latest moment the leader is known to have touched the session.
    pub(crate) fn proven(&self) -> Instant {
        self.chain.lock().unwrap().proven
    }

    /// The moment our leases must be lost unless a newer proof arrives before it.
    pub(crate) fn lost_at(&self) -> Instant {
        self.base + Duration::from_nanos(self.lost_at_nanos.load(Ordering::Acquire))
    }

    /// Whether that moment has come (a clock read and an atomic load: lease state reads use it).
    pub(crate) fn is_past(&self) -> bool {
        Instant::now() >= self.lost_at()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUT: Duration = Duration::from_secs(4);
    const TICK: Duration = Duration::from_millis(500);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_margin_is_200_ms_plus_2_percent_and_at_most_a_quarter_of_the_timeout() {
        assert_eq!(margin(Duration::from_secs(2)), ms(240));
        assert_eq!(margin(Duration::from_secs(10)), ms(400));
        assert_eq!(margin(ms(400)), ms(100));
    }

    #[test]
    fn a_session_shorter_than_four_ticks_is_refused_with_a_reason() {
        assert!(check_timing(Duration::from_secs(4), ms(1000)).is_ok());
        let err = check_timing(Duration::from_secs(3), ms(1000)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.message().contains("four of its ticks"), "{err}");
    }

    #[test]
    fn one_answered_heartbeat_proves_nothing_about_the_leader() {
        let start = Instant::now();
        let line = Lifeline::new(TIMEOUT, TICK, start);
        let first = start + TIMEOUT - margin(TIMEOUT) - TICK;
        assert_eq!(line.lost_at(), first);
        line.answered(start + ms(1000), start + ms(1010));
        assert_eq!(
            line.lost_at(),
            first,
            "a follower may answer without its leader"
        );
        assert_eq!(line.proven(), start);
    }

    #[test]
    fn three_answered_heartbeats_a_gap_apart_prove_the_first_one() {
        let start = Instant::now();
        let line = Lifeline::new(TIMEOUT, TICK, start);
        line.answered(start + ms(100), start + ms(110)); // j
        line.answered(start + ms(500), start + ms(510)); // k: sent 390 ms after j's answer
        assert_eq!(line.proven(), start, "k alone proves nothing yet");
        line.answered(start + ms(900), start + ms(910)); // m
        assert_eq!(line.proven(), start + ms(100));
        assert_eq!(
            line.lost_at(),
            start + ms(100) + TIMEOUT - margin(TIMEOUT) - TICK
        );
    }

    #[test]
    fn heartbeats_closer_than_the_gap_do_not_prove_each_other() {
        let start = Instant::now();
        let line = Lifeline::new(TIMEOUT, TICK, start);
        // k is sent 90 ms after j's answer: the leader may not have pinged in between.
        line.answered(start + ms(100), start + ms(110));
        line.answered(start + ms(200), start + ms(210));
        line.answered(start + ms(300), start + ms(310));
        assert_eq!(line.proven(), start);
    }

    #[test]
    fn pipelined_heartbeats_on_a_slow_link_prove_only_what_their_answers_allow() {
        let start = Instant::now();
        let line = Lifeline::new(TIMEOUT, TICK, start);
        // A 700 ms round trip, a heartbeat every 400 ms.
        for i in 0..6u64 {
            line.answered(start + ms(400 * i), start + ms(400 * i + 700));
        }
        // m = 2000 (answered 2700): k must be answered by 2000 -> k = 1200 (answered 1900);
        // j answered a gap (300 ms) before 1200 -> answered by 900 -> none (the first answer
        // came at 700 for the heartbeat sent at 0), so j = 0.
        assert_eq!(line.proven(), start);
        line.answered(start + ms(2400), start + ms(3100));
        // m = 2400: k answered by 2400 -> 1600 (2300); j answered by 1300 -> 400 (1100).
        assert_eq!(line.proven(), start + ms(400));
    }

    #[test]
    fn a_reconnect_proves_the_heartbeats_answered_before_the_disconnect_was_seen() {
        let start = Instant::now();
        let line = Lifeline::new(TIMEOUT, TICK, start);
        line.answered(start + ms(300), start + ms(310));
        assert_eq!(line.proven(), start, "one answer alone proves nothing");
        let seen_disconnected = line.latest_answered();
        assert_eq!(seen_disconnected, start + ms(300));
        line.reconnected(seen_disconnected);
        assert_eq!(line.proven(), start + ms(300));
        // An older bound moves nothing back.
        line.reconnected(start + ms(100));
        assert_eq!(line.proven(), start + ms(300));
    }

    #[test]
    fn an_old_answer_arriving_late_moves_nothing_back() {
        let start = Instant::now();
        let line = Lifeline::new(TIMEOUT, TICK, start);
        for i in 1..=4u64 {
            line.answered(start + ms(400 * i), start + ms(400 * i + 10));
        }
        let proven = line.proven();
        assert_eq!(proven, start + ms(800));
        line.answered(start + ms(50), start + ms(1700));
        assert_eq!(line.proven(), proven);
    }

    #[test]
    fn a_ping_answered_a_gap_before_k_is_j_but_pings_are_never_k_or_m() {
        let start = Instant::now();
        let line = Lifeline::new(TIMEOUT, TICK, start);
        line.server_answered(start + ms(100), start + ms(110)); // j: a ping
        line.server_answered(start + ms(500), start + ms(510)); // a ping cannot be k
        line.server_answered(start + ms(900), start + ms(910)); // nor m
        assert_eq!(line.proven(), start);
        line.answered(start + ms(1000), start + ms(1010)); // k: sync, 890 ms after j's answer
        assert_eq!(line.proven(), start, "k alone proves nothing");
        line.answered(start + ms(1010), start + ms(1020)); // m: sent when k was answered
                                                           // The ping at 900 was answered 90 ms before k, less than a gap (300 ms): the one at
                                                           // 500 is the newest j.
        assert_eq!(
            line.proven(),
            start + ms(500),
            "the newest ping answered a gap before k"
        );
        // The same ping told again (the transport's stats are read often) changes nothing.
        line.server_answered(start + ms(900), start + ms(910));
        assert_eq!(line.proven(), start + ms(500));
    }

    #[test]
    fn from_idle_k_goes_at_once_on_an_older_ping_and_m_on_k_s_answer() {
        let start = Instant::now();
        let line = Lifeline::new(TIMEOUT, TICK, start);
        // Idle: two pings a third of the timeout apart; the newest was answered 100 ms ago,
        // less than a gap, so k sent now has the one before for j.
        line.server_answered(start + ms(5000), start + ms(5010));
        line.server_answered(start + ms(6333), start + ms(6343));
        let now = start + ms(6443);
        assert_eq!(line.catch_up_at(now), now, "k at once");
        line.answered(now, now + ms(5));
        assert_eq!(
            line.catch_up_at(now + ms(5)),
            now + ms(5),
            "m once k is answered"
        );
        line.answered(now + ms(5), now + ms(10));
        assert_eq!(line.proven(), start + ms(5000));
        assert!(line.lost_at() > now + floor(TIMEOUT, TICK));
        // Nothing newer can be proven until a gap after the latest answer.
        assert_eq!(line.catch_up_at(now + ms(10)), now + ms(10) + gap(TICK));
    }

    #[test]
    fn the_beats_in_flight_cover_every_round_trip_that_can_still_prove() {
        for (timeout, tick) in [
            (Duration::from_secs(10), SAMPLE_TICK),
            (Duration::from_secs(60), SAMPLE_TICK),
            (TIMEOUT, TICK),
            (TIMEOUT, ms(1000)),
            (Duration::from_secs(2), ms(400)),
            (Duration::from_secs(2), ms(500)),
        ] {
            let (keep, gap) = (keep(timeout, tick), gap(tick));
            // The longest round trip after which a proof still lands before its deadline.
            let useful = keep.saturating_sub(gap) / 3;
            let interval = beat_interval(timeout, tick);
            // Beats sent every `interval` with answers `useful` late: this many wait at once.
            let waiting = useful.as_nanos().div_ceil(interval.as_nanos()) as u64;
            assert!(
                waiting < MAX_BEATS_IN_FLIGHT,
                "{timeout:?}/{tick:?}: {waiting} beats in flight at a {useful:?} round trip"
            );
        }
    }

    #[test]
    fn the_beat_interval_keeps_a_third_of_what_a_proof_keeps_ahead() {
        for (timeout, tick) in [
            (Duration::from_secs(10), SAMPLE_TICK),
            (TIMEOUT, TICK),
            (TIMEOUT, ms(1000)),
            (Duration::from_secs(2), ms(400)),
        ] {
            let keep = keep(timeout, tick);
            let interval = beat_interval(timeout, tick);
            assert!(interval >= gap(tick) + ms(50));
            // Healthy link (1 ms round trips): ahead before the next proof lands.
            let lead = keep.saturating_sub(interval * 3 + ms(1));
            assert!(
                lead >= floor(timeout, tick),
                "{timeout:?}/{tick:?}: lead {lead:?}"
            );
        }
        assert_eq!(
            beat_interval(Duration::from_secs(10), SAMPLE_TICK),
            ms(7600) * 2 / 9
        );
    }
}
