//! What may slow down during one step of the clock (`Action::Step`), and which streams that
//! holds back.

use crate::{LeaseModel, Member, State};

/// The streams, as bits of what a [`Disturb`] holds.
pub const HOLD_TO_MEMBER: u8 = 1;
pub const HOLD_TO_CLIENT: u8 = 2;
pub const HOLD_UP: u8 = 4;
pub const HOLD_DOWN: u8 = 8;
/// The carrier's two streams (`LeaseModel::shared`).
pub const HOLD_C_TO_MEMBER: u8 = 16;
pub const HOLD_C_TO_CLIENT: u8 = 32;
/// B's inbound stream, the watch's event (`LeaseModel::b_faults`).
pub const HOLD_TO_B: u8 = 64;

/// What slows down during one step (each disturbed step counts against
/// `LeaseModel::max_disturbed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Disturb {
    None,
    /// A's link delivers nothing either way.
    ClientLinkSlow,
    /// A's process is paused: it neither sends nor reads (nor does its carrier, the same
    /// process).
    ClientPaused,
    /// The follower is paused: it reads neither A's requests nor its leader's messages.
    FollowerPaused,
    /// The leader reads nothing from the follower.
    LeaderSlow,
    /// The follower reads what its leader sent before A's requests of the same step (else a
    /// step's requests come first).
    FollowerReadsLeaderFirst,
    /// The carrier's link delivers nothing either way (A's does).
    CarrierLinkSlow,
    /// B's link delivers nothing (the watch's event waits).
    BLinkSlow,
}

pub(crate) const DISTURBS: [Disturb; 8] = [
    Disturb::None,
    Disturb::ClientLinkSlow,
    Disturb::ClientPaused,
    Disturb::FollowerPaused,
    Disturb::LeaderSlow,
    Disturb::FollowerReadsLeaderFirst,
    Disturb::CarrierLinkSlow,
    Disturb::BLinkSlow,
];

/// The streams a disturbance holds for one step (a paused follower holds A's requests only
/// while A is connected to it).
pub(crate) fn hold_of(disturb: Disturb, a_on_follower: bool) -> u8 {
    match disturb {
        Disturb::None => 0,
        Disturb::ClientLinkSlow => HOLD_TO_MEMBER | HOLD_TO_CLIENT,
        Disturb::ClientPaused => HOLD_TO_CLIENT | HOLD_C_TO_CLIENT,
        Disturb::FollowerPaused => follower_hold(a_on_follower),
        Disturb::LeaderSlow => HOLD_UP,
        Disturb::FollowerReadsLeaderFirst => 0,
        Disturb::CarrierLinkSlow => HOLD_C_TO_MEMBER | HOLD_C_TO_CLIENT,
        Disturb::BLinkSlow => HOLD_TO_B,
    }
}

/// What a paused follower does not read.
pub(crate) fn follower_hold(a_on_follower: bool) -> u8 {
    if a_on_follower {
        HOLD_TO_MEMBER | HOLD_DOWN
    } else {
        HOLD_DOWN
    }
}

impl LeaseModel {
    /// What is held during a step with `disturb`, the follower's JVM `paused` or not: A's and
    /// the carrier's requests wait in a paused follower only while they are connected to it.
    pub(crate) fn hold(&self, s: &State, disturb: Disturb, paused: bool) -> u8 {
        let a_on_follower = self.a_on_follower(s);
        let c_on_follower = s.carrier.as_ref().is_some_and(|c| c.on == Member::Follower);
        let follower_paused = disturb == Disturb::FollowerPaused || paused;
        let carrier = if follower_paused && c_on_follower {
            HOLD_C_TO_MEMBER
        } else {
            0
        };
        hold_of(disturb, a_on_follower)
            | if paused {
                follower_hold(a_on_follower)
            } else {
                0
            }
            | carrier
    }
}
