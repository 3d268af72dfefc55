//! `zklock exec` and `zklock elect` stopped (SIGSTOP to zklock alone, not its command) for
//! longer than the session timeout (issue 50, part 2): a stopped zklock cannot signal anything,
//! so before the watchdog the command ran on beside the next holder's for the stop minus the
//! timeout. The command must now have stopped (its watchdog's SIGTERM) at least 200 ms before
//! the next holder's command starts, while zklock is still stopped; resumed, zklock exits with
//! the lost status, and nothing of it (its watchdog) is left running. Each round prints the
//! margin (both stamps from `date +%s%N`). The schedule follows events: the command's ready
//! file, the next one's node, the next one's exit; the stop lasts until then.
//! `ZKLOCK_ISOLATION_ROUNDS` sets the rounds (default 2; `make trust-long` runs 10).

mod common;

use std::time::{Duration, Instant};

use common::*;

fn rounds() -> usize {
    std::env::var("ZKLOCK_ISOLATION_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2)
}

/// The margin the issue asks for, in milliseconds.
const TARGET_MARGIN_MS: f64 = 200.0;

/// The holder's session timeout (T).
const SESSION: Duration = Duration::from_secs(2);

/// Processes whose command line names `needle` (the lock path is in zklock's, and so in its
/// forked watchdog's, and in no command's).
fn processes_naming(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            if String::from_utf8_lossy(&cmdline).contains(needle) {
                found.push(pid);
            }
        }
    }
    found
}

/// One round; returns the margin in milliseconds (negative: both commands ran at once).
fn paused_round(name: &str, verb: &[&str], next: &[&str]) -> f64 {
    let path = unique_path(name);
    let dir = scratch(name);
    let (ready, term, started) = (dir.join("ready"), dir.join("term"), dir.join("started"));
    // `wait` returns at once on a signal, so the trap runs when SIGTERM arrives.
    let script = format!(
        "trap 'date +%s%N > \"{term}\"; kill $! 2>/dev/null; exit 0' TERM; \
         echo $$ > '{ready}'; sleep 1000 & wait $!",
        term = term.display(),
        ready = ready.display()
    );
    let mut holder = zklock();
    holder
        .args(["--servers", servers(), "--session-timeout", "2s"])
        .args(verb)
        .args([&path, "--"])
        .args(sh(&script));
    let mut holder = spawn(holder);
    let holder_lines = StampedLines::read(
        "the holder",
        holder.stderr.take().expect("the holder's stderr"),
    );
    wait_for_running(
        "the holder's command to run",
        Duration::from_secs(20),
        &mut [("the holder", &mut holder)],
        || std::fs::read_to_string(&ready).is_ok_and(|t| !t.trim().is_empty()),
    );
    let mut second = zk(next);
    second
        .args([&path, "--"])
        .args(sh(&format!("date +%s%N > '{}'", started.display())));
    let mut second = spawn(second);
    wait_for_running(
        "the next one to queue",
        Duration::from_secs(20),
        &mut [("the holder", &mut holder), ("the next one", &mut second)],
        || participants(&path).len() == 2,
    );

    // zklock alone: its command runs on in its own process group.
    signal(&holder, libc::SIGSTOP);
    let stopped = Instant::now();
    let done = wait_exit(&mut second, Duration::from_secs(60), "the next one");
    // The server expires the session T after the last heartbeat it heard, which may have come
    // up to a third of T before the stop: the stop is made to last longer than T all the same.
    if let Some(rest) = (SESSION + Duration::from_millis(500)).checked_sub(stopped.elapsed()) {
        std::thread::sleep(rest);
    }
    let stop = stopped.elapsed();
    let term_before_resume = term.exists();
    signal(&holder, libc::SIGCONT);
    assert_eq!(done.code(), Some(0), "{}", child_stderr(&mut second));
    let status = wait_exit(&mut holder, Duration::from_secs(30), "the resumed holder");
    let stderr: String = holder_lines
        .finish()
        .iter()
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    assert!(
        term_before_resume,
        "the command got no SIGTERM while its zklock was stopped ({stop:?}; stderr: {stderr})"
    );
    assert_eq!(status.code(), Some(76), "the lost status: {stderr}");
    assert!(stderr.contains("lost"), "{stderr}");
    // The watchdog ended with the command: nothing naming the lock path is left.
    wait_for(
        "the holder's watchdog to end",
        Duration::from_secs(5),
        || processes_naming(&path).is_empty(),
    );
    let read_ns = |file: &std::path::Path| -> i128 {
        std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
            .trim()
            .parse()
            .unwrap()
    };
    (read_ns(&started) - read_ns(&term)) as f64 / 1e6
}

fn check(what: &str, verb: &[&str], next: &[&str]) {
    let mut margins = Vec::new();
    for round in 0..rounds() {
        let margin = paused_round("cli-paused", verb, next);
        println!(
            "{what} round {round}: with zklock stopped, its command stopped {margin:.0} ms before \
             the next one started"
        );
        margins.push(margin);
    }
    margins.sort_by(f64::total_cmp);
    println!(
        "{what}, zklock stopped past T = {SESSION:?}: {} rounds, margin min {:.0} ms, max {:.0} ms",
        margins.len(),
        margins[0],
        margins[margins.len() - 1]
    );
    assert!(
        margins[0] >= TARGET_MARGIN_MS,
        "{what}: the next command started {:.0} ms after the stopped holder's command stopped (at least {TARGET_MARGIN_MS} ms); margins {margins:?}",
        margins[0]
    );
}

#[test]
fn an_exec_stopped_past_its_session_timeout_has_its_command_stopped_before_the_next_one_starts() {
    check(
        "exec",
        &["exec", "--kill-after", "5s"],
        &["exec", "--timeout", "60s"],
    );
}

#[test]
fn an_elect_stopped_past_its_session_timeout_has_its_command_stopped_before_the_next_leader_starts()
{
    check(
        "elect",
        &["elect", "--id", "paused", "--kill-after", "5s"],
        &["elect", "--id", "next", "--timeout", "60s"],
    );
}

/// No misfire: a command that runs through three session timeouts, its zklock free to renew the
/// lease all along, is never stopped by its watchdog, and the watchdog is gone after the clean
/// release.
#[test]
fn an_exec_that_keeps_renewing_its_lease_is_never_stopped_by_its_watchdog() {
    let path = unique_path("cli-renewed");
    let started = Instant::now();
    let mut cmd = zklock();
    cmd.args(["--servers", servers(), "--session-timeout", "2s"])
        .args(["exec", "--kill-after", "5s", &path, "--", "sleep", "6"]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("lost"), "{}", stderr(&out));
    assert!(started.elapsed() >= Duration::from_secs(6));
    wait_for("the watchdog to end", Duration::from_secs(5), || {
        processes_naming(&path).is_empty()
    });
}
