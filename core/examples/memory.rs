//! Where the memory of a held or waiting lock goes: live heap bytes and allocations per lock
//! (a counting allocator), and RSS per lock. A diagnostic next to bench scenario 6, which
//! measures RSS only.
//!
//! `cargo run --release -p zklock --example memory [-- wait] [locks]` (uses ZKLOCK_SERVERS, else
//! starts a local ZooKeeper). `wait`: another client holds every lock and this one queues.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

struct Counting;
static LIVE_BYTES: AtomicI64 = AtomicI64::new(0);
static LIVE_ALLOCS: AtomicI64 = AtomicI64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as i64, Ordering::Relaxed);
        LIVE_ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        LIVE_ALLOCS.fetch_sub(1, Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE_BYTES.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Live heap bytes, live allocations, RSS.
fn snapshot() -> [i64; 3] {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let rss_kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<i64>().ok())
        .unwrap_or(0);
    [
        LIVE_BYTES.load(Ordering::Relaxed),
        LIVE_ALLOCS.load(Ordering::Relaxed),
        rss_kb * 1024,
    ]
}

fn report(what: &str, since: [i64; 3], locks: usize) {
    let now = snapshot();
    let per = |i: usize| (now[i] - since[i]) as f64 / locks as f64;
    println!(
        "{what:32} heap {:7.0} B/lock  {:5.2} allocs/lock  RSS {:7.0} B/lock",
        per(0),
        per(1),
        per(2)
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let waiting = args.iter().any(|a| a == "wait");
    let locks: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(10_000);
    let _local;
    let servers = match std::env::var("ZKLOCK_SERVERS") {
        Ok(s) if !s.is_empty() => s,
        _ => {
            _local = zklock_testkit::ZooKeeper::standalone()?;
            _local.connect_string()
        }
    };
    let client = zklock::Client::connect(&servers, zklock::Options::default()).await?;
    let base = format!("/zklock-memory/{}", std::process::id());
    let warm = client.mutex(&format!("{base}-warm"))?;
    for _ in 0..20 {
        warm.acquire().await?.release().await?;
    }
    let mut holder_leases = Vec::new();
    if waiting {
        let holder = zklock::Client::connect(&servers, zklock::Options::default()).await?;
        for i in 0..locks {
            holder_leases.push(holder.mutex(&format!("{base}/{i}"))?.acquire().await?);
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let start = snapshot();
    let values: Vec<_> = (0..locks)
        .map(|i| client.mutex(&format!("{base}/{i}")))
        .collect::<zklock::Result<_>>()?;
    report("lock values", start, locks);
    // What a waiting acquire keeps in its task, beside what it allocates.
    let probe = values[0].acquire_until(None);
    println!("acquire future: {} B", std::mem::size_of_val(&probe));
    drop(probe);
    let before = snapshot();
    let mut leases = Vec::new();
    let mut waiters = Vec::new();
    // In batches, as bench scenario 6 does: what stays per lock, not the start-up burst.
    for batch in values.chunks(200) {
        let tasks: Vec<_> = batch
            .iter()
            .map(|m| tokio::spawn(m.acquire_until(None)))
            .collect();
        if waiting {
            let target = zklock::support::round_trips() + 2 * batch.len() as u64;
            while zklock::support::round_trips() < target {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            waiters.extend(tasks);
        } else {
            for t in tasks {
                leases.push(t.await??);
            }
        }
    }
    // Past the delay after which held locks watch their own node.
    tokio::time::sleep(Duration::from_millis(500)).await;
    report(if waiting { "waiting" } else { "held" }, before, locks);
    report("total, with the lock values", start, locks);
    std::process::exit(0)
}
