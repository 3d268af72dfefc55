//! The transport as zklock patches it (`vendor/zookeeper-client/README.md`, change 5): a
//! session takes every request already queued before it writes (up to 64 per turn), so that
//! an acquire's create and its pipelined getChildren leave in one write. These tests guard
//! what that change must keep: every request queued in a burst larger than one turn is sent
//! and answered, and in the order it was queued.

use zklock_testkit::ZooKeeper;
use zookeeper_client as zk;

#[tokio::test]
async fn requests_queued_in_a_burst_larger_than_one_turn_are_all_answered_in_queue_order() {
    let server = ZooKeeper::standalone().expect("ZooKeeper must start");
    let client = zk::Client::connect(&server.connect_string())
        .await
        .expect("connect to the harness's ZooKeeper");
    let plain = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    client.create("/burst", b"", &plain).await.unwrap();

    // 200 sequential creates and then a listing, all queued before any reply is awaited: more
    // than three turns' worth of requests, so the batches' boundaries are crossed.
    let sequential = zk::CreateMode::PersistentSequential.with_acls(zk::Acls::anyone_all());
    let creates: Vec<_> = (0..200)
        .map(|_| client.create("/burst/n-", b"", &sequential))
        .collect();
    let listing = client.list_children("/burst");

    let mut sequences = Vec::with_capacity(creates.len());
    for create in creates {
        let (_, sequence) = create.await.expect("every queued create is answered");
        sequences.push(sequence.into_i64());
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
