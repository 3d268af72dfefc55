//! `zklock ls -r PATH --held-over DURATION [--json]` (issue 37, point 4): the holders of every
//! lock under a subtree, Curator's and kazoo's layouts included, older than a bound; and the
//! walk's bounds, which fail with status 64 and say which bound; a path that is not there
//! (status 2), and `--held-over`'s status (grep's: 1 when no holder qualified).

mod common;

use std::time::{Duration, Instant};

use common::*;
use zookeeper_client as zkc;

/// Creates `path` and its parents (persistent, open ACL).
async fn mkdirs(zk: &zkc::Client, path: &str) {
    let options = zkc::CreateMode::Persistent.with_acls(zkc::Acls::anyone_all());
    let mut at = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        at = format!("{at}/{part}");
        match zk.create(&at, b"", &options).await {
            Ok(_) | Err(zkc::Error::NodeExists) => {}
            Err(e) => panic!("create {at}: {e}"),
        }
    }
}

/// An ephemeral sequential contender named as `prefix` says (another library's layout); its
/// full path.
async fn contender(zk: &zkc::Client, dir: &str, prefix: &str, data: &str) -> String {
    mkdirs(zk, dir).await;
    let options = zkc::CreateMode::EphemeralSequential.with_acls(zkc::Acls::anyone_all());
    let (_, seq) = zk
        .create(&format!("{dir}/{prefix}"), data.as_bytes(), &options)
        .await
        .expect("create contender node");
    format!("{dir}/{prefix}{seq}")
}

/// `zklock ls -r ROOT --held-over OVER --json`: its lines as JSON objects.
fn held_over(root: &str, over: &str) -> Vec<serde_json::Value> {
    let out = run(zk(&["ls", "-r", root, "--held-over", over, "--json"]));
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    // grep's convention: 0 when some holder qualified, 1 when none did.
    let want = if lines.is_empty() { 1 } else { 0 };
    assert_eq!(out.status.code(), Some(want), "{}", stderr(&out));
    lines
}

const CURATOR: &str = "_c_0b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d-lock-";
const KAZOO: &str = "0123456789abcdef0123456789abcdef__lock__";

