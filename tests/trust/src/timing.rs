//! The two ensemble timings of the member-isolation scenarios (tests/isolation.rs for zklock,
//! tests/peer_margins.rs for Curator and kazoo), in one place so that both measure the same.

use std::time::Duration;

/// An ensemble's timing: ZooKeeper's tick and syncLimit, and the holders' session timeout.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub tick: Duration,
    pub sync_limit: u32,
    pub session: Duration,
}

/// tick 500 ms, syncLimit 4, session 4 s: issue 23's first table row.
pub const FAST: Timing = Timing {
    tick: Duration::from_millis(500),
    sync_limit: 4,
    session: Duration::from_secs(4),
};

/// ZooKeeper's sample configuration (tick 2 s, syncLimit 5) and zklock's default session.
pub const SAMPLE: Timing = Timing {
    tick: Duration::from_secs(2),
    sync_limit: 5,
    session: Duration::from_secs(10),
};
