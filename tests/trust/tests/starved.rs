//! A starved holder (issue 37, point 6; Redisson #2665 lost a lock to a starved renewal thread):
//! a holder process throttled to 1% of a CPU by a cgroup while a waiter queues behind it. Its
//! proofs come late or not at all, so its lease must turn lost before anyone else can hold:
//!
//! - every state read the holder began at or after its lease's last deadline (`valid_until`)
//!   says `lost`, and the lease did turn lost (the test is not vacuous);
//! - none of its guarded writes begun after that deadline applied, and the data ends as the
//!   waiter wrote it;
//! - the waiter acquires only after that deadline, with a larger token.
//!
//! The throttle: CPU quota 10 ms per 1 s period (cgroup v2 `cpu.max`, or v1's
//! `cpu.cfs_quota_us`/`cpu.cfs_period_us`), so the holder runs in bursts about a second apart.
//! It needs a writable cgroup CPU controller (root); without one the test fails and says so.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use zklock::{Options, Write};
use zklock_testkit::{unique_path, ZooKeeper};
use zklock_trust::nodes::wait_for_children;

const SESSION_MS: u64 = 2_000;
/// The harness's tickTime (its default `Config`), told to the holder as `server_tick`.
const TICK_MS: u64 = 200;
const QUOTA_US: u64 = 10_000;
const PERIOD_US: u64 = 1_000_000;

fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_millis() as i64
}

/// A cgroup with a CPU quota; processes moved into it are throttled until moved out. Removed on
/// drop.
struct Throttle {
    dir: PathBuf,
    /// Where a process goes back to: the root of the same hierarchy.
    root: PathBuf,
}

