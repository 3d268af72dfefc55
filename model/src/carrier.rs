//! The shared chain (issue 54, point 1): a carrier session C of A's process, connected to A's
//! member, sends a `sync` every `carrier_interval` on its own connection, whatever A does, and
//! its answers feed A's chain as k and m, never j (`Chain::record_carried`: they touched C's
//! session, not A's). A sends no heartbeat of its own while its deadline is `floor` ahead or
//! more: its own requests are the transport's pings (every T/3) and its program's reads, whose
//! answers are its j candidates (`Chain::record`, `leader: false`), and `carrier_interval` is
//! chosen so that these keep it `floor` ahead. Below `floor` it catches up (src/client.rs,
//! `sharer_catches_up`): it asks C for a sync at once when one would be k or m, and first
//! sends a ping of its own when it has no answer newer than the proof. The member is known
//! from the session id: the server that creates a session puts its own id in the id's top
//! byte (`SessionTrackerImpl.initializeNextSessionId`; a follower's `LearnerSessionTracker`
//! seeds it with its `serverId`), and a TCP connection never changes its backend. So A shares from its
//! start until its own connection breaks (it moves: its member is unknown then) or C's
//! connection breaks (closed by its member, or silent for the read timeout); from then on A
//! runs its own sync chain, keeping the answers it has (C's among them), and sends its next
//! heartbeat, a `sync`, at once. The model does not let A share again.
//!
//! Why the proof still holds: j's touch is on A's member (it answered j), and k and m pass
//! through the same member's learner stream behind its ping replies, exactly as A's own syncs
//! would; only the TCP connection from the client differs, and the member reads the two
//! connections in any order (the model's disturbed steps hold either one). Mutation (f) puts C
//! on the other member, where its syncs never pass A's member's learner stream.

use crate::{lifeline_math, ms_, LeaseModel, Link, Member, Request, State, Up};

/// The carrier's connection, as A's process sees it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Carrier {
    /// The member C is connected to: A's, or the other one under mutation (f).
    pub on: Member,
    pub to_member: Vec<Request>,
    pub to_client: Vec<Request>,
    pub in_flight: u8,
    /// When C last read anything, or sent with nothing in flight (A's clock, ms).
    pub last_recv: u32,
    /// When C last sent a sync (A's clock, ms).
    pub last_beat: Option<u32>,
    /// C's member closed C's connection: C reads the close after what came before it.
    pub closed: bool,
}

impl Carrier {
    pub(crate) fn new(on: Member) -> Carrier {
        Carrier {
            on,
            to_member: Vec::new(),
            to_client: Vec::new(),
            in_flight: 0,
            last_recv: 0,
            last_beat: None,
            closed: false,
        }
    }
}

impl LeaseModel {
    /// Where C connects: A's member, or under mutation (f) the other one.
    pub(crate) fn carrier_member(&self, a_on: Member) -> Member {
        match (self.mutation, a_on) {
            (crate::Mutation::CarrierElsewhere, Member::Follower) => Member::Leader,
            (crate::Mutation::CarrierElsewhere, Member::Leader) => Member::Follower,
            (_, on) => on,
        }
    }

    /// C sends a `sync` every `carrier_interval` on its own, whatever A does (the process's
    /// other sessions may need it, and it keeps A's proof `floor` ahead with A's pings alone),
    /// and at once when A, catching up, asks for one (`asked`; its next then an interval
    /// later); at most `MAX_BEATS_IN_FLIGHT` of C's wait.
    pub(crate) fn carrier_sends(&self, s: &mut State, asked: bool) {
        let now = self.client_now(s);
        let cut = s.is_cut(Link::CarrierToMember);
        let interval = lifeline_math::carrier_interval(self.timeout(), self.client_tick());
        let Some(c) = s.carrier.as_mut() else {
            return;
        };
        let due = asked || c.last_beat.is_none_or(|b| ms_(now) >= ms_(b) + interval);
        if !due {
            return;
        }
        c.last_beat = Some(now);
        if u64::from(c.in_flight) >= lifeline_math::MAX_BEATS_IN_FLIGHT {
            return;
        }
        if c.in_flight == 0 {
            c.last_recv = c.last_recv.max(now);
        }
        c.in_flight += 1;
        if !cut {
            c.to_member.push(Request {
                sync: true,
                beat: true,
                connect: false,
                refused: false,
                carrier: true,
                sent: now,
            });
        }
    }

