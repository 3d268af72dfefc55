//! `soak-sessions [--sessions N] [--parallel P] [--window-secs S] [--session-ms T] [--tick-ms K]
//! [--server-heap yes|no]` (`make soak-10k`; issue 34, point 5): one process opens N sessions
//! (default 10,000) against a 3-member ensemble, takes one lock on each, holds them all, releases
//! them all and closes every session, P operations in flight at a time (default 100). Each
//! session locks a path of its own (`/soak-sessions/<run>/l-<i>`): the cost of a session and of
//! a lease per session, as bench s9's `hold` phase measures it; one path for all would measure a
//! 10,000-deep queue instead (each waiter lists the queue ahead of it: 10,000²/2 names read).
//!
//! Reports the client's memory (RSS, and the heap by the testkit's counting allocator), each
//! member's CPU (`/proc/<pid>/stat`) in every phase and per 1,000 sessions per second in the
//! idle and holding windows (each opened a session timeout after the phase before it, the idle
//! ensemble's CPU taken off, as s9 does), each member's
//! connections, RSS and (with `jcmd`, after a full collection) JVM heap, and the time to open
//! and to close them all. Any error fails the run with its kind; so does any session that was
//! suspended, reconnected or expired, or any lease lost, on the way.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Semaphore;
use zklock_testkit::counting;
use zklock_testkit::procstat::status_bytes;
use zklock_testkit::{Config, ZooKeeper};
use zklock_trust::sessions::{self, Opts, Phase};

#[global_allocator]
static GLOBAL: zklock_testkit::Counting = zklock_testkit::Counting;

/// How long one uncontended acquire may take before the run fails with `Timeout`.
const ACQUIRE_LIMIT: Duration = Duration::from_secs(120);
/// How long the servers may take to show what the clients did (connections, nodes).
const SERVER_LIMIT: Duration = Duration::from_secs(300);

fn main() {
    let opts = match Opts::parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("soak-sessions: {e}\n{}", Opts::USAGE);
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&opts) {
        eprintln!("soak-sessions: FAILED: {e}");
        std::process::exit(1);
    }
}

/// Errors by kind: how many, and the first message of each.
#[derive(Default)]
struct Errors(Mutex<BTreeMap<String, (usize, String)>>);

impl Errors {
    fn add(&self, what: &str, e: &zklock::Error) {
        let mut m = self.0.lock().unwrap();
        let entry = m
            .entry(e.kind().to_string())
            .or_insert_with(|| (0, format!("{what}: {e}")));
        entry.0 += 1;
    }

    /// Ok when there were none, else every kind with its count and first message.
    fn check(&self, phase: &str) -> Result<(), String> {
        let m = self.0.lock().unwrap();
        if m.is_empty() {
            return Ok(());
        }
        let kinds: Vec<String> = m
            .iter()
            .map(|(kind, (n, first))| format!("{n} × {kind} (first: {first})"))
            .collect();
        Err(format!("errors while {phase}: {}", kinds.join("; ")))
    }
}

/// `f` on every item, at most `parallel` at a time, each on a task of its own; the results in
/// the items' order, the errors recorded (by kind) in `errors` as `what`.
async fn in_parallel<I, T, F, Fut>(
    items: Vec<I>,
    parallel: usize,
    errors: &Arc<Errors>,
    what: &'static str,
    f: F,
) -> Vec<Option<T>>
where
    F: Fn(usize, I) -> Fut,
    Fut: Future<Output = zklock::Result<T>> + Send + 'static,
    T: Send + 'static,
{
    let gate = Arc::new(Semaphore::new(parallel));
    let mut tasks = tokio::task::JoinSet::new();
    let n = items.len();
    for (i, item) in items.into_iter().enumerate() {
        let permit = gate.clone().acquire_owned().await.expect("gate open");
        let op = f(i, item);
        let errors = errors.clone();
        tasks.spawn(async move {
            let out = op.await;
            drop(permit);
            (i, out.map_err(|e| errors.add(what, &e)).ok())
        });
    }
    let mut out: Vec<Option<T>> = (0..n).map(|_| None).collect();
    while let Some(done) = tasks.join_next().await {
        let (i, r) = done.expect("a task of the run panicked");
        out[i] = r;
    }
    out
}

fn run(opts: &Opts) -> Result<(), String> {
    let files = sessions::raise_fd_limit(opts.sessions as u64)?;
    sessions::watch_logs();
    println!(
        "soak-sessions: {} sessions, {} in flight at a time, T = {} ms, tick {} ms, windows of {:?}; open files allowed {files}",
        opts.sessions, opts.parallel, opts.session_ms, opts.tick_ms, opts.window
    );
    let zk = ZooKeeper::start(
        3,
        &Config {
            tick_ms: opts.tick_ms,
            sync_limit: 5,
            ..Config::default()
        },
    )?;
    let leader = zk.leader();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("no runtime: {e}"))?;
    let report = rt.block_on(sessions_run(&zk, opts))?;
    sessions::print(&zk, leader, opts, &report);
    Ok(())
}

