//! Lock-delay (issue 37, point 2): after a holder's node vanished without a clean release
//! (session expiry, a break), the waiter's lease is held only `lock_delay` later; after a clean
//! release it is handed over at once. Measured from the moment the holder's node was deleted,
//! as a raw watch on it sees it.

mod common;

use std::time::{Duration, Instant};

use common::*;
use zklock::{ErrorKind, Options};

const DELAY: Duration = Duration::from_secs(3);

/// Resolves with the moment `node` is deleted (a raw exists-watch of another session).
async fn deletion_of(node: &str) -> tokio::task::JoinHandle<Instant> {
    let zk = zookeeper_client::Client::connect(servers())
        .await
        .expect("raw connect");
    let (stat, watcher) = zk.check_and_watch_stat(node).await.unwrap();
    assert!(stat.is_some(), "{node} exists");
    tokio::spawn(async move {
        let event = watcher.changed().await;
        assert_eq!(event.event_type, zookeeper_client::EventType::NodeDeleted);
        drop(zk);
        Instant::now()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_behind_an_expired_holder_gets_the_lease_only_after_the_lock_delay() {
    let path = unique_path("lock-delay-expiry");
    let options = Options::default().session_timeout(Duration::from_secs(2));
    let proxy = proxy();
    let holder = zklock::Client::connect(proxy.addr(), options.clone())
        .await
        .unwrap();
    let waiter = client_with(options).await;
    let held = holder
        .mutex(&path)
        .unwrap()
        .lock_delay(Some(DELAY))
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let deleted = deletion_of(held.path()).await;
    let lock = waiter
        .mutex(&path)
        .unwrap()
        .lock_delay(Some(DELAY))
        .unwrap();
    let waiting = tokio::spawn(async move {
        let lease = lock.acquire_timeout(Duration::from_secs(60)).await;
        (lease, Instant::now())
    });
    wait_for_nodes(&path, 2).await;

    proxy.blackhole(); // the holder goes silent: its session expires on the server

    let gone = tokio::time::timeout(Duration::from_secs(30), deleted)
        .await
        .expect("the holder's session expires")
        .unwrap();
    let (lease, acquired) = waiting.await.unwrap();
    let lease = lease.expect("the waiter acquires after the delay");
    let after = acquired - gone;
    eprintln!("lock-delay {DELAY:?}: held {after:?} after the holder's node went");
    assert!(
        after >= DELAY,
        "held {after:?} after the expiry, before {DELAY:?}"
    );
    assert!(lease.token() > held.token());
    lease.release().await.unwrap();
    proxy.heal();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_release_hands_over_at_once_and_a_broken_holder_costs_the_delay() {
    let path = unique_path("lock-delay-clean");
    let (a, b, c) = (client().await, client().await, client().await);
    let lock_a = a.mutex(&path).unwrap().lock_delay(Some(DELAY)).unwrap();
    let held = lock_a.acquire().await.unwrap();
    let deleted = deletion_of(held.path()).await;
    let lock_b = b.mutex(&path).unwrap().lock_delay(Some(DELAY)).unwrap();
    let waiting = tokio::spawn(async move {
        let lease = lock_b.acquire_timeout(Duration::from_secs(60)).await;
        (lease, Instant::now())
    });
    wait_for_nodes(&path, 2).await;
    held.release().await.unwrap();
    let gone = deleted.await.unwrap();
    let (lease, acquired) = waiting.await.unwrap();
    let lease = lease.unwrap();
    let after = acquired - gone;
    eprintln!("clean release: held {after:?} after the holder's node went");
    assert!(after < DELAY / 3, "a clean release waited {after:?}");

    // Now b holds; a waits; c breaks b's node: a waits out the delay.
    let deleted = deletion_of(lease.path()).await;
    let waiting = tokio::spawn(async move {
        let lease = lock_a.acquire_timeout(Duration::from_secs(60)).await;
        (lease, Instant::now())
    });
    wait_for_nodes(&path, 2).await;
    let name = lease.path().rsplit('/').next().unwrap().to_owned();
    c.break_lock(&path, &name, Some("test")).await.unwrap();
    let gone = deleted.await.unwrap();
    let (next, acquired) = waiting.await.unwrap();
    let after = acquired - gone;
    eprintln!("broken holder: held {after:?} after its node went");
    assert!(
        after >= DELAY,
        "held {after:?} after the break, before {DELAY:?}"
    );
    next.unwrap().release().await.unwrap();
    drop(lease);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_lock_delay_is_refused() {
    let c = client().await;
    let err = c
        .mutex(&unique_path("lock-delay-zero"))
        .unwrap()
        .lock_delay(Some(Duration::ZERO))
        .expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_semaphore_lease_freed_cleanly_is_taken_at_once_and_one_broken_after_the_delay() {
    let path = unique_path("lock-delay-sem");
    let (a, b, c) = (client().await, client().await, client().await);
    let sem_a = a
        .semaphore(&path, 1)
        .unwrap()
        .lock_delay(Some(DELAY))
        .unwrap();
    let sem_b = b
        .semaphore(&path, 1)
        .unwrap()
        .lock_delay(Some(DELAY))
        .unwrap();
    let held = sem_a.acquire().await.unwrap();
    let deleted = deletion_of(held.path()).await;
    let waiting = tokio::spawn(async move {
        let lease = sem_b.acquire_timeout(Duration::from_secs(60)).await;
        (lease, Instant::now())
    });
    // The waiter holds the guard and has its lease node in place.
    wait_for_nodes(&format!("{path}/leases"), 2).await;
    held.release().await.unwrap();
    let gone = deleted.await.unwrap();
    let (lease, acquired) = waiting.await.unwrap();
    let lease = lease.unwrap();
    let after = acquired - gone;
    eprintln!("semaphore, clean release: held {after:?} after the lease node went");
    assert!(after < DELAY / 3, "a clean release waited {after:?}");

    let deleted = deletion_of(lease.path()).await;
    let waiting = tokio::spawn(async move {
        let lease = sem_a.acquire_timeout(Duration::from_secs(60)).await;
        (lease, Instant::now())
    });
    wait_for_nodes(&format!("{path}/leases"), 2).await;
    let name = lease.path().rsplit('/').next().unwrap().to_owned();
    c.break_lock(&path, &name, Some("test")).await.unwrap();
    let gone = deleted.await.unwrap();
    let (next, acquired) = waiting.await.unwrap();
    let after = acquired - gone;
    eprintln!("semaphore, broken lease: held {after:?} after its node went");
    assert!(
        after >= DELAY,
        "held {after:?} after the break, before {DELAY:?}"
    );
    next.unwrap().release().await.unwrap();
    drop(lease);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_election_with_a_lock_delay_hands_over_at_once_after_a_resign() {
    let path = unique_path("lock-delay-election");
    let (a, b) = (client().await, client().await);
    let ea = a
        .election(&path, zklock::ElectionStyle::Latch, Some("a"))
        .unwrap()
        .lock_delay(Some(DELAY))
        .unwrap();
    let eb = b
        .election(&path, zklock::ElectionStyle::Latch, Some("b"))
        .unwrap()
        .lock_delay(Some(DELAY))
        .unwrap();
    let lead = ea.lead().await.unwrap();
    let deleted = deletion_of(lead.path()).await;
    let waiting = eb.start_lead(zklock::Wait::Forever);
    wait_for_nodes(&path, 2).await;
    ea.resign(lead, false).await.unwrap();
    let gone = deleted.await.unwrap();
    let next = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("b leads")
        .unwrap();
    let after = Instant::now() - gone;
    eprintln!("election resign: b led {after:?} after a's node went");
    assert!(after < DELAY / 3, "a clean resign waited {after:?}");
    eb.resign(next, false).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_whose_deadline_ends_inside_the_delay_times_out_and_leaves_no_node() {
    let path = unique_path("lock-delay-deadline");
    let (a, b, c) = (client().await, client().await, client().await);
    let held = a.mutex(&path).unwrap().acquire().await.unwrap();
    let lock = b.mutex(&path).unwrap().lock_delay(Some(DELAY)).unwrap();
    let waiting = tokio::spawn(async move { lock.acquire_timeout(Duration::from_secs(1)).await });
    wait_for_nodes(&path, 2).await;
    let name = held.path().rsplit('/').next().unwrap().to_owned();
    c.break_lock(&path, &name, Some("test")).await.unwrap();
    let err = waiting
        .await
        .unwrap()
        .expect_err("not held within its deadline");
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert_empty_eventually(&path).await;
    drop(held);
}

/// Issue 37, points 2 and 3 together: a lock with a lock-delay, a maximum hold and an
/// extension. A maximum hold that runs out is not a clean release (the runtime deletes the
/// node without the marker, as for a break: the holder may still be working), so the successor
/// waits the delay; a clean release inside an extended hold hands over at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extended_hold_ended_by_max_hold_costs_the_delay_and_a_clean_release_does_not() {
    let path = unique_path("lock-delay-max-hold");
    let (a, b) = (client().await, client().await);
    let lock = |c: &zklock::Client| {
        c.mutex(&path)
            .unwrap()
            .lock_delay(Some(DELAY))
            .unwrap()
            .max_hold(Some(Duration::from_secs(2)))
            .unwrap()
    };
    let (lock_a, lock_b) = (lock(&a), lock(&b));
    let held = lock_a.acquire().await.unwrap();
    let extended_at = Instant::now();
    held.extend(Duration::from_secs(5)).unwrap();
    let deleted = deletion_of(held.path()).await;
    let waiting = tokio::spawn(async move {
        let lease = lock_b.acquire_timeout(Duration::from_secs(60)).await;
        (lease, Instant::now(), lock_b)
    });
    wait_for_nodes(&path, 2).await;
    assert!(
        held.is_held(),
        "the waiter queued while the extended hold still ran"
    );
    let gone = tokio::time::timeout(Duration::from_secs(30), deleted)
        .await
        .expect("the maximum hold ends")
        .unwrap();
    assert!(
        gone - extended_at >= Duration::from_millis(4900),
        "the node went {:?} after the extension of 5 s",
        gone - extended_at
    );
    let reason = held.lost_reason().unwrap_or_default();
    assert!(reason.contains("max-hold"), "lost reason: {reason}");
    let (lease, acquired, _lock_b) = waiting.await.unwrap();
    let lease = lease.expect("the waiter acquires after the delay");
    let after = acquired - gone;
    eprintln!("max-hold expiry: held {after:?} after the holder's node went");
    assert!(
        after >= DELAY,
        "held {after:?} after the maximum hold ended, before {DELAY:?}"
    );
    assert!(lease.token() > held.token());

    // b holds now, with the same settings; extended far, it releases cleanly: no delay.
    lease.extend(Duration::from_secs(120)).unwrap();
    let deleted = deletion_of(lease.path()).await;
    let waiting = tokio::spawn(async move {
        let lease = lock_a.acquire_timeout(Duration::from_secs(60)).await;
        (lease, Instant::now())
    });
    wait_for_nodes(&path, 2).await;
    assert_eq!(lease.release().await.unwrap(), zklock::Released::Released);
    let gone = deleted.await.unwrap();
    let (next, acquired) = waiting.await.unwrap();
    let after = acquired - gone;
    eprintln!("clean release of an extended hold: held {after:?} after the node went");
    assert!(after < DELAY / 3, "a clean release waited {after:?}");
    next.unwrap().release().await.unwrap();
}
