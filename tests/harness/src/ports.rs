//! Ports for the servers the harness starts, reserved across every harness process on the
//! machine.
//!
//! A port is picked at random below the kernel's ephemeral range: a port from that range is
//! released here and bound by ZooKeeper a moment later, and in between the kernel could hand the
//! same number to any socket bound to port 0 (a fault proxy, another test's client). Below the
//! range only another harness choosing by number can take it, and between the pick and the
//! JVM's bind (seconds on a loaded machine) or while a member is stopped for a restart, another
//! test process could. So each pick is also claimed with a file named by the port in a shared
//! directory, created exclusively and holding the claiming process's id; a claim whose process
//! is gone is stale and taken over. The claim ends when the server is dropped. What a claim
//! cannot stop (a program outside the harness binding the number) the start retries with new
//! ports (`ZooKeeper::start`).

use crate::Result;
use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// A port claimed for this process until dropped.
pub(crate) struct Claim {
    port: u16,
    file: PathBuf,
}

impl Claim {
    pub(crate) fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

fn claims_dir() -> PathBuf {
    std::env::temp_dir().join("zklock-harness-ports")
}

/// Whether process `pid` is alive (a claim of a process that is gone is stale).
fn alive(pid: i32) -> bool {
    pid > 0
        && (unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
}

/// Claims `port` for this process; `None` when another live process holds it.
pub(crate) fn claim(port: u16) -> Option<Claim> {
    let dir = claims_dir();
    std::fs::create_dir_all(&dir).ok()?;
    let file = dir.join(port.to_string());
    for _ in 0..2 {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&file)
        {
            Ok(mut f) => {
                // The claim owns the file from here: a failed write removes it on drop, where
                // an empty file left behind would read as a claim being written, for ever.
                let claim = Claim { port, file };
                write!(f, "{}", std::process::id()).ok()?;
                return Some(claim);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let holder = std::fs::read_to_string(&file)
                    .ok()
                    .and_then(|s| s.trim().parse::<i32>().ok());
                match holder {
                    // A claim being written (empty for a moment) or held by a live process.
                    None => return None,
                    Some(pid) if alive(pid) => return None,
                    // Stale: its process died without dropping it. Taken over once.
                    Some(_) => {
                        let _ = std::fs::remove_file(&file);
                    }
                }
            }
            Err(_) => return None,
        }
    }
    None
}

/// A port free now on every address and claimed for this process.
pub(crate) fn free_port() -> Result<Claim> {
    static PICKS: AtomicU64 = AtomicU64::new(0);
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let (first, span) = (10_000u16, low.saturating_sub(10_000).max(1000));
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        ^ (u64::from(std::process::id()) << 20);
    for _ in 0..400 {
        // splitmix64 of the seed and a process-wide counter: distinct picks, spread out.
        let mut x = seed.wrapping_add(
            PICKS
                .fetch_add(1, Ordering::Relaxed)
                .wrapping_mul(0x9e37_79b9_7f4a_7c15),
        );
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^= x >> 31;
        let port = first + (x % u64::from(span)) as u16;
        let Some(claim) = claim(port) else { continue };
        if TcpListener::bind(("0.0.0.0", port)).is_ok() {
            return Ok(claim);
        }
    }
    Err(format!(
        "no free port between {first} and {} could be claimed for a ZooKeeper server (claims in {})",
        u32::from(first) + u32::from(span),
        claims_dir().display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claimed_port_is_not_picked_again_until_its_claim_is_dropped() {
        let a = free_port().unwrap();
        assert!(claim(a.port()).is_none(), "a live claim was taken twice");
        let port = a.port();
        drop(a);
        let again = claim(port).expect("a dropped claim is free again");
        assert_eq!(again.port(), port);
    }

    #[test]
    fn a_claim_left_by_a_dead_process_is_taken_over() {
        // A process that has exited: its pid is reaped, so no process has it (barring reuse
        // within this test, which would only make the claim look live and fail loudly).
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let probe = free_port().unwrap();
        let (port, file) = (probe.port(), probe.file.clone());
        std::mem::forget(probe);
        std::fs::write(&file, pid.to_string()).unwrap();
        let taken = claim(port).expect("a stale claim is taken over");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            std::process::id().to_string()
        );
        drop(taken);
        assert!(!file.exists(), "a dropped claim leaves no file");
    }
}
