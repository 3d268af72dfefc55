//! A follower's JVM stopped (SIGSTOP) for `syncLimit × tick` + 1 s, then resumed (SIGCONT)
//! (issue 54, point 7): long enough for the leader to give the follower up (its `LearnerHandler`
//! reads with a timeout of syncLimit ticks), so the follower's sessions are touched by nobody
//! and the leader expires them one session timeout after the follower last reported them. A
//! stopped server answers nothing and closes nothing: its clients see silence, not a closed
//! connection, and once resumed it finds its leader gone and must rejoin before it serves.
//!
//! Each round: `PAIRS` holders connected to one follower only (their session ids name it), as
//! many waiters on another member (the leader and the other follower in turn), each queued for
//! its holder's lock. Once every waiter's node is seen the follower is stopped; the stop's
//! length is the fault's definition (read from the ensemble's `Config`); then everything waits
//! on events: each waiter's acquire, each holder's lost signal. The holder's lease must turn
//! lost before its waiter's acquire returns, by at least `TARGET_MARGIN_MS` (the margin of
//! tests/isolation.rs: the waiter's acquire minus the holder's lost signal, in-process monotonic
//! time), so the lock is never held by both; and the holder's lease reads lost after it.
//!
//! `ZKLOCK_ISOLATION_ROUNDS` sets the rounds (default 2, `make trust-long` runs 10).

use std::time::Duration;

use tokio::time::Instant;
use zklock::{Client, LeaseState, Options, Owner, Wait};
use zklock_testkit::{unique_path, Config, ZooKeeper};
use zklock_trust::members::{creator, server_ids, settled};
use zklock_trust::timing::{Timing, FAST, WAITER_SESSION};

/// Holder/waiter pairs per round, every holder on the stopped follower.
const PAIRS: usize = 3;

/// The margin the issue asks for, in milliseconds.
const TARGET_MARGIN_MS: f64 = 200.0;

