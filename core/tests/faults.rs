//! Faults against a real ZooKeeper: server restart, lost create reply, cancel while suspended,
//! a waiter's own session expiry (issue 2, acceptance 9; docs/safety.md scenarios 3, 4, 6).

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use zklock::{ErrorKind, LeaseState, Options};
use zklock_testkit::ZooKeeper;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn server_restart_while_held_and_others_wait() {
    let mut zk = ZooKeeper::standalone().expect("ZooKeeper must start");
    let servers = zk.connect_string();
    let path = unique_path("restart");
    let options = Options::default().session_timeout(Duration::from_secs(20));
    let holder = zklock::Client::connect(&servers, options.clone())
        .await
        .unwrap();
    let lease = holder.mutex(&path).unwrap().acquire().await.unwrap();
    let inside = Arc::new(AtomicBool::new(true));
    let mut waiters = Vec::new();
    for _ in 0..3 {
        let (servers, path, options, inside) = (
            servers.clone(),
            path.clone(),
            options.clone(),
            inside.clone(),
        );
        waiters.push(tokio::spawn(async move {
            let client = zklock::Client::connect(&servers, options).await.unwrap();
            let lease = client
                .mutex(&path)
                .unwrap()
                .acquire_timeout(Duration::from_secs(60))
                .await
                .unwrap();
            assert!(
                !inside.swap(true, Ordering::SeqCst),
                "exclusion broken after restart"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
            inside.store(false, Ordering::SeqCst);
            lease.release().await.unwrap();
        }));
    }
    while children_at(&servers, &path).await.len() < 4 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let states = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = states.clone();
    lease.on_state(move |st| s.lock().unwrap().push(st));

    tokio::task::block_in_place(|| zk.stop(0));
    tokio::time::sleep(Duration::from_secs(2)).await;
    tokio::task::block_in_place(|| zk.restart(0)).expect("restart");

    // The session survives the restart: suspended, then held again once our node is seen.
    for _ in 0..100 {
        if lease.state() == LeaseState::Held
            && states.lock().unwrap().contains(&LeaseState::Suspended)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(lease.state(), LeaseState::Held);
    assert!(
        states.lock().unwrap().contains(&LeaseState::Suspended),
        "{:?}",
        states.lock().unwrap()
    );
    inside.store(false, Ordering::SeqCst);
    lease.release().await.unwrap();
    for w in waiters {
        tokio::time::timeout(Duration::from_secs(60), w)
            .await
            .expect("every waiter finishes")
            .unwrap();
    }
    assert!(children_at(&servers, &path).await.is_empty());
}

#[tokio::test]
async fn a_lost_create_reply_is_recovered_by_the_protected_prefix() {
    let path = unique_path("lost-reply");
    let (proxy, client) = client_behind_proxy(Duration::from_secs(10)).await;
    let mutex = client.mutex(&path).unwrap();
    // Make sure the lock parent exists so the next request is our create.
    mutex.acquire().await.unwrap().release().await.unwrap();
    proxy.drop_next_reply();
    let lease = mutex
        .acquire_timeout(Duration::from_secs(20))
        .await
        .unwrap();
    let nodes = children(&path).await;
    assert_eq!(nodes.len(), 1, "no duplicate, no orphan: {nodes:?}");
    assert!(lease.path().ends_with(&nodes[0]));
    lease.release().await.unwrap();
    assert_empty_eventually(&path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_suspended_leaves_no_orphan() {
    let path = unique_path("cancel-suspended");
    let holder = client().await;
    let held = holder.mutex(&path).unwrap().acquire().await.unwrap();
    let (proxy, waiter) = client_behind_proxy(Duration::from_secs(10)).await;
    let mutex = waiter.mutex(&path).unwrap();
    let waiting = tokio::spawn(async move { mutex.acquire().await });
    while children(&path).await.len() < 2 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    proxy.blackhole();
    tokio::time::sleep(Duration::from_millis(500)).await;
    waiting.abort(); // cancelled while we cannot reach the server
    let _ = waiting.await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    proxy.heal();
    let holder_node = held.path().rsplit('/').next().unwrap().to_owned();
    for _ in 0..100 {
        if children(&path).await == vec![holder_node.clone()] {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(children(&path).await, vec![holder_node]);
    held.release().await.unwrap();
    assert_empty_eventually(&path).await;
}

#[tokio::test]
async fn a_waiters_own_expiry_fails_promptly() {
    let path = unique_path("waiter-expiry");
    let holder = client().await;
    let held = holder.mutex(&path).unwrap().acquire().await.unwrap();
    let (proxy, waiter) = client_behind_proxy(Duration::from_secs(2)).await;
    let mutex = waiter.mutex(&path).unwrap();
    let waiting = tokio::spawn(async move { mutex.acquire().await });
    while children(&path).await.len() < 2 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    proxy.blackhole();
    let result = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("fails promptly")
        .unwrap();
    assert_eq!(result.unwrap_err().kind(), ErrorKind::SessionExpired);
    proxy.heal();
    held.release().await.unwrap();
    assert_empty_eventually(&path).await;
}

#[tokio::test]
async fn a_stale_release_never_deletes_a_newer_holders_node() {
    let path = unique_path("stale-release");
    let (proxy, old) = client_behind_proxy(Duration::from_secs(2)).await;
    let stale = old.mutex(&path).unwrap().acquire().await.unwrap();
    proxy.blackhole();
    tokio::time::timeout(Duration::from_secs(10), stale.lost())
        .await
        .expect("lost");
    let newer = client().await;
    let fresh = newer
        .mutex(&path)
        .unwrap()
        .acquire_timeout(Duration::from_secs(10))
        .await
        .unwrap();
    proxy.heal();
    assert_eq!(stale.release().await.unwrap(), zklock::Released::WasLost);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(fresh.is_held());
    assert_eq!(
        children(&path).await.len(),
        1,
        "the newer holder's node is still there"
    );
    fresh.release().await.unwrap();
    assert_empty_eventually(&path).await;
}

#[tokio::test]
async fn release_from_the_lost_callback_does_not_deadlock() {
    let path = unique_path("release-in-callback");
    let (proxy, client) = client_behind_proxy(Duration::from_secs(2)).await;
    let lease = client.mutex(&path).unwrap().acquire().await.unwrap();
    let lease = Arc::new(std::sync::Mutex::new(Some(lease)));
    let (tx, rx) = tokio::sync::oneshot::channel();
    let slot = lease.clone();
    let tx = std::sync::Mutex::new(Some(tx));
    lease
        .lock()
        .unwrap()
        .as_ref()
        .unwrap()
        .on_state(move |state| {
            if state == LeaseState::Lost {
                // A blocking zklock call from inside the callback.
                let outcome = slot.lock().unwrap().take().map(|l| l.blocking_release());
                if let Some(tx) = tx.lock().unwrap().take() {
                    tx.send(outcome).ok();
                }
            }
        });
    proxy.blackhole();
    let outcome = tokio::time::timeout(Duration::from_secs(10), rx)
        .await
        .expect("callback ran")
        .unwrap();
    assert_eq!(outcome.unwrap().unwrap(), zklock::Released::WasLost);
    proxy.heal();
}

#[tokio::test]
async fn our_node_deleted_by_someone_else_makes_the_lease_lost() {
    let path = unique_path("deleted-node");
    let client = client().await;
    let lease = client.mutex(&path).unwrap().acquire().await.unwrap();
    let raw = zookeeper_client::Client::connect(servers()).await.unwrap();
    raw.delete(lease.path(), None).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), lease.lost())
        .await
        .expect("lost after our node was deleted");
    let reason = lease.lost_reason().unwrap();
    assert!(reason.contains("deleted"), "{reason}");
    assert_eq!(lease.release().await.unwrap(), zklock::Released::WasLost);
}

#[tokio::test]
async fn a_lost_reentrant_hold_stays_lost_for_each_holder_while_the_value_takes_a_new_node() {
    let path = unique_path("lost-reentrant");
    let client = client().await;
    let mutex = client.mutex(&path).unwrap();
    let first = mutex.acquire().await.unwrap();
    let second = mutex.acquire().await.unwrap();
    assert_eq!(mutex.hold_count(), 2);
    let raw = zookeeper_client::Client::connect(servers()).await.unwrap();
    raw.delete(first.path(), None).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), first.lost())
        .await
        .expect("lost after our node was deleted");
    assert_eq!(second.state(), zklock::LeaseState::Lost);
    assert_eq!(mutex.hold_count(), 0, "a lost hold is not counted");
    // The value takes the lock again on a node of its own, which the old holders never see.
    let again = mutex.acquire().await.unwrap();
    assert_ne!(again.path(), first.path());
    assert_eq!(again.state(), zklock::LeaseState::Held);
    assert_eq!(mutex.hold_count(), 1);
    assert_eq!(first.state(), zklock::LeaseState::Lost);
    // The old holders count their lost hold down; the last one is told it was lost.
    assert_eq!(second.release().await.unwrap(), zklock::Released::StillHeld);
    assert_eq!(first.release().await.unwrap(), zklock::Released::WasLost);
    assert_eq!(mutex.hold_count(), 1);
    assert_eq!(again.release().await.unwrap(), zklock::Released::Released);
    assert_eq!(mutex.hold_count(), 0);
}

#[tokio::test]
async fn a_release_leaves_no_watch_on_the_server() {
    let zk = ZooKeeper::standalone().expect("ZooKeeper must start");
    let client = zklock::Client::connect(&zk.connect_string(), Options::default())
        .await
        .unwrap();
    let mutex = client.mutex("/watches/lock").unwrap();
    // A short hold and a long one (which watches its own node for deletion meanwhile).
    mutex.acquire().await.unwrap().release().await.unwrap();
    let lease = mutex.acquire().await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        zk.mntr_value(0, "zk_watch_count").unwrap(),
        1,
        "the holder watches its own node"
    );
    lease.release().await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        zk.mntr_value(0, "zk_watch_count").unwrap(),
        0,
        "the watch was removed before the delete"
    );
}

