//! Cross-language exclusion (issue 7, acceptance 3): Rust, Python, Node and C clients contend on
//! one path through a proxy that keeps cutting their connections, for 2,000 critical sections:
//! zero overlaps, tokens increasing, no leftover nodes.
//!
//! The faces' workers are built by their own suites; `tests/ci-test.sh` builds them and names
//! them in ZKLOCK_XLANG_WORKERS (`face=command args;face=...`), then runs this ignored test.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use zklock_trust::checker;

const SECTIONS: usize = 2000;

fn workers_from_env() -> Vec<(String, Vec<String>)> {
    let spec = std::env::var("ZKLOCK_XLANG_WORKERS")
        .expect("ZKLOCK_XLANG_WORKERS names the workers (run tests/ci-test.sh)");
    spec.split(';')
        .filter(|w| !w.trim().is_empty())
        .map(|w| {
            let (face, cmd) = w.split_once('=').expect("face=command");
            (
                face.trim().to_owned(),
                cmd.split_whitespace().map(str::to_owned).collect(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs every face built: run by tests/ci-test.sh"]
async fn every_face_excludes_every_other_under_connection_cuts() {
    let zk = zklock_testkit::ZooKeeper::standalone().expect("ZooKeeper must start");
    let proxy = zklock_testkit::Proxy::start(&zk.address(0)).unwrap();
    let path = "/xlang/lock";
    let log = std::env::temp_dir().join(format!("zklock-xlang-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);

    let mut workers = workers_from_env();
    workers.push((
        "rust".into(),
        vec![env!("CARGO_BIN_EXE_trust-worker").into()],
    ));
    let rounds = SECTIONS / workers.len();
    let mut children: Vec<(String, Child)> = Vec::new();
    for (face, cmd) in &workers {
        let mut command = Command::new(&cmd[0]);
        let extra: Vec<&String> = cmd[1..].iter().collect();
        if face == "rust" {
            // trust-worker: SERVERS PATH MODE ROUNDS LOGFILE
            command
                .args([proxy.addr(), path, "mutex", &rounds.to_string()])
                .arg(&log);
        } else {
            command
                .args(extra)
                .args([proxy.addr(), path, &rounds.to_string()])
                .arg(&log);
        }
        children.push((
            face.clone(),
            command
                .stdin(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("{face}: {e}")),
        ));
    }
    // Cut every connection every 1.5 s while they work.
    let cutting = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let (flag, cutter_proxy) = (cutting.clone(), proxy);
    let cutter = tokio::spawn(async move {
        let mut cuts = 0;
        while flag.load(std::sync::atomic::Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            cutter_proxy.cut();
            cuts += 1;
        }
        cuts
    });
    let done = tokio::task::spawn_blocking(move || zklock_trust::peers::wait_all(children))
        .await
        .unwrap();
    cutting.store(false, std::sync::atomic::Ordering::SeqCst);
    let cuts = cutter.await.unwrap();
    done.unwrap();

    let text = std::fs::read_to_string(&log).unwrap();
    let verdict = checker::check(checker::parse(&text).unwrap());
    eprintln!(
        "cross-language: {} sections by {:?}, {cuts} connection cuts, {verdict:?}",
        verdict.sections,
        workers.iter().map(|w| &w.0).collect::<Vec<_>>()
    );
    assert_eq!(verdict.sections, rounds * workers.len());
    assert!(verdict.ok(), "{verdict:?}");
    for (face, _) in &workers {
        let tag = if face == "rust" {
            "zklock"
        } else {
            face.as_str()
        };
        assert!(text.lines().any(|l| l.starts_with(tag)), "{face} took part");
    }
    assert!(cuts > 0);
    let raw = zookeeper_client::Client::connect(&zk.connect_string())
        .await
        .unwrap();
    assert!(
        raw.list_children(path).await.unwrap_or_default().is_empty(),
        "no leftover nodes"
    );
}
