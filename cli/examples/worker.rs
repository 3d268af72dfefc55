//! The Rust face's demo worker: `worker SERVERS PATH ROUNDS LOGFILE`.
//!
//! Takes the mutex at PATH ROUNDS times; in each critical section (about 20 ms) it appends
//! `rust <token> <enter_ns> <exit_ns>` (wall-clock ns since the epoch) to LOGFILE. The same
//! protocol as the Python, Node and C workers, so `zklock check-log --timeline` can show and
//! judge them all together.

use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [servers, path, rounds, logfile] = &args[..] else {
        eprintln!("usage: worker SERVERS PATH ROUNDS LOGFILE");
        std::process::exit(64);
    };
    let Ok(rounds) = rounds.parse::<u32>() else {
        eprintln!("worker: ROUNDS must be a number, got {rounds:?}");
        std::process::exit(64);
    };
    if let Err(e) = work(servers, path, rounds, logfile) {
        eprintln!("rust worker: {e}");
        std::process::exit(1);
    }
}

fn work(
    servers: &str,
    path: &str,
    rounds: u32,
    logfile: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let identity = format!("rust-worker/{}", std::process::id());
    // A secured ensemble: the same variables as the CLI's.
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let options = zklock::SecureParts {
        tls_ca: env("ZKLOCK_TLS_CA"),
        tls_cert: env("ZKLOCK_TLS_CERT"),
        tls_key: env("ZKLOCK_TLS_KEY"),
        tls_verify_hostname: None,
        sasl_user: env("ZKLOCK_SASL_USER"),
        sasl_password: env("ZKLOCK_SASL_PASSWORD"),
    }
    .apply(zklock::Options::default().identity(identity))?;
    let client = zklock::Client::blocking_connect(servers, options)?;
    let mutex = client.mutex(path)?;
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(logfile)?;
    for _ in 0..rounds {
        let lease = mutex.blocking_acquire()?;
        let enter = now_ns();
        std::thread::sleep(Duration::from_millis(20));
        let exit = now_ns();
        // One write per line: O_APPEND keeps lines from different processes whole.
        log.write_all(format!("rust {} {enter} {exit}\n", lease.token()).as_bytes())?;
        lease.blocking_release()?;
    }
    client.blocking_close();
    Ok(())
}
