//! The command line's runner of the conformance cases (`tests/conformance/cases.txt`, format in
//! its README), against the shared test ZooKeeper. The ops with a command-line form run the
//! `zklock` binary as a user would: `path` (`zklock exec --try PATH -- true`), `semaphore`
//! (`zklock exec -n N --timeout 5s PATH -- true`, and the scenarios `semaphore-fills` with two lease
//! holders in this process, `revoke-not-held` as `zklock revoke PATH`, status 3), `hosts`
//! (`zklock --servers HOSTS ls`), `session_timeout` (`--session-timeout`), `identity`
//! (`--identity`), `timeout` (`--timeout`, with a holder in this process that frees the lock
//! after 300 ms), `acl` (`--acl`, credentials from ZKLOCK_AUTH) and `secret` (`exec` + `ls`).
//! Leader election (issue 25): `election_style` (`zklock elect --style S --timeout 0`),
//! `election_id` (`elect --id`, the leader's command reading `ls --json`), `max_hold`
//! (`exec --max-hold`, status 76 and the lost reason on stderr), and the scenarios
//! election-handover, election-requeue (`elect --requeue`), election-mixed-layouts (status 78),
//! election-observe (`elect --listen`), kind-latch and library-kazoo-style (`elect` + `ls
//! --json`), check-token (`zklock check`, status 0/1); participants and holders that the
//! command line cannot be are clients of this process.
//! Every other op (read/write and multi-locks, the other scenarios) has no command-line form
//! and is named `n/a` with the reason. The exit status is mapped back to the
//! error kind (see `zklock --help`); stderr must be one line of at most 300 characters.
//!
//! One line per case, then `conformance cli: N passed, N failed`; the test fails on any mismatch.

mod common;

use std::process::Output;
use std::time::Duration;

use common::*;

const MAX_MESSAGE: usize = 300;

use zklock_testkit::conformance::{cases, Case};

enum Outcome {
    Is(String),
    NotApplicable(&'static str),
    Broken(String),
}

/// The kind (or outcome word) of a finished `zklock` run, by its exit status; a message longer
/// than 300 characters, or more than one line, breaks the case.
fn outcome_of(out: &Output, ok: &str, busy: &str) -> Outcome {
    let err = stderr(out);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.len() > 1 {
        return Outcome::Broken(format!("stderr has {} lines: {err:.300}", lines.len()));
    }
    if let Some(line) = lines.first() {
        let message = line.strip_prefix("zklock: ").unwrap_or(line);
        if message.chars().count() > MAX_MESSAGE {
            return Outcome::Broken(format!(
                "a message of {} characters (limit {MAX_MESSAGE}): {:.100}...",
                message.chars().count(),
                message
            ));
        }
    }
    let kind = match out.status.code() {
        Some(0) => ok,
        Some(64) => "InvalidArgument",
        Some(69) => "Connection",
        Some(75) => busy,
        Some(77) => "Permission",
        Some(78) => "Conflict",
        Some(70) => "ZooKeeper-or-Internal (status 70)",
        other => return Outcome::Broken(format!("exit status {other:?}: {err:.300}")),
    };
    Outcome::Is(kind.into())
}

fn text_arg(input: &[u8], what: &'static str) -> Result<String, Outcome> {
    if input.contains(&0) {
        return Err(Outcome::NotApplicable(what));
    }
    Ok(String::from_utf8(input.to_vec()).expect("decoded input is UTF-8"))
}

/// `zklock exec [SETTINGS...] PATH -- true` against the test server.
fn exec(settings: &[&str], path: &str) -> Output {
    let mut cmd = zk(&["exec"]);
    cmd.args(settings).arg(path).args(["--", "true"]);
    run(cmd)
}

/// A holder in this process that frees `path` 300 ms after taking it.
fn hold_briefly(servers: &str, path: &str) -> std::thread::JoinHandle<()> {
    let client = zklock::Client::blocking_connect(servers, zklock::Options::default())
        .expect("the holder connects");
    let lease = client
        .mutex(path)
        .and_then(|m| m.blocking_acquire_timeout(Duration::from_secs(10)))
        .expect("the holder takes the lock");
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        lease.blocking_release().expect("the holder releases");
        client.blocking_close();
    })
}

