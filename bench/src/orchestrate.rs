//! `zkbench orchestrate`: starts ZooKeeper through the harness (once with forceSync=no, once
//! with the default fsync), runs every scenario of issue 8 for every implementation side by
//! side, prints the table and the targets, and writes the JSON.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use zklock_testkit::{Config, ZooKeeper};

use crate::common::{mono_ns, percentile, Args};

type Res<T> = Result<T, String>;

/// One implementation under test: how to start its worker and what it can run.
#[derive(Clone)]
pub struct Impl {
    pub key: String,
    pub label: String,
    pub cmd: Vec<String>,
    pub scenarios: Vec<&'static str>,
    /// Seconds its process needs before it can start measuring (the JVM).
    pub startup: f64,
    pub warmup: f64,
}

pub(crate) struct Proc {
    child: Child,
    out: BufReader<ChildStdout>,
    stdin: Option<ChildStdin>,
    label: String,
    killed: Arc<AtomicBool>,
    /// The worker's pidfd: the watchdogs signal through it, never by pid.
    pidfd: Arc<Option<OwnedFd>>,
}

/// A pidfd for `pid` (Linux 5.3+), or None where the kernel has none.
fn pidfd_open(pid: i32) -> Option<OwnedFd> {
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// SIGKILL through a pidfd. A watchdog fires long after its worker may have been reaped, and
/// by then its pid may name another process (pids wrap quickly while a peer's JVMs start tens
/// of thousands of threads): a pidfd of a reaped process only says ESRCH. Without a pidfd the
/// watchdog does nothing.
fn kill_through(pidfd: &Option<OwnedFd>) {
    use std::os::fd::AsRawFd;
    if let Some(fd) = pidfd {
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                fd.as_raw_fd(),
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
    }
}

impl Proc {
    pub(crate) fn spawn(imp: &Impl, args: &[String], limit: Duration) -> Res<Proc> {
        let mut cmd = Command::new(&imp.cmd[0]);
        cmd.args(&imp.cmd[1..])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", imp.cmd[0]))?;
        let out = BufReader::new(child.stdout.take().unwrap());
        let stdin = child.stdin.take();
        // A watchdog: a worker that hangs is killed and reported, the run goes on.
        let pidfd = Arc::new(pidfd_open(child.id() as i32));
        let killed = Arc::new(AtomicBool::new(false));
        let (k, fd) = (killed.clone(), pidfd.clone());
        std::thread::spawn(move || {
            std::thread::sleep(limit);
            k.store(true, Ordering::SeqCst);
            kill_through(&fd);
        });
        Ok(Proc {
            child,
            out,
            stdin,
            label: imp.label.clone(),
            killed,
            pidfd,
        })
    }

    /// The next `ready ...` or JSON line.
    pub(crate) fn next(&mut self) -> Res<Value> {
        loop {
            let mut line = String::new();
            let n = self.out.read_line(&mut line).map_err(|e| e.to_string())?;
            if n == 0 {
                let why = if self.killed.load(Ordering::SeqCst) {
                    "timed out (killed)"
                } else {
                    "exited without a result"
                };
                return Err(format!("{}: worker {why}", self.label));
            }
            let line = line.trim();
            let json_text = line.strip_prefix("ready ").unwrap_or(line);
            if json_text.starts_with('{') {
                return serde_json::from_str(json_text)
                    .map_err(|e| format!("{}: bad output {line:?}: {e}", self.label));
            }
        }
    }

    pub(crate) fn go(&mut self) {
        if let Some(s) = self.stdin.as_mut() {
            let _ = writeln!(s, "go");
            let _ = s.flush();
        }
    }

    pub(crate) fn finish(mut self) -> Res<Value> {
        self.go();
        let v = self.next();
        self.stdin.take();
        // Kill whatever is left (a worker that printed its result may still be closing).
        let killer = std::thread::spawn({
            let fd = self.pidfd.clone();
            move || {
                std::thread::sleep(Duration::from_secs(5));
                kill_through(&fd);
            }
        });
        let _ = self.child.wait();
        drop(killer);
        v
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Run<'a> {
    zk: &'a ZooKeeper,
    servers: String,
    secs: f64,
    mode: &'static str,
    seq: std::cell::Cell<u32>,
    warm_ms: u64,
    slot_ms: u64,
    rounds: u64,
}

impl Run<'_> {
    fn path(&self, scenario: &str, imp: &Impl) -> String {
        self.seq.set(self.seq.get() + 1);
        format!(
            "/bench/{}/{scenario}/{}-{}",
            self.mode,
            imp.key,
            self.seq.get()
        )
    }

    fn base_args(&self, scenario: &str, imp: &Impl, path: &str) -> Vec<String> {
        vec![
            "--scenario".into(),
            scenario.into(),
            "--servers".into(),
            self.servers.clone(),
            "--path".into(),
            path.into(),
            "--warmup".into(),
            imp.warmup.to_string(),
            "--secs".into(),
            self.secs.to_string(),
        ]
    }

    fn mntr(&self, key: &str) -> i64 {
        self.zk.mntr_value(0, key).unwrap_or(-1)
    }

    /// Scenarios 1 and 4: every implementation's worker at once, each measuring in its own time
    /// slot of every round (see `Slots`), so that all figures share the machine's conditions.
    fn slotted(&self, scenario: &str, impls: &[&Impl], extra: &[&str]) -> Vec<Res<Value>> {
        let startup = impls.iter().map(|i| i.startup).fold(0.0, f64::max) + 1.0;
        let start = mono_ns() + (startup * 1e9) as u64;
        let n = impls.len();
        let total = n as f64 * (self.warm_ms as f64 / 1000.0)
            + self.rounds as f64 * n as f64 * (self.slot_ms as f64 / 1000.0);
        let limit = Duration::from_secs_f64(startup + total + 60.0);
        let procs: Vec<Res<Proc>> = impls
            .iter()
            .enumerate()
            .map(|(i, imp)| {
                let path = self.path(scenario, imp);
                let mut args = self.base_args(scenario, imp, &path);
                args.extend(extra.iter().map(|s| s.to_string()));
                args.extend([
                    "--start-at".into(),
                    start.to_string(),
                    "--warm-ms".into(),
                    self.warm_ms.to_string(),
                    "--slot-ms".into(),
                    self.slot_ms.to_string(),
                    "--nslots".into(),
                    n.to_string(),
                    "--my-slot".into(),
                    i.to_string(),
                    "--rounds".into(),
                    self.rounds.to_string(),
                ]);
                Proc::spawn(imp, &args, limit)
            })
            .collect();
        procs
            .into_iter()
            .map(|p| p.and_then(|p| p.finish()))
            .collect()
    }

    /// Scenario 2: ready (held) → server counters → go → ready (result) → counters → go.
    fn reentrant(&self, imp: &Impl, extra: &[&str]) -> Res<Value> {
        let path = self.path("s2", imp);
        let mut args = self.base_args("s2", imp, &path);
        args.extend(extra.iter().map(|s| s.to_string()));
        let limit = Duration::from_secs_f64(imp.startup + imp.warmup + self.secs + 60.0);
        let mut p = Proc::spawn(imp, &args, limit)?;
        p.next()?;
        let before = self.mntr("zk_packets_received");
        p.go();
        let mut result = p.next()?;
        let after = self.mntr("zk_packets_received");
        p.finish().ok();
        // Session pings are packets too: ZooKeeper clients ping every third of the session
        // timeout when idle, so a few per window are expected and are no lock request.
        result["server_packets_in_window"] = json!(after - before);
        result["window_s"] = json!(imp.warmup + self.secs);
        Ok(result)
    }

    /// Requests per cycle: ready → server packet counter → go → ready (`{"cycles": n}`) →
    /// counter → go. Session pings land in the window too (a few per second at most).
    fn requests(&self, imp: &Impl, scenario: &str, extra: &[&str]) -> Res<Value> {
        let path = self.path(scenario, imp);
        let mut args = self.base_args(scenario, imp, &path);
        args.extend(extra.iter().map(|s| s.to_string()));
        let limit = Duration::from_secs_f64(imp.startup + imp.warmup + self.secs + 60.0);
        let mut p = Proc::spawn(imp, &args, limit)?;
        p.next()?;
        let before = self.mntr("zk_packets_received");
        p.go();
        let mut result = p.next()?;
        let after = self.mntr("zk_packets_received");
        p.finish().ok();
        let cycles = result["cycles"].as_f64().unwrap_or(0.0).max(1.0);
        result["requests_per_cycle"] = json!((after - before) as f64 / cycles);
        Ok(result)
    }

    /// Scenario 3 (and 8, the election's handover): `procs` processes contend on one lock (run
    /// for leader on one path) from the same start instant.
    fn contended(&self, scenario: &str, imp: &Impl, procs: usize) -> Res<Value> {
        let path = self.path(scenario, imp);
        let start = mono_ns() + ((imp.startup + 1.0) * 1e9) as u64;
        let limit = Duration::from_secs_f64(imp.startup + imp.warmup + self.secs + 90.0);
        let mut ps = Vec::new();
        for _ in 0..procs {
            let mut args = self.base_args(scenario, imp, &path);
            args.extend(["--start-at".into(), start.to_string()]);
            ps.push(Proc::spawn(imp, &args, limit)?);
        }
        let mut events: Vec<(u64, u64)> = Vec::new();
        let mut cpu_s = 0.0;
        for p in ps {
            let v = p.finish()?;
            events.extend(events_of(&v));
            cpu_s += v["cpu_s"].as_f64().unwrap_or(f64::NAN);
        }
        let from = start + (imp.warmup * 1e9) as u64;
        let to = from + (self.secs * 1e9) as u64;
        let (acquisitions, mut h, overlaps) = handoffs(events, from, to);
        Ok(json!({
            "processes": procs,
            "acquisitions": acquisitions,
            "ops_s": acquisitions as f64 / self.secs,
            "handoff_p50_us": percentile(&mut h, 50.0) as f64 / 1000.0,
            "handoff_p99_us": percentile(&mut h, 99.0) as f64 / 1000.0,
            "overlaps": overlaps,
            // CPU of all the processes over the measured window, per acquisition.
            "cpu_s": cpu_s,
            "cpu_us_per_op": cpu_s * 1e6 / acquisitions.max(1) as f64,
        }))
    }

    /// Bytes the server has sent on its open connections (tcp_info of its sockets, `ss`).
    fn server_bytes_sent(&self) -> i64 {
        let port = self
            .servers
            .split(',')
            .next()
            .and_then(|s| s.rsplit(':').next())
            .unwrap_or("0")
            .to_owned();
        let out = Command::new("ss")
            .args([
                "-tinH",
                "state",
                "established",
                &format!("( sport = :{port} )"),
            ])
            .output();
        let Ok(out) = out else { return -1 };
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter_map(|w| w.strip_prefix("bytes_sent:"))
            .filter_map(|n| n.parse::<i64>().ok())
            .sum()
    }

    /// The cost curve at one depth: a holder and `depth` waiters cycling on one lock (see the
    /// workers' `curve`): try-acquire latency at that depth, handoff latency, and the server's
    /// requests received and bytes sent per handoff over the cycling window.
    fn curve(&self, imp: &Impl, depth: usize, secs: f64) -> Res<Value> {
        let path = self.path("curve", imp);
        let mut args = self.base_args("curve", imp, &path);
        args.extend(["--depth".into(), depth.to_string()]);
        if let Some(i) = args.iter().position(|a| a == "--secs") {
            args[i + 1] = secs.to_string();
        }
        let mut p = Proc::spawn(imp, &args, Duration::from_secs(300))?;
        let queued = p.next()?;
        let (pk0, b0) = (self.mntr("zk_packets_received"), self.server_bytes_sent());
        p.go();
        let result = p.next()?;
        let (pk1, b1) = (self.mntr("zk_packets_received"), self.server_bytes_sent());
        p.finish().ok();
        let (n, mut h, overlaps) = handoffs(events_of(&result), 0, u64::MAX);
        let per = |x: f64| x / n.max(1) as f64;
        Ok(json!({
            "depth": depth,
            "try_p50_us": queued["try_p50_us"],
            "handoffs": n,
            "handoffs_s": n as f64 / result["window_s"].as_f64().unwrap_or(secs),
            "handoff_p50_us": percentile(&mut h, 50.0) as f64 / 1000.0,
            "handoff_p99_us": percentile(&mut h, 99.0) as f64 / 1000.0,
            "requests_per_handoff": per((pk1 - pk0) as f64), // pings included (few)
            "bytes_per_handoff": per((b1 - b0) as f64),
            "cpu_us_per_handoff": per(result["cpu_s"].as_f64().unwrap_or(f64::NAN) * 1e6),
            "overlaps": overlaps,
            "rss_while_queued": queued["rss"],
        }))
    }

    fn notifications(&self) -> i64 {
        ["deleted", "children", "changed", "created"]
            .iter()
            .map(|k| self.mntr(&format!("zk_sum_node_{k}_watch_count")).max(0))
            .sum()
    }

    /// Scenario 5: watches while `waiters` wait, then notifications per release.
    fn herd(&self, imp: &Impl, waiters: usize, sessions: usize) -> Res<Value> {
        let path = self.path("s5", imp);
        let mut args = self.base_args("s5", imp, &path);
        args.extend([
            "--waiters".into(),
            waiters.to_string(),
            "--sessions".into(),
            sessions.to_string(),
        ]);
        let mut p = Proc::spawn(imp, &args, Duration::from_secs(240))?;
        let queued = p.next()?;
        let watch_count = self.mntr("zk_watch_count");
        let wchs = self.zk.four_letter(0, "wchs").unwrap_or_default();
        let (n0, pk0) = (self.notifications(), self.mntr("zk_packets_received"));
        p.go();
        let result = p.next()?;
        let (n1, pk1) = (self.notifications(), self.mntr("zk_packets_received"));
        p.finish().ok();
        let releases = result["releases"].as_f64().unwrap_or(1.0);
        Ok(json!({
            "waiters": waiters,
            "sessions": sessions,
            "watch_count_while_queued": watch_count,
            "wchs": wchs.trim().replace('\n', "; "),
            "notifications": n1 - n0,
            "notifications_per_release": (n1 - n0) as f64 / releases,
            "requests_per_release": (pk1 - pk0) as f64 / releases, // pings included
            "handoffs_s": result["handoffs_s"],
            "rss_while_queued": queued["rss"],
            "worker": result,
        }))
    }

    /// Scenario 6: RSS of a process holding (or waiting on) `locks` locks.
    fn memory(&self, imp: &Impl, locks: usize, wait: bool) -> Res<Value> {
        let path = self.path("s6", imp);
        let mut args = self.base_args("s6", imp, &path);
        args.extend(["--locks".into(), locks.to_string()]);
        let limit = Duration::from_secs(300);
        if !wait {
            return Proc::spawn(imp, &args, limit)?.finish();
        }
        let mut holder = Proc::spawn(imp, &args, limit)?;
        holder.next()?;
        args.extend(["--mode".into(), "wait".into()]);
        let waiter = Proc::spawn(imp, &args, limit)?;
        let v = waiter.finish();
        holder.finish().ok();
        v
    }
}

/// The (acquired, releasing) pairs of a worker's `events`.
fn events_of(v: &Value) -> Vec<(u64, u64)> {
    v["events"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| (e[0].as_u64().unwrap_or(0), e[1].as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default()
}

/// Acquisitions in [from, to] and the handoff latencies: from a holder's release call to the
/// next holder's acquire returning (events of all processes merged, one clock); and overlaps.
fn handoffs(mut events: Vec<(u64, u64)>, from: u64, to: u64) -> (usize, Vec<u64>, usize) {
    events.sort();
    let mut handoffs = Vec::new();
    let mut acquisitions = 0;
    let mut overlaps = 0;
    for w in events.windows(2) {
        let ((_, r0), (a1, _)) = (w[0], w[1]);
        if a1 < from || a1 > to {
            continue;
        }
        acquisitions += 1;
        if a1 < r0 {
            overlaps += 1; // would be a broken lock (or clocks that disagree)
        } else {
            handoffs.push(a1 - r0);
        }
    }
    (acquisitions, handoffs, overlaps)
}

fn print_table(title: &str, header: &[&str], rows: &[(String, Vec<String>)]) {
    if rows.is_empty() {
        return; // a scenario this run did not include
    }
    println!("\n  {title}");
    print!("    {:<34}", "");
    for h in header {
        print!("{h:>14}");
    }
    println!();
    for (label, cells) in rows {
        print!("    {label:<34}");
        for c in cells {
            print!("{c:>14}");
        }
        println!();
    }
}

fn f(v: &Value, key: &str, digits: usize) -> String {
    match v.get(key).and_then(Value::as_f64) {
        Some(x) => format!("{x:.digits$}"),
        None => match v.get("error") {
            Some(_) => "error".into(),
            None => match v.get("skipped") {
                Some(_) => "n/a".into(),
                None => "-".into(),
            },
        },
    }
}

/// The median over rounds of the per-round ratio a/b of two slotted workers (their slots are
/// adjacent in time, so each ratio is taken under the same machine conditions).
fn round_ratio(res: &Value, s: &str, a: &str, b: &str) -> Option<f64> {
    let ra = res.get(s)?.get(a)?.get("rounds")?.as_array()?;
    let rb = res.get(s)?.get(b)?.get("rounds")?.as_array()?;
    let mut ratios: Vec<f64> = ra
        .iter()
        .zip(rb)
        .filter_map(|(x, y)| Some(x.as_f64()? / y.as_f64().filter(|y| *y > 0.0)?))
        .collect();
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(|x, y| x.total_cmp(y));
    let n = ratios.len();
    Some(if n % 2 == 1 {
        ratios[n / 2]
    } else {
        (ratios[n / 2 - 1] + ratios[n / 2]) / 2.0
    })
}

fn num(v: &Value, path: &[&str]) -> Option<f64> {
    let mut cur = v;
    for p in path {
        cur = cur.get(*p)?;
    }
    cur.as_f64()
}

pub fn run(args: &Args, impls: Vec<Impl>, skipped: Vec<(String, String)>) -> Res<Value> {
    let secs = args.num("secs", 2.0);
    let modes: Vec<(&'static str, bool)> = match args.opt("modes").as_deref() {
        Some("nosync") => vec![("nosync", false)],
        Some("fsync") => vec![("fsync", true)],
        _ => vec![("nosync", false), ("fsync", true)],
    };
    let only: Option<Vec<String>> = args
        .opt("scenarios")
        .map(|s| s.split(',').map(str::to_owned).collect());
    let wants = |s: &str| only.as_ref().is_none_or(|o| o.iter().any(|x| x == s));
    let waiters = args.int("waiters", 1000) as usize;
    let mem_locks = args.int("mem-locks", 10_000) as usize;
    let mut all = serde_json::Map::new();
    let load_before = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load_before = load_before.trim();
    for (mode, force_sync) in modes {
        println!(
            "\n== ZooKeeper 3.8 standalone, forceSync={} ==",
            if force_sync {
                "yes (default fsync)"
            } else {
                "no"
            }
        );
        let tls = impls.iter().any(|i| i.key == "zklock-tls");
        let zk = ZooKeeper::start(
            1,
            &Config {
                force_sync,
                tick_ms: 200,
                secure: tls,
                ..Config::default()
            },
        )?;
        if tls {
            // For the `zklock-tls` workers (`--tls yes`), which inherit the environment.
            std::env::set_var(
                "ZKBENCH_TLS_SERVERS",
                zk.secure_address(0).unwrap_or_default(),
            );
            std::env::set_var("ZKBENCH_TLS_CA", zk.tls_ca().unwrap_or_default());
        }
        let run = Run {
            servers: zk.connect_string(),
            zk: &zk,
            secs,
            mode,
            seq: std::cell::Cell::new(0),
            warm_ms: args.int("warm-ms", 1500),
            slot_ms: args.int("slot-ms", 500),
            rounds: args.int("rounds", 7),
        };
        let mut res = serde_json::Map::new();
        let record =
            |res: &mut serde_json::Map<String, Value>, s: &str, imp: &Impl, v: Res<Value>| {
                let v = v.unwrap_or_else(|e| {
                    eprintln!("  ! {s} {}: {e}", imp.label);
                    json!({ "error": e })
                });
                eprintln!("  . {s} {:<28} {}", imp.label, v);
                res.entry(s.to_owned())
                    .or_insert_with(|| json!({}))
                    .as_object_mut()
                    .unwrap()
                    .insert(imp.key.clone(), v);
            };
        let has = |imp: &Impl, s: &str| imp.scenarios.contains(&s);
        if wants("s1") {
            let these: Vec<&Impl> = impls.iter().filter(|i| has(i, "s1")).collect();
            for (imp, v) in these.iter().zip(run.slotted("s1", &these, &[])) {
                record(&mut res, "s1", imp, v);
            }
        }
        if wants("s2") {
            for imp in impls.iter().filter(|i| has(i, "s2")) {
                let v = run.reentrant(imp, &[]);
                record(&mut res, "s2", imp, v);
            }
        }
        if wants("s3") {
            for imp in impls.iter().filter(|i| has(i, "s3")) {
                let v = run.contended("s3", imp, 4);
                record(&mut res, "s3", imp, v);
            }
        }
        if wants("s8") {
            for imp in impls.iter().filter(|i| has(i, "s8")) {
                let v = run.contended("s8", imp, 3);
                record(&mut res, "s8", imp, v);
            }
        }
        if wants("s4") {
            let these: Vec<&Impl> = impls.iter().filter(|i| has(i, "s4")).collect();
            for (imp, v) in these
                .iter()
                .zip(run.slotted("s4", &these, &["--locks", "64"]))
            {
                record(&mut res, "s4", imp, v);
            }
        }
        // Scenario 5 counts watches and notifications, scenario 6 bytes: neither depends on
        // how the server syncs, so both run once, without fsync (it saves two minutes).
        if wants("s5") && !force_sync {
            for imp in impls.iter().filter(|i| has(i, "s5")) {
                let v = run.herd(imp, waiters, waiters);
                record(&mut res, "s5", imp, v);
            }
        }
        if wants("s6") && !force_sync {
            for imp in impls.iter().filter(|i| has(i, "s6")) {
                let v = run.memory(imp, mem_locks, false);
                record(&mut res, "s6", imp, v);
                if has(imp, "s6wait") {
                    let mut w = imp.clone();
                    w.key = format!("{}-wait", imp.key);
                    w.label = format!("{} (waiting)", imp.label);
                    let v = run.memory(imp, mem_locks, true);
                    record(&mut res, "s6", &w, v);
                }
            }
        }
        // Scenario 7: a semaphore of 4 (Curator's InterProcessSemaphoreV2 layout), uncontended
        // (one client) and with 8 contending clients, slotted like scenario 1; then each
        // implementation's ZooKeeper requests per uncontended cycle, counted by the server.
        if wants("s7") {
            let these: Vec<&Impl> = impls.iter().filter(|i| has(i, "s7")).collect();
            for (key, contenders) in [("s7", "1"), ("s7c", "8")] {
                let extra = ["--leases", "4", "--contenders", contenders];
                for (imp, v) in these.iter().zip(run.slotted("s7", &these, &extra)) {
                    record(&mut res, key, imp, v);
                }
            }
            for imp in &these {
                let v = run.requests(imp, "s7r", &["--leases", "4", "--cycles", "300"]);
                record(&mut res, "s7r", imp, v);
            }
        }
        // The cost curve (issue 17): growth with the queue's depth, also once, without fsync
        // (what grows is the listing each waiter reads, not the sync).
        if wants("curve") && !force_sync {
            let depths: Vec<usize> = args
                .opt("curve-depths")
                .unwrap_or_else(|| "1,10,100,1000,5000".into())
                .split(',')
                .filter_map(|d| d.trim().parse().ok())
                .collect();
            // kazoo blocks one Python thread per waiter: 5,000 of them do not fit the time.
            let kazoo_max = args.int("curve-kazoo-max", 1000) as usize;
            let curve_secs = args.num("curve-secs", 1.5);
            for imp in impls.iter().filter(|i| has(i, "curve")) {
                let mut points = Vec::new();
                for &d in depths
                    .iter()
                    .filter(|d| imp.key != "kazoo" || **d <= kazoo_max)
                {
                    let v = run.curve(imp, d, curve_secs).unwrap_or_else(|e| {
                        eprintln!("  ! curve {} depth {d}: {e}", imp.label);
                        json!({ "depth": d, "error": e })
                    });
                    eprintln!("  . curve {:<28} {}", imp.label, v);
                    points.push(v);
                }
                res.entry("curve".to_owned())
                    .or_insert_with(|| json!({}))
                    .as_object_mut()
                    .unwrap()
                    .insert(imp.key.clone(), Value::Array(points));
            }
        }
        res.insert(
            "server".to_owned(),
            json!({"zookeeper": "3.8", "mode": "standalone", "servers": 1,
                   "force_sync": force_sync, "loopback": true}),
        );
        all.insert(mode.to_owned(), Value::Object(res));
        drop(zk);
    }
    // Scenario 9 starts servers of its own (standalone and ensemble, two timings).
    let s9 = if wants("s9") {
        let s9 = crate::s9::run(args, &impls)?;
        crate::s9::print(&s9);
        Some(s9)
    } else {
        None
    };
    let results = json!({
        "date": chrono_now(),
        "machine": {"cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
                    "cpus_online": unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) },
                    "cpu_model": cpu_model(),
                    "load_before": load_before,
                    "load_after": std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()},
        "secs": secs,
        "implementations": impls.iter().map(|i| json!({"key": i.key, "label": i.label})).collect::<Vec<_>>(),
        "skipped": skipped.iter().map(|(k, why)| json!({"key": k, "why": why})).collect::<Vec<_>>(),
        "modes": Value::Object(all),
    });
    let targets = report(&results, &impls, &skipped);
    let mut results = results;
    results["targets"] = targets;
    if let Some(s9) = s9 {
        results["s9"] = s9;
    }
    Ok(results)
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_default()
}

fn chrono_now() -> String {
    let out = Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    out.unwrap_or_default()
}

/// Prints the tables and the targets of issue 8; returns the targets as JSON.
fn report(results: &Value, impls: &[Impl], skipped: &[(String, String)]) -> Value {
    let modes = results["modes"].as_object().cloned().unwrap_or_default();
    let mut targets = Vec::new();
    for (mode, res) in &modes {
        println!(
            "\n==== results, forceSync={} ====",
            if mode == "fsync" {
                "yes (default)"
            } else {
                "no"
            }
        );
        let rows = |s: &str, cols: &[(&str, usize)]| -> Vec<(String, Vec<String>)> {
            impls
                .iter()
                .flat_map(|i| {
                    let mut keys = vec![(i.key.clone(), i.label.clone())];
                    keys.push((format!("{}-wait", i.key), format!("{} (waiting)", i.label)));
                    keys
                })
                .filter_map(|(k, label)| {
                    let v = res.get(s)?.get(&k)?;
                    Some((label, cols.iter().map(|(c, d)| f(v, c, *d)).collect()))
                })
                .collect()
        };
        print_table(
            "1. uncontended acquire+release, one client",
            &["cycles/s", "p50 µs", "p99 µs", "cpu µs/op"],
            &rows(
                "s1",
                &[
                    ("ops_s", 0),
                    ("p50_us", 0),
                    ("p99_us", 0),
                    ("cpu_us_per_op", 1),
                ],
            ),
        );
        print_table(
            "2. re-entrant acquire+release while held",
            &[
                "ns/op",
                "cpu ns/op",
                "acquire ns",
                "release ns",
                "server pkts",
            ],
            &rows(
                "s2",
                &[
                    ("ns_per_op", 0),
                    ("cpu_ns_per_op", 0),
                    ("acquire_ns", 0),
                    ("release_ns", 0),
                    ("server_packets_in_window", 0),
                ],
            ),
        );
        print_table(
            "3. contended, 4 processes on one lock",
            &["acq/s", "handoff p50", "handoff p99", "cpu µs/op"],
            &rows(
                "s3",
                &[
                    ("ops_s", 0),
                    ("handoff_p50_us", 0),
                    ("handoff_p99_us", 0),
                    ("cpu_us_per_op", 1),
                ],
            ),
        );
        print_table(
            "8. election handover, 3 participants on one path (latch; kazoo's Election)",
            &["leads/s", "handover p50", "handover p99", "cpu µs/lead"],
            &rows(
                "s8",
                &[
                    ("ops_s", 0),
                    ("handoff_p50_us", 0),
                    ("handoff_p99_us", 0),
                    ("cpu_us_per_op", 1),
                ],
            ),
        );
        print_table(
            "4. 64 locks over one client/session",
            &["cycles/s", "p50 µs", "p99 µs", "cpu µs/op"],
            &rows(
                "s4",
                &[
                    ("ops_s", 0),
                    ("p50_us", 0),
                    ("p99_us", 0),
                    ("cpu_us_per_op", 1),
                ],
            ),
        );
        if res.get("s5").is_some() {
            print_table(
                "5. 1,000 waiters on one lock",
                &["watches", "notif/rel", "pkts/rel", "handoffs/s"],
                &rows(
                    "s5",
                    &[
                        ("watch_count_while_queued", 0),
                        ("notifications_per_release", 2),
                        ("requests_per_release", 2),
                        ("handoffs_s", 0),
                    ],
                ),
            );
        }
        if res.get("s6").is_some() {
            print_table(
                "6. memory, 10,000 locks in one process",
                &["bytes/lock", "RSS before", "RSS after"],
                &rows(
                    "s6",
                    &[("bytes_per_lock", 0), ("rss_before", 0), ("rss_after", 0)],
                ),
            );
        }
        if res.get("s7").is_some() {
            print_table(
                "7. semaphore of 4, acquire+release: one client / 8 contending clients",
                &[
                    "cycles/s",
                    "p50 µs",
                    "8 clients/s",
                    "8 p50 µs",
                    "requests/cycle",
                ],
                &impls
                    .iter()
                    .filter_map(|i| {
                        let one = res.get("s7")?.get(&i.key)?;
                        let eight = res.get("s7c").and_then(|r| r.get(&i.key));
                        let reqs = res.get("s7r").and_then(|r| r.get(&i.key));
                        let cell = |v: Option<&Value>, c: &str, d: usize| {
                            v.map_or_else(|| "-".to_owned(), |v| f(v, c, d))
                        };
                        Some((
                            i.label.clone(),
                            vec![
                                f(one, "ops_s", 0),
                                f(one, "p50_us", 0),
                                cell(eight, "ops_s", 0),
                                cell(eight, "p50_us", 0),
                                cell(reqs, "requests_per_cycle", 1),
                            ],
                        ))
                    })
                    .collect::<Vec<_>>(),
            );
        }
        if let Some(curve) = res.get("curve").and_then(Value::as_object) {
            let mut rows = Vec::new();
            for (k, points) in curve {
                let label = impls
                    .iter()
                    .find(|i| &i.key == k)
                    .map(|i| i.label.clone())
                    .unwrap_or_else(|| k.clone());
                for p in points.as_array().into_iter().flatten() {
                    let cols = [
                        ("try_p50_us", 0),
                        ("handoff_p50_us", 0),
                        ("handoff_p99_us", 0),
                        ("requests_per_handoff", 1),
                        ("bytes_per_handoff", 0),
                        ("cpu_us_per_handoff", 0),
                    ];
                    rows.push((
                        format!("{label} @{}", p["depth"]),
                        cols.iter().map(|(c, d)| f(p, c, *d)).collect(),
                    ));
                }
            }
            print_table(
                "cost curve: waiters queued on one lock (@depth), all cycling",
                &[
                    "try p50 µs",
                    "handoff p50",
                    "handoff p99",
                    "req/handoff",
                    "bytes/handoff",
                    "cpu µs/handoff",
                ],
                &rows,
            );
        }
        // Targets.
        let g = |s: &str, k: &str, field: &str| num(res, &[s, k, field]);
        let mut t = |name: &str, measured: Option<f64>, target: &str, holds: Option<bool>| {
            targets.push(json!({"mode": mode, "target": name, "measured": measured,
                                "goal": target, "holds": holds}));
        };
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b),
            _ => None,
        };
        let rr = |s: &str, a: &str, b: &str| round_ratio(res, s, a, b);
        let r = rr("s1", "zklock", "curator");
        t(
            "s1 Rust / Curator (cycles/s)",
            r,
            ">= 2.0",
            r.map(|r| r >= 2.0),
        );
        let r = rr("s1", "zklock", "raw");
        t(
            "s1 Rust / raw create+delete limit",
            r,
            ">= 0.9",
            r.map(|r| r >= 0.9),
        );
        let r = rr("s1", "zklock-blocking", "raw");
        t("s1 blocking_* / raw", r, ">= 0.9", r.map(|r| r >= 0.9));
        let r = rr("s1", "python", "kazoo");
        t("s1 Python face / kazoo", r, ">= 2.0", r.map(|r| r >= 2.0));
        let r = rr("s1", "node", "zklock");
        t("s1 Node face / Rust", r, ">= 0.85", r.map(|r| r >= 0.85));
        let r = rr("s1", "c", "zklock");
        t("s1 C face / Rust", r, ">= 0.8", r.map(|r| r >= 0.8));
        // Not targets: where the gap to the raw limit comes from (same rounds).
        for v in ["raw-watch", "raw-hop", "raw-watch-hop", "curator"] {
            let r = rr("s1", v, "raw");
            t(&format!("s1 {v} / raw (diagnostic)"), r, "-", None);
        }
        let ns = g("s2", "zklock", "ns_per_op");
        t(
            "s2 Rust re-entrant ns/op",
            ns,
            "<= 50",
            ns.map(|n| n <= 50.0),
        );
        let ns = g("s2", "python", "ns_per_op");
        t(
            "s2 Python re-entrant ns/op",
            ns,
            "<= 1500",
            ns.map(|n| n <= 1500.0),
        );
        let rt = g("s2", "zklock", "acquire_round_trips");
        t(
            "s2 Rust acquire round trips while re-entering",
            rt,
            "== 0",
            rt.map(|n| n == 0.0),
        );
        let r = ratio(
            g("s3", "zklock", "handoff_p50_us"),
            g("s3", "curator", "handoff_p50_us"),
        );
        t(
            "s3 median handoff Rust / Curator",
            r,
            "<= 0.7",
            r.map(|r| r <= 0.7),
        );
        let r = ratio(g("s3", "zklock", "ops_s"), g("s3", "curator", "ops_s"));
        t(
            "s3 throughput Rust / Curator",
            r,
            ">= 1.3",
            r.map(|r| r >= 1.3),
        );
        let r = rr("s4", "zklock", "curator");
        t(
            "s4 64 locks Rust / Curator (64 threads)",
            r,
            ">= 2.5",
            r.map(|r| r >= 2.5),
        );
        if res.get("s7").is_some() {
            let r = rr("s7", "zklock", "curator");
            t(
                "s7 semaphore(4) uncontended Rust / Curator",
                r,
                ">= 1.5",
                r.map(|r| r >= 1.5),
            );
            let r = rr("s7c", "zklock", "curator");
            t(
                "s7 semaphore(4), 8 contenders, Rust / Curator",
                r,
                ">= 1.5",
                r.map(|r| r >= 1.5),
            );
        }
        if res.get("s5").is_some() || res.get("s6").is_some() {
            let n = g("s5", "zklock", "notifications_per_release");
            t(
                "s5 notifications per release (zklock)",
                n,
                "== 1",
                n.map(|n| (n - 1.0).abs() < 0.01),
            );
            let b = g("s6", "zklock", "bytes_per_lock");
            t(
                "s6 bytes per held lock (core)",
                b,
                "<= 2048",
                b.map(|b| b <= 2048.0),
            );
            let b = g("s6", "zklock-wait", "bytes_per_lock");
            t(
                "s6 bytes per waiting lock (core)",
                b,
                "<= 2048",
                b.map(|b| b <= 2048.0),
            );
            let b = g("s6", "python", "bytes_per_lock");
            t(
                "s6 bytes per held lock (Python face)",
                b,
                "<= 2048",
                b.map(|b| b <= 2048.0),
            );
            let m = g("s5", "zklock", "rss_while_queued").map(|b| b / 1048576.0);
            t(
                "s5 MB of 1,000 sessions in one process",
                m,
                "<= 64",
                m.map(|m| m <= 64.0),
            );
        }
        let r = rr("s4", "zklock", "raw");
        t("s4 64 locks Rust / raw", r, ">= 0.9", r.map(|r| r >= 0.9));
        // Client CPU per operation (issue 17): the process's user+system time over the
        // measured windows divided by the cycles.
        let cpu = |s: &str, k: &str| g(s, k, "cpu_us_per_op");
        for s in ["s1", "s3", "s4"] {
            let mut c = |name: &str, a: &str, b: &str, goal: f64| {
                let r = ratio(cpu(s, a), cpu(s, b));
                t(
                    &format!("{s} CPU/op {name}"),
                    r,
                    &format!("<= {goal}"),
                    r.map(|r| r <= goal),
                );
            };
            c("Rust / Curator", "zklock", "curator", 0.35);
            if s != "s3" {
                c("Rust / raw", "zklock", "raw", 1.3);
            }
            c("Python face / kazoo", "python", "kazoo", 0.5);
            c("Node face / Rust", "node", "zklock", 1.5);
            c("C face / Rust", "c", "zklock", 1.5);
        }
        if impls.iter().any(|i| i.key == "zklock-tls") {
            let r = rr("s1", "zklock-tls", "zklock");
            t("s1 Rust over TLS / plaintext (diagnostic)", r, "-", None);
        }
        let r = rr("s4", "curator", "raw");
        t("s4 curator / raw (diagnostic)", r, "-", None);
        if impls.iter().any(|i| i.key == "zklock-proposed") {
            let r = rr("s1", "zklock-proposed", "curator");
            t(
                "s1 patched Rust / Curator",
                r,
                ">= 2.0",
                r.map(|r| r >= 2.0),
            );
            let r = rr("s4", "zklock-proposed", "curator");
            t(
                "s4 patched Rust / Curator",
                r,
                ">= 2.5",
                r.map(|r| r >= 2.5),
            );
            let r = rr("s4", "zklock-proposed", "raw");
            t("s4 patched Rust / raw (diagnostic)", r, "-", None);
            let ns = g("s2", "zklock-proposed", "ns_per_op");
            t(
                "s2 patched Rust re-entrant ns/op",
                ns,
                "< 2000",
                ns.map(|n| n < 2000.0),
            );
            let r = ratio(
                g("s3", "zklock-proposed", "handoff_p50_us"),
                g("s3", "curator", "handoff_p50_us"),
            );
            t(
                "s3 patched median handoff / Curator",
                r,
                "<= 0.7",
                r.map(|r| r <= 0.7),
            );
            let n = g("s5", "zklock-proposed", "notifications_per_release");
            t(
                "s5 patched notifications per release",
                n,
                "== 1",
                n.map(|n| (n - 1.0).abs() < 0.01),
            );
            let b = g("s6", "zklock-proposed", "bytes_per_lock");
            t(
                "s6 patched bytes per held lock",
                b,
                "<= 2048",
                b.map(|b| b <= 2048.0),
            );
            let b = g("s6", "zklock-proposed-wait", "bytes_per_lock");
            t(
                "s6 patched bytes per waiting lock",
                b,
                "<= 2048",
                b.map(|b| b <= 2048.0),
            );
        }
        targets.extend(issue24_targets(mode, res));
        targets.extend(issue25_figures(mode, res));
    }
    println!(
        "\n==== targets of issues 8 and 17 (ratios measured side by side in the same run) ===="
    );
    let earlier = |t: &&Value| t["issue"].is_null();
    let unmeasured = targets
        .iter()
        .filter(earlier)
        .filter(|t| t["measured"].is_null())
        .count();
    for t in targets
        .iter()
        .filter(earlier)
        .filter(|t| !t["measured"].is_null())
    {
        let measured = t["measured"]
            .as_f64()
            .map(|m| format!("{m:.2}"))
            .unwrap_or_else(|| "not measured".into());
        let verdict = match t["holds"].as_bool() {
            Some(true) => "holds",
            Some(false) => "MISSED",
            None => "-",
        };
        println!(
            "  [{:<6}] {:<46} {:>12}  goal {:<8} {}",
            t["mode"].as_str().unwrap_or(""),
            t["target"].as_str().unwrap_or(""),
            measured,
            t["goal"].as_str().unwrap_or(""),
            verdict
        );
    }
    if unmeasured > 0 {
        println!("  ({unmeasured} targets not measured in this run: their scenarios or implementations were left out)");
    }
    print_issue(
        &targets,
        "24",
        "issue 24, point 6: zklock against the limits raw (zookeeper-client from crates.io) and \
         C client (libzookeeper-mt), one run",
    );
    print_issue(
        &targets,
        "25",
        "issue 25: election handover (resign -> next leader's lead returns), scenario 8",
    );
    for (k, why) in skipped {
        println!("  not built: {k}: {why}");
    }
    Value::Array(targets)
}

