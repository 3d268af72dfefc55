//! `zklock exec` against a real ZooKeeper: environment, exit status, mutual exclusion, --try,
//! read/write sides, signals and a lost lease.

mod common;

use std::time::{Duration, Instant};

use common::*;

/// `zklock --servers S exec FLAGS... PATH -- COMMAND...` (global options may follow `exec`).
fn exec_cmd(flags: &[&str], path: &str, command: &[String]) -> std::process::Command {
    let mut cmd = zk(&["exec"]);
    cmd.args(flags).arg(path).arg("--").args(command);
    cmd
}

/// Acceptance 2a: the command runs with the token (and path, node) in its environment and
/// zklock exits with its status; the lock is released afterwards.
#[test]
fn exec_runs_the_command_with_the_token_and_returns_its_status() {
    let path = unique_path("cli-env");
    let dir = scratch("env");
    let out_file = dir.join("env");
    let script = format!(
        "echo \"$ZKLOCK_TOKEN|$ZKLOCK_PATH|$ZKLOCK_NODE\" > '{}'; exit 7",
        out_file.display()
    );
    let out = run(exec_cmd(&[], &path, &sh(&script)));
    assert_eq!(out.status.code(), Some(7), "stderr: {}", stderr(&out));
    let env = std::fs::read_to_string(&out_file).unwrap();
    let fields: Vec<&str> = env.trim().split('|').collect();
    let token: i64 = fields[0].parse().expect("ZKLOCK_TOKEN is a number");
    assert!(token > 0, "token {token}");
    assert_eq!(fields[1], path);
    assert!(
        fields[2].starts_with(&format!("{path}/_c_")) && fields[2].contains("-lock-"),
        "ZKLOCK_NODE {}",
        fields[2]
    );
    assert!(participants(&path).is_empty(), "the lock is released");

    // Success passes through, and a later holder gets a larger token.
    let again = dir.join("again");
    let out = run(exec_cmd(
        &[],
        &path,
        &sh(&format!("echo $ZKLOCK_TOKEN > '{}'", again.display())),
    ));
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let next: i64 = std::fs::read_to_string(&again)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(next > token, "token {next} after {token}");

    // A command killed by a signal gives 128+N, like a shell.
    let out = run(exec_cmd(&[], &path, &sh("kill -TERM $$")));
    assert_eq!(out.status.code(), Some(128 + SIGTERM), "{}", stderr(&out));

    // A command that does not exist: 127, one line, and no node left.
    let out = run(exec_cmd(&[], &path, &["/no/such/command".to_owned()]));
    assert_eq!(out.status.code(), Some(127));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(participants(&path).is_empty());
}