fn perform(case: &Case, servers: &str, lock_path: &str) -> Outcome {
    const NUL: &str = "an argument of a command line ends at its first NUL";
    let input = match text_arg(case.input.as_bytes(), NUL) {
        Ok(text) => text,
        Err(na) => return na,
    };
    match case.op.as_str() {
        "path" => outcome_of(&exec(&["--try"], &input), "ok", "Timeout"),
        "hosts" => {
            let mut cmd = zklock();
            cmd.args([
                "--servers",
                &input,
                "--connect-timeout",
                "5s",
                "ls",
                lock_path,
            ]);
            outcome_of(&run(cmd), "ok", "Timeout")
        }
        "session_timeout" => {
            // A bare number is seconds on the command line.
            let out = exec(&["--try", "--session-timeout", &input], lock_path);
            outcome_of(&out, "ok", "Timeout")
        }
        "server_tick" => {
            let out = exec(
                &["--try", "--session-timeout", "4s", "--server-tick", &input],
                lock_path,
            );
            outcome_of(&out, "ok", "Timeout")
        }
        "learned_tick" | "server_features" => Outcome::NotApplicable(
            "the command line has no getter for what a client learned of its servers (it logs it)",
        ),
        "identity" => outcome_of(
            &exec(&["--try", "--identity", &input], lock_path),
            "ok",
            "Timeout",
        ),
        "timeout" => {
            let holder = hold_briefly(servers, lock_path);
            let out = exec(&["--timeout", &input], lock_path);
            holder.join().expect("the holder thread");
            outcome_of(&out, "acquired", "not-acquired")
        }
        "rwpath" => Outcome::NotApplicable(
            "the command line makes a read/write lock only to take it (exec --read/--write)",
        ),
        "multi" => Outcome::NotApplicable("the command line has no multi-lock"),
        "acl" => {
            let mut cmd = zk(&["exec", "--try", "--acl", &input, lock_path, "--", "true"]);
            cmd.env("ZKLOCK_AUTH", "user:secret");
            outcome_of(&run(cmd), "ok", "Timeout")
        }
        "secret" => secret(servers, lock_path, &input),
        "secret_pem" => secret_pem(lock_path, &input),
        "sasl" => {
            let (user, password) = input.split_once(':').expect("sasl takes user:password");
            let mut cmd = zk(&["exec", "--try", "--connect-timeout", "5s", "--sasl-user", user]);
            cmd.env("ZKLOCK_SASL_PASSWORD", password);
            cmd.arg(lock_path).args(["--", "true"]);
            let out = run(cmd);
            if (stdout(&out) + &stderr(&out)).contains(password) {
                return Outcome::Is("shown".into());
            }
            outcome_of(&out, "ok", "Timeout")
        }
        "semaphore" => outcome_of(
            &exec(&["-n", &input, "--timeout", "5s"], lock_path),
            "ok",
            "Timeout",
        ),
        "scenario" if input == "semaphore-fills" => {
            // Two leases of a semaphore of 2 held by clients of this process.
            let holders: Vec<_> = (0..2)
                .map(|_| {
                    let client =
                        zklock::Client::blocking_connect(servers, zklock::Options::default())
                            .expect("a lease holder connects");
                    let lease = client
                        .semaphore(lock_path, 2)
                        .and_then(|s| s.blocking_acquire_timeout(Duration::from_secs(10)))
                        .expect("the holder takes a lease");
                    (client, lease)
                })
                .collect();
            let out = exec(&["-n", "2", "--try"], lock_path);
            for (client, lease) in holders {
                lease.blocking_release().expect("the holder releases");
                client.blocking_close();
            }
            outcome_of(&out, "acquired", "not-acquired")
        }
        "scenario" if input == "revoke-not-held" => {
            let out = run(zk(&["revoke", lock_path]));
            if out.status.code() == Some(3) {
                return Outcome::Is("NotHeld".into());
            }
            outcome_of(&out, "revoked", "Timeout")
        }
        "election_style" => {
            let mut cmd = zk(&["elect", "--style", &input, "--id", "conformance"]);
            cmd.args(["--timeout", "0", lock_path, "--", "true"]);
            outcome_of(&run(cmd), "ok", "Timeout")
        }
        "election_id" => {
            // The leader's command reads the participants (`zklock ls --json`) while it leads.
            let mut cmd = zk(&["elect", "--id", &input, "--timeout", "0", lock_path, "--"]);
            cmd.args(["sh", "-c", &format!("{} ls --json '{lock_path}'", inner_zklock(servers))]);
            let out = run(cmd);
            if out.status.code() != Some(0) {
                return outcome_of(&out, "ok", "Timeout");
            }
            match leader_of(&stdout(&out)) {
                Some(id) if id == input => Outcome::Is("ok".into()),
                Some(_) => Outcome::Is("id-differs".into()),
                None => Outcome::Broken(format!("no leader in {:.300}", stdout(&out))),
            }
        }
        "max_hold" => max_hold(&input, lock_path),
        "lock_delay" => {
            let delay = format!("{input}s");
            let out = run(zk(&[
                "exec",
                "--lock-delay",
                &delay,
                "--try",
                lock_path,
                "--",
                "true",
            ]));
            outcome_of(&out, "ok", "not-acquired")
        }
        "scenario" if input.starts_with("election-") => election(&input, servers, lock_path),
        "scenario" if input == "kind-latch" || input == "library-kazoo-style" => {
            let (style, field) = if input == "kind-latch" {
                ("latch", "kind")
            } else {
                ("kazoo", "library")
            };
            let mut cmd = zk(&["elect", "--style", style, lock_path, "--"]);
            cmd.args(["sh", "-c", &format!("{} ls --json '{lock_path}'", inner_zklock(servers))]);
            let out = run(cmd);
            if out.status.code() != Some(0) {
                return outcome_of(&out, "ok", "Timeout");
            }
            let v: serde_json::Value = match serde_json::from_slice(&out.stdout) {
                Ok(v) => v,
                Err(e) => return Outcome::Broken(format!("ls --json: {e}")),
            };
            match v["participants"][0][field].as_str() {
                Some(word) => Outcome::Is(word.into()),
                None => Outcome::Broken(format!("no {field} in {v}")),
            }
        }
        "scenario" if input == "check-token" => {
            let client = zklock::Client::blocking_connect(servers, zklock::Options::default())
                .expect("the holder connects");
            let lease = client
                .mutex(lock_path)
                .and_then(|m| m.blocking_acquire_timeout(Duration::from_secs(10)))
                .expect("the holder takes the lock");
            let token = lease.token().to_string();
            let before = run(zk(&["check", "--quiet", lock_path, &token]));
            lease.blocking_release().expect("the holder releases");
            let after = run(zk(&["check", "--quiet", lock_path, &token]));
            client.blocking_close();
            fn word(out: &Output) -> Result<&'static str, &Output> {
                match out.status.code() {
                    Some(0) => Ok("true"),
                    Some(1) => Ok("false"),
                    _ => Err(out),
                }
            }
            match (word(&before), word(&after)) {
                (Ok(b), Ok(a)) => Outcome::Is(format!("{b},{a}")),
                (Err(out), _) | (_, Err(out)) => outcome_of(out, "ok", "Timeout"),
            }
        }
        "scenario" if input == "break-without-node" || input == "break-missing-node" => {
            // The holder is a client of this process; `zklock break` names no node (64) or a
            // node no contender has (3). Its stderr shows the holder first: the status decides.
            let client = zklock::Client::blocking_connect(servers, zklock::Options::default())
                .expect("the holder connects");
            let lease = client
                .mutex(lock_path)
                .and_then(|m| m.blocking_acquire_timeout(Duration::from_secs(10)))
                .expect("the holder acquires");
            let mut args = vec!["break", "--reason", "conformance", lock_path];
            if input == "break-missing-node" {
                args.push("_c_00000000-0000-0000-0000-000000000000-lock-0000009999");
            }
            let out = run(zk(&args));
            let held = lease.state() == zklock::LeaseState::Held;
            lease.blocking_release().expect("the holder releases");
            client.blocking_close();
            match out.status.code() {
                _ if !held => Outcome::Is("holder-lost".into()),
                Some(64) => Outcome::Is("InvalidArgument".into()),
                Some(3) => Outcome::Is("NotHeld".into()),
                other => Outcome::Broken(format!("exit status {other:?}: {:.300}", stderr(&out))),
            }
        }
        "scenario" if input == "break-holder" => Outcome::NotApplicable(
            "the broken holder is a `zklock exec` (cli/tests/breaking.rs: SIGTERM, status 76)",
        ),
        "scenario" if input == "valid-until" => Outcome::NotApplicable(
            "a lease's valid_until has no command-line form (the command sees its token, not the lease)",
        ),
        "deadline" => Outcome::NotApplicable(
            "zklock exec takes --timeout, a duration; a deadline has no command-line form",
        ),
        "guarded_timeout" | "guarded_size" => Outcome::NotApplicable(
            "the command line has no guarded write (it runs a command under the lock)",
        ),
        "path_stats_limit" => Outcome::NotApplicable(
            "a command holds one lock path for one run: it keeps no statistics to bound",
        ),
        "participants_timeout" => Outcome::NotApplicable(
            "zklock ls is bounded by --connect-timeout and the session, not by a timeout of its own",
        ),
        "scenario" => Outcome::NotApplicable(
            "a scenario needs a lease or lock value to hold on to; the command line has none",
        ),
        other => Outcome::Broken(format!("unknown op {other:?}")),
    }
}