/// The figures of issue 24, point 6, for one mode: zklock against the two raw limits, `raw`
/// (the published zookeeper-client from crates.io) and `zkc` (ZooKeeper's own C client). CPU
/// ratios are of the CPU per cycle over all measured slots; throughput ratios the median of
/// per-round ratios, like the targets of issues 8 and 17. Tagged `"issue": "24"` in the JSON.
fn issue24_targets(mode: &str, res: &Value) -> Vec<Value> {
    let cpu = |s: &str, k: &str| num(res, &[s, k, "cpu_us_per_op"]);
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let at_most = |goal: f64| move |r: f64| r <= goal;
    let at_least = |goal: f64| move |r: f64| r >= goal;
    let mut out = Vec::new();
    let mut t = |name: &str, measured: Option<f64>, goal: &str, holds: Option<bool>| {
        out.push(
            json!({"mode": mode, "issue": "24", "target": name, "measured": measured,
                        "goal": goal, "holds": holds}),
        );
    };
    let r = ratio(cpu("s1", "zklock"), cpu("s1", "raw"));
    t("s1 CPU/cycle Rust / raw", r, "<= 1.0", r.map(at_most(1.0)));
    let r = ratio(cpu("s1", "zklock"), cpu("s1", "zkc"));
    t(
        "s1 CPU/cycle Rust / C client",
        r,
        "<= 1.2",
        r.map(at_most(1.2)),
    );
    let r = ratio(cpu("s4", "zklock"), cpu("s4", "raw"));
    t("s4 CPU/cycle Rust / raw", r, "<= 1.1", r.map(at_most(1.1)));
    let r = round_ratio(res, "s4", "zklock", "raw");
    t("s4 cycles/s Rust / raw", r, ">= 1.0", r.map(at_least(1.0)));
    let r = round_ratio(res, "s1", "zklock", "raw");
    t("s1 cycles/s Rust / raw", r, ">= 1.0", r.map(at_least(1.0)));
    let r = round_ratio(res, "s1", "zklock-blocking", "raw");
    t(
        "s1 cycles/s blocking_* / raw",
        r,
        ">= 1.0",
        r.map(at_least(1.0)),
    );
    // Scenario 5 runs once, without fsync.
    let m = num(res, &["s5", "zklock", "rss_while_queued"]).map(|b| b / 1048576.0);
    t("s5 MB of 1,000 sessions", m, "<= 24", m.map(at_most(24.0)));
    // Not targets: the two limits and zklock's s4 CPU against each other.
    let r = ratio(cpu("s4", "zklock"), cpu("s4", "zkc"));
    t("s4 CPU/cycle Rust / C client (diagnostic)", r, "-", None);
    let r = ratio(cpu("s1", "zkc"), cpu("s1", "raw"));
    t("s1 CPU/cycle C client / raw (diagnostic)", r, "-", None);
    let r = round_ratio(res, "s1", "zkc", "raw");
    t("s1 cycles/s C client / raw (diagnostic)", r, "-", None);
    let r = round_ratio(res, "s4", "zkc", "raw");
    t("s4 cycles/s C client / raw (diagnostic)", r, "-", None);
    out
}

