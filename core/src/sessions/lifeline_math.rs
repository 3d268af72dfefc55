//! The lifeline's arithmetic and its proof chain, pure: no clock, no lock, no crate path, only
//! `std`. `lifeline.rs` wraps it for the running client, and the Stateright model (`model/`,
//! issue 52) compiles this very file (`#[path]`), so the model checks the formulas and the
//! choice of j, k, m that the client runs, not a copy that could drift from them. The
//! derivation is in `lifeline.rs`'s header and docs/safety.md ("When a lease turns lost").
//!
//! Times are any ordered type that a `Duration` can be added to: `tokio::time::Instant` in the
//! client, a `Duration` since the start in the model.

use std::collections::VecDeque;
use std::ops::{Add, Sub};
use std::time::Duration;

/// ZooKeeper's sample configuration's `tickTime` (conf/zoo_sample.cfg): the tests' usual tick.
/// The client no longer assumes it: it learns the servers' tick at connect (`server_facts`).
#[cfg(test)]
pub(crate) const SAMPLE_TICK: Duration = Duration::from_secs(2);

/// How many answered heartbeats the proof looks back over; on a link slow enough to need more,
/// the proof falls behind and the session is given up, which is what such a link deserves.
pub(crate) const HISTORY: usize = 32;

/// Whether a session is long enough for its server's tick: four ticks at least, else the lost
/// deadline would come before the next heartbeats could be answered.
pub(crate) fn timing_fits(timeout: Duration, tick: Duration) -> bool {
    timeout >= tick * 4
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

/// What a proof keeps: leases turn lost this long after the proven touch.
pub(crate) fn keep(timeout: Duration, tick: Duration) -> Duration {
    timeout.saturating_sub(margin(timeout)).saturating_sub(tick)
}

/// The moment leases turn lost when the leader is proven to have touched the session at
/// `proven`: `t_j + T − margin − tick`.
pub(crate) fn deadline<I: Add<Duration, Output = I>>(
    proven: I,
    timeout: Duration,
    tick: Duration,
) -> I {
    proven + keep(timeout, tick)
}

/// How often a session that needs the proof sends a heartbeat. Every heartbeat is m of one
/// proof, k of the next and j of the one after, so on a healthy link the proof made when beat
/// n is answered is beat n-2's send time; just before beat n+1's answer the deadline is
/// `keep - 3 × interval - rtt` ahead. Two ninths of `keep` leave it a third of `keep` ahead
/// (2.5 s at T = 10 s and tick 2 s: a beat every 1.7 s; 1.1 s at T = 4 s and tick 500 ms: one
/// every 0.7 s), and never less than a gap and 50 ms, so that beat n-2 was answered a gap before
/// beat n-1 went out. (Pairs sent back to back, k then m, would need three syncs where this
/// needs two for the same lead; they are used only to catch up, see `catch_up_at`.)
pub(crate) fn beat_interval(timeout: Duration, tick: Duration) -> Duration {
    (gap(tick) + Duration::from_millis(50)).max(keep(timeout, tick) * 2 / 9)
}

/// At most this many heartbeats of one session wait for their answers at once. A proof takes
/// three answers one after another (j; k sent a gap after j's answer; m sent after k's), so it
/// arrives at least `3 × rtt + gap` after j was sent and keeps nothing once that passes `keep`:
/// a round trip is of use only while it is under `(keep − gap) / 3`, which is less than one and
/// a half `beat_interval`s (at least `2/9 × keep`). Two beats in flight then cover every round
/// trip that can still prove anything, and a third leaves room for a late one. More (16 until
/// issue 34) would only add to a slow server's queue, on which every session's proof waits, and
/// to what a black hole holds.
pub(crate) const MAX_BEATS_IN_FLIGHT: u64 = 3;

/// How far ahead the deadline must be for an acquire to be granted on it (the session is armed
/// then), and below which the session catches up (a heartbeat as soon as one can move the
/// proof): a quarter of `keep`, and at least a gap and 100 ms, the time the next proof needs
/// (k a gap after the last answer, then m).
pub(crate) fn floor(timeout: Duration, tick: Duration) -> Duration {
    (keep(timeout, tick) / 4).max(gap(tick) + Duration::from_millis(100))
}

/// The longest a connection stays silent before the transport pings: a third of the session
/// timeout. `wire`'s `conn::ping_interval` is `min(T/3, 2/3 × read timeout)`, never longer
/// (shorter when the connect timeout makes the read timeout short: the core caps it at 5 s, so
/// from T = 8.4 s on the ping goes every 3.3 s). A sharing session (issue 54) counts on no
/// more of its own requests than these, so what follows takes the longest.
pub(crate) fn ping_interval(timeout: Duration) -> Duration {
    timeout / 3
}

/// What `carrier_interval` allows each round trip of a carried proof: the sharer's ping's
/// and m's. A slower one costs only a catch-up (the deadline dips below `floor`).
const CARRIED_RTT: Duration = Duration::from_millis(50);

/// The shortest `carrier_interval`: under it twice the interval, all a carried proof has to
/// spare beyond `floor`, ping, gap and round trips, is under 200 ms, which one slow round trip
/// of a loaded server spends; the sharer would then fall below `floor` and catch up (its own
/// ping, then syncs on demand) most of the time, which is what its own chain costs. It also
/// bounds a carrier at ten `sync`s a second.
const MIN_CARRIER_INTERVAL: Duration = Duration::from_millis(100);

/// What a carried proof has to spare for two carrier intervals (see `carrier_interval`), or
/// `None` when the sharer's pings alone leave it nothing.
fn carried_room(timeout: Duration, tick: Duration) -> Option<Duration> {
    keep(timeout, tick)
        .checked_sub(floor(timeout, tick))?
        .checked_sub(ping_interval(timeout))?
        .checked_sub(gap(tick))?
        .checked_sub(CARRIED_RTT * 2)
}

/// How often a carrier (issue 54's shared chain: one session of a process on a member whose
/// `sync`s are k and m of the proofs of the process's other sessions there, `record_carried`)
/// sends its `sync`, on its own, whatever its sharers do; chosen so that a sharer whose only
/// requests of its own are the transport's pings stays `floor` ahead, and so never catches up
/// nor costs more than its pings.
///
/// The derivation. The sharer's proof is j, its latest answered ping, sent at p (pings go
/// every `ping_interval`); k, the first carried sync sent a gap after j's answer; m, the first
/// sent after k's answer. With a carrier interval I and round trips r under I, j is answered
/// at `p + r`, k goes before `p + r + gap + I`, m an interval later, and m's answer, which
/// proves p, comes before `p + gap + 2 × I + 2 × r`. Until then the proof is the ping before,
/// `p − ping_interval`, so the deadline is at the least
/// `keep − ping_interval − gap − 2 × I − 2 × r` ahead (a program's reads are pings too, and
/// only move j later). That stays at `floor` or more when
/// `I = (keep − floor − ping_interval − gap − 2 × 50 ms) / 2`, 50 ms for each round trip:
/// 608 ms at T = 10 s and tick 2 s (1.6 `sync`s a second for the process's sessions on a
/// member, against 0.59 for each session's own chain), 341 ms at T = 4 s and tick 500 ms,
/// 10.65 s at T = 60 s and tick 2 s. A shorter I costs more syncs and proves no sooner than a
/// round trip allows; a longer one lets the sharer's deadline dip below `floor`, where it
/// would catch up. Not `gap + 50 ms` at the least, as `beat_interval`: a session's own chain
/// needs that because its j and k are its own beats, while a carrier's k is any of its syncs
/// a gap after the sharer's answer.
///
/// Never below `MIN_CARRIER_INTERVAL`: where the formula gives less (T = 4 s and tick 1 s,
/// 28 ms; T = 2 s, nothing), `sharing_fits` is false and the session runs its own chain.
/// One carrier costs the leader `1 / I` syncs a second whatever the number of its sharers,
/// each session's own chain `1 / beat_interval`: it saves syncs from `beat_interval / I`
/// sessions of the process on the member (2.8 at T = 10 s and tick 2 s, 2.1 at T = 4 s and
/// tick 500 ms); with fewer, the sessions' own chains cost less. The core's carriers
/// (`sessions::carrier`) send at it; the model (`model/src/carrier.rs`) runs it.
pub(crate) fn carrier_interval(timeout: Duration, tick: Duration) -> Duration {
    carried_room(timeout, tick).map_or(MIN_CARRIER_INTERVAL, |room| {
        (room / 2).max(MIN_CARRIER_INTERVAL)
    })
}

/// Whether a session can share a carrier's chain at this timing: the interval
/// `carrier_interval` derives keeps a sharer that only pings `floor` ahead and is not under
/// `MIN_CARRIER_INTERVAL`. Else sharing gives nothing and the session runs its own chain.
pub(crate) fn sharing_fits(timeout: Duration, tick: Duration) -> bool {
    carried_room(timeout, tick).is_some_and(|room| room / 2 >= MIN_CARRIER_INTERVAL)
}

/// How long a session keeps proving after its last lease or acquire ended: one session
/// timeout. A session that locks at least that often (lock cycles, a worker loop) never waits
/// for a proof; one that locks less often pays at most `timeout / beat_interval` heartbeats
/// (about six) after each use, then costs what a peer's idle session costs.
pub(crate) fn warm(timeout: Duration) -> Duration {
    timeout
}

/// The proof of one session: the answered requests and what they prove.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Chain<I> {
    /// The leader touched the session at this moment or later (client clock).
    pub(crate) proven: I,
    /// The latest send time of an answered heartbeat.
    pub(crate) latest: I,
    /// Answered requests, oldest sent first.
    answered: VecDeque<Answer<I>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Answer<I> {
    sent: I,
    answered: I,
    /// A heartbeat (`sync`), which reached the leader: it can be k or m, not only j.
    leader: bool,
    /// A request of this session, which touched it where it was received: only such an answer
    /// can be j. A shared chain's carrier (issue 54) answers for k and m, and touched its own
    /// session, not this one.
    own: bool,
}

impl<I: Copy + Ord + Add<Duration, Output = I>> Chain<I> {
    /// `sent`: when the request that opened the session was sent (the leader created it later).
    pub(crate) fn new(sent: I) -> Chain<I> {
        Chain {
            proven: sent,
            latest: sent,
            answered: VecDeque::new(),
        }
    }

    /// The touch a heartbeat m sent at `t_m` proves once answered: the newest heartbeat k
    /// answered before m was sent, then the newest answered request of this session's own, j,
    /// answered a gap before k was sent.
    fn proves(&self, t_m: I, gap: Duration) -> Option<I> {
        let k = self
            .answered
            .iter()
            .rev()
            .find(|a| a.leader && a.sent < t_m && a.answered <= t_m)?;
        self.answered
            .iter()
            .rev()
            .find(|a| a.own && a.answered + gap <= k.sent)
            .map(|j| j.sent)
    }

    /// A request sent at `sent` was answered at `answered`; `leader` when it was a heartbeat
    /// (`sync`), which reached the leader. Returns the newly proven touch when it moved.
    pub(crate) fn record(
        &mut self,
        sent: I,
        answered: I,
        leader: bool,
        gap: Duration,
    ) -> Option<I> {
        self.insert(sent, answered, leader, true, gap)
    }

    /// A `sync` that a carrier session on this session's member sent at `sent` was answered
    /// at `answered` (issue 54's shared chain): it can be k or m of this session's proof, never
    /// j. The core's carriers (`sessions::carrier`) hand their answers on through it; the model
    /// (`model/src/carrier.rs`) checks it.
    pub(crate) fn record_carried(&mut self, sent: I, answered: I, gap: Duration) -> Option<I> {
        self.insert(sent, answered, true, false, gap)
    }

    fn insert(
        &mut self,
        sent: I,
        answered: I,
        leader: bool,
        own: bool,
        gap: Duration,
    ) -> Option<I> {
        if sent <= self.proven
            || self
                .answered
                .iter()
                .any(|a| a.sent == sent && a.leader == leader && a.own == own)
        {
            // Proves nothing newer, or known already.
            return None;
        }
        self.latest = self.latest.max(sent);
        let at = self.answered.partition_point(|a| a.sent <= sent);
        self.answered.insert(
            at,
            Answer {
                sent,
                answered,
                leader,
                own,
            },
        );
        if self.answered.len() > HISTORY {
            self.answered.pop_front();
        }
        if !leader {
            return None;
        }
        let t_j = self.proves(sent, gap).filter(|&t_j| t_j > self.proven)?;
        self.proven = t_j;
        // Older answers can prove nothing newer.
        self.answered.retain(|a| a.sent >= t_j);
        Some(t_j)
    }

    /// When a heartbeat sent now or later can move the proof: now when a heartbeat sent now
    /// would be m of a newer proof, or k of one (a request answered a gap ago is newer than the
    /// proof); else a gap after the latest answer of this session's own (k then has it for j).
    pub(crate) fn catch_up_at(&self, now: I, gap: Duration) -> I {
        let as_m = self.proves(now, gap).is_some_and(|t| t > self.proven);
        let as_k = self
            .answered
            .iter()
            .rev()
            .find(|a| a.own && a.answered + gap <= now)
            .is_some_and(|a| a.sent > self.proven);
        if as_m || as_k {
            return now;
        }
        self.answered
            .iter()
            .filter(|a| a.own)
            .map(|a| a.answered + gap)
            .max()
            .map_or(now, |at| at.max(now))
    }

    /// Whether an answered request of this session's own was sent after the proven touch: a j
    /// for the next proof. A session sharing a carrier's chain needs one before a carried sync
    /// can move its proof (a carried sync is never j), so when it must catch up without one it
    /// sends a request of its own first, and asks for the carried sync at `catch_up_at`.
    pub(crate) fn has_own_since_proof(&self) -> bool {
        self.answered.iter().any(|a| a.own && a.sent > self.proven)
    }

    /// A request sent at `sent` by a session on the leader was answered (issue 54's leader
    /// skip: the session was created on the leader, its id says so, and has not moved since).
    /// The leader touched the session on receipt, after `sent`, so no chain is needed; but a
    /// deposed leader answers alone half a tick longer past the new leader's start than the
    /// deadline's tick covers, which a chain's j covers by lying a gap before its k. So the
    /// proof is a gap before `sent`. Returns the newly proven touch when it moved. The core
    /// takes it up in issue 54 point 2/3; the model (`model/src/client.rs`) checks it now.
    #[allow(dead_code)]
    pub(crate) fn record_on_leader(&mut self, sent: I, gap: Duration) -> Option<I>
    where
        I: Sub<Duration, Output = I>,
    {
        // Not before `proven + gap`: then `sent - gap` is at least `proven`, never below the
        // clock's start.
        if sent <= self.proven + gap {
            return None;
        }
        self.latest = self.latest.max(sent);
        self.proven = sent - gap;
        Some(self.proven)
    }

    /// The session was re-established by a connect request sent after `sent_after` (see
    /// `Lifeline::reconnected`). Returns the newly proven touch when it moved.
    pub(crate) fn reconnected(&mut self, sent_after: I) -> Option<I> {
        if sent_after > self.proven {
            self.proven = sent_after;
            return Some(sent_after);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    /// The timings the project runs: the bench's and the trust rounds' T = 10 s (tick 2 s),
    /// `make soak-10k`'s T = 4 s (tick 500 ms), the longest tick at T = 4 s, Curator's default
    /// 60 s, and the shortest T at a 400 ms tick.
    const TIMINGS: [(u64, u64); 5] = [
        (10_000, 2_000),
        (4_000, 500),
        (4_000, 1_000),
        (60_000, 2_000),
        (2_000, 400),
    ];

    #[test]
    fn the_carrier_interval_is_what_a_proof_spares_beyond_floor_ping_and_gap_halved_where_sharing_fits(
    ) {
        let expected = [
            Some(ms(7600 - 1900 - 1050 - 100).saturating_sub(ms(10_000) / 3) / 2),
            Some((ms(3220 - 805 - 300 - 100) - ms(4000) / 3) / 2),
            None,
            Some(ms(10_650)),
            None,
        ];
        for ((t, tick), expected) in TIMINGS.into_iter().zip(expected) {
            let (timeout, tick) = (ms(t), ms(tick));
            let interval = carrier_interval(timeout, tick);
            assert_eq!(
                sharing_fits(timeout, tick),
                expected.is_some(),
                "{t} ms/{tick:?}"
            );
            assert_eq!(
                interval,
                expected.unwrap_or(MIN_CARRIER_INTERVAL),
                "{t} ms/{tick:?}"
            );
        }
        // The doc comment's 608 ms at T = 10 s and 341 ms (340.8) at T = 4 s.
        assert_eq!(carrier_interval(ms(10_000), SAMPLE_TICK).as_millis(), 608);
        assert_eq!(carrier_interval(ms(4_000), ms(500)).as_millis(), 340);
        // Nor at the model's own T = 2 s and tick 500 ms.
        assert!(!sharing_fits(ms(2_000), ms(500)));
    }

    /// The derivation, run on the real chain: a sharer whose only requests of its own are the
    /// transport's pings, and a carrier syncing every `carrier_interval` from any phase, with
    /// round trips of 1 ms and of the 50 ms allowed: just before every answer (the deadline
    /// only moves then) it is still `floor` ahead.
    #[test]
    fn a_sharer_that_only_pings_stays_a_floor_ahead_on_its_carriers_syncs() {
        for (t, tick) in TIMINGS {
            let (timeout, tick) = (ms(t), ms(tick));
            if !sharing_fits(timeout, tick) {
                continue;
            }
            let (interval, ping) = (carrier_interval(timeout, tick), ping_interval(timeout));
            for rtt in [ms(1), CARRIED_RTT] {
                for phase in 0..10u32 {
                    let phase = interval * phase / 10;
                    let horizon = ping * 12;
                    // (sent, answered, carried), in the order the answers come.
                    let mut answers = Vec::new();
                    let mut at = ping;
                    while at < horizon {
                        answers.push((at, at + rtt, false));
                        at += ping;
                    }
                    let mut at = phase;
                    while at < horizon {
                        answers.push((at, at + rtt, true));
                        at += interval;
                    }
                    answers.sort_by_key(|&(sent, answered, _)| (answered, sent));
                    let mut chain = Chain::new(Duration::ZERO);
                    for (sent, answered, carried) in answers {
                        let lead = deadline(chain.proven, timeout, tick).saturating_sub(answered);
                        assert!(
                            lead >= floor(timeout, tick),
                            "{timeout:?}/{tick:?}, rtt {rtt:?}, phase {phase:?}: \
                             {lead:?} ahead at {answered:?}"
                        );
                        if carried {
                            chain.record_carried(sent, answered, gap(tick));
                        } else {
                            chain.record(sent, answered, false, gap(tick));
                        }
                    }
                    assert!(chain.proven >= horizon - ping * 2, "the proof moves");
                }
            }
        }
    }
}
