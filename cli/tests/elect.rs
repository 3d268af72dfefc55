//! `zklock elect` (issue 25) against a real ZooKeeper: the leader's command in a pseudo-terminal
//! with its environment, one leader's command at a time, SIGTERM on a lost leadership before
//! the next leader's command starts, --requeue, --listen, the refusal beside another layout,
//! `zklock check` and `--max-hold` (on exec and elect).

mod common;

use std::io::BufRead;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;

const LIMIT: Duration = Duration::from_secs(30);

/// `zklock --servers S elect FLAGS... PATH -- COMMAND...`
fn elect_cmd(flags: &[&str], path: &str, command: &[String]) -> std::process::Command {
    let mut cmd = zk(&["elect"]);
    cmd.args(flags).arg(path).arg("--").args(command);
    cmd
}

/// Nanoseconds since the epoch that `date +%s%N` wrote into `file`, if it is there.
fn stamp(file: &std::path::Path) -> Option<i128> {
    std::fs::read_to_string(file).ok()?.trim().parse().ok()
}

/// The lines a child prints on stdout, gathered by a thread as they come.
fn lines_of(child: &mut std::process::Child) -> Arc<Mutex<Vec<String>>> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let out = std::io::BufReader::new(child.stdout.take().expect("piped stdout"));
    let sink = lines.clone();
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            sink.lock().unwrap().push(line);
        }
    });
    lines
}

#[test]
fn the_leaders_command_runs_in_a_terminal_with_the_leader_environment() {
    let path = unique_path("cli-elect-env");
    let script = "echo \"leader=$ZKLOCK_LEADER id=$ZKLOCK_LEADER_ID token=$ZKLOCK_TOKEN \
                  node=$ZKLOCK_NODE path=$ZKLOCK_PATH\"; \
                  if [ -t 0 ] && [ -t 1 ]; then echo on-a-terminal; fi; exit 5";
    let mut elect = spawn_on_terminal(elect_cmd(&["--id", "worker-7"], &path, &sh(script)));
    let status = wait_exit(&mut elect.child, LIMIT, "zklock elect");
    let text = elect.finish();
    assert_eq!(status.code(), Some(5), "the command's status: {text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("leader="))
        .unwrap_or_else(|| panic!("no environment line in {text:?}"));
    assert!(line.starts_with("leader=1 id=worker-7 token="), "{line:?}");
    let token: i64 = line
        .split("token=")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no token in {line:?}"));
    assert!(token > 0, "{line:?}");
    assert!(
        line.contains(&format!("node={path}/_c_")) && line.contains("-latch-"),
        "a latch node by default: {line:?}"
    );
    assert!(
        line.trim_end().ends_with(&format!("path={path}")),
        "{line:?}"
    );
    assert!(text.contains("on-a-terminal"), "{text:?}");
    assert!(
        participants(&path).is_empty(),
        "resigned when the command ended"
    );
}

#[test]
fn a_second_elect_starts_its_command_only_after_the_first_ones_exits() {
    let path = unique_path("cli-elect-two");
    let dir = scratch("elect-two");
    let (ready, release, ended, started) = (
        dir.join("ready"),
        dir.join("release"),
        dir.join("ended"),
        dir.join("started"),
    );
    let first = format!(
        "echo $ZKLOCK_TOKEN > '{ready}'; while [ ! -e '{release}' ]; do sleep 0.05; done; \
         date +%s%N > '{ended}'",
        ready = ready.display(),
        release = release.display(),
        ended = ended.display()
    );
    let mut first = spawn(elect_cmd(&["--id", "first"], &path, &sh(&first)));
    wait_for("the first leader's command", LIMIT, || ready.exists());
    let second = format!(
        "date +%s%N > '{started}'; echo $ZKLOCK_TOKEN > '{started}.token'",
        started = started.display()
    );
    let mut second = spawn(elect_cmd(&["--id", "second"], &path, &sh(&second)));
    wait_for("the second participant to queue", LIMIT, || {
        participants(&path).len() == 2
    });
    let queue = participants(&path);
    assert_eq!(queue[0]["identity"], "first");
    assert_eq!(queue[1]["identity"], "second");
    assert_eq!(queue[1]["role"], "waiting");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!started.exists(), "the second command must wait");
    std::fs::write(&release, "").unwrap();
    assert_eq!(wait_exit(&mut first, LIMIT, "first").code(), Some(0));
    assert_eq!(
        wait_exit(&mut second, LIMIT, "second").code(),
        Some(0),
        "{}",
        child_stderr(&mut second)
    );
    let (end, start) = (stamp(&ended).unwrap(), stamp(&started).unwrap());
    assert!(
        start > end,
        "the second command started before the first ended"
    );
    let token = |f: &std::path::Path| -> i64 {
        std::fs::read_to_string(f).unwrap().trim().parse().unwrap()
    };
    assert!(
        token(&dir.join("started.token")) > token(&ready),
        "the next leader's token is larger"
    );
}

