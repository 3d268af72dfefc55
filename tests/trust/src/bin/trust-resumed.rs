//! A lock holder that watches its own lease across a stop (SIGSTOP/SIGCONT from outside):
//! `trust-resumed SERVERS PATH SESSION_MS`. Acquires the mutex and prints `token N left=MS`
//! (the time its lease has left), then
//! `renewed` each time the lease's `valid_until` moves forward (the lifeline's proofs landing).
//! Its watch loop turns every 10 ms; a turn that took longer than `STOPPED` means the process
//! was stopped, and from then on it prints
//!
//! - `resumed left=MS`: the time left (`valid_until` − now, in ms) at the first read after the
//!   stop;
//! - `caught-up left=MS`: the time left once `valid_until` moved more than a second past where
//!   the stop left it (the catch-up proof landed), or `lost reason=…` when the lease was lost
//!   first;
//! - `kept` once the lease stayed held for a session timeout after the stop, then exits.

use std::io::Write;
use std::time::{Duration, Instant};

/// A watch-loop turn this long was a stop from outside, not a slow turn (the rounds stop the
/// holder for 5 s).
const STOPPED: Duration = Duration::from_millis(2500);

fn left_ms(until: Option<Instant>, now: Instant) -> f64 {
    match until {
        Some(u) if u >= now => u.duration_since(now).as_secs_f64() * 1000.0,
        Some(u) => -(now.duration_since(u).as_secs_f64() * 1000.0),
        None => f64::NAN,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (servers, path) = (&args[0], &args[1]);
    let session = Duration::from_millis(args[2].parse().expect("SESSION_MS"));
    let options = zklock::Options::default().session_timeout(session);
    let client = zklock::Client::blocking_connect(servers, options).expect("connect");
    let lease = client
        .mutex(path)
        .unwrap()
        .blocking_acquire()
        .expect("acquire");
    let mut out = std::io::stdout();
    let mut say = |line: String| {
        writeln!(out, "{line}").ok();
        out.flush().ok();
    };
    let mut until = lease.valid_until();
    let mut turn = Instant::now();
    say(format!(
        "token {} left={:.0}",
        lease.token(),
        left_ms(until, turn)
    ));
    // Set at the first turn after the stop: the deadline the stop left.
    let mut resumed: Option<(Instant, Option<Instant>)> = None;
    let mut caught_up = false;
    loop {
        std::thread::sleep(Duration::from_millis(10));
        let now = Instant::now();
        let stopped = now.duration_since(turn) >= STOPPED;
        turn = now;
        let state = lease.state();
        let valid = lease.valid_until();
        if state == zklock::LeaseState::Lost {
            say(format!(
                "lost reason={}",
                lease.lost_reason().unwrap_or_default()
            ));
            return;
        }
        if resumed.is_none() && stopped {
            say(format!("resumed left={:.0}", left_ms(valid, now)));
            resumed = Some((now, valid));
        }
        match resumed {
            None => {
                if valid > until {
                    say("renewed".into());
                }
            }
            Some((at, left_by_stop)) => {
                // A proof whose j was sent after the stop moves the deadline by more than a
                // second (the stop lasts longer); the reconnect's own proof moves it by less.
                if !caught_up && valid > left_by_stop.map(|u| u + Duration::from_secs(1)) {
                    caught_up = true;
                    say(format!("caught-up left={:.0}", left_ms(valid, now)));
                }
                if caught_up && now.duration_since(at) >= session {
                    say("kept".into());
                    return;
                }
            }
        }
        until = valid;
    }
}
