//! What every worker shares: arguments, the monotonic clock (CLOCK_MONOTONIC, the clock Java's
//! nanoTime, Python's monotonic_ns and Node's hrtime read too), percentiles and RSS.

use std::collections::HashMap;

/// `--key value` pairs.
pub struct Args(HashMap<String, String>);

impl Args {
    pub fn parse(args: impl Iterator<Item = String>) -> Args {
        let mut map = HashMap::new();
        let mut key: Option<String> = None;
        for a in args {
            if let Some(k) = a.strip_prefix("--") {
                if let Some(prev) = key.replace(k.to_owned()) {
                    map.insert(prev, "true".to_owned());
                }
            } else if let Some(k) = key.take() {
                map.insert(k, a);
            }
        }
        if let Some(k) = key {
            map.insert(k, "true".to_owned());
        }
        Args(map)
    }

    pub fn str(&self, key: &str) -> String {
        self.0
            .get(key)
            .cloned()
            .unwrap_or_else(|| panic!("missing --{key}"))
    }

    pub fn opt(&self, key: &str) -> Option<String> {
        self.0.get(key).cloned()
    }

    pub fn num(&self, key: &str, default: f64) -> f64 {
        self.0
            .get(key)
            .map(|v| {
                v.parse()
                    .unwrap_or_else(|_| panic!("--{key} {v}: not a number"))
            })
            .unwrap_or(default)
    }

    pub fn int(&self, key: &str, default: u64) -> u64 {
        self.num(key, default as f64) as u64
    }
}

/// CLOCK_MONOTONIC in nanoseconds.
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until the monotonic clock reads `t`.
pub fn sleep_until_mono(t: u64) {
    let now = mono_ns();
    if t > now {
        std::thread::sleep(std::time::Duration::from_nanos(t - now));
    }
}

/// The p-th percentile (0..=100) of `v` (sorted in place), nearest rank.
pub fn percentile(v: &mut [u64], p: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// User + system CPU time of this whole process (every thread, living or gone) in nanoseconds:
/// getrusage(RUSAGE_SELF), the counters every worker reads (Python's resource.getrusage, Node's
/// process.cpuUsage, C's getrusage; Java, which has no getrusage, reads the same counters from
/// /proc/self/stat in clock ticks).
pub fn cpu_ns() -> u64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Adds the client CPU figures to a result line with `ops`: `cpu_s` (CPU seconds of the process
/// over the measured windows) and `cpu_us_per_op`.
pub fn add_cpu(out: &mut serde_json::Value, cpu: u64) {
    let ops = out["ops"].as_f64().unwrap_or(0.0);
    out["cpu_s"] = serde_json::json!(cpu as f64 / 1e9);
    if ops > 0.0 {
        out["cpu_us_per_op"] = serde_json::json!(cpu as f64 / 1e3 / ops);
    }
}

/// VmRSS of this process in bytes.
pub fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

/// A throughput/latency result line: `{"ops", "secs", "ops_s", "p50_us", "p99_us", ...}`.
pub fn latency_result(mut lat_ns: Vec<u64>, secs: f64) -> serde_json::Value {
    let ops = lat_ns.len();
    let p50 = percentile(&mut lat_ns, 50.0);
    let p99 = percentile(&mut lat_ns, 99.0);
    serde_json::json!({
        "ops": ops,
        "secs": secs,
        "ops_s": ops as f64 / secs,
        "p50_us": p50 as f64 / 1000.0,
        "p99_us": p99 as f64 / 1000.0,
    })
}

/// Time slots shared by workers that run side by side: every worker warms up in its own window,
/// then measures in its own slot of every round, idle otherwise, so that the figures of all
/// implementations are taken under the same (noisy) machine conditions, interleaved.
/// `--start-at T --warm-ms W --slot-ms S --nslots N --my-slot I --rounds R`; without them one
/// worker warms for `--warmup` s and measures one round of `--secs` s.
#[derive(Clone, Copy, Debug)]
pub struct Slots {
    pub start: u64,
    pub warm: u64,
    pub slot: u64,
    pub n: u64,
    pub me: u64,
    pub rounds: u64,
}

impl Slots {
    pub fn from_args(args: &Args) -> Slots {
        match args.opt("start-at") {
            Some(t) => Slots {
                start: t.parse().expect("--start-at"),
                warm: args.int("warm-ms", 1000) * 1_000_000,
                slot: args.int("slot-ms", 500) * 1_000_000,
                n: args.int("nslots", 1),
                me: args.int("my-slot", 0),
                rounds: args.int("rounds", 1),
            },
            None => Slots {
                start: mono_ns(),
                warm: (args.num("warmup", 1.0) * 1e9) as u64,
                slot: (args.num("secs", 3.0) * 1e9 / 0.9) as u64,
                n: 1,
                me: 0,
                rounds: 1,
            },
        }
    }

    pub fn warm_window(&self) -> (u64, u64) {
        let from = self.start + self.me * self.warm;
        (from, from + self.warm)
    }

    /// The measured window of round `r`: the first 90% of this worker's slot.
    pub fn round_window(&self, r: u64) -> (u64, u64) {
        let from = self.start + self.n * self.warm + (r * self.n + self.me) * self.slot;
        (from, from + self.slot * 9 / 10)
    }

    pub fn measured_secs(&self) -> f64 {
        (self.slot * 9 / 10) as f64 / 1e9
    }

    /// Per-round counts and all latencies as the result line.
    pub fn result(&self, counts: &[u64], lat: Vec<u64>) -> serde_json::Value {
        let secs = self.measured_secs() * self.rounds as f64;
        let mut out = latency_result(lat, secs);
        out["rounds"] = serde_json::json!(counts
            .iter()
            .map(|c| *c as f64 / self.measured_secs())
            .collect::<Vec<_>>());
        out
    }
}
