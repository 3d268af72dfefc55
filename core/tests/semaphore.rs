//! The semaphore on Curator's InterProcessSemaphoreV2 layout against a real ZooKeeper (issue 14):
//! N leases, never more; Curator's node names; no node left behind on try, timeout or cancel;
//! acquire_many all or nothing; participants; revocation.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use zklock::{CancelToken, ErrorKind, LeaseState, NodeKind, Wait};

/// Waits up to 10 s until both `<path>/leases` and `<path>/locks` are empty.
async fn assert_semaphore_empty(path: &str) {
    assert_empty_eventually(&format!("{path}/leases")).await;
    assert_empty_eventually(&format!("{path}/locks")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_semaphore_of_two_grants_two_leases_on_curators_names_and_a_third_waits_for_a_release() {
    let (a, b, c) = (client().await, client().await, client().await);
    let path = unique_path("sem-two");
    let first = a.semaphore(&path, 2).unwrap().acquire().await.unwrap();
    let second = b.semaphore(&path, 2).unwrap().acquire().await.unwrap();
    let names = children(&format!("{path}/leases")).await;
    assert_eq!(names.len(), 2, "{names:?}");
    for name in &names {
        assert!(
            name.starts_with("_c_") && name[39..].starts_with("-lease-"),
            "Curator's lease name: {name}"
        );
    }
    assert!(first.path().starts_with(&format!("{path}/leases/_c_")));
    assert!(second.token() > first.token(), "tokens are czxids");

    let third = c.semaphore(&path, 2).unwrap();
    assert!(third.try_acquire().await.unwrap().is_none(), "N is 2");
    assert_eq!(children(&format!("{path}/leases")).await.len(), 2);
    let waiter = tokio::spawn(async move { third.acquire_timeout(Duration::from_secs(30)).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished(), "the third waits while two hold");
    first.release().await.unwrap();
    let third = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("the third gets the freed lease")
        .unwrap()
        .unwrap();
    assert_eq!(third.state(), LeaseState::Held);
    assert!(third.token() > second.token());
    drop((second, third));
    assert_semaphore_empty(&path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contenders_on_a_semaphore_of_two_never_hold_more_than_two_leases() {
    let path = unique_path("sem-never-over");
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..5 {
        let (path, inside, most) = (path.clone(), inside.clone(), most.clone());
        tasks.push(tokio::spawn(async move {
            let client = client().await;
            let sem = client.semaphore(&path, 2).unwrap();
            for _ in 0..8 {
                let lease = sem.acquire_timeout(Duration::from_secs(60)).await.unwrap();
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                lease.release().await.unwrap();
            }
            client.close().await;
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let most = most.load(Ordering::SeqCst);
    assert!(most <= 2, "{most} leases held at once");
    assert_eq!(most, 2, "five contenders on two leases fill both");
    assert_semaphore_empty(&path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_try_a_timeout_and_a_cancel_on_a_full_semaphore_leave_no_node_behind() {
    let (a, b) = (client().await, client().await);
    let path = unique_path("sem-no-leftover");
    let held = a.semaphore_mutex(&path).unwrap().acquire().await.unwrap();
    let sem = b.semaphore_mutex(&path).unwrap();
    assert!(sem.try_acquire().await.unwrap().is_none());
    let err = sem
        .acquire_timeout(Duration::from_millis(400))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    let cancel = CancelToken::new();
    let waiting = sem.acquire_with(None, cancel.clone());
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        canceller.cancel();
    });
    assert_eq!(waiting.await.unwrap_err().kind(), ErrorKind::Cancelled);
    // Only the holder's lease node; no waiter's lease or guard node.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(children(&format!("{path}/leases")).await.len(), 1);
    assert!(children(&format!("{path}/locks")).await.is_empty());
    held.release().await.unwrap();
    assert_semaphore_empty(&path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_many_takes_all_its_leases_within_one_deadline_or_none() {
    let (a, b) = (client().await, client().await);
    let path = unique_path("sem-many");
    let sem = a.semaphore(&path, 3).unwrap();
    let three = sem.acquire_many(3, Wait::Forever, None).await.unwrap();
    assert_eq!(three.tokens().len(), 3);
    assert_eq!(children(&format!("{path}/leases")).await.len(), 3);
    three.release().await.unwrap();

    let one = b.semaphore(&path, 3).unwrap().acquire().await.unwrap();
    let err = sem
        .acquire_many(3, Wait::timeout(Duration::from_millis(500)), None)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        children(&format!("{path}/leases")).await.len(),
        1,
        "the two taken were given back"
    );
    for bad in [0, 4] {
        let err = sem
            .acquire_many(bad, Wait::Forever, None)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{bad}: {err}");
    }
    one.release().await.unwrap();
    assert_semaphore_empty(&path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_semaphore_of_zero_leases_is_an_invalid_argument_and_a_semaphore_mutex_is_not_reentrant()
{
    let a = client().await;
    let path = unique_path("sem-args");
    let err = a.semaphore(&path, 0).expect_err("0 leases is refused");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.message().contains("number of leases 0"), "{err}");
    let sem = a.semaphore_mutex(&path).unwrap().reentrant(true);
    assert!(!sem.is_reentrant());
    assert_eq!(sem.max_leases(), Some(1));
    let held = sem.acquire().await.unwrap();
    assert!(
        sem.try_acquire().await.unwrap().is_none(),
        "a second acquire by the same holder waits for itself, as in Curator"
    );
    held.release().await.unwrap();
    assert_semaphore_empty(&path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn participants_show_lease_holders_with_their_n_and_token() {
    let (a, b) = (client().await, client().await);
    let path = unique_path("sem-participants");
    let sem = a.semaphore(&path, 2).unwrap();
    let one = sem.acquire().await.unwrap();
    let two = b.semaphore(&path, 2).unwrap().acquire().await.unwrap();
    let seen = sem.participants().await.unwrap();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen.iter().all(|p| p.kind == NodeKind::Lease));
    assert!(seen.iter().all(|p| p.max_leases == Some(2)));
    assert_eq!(seen[0].token, one.token());
    assert_eq!(seen[1].token, two.token());
    // A mutex value on the same path (what `zklock ls` uses) sees them too, N unknown.
    let outside = a.mutex(&path).unwrap().participants().await.unwrap();
    assert_eq!(outside.len(), 2);
    assert_eq!(outside[0].max_leases, None);
    drop((one, two));
    assert_semaphore_empty(&path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_request_reaches_a_mutex_holder_and_each_semaphore_holder() {
    let (a, b) = (client().await, client().await);
    let path = unique_path("revoke-mutex");
    let lease = a.mutex(&path).unwrap().acquire().await.unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    lease.on_revoke(move || {
        tx.send(()).ok();
    });
    assert!(!lease.is_revoke_requested());
    let asked = b.revoke(&path, None).await.unwrap();
    assert_eq!(asked, vec![lease.path().to_owned()]);
    tokio::time::timeout(Duration::from_secs(5), rx)
        .await
        .expect("the holder hears the request")
        .unwrap();
    assert!(lease.is_revoke_requested());
    assert_eq!(lease.state(), LeaseState::Held, "a request, not a loss");
    lease.release().await.unwrap();
    let err = b.revoke(&path, None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotHeld);

    let sem_path = unique_path("revoke-sem");
    let first = a.semaphore(&sem_path, 2).unwrap().acquire().await.unwrap();
    let second = a.semaphore(&sem_path, 2).unwrap().acquire().await.unwrap();
    let name = second.path().rsplit('/').next().unwrap().to_owned();
    assert_eq!(b.revoke(&sem_path, Some(&name)).await.unwrap().len(), 1);
    tokio::time::timeout(Duration::from_secs(5), second.revoke_requested())
        .await
        .expect("the named holder hears it");
    assert!(
        !first.is_revoke_requested(),
        "only the named node was asked"
    );
    assert_eq!(b.revoke(&sem_path, None).await.unwrap().len(), 2);
    tokio::time::timeout(Duration::from_secs(5), first.revoke_requested())
        .await
        .expect("every holder hears a request for the path");
    drop((first, second));
    assert_semaphore_empty(&sem_path).await;
}
