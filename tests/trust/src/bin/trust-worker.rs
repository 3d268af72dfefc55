//! zklock's worker for the trust suites: `trust-worker SERVERS PATH MODE ROUNDS LOGFILE`, MODE one
//! of mutex | read | write | rw-random | semaphore-N (a lease of a semaphore of N, logged as a
//! shared section) | semaphore-mutex (exclusive). Appends `zklock <exclusive|shared> <token> <enter_ns>
//! <exit_ns>` per critical section. `elect-latch | elect-selector | elect-kazoo` lead an election
//! of that layout ROUNDS times instead (the id `zklock-<pid>`), each leadership a section. A lost lease or an acquire error is retried (and reported on
//! stderr), so a worker under injected faults still finishes its rounds.

use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() != 5 {
        eprintln!("usage: trust-worker SERVERS PATH MODE ROUNDS LOGFILE");
        std::process::exit(2);
    }
    let (servers, path, mode, log) = (&args[0], &args[1], args[2].as_str(), &args[4]);
    let rounds: usize = args[3].parse().expect("ROUNDS");
    let options = zklock::Options::default()
        .session_timeout(Duration::from_secs(4))
        .identity(format!("trust-worker/{}", std::process::id()));
    let client = zklock::Client::blocking_connect(servers, options).unwrap_or_else(|e| {
        eprintln!("trust-worker: {e}");
        std::process::exit(1);
    });
    let mutex = client.mutex(path).unwrap();
    let rw = client.rw_lock(path).unwrap();
    let semaphore = match mode.strip_prefix("semaphore-") {
        Some("mutex") => Some(client.semaphore_mutex(path).unwrap()),
        Some(n) => Some(
            client
                .semaphore(path, n.parse().expect("semaphore-N"))
                .unwrap(),
        ),
        None => None,
    };
    let election = mode.strip_prefix("elect-").map(|style| {
        client
            .election(
                path,
                style.parse().expect("elect-STYLE"),
                Some(&format!("zklock-{}", std::process::id())),
            )
            .unwrap()
    });
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("log file");
    let mut seed = (std::process::id() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut done = 0;
    while done < rounds {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let kind = match mode {
            "rw-random" if seed.is_multiple_of(4) => "write",
            "rw-random" => "read",
            m => m,
        };
        let lock = match kind {
            _ if semaphore.is_some() => semaphore.as_ref().unwrap(),
            "mutex" => &mutex,
            "read" => rw.read(),
            _ => rw.write(),
        };
        let wait = zklock::Wait::timeout(Duration::from_secs(60));
        let taken = match &election {
            Some(election) => election.blocking_lead_with(wait, None),
            None => lock.blocking_acquire_timeout(Duration::from_secs(60)),
        };
        let lease = match taken {
            Ok(l) => l,
            Err(e) => {
                eprintln!("trust-worker: acquire: {e}; retrying");
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        let enter = now_ns();
        std::thread::sleep(Duration::from_micros(1000 + seed % 2000));
        let exit = now_ns();
        // Only a section the lease still held at its end counts (a lost one did not finish
        // its work under the lock: a fenced resource would have rejected it).
        let held = lease.is_held();
        let token = lease.token();
        match lease.blocking_release() {
            Ok(zklock::Released::Released) if held => {
                let kind = if kind == "read"
                    || (kind.starts_with("semaphore-") && kind != "semaphore-mutex")
                {
                    "shared"
                } else {
                    "exclusive"
                };
                // One write per line: O_APPEND keeps concurrent writers' lines whole.
                out.write_all(format!("zklock {kind} {token} {enter} {exit}\n").as_bytes())
                    .ok();
                done += 1;
            }
            other => eprintln!("trust-worker: section not counted: held={held} release={other:?}"),
        }
    }
    client.blocking_close();
}