/// `zklock --servers S` as a shell word list, for a command run under a lock or leadership.
fn inner_zklock(servers: &str) -> String {
    format!("'{}' --servers '{servers}'", env!("CARGO_BIN_EXE_zklock"))
}

/// The holder's identity in `zklock ls --json` output.
fn leader_of(ls_json: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(ls_json).ok()?;
    let first = &v["participants"][0];
    (first["role"] == "holder").then(|| first["identity"].as_str().map(str::to_owned))?
}

/// The `max_hold` op: `zklock exec --max-hold INPUT PATH -- sleep 5` (a bare number is
/// seconds). Lost (status 76) gives the lost reason's first word, as the core names it in
/// the stderr line `zklock: lost the lock ... (token T): <reason>; sending SIGTERM ...`.
fn max_hold(input: &str, lock_path: &str) -> Outcome {
    let out = run(zk(&[
        "exec",
        "--max-hold",
        input,
        lock_path,
        "--",
        "sleep",
        "5",
    ]));
    match out.status.code() {
        Some(0) => Outcome::Is("held".into()),
        Some(76) => {
            let err = stderr(&out);
            let reason = err
                .lines()
                .find_map(|l| l.split_once("): ").map(|(_, r)| r))
                .and_then(|r| r.split([':', ' ', ';']).next());
            match reason {
                Some(word) => Outcome::Is(format!("lost,{word}")),
                None => Outcome::Broken(format!("no lost reason in {err:.300}")),
            }
        }
        _ => outcome_of(&out, "ok", "Timeout"),
    }
}

