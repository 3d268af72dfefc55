//! Interop with the real peers on one path (issue 7, acceptance 2): zklock, Apache Curator's
//! InterProcessMutex and kazoo's Lock exclude each other; zklock's RwLock and Curator's
//! InterProcessReadWriteLock share reads and exclude writes.

use zklock_trust::{checker, peers};

const WORKER: &str = env!("CARGO_BIN_EXE_trust-worker");

fn log_file(name: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("zklock-interop-{name}-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

async fn leftovers(servers: &str, path: &str) -> Vec<String> {
    let zk = zookeeper_client::Client::connect(servers).await.unwrap();
    zk.list_children(path).await.unwrap_or_default()
}

type Spawn = fn(&str, &str, &str, usize, &std::path::Path) -> Result<std::process::Child, String>;

fn spawn_zklock(
    servers: &str,
    path: &str,
    mode: &str,
    rounds: usize,
    log: &std::path::Path,
) -> Result<std::process::Child, String> {
    peers::spawn_zklock(WORKER, servers, path, mode, rounds, log)
}

/// Runs the named workers on one path and returns the checker's verdict on their log.
async fn contend(
    name: &str,
    workers: &[(&str, Spawn, usize)],
) -> (checker::Verdict, Vec<checker::Section>) {
    let servers = zklock_testkit::shared();
    let path = zklock_testkit::unique_path(name);
    let log = log_file(name);
    let children = workers
        .iter()
        .map(|(who, spawn, rounds)| {
            (
                who.to_string(),
                spawn(servers, &path, "mutex", *rounds, &log).expect(who),
            )
        })
        .collect();
    tokio::task::spawn_blocking(move || peers::wait_all(children))
        .await
        .unwrap()
        .unwrap();
    let sections = checker::parse(&std::fs::read_to_string(&log).unwrap()).unwrap();
    assert!(
        leftovers(servers, &path).await.is_empty(),
        "no node left on {path}"
    );
    (checker::check(sections.clone()), sections)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_and_curator_mutex_exclude_each_other() {
    let (verdict, _) = contend(
        "interop-curator",
        &[
            ("zklock", spawn_zklock, 250),
            ("curator", peers::spawn_curator, 250),
        ],
    )
    .await;
    assert_eq!(verdict.sections, 500);
    assert!(verdict.ok(), "{verdict:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_and_kazoo_lock_exclude_each_other() {
    let (verdict, _) = contend(
        "interop-kazoo",
        &[
            ("zklock", spawn_zklock, 250),
            ("kazoo", peers::spawn_kazoo, 250),
        ],
    )
    .await;
    assert_eq!(verdict.sections, 500);
    assert!(verdict.ok(), "{verdict:?}");
}

/// All three on one path. zklock reads both peers' names and is excluded by both; Curator and
/// kazoo do not exclude each other (Curator sorts kazoo's `__lock__` names by the whole name,
/// docs/interop.md), so only sections that involve zklock are held to exclusion here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_excludes_and_is_excluded_by_curator_and_kazoo_together() {
    let (_, sections) = contend(
        "interop-three",
        &[
            ("zklock", spawn_zklock, 125),
            ("zklock", spawn_zklock, 125),
            ("curator", peers::spawn_curator, 125),
            ("kazoo", peers::spawn_kazoo, 125),
        ],
    )
    .await;
    assert_eq!(sections.len(), 500);
    let mut zklock_pairs = 0;
    for a in sections.iter().filter(|s| s.who == "zklock") {
        for b in sections.iter().filter(|b| !std::ptr::eq(*b, a)) {
            assert!(
                b.exit <= a.enter || a.exit <= b.enter,
                "zklock section {a:?} overlaps {b:?}"
            );
            zklock_pairs += 1;
        }
    }
    assert!(zklock_pairs > 0);
    let peer_overlaps =
        checker::check(sections.into_iter().filter(|s| s.who != "zklock").collect())
            .overlaps
            .len();
    eprintln!("Curator/kazoo overlaps among themselves (a peer incompatibility, not zklock's): {peer_overlaps}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_rwlock_and_curator_rwlock_share_reads_and_exclude_writes() {
    let servers = zklock_testkit::shared();
    let path = zklock_testkit::unique_path("interop-rw");
    let log = log_file("rw");
    let workers = vec![
        (
            "zklock-1".to_string(),
            peers::spawn_zklock(WORKER, servers, &path, "rw-random", 100, &log).unwrap(),
        ),
        (
            "zklock-2".to_string(),
            peers::spawn_zklock(WORKER, servers, &path, "rw-random", 100, &log).unwrap(),
        ),
        (
            "curator-1".to_string(),
            peers::spawn_curator(servers, &path, "rw-random", 100, &log).expect("Curator worker"),
        ),
        (
            "curator-2".to_string(),
            peers::spawn_curator(servers, &path, "rw-random", 100, &log).expect("Curator worker"),
        ),
    ];
    tokio::task::spawn_blocking(move || peers::wait_all(workers))
        .await
        .unwrap()
        .unwrap();
    let verdict = checker::check_file(&log).unwrap();
    assert_eq!(verdict.sections, 400);
    assert!(verdict.ok(), "{verdict:?}");
    assert!(
        verdict.shared_overlaps > 0,
        "readers of both libraries overlapped at least once"
    );
    assert!(leftovers(servers, &path).await.is_empty());
}

/// docs/interop.md's kazoo table: kazoo's WriteLock (`extra_lock_patterns=["__WRIT__",
/// "__READ__"]`) excludes zklock's readers and writers on one path. (kazoo's ReadLock is left
/// out: kazoo 2.8's ReadLock waits for writers queued after it, so any writer behind a waiting
/// reader, kazoo's own WriteLock included, waits for a timeout; docs/interop.md.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_rwlock_and_kazoo_write_lock_exclude_each_other() {
    let servers = zklock_testkit::shared();
    let path = zklock_testkit::unique_path("interop-kazoo-rw");
    let log = log_file("kazoo-rw");
    let workers = vec![
        (
            "zklock".to_string(),
            peers::spawn_zklock(WORKER, servers, &path, "rw-random", 60, &log).unwrap(),
        ),
        (
            "kazoo-write".to_string(),
            peers::spawn_kazoo(servers, &path, "write", 40, &log).expect("kazoo worker"),
        ),
    ];
    tokio::task::spawn_blocking(move || peers::wait_all(workers))
        .await
        .unwrap()
        .unwrap();
    let verdict = checker::check_file(&log).unwrap();
    assert_eq!(verdict.sections, 100);
    assert!(verdict.ok(), "{verdict:?}");
    assert!(leftovers(servers, &path).await.is_empty());
}
