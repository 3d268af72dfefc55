//! Breaking a stuck lock (issue 37, point 1): `Client::break_lock` deletes exactly the named
//! holder's node; the holder's lease turns lost with reason `broken` at once, its guarded writes
//! apply nothing, and the next waiter acquires with a larger token.

mod common;

use std::time::Duration;

use common::*;
use zklock::{ErrorKind, LeaseState, Write};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_holder_turns_lost_as_broken_writes_nothing_and_the_waiter_gets_a_larger_token() {
    let (a, b, c) = (client().await, client().await, client().await);
    let path = unique_path("break-holder");
    let held = a.mutex(&path).unwrap().acquire().await.unwrap();
    let waiter_lock = b.mutex(&path).unwrap();
    let waiter = tokio::spawn(async move { waiter_lock.acquire().await });
    wait_for_nodes(&path, 2).await;

    let name = held.path().rsplit('/').next().unwrap().to_owned();
    let before_break = std::time::Instant::now();
    let broken = c
        .break_lock(&path, &name, Some("stuck since the night"))
        .await
        .unwrap();
    assert_eq!(broken.node, held.path());
    assert_eq!(broken.token, held.token());
    assert!(
        !broken.identity.is_empty(),
        "the holder's identity is shown"
    );

    tokio::time::timeout(Duration::from_secs(10), held.lost())
        .await
        .expect("the broken holder hears it");
    eprintln!(
        "broken holder lost {:?} after the break was sent",
        before_break.elapsed()
    );
    assert_eq!(held.state(), LeaseState::Lost);
    let reason = held.lost_reason().unwrap();
    assert!(
        reason
            .split_once(" lost: ")
            .unwrap()
            .1
            .starts_with("broken"),
        "{reason}"
    );
    let data = format!("{path}-data");
    let err = held
        .guarded_write(vec![Write::create(&data, "x")])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LockLost);

    let next = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("the waiter acquires")
        .unwrap()
        .unwrap();
    assert!(next.token() > broken.token, "the token goes up");
    next.guarded_write(vec![Write::create(&data, "y")])
        .await
        .expect("nothing was written by the broken holder");
    next.guarded_write(vec![Write::delete(&data)])
        .await
        .unwrap();
    next.release().await.unwrap();
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn breaking_a_node_that_is_not_there_is_not_held_and_an_empty_node_is_refused() {
    let (a, c) = (client().await, client().await);
    let path = unique_path("break-missing");
    let err = c.break_lock(&path, "", None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let held = a.mutex(&path).unwrap().acquire().await.unwrap();
    let err = c
        .break_lock(
            &path,
            "_c_00000000-0000-0000-0000-000000000000-lock-0000000099",
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotHeld);
    assert!(err.message().contains("nothing to break"), "{err}");
    assert_eq!(held.state(), LeaseState::Held, "the holder is untouched");
    held.release().await.unwrap();
    let name = held_name(&a, &path).await;
    let err = c.break_lock(&path, &name, None).await.unwrap_err();
    assert_eq!(
        err.kind(),
        ErrorKind::NotHeld,
        "released, then broken: gone"
    );
}

/// Takes and releases the lock once, returning its node's name (no longer there).
async fn held_name(client: &zklock::Client, path: &str) -> String {
    let lease = client.mutex(path).unwrap().acquire().await.unwrap();
    let name = lease.path().rsplit('/').next().unwrap().to_owned();
    lease.release().await.unwrap();
    name
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_break_the_acl_refuses_is_permission_denied_and_the_holder_keeps_its_lease() {
    let owner = client_with(
        zklock::Options::default()
            .auth("owner:secret")
            .acl(zklock::AclPolicy::ReadAnyoneCreatorAll),
    )
    .await;
    let stranger = client().await;
    // The shared parent is made by an open client first (an ACL'd client would make it
    // READ|CREATE for anyone, and the other tests could not delete their data beside it).
    let open = stranger
        .mutex(&unique_path("break-acl-open"))
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let path = unique_path("break-acl");
    let held = owner.mutex(&path).unwrap().acquire().await.unwrap();
    let name = held.path().rsplit('/').next().unwrap().to_owned();
    let err = stranger.break_lock(&path, &name, None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Permission, "{err}");
    assert_eq!(held.state(), LeaseState::Held);
    held.release().await.unwrap();
    open.release().await.unwrap();
}
