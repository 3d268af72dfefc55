//! The session layer (`client`) against a real three-member ensemble: the session moves to
//! another member when its member dies, a member whose data is behind the client's last zxid
//! refuses it and the next is tried, and with every member unreachable the client pauses between
//! rounds and takes the session back when one returns.
//!
//! One ensemble serves every test of this binary (starting one takes 10–20 s). It is owned by a
//! thread that lives as long as the process, because a member dies with the thread that started
//! it (`PR_SET_PDEATHSIG` in the harness) and a restart from a test's thread would kill the
//! member when the test ends; tests send it closures. The tests take turns (`SERIAL`) and each
//! leaves every member serving. The client reaches each member through a relay of its own
//! (`common::Relay`), which shows which member a connection went to, records its bytes, counts
//! attempts and refuses or cuts on demand.

mod common;

use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{frames, wait_state, Relay};
use zklock_testkit::{Config, Isolation, ZooKeeper};
use zklock_wire::client::{Client, ClientOptions, CreateMode, EventType, SessionState};
use zklock_wire::jute::{Acl, ConnectRequest, Record};

type Job = Box<dyn FnOnce(&mut ZooKeeper) + Send>;

struct Ensemble {
    jobs: std::sync::Mutex<mpsc::Sender<Job>>,
    addresses: Vec<String>,
}

/// The ensemble of this test binary, started on first use. Its member links run through the
/// harness's peer proxies (for `isolate`), and `syncLimit` is 50 ticks of 200 ms: a follower
/// whose leader went silent keeps serving its clients for 10 s before it gives up, which is the
/// window in which it lags behind yet still answers (test 2).
fn ensemble() -> &'static Ensemble {
    static ENSEMBLE: OnceLock<Result<Ensemble, String>> = OnceLock::new();
    let started = ENSEMBLE.get_or_init(|| {
        let (ready_tx, ready_rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("zk-ensemble".into())
            .spawn(move || {
                let config = Config {
                    peer_proxies: true,
                    sync_limit: 50,
                    ..Config::default()
                };
                let mut zk = match ZooKeeper::start(3, &config) {
                    Ok(zk) => zk,
                    Err(e) => {
                        ready_tx.send(Err(e)).ok();
                        return;
                    }
                };
                let (jobs_tx, jobs_rx) = mpsc::channel::<Job>();
                let addresses = (0..zk.len()).map(|i| zk.address(i)).collect();
                ready_tx
                    .send(Ok(Ensemble {
                        jobs: std::sync::Mutex::new(jobs_tx),
                        addresses,
                    }))
                    .ok();
                for job in jobs_rx {
                    job(&mut zk);
                }
                // The sender lives in a static: never reached while the process runs.
                loop {
                    std::thread::park();
                }
            })
            .expect("spawn the ensemble's thread");
        ready_rx
            .recv()
            .unwrap_or_else(|_| Err("the ensemble's thread died".into()))
    });
    match started {
        Ok(e) => e,
        Err(e) => panic!("the three-member ensemble cannot start: {e}"),
    }
}

/// Runs `f` on the ensemble's thread and returns its result.
async fn on_ensemble<R: Send + 'static>(f: impl FnOnce(&mut ZooKeeper) -> R + Send + 'static) -> R {
    tokio::task::spawn_blocking(move || {
        let (tx, rx) = mpsc::channel();
        let job: Job = Box::new(move |zk| {
            tx.send(f(zk)).ok();
        });
        ensemble()
            .jobs
            .lock()
            .unwrap()
            .send(job)
            .expect("the ensemble's thread takes jobs");
        rx.recv().expect("the ensemble's thread answers")
    })
    .await
    .expect("the ensemble job ran")
}

/// The tests take turns: each changes the members' state.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// One relay per member, in member order.
async fn relays() -> Vec<Relay> {
    let mut out = Vec::new();
    for a in &ensemble().addresses {
        out.push(Relay::start(a).await);
    }
    out
}

fn connect_string(relays: &[Relay]) -> String {
    relays
        .iter()
        .map(|r| r.addr().to_owned())
        .collect::<Vec<_>>()
        .join(",")
}

const SESSION: Duration = Duration::from_secs(12);

async fn open(servers: &str) -> Client {
    let options = ClientOptions {
        session_timeout: SESSION,
        connect_timeout: Duration::from_secs(2),
        ..ClientOptions::default()
    };
    Client::connect(servers, options, None)
        .await
        .unwrap_or_else(|e| panic!("connect to the ensemble through {servers}: {e}"))
}

/// The member whose relay carries the client's connection now.
fn member_of(relays: &[Relay]) -> usize {
    let open: Vec<usize> = (0..relays.len()).filter(|&i| relays[i].is_open()).collect();
    assert_eq!(
        open.len(),
        1,
        "exactly one member carries the session: {open:?}"
    );
    open[0]
}

