//! A pending acquire's queue position against a real ZooKeeper (issue 37, point 4): the figure
//! the recipe computes from its own listings, and the `on_queued` calls.

mod common;

use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

use common::*;
use zklock::{Acquire, Owner, QueuePosition, Wait};

fn listened(acquire: &Acquire) -> Receiver<u32> {
    let (tx, rx) = channel();
    acquire.queue_position().on_queued(move |n| {
        let _ = tx.send(n);
    });
    rx
}

fn next(heard: &Receiver<u32>) -> u32 {
    heard
        .recv_timeout(Duration::from_secs(30))
        .expect("an on_queued call within 30 s")
}

async fn until_position(acquire: &Acquire, n: u32) {
    for _ in 0..1500 {
        if acquire.position() == Some(n) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("position never {n}: {:?}", acquire.position());
}

#[tokio::test]
async fn a_fourth_contender_counts_the_nodes_ahead_and_hears_each_change() {
    let path = unique_path("qpos-mutex");
    let clients = [
        client().await,
        client().await,
        client().await,
        client().await,
    ];
    let held = clients[0].mutex(&path).unwrap().acquire().await.unwrap();
    let second = clients[1]
        .mutex(&path)
        .unwrap()
        .start_acquire(Owner::SHARED, Wait::Forever);
    until_position(&second, 1).await;
    let third = clients[2]
        .mutex(&path)
        .unwrap()
        .start_acquire(Owner::SHARED, Wait::Forever);
    until_position(&third, 2).await;
    let fourth = clients[3]
        .mutex(&path)
        .unwrap()
        .start_acquire(Owner::SHARED, Wait::Forever);
    let heard = listened(&fourth);
    assert_eq!(next(&heard), 3, "three nodes ahead");
    assert_eq!(fourth.position(), Some(3));
    // The fourth watches the third: its leaving makes it list again.
    third.cancel();
    assert_eq!(next(&heard), 2, "the holder and the second are ahead");
    // The holder's leaving is not seen (the fourth watches the second): the figure stays an
    // upper bound until the second goes.
    held.release().await.unwrap();
    let second = second.await.unwrap();
    assert_eq!(fourth.position(), Some(2), "as of the last listing");
    second.release().await.unwrap();
    let lease = fourth.await.unwrap();
    assert!(
        heard.recv_timeout(Duration::from_millis(300)).is_err(),
        "no call once held"
    );
    lease.release().await.unwrap();
    for c in clients {
        c.close().await;
    }
    assert_empty_eventually(&path).await;
}

#[tokio::test]
async fn an_acquire_that_holds_at_once_is_never_queued() {
    let path = unique_path("qpos-free");
    let c = client().await;
    let acquire = c
        .mutex(&path)
        .unwrap()
        .start_acquire(Owner::SHARED, Wait::Forever);
    let heard = listened(&acquire);
    let lease = acquire.await.unwrap();
    assert!(heard.recv_timeout(Duration::from_millis(300)).is_err());
    lease.release().await.unwrap();
    // The same through the future API, with a position of the caller's.
    let position = QueuePosition::new();
    let lease = c
        .mutex(&path)
        .unwrap()
        .acquire_watched(Owner::SHARED, Wait::Forever, None, position.clone())
        .await
        .unwrap();
    assert_eq!(position.get(), None);
    lease.release().await.unwrap();
    c.close().await;
}

#[tokio::test]
async fn a_reader_counts_only_the_writers_ahead() {
    let path = unique_path("qpos-rw");
    let (a, b, c, d) = (
        client().await,
        client().await,
        client().await,
        client().await,
    );
    let read = a.rw_lock(&path).unwrap().read().acquire().await.unwrap();
    let also_read = b.rw_lock(&path).unwrap().read().acquire().await.unwrap();
    let writer = c
        .rw_lock(&path)
        .unwrap()
        .write()
        .start_acquire(Owner::SHARED, Wait::Forever);
    until_position(&writer, 2).await; // both readers ahead block a writer
    let reader = d
        .rw_lock(&path)
        .unwrap()
        .read()
        .start_acquire(Owner::SHARED, Wait::Forever);
    let heard = listened(&reader);
    assert_eq!(next(&heard), 1, "only the writer counts");
    writer.cancel();
    let lease = reader.await.unwrap();
    lease.release().await.unwrap();
    for lease in [read, also_read] {
        lease.release().await.unwrap();
    }
    for x in [a, b, c, d] {
        x.close().await;
    }
}

#[tokio::test]
async fn a_kazoo_node_ahead_counts() {
    let path = unique_path("qpos-kazoo");
    let zk = zookeeper_client::Client::connect(servers()).await.unwrap();
    let persistent =
        zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    zk.mkdir(&path, &persistent).await.unwrap();
    // kazoo's Lock names its node `<uuid hex>__lock__<seq>` (kazoo/recipe/lock.py).
    let ephemeral = zookeeper_client::CreateMode::EphemeralSequential
        .with_acls(zookeeper_client::Acls::anyone_all());
    let (_, kazoo_seq) = zk
        .create(
            &format!("{path}/0123456789abcdef0123456789abcdef__lock__"),
            b"kazoo",
            &ephemeral,
        )
        .await
        .unwrap();
    let c = client().await;
    let acquire = c
        .mutex(&path)
        .unwrap()
        .start_acquire(Owner::SHARED, Wait::Forever);
    let heard = listened(&acquire);
    assert_eq!(next(&heard), 1, "the kazoo holder is ahead");
    let kazoo_node = format!("{path}/0123456789abcdef0123456789abcdef__lock__{kazoo_seq}");
    zk.delete(&kazoo_node, None).await.unwrap();
    let lease = acquire.await.unwrap();
    assert_eq!(
        lease
            .path()
            .rsplit('/')
            .next()
            .map(|n| n.contains("-lock-")),
        Some(true)
    );
    lease.release().await.unwrap();
    c.close().await;
}

#[tokio::test]
async fn a_semaphore_waiter_counts_the_leases_that_must_go() {
    let path = unique_path("qpos-sem");
    let (a, b, c) = (client().await, client().await, client().await);
    let one = a.semaphore(&path, 2).unwrap().acquire().await.unwrap();
    let two = b.semaphore(&path, 2).unwrap().acquire().await.unwrap();
    let waiting = c
        .semaphore(&path, 2)
        .unwrap()
        .start_acquire(Owner::SHARED, Wait::Forever);
    let heard = listened(&waiting);
    // Two leases held, N = 2: one must go before ours is held.
    assert_eq!(next(&heard), 1);
    one.release().await.unwrap();
    let lease = waiting.await.unwrap();
    assert!(lease.is_held());
    lease.release().await.unwrap();
    two.release().await.unwrap();
    for x in [a, b, c] {
        x.close().await;
    }
}

#[tokio::test]
async fn a_multi_lock_reports_the_member_it_waits_for() {
    let (p1, p2) = (unique_path("qpos-m1"), unique_path("qpos-m2"));
    let (a, b) = (client().await, client().await);
    let held = a.mutex(&p2).unwrap().acquire().await.unwrap();
    let multi = b.multi_lock([p1.as_str(), p2.as_str()]).unwrap();
    let acquire = multi.start_acquire(Owner::SHARED, Wait::Forever);
    let heard = listened(&acquire);
    assert_eq!(next(&heard), 1, "the first member is free, the second held");
    held.release().await.unwrap();
    let lease = acquire.await.unwrap();
    assert_eq!(lease.tokens().len(), 2);
    lease.release().await.unwrap();
    a.close().await;
    b.close().await;
}