fn rounds() -> usize {
    std::env::var("ZKLOCK_ISOLATION_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2)
}

fn config(timing: Timing) -> Config {
    Config {
        tick_ms: timing.tick.as_millis() as u32,
        sync_limit: timing.sync_limit,
        ..Config::default()
    }
}

/// How long the follower is stopped: `syncLimit × tickTime` of the members' zoo.cfg, and 1 s.
fn stop_length(config: &Config) -> Duration {
    Duration::from_millis(u64::from(config.tick_ms) * u64::from(config.sync_limit))
        + Duration::from_secs(1)
}

fn holder_options(timing: Timing) -> Options {
    Options::default()
        .session_timeout(timing.session)
        .server_tick(timing.tick)
}

/// Waiters keep a longer session (`timing::WAITER_SESSION`), as in tests/isolation.rs.
fn waiter_options(timing: Timing) -> Options {
    Options::default()
        .session_timeout(WAITER_SESSION.max(timing.session * 3))
        .server_tick(timing.tick)
}

/// What one holder/waiter pair saw, in milliseconds after the stop.
struct Seen {
    lost_ms: f64,
    acquired_ms: f64,
}

impl Seen {
    fn margin(&self) -> f64 {
        self.acquired_ms - self.lost_ms
    }
}

fn ms_between(from: Instant, to: Instant) -> f64 {
    to.duration_since(from).as_secs_f64() * 1e3 - from.duration_since(to).as_secs_f64() * 1e3
}

async fn one_round(zk: &mut ZooKeeper, config: &Config, timing: Timing, round: usize) -> Vec<Seen> {
    let leader = tokio::task::block_in_place(|| settled(zk));
    let ids = tokio::task::block_in_place(|| server_ids(zk));
    let followers: Vec<usize> = (0..zk.len()).filter(|&m| m != leader).collect();
    let stopped = followers[round % followers.len()];
    // The waiters' member: the leader, then the other follower, in turn.
    let waiter_at = match round % 2 {
        0 => leader,
        _ => followers[(round + 1) % followers.len()],
    };
    let mut clients = Vec::new();
    let mut pairs = Vec::new();
    for _ in 0..PAIRS {
        let holder = Client::connect(&zk.address(stopped), holder_options(timing))
            .await
            .expect("a holder connects to the follower");
        assert_eq!(
            creator(&ids, holder.session_id()),
            stopped,
            "the holder's session id {:#x} does not name the follower it connected to",
            holder.session_id()
        );
        let waiter = Client::connect(&zk.address(waiter_at), waiter_options(timing))
            .await
            .expect("a waiter connects to its member");
        let path = unique_path("stopped-follower");
        let lease = holder.mutex(&path).unwrap().acquire().await.unwrap();
        let token = lease.token();
        let lost = lease.lost();
        let lost_at = tokio::spawn(async move {
            lost.await;
            Instant::now()
        });
        let taking = waiter
            .mutex(&path)
            .unwrap()
            .start_acquire(Owner::SHARED, Wait::timeout(Duration::from_secs(90)));
        let waiting = tokio::spawn(async move {
            let lease = taking
                .await
                .expect("the waiter acquires once the holder's session is gone");
            let at = Instant::now();
            let next = lease.token();
            lease.release().await.unwrap();
            (at, next)
        });
        zklock_trust::nodes::wait_for_children(
            &zk.address(waiter_at),
            &path,
            2,
            Duration::from_secs(60),
        )
        .await;
        pairs.push((lease, token, lost_at, waiting));
        clients.push((holder, waiter));
    }
    let length = stop_length(config);
    println!(
        "round {round}: {PAIRS} holders on follower {stopped}, waiters on member {waiter_at} (leader {leader}); stopping the follower for {length:?}"
    );
    let stop = Instant::now();
    tokio::task::block_in_place(|| zk.pause(stopped));
    tokio::time::sleep(length).await;
    tokio::task::block_in_place(|| zk.resume(stopped));
    let mut seen = Vec::new();
    for (lease, token, lost_at, waiting) in pairs {
        let (acquired_at, next) = waiting.await.unwrap();
        let lost_at = tokio::time::timeout(Duration::from_secs(60), lost_at)
            .await
            .expect("the holder's lost signal fires")
            .unwrap();
        assert_eq!(lease.state(), LeaseState::Lost);
        assert!(
            next > token,
            "the next holder's token {next} is not above the stopped follower's holder's {token}"
        );
        seen.push(Seen {
            lost_ms: ms_between(stop, lost_at),
            acquired_ms: ms_between(stop, acquired_at),
        });
    }
    for (holder, waiter) in clients {
        holder.close().await;
        waiter.close().await;
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_on_a_follower_stopped_past_its_sync_limit_knows_before_the_next_holder_acquires()
{
    let timing = FAST;
    let config = config(timing);
    let mut zk = ZooKeeper::start(3, &config)
        .expect("a 3-member ZooKeeper ensemble must start (scripts/install-deps.sh)");
    let mut seen = Vec::new();
    for round in 0..rounds() {
        seen.extend(one_round(&mut zk, &config, timing, round).await);
    }
    assert!(
        !seen.is_empty(),
        "no rounds ran (ZKLOCK_ISOLATION_ROUNDS=0)"
    );
    let mut margins: Vec<f64> = seen.iter().map(Seen::margin).collect();
    margins.sort_by(f64::total_cmp);
    for s in &seen {
        println!(
            "follower stopped {timing:?}: holder lost at {:.0} ms after the stop, waiter acquired at {:.0} ms, margin {:.0} ms",
            s.lost_ms,
            s.acquired_ms,
            s.margin()
        );
    }
    println!(
        "follower stopped {timing:?}: {} samples, margin min {:.0} ms, median {:.0} ms, max {:.0} ms",
        margins.len(),
        margins[0],
        margins[margins.len() / 2],
        margins[margins.len() - 1]
    );
    assert!(
        margins[0] >= TARGET_MARGIN_MS,
        "a waiter acquired {:.0} ms after the holder on the stopped follower knew it lost (target >= {TARGET_MARGIN_MS} ms)",
        margins[0]
    );
}
