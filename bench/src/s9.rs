//! Scenario 9 (issue 34): what sessions cost the ZooKeeper servers. Each implementation opens
//! N sessions (1,000 by default; `make bench-s9-long`: 1,000 and 5,000) and keeps them idle, then each holding one lock, then each
//! waiting on one lock (all queued on one lock held by one of them); in each phase the servers'
//! CPU time is read from `/proc/<pid>/stat` over a window and reported per 1,000 sessions per
//! second, after the same window's CPU of the idle server is taken off. On a standalone server
//! at T = 10 s / tick 2 s by default; `make bench-s9-long` adds a 3-member ensemble (each
//! member's row, the leader's on its own) and T = 4 s / tick 500 ms, which ran for more than an
//! hour (issue 51, point 5).
//!
//! A worker process (`--scenario s9`) prints `ready {"phase": ...}` after each phase is set up
//! and moves on at a line on stdin: `idle` (sessions open), `hold` (each session holds
//! `PATH/h-<i>`), `wait` (the first process's first session holds `PATH/wait`, every other
//! session waits on it), then closes everything and prints its result. Curator and kazoo run
//! their sessions over several processes (one JVM or CPython per 1,000 or 500 sessions); the
//! orchestrator waits until the servers show every session, lease or waiter (`mntr`) before it
//! measures. Fair to every implementation: an unmeasured warm-up pass on each fresh server
//! (the JVM compiles under the first load), and the idle window only once every session has
//! been open a session timeout. Each window also records what the members received
//! (`traffic`: packets per second, and the connections by last operation from `cons`).

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use zklock_testkit::{Config, ZooKeeper};

use crate::common::{mono_ns, rss_bytes, Args};
use crate::orchestrate::Impl;

type Res<T> = Result<T, String>;

/// The two timings of the issue: (session timeout, server tick), in milliseconds.
const TIMINGS: [(u64, u32); 2] = [(10_000, 2_000), (4_000, 500)];

/// Sessions per worker process, by implementation: one JVM per 1,000 Curator sessions (two
/// threads each), one CPython per 500 kazoo sessions (two threads each, one GIL), and zklock's
/// all in one process, or `fleet` per process (`--s9-fleet`, issue 54's fleet-shaped row: what
/// zklock costs the servers depends on how its sessions are spread over processes, since one
/// process's sessions on a member share one proof chain; a peer's session costs the same in
/// any process).
fn per_process(key: &str, fleet: Option<usize>) -> usize {
    match (key, fleet) {
        ("curator", _) => 1_000,
        ("kazoo", _) => 500,
        (_, Some(per)) => per.max(1),
        _ => usize::MAX,
    }
}

