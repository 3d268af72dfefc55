//! `zklock break` against a real ZooKeeper (issue 37, point 1): refused without a node or
//! `--holder` (status 64, the holder shown); with `--holder --token T` the holder's node is
//! deleted, the broken token printed, the reason logged, and the holder's `zklock exec` command
//! gets SIGTERM while zklock exits 76. Issue 51: `--holder` alone is refused (a repeated
//! command would break the next holder), and a holder of another library, which cannot notice
//! a break, is broken only with `--force`.

mod common;

use std::time::Duration;

use common::*;
use zookeeper_client as zkc;

#[test]
fn break_without_a_node_or_holder_is_refused_and_with_holder_and_token_stops_the_exec_with_76() {
    let path = unique_path("cli-break");
    let dir = scratch("break");
    let (ready, got) = (dir.join("ready"), dir.join("got"));
    let script = format!(
        "trap 'echo TERM > \"{got}\"; exit 0' TERM; echo $ZKLOCK_TOKEN > '{ready}'; \
         while :; do sleep 0.05; done",
        got = got.display(),
        ready = ready.display()
    );
    let mut exec = zk(&["exec", "--kill-after", "5s"]);
    exec.arg(&path).arg("--").args(sh(&script));
    let mut holder = spawn(exec);
    wait_for("the command to run", Duration::from_secs(20), || {
        std::fs::read_to_string(&ready).is_ok_and(|t| !t.trim().is_empty())
    });
    let token = std::fs::read_to_string(&ready).unwrap().trim().to_owned();

    let refused = run(zk(&["break", "--reason", "test", &path]));
    assert_eq!(refused.status.code(), Some(64), "{}", stderr(&refused));
    let err = stderr(&refused);
    assert!(
        err.contains("--holder") && err.contains(&format!("token {token}")),
        "the holder is shown and the way to confirm named: {err}"
    );
    assert!(got.metadata().is_err(), "nothing was broken");

    assert!(
        err.contains(&format!(
            "break --holder --token {token} --reason test {path}"
        )),
        "the refusal prints the exact command that breaks the holder shown: {err}"
    );
    let alone = run(zk(&["break", "--holder", "--reason", "test", &path]));
    assert_eq!(alone.status.code(), Some(64), "{}", stderr(&alone));
    assert!(got.metadata().is_err(), "--holder alone broke nothing");

    let broke = run(zk(&[
        "break",
        "--holder",
        "--token",
        &token,
        "--reason",
        "hung job 42",
        &path,
    ]));
    assert_eq!(broke.status.code(), Some(0), "{}", stderr(&broke));
    assert_eq!(stdout(&broke).trim(), token, "the broken token is printed");
    assert!(stderr(&broke).contains("hung job 42"), "{}", stderr(&broke));
    let by = stderr(&broke);
    let by = by
        .lines()
        .find(|l| l.starts_with("by: "))
        .unwrap_or_default();
    assert!(
        by.contains('@') && by.contains(" pid "),
        "who broke is named (user@host pid N): {by:?}"
    );

    let status = wait_exit(&mut holder, Duration::from_secs(20), "broken holder");
    let err = child_stderr(&mut holder);
    assert_eq!(status.code(), Some(76), "stderr: {err}");
    assert!(err.contains("broken"), "the loss says why: {err}");
    assert_eq!(
        std::fs::read_to_string(&got)
            .map(|s| s.trim().to_owned())
            .ok(),
        Some("TERM".to_owned()),
        "the command got SIGTERM; stderr: {err}"
    );

    let nobody = run(zk(&[
        "break", "--holder", "--token", &token, "--reason", "again", &path,
    ]));
    assert_eq!(nobody.status.code(), Some(3), "{}", stderr(&nobody));
}

