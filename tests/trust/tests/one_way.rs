//! The holder stops first also when only the server-to-client direction of its link is lost
//! (issue 33): what it sends still reaches the server, nothing comes back. Its heartbeats keep
//! the session alive on the server while its lifeline, hearing no answers, gives it up; the
//! farewell that then closes the session on the server (docs/safety.md, "Closing a session we
//! gave up") used to go out before the lost signal, and the next holder started a few
//! milliseconds after it. Each round measures
//!
//! ```text
//! margin = (when the waiter's acquire returned) - (when the holder's lost signal fired)
//! ```
//!
//! and must keep it at least 200 ms, for a Rust-core holder and a Python-face holder (each lets
//! go of its lease when it hears lost, as a careful user does).
//!
//! `ZKLOCK_ISOLATION_ROUNDS` sets the rounds per test (default 3, `make trust-long` runs 10).
//! The Python test is ignored by `cargo test` (it needs the Python face installed): `make
//! test-interop` (tests/ci-test.sh) and `make trust-long` run it with `ZKLOCK_PYTHON` set.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use zklock_testkit::{unique_path, Config, ZooKeeper};
use zklock_trust::margin::{self, Holder, Round, RoundOptions};

/// The margin the issue asks for, in milliseconds.
const TARGET_MARGIN_MS: i64 = 200;

fn rounds() -> usize {
    std::env::var("ZKLOCK_ISOLATION_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

/// Runs the rounds with holders from `start_holder`, prints each and checks every margin.
fn run(what: &str, session: Duration, start_holder: impl Fn(&str, &str) -> Result<Holder, String>) {
    let zk = ZooKeeper::standalone().expect("ZooKeeper must start (scripts/install-deps.sh)");
    run_on(&zk, rounds(), what, session, start_holder);
}

fn run_on(
    zk: &ZooKeeper,
    count: usize,
    what: &str,
    session: Duration,
    start_holder: impl Fn(&str, &str) -> Result<Holder, String>,
) {
    let server = zk.connect_string();
    let mut rounds: Vec<Round> = Vec::new();
    for n in 0..count {
        let path = unique_path("one-way");
        let round = margin::run_one_way_round(
            &server,
            &path,
            session,
            &RoundOptions::for_session(session),
            &start_holder,
        )
        .unwrap_or_else(|e| panic!("{what} round {n}: {e}"));
        println!("{what} round {n}: {round}");
        rounds.push(round);
    }
    let (min, median, max) = margin::margins_summary(&rounds).expect("every round has a margin");
    println!(
        "{what}, one-way loss, T = {session:?}: {} rounds, margin min {min:+} / median {median:+} / max {max:+} ms",
        rounds.len()
    );
    for (n, round) in rounds.iter().enumerate() {
        assert!(
            round.lost_during_outage(),
            "{what} round {n}: the holder heard lost only after the heal: {round}"
        );
        let margin = round.margin_ms().expect("a lost signal");
        assert!(
            margin >= TARGET_MARGIN_MS,
            "{what} round {n}: the next holder started {margin} ms after the holder's lost \
             signal (at least {TARGET_MARGIN_MS} ms): {round}"
        );
    }
}

#[test]
fn a_rust_holder_that_hears_nothing_back_stops_before_the_next_holder_starts() {
    for session in [Duration::from_secs(2), Duration::from_secs(4)] {
        run("zklock (Rust)", session, |servers, path| {
            margin::zklock_stopping_holder(servers, path, session)
        });
    }
}

/// A server without a `tickTime` line (ZooKeeper's built-in 3 s) and a holder that names no
/// tick, with a 15 s session (the default 10 s is refused on a 3 s tick): the holder learns
/// 3 s at connect and keeps the margin (issue 53). Two rounds unless `ZKLOCK_ISOLATION_ROUNDS`
/// says (each takes about half a minute).
#[test]
fn a_rust_holder_that_hears_nothing_back_stops_first_at_the_built_in_3_s_tick() {
    let config = Config {
        tick_line: false,
        ..Config::default()
    };
    let zk = ZooKeeper::start(1, &config).expect("ZooKeeper must start");
    let count = std::env::var("ZKLOCK_ISOLATION_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let session = Duration::from_secs(15);
    run_on(
        &zk,
        count,
        "zklock (Rust), 3 s tick",
        session,
        |servers, path| margin::zklock_stopping_holder(servers, path, session),
    );
}

/// The Python that has the Python face installed: `ZKLOCK_PYTHON`.
fn python() -> String {
    std::env::var("ZKLOCK_PYTHON").unwrap_or_else(|_| {
        panic!(
            "ZKLOCK_PYTHON must name a python with the zklock package (tests/ci-test.sh sets it)"
        )
    })
}

#[test]
#[ignore = "needs the Python face installed: tests/ci-test.sh and make trust-long run it"]
fn a_python_holder_that_hears_nothing_back_stops_before_the_next_holder_starts() {
    let python = python();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers/zklock_python_holder.py");
    let logs = std::env::temp_dir().join(format!("zklock-one-way-{}", std::process::id()));
    std::fs::create_dir_all(&logs).unwrap();
    let session = Duration::from_secs(2);
    run("zklock (Python)", session, |servers, path| {
        let mut command = Command::new(&python);
        command
            .arg(&script)
            .args([servers, path, &session.as_millis().to_string()]);
        Holder::spawn("zklock-python", command, &logs.join("holder.log"))
    });
}