/// The figures of issue 25 (scenario 8), for one mode: zklock's election handover latency
/// against Curator's `LeaderLatch` and kazoo's `Election` in the same run, as ratios (below 1:
/// zklock hands over faster), and zklock's CPU per leadership against theirs. The issue sets no
/// goal: figures only.
fn issue25_figures(mode: &str, res: &Value) -> Vec<Value> {
    let ratio = |key: &str, peer: &str| match (
        num(res, &["s8", "zklock", key]),
        num(res, &["s8", peer, key]),
    ) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let mut out = Vec::new();
    for (name, key, peer) in [
        (
            "s8 handover p50 Rust / Curator latch",
            "handoff_p50_us",
            "curator",
        ),
        (
            "s8 handover p99 Rust / Curator latch",
            "handoff_p99_us",
            "curator",
        ),
        (
            "s8 handover p50 Rust / kazoo Election",
            "handoff_p50_us",
            "kazoo",
        ),
        (
            "s8 handover p99 Rust / kazoo Election",
            "handoff_p99_us",
            "kazoo",
        ),
        (
            "s8 CPU/lead Rust / Curator latch",
            "cpu_us_per_op",
            "curator",
        ),
        (
            "s8 CPU/lead Rust / kazoo Election",
            "cpu_us_per_op",
            "kazoo",
        ),
    ] {
        out.push(json!({"mode": mode, "issue": "25", "target": name,
                        "measured": ratio(key, peer), "goal": "-", "holds": null}));
    }
    out
}

