//! Holder A's side: its client's schedule, what its lifeline records, and its farewell.

use crate::{lifeline_math, ms_, LeaseModel, Link, Mutation, Request, State};

impl LeaseModel {
    /// The farewell of a given-up session (`farewell.rs`, `Farewell::step`): sent once (1) its
    /// time has come, the first moment the leader could have expired the session on its own by
    /// the proof (`proven + T`) and at least `margin + tick` after the give-up, and (2) the
    /// holder let go; skipped if (2) has not come one session timeout after the give-up. It
    /// goes on a fresh connection to every member, ConnectRequest then CloseSession, which the
    /// member receiving it closes (`ZooKeeperServer.processConnectRequest` revalidates the
    /// session, then `closeSession` goes through the leader): the model lets it close the
    /// session at once, the soonest it could. Under mutation (c) it goes with the give-up.
    pub(crate) fn farewell_step(&self, s: &mut State) {
        let Some((given_up, proven)) = s.given_up_at else {
            return;
        };
        if !self.farewell || s.farewell_done {
            return;
        }
        let send = match self.mutation {
            Mutation::FarewellFirst => true,
            _ => {
                let timeout = self.timeout();
                let keep_back = lifeline_math::margin(timeout) + self.client_tick();
                let keep_back = u32::try_from(keep_back.as_millis()).unwrap_or(u32::MAX);
                let due = (proven + self.timeout_ms).max(given_up + keep_back);
                if self.client_now(s) >= given_up + self.timeout_ms {
                    s.farewell_done = true;
                    return;
                }
                self.client_now(s) >= due && s.let_go
            }
        };
        if send {
            s.farewell_done = true;
            if !s.expired {
                s.expired = true;
                s.farewell_closed = true;
            }
        }
    }

    /// What the client sends at this moment: while A runs its own chain, a heartbeat on the
    /// schedule of `sessions/session/tasks.rs` (every `beat_interval`, at most
    /// `MAX_BEATS_IN_FLIGHT` waiting, or at once to catch up when the deadline is less than
    /// `floor` ahead and a heartbeat can move the proof); while it shares a carrier's chain,
    /// only what a catch-up needs (`sharer_catches_up`), C's syncs going on their own
    /// schedule; and the transport's ping after a third of the session timeout without a send
    /// (`wire`'s connection).
    pub(crate) fn client_sends(&self, s: &mut State) {
        // After a reconnect, or a fallback from a carrier, the next heartbeat goes at once
        // (`relinked`, taken only by an active session).
        let relinked = s.active && std::mem::take(&mut s.relinked);
        let asked = if s.carrier.is_some() {
            self.sharer_catches_up(s)
        } else {
            self.own_heartbeat(s, relinked);
            false
        };
        // C's sync goes when A asks for one, and on its own schedule (C's own connection, its
        // own limit).
        self.carrier_sends(s, asked);
        // The transport pings on its own, whatever the heartbeats do.
        if s.pings_in_flight == 0
            && s.reconnecting.is_none()
            && self.client_now(s) >= s.last_send + self.timeout_ms / 3
        {
            s.pings_in_flight += 1;
            self.send(s, false, false);
        }
    }

    /// A's own chain's heartbeat, when due.
    fn own_heartbeat(&self, s: &mut State, relinked: bool) {
        let (timeout, tick) = (self.timeout(), self.client_tick());
        let now = ms_(self.client_now(s));
        let interval = lifeline_math::beat_interval(timeout, tick);
        // An idle session sends no heartbeat (`Session::is_active`).
        let mut beat =
            s.active && (relinked || s.last_beat.is_none_or(|b| now >= ms_(b) + interval));
        if !beat
            && s.active
            && s.beats_in_flight == 0
            && ms_(self.deadline_ms(s)) < now + lifeline_math::floor(timeout, tick)
        {
            beat = s.chain.catch_up_at(now, lifeline_math::gap(tick)) <= now;
        }
        if !beat {
            return;
        }
        s.last_beat = Some(self.client_now(s));
        // Without a connection (a reconnect under way) the `sync` fails at once.
        if s.reconnecting.is_none()
            && u64::from(s.beats_in_flight) < lifeline_math::MAX_BEATS_IN_FLIGHT
        {
            s.beats_in_flight += 1;
            // Under mutation (d) a heartbeat is a plain ping, which the member answers alone;
            // so it is on the leader skip.
            let sync = self.mutation != Mutation::PingsAndSyncLimit && !self.skips_chain(s);
            self.send(s, sync, true);
        }
    }

