//! The shared counter and the increment only a lock holder can make (issue 37, point 5), on a
//! real ZooKeeper. Curator reading and writing the same nodes: tests/trust/tests/counter_interop.rs.

mod common;

use common::*;
use zklock::{Count, CounterWidth, ErrorKind};

#[tokio::test]
async fn a_missing_counter_reads_zero_and_compare_and_set_creates_it_once() {
    let c = client().await;
    let counter = c
        .counter(
            &format!("{}/n", zklock_testkit::unique_path("counter")),
            CounterWidth::Int32,
        )
        .unwrap();
    let seen = counter.get().await.unwrap();
    assert_eq!(
        seen,
        Count {
            value: 0,
            version: -1
        }
    );
    let set = counter.compare_and_set(seen, 7).await.unwrap();
    assert_eq!(
        set,
        Some(Count {
            value: 7,
            version: 0
        })
    );
    // The same stale view again: the node exists now, so nothing changes.
    assert_eq!(counter.compare_and_set(seen, 9).await.unwrap(), None);
    let now = counter.get().await.unwrap();
    assert_eq!(now.value, 7);
    assert_eq!(
        counter
            .compare_and_set(now, 8)
            .await
            .unwrap()
            .map(|c| c.value),
        Some(8)
    );
    assert_eq!(
        counter.compare_and_set(now, 10).await.unwrap(),
        None,
        "stale version"
    );
}

#[tokio::test]
async fn a_guarded_increment_moves_the_count_only_while_the_lock_is_held() {
    let base = zklock_testkit::unique_path("counter");
    let owner = client().await;
    let counter = owner
        .counter(&format!("{base}/checkpoint"), CounterWidth::Int64)
        .unwrap();
    let lease = owner
        .mutex(&format!("{base}/lock"))
        .unwrap()
        .acquire()
        .await
        .unwrap();
    assert_eq!(lease.guarded_increment(&counter, 1).await.unwrap().value, 1);
    assert_eq!(
        lease.guarded_increment(&counter, 41).await.unwrap().value,
        42
    );

    // Its session ends: the lease is lost, and the count stays where it was.
    let doomed = client().await;
    let lost = doomed
        .mutex(&format!("{base}/lock2"))
        .unwrap()
        .acquire()
        .await
        .unwrap();
    doomed.close().await;
    let err = lost.guarded_increment(&counter, 1).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LockLost, "{err}");
    assert_eq!(counter.get().await.unwrap().value, 42);
    lease.release().await.unwrap();
}

#[tokio::test]
async fn concurrent_guarded_increments_lose_no_update() {
    let base = zklock_testkit::unique_path("counter");
    let c = client().await;
    let counter = c
        .counter(&format!("{base}/n"), CounterWidth::Int32)
        .unwrap();
    // Two holders of two different locks race on one counter: the version check makes every
    // increment count once.
    let mut tasks = Vec::new();
    for i in 0..2 {
        let (c, counter, lock) = (c.clone(), counter.clone(), format!("{base}/lock{i}"));
        tasks.push(tokio::spawn(async move {
            let lease = c.mutex(&lock).unwrap().acquire().await.unwrap();
            for _ in 0..10 {
                lease.guarded_increment(&counter, 1).await.unwrap();
            }
            lease.release().await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(counter.get().await.unwrap().value, 20);
}

#[tokio::test]
async fn a_count_past_32_bits_is_refused_and_nothing_is_written() {
    let base = zklock_testkit::unique_path("counter");
    let c = client().await;
    let counter = c
        .counter(&format!("{base}/n"), CounterWidth::Int32)
        .unwrap();
    let lease = c
        .mutex(&format!("{base}/lock"))
        .unwrap()
        .acquire()
        .await
        .unwrap();
    lease
        .guarded_increment(&counter, i32::MAX as i64)
        .await
        .unwrap();
    let err = lease.guarded_increment(&counter, 1).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert_eq!(counter.get().await.unwrap().value, i32::MAX as i64);
    let bad = c.counter("relative/path", CounterWidth::Int64).unwrap_err();
    assert_eq!(bad.kind(), ErrorKind::InvalidArgument);
    lease.release().await.unwrap();
}
