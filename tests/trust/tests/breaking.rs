//! Breaking a real kazoo and Curator holder (issue 37, point 4): `Client::break_lock` deletes a
//! kazoo `Lock`'s or a Curator `InterProcessMutex`'s node; neither notices (neither sets a watch
//! on its own node once held, and their state listeners hear no change: the session lives),
//! while a zklock waiter with a lock-delay takes the lock only after its delay (they write no
//! release marker) with a larger token.

use std::time::{Duration, Instant};

use zklock_trust::margin::{Holder, Signal};
use zklock_trust::peers;

const DELAY: Duration = Duration::from_secs(2);

type Spawn = fn(&str, &str, Duration, &std::path::Path) -> Result<Holder, String>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kazoo_holder_broken_by_zklock_notices_nothing_and_a_delayed_waiter_takes_the_lock() {
    break_peer("kazoo", peers::kazoo_partition_holder).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_curator_holder_broken_by_zklock_notices_nothing_and_a_delayed_waiter_takes_the_lock() {
    break_peer("curator", peers::curator_partition_holder).await;
}

async fn break_peer(peer: &str, spawn: Spawn) {
    let servers = zklock_testkit::shared();
    let path = zklock_testkit::unique_path(&format!("break-{peer}"));
    let log = std::env::temp_dir().join(format!("zklock-break-{peer}-{}.log", std::process::id()));
    let holder = spawn(servers, &path, Duration::from_secs(10), &log).expect(peer);
    // Its listener says `connected` first, then it holds.
    loop {
        let event = holder.next(Duration::from_secs(60)).unwrap();
        match event.map(|e| e.signal) {
            Some(Signal::Held) => break,
            Some(Signal::Other(_)) => continue,
            other => panic!("{peer} did not take the lock: {other:?}"),
        }
    }

    let waiter = zklock::Client::connect(servers, zklock::Options::default())
        .await
        .unwrap();
    let lock = waiter
        .mutex(&path)
        .unwrap()
        .lock_delay(Some(DELAY))
        .unwrap();
    let waiting = tokio::spawn(async move {
        let lease = lock.acquire_timeout(Duration::from_secs(60)).await;
        (lease, Instant::now())
    });
    let breaker = zklock::Client::connect(servers, zklock::Options::default())
        .await
        .unwrap();
    let kazoo_node = loop {
        let queue = breaker.mutex(&path).unwrap().participants().await.unwrap();
        if queue.len() == 2 {
            break queue[0].node.clone();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let before_break = Instant::now();
    let broken = breaker
        .break_lock(&path, &kazoo_node, Some("interop"))
        .await
        .unwrap();
    let (lease, acquired) = waiting.await.unwrap();
    let lease = lease.expect("the zklock waiter acquires");
    let after = acquired - before_break;
    eprintln!("{peer} holder broken: the zklock waiter held {after:?} after the break");
    assert!(
        after >= DELAY,
        "no release marker from {peer}: the delay applies ({after:?})"
    );
    assert!(lease.token() > broken.token);
    // It noticed nothing: its state listener reported nothing after `held`.
    assert!(
        holder.next(Duration::ZERO).unwrap().is_none(),
        "{peer} reported a state change"
    );
    lease.release().await.unwrap();
    drop(holder);
}
