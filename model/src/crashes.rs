//! A member crashing (`LeaseModel::crash`): its process ends, so its sockets close at once, what
//! it had not sent is lost, and so is its touch table.
//!
//! - The follower: the leader's `LearnerHandler` for it reads the close and ends (`run`'s read
//!   fails, `shutdown`), so no more pings and no more of its touches; its clients read the close
//!   of their connections and reconnect elsewhere. When it restarts it rejoins with a new touch
//!   table and no client of ours (A moved), which changes nothing here: not modelled.
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
        if member == Member::Leader {
            self.close_carrier_on(s, Member::Follower);
        }
        if a_on_crashed {
            s.to_member.clear();
            if !s.is_cut(Link::MemberToClient) {
                s.closed_by_member = true;
            }
        }
    }
}
