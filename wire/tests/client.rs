//! The session layer (`client`) against the harness's real ZooKeeper, with the harness's TCP
//! fault proxy between them where a test needs the link to break.

use std::time::Duration;

mod common;

use common::wait_state;

use zklock_testkit::Proxy;
use zklock_wire::client::{
    Client, ClientOptions, ConnectError, CreateMode, Error, EventType, OneshotWatcher, Op,
    OpResult, SessionState, WatchedEvent,
};
use zklock_wire::jute::Acl;

fn options(timeout_ms: u64) -> ClientOptions {
    ClientOptions {
        session_timeout: Duration::from_millis(timeout_ms),
        connect_timeout: Duration::from_secs(2),
        ..ClientOptions::default()
    }
}

async fn open(servers: &str) -> Client {
    Client::connect(servers, options(6000), None)
        .await
        .expect("connect to the harness's ZooKeeper")
}

fn unique(name: &str) -> String {
    zklock_testkit::unique_path(&format!("wire-{name}"))
}

/// The event that fired `watcher`, failing the test (saying `what` was expected) after 5 s.
async fn fired(watcher: OneshotWatcher, what: &str) -> WatchedEvent {
    tokio::time::timeout(Duration::from_secs(5), watcher.changed())
        .await
        .unwrap_or_else(|_| panic!("{what}"))
}

/// A new persistent node of its own for a test, and the open ACL the test creates with.
async fn fresh(client: &Client, name: &str) -> (String, Vec<Acl>) {
    let path = unique(name);
    let acl = Acl::open_unsafe();
    client
        .mkdir(&path, CreateMode::Persistent, &acl)
        .await
        .unwrap();
    (path, acl)
}

#[tokio::test]
async fn nodes_are_created_read_listed_changed_and_deleted_under_a_chroot() {
    let root = unique("chroot");
    let plain = open(zklock_testkit::shared()).await;
    plain
        .mkdir(&root, CreateMode::Persistent, &Acl::open_unsafe())
        .await
        .unwrap();
    let client = open(&format!("{}{root}", zklock_testkit::shared())).await;
    let acl = Acl::open_unsafe();

    client
        .mkdir("/a/b", CreateMode::Container, &acl)
        .await
        .unwrap();
    let (stat, path) = client
        .create("/a/b/n-", b"hi", CreateMode::EphemeralSequential, &acl)
        .await
        .unwrap();
    assert!(
        path.starts_with("/a/b/n-") && path.len() == "/a/b/n-".len() + 10,
        "{path}"
    );
    assert_eq!(stat.ephemeral_owner, client.session_id());
    let (data, _) = client.get_data(&path).await.unwrap();
    assert_eq!(data, b"hi");
    let name = path.rsplit('/').next().unwrap().to_owned();
    assert_eq!(
        client.list_children("/a/b").await.unwrap(),
        vec![name.clone()]
    );
    // The same node, seen without the chroot.
    let full = format!("{root}{path}");
    assert_eq!(plain.get_data(&full).await.unwrap().0, b"hi");
    let stat = client.set_data(&path, b"ho", Some(0)).await.unwrap();
    assert_eq!(stat.version, 1);
    assert_eq!(
        client.set_data(&path, b"x", Some(0)).await,
        Err(Error::BadVersion)
    );
    client.delete(&path, None).await.unwrap();
    assert_eq!(client.check_stat(&path).await, Ok(None));
    assert_eq!(client.get_data(&path).await, Err(Error::NoNode));
    assert!(matches!(
        client.get_data("no-slash").await,
        Err(Error::BadArguments(_))
    ));
}

