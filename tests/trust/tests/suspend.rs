//! A suspended host must not read `held` (issue 50, part 3). While a machine is suspended (a
//! laptop's lid, a VM paused by its hypervisor) CLOCK_MONOTONIC stands still while ZooKeeper's
//! leader goes on counting the session timeout; a deadline on that clock fires late by the
//! whole suspend. The simulation: the holder process (`trust-suspend-holder`) runs with
//! `suspend/clock-shim.c` preloaded, is stopped (SIGSTOP) until the next holder acquired, and
//! before it is resumed its monotonic clocks are moved back by the stop, so they resume where
//! they stood while CLOCK_BOOTTIME (and the wall clock) counted the stop: what a process sees of
//! a real suspend. (libfaketime cannot do this: it fakes CLOCK_BOOTTIME with CLOCK_MONOTONIC.)
//!
//! Each round prints its margin: the holder's last `held` read (stamped on CLOCK_BOOTTIME after
//! the read returned) minus the moment the next holder's acquire returned (same clock, this
//! process). It must be negative: `held` is never read after the next holder could hold. It
//! also prints how long after the resume the holder read another state; the lease must then
//! turn `lost`. Rounds resume the holder at once, 300 ms or 1 s after the next holder acquired.
//! `ZKLOCK_ISOLATION_ROUNDS` sets the rounds (default 2; `make trust-long` runs 10).
//!
//! A maximum hold is a promised time too (`valid_until`, `time_left`): a holder with a 4 s
//! maximum hold and a session that outlives the stop (T = 30 s) is suspended for 6 s right
//! after its first read. Its first read after the resume must say lost (reason `max-hold`), though
//! its monotonic clock says it held for moments; the next holder gets the lock only after that,
//! once the resumed holder's timer deleted the node.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use zklock::Options;
use zklock_testkit::{unique_path, ZooKeeper};
use zklock_trust::nodes::wait_for_children;

const SESSION_MS: u64 = 2_000;
/// The harness's tickTime (its default `Config`), told to the holder as `server_tick`.
const TICK_MS: u64 = 200;

fn rounds() -> usize {
    std::env::var("ZKLOCK_ISOLATION_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2)
}

fn boot_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to write; CLOCK_BOOTTIME exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on a process this test started.
    unsafe { libc::kill(pid as i32, sig) };
}

/// Kills the holder if the test ends early, so no stopped process is left.
struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        signal(self.0, libc::SIGKILL);
        signal(self.0, libc::SIGCONT);
    }
}

/// Builds the clock shim into `dir` with the system's C compiler.
fn build_shim(dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("suspend/clock-shim.c");
    let out = dir.join("clock-shim.so");
    let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&out)
        .arg(&source)
        .arg("-ldl")
        .status()
        .expect("a C compiler (cc) builds the clock shim");
    assert!(status.success(), "building {} failed", source.display());
    out
}

/// Sets the holder's monotonic offset (see the shim).
fn set_offset(file: &Path, ns: i64) {
    // Written in place (the holder maps the file): same length, so the mapping stays valid.
    let mut f = std::fs::OpenOptions::new().write(true).open(file).unwrap();
    f.write_all(&ns.to_ne_bytes()).unwrap();
}

struct Round {
    margin_ms: f64,
    lost_after_resume_ms: f64,
    stop_ms: f64,
}

/// How a round suspends its holder.
#[derive(Clone, Copy)]
enum Plan {
    /// Session timeout `SESSION_MS`, no maximum hold; resumed this long after the next holder
    /// acquired (which it can once the stopped holder's session expired).
    PastTheSession(Duration),
    /// Session timeout `LONG_SESSION_MS`, a maximum hold of `MAX_HOLD_MS`; suspended for
    /// `HOLD_STOP_MS` (past the hold's end, well within the session), then the next holder
    /// waits for the node to go.
    PastTheMaxHold,
}

// A maximum hold long enough that the stop comes before its end however slow the machine (the
// stop follows the holder's first read), a stop well past it, and a session whose deadline
// outlasts the stop by far (its lead is at least a third of it), so that the maximum hold, not
// the lifeline, ends the lease.
const LONG_SESSION_MS: u64 = 30_000;
const MAX_HOLD_MS: u64 = 4_000;
const HOLD_STOP_MS: u64 = 6_000;

