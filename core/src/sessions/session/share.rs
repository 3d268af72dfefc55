//! A session's part in its member's proof chain (`sessions::carrier`): it carries the chain, it
//! shares a carrier's, or it runs its own. Sharing ends for good at the first sign that either
//! connection may have left the member: this session's transport reconnected or was seen
//! disconnected, or the carrier's relay broke; then the session runs its own chain, its next
//! heartbeat at once.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::time::Instant;

use super::Session;
use crate::base::clock::BootInstant;
use crate::sessions::carrier::{self, Joined, Relay, Sharer};
use crate::sessions::lifeline;

/// What a session is in its member's chain.
#[derive(Default)]
pub(super) enum Share {
    /// Its own `sync` chain.
    #[default]
    Own,
    /// It carries the chain: its syncs' answers are handed on.
    Carries(Arc<Relay>),
    /// It shares the carrier's: its own requests are only its transport's pings.
    Shares(Arc<Relay>),
}

impl Session {
    /// Joins the member's chain in this process, right after the session opened: only where
    /// the timings let a sharer live on its transport's pings (`lifeline::sharing_fits`), and
    /// only on the connection that created the session (its id names that member).
    pub(super) fn join_chain(self: &Arc<Self>) {
        let tick = self.lifeline.tick();
        if !lifeline::sharing_fits(self.timeout, tick) {
            return;
        }
        let Ok(zk) = self.zk() else { return };
        if zk.connection_generation() != 0 {
            return;
        }
        let me: Arc<dyn Sharer> = self.clone();
        let joined = carrier::join(&self.hosts, self.id, &self.beat_now, Arc::downgrade(&me));
        *self.share.lock().unwrap() = match joined {
            Joined::Carrier(relay) => Share::Carries(relay),
            Joined::Sharer(relay) => Share::Shares(relay),
        };
    }

    /// Whether the session is still on its first connection, the one whose member its id
    /// names.
    fn on_first_connection(&self) -> bool {
        self.zk
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|zk| zk.connection_generation() == 0)
    }

    /// The relay whose carrier proves this session, while it may: ends the sharing (for good)
    /// when the relay broke or this session left its first connection.
    pub(super) fn sharing(&self) -> Option<Arc<Relay>> {
        self.relay_while_valid(|share| match share {
            Share::Shares(relay) => Some(relay.clone()),
            _ => None,
        })
    }

    /// The relay this session carries, while it does: ends it when this session left its first
    /// connection.
    pub(super) fn carrying(&self) -> Option<Arc<Relay>> {
        self.relay_while_valid(|share| match share {
            Share::Carries(relay) => Some(relay.clone()),
            _ => None,
        })
    }

    /// The relay `pick` finds in this session's part, unless it broke or this session left its
    /// first connection: then the part ends here (`leave_chain`).
    fn relay_while_valid(&self, pick: fn(&Share) -> Option<Arc<Relay>>) -> Option<Arc<Relay>> {
        let relay = pick(&self.share.lock().unwrap())?;
        if relay.is_broken() || !self.on_first_connection() {
            self.leave_chain();
            return None;
        }
        Some(relay)
    }

    /// The session's id that carries this session's proof now (`support::proof_carrier`).
    pub(crate) fn proof_carrier(&self) -> Option<i64> {
        self.sharing().map(|relay| relay.carrier())
    }

    /// Ends this session's part in the member's chain: a carrier breaks its relay (every
    /// sharer falls back), a sharer runs its own chain, its next heartbeat at once. Called when
    /// the transport is seen disconnected, when the session ends, and when a relay broke.
    pub(super) fn leave_chain(&self) {
        let was = std::mem::take(&mut *self.share.lock().unwrap());
        match was {
            Share::Own => {}
            Share::Carries(relay) => relay.break_off(),
            Share::Shares(_) => {
                self.relinked.store(true, Ordering::Release);
                self.beat_now.notify_one();
            }
        }
    }
}

impl Sharer for Session {
    fn carried(&self, sent: BootInstant, answered: BootInstant) {
        // Read after the answer: had this session left its first connection by then, the
        // answer may pair with a j of another member.
        if self.sharing().is_none() {
            return;
        }
        self.lifeline.carried(sent, answered);
        self.rearm(Instant::now());
        self.proof_moved.notify_waiters();
        self.beat_now.notify_one();
    }

    fn needs_proof(&self, now: Instant) -> bool {
        !self.is_dead() && self.is_active(now)
    }

    fn carrier_broke(&self) {
        self.leave_chain();
    }
}
