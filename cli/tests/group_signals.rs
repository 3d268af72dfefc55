//! Issue 33: a signal sent to zklock's whole process group (`setsid zklock exec P -- cmd`, then
//! `kill -TERM -PGID`) reached the command twice, once from the group and once passed on by
//! zklock (5 of 5 runs for TERM, 3 of 5 for INT). The command here counts what it gets; after
//! the first one it is asked (SIGUSR1, sent to it alone) to write its count and exit.

mod common;

use std::time::Duration;

use common::*;

fn count_signals_through_a_group_kill(sig: i32, name: &str) -> String {
    let path = unique_path("cli-group-signal");
    let dir = scratch(&format!("group-signal-{name}"));
    let (ready, got) = (dir.join("ready"), dir.join("got"));
    let script = format!(
        "n=0; trap 'n=$((n+1)); echo \"{name} $n\" >> \"{got}\"' {name}; \
         trap 'echo \"done $n\" >> \"{got}\"; exit 0' USR1; \
         echo $$ > '{ready}.tmp'; mv '{ready}.tmp' '{ready}'; while :; do sleep 0.05; done",
        got = got.display(),
        ready = ready.display()
    );
    // zk() starts zklock as the leader of its own process group, without a terminal: setsid's
    // situation.
    let mut child = spawn(zk(&[
        "exec",
        "--session-timeout",
        "60s",
        &path,
        "--",
        "sh",
        "-c",
        &script,
    ]));
    wait_for("the command to run", Duration::from_secs(30), || {
        ready.exists()
    });
    let command: i32 = std::fs::read_to_string(&ready)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: kill(2) on the process group of our own child (it leads it).
    unsafe { libc::kill(-(child.id() as i32), sig) };
    wait_for(
        "the command to get the signal",
        Duration::from_secs(30),
        || std::fs::read_to_string(&got).is_ok_and(|s| s.contains(&format!("{name} 1"))),
    );
    // SAFETY: kill(2) on the command, a child of our child.
    unsafe { libc::kill(command, libc::SIGUSR1) };
    let status = wait_exit(&mut child, Duration::from_secs(30), "exec");
    assert_eq!(status.code(), Some(0), "{}", child_stderr(&mut child));
    assert!(participants(&path).is_empty(), "node removed");
    std::fs::read_to_string(&got).unwrap()
}

#[test]
fn a_sigterm_sent_to_zklocks_process_group_reaches_the_command_once() {
    let got = count_signals_through_a_group_kill(libc::SIGTERM, "TERM");
    assert_eq!(got, "TERM 1\ndone 1\n");
}

#[test]
fn a_sigint_sent_to_zklocks_process_group_reaches_the_command_once() {
    let got = count_signals_through_a_group_kill(libc::SIGINT, "INT");
    assert_eq!(got, "INT 1\ndone 1\n");
}

#[test]
fn a_sigterm_sent_to_zklock_alone_is_passed_on_to_the_command_once() {
    let path = unique_path("cli-direct-signal");
    let dir = scratch("direct-signal");
    let (ready, got) = (dir.join("ready"), dir.join("got"));
    let script = format!(
        "trap 'echo TERM >> \"{got}\"; exit 5' TERM; touch '{ready}'; while :; do sleep 0.05; done",
        got = got.display(),
        ready = ready.display()
    );
    let mut child = spawn(zk(&[
        "exec",
        "--session-timeout",
        "60s",
        &path,
        "--",
        "sh",
        "-c",
        &script,
    ]));
    wait_for("the command to run", Duration::from_secs(30), || {
        ready.exists()
    });
    signal(&child, libc::SIGTERM);
    let status = wait_exit(&mut child, Duration::from_secs(30), "exec");
    assert_eq!(status.code(), Some(5), "{}", child_stderr(&mut child));
    assert_eq!(std::fs::read_to_string(&got).unwrap(), "TERM\n");
}
