//! What may slow down during one step of the clock (`Action::Step`), and which streams that
//! holds back.

/// The four streams, as bits of what a [`Disturb`] holds.
pub const HOLD_TO_MEMBER: u8 = 1;
pub const HOLD_TO_CLIENT: u8 = 2;
pub const HOLD_UP: u8 = 4;
pub const HOLD_DOWN: u8 = 8;

/// What slows down during one step (each disturbed step counts against
/// `LeaseModel::max_disturbed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Disturb {
    None,
    /// A's link delivers nothing either way.
    ClientLinkSlow,
    /// A's process is paused: it neither sends nor reads.
    ClientPaused,
    /// The follower is paused: it reads neither A's requests nor its leader's messages.
    FollowerPaused,
    /// The leader reads nothing from the follower.
    LeaderSlow,
    /// The follower reads what its leader sent before A's requests of the same step (else a
    /// step's requests come first).
    FollowerReadsLeaderFirst,
}

pub(crate) const DISTURBS: [Disturb; 6] = [
    Disturb::None,
    Disturb::ClientLinkSlow,
    Disturb::ClientPaused,
    Disturb::FollowerPaused,
    Disturb::LeaderSlow,
    Disturb::FollowerReadsLeaderFirst,
];

/// The streams a disturbance holds for one step (a paused follower holds A's requests only
/// while A is connected to it).
pub(crate) fn hold_of(disturb: Disturb, a_on_follower: bool) -> u8 {
    match disturb {
        Disturb::None => 0,
        Disturb::ClientLinkSlow => HOLD_TO_MEMBER | HOLD_TO_CLIENT,
        Disturb::ClientPaused => HOLD_TO_CLIENT,
        Disturb::FollowerPaused => follower_hold(a_on_follower),
        Disturb::LeaderSlow => HOLD_UP,
        Disturb::FollowerReadsLeaderFirst => 0,
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
