//! A's reconnect to another member with the same session (`LeaseModel::reconnect`), as the
//! client's code does it: `wire/src/client/session.rs` gives a connection up when it closes or
//! when nothing was read on it for the read timeout, then tries the next server at once; the
//! session's monitor (`core/src/sessions/session/tasks.rs`, `monitor`) reads
//! `Lifeline::latest_answered` when it sees the disconnect, and when the session is connected
//! again records it as proven (`Lifeline::reconnected`: the new member touched the session, or
//! had the leader touch it, after the ConnectRequest was sent, which was after that answer)
//! and sends the next heartbeat at once. Everything else of the lifeline (its answers, its
//! proof, its schedule) carries over.

use crate::{ms_, LeaseModel, Link, Member, Request, State};

impl LeaseModel {
    /// The transport's read timeout (A's clock, ms): half the session timeout, the client's
    /// when its connect timeout is over three fifths of T (`Shared::read_timeout`; the core
    /// caps the connect timeout it passes at 5 s, so from T = 8.4 s on it is 5 s instead).
    pub fn read_timeout_ms(&self) -> u32 {
        self.timeout_ms / 2
    }

    /// A sees its connection break: its member closed it (a follower on losing its leader, a
    /// deposed leader on noticing, a crashed member) and A read what came before the close, or
    /// A read nothing on it for the read timeout (from the follower, or from the leader when
    /// there is a follower). Its requests in flight fail (`conn/driver.rs` fails what is
    /// pending before it reports the close), what the old connection still held is lost (its
    /// member would only have touched the session more), and a ConnectRequest with the session
    /// goes to the other member at once (a connection that served a second is redialled
    /// without a pause).
    pub(crate) fn notice_disconnect(&self, s: &mut State) {
        // A given-up session is closed (`Session::give_up`): it reconnects no more.
        if !self.reconnect || s.given_up {
            return;
        }
        let closed = s.closed_by_member && s.to_client.is_empty();
        if s.reconnecting.is_some() && !closed {
            return;
        }
        // A silent connection is given up once, for the other member (`with_follower`: from
        // the leader to the follower); a closed one every time, for the leader (a follower's
        // close: A moves to the leader; a crashed leader's: to the new one). A reconnect to
        // the same member is not modelled. A follower that restarted after its crash is a
        // member A may dial again: a silent connection to the leader is given up for it once.
        let back = s.restarted && !s.back && !self.a_on_follower(s);
        let silent = (back || (!s.moved && (self.a_on_follower(s) || self.with_follower)))
            && self.client_now(s) >= s.last_recv + self.read_timeout_ms();
        if !closed && !silent {
            return;
        }
        // The monitor keeps what it read at the first disconnect until it sees a connection.
        let latest = u32::try_from(s.chain.latest.as_millis()).unwrap_or(u32::MAX);
        s.reconnecting = Some(s.reconnecting.unwrap_or(latest));
        s.a_on = if closed || self.a_on_follower(s) {
            Member::Leader
        } else {
            s.back = s.restarted;
            Member::Follower
        };
        s.moved = true;
        // Its member is unknown now: it runs its own chain.
        self.stop_sharing(s);
        s.closed_by_member = false;
        s.to_member.clear();
        s.to_client.clear();
        s.beats_in_flight = 0;
        s.pings_in_flight = 0;
        // The new connection is another TCP stream: the old one's cuts do not apply to it (the
        // member links' and B's stay).
        s.cut.retain(|l| {
            matches!(
                l,
                Link::FollowerToLeader | Link::LeaderToFollower | Link::MemberToB
            )
        });
        s.last_send = self.client_now(s);
        s.last_recv = self.client_now(s);
        if !s.is_cut(Link::ClientToMember) {
            s.to_member.push(Request {
                sync: false,
                beat: false,
                connect: true,
                refused: false,
                carrier: false,
                sent: self.client_now(s),
            });
        }
    }

    /// A's ConnectRequest was answered: the session is connected again, and the lifeline
    /// records the reconnect; or the session had expired, and it is lost.
    pub(crate) fn reconnect_answered(&self, s: &mut State, r: Request) {
        let Some(latest) = s.reconnecting.take() else {
            return;
        };
        if r.refused {
            // `SessionState::Expired`: the monitor kills the session, no farewell.
            s.given_up = true;
            s.farewell_done = true;
            if s.given_up_at.is_none() {
                let proven = u32::try_from(s.chain.proven.as_millis()).unwrap_or(u32::MAX);
                s.given_up_at = Some((self.client_now(s), proven));
                s.lost_at = (self.lock_delay_ms > 0).then_some(s.now);
            }
            return;
        }
        s.chain.reconnected(ms_(latest));
        s.relinked = true;
    }
}
