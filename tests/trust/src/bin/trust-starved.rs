//! A lock holder for the starved-holder test (issue 37, point 6):
//! `trust-starved SERVERS PATH DATA_PATH SESSION_MS TICK_MS`. Acquires the mutex, prints
//! `token N`, then, until a second after its lease turned lost, reads its lease over and over and
//! prints one line per read and per guarded write, with wall-clock milliseconds (the test
//! compares them with the waiter's, in another process):
//!
//! - `read T STATE VALID_UNTIL`: T taken just before the state was read; VALID_UNTIL read just
//!   after it (`none` once final), so a read that says `held` at T has T before the deadline
//!   that stood when it was read, unless the lease broke its promise;
//! - `write T ok|KIND`: a guarded `set_data` of the token to DATA_PATH, started at T.
//!
//! Ends with `done`. The test throttles this process to 1% of a CPU while it holds.

use std::io::Write as _;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use zklock::{LeaseState, Options, Write};

fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_millis() as i64
}

/// `at` (a monotonic instant) on the wall clock, in milliseconds.
fn wall_of(at: Instant) -> i64 {
    let now = Instant::now();
    let wall = wall_ms();
    if at >= now {
        wall + (at - now).as_millis() as i64
    } else {
        wall - (now - at).as_millis() as i64
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [servers, path, data_path, session_ms, tick_ms] = &args[..] else {
        panic!("usage: trust-starved SERVERS PATH DATA_PATH SESSION_MS TICK_MS");
    };
    let options = Options::default()
        .session_timeout(Duration::from_millis(
            session_ms.parse().expect("SESSION_MS"),
        ))
        .server_tick(Duration::from_millis(tick_ms.parse().expect("TICK_MS")));
    let client = zklock::Client::blocking_connect(servers, options).expect("connect");
    let lease = client
        .mutex(path)
        .expect("lock path")
        .blocking_acquire()
        .expect("acquire");
    let token = lease.token();
    let mut out = std::io::stdout().lock();
    writeln!(out, "token {token}").ok();
    out.flush().ok();
    let mut lost_at: Option<Instant> = None;
    let mut n = 0u64;
    while lost_at.is_none_or(|at| at.elapsed() < Duration::from_secs(1)) {
        let t = wall_ms();
        let state = lease.state();
        let until = lease
            .valid_until()
            .map_or("none".to_owned(), |u| wall_of(u).to_string());
        writeln!(out, "read {t} {} {until}", state.as_str()).ok();
        if state == LeaseState::Lost && lost_at.is_none() {
            lost_at = Some(Instant::now());
        }
        if n.is_multiple_of(5) {
            let t = wall_ms();
            let write = Write::set_data(data_path.as_str(), token.to_string());
            let outcome = match lease
                .blocking_guarded_write_timeout(vec![write], Some(Duration::from_secs(2)))
            {
                Ok(_) => "ok".to_owned(),
                Err(e) => e.kind().as_str().to_owned(),
            };
            writeln!(out, "write {t} {outcome}").ok();
        }
        out.flush().ok();
        n += 1;
        std::thread::sleep(Duration::from_millis(10));
    }
    writeln!(out, "done").ok();
    out.flush().ok();
}
