//! Multi-lock scenarios against a real ZooKeeper (issue 2, acceptance 5).

mod common;

use std::time::Duration;

use common::*;
use zklock::ErrorKind;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn opposite_orders_never_deadlock() {
    let base = unique_path("multi-order");
    let (a, b) = (format!("{base}/a"), format!("{base}/b"));
    let mut tasks = Vec::new();
    for order in [[a.clone(), b.clone()], [b.clone(), a.clone()]] {
        tasks.push(tokio::spawn(async move {
            let client = client().await;
            let both = client.multi_lock(&order).unwrap();
            for _ in 0..100 {
                let lease = both
                    .acquire_timeout(Duration::from_secs(30))
                    .await
                    .expect("no deadlock");
                assert_eq!(lease.tokens().len(), 2);
                lease.release().await.unwrap();
            }
        }));
    }
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(120), t)
            .await
            .expect("finished")
            .unwrap();
    }
    assert_empty_eventually(&a).await;
    assert_empty_eventually(&b).await;
}

#[tokio::test]
async fn a_member_that_times_out_rolls_back_the_others() {
    let base = unique_path("multi-rollback");
    let (a, b) = (format!("{base}/a"), format!("{base}/b"));
    let holder = client().await;
    let held_b = holder.mutex(&b).unwrap().acquire().await.unwrap();
    let other = client().await;
    let both = other.multi_lock([&b, &a]).unwrap();
    let started = std::time::Instant::now();
    let err = both
        .acquire_timeout(Duration::from_millis(400))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "one deadline for all members"
    );
    assert_empty_eventually(&a).await; // a was taken first (path order), then given back
    assert_eq!(children(&b).await.len(), 1, "only the holder's node on b");
    held_b.release().await.unwrap();
    let lease = both.acquire_timeout(Duration::from_secs(5)).await.unwrap();
    lease.release().await.unwrap();
    assert_empty_eventually(&a).await;
    assert_empty_eventually(&b).await;
}