/// One issue's figures, one line each, nosync and fsync side by side.
fn print_issue(targets: &[Value], issue: &str, title: &str) {
    let ours: Vec<&Value> = targets.iter().filter(|t| t["issue"] == issue).collect();
    if ours.is_empty() {
        return;
    }
    println!("\n==== {title} ====");
    println!("  {:<44} {:<14} {:<14}  goal", "figure", "nosync", "fsync");
    let mut names: Vec<&str> = Vec::new();
    for t in &ours {
        let name = t["target"].as_str().unwrap_or("");
        if !names.contains(&name) {
            names.push(name);
        }
    }
    for name in names {
        let cell = |mode: &str| {
            let Some(t) = ours
                .iter()
                .find(|t| t["target"] == name && t["mode"] == mode)
            else {
                return "-".to_owned();
            };
            let verdict = match t["holds"].as_bool() {
                Some(true) => "holds",
                Some(false) => "MISSED",
                None => "",
            };
            match t["measured"].as_f64() {
                None if name.starts_with("s5") && mode == "fsync" => "(nosync only)".into(),
                None => "not measured".into(),
                Some(m) => format!("{m:>7.2} {verdict:<6}"),
            }
        };
        let goal = ours
            .iter()
            .find(|t| t["target"] == name)
            .and_then(|t| t["goal"].as_str())
            .unwrap_or("");
        println!(
            "  {name:<44} {:<14} {:<14}  {goal}",
            cell("nosync"),
            cell("fsync")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn a_watchdog_kills_its_worker_through_the_pidfd_and_a_reaped_one_not_at_all() {
        let mut child = Command::new("sleep").arg("100").spawn().unwrap();
        let fd = pidfd_open(child.id() as i32);
        assert!(fd.is_some(), "this kernel has pidfd_open");
        kill_through(&fd);
        assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
        // Reaped: the pidfd now names no process, whoever has its pid since.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                std::os::fd::AsRawFd::as_raw_fd(fd.as_ref().unwrap()),
                0,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
        assert_eq!(rc, -1);
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::ESRCH)
        );
    }
}
