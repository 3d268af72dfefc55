//! `zklock ls`: holder and queue with node, library, kind, identity, token and session id,
//! including contenders made by Curator and kazoo.

mod common;

use std::time::Duration;

use common::*;
use zookeeper_client as zkc;

async fn raw_client() -> zkc::Client {
    zkc::Client::connect(servers())
        .await
        .expect("raw ZooKeeper connect")
}

/// Creates an ephemeral sequential node named like another library's; returns (name, czxid).
async fn contender(zk: &zkc::Client, path: &str, prefix: &str, data: &str) -> (String, i64) {
    let options = zkc::CreateMode::EphemeralSequential.with_acls(zkc::Acls::anyone_all());
    let (stat, seq) = zk
        .create(&format!("{path}/{prefix}"), data.as_bytes(), &options)
        .await
        .expect("create contender node");
    (format!("{prefix}{seq}"), stat.czxid)
}

/// Acceptance 4: `ls --json` lists kazoo and Curator contenders with the right library and
/// kind, in queue order, behind the zklock holder.
#[tokio::test(flavor = "multi_thread")]
async fn ls_json_lists_kazoo_and_curator_contenders() {
    let path = unique_path("cli-ls");
    let dir = scratch("ls");
    let (ready, release) = (dir.join("ready"), dir.join("release"));
    let mut cmd = zk(&["exec", "--identity", "zklock-holder", &path, "--"]);
    cmd.args(hold_until(&ready, Some(&release)));
    let mut holder = spawn(cmd);
    wait_for("the holder to run", Duration::from_secs(20), || {
        ready.exists()
    });

    let raw = raw_client().await;
    let session = format!("0x{:x}", raw.session_id().0);
    let (kazoo, kazoo_token) = contender(
        &raw,
        &path,
        "0123456789abcdef0123456789abcdef__lock__",
        "kazoo-waiter",
    )
    .await;
    let (curator, _) = contender(
        &raw,
        &path,
        "_c_0b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d-lock-",
        "10.0.0.7",
    )
    .await;
    let (kazoo_read, _) = contender(
        &raw,
        &path,
        "fedcba9876543210fedcba9876543210__rlock__",
        "kazoo-reader",
    )
    .await;
    // Not a lock node: ignored.
    contender(&raw, &path, "unrelated-", "x").await;

    let json = ls_json(&path);
    assert_eq!(json["path"], path.as_str());
    let q = json["participants"].as_array().unwrap();
    assert_eq!(q.len(), 4, "{json:#}");
    assert_eq!(q[0]["library"], "zklock");
    assert_eq!(q[0]["role"], "holder");
    assert_eq!(q[0]["identity"], "zklock-holder");
    let token: i64 = std::fs::read_to_string(&ready)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(
        q[0]["token"], token,
        "the holder's token is its ZKLOCK_TOKEN"
    );

    assert_eq!(q[1]["name"], kazoo.as_str());
    assert_eq!(q[1]["node"], format!("{path}/{kazoo}").as_str());
    assert_eq!(q[1]["library"], "kazoo");
    assert_eq!(q[1]["kind"], "mutex");
    assert_eq!(q[1]["role"], "waiting");
    assert_eq!(q[1]["identity"], "kazoo-waiter");
    assert_eq!(q[1]["token"], kazoo_token);
    assert_eq!(q[1]["session_id"], session.as_str());

    assert_eq!(q[2]["name"], curator.as_str());
    assert_eq!(q[2]["library"], "curator");
    assert_eq!(q[2]["kind"], "mutex");

    assert_eq!(q[3]["name"], kazoo_read.as_str());
    assert_eq!(q[3]["library"], "kazoo");
    assert_eq!(q[3]["kind"], "read");
    assert_eq!(q[3]["role"], "waiting");

    // The table shows the same queue.
    let out = run(zk(&["ls", &path]));
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    assert!(
        table.starts_with(&format!("{path}: 1 holding, 3 waiting\n")),
        "{table}"
    );
    for needle in ["zklock-holder", "kazoo-waiter", "curator", "read", &session] {
        assert!(table.contains(needle), "{needle} missing from\n{table}");
    }

    drop(raw);
    std::fs::write(&release, "").unwrap();
    wait_exit(&mut holder, Duration::from_secs(10), "holder");
}

