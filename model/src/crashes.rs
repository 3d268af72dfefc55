//! A member crashing (`LeaseModel::crash`): its process ends, so its sockets close at once, what
//! it had not sent is lost, and so is its touch table.
//!
//! - The follower: the leader's `LearnerHandler` for it reads the close and ends (`run`'s read
//!   fails, `shutdown`), so no more pings and no more of its touches; its clients read the close
//!   of their connections and reconnect elsewhere. With `LeaseModel::restart` it restarts once,
//!   at any later moment (`restart_follower`): it rejoins its leader on a new connection with an
//!   empty touch table (`LearnerSessionTracker` is made afresh with the `Learner`), the leader's
//!   new `LearnerHandler` pings it again, and A may dial it again.
//! - The leader: its followers read the close, go back to the election (`Learner.shutdown` →
//!   `closeAllConnections`: their clients are dropped too) and follow the new leader, which
//!   starts every session's clock afresh (`SessionTrackerImpl`'s constructor gives every session
//!   in its snapshot a full timeout) and pings them from then on. The model lets the new leader
//!   start at the crash, the soonest (its expiry the soonest too), in the leader's place:
//!   `leader_touch` becomes the crash's moment, and A's reconnect reaches it.

use crate::{LeaseModel, Link, State};

/// Which member crashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Member {
    Leader,
    Follower,
}

impl LeaseModel {
    /// The crashed follower restarts: `QuorumPeer.run` (`FOLLOWING`) makes a new `Follower`,
    /// which connects to the leader (`Learner.connectToLeader`, a new socket: the old streams'
    /// cuts do not apply), syncs (`syncWithLeader`) and then serves; the leader's new
    /// `LearnerHandler` reads it and pings it every half tick. Its touch table starts empty,
    /// and it has no client until one dials it.
    pub(crate) fn restart_follower(&self, s: &mut State) {
        s.restarted = true;
        s.follower_dropped = false;
        s.follower_closed = false;
        s.follower_touched = false;
        s.up.clear();
        s.down.clear();
        s.leader_heard = s.now;
        s.follower_heard = s.now;
        s.cut
            .retain(|l| !matches!(l, Link::FollowerToLeader | Link::LeaderToFollower));
    }

    pub(crate) fn crash_member(&self, s: &mut State, member: Member) {
        s.crashed = Some((member, s.now));
        // The learner stream breaks either way; the follower's unreported touches are lost.
        s.up.clear();
        s.down.clear();
        s.follower_touched = false;
        let a_was_on_follower = self.a_on_follower(s);
        match member {
            Member::Follower => {
                s.follower_dropped = true;
                s.follower_closed = true;
            }
            Member::Leader => {
                if !s.expired {
                    s.leader_touch = s.now;
                }
                // The follower rejoins the new leader at once (with a new table).
                s.leader_heard = s.now;
                s.follower_heard = s.now;
                s.follower_dropped = false;
                s.follower_closed = false;
            }
        }
        // A's connection ends with its member: the requests it had not read are lost, the
        // answers it had sent still come, then the close (unless that direction is cut).
        let a_on_crashed = match member {
            Member::Follower => a_was_on_follower,
            // A follower that loses its leader drops its clients too.
            Member::Leader => true,
        };
        // The carrier's connection ends the same way (a follower that loses its leader drops
        // every client).
        self.close_carrier_on(s, member);
        self.close_b_on(s, member);
        if member == Member::Leader {
            self.close_carrier_on(s, Member::Follower);
            self.close_b_on(s, Member::Follower);
        }
        if a_on_crashed {
            s.to_member.clear();
            if !s.is_cut(Link::MemberToClient) {
                s.closed_by_member = true;
            }
        }
    }
}