#[test]
fn elect_with_a_lock_delay_behind_a_broken_leader_runs_its_command_only_after_the_delay() {
    const DELAY: Duration = Duration::from_secs(2);
    let path = unique_path("cli-elect-delay");
    let dir = scratch("elect-delay");
    let (first, second) = (dir.join("first"), dir.join("second"));
    let leader = |ready: &std::path::Path| {
        let script = format!(
            "trap 'exit 0' TERM; echo $ZKLOCK_TOKEN > '{}'; while :; do sleep 0.05; done",
            ready.display()
        );
        let mut elect = zk(&["elect", "--lock-delay", "2s", "--kill-after", "5s"]);
        elect.arg(&path).arg("--").args(sh(&script));
        spawn(elect)
    };
    let written = |ready: &std::path::Path| {
        std::fs::read_to_string(ready).is_ok_and(|t| !t.trim().is_empty())
    };
    let mut broken = leader(&first);
    wait_for(
        "the first leader's command",
        Duration::from_secs(20),
        || written(&first),
    );
    let mut next = leader(&second);
    wait_for(
        "the second participant's node",
        Duration::from_secs(20),
        // Two participants, not two lines: `ls` prints a title and a header before its rows, so
        // counting lines let the break come before the second node was made (a late arrival
        // does not see the unclean end, so the test failed once: "ran 124ms after the break").
        || participants(&path).len() >= 2,
    );

    let first_token = std::fs::read_to_string(&first).unwrap().trim().to_owned();
    let before_break = std::time::Instant::now();
    let broke = run(zk(&[
        "break",
        "--holder",
        "--token",
        &first_token,
        "--reason",
        "stuck leader",
        &path,
    ]));
    assert_eq!(broke.status.code(), Some(0), "{}", stderr(&broke));
    let status = wait_exit(&mut broken, Duration::from_secs(20), "broken leader");
    assert_eq!(status.code(), Some(76), "{}", child_stderr(&mut broken));
    wait_for(
        "the second leader's command",
        Duration::from_secs(30),
        || written(&second),
    );
    let after = before_break.elapsed();
    assert!(
        after >= DELAY,
        "the next leader ran {after:?} after the break, inside the {DELAY:?} lock-delay"
    );
    let tokens: Vec<i64> = [&first, &second]
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap().trim().parse().unwrap())
        .collect();
    assert!(tokens[1] > tokens[0], "tokens {tokens:?}");
    next.kill().ok();
    next.wait().ok();
    let err = child_stderr(&mut next);
    assert!(
        err.contains("waiting out the lock-delay"),
        "the wait is said on stderr: {err}"
    );
}

#[test]
fn exec_with_a_lock_delay_behind_a_broken_holder_says_on_stderr_that_it_waits_out_the_delay() {
    let path = unique_path("cli-exec-delay");
    let dir = scratch("exec-delay");
    let (first, second) = (dir.join("first"), dir.join("second"));
    let exec = |ready: &std::path::Path| {
        let mut exec = zk(&["exec", "--lock-delay", "1s", "--kill-after", "5s"]);
        exec.arg(&path).arg("--").args(hold_until(ready, None));
        spawn(exec)
    };
    let mut broken = exec(&first);
    wait_for("the first command", Duration::from_secs(20), || {
        token_in(&first).is_some()
    });
    let mut next = exec(&second);
    wait_for("the second node", Duration::from_secs(20), || {
        participants(&path).len() >= 2
    });
    let token = token_in(&first).unwrap();
    let broke = run(zk(&["break", "--token", &token, "--reason", "t", &path]));
    assert_eq!(broke.status.code(), Some(0), "{}", stderr(&broke));
    wait_exit(&mut broken, Duration::from_secs(20), "broken holder");
    wait_for("the second command", Duration::from_secs(20), || {
        token_in(&second).is_some()
    });
    next.kill().ok();
    next.wait().ok();
    let err = child_stderr(&mut next);
    assert!(
        err.contains("waiting out the lock-delay"),
        "the wait is said on stderr: {err}"
    );
}

/// `zklock exec PATH -- <writes its token to ready, then runs until TERM, noting it in got>`.
fn holder(path: &str, ready: &std::path::Path, got: &std::path::Path) -> std::process::Child {
    let script = format!(
        "trap 'echo TERM > \"{got}\"; exit 0' TERM; echo $ZKLOCK_TOKEN > '{ready}'; \
         while :; do sleep 0.05; done",
        got = got.display(),
        ready = ready.display()
    );
    let mut exec = zk(&["exec", "--kill-after", "5s"]);
    exec.arg(path).arg("--").args(sh(&script));
    spawn(exec)
}

