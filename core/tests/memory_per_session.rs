//! Heap kept per idle session and per queued waiter (issue 34, point 3), counted by a counting
//! global allocator, so this test is alone in its binary: another test's allocations would be
//! counted too. Measured after events (every connect answered, every waiter's watch counted by
//! the server, one more round trip on each session), never after a sleep.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use zklock_testkit::ZooKeeper;

/// The system allocator, counting the bytes currently allocated and the most there have been.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn count(bytes: isize) {
    let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        System.dealloc(p, layout);
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = System.realloc(p, layout, new_size);
        if !q.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        q
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const SESSIONS: usize = 200;
/// The heap an idle session may keep: issue 34 targets 10 KB; this build keeps about 17 KB in a
/// debug build (after the histograms allocated at first use and the read buffer freed when
/// idle: about 4 KB less), so the bound guards what is reached, not the target (see
/// bench/README.md, s5, for what is left).
const IDLE_BOUND: isize = 20 * 1024;
/// The heap one queued waiter may add to its session: its task and boxed acquire future
/// (about 0.6 KB), the lock value, the cleanup's node path, the boxed watch on the node before
/// it and the transport's watch entry (about 1.5 KB together, `core/examples/memory.rs`
/// counts 1.5 KB per waiting lock on one session), and what its session allocates the first
/// time it queues (the write buffer and pending table grown by the create and the listing).
/// 4 KB leaves room for allocator rounding without hiding a regression of a whole buffer.
const WAITER_BOUND: isize = 4 * 1024;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

/// One round trip on every client, so that whatever an earlier reply set in motion on that
/// session has been handled (replies come back in order on one connection).
async fn round_trip_on_each(clients: &[zklock::Client]) {
    for c in clients {
        let probe = c.mutex("/memory-per-session/probe").unwrap();
        probe.participants().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_keeps_at_most_20_kib_of_heap_and_a_queued_waiter_at_most_4_kib_more() {
    let zk = ZooKeeper::standalone().expect("ZooKeeper must start");
    let hosts = zk.connect_string();
    let holder = zklock::Client::connect(&hosts, zklock::Options::default())
        .await
        .unwrap();
    let path = "/memory-per-session/lock";
    let held = holder.mutex(path).unwrap().acquire().await.unwrap();
    // Warm the process-wide parts (runtime, lazy statics) with a session that comes and goes.
    let warm = zklock::Client::connect(&hosts, zklock::Options::default())
        .await
        .unwrap();
    round_trip_on_each(std::slice::from_ref(&warm)).await;
    warm.close().await;
    round_trip_on_each(std::slice::from_ref(&holder)).await;

    let before = live();
    PEAK.store(before, Ordering::Relaxed);
    let mut clients = Vec::with_capacity(SESSIONS);
    for _ in 0..SESSIONS {
        clients.push(
            zklock::Client::connect(&hosts, zklock::Options::default())
                .await
                .unwrap(),
        );
    }
    round_trip_on_each(&clients).await;
    let idle = live();
    let per_idle = (idle - before) / SESSIONS as isize;
    let open_peak = (PEAK.load(Ordering::Relaxed) - before) / SESSIONS as isize;

    let watches_before = zk.mntr_value(0, "zk_watch_count").unwrap();
    PEAK.store(idle, Ordering::Relaxed);
    let mut waiters = Vec::with_capacity(SESSIONS);
    for client in &clients {
        let mutex = client.mutex(path).unwrap();
        waiters.push(tokio::spawn(async move {
            mutex.acquire().await?.release().await
        }));
    }
    // Every waiter watches the node before its own: the server counts one watch per waiter.
    let deadline = Instant::now() + Duration::from_secs(120);
    while zk.mntr_value(0, "zk_watch_count").unwrap() < watches_before + SESSIONS as i64 {
        assert!(
            Instant::now() < deadline,
            "the waiters did not all watch in 120 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    round_trip_on_each(&clients).await;
    let per_waiter = (live() - idle) / SESSIONS as isize;
    let queue_peak = (PEAK.load(Ordering::Relaxed) - idle) / SESSIONS as isize;
    println!(
        "heap per idle session: {per_idle} B kept, {open_peak} B at the peak while opening; \
         per queued waiter: {per_waiter} B kept, {queue_peak} B at the peak while queueing \
         ({SESSIONS} sessions)"
    );

    held.release().await.unwrap();
    for w in waiters {
        w.await.unwrap().unwrap();
    }
    for c in clients {
        c.close().await;
    }
    holder.close().await;
    assert!(
        per_idle <= IDLE_BOUND,
        "an idle session keeps {per_idle} B of heap (bound {IDLE_BOUND} B)"
    );
    assert!(
        per_waiter <= WAITER_BOUND,
        "a queued waiter keeps {per_waiter} B of heap (bound {WAITER_BOUND} B)"
    );
}
