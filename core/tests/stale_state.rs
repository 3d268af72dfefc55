//! No stale `held`: a lease's state read compares the clock with the lifeline's deadline at the
//! moment of the call, so a holder whose I/O thread could not run (a paused process, a stalled
//! runtime) reads `lost` at its first look after the deadline, not `held` until a task wakes up.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use zklock::{LeaseState, Options};

#[test]
fn a_state_read_after_the_lifeline_deadline_says_lost_while_the_runtime_thread_is_stalled() {
    let path = unique_path("stale-state");
    let session = Duration::from_secs(2);
    let client =
        zklock::Client::blocking_connect(servers(), Options::default().session_timeout(session))
            .unwrap();
    let lease = client.mutex(&path).unwrap().blocking_acquire().unwrap();
    let fired = Arc::new(AtomicUsize::new(0));
    let f = fired.clone();
    lease.on_lost(move || {
        f.fetch_add(1, Ordering::SeqCst);
    });
    assert_eq!(lease.state(), LeaseState::Held);

    // The core's runtime thread stops for longer than the session (as it does when the process
    // is stopped): no heartbeat goes out, no lifeline task wakes.
    let stall = session + Duration::from_millis(500);
    let stalled = zklock::support::spawn(async move { std::thread::sleep(stall) });
    let started = Instant::now();
    std::thread::sleep(session);
    let read = lease.state();
    let read_at = started.elapsed();
    assert!(
        read_at < stall,
        "the read must happen while the runtime is still stalled ({read_at:?})"
    );
    assert_eq!(
        read,
        LeaseState::Lost,
        "{read_at:?} into a {session:?} session with no proof of life, the lease must read lost"
    );
    assert!(!lease.is_held());
    let reason = lease.lost_reason().expect("a lost reason");
    assert!(reason.contains("treated as expired"), "{reason}");

    zklock::support::block_on(async move {
        let _ = stalled.await;
        Ok(())
    })
    .unwrap();
    // The lost signal fires once, from the read, not again from the lifeline task.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(fired.load(Ordering::SeqCst), 1);
    let released = lease.blocking_release().unwrap();
    assert_eq!(released, zklock::Released::WasLost);
    client.blocking_close();
}
