//! Leader election against the real peers on one path (issue 25): zklock's latch against
//! Curator's `LeaderLatch`, its selector against Curator's `LeaderSelector`, its kazoo style
//! against kazoo's `Election`, 3 + 3 participants with processes killed and restarted, at most
//! one leader at every instant (each side logs its leaderships on one wall clock; the checker
//! finds any overlap) and the leaders in node order (the tokens increase: the order Curator and
//! kazoo compute). Each side sees the other's participants; a foreign layout on the path is
//! refused by name; a black-holed zklock leader knows before a Curator participant leads, and a
//! blip shorter than the deadline costs nothing.

use std::io::{BufRead, BufReader, Write};
use std::process::Child;
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use zklock::{ElectionStyle, ErrorKind, LeaseState, Options, Wait};
use zklock_testkit::{unique_path, Proxy};
use zklock_trust::{checker, peers};

const WORKER: &str = env!("CARGO_BIN_EXE_trust-worker");

fn log_file(name: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("zklock-election-{name}-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

fn wall_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i128
}

/// One kind of participant process.
#[derive(Clone, Copy, Debug)]
enum Peer {
    Zklock(&'static str),
    Curator(&'static str),
    Kazoo,
}

/// A running participant: its kind, its id (what its election node holds as data, in every
/// layout: Curator's `LeaderLatch(client, path, id)` and `LeaderSelector.setId`, kazoo's
/// `Election(path, identifier)`, zklock's participant id) and its process.
struct Participant {
    peer: Peer,
    id: String,
    child: Child,
}

fn spawn(
    peer: Peer,
    servers: &str,
    path: &str,
    rounds: usize,
    log: &std::path::Path,
) -> Participant {
    let id = format!("{peer:?}-{}", rand_id());
    let child = match peer {
        Peer::Zklock(mode) => peers::spawn_zklock(WORKER, servers, path, mode, rounds, log),
        Peer::Curator(mode) => peers::spawn_curator_election(servers, path, mode, rounds, log, &id),
        Peer::Kazoo => peers::spawn_kazoo_election(servers, path, "run", rounds, log, &id, &[]),
    }
    .unwrap_or_else(|e| panic!("start {peer:?}: {e}"));
    // trust-worker names itself `zklock-<pid>` (src/bin/trust-worker.rs).
    let id = match peer {
        Peer::Zklock(_) => format!("zklock-{}", child.id()),
        _ => id,
    };
    Participant { peer, id, child }
}

fn rand_id() -> u32 {
    (wall_ns() as u32).wrapping_mul(2_654_435_761) >> 8
}

/// The path's election nodes in node order (every layout ends in a 10-digit sequence, the
/// order Curator's and kazoo's sorting use), each with its data (the participant's id). A node
/// that vanishes while it is read is left out.
async fn nodes_in_order(zk: &zookeeper_client::Client, path: &str) -> Vec<(String, String)> {
    let mut names = zk.list_children(path).await.unwrap_or_default();
    names.sort_by(|a, b| a[a.len().saturating_sub(10)..].cmp(&b[b.len().saturating_sub(10)..]));
    let mut nodes = Vec::with_capacity(names.len());
    for name in names {
        if let Ok((data, _)) = zk.get_data(&format!("{path}/{name}")).await {
            nodes.push((name, String::from_utf8_lossy(&data).into_owned()));
        }
    }
    nodes
}

/// Waits up to `limit` for `path` to have no children (sessions of killed processes expire).
async fn assert_empty_within(servers: &str, path: &str, limit: Duration) {
    let zk = zookeeper_client::Client::connect(servers).await.unwrap();
    let deadline = std::time::Instant::now() + limit;
    loop {
        let left = zk.list_children(path).await.unwrap_or_default();
        if left.is_empty() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{path} still holds {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// How long the kill schedule may take before the test gives up: each leader kill costs the
/// killed session's expiry (zklock 4 s, Curator and kazoo 10 s) before anyone leads again.
const SCHEDULE_LIMIT: Duration = Duration::from_secs(240);

/// Three zklock and three peer participants on one path, `rounds` leaderships each. The kill
/// schedule follows what the server shows, not a clock: it kills the participant whose node
/// is first in node order (the leader), then one whose node waits behind it, and starts each
/// again, until `kills` leaders have been killed. A participant that finishes its rounds is
/// replaced by a fresh one of its kind while the schedule runs, so the kills never run out of
/// participants on a fast machine. Returns the checker's verdict and the sections.
async fn contend(
    name: &str,
    ours: Peer,
    theirs: Peer,
    rounds: usize,
    kills: usize,
) -> (checker::Verdict, Vec<checker::Section>) {
    let servers = zklock_testkit::shared().to_owned();
    let path = unique_path(name);
    let log = log_file(name);
    let zk = zookeeper_client::Client::connect(&servers).await.unwrap();
    let mut running: Vec<Participant> = [ours, theirs, ours, theirs, ours, theirs]
        .into_iter()
        .map(|p| spawn(p, &servers, &path, rounds, &log))
        .collect();
    let mut done: Vec<(String, Child)> = Vec::new();
    let (mut leaders_killed, mut waiters_killed) = (0, 0);
    let limit = std::time::Instant::now() + SCHEDULE_LIMIT;
    while leaders_killed < kills {
        assert!(
            std::time::Instant::now() < limit,
            "killed {leaders_killed} leaders of {kills} within {SCHEDULE_LIMIT:?}"
        );
        for slot in running.iter_mut() {
            if slot.child.try_wait().unwrap().is_some() {
                let fresh = spawn(slot.peer, &servers, &path, rounds, &log);
                let finished = std::mem::replace(slot, fresh);
                done.push((format!("{:?}", finished.peer), finished.child));
            }
        }
        let nodes = nodes_in_order(&zk, &path).await;
        let owner = |id: &str| running.iter().position(|p| p.id == id);
        // The leader is the first node; a killed leader's node stays first until its
        // session expires, and its id then names no running participant.
        let Some(leader) = nodes.first().and_then(|(_, id)| owner(id)) else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let waiter = nodes.iter().skip(1).find_map(|(_, id)| owner(id));
        let (node, _) = nodes[0].clone();
        kill(&mut running[leader]);
        // Sequential nodes only grow, so no node can come before `node` later: if it is still
        // there after the kill, it was first from before the kill to after it, and the killed
        // process was the leader when it died.
        if zk
            .check_stat(&format!("{path}/{node}"))
            .await
            .unwrap()
            .is_some()
        {
            leaders_killed += 1;
            eprintln!("killed a leading {:?} participant", running[leader].peer);
        } else {
            eprintln!(
                "a {:?} participant left its leadership before the kill",
                running[leader].peer
            );
        }
        running[leader] = spawn(running[leader].peer, &servers, &path, rounds, &log);
        if let Some(w) = waiter {
            kill(&mut running[w]);
            waiters_killed += 1;
            eprintln!("killed a waiting {:?} participant", running[w].peer);
            running[w] = spawn(running[w].peer, &servers, &path, rounds, &log);
        }
    }
    eprintln!("{leaders_killed} leaders and {waiters_killed} waiters killed");
    done.extend(
        running
            .into_iter()
            .map(|p| (format!("{:?}", p.peer), p.child)),
    );
    tokio::task::spawn_blocking(move || peers::wait_all(done))
        .await
        .unwrap()
        .unwrap();
    let sections = checker::parse(&std::fs::read_to_string(&log).unwrap()).unwrap();
    assert_empty_within(&servers, &path, Duration::from_secs(30)).await;
    (checker::check(sections.clone()), sections)
}

fn kill(p: &mut Participant) {
    p.child.kill().unwrap();
    p.child.wait().unwrap();
}

fn assert_shared(verdict: &checker::Verdict, sections: &[checker::Section], theirs: &str) {
    let ours = sections.iter().filter(|s| s.who == "zklock").count();
    let peer = sections
        .iter()
        .filter(|s| s.who.starts_with(theirs))
        .count();
    println!("{verdict:?}; zklock led {ours} times, {theirs} {peer} times");
    assert!(
        verdict.ok(),
        "two leaders at once, or leaders out of node order: {verdict:?}"
    );
    assert!(
        verdict.sections >= 100,
        "at least 100 handovers: {verdict:?}"
    );
    assert!(ours > 0 && peer > 0, "both sides led ({ours} / {peer})");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_latch_and_curator_leader_latch_never_lead_together_through_kills() {
    let (verdict, sections) = contend(
        "elect-latch",
        Peer::Zklock("elect-latch"),
        Peer::Curator("latch"),
        20,
        3,
    )
    .await;
    assert_shared(&verdict, &sections, "curator-latch");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_selector_and_curator_leader_selector_never_lead_together_through_kills() {
    let (verdict, sections) = contend(
        "elect-selector",
        Peer::Zklock("elect-selector"),
        Peer::Curator("selector"),
        20,
        3,
    )
    .await;
    assert_shared(&verdict, &sections, "curator-selector");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_kazoo_style_and_kazoo_election_never_lead_together_through_kills() {
    let (verdict, sections) = contend(
        "elect-kazoo",
        Peer::Zklock("elect-kazoo"),
        Peer::Kazoo,
        40,
        3,
    )
    .await;
    assert_shared(&verdict, &sections, "kazoo-election");
}

/// A peer whose stdout lines arrive on a channel, ended by closing its stdin.
struct Held {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Held {
    fn start(child: Child) -> Held {
        let mut child = child;
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Held { child, lines }
    }

    /// The next line starting with `word`, within `limit`.
    fn expect(&self, word: &str, limit: Duration) -> String {
        let deadline = std::time::Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(word) => return line,
                Ok(_) => {}
                Err(e) => panic!("no {word:?} line from the peer within {limit:?}: {e}"),
            }
        }
    }

    fn stop(mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_zklock_each_list_the_others_participants_and_the_leader() {
    let servers = zklock_testkit::shared();
    let path = unique_path("elect-visible");
    let log = log_file("visible");
    let curator = Held::start(
        peers::spawn_curator_election(servers, &path, "hold-latch", 1, &log, "curator-H").unwrap(),
    );
    let line = curator.expect("leader", Duration::from_secs(60));
    let curator_token: i64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();

    let client = zklock::Client::connect(servers, Options::default())
        .await
        .unwrap();
    let election = client
        .election(&path, ElectionStyle::Latch, Some("zklock-Z"))
        .unwrap();
    let waiting = election.start_lead(Wait::Forever);
    // Our participant's node is there beside Curator's before we ask who takes part.
    zklock_trust::nodes::wait_for_children(servers, &path, 2, Duration::from_secs(60)).await;
    let seen: Vec<(Option<ElectionStyle>, String)> = election
        .participants()
        .await
        .unwrap()
        .into_iter()
        .map(|p| (p.election_style(), p.identity))
        .collect();
    assert_eq!(
        seen,
        [
            (Some(ElectionStyle::Latch), "curator-H".to_owned()),
            (Some(ElectionStyle::Latch), "zklock-Z".to_owned())
        ]
    );
    let leader = election.leader().await.unwrap().unwrap();
    assert_eq!(
        (leader.identity.as_str(), leader.token),
        ("curator-H", curator_token)
    );

    // Curator's own view of the same election.
    let show = Held::start(
        peers::spawn_curator_election(servers, &path, "show-latch", 1, &log, "curator-S").unwrap(),
    );
    let json = show.expect("{", Duration::from_secs(60));
    show.stop();
    assert!(
        json.contains(r#""id":"zklock-Z","leader":false"#)
            && json.contains(r#""leader":"curator-H""#),
        "Curator's getParticipants()/getLeader(): {json}"
    );

    curator.stop();
    let lead = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("zklock leads once Curator's latch closed")
        .unwrap();
    assert!(lead.token() > curator_token);
    let show = Held::start(
        peers::spawn_curator_election(servers, &path, "show-latch", 1, &log, "curator-S2").unwrap(),
    );
    let json = show.expect("{", Duration::from_secs(60));
    show.stop();
    assert!(json.contains(r#""leader":"zklock-Z""#), "{json}");
    lead.release().await.unwrap();
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_lists_zklocks_kazoo_style_participants() {
    let servers = zklock_testkit::shared();
    let path = unique_path("elect-kazoo-visible");
    let client = zklock::Client::connect(servers, Options::default())
        .await
        .unwrap();
    let lead = client
        .election(&path, ElectionStyle::Kazoo, Some("zklock-K"))
        .unwrap()
        .lead()
        .await
        .unwrap();
    let log = log_file("kazoo-visible");
    let show = Held::start(
        peers::spawn_kazoo_election(servers, &path, "show", 1, &log, "observer", &[]).unwrap(),
    );
    let json = show.expect("{", Duration::from_secs(60));
    show.stop();
    assert_eq!(json, r#"{"contenders": ["zklock-K"]}"#);
    lead.release().await.unwrap();
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_refuses_to_lead_beside_curators_latch_and_names_its_node() {
    let servers = zklock_testkit::shared();
    let path = unique_path("elect-foreign");
    let log = log_file("foreign");
    let curator = Held::start(
        peers::spawn_curator_election(servers, &path, "hold-latch", 1, &log, "curator-F").unwrap(),
    );
    let line = curator.expect("leader", Duration::from_secs(60));
    let node = line.split_whitespace().nth(2).unwrap().to_owned();
    let name = node.rsplit('/').next().unwrap();
    let client = zklock::Client::connect(servers, Options::default())
        .await
        .unwrap();
    for style in [ElectionStyle::Selector, ElectionStyle::Kazoo] {
        let err = client
            .election(&path, style, Some("zklock"))
            .unwrap()
            .lead_with(Wait::timeout(Duration::from_secs(5)), None)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
        assert!(err.message().contains(name), "{err}");
    }
    let zk = zookeeper_client::Client::connect(servers).await.unwrap();
    assert_eq!(
        zk.list_children(&path).await.unwrap(),
        [name],
        "no node of ours left"
    );
    curator.stop();
    client.close().await;
}

/// A zklock latch leader behind a fault proxy (session 4 s), a Curator latch waiting on a
/// direct connection: when the leader's link turns into a black hole, the leader's lost signal
/// fires before Curator's `isLeader` runs (both stamped on the wall clock).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_holed_zklock_leader_knows_before_curator_leads() {
    let servers = zklock_testkit::shared();
    let path = unique_path("elect-blackhole");
    let first = servers.split(',').next().unwrap();
    let proxy = Proxy::start(first).unwrap();
    let client = zklock::Client::connect(
        proxy.addr(),
        Options::default().session_timeout(Duration::from_secs(4)),
    )
    .await
    .unwrap();
    let lead = client
        .election(&path, ElectionStyle::Latch, Some("zklock-B"))
        .unwrap()
        .lead()
        .await
        .unwrap();
    let log = log_file("blackhole");
    let mut curator =
        peers::spawn_curator_election(servers, &path, "bench-latch", 1, &log, "curator-W").unwrap();
    // Curator has joined (its node is beside ours) before the link goes; its watch on our
    // node follows in the same call (LeaderLatch.checkLeadership).
    zklock_trust::nodes::wait_for_children(servers, &path, 2, Duration::from_secs(60)).await;
    let lost = lead.lost();
    let lost_ns = tokio::spawn(async move {
        lost.await;
        wall_ns()
    });
    proxy.blackhole();
    let lost_ns = tokio::time::timeout(Duration::from_secs(30), lost_ns)
        .await
        .expect("the black-holed leader's lost signal fires")
        .unwrap();
    tokio::task::spawn_blocking(move || curator.wait())
        .await
        .unwrap()
        .unwrap();
    let sections = checker::parse(&std::fs::read_to_string(&log).unwrap()).unwrap();
    let curator_led = sections
        .iter()
        .find(|s| s.who.starts_with("curator-bench"))
        .expect("Curator led after the session expired")
        .enter;
    let margin_ms = (curator_led - lost_ns) as f64 / 1e6;
    println!("zklock lost {margin_ms:.0} ms before Curator's isLeader ran");
    assert!(
        margin_ms > 0.0,
        "Curator led {:.0} ms before zklock knew",
        -margin_ms
    );
    assert_eq!(lead.state(), LeaseState::Lost);
    proxy.heal();
    client.close().await;
}

/// A black hole shorter than the lifeline's deadline costs nothing: the leadership is only
/// suspended, and the waiting Curator latch does not lead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blip_shorter_than_the_deadline_costs_the_leader_nothing() {
    let servers = zklock_testkit::shared();
    let path = unique_path("elect-blip");
    let proxy = Proxy::start(servers.split(',').next().unwrap()).unwrap();
    let client = zklock::Client::connect(
        proxy.addr(),
        Options::default().session_timeout(Duration::from_secs(6)),
    )
    .await
    .unwrap();
    let lead = client
        .election(&path, ElectionStyle::Latch, Some("zklock-blip"))
        .unwrap()
        .lead()
        .await
        .unwrap();
    let states = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = states.clone();
    lead.subscribe(move |s| sink.lock().unwrap().push(s));
    let log = log_file("blip");
    let mut curator = Held::start(
        peers::spawn_curator_election(servers, &path, "hold-latch", 1, &log, "curator-B").unwrap(),
    );
    curator.expect("waiting", Duration::from_secs(60));
    proxy.blackhole();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    proxy.heal();
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(lead.state(), LeaseState::Held, "{:?}", lead.lost_reason());
    assert!(
        !states.lock().unwrap().contains(&LeaseState::Lost),
        "{:?}",
        states.lock().unwrap()
    );
    assert!(
        curator.lines.try_recv().is_err(),
        "Curator heard nothing new: it did not lead"
    );
    lead.release().await.unwrap();
    curator.expect("leader", Duration::from_secs(30));
    if let Some(stdin) = curator.child.stdin.as_mut() {
        let _ = stdin.flush();
    }
    curator.stop();
    client.close().await;
}
