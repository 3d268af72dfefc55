//! Issue 12, part 3: the peers in the partition scenario (tests/trust/src/margin.rs). A Curator
//! holder (InterProcessMutex + ConnectionStateListener, Curator's defaults) and a kazoo holder
//! (Lock + state listener) reach ZooKeeper through a fault proxy that is black-holed while a
//! zklock waiter queues on a direct link; each round prints
//! `margin = waiter's acquire - holder's LOST` (positive = the holder knew first). A zklock
//! holder runs the same rounds, for the comparison in tests/trust/README.md.
//!
//! Issue 23, point 3: the same peers with the fault one level up. The holder's only server is a
//! follower of a 3-node ensemble (tests/harness, peer links through fault proxies); the zklock
//! waiter is on the leader; the follower's links to its peers are black-holed, so the leader and
//! the other follower keep quorum, expire the holder's session and hand the lock over while the
//! holder's own link stays healthy. Measured at tick 500 ms / syncLimit 4 / session 4 s and at
//! ZooKeeper's sample timing (tick 2 s / syncLimit 5 / session 10 s), the timings of
//! tests/isolation.rs, which has zklock's own rounds.
//!
//! This measures, it does not judge the peers: each round must produce a measurement (the
//! waiter acquired, the holder's LOST fired, during the outage or after the heal). It takes
//! minutes, so it is ignored by default: `tests/trust/peer-margins.sh` runs it
//! (ZKLOCK_MARGIN_ROUNDS rounds per holder per session timeout, default 5).

use std::time::Duration;

use std::time::Instant;

use zklock_testkit::{Config, ZooKeeper};
use zklock_trust::margin::{self, Round, RoundOptions};
use zklock_trust::peers;
use zklock_trust::timing::{Timing, FAST, SAMPLE};

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

/// Waits until all three members serve under one leader, and returns the leader: a member that
/// was isolated must have rejoined before the next round pins a holder to a follower.
fn settled(zk: &ZooKeeper) -> usize {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (serving, leader) = (zk.serving(), zk.leader());
        if let (3, Some(leader)) = (serving.len(), leader) {
            return leader;
        }
        assert!(
            Instant::now() < deadline,
            "the ensemble did not settle with three members serving (serving: {serving:?})"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn measure_isolated_follower(peer: &str, timing: Timing, start: StartPeer) {
    let n = rounds();
    assert!(n > 0, "ZKLOCK_MARGIN_ROUNDS must be positive");
    let zk = ZooKeeper::start(
        3,
        &Config {
            tick_ms: timing.tick.as_millis() as u32,
            sync_limit: timing.sync_limit,
            peer_proxies: true,
            ..Config::default()
        },
    )
    .expect("a 3-member ZooKeeper ensemble with peer proxies must start (scripts/install-deps.sh)");
    let t = timing.session;
    // The waiter's session is three of the holder's, as in tests/isolation.rs: it sits on the
    // majority side and must not be the one whose session is in question.
    let waiter_options = zklock::Options::default()
        .session_timeout(t * 3)
        .server_tick(timing.tick);
    // The round's bounds for a session of T, and enough time for the member to notice its
    // isolation (syncLimit ticks) and to rejoin after the heal.
    let mut options = RoundOptions::for_session(t);
    options.handover_limit += timing.tick * timing.sync_limit;
    let mut done: Vec<Round> = Vec::new();
    for i in 0..n {
        let leader = settled(&zk);
        let follower = (leader + 1) % 3;
        let path = zklock_testkit::unique_path(&format!("member-margin-{peer}"));
        let log = std::env::temp_dir().join(format!(
            "zklock-member-margin-{peer}-{}ms-{i}-{}.log",
            timing.tick.as_millis(),
            std::process::id()
        ));
        let round = margin::run_member_round(
            &zk,
            follower,
            leader,
            waiter_options.clone(),
            &path,
            t,
            &options,
            |member, path| start(member, path, t, &log),
        )
        .unwrap_or_else(|e| panic!("{peer} round {} at {timing:?}: {e}", i + 1));
        let ms = |v: Option<i64>| v.map_or("never".to_owned(), |v| v.to_string());
        eprintln!(
            "round {} (holder on follower {follower}, waiter on leader {leader}): {round}; lost {} ms after the black hole",
            i + 1,
            ms(round.lost_after_blackhole_ms())
        );
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
    let span = |v: Vec<i64>| match (v.iter().min(), v.iter().max()) {
        (Some(lo), Some(hi)) => format!("{lo}–{hi}"),
        _ => "—".to_owned(),
    };
    let acquired = span(done.iter().map(Round::handover_ms).collect());
    let lost = span(
        done.iter()
            .filter_map(Round::lost_after_blackhole_ms)
            .collect(),
    );
    let suspended: Vec<i64> = done.iter().filter_map(Round::suspended_margin_ms).collect();
    eprintln!(
        "\n| holder | tick / syncLimit / session | rounds | LOST margin ms min / median / max | LOST during the isolation | waiter acquired ms after the split | LOST ms after the split | suspended margins ms |\n|---|---|---|---|---|---|---|---|\n| {peer} | {} ms / {} / {} s | {n} | {min:+} / {median:+} / {max:+} | {during}/{n} | {acquired} | {lost} | {} |",
        timing.tick.as_millis(),
        timing.sync_limit,
        t.as_secs(),
        suspended
            .iter()
            .map(|m| format!("{m:+}"))
            .collect::<Vec<_>>()
            .join(" "),
    );
}

#[test]
#[ignore = "takes minutes; run by tests/trust/peer-margins.sh"]
fn a_curator_holder_on_an_isolated_follower_reports_its_lost_margin_at_tick_500_ms() {
    measure_isolated_follower("curator", FAST, peers::curator_partition_holder);
}

#[test]
#[ignore = "takes minutes; run by tests/trust/peer-margins.sh"]
fn a_kazoo_holder_on_an_isolated_follower_reports_its_lost_margin_at_tick_500_ms() {
    measure_isolated_follower("kazoo", FAST, peers::kazoo_partition_holder);
}

#[test]
#[ignore = "takes minutes; run by tests/trust/peer-margins.sh"]
fn a_curator_holder_on_an_isolated_follower_reports_its_lost_margin_at_the_sample_timing() {
    measure_isolated_follower("curator", SAMPLE, peers::curator_partition_holder);
}

#[test]
#[ignore = "takes minutes; run by tests/trust/peer-margins.sh"]
fn a_kazoo_holder_on_an_isolated_follower_reports_its_lost_margin_at_the_sample_timing() {
    measure_isolated_follower("kazoo", SAMPLE, peers::kazoo_partition_holder);
}
