//! A lock holder to pause from outside: `trust-holder SERVERS PATH SESSION_MS [LOCK_DELAY_MS]`
//! (the lock-delay its mutex declares, none when absent). Acquires the
//! mutex, prints `token N`, then reports `state S` at every change and, once lost, prints
//! `lost fired=K` (how many times its lost callback ran, after a grace period) and exits.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (servers, path) = (&args[0], &args[1]);
    let session_ms: u64 = args[2].parse().expect("SESSION_MS");
    let options = zklock::Options::default().session_timeout(Duration::from_millis(session_ms));
    let client = zklock::Client::blocking_connect(servers, options).expect("connect");
    let lock_delay = args
        .get(3)
        .map(|ms| Duration::from_millis(ms.parse().expect("LOCK_DELAY_MS")));
    let lease = client
        .mutex(path)
        .unwrap()
        .lock_delay(lock_delay)
        .expect("lock delay")
        .blocking_acquire()
        .expect("acquire");
    let fired = Arc::new(AtomicUsize::new(0));
    let f = fired.clone();
    lease.on_lost(move || {
        f.fetch_add(1, Ordering::SeqCst);
    });
    let mut out = std::io::stdout();
    writeln!(out, "token {}", lease.token()).ok();
    out.flush().ok();
    // Changes since the acquire: a pause right after `token` was printed can end with the
    // lease already lost when the holder resumes (the lifeline fires at once), and that change
    // must be reported too.
    let mut last = zklock::LeaseState::Held;
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let now = lease.state();
        if now != last {
            writeln!(out, "state {}", now.as_str()).ok();
            out.flush().ok();
            last = now;
        }
        if now == zklock::LeaseState::Lost {
            std::thread::sleep(Duration::from_millis(500));
            writeln!(out, "lost fired={}", fired.load(Ordering::SeqCst)).ok();
            out.flush().ok();
            return;
        }
    }
}