#[tokio::test(flavor = "multi_thread")]
async fn ls_r_held_over_lists_old_holders_of_every_layout_under_the_subtree_and_no_young_one() {
    let root = unique_path("cli-ls-r");
    let raw = zkc::Client::connect(servers()).await.expect("raw connect");
    let curator_dir = format!("{root}/jobs/nightly");
    let kazoo_dir = format!("{root}/deep/er/still/table");
    let curator = contender(&raw, &curator_dir, CURATOR, "10.0.0.7").await;
    let curator_waiter = contender(&raw, &curator_dir, CURATOR, "10.0.0.8").await;
    let kazoo = contender(&raw, &kazoo_dir, KAZOO, "kazoo-holder").await;
    mkdirs(&raw, &format!("{root}/empty/dir")).await;

    // Both holders reach 3 s of age by ZooKeeper's ctime: wait for the listing to say so.
    let deadline = Instant::now() + Duration::from_secs(60);
    let old = loop {
        let lines = held_over(&root, "3s");
        if lines.len() == 2 {
            break lines;
        }
        assert!(Instant::now() < deadline, "after 60 s: {lines:?}");
        std::thread::sleep(Duration::from_millis(200));
    };
    // A young holder, made now, under the same subtree.
    let young_dir = format!("{root}/jobs/hourly");
    let young_made = Instant::now();
    let young = contender(&raw, &young_dir, CURATOR, "young").await;
    let lines = held_over(&root, "3s");
    let listed_within = young_made.elapsed();

    for line in &lines {
        assert!(line["age_ms"].as_i64().unwrap() >= 3000, "{line}");
        assert_ne!(
            line["node"],
            curator_waiter.as_str(),
            "a waiter is no holder"
        );
    }
    let nodes: Vec<&str> = lines.iter().map(|l| l["node"].as_str().unwrap()).collect();
    assert!(nodes.contains(&curator.as_str()), "{lines:?}");
    assert!(nodes.contains(&kazoo.as_str()), "{lines:?}");
    if listed_within < Duration::from_secs(3) {
        assert!(
            !nodes.contains(&young.as_str()),
            "a holder younger than 3 s: {lines:?}"
        );
    }
    let by_node = |n: &str| lines.iter().find(|l| l["node"] == n).unwrap().clone();
    let c = by_node(&curator);
    assert_eq!(c["path"], curator_dir.as_str());
    assert_eq!(c["library"], "curator");
    assert_eq!(c["identity"], "10.0.0.7");
    assert_eq!(c["session_id"], format!("0x{:x}", raw.session_id().0));
    assert!(c["created_ms"].as_i64().unwrap() > 0 && c["token"].as_i64().unwrap() > 0);
    let k = by_node(&kazoo);
    assert_eq!(k["path"], kazoo_dir.as_str());
    assert_eq!(k["library"], "kazoo");
    assert_eq!(k["election_style"], "kazoo");
    assert_eq!(old.len(), 2);

    // Without a bound every holder shows, the young one too; the table names paths and ages.
    let out = run(zk(&["ls", "-r", &root]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let table = stdout(&out);
    assert!(
        table.starts_with(&format!("{root}: 3 holders in 3 lock paths")),
        "{table}"
    );
    assert!(
        table.contains(&young_dir) && table.contains("AGE"),
        "{table}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ls_r_past_its_node_or_depth_bound_fails_with_status_64_naming_the_bound() {
    let root = unique_path("cli-ls-r-bounds");
    let raw = zkc::Client::connect(servers()).await.expect("raw connect");
    mkdirs(&raw, &format!("{root}/a/b/c")).await;
    contender(&raw, &format!("{root}/x"), KAZOO, "k").await;
    contender(&raw, &format!("{root}/y"), KAZOO, "k").await;

    let out = run(zk(&["ls", "-r", &root, "--max-nodes", "2"]));
    assert_eq!(out.status.code(), Some(64), "{}", stdout(&out));
    assert!(stderr(&out).contains("node limit"), "{}", stderr(&out));

    let out = run(zk(&["ls", "-r", &root, "--max-depth", "2"]));
    assert_eq!(out.status.code(), Some(64), "{}", stdout(&out));
    assert!(stderr(&out).contains("depth limit"), "{}", stderr(&out));

    // Deep enough, the walk finds both kazoo holders.
    let out = run(zk(&["ls", "-r", &root, "--max-depth", "3"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with(&format!("{root}: 2 holders in 2 lock paths")));

    // --held-over needs -r; a bad duration is a usage error.
    let out = run(zk(&["ls", &root, "--held-over", "1m"]));
    assert_eq!(out.status.code(), Some(64), "{}", stderr(&out));
    let out = run(zk(&["ls", "-r", &root, "--held-over", "soon"]));
    assert_eq!(out.status.code(), Some(64), "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread")]
async fn ls_r_says_no_such_path_with_status_2_and_held_over_exits_1_when_no_holder_qualifies() {
    let root = unique_path("cli-ls-r-status");
    let missing = format!("{root}/not/there");
    let out = run(zk(&["ls", "-r", &missing]));
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stderr(&out).contains("no such path"), "{}", stderr(&out));
    assert!(!stdout(&out).contains("0 holders"), "{}", stdout(&out));

    let raw = zkc::Client::connect(servers()).await.expect("raw connect");
    contender(&raw, &format!("{root}/x"), KAZOO, "k").await;
    let out = run(zk(&["ls", "-r", &root, "--held-over", "1h"]));
    assert_eq!(
        out.status.code(),
        Some(1),
        "none held an hour: {}",
        stdout(&out)
    );
    // The node's age is by ZooKeeper's ctime against this clock: give it a moment to pass 1ms.
    wait_for("a holder held over 1ms", Duration::from_secs(10), || {
        run(zk(&["ls", "-r", &root, "--held-over", "1ms"]))
            .status
            .code()
            == Some(0)
    });
    let out = run(zk(&["ls", "-r", &root, "--held-over", "1ms"]));
    assert_eq!(
        out.status.code(),
        Some(0),
        "one holder qualified: {}",
        stdout(&out)
    );
    let out = run(zk(&["ls", "-r", &root]));
    assert_eq!(
        out.status.code(),
        Some(0),
        "a plain listing: {}",
        stderr(&out)
    );
}
