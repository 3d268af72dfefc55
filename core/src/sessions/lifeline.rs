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
//! (`FollowerRequestProcessor`, `ObserverRequestProcessor`), and the proof takes three
//! answered heartbeats j, k, m:
//!
//! - k was sent at least [`gap`] (half a tick and some) after j was answered: the leader sent
//!   at least one PING between its answers to j and k, which the follower handled after touching
//!   our session for j and before answering k, and its reply carried the touch of j;
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

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::base::error::{Error, ErrorKind, Result};

/// ZooKeeper's sample configuration's `tickTime` (conf/zoo_sample.cfg), the tick assumed when
/// the user does not name one and the session timeout allows it.
pub(crate) const SAMPLE_TICK: Duration = Duration::from_secs(2);

/// How many answered heartbeats the proof looks back over; on a link slow enough to need more,
/// the proof falls behind and the session is given up, which is what such a link deserves.
const HISTORY: usize = 32;

/// The tick the lifeline works with: the user's (`Options::server_tick`), or ZooKeeper's sample
/// tick, at most a fifth of the session timeout (a server with ZooKeeper's default bounds grants
/// no session shorter than two ticks, and an operator who runs short sessions shortens the tick).
pub(crate) fn tick(named: Option<Duration>, timeout: Duration) -> Duration {
    named.unwrap_or_else(|| SAMPLE_TICK.min(timeout / 5))
}

/// Refuses a session too short for its server's tick: the lost deadline would come before the
/// next heartbeats could be answered, and the session would be given up at once.
pub(crate) fn check_timing(timeout: Duration, tick: Duration) -> Result<()> {
    if timeout < tick * 4 {
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

/// How much earlier than the server could, at the soonest, expire the session we give up, for
/// the rates of the two clocks: 200 ms plus 2% of the timeout (NTP slews a clock by at most
/// 0.05%), never more than a quarter of the timeout. The server's expiry buckets only make its
/// expiry later (`ExpiryQueue.roundToNextInterval` rounds up to the next tick).
pub(crate) fn margin(timeout: Duration) -> Duration {
    (Duration::from_millis(200) + timeout / 50).min(timeout / 4)
}

/// The least time between an answer and the next heartbeat that proves a leader PING came in
/// between: the leader's ping period (half a tick) and 50 ms for the leader's thread to be late.
pub(crate) fn gap(tick: Duration) -> Duration {
    tick / 2 + Duration::from_millis(50)
}

/// How often the session sends a heartbeat: every gap, and at least ten times per session
/// timeout (one request per session every 200 ms to 1 s at common timings, all to the leader).
pub(crate) fn beat_interval(timeout: Duration, tick: Duration) -> Duration {
    gap(tick).max(timeout / 10)
}

/// The proof of one session: the answered heartbeats and what they prove.
pub(crate) struct Lifeline {
    chain: Mutex<Chain>,
    /// `lost_at` as nanoseconds after `base`, readable without the lock (lease state reads).
    lost_at_nanos: AtomicU64,
    base: Instant,
    timeout: Duration,
    tick: Duration,
}

struct Chain {
    /// The leader touched the session at this moment or later (client clock).
    proven: Instant,
    /// The latest send time of an answered heartbeat.
    latest: Instant,
    /// Answered heartbeats as (sent, answered), oldest first.
    answered: VecDeque<(Instant, Instant)>,
}

impl Lifeline {
    /// `sent`: when the request that opened the session was sent (the leader created it later).
    pub(crate) fn new(timeout: Duration, tick: Duration, sent: Instant) -> Lifeline {
        let line = Lifeline {
            chain: Mutex::new(Chain {
                proven: sent,
                latest: sent,
                answered: VecDeque::new(),
            }),
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

    /// A heartbeat sent at `sent` was answered at `answered`.
    pub(crate) fn answered(&self, sent: Instant, answered: Instant) {
        let mut chain = self.chain.lock().unwrap();
        chain.latest = chain.latest.max(sent);
        let at = chain.answered.partition_point(|(s, _)| *s <= sent);
        chain.answered.insert(at, (sent, answered));
        if chain.answered.len() > HISTORY {
            chain.answered.pop_front();
        }
        let gap = gap(self.tick);
        // The newest k answered before m was sent, then the newest j answered a gap before k.
        let k = chain
            .answered
            .iter()
            .rev()
            .find(|(_, r)| *r <= sent)
            .copied();
        let j = k.and_then(|(t_k, _)| {
            chain
                .answered
                .iter()
                .rev()
                .find(|(_, r)| *r + gap <= t_k)
                .copied()
        });
        if let Some((t_j, _)) = j {
            if t_j > chain.proven {
                chain.proven = t_j;
                // Older heartbeats can prove nothing newer.
                chain.answered.retain(|(s, _)| *s >= t_j);
                self.publish(t_j);
            }
        }
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
        if sent_after > chain.proven {
            chain.proven = sent_after;
            self.publish(sent_after);
        }
    }

    fn publish(&self, proven: Instant) {
        let lost_at = self.deadline(proven);
        let nanos = lost_at.saturating_duration_since(self.base).as_nanos();
        self.lost_at_nanos
            .store(u64::try_from(nanos).unwrap_or(u64::MAX), Ordering::Release);
    }

    fn deadline(&self, proven: Instant) -> Instant {
        let keep = self
            .timeout
            .saturating_sub(margin(self.timeout))
            .saturating_sub(self.tick);
        proven + keep
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
    fn the_assumed_tick_is_the_sample_tick_or_a_fifth_of_the_session_timeout() {
        assert_eq!(tick(None, Duration::from_secs(60)), SAMPLE_TICK);
        assert_eq!(tick(None, Duration::from_secs(10)), SAMPLE_TICK);
        assert_eq!(tick(None, Duration::from_secs(4)), ms(800));
        assert_eq!(tick(Some(ms(500)), Duration::from_secs(4)), ms(500));
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
}
