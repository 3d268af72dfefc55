//! The servers' side: the leader's expiry, its pings and its drop of a silent follower, the
//! follower's touch table and its learner stream, and what each member does with A's requests.
//! Each behaviour names the ZooKeeper 3.8 source it comes from (model/README.md has the table).

use crate::{LeaseModel, Link, Member, Request, State};

/// From a follower to its leader, on one stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Up {
    /// The reply to a leader PING, with whether A's session was touched since the last one
    /// (`LearnerSessionTracker`'s touch table).
    PingReply { touched: bool },
    /// A's `sync`, forwarded (`FollowerRequestProcessor`).
    Sync(Request),
    /// A's ConnectRequest reached the follower, which asks the leader to revalidate the
    /// session (`LearnerZooKeeperServer.revalidateSession` → `Learner.validateSession`).
    Revalidate(Request),
}

/// From the leader to a follower, on one stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Down {
    Ping,
    /// The leader's answer to a forwarded `sync` (`Leader.processSync`).
    SyncDone(Request),
    /// The leader's answer to a `REVALIDATE` (`Leader.revalidateSession`).
    Revalidated(Request),
    /// The commit of the closeSession that deleted A's node (`Leader.commit`, after its
    /// proposal on the same stream): the follower applies it (`FinalRequestProcessor` →
    /// `DataTree.killSession`) and fires the watches of its own clients (B's, src/b.rs).
    Commit,
    /// The leader dropped the follower (`LearnerHandler.run`: nothing read for `syncLimit`
    /// ticks, `shutdown`): its connection closes after what it sent.
    Closed,
}

impl LeaseModel {
    /// When the leader expires a session last touched at `touch`: T later, rounded up to the
    /// next tick (`ExpiryQueue.roundToNextInterval`: `(time / interval + 1) * interval`).
    pub fn expiry_ms(&self, touch: u32) -> u32 {
        ((touch + self.timeout_ms) / self.server_tick_ms + 1) * self.server_tick_ms
    }

    /// A leader that lost its quorum at `d` notices at most `syncLimit + 1` ticks later (its
    /// check runs on the tick, `LearnerHandler.synced`, `Leader.lead`).
    pub(crate) fn deposed_notices_at(&self, d: u32) -> u32 {
        d + (self.sync_limit + 1) * self.server_tick_ms
    }

    /// Its followers stopped hearing it at the earliest half a tick before `d`, and elect a
    /// new leader `syncLimit` ticks later (the election itself only adds to our side).
    pub(crate) fn new_leader_at(&self, d: u32) -> u32 {
        (d + self.sync_limit * self.server_tick_ms).saturating_sub(self.server_tick_ms / 2)
    }

    /// When the new leader expires A's session: T after it started, or after its last touch of
    /// the session once A reconnected to it.
    pub(crate) fn new_leader_expiry_ms(&self, s: &State, d: u32) -> u32 {
        let started = self.new_leader_at(d);
        self.expiry_ms(s.new_leader_touch.map_or(started, |t| t.max(started)))
    }

    /// The follower dropped its clients: it read that its leader closed its connection, or
    /// heard nothing for `syncLimit` ticks (`Learner`'s socket timeout), unless its JVM resumed
    /// this very step from a pause and its client threads ran before its learner thread.
    pub(crate) fn follower_lost_leader(&self, state: &State) -> bool {
        state.follower_closed
            || (!state.resumed
                && state.now >= state.follower_heard + self.sync_limit * self.server_tick_ms)
    }

    /// What the servers do as time moves one step, before anything is delivered.
    pub(crate) fn servers_step(&self, s: &mut State) {
        // The leader drops a follower it read nothing from for `syncLimit` ticks: its
        // `LearnerHandler.run` reads with `sock.setSoTimeout(syncTimeout())`, and a
        // timeout ends in `shutdown`, which closes the socket. The follower reads the
        // close after what was sent before it.
        if self.has_follower()
            && !s.follower_dropped
            && s.now >= s.leader_heard + self.sync_limit * self.server_tick_ms
        {
            s.follower_dropped = true;
            s.up.clear();
            if !s.is_cut(Link::LeaderToFollower) {
                s.down.push(Down::Closed);
            }
        }
        match s.deposed {
            None => {
                if !s.expired && s.now >= self.expiry_ms(s.leader_touch) {
                    s.expired = true;
                }
            }
            // A deposed leader commits nothing; the new one started every session's
            // clock afresh when it started, and A's requests reach it only once A
            // reconnected to it.
            Some(d) => {
                let started = self.new_leader_at(d);
                if s.now >= started && s.now >= self.new_leader_expiry_ms(s, d) {
                    s.expired = true;
                }
                // On noticing, it closes its clients' connections (`Leader.lead` ends in
                // `shutdown`, `QuorumPeer.run`): A reads the close after what came before.
                if self.reconnect
                    && !s.moved
                    && s.now >= self.deposed_notices_at(d)
                    && !s.is_cut(Link::MemberToClient)
                {
                    s.closed_by_member = true;
                }
            }
        }
        // The leader pings every learner every half tick (`Leader.lead`).
        while s.now >= s.next_ping {
            s.next_ping += self.server_tick_ms / 2;
            if self.has_follower() && !s.follower_dropped && !s.is_cut(Link::LeaderToFollower) {
                s.down.push(Down::Ping);
            }
        }
    }

