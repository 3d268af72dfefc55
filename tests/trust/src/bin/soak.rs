//! `soak [SECONDS]` (default 600, `make soak`): a 3-node ensemble behind fault proxies, clients
//! contending on a few locks while random faults are injected (connections cut, black-holed for
//! a while, a member restarted, the leader killed). Prints operations done, faults injected,
//! overlaps (must be 0) and leftover nodes (must be 0); exits non-zero otherwise.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zklock_testkit::{Proxy, ZooKeeper};
use zklock_trust::fenced::FencedRegister;

const LOCKS: usize = 3;
const CLIENTS: usize = 6;

struct Shared {
    inside: Vec<AtomicBool>,
    registers: Vec<FencedRegister>,
    ops: AtomicUsize,
    overlaps: AtomicUsize,
    fenced_rejections: AtomicUsize,
    errors: AtomicUsize,
    stop: AtomicBool,
}

fn main() {
    let seconds: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    let mut zk = ZooKeeper::ensemble(3).unwrap_or_else(|e| {
        eprintln!("soak: {e}");
        std::process::exit(1);
    });
    let proxies: Vec<Proxy> = (0..3)
        .map(|i| Proxy::start(&zk.address(i)).expect("proxy"))
        .collect();
    let servers = proxies
        .iter()
        .map(|p| p.addr().to_owned())
        .collect::<Vec<_>>()
        .join(",");
    let shared = Arc::new(Shared {
        inside: (0..LOCKS).map(|_| AtomicBool::new(false)).collect(),
        registers: (0..LOCKS).map(|_| FencedRegister::default()).collect(),
        ops: AtomicUsize::new(0),
        overlaps: AtomicUsize::new(0),
        fenced_rejections: AtomicUsize::new(0),
        errors: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
    });
    let workers: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (servers, shared) = (servers.clone(), shared.clone());
            std::thread::spawn(move || worker(c, &servers, &shared))
        })
        .collect();

    let started = Instant::now();
    let mut faults = 0usize;
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    while started.elapsed() < Duration::from_secs(seconds) {
        std::thread::sleep(Duration::from_millis(1500));
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let member = (seed % 3) as usize;
        match (seed >> 8) % 5 {
            0 => proxies[member].cut(),
            1 => {
                proxies[member].blackhole();
                std::thread::sleep(Duration::from_millis(1000 + seed % 3000));
                proxies[member].heal();
            }
            2 => {
                zk.restart(member).expect("restart member");
            }
            3 => {
                if let Some(leader) = zk.leader() {
                    zk.stop(leader);
                    std::thread::sleep(Duration::from_millis(500));
                    zk.restart(leader).expect("restart leader");
                }
            }
            _ => proxies[member].delay(50),
        }
        faults += 1;
        std::thread::sleep(Duration::from_millis(500));
        for p in &proxies {
            p.heal();
        }
    }
    shared.stop.store(true, Ordering::SeqCst);
    for w in workers {
        w.join().expect("worker");
    }
    std::thread::sleep(Duration::from_secs(2));
    let leftovers = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let zk = zookeeper_client::Client::connect(&zk.connect_string())
            .await
            .expect("connect");
        let mut n = 0;
        for l in 0..LOCKS {
            n += zk
                .list_children(&format!("/soak/lock{l}"))
                .await
                .unwrap_or_default()
                .len();
        }
        n
    });
    let overlaps = shared.overlaps.load(Ordering::SeqCst);
    println!(
        "soak: {}s, operations {}, faults injected {faults}, typed errors {}, fenced rejections {}, overlaps {overlaps}, leftover nodes {leftovers}",
        seconds,
        shared.ops.load(Ordering::SeqCst),
        shared.errors.load(Ordering::SeqCst),
        shared.fenced_rejections.load(Ordering::SeqCst),
    );
    if overlaps > 0 || leftovers > 0 {
        std::process::exit(1);
    }
}

fn worker(c: usize, servers: &str, shared: &Shared) {
    let options = zklock::Options::default()
        .session_timeout(Duration::from_secs(4))
        .connect_timeout(Duration::from_secs(30));
    let client = loop {
        match zklock::Client::blocking_connect(servers, options.clone()) {
            Ok(c) => break c,
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    };
    let locks: Vec<_> = (0..LOCKS)
        .map(|l| client.mutex(&format!("/soak/lock{l}")).unwrap())
        .collect();
    let mut i = c;
    while !shared.stop.load(Ordering::SeqCst) {
        i += 1;
        let l = i % LOCKS;
        let lease = match locks[l].blocking_acquire_timeout(Duration::from_secs(10)) {
            Ok(lease) => lease,
            Err(_) => {
                shared.errors.fetch_add(1, Ordering::SeqCst);
                continue;
            }
        };
        if lease.is_held() {
            if shared.inside[l].swap(true, Ordering::SeqCst) {
                shared.overlaps.fetch_add(1, Ordering::SeqCst);
            }
            // The protected resource checks the fencing token.
            if shared.registers[l]
                .write(lease.token(), format!("client {c}"))
                .is_err()
            {
                shared.fenced_rejections.fetch_add(1, Ordering::SeqCst);
            }
            std::thread::sleep(Duration::from_millis(2));
            shared.inside[l].store(false, Ordering::SeqCst);
            shared.ops.fetch_add(1, Ordering::SeqCst);
        }
        let _ = lease.blocking_release();
    }
    client.blocking_close();
}
