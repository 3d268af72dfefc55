//! What `/proc` says of a process: its CPU time (user + system, `/proc/<pid>/stat`) and the
//! lines of `/proc/<pid>/status` (`VmRSS`, `VmHWM`). Bench s9 and the 10,000-session soak read
//! the servers' CPU this way; `ZooKeeper::cpu_time` and `ZooKeeper::rss_bytes` name a member.

use std::time::Duration;

use crate::ZooKeeper;

/// User + system CPU time of process `pid` (fields 14 and 15 of `/proc/<pid>/stat`).
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Some(Duration::from_millis(ticks * 1000 / hz))
}

/// A `kB` line of `/proc/<pid>/status` (`VmRSS`, `VmHWM`, ...) in bytes; `pid` None: this
/// process.
pub fn status_bytes(pid: Option<u32>, key: &str) -> Option<u64> {
    let file = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".to_owned(),
    };
    let status = std::fs::read_to_string(file).ok()?;
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?;
    let kib: u64 = line.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

impl ZooKeeper {
    /// Member `i`'s CPU time so far (None when it is stopped or external).
    pub fn cpu_time(&self, i: usize) -> Option<Duration> {
        cpu_time(self.pid(i)?)
    }

    /// Member `i`'s resident memory now (`VmRSS`; None when it is stopped or external).
    pub fn rss_bytes(&self, i: usize) -> Option<u64> {
        status_bytes(Some(self.pid(i)?), "VmRSS")
    }
}
