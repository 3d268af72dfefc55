//! Mutex scenarios against a real ZooKeeper (issue 2, acceptance 1–3, 6, 7, 11).

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use common::*;
use zklock::{ErrorKind, Owner, Released, Wait};

/// Records entries into a critical section and fails on any overlap.
#[derive(Default)]
struct Exclusion {
    inside: AtomicBool,
    entries: AtomicUsize,
}

impl Exclusion {
    fn enter(&self) {
        assert!(
            !self.inside.swap(true, Ordering::SeqCst),
            "two holders inside the critical section"
        );
        self.entries.fetch_add(1, Ordering::SeqCst);
    }
    fn leave(&self) {
        assert!(self.inside.swap(false, Ordering::SeqCst));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_clients_exclude_each_other() {
    let path = unique_path("two-clients");
    let check = Arc::new(Exclusion::default());
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let (path, check) = (path.clone(), check.clone());
        tasks.push(tokio::spawn(async move {
            let client = client().await;
            let mutex = client.mutex(&path).unwrap();
            for _ in 0..25 {
                let lease = mutex.acquire().await.unwrap();
                check.enter();
                tokio::time::sleep(Duration::from_millis(2)).await;
                check.leave();
                lease.release().await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(check.entries.load(Ordering::SeqCst), 50);
    assert_empty_eventually(&path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tasks_sharing_one_mutex_value_exclude_each_other_and_each_reenters_its_own_hold() {
    // Issue 50: a `Lock` kept in an app state and used by many tasks held it for all of them
    // at once, with one token. Each task is now an owner of its own.
    let path = unique_path("tasks-exclude");
    let client = client().await;
    let mutex = Arc::new(client.mutex(&path).unwrap());
    let check = Arc::new(Exclusion::default());
    let order = Arc::new(StdMutex::new(Vec::new()));
    let barrier = Arc::new(tokio::sync::Barrier::new(10));
    let mut tasks = Vec::new();
    for _ in 0..10 {
        let (mutex, check, order, barrier) =
            (mutex.clone(), check.clone(), order.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let lease = mutex.acquire().await.unwrap();
            check.enter();
            order.lock().unwrap().push(lease.token());
            let nested = mutex.acquire_timeout(Duration::from_secs(5)).await.unwrap();
            assert_eq!(nested.token(), lease.token(), "a nested acquire counts up");
            assert_eq!(mutex.hold_count(), 2);
            tokio::time::sleep(Duration::from_millis(5)).await;
            assert_eq!(nested.release().await.unwrap(), Released::StillHeld);
            check.leave();
            assert_eq!(lease.release().await.unwrap(), Released::Released);
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(check.entries.load(Ordering::SeqCst), 10);
    let tokens = order.lock().unwrap().clone();
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "ten distinct tokens, increasing: {tokens:?}"
    );
    assert_empty_eventually(&path).await;
}

#[test]
fn threads_sharing_one_mutex_value_exclude_each_other_through_the_blocking_calls() {
    let path = unique_path("threads-exclude");
    let client = zklock::Client::blocking_connect(servers(), zklock::Options::default()).unwrap();
    let mutex = Arc::new(client.mutex(&path).unwrap());
    let check = Arc::new(Exclusion::default());
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (mutex, check) = (mutex.clone(), check.clone());
            std::thread::spawn(move || {
                for _ in 0..3 {
                    let lease = mutex.blocking_acquire().unwrap();
                    check.enter();
                    let nested = mutex.blocking_try_acquire().unwrap().expect("counts up");
                    assert_eq!(mutex.hold_count(), 2);
                    std::thread::sleep(Duration::from_millis(2));
                    assert_eq!(nested.blocking_release().unwrap(), Released::StillHeld);
                    check.leave();
                    assert_eq!(lease.blocking_release().unwrap(), Released::Released);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(check.entries.load(Ordering::SeqCst), 12);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tasks_asking_for_the_shared_owner_share_one_hold_and_another_value_contends() {
    // The hold shared by every task of one value, the default before issue 50, on request.
    let path = unique_path("shared-hold");
    let client = client().await;
    let mutex = Arc::new(client.mutex(&path).unwrap());
    let barrier = Arc::new(tokio::sync::Barrier::new(10));
    let mut tasks = Vec::new();
    for _ in 0..10 {
        let (mutex, barrier) = (mutex.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            let lease = mutex
                .acquire_as(Owner::SHARED, Wait::Forever, None)
                .await
                .unwrap();
            barrier.wait().await; // all ten hold at once: the hold is shared
            lease
        }));
    }
    let mut leases = Vec::new();
    for t in tasks {
        leases.push(t.await.unwrap());
    }
    assert_eq!(mutex.hold_count_as(Owner::SHARED), 10);
    assert_eq!(mutex.hold_count(), 0, "this task holds nothing of its own");
    let tokens: std::collections::HashSet<i64> = leases.iter().map(|l| l.token()).collect();
    assert_eq!(tokens.len(), 1, "one node, one token");
    assert_eq!(
        children(&path).await.len(),
        1,
        "re-entrant holds share one node"
    );
    assert!(
        mutex.try_acquire().await.unwrap().is_none(),
        "a task of its own contends with the shared hold"
    );

    // A second Mutex value in the same process contends like another process.
    let other = client.mutex(&path).unwrap();
    assert!(other.try_acquire().await.unwrap().is_none());

    let last = leases.pop().unwrap();
    for lease in leases {
        assert_eq!(lease.release().await.unwrap(), Released::StillHeld);
    }
    assert!(
        other.try_acquire().await.unwrap().is_none(),
        "still held once"
    );
    assert_eq!(last.release().await.unwrap(), Released::Released);
    let lease = other.acquire_timeout(Duration::from_secs(5)).await.unwrap();
    lease.release().await.unwrap();
    assert_empty_eventually(&path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threads_reentering_and_releasing_one_value_at_once_keep_its_count_exact() {
    let path = unique_path("shared-count");
    let client = client().await;
    let mutex = Arc::new(client.mutex(&path).unwrap());
    let outer = mutex
        .acquire_as(Owner::SHARED, Wait::Forever, None)
        .await
        .unwrap();
    // `Owner::SHARED`'s count is changed without a lock (issue 17): four threads re-enter and
    // release at once, each keeping a few holds at a time.
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let mutex = mutex.clone();
            std::thread::spawn(move || {
                for _ in 0..5_000 {
                    let a = mutex
                        .blocking_acquire_as(Owner::SHARED, Wait::Forever, None)
                        .unwrap();
                    let b = mutex
                        .blocking_acquire_as(Owner::SHARED, Wait::Forever, None)
                        .unwrap();
                    assert_eq!(a.token(), b.token(), "one node for every hold");
                    assert_eq!(b.blocking_release().unwrap(), Released::StillHeld);
                    assert_eq!(a.blocking_release().unwrap(), Released::StillHeld);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(
        mutex.hold_count_as(Owner::SHARED),
        1,
        "only the outer hold is left"
    );
    assert_eq!(children(&path).await.len(), 1);
    assert_eq!(outer.release().await.unwrap(), Released::Released);
    assert_eq!(mutex.hold_count_as(Owner::SHARED), 0);
    assert_empty_eventually(&path).await;
    // Taken again, the value holds a new node (its shared hold starts over).
    let again = mutex
        .acquire_as(Owner::SHARED, Wait::Forever, None)
        .await
        .unwrap();
    assert_eq!(mutex.hold_count_as(Owner::SHARED), 1);
    assert_eq!(again.release().await.unwrap(), Released::Released);
}

#[tokio::test]
async fn waiters_acquire_in_arrival_order() {
    let path = unique_path("fifo");
    let client = client().await;
    let holder = client.mutex(&path).unwrap().acquire().await.unwrap();
    let order = Arc::new(StdMutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..5 {
        let (path, order) = (path.clone(), order.clone());
        let waiter = client.mutex(&path).unwrap();
        tasks.push(tokio::spawn(async move {
            let lease = waiter.acquire().await.unwrap();
            order.lock().unwrap().push(i);
            lease.release().await.unwrap();
        }));
        // Wait until waiter i is queued before the next one arrives.
        while children(&path).await.len() < i + 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    holder.release().await.unwrap();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3, 4]);
    assert_empty_eventually(&path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_concurrent_try_locks_one_wins() {
    let path = unique_path("try20");
    let clients = [client().await, client().await];
    let barrier = Arc::new(tokio::sync::Barrier::new(20));
    let mut tasks = Vec::new();
    for i in 0..20 {
        let mutex = clients[i % 2].mutex(&path).unwrap();
        let barrier = barrier.clone();
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let got = mutex.try_acquire().await.unwrap();
            // hold until every attempt finished
            tokio::time::sleep(Duration::from_millis(500)).await;
            got.is_some()
        }));
    }
    let mut winners = 0;
    for t in tasks {
        winners += t.await.unwrap() as usize;
    }
    assert_eq!(winners, 1);
    assert_empty_eventually(&path).await;
}

#[tokio::test]
async fn a_stray_child_does_not_block_acquire() {
    let path = unique_path("stray");
    let zk = zookeeper_client::Client::connect(servers()).await.unwrap();
    let persistent =
        zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    zk.mkdir(&path, &persistent).await.unwrap();
    zk.create(&format!("{path}/config"), b"x", &persistent)
        .await
        .unwrap();
    zk.create(&format!("{path}/leases"), b"", &persistent)
        .await
        .unwrap();
    let client = client().await;
    let lease = client
        .mutex(&path)
        .unwrap()
        .acquire_timeout(Duration::from_secs(5))
        .await
        .unwrap();
    assert!(lease.is_held());
    lease.release().await.unwrap();
    let mut left = children(&path).await;
    left.sort();
    assert_eq!(
        left,
        vec!["config".to_string(), "leases".to_string()],
        "only the stray children remain"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_try_lock_and_cancellation_leave_no_node() {
    let path = unique_path("no-leftovers");
    let a = client().await;
    let b = client().await;
    let holder = a.mutex(&path).unwrap().acquire().await.unwrap();
    let holder_node = holder.path().rsplit('/').next().unwrap().to_owned();
    let contender = b.mutex(&path).unwrap();

    assert!(contender.try_acquire().await.unwrap().is_none());
    let err = contender
        .acquire_timeout(Duration::from_millis(200))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(err.message().contains(&path), "{err}");
    // Cancellation: drop the acquire future while it waits.
    let waiting = tokio::time::timeout(Duration::from_millis(300), contender.acquire()).await;
    assert!(waiting.is_err(), "still waiting when cancelled");
    // Cancellation of a spawned acquire.
    let task = {
        let m = b.mutex(&path).unwrap();
        tokio::spawn(async move { m.acquire().await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    task.abort();
    let _ = task.await;

    for _ in 0..50 {
        if children(&path).await == vec![holder_node.clone()] {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        children(&path).await,
        vec![holder_node],
        "only the holder's node is left"
    );
    holder.release().await.unwrap();
    // The cancelled acquires gave back the gate of their lock value: it acquires again.
    let again = contender
        .acquire_timeout(Duration::from_secs(5))
        .await
        .expect("the lock value is usable after a cancelled acquire");
    again.release().await.unwrap();
    assert_empty_eventually(&path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tokens_strictly_increase_over_1000_handoffs() {
    let path = unique_path("tokens");
    let tokens = Arc::new(StdMutex::new(Vec::with_capacity(1000)));
    let remaining = Arc::new(AtomicUsize::new(1000));
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let (path, tokens, remaining) = (path.clone(), tokens.clone(), remaining.clone());
        tasks.push(tokio::spawn(async move {
            let client = client().await;
            let mutex = client.mutex(&path).unwrap();
            loop {
                let lease = mutex.acquire().await.unwrap();
                // Recorded inside the critical section, so the vector is in holding order.
                let more = remaining
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok();
                if more {
                    tokens.lock().unwrap().push(lease.token());
                }
                lease.release().await.unwrap();
                if !more {
                    return;
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let tokens = std::mem::take(&mut *tokens.lock().unwrap());
    assert_eq!(tokens.len(), 1000);
    for pair in tokens.windows(2) {
        assert!(pair[1] > pair[0], "token {} after {}", pair[1], pair[0]);
    }
    assert_empty_eventually(&path).await;
}

#[tokio::test]
async fn bad_input_is_invalid_argument_naming_the_value() {
    let client = client().await;
    for path in [
        "", "locks/a", "/", "/a/", "/a//b", "/a/./b", "/a/../b", "/a\0b",
    ] {
        let err = client.mutex(path).expect_err(path);
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{path:?}");
        assert!(err.message().contains(&format!("{path:?}")), "{err}");
        assert_eq!(
            client.rw_lock(path).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        assert_eq!(
            client.multi_lock(["/ok", path]).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }
    for hosts in ["", "host:notaport", "host:0", "host:2181/bad/", ","] {
        let err = zklock::Client::connect(hosts, zklock::Options::default())
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{hosts:?}");
        assert!(err.message().contains(&format!("{hosts:?}")), "{err}");
    }
    for secs in [-1.0, f64::NAN] {
        let err = zklock::support::duration_from_secs_f64(secs, "timeout").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.message().contains(&format!("{secs}")), "{err}");
    }
    let err = zklock::support::duration_from_millis_i64(-3, "timeoutMs").unwrap_err();
    assert!(err.message().contains("-3"), "{err}");
    let err = client.multi_lock(["/a", "/a"]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let err = client.multi_lock(Vec::<String>::new()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}

#[tokio::test]
async fn an_unreachable_ensemble_is_a_connection_error_not_a_hang() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let options = zklock::Options::default().connect_timeout(Duration::from_secs(1));
    let started = std::time::Instant::now();
    let err = zklock::Client::connect(&format!("127.0.0.1:{port}"), options)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn participants_show_the_queue_in_order() {
    let path = unique_path("participants");
    let a = client_with(zklock::Options::default().identity("alice")).await;
    let b = client_with(zklock::Options::default().identity("bob")).await;
    let held = a.mutex(&path).unwrap().acquire().await.unwrap();
    let bm = b.mutex(&path).unwrap();
    let waiting = tokio::spawn(async move { bm.acquire().await.map(|l| l.token()) });
    while children(&path).await.len() < 2 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let queue = a.mutex(&path).unwrap().participants().await.unwrap();
    let ids: Vec<&str> = queue.iter().map(|p| p.identity.as_str()).collect();
    assert_eq!(ids, vec!["alice", "bob"]);
    assert_eq!(queue[0].token, held.token());
    assert_eq!(queue[0].library, zklock::Library::Zklock);
    assert_eq!(queue[0].session_id, a.session_id());
    held.release().await.unwrap();
    assert!(waiting.await.unwrap().unwrap() > queue[0].token);
    assert_empty_eventually(&path).await;
}

#[tokio::test]
async fn closed_client_fails_with_closed_and_its_leases_are_lost() {
    let path = unique_path("closed");
    let client = client().await;
    let mutex = client.mutex(&path).unwrap();
    let lease = mutex.acquire().await.unwrap();
    client.close().await;
    tokio::time::timeout(Duration::from_secs(5), lease.lost())
        .await
        .expect("lost on close");
    assert_eq!(mutex.acquire().await.unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(lease.release().await.unwrap(), Released::WasLost);
    assert_empty_eventually(&path).await;
}

#[tokio::test]
async fn creator_only_acl_refuses_an_unauthenticated_client() {
    let path = unique_path("acl");
    let owner = client_with(
        zklock::Options::default()
            .auth("alice:secret")
            .acl(zklock::AclPolicy::CreatorAll),
    )
    .await;
    let lease = owner.mutex(&path).unwrap().acquire().await.unwrap();
    let stranger = client().await;
    let err = stranger
        .mutex(&path)
        .unwrap()
        .try_acquire()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Permission, "{err}");
    lease.release().await.unwrap();
}

/// Drives a future on the calling thread with no tokio runtime around it (a waiting acquire
/// waits in its caller's future, so it must not need one).
fn block_on_plain_thread<F: std::future::Future>(fut: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        if let std::task::Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

#[test]
fn a_waiting_acquire_needs_no_runtime_of_the_caller() {
    let path = unique_path("plain-executor");
    let holder = zklock::Client::blocking_connect(servers(), zklock::Options::default()).unwrap();
    let waiter = zklock::Client::blocking_connect(servers(), zklock::Options::default()).unwrap();
    let held = holder.mutex(&path).unwrap().blocking_acquire().unwrap();
    let mutex = waiter.mutex(&path).unwrap();

    // A deadline while someone holds the lock: the timer fires on a plain thread.
    let timed_out = block_on_plain_thread(mutex.acquire_timeout(Duration::from_millis(300)));
    assert_eq!(timed_out.unwrap_err().kind(), ErrorKind::Timeout);

    // A wait that ends when the holder releases.
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        held.blocking_release().unwrap()
    });
    let lease = block_on_plain_thread(mutex.acquire()).expect("acquired after the release");
    assert_eq!(releaser.join().unwrap(), Released::Released);
    assert!(lease.is_held());
    assert_eq!(lease.blocking_release().unwrap(), Released::Released);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(assert_empty_eventually(&path));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_lease_stays_held_until_its_client_closes() {
    let path = unique_path("detached");
    let (holder, other) = (client().await, client().await);
    holder
        .mutex(&path)
        .unwrap()
        .acquire()
        .await
        .unwrap()
        .detach();
    // Neither the lease nor its lock value exists any more; the lock must still be taken.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let contender = other.mutex(&path).unwrap();
    assert!(contender.try_acquire().await.unwrap().is_none());
    holder.close().await;
    let lease = contender
        .acquire_timeout(Duration::from_secs(5))
        .await
        .expect("free once the holder's client closed");
    lease.release().await.unwrap();
    assert_empty_eventually(&path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_a_client_has_told_zookeeper_when_it_returns() {
    // A process that exits right after close() must not leave its nodes for the session
    // timeout: close returns once the server has closed the session (and so deleted them).
    let path = unique_path("close-told");
    for _ in 0..5 {
        let (holder, waiter) = (client().await, client().await);
        let lease = holder.mutex(&path).unwrap().acquire().await.unwrap();
        let waiting = tokio::spawn(waiter.mutex(&path).unwrap().acquire_until(None));
        while children(&path).await.len() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        waiter.close().await;
        holder.close().await;
        assert!(
            children(&path).await.is_empty(),
            "nodes left right after close"
        );
        assert!(waiting.await.unwrap().is_err());
        drop(lease);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_under_a_chroot_that_does_not_exist_says_the_chroot_is_missing() {
    let chroot = unique_path("missing-chroot");
    let hosts = format!("{}{chroot}", servers());
    let client = zklock::Client::connect(&hosts, zklock::Options::default())
        .await
        .unwrap();
    let err = client
        .mutex("/x")
        .unwrap()
        .acquire_timeout(std::time::Duration::from_secs(10))
        .await
        .expect_err("nothing can be created under a chroot that does not exist");
    assert!(
        err.message().contains(&format!("the chroot {chroot:?}"))
            && err.message().contains("does not exist"),
        "{err}"
    );
    client.close().await;
}
