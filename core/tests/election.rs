//! Leader election against a real ZooKeeper (issue 25): the three layouts byte for byte, the
//! handover and its tokens, resign with a requeue, the refusal to lead beside another layout,
//! the leader seen from outside, sequencer checks, the maximum hold and `valid_until`.

mod common;

use std::time::{Duration, Instant};

use common::*;
use zklock::{ElectionStyle, ErrorKind, LeaseState, Library, Wait, Write};

const STYLES: [ElectionStyle; 3] = [
    ElectionStyle::Selector,
    ElectionStyle::Latch,
    ElectionStyle::Kazoo,
];

/// What a node of each layout looks like: (prefix check, suffix marker).
fn looks_like(style: ElectionStyle, name: &str) -> bool {
    let seq = |s: &str| s.len() == 10 && s.bytes().all(|b| b.is_ascii_digit());
    match style {
        ElectionStyle::Selector => {
            name.starts_with("_c_") && name[39..].starts_with("-lock-") && seq(&name[45..])
        }
        ElectionStyle::Latch => {
            name.starts_with("_c_") && name[39..].starts_with("-latch-") && seq(&name[46..])
        }
        ElectionStyle::Kazoo => {
            name[..32].bytes().all(|b| b.is_ascii_hexdigit())
                && name[32..].starts_with("__lock__")
                && seq(&name[40..])
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_style_writes_its_peers_node_name_with_the_id_as_data_and_the_next_leads_after_a_resign(
) {
    for style in STYLES {
        let (a, b) = (client().await, client().await);
        let path = unique_path(&format!("elect-{style}"));
        let first = a.election(&path, style, Some("alpha")).unwrap();
        let second = b.election(&path, style, Some("beta")).unwrap();
        let lead = first.lead().await.unwrap();
        let names = children(&path).await;
        assert_eq!(names.len(), 1);
        assert!(looks_like(style, &names[0]), "{style}: {}", names[0]);
        let leader = second.leader().await.unwrap().expect("a leader");
        assert_eq!(
            (leader.identity.as_str(), leader.token, leader.session_id),
            ("alpha", lead.token(), a.session_id())
        );
        assert_eq!(leader.election_style(), Some(style));
        if style == ElectionStyle::Kazoo {
            assert_eq!(leader.library, Library::Kazoo);
        }

        let waiting = second.start_lead(Wait::timeout(Duration::from_secs(20)));
        wait_for_nodes(&path, 2).await;
        assert!(!waiting.is_done(), "{style}: the second waits");
        let order: Vec<String> = second
            .participants()
            .await
            .unwrap()
            .into_iter()
            .map(|p| p.identity)
            .collect();
        assert_eq!(order, ["alpha", "beta"], "{style}: election order");
        assert!(first.resign(lead, false).await.unwrap().is_none());
        let next = waiting.await.unwrap();
        assert!(next.token() > leader.token, "{style}: tokens increase");
        assert_eq!(next.state(), LeaseState::Held);
        next.release().await.unwrap();
        assert_empty_eventually(&path).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resign_with_requeue_hands_over_and_runs_again_at_the_tail() {
    let (a, b) = (client().await, client().await);
    let path = unique_path("elect-requeue");
    let first = a.election(&path, ElectionStyle::Latch, Some("a")).unwrap();
    let second = b.election(&path, ElectionStyle::Latch, Some("b")).unwrap();
    let lead = first.lead().await.unwrap();
    let waiting = second.start_lead(Wait::Forever);
    wait_for_nodes(&path, 2).await;
    let again = first.resign(lead, true).await.unwrap().expect("requeued");
    let b_lead = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("b leads after a resigns")
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let order: Vec<String> = first
        .participants()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.identity)
        .collect();
    assert_eq!(order, ["b", "a"], "a is back at the tail");
    assert!(!again.is_done());
    let b_token = b_lead.token();
    b_lead.release().await.unwrap();
    let a_again = again.await.unwrap();
    assert!(a_again.token() > b_token, "a's new node came after b's");
    a_again.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_layouts_on_one_path_refuse_to_lead_naming_the_foreign_node_and_leave_nothing() {
    let pairs = [
        (ElectionStyle::Selector, ElectionStyle::Latch),
        (ElectionStyle::Latch, ElectionStyle::Selector),
        (ElectionStyle::Kazoo, ElectionStyle::Selector),
        (ElectionStyle::Selector, ElectionStyle::Kazoo),
    ];
    for (theirs, ours) in pairs {
        let (a, b) = (client().await, client().await);
        let path = unique_path("elect-mixed");
        let foreign = a
            .election(&path, theirs, Some("other"))
            .unwrap()
            .lead()
            .await
            .unwrap();
        let foreign_name = foreign.path().rsplit('/').next().unwrap().to_owned();
        let err = b
            .election(&path, ours, Some("me"))
            .unwrap()
            .lead_with(Wait::timeout(Duration::from_secs(5)), None)
            .await
            .unwrap_err();
        assert_eq!(
            err.kind(),
            ErrorKind::Conflict,
            "{theirs} then {ours}: {err}"
        );
        assert!(
            err.message().contains(&foreign_name),
            "names the foreign node: {err}"
        );
        assert_eq!(children(&path).await, [foreign_name], "ours was removed");
        foreign.release().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_node_that_arrives_while_we_wait_ends_the_wait_before_we_lead() {
    let (a, b) = (client().await, client().await);
    let path = unique_path("elect-late-foreign");
    let first = a
        .election(&path, ElectionStyle::Latch, Some("first"))
        .unwrap();
    let lead = first.lead().await.unwrap();
    let ours = b.election(&path, ElectionStyle::Latch, Some("me")).unwrap();
    let waiting = ours.start_lead(Wait::timeout(Duration::from_secs(20)));
    wait_for_nodes(&path, 2).await;
    // A Curator selector's node joins (made here by a plain client: Curator does not refuse).
    // It sorts after ours in our order, but Curator's selector sorts ours last and would lead.
    let raw = zookeeper_client::Client::connect(servers()).await.unwrap();
    let curator_prefix = format!("{path}/_c_0f8fad5b-d9cb-469f-a165-70867728950e-lock-");
    let mode = zookeeper_client::CreateMode::EphemeralSequential
        .with_acls(zookeeper_client::Acls::anyone_all());
    let (_, sequence) = raw
        .create(&curator_prefix, b"curator", &mode)
        .await
        .unwrap();
    let foreign = format!("_c_0f8fad5b-d9cb-469f-a165-70867728950e-lock-{sequence}");
    lead.release().await.unwrap();
    let err = waiting.await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert!(err.message().contains(&foreign), "{err}");
    assert_eq!(children(&path).await, [foreign], "ours was removed");
    drop(raw);
    assert_empty_eventually(&path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observer_sees_the_leader_each_change_and_no_leader() {
    let (a, b, watcher) = (client().await, client().await, client().await);
    let path = unique_path("elect-observe");
    let watch = watcher.observe_leader(&path).unwrap();
    let forever = Wait::timeout(Duration::from_secs(10));
    assert_eq!(watch.next(forever).await.unwrap(), None, "nobody leads yet");
    let first = a
        .election(&path, ElectionStyle::Selector, Some("one"))
        .unwrap();
    let second = b
        .election(&path, ElectionStyle::Selector, Some("two"))
        .unwrap();
    let lead = first.lead().await.unwrap();
    let seen = watch.next(forever).await.unwrap().expect("one leads");
    assert_eq!((seen.identity.as_str(), seen.token), ("one", lead.token()));
    let waiting = second.start_lead(Wait::Forever);
    // A new waiter is no change of leader.
    let err = watch
        .next(Wait::timeout(Duration::from_millis(500)))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    lead.release().await.unwrap();
    let seen = watch.next(forever).await.unwrap().expect("two leads");
    assert_eq!(seen.identity, "two");
    waiting.await.unwrap().release().await.unwrap();
    assert_eq!(
        watch.next(forever).await.unwrap(),
        None,
        "nobody leads again"
    );
}

/// Issue 33: an observer that already reported a leader sees its proclaim (the leader's node's
/// data changes, its node does not), within one wait, without polling.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observer_reports_the_id_a_leader_proclaims() {
    let (a, watcher) = (client().await, client().await);
    let path = unique_path("elect-proclaim-observe");
    let election = a
        .election(&path, ElectionStyle::Latch, Some("before"))
        .unwrap();
    let lead = election.lead().await.unwrap();
    let watch = watcher.observe_leader(&path).unwrap();
    let soon = Wait::timeout(Duration::from_secs(10));
    let seen = watch.next(soon).await.unwrap().expect("a leader");
    assert_eq!(seen.identity, "before");
    election
        .proclaim(&lead, b"after".to_vec(), Some(Duration::from_secs(5)))
        .await
        .unwrap();
    let seen = watch.next(soon).await.unwrap().expect("still a leader");
    assert_eq!(
        (seen.identity.as_str(), seen.token),
        ("after", lead.token()),
        "the observer reports the proclaimed id of the same leadership"
    );
    lead.release().await.unwrap();
    assert_eq!(watch.next(soon).await.unwrap(), None, "nobody leads");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_accepts_the_current_holders_token_only() {
    let (a, b, checker) = (client().await, client().await, client().await);
    let path = unique_path("elect-check");
    let first = a.election(&path, ElectionStyle::Kazoo, Some("a")).unwrap();
    let second = b.election(&path, ElectionStyle::Kazoo, Some("b")).unwrap();
    let lead = first.lead().await.unwrap();
    let waiting = second.start_lead(Wait::Forever);
    wait_for_nodes(&path, 2).await;
    let waiter_token = second.participants().await.unwrap()[1].token;
    let old = lead.token();
    assert!(checker.check(&path, old, None).await.unwrap());
    assert!(
        !checker.check(&path, waiter_token, None).await.unwrap(),
        "a waiter holds nothing"
    );
    lead.release().await.unwrap();
    let next = waiting.await.unwrap();
    assert!(
        !checker.check(&path, old, None).await.unwrap(),
        "a past leader"
    );
    let next_token = next.token();
    assert!(checker.check(&path, next_token, None).await.unwrap());
    next.release().await.unwrap();
    assert!(!checker.check(&path, next_token, None).await.unwrap());

    // A read/write lock: both readers hold, a writer behind them does not.
    let rw_path = unique_path("check-rw");
    let r1 = a.rw_lock(&rw_path).unwrap().read().acquire().await.unwrap();
    let r2 = b.rw_lock(&rw_path).unwrap().read().acquire().await.unwrap();
    let writer = checker.rw_lock(&rw_path).unwrap();
    let w = writer
        .write()
        .start_acquire(zklock::Owner::SHARED, Wait::Forever);
    wait_for_nodes(&rw_path, 3).await;
    let queue = writer.write().participants().await.unwrap();
    assert!(checker.check(&rw_path, r1.token(), None).await.unwrap());
    assert!(checker.check(&rw_path, r2.token(), None).await.unwrap());
    assert!(!checker.check(&rw_path, queue[2].token, None).await.unwrap());
    w.cancel();
    let _ = w.await;
    r1.release().await.unwrap();
    r2.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_max_hold_ends_the_leadership_lost_first_then_deletes_the_node_and_the_next_leads() {
    let (a, b) = (client().await, client().await);
    let path = unique_path("elect-max-hold");
    let first = a
        .election(&path, ElectionStyle::Selector, Some("hangs"))
        .unwrap()
        .max_hold(Some(Duration::from_millis(800)))
        .unwrap();
    let second = b
        .election(&path, ElectionStyle::Selector, Some("next"))
        .unwrap();
    let lead = first.lead().await.unwrap();
    let lost_at = {
        let lost = lead.lost();
        let waiting = second.start_lead(Wait::timeout(Duration::from_secs(10)));
        tokio::time::timeout(Duration::from_secs(5), lost)
            .await
            .expect("the maximum hold ends the leadership");
        let lost_at = Instant::now();
        let next = waiting.await.expect("the next leads after the max hold");
        assert!(Instant::now() >= lost_at, "lost came first");
        next.release().await.unwrap();
        lost_at
    };
    assert_eq!(lead.state(), LeaseState::Lost);
    let reason = lead.lost_reason().unwrap();
    assert!(reason.contains(zklock::MAX_HOLD), "{reason}");
    assert!(lost_at.elapsed() < Duration::from_secs(10));
    // A guarded write after the loss applies nothing.
    let marker = format!("{path}-marker");
    let err = lead
        .guarded_write(vec![Write::create(&marker, b"x".to_vec())])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LockLost, "{err}");
    let raw = zookeeper_client::Client::connect(servers()).await.unwrap();
    assert!(
        raw.check_stat(&marker).await.unwrap().is_none(),
        "nothing applied"
    );
    lead.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valid_until_is_ahead_while_held_and_gone_after_release() {
    let a = client().await;
    let path = unique_path("valid-until");
    let lease = a.mutex(&path).unwrap().acquire().await.unwrap();
    let until = lease.valid_until().expect("held");
    let now = Instant::now();
    assert!(until > now, "ahead of now");
    assert!(
        until < now + a.session_timeout(),
        "within one session timeout of the last proof"
    );
    // It moves forward with the heartbeats.
    tokio::time::sleep(a.session_timeout() / 2).await;
    assert!(lease.valid_until().expect("still held") > until);
    let lead = a
        .election(&unique_path("valid-until-e"), ElectionStyle::Latch, None)
        .unwrap()
        .lead()
        .await
        .unwrap();
    assert!(lead.valid_until().is_some());
    lead.release().await.unwrap();
    lease.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proclaim_sets_the_leaders_data_and_bad_input_is_refused() {
    let (a, b) = (client().await, client().await);
    let path = unique_path("elect-proclaim");
    let election = a.election(&path, ElectionStyle::Latch, Some("x")).unwrap();
    let lead = election.lead().await.unwrap();
    election
        .proclaim(&lead, b"x at 10.0.0.1:8080".to_vec(), None)
        .await
        .unwrap();
    let seen = b
        .election(&path, ElectionStyle::Latch, None)
        .unwrap()
        .leader()
        .await
        .unwrap()
        .unwrap();
    assert_eq!(seen.identity, "x at 10.0.0.1:8080");
    let other = b
        .mutex(&unique_path("not-this"))
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let err = election
        .proclaim(&other, b"y".to_vec(), None)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    let long = "i".repeat(zklock::MAX_ID_BYTES + 1);
    let err = a
        .election(&path, ElectionStyle::Latch, Some(&long))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.message().len() < 200, "{err}");
    assert_eq!(
        "nope".parse::<ElectionStyle>().unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    other.release().await.unwrap();
    lead.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_max_hold_on_a_read_write_lock_ends_a_read_and_a_write_lease() {
    let a = client().await;
    let path = unique_path("rw-max-hold");
    let rw = a
        .rw_lock(&path)
        .unwrap()
        .max_hold(Some(Duration::from_millis(300)))
        .unwrap();
    for side in [rw.read(), rw.write()] {
        let lease = side.acquire().await.unwrap();
        tokio::time::timeout(Duration::from_secs(5), lease.lost())
            .await
            .expect("the maximum hold ends the lease");
        assert!(lease.lost_reason().unwrap().contains(zklock::MAX_HOLD));
        lease.release().await.unwrap();
    }
    assert_empty_eventually(&path).await;
    let Err(err) = a.rw_lock(&path).unwrap().max_hold(Some(Duration::ZERO)) else {
        panic!("a zero maximum hold is refused");
    };
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_refusal_to_resign_another_objects_leadership_names_the_whole_node() {
    let (a, b) = (client().await, client().await);
    let path = unique_path("elect-another-object-with-a-long-enough-path");
    let first = a.election(&path, ElectionStyle::Latch, Some("a")).unwrap();
    let second = b.election(&path, ElectionStyle::Latch, Some("b")).unwrap();
    let lead = first.lead().await.unwrap();
    let err = second.check_leadership(&lead).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    let node = lead.path().rsplit_once('/').unwrap().1;
    assert!(
        lead.path().len() > 64,
        "the node's path is longer than a shown input"
    );
    assert!(err.message().contains(node), "{err}");
    assert!(err.message().contains("leadership"), "{err}");
    first.resign(lead, false).await.unwrap();
}