async fn sessions_run(zk: &ZooKeeper, opts: &Opts) -> Result<sessions::Report, String> {
    let n = opts.sessions;
    let errors = Arc::new(Errors::default());
    let mut report = sessions::Report::default();
    let options = zklock::Options::default()
        .session_timeout(Duration::from_millis(opts.session_ms))
        .server_tick(Duration::from_millis(opts.tick_ms.into()));
    let hosts = zk.connect_string();
    let settle = Duration::from_millis(opts.session_ms);
    let run = format!("/soak-sessions/{}-{}", std::process::id(), unix_ms());

    // The idle ensemble: its CPU over one window, taken off the windows below.
    report.server_heap_before = sessions::jvm_heaps(zk, opts.server_heap);
    report.server_rss_before = (0..zk.len()).map(|i| zk.rss_bytes(i)).collect();
    report.baseline = sessions::window(zk, opts.window).await;
    report.client_rss_before = status_bytes(None, "VmRSS");
    let heap_before = counting::reset_peak();

    let phase = Phase::start(zk);
    let clients = in_parallel(vec![(); n], opts.parallel, &errors, "open", |_, ()| {
        let (hosts, options) = (hosts.clone(), options.clone());
        async move { zklock::Client::connect(&hosts, options).await }
    })
    .await;
    report.open = phase.end(zk);
    errors.check("opening")?;
    let clients: Vec<zklock::Client> = clients.into_iter().flatten().collect();
    // A session that expires takes its leases' nodes with it: no wait outlasts that news.
    let trouble = || sessions::troubles(&clients);
    // Each member counts the `mntr` probe's own connection too.
    sessions::wait_for(
        zk,
        "zk_num_alive_connections",
        n + zk.len(),
        SERVER_LIMIT,
        &trouble,
    )
    .await?;
    report.connections = (0..zk.len())
        .map(|i| zk.mntr_value(i, "zk_num_alive_connections").ok())
        .collect();
    report.client_rss_open = status_bytes(None, "VmRSS");
    report.heap_open = counting::live() - heap_before;
    report.heap_open_peak = counting::peak() - heap_before;
    // As bench s9: the window opens once every session has been open a session timeout, so it
    // carries neither the opening nor what a client does in its first moments.
    tokio::time::sleep(settle).await;
    report.idle = sessions::window(zk, opts.window).await;
    report.server_heap_open = sessions::jvm_heaps(zk, opts.server_heap);
    report.server_rss_open = (0..zk.len()).map(|i| zk.rss_bytes(i)).collect();

    let locks: Vec<zklock::Lock> = clients
        .iter()
        .enumerate()
        .map(|(i, c)| c.mutex(&format!("{run}/l-{i}")))
        .collect::<zklock::Result<_>>()
        .map_err(|e| format!("a lock path: {e}"))?;
    let heap_idle = counting::reset_peak();
    let phase = Phase::start(zk);
    let leases = in_parallel(
        locks,
        opts.parallel,
        &errors,
        "acquire",
        |_, lock| async move { lock.acquire_timeout(ACQUIRE_LIMIT).await },
    )
    .await;
    report.acquire = phase.end(zk);
    errors.check("acquiring")?;
    let leases: Vec<zklock::Lease> = leases.into_iter().flatten().collect();
    sessions::wait_for(zk, "zk_ephemerals_count", n, SERVER_LIMIT, &trouble).await?;
    report.client_rss_hold = status_bytes(None, "VmRSS");
    report.heap_hold = counting::live() - heap_idle;
    report.heap_hold_peak = counting::peak() - heap_idle;
    tokio::time::sleep(settle).await;
    report.hold = sessions::window(zk, opts.window).await;
    report.server_heap_hold = sessions::jvm_heaps(zk, opts.server_heap);
    report.server_rss_hold = (0..zk.len()).map(|i| zk.rss_bytes(i)).collect();

    let phase = Phase::start(zk);
    let released = in_parallel(leases, opts.parallel, &errors, "release", |_, lease| {
        lease.release()
    })
    .await;
    report.release = phase.end(zk);
    errors.check("releasing")?;
    let lost = released
        .iter()
        .filter(|r| **r != Some(zklock::Released::Released))
        .count();
    if lost > 0 {
        return Err(format!(
            "{lost} leases were not released as held (lost on the way)"
        ));
    }
    sessions::wait_for_at_most(zk, "zk_ephemerals_count", 0, SERVER_LIMIT, &trouble).await?;
    let troubles = trouble();
    if !troubles.is_empty() {
        return Err(format!("sessions in trouble on the way: {troubles}"));
    }

    let phase = Phase::start(zk);
    in_parallel(
        clients,
        opts.parallel,
        &errors,
        "close",
        |_, c| async move {
            c.close().await;
            Ok(())
        },
    )
    .await;
    report.close_client = phase.elapsed();
    sessions::wait_for_at_most(
        zk,
        "zk_num_alive_connections",
        zk.len() as i64,
        SERVER_LIMIT,
        &String::new,
    )
    .await?;
    report.close = phase.end(zk);
    report.client_rss_closed = status_bytes(None, "VmRSS");
    report.client_rss_peak = status_bytes(None, "VmHWM");
    report.heap_closed = counting::live() - heap_before;
    Ok(report)
}

fn unix_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}