fn token_in(file: &std::path::Path) -> Option<String> {
    std::fs::read_to_string(file)
        .ok()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
}

#[test]
fn the_same_guarded_break_run_again_after_the_next_holder_took_the_lock_breaks_only_the_first() {
    let path = unique_path("cli-break-twice");
    let dir = scratch("break-twice");
    let (ready1, got1) = (dir.join("ready1"), dir.join("got1"));
    let (ready2, got2) = (dir.join("ready2"), dir.join("got2"));
    let mut first = holder(&path, &ready1, &got1);
    wait_for("the first command", Duration::from_secs(20), || {
        token_in(&ready1).is_some()
    });
    let mut next = holder(&path, &ready2, &got2);
    wait_for("the next holder's node", Duration::from_secs(20), || {
        participants(&path).len() >= 2
    });
    let token = token_in(&ready1).unwrap();
    // The refusal of `--holder` alone prints the command to run instead: run it as printed.
    let alone = run(zk(&["break", "--holder", "--reason", "stuck", &path]));
    assert_eq!(alone.status.code(), Some(64), "{}", stderr(&alone));
    let printed = stderr(&alone)
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("to break it: zklock ")
                .map(str::to_owned)
        })
        .unwrap_or_else(|| panic!("no command printed: {}", stderr(&alone)));
    assert!(printed.contains(&format!("--token {token}")), "{printed}");
    // `sh -c SCRIPT ARG0`: the binary is $0 and a shell reads the printed words, quotes and all,
    // in zklock()'s clean environment.
    let safe = || {
        let base = zklock();
        let mut sh = std::process::Command::new("sh");
        sh.arg("-c")
            .arg(format!("exec \"$0\" {printed}"))
            .arg(base.get_program())
            .stdin(std::process::Stdio::null());
        for (k, v) in base.get_envs() {
            match v {
                Some(v) => sh.env(k, v),
                None => sh.env_remove(k),
            };
        }
        sh
    };
    // Two operators run the same command: the second after the next holder took the lock.
    let once = run(safe());
    assert_eq!(once.status.code(), Some(0), "{}", stderr(&once));
    let status = wait_exit(&mut first, Duration::from_secs(20), "broken holder");
    assert_eq!(status.code(), Some(76), "{}", child_stderr(&mut first));
    wait_for("the next holder's command", Duration::from_secs(20), || {
        token_in(&ready2).is_some()
    });
    let again = run(safe());
    assert_eq!(again.status.code(), Some(3), "{}", stderr(&again));
    assert!(
        stderr(&again).contains(&format!("token {token}")),
        "says which holder it wanted: {}",
        stderr(&again)
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(got2.metadata().is_err(), "the next holder was not broken");
    assert!(
        next.try_wait().unwrap().is_none(),
        "the next holder still runs"
    );

    // The age guard too: the next holder's node is younger than an hour.
    let young = run(zk(&[
        "break",
        "--holder",
        "--if-older-than",
        "1h",
        "--reason",
        "stuck",
        &path,
    ]));
    assert_eq!(young.status.code(), Some(3), "{}", stderr(&young));
    assert!(got2.metadata().is_err(), "the young holder was not broken");
    signal(&next, 15);
    wait_exit(&mut next, Duration::from_secs(20), "next holder");
}

