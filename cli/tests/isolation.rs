//! `zklock exec` on a member cut off from its ensemble (issue 23, point 2): a holder connected
//! only to a follower whose peer links turn into a black hole must have its command stopped
//! (SIGTERM) before the waiter's command, connected to the leader, starts. Each round prints the
//! margin between the two (both read from the same clock, `date +%s%N`).
//! `ZKLOCK_ISOLATION_ROUNDS` sets the rounds (default 2; `make trust-long` runs 10).

mod common;

use std::time::{Duration, Instant};

use common::*;
use zklock_testkit::{Config, Isolation, ZooKeeper};

fn rounds() -> usize {
    std::env::var("ZKLOCK_ISOLATION_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2)
}

fn sh(script: String) -> [String; 3] {
    ["sh".into(), "-c".into(), script]
}

/// Nanoseconds since the epoch written by `date +%s%N` into `file`, once it is there.
fn stamp(file: &std::path::Path) -> i128 {
    std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
        .trim()
        .parse()
        .unwrap()
}

/// Waits until the three members serve under one leader; returns the leader.
fn settled(zk: &ZooKeeper) -> usize {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if let (3, Some(leader)) = (zk.serving().len(), zk.leader()) {
            return leader;
        }
        assert!(Instant::now() < deadline, "the ensemble did not settle");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn an_exec_on_a_follower_cut_off_from_its_peers_stops_its_command_before_the_next_one_starts() {
    // tick 500 ms, syncLimit 4, session 4 s: issue 23's first timing.
    let config = Config {
        tick_ms: 500,
        sync_limit: 4,
        peer_proxies: true,
        ..Config::default()
    };
    let zk = ZooKeeper::start(3, &config)
        .expect("a 3-member ZooKeeper ensemble with peer proxies must start");
    let mut margins = Vec::new();
    for round in 0..rounds() {
        let leader = settled(&zk);
        let follower = (leader + 1) % 3;
        let dir = scratch("isolated-exec");
        let path = unique_path("cli-isolation");
        let (held, term, start) = (dir.join("held"), dir.join("term"), dir.join("start"));

        let mut holder = zklock();
        holder
            .args(["--servers", &zk.address(follower)])
            .args(["--session-timeout", "4s", "--server-tick", "500ms"])
            .args(["exec", "--kill-after", "5s", &path, "--"])
            .args(sh(format!(
                "trap 'date +%s%N > \"{term}\"; exit 0' TERM; echo held > '{held}'; \
                 while :; do sleep 0.02; done",
                term = term.display(),
                held = held.display()
            )));
        let mut holder = spawn(holder);
        wait_for(
            "the holder's command to run",
            Duration::from_secs(20),
            || held.exists(),
        );

        // The waiter's session rides out the election (the server clamps it to 20 ticks).
        let mut waiter = zklock();
        waiter
            .args(["--servers", &zk.address(leader)])
            .args(["--session-timeout", "10s", "--server-tick", "500ms"])
            .args(["exec", "--timeout", "60s", &path, "--"])
            .args(sh(format!("date +%s%N > '{}'", start.display())));
        let mut waiter = spawn(waiter);
        wait_for("the waiter to queue", Duration::from_secs(60), || {
            participants_on(&zk.address(leader), &path).len() == 2
        });

        zk.isolate(follower, Isolation::BlackHole);
        let waited = wait_exit(&mut waiter, Duration::from_secs(60), "waiter");
        let lost = wait_exit(&mut holder, Duration::from_secs(30), "isolated holder");
        zk.heal(follower);
        let holder_err = child_stderr(&mut holder);
        assert_eq!(waited.code(), Some(0), "{}", child_stderr(&mut waiter));
        assert_eq!(
            lost.code(),
            Some(76),
            "the holder's lease is lost: {holder_err}"
        );
        let margin_ms = (stamp(&start) - stamp(&term)) as f64 / 1e6;
        println!(
            "round {round}: the isolated holder's command had SIGTERM {margin_ms:.0} ms before the \
             waiter's command started"
        );
        margins.push(margin_ms);
    }
    margins.sort_by(f64::total_cmp);
    println!(
        "exec on an isolated follower: {} rounds, margin min {:.0} ms, max {:.0} ms",
        margins.len(),
        margins[0],
        margins[margins.len() - 1]
    );
    assert!(
        margins[0] >= 200.0,
        "a waiter's command started {:.0} ms after the isolated holder's got SIGTERM (target >= 200 ms)",
        margins[0]
    );
}
