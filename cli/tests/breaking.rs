//! `zklock break` against a real ZooKeeper (issue 37, point 1): refused without a node or
//! `--holder` (status 64, the holder shown); with `--holder` the holder's node is deleted, the
//! broken token printed, the reason logged, and the holder's `zklock exec` command gets SIGTERM
//! while zklock exits 76.

mod common;

use std::time::Duration;

use common::*;

#[test]
fn break_without_a_node_or_holder_is_refused_and_with_holder_stops_the_exec_with_76() {
    let path = unique_path("cli-break");
    let dir = scratch("break");
    let (ready, got) = (dir.join("ready"), dir.join("got"));
    let script = format!(
        "trap 'echo TERM > \"{got}\"; exit 0' TERM; echo $ZKLOCK_TOKEN > '{ready}'; \
         while :; do sleep 0.05; done",
        got = got.display(),
        ready = ready.display()
    );
    let mut exec = zk(&["exec", "--kill-after", "5s"]);
    exec.arg(&path).arg("--").args(sh(&script));
    let mut holder = spawn(exec);
    wait_for("the command to run", Duration::from_secs(20), || {
        std::fs::read_to_string(&ready).is_ok_and(|t| !t.trim().is_empty())
    });
    let token = std::fs::read_to_string(&ready).unwrap().trim().to_owned();

    let refused = run(zk(&["break", "--reason", "test", &path]));
    assert_eq!(refused.status.code(), Some(64), "{}", stderr(&refused));
    let err = stderr(&refused);
    assert!(
        err.contains("--holder") && err.contains(&format!("token {token}")),
        "the holder is shown and the way to confirm named: {err}"
    );
    assert!(got.metadata().is_err(), "nothing was broken");

    let broke = run(zk(&["break", "--holder", "--reason", "hung job 42", &path]));
    assert_eq!(broke.status.code(), Some(0), "{}", stderr(&broke));
    assert_eq!(stdout(&broke).trim(), token, "the broken token is printed");
    assert!(stderr(&broke).contains("hung job 42"), "{}", stderr(&broke));

    let status = wait_exit(&mut holder, Duration::from_secs(20), "broken holder");
    let err = child_stderr(&mut holder);
    assert_eq!(status.code(), Some(76), "stderr: {err}");
    assert!(err.contains("broken"), "the loss says why: {err}");
    assert_eq!(
        std::fs::read_to_string(&got)
            .map(|s| s.trim().to_owned())
            .ok(),
        Some("TERM".to_owned()),
        "the command got SIGTERM; stderr: {err}"
    );

    let nobody = run(zk(&["break", "--holder", "--reason", "again", &path]));
    assert_eq!(nobody.status.code(), Some(3), "{}", stderr(&nobody));
}

#[test]
fn elect_with_a_lock_delay_behind_a_broken_leader_runs_its_command_only_after_the_delay() {
    const DELAY: Duration = Duration::from_secs(2);
    let path = unique_path("cli-elect-delay");
    let dir = scratch("elect-delay");
    let (first, second) = (dir.join("first"), dir.join("second"));
    let leader = |ready: &std::path::Path| {
        let script = format!(
            "trap 'exit 0' TERM; echo $ZKLOCK_TOKEN > '{}'; while :; do sleep 0.05; done",
            ready.display()
        );
        let mut elect = zk(&["elect", "--lock-delay", "2s", "--kill-after", "5s"]);
        elect.arg(&path).arg("--").args(sh(&script));
        spawn(elect)
    };
    let written = |ready: &std::path::Path| {
        std::fs::read_to_string(ready).is_ok_and(|t| !t.trim().is_empty())
    };
    let mut broken = leader(&first);
    wait_for(
        "the first leader's command",
        Duration::from_secs(20),
        || written(&first),
    );
    let mut next = leader(&second);
    wait_for(
        "the second participant's node",
        Duration::from_secs(20),
        || stdout(&run(zk(&["ls", &path]))).lines().count() >= 2,
    );

    let before_break = std::time::Instant::now();
    let broke = run(zk(&[
        "break",
        "--holder",
        "--reason",
        "stuck leader",
        &path,
    ]));
    assert_eq!(broke.status.code(), Some(0), "{}", stderr(&broke));
    let status = wait_exit(&mut broken, Duration::from_secs(20), "broken leader");
    assert_eq!(status.code(), Some(76), "{}", child_stderr(&mut broken));
    wait_for(
        "the second leader's command",
        Duration::from_secs(30),
        || written(&second),
    );
    let after = before_break.elapsed();
    assert!(
        after >= DELAY,
        "the next leader ran {after:?} after the break, inside the {DELAY:?} lock-delay"
    );
    let tokens: Vec<i64> = [&first, &second]
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap().trim().parse().unwrap())
        .collect();
    assert!(tokens[1] > tokens[0], "tokens {tokens:?}");
    next.kill().ok();
    next.wait().ok();
}