/// A participant of `style` with `id` leading `path` on a client of this process.
fn lead_here(
    servers: &str,
    path: &str,
    style: zklock::ElectionStyle,
    id: &str,
) -> (zklock::Client, zklock::Lease) {
    let client = zklock::Client::blocking_connect(servers, zklock::Options::default())
        .expect("a participant connects");
    let lease = client
        .election(path, style, Some(id))
        .and_then(|e| e.blocking_lead_with(zklock::Wait::timeout(Duration::from_secs(10)), None))
        .expect("the participant leads");
    (client, lease)
}

/// A file's trimmed text once it is there (within 30 s).
fn read_when_there(file: &std::path::Path) -> String {
    wait_for(
        &format!("{}", file.display()),
        Duration::from_secs(30),
        || std::fs::read_to_string(file).is_ok_and(|t| !t.trim().is_empty()),
    );
    std::fs::read_to_string(file).unwrap().trim().to_owned()
}

/// The election scenarios with a command-line form: `zklock elect` processes as participants
/// (their commands record what they see in scratch files), `zklock elect --listen` as observer.
fn election(name: &str, servers: &str, path: &str) -> Outcome {
    use zklock::ElectionStyle;
    let dir = scratch(name);
    let file = |n: &str| dir.join(n);
    let hold = |id: &str,
                style: &str,
                flags: &[&str],
                ready: &std::path::Path,
                release: &std::path::Path| {
        let mut cmd = zk(&["elect", "--id", id, "--style", style]);
        cmd.args(flags).arg(path).arg("--");
        cmd.args(hold_until(ready, Some(release)));
        spawn(cmd)
    };
    match name {
        "election-handover" => {
            let mut a = hold("a", "selector", &[], &file("a"), &file("a-go"));
            let a_token: i64 = read_when_there(&file("a")).parse().unwrap();
            let mut b = zk(&["elect", "--id", "b", "--style", "selector", path, "--"]);
            b.args([
                "sh",
                "-c",
                &format!(
                    "echo $ZKLOCK_TOKEN > '{}'; {} elect --listen --count 1 '{path}' > '{}'",
                    file("b").display(),
                    inner_zklock(servers),
                    file("b-sees").display()
                ),
            ]);
            let mut b = spawn(b);
            wait_for("b to queue", Duration::from_secs(30), || {
                participants(path).len() == 2
            });
            std::fs::write(file("a-go"), "").unwrap();
            let a_done = wait_exit(&mut a, Duration::from_secs(30), "a");
            let b_done = wait_exit(&mut b, Duration::from_secs(30), "b");
            if a_done.code() != Some(0) || b_done.code() != Some(0) {
                return Outcome::Broken(format!(
                    "a {a_done:?}, b {b_done:?}: {}",
                    child_stderr(&mut b)
                ));
            }
            let b_token: i64 = read_when_there(&file("b")).parse().unwrap();
            let leader = read_when_there(&file("b-sees"));
            let up = if b_token > a_token {
                "token-up"
            } else {
                "token-down"
            };
            Outcome::Is(format!("{leader},{up}"))
        }
        "election-requeue" => {
            // a requeues when its command ends; b's command, once b leads, waits for a's new
            // node and records the participants' order.
            let mut a = hold("a", "latch", &["--requeue"], &file("a"), &file("a-go"));
            read_when_there(&file("a"));
            let mut b = zk(&["elect", "--id", "b", "--style", "latch", path, "--"]);
            b.args([
                "sh",
                "-c",
                &format!(
                    "for i in $(seq 100); do {z} ls --json '{path}' > '{out}.tmp'; \
                 [ $(grep -o identity '{out}.tmp' | wc -l) -ge 2 ] && break; sleep 0.1; done; \
                 mv '{out}.tmp' '{out}'",
                    z = inner_zklock(servers),
                    out = file("order").display()
                ),
            ]);
            let mut b = spawn(b);
            wait_for("b to queue", Duration::from_secs(30), || {
                participants(path).len() == 2
            });
            std::fs::write(file("a-go"), "").unwrap();
            let b_done = wait_exit(&mut b, Duration::from_secs(30), "b");
            signal(&a, SIGTERM);
            wait_exit(&mut a, Duration::from_secs(30), "a");
            if b_done.code() != Some(0) {
                return Outcome::Broken(format!("b {b_done:?}: {}", child_stderr(&mut b)));
            }
            let v: serde_json::Value =
                serde_json::from_str(&read_when_there(&file("order"))).unwrap();
            let order: Vec<&str> = v["participants"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|p| p["identity"].as_str())
                .collect();
            Outcome::Is(order.join(","))
        }
        "election-mixed-layouts" => {
            let (client, lease) = lead_here(servers, path, ElectionStyle::Latch, "latch");
            let out = run(zk(&[
                "elect",
                "--style",
                "selector",
                "--id",
                "selector",
                "--timeout",
                "0",
                path,
                "--",
                "true",
            ]));
            let left = participants(path).len();
            lease.blocking_release().unwrap();
            client.blocking_close();
            if left != 1 {
                return Outcome::Is("left-node".into());
            }
            outcome_of(&out, "led", "Timeout")
        }
        "election-observe" => {
            let mut listener = spawn(zk(&["elect", "--listen", "--count", "3", path]));
            let out = std::io::BufReader::new(listener.stdout.take().unwrap());
            let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
            let sink = lines.clone();
            std::thread::spawn(move || {
                use std::io::BufRead;
                for line in out.lines().map_while(Result::ok) {
                    sink.lock().unwrap().push(line);
                }
            });
            let seen = |n: usize| {
                let lines = lines.clone();
                wait_for(
                    "a line of elect --listen",
                    Duration::from_secs(30),
                    move || lines.lock().unwrap().len() >= n,
                )
            };
            seen(1);
            let (client, lease) = lead_here(servers, path, ElectionStyle::Selector, "a");
            seen(2);
            lease.blocking_release().unwrap();
            seen(3);
            client.blocking_close();
            let status = wait_exit(&mut listener, Duration::from_secs(30), "elect --listen");
            if status.code() != Some(0) {
                return Outcome::Broken(format!("elect --listen: {status:?}"));
            }
            let lines = lines.lock().unwrap().join(",");
            Outcome::Is(lines)
        }
        "election-proclaim" => Outcome::NotApplicable(
            "the command line has no proclaim: a leader's id is its --id, fixed for the run",
        ),
        "election-path-deleted-while-disconnected" => Outcome::NotApplicable(
            "the case cuts one leader's link at the harness's proxy while it leads: a command \
             line run has no handle on its own connection",
        ),
        other => Outcome::Broken(format!("unknown election scenario {other:?}")),
    }
}

