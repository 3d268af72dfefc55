//! B, the next in the lock's queue, as a client of its own (issue 52): its ephemeral sequential
//! node comes after A's, and it waits on a data watch on A's node (zklock's acquire:
//! `core/src/engine/internals.rs`, `watch_node` → `get_and_watch_data`). B holds once it heard
//! that watch's `NodeDeleted` event (`EventWait::poll` takes only that type for its turn), and,
//! with a lock-delay, only that long later unless A released cleanly
//! (`core/src/recipes/mutex_queue.rs`, `settle`: `released_cleanly`, the marker a clean release
//! writes in the multi of its delete).
//!
//! ZooKeeper deletes A's node when it closes A's session (the leader's expiry, or A's farewell's
//! CloseSession): `SessionTrackerImpl` → `ZooKeeperServer.expire` → `close` → the closeSession
//! transaction, committed and applied by `DataTree.killSession` → `deleteNode`, which fires
//! `dataWatches.triggerWatch(path, NodeDeleted)` (`WatchManager.triggerWatch`: a watch fires
//! once and is removed). By default the model fires it at the moment the session closes, on
//! the member B is connected to, which stands for the member that applies the close first: no
//! member can apply it sooner, so B hears the soonest it could. With
//! `LeaseModel::b_on_follower` B is on A's follower, which applies the close when it reads the
//! leader's commit on its learner stream. The event goes to B on B's own link, which may be
//! slow (`Disturb::BLinkSlow`) or cut (`Link::MemberToB`: the event is lost with the
//! connection). B's session stays alive (B's own lifeline is not modelled).
//!
//! A broken connection (cut, or closed by a follower that lost its leader) is seen by B at some
//! later moment (its read timeout; the model lets it come at any moment, `Action::BReconnects`):
//! B reconnects to the leader and its client sends `SetWatches` with the watch, and
//! `DataTree.setWatches` fires `NodeDeleted` at once for a data watch on a node that is gone,
//! else sets the watch again.

use crate::{Down, LeaseModel, Link, Member, Mutation, State};

impl LeaseModel {
    /// Whether B holds: it heard A's node deleted, and waited the lock-delay unless A released
    /// cleanly (mutation (k) never waits).
    pub fn b_holds(&self, s: &State) -> bool {
        let Some(heard) = s.b_heard else {
            return false;
        };
        let delay = match self.mutation {
            Mutation::SkipLockDelay => 0,
            _ if s.released => 0,
            _ => self.lock_delay_ms,
        };
        s.now >= heard + delay
    }

    /// Whether B holds too soon after A's lease turned `lost` (`DELAYED`): A's node went without
    /// a clean release and the lock-delay since A's `lost` has not passed. A lease never
    /// granted (`armed`) has no holder to protect.
    pub fn too_soon(&self, s: &State) -> bool {
        self.lock_delay_ms > 0
            && s.armed
            && !s.released
            && self.b_holds(s)
            && s.lost_at
                .is_none_or(|lost| s.now < lost + self.lock_delay_ms)
    }

    /// ZooKeeper deleted A's node (its session closed, or A released it): B's watch fires, and
    /// its `NodeDeleted` event goes out on B's link unless that is cut or closed. On a follower
    /// the watch fires only when the follower applies the commit, which comes down its learner
    /// stream after what the leader sent before (lost with that stream).
    pub(crate) fn node_deleted(&self, s: &mut State) {
        if s.fired || !(s.expired || s.released) {
            return;
        }
        s.fired = true;
        if s.b_on == Member::Follower {
            let crashed = matches!(s.crashed, Some((Member::Follower, _))) && !s.restarted;
            if !s.follower_dropped && !crashed && !s.is_cut(Link::LeaderToFollower) {
                s.down.push(Down::Commit);
            }
            return;
        }
        s.to_b = !s.is_cut(Link::MemberToB) && !s.b_closed;
    }

    /// The follower applied the commit that deleted A's node: B's watch fires there.
    pub(crate) fn b_watch_fires_on_follower(&self, s: &mut State) {
        if s.b_on == Member::Follower && !s.b_closed {
            s.to_b = !s.is_cut(Link::MemberToB);
        }
    }

    /// The follower B is on closes B's connection (it lost its leader, or crashed), after what
    /// it sent before. B on the leader is on the member that deletes A's node first, the new
    /// leader after a crash (which the model starts at the crash): nothing closes it.
    pub(crate) fn close_b_on(&self, s: &mut State, member: Member) {
        if member == Member::Follower && s.b_on == member && s.b_heard.is_none() {
            s.b_closed = true;
        }
    }

    /// B's connection is broken and B has yet to see it: cut, or closed by its member and read
    /// to the close.
    pub(crate) fn b_broken(&self, s: &State) -> bool {
        s.b_heard.is_none() && (s.is_cut(Link::MemberToB) || (s.b_closed && !s.to_b))
    }

    /// A's holder releases its lease (`Lease::release`): the lease stops reading `held` before
    /// the delete goes out, and the delete with its marker is committed at once (the soonest).
    /// The session goes on (no farewell: the lease was not lost).
    pub(crate) fn release_cleanly(&self, s: &mut State) {
        s.released = true;
        s.farewell_done = true;
        self.node_deleted(s);
        if s.to_b {
            b_receives(self, s);
        }
    }

    /// B sees its connection break and reconnects (a new TCP stream, uncut), to the leader:
    /// `SetWatches` fires `NodeDeleted` at once if A's node is gone, else the watch is set
    /// again. Under mutation (j) the connection's loss itself is taken for B's turn.
    pub(crate) fn b_reconnects(&self, s: &mut State) {
        s.cut.retain(|&l| l != Link::MemberToB);
        s.b_closed = false;
        s.b_on = Member::Leader;
        if self.mutation == Mutation::BTurnOnAnyEvent {
            s.b_heard = Some(s.now);
            return;
        }
        if s.fired {
            s.to_b = true;
            b_receives(self, s);
        }
    }
}

/// B reads its watch's `NodeDeleted` event. When it heard it matters only to a lock-delay:
/// without one the moment is not kept (two runs that differ only there are one state).
pub(crate) fn b_receives(model: &LeaseModel, s: &mut State) {
    s.to_b = false;
    if s.b_heard.is_none() {
        s.b_heard = Some(if model.lock_delay_ms > 0 { s.now } else { 0 });
    }
}
