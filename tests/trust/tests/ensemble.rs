//! docs/safety.md's scenarios on a 3-node ensemble (issue 7, acceptance 1). Scenarios 3–7 on a single
//! server are in core/tests/faults.rs; here: the paused holder and its fenced write (1), token
//! monotonicity across failover and container reaping (2), leader kill / member restarts / full
//! restart (8), and no leftovers (9).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zklock::{ErrorKind, Options};
use zklock_testkit::ZooKeeper;
use zklock_trust::fenced::FencedRegister;

async fn children(servers: &str, path: &str) -> Vec<String> {
    let zk = zookeeper_client::Client::connect(servers).await.unwrap();
    zk.list_children(path).await.unwrap_or_default()
}

async fn exists(servers: &str, path: &str) -> bool {
    let zk = zookeeper_client::Client::connect(servers).await.unwrap();
    zk.check_stat(path).await.unwrap().is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_holder_loses_and_its_old_token_is_fenced_off() {
    let zk = ZooKeeper::ensemble(3).expect("a 3-node ensemble must start");
    let servers = zk.connect_string();
    let path = "/trust/paused";
    let mut holder = Command::new(env!("CARGO_BIN_EXE_trust-holder"))
        .args([&servers, path, "2000"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(holder.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let old_token: i64 = first.strip_prefix("token ").unwrap().parse().unwrap();
    let register = FencedRegister::default();
    register
        .write(old_token, "written by the first holder")
        .unwrap();

    libc_kill(holder.id() as i32, 19); // SIGSTOP: a GC pause past the session timeout
    let client = zklock::Client::connect(&servers, Options::default())
        .await
        .unwrap();
    let lease = client
        .mutex(path)
        .unwrap()
        .acquire_timeout(Duration::from_secs(30))
        .await
        .unwrap();
    assert!(lease.token() > old_token);
    register
        .write(lease.token(), "written by the second holder")
        .unwrap();
    libc_kill(holder.id() as i32, 18); // SIGCONT

    let rest: Vec<String> =
        tokio::task::spawn_blocking(move || lines.map_while(Result::ok).collect())
            .await
            .unwrap();
    assert!(rest.iter().any(|l| l == "state lost"), "{rest:?}");
    assert_eq!(
        rest.last().map(String::as_str),
        Some("lost fired=1"),
        "{rest:?}"
    );
    assert!(holder.wait().unwrap().success());
    // The paused holder's delayed write carries its old token: the register refuses it.
    let rejected = register
        .write(old_token, "late write of the first holder")
        .unwrap_err();
    assert_eq!(rejected.largest_seen, lease.token());
    lease.release().await.unwrap();
    assert!(children(&servers, path).await.is_empty());
}

fn libc_kill(pid: i32, sig: i32) {
    extern "C" {
        fn kill(pid: i32, sig: i32) -> i32;
    }
    unsafe { kill(pid, sig) };
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_increase_across_leader_failover_and_container_reaping() {
    let mut zk = ZooKeeper::ensemble(3).expect("a 3-node ensemble must start");
    let servers = zk.connect_string();
    let path = "/trust/tokens/lock";
    let client = zklock::Client::connect(&servers, Options::default())
        .await
        .unwrap();
    let mutex = client.mutex(path).unwrap();
    let mut tokens = Vec::new();
    let lease = mutex.acquire().await.unwrap();
    tokens.push(lease.token());
    lease.release().await.unwrap();

    // Container reaping: the empty lock parent disappears; sequences restart, tokens do not.
    for _ in 0..100 {
        if !exists(&servers, path).await {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        !exists(&servers, path).await,
        "the server reaps the empty container"
    );
    let lease = mutex.acquire().await.unwrap();
    assert!(
        lease.path().ends_with("0000000000"),
        "sequence restarted: {}",
        lease.path()
    );
    tokens.push(lease.token());
    lease.release().await.unwrap();

    // Leader failover.
    let leader = zk.leader().expect("a leader");
    tokio::task::block_in_place(|| zk.stop(leader));
    let lease = mutex
        .acquire_timeout(Duration::from_secs(30))
        .await
        .unwrap();
    tokens.push(lease.token());
    lease.release().await.unwrap();
    tokio::task::block_in_place(|| zk.restart(leader)).unwrap();
    let lease = mutex
        .acquire_timeout(Duration::from_secs(30))
        .await
        .unwrap();
    tokens.push(lease.token());
    lease.release().await.unwrap();

    assert!(tokens.windows(2).all(|w| w[1] > w[0]), "{tokens:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exclusion_holds_through_leader_kill_member_restarts_and_full_restart() {
    let mut zk = ZooKeeper::ensemble(3).expect("a 3-node ensemble must start");
    let servers = zk.connect_string();
    let path = "/trust/restarts";
    let inside = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let sections = Arc::new(AtomicUsize::new(0));
    let typed_errors = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..4 {
        let (servers, inside, stop, sections, typed_errors) = (
            servers.clone(),
            inside.clone(),
            stop.clone(),
            sections.clone(),
            typed_errors.clone(),
        );
        workers.push(tokio::spawn(async move {
            let options = Options::default().session_timeout(Duration::from_secs(20));
            let client = zklock::Client::connect(&servers, options).await.unwrap();
            let mutex = client.mutex(path).unwrap();
            let mut finished_after_stop = false;
            while !finished_after_stop {
                let last_round = stop.load(Ordering::SeqCst);
                match mutex.acquire_timeout(Duration::from_secs(60)).await {
                    Ok(lease) => {
                        if lease.is_held() {
                            assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                            tokio::time::sleep(Duration::from_millis(5)).await;
                            inside.store(false, Ordering::SeqCst);
                            sections.fetch_add(1, Ordering::SeqCst);
                        }
                        let _ = lease.release().await;
                        finished_after_stop = last_round;
                    }
                    Err(e) => {
                        // Every failure is typed; the worker tries again.
                        assert!(
                            matches!(
                                e.kind(),
                                ErrorKind::Connection
                                    | ErrorKind::SessionExpired
                                    | ErrorKind::Timeout
                            ),
                            "{e:?}"
                        );
                        typed_errors.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            }
        }));
    }
    // Each fault comes after the workers have done some work since the last one (ten more
    // critical sections, so the ensemble served again), not after a fixed time that a loaded
    // machine would spend reconnecting.
    let settle = || {
        let sections = sections.clone();
        async move {
            let from = sections.load(Ordering::SeqCst);
            let deadline = std::time::Instant::now() + Duration::from_secs(120);
            while sections.load(Ordering::SeqCst) < from + 10 {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the workers did not finish ten sections within 120 s of the last fault"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    settle().await;
    let leader = zk.leader().expect("a leader");
    tokio::task::block_in_place(|| zk.stop(leader));
    settle().await;
    tokio::task::block_in_place(|| zk.restart(leader)).unwrap();
    for i in 0..3 {
        settle().await;
        tokio::task::block_in_place(|| zk.restart(i)).unwrap();
    }
    settle().await;
    tokio::task::block_in_place(|| zk.restart_all()).unwrap();
    settle().await;
    stop.store(true, Ordering::SeqCst);
    for w in workers {
        tokio::time::timeout(Duration::from_secs(120), w)
            .await
            .expect("every waiter finishes")
            .unwrap();
    }
    eprintln!(
        "sections {} typed errors {} through leader kill, 3 member restarts and a full restart",
        sections.load(Ordering::SeqCst),
        typed_errors.load(Ordering::SeqCst)
    );
    assert!(sections.load(Ordering::SeqCst) > 50);
    // A released node is gone when the release returns; a worker's node from a session that
    // ended with a fault goes when that session expires.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let left = children(&servers, path).await;
        if left.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "leftover nodes {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// An election's leader through a failover of the ensemble's own leader (issue 25): its
/// session survives, so its leadership does: never lost, the waiting participant does not lead,
/// and a guarded write still applies; then the container parent is reaped once everyone left,
/// and the next leadership's token is still larger.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_election_leader_keeps_its_leadership_through_an_ensemble_leader_failover() {
    let mut zk = ZooKeeper::ensemble(3).expect("a 3-node ensemble must start");
    let servers = zk.connect_string();
    let path = "/trust/election/failover";
    let options = Options::default().session_timeout(Duration::from_secs(20));
    let a = zklock::Client::connect(&servers, options.clone())
        .await
        .unwrap();
    let b = zklock::Client::connect(&servers, options).await.unwrap();
    let ours = a
        .election(path, zklock::ElectionStyle::Latch, Some("a"))
        .unwrap();
    let lead = ours.lead().await.unwrap();
    let states = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = states.clone();
    lead.subscribe(move |s| sink.lock().unwrap().push(s));
    let waiting = b
        .election(path, zklock::ElectionStyle::Latch, Some("b"))
        .unwrap()
        .start_lead(zklock::Wait::Forever);

    let leader = zk.leader().expect("a leader");
    tokio::task::block_in_place(|| zk.stop(leader));
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while tokio::task::block_in_place(|| zk.leader()).is_none_or(|l| l == leader) {
        assert!(
            std::time::Instant::now() < deadline,
            "no new ensemble leader"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The guarded write waits out a suspension and applies: the node is still ours.
    lead.guarded_write(vec![]).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let seen = states.lock().unwrap().clone();
    println!("the election leader's states through the failover: {seen:?}");
    assert_eq!(
        lead.state(),
        zklock::LeaseState::Held,
        "{:?}",
        lead.lost_reason()
    );
    assert!(!seen.contains(&zklock::LeaseState::Lost), "{seen:?}");
    assert!(!waiting.is_done(), "the other participant did not lead");
    let first_token = lead.token();
    lead.release().await.unwrap();
    let next = waiting.await.unwrap();
    assert!(next.token() > first_token);
    let second_token = next.token();
    next.release().await.unwrap();
    tokio::task::block_in_place(|| zk.restart(leader)).unwrap();

    // Everyone left: the server reaps the container; sequences restart, tokens do not.
    for _ in 0..100 {
        if !exists(&servers, path).await {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        !exists(&servers, path).await,
        "the server reaps the empty container"
    );
    let again = ours.lead().await.unwrap();
    assert!(
        again.path().ends_with("-latch-0000000000"),
        "{}",
        again.path()
    );
    assert!(again.token() > second_token);
    again.release().await.unwrap();
}