fn unique(name: &str) -> String {
    format!(
        "/zklock-wire-ensemble-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    )
}

/// `srvr`'s mode and last processed zxid of member `i`.
fn srvr(i: usize) -> (String, i64) {
    let reply = zklock_testkit::four_letter(&ensemble().addresses[i], "srvr")
        .unwrap_or_else(|e| panic!("srvr of member {i}: {e}"));
    let field = |name: &str| {
        reply
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_owned())
            .unwrap_or_else(|| panic!("member {i}'s srvr has no {name}: {reply}"))
    };
    let zxid = field("Zxid:");
    let zxid = i64::from_str_radix(zxid.trim_start_matches("0x"), 16)
        .unwrap_or_else(|e| panic!("member {i}'s zxid {zxid}: {e}"));
    (field("Mode:"), zxid)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_moves_to_another_member_when_its_member_dies_and_keeps_its_ephemeral_node_and_watch(
) {
    let _turn = SERIAL.lock().await;
    let relays = relays().await;
    let client = open(&connect_string(&relays)).await;
    let session = client.session_id();
    let dir = unique("moves");
    let acl = Acl::open_unsafe();
    client
        .create(&dir, b"", CreateMode::Persistent, &acl)
        .await
        .unwrap();
    let (_, eph) = client
        .create(&format!("{dir}/e"), b"", CreateMode::Ephemeral, &acl)
        .await
        .unwrap();
    let watched = format!("{dir}/w");
    client
        .create(&watched, b"before", CreateMode::Persistent, &acl)
        .await
        .unwrap();
    let (_, _, watch) = client.get_and_watch_data(&watched).await.unwrap();

    let first = member_of(&relays);
    let role = srvr(first).0;
    on_ensemble(move |zk| zk.stop(first)).await;
    wait_state(&client, SessionState::Disconnected, Duration::from_secs(5)).await;
    let stopped = Instant::now();
    wait_state(&client, SessionState::SyncConnected, SESSION).await;
    let second = member_of(&relays);
    println!(
        "member {first} ({role}) killed; the session came back on member {second} after {:?}",
        stopped.elapsed()
    );
    assert_ne!(second, first);
    assert_eq!(client.session_id(), session, "the same session");

    let stat = client
        .check_stat(&eph)
        .await
        .unwrap()
        .expect("the ephemeral node outlives the member");
    assert_eq!(stat.ephemeral_owner, session);

    // A change made after the move, by another session on a member still up.
    let other = open(&ensemble().addresses[second]).await;
    other.set_data(&watched, b"after", None).await.unwrap();
    let fired = tokio::time::timeout(Duration::from_secs(5), watch.changed())
        .await
        .expect("the watch armed before the move fires for a change after it");
    assert_eq!(fired.event_type, EventType::NodeDataChanged);
    assert_eq!(fired.path, watched);

    client.delete(&eph, None).await.unwrap();
    client.delete(&watched, None).await.unwrap();
    client.delete(&dir, None).await.unwrap();
    client.close();
    other.close();
    on_ensemble(move |zk| zk.restart(first))
        .await
        .unwrap_or_else(|e| panic!("member {first} does not come back: {e}"));
}

/// A follower cut off from its peers by a black hole (connections open, nothing crosses) keeps
/// serving its clients until `syncLimit` passes, with the data it had: a member that lags and
/// still answers. (`pause` would not do: a stopped JVM answers nothing. `Isolation::Cut` would
/// not either: the follower notices at once, goes looking for a leader and stops serving.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_behind_the_clients_last_zxid_refuses_the_session_and_the_next_member_takes_it() {
    let _turn = SERIAL.lock().await;
    let leader = on_ensemble(|zk| zk.leader())
        .await
        .expect("the ensemble has a leader");
    let lagging = (0..3).find(|&i| i != leader).unwrap();
    let relays = relays().await;
    // The client starts on another member.
    relays[lagging].refuse(true);
    let client = open(&connect_string(&relays)).await;
    let session = client.session_id();
    let current = member_of(&relays);
    let spare = (0..3).find(|&i| i != lagging && i != current).unwrap();
    relays[lagging].refuse(false);

    let dir = unique("lagging");
    let acl = Acl::open_unsafe();
    client
        .create(&dir, b"0", CreateMode::Persistent, &acl)
        .await
        .unwrap();
    let before = srvr(lagging).1;
    on_ensemble(move |zk| zk.isolate(lagging, Isolation::BlackHole)).await;
    for i in 1..=5u8 {
        client.set_data(&dir, &[b'0' + i], None).await.unwrap();
    }
    let seen = client.link_stats().expect("connected").last_zxid;
    let (mode, lag_zxid) = srvr(lagging);
    assert_eq!(mode, "follower", "the black-holed member still serves");
    assert!(
        lag_zxid < seen && lag_zxid >= before,
        "member {lagging} lags: its zxid {lag_zxid:#x}, the client's {seen:#x}"
    );

    // Only the lagging member can be reached: the client's member goes away, the spare refuses.
    relays[spare].refuse(true);
    relays[current].refuse(true);
    relays[current].cut();
    wait_state(&client, SessionState::Disconnected, Duration::from_secs(5)).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while relays[lagging].recordings().iter().all(|r| r.open) {
        assert!(
            Instant::now() < deadline,
            "the client did not try the lagging member within 5 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_ne!(client.state(), SessionState::SyncConnected);
    // Then the spare comes back.
    relays[spare].refuse(false);
    wait_state(&client, SessionState::SyncConnected, Duration::from_secs(5)).await;
    assert_eq!(
        member_of(&relays),
        spare,
        "the next member took the session"
    );
    assert_eq!(client.session_id(), session, "the same session");
    assert_eq!(client.get_data(&dir).await.unwrap().0, b"5");

    // What the lagging member was asked and what it answered: the session with a last zxid
    // ahead of its own, and nothing (`ZooKeeperServer.processConnectRequest` closes the
    // connection: "Refusing session request for client ... as it has seen zxid ...").
    let tried = relays[lagging].recordings();
    assert!(!tried.is_empty());
    for r in &tried {
        assert!(!r.open, "the lagging member closed the connection");
        let sent = frames(&r.up);
        assert_eq!(sent.len(), 1, "only the ConnectRequest was sent");
        let req = ConnectRequest::decode_all(sent[0]).unwrap();
        assert_eq!(req.session_id, session);
        assert!(
            req.last_zxid_seen >= seen && req.last_zxid_seen > lag_zxid,
            "last zxid seen {:#x}, the member's {lag_zxid:#x}",
            req.last_zxid_seen
        );
        assert!(r.down.is_empty(), "the lagging member answered nothing");
    }
    println!(
        "member {lagging} (zxid {lag_zxid:#x}) refused {} connect request(s) with last zxid \
         {seen:#x}; member {spare} took the session",
        tried.len()
    );

    client.delete(&dir, None).await.unwrap();
    client.close();
    on_ensemble(move |zk| {
        zk.heal(lagging);
        // The black hole dropped bytes of open streams: start the member afresh.
        zk.restart(lagging)
    })
    .await
    .unwrap_or_else(|e| panic!("member {lagging} does not come back: {e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_every_member_unreachable_the_client_pauses_between_rounds_and_resumes_the_session_when_one_returns(
) {
    let _turn = SERIAL.lock().await;
    let relays = relays().await;
    let client = open(&connect_string(&relays)).await;
    let session = client.session_id();
    let eph = unique("backoff");
    client
        .create(&eph, b"", CreateMode::Ephemeral, &Acl::open_unsafe())
        .await
        .unwrap();

    for r in &relays {
        r.refuse(true);
    }
    let down = Instant::now();
    for r in &relays {
        r.cut();
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut attempts: Vec<Instant> = relays
        .iter()
        .flat_map(|r| r.attempts())
        .filter(|t| *t >= down)
        .collect();
    attempts.sort();
    let gaps: Vec<Duration> = attempts.windows(2).map(|w| w[1] - w[0]).collect();
    let longest = gaps.iter().max().copied().unwrap_or_default();
    println!(
        "{} connection attempts in 3 s with every member refusing; longest pause {longest:?}",
        attempts.len()
    );
    assert_eq!(client.state(), SessionState::Disconnected);
    // Three members a round; pauses of 10 ms doubling to 1 s (+ up to half again) between
    // rounds: about nine rounds in 3 s. Without pauses it would be thousands.
    assert!(
        attempts.len() >= 6 && attempts.len() <= 45,
        "{} attempts in 3 s",
        attempts.len()
    );
    assert!(
        longest >= Duration::from_millis(500),
        "the pause between rounds grows (longest {longest:?})"
    );

    relays[1].refuse(false);
    let back = Instant::now();
    wait_state(&client, SessionState::SyncConnected, SESSION).await;
    println!(
        "member 1 back: the session resumed after {:?} ({:?} after the outage began)",
        back.elapsed(),
        down.elapsed()
    );
    assert!(back.elapsed() < Duration::from_millis(2500));
    assert!(down.elapsed() < SESSION);
    assert_eq!(member_of(&relays), 1);
    assert_eq!(client.session_id(), session, "the same session");
    let stat = client.check_stat(&eph).await.unwrap();
    assert_eq!(stat.map(|s| s.ephemeral_owner), Some(session));
    client.delete(&eph, None).await.unwrap();
    client.close();
}
