//! The proof of life on demand (issue 34): an idle session sends no `sync` heartbeat and is not
//! given up, an acquire after an idle spell is held on a proof made after it, and a held lease
//! keeps its deadline ahead of now. One test in a file of its own: it counts the heartbeats of
//! the whole process (`zklock::support::heartbeats`).

mod common;

use std::time::{Duration, Instant};

use common::*;
use zklock::{ConnectionState, LeaseState, Options};

const SESSION: Duration = Duration::from_secs(2);
/// The test server's tick (the harness's `tickTime=200`).
const TICK: Duration = Duration::from_millis(200);

fn beats() -> u64 {
    zklock::support::heartbeats()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sessions_send_no_heartbeat_and_an_acquire_from_idle_gets_a_fresh_proof() {
    let path = unique_path("idle-session");
    let options = Options::default()
        .session_timeout(SESSION)
        .server_tick(TICK);
    let client = client_with(options).await;
    let t = client.session_timeout();
    let lock = client.mutex(&path).unwrap();

    // Never used: three session timeouts without a heartbeat, and still connected.
    let before = beats();
    tokio::time::sleep(t * 3 + Duration::from_millis(300)).await;
    assert_eq!(
        beats(),
        before,
        "a session that never locked sent heartbeats"
    );
    assert_eq!(client.connection_state(), ConnectionState::Connected);

    // One lock cycle, then the warm time (one session timeout), then idle again.
    let lease = lock.acquire().await.unwrap();
    assert!(lease.is_held());
    lease.release().await.unwrap();
    tokio::time::sleep(t + Duration::from_millis(500)).await;
    let idle_from = beats();
    let idle_start = Instant::now();
    tokio::time::sleep(t * 3 + Duration::from_millis(300)).await;
    assert_eq!(
        beats(),
        idle_from,
        "an idle session sent heartbeats {:?} after its warm time",
        idle_start.elapsed()
    );
    assert_eq!(client.connection_state(), ConnectionState::Connected);
    let idle_end = Instant::now();

    // An acquire from idle: held on a proof made after the idle spell (the deadline counts
    // from a touch the leader had at the earliest a third of a session before, the latest
    // transport ping), with its own heartbeats, and about as quick as a warm one.
    let started = Instant::now();
    let lease = lock.acquire().await.unwrap();
    let cold = started.elapsed();
    assert_eq!(lease.state(), LeaseState::Held);
    let until = lease.valid_until().expect("a held lease has a deadline");
    let now = Instant::now();
    assert!(until > now, "valid_until {:?} in the past", now - until);
    let proven_after = until
        .checked_sub(t)
        .expect("a deadline less than a session timeout after the proven touch");
    assert!(
        proven_after + t / 3 + Duration::from_millis(400) >= idle_end,
        "the proof is older than the idle spell's last ping: proven {:?} before its end",
        idle_end.saturating_duration_since(proven_after)
    );
    let sent = beats() - idle_from;
    assert!(
        sent >= 2,
        "an acquire from idle proves with k and m ({sent} heartbeats)"
    );

    // Held over several session timeouts: the deadline stays ahead of now.
    let mut least = Duration::MAX;
    let hold_start = Instant::now();
    while hold_start.elapsed() < t * 3 {
        let until = lease.valid_until().expect("still held");
        let now = Instant::now();
        assert!(until > now, "valid_until passed while held");
        least = least.min(until - now);
        assert_eq!(lease.state(), LeaseState::Held);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let held_beats = beats() - idle_from - sent;
    lease.release().await.unwrap();

    // A warm acquire right after, for the comparison.
    let started = Instant::now();
    let lease = lock.acquire().await.unwrap();
    let warm = started.elapsed();
    lease.release().await.unwrap();
    eprintln!(
        "acquire from idle {cold:?} ({sent} heartbeats), warm {warm:?}; held {:?} with {held_beats} \
         heartbeats, valid_until at least {least:?} ahead",
        t * 3
    );
    client.close().await;
}