/// Every implementation's sessions, phases and the servers' CPU in each.
pub fn run(args: &Args, impls: &[Impl]) -> Res<Value> {
    let sizes: Vec<usize> = args
        .opt("s9-sizes")
        .unwrap_or_else(|| "1000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    // The window: `--s9-secs`, or one session timeout. A process that opens its sessions
    // within a second pings them in bursts, every T/3 (zklock, ZooKeeper's client): a window
    // of T holds three bursts whatever its phase, where a 5 s window held one or two.
    let window_of = |session_ms: u64| match args.opt("s9-secs") {
        Some(_) => Duration::from_secs_f64(args.num("s9-secs", 5.0)),
        None => Duration::from_millis(session_ms),
    };
    let topologies: Vec<usize> = args
        .opt("s9-members")
        .unwrap_or_else(|| "1".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let mut impls: Vec<&Impl> = impls
        .iter()
        .filter(|i| i.scenarios.contains(&"s9"))
        .collect();
    // The order rule (docs/safety.md, "The order, measured"): the implementation measured first
    // on a fresh server pays up to half again for the same requests, so the first is measured
    // last too, and the rows name both. `--s9-order-rule no` keeps the order as given.
    if args.opt("s9-order-rule").as_deref() != Some("no") {
        if let (Some(&first), Some(&last)) = (impls.first(), impls.last()) {
            if impls.len() > 1 && first.key != last.key {
                impls.push(first);
            }
        }
    }
    // `--s9-timings 10000` (session timeouts in ms) runs only the timings named; the default
    // run takes the first (T = 10 s), `make bench-s9-long` both.
    let only = args.opt("s9-timings").unwrap_or_else(|| TIMINGS[0].0.to_string());
    let timings: Vec<(u64, u32)> = TIMINGS
        .iter()
        .copied()
        .filter(|(t, _)| only.split(',').any(|o| o.trim() == t.to_string()))
        .collect();
    // `--s9-fleet 10`: zklock's sessions in processes of 10 each (100 processes at 1,000).
    let fleet = args
        .opt("s9-fleet")
        .and_then(|f| f.trim().parse::<usize>().ok());
    let mut rows = Vec::new();
    for &(session_ms, tick_ms) in &timings {
        for &members in &topologies {
            println!(
                "\n== s9: {members} member(s), T = {} s, tick {} ms ==",
                session_ms as f64 / 1e3,
                tick_ms
            );
            let zk = ZooKeeper::start(
                members,
                &Config {
                    tick_ms,
                    sync_limit: 5,
                    ..Config::default()
                },
            )?;
            zk.wait_serving(Duration::from_secs(120))?;
            let window = window_of(session_ms);
            let settle = Duration::from_millis(args.int("s9-settle-ms", session_ms));
            let leader = if members > 1 { zk.leader() } else { Some(0) };
            // A fresh server compiles its request paths (the JVM's JIT) under the first load
            // it sees: one unmeasured pass of the first implementation, so that the first
            // measured is not charged for it (`--s9-warmup no` skips it).
            if args.opt("s9-warmup").as_deref() != Some("no") {
                if let (Some(first), Some(&n)) = (impls.first(), sizes.first()) {
                    let quick = (Duration::ZERO, Duration::from_secs(1));
                    let per = per_process(&first.key, fleet).min(n);
                    if let Err(e) = one(&zk, first, n, per, (session_ms, tick_ms), quick) {
                        eprintln!("  ! s9 warm-up {}: {e}", first.label);
                    }
                }
            }
            // The idle server's CPU, once the warm-up's collection and compiling are over.
            std::thread::sleep(settle);
            let baseline = cpu_over(&zk, window);
            for &n in &sizes {
                for imp in &impls {
                    let per = per_process(&imp.key, fleet).min(n);
                    let measured = one(&zk, imp, n, per, (session_ms, tick_ms), (settle, window))
                        .unwrap_or_else(|e| {
                            eprintln!("  ! s9 {} {n}: {e}", imp.label);
                            json!({ "error": e })
                        });
                    let row = json!({
                        "members": members,
                        "session_ms": session_ms,
                        "tick_ms": tick_ms,
                        "leader": leader,
                        "impl": imp.key,
                        "sessions": n,
                        "per_process": per,
                        "window_s": window.as_secs_f64(),
                        "baseline_ms_s": baseline,
                        "measured": measured,
                    });
                    eprintln!("  . s9 {:<28} {row}", imp.label);
                    rows.push(row);
                }
            }
        }
    }
    Ok(json!({ "rows": rows }))
}

/// One implementation with `n` sessions: the servers' CPU (ms per second, per member) in each
/// phase, and the workers' own figures.
fn one(
    zk: &ZooKeeper,
    imp: &Impl,
    n: usize,
    per: usize,
    (session_ms, tick_ms): (u64, u32),
    (settle, window): (Duration, Duration),
) -> Res<Value> {
    let path = format!("/bench/s9/{}-{n}-{}", imp.key, mono_ns());
    let mut procs = Vec::new();
    let mut offset = 0;
    while offset < n {
        let count = per.min(n - offset);
        let args: Vec<String> = [
            "--scenario",
            "s9",
            "--servers",
            &zk.connect_string(),
            "--path",
            &path,
            "--sessions",
            &count.to_string(),
            "--offset",
            &offset.to_string(),
            "--session-ms",
            &session_ms.to_string(),
            "--tick-ms",
            &tick_ms.to_string(),
            "--holder",
            if offset == 0 { "yes" } else { "no" },
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        procs.push(crate::orchestrate::Proc::spawn(
            imp,
            &args,
            Duration::from_secs(900),
        )?);
        offset += count;
    }
    let mut phases = serde_json::Map::new();
    let mut traffic = serde_json::Map::new();
    let mut reports = Vec::new();
    let started = Instant::now();
    for p in procs.iter_mut() {
        reports.push(p.next()?);
    }
    let open_s = started.elapsed().as_secs_f64();
    // Each member counts the `mntr` probe's own connection too.
    wait_for(zk, "zk_num_alive_connections", n + zk.len(), true)?;
    // The same rule for every implementation: the idle window starts once every session has
    // been open for a session timeout (`settle`: `--s9-settle-ms`, default T), so it carries
    // neither the opening (createSession is a leader proposal, and the JVM's collector works
    // on after it) nor whatever a client does in its first moments.
    std::thread::sleep(settle);
    let (cpu, seen) = measure(zk, window);
    phases.insert("idle".into(), cpu);
    traffic.insert("idle".into(), seen);
    for phase in ["hold", "wait"] {
        // The first process goes first: in `wait` its first session takes the lock the others
        // then queue on.
        for p in procs.iter_mut() {
            p.go();
            reports.push(p.next()?);
        }
        // `hold`: one lease per session; `wait`: n - 1 waiters and the holder.
        wait_for(zk, "zk_ephemerals_count", n, false)?;
        if phase == "wait" {
            // A waiter's node exists before its listing is served and read: the window starts
            // once every waiter has its one watch on the node before it (every implementation
            // sets one), so it measures waiting, not the queue still forming (5,000 waiters
            // list 12.5 million names; a worker may report ready before its waiters queue).
            wait_for(zk, "zk_watch_count", n - 1, true)?;
        }
        let (cpu, seen) = measure(zk, window);
        phases.insert(phase.into(), cpu);
        traffic.insert(phase.into(), seen);
    }
    let closing = Instant::now();
    for p in procs {
        reports.push(p.finish()?);
    }
    let close_s = closing.elapsed().as_secs_f64();
    // The next run starts from an empty server.
    wait_for_at_most(zk, "zk_num_alive_connections", zk.len() as i64)?;
    wait_for_at_most(zk, "zk_ephemerals_count", 0)?;
    Ok(json!({
        "phases": Value::Object(phases),
        "traffic": Value::Object(traffic),
        "open_s": open_s,
        "settle_s": settle.as_secs_f64(),
        "close_s": close_s,
        "workers": reports,
    }))
}

/// Each member's CPU over `window`, in milliseconds per second, and what the members received
/// in it (`traffic`).
fn measure(zk: &ZooKeeper, window: Duration) -> (Value, Value) {
    // Let the phase's setup traffic (creates, watches) settle first.
    std::thread::sleep(Duration::from_secs(1));
    let packets = |i| zk.mntr_value(i, "zk_packets_received").unwrap_or(0);
    let before: Vec<i64> = (0..zk.len()).map(packets).collect();
    let t0 = Instant::now();
    let cpu = cpu_over(zk, window);
    let secs = t0.elapsed().as_secs_f64();
    let received: Vec<f64> = (0..zk.len())
        .map(|i| (packets(i) - before[i]) as f64 / secs)
        .collect();
    (json!(cpu), traffic(zk, &received))
}

/// What each member received over a window, as its `mntr` and `cons` show it: packets per
/// second from clients, and its client connections by the last operation each sent (`lop`)
/// and their negotiated session timeouts (`to`). Read after the window (`cons` of a thousand
/// connections is work for the server).
fn traffic(zk: &ZooKeeper, received: &[f64]) -> Value {
    let members: Vec<Value> = (0..zk.len())
        .map(|i| {
            let cons = zk.four_letter(i, "cons").unwrap_or_default();
            let mut lops = std::collections::BTreeMap::<String, u64>::new();
            let mut timeouts = std::collections::BTreeMap::<String, u64>::new();
            let mut conns = 0;
            for line in cons.lines().filter(|l| l.contains("sid=")) {
                conns += 1;
                let field = |key: &str| {
                    line.split(['(', ',', ')'])
                        .find_map(|f| f.strip_prefix(key))
                        .unwrap_or("?")
                        .to_owned()
                };
                *lops.entry(field("lop=")).or_default() += 1;
                *timeouts.entry(field("to=")).or_default() += 1;
            }
            json!({
                "packets_s": received.get(i).copied().unwrap_or(f64::NAN),
                "connections": conns,
                "lop": lops,
                "to": timeouts,
            })
        })
        .collect();
    json!(members)
}

fn cpu_over(zk: &ZooKeeper, window: Duration) -> Vec<f64> {
    let before: Vec<Option<u64>> = (0..zk.len()).map(|i| cpu_ms(zk, i)).collect();
    let t0 = Instant::now();
    std::thread::sleep(window);
    let secs = t0.elapsed().as_secs_f64();
    (0..zk.len())
        .map(|i| match (before[i], cpu_ms(zk, i)) {
            (Some(a), Some(b)) => (b - a) as f64 / secs,
            _ => f64::NAN,
        })
        .collect()
}

/// User + system CPU time of member `i`'s JVM, in milliseconds.
fn cpu_ms(zk: &ZooKeeper, i: usize) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", zk.pid(i)?)).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Some(ticks * 1000 / hz)
}

/// Waits until `key` (summed over the members when `sum`, else as member 0 has it) reaches
/// `at_least`.
fn wait_for(zk: &ZooKeeper, key: &str, at_least: usize, sum: bool) -> Res<()> {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let seen: i64 = if sum {
            (0..zk.len())
                .map(|i| zk.mntr_value(i, key).unwrap_or(0))
                .sum()
        } else {
            zk.mntr_value(0, key).unwrap_or(0)
        };
        if seen >= at_least as i64 {
            return Ok(());
        }
        if Instant::now() > deadline {
            // Every member's view, to tell lost sessions (fewer connections) from a member
            // behind the others.
            let each: Vec<String> = (0..zk.len())
                .map(|i| {
                    let v = |k| zk.mntr_value(i, k).map_or("?".into(), |v| v.to_string());
                    format!(
                        "member {i}: {key} {}, connections {}",
                        v(key),
                        v("zk_num_alive_connections")
                    )
                })
                .collect();
            return Err(format!(
                "the servers show {key} {seen}, not {at_least} ({})",
                each.join("; ")
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn wait_for_at_most(zk: &ZooKeeper, key: &str, at_most: i64) -> Res<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let seen: i64 = (0..zk.len())
            .map(|i| zk.mntr_value(i, key).unwrap_or(0))
            .sum();
        if seen <= at_most {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("the servers still show {key} {seen}"));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The table: per timing and topology, each implementation's server CPU per 1,000 sessions
/// per second in each phase (every member together; the leader's row on its own).
pub fn print(s9: &Value) {
    let Some(rows) = s9["rows"].as_array() else {
        return;
    };
    println!("\ns9: server CPU, ms per second per 1,000 sessions (idle server's CPU taken off)");
    println!(
        "{:<34} {:>7} {:<8} {:>9} {:>9} {:>9}",
        "servers / timing", "sessions", "impl", "idle", "hold", "wait"
    );
    for r in rows {
        let label = |which: &str| {
            format!(
                "{} T={}s tick={}ms {which}",
                if r["members"] == 1 {
                    "standalone"
                } else {
                    "ensemble"
                },
                r["session_ms"].as_f64().unwrap_or(0.0) / 1e3,
                r["tick_ms"]
            )
        };
        let views: Vec<(String, Option<usize>)> = if r["members"] == 1 {
            vec![(label(""), None)]
        } else {
            vec![
                (label("all"), None),
                (label("leader"), r["leader"].as_u64().map(|l| l as usize)),
            ]
        };
        for (name, member) in views {
            let cell = |phase: &str| {
                per_thousand(r, phase, member)
                    .map(|v| format!("{v:.1}"))
                    .unwrap_or_else(|| "-".into())
            };
            println!(
                "{:<34} {:>7} {:<8} {:>9} {:>9} {:>9}",
                name,
                r["sessions"],
                r["impl"].as_str().unwrap_or(""),
                cell("idle"),
                cell("hold"),
                cell("wait")
            );
        }
    }
}

/// A row's server CPU in `phase`, less the idle server's, per 1,000 sessions: of every member
/// together (`member` None) or of one.
pub fn per_thousand(row: &Value, phase: &str, member: Option<usize>) -> Option<f64> {
    let got = row["measured"]["phases"][phase].as_array()?;
    let base = row["baseline_ms_s"].as_array()?;
    let value = |i: usize| Some(got.get(i)?.as_f64()? - base.get(i)?.as_f64()?);
    let total = match member {
        Some(i) => value(i)?,
        None => (0..got.len()).map(value).sum::<Option<f64>>()?,
    };
    Some(total / (row["sessions"].as_f64()? / 1000.0))
}

/// The zklock worker of scenario 9 (see the module's comment for the phases).
pub async fn zk_worker(args: &Args) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
    raise_fd_limit();
    let servers = args.str("servers");
    let path = args.str("path");
    let n = args.int("sessions", 1000) as usize;
    let offset = args.int("offset", 0) as usize;
    let holder = args.opt("holder").as_deref() == Some("yes");
    let options = zklock::Options::default()
        .session_timeout(Duration::from_millis(args.int("session-ms", 10_000)))
        .server_tick(Duration::from_millis(args.int("tick-ms", 2_000)));
    count_sessions_ended();
    let t0 = Instant::now();
    let mut clients = Vec::with_capacity(n);
    for _ in 0..n {
        clients.push(zklock::Client::connect(&servers, options.clone()).await?);
    }
    let open_s = t0.elapsed().as_secs_f64();
    ready(
        json!({"phase": "idle", "sessions": n, "open_s": open_s, "rss": rss_bytes(),
                 "heartbeats": zklock::support::heartbeats(), "ended": ended()}),
    );
    read_line().await;

    let mut leases = Vec::with_capacity(n);
    for (i, c) in clients.iter().enumerate() {
        leases.push(
            c.mutex(&format!("{path}/h-{}", offset + i))?
                .acquire()
                .await?,
        );
    }
    ready(json!({"phase": "hold", "leases": n, "rss": rss_bytes(),
                 "heartbeats": zklock::support::heartbeats(), "ended": ended()}));
    read_line().await;
    for l in leases {
        l.release().await?;
    }

    let wait_path = format!("{path}/wait");
    let mut held = None;
    let mut waiting = Vec::new();
    for (i, c) in clients.iter().enumerate() {
        let mutex = c.mutex(&wait_path)?;
        if holder && i == 0 {
            held = Some(mutex.acquire().await?);
        } else {
            waiting.push(mutex.start_acquire(zklock::Owner::SHARED, zklock::Wait::Forever));
        }
    }
    ready(
        json!({"phase": "wait", "waiters": waiting.len(), "rss": rss_bytes(),
                 "heartbeats": zklock::support::heartbeats(), "ended": ended()}),
    );
    read_line().await;
    let t1 = Instant::now();
    drop(waiting);
    drop(held);
    for c in clients {
        c.close().await;
    }
    Ok(
        json!({"close_s": t1.elapsed().as_secs_f64(), "heartbeats": zklock::support::heartbeats(), "ended": ended()}),
    )
}

/// Sessions this worker's process saw end, by the core's `session` warnings: a session the
/// lifeline gave up or the server expired is a session the servers' figures no longer count, so
/// the phases report how many ended and the first few reasons go to stderr.
static ENDED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn ended() -> u64 {
    ENDED.load(std::sync::atomic::Ordering::Relaxed)
}

fn count_sessions_ended() {
    let sink = |r: &zklock::support::LogRecord| {
        let text = r.message.as_str();
        let what = r
            .fields
            .iter()
            .find(|(k, _)| *k == "event")
            .map(|(_, v)| v.as_str());
        if r.event == "session" && matches!(what, Some("expired" | "ended")) {
            let n = ENDED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if n < 3 {
                eprintln!("s9 worker: a session ended: {text}");
            }
        }
    };
    zklock::support::set_log_sink(Some((
        zklock::support::LogLevel::Warn,
        std::sync::Arc::new(sink),
    )));
}

fn ready(v: Value) {
    println!("ready {v}");
}

async fn read_line() {
    let _ = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::stdin().lock(), &mut line).ok();
    })
    .await;
}

/// Thousands of sessions need as many sockets: the soft limit of open files goes up to the
/// hard one.
fn raise_fd_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}