impl Throttle {
    fn new(name: &str) -> Result<Throttle, String> {
        let v2 = PathBuf::from("/sys/fs/cgroup");
        let v2_has_cpu = std::fs::read_to_string(v2.join("cgroup.controllers"))
            .is_ok_and(|c| c.split_whitespace().any(|w| w == "cpu"));
        let (root, settings): (PathBuf, Vec<(&str, String)>) = if v2_has_cpu {
            (v2, vec![("cpu.max", format!("{QUOTA_US} {PERIOD_US}"))])
        } else {
            (
                PathBuf::from("/sys/fs/cgroup/cpu"),
                vec![
                    ("cpu.cfs_period_us", PERIOD_US.to_string()),
                    ("cpu.cfs_quota_us", QUOTA_US.to_string()),
                ],
            )
        };
        let dir = root.join(name);
        std::fs::create_dir(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        let throttle = Throttle { dir, root };
        for (file, value) in settings {
            let path = throttle.dir.join(file);
            std::fs::write(&path, &value)
                .map_err(|e| format!("write {value:?} to {}: {e}", path.display()))?;
        }
        Ok(throttle)
    }

    fn enter(&self, pid: u32) {
        let procs = self.dir.join("cgroup.procs");
        std::fs::write(&procs, pid.to_string())
            .unwrap_or_else(|e| panic!("move {pid} into {}: {e}", procs.display()));
    }

    fn leave(&self, pid: u32) {
        // The process may have exited already; then there is nothing to move.
        let _ = std::fs::write(self.root.join("cgroup.procs"), pid.to_string());
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Kills the holder if the test ends early (a failed assertion), so no throttled process is left.
struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        extern "C" {
            fn kill(pid: i32, sig: i32) -> i32;
        }
        // SAFETY: kill(2) with a pid this test started; at worst it has exited (ESRCH).
        unsafe { kill(self.0 as i32, 9) };
    }
}

/// One line of the holder's report.
#[derive(Debug)]
enum Seen {
    Read {
        at: i64,
        state: String,
        until: Option<i64>,
    },
    Write {
        at: i64,
        outcome: String,
    },
}

fn parse(line: &str) -> Option<Seen> {
    let f: Vec<&str> = line.split_whitespace().collect();
    match f.as_slice() {
        ["read", at, state, until] => Some(Seen::Read {
            at: at.parse().ok()?,
            state: (*state).to_owned(),
            until: until.parse().ok(),
        }),
        ["write", at, outcome] => Some(Seen::Write {
            at: at.parse().ok()?,
            outcome: (*outcome).to_owned(),
        }),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_starved_of_cpu_loses_before_the_waiter_holds_and_its_writes_apply_nothing() {
    let throttle =
        Throttle::new(&format!("zklock-starved-{}", std::process::id())).unwrap_or_else(|e| {
            panic!("the starved-holder test needs a writable cgroup CPU controller (root): {e}")
        });
    let zk = ZooKeeper::standalone().expect("ZooKeeper must start (scripts/install-deps.sh)");
    let servers = zk.connect_string();
    let base = unique_path("starved");
    let (path, data) = (format!("{base}/lock"), format!("{base}/data"));
    let raw = zookeeper_client::Client::connect(&servers).await.unwrap();
    let persistent =
        zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    raw.mkdir(&base, &persistent).await.unwrap();
    raw.create(&data, b"", &persistent).await.unwrap();

    let mut holder = Command::new(env!("CARGO_BIN_EXE_trust-starved"))
        .args([
            &servers,
            &path,
            &data,
            &SESSION_MS.to_string(),
            &TICK_MS.to_string(),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start trust-starved");
    let pid = holder.id();
    let _kill = KillOnDrop(pid);
    let mut lines = BufReader::new(holder.stdout.take().unwrap()).lines();
    let first = lines.next().expect("the holder's first line").unwrap();
    let old_token: i64 = first
        .strip_prefix("token ")
        .unwrap_or_else(|| panic!("the holder did not acquire: {first}"))
        .parse()
        .unwrap();
    let reader = tokio::task::spawn_blocking(move || {
        lines
            .map_while(Result::ok)
            .take_while(|l| l != "done")
            .collect::<Vec<String>>()
    });

    let client = zklock::Client::connect(&servers, Options::default())
        .await
        .unwrap();
    let mutex = client.mutex(&path).unwrap();
    let waiting = tokio::spawn(async move {
        let lease = mutex.acquire_timeout(Duration::from_secs(120)).await;
        (wall_ms(), lease)
    });
    // The waiter's node is in the queue before the holder is starved.
    wait_for_children(&servers, &path, 2, Duration::from_secs(30)).await;
    throttle.enter(pid);
    let (acquired_at, lease) = waiting.await.unwrap();
    throttle.leave(pid);
    let lease = lease.expect("the waiter acquires once the starved holder let go");
    lease
        .guarded_write(vec![Write::set_data(&data, lease.token().to_string())])
        .await
        .expect("the waiter's guarded write");

    let report: Vec<Seen> = reader
        .await
        .unwrap()
        .iter()
        .filter_map(|l| parse(l))
        .collect();
    assert!(holder.wait().unwrap().success(), "the holder exits cleanly");
    let deadline = report
        .iter()
        .filter_map(|s| match s {
            Seen::Read { until, .. } => *until,
            _ => None,
        })
        .max()
        .expect("the holder reported a deadline while it held");
    let reads = report
        .iter()
        .filter(|s| matches!(s, Seen::Read { .. }))
        .count();
    let writes = report
        .iter()
        .filter(|s| matches!(s, Seen::Write { .. }))
        .count();
    println!(
        "starved holder: token {old_token}, {reads} reads and {writes} guarded writes; last \
         deadline {deadline}, waiter acquired {} ms after it with token {}",
        acquired_at - deadline,
        lease.token()
    );
    assert!(
        report
            .iter()
            .any(|s| matches!(s, Seen::Read { state, .. } if state == "lost")),
        "the starved holder's lease never turned lost: {report:?}"
    );
    for seen in &report {
        match seen {
            Seen::Read { at, state, .. } if *at >= deadline => {
                assert_eq!(
                    state, "lost",
                    "a read at {at}, after the deadline {deadline}"
                )
            }
            Seen::Write { at, outcome } if *at >= deadline => {
                assert_ne!(outcome, "ok", "a guarded write begun at {at} applied")
            }
            _ => {}
        }
    }
    assert!(
        acquired_at > deadline,
        "the waiter held at {acquired_at}, before the holder's deadline {deadline}"
    );
    assert!(lease.token() > old_token);
    let (now, _) = raw.get_data(&data).await.unwrap();
    assert_eq!(
        String::from_utf8_lossy(&now),
        lease.token().to_string(),
        "no write of the starved holder landed after the waiter's"
    );
    lease.release().await.unwrap();
}