#[tokio::test(flavor = "multi_thread")]
async fn breaking_a_kazoo_holder_warns_that_it_cannot_notice_and_needs_force() {
    let path = unique_path("cli-break-kazoo");
    let raw = zkc::Client::connect(servers()).await.expect("raw connect");
    let open = zkc::CreateMode::Persistent.with_acls(zkc::Acls::anyone_all());
    let mut at = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        at = format!("{at}/{part}");
        match raw.create(&at, b"", &open).await {
            Ok(_) | Err(zkc::Error::NodeExists) => {}
            Err(e) => panic!("create {at}: {e}"),
        }
    }
    // kazoo's `Lock` layout: `<uuid hex>__lock__<seq>`, held by this (live) session.
    let ephemeral = zkc::CreateMode::EphemeralSequential.with_acls(zkc::Acls::anyone_all());
    let prefix = "0123456789abcdef0123456789abcdef__lock__";
    let (_, seq) = raw
        .create(&format!("{path}/{prefix}"), b"kazoo-holder", &ephemeral)
        .await
        .expect("create the kazoo node");
    let node = format!("{prefix}{seq}");
    let p = path.clone();
    let n = node.clone();
    let refused =
        tokio::task::spawn_blocking(move || run(zk(&["break", "--reason", "stuck", &p, &n])))
            .await
            .unwrap();
    assert_eq!(refused.status.code(), Some(64), "{}", stderr(&refused));
    let err = stderr(&refused);
    assert!(
        err.contains("kazoo") && err.contains("--force") && err.contains("believing it holds"),
        "the warning names the library and asks for --force: {err}"
    );
    assert!(
        raw.check_stat(&format!("{path}/{node}"))
            .await
            .unwrap()
            .is_some(),
        "not broken without --force"
    );
    let (p, n) = (path.clone(), node.clone());
    let forced = tokio::task::spawn_blocking(move || {
        run(zk(&["break", "--force", "--reason", "stuck", &p, &n]))
    })
    .await
    .unwrap();
    assert_eq!(forced.status.code(), Some(0), "{}", stderr(&forced));
    assert!(stderr(&forced).contains("kazoo"), "{}", stderr(&forced));
    assert!(
        raw.check_stat(&format!("{path}/{node}"))
            .await
            .unwrap()
            .is_none(),
        "broken with --force"
    );
}

/// A real kazoo `Lock` holder on `path` (Debian's python3-kazoo): prints `held` once it holds,
/// then, once `ask` exists, whether kazoo still believes it holds, and exits.
fn kazoo_holder(path: &str, ask: &std::path::Path) -> std::process::Child {
    let script = r#"
import os, sys, time
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=20)
lock = zk.Lock(sys.argv[2], "kazoo-holder")
lock.acquire(timeout=20)
print("held", flush=True)
while not os.path.exists(sys.argv[3]):
    time.sleep(0.05)
print("is_acquired", lock.is_acquired, flush=True)
zk.stop()
"#;
    let mut cmd = std::process::Command::new("/usr/bin/python3");
    cmd.arg("-c")
        .arg(script)
        .arg(servers())
        .arg(path)
        .arg(ask)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd.spawn().expect("python3 with kazoo (python3-kazoo)")
}

#[test]
fn breaking_a_real_kazoo_holder_needs_force_and_kazoo_goes_on_believing_it_holds() {
    use std::io::BufRead;
    let path = unique_path("cli-break-real-kazoo");
    let ask = scratch("break-real-kazoo").join("ask");
    let mut kazoo = kazoo_holder(&path, &ask);
    let mut out = std::io::BufReader::new(kazoo.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "held", "{}", child_stderr(&mut kazoo));
    let token = participants(&path)[0]["token"]
        .as_i64()
        .unwrap()
        .to_string();

    let refused = run(zk(&["break", "--token", &token, "--reason", "t", &path]));
    assert_eq!(refused.status.code(), Some(64), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("held by kazoo") && stderr(&refused).contains("--force"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(participants(&path).len(), 1, "not broken without --force");

    let forced = run(zk(&[
        "break", "--token", &token, "--force", "--reason", "t", &path,
    ]));
    assert_eq!(forced.status.code(), Some(0), "{}", stderr(&forced));
    assert!(participants(&path).is_empty(), "broken with --force");
    // What the warning says: kazoo noticed nothing.
    std::fs::write(&ask, "").unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    assert_eq!(
        line.trim(),
        "is_acquired True",
        "{}",
        child_stderr(&mut kazoo)
    );
    wait_exit(&mut kazoo, Duration::from_secs(20), "kazoo holder");
}
