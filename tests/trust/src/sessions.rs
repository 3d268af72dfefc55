//! The measuring parts of `soak-sessions` (`make soak-10k`): its options, the servers' CPU over
//! a phase or a window (`/proc/<pid>/stat`, as bench s9 reads it), their JVM heap (`jcmd`), what
//! the clients' statistics say went wrong, and the printed report.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zklock_testkit::ZooKeeper;

/// The run's options (see `soak-sessions`'s comment).
#[derive(Debug, Clone)]
pub struct Opts {
    pub sessions: usize,
    pub parallel: usize,
    pub window: Duration,
    pub session_ms: u64,
    pub tick_ms: u32,
    pub server_heap: bool,
}

impl Opts {
    pub const USAGE: &'static str = "usage: soak-sessions [--sessions N (10000)] [--parallel P (100)] \
        [--window-secs S (10)] [--session-ms T (10000)] [--tick-ms K (2000)] [--server-heap yes|no (yes)]";

    pub fn parse(mut args: impl Iterator<Item = String>) -> Result<Opts, String> {
        let mut o = Opts {
            sessions: 10_000,
            parallel: 100,
            window: Duration::from_secs(10),
            session_ms: 10_000,
            tick_ms: 2_000,
            server_heap: true,
        };
        while let Some(flag) = args.next() {
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let number = |min: u64| -> Result<u64, String> {
                match value.replace('_', "").parse::<u64>() {
                    Ok(v) if v >= min => Ok(v),
                    _ => Err(format!(
                        "{flag} takes a whole number ≥ {min}, not {value:?}"
                    )),
                }
            };
            match flag.as_str() {
                "--sessions" => o.sessions = number(1)? as usize,
                "--parallel" => o.parallel = number(1)? as usize,
                "--window-secs" => o.window = Duration::from_secs(number(1)?),
                "--session-ms" => o.session_ms = number(1)?,
                "--tick-ms" => {
                    o.tick_ms = u32::try_from(number(1)?).map_err(|_| "--tick-ms is too large")?
                }
                "--server-heap" => {
                    o.server_heap = match value.as_str() {
                        "yes" => true,
                        "no" => false,
                        _ => return Err(format!("--server-heap takes yes or no, not {value:?}")),
                    }
                }
                _ => return Err(format!("unknown option {flag:?}")),
            }
        }
        Ok(o)
    }
}

/// Open files this process needs beside its sessions' sockets (the runtime, the `mntr` probes,
/// the servers' logs and pipes).
const SPARE_FILES: u64 = 512;

/// Raises the soft limit of open files to what `sessions` sockets need (one each), up to the
/// hard limit; fails saying what to do when the hard limit is too low. Returns the soft limit.
pub fn raise_fd_limit(sessions: u64) -> Result<u64, String> {
    let need = sessions + SPARE_FILES;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err("cannot read the limit of open files (getrlimit)".into());
    }
    if lim.rlim_cur >= need {
        return Ok(lim.rlim_cur);
    }
    if lim.rlim_max < need {
        return Err(format!(
            "{sessions} sessions need about {need} open files, and the hard limit is {}: raise it \
             (`ulimit -Hn {need}` as root, or nofile in /etc/security/limits.conf) or pass \
             --sessions {}",
            lim.rlim_max,
            lim.rlim_max.saturating_sub(SPARE_FILES)
        ));
    }
    lim.rlim_cur = need;
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
        return Err(format!(
            "cannot raise the soft limit of open files to {need} (setrlimit)"
        ));
    }
    Ok(need)
}

/// Each member's CPU over some time (milliseconds in all) and the packets it received from
/// clients (`mntr`'s `zk_packets_received`), the lifeline heartbeats this process sent, and the
/// time it took.
#[derive(Debug, Clone, Default)]
pub struct Cpu {
    pub secs: f64,
    pub ms: Vec<Option<f64>>,
    pub packets: Vec<Option<i64>>,
    pub heartbeats: u64,
}

impl Cpu {
    /// Member `i`'s CPU in ms per second.
    pub fn per_sec(&self, i: usize) -> Option<f64> {
        Some(self.ms.get(i).copied()?? / self.secs)
    }