/// Issue 33: a server restarted with its data wiped (zxid back near 0) while a client held a
/// lock. The lease is lost; the next acquire must not get a token (a czxid) an earlier lease of
/// the client had: the server is refused, with an error that says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_server_whose_history_went_backwards_is_refused_so_tokens_never_repeat_and_the_refusal_is_remembered(
) {
    let mut zk = ZooKeeper::standalone().expect("ZooKeeper must start");
    let servers = zk.connect_string();
    let path = unique_path("history");
    let options = Options::default()
        .session_timeout(Duration::from_secs(4))
        .connect_timeout(Duration::from_secs(10));
    let client = zklock::Client::connect(&servers, options).await.unwrap();
    let mutex = client.mutex(&path).unwrap();
    // Some history, so that the server's zxid is above where a wiped server starts again.
    let mut tokens = Vec::new();
    for _ in 0..5 {
        let lease = mutex.acquire().await.unwrap();
        tokens.push(lease.token());
        lease.release().await.unwrap();
    }
    let held = mutex.acquire().await.unwrap();
    tokens.push(held.token());

    tokio::task::block_in_place(|| zk.restart_wiped(0)).expect("restart with its data wiped");
    tokio::time::timeout(Duration::from_secs(30), held.lost())
        .await
        .expect("the lease is lost: its session cannot be re-established");

    match mutex.acquire_timeout(Duration::from_secs(15)).await {
        Ok(lease) => panic!(
            "acquired from a server with an older history: token {} after {tokens:?}",
            lease.token()
        ),
        Err(err) => {
            assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
            assert!(
                err.message()
                    .contains("older history than this client has seen"),
                "{err}"
            );
        }
    }
    refusals_after_the_first_write_nothing_on_the_server(&zk, &mutex).await;
    client.close().await;
}

/// Issue 51: telling a wiped server from one going down takes a probe session (a createSession
/// and a closeSession: two writes). The refusal is remembered, so that further acquires of the
/// same client are refused from memory: the server's zxid does not move.
async fn refusals_after_the_first_write_nothing_on_the_server(
    zk: &ZooKeeper,
    mutex: &zklock::Lock,
) {
    let zxid = || {
        let srvr = zk.four_letter(0, "srvr").expect("srvr");
        let hex = srvr
            .lines()
            .find_map(|l| l.strip_prefix("Zxid: 0x"))
            .expect("srvr names the zxid");
        i64::from_str_radix(hex.trim(), 16).expect("a hex zxid")
    };
    let before = tokio::task::block_in_place(zxid);
    for _ in 0..5 {
        let err = mutex
            .acquire_timeout(Duration::from_secs(15))
            .await
            .expect_err("still refused");
        assert!(
            err.message()
                .contains("older history than this client has seen"),
            "{err}"
        );
    }
    let after = tokio::task::block_in_place(zxid);
    assert_eq!(
        after,
        before,
        "5 refused acquires wrote {} transactions (a probe session is 2)",
        after - before
    );
}
