//! zklock's counter and Curator's `SharedCount` / `DistributedAtomicLong` on the same node
//! (issue 37, point 5): each reads what the other wrote, and a zklock guarded increment and a
//! Curator add both count.

use zklock::{CounterWidth, Options};
use zklock_testkit::{unique_path, ZooKeeper};
use zklock_trust::peers::curator_counter;

async fn round(width: CounterWidth, kind: &str) {
    let zk = ZooKeeper::standalone().expect("ZooKeeper must start (scripts/install-deps.sh)");
    let servers = zk.connect_string();
    let base = unique_path("counter-interop");
    let path = format!("{base}/count");
    let client = zklock::Client::connect(&servers, Options::default())
        .await
        .unwrap();
    let counter = client.counter(&path, width).unwrap();
    let lease = client
        .mutex(&format!("{base}/lock"))
        .unwrap()
        .acquire()
        .await
        .unwrap();
    assert_eq!(lease.guarded_increment(&counter, 5).await.unwrap().value, 5);
    let read = curator_counter(&servers, &path, kind, &["get"]).unwrap();
    assert_eq!(read, 5, "Curator reads what zklock wrote ({kind})");
    let added = curator_counter(&servers, &path, kind, &["add", "10"]).unwrap();
    assert_eq!(added, 15, "Curator adds to zklock's count ({kind})");
    assert_eq!(
        counter.get().await.unwrap().value,
        15,
        "zklock reads Curator's write"
    );
    assert_eq!(
        lease.guarded_increment(&counter, 1).await.unwrap().value,
        16
    );
    assert_eq!(
        curator_counter(&servers, &path, kind, &["get"]).unwrap(),
        16
    );
    lease.release().await.unwrap();
}

#[tokio::test]
async fn curator_shared_count_and_zklock_int32_counter_share_one_node() {
    round(CounterWidth::Int32, "shared").await;
}

#[tokio::test]
async fn curator_distributed_atomic_long_and_zklock_int64_counter_share_one_node() {
    round(CounterWidth::Int64, "long").await;
}
