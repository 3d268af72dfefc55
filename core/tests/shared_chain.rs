//! One proof chain per (process, member) (issue 54, point 2; `sessions::carrier`): the sessions
//! of one process on one member share the `sync`s of one of them, the carrier, and send nothing
//! of their own but their transport's pings; a carrier that goes away leaves every sharer
//! proving on its own at once, its leases held. One test in a file of its own: it counts the
//! heartbeats of the whole process (`zklock::support::heartbeats`).

mod common;

use std::time::{Duration, Instant};

use common::*;
use zklock::support::{heartbeats, proof_carrier};
use zklock::{LeaseState, Options};

/// Long enough for the harness's tick (200 ms) that a sharer lives on its transport's pings.
const SESSION: Duration = Duration::from_secs(4);
const TICK: Duration = Duration::from_millis(200);
const CLIENTS: usize = 10;

fn member(session_id: i64) -> u8 {
    (session_id as u64 >> 56) as u8
}

/// Holds for `window`, checking every 50 ms that each lease is held with its deadline ahead.
async fn hold_and_check(leases: &[zklock::Lease], window: Duration, what: &str) {
    let end = Instant::now() + window;
    while Instant::now() < end {
        for (i, lease) in leases.iter().enumerate() {
            assert_eq!(lease.state(), LeaseState::Held, "{what}: lease {i}");
            let until = lease.valid_until().expect("a held lease has a deadline");
            assert!(
                until > Instant::now(),
                "{what}: lease {i}'s deadline passed"
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_on_one_member_share_one_chain_and_prove_alone_once_its_carrier_is_gone() {
    let options = Options::default()
        .session_timeout(SESSION)
        .server_tick(TICK);
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        clients.push(client_with(options.clone()).await);
    }
    let carrier = clients[0].session_id();
    assert_eq!(
        proof_carrier(&clients[0]),
        None,
        "the first session carries"
    );
    for c in &clients[1..] {
        assert_eq!(member(c.session_id()), member(carrier));
        assert_eq!(
            proof_carrier(c),
            Some(carrier),
            "a later session on the same member shares the first one's chain"
        );
    }

    // Every session holds a lock of its own: one chain proves them all.
    let base = unique_path("shared-chain");
    let mut leases = Vec::new();
    for (i, c) in clients.iter().enumerate() {
        let lock = c.mutex(&format!("{base}/{i}")).unwrap();
        leases.push(lock.acquire().await.unwrap());
    }
    let t = clients[0].session_timeout();
    let before = heartbeats();
    hold_and_check(&leases, t * 2, "sharing").await;
    let shared = heartbeats() - before;
    // What ten chains of their own would send in that time, at the least.
    let tick = clients[0].server_tick();
    let keep = t - (Duration::from_millis(200) + t / 50).min(t / 4) - tick;
    let own_interval = keep * 2 / 9;
    let own = CLIENTS as u64 * (t * 2).as_millis() as u64 / own_interval.as_millis() as u64;
    eprintln!(
        "one shared chain: {shared} heartbeats in {:?}; {CLIENTS} own chains: {own}",
        t * 2
    );
    assert!(
        shared * 2 < own,
        "{shared} heartbeats in two session timeouts with one shared chain, where {CLIENTS} \
         chains of their own send {own}"
    );

    // The carrier goes away: each sharer proves on its own at once and keeps its lease.
    let gone = clients.remove(0);
    let gone_lease = leases.remove(0);
    gone_lease.release().await.unwrap();
    gone.close().await;
    for c in &clients {
        assert_eq!(
            proof_carrier(c),
            None,
            "a sharer whose carrier is gone proves alone"
        );
    }
    hold_and_check(&leases, t * 2, "after the carrier left").await;

    // A session opened now carries a new chain; those that fell back do not share again.
    let fresh = client_with(options).await;
    assert_eq!(proof_carrier(&fresh), None, "the next session carries anew");
    for c in &clients {
        assert_eq!(proof_carrier(c), None);
    }
    for lease in leases {
        lease.release().await.unwrap();
    }
    for c in clients {
        c.close().await;
    }
    fresh.close().await;
}
