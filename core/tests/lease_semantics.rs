//! Issue 33's lease semantics against a real ZooKeeper: `valid_until` (and `time_left`) never
//! outlasts a maximum hold (no other holder before it, whatever the lock kind), lost stays lost once
//! released (`Lease::ended`), and an election object resigns only its own leadership and
//! refuses a second lead while it leads.

mod common;

use std::time::{Duration, Instant};

use common::*;
use zklock::{ElectionStyle, ErrorKind, Lease, LeaseState, Wait};

const LIMIT: Duration = Duration::from_millis(700);

/// Holds `lease` (taken under a maximum hold of `LIMIT`, the acquire returned at `acquired`)
/// while `next` waits for the same lock on another client: `valid_until` is within the limit,
/// the loss comes no earlier than it, and the next holder gets the lock no earlier either.
async fn valid_until_is_the_max_holds_end(
    what: &str,
    lease: Lease,
    acquired: Instant,
    next: zklock::Acquire,
) {
    let until = lease.valid_until().expect("held");
    assert!(until > Instant::now(), "{what}: ahead of now");
    // The time left, on the clock that counts a suspend, is at most the maximum hold too.
    let left = lease.time_left().expect("held");
    assert!(
        left > Duration::ZERO && left <= LIMIT,
        "{what}: time_left {left:?}"
    );
    assert!(
        until <= acquired + LIMIT,
        "{what}: valid_until {:?} after the acquire, past the maximum hold of {LIMIT:?}",
        until - acquired
    );
    tokio::time::timeout(Duration::from_secs(5), lease.lost())
        .await
        .unwrap_or_else(|_| panic!("{what}: the maximum hold ends the lease"));
    assert!(Instant::now() >= until, "{what}: lost before valid_until");
    assert_eq!(lease.valid_until(), None, "{what}: none once lost");
    assert_eq!(lease.time_left(), None, "{what}: no time left once lost");
    let taken = next.await.expect("the next holder gets it");
    assert!(
        Instant::now() >= until,
        "{what}: the next holder came early"
    );
    taken.release().await.unwrap();
    lease.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valid_until_ends_at_the_maximum_hold_for_a_mutex_a_semaphore_mutex_a_write_side_and_an_election(
) {
    let (a, b) = (client().await, client().await);
    assert!(
        a.session_timeout() > LIMIT * 2,
        "the session is not the bound"
    );

    let path = unique_path("vu-mutex");
    let lock = a.mutex(&path).unwrap().max_hold(Some(LIMIT)).unwrap();
    let lease = lock.acquire().await.unwrap();
    let acquired = Instant::now();
    let next = b
        .mutex(&path)
        .unwrap()
        .start_acquire(zklock::Owner::SHARED, Wait::Forever);
    valid_until_is_the_max_holds_end("mutex", lease, acquired, next).await;

    let path = unique_path("vu-semaphore");
    let lock = a
        .semaphore_mutex(&path)
        .unwrap()
        .max_hold(Some(LIMIT))
        .unwrap();
    let lease = lock.acquire().await.unwrap();
    let acquired = Instant::now();
    let next = b
        .semaphore_mutex(&path)
        .unwrap()
        .start_acquire(zklock::Owner::SHARED, Wait::Forever);
    valid_until_is_the_max_holds_end("semaphore mutex", lease, acquired, next).await;

    let path = unique_path("vu-write");
    let rw = a.rw_lock(&path).unwrap().max_hold(Some(LIMIT)).unwrap();
    let lease = rw.write().acquire().await.unwrap();
    let acquired = Instant::now();
    let next = b
        .mutex(&path)
        .unwrap()
        .start_acquire(zklock::Owner::SHARED, Wait::Forever);
    valid_until_is_the_max_holds_end("write side", lease, acquired, next).await;

    let path = unique_path("vu-election");
    let election = a
        .election(&path, ElectionStyle::Latch, Some("a"))
        .unwrap()
        .max_hold(Some(LIMIT))
        .unwrap();
    let lease = election.lead().await.unwrap();
    let acquired = Instant::now();
    let next = b
        .election(&path, ElectionStyle::Latch, Some("b"))
        .unwrap()
        .start_lead(Wait::Forever);
    valid_until_is_the_max_holds_end("election", lease, acquired, next).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_lost_before_its_release_ends_lost_with_its_reason_and_its_scope_fails() {
    let a = client().await;
    let path = unique_path("ended-lost");
    let lease = a.mutex(&path).unwrap().acquire().await.unwrap();
    a.close().await;
    let ended = lease.ended();
    assert_eq!(ended.state(), LeaseState::Lost);
    assert!(ended.lost_reason().is_some());
    let err = ended.leave_scope("the block").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LockLost);
    assert!(err.message().contains("before the block ended"), "{err}");
    assert!(
        err.message().contains(&format!("lock on \"{path}\"")),
        "{err}"
    );
    assert_eq!(
        lease.release().await.unwrap(),
        zklock::Released::WasLost,
        "the release agrees"
    );

    let b = client().await;
    let lease = b.mutex(&path).unwrap().acquire().await.unwrap();
    let ended = lease.ended();
    lease.release().await.unwrap();
    assert_eq!(ended.state(), LeaseState::Released);
    assert_eq!(ended.lost_reason(), None);
    ended
        .leave_scope("the block")
        .expect("a held lease leaves quietly");
}

/// Issue 51: a leader whose leadership was lost inside a scope is told of "the leadership on
/// PATH", not of a lock it never took; every face's scoped hold gets this message from here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaving_a_scope_after_a_leadership_was_lost_names_the_leadership_not_a_lock() {
    let a = client().await;
    let path = unique_path("ended-leadership");
    let election = a
        .election(&path, ElectionStyle::Selector, Some("leader"))
        .unwrap();
    let lead = election.lead().await.unwrap();
    a.close().await;
    let err = lead.ended().leave_scope("the block").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LockLost);
    assert!(
        err.message().starts_with(&format!(
            "the leadership on \"{path}\" was lost before the block ended"
        )),
        "{err}"
    );
    assert!(!err.message().contains("lock on"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_election_object_refuses_another_participants_leadership_which_keeps_leading() {
    let (a, b) = (client().await, client().await);
    let path = unique_path("foreign-resign");
    let ours = a
        .election(&path, ElectionStyle::Selector, Some("a"))
        .unwrap();
    let same_client = a
        .election(&path, ElectionStyle::Selector, Some("b"))
        .unwrap();
    let other_client = b
        .election(&path, ElectionStyle::Selector, Some("c"))
        .unwrap();
    let lead = ours.lead().await.unwrap();
    for (who, election) in [
        ("same client", &same_client),
        ("other client", &other_client),
    ] {
        let err = election.check_leadership(&lead).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{who}: {err}");
        let err = election
            .proclaim(&lead, b"usurper".to_vec(), None)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{who}: {err}");
    }
    let leader = ours.leader().await.unwrap().expect("someone leads");
    assert_eq!(leader.identity, "a", "untouched");
    assert_eq!(lead.state(), LeaseState::Held);
    ours.check_leadership(&lead).expect("its own");
    ours.resign(lead, false).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_lead_while_leading_is_refused_at_once_and_after_resigning_it_leads_again() {
    let a = client().await;
    let path = unique_path("lead-twice");
    let election = a.election(&path, ElectionStyle::Latch, Some("a")).unwrap();
    let lead = election.lead().await.unwrap();
    let started = Instant::now();
    let err = election
        .lead_with(Wait::timeout(Duration::from_secs(30)), None)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    let err = election.start_lead(Wait::Forever).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    let election = std::sync::Arc::new(election);
    let blocking = election.clone();
    let err = tokio::task::spawn_blocking(move || blocking.blocking_lead_with(Wait::Forever, None))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "refused, not timed out"
    );
    assert_eq!(
        election.participants().await.unwrap().len(),
        1,
        "no node queued"
    );
    election.resign(lead, false).await.unwrap();
    let again = election.lead().await.expect("leads again after resigning");
    election.resign(again, false).await.unwrap();
}
