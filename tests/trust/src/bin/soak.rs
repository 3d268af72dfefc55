//! `soak [SECONDS]` (default 600, `make soak`): a 3-node ensemble, each client behind fault
//! proxies of its own, clients contending on a few locks while random faults are injected
//! (connections cut, a member black-holed for a while, one client partitioned from the whole
//! ensemble past its session timeout, a member restarted, the leader killed, a slow link, and a
//! member cut off from its peers by a black hole or a cut while its clients still reach it:
//! the ensemble's peer links run through fault proxies of their own).
//! Every critical section is recorded; it ends at its release or at its lease's lost signal,
//! whichever comes first (a careful holder stops working when told), and the exclusion checker
//! counts overlaps of sections of one lock. Prints operations done, faults injected, overlaps
//! (must be 0) and leftover nodes (must be 0); exits non-zero otherwise.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use zklock_testkit::{Config, Isolation, Proxy, ZooKeeper};
use zklock_trust::checker::{self, Section};
use zklock_trust::fenced::FencedRegister;

const LOCKS: usize = 3;
const CLIENTS: usize = 6;

struct Shared {
    started: Instant,
    /// The client in a long critical section now, plus one (0: none): the partition's target.
    long_holder: AtomicUsize,
    /// Critical sections per lock.
    sections: Vec<Mutex<Vec<Section>>>,
    registers: Vec<FencedRegister>,
    ops: AtomicUsize,
    fenced_rejections: AtomicUsize,
    errors: AtomicUsize,
    stop: AtomicBool,
}

fn main() {
    let seconds: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    let config = Config {
        peer_proxies: true,
        ..Config::default()
    };
    let mut zk = ZooKeeper::start(3, &config).unwrap_or_else(|e| {
        eprintln!("soak: {e}");
        std::process::exit(1);
    });
    // proxies[client][member]: a partition can cut one client off from every member.
    let proxies: Vec<Vec<Proxy>> = (0..CLIENTS)
        .map(|_| {
            (0..3)
                .map(|i| Proxy::start(&zk.address(i)).expect("proxy"))
                .collect()
        })
        .collect();
    let shared = Arc::new(Shared {
        started: Instant::now(),
        long_holder: AtomicUsize::new(0),
        sections: (0..LOCKS).map(|_| Mutex::new(Vec::new())).collect(),
        registers: (0..LOCKS).map(|_| FencedRegister::default()).collect(),
        ops: AtomicUsize::new(0),
        fenced_rejections: AtomicUsize::new(0),
        errors: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
    });
    let workers: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let servers = proxies[c]
                .iter()
                .map(|p| p.addr().to_owned())
                .collect::<Vec<_>>()
                .join(",");
            let shared = shared.clone();
            std::thread::spawn(move || worker(c, &servers, &shared))
        })
        .collect();

    let started = Instant::now();
    let mut faults = 0usize;
    let mut isolations = 0usize;
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    while started.elapsed() < Duration::from_secs(seconds) {
        std::thread::sleep(Duration::from_millis(1500));
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let member = (seed % 3) as usize;
        let to_member = |f: &dyn Fn(&Proxy)| proxies.iter().for_each(|c| f(&c[member]));
        // Faults 0-4 hit one member for every client, 10-11 cut a member off from its peers
        // (the holders on it must know first), the rest partition one client.
        match (seed >> 8) % 12 {
            10 | 11 => {
                let how = if (seed >> 8) % 12 == 10 {
                    Isolation::BlackHole
                } else {
                    Isolation::Cut
                };
                zk.isolate(member, how);
                std::thread::sleep(Duration::from_millis(1000 + seed % 6000));
                zk.heal(member);
                isolations += 1;
            }
            0 => to_member(&|p| p.cut()),
            1 => {
                to_member(&|p| p.blackhole());
                std::thread::sleep(Duration::from_millis(1000 + seed % 3000));
                to_member(&|p| p.heal());
            }
            4 => to_member(&|p| p.delay(50)),
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
            _ => {
                // One client partitioned from the whole ensemble, often past its session
                // timeout (4 s), while the others go on: preferably one in a long critical
                // section, whose lost signal must then end it before another client enters.
                let client = match shared.long_holder.load(Ordering::SeqCst) {
                    0 => (seed >> 16) as usize % CLIENTS,
                    holder => holder - 1,
                };
                proxies[client].iter().for_each(Proxy::blackhole);
                std::thread::sleep(Duration::from_millis(2000 + seed % 5000));
                proxies[client].iter().for_each(Proxy::heal);
            }
        }
        faults += 1;
        std::thread::sleep(Duration::from_millis(500));
        proxies.iter().flatten().for_each(Proxy::heal);
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
    let mut overlaps = 0;
    let mut lost_sections = 0;
    for sections in &shared.sections {
        let verdict = checker::check(sections.lock().unwrap().clone());
        for overlap in &verdict.overlaps {
            eprintln!("soak: overlap: {overlap}");
        }
        overlaps += verdict.overlaps.len() + verdict.token_regressions.len();
        for regression in &verdict.token_regressions {
            eprintln!("soak: fencing token regression: {regression}");
        }
    }
    for sections in &shared.sections {
        lost_sections += sections
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.who.ends_with("lost"))
            .count();
    }
    println!(
        "soak: {}s, operations {}, faults injected {faults} (member isolations {isolations}), sections ended by a lost signal {lost_sections}, typed errors {}, fenced rejections {}, overlaps {overlaps}, leftover nodes {leftovers}",
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
            let (lost_tx, lost_rx) = mpsc::channel();
            lease.on_lost(move || {
                lost_tx.send(()).ok();
            });
            let enter = shared.started.elapsed().as_nanos() as i128;
            // The protected resource checks the fencing token.
            if shared.registers[l]
                .write(lease.token(), format!("client {c}"))
                .is_err()
            {
                shared.fenced_rejections.fetch_add(1, Ordering::SeqCst);
            }
            // Mostly short sections; every fifth one long enough to be caught by a partition.
            let long = i.is_multiple_of(5);
            if long {
                shared.long_holder.store(c + 1, Ordering::SeqCst);
            }
            let work = if long { 6000 } else { 2 };
            let lost = lost_rx.recv_timeout(Duration::from_millis(work)).is_ok();
            if long {
                let _ = shared.long_holder.compare_exchange(
                    c + 1,
                    0,
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                );
            }
            let exit = shared.started.elapsed().as_nanos() as i128;
            shared.sections[l].lock().unwrap().push(Section {
                who: format!("client{c}{}", if lost { "-lost" } else { "" }),
                exclusive: true,
                token: lease.token(),
                enter,
                exit,
            });
            shared.ops.fetch_add(1, Ordering::SeqCst);
        }
        let _ = lease.blocking_release();
    }
    client.blocking_close();
}