    /// C's member reads C's oldest request. C's requests touch C's session, never A's: on a
    /// follower the sync goes on to the leader behind the ping replies; on the leader (mutation
    /// (f)) it is answered at once.
    pub(crate) fn carrier_member_receives(&self, s: &mut State) {
        let Some(mut c) = s.carrier.take() else {
            return;
        };
        let r = c.to_member.remove(0);
        match c.on {
            Member::Follower => {
                if !self.follower_lost_leader(s)
                    && !s.is_cut(Link::FollowerToLeader)
                    && !s.follower_dropped
                {
                    s.up.push(Up::Sync(r));
                }
            }
            Member::Leader => {
                if !s.is_cut(Link::MemberToCarrier) {
                    c.to_client.push(r);
                }
            }
        }
        s.carrier = Some(c);
    }

    /// The follower passes the leader's answer to C's sync on to C.
    pub(crate) fn carrier_answer_from_leader(&self, s: &mut State, r: Request) {
        let cut = s.is_cut(Link::MemberToCarrier);
        if let Some(c) = s.carrier.as_mut() {
            if c.on == Member::Follower && !cut {
                c.to_client.push(r);
            }
        }
    }

    /// C reads its oldest answer, and A's chain records it as a heartbeat through the leader.
    pub(crate) fn carrier_receives(&self, s: &mut State) {
        let now = self.client_now(s);
        let Some(c) = s.carrier.as_mut() else {
            return;
        };
        let r = c.to_client.remove(0);
        c.in_flight -= 1;
        c.last_recv = now;
        let gap = lifeline_math::gap(self.client_tick());
        // k or m, never j: C's sync touched C's session, not A's (`Chain::record_carried`).
        if self.mutation == crate::Mutation::CarriedAsOwn {
            s.chain.record(ms_(r.sent), ms_(now), true, gap);
        } else {
            s.chain.record_carried(ms_(r.sent), ms_(now), gap);
        }
    }

    /// C sees its connection break (its member closed it, and C read what came before; or it
    /// read nothing for the read timeout with syncs waiting): A stops sharing and runs its own
    /// chain, its next heartbeat (a `sync`) at once.
    pub(crate) fn carrier_notices_break(&self, s: &mut State) {
        let now = self.client_now(s);
        let Some(c) = s.carrier.as_ref() else {
            return;
        };
        let closed = c.closed && c.to_client.is_empty();
        let silent = c.in_flight > 0 && now >= c.last_recv + self.read_timeout_ms();
        if closed || silent {
            self.stop_sharing(s);
            s.relinked = true;
        }
    }

    /// A no longer shares: C's connection broke, or A's did (A's member is unknown once it
    /// moves). C's syncs still on their way are not fed to A any more.
    pub(crate) fn stop_sharing(&self, s: &mut State) {
        s.carrier = None;
    }

    /// A member closes C's connection (a follower that lost its leader, a crashed member): C
    /// reads the close after what it was sent before, unless that direction is cut (then only
    /// its read timeout tells it).
    pub(crate) fn close_carrier_on(&self, s: &mut State, member: Member) {
        let cut = s.is_cut(Link::MemberToCarrier);
        if let Some(c) = s.carrier.as_mut() {
            if c.on == member {
                c.to_member.clear();
                if !cut {
                    c.closed = true;
                }
            }
        }
    }

    /// The leader skip (issue 54): A's session was created on the leader (its id says so) and
    /// has not moved, so the leader touches it on receipt of every request, and an answered
    /// request sent at t_j proves a touch at t_j or later: no chain. Mutation (g) applies it on
    /// a follower as well.
    pub(crate) fn skips_chain(&self, s: &State) -> bool {
        self.leader_skip
            && !s.moved
            && (s.a_on == Member::Leader || self.mutation == crate::Mutation::SkipOnFollower)
    }
}
