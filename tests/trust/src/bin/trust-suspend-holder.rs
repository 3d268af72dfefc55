//! A lock holder for the suspend simulation (tests/suspend.rs):
//! `trust-suspend-holder SERVERS PATH SESSION_MS TICK_MS [MAX_HOLD_MS]`. Acquires the mutex
//! (with a maximum hold when MAX_HOLD_MS is given), prints
//! `token N acquired NS`, then `reading` after its first read, then reads its lease's state about every millisecond. Each read is stamped on
//! CLOCK_BOOTTIME, which the simulation leaves alone and which the test reads too, after the
//! read returned. At the first read that is not `held` it prints
//! `last-held NS first-other NS STATE began NS` (the last `held` read's end and start, the first
//! other read's end), then, once the lease is lost, `lost NS`, then
//! `signal NS` (when its lost callback ran, 0 if not within 5 s), `reason TEXT` (the lost
//! reason) and `done`; with a maximum hold it then stays alive, as a service would, until killed.

use std::io::Write;
use std::time::Duration;

use zklock::LeaseState;

fn boot_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to write; CLOCK_BOOTTIME exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (servers, path) = (&args[0], &args[1]);
    let session_ms: u64 = args[2].parse().expect("SESSION_MS");
    let tick_ms: u64 = args[3].parse().expect("TICK_MS");
    let options = zklock::Options::default()
        .session_timeout(Duration::from_millis(session_ms))
        .server_tick(Duration::from_millis(tick_ms));
    let max_hold = args
        .get(4)
        .map(|ms| Duration::from_millis(ms.parse().expect("MAX_HOLD_MS")));
    let client = zklock::Client::blocking_connect(servers, options).expect("connect");
    let lease = client
        .mutex(path)
        .unwrap()
        .max_hold(max_hold)
        .expect("a valid maximum hold")
        .blocking_acquire()
        .expect("acquire");
    let acquired = boot_ns();
    let fired = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(0));
    let f = fired.clone();
    lease.on_lost(move || f.store(boot_ns(), std::sync::atomic::Ordering::SeqCst));
    let mut out = std::io::stdout();
    writeln!(out, "token {} acquired {acquired}", lease.token()).ok();
    out.flush().ok();
    let mut last_held = boot_ns();
    let mut last_held_began = last_held;
    let mut reported = false;
    let mut reading = false;
    loop {
        let began = boot_ns();
        let state = lease.state();
        let at = boot_ns();
        if !reading {
            // In the loop: a stop from now on lands in a read or (mostly) in the sleep.
            writeln!(out, "reading").ok();
            out.flush().ok();
            reading = true;
        }
        if state == LeaseState::Held {
            assert!(!reported, "held again after {}", state.as_str());
            last_held = at;
            last_held_began = began;
        } else if !reported {
            writeln!(
                out,
                "last-held {last_held} first-other {at} {} began {last_held_began}",
                state.as_str()
            )
            .ok();
            out.flush().ok();
            reported = true;
        }
        if state == LeaseState::Lost {
            writeln!(out, "lost {at}").ok();
            let by = at + 5_000_000_000;
            while fired.load(std::sync::atomic::Ordering::SeqCst) == 0 && boot_ns() < by {
                std::thread::sleep(Duration::from_millis(1));
            }
            writeln!(
                out,
                "signal {}",
                fired.load(std::sync::atomic::Ordering::SeqCst)
            )
            .ok();
            writeln!(out, "reason {}", lease.lost_reason().unwrap_or_default()).ok();
            writeln!(out, "done").ok();
            out.flush().ok();
            if max_hold.is_some() {
                // A service goes on running: its timer deletes the node (the test kills it).
                std::thread::sleep(Duration::from_secs(60));
            }
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
