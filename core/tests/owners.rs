//! The core API the faces build on (issue 13): owner-keyed re-entrancy, the one timeout rule,
//! the acquire handle and state subscriptions, against a real ZooKeeper.

mod common;

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use common::*;
use zklock::{ErrorKind, LeaseState, Owner, Released, Wait};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_owner_reenters_and_another_owner_of_the_same_value_contends() {
    let client = client().await;
    let path = unique_path("owners");
    let lock = client.mutex(&path).unwrap();
    let (a, b) = (Owner(1), Owner(2));
    let first = lock.acquire_as(a, Wait::Forever, None).await.unwrap();
    let again = lock.acquire_as(a, Wait::Try, None).await.unwrap();
    assert_eq!(lock.hold_count_as(a), 2);
    assert_eq!(lock.hold_count_as(b), 0);
    assert_eq!(
        children(&path).await.len(),
        1,
        "a re-entrant hold makes no node"
    );
    let refused = lock.acquire_as(b, Wait::Try, None).await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Timeout);
    assert_eq!(again.release().await.unwrap(), Released::StillHeld);
    let waiting = lock.acquire_as(b, Wait::timeout(Duration::from_secs(10)), None);
    let waiting = tokio::spawn(waiting);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(first.release().await.unwrap(), Released::Released);
    let for_b = waiting
        .await
        .unwrap()
        .expect("owner b gets it once a let go");
    assert_eq!(lock.hold_count_as(b), 1);
    for_b.release().await.unwrap();
    assert_empty_eventually(&path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_handle_can_be_waited_for_cancelled_and_called_back() {
    let (holder, client) = (client().await, client().await);
    let path = unique_path("handle");
    let held = holder.mutex(&path).unwrap().acquire().await.unwrap();
    let lock = client.mutex(&path).unwrap();

    let mut pending = lock.start_acquire(Owner(7), Wait::Forever);
    assert!(pending.wait_for(Duration::from_millis(200)).is_none());
    pending.cancel();
    let cancelled = pending.wait().unwrap_err();
    assert_eq!(cancelled.kind(), ErrorKind::Cancelled);

    let (tx, rx) = std::sync::mpsc::channel();
    lock.start_acquire(Owner(7), Wait::timeout(Duration::from_secs(10)))
        .on_complete(move |result| tx.send(result.map(|l| l.token())).unwrap());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let holder_token = held.token();
    held.release().await.unwrap();
    let token = rx.recv_timeout(Duration::from_secs(10)).unwrap().unwrap();
    assert!(token > holder_token);
    // The callback's lease was dropped there: released in the background.
    assert_empty_eventually(&path).await;

    // A dropped handle cancels its acquire and releases a lease it obtains anyway.
    drop(lock.start_acquire(Owner(8), Wait::Forever));
    let awaited = lock.start_acquire(Owner(9), Wait::Forever).await.unwrap();
    awaited.release().await.unwrap();
    assert_empty_eventually(&path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_gets_the_current_state_first_and_lost_once() {
    let client = client().await;
    let path = unique_path("subscribe");
    let lease = client.mutex(&path).unwrap().acquire().await.unwrap();
    let seen = Arc::new(StdMutex::new(Vec::new()));
    let log = seen.clone();
    lease.subscribe(move |state| log.lock().unwrap().push(state));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(*seen.lock().unwrap(), [LeaseState::Held]);
    client.close().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(*seen.lock().unwrap(), [LeaseState::Held, LeaseState::Lost]);
    let late = Arc::new(StdMutex::new(Vec::new()));
    let log = late.clone();
    lease.subscribe(move |state| log.lock().unwrap().push(state));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(*late.lock().unwrap(), [LeaseState::Lost]);
}

#[test]
fn the_core_names_read_back() {
    for state in zklock::LeaseState::ALL {
        assert_eq!(state.as_str().parse::<LeaseState>().unwrap(), *state);
    }
    for acl in zklock::AclPolicy::ALL {
        assert_eq!(acl.as_str().parse::<zklock::AclPolicy>().unwrap(), *acl);
    }
    assert_eq!(zklock::Library::GoZookeeper.as_str(), "go-zookeeper");
    assert_eq!(Released::StillHeld.as_str(), "still-held");
    let err = "creator".parse::<zklock::AclPolicy>().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.message().contains("creator-all"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owners_never_wait_for_each_other_before_the_queue() {
    let (holder, client) = (client().await, client().await);
    let path = unique_path("owner-gates");
    // Four owners waiting on one value each take their own place in the queue.
    let held = holder.mutex(&path).unwrap().acquire().await.unwrap();
    let lock = client.mutex(&path).unwrap();
    let waiting: Vec<_> = (1..=4)
        .map(|n| lock.start_acquire(Owner(n), Wait::Forever))
        .collect();
    let mut queued = 0;
    for _ in 0..50 {
        queued = children(&path).await.len();
        if queued == 5 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(queued, 5, "each waiting owner has a node of its own");
    drop(waiting);
    held.release().await.unwrap();
    assert_empty_eventually(&path).await;

    // A write holder's downgrade does not wait behind another owner waiting for the read side.
    let rw = client.rw_lock(&path).unwrap();
    let (a, b) = (Owner(10), Owner(11));
    let write = rw.write().acquire_as(a, Wait::Forever, None).await.unwrap();
    let b_waits = rw.read().start_acquire(b, Wait::Forever);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let read = rw
        .read()
        .acquire_as(a, Wait::timeout(Duration::from_secs(3)), None)
        .await
        .expect("the downgrade is granted at once");
    read.release().await.unwrap();
    write.release().await.unwrap();
    let b_read = b_waits.await.unwrap();
    b_read.release().await.unwrap();
    assert_empty_eventually(&path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_releases_by_lock_without_its_lease() {
    let client = client().await;
    let path = unique_path("release-as");
    let lock = client.mutex(&path).unwrap();
    let owner = Owner(3);
    lock.acquire_as(owner, Wait::Forever, None)
        .await
        .unwrap()
        .detach();
    lock.acquire_as(owner, Wait::Forever, None)
        .await
        .unwrap()
        .detach();
    assert_eq!(lock.hold_count_as(owner), 2);
    assert_eq!(lock.release_as(owner).await.unwrap(), Released::StillHeld);
    assert_eq!(lock.release_as(owner).await.unwrap(), Released::Released);
    assert_eq!(
        lock.release_as(owner).await.unwrap_err().kind(),
        ErrorKind::NotHeld
    );
    assert_eq!(
        lock.release_as(Owner(4)).await.unwrap_err().kind(),
        ErrorKind::NotHeld
    );
    assert_empty_eventually(&path).await;
}

#[test]
fn the_default_owner_is_the_calling_task_or_outside_a_task_the_thread() {
    // Issue 50: the rule behind `acquire()`, `hold_count()` and the blocking twins.
    let here = Owner::current();
    assert_eq!(Owner::current(), here, "one thread is one owner");
    assert_ne!(here, Owner::SHARED);
    let other_thread = std::thread::spawn(Owner::current).join().unwrap();
    assert_ne!(other_thread, here, "another thread is another owner");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    let (a, b) = rt.block_on(async {
        let a = tokio::spawn(async {
            let first = Owner::current();
            tokio::task::yield_now().await;
            assert_eq!(
                Owner::current(),
                first,
                "a task stays one owner across awaits"
            );
            first
        });
        let b = tokio::spawn(async { Owner::current() });
        (a.await.unwrap(), b.await.unwrap())
    });
    assert_ne!(a, b, "two tasks on one worker thread are two owners");
    assert!(a != here && b != here && a != Owner::SHARED);
}