    /// The packets every member received per second, all together.
    pub fn packets_per_sec(&self) -> Option<f64> {
        Some(self.packets.iter().copied().sum::<Option<i64>>()? as f64 / self.secs)
    }
}

fn packets(zk: &ZooKeeper) -> Vec<Option<i64>> {
    (0..zk.len())
        .map(|i| zk.mntr_value(i, "zk_packets_received").ok())
        .collect()
}

/// A phase under way: when it started, and each member's CPU time and packets received then.
pub struct Phase {
    t0: Instant,
    before: Vec<Option<Duration>>,
    packets: Vec<Option<i64>>,
    heartbeats: u64,
}

impl Phase {
    pub fn start(zk: &ZooKeeper) -> Phase {
        Phase {
            packets: packets(zk),
            heartbeats: zklock::support::heartbeats(),
            before: (0..zk.len()).map(|i| zk.cpu_time(i)).collect(),
            t0: Instant::now(),
        }
    }

    pub fn elapsed(&self) -> Duration {
        self.t0.elapsed()
    }

    pub fn end(&self, zk: &ZooKeeper) -> Cpu {
        let secs = self.t0.elapsed().as_secs_f64();
        let ms = (0..zk.len())
            .map(|i| match (self.before[i], zk.cpu_time(i)) {
                (Some(a), Some(b)) => Some(b.saturating_sub(a).as_secs_f64() * 1e3),
                _ => None,
            })
            .collect();
        let packets = packets(zk)
            .iter()
            .zip(&self.packets)
            .map(|(after, before)| Some((*after)? - (*before)?))
            .collect();
        let heartbeats = zklock::support::heartbeats() - self.heartbeats;
        Cpu {
            secs,
            ms,
            packets,
            heartbeats,
        }
    }
}

/// Each member's CPU over a window in which the clients start nothing new (their pings and
/// heartbeats go on).
pub async fn window(zk: &ZooKeeper, length: Duration) -> Cpu {
    let phase = Phase::start(zk);
    tokio::time::sleep(length).await;
    phase.end(zk)
}

/// Each member's JVM heap in use after a full collection (`jcmd <pid> GC.run`, then
/// `GC.heap_info`: the generations' `used`), or None (not asked, no `jcmd`, unreadable).
pub fn jvm_heaps(zk: &ZooKeeper, asked: bool) -> Vec<Option<u64>> {
    (0..zk.len())
        .map(|i| asked.then(|| jvm_heap(zk.pid(i)?)).flatten())
        .collect()
}

fn jvm_heap(pid: u32) -> Option<u64> {
    let jcmd = |what: &str| {
        std::process::Command::new("jcmd")
            .args([&pid.to_string(), what])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    };
    jcmd("GC.run")?;
    // The serial collector: " def new generation   total 19648K, used 1234K [...]" and
    // " tenured generation   total 43712K, used 2345K [...]".
    let used: Vec<u64> = jcmd("GC.heap_info")?
        .lines()
        .filter(|l| l.contains("generation"))
        .filter_map(|l| {
            let kib = l.split("used ").nth(1)?.split('K').next()?;
            kib.trim().parse::<u64>().ok()
        })
        .collect();
    (!used.is_empty()).then(|| used.iter().sum::<u64>() * 1024)
}

