//! Memory per session (issue 17, bench s5: 1,000 sessions in one process): the live heap of
//! this test binary, counted by the testkit's counting allocator, so it is alone in its binary:
//! another test's allocations would be counted too. Measured after events (every waiter's watch
//! counted by the server, one more round trip on each session), never after a sleep.

mod common;

use common::memory::{round_trip_on_each, Held};
use zklock_testkit::counting::{live, peak, reset_peak};

#[global_allocator]
static GLOBAL: zklock_testkit::Counting = zklock_testkit::Counting;

const SESSIONS: usize = 200;
/// What one session with one queued waiter may keep, generously: about 20 KB in the change
/// that added this test, 76 KB before it (the transport preallocated about 46 KB of tables per
/// session and kept its read buffer at the size of the longest children listing it had read).
const BOUND: isize = 40 * 1024;
/// The most it may take while the waiters queue: about 22 KB in that change, 35 KB with the
/// engine holding each waiter's listing across the round trip that sets its watch (that part
/// grows with the square of the queue: bench s5 shows it at 1,000), more than 76 KB before.
const PEAK_BOUND: isize = 64 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_with_one_queued_waiter_keeps_under_40_kib_of_heap() {
    let held = Held::start("/session-memory/lock").await;
    // Whatever the holder's acquire set in motion has been handled.
    round_trip_on_each(std::slice::from_ref(&held.holder)).await;
    let before = reset_peak();

    let clients = held.open_sessions(SESSIONS).await;
    let waiters = held.queue_waiters(&clients).await;
    round_trip_on_each(&clients).await;
    let per_session = (live() - before) / SESSIONS as isize;
    let peak_per_session = (peak() - before) / SESSIONS as isize;
    println!("heap per session with one queued waiter: {per_session} B live, {peak_per_session} B at the peak");

    held.finish(waiters, clients).await;
    assert!(
        per_session < BOUND,
        "a session with one queued waiter holds {per_session} B of heap (bound {BOUND} B)"
    );
    assert!(
        peak_per_session < PEAK_BOUND,
        "queueing took {peak_per_session} B of heap per session at the peak (bound {PEAK_BOUND} B)"
    );
}