    /// A sharing C's chain sends nothing of its own but the transport's pings and its
    /// program's reads while its deadline is `floor` ahead or more, which C's syncs every
    /// `carrier_interval` keep it (`lifeline_math::carrier_interval`). Below that (a slow
    /// spell, an acquire from idle) it catches up: with an answer of its own newer than the
    /// proof, it asks C for a sync as soon as one would be k or m (`Chain::catch_up_at`), one
    /// at a time; without one, a carried sync cannot move the proof (it is never j), so A
    /// first sends a plain ping of its own, and asks C a gap after its answer. Returns whether
    /// A asks C for a sync now.
    fn sharer_catches_up(&self, s: &mut State) -> bool {
        let (timeout, tick) = (self.timeout(), self.client_tick());
        let now = ms_(self.client_now(s));
        if !s.active || ms_(self.deadline_ms(s)) >= now + lifeline_math::floor(timeout, tick) {
            return false;
        }
        if !s.chain.has_own_since_proof() {
            // What is on its way is answered after all A's answers so far (one connection,
            // in order): it will be the j. Else a ping of A's own, which its member answers.
            // Not reached in the checks: where sharing fits, the transport's next ping goes
            // out before a proof of the last one comes within `floor` (T/3 is under
            // `keep − floor`); a client whose chain records nothing while idle would need it.
            if s.beats_in_flight == 0 && s.pings_in_flight == 0 {
                s.beats_in_flight += 1;
                self.send(s, false, true);
            }
            return false;
        }
        s.carrier.as_ref().is_some_and(|c| c.in_flight == 0)
            && s.chain.catch_up_at(now, lifeline_math::gap(tick)) <= now
    }

    pub(crate) fn send(&self, s: &mut State, sync: bool, beat: bool) {
        s.last_send = self.client_now(s);
        if !s.is_cut(Link::ClientToMember) {
            s.to_member.push(Request {
                sync,
                beat,
                connect: false,
                refused: false,
                carrier: false,
                sent: self.client_now(s),
            });
        }
    }

    /// A reads its member's oldest answer, and its lifeline records it.
    pub(crate) fn client_receives(&self, s: &mut State) {
        let r = s.to_client.remove(0);
        if self.reconnect {
            s.last_recv = self.client_now(s);
        }
        if r.connect {
            self.reconnect_answered(s, r);
            return;
        }
        if r.beat {
            s.beats_in_flight -= 1;
        } else {
            s.pings_in_flight -= 1;
        }
        let (sent, answered) = (ms_(r.sent), ms_(self.client_now(s)));
        match self.mutation {
            Mutation::AnyAnswerProves => {
                s.chain.reconnected(sent);
            }
            Mutation::PingsAndSyncLimit => {
                let lag = ms_(self.sync_limit * self.server_tick_ms);
                s.chain.reconnected(sent.saturating_sub(lag));
            }
            // The leader skip (`Chain::record_on_leader`): an answer proves a touch a gap
            // before its send time. A chain's j lies a gap before its k, and that gap is what
            // covers the half tick by which a deposed leader's answers outlast the new leader's
            // start beyond the deadline's tick (`new_leader_at`, `deposed_notices_at`); the
            // skip has no k, so it takes the gap off itself. Mutation (i) does not.
            _ if self.skips_chain(s) => {
                let gap = match self.mutation {
                    Mutation::SkipWithoutGap => std::time::Duration::ZERO,
                    _ => lifeline_math::gap(self.client_tick()),
                };
                s.chain.record_on_leader(sent, gap);
            }
            _ => {
                let gap = lifeline_math::gap(self.client_tick());
                s.chain.record(sent, answered, r.sync, gap);
            }
        }
    }
}