#[tokio::test]
async fn a_multi_applies_all_or_names_the_op_that_failed() {
    let client = open(zklock_testkit::shared()).await;
    let (dir, acl) = fresh(&client, "multi").await;
    let node = format!("{dir}/n");
    let done = client
        .multi(&[
            Op::Check {
                path: &dir,
                version: -1,
            },
            Op::Create {
                path: &node,
                data: b"1",
                mode: CreateMode::Persistent,
                acl: &acl,
            },
            Op::SetData {
                path: &node,
                data: b"2",
                version: 0,
            },
        ])
        .await
        .unwrap();
    assert_eq!(done[0], OpResult::Check);
    assert_eq!(done[1], OpResult::Create { path: node.clone() });
    assert!(matches!(done[2], OpResult::SetData { ref stat } if stat.version == 1));
    let failed = client
        .multi(&[
            Op::Delete {
                path: &node,
                version: -1,
            },
            Op::Check {
                path: &format!("{dir}/missing"),
                version: -1,
            },
        ])
        .await;
    assert_eq!(
        failed,
        Err(zklock_wire::client::MultiError::OperationFailed {
            index: 1,
            source: Error::NoNode
        })
    );
    assert!(
        client.check_stat(&node).await.unwrap().is_some(),
        "nothing applied"
    );
}

#[tokio::test]
async fn a_data_watch_fires_once_when_another_session_deletes_the_node() {
    let client = open(zklock_testkit::shared()).await;
    let other = open(zklock_testkit::shared()).await;
    let node = unique("watch");
    let acl = Acl::open_unsafe();
    client
        .mkdir(&node, CreateMode::Persistent, &acl)
        .await
        .unwrap();
    let (_, _, watcher) = client.get_and_watch_data(&node).await.unwrap();
    let (_, children) = client.list_and_watch_children(&node).await.unwrap();
    other.delete(&node, None).await.unwrap();
    let event = fired(watcher, "the watch fires").await;
    assert_eq!(event.event_type, EventType::NodeDeleted);
    assert_eq!(event.path, node);
    let event = fired(children, "the child watch fires").await;
    assert_eq!(event.event_type, EventType::NodeDeleted);
}

#[tokio::test]
async fn a_node_deleted_while_disconnected_is_reported_after_the_reconnect() {
    let proxy = Proxy::start(zklock_testkit::shared()).expect("proxy");
    let client = open(proxy.addr()).await;
    let other = open(zklock_testkit::shared()).await;
    let node = unique("rearm");
    let acl = Acl::open_unsafe();
    client
        .mkdir(&node, CreateMode::Persistent, &acl)
        .await
        .unwrap();
    let (_, _, watcher) = client.get_and_watch_data(&node).await.unwrap();
    let (_, exists) = client
        .check_and_watch_stat(&format!("{node}-later"))
        .await
        .unwrap();

    proxy.refuse();
    proxy.cut();
    wait_state(&client, SessionState::Disconnected, Duration::from_secs(5)).await;
    other.delete(&node, None).await.unwrap();
    other
        .create(&format!("{node}-later"), b"", CreateMode::Ephemeral, &acl)
        .await
        .unwrap();
    assert!(matches!(
        client.get_data(&node).await,
        Err(Error::ConnectionLoss(_))
    ));
    proxy.heal();
    wait_state(&client, SessionState::SyncConnected, Duration::from_secs(5)).await;
    let event = fired(
        watcher,
        "SetWatches re-armed the watch and the server reported the deletion",
    )
    .await;
    assert_eq!(event.event_type, EventType::NodeDeleted);
    let event = fired(exists, "the exists watch reports the creation").await;
    assert_eq!(event.event_type, EventType::NodeCreated);
}

#[tokio::test]
async fn a_session_unreachable_for_its_timeout_expires_and_its_watches_end() {
    let proxy = Proxy::start(zklock_testkit::shared()).expect("proxy");
    let client = Client::connect(proxy.addr(), options(4000), None)
        .await
        .unwrap();
    let node = unique("expire");
    client
        .mkdir(&node, CreateMode::Persistent, &Acl::open_unsafe())
        .await
        .unwrap();
    let (_, _, watcher) = client.get_and_watch_data(&node).await.unwrap();
    proxy.refuse();
    proxy.cut();
    wait_state(&client, SessionState::Expired, Duration::from_secs(8)).await;
    let event = watcher.changed().await;
    assert_eq!(event.event_type, EventType::Session);
    assert_eq!(event.session_state, SessionState::Expired);
    assert_eq!(client.get_data(&node).await, Err(Error::SessionExpired));
}

