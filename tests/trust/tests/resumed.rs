//! A holder stopped for 5 s at T = 10 s (SIGSTOP, then SIGCONT: a GC pause, a debugger, a
//! swap storm) that ZooKeeper forgives, since its session outlives the stop, must keep its
//! lease in at least 9 rounds of 10 (issue 50, part 4): after resuming, the lifeline's
//! catch-up proof must land before the deadline the stop left. Each round stops the holder as
//! soon as it printed its token (the acquire's proof is fresh then: its deadline is about
//! `keep` = 7.6 s ahead, so 2.6 s are left after the stop), and prints whether the lease was
//! kept, the time left at the token, at the resume, and once the catch-up proof landed.
//! Events, not sleeps: the stop itself lasts 5 s by the test's clock, which is the fault, not a
//! guess at a speed.
//!
//! A stop in the heartbeats' steady pace finds the deadline only 2.5–4.2 s ahead
//! (docs/safety.md, "Pauses and failovers a lease survives"): a 5 s stop then outlasts it and
//! the lease is lost on resuming, whatever the catch-up does; these rounds do not measure that.
//!
//! `ZKLOCK_ISOLATION_ROUNDS` sets the rounds (default 2; `make trust-long` runs 10).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use zklock_testkit::{unique_path, ZooKeeper};

const SESSION_MS: u64 = 10_000;
const STOP: Duration = Duration::from_secs(5);

fn rounds() -> usize {
    std::env::var("ZKLOCK_ISOLATION_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2)
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on the pid of a child this test spawned and has not yet waited for.
    unsafe { libc::kill(pid as i32, sig) };
}

fn value(line: &str, key: &str) -> Option<f64> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key))
        .and_then(|v| v.parse().ok())
}

/// What one round saw: kept or not, and the times left (ms) at the token, at the resume and
/// after the catch-up.
struct Round {
    kept: bool,
    at_token: Option<f64>,
    at_resume: Option<f64>,
    caught_up: Option<f64>,
    end: String,
}

fn round(servers: &str) -> Round {
    let path = unique_path("resumed");
    let mut holder = Command::new(env!("CARGO_BIN_EXE_trust-resumed"))
        .args([servers, &path, &SESSION_MS.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(holder.stdout.take().unwrap()).lines();
    let first = lines.next().expect("the holder prints its token").unwrap();
    assert!(first.starts_with("token "), "{first}");
    signal(holder.id(), libc::SIGSTOP);
    std::thread::sleep(STOP);
    signal(holder.id(), libc::SIGCONT);
    let mut r = Round {
        kept: false,
        at_token: value(&first, "left="),
        at_resume: None,
        caught_up: None,
        end: String::new(),
    };
    for line in lines.map_while(Result::ok) {
        if line.starts_with("resumed ") {
            r.at_resume = value(&line, "left=");
        } else if line.starts_with("caught-up ") {
            r.caught_up = value(&line, "left=");
        } else if line == "kept" {
            r.kept = true;
            r.end = line;
        } else if line.starts_with("lost ") {
            r.end = line;
        }
    }
    holder.wait().unwrap();
    r
}

#[test]
fn a_holder_stopped_for_5_s_at_t_10_s_keeps_its_lease_in_9_of_10_rounds() {
    let zk = ZooKeeper::standalone().expect("a ZooKeeper server must start");
    let servers = zk.connect_string();
    // A first session and lock on a fresh server are slow to come (its first sessions, the
    // lock's parents): a lock cycle first, so that round 1 starts as the others do.
    let warm = zklock::Client::blocking_connect(&servers, zklock::Options::default()).unwrap();
    let lease = warm
        .mutex(&unique_path("resumed-warm"))
        .unwrap()
        .blocking_acquire()
        .unwrap();
    lease.blocking_release().unwrap();
    drop(warm);
    let n = rounds();
    let mut kept = 0;
    let ms = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.0}"));
    for i in 1..=n {
        let r = round(&servers);
        kept += usize::from(r.kept);
        println!(
            "round {i}: {}; left at the token {} ms, at the resume {} ms, after the catch-up {} ms ({})",
            if r.kept { "kept" } else { "LOST" },
            ms(r.at_token),
            ms(r.at_resume),
            ms(r.caught_up),
            r.end
        );
    }
    println!("5 s stop at T = 10 s: kept in {kept} of {n} rounds");
    // At least 9 of 10: with fewer rounds, every round but one in ten.
    let allowed = n / 10;
    assert!(
        n - kept <= allowed,
        "the lease was lost in {} of {n} rounds (at most {allowed} allowed)",
        n - kept
    );
}
