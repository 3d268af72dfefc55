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

/// ZooKeeper's built-in tick (a zoo.cfg without `tickTime`: `ZooKeeperServer.DEFAULT_TICK_TIME`,
/// 3 s), the sample's syncLimit, and a 15 s session: five ticks, as the sample timing has (zklock
/// refuses a session shorter than four of the server's ticks, so its default 10 s is refused
/// here). The rounds at this timing name no tick: the servers have no `tickTime` line and the
/// clients learn the tick at connect (issue 53).
pub const BUILT_IN: Timing = Timing {
    tick: Duration::from_secs(3),
    sync_limit: 5,
    session: Duration::from_secs(15),
};

/// The session timeout of the rounds' zklock waiters, whose own sessions must outlive what a
/// round does to the machine: a waiter holds nothing until the holder's lock comes to it, but
/// its lifeline still gives its session up when it cannot prove it alive within the session
/// timeout less its margins. On a loaded machine that happened to 12 s waiters while two
/// members elected a leader (over 11 s), and to 10 s waiters on a direct link to a standalone
/// server while the test process itself was starved. 30 s is half the harness's
/// `maxSessionTimeout`; it changes nothing a round measures, which is when the waiter acquires
/// against when the holder's lost signal fired.
pub const WAITER_SESSION: Duration = Duration::from_secs(30);