#[tokio::test]
async fn a_connect_with_every_server_down_fails_after_one_round() {
    let proxy = Proxy::start(zklock_testkit::shared()).expect("proxy");
    proxy.refuse();
    let started = std::time::Instant::now();
    let result = Client::connect(&format!("{0},{0}", proxy.addr()), options(4000), None).await;
    assert!(
        matches!(result, Err(ConnectError::Unreachable(_))),
        "{result:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn closing_a_client_deletes_its_ephemeral_nodes_at_once() {
    let client = open(zklock_testkit::shared()).await;
    let other = open(zklock_testkit::shared()).await;
    let node = unique("close");
    client
        .create(&node, b"", CreateMode::Ephemeral, &Acl::open_unsafe())
        .await
        .unwrap();
    client.close();
    wait_state(&client, SessionState::Closed, Duration::from_secs(2)).await;
    assert_eq!(other.check_stat(&node).await, Ok(None));
    assert_eq!(client.get_data(&node).await, Err(Error::ClientClosed));
}

#[tokio::test]
async fn dropping_the_last_handle_closes_the_session() {
    let other = open(zklock_testkit::shared()).await;
    let node = unique("drop");
    {
        let client = open(zklock_testkit::shared()).await;
        client
            .create(&node, b"", CreateMode::Ephemeral, &Acl::open_unsafe())
            .await
            .unwrap();
    }
    assert!(
        gone_within(&other, &node, Duration::from_secs(3)).await,
        "the dropped client's ephemeral node outlived it"
    );
}

/// Whether `node`, as `client` sees it, is gone within `limit`.
async fn gone_within(client: &Client, node: &str, limit: Duration) -> bool {
    let gone = async {
        while client.check_stat(node).await.unwrap().is_some() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(limit, gone).await.is_ok()
}

#[tokio::test]
async fn an_abandoned_session_is_left_to_the_server_and_its_nodes_stay_until_it_expires() {
    let other = open(zklock_testkit::shared()).await;
    let (dir, acl) = fresh(&other, "abandon").await;
    let node = format!("{dir}/n");
    let client = open(zklock_testkit::shared()).await;
    let timeout = client.session_timeout();
    client
        .create(&node, b"", CreateMode::Ephemeral, &acl)
        .await
        .unwrap();
    let abandoned = std::time::Instant::now();
    client.abandon();
    wait_state(&client, SessionState::Closed, Duration::from_secs(2)).await;
    assert_eq!(client.get_data(&node).await, Err(Error::ClientClosed));
    drop(client);
    // No CloseSession went out: the node stays for as long as the server keeps the session,
    // and goes once the server expires it, a session timeout after its last touch.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        other.check_stat(&node).await.unwrap().is_some(),
        "the abandoned session was closed on the server"
    );
    assert!(
        gone_within(&other, &node, timeout * 3).await,
        "the server never expired the abandoned session"
    );
    assert!(
        abandoned.elapsed() >= timeout.saturating_sub(Duration::from_millis(500)),
        "the node went {:?} after the abandon, sooner than the server's expiry",
        abandoned.elapsed()
    );
}

#[tokio::test]
async fn requests_queued_in_a_burst_are_all_answered_in_queue_order() {
    let client = open(zklock_testkit::shared()).await;
    let (dir, acl) = fresh(&client, "burst").await;
    // 200 sequential creates and then a listing, all submitted before any reply is awaited.
    let creates: Vec<_> = (0..200)
        .map(|_| {
            client.create(
                &format!("{dir}/n-"),
                b"",
                CreateMode::PersistentSequential,
                &acl,
            )
        })
        .collect();
    let listing = client.list_children(&dir);
    let mut sequences = Vec::with_capacity(creates.len());
    for create in creates {
        let (_, path) = create.await.expect("every queued create is answered");
        sequences.push(path.rsplit('-').next().unwrap().parse::<i64>().unwrap());
    }
    // The server numbers the creates in the order it received them: queue order kept.
    let expected: Vec<i64> = (sequences[0]..sequences[0] + 200).collect();
    assert_eq!(
        sequences, expected,
        "creates reached the server out of order"
    );
    let children = listing.await.expect("the listing queued last is answered");
    assert_eq!(
        children.len(),
        200,
        "the listing queued after the creates sees them all"
    );
}