/// The `secret_pem` op: the input (PEM text of a made-up key, or its body) as `--tls-ca`; as
/// `--tls-ca`, `--tls-cert` and `--tls-key`; as `--tls-key` alone (through `ZKLOCK_TLS_KEY`,
/// the environment a key is more likely to come from). Every run must fail; no output shows it.
fn secret_pem(lock_path: &str, pem: &str) -> Outcome {
    let mut shown = String::new();
    for attempt in 0..3 {
        let mut cmd = zk(&["exec", "--try", "--connect-timeout", "5s"]);
        if attempt < 2 {
            cmd.args(["--tls-ca", pem]);
        }
        if attempt == 1 {
            cmd.args(["--tls-cert", pem, "--tls-key", pem]);
        }
        if attempt == 2 {
            cmd.env("ZKLOCK_TLS_KEY", pem);
        }
        cmd.arg(lock_path).args(["--", "true"]);
        let out = run(cmd);
        if out.status.code() == Some(0) {
            return Outcome::Is("connected".into());
        }
        shown += &(stdout(&out) + &stderr(&out));
    }
    Outcome::Is(
        if zklock_testkit::conformance::pem_body_shown(&shown, pem) {
            "shown"
        } else {
            "hidden"
        }
        .into(),
    )
}

/// The `secret` op: `zklock exec` (credentials from ZKLOCK_AUTH, ACL creator-all) runs
/// `zklock ls` of its own lock; neither output, nor the error of a credential without `:`,
/// holds the password.
fn secret(servers: &str, lock_path: &str, secret: &str) -> Outcome {
    let ls = format!(
        "'{}' --servers '{servers}' ls '{lock_path}'; '{}' --servers '{servers}' ls --json '{lock_path}'",
        env!("CARGO_BIN_EXE_zklock"),
        env!("CARGO_BIN_EXE_zklock")
    );
    let mut cmd = zk(&[
        "exec",
        "--acl",
        "creator-all",
        lock_path,
        "--",
        "sh",
        "-c",
        &ls,
    ]);
    cmd.env("ZKLOCK_AUTH", format!("conformance:{secret}"));
    let held = run(cmd);
    if held.status.code() != Some(0) || !stdout(&held).contains("_c_") {
        return Outcome::Broken(format!("exec + ls failed: {:.300}", stderr(&held)));
    }
    let mut cmd = zk(&["ls", lock_path]);
    cmd.env("ZKLOCK_AUTH", secret);
    let bad = run(cmd);
    if bad.status.code() != Some(64) {
        return Outcome::Broken(format!("a credential without ':' gave {:?}", bad.status));
    }
    let shown = [&held, &bad]
        .iter()
        .map(|o| stdout(o) + &stderr(o))
        .collect::<String>();
    Outcome::Is(
        if shown.contains(secret) {
            "shown"
        } else {
            "hidden"
        }
        .into(),
    )
}