    /// A's member reads A's oldest request.
    pub(crate) fn member_receives(&self, s: &mut State) {
        let r = s.to_member.remove(0);
        if !self.a_on_follower(s) {
            if s.deposed.is_some() && s.moved {
                // A reconnected from the deposed leader to the new one, which touches the
                // session on the ConnectRequest and every request after it.
                let refused = s.expired;
                if !refused {
                    s.new_leader_touch = Some(s.now);
                }
                s.push_to_client(Request { refused, ..r });
                return;
            }
            if s.deposed
                .is_some_and(|d| s.now >= self.deposed_notices_at(d))
            {
                // The deposed leader noticed and closed its clients' connections.
                return;
            }
            if r.connect {
                // A reconnect: `ZooKeeperServer.processConnectRequest` → `reopenSession` →
                // `revalidateSession` (`LeaderZooKeeperServer` calls its super's), which
                // touches the session (`SessionTrackerImpl.touchSession`), or finds it gone
                // and refuses (`finishSessionInit(cnxn, false)`: the client reads expired).
                let refused = s.expired;
                if !refused {
                    s.leader_touch = s.now;
                }
                s.push_to_client(Request { refused, ..r });
                return;
            }
            // The leader touches on receipt and answers in order.
            if !s.expired {
                s.leader_touch = s.now;
            }
            s.push_to_client(r);
        } else if r.connect {
            // A reconnect on a follower: the leader revalidates (and touches) the session; the
            // follower touches nothing itself.
            if !self.follower_lost_leader(s)
                && !s.is_cut(Link::FollowerToLeader)
                && !s.follower_dropped
            {
                s.up.push(Up::Revalidate(r));
            }
        } else if !self.follower_lost_leader(s) {
            // Every request touches the session where it is received
            // (`ZooKeeperServer.submitRequestNow`); a sync goes on to the leader.
            s.follower_touched = true;
            if !r.sync {
                s.push_to_client(r);
            } else if !s.is_cut(Link::FollowerToLeader) && !s.follower_dropped {
                s.up.push(Up::Sync(r));
            }
        }
        // A follower that lost its leader has closed its clients' connections.
    }
}

/// The leader reads the follower's oldest message.
pub(crate) fn leader_receives(s: &mut State) {
    s.leader_heard = s.now;
    match s.up.remove(0) {
        Up::PingReply { touched } => {
            if touched && !s.expired {
                s.leader_touch = s.now;
            }
        }
        Up::Sync(r) => {
            if !s.is_cut(Link::LeaderToFollower) {
                s.down.push(Down::SyncDone(r));
            }
        }
        // `LearnerHandler.run` (`case Leader.REVALIDATE`) → `Leader.revalidateSession` →
        // `LeaderZooKeeperServer.checkIfValidGlobalSession` → `touchSession`.
        Up::Revalidate(r) => {
            let refused = s.expired;
            if !refused {
                s.leader_touch = s.now;
            }
            if !s.is_cut(Link::LeaderToFollower) {
                s.down.push(Down::Revalidated(Request { refused, ..r }));
            }
        }
    }
}

impl LeaseModel {
    /// Whether A's connection is to the follower (it starts there and has not moved).
    pub(crate) fn a_on_follower(&self, s: &State) -> bool {
        s.a_on == Member::Follower
    }

    /// Whether there is a follower: A starts on it, or may move to it.
    pub(crate) fn has_follower(&self) -> bool {
        self.on_follower || self.with_follower
    }

    /// A follower that lost its leader closes its clients' connections (`Learner.shutdown`:
    /// `self.closeAllConnections()`), once its JVM runs; A reads the close after what the
    /// follower sent before it, unless that direction is cut (then only A's read timeout
    /// tells it). Kept only when A may reconnect: without, A's requests are simply lost.
    pub(crate) fn follower_closes_clients(&self, s: &mut State) {
        let paused = s.paused_until.is_some_and(|until| s.now < until);
        // The carrier's connection closes whether or not A may reconnect: A must learn that its
        // carrier is gone, and falls back to its own chain.
        if !paused && self.follower_lost_leader(s) {
            self.close_carrier_on(s, Member::Follower);
            self.close_b_on(s, Member::Follower);
        }
        if self.reconnect
            && self.a_on_follower(s)
            && !s.closed_by_member
            && !paused
            && !s.is_cut(Link::MemberToClient)
            && self.follower_lost_leader(s)
        {
            s.closed_by_member = true;
        }
    }

    /// The follower reads the leader's oldest message.
    pub(crate) fn follower_receives(&self, s: &mut State) {
        s.follower_heard = s.now;
        match s.down.remove(0) {
            Down::Ping => {
                let touched = std::mem::take(&mut s.follower_touched);
                if !s.is_cut(Link::FollowerToLeader) && !s.follower_dropped {
                    s.up.push(Up::PingReply { touched });
                }
            }
            Down::SyncDone(r) if r.carrier => self.carrier_answer_from_leader(s, r),
            // An answer to A's old connection after A moved is lost with that connection.
            Down::SyncDone(r) if self.a_on_follower(s) => s.push_to_client(r),
            Down::SyncDone(_) => {}
            // `Learner.revalidate` → `finishSessionInit`: the ConnectResponse.
            Down::Revalidated(r) if self.a_on_follower(s) => s.push_to_client(r),
            Down::Revalidated(_) => {}
            Down::Commit => self.b_watch_fires_on_follower(s),
            Down::Closed => {
                s.follower_closed = true;
                // It drops its clients: what it had not answered is lost.
                if self.a_on_follower(s) {
                    s.to_member.clear();
                }
                if let Some(c) = s.carrier.as_mut().filter(|c| c.on == Member::Follower) {
                    c.to_member.clear();
                }
            }
        }
    }
}
