//! zklock's semaphore and revocation against real Apache Curator on one path (issue 14):
//! Semaphore(2) with InterProcessSemaphoreV2(2) never holds more than two leases,
//! SemaphoreMutex and InterProcessSemaphoreMutex exclude each other, revocation works both ways
//! (Curator's Revoker reaches a zklock holder, zklock's reaches Curator's RevocationListener),
//! and a lease create whose reply is lost leaks no node and never exceeds N.

use std::io::{BufRead, BufReader};
use std::process::Child;
use std::time::Duration;

use zklock_trust::{checker, peers};

const WORKER: &str = env!("CARGO_BIN_EXE_trust-worker");

fn log_file(name: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("zklock-sem-{name}-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

async fn children(servers: &str, path: &str) -> Vec<String> {
    let zk = zookeeper_client::Client::connect(servers).await.unwrap();
    zk.list_children(path).await.unwrap_or_default()
}

/// Waits up to 10 s for the semaphore's `leases` and `locks` to be empty.
async fn assert_no_node_left(servers: &str, path: &str) {
    for dir in ["leases", "locks"] {
        let dir = format!("{path}/{dir}");
        let mut left = Vec::new();
        for _ in 0..100 {
            left = children(servers, &dir).await;
            if left.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(left.is_empty(), "{dir} still holds {left:?}");
    }
}

/// Runs zklock and Curator workers in `mode` on one path; returns their sections.
async fn contend(
    name: &str,
    mode: &str,
    per_library: usize,
    rounds: usize,
) -> Vec<checker::Section> {
    let servers = zklock_testkit::shared();
    let path = zklock_testkit::unique_path(name);
    let log = log_file(name);
    let mut workers = Vec::new();
    for i in 0..per_library {
        let zk = peers::spawn_zklock(WORKER, servers, &path, mode, rounds, &log).expect("zklock");
        workers.push((format!("zklock-{i}"), zk));
        let cur = peers::spawn_curator(servers, &path, mode, rounds, &log).expect("curator");
        workers.push((format!("curator-{i}"), cur));
    }
    tokio::task::spawn_blocking(move || peers::wait_all(workers))
        .await
        .unwrap()
        .unwrap();
    let sections = checker::parse(&std::fs::read_to_string(&log).unwrap()).unwrap();
    assert_eq!(sections.len(), 2 * per_library * rounds);
    for who in ["zklock", "curator"] {
        assert!(sections.iter().any(|s| s.who == who), "no {who} section");
    }
    assert_no_node_left(servers, &path).await;
    sections
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_and_curator_semaphores_of_two_never_hold_more_than_two_leases() {
    let sections = contend("sem-two", "semaphore-2", 2, 40).await;
    let most = checker::max_concurrent(&sections);
    assert!(most <= 2, "{most} leases held at once");
    assert_eq!(
        most, 2,
        "four workers on two leases fill both at some moment"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_semaphore_mutex_and_curator_semaphore_mutex_exclude_each_other() {
    let sections = contend("sem-mutex", "semaphore-mutex", 1, 60).await;
    let verdict = checker::check(sections);
    assert!(verdict.ok(), "{verdict:?}");
}

/// Reads the child's stdout lines until one starts with `prefix` (at most `limit`).
fn line_starting(child: &mut Child, prefix: &str, limit: Duration) -> String {
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let deadline = std::time::Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.starts_with(prefix) => {
                // Keep draining the peer's output so that it never blocks on a full pipe.
                std::thread::spawn(move || rx.into_iter().for_each(drop));
                return line;
            }
            Ok(_) => {}
            Err(_) => panic!("the Curator peer printed no {prefix:?} line within {limit:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curators_revoker_reaches_a_zklock_holder_and_zklock_revoke_reaches_curators_listener() {
    let servers = zklock_testkit::shared();
    let client = zklock::Client::connect(servers, zklock::Options::default())
        .await
        .unwrap();

    // Curator -> zklock: Revoker.attemptRevoke on our node.
    let path = zklock_testkit::unique_path("revoke-by-curator");
    let lease = client.mutex(&path).unwrap().acquire().await.unwrap();
    let requested = lease.revoke_requested();
    let mut revoker = peers::curator_revocation(&["revoke", servers, lease.path()]).unwrap();
    let status = tokio::task::spawn_blocking(move || revoker.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "Revoker.attemptRevoke: {status}");
    tokio::time::timeout(Duration::from_secs(10), requested)
        .await
        .expect("the zklock holder hears Curator's revocation");
    lease.release().await.unwrap();

    // zklock -> Curator: `Client::revoke` reaches a RevocationListener.
    let path = zklock_testkit::unique_path("revoke-by-zklock");
    let mut holder = peers::curator_revocation(&["hold", servers, &path]).unwrap();
    let held = tokio::task::block_in_place(|| {
        line_starting(&mut holder, "held ", Duration::from_secs(30))
    });
    let asked = client.revoke(&path, None).await.unwrap();
    assert_eq!(vec![held["held ".len()..].to_owned()], asked);
    let status = tokio::task::spawn_blocking(move || holder.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(
        status.success(),
        "the Curator holder's RevocationListener was not called: {status}"
    );
    assert!(children(servers, &path).await.is_empty());
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_create_whose_reply_is_lost_leaks_no_node_and_never_exceeds_n() {
    let servers = zklock_testkit::shared();
    let path = zklock_testkit::unique_path("sem-lost-reply");
    let leases = format!("{path}/leases");
    // Curator holds one lease of two.
    let mut curator = peers::curator_revocation(&["lease", servers, &path, "2"]).unwrap();
    let curators = tokio::task::block_in_place(|| {
        line_starting(&mut curator, "lease ", Duration::from_secs(30))
    });
    // What `zklock ls` reads: the path is not free, Curator's lease node holds it.
    let looker = zklock::Client::connect(servers, zklock::Options::default())
        .await
        .unwrap();
    let seen = looker.mutex(&path).unwrap().participants().await.unwrap();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].node, curators["lease ".len()..]);
    assert_eq!(
        (seen[0].kind, seen[0].library),
        (zklock::NodeKind::Lease, zklock::Library::Curator)
    );
    assert!(seen[0].token > 0);
    looker.close().await;

    let first = servers.split(',').next().unwrap();
    let (proxy_a, proxy_b) = (
        zklock_testkit::Proxy::start(first).unwrap(),
        zklock_testkit::Proxy::start(first).unwrap(),
    );
    let options = zklock::Options::default().session_timeout(Duration::from_secs(10));
    let a = zklock::Client::connect(proxy_a.addr(), options.clone())
        .await
        .unwrap();
    let b = zklock::Client::connect(proxy_b.addr(), options)
        .await
        .unwrap();

    // The reply to our create is dropped and the connection cut: we still get exactly one node.
    proxy_a.drop_next_reply();
    let lease = a
        .semaphore(&path, 2)
        .unwrap()
        .acquire_timeout(Duration::from_secs(30))
        .await
        .unwrap();
    let now = children(servers, &leases).await;
    assert_eq!(
        now.len(),
        2,
        "Curator's lease and ours, no duplicate: {now:?}"
    );

    // Full: a second create whose reply is lost fails the try and leaves nothing behind.
    proxy_b.drop_next_reply();
    let tried = b.semaphore(&path, 2).unwrap().try_acquire().await;
    assert!(matches!(tried, Ok(None)), "{tried:?}");
    for _ in 0..10 {
        let now = children(servers, &leases).await;
        assert!(now.len() <= 3, "{now:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let now = children(servers, &leases).await;
    assert_eq!(now.len(), 2, "the failed try's node is gone: {now:?}");

    lease.release().await.unwrap();
    drop(curator.stdin.take());
    tokio::task::spawn_blocking(move || curator.wait())
        .await
        .unwrap()
        .unwrap();
    a.close().await;
    b.close().await;
    assert_no_node_left(servers, &path).await;
}
