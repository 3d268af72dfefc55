//! Costs on the wire (issue 2, acceptance 10): an uncontended acquire waits for one round trip,
//! a re-entrant acquire for none, and sends the server nothing. Alone in its binary so the
//! process-wide counter and the server's packet counter see only this test.

use std::time::Duration;

use zklock_testkit::ZooKeeper;

#[tokio::test]
async fn uncontended_acquire_is_one_round_trip_and_reentry_is_free() {
    let zk = ZooKeeper::standalone().expect("ZooKeeper must start");
    let client = zklock::Client::connect(&zk.connect_string(), zklock::Options::default())
        .await
        .unwrap();
    let mutex = client.mutex("/round-trips/lock").unwrap();
    // Warm up: the first acquire also creates the lock parent.
    mutex.acquire().await.unwrap().release().await.unwrap();

    let before = zklock::support::round_trips();
    let lease = mutex.acquire().await.unwrap();
    assert_eq!(
        zklock::support::round_trips() - before,
        1,
        "create and list children are pipelined"
    );

    tokio::time::sleep(Duration::from_millis(200)).await; // let the background node watch settle
    let packets_before = zk.mntr_value(0, "zk_packets_received").unwrap();
    let trips_before = zklock::support::round_trips();
    let mut nested = Vec::new();
    for _ in 0..1000 {
        nested.push(mutex.acquire().await.unwrap());
    }
    let packets = zk.mntr_value(0, "zk_packets_received").unwrap() - packets_before;
    assert_eq!(
        zklock::support::round_trips(),
        trips_before,
        "re-entrant acquires wait for nothing"
    );
    // mntr's own connection counts one packet; a session ping may add one more.
    assert!(
        packets <= 3,
        "1000 re-entrant acquires sent {packets} packets"
    );
    assert_eq!(mutex.hold_count(), 1001);
    for l in nested {
        l.release().await.unwrap();
    }
    lease.release().await.unwrap();
}
