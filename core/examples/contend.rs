//! Several clients contend for one lock and print their fencing tokens; a checker confirms that
//! no two critical sections overlapped and that tokens only grew.
//!
//! `cargo run -p zklock --example contend` (uses ZKLOCK_SERVERS, else starts a local ZooKeeper).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One critical section: worker, token, entered, left (since the demo started).
type Section = (usize, i64, Duration, Duration);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _local;
    let servers = match std::env::var("ZKLOCK_SERVERS") {
        Ok(s) if !s.is_empty() => s,
        _ => {
            println!("ZKLOCK_SERVERS not set: starting a local ZooKeeper...");
            _local = zklock_testkit::ZooKeeper::standalone()?;
            _local.connect_string()
        }
    };
    let path = "/zklock-demo/contend";
    let start = Instant::now();
    let log: Arc<Mutex<Vec<Section>>> = Arc::default();
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let (servers, log) = (servers.clone(), log.clone());
            std::thread::spawn(move || -> zklock::Result<()> {
                let client = zklock::Client::blocking_connect(
                    &servers,
                    zklock::Options::default().identity(format!("worker-{w}")),
                )?;
                let mutex = client.mutex(path)?;
                for _ in 0..5 {
                    let lease = mutex.blocking_acquire()?;
                    let entered = start.elapsed();
                    std::thread::sleep(Duration::from_millis(20));
                    let left = start.elapsed();
                    println!(
                        "worker {w}: token {:>6}  held {:>7.1?} .. {:>7.1?}",
                        lease.token(),
                        entered,
                        left
                    );
                    log.lock().unwrap().push((w, lease.token(), entered, left));
                    lease.blocking_release()?;
                }
                client.blocking_close();
                Ok(())
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker panicked")?;
    }
    let mut sections = log.lock().unwrap().clone();
    sections.sort_by_key(|s| s.2);
    let overlaps = sections.windows(2).filter(|p| p[1].2 < p[0].3).count();
    let increasing = sections.windows(2).all(|p| p[1].1 > p[0].1);
    println!(
        "verdict: {} critical sections, {overlaps} overlaps, tokens {}",
        sections.len(),
        if increasing {
            "strictly increasing"
        } else {
            "NOT increasing"
        }
    );
    if overlaps > 0 || !increasing {
        return Err("mutual exclusion violated".into());
    }
    Ok(())
}
