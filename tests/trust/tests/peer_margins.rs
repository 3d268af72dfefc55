//! Issue 12, part 3: the peers in the partition scenario (tests/trust/src/margin.rs). A Curator
//! holder (InterProcessMutex + ConnectionStateListener, Curator's defaults) and a kazoo holder
//! (Lock + state listener) reach ZooKeeper through a fault proxy that is black-holed while a
//! zklock waiter queues on a direct link; each round prints
//! `margin = waiter's acquire - holder's LOST` (positive = the holder knew first). A zklock
//! holder runs the same rounds, for the comparison in tests/trust/README.md.
//!
//! This measures, it does not judge the peers: each round must produce a measurement (the
//! waiter acquired, the holder's LOST fired, during the outage or after the heal). It takes
//! minutes, so it is ignored by default: `tests/trust/peer-margins.sh` runs it
//! (ZKLOCK_MARGIN_ROUNDS rounds per holder per session timeout, default 5).

use std::time::Duration;

use zklock_trust::margin::{self, Round, RoundOptions};
use zklock_trust::peers;

const SESSION_TIMEOUTS: [Duration; 2] = [Duration::from_secs(2), Duration::from_secs(4)];

fn rounds() -> usize {
    std::env::var("ZKLOCK_MARGIN_ROUNDS")
        .ok()
        .map(|v| {
            v.parse()
                .expect("ZKLOCK_MARGIN_ROUNDS must be a positive whole number")
        })
        .unwrap_or(5)
}

type StartPeer = fn(&str, &str, Duration, &std::path::Path) -> Result<margin::Holder, String>;

fn measure(peer: &str, start: StartPeer) {
    let server = zklock_testkit::shared();
    assert!(
        !server.contains(','),
        "the margin rounds need one server behind the proxy, got {server}"
    );
    let n = rounds();
    assert!(n > 0, "ZKLOCK_MARGIN_ROUNDS must be positive");
    let mut lines = Vec::new();
    for t in SESSION_TIMEOUTS {
        let mut done: Vec<Round> = Vec::new();
        for i in 0..n {
            let path = zklock_testkit::unique_path(&format!("margin-{peer}"));
            let log = std::env::temp_dir().join(format!(
                "zklock-margin-{peer}-{}s-{i}-{}.log",
                t.as_secs(),
                std::process::id()
            ));
            let round = margin::run_round(
                server,
                &path,
                t,
                &RoundOptions::for_session(t),
                |proxy, path| start(proxy, path, t, &log),
            )
            .unwrap_or_else(|e| panic!("{peer} round {} at T={t:?}: {e}", i + 1));
            eprintln!("round {}: {round}", i + 1);
            assert!(
                round.margin_ms().is_some(),
                "round {} measured a margin",
                i + 1
            );
            let _ = std::fs::remove_file(&log);
            done.push(round);
        }
        let (min, median, max) = margin::margins_summary(&done).expect("margins");
        let during = done.iter().filter(|r| r.lost_during_outage()).count();
        let suspended: Vec<i64> = done.iter().filter_map(Round::suspended_margin_ms).collect();
        let line = format!(
            "| {peer} | {} s | {n} | {min:+} | {median:+} | {max:+} | {during}/{n} | {} |",
            t.as_secs(),
            suspended
                .iter()
                .map(|m| format!("{m:+}"))
                .collect::<Vec<_>>()
                .join(" "),
        );
        eprintln!("{line}");
        lines.push(line);
    }
    eprintln!(
        "\n| holder | T | rounds | min margin ms | median | max | LOST during the black hole | suspended margins ms |\n|---|---|---|---|---|---|---|---|\n{}",
        lines.join("\n")
    );
}

#[test]
#[ignore = "takes minutes; run by tests/trust/peer-margins.sh"]
fn a_black_holed_curator_holder_reports_its_lost_margin_in_every_round() {
    measure("curator", peers::curator_partition_holder);
}

#[test]
#[ignore = "takes minutes; run by tests/trust/peer-margins.sh"]
fn a_black_holed_kazoo_holder_reports_its_lost_margin_in_every_round() {
    measure("kazoo", peers::kazoo_partition_holder);
}

fn start_zklock(
    servers: &str,
    path: &str,
    session: Duration,
    _log: &std::path::Path,
) -> Result<margin::Holder, String> {
    margin::zklock_holder(servers, path, session)
}

/// zklock in the same rounds, for comparison (its own asserted rounds are tests/partition.rs).
#[test]
#[ignore = "takes minutes; run by tests/trust/peer-margins.sh"]
fn a_black_holed_zklock_holder_reports_its_lost_margin_in_every_round() {
    measure("zklock", start_zklock);
}
