//! `Client::locks_under` (issue 37, point 4, what `zklock ls -r` shows) against a real
//! ZooKeeper: every kind of lock under a subtree is found once, at its own path (a semaphore's
//! `leases` and `locks` are not separate locks), and the walk's bounds fail with
//! `InvalidArgument` naming the bound.

mod common;

use common::*;
use zklock::{ErrorKind, NodeKind, ScanLimits};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_lock_under_a_subtree_is_found_once_at_its_own_path() {
    let base = unique_path("scan");
    let c = client().await;
    let mutex = c.mutex(&format!("{base}/jobs/m")).unwrap();
    let m = mutex.acquire().await.unwrap();
    let sem = c.semaphore(&format!("{base}/s"), 2).unwrap();
    let s = sem.acquire().await.unwrap();
    let rw = c.rw_lock(&format!("{base}/deep/er/rw")).unwrap();
    let r = rw.read().acquire().await.unwrap();
    let other = client().await;
    let waiter = other.mutex(&format!("{base}/jobs/m")).unwrap();
    let waiting = tokio::spawn(async move { waiter.acquire().await.map(drop) });
    wait_for_nodes(&format!("{base}/jobs/m"), 2).await;

    let found = c.locks_under(&base, ScanLimits::default()).await.unwrap();
    let paths: Vec<&str> = found.iter().map(|q| q.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            format!("{base}/deep/er/rw"),
            format!("{base}/jobs/m"),
            format!("{base}/s")
        ],
        "in path order, each once"
    );
    assert_eq!(found[0].participants[0].kind, NodeKind::Read);
    assert_eq!(found[1].participants.len(), 2, "holder and waiter");
    assert_eq!(found[1].participants[0].token, m.token());
    assert_eq!(found[2].participants[0].kind, NodeKind::Lease);
    assert_eq!(found[2].participants[0].token, s.token());

    let tight = ScanLimits {
        max_depth: 2,
        max_nodes: 100,
    };
    let err = c.locks_under(&base, tight).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.message().contains("depth limit"), "{err}");
    let narrow = ScanLimits {
        max_depth: 32,
        max_nodes: 3,
    };
    let err = c.locks_under(&base, narrow).await.unwrap_err();
    assert!(err.message().contains("node limit"), "{err}");
    let err = c
        .locks_under("no-slash", ScanLimits::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);

    m.release().await.unwrap();
    waiting.await.unwrap().unwrap();
    s.release().await.unwrap();
    r.release().await.unwrap();
}

#[test]
fn the_blocking_twin_of_locks_under_finds_the_same_locks_without_a_runtime() {
    let base = unique_path("scan-blocking");
    let c = zklock::Client::blocking_connect(servers(), zklock::Options::default()).unwrap();
    let mutex = c.mutex(&format!("{base}/m")).unwrap();
    let held = mutex.blocking_acquire().unwrap();
    let found = c
        .blocking_locks_under(&base, ScanLimits::default())
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].path, format!("{base}/m"));
    assert_eq!(found[0].participants[0].token, held.token());
    held.blocking_release().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subtree_whose_root_does_not_exist_is_not_held_saying_no_such_path() {
    // Issue 51: `zklock ls -r` of a typo printed "0 holders" with status 0.
    let c = client().await;
    let missing = format!("{}/not/there", unique_path("scan-missing"));
    let e = c
        .locks_under(&missing, ScanLimits::default())
        .await
        .expect_err("a missing root is an error, not an empty subtree");
    assert_eq!(e.kind(), ErrorKind::NotHeld, "{e}");
    assert!(e.message().contains("no such path"), "{e}");
}
