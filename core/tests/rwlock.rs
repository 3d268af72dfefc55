//! Read/write lock scenarios against a real ZooKeeper (issue 2, acceptance 4).

mod common;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use zklock::ErrorKind;

#[tokio::test]
async fn readers_overlap_and_writers_exclude() {
    let path = unique_path("rw-basic");
    let (a, b) = (client().await, client().await);
    let (rw_a, rw_b) = (a.rw_lock(&path).unwrap(), b.rw_lock(&path).unwrap());
    let r1 = rw_a.read().acquire().await.unwrap();
    let r2 = rw_b
        .read()
        .acquire_timeout(Duration::from_secs(5))
        .await
        .expect("readers overlap");
    let c = client().await;
    let rw_c = c.rw_lock(&path).unwrap();
    assert!(
        rw_c.write().try_acquire().await.unwrap().is_none(),
        "a writer waits for readers"
    );
    r1.release().await.unwrap();
    r2.release().await.unwrap();
    let w = rw_a.write().acquire().await.unwrap();
    assert!(
        rw_b.read().try_acquire().await.unwrap().is_none(),
        "a reader waits for the writer"
    );
    assert!(
        rw_b.write().try_acquire().await.unwrap().is_none(),
        "a writer waits for the writer"
    );
    w.release().await.unwrap();
    assert_empty_eventually(&path).await;
}

#[tokio::test]
async fn upgrade_errors_at_once_and_downgrade_works() {
    let path = unique_path("rw-grade");
    let (a, b) = (client().await, client().await);
    let rw = a.rw_lock(&path).unwrap();

    let read = rw.read().acquire().await.unwrap();
    let started = std::time::Instant::now();
    let err = rw.write().acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UpgradeNotAllowed);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "immediate, not a deadlock"
    );
    read.release().await.unwrap();

    // Downgrade: write, then read, then let go of the write: still reading, others still can't write.
    let write = rw.write().acquire().await.unwrap();
    let read = rw
        .read()
        .acquire_timeout(Duration::from_secs(2))
        .await
        .expect("downgrade");
    write.release().await.unwrap();
    assert!(read.is_held());
    let other = b.rw_lock(&path).unwrap();
    assert!(other.write().try_acquire().await.unwrap().is_none());
    let other_read = other
        .read()
        .acquire_timeout(Duration::from_secs(5))
        .await
        .expect("readers share after downgrade");
    other_read.release().await.unwrap();
    read.release().await.unwrap();
    assert_empty_eventually(&path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn downgrade_with_a_queued_writer_keeps_exclusion() {
    let path = unique_path("rw-621");
    let (a, b) = (client().await, client().await);
    let rw = a.rw_lock(&path).unwrap();
    let write = rw.write().acquire().await.unwrap();
    // Another writer queues behind our write node, before our downgraded read node.
    let other = b.rw_lock(&path).unwrap();
    let queued = tokio::spawn(async move { other.write().acquire().await.map(|l| (l.token(), l)) });
    while children(&path).await.len() < 2 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let read = rw
        .read()
        .acquire_timeout(Duration::from_secs(2))
        .await
        .unwrap();
    write.release().await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !queued.is_finished(),
        "the queued writer must not get in beside our reader (CURATOR-621)"
    );
    read.release().await.unwrap();
    let (_, lease) = tokio::time::timeout(Duration::from_secs(5), queued)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    lease.release().await.unwrap();
    assert_empty_eventually(&path).await;
}

/// Readers inside (>= 0) or -1 for one writer inside.
fn enter(inside: &AtomicI64, write: bool) {
    if write {
        assert_eq!(
            inside.compare_exchange(0, -1, Ordering::SeqCst, Ordering::SeqCst),
            Ok(0),
            "writer entered while occupied"
        );
    } else {
        let before = inside.fetch_add(1, Ordering::SeqCst);
        assert!(before >= 0, "reader entered beside a writer");
    }
}

fn leave(inside: &AtomicI64, write: bool) {
    if write {
        assert_eq!(inside.swap(0, Ordering::SeqCst), -1);
    } else {
        inside.fetch_sub(1, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_clients_hundred_random_ops_keep_the_invariant() {
    let path = unique_path("rw-random");
    let inside = Arc::new(AtomicI64::new(0));
    let max_readers = Arc::new(AtomicI64::new(0));
    let mut tasks = Vec::new();
    for c in 0..8u64 {
        let (path, inside, max_readers) = (path.clone(), inside.clone(), max_readers.clone());
        tasks.push(tokio::spawn(async move {
            let client = client().await;
            let rw = client.rw_lock(&path).unwrap();
            let mut seed = c.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            for _ in 0..100 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let write = seed % 4 == 0;
                let side = if write { rw.write() } else { rw.read() };
                let lease = side.acquire().await.unwrap();
                enter(&inside, write);
                max_readers.fetch_max(inside.load(Ordering::SeqCst), Ordering::SeqCst);
                tokio::time::sleep(Duration::from_micros(seed % 2000)).await;
                leave(&inside, write);
                lease.release().await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert!(
        max_readers.load(Ordering::SeqCst) >= 2,
        "readers did overlap at least once"
    );
    assert_empty_eventually(&path).await;
}
