//! The holder knows first (issue 12): a holder whose link to ZooKeeper is black-holed (the TCP
//! connection stays open, nothing crosses, so nothing tells the client at once) must see its
//! lease turn lost before a waiter on a healthy link is handed the lock. For each round, the
//! margin is (the waiter's acquire returned) - (the holder's lost signal fired); it must be
//! positive in every round, and the rounds print it.

use std::time::Duration;

use tokio::time::Instant;
use zklock::{LeaseState, Options};
use zklock_testkit::{unique_path, Proxy, ZooKeeper};

/// Rounds per session timeout, run by this many pairs at once (each pair has its own proxy).
const ROUNDS: usize = 20;
const PAIRS: usize = 4;

/// One round: the margin in milliseconds (positive: the holder knew first).
async fn one_round(servers: &str, session_timeout: Duration) -> f64 {
    let proxy = Proxy::start(servers).expect("start a fault proxy");
    let options = Options::default().session_timeout(session_timeout);
    let holder = zklock::Client::connect(proxy.addr(), options.clone())
        .await
        .expect("holder connects through the proxy");
    let waiter = zklock::Client::connect(servers, options)
        .await
        .expect("waiter connects directly");
    let path = unique_path("partition");
    let lease = holder.mutex(&path).unwrap().acquire().await.unwrap();
    let lost = lease.lost();
    let lost_at = tokio::spawn(async move {
        lost.await;
        Instant::now()
    });
    let wmutex = waiter.mutex(&path).unwrap();
    let acquired_at = tokio::spawn(async move {
        let lease = wmutex
            .acquire_timeout(Duration::from_secs(30))
            .await
            .expect("the waiter acquires once the holder's session expired");
        let at = Instant::now();
        lease.release().await.unwrap();
        at
    });
    // The waiter has queued (its node is beside the holder's) before the link goes.
    zklock_trust::nodes::wait_for_children(servers, &path, 2, Duration::from_secs(30)).await;
    proxy.blackhole();
    let acquired_at = acquired_at.await.unwrap();
    let lost_at = tokio::time::timeout(Duration::from_secs(30), lost_at)
        .await
        .expect("the holder's lost signal fires")
        .unwrap();
    assert_eq!(lease.state(), LeaseState::Lost);
    let margin = acquired_at.duration_since(lost_at).as_secs_f64() * 1e3
        - lost_at.duration_since(acquired_at).as_secs_f64() * 1e3;
    proxy.heal();
    holder.close().await;
    waiter.close().await;
    margin
}

async fn rounds(session_timeout: Duration) -> Vec<f64> {
    let zk = ZooKeeper::standalone().expect("ZooKeeper must start (scripts/install-deps.sh)");
    let servers = zk.connect_string();
    let mut margins = Vec::new();
    for _ in 0..ROUNDS.div_ceil(PAIRS) {
        let batch: Vec<_> = (0..PAIRS)
            .map(|_| tokio::spawn(one_round_owned(servers.clone(), session_timeout)))
            .collect();
        for round in batch {
            margins.push(round.await.unwrap());
        }
    }
    margins
}

async fn one_round_owned(servers: String, session_timeout: Duration) -> f64 {
    one_round(&servers, session_timeout).await
}

fn report_and_check(session_timeout: Duration, margins: &mut [f64]) {
    margins.sort_by(f64::total_cmp);
    let median = margins[margins.len() / 2];
    println!(
        "session timeout {session_timeout:?}: {} rounds, margin min {:.0} ms, median {median:.0} ms, max {:.0} ms (the holder's lost signal before the next holder's acquire)",
        margins.len(),
        margins[0],
        margins[margins.len() - 1]
    );
    println!("margins (ms): {margins:.0?}");
    assert!(
        margins[0] > 0.0,
        "a waiter acquired {:.0} ms before the black-holed holder knew it had lost the lock",
        -margins[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_holed_holder_knows_it_lost_before_the_next_holder_acquires_at_2_s() {
    let timeout = Duration::from_secs(2);
    let mut margins = rounds(timeout).await;
    report_and_check(timeout, &mut margins);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_holed_holder_knows_it_lost_before_the_next_holder_acquires_at_4_s() {
    let timeout = Duration::from_secs(4);
    let mut margins = rounds(timeout).await;
    report_and_check(timeout, &mut margins);
}