/// Waits until `key` summed over the members reaches `at_least`; gives up at once when
/// `trouble` says something (what the clients' statistics report went wrong).
pub async fn wait_for(
    zk: &ZooKeeper,
    key: &str,
    at_least: usize,
    limit: Duration,
    trouble: &dyn Fn() -> String,
) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    loop {
        check_trouble(key, trouble)?;
        let each: Vec<i64> = (0..zk.len())
            .map(|i| zk.mntr_value(i, key).unwrap_or(0))
            .collect();
        // Ephemeral nodes are counted by every member: one member's count is the ensemble's.
        let seen = if key == "zk_ephemerals_count" {
            each.iter().copied().min().unwrap_or(0)
        } else {
            each.iter().sum()
        };
        if seen >= at_least as i64 {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "after {limit:?} the members show {key} {each:?}, not {at_least} in all"
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until `key` summed over the members (for ephemeral nodes: the most any member shows)
/// is at most `at_most`; gives up at once when `trouble` says something.
pub async fn wait_for_at_most(
    zk: &ZooKeeper,
    key: &str,
    at_most: i64,
    limit: Duration,
    trouble: &dyn Fn() -> String,
) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    loop {
        check_trouble(key, trouble)?;
        let each: Vec<i64> = (0..zk.len())
            .map(|i| zk.mntr_value(i, key).unwrap_or(i64::MAX / 4))
            .collect();
        let seen = if key == "zk_ephemerals_count" {
            each.iter().copied().max().unwrap_or(0)
        } else {
            each.iter().sum()
        };
        if seen <= at_most {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "after {limit:?} the members still show {key} {each:?} (at most {at_most} expected)"
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn check_trouble(key: &str, trouble: &dyn Fn() -> String) -> Result<(), String> {
    match trouble() {
        t if t.is_empty() => Ok(()),
        t => Err(format!(
            "while waiting for the members' {key}, the clients report {t}"
        )),
    }
}

/// The reasons the core gave for sessions that ended and leases that turned lost (its log
/// records at `warn`, counted by event and reason), once `watch_logs` has been called.
static REASONS: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());

/// Counts the core's warnings by event and reason (a session that expired, or that the lifeline
/// gave up; a lease that turned lost), for `troubles` to name.
pub fn watch_logs() {
    let sink = Arc::new(|r: &zklock::support::LogRecord| {
        let field = |k: &str| r.fields.iter().find(|(f, _)| *f == k).map(|(_, v)| v);
        let what = field("event").or(field("state")).map_or("", |v| v.as_str());
        let reason = field("reason").map_or("", |v| v.as_str());
        *REASONS
            .lock()
            .unwrap()
            .entry(format!("{} {what}: {reason}", r.event))
            .or_default() += 1;
    });
    zklock::support::set_log_sink(Some((zklock::support::LogLevel::Warn, sink)));
}

/// What the clients' statistics say went wrong on the way (empty: nothing): a connection that
/// broke under a lease, a reconnect, a lost lease, an expired session.
pub fn troubles(clients: &[zklock::Client]) -> String {
    let (mut suspended, mut reconnects, mut lost, mut expired) = (0, 0, 0, 0);
    for c in clients {
        let s = c.stats();
        suspended += s.suspended;
        reconnects += s.reconnects;
        lost += s.lost;
        expired += s.session_expiries;
    }
    let counts = [
        (suspended, "leases suspended"),
        (reconnects, "reconnects"),
        (lost, "leases lost"),
        (expired, "sessions expired"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect::<Vec<_>>()
    .join(", ");
    let reasons = REASONS.lock().unwrap();
    if counts.is_empty() || reasons.is_empty() {
        return counts;
    }
    let reasons: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} × {r}")).collect();
    format!("{counts} (the core's warnings: {})", reasons.join("; "))
}

/// What a run measured.
#[derive(Debug, Default)]
pub struct Report {
    pub baseline: Cpu,
    pub open: Cpu,
    pub idle: Cpu,
    pub acquire: Cpu,
    pub hold: Cpu,
    pub release: Cpu,
    pub close: Cpu,
    /// The clients' own close calls (`close` also waits for the servers to drop every
    /// connection).
    pub close_client: Duration,
    pub connections: Vec<Option<i64>>,
    pub client_rss_before: Option<u64>,
    pub client_rss_open: Option<u64>,
    pub client_rss_hold: Option<u64>,
    pub client_rss_closed: Option<u64>,
    pub client_rss_peak: Option<u64>,
    pub heap_open: isize,
    pub heap_open_peak: isize,
    pub heap_hold: isize,
    pub heap_hold_peak: isize,
    pub heap_closed: isize,
    pub server_rss_before: Vec<Option<u64>>,
    pub server_rss_open: Vec<Option<u64>>,
    pub server_rss_hold: Vec<Option<u64>>,
    pub server_heap_before: Vec<Option<u64>>,
    pub server_heap_open: Vec<Option<u64>>,
    pub server_heap_hold: Vec<Option<u64>>,
}

fn mb(b: Option<u64>) -> String {
    b.map_or("-".into(), |b| format!("{:.1} MB", b as f64 / 1e6))
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// Prints the report: the run's figures, then one row per member.
pub fn print(zk: &ZooKeeper, leader: Option<usize>, opts: &Opts, r: &Report) {
    let n = opts.sessions as f64;
    let per = |b: isize| b as f64 / n;
    println!(
        "opened {} sessions in {:.1} s; acquired {} locks in {:.1} s, released them in {:.1} s; \
         closed them in {:.1} s ({:.1} s until the servers dropped every connection); errors 0",
        opts.sessions,
        r.open.secs,
        opts.sessions,
        r.acquire.secs,
        r.release.secs,
        r.close_client.as_secs_f64(),
        r.close.secs
    );
    println!(
        "client RSS: {} before, {} open, {} holding, {} closed, {} at the peak (VmHWM)",
        mb(r.client_rss_before),
        mb(r.client_rss_open),
        mb(r.client_rss_hold),
        mb(r.client_rss_closed),
        mb(r.client_rss_peak)
    );
    println!(
        "client heap per session: {:.0} B open ({:.0} B at the peak while opening), {:.0} B more \
         holding a lease ({:.0} B at the peak while acquiring); {:.0} B left after closing",
        per(r.heap_open),
        per(r.heap_open_peak),
        per(r.heap_hold),
        per(r.heap_hold_peak),
        per(r.heap_closed)
    );
    println!(
        "servers, per member: connections; CPU ms in open / acquire / release / close; CPU ms/s \
         idle ensemble, and per 1,000 sessions idle / holding (idle ensemble's taken off); RSS \
         before / open / holding; JVM heap after a full GC before / open / holding"
    );
    for i in 0..zk.len() {
        let per_k = |w: &Cpu| Some((w.per_sec(i)? - r.baseline.per_sec(i)?) / (n / 1000.0));
        let ms = |c: &Cpu| opt(c.ms.get(i).copied().flatten(), 0);
        let at = |v: &[Option<u64>]| mb(v.get(i).copied().flatten());
        println!(
            "  member {i}{}: {} connections; CPU {} / {} / {} / {} ms; {} ms/s idle ensemble, \
             {} / {} ms/s per 1,000; RSS {} / {} / {}; heap {} / {} / {}",
            if leader == Some(i) { " (leader)" } else { "" },
            r.connections
                .get(i)
                .copied()
                .flatten()
                .map_or("-".into(), |c| (c - 1).to_string()),
            ms(&r.open),
            ms(&r.acquire),
            ms(&r.release),
            ms(&r.close),
            opt(r.baseline.per_sec(i), 1),
            opt(per_k(&r.idle), 1),
            opt(per_k(&r.hold), 1),
            at(&r.server_rss_before),
            at(&r.server_rss_open),
            at(&r.server_rss_hold),
            at(&r.server_heap_before),
            at(&r.server_heap_open),
            at(&r.server_heap_hold),
        );
    }
    for (name, w) in [("idle", &r.idle), ("holding", &r.hold)] {
        println!(
            "{name} window: the members received {} packets per second per 1,000 sessions, the \
             sessions sent {:.0} heartbeats (syncs) per second per 1,000",
            opt(w.packets_per_sec().map(|p| p / (n / 1000.0)), 0),
            w.heartbeats as f64 / w.secs / (n / 1000.0)
        );
    }
    let heap_delta = |after: &[Option<u64>], before: &[Option<u64>]| -> Option<f64> {
        let mut sum = 0.0;
        for i in 0..zk.len() {
            sum += after.get(i).copied()?? as f64 - before.get(i).copied()?? as f64;
        }
        Some(sum / n)
    };
    println!(
        "servers' JVM heap per session, all members together: {} B open, {} B more holding a lease",
        opt(heap_delta(&r.server_heap_open, &r.server_heap_before), 0),
        opt(heap_delta(&r.server_heap_hold, &r.server_heap_open), 0),
    );
}