async fn round(zk: &ZooKeeper, shim: &Path, dir: &Path, n: usize, plan: Plan) -> Round {
    let servers = zk.connect_string();
    let path = unique_path(&format!("suspend{n}"));
    let offset = dir.join(format!("offset{n}"));
    std::fs::write(&offset, 0i64.to_ne_bytes()).unwrap();
    let mut args = vec![servers.clone(), path.clone()];
    match plan {
        Plan::PastTheSession(_) => args.push(SESSION_MS.to_string()),
        Plan::PastTheMaxHold => {
            args.push(LONG_SESSION_MS.to_string());
        }
    }
    args.push(TICK_MS.to_string());
    if let Plan::PastTheMaxHold = plan {
        args.push(MAX_HOLD_MS.to_string());
    }
    let mut holder = Command::new(env!("CARGO_BIN_EXE_trust-suspend-holder"))
        .args(&args)
        .env("LD_PRELOAD", shim)
        .env("ZKLOCK_SUSPEND_OFFSET_FILE", &offset)
        .stdout(Stdio::piped())
        .spawn()
        .expect("start trust-suspend-holder");
    let pid = holder.id();
    let _kill = KillOnDrop(pid);
    let mut lines = BufReader::new(holder.stdout.take().unwrap()).lines();
    let first = lines.next().expect("the holder's first line").unwrap();
    assert!(
        first.starts_with("token "),
        "the holder did not acquire: {first}"
    );
    let reading = lines.next().expect("the holder's second line").unwrap();
    assert_eq!(reading, "reading", "the holder's reads did not begin");
    let reader = tokio::task::spawn_blocking(move || {
        lines
            .map_while(Result::ok)
            .take_while(|l| l != "done")
            .collect::<Vec<String>>()
    });
    // Past its maximum hold: suspended at once, so that the hold ends during the suspend (the
    // next holder queues meanwhile). Past its session: once the next holder queued.
    let mut stopped = 0;
    if let Plan::PastTheMaxHold = plan {
        stopped = boot_ns();
        signal(pid, libc::SIGSTOP);
        let acquired_at: i64 = first
            .split_whitespace()
            .nth(3)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("the holder's first line names its acquire time: {first}"));
        assert!(
            stopped - acquired_at < (MAX_HOLD_MS * 1_000_000) as i64,
            "the holder was stopped {} ms after its acquire, past its maximum hold: the round \
             tests nothing (a machine this slow needs a longer MAX_HOLD_MS)",
            (stopped - acquired_at) / 1_000_000
        );
    }

    let client = zklock::Client::connect(&servers, Options::default())
        .await
        .unwrap();
    let mutex = client.mutex(&path).unwrap();
    let waiting = tokio::spawn(async move {
        let lease = mutex.acquire_timeout(Duration::from_secs(60)).await;
        (boot_ns(), lease)
    });
    wait_for_children(&servers, &path, 2, Duration::from_secs(30)).await;
    if let Plan::PastTheSession(_) = plan {
        stopped = boot_ns();
        signal(pid, libc::SIGSTOP);
    }
    // The suspend ends: the holder's monotonic clocks resume where they stood.
    let resume = || {
        let resumed = boot_ns();
        set_offset(&offset, resumed - stopped);
        signal(pid, libc::SIGCONT);
        resumed
    };
    let (resumed, acquired, lease) = match plan {
        Plan::PastTheSession(resume_after) => {
            let (acquired, lease) = waiting.await.unwrap();
            let lease =
                lease.expect("the next holder acquires once the stopped holder's session expired");
            tokio::time::sleep(resume_after).await;
            (resume(), acquired, lease)
        }
        Plan::PastTheMaxHold => {
            let left = HOLD_STOP_MS.saturating_sub(((boot_ns() - stopped) / 1_000_000) as u64);
            tokio::time::sleep(Duration::from_millis(left)).await;
            let resumed = resume();
            let (acquired, lease) = waiting.await.unwrap();
            let lease =
                lease.expect("the next holder acquires once the resumed holder's node went");
            // The resumed holder deleted its node: the session, which outlived the stop, would
            // have taken it away only `LONG_SESSION_MS` after the stop.
            assert!(
                acquired - stopped < (LONG_SESSION_MS * 1_000_000) as i64,
                "the next holder acquired only {} ms after the stop, when the session expired: \
                 the resumed holder did not delete its node",
                (acquired - stopped) / 1_000_000
            );
            (resumed, acquired, lease)
        }
    };

    let report = reader.await.unwrap();
    // A holder past its maximum hold stays alive (as a service would) until its node went;
    // it is killed here, after the next holder acquired.
    signal(pid, libc::SIGKILL);
    let _ = holder.wait();
    drop(lease);
    let line = report
        .iter()
        .find(|l| l.starts_with("last-held "))
        .unwrap_or_else(|| panic!("the holder reported no change: {report:?}"));
    let f: Vec<&str> = line.split_whitespace().collect();
    let last_held: i64 = f[1].parse().unwrap();
    let first_other: i64 = f[3].parse().unwrap();
    assert!(
        report.iter().any(|l| l.starts_with("lost ")),
        "the holder's lease never turned lost: {report:?}"
    );
    let signal: i64 = report
        .iter()
        .find_map(|l| l.strip_prefix("signal "))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!(signal > 0, "the lost signal did not fire: {report:?}");
    let ms = |ns: i64| ns as f64 / 1e6;
    // The lease's clock, not the connection's news, decides: the first read after the resume
    // already says lost (a monotonic deadline would still say held, or suspended at best).
    assert_eq!(f[4], "lost", "the first read after the resume: {report:?}");
    if let Plan::PastTheMaxHold = plan {
        // No read begun after the resume says held: the hold ended during the suspend. (The
        // start of the read, not its end: a stop between a read and its stamp would stamp a
        // read from before the suspend as one after it.)
        let last_held_began: i64 = f[6].parse().unwrap();
        assert!(
            last_held_began < resumed,
            "the resumed holder read held {:.1} ms after the resume, past its maximum hold: \
             {report:?}",
            (last_held_began - resumed) as f64 / 1e6
        );
        let reason = report
            .iter()
            .find_map(|l| l.strip_prefix("reason "))
            .unwrap_or_default();
        assert!(
            reason.contains("max-hold"),
            "the session outlives the stop: the maximum hold ends the lease, not {reason:?}"
        );
        // The hold it names is the one it had, not shortened by the suspend.
        let limit = zklock::support::duration_text(Duration::from_millis(MAX_HOLD_MS));
        assert!(
            reason.contains(&format!("maximum of {limit}")),
            "the reason names the {limit} hold: {reason:?}"
        );
    }
    println!(
        "suspend round {n}: stopped {:.0} ms, resumed {:+.0} ms from the next holder's acquire; \
         margin (last held read - next acquire) {:+.1} ms; first {} read {:.1} ms and lost \
         signal {:.1} ms after resume",
        ms(resumed - stopped),
        ms(resumed - acquired),
        ms(last_held - acquired),
        f[4],
        ms(first_other - resumed),
        ms(signal - resumed)
    );
    Round {
        margin_ms: ms(last_held - acquired),
        lost_after_resume_ms: ms(first_other - resumed),
        stop_ms: ms(resumed - stopped),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_resumed_from_a_suspend_never_reads_held_after_the_next_holder_acquired() {
    let zk = ZooKeeper::standalone().expect("ZooKeeper must start (scripts/install-deps.sh)");
    let dir = std::env::temp_dir().join(format!("zklock-suspend-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let shim = build_shim(&dir);
    let delays = [0u64, 300, 1000];
    let mut results = Vec::new();
    for n in 0..rounds() {
        let after = Duration::from_millis(delays[n % delays.len()]);
        results.push(round(&zk, &shim, &dir, n, Plan::PastTheSession(after)).await);
    }
    let _ = std::fs::remove_dir_all(&dir);
    check(&results);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_resumed_past_its_maximum_hold_reads_lost_at_once_before_the_next_holder_acquires()
{
    let zk = ZooKeeper::standalone().expect("ZooKeeper must start (scripts/install-deps.sh)");
    let dir = std::env::temp_dir().join(format!("zklock-suspend-hold-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let shim = build_shim(&dir);
    let mut results = Vec::new();
    for n in 0..rounds() {
        results.push(round(&zk, &shim, &dir, n, Plan::PastTheMaxHold).await);
    }
    let _ = std::fs::remove_dir_all(&dir);
    check(&results);
}

/// Prints the worst of the rounds and checks that no round read `held` after the next holder
/// acquired.
fn check(results: &[Round]) {
    let worst = results.iter().map(|r| r.margin_ms).fold(f64::MIN, f64::max);
    let slowest = results
        .iter()
        .map(|r| r.lost_after_resume_ms)
        .fold(f64::MIN, f64::max);
    let longest = results.iter().map(|r| r.stop_ms).fold(f64::MIN, f64::max);
    println!(
        "suspend: {} rounds, worst margin {worst:+.1} ms (must be negative), another state read \
         at most {slowest:.1} ms after resume, stops up to {longest:.0} ms",
        results.len()
    );
    for (n, r) in results.iter().enumerate() {
        assert!(
            r.margin_ms < 0.0,
            "round {n}: the resumed holder read held {:+.1} ms after the next holder acquired",
            r.margin_ms
        );
    }
}
