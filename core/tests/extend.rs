//! Extending a maximum hold and the warning before it ends (issue 37, point 3), on a real
//! ZooKeeper.

mod common;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;
use zklock::{ErrorKind, LeaseState};

#[tokio::test]
async fn an_extended_lease_outlives_its_first_maximum_hold_with_the_same_token() {
    let c = client().await;
    let path = zklock_testkit::unique_path("extend");
    let lock = c
        .mutex(&path)
        .unwrap()
        .max_hold(Some(Duration::from_millis(600)));
    let lease = lock.unwrap().acquire().await.unwrap();
    let acquired = Instant::now();
    let token = lease.token();
    let end = lease.extend(Duration::from_secs(20)).unwrap();
    assert!(
        end >= acquired + Duration::from_secs(19),
        "the new end is 20 s out"
    );
    let until = lease.valid_until().expect("held");
    assert!(
        until > acquired + Duration::from_millis(600),
        "valid_until follows the new end"
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        lease.state(),
        LeaseState::Held,
        "past the first end, still held"
    );
    assert_eq!(lease.token(), token);
    lease.release().await.unwrap();
}

#[tokio::test]
async fn an_extension_past_the_hold_ceiling_is_refused_and_moves_nothing() {
    let c = client().await;
    let path = zklock_testkit::unique_path("extend");
    let lock = c
        .mutex(&path)
        .unwrap()
        .max_hold(Some(Duration::from_secs(5)))
        .unwrap()
        .hold_ceiling(Some(Duration::from_secs(8)))
        .unwrap();
    let lease = lock.acquire().await.unwrap();
    let before = lease.valid_until();
    let err = lease.extend(Duration::from_secs(60)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(err.to_string().contains("ceiling"), "{err}");
    assert!(lease.valid_until() <= before.map(|b| b + Duration::from_millis(50)));
    lease
        .extend(Duration::from_secs(6))
        .expect("within the ceiling");
    lease.release().await.unwrap();
    assert!(c
        .mutex(&path)
        .unwrap()
        .hold_ceiling(Some(Duration::ZERO))
        .is_err());
}

#[tokio::test]
async fn a_lease_without_a_maximum_hold_or_after_its_loss_is_not_extended() {
    let c = client().await;
    let path = zklock_testkit::unique_path("extend");
    let lease = c.mutex(&path).unwrap().acquire().await.unwrap();
    let err = lease.extend(Duration::from_secs(1)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    lease.release().await.unwrap();

    let own = client().await;
    let lost = own
        .mutex(&path)
        .unwrap()
        .max_hold(Some(Duration::from_secs(30)))
        .unwrap()
        .acquire()
        .await
        .unwrap();
    own.close().await;
    assert_eq!(lost.state(), LeaseState::Lost);
    let err = lost.extend(Duration::from_secs(1)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LockLost, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_expiring_warning_comes_before_the_maximum_hold_ends_and_again_after_an_extension() {
    let c = client().await;
    let path = zklock_testkit::unique_path("extend");
    let lock = c
        .mutex(&path)
        .unwrap()
        .max_hold(Some(Duration::from_millis(800)));
    let lease = lock.unwrap().acquire().await.unwrap();
    let (tx, rx) = mpsc::channel::<(&'static str, Instant, Duration)>();
    let warn = tx.clone();
    lease.on_expiring(Duration::from_millis(400), move |left| {
        let _ = warn.send(("expiring", Instant::now(), left));
    });
    lease.on_lost(move || {
        let _ = tx.send(("lost", Instant::now(), Duration::ZERO));
    });
    let wait = |rx: &mpsc::Receiver<_>| rx.recv_timeout(Duration::from_secs(30)).expect("an event");
    let (first, warned_at, left) = tokio::task::block_in_place(|| wait(&rx));
    assert_eq!(first, "expiring");
    assert!(left <= Duration::from_millis(400), "{left:?} left");
    // Extend once warned: a second warning comes before the new end, then the loss.
    lease.extend(Duration::from_millis(900)).unwrap();
    let (second, _, _) = tokio::task::block_in_place(|| wait(&rx));
    assert_eq!(second, "expiring", "warned again before the new end");
    let (third, lost_at, _) = tokio::task::block_in_place(|| wait(&rx));
    assert_eq!(third, "lost");
    assert!(lost_at > warned_at);
    let reason = lease.lost_reason().unwrap();
    assert!(reason.contains(zklock::MAX_HOLD), "{reason}");
}

/// A maximum hold or ceiling longer than the clocks can count is refused where it is set, for
/// a lock and a multi-lock alike, instead of overflowing when an acquire counts its end.
#[tokio::test]
async fn a_maximum_hold_or_ceiling_past_what_the_clock_holds_is_refused_where_it_is_set() {
    let c = client().await;
    let path = zklock_testkit::unique_path("extend-past-clock");
    let huge = Some(Duration::MAX);
    let err = c.mutex(&path).unwrap().max_hold(huge).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(
        err.message().contains("beyond what the clock holds"),
        "{err}"
    );
    let err = c.mutex(&path).unwrap().hold_ceiling(huge).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    let multi = || {
        c.multi_lock([format!("{path}/a"), format!("{path}/b")])
            .unwrap()
    };
    assert_eq!(
        multi().max_hold(huge).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        multi().hold_ceiling(huge).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    // A long one the clocks can count is a limit like any other.
    let lease = c
        .mutex(&path)
        .unwrap()
        .max_hold(Some(Duration::from_secs(100 * 365 * 24 * 3600)))
        .unwrap()
        .acquire()
        .await
        .unwrap();
    assert!(lease.time_left().is_some_and(|l| !l.is_zero()));
    assert!(lease.valid_until().is_some());
    lease.release().await.unwrap();
}