#[test]
fn every_conformance_case_with_a_command_line_form_gives_the_expected_outcome() {
    let servers = servers();
    let (mut passed, mut failed, mut not_applicable) = (0, 0, 0);
    for case in cases(servers) {
        let lock_path = format!("/conformance/cli/{}-{}", case.id, std::process::id());
        match perform(&case, servers, &lock_path) {
            Outcome::Is(got) if got == case.expected => {
                passed += 1;
                println!("ok   {} ({}): {got}", case.id, case.op);
            }
            Outcome::Is(got) => {
                failed += 1;
                println!(
                    "FAIL {} ({}): expected {}, got {got}",
                    case.id, case.op, case.expected
                );
            }
            Outcome::Broken(why) => {
                failed += 1;
                println!(
                    "FAIL {} ({}): expected {}; {why}",
                    case.id, case.op, case.expected
                );
            }
            Outcome::NotApplicable(why) => {
                not_applicable += 1;
                println!("n/a  {} ({}): {why}", case.id, case.op);
            }
        }
    }
    println!("{not_applicable} n/a (no command-line form; each listed above with the reason)");
    println!("conformance cli: {passed} passed, {failed} failed");
    assert!(passed > 0, "no case ran");
    assert_eq!(failed, 0, "{failed} conformance cases failed (see above)");
}
