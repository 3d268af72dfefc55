//! `zklock exec -n N`, `zklock ls` and `zklock revoke` on a semaphore against a real ZooKeeper
//! (issue 14): N commands at once and no more, the busy status, lease holders listed, revocation.

mod common;

use std::time::Duration;

use common::*;

fn exec_cmd(flags: &[&str], path: &str, command: &[String]) -> std::process::Command {
    let mut cmd = zk(&["exec"]);
    cmd.args(flags).arg(path).arg("--").args(command);
    cmd
}

fn sh(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into()]
}

#[test]
fn exec_with_n_two_runs_two_commands_at_once_and_a_third_try_is_busy_until_one_ends() {
    let path = unique_path("cli-sem");
    let dir = scratch("sem");
    let mut holders = Vec::new();
    let mut releases = Vec::new();
    for i in 0..2 {
        let (ready, release) = (
            dir.join(format!("ready{i}")),
            dir.join(format!("release{i}")),
        );
        let id = format!("lease-holder-{i}");
        holders.push(spawn(exec_cmd(
            &["-n", "2", "--identity", &id],
            &path,
            &hold_until(&ready, Some(&release)),
        )));
        wait_for("a lease holder to run", Duration::from_secs(20), || {
            ready.exists()
        });
        releases.push(release);
    }
    let out = run(exec_cmd(
        &["-n", "2", "--try"],
        &path,
        &sh("echo should-not-run"),
    ));
    assert_eq!(out.status.code(), Some(75), "stderr: {}", stderr(&out));
    assert!(stdout(&out).is_empty(), "the command must not run");

    // `zklock ls` shows both lease holders (N unknown from outside, both hold).
    let queue = participants(&path);
    assert_eq!(queue.len(), 2, "{queue:?}");
    for p in &queue {
        assert_eq!(p["kind"], "lease");
        assert_eq!(p["role"], "holder");
        assert!(p["node"].as_str().unwrap().contains("/leases/_c_"), "{p}");
    }
    let table = stdout(&run(zk(&["ls", &path])));
    assert!(table.contains("2 holding"), "{table}");

    // `zklock revoke` asks both; it prints the nodes it asked.
    let out = run(zk(&["revoke", &path]));
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out).lines().count(), 2, "{}", stdout(&out));

    std::fs::write(&releases[0], "").unwrap();
    let status = wait_exit(&mut holders[0], Duration::from_secs(10), "first holder");
    assert_eq!(status.code(), Some(0));
    let out = run(exec_cmd(
        &["-n", "2", "--timeout", "20s"],
        &path,
        &sh("test -n \"$ZKLOCK_TOKEN\" && exit 5"),
    ));
    assert_eq!(
        out.status.code(),
        Some(5),
        "the freed lease: {}",
        stderr(&out)
    );
    std::fs::write(&releases[1], "").unwrap();
    wait_exit(&mut holders[1], Duration::from_secs(10), "second holder");
    assert!(participants(&path).is_empty(), "no lease node left");
    let out = run(zk(&["revoke", &path]));
    assert_eq!(out.status.code(), Some(3), "nobody holds: {}", stderr(&out));
}

#[test]
fn exec_with_n_zero_or_with_read_is_a_usage_error() {
    let path = unique_path("cli-sem-bad");
    let out = run(exec_cmd(&["-n", "0"], &path, &sh("exit 0")));
    assert_eq!(out.status.code(), Some(64), "stderr: {}", stderr(&out));
    assert!(
        stderr(&out).contains("number of leases"),
        "{}",
        stderr(&out)
    );
    let out = run(exec_cmd(&["-n", "2", "--read"], &path, &sh("exit 0")));
    assert_eq!(out.status.code(), Some(64), "stderr: {}", stderr(&out));
}

/// A lease node deleted by someone else: the lease is lost, the command gets SIGTERM and zklock
/// exits with 76, as for a lock.
#[test]
fn exec_with_n_stops_the_command_with_the_lost_status_when_its_lease_node_is_deleted() {
    let path = unique_path("cli-sem-lost");
    let dir = scratch("sem-lost");
    let (ready, got) = (dir.join("ready"), dir.join("got"));
    let script = format!(
        "trap 'echo TERM > \"{got}\"; exit 0' TERM; echo $ZKLOCK_NODE > '{ready}'; \
         while :; do sleep 0.05; done",
        got = got.display(),
        ready = ready.display()
    );
    let mut holder = spawn(exec_cmd(
        &["-n", "3", "--kill-after", "5s"],
        &path,
        &sh(&script),
    ));
    wait_for("the command to run", Duration::from_secs(20), || {
        std::fs::read_to_string(&ready).is_ok_and(|t| !t.trim().is_empty())
    });
    let node = std::fs::read_to_string(&ready).unwrap().trim().to_owned();
    assert!(node.starts_with(&format!("{path}/leases/_c_")), "{node}");
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let zk = zookeeper_client::Client::connect(servers()).await.unwrap();
        zk.delete(&node, None).await.unwrap();
    });
    let status = wait_exit(&mut holder, Duration::from_secs(20), "lost holder");
    let err = child_stderr(&mut holder);
    assert_eq!(status.code(), Some(76), "stderr: {err}");
    assert_eq!(
        std::fs::read_to_string(&got)
            .map(|s| s.trim().to_owned())
            .ok(),
        Some("TERM".to_owned()),
        "the command got SIGTERM; stderr: {err}"
    );
}
