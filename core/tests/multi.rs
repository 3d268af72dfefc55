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

/// Waits (at most 20 s) for `lease` to turn lost, and says so.
async fn wait_lost(lease: &zklock::Lease) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while lease.state() != zklock::LeaseState::Lost {
        assert!(std::time::Instant::now() < deadline, "not lost after 20 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_multi_lock_max_hold_ends_every_member_and_deletes_their_nodes() {
    let base = unique_path("multi-max-hold");
    let (a, b) = (format!("{base}/a"), format!("{base}/b"));
    let holder = client().await;
    let both = holder
        .multi_lock([&a, &b])
        .unwrap()
        .max_hold(Some(Duration::from_millis(600)))
        .unwrap();
    assert_eq!(both.max_hold_limit(), Some(Duration::from_millis(600)));
    let lease = both.acquire_timeout(Duration::from_secs(30)).await.unwrap();
    let acquired = std::time::Instant::now();
    let until = lease.valid_until().expect("held");
    assert!(
        until <= acquired + Duration::from_millis(600),
        "valid_until stays within the whole hold's end"
    );
    wait_lost(&lease).await;
    let reason = lease.lost_reason().unwrap_or_default();
    assert!(reason.contains("max-hold"), "lost reason: {reason}");
    // Every member's node is deleted by the runtime, not only the first one's.
    assert_empty_eventually(&a).await;
    assert_empty_eventually(&b).await;
    let other = client().await;
    let next = other
        .multi_lock([&b, &a])
        .unwrap()
        .acquire_timeout(Duration::from_secs(30))
        .await
        .expect("another client gets both locks after the maximum hold");
    assert_eq!(next.tokens().len(), 2);
    next.release().await.unwrap();
    assert_eq!(
        lease.release().await.unwrap(),
        zklock::Released::WasLost,
        "releasing the ended multi-lease says it was lost"
    );
}

#[tokio::test]
async fn extending_a_multi_lease_moves_the_end_of_every_member_up_to_its_ceiling() {
    let base = unique_path("multi-extend");
    let (a, b) = (format!("{base}/a"), format!("{base}/b"));
    let holder = client().await;
    let both = holder
        .multi_lock([&a, &b])
        .unwrap()
        .max_hold(Some(Duration::from_millis(500)))
        .unwrap()
        .hold_ceiling(Some(Duration::from_secs(4)))
        .unwrap();
    let lease = both.acquire_timeout(Duration::from_secs(30)).await.unwrap();
    let warned = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = warned.clone();
    lease.on_expiring(Duration::from_millis(300), move |_| {
        seen.store(true, std::sync::atomic::Ordering::SeqCst)
    });
    let past = lease.extend(Duration::from_secs(60)).unwrap_err();
    assert_eq!(past.kind(), ErrorKind::InvalidArgument, "{past}");
    let extended_at = std::time::Instant::now();
    let end = lease.extend(Duration::from_millis(2500)).unwrap();
    assert!(end >= extended_at + Duration::from_millis(2500));
    assert!(
        lease.valid_until().is_some_and(|u| u <= end),
        "valid_until follows the moved end, never past it"
    );
    wait_lost(&lease).await;
    assert!(
        extended_at.elapsed() >= Duration::from_millis(2400),
        "no member ended at the first end: lost after {:?}",
        extended_at.elapsed()
    );
    assert!(lease.lost_reason().unwrap_or_default().contains("max-hold"));
    // The warning was queued before the end; the callback thread may run it a little later.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !warned.load(std::sync::atomic::Ordering::SeqCst) {
        assert!(
            std::time::Instant::now() < deadline,
            "on_expiring never warned"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_empty_eventually(&a).await;
    assert_empty_eventually(&b).await;
}

#[tokio::test]
async fn a_zero_max_hold_on_a_multi_lock_is_refused() {
    let holder = client().await;
    let base = unique_path("multi-zero");
    let multi = holder.multi_lock([format!("{base}/a")]).unwrap();
    let err = multi.max_hold(Some(Duration::ZERO)).expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.message().contains("max_hold"), "{err}");
}
