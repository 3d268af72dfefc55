//! Outcomes of a guarded write a caller can act on (issue 23, point 6): a write whose answer is
//! lost with the connection fails with its own kind, `OutcomeUnknown` (it may have been applied,
//! and here it was); a write on a suspended lease waits for the reconnect within its timeout
//! instead of failing at once; a timeout bounds the wait, and nothing is sent when it passes.

mod common;

use std::time::Duration;

use common::*;
use zklock::{ErrorKind, LeaseState, Options, Write};

async fn node_exists(path: &str) -> bool {
    let zk = zookeeper_client::Client::connect(servers()).await.unwrap();
    zk.check_stat(path).await.unwrap().is_some()
}

/// Waits until the client has seen its connection break (a cut is noticed at once).
async fn suspended(lease: &zklock::Lease) {
    for _ in 0..200 {
        if lease.state() == LeaseState::Suspended {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the lease did not turn suspended: {:?}", lease.state());
}

/// A client through its own proxy, a lease on a fresh path, and a data path beside it.
async fn holder(name: &str) -> (zklock_testkit::Proxy, zklock::Client, zklock::Lease, String) {
    let proxy = proxy();
    let client = zklock::Client::connect(
        proxy.addr(),
        Options::default().session_timeout(Duration::from_secs(6)),
    )
    .await
    .unwrap();
    let path = unique_path(name);
    let lease = client.mutex(&path).unwrap().acquire().await.unwrap();
    let data = format!("{path}-data");
    (proxy, client, lease, data)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guarded_write_whose_answer_is_lost_fails_as_outcome_unknown_and_was_applied() {
    let (proxy, client, lease, data) = holder("outcome-unknown").await;
    proxy.drop_next_reply();
    let err = lease
        .guarded_write(vec![Write::create(&data, "x")])
        .await
        .expect_err("the answer never arrives");
    assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
    assert!(err.message().contains("may or may not"), "{err}");
    assert!(
        node_exists(&data).await,
        "the server applied the write whose answer was lost"
    );
    let _ = lease.release().await;
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guarded_write_on_a_suspended_lease_waits_for_the_reconnect_and_applies() {
    let (proxy, client, lease, data) = holder("suspended-write").await;
    proxy.refuse();
    proxy.cut();
    suspended(&lease).await;
    let heal = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        proxy.heal();
        proxy
    });
    let written = lease
        .guarded_write_timeout(
            vec![Write::create(&data, "x")],
            Some(Duration::from_secs(5)),
        )
        .await
        .expect("the write waits for the reconnect, then applies");
    assert_eq!(written.len(), 1);
    assert!(node_exists(&data).await);
    let _proxy = heal.await.unwrap();
    let _ = lease.release().await;
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guarded_write_that_cannot_be_sent_within_its_timeout_fails_as_timeout_and_sends_nothing()
{
    let (proxy, client, lease, data) = holder("write-timeout").await;
    proxy.refuse();
    proxy.cut();
    suspended(&lease).await;
    let started = tokio::time::Instant::now();
    let err = lease
        .guarded_write_timeout(
            vec![Write::create(&data, "x")],
            Some(Duration::from_millis(300)),
        )
        .await
        .expect_err("no connection within the timeout");
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(started.elapsed() < Duration::from_millis(1000));
    proxy.heal();
    // Once connected again, nothing arrives late: the batch was never sent.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!node_exists(&data).await, "a timed-out batch was applied");
    let _ = lease.release().await;
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_participants_is_bounded_by_its_timeout() {
    let (proxy, client, lease, _) = holder("participants-timeout").await;
    let mutex = client
        .mutex(lease.path().rsplit_once('/').unwrap().0)
        .unwrap();
    assert_eq!(
        mutex
            .participants_timeout(Some(Duration::from_secs(5)))
            .await
            .unwrap()
            .len(),
        1
    );
    proxy.blackhole();
    let started = tokio::time::Instant::now();
    let err = mutex
        .participants_timeout(Some(Duration::from_millis(300)))
        .await
        .expect_err("a black hole answers nothing");
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(started.elapsed() < Duration::from_millis(1000));
    proxy.heal();
    let _ = lease.release().await;
    client.close().await;
}

/// A guarded batch over ZooKeeper's packet limit is refused before any I/O (issue 27, point 3):
/// sent, the server would close the connection (`NIOServerCnxn.readLength`), every lease of the
/// client would turn suspended and the write would end as `OutcomeUnknown`. A batch exactly at
/// the limit is sent and applied, so the core measures the request as the server reads it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guarded_write_over_the_packet_limit_is_refused_before_io_and_one_at_the_limit_applies() {
    let (proxy, client, lease, data) = holder("packet-limit").await;
    let mut states = Vec::new();
    let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let tell = heard.clone();
    lease.subscribe(move |s| tell.lock().unwrap().push(s));
    let node = lease.path().to_owned(); // our lock node's full path
                                        // The server's limit, jute.maxbuffer's default (BinaryInputArchive.maxBuffer), counted
                                        // without the 4-byte frame. The multi request, field by field (zookeeper.jute): the request
                                        // header (xid, type); before each op a MultiHeader (type, done, err); a closing one.
                                        // Strings and buffers are an int length and the bytes; ACL open: [world:anyone, perms].
    let limit = 0xfffff;
    let multi_header = 4 + 1 + 4;
    let check = multi_header + (4 + node.len()) + 4;
    let open_acl = 4 + (4 + (4 + "world".len()) + (4 + "anyone".len()));
    let create_but_data = multi_header + (4 + data.len()) + 4 + open_acl + 4;
    let fits = limit - (8 + check + create_but_data + multi_header);

    let err = lease
        .guarded_write(vec![Write::create(&data, vec![b'q'; fits + 1])])
        .await
        .expect_err("one byte over the limit");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(err.message().contains("jute.maxbuffer"), "{err}");
    assert!(err.message().contains(&format!("{}", limit + 1)), "{err}");
    assert!(
        err.message().len() < 300 && !err.message().contains("qqqq"),
        "{err}"
    );
    assert!(!node_exists(&data).await);
    states.push(lease.state());

    let written = lease
        .guarded_write(vec![Write::create(&data, vec![b'q'; fits])])
        .await
        .expect("a request at the limit is read and applied");
    assert_eq!(written.len(), 1);
    assert!(node_exists(&data).await);
    states.push(lease.state());
    assert_eq!(states, [LeaseState::Held, LeaseState::Held]);
    assert_eq!(
        *heard.lock().unwrap(),
        [LeaseState::Held],
        "the lease never left held: the connection stayed up"
    );
    assert_eq!(proxy.open_connections(), 1, "no reconnect");
    lease
        .guarded_write(vec![Write::delete(&data)])
        .await
        .unwrap();
    let _ = lease.release().await;
    client.close().await;
}
