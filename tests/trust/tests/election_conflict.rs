//! A participant of another layout that joins after zklock leads (issue 33): a kazoo `Election`
//! sorts zklock's latch node last (it knows only `__lock__` names), finds its own node first and
//! leads too. The zklock leader notices it through the one children watch it keeps while it
//! leads (`core/src/recipes/conflict.rs`) and ends its leadership: lost, reason `conflict`, its node
//! deleted; a zklock participant waiting behind it then refuses to lead beside kazoo
//! (`Conflict`). The overlap (kazoo leads before the watch can fire) is measured and printed.

use std::io::{BufRead, BufReader};
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

use zklock::{ElectionStyle, ErrorKind, LeaseState, Options, Wait};
use zklock_testkit::unique_path;
use zklock_trust::peers;

const LIMIT: Duration = Duration::from_secs(30);

/// Ends the kazoo process when the test does, also when it fails.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn ms_between(later: SystemTime, earlier: SystemTime) -> i64 {
    match later.duration_since(earlier) {
        Ok(d) => d.as_millis() as i64,
        Err(e) => -(e.duration().as_millis() as i64),
    }
}

#[test]
fn a_kazoo_participant_that_joins_after_zklock_leads_ends_the_zklock_leadership_as_a_conflict() {
    let servers = zklock_testkit::shared();
    let path = unique_path("elect-conflict");
    let leader = zklock::Client::blocking_connect(servers, Options::default()).unwrap();
    let waiter = zklock::Client::blocking_connect(servers, Options::default()).unwrap();
    let election = leader
        .election(&path, ElectionStyle::Latch, Some("zklock-leader"))
        .unwrap();
    let lead = election
        .blocking_lead_with(Wait::timeout(LIMIT), None)
        .unwrap();
    let node = lead.path().to_owned();
    let (lost_tx, lost_rx) = mpsc::channel();
    lead.on_state(move |state| {
        if state == LeaseState::Lost {
            let _ = lost_tx.send(SystemTime::now());
        }
    });
    // A zklock participant of the same layout waits behind the leader.
    let second = waiter
        .election(&path, ElectionStyle::Latch, Some("zklock-waiter"))
        .unwrap();
    let waiting = second.start_lead(Wait::timeout(LIMIT));
    let queued_by = std::time::Instant::now() + LIMIT;
    while election.blocking_participants().unwrap().len() < 2 {
        assert!(
            std::time::Instant::now() < queued_by,
            "the waiter did not queue"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    let log = std::env::temp_dir().join(format!("{}-kazoo.log", path.replace('/', "_")));
    let mut kazoo = KillOnDrop(
        peers::spawn_kazoo_election(servers, &path, "hold", 1, &log, "kazoo", &[]).unwrap(),
    );
    let mut lines = BufReader::new(kazoo.0.stdout.take().expect("piped stdout")).lines();
    let said = lines
        .next()
        .expect("kazoo says something")
        .expect("kazoo's stdout");
    let kazoo_led_at = SystemTime::now();
    assert!(
        said.starts_with("leader "),
        "kazoo's stock Election leads beside zklock's latch node: {said}"
    );

    let lost_at = lost_rx
        .recv_timeout(LIMIT)
        .expect("the zklock leadership turns lost once kazoo's node appears");
    let overlap = ms_between(lost_at, kazoo_led_at);
    println!("kazoo led, then zklock's leadership was lost {overlap:+} ms after (as read here)");
    let reason = lead.lost_reason().unwrap_or_default();
    assert!(reason.contains(zklock::CONFLICT), "the reason: {reason}");
    assert!(
        reason.contains("kazoo"),
        "the reason names the foreign participant: {reason}"
    );
    assert!(
        overlap < 5_000,
        "the zklock leader noticed kazoo only {overlap} ms after it led"
    );
    // Its node is gone, so kazoo is the only leader...
    let left = election.blocking_participants().unwrap();
    assert!(
        left.iter().all(|p| p.node != node),
        "the lost leadership's node was deleted: {left:?}"
    );
    // ...and the zklock waiter refuses to lead beside kazoo.
    let err = waiting
        .wait()
        .expect_err("the waiter must not lead beside kazoo");
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");

    // kazoo releases and exits at the end of its input.
    drop(kazoo.0.stdin.take());
    let _ = kazoo.0.wait();
    drop(lead);
    leader.blocking_close();
    waiter.blocking_close();
}