/// A real kazoo client (Debian's python3-kazoo, which `make deps` installs) waiting for the
/// lock shows up as a kazoo contender, then gets the lock once zklock releases it. (kazoo only
/// sees Curator-style `-lock-` nodes as contenders when told so with `extra_lock_patterns`.)
#[test]
fn ls_json_shows_a_real_kazoo_waiter() {
    // Debian's python3-kazoo lives in the system interpreter's dist-packages.
    let python = ["/usr/bin/python3", "python3"]
        .into_iter()
        .find(|py| {
            std::process::Command::new(py)
                .args(["-c", "import kazoo"])
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .expect("python3 with kazoo is needed (apt-get install python3-kazoo, or `make deps`)");
    let path = unique_path("cli-ls-kazoo");
    let dir = scratch("ls-kazoo");
    let (ready, release) = (dir.join("ready"), dir.join("release"));
    let mut cmd = zk(&["exec", &path, "--"]);
    cmd.args(hold_until(&ready, Some(&release)));
    let mut holder = spawn(cmd);
    wait_for("the holder to run", Duration::from_secs(20), || {
        ready.exists()
    });

    let script = "import sys\n\
        from kazoo.client import KazooClient\n\
        zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=20)\n\
        lock = zk.Lock(sys.argv[2], 'real-kazoo', extra_lock_patterns=('-lock-',))\n\
        ok = lock.acquire(timeout=30)\n\
        print('acquired' if ok else 'timeout', flush=True)\n\
        lock.release(); zk.stop()\n";
    let kazoo = std::process::Command::new(python)
        .args(["-c", script, servers(), &path])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run python3");
    wait_for("kazoo to queue", Duration::from_secs(30), || {
        participants(&path).len() == 2
    });
    let q = participants(&path);
    assert_eq!(q[0]["library"], "zklock");
    assert_eq!(q[1]["library"], "kazoo", "{q:?}");
    assert_eq!(q[1]["kind"], "mutex");
    assert_eq!(q[1]["identity"], "real-kazoo");
    assert_eq!(q[1]["role"], "waiting");

    std::fs::write(&release, "").unwrap();
    wait_exit(&mut holder, Duration::from_secs(10), "holder");
    let out = kazoo.wait_with_output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "acquired",
        "kazoo stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An unused lock path lists as free.
#[test]
fn ls_of_a_free_lock() {
    let path = unique_path("cli-ls-free");
    let out = run(zk(&["ls", &path]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{path}: free (no contenders)\n"));
    assert_eq!(ls_json(&path)["participants"], serde_json::json!([]));
}

/// A write holder that takes the read side (a downgrade) holds both nodes: `ls` shows its read
/// node as a holder, also when another writer queued between the two.
#[tokio::test(flavor = "multi_thread")]
async fn ls_shows_a_write_holders_downgraded_read_node_as_holding() {
    let path = unique_path("cli-ls-downgrade");
    let options = || zklock::Options::default().identity("downgrader");
    let ours = zklock::Client::connect(servers(), options()).await.unwrap();
    let theirs = zklock::Client::connect(
        servers(),
        zklock::Options::default().identity("other-writer"),
    )
    .await
    .unwrap();
    let rw = ours.rw_lock(&path).unwrap();
    let write = rw.write().acquire().await.unwrap();
    let other = theirs.rw_lock(&path).unwrap();
    let waiting = tokio::spawn(async move {
        let lease = other.write().acquire_timeout(Duration::from_secs(60)).await;
        (other, lease)
    });
    let p = path.clone();
    tokio::task::spawn_blocking(move || {
        wait_for("the other writer to queue", Duration::from_secs(20), || {
            participants(&p).len() == 2
        })
    })
    .await
    .unwrap();
    let read = rw.read().acquire().await.unwrap(); // downgrade: granted at once
    let p = path.clone();
    let q = tokio::task::spawn_blocking(move || participants(&p))
        .await
        .unwrap();
    assert_eq!(q.len(), 3, "{q:?}");
    let role = |i: usize| {
        (
            q[i]["kind"].as_str().unwrap().to_owned(),
            q[i]["role"].as_str().unwrap().to_owned(),
        )
    };
    assert_eq!(role(0), ("write".into(), "holder".into()), "{q:?}");
    assert_eq!(role(1), ("write".into(), "waiting".into()), "{q:?}");
    assert_eq!(role(2), ("read".into(), "holder".into()), "{q:?}");
    assert_eq!(q[2]["identity"], "downgrader");
    let out = tokio::task::spawn_blocking({
        let p = path.clone();
        move || run(zk(&["ls", &p]))
    })
    .await
    .unwrap();
    assert!(
        stdout(&out).starts_with(&format!("{path}: 2 holding, 1 waiting\n")),
        "{}",
        stdout(&out)
    );
    write.release().await.unwrap();
    read.release().await.unwrap();
    let (_other, lease) = waiting.await.unwrap();
    lease.unwrap().release().await.unwrap();
    ours.close().await;
    theirs.close().await;
}
