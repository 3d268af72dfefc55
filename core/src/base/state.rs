//! The states of a lease and the outcomes of a release, with their names (`held`, `lost`,
//! `still-held`, ...) that every face shows as they are.

/// Where a lease stands. `Lost` and `Released` are final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeaseState {
    /// We hold the lock.
    Held,
    /// Disconnected from the ensemble: we cannot know whether we still hold it.
    Suspended,
    /// Session expired, our node deleted, the client closed, or no server contact for the
    /// session timeout. Fired once.
    Lost,
    /// Released by its holder.
    Released,
}

crate::base::names::names!(LeaseState, "lease state" {
    Held => "held",
    Suspended => "suspended",
    Lost => "lost",
    Released => "released",
});

impl LeaseState {
    /// Whether nothing follows this state (`Lost` or `Released`).
    pub fn is_final(self) -> bool {
        matches!(self, LeaseState::Lost | LeaseState::Released)
    }

    pub(crate) fn from_u8(value: u8) -> LeaseState {
        match value {
            0 => LeaseState::Held,
            1 => LeaseState::Suspended,
            2 => LeaseState::Lost,
            _ => LeaseState::Released,
        }
    }

    /// The state of several leases taken as one: the worst of them.
    pub(crate) fn combine(states: impl Iterator<Item = LeaseState>) -> LeaseState {
        let rank = |s: LeaseState| match s {
            LeaseState::Held => 0,
            LeaseState::Suspended => 1,
            LeaseState::Released => 2,
            LeaseState::Lost => 3,
        };
        states
            .max_by_key(|s| rank(*s))
            .unwrap_or(LeaseState::Released)
    }
}

/// Where a client's connection to the ensemble stands (kazoo's `KazooState`). `Lost` when its
/// session ended (expired, given up by the lifeline, or the client closed); the next acquire of
/// a client that was not closed opens a new session, and the client is `Connected` again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConnectionState {
    /// Connected to a server of the ensemble.
    Connected,
    /// The connection broke; the session may still be alive (its leases are `suspended`).
    Suspended,
    /// The session ended: every lease taken through it is lost.
    Lost,
}

crate::base::names::names!(ConnectionState, "connection state" {
    Connected => "connected",
    Suspended => "suspended",
    Lost => "lost",
});

crate::base::names::names!(Released, "release outcome" {
    Released => "released",
    StillHeld => "still-held",
    WasLost => "was-lost",
});

/// What `release` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Released {
    /// Our node was deleted; the lock is free for the next waiter.
    Released,
    /// A re-entrant hold count went down; the lock is still held by this lock value.
    StillHeld,
    /// The lease had already been lost; there was nothing to delete.
    WasLost,
}