/// Issue 25's "gets SIGTERM before another leader's command starts": the leader reaches
/// ZooKeeper through the harness's fault proxy with a 2 s session, a second participant waits
/// on a direct connection; the proxy turns into a black hole. Two rounds; margins printed.
#[test]
fn a_black_holed_leaders_command_gets_sigterm_before_the_next_leaders_command_starts() {
    let mut margins = Vec::new();
    for round in 0..2 {
        let cut = black_holed_round(
            "cli-elect-partition",
            &["elect", "--id", "cut-off", "--kill-after", "5s"],
            &["elect", "--id", "next", "--timeout", "60s"],
        );
        assert_eq!(
            cut.status.code(),
            Some(76),
            "the lost status: {}",
            cut.stderr
        );
        assert!(
            cut.stderr.contains("lost the leadership of"),
            "{}",
            cut.stderr
        );
        println!(
            "round {round}: SIGTERM {:.0} ms before the next leader's command",
            cut.margin_ms
        );
        margins.push(cut.margin_ms);
    }
    assert!(
        margins.iter().all(|m| *m > 0.0),
        "a cut-off leader's command still ran when the next one started: {margins:?} ms"
    );
}

#[test]
fn requeue_takes_turns_at_the_tail_until_a_signal() {
    let path = unique_path("cli-elect-requeue");
    let dir = scratch("elect-requeue");
    let log = dir.join("log");
    let turn = |id: &str| {
        let script = format!(
            "echo {id} >> '{log}'; sleep 0.3; exit 3",
            log = log.display()
        );
        spawn(elect_cmd(&["--requeue", "--id", id], &path, &sh(&script)))
    };
    let mut a = turn("a");
    wait_for("a to lead once", LIMIT, || log.exists());
    let mut b = turn("b");
    let runs = || -> Vec<String> {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    wait_for("six turns", LIMIT, || runs().len() >= 6);
    signal(&a, SIGTERM);
    signal(&b, SIGTERM);
    for (child, name) in [(&mut a, "a"), (&mut b, "b")] {
        let status = wait_exit(child, LIMIT, name);
        // The command's status when the signal came while it ran (passed on: sh dies of it or
        // ends with its 3), 143 when it came while waiting.
        assert!(
            matches!(status.code(), Some(3 | 143)),
            "{name}: {status:?}: {}",
            child_stderr(child)
        );
    }
    let runs = runs();
    // b queued while a's first command ran: from then on they alternate.
    let after_b = &runs[1..];
    for pair in after_b.windows(2) {
        assert_ne!(pair[0], pair[1], "each requeue goes to the tail: {runs:?}");
    }
    wait_for("no participant left", LIMIT, || {
        participants(&path).is_empty()
    });
}

/// Issue 33: a listener that printed the leader's id prints the id it proclaims (a data change
/// of the same leader's node), not only changes of leader.
#[test]
fn listen_prints_the_id_a_leader_proclaims() {
    let path = unique_path("cli-elect-proclaim");
    let client = zklock::Client::blocking_connect(servers(), zklock::Options::default()).unwrap();
    let election = client
        .election(&path, zklock::ElectionStyle::Latch, Some("before"))
        .unwrap();
    let lead = election
        .blocking_lead_with(zklock::Wait::timeout(LIMIT), None)
        .unwrap();
    let mut listener = spawn(zk(&["elect", "--listen", "--count", "2", &path]));
    let lines = lines_of(&mut listener);
    wait_for("the leader's id", LIMIT, || {
        !lines.lock().unwrap().is_empty()
    });
    election
        .blocking_proclaim(&lead, b"after".to_vec(), Some(Duration::from_secs(5)))
        .unwrap();
    let status = wait_exit(&mut listener, LIMIT, "listen --count 2");
    assert_eq!(status.code(), Some(0), "{}", child_stderr(&mut listener));
    // The reader thread may still be passing the last line on.
    wait_for("both lines read", LIMIT, || {
        lines.lock().unwrap().len() >= 2
    });
    assert_eq!(*lines.lock().unwrap(), ["before", "after"]);
    lead.blocking_release().unwrap();
    client.blocking_close();
}

#[test]
fn listen_prints_every_leader_change_including_none() {
    let path = unique_path("cli-elect-listen");
    let dir = scratch("elect-listen");
    let mut listener = spawn(zk(&["elect", "--listen", "--count", "4", &path]));
    let lines = lines_of(&mut listener);
    let seen = |n: usize| {
        let lines = lines.clone();
        move || lines.lock().unwrap().len() >= n
    };
    wait_for("the first line", LIMIT, seen(1));
    let (ready, release) = (dir.join("ready"), dir.join("release"));
    let mut a = spawn(elect_cmd(
        &["--id", "a", "--style", "selector"],
        &path,
        &hold_until(&ready, Some(&release)),
    ));
    wait_for("a leads", LIMIT, seen(2));
    std::fs::write(&release, "").unwrap();
    wait_exit(&mut a, LIMIT, "a");
    wait_for("nobody leads", LIMIT, seen(3));
    let mut b = spawn(elect_cmd(&["--id", "b"], &path, &sh("sleep 0.5")));
    let status = wait_exit(&mut listener, LIMIT, "listen --count 4");
    wait_exit(&mut b, LIMIT, "b");
    assert_eq!(status.code(), Some(0), "{}", child_stderr(&mut listener));
    // The listener has exited; its reader thread hands on the last line when it reads it.
    wait_for("the listener's four lines", LIMIT, || {
        lines.lock().unwrap().len() >= 4
    });
    assert_eq!(*lines.lock().unwrap(), ["none", "a", "none", "b"]);

    // --json: one object per line, every key present, null when nobody leads.
    let (ready, release) = (dir.join("ready2"), dir.join("release2"));
    let mut c = spawn(elect_cmd(
        &["--id", "c", "--style", "kazoo"],
        &path,
        &hold_until(&ready, Some(&release)),
    ));
    wait_for("c leads", LIMIT, || ready.exists());
    let token: i64 = std::fs::read_to_string(&ready)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let out = run(zk(&["elect", "--listen", "--json", "--count", "1", &path]));
    std::fs::write(&release, "").unwrap();
    wait_exit(&mut c, LIMIT, "c");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
    assert_eq!(v["id"], "c");
    assert_eq!(v["token"], token);
    assert_eq!(v["style"], "kazoo");
    assert_eq!(v["library"], "kazoo");
    assert_eq!(v["path"], path.as_str());
    assert!(v["node"].as_str().unwrap().contains("__lock__"), "{v}");
    assert!(v["session_id"].as_str().unwrap().starts_with("0x"), "{v}");
    let out = run(zk(&["elect", "--listen", "--json", "--count", "1", &path]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
    assert!(
        v["id"].is_null() && v["node"].is_null() && v["style"].is_null(),
        "{v}"
    );
}

#[test]
fn ls_shows_latch_and_kazoo_contenders_with_their_ids_and_style() {
    for (style, kind, library, marker) in [
        ("latch", "latch", "zklock", "-latch-"),
        ("kazoo", "mutex", "kazoo", "__lock__"),
    ] {
        let path = unique_path("cli-elect-ls");
        let dir = scratch("elect-ls");
        let (ready, release) = (dir.join("ready"), dir.join("release"));
        let mut leader = spawn(elect_cmd(
            &["--id", "the-leader", "--style", style],
            &path,
            &hold_until(&ready, Some(&release)),
        ));
        wait_for("the leader", LIMIT, || ready.exists());
        let mut waiter = spawn(elect_cmd(
            &["--id", "the-waiter", "--style", style],
            &path,
            &sh("true"),
        ));
        wait_for("the waiter to queue", LIMIT, || {
            participants(&path).len() == 2
        });
        let q = participants(&path);
        for (p, (id, role)) in q
            .iter()
            .zip([("the-leader", "holder"), ("the-waiter", "waiting")])
        {
            assert_eq!(p["identity"], id, "{q:?}");
            assert_eq!(p["role"], role, "{q:?}");
            assert_eq!(p["kind"], kind, "{q:?}");
            assert_eq!(p["library"], library, "{q:?}");
            assert_eq!(p["election_style"], style, "{q:?}");
            assert!(p["name"].as_str().unwrap().contains(marker), "{q:?}");
        }
        let out = run(zk(&["ls", &path]));
        let table = stdout(&out);
        assert!(table.lines().nth(1).unwrap().contains("STYLE"), "{table}");
        let row = table.lines().find(|l| l.contains("the-leader")).unwrap();
        assert!(
            row.starts_with("holder") && row.contains(&format!("{kind}  {style}")),
            "{table}"
        );
        std::fs::write(&release, "").unwrap();
        wait_exit(&mut leader, LIMIT, "leader");
        wait_exit(&mut waiter, LIMIT, "waiter");
    }
}

#[test]
fn an_election_beside_another_layout_refuses_to_lead_and_names_the_foreign_node() {
    let path = unique_path("cli-elect-mixed");
    let dir = scratch("elect-mixed");
    let (ready, release) = (dir.join("ready"), dir.join("release"));
    let mut latch = spawn(elect_cmd(
        &["--id", "latch-leader"],
        &path,
        &hold_until(&ready, Some(&release)),
    ));
    wait_for("the latch leader", LIMIT, || ready.exists());
    let foreign = participants(&path)[0]["name"].as_str().unwrap().to_owned();
    let ran = dir.join("ran");
    let out = run(elect_cmd(
        &["--style", "selector", "--timeout", "5s"],
        &path,
        &sh(&format!("touch '{}'", ran.display())),
    ));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(78), "{err}");
    assert!(
        err.starts_with("zklock: ") && err.lines().count() == 1,
        "{err}"
    );
    assert!(
        err.contains(&foreign),
        "names the foreign node {foreign}: {err}"
    );
    assert!(!ran.exists(), "the command must not run");
    assert_eq!(participants(&path).len(), 1, "our node is removed");
    std::fs::write(&release, "").unwrap();
    wait_exit(&mut latch, LIMIT, "latch leader");
}

#[test]
fn check_exits_0_for_a_current_token_and_1_for_any_other() {
    let path = unique_path("cli-check");
    let dir = scratch("check");
    let (ready, release) = (dir.join("ready"), dir.join("release"));
    let mut holder = spawn({
        let mut cmd = zk(&["exec", &path, "--"]);
        cmd.args(hold_until(&ready, Some(&release)));
        cmd
    });
    wait_for("the holder", LIMIT, || {
        std::fs::read_to_string(&ready).is_ok_and(|t| !t.trim().is_empty())
    });
    let token = std::fs::read_to_string(&ready).unwrap().trim().to_owned();
    let check = |args: &[&str]| {
        let mut cmd = zk(&["check"]);
        cmd.args(args);
        run(cmd)
    };
    let out = check(&[&path, &token]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains(" is a current"), "{}", stdout(&out));
    let stale = (token.parse::<i64>().unwrap() - 1).to_string();
    let out = check(&["--quiet", &path, &stale]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stdout(&out).is_empty() && stderr(&out).is_empty());
    std::fs::write(&release, "").unwrap();
    wait_exit(&mut holder, LIMIT, "holder");
    let out = check(&[&path, &token]);
    assert_eq!(out.status.code(), Some(1), "released: {}", stderr(&out));
    assert!(
        stdout(&out).contains(" is not a current"),
        "{}",
        stdout(&out)
    );

    // A leader's token too.
    let (ready, release) = (dir.join("ready2"), dir.join("release2"));
    let mut leader = spawn(elect_cmd(&[], &path, &hold_until(&ready, Some(&release))));
    wait_for("the leader", LIMIT, || {
        std::fs::read_to_string(&ready).is_ok_and(|t| !t.trim().is_empty())
    });
    let token = std::fs::read_to_string(&ready).unwrap().trim().to_owned();
    assert_eq!(check(&["-q", &path, &token]).status.code(), Some(0));
    std::fs::write(&release, "").unwrap();
    wait_exit(&mut leader, LIMIT, "leader");

    // Usage errors: not a number, a bad path.
    for args in [[path.as_str(), "twelve"], ["no-slash", "12"]] {
        let out = check(&args);
        assert_eq!(out.status.code(), Some(64), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn max_hold_stops_the_command_with_the_lost_status() {
    for verb in ["exec", "elect"] {
        let path = unique_path("cli-max-hold");
        let dir = scratch("max-hold");
        let (ready, term) = (dir.join("ready"), dir.join("term"));
        let script = format!(
            "trap 'echo TERM > \"{term}\"; exit 0' TERM; touch '{ready}'; \
             while :; do sleep 0.05; done",
            term = term.display(),
            ready = ready.display()
        );
        let mut cmd = zk(&[verb, "--max-hold", "1s", "--kill-after", "5s", &path, "--"]);
        cmd.args(sh(&script));
        let started = std::time::Instant::now();
        let mut child = spawn(cmd);
        let status = wait_exit(&mut child, LIMIT, verb);
        let err = child_stderr(&mut child);
        assert_eq!(status.code(), Some(76), "{verb}: {err}");
        assert!(ready.exists(), "{verb}: the command ran");
        assert_eq!(
            std::fs::read_to_string(&term).unwrap_or_default().trim(),
            "TERM",
            "{verb}: the command got SIGTERM: {err}"
        );
        assert!(
            err.contains("max-hold"),
            "{verb}: the reason is named: {err}"
        );
        assert!(started.elapsed() >= Duration::from_secs(1), "{verb}");
        assert!(participants(&path).is_empty(), "{verb}: the node is gone");
        // Zero is refused by the core: a usage error.
        let out = run(zk(&[verb, "--max-hold", "0", &path, "--", "true"]));
        assert_eq!(out.status.code(), Some(64), "{verb}: {}", stderr(&out));
    }
    // A read/write lock's side too (the core's RwLock::max_hold).
    let path = unique_path("cli-max-hold-read");
    let out = run(zk(&[
        "exec",
        "--read",
        "--max-hold",
        "1s",
        "--kill-after",
        "5s",
        &path,
        "--",
        "sleep",
        "30",
    ]));
    assert_eq!(out.status.code(), Some(76), "{}", stderr(&out));
    assert!(stderr(&out).contains("max-hold"), "{}", stderr(&out));
}

/// Issue 33: the help said --max-hold was refused with --read/--write, which works (above).
#[test]
fn exec_help_says_max_hold_bounds_a_read_or_write_side() {
    let out = run(zk(&["exec", "--help"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let help = stdout(&out);
    assert!(!help.contains("Not with --read/--write"), "{help}");
    assert!(
        help.contains("With --read or --write it bounds the side taken"),
        "{help}"
    );
}

#[test]
fn elect_usage_errors_are_one_line() {
    for args in [
        vec!["elect", "/e", "true"],
        vec!["elect", "--style", "leader", "/e", "--", "true"],
        vec!["elect", "--listen", "/e", "--", "true"],
        vec!["elect", "--json", "/e", "--", "true"],
        vec!["elect", "--count", "2", "/e", "--", "true"],
        vec!["elect", "--listen", "--requeue", "/e"],
    ] {
        let out = run(zk(&args));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(64), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
    let out = run(zk(&["elect", "--style", "leader", "/e", "--", "true"]));
    assert!(
        stderr(&out).contains("latch"),
        "names the known styles: {}",
        stderr(&out)
    );
}