/// Acceptance 2b: concurrent execs on one path never overlap (checked by the demo's checker,
/// which also sees tokens strictly increase in entry order).
#[test]
fn concurrent_execs_never_overlap() {
    let path = unique_path("cli-overlap");
    let dir = scratch("overlap");
    let log = dir.join("sections.log");
    let script = format!(
        "e=$(date +%s%N); sleep 0.03; x=$(date +%s%N); echo \"cli $ZKLOCK_TOKEN $e $x\" >> '{}'",
        log.display()
    );
    let (workers, rounds) = (4, 4);
    let threads: Vec<_> = (0..workers)
        .map(|w| {
            let (path, script) = (path.clone(), script.clone());
            std::thread::spawn(move || {
                for _ in 0..rounds {
                    let id = format!("worker-{w}");
                    let out = run(exec_cmd(&["--identity", &id], &path, &sh(&script)));
                    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut check = zklock();
    check
        .arg("check-log")
        .arg(&log)
        .arg("--expect")
        .arg((workers * rounds).to_string());
    let out = run(check);
    assert_eq!(
        out.status.code(),
        Some(0),
        "check-log: {}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(stdout(&out).contains("verdict: OK"), "{}", stdout(&out));
}

/// The checker itself rejects an overlapping log and a token going backwards.
#[test]
fn check_log_rejects_overlap_and_token_order() {
    let dir = scratch("check");
    let bad = dir.join("bad.log");
    std::fs::write(
        &bad,
        "rust 10 1000 2000\npython 11 1500 2500\nc 9 3000 4000\n",
    )
    .unwrap();
    let mut cmd = zklock();
    cmd.arg("check-log").arg(&bad);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.contains("overlap") && text.contains("token not increasing"),
        "{text}"
    );
    assert!(text.contains("verdict: FAILED"), "{text}");

    let malformed = dir.join("malformed.log");
    std::fs::write(&malformed, "rust ten 1 2\n").unwrap();
    let mut cmd = zklock();
    cmd.arg("check-log").arg(&malformed);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(65));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
}

/// Acceptance 2c: --try exits at once with the busy status (75) while the lock is held, and
/// --timeout gives the same status when it passes; both leave no node behind.
#[test]
fn try_returns_the_busy_status_while_held() {
    let path = unique_path("cli-try");
    let dir = scratch("try");
    let (ready, release) = (dir.join("ready"), dir.join("release"));
    let mut holder = spawn(exec_cmd(
        &["--identity", "the-holder"],
        &path,
        &hold_until(&ready, Some(&release)),
    ));
    wait_for("the holder to run", Duration::from_secs(20), || {
        ready.exists()
    });

    let started = Instant::now();
    let out = run(exec_cmd(&["--try"], &path, &sh("echo should-not-run")));
    assert_eq!(out.status.code(), Some(75), "stderr: {}", stderr(&out));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "--try returned after {:?}",
        started.elapsed()
    );
    assert!(stdout(&out).is_empty(), "the command must not run");
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("busy") && err.contains("the-holder"), "{err}");

    let out = run(exec_cmd(
        &["--timeout", "300ms"],
        &path,
        &sh("echo should-not-run"),
    ));
    assert_eq!(out.status.code(), Some(75), "stderr: {}", stderr(&out));
    assert!(stderr(&out).contains("timed out"), "{}", stderr(&out));

    // Only the holder's node is there: neither attempt left one behind.
    let queue = participants(&path);
    assert_eq!(queue.len(), 1, "{queue:?}");
    assert_eq!(queue[0]["identity"], "the-holder");

    std::fs::write(&release, "").unwrap();
    let status = wait_exit(&mut holder, Duration::from_secs(10), "holder");
    assert_eq!(status.code(), Some(0));
    let out = run(exec_cmd(&["--try"], &path, &sh("exit 0")));
    assert_eq!(out.status.code(), Some(0), "free again: {}", stderr(&out));
}

/// --read holders share the lock; --write is excluded while they hold it.
#[test]
fn read_sides_share_and_write_waits() {
    let path = unique_path("cli-rw");
    let dir = scratch("rw");
    let (ready, release) = (dir.join("ready"), dir.join("release"));
    let mut reader = spawn(exec_cmd(
        &["--read"],
        &path,
        &hold_until(&ready, Some(&release)),
    ));
    wait_for("the reader to run", Duration::from_secs(20), || {
        ready.exists()
    });
    let out = run(exec_cmd(&["--read", "--try"], &path, &sh("exit 0")));
    assert_eq!(
        out.status.code(),
        Some(0),
        "second reader: {}",
        stderr(&out)
    );
    let out = run(exec_cmd(&["--write", "--try"], &path, &sh("exit 0")));
    assert_eq!(out.status.code(), Some(75), "writer: {}", stderr(&out));
    let out = run(exec_cmd(&["--try"], &path, &sh("exit 0")));
    assert_eq!(
        out.status.code(),
        Some(75),
        "mutex on a read-held path: {}",
        stderr(&out)
    );
    let queue = participants(&path);
    assert_eq!(queue.len(), 1, "{queue:?}");
    assert_eq!(queue[0]["kind"], "read");
    std::fs::write(&release, "").unwrap();
    assert_eq!(
        wait_exit(&mut reader, Duration::from_secs(10), "reader").code(),
        Some(0)
    );
    let out = run(exec_cmd(&["--write", "--try"], &path, &sh("exit 0")));
    assert_eq!(out.status.code(), Some(0), "writer after: {}", stderr(&out));
}

/// Acceptance 2d: SIGINT to a waiting exec stops the wait and leaves no node (at once, not
/// after a session timeout); the command never runs.
#[test]
fn sigint_while_waiting_leaves_no_node() {
    let path = unique_path("cli-sigint-wait");
    let dir = scratch("sigint-wait");
    let (ready, release) = (dir.join("ready"), dir.join("release"));
    let mut holder = spawn(exec_cmd(&[], &path, &hold_until(&ready, Some(&release))));
    wait_for("the holder to run", Duration::from_secs(20), || {
        ready.exists()
    });
    let ran = dir.join("ran");
    let mut waiter = spawn(exec_cmd(
        &["--session-timeout", "60s", "--identity", "the-waiter"],
        &path,
        &sh(&format!("touch '{}'", ran.display())),
    ));
    wait_for("the waiter to queue", Duration::from_secs(20), || {
        participants(&path).len() == 2
    });
    signal(&waiter, SIGINT);
    let status = wait_exit(&mut waiter, Duration::from_secs(10), "waiter");
    assert_eq!(
        status.code(),
        Some(128 + SIGINT),
        "{}",
        child_stderr(&mut waiter)
    );
    // With a 60 s session, only an explicit delete can have removed the node by now.
    let queue = participants(&path);
    assert_eq!(queue.len(), 1, "the waiter's node must be gone: {queue:?}");
    assert_ne!(queue[0]["identity"], "the-waiter");
    std::fs::write(&release, "").unwrap();
    wait_exit(&mut holder, Duration::from_secs(10), "holder");
    assert!(
        !ran.exists(),
        "the interrupted exec must not run its command"
    );
    assert!(participants(&path).is_empty());
}

/// SIGINT (and SIGTERM) to a running exec reach the command; zklock exits with the command's
/// status and removes its node.
#[test]
fn sigint_and_sigterm_while_running_reach_the_command_and_release() {
    for sig in [SIGINT, SIGTERM] {
        let path = unique_path("cli-sigint-run");
        let dir = scratch("sigint-run");
        let (ready, got) = (dir.join("ready"), dir.join("got"));
        let script = format!(
            "trap 'echo INT > \"{got}\"; exit 3' INT; trap 'echo TERM > \"{got}\"; exit 4' TERM; \
             touch '{ready}'; while :; do sleep 0.05; done",
            got = got.display(),
            ready = ready.display()
        );
        let mut child = spawn(exec_cmd(&["--session-timeout", "60s"], &path, &sh(&script)));
        wait_for("the command to run", Duration::from_secs(20), || {
            ready.exists()
        });
        signal(&child, sig);
        let status = wait_exit(&mut child, Duration::from_secs(10), "exec");
        let expected = if sig == SIGINT {
            ("INT", 3)
        } else {
            ("TERM", 4)
        };
        assert_eq!(
            status.code(),
            Some(expected.1),
            "{}",
            child_stderr(&mut child)
        );
        assert_eq!(std::fs::read_to_string(&got).unwrap().trim(), expected.0);
        assert!(
            participants(&path).is_empty(),
            "node removed after signal {sig}"
        );
    }
}

/// Acceptance 3: when the lease is lost (the holder's connection black-holed past its session
/// timeout), the command gets SIGTERM and zklock exits with the lost status, 76; the lock
/// passes to the next holder with a larger token.
#[test]
fn lost_lease_terminates_the_command_with_the_lost_status() {
    let path = unique_path("cli-lost");
    let dir = scratch("lost");
    let (ready, got) = (dir.join("ready"), dir.join("got"));
    let proxy = zklock_testkit::Proxy::start(servers().split(',').next().unwrap())
        .expect("start the fault proxy");
    let script = format!(
        "trap 'echo TERM > \"{got}\"; exit 0' TERM; echo $ZKLOCK_TOKEN > '{ready}'; \
         while :; do sleep 0.05; done",
        got = got.display(),
        ready = ready.display()
    );
    let mut cmd = zklock();
    cmd.args(["--servers", proxy.addr(), "--session-timeout", "2s"])
        .args(["exec", "--kill-after", "5s", &path, "--"])
        .args(sh(&script));
    let mut holder = spawn(cmd);
    wait_for("the command to run", Duration::from_secs(20), || {
        std::fs::read_to_string(&ready).is_ok_and(|t| !t.trim().is_empty())
    });
    let token: i64 = std::fs::read_to_string(&ready)
        .unwrap()
        .trim()
        .parse()
        .unwrap();

    proxy.blackhole();
    let started = Instant::now();
    let status = wait_exit(&mut holder, Duration::from_secs(30), "lost holder");
    let err = child_stderr(&mut holder);
    assert_eq!(status.code(), Some(76), "stderr: {err}");
    assert!(err.contains("lost"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&got)
            .map(|s| s.trim().to_owned())
            .ok(),
        Some("TERM".to_owned()),
        "the command got SIGTERM; stderr: {err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "stopped after {:?}",
        started.elapsed()
    );

    // The next holder (direct connection) gets the lock with a larger token.
    let next = dir.join("next");
    let out = run(exec_cmd(
        &["--timeout", "20s"],
        &path,
        &sh(&format!("echo $ZKLOCK_TOKEN > '{}'", next.display())),
    ));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let next: i64 = std::fs::read_to_string(&next)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(next > token, "token {next} after the lost {token}");
    proxy.heal();
}

/// A command that ignores SIGTERM is killed after --kill-after; the status is still 76.
#[test]
fn lost_lease_kills_a_command_that_ignores_sigterm() {
    let path = unique_path("cli-lost-kill");
    let dir = scratch("lost-kill");
    let ready = dir.join("ready");
    let proxy = zklock_testkit::Proxy::start(servers().split(',').next().unwrap())
        .expect("start the fault proxy");
    let script = format!(
        "trap '' TERM; touch '{}'; while :; do sleep 0.05; done",
        ready.display()
    );
    let mut cmd = zklock();
    cmd.args(["--servers", proxy.addr(), "--session-timeout", "2s"])
        .args(["exec", "--kill-after", "1s", &path, "--"])
        .args(sh(&script));
    let mut holder = spawn(cmd);
    wait_for("the command to run", Duration::from_secs(20), || {
        ready.exists()
    });
    proxy.blackhole();
    let status = wait_exit(&mut holder, Duration::from_secs(30), "lost holder");
    let err = child_stderr(&mut holder);
    assert_eq!(status.code(), Some(76), "stderr: {err}");
    assert!(err.contains("SIGKILL"), "{err}");
    proxy.heal();
}

/// If zklock itself is killed (SIGKILL), the command gets SIGTERM: without zklock its session,
/// and with it the lock, is about to go.
#[test]
fn command_gets_sigterm_when_zklock_is_killed() {
    let path = unique_path("cli-killed");
    let dir = scratch("killed");
    let (ready, got) = (dir.join("ready"), dir.join("got"));
    let script = format!(
        "trap 'echo TERM > \"{got}\"; exit 0' TERM; touch '{ready}'; while :; do sleep 0.05; done",
        got = got.display(),
        ready = ready.display()
    );
    let mut holder = spawn(exec_cmd(&["--session-timeout", "2s"], &path, &sh(&script)));
    wait_for("the command to run", Duration::from_secs(20), || {
        ready.exists()
    });
    signal(&holder, libc::SIGKILL);
    let _ = holder.wait();
    wait_for(
        "the command to get SIGTERM",
        Duration::from_secs(10),
        || std::fs::read_to_string(&got).is_ok_and(|s| s.trim() == "TERM"),
    );
    // The node goes with the session (its timeout is 2 s).
    wait_for("the node to go", Duration::from_secs(20), || {
        participants(&path).is_empty()
    });
}

/// A short connection loss (the proxy cuts every connection; the client reconnects within the
/// session timeout) only suspends the lease: the command is not stopped and zklock exits with
/// the command's own status.
#[test]
fn a_connection_cut_within_the_session_timeout_does_not_stop_the_command() {
    let path = unique_path("cli-cut");
    let dir = scratch("cut");
    let (ready, release) = (dir.join("ready"), dir.join("release"));
    let proxy = zklock_testkit::Proxy::start(servers().split(',').next().unwrap())
        .expect("start the fault proxy");
    let mut cmd = zklock();
    cmd.args(["--servers", proxy.addr(), "--session-timeout", "10s"])
        .args(["exec", &path, "--"])
        .args(hold_until(&ready, Some(&release)));
    let mut holder = spawn(cmd);
    wait_for("the command to run", Duration::from_secs(20), || {
        ready.exists()
    });
    let node = participants(&path)[0]["node"].clone();
    proxy.cut();
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        holder.try_wait().unwrap().is_none(),
        "the command must keep running"
    );
    let queue = participants(&path);
    assert_eq!(queue.len(), 1, "{queue:?}");
    assert_eq!(queue[0]["node"], node, "still our node");
    std::fs::write(&release, "").unwrap();
    let status = wait_exit(&mut holder, Duration::from_secs(20), "holder");
    let err = child_stderr(&mut holder);
    assert_eq!(status.code(), Some(0), "stderr: {err}");
    assert!(participants(&path).is_empty());
    assert!(
        err.contains("suspended") && err.contains("still holding"),
        "the cut is reported, then the recovery: {err}"
    );
}

/// Issue 12 (the holder knows first), for exec: the holder's connection goes through a fault
/// proxy with a 2 s session; a second `zklock exec` waits on a direct connection. The proxy is
/// black-holed (the link stays open, nothing crosses). The holder's command must have received
/// SIGTERM before the second command starts. Three rounds; the margin is printed.
#[test]
fn a_black_holed_execs_command_gets_sigterm_before_the_next_exec_starts() {
    let mut margins = Vec::new();
    for round in 0..3 {
        let cut = black_holed_round(
            "cli-partition",
            &["exec", "--kill-after", "5s"],
            &["exec", "--timeout", "60s"],
        );
        let margin_ms = cut.margin_ms;
        println!(
            "round {round}: SIGTERM {margin_ms:.0} ms {} the second command started",
            if margin_ms >= 0.0 { "before" } else { "AFTER" }
        );
        margins.push(margin_ms);
    }
    eprintln!("margins (ms, SIGTERM before the next command; negative = overlap): {margins:?}");
    assert!(
        margins.iter().all(|m| *m > 0.0),
        "the holder's command was still running after the next holder's command started: margins {margins:?} ms"
    );
}

/// Issue 12, part 4: `exec --timeout 2s` while ZooKeeper stops answering (the link black-holed
/// 0.5 s into the wait) gives up on time with the timeout status (it took 17 s).
#[test]
fn exec_times_out_on_time_while_the_link_is_black() {
    let path = unique_path("cli-outage");
    let holder = zklock::Client::blocking_connect(servers(), zklock::Options::default()).unwrap();
    let held = holder.mutex(&path).unwrap().blocking_acquire().unwrap();
    let proxy = zklock_testkit::Proxy::start(servers().split(',').next().unwrap())
        .expect("start the fault proxy");
    let mut waiter = zklock();
    waiter
        .args(["--servers", proxy.addr()])
        .args(["exec", "--timeout", "2s", &path, "--", "true"]);
    let started = Instant::now();
    let mut waiter = spawn(waiter);
    // The link goes black once the waiter has queued (or, on a machine slow enough to spend
    // the 2 s before `ls` sees it, once it has already given up).
    wait_for("the waiter to queue", Duration::from_secs(20), || {
        participants(&path).len() == 2 || waiter.try_wait().unwrap().is_some()
    });
    proxy.blackhole();
    let status = wait_exit(&mut waiter, Duration::from_secs(30), "exec --timeout 2s");
    let took = started.elapsed();
    proxy.heal();
    let stderr = child_stderr(&mut waiter);
    assert_ne!(status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("timed out"), "{stderr}");
    assert!(
        took <= Duration::from_millis(3000),
        "exec --timeout 2s exited after {took:?}"
    );
    held.blocking_release().unwrap();
    holder.blocking_close();
}
