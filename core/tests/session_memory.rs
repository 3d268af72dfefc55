//! Memory per session (issue 17, bench s5: 1,000 sessions in one process). Counts the live
//! heap bytes of this test binary with a counting global allocator, so it is alone in its
//! binary: another test's allocations would be counted too.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use zklock_testkit::ZooKeeper;

/// The system allocator, counting the bytes currently allocated.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
/// The most `LIVE` has been since the test last reset it.
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
/// What one session with one queued waiter may keep, generously: about 20 KB in the change
/// that added this test, 76 KB before it (the transport preallocated about 46 KB of tables per
/// session and kept its read buffer at the size of the longest children listing it had read).
const BOUND: isize = 40 * 1024;
/// The most it may take while the waiters queue: about 22 KB in that change, 35 KB with the
/// engine holding each waiter's listing across the round trip that sets its watch (that part
/// grows with the square of the queue: bench s5 shows it at 1,000), more than 76 KB before.
const PEAK_BOUND: isize = 64 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_with_one_queued_waiter_keeps_under_40_kib_of_heap() {
    let zk = ZooKeeper::standalone().expect("ZooKeeper must start");
    let hosts = zk.connect_string();
    let holder = zklock::Client::connect(&hosts, zklock::Options::default())
        .await
        .unwrap();
    let held = holder
        .mutex("/session-memory/lock")
        .unwrap()
        .acquire()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);

    let mut clients = Vec::with_capacity(SESSIONS);
    for _ in 0..SESSIONS {
        clients.push(
            zklock::Client::connect(&hosts, zklock::Options::default())
                .await
                .unwrap(),
        );
    }
    let mut waiters = Vec::with_capacity(SESSIONS);
    for client in &clients {
        let mutex = client.mutex("/session-memory/lock").unwrap();
        waiters.push(tokio::spawn(async move {
            mutex.acquire().await?.release().await
        }));
    }
    // Every waiter's node is in the queue and its watch is set once the queue is complete and
    // the waiters have had a moment to set their watches.
    let counter = holder.mutex("/session-memory/lock").unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while counter.participants().await.unwrap().len() < SESSIONS + 1 {
        assert!(
            Instant::now() < deadline,
            "the waiters did not queue in 60 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(counter);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let per_session = (LIVE.load(Ordering::Relaxed) - before) / SESSIONS as isize;
    let peak_per_session = (PEAK.load(Ordering::Relaxed) - before) / SESSIONS as isize;
    println!("heap per session with one queued waiter: {per_session} B live, {peak_per_session} B at the peak");

    held.release().await.unwrap();
    for w in waiters {
        w.await.unwrap().unwrap();
    }
    for c in clients {
        c.close().await;
    }
    holder.close().await;
    assert!(
        per_session < BOUND,
        "a session with one queued waiter holds {per_session} B of heap (bound {BOUND} B)"
    );
    assert!(
        peak_per_session < PEAK_BOUND,
        "queueing took {peak_per_session} B of heap per session at the peak (bound {PEAK_BOUND} B)"
    );
}
