//! Acceptance 5: bad input prints one clear line on stderr and a non-zero status, never a
//! backtrace (RUST_BACKTRACE=1 is set by the helper).

mod common;

use common::*;

fn check(args: &[&str], status: i32, needle: &str) {
    let mut cmd = zklock();
    cmd.args(args);
    let out = run(cmd);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(status), "{args:?}: stderr {err:?}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{args:?}: one line expected, got {err:?}");
    assert!(lines[0].starts_with("zklock: "), "{args:?}: {err:?}");
    assert!(
        lines[0].contains(needle),
        "{args:?}: {needle:?} not in {err:?}"
    );
    for bad in ["panicked", "backtrace", "RUST_BACKTRACE", "stack"] {
        assert!(!err.contains(bad), "{args:?}: {err:?}");
    }
    assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
}

#[test]
fn no_server_reachable() {
    let args = [
        "--servers",
        "127.0.0.1:1",
        "--connect-timeout",
        "1s",
        "exec",
        "/locks/x",
        "--",
        "true",
    ];
    check(&args, 69, "127.0.0.1:1");
    check(
        &[
            "--servers",
            "127.0.0.1:1",
            "--connect-timeout",
            "1s",
            "ls",
            "/locks/x",
        ],
        69,
        "127.0.0.1:1",
    );
}

#[test]
fn no_server_configured() {
    check(
        &["exec", "/locks/x", "--", "true"],
        69,
        "zklock server start",
    );
    check(&["ls", "/locks/x"], 69, "ZKLOCK_SERVERS");
}

#[test]
fn bad_lock_path() {
    let s = servers();
    check(
        &["--servers", s, "exec", "locks/x", "--", "true"],
        64,
        "invalid lock path",
    );
    check(
        &["--servers", s, "exec", "/locks/x/", "--", "true"],
        64,
        "invalid lock path",
    );
    check(&["--servers", s, "ls", "/a//b"], 64, "invalid lock path");
    check(&["--servers", s, "ls", "/zookeeper/x"], 64, "reserved");
}

#[test]
fn missing_double_dash() {
    check(&["exec", "/locks/x", "echo", "hi"], 64, "`--`");
    check(&["exec", "/locks/x"], 64, "`--`");
    check(&["exec", "/locks/x", "--"], 64, "<CMD>");
}

#[test]
fn bad_options() {
    check(
        &["--servers", "bad host:x", "ls", "/locks/x"],
        64,
        "connect string",
    );
    check(
        &["--timeout", "soon", "exec", "/a", "--", "true"],
        64,
        "duration",
    );
    check(
        &["exec", "--frobnicate", "/a", "--", "true"],
        64,
        "--frobnicate",
    );
    check(&["frobnicate"], 64, "frobnicate");
    check(
        &["exec", "--read", "--write", "/a", "--", "true"],
        64,
        "--write",
    );
}

#[test]
fn help_documents_the_exit_statuses() {
    let mut cmd = zklock();
    cmd.arg("--help");
    let out = run(cmd);
    assert!(out.status.success());
    let help = stdout(&out);
    for status in ["64", "69", "75", "76", "126", "127", "130"] {
        assert!(
            help.contains(&format!("    {status}")),
            "{status} missing:\n{help}"
        );
    }
}

/// `--servers ""` is an error (as `Client("")` is in Python), not a fall-back to
/// $ZKLOCK_SERVERS: with a working $ZKLOCK_SERVERS set it still fails, before any I/O.
#[test]
fn an_empty_servers_option_is_a_usage_error_even_with_zklock_servers_set() {
    for args in [
        &["--servers", "", "ls", "/locks/x"][..],
        &["ls", "--servers", " ", "/locks/x"],
        &["--servers", "", "exec", "/locks/x", "--", "true"],
    ] {
        let mut cmd = zklock();
        cmd.env("ZKLOCK_SERVERS", servers()).args(args);
        let out = run(cmd);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(64), "{args:?}: {err}");
        assert!(err.contains("--servers is empty"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// A negative --timeout is refused with a message that says so (clap used to read `-1s` as an
/// unknown flag).
#[test]
fn a_negative_timeout_is_refused_as_negative() {
    check(
        &["--timeout", "-1s", "exec", "/a", "--", "true"],
        64,
        "a timeout cannot be negative",
    );
    check(
        &["exec", "--timeout=-1s", "/a", "--", "true"],
        64,
        "a timeout cannot be negative",
    );
    check(
        &["exec", "--session-timeout", "-2s", "/a", "--", "true"],
        64,
        "cannot be negative",
    );
}

/// Each command's help lists only the options it uses; the command list names check-log.
#[test]
fn each_commands_help_lists_only_the_options_that_apply() {
    let help = |args: &[&str]| {
        let mut cmd = zklock();
        cmd.args(args);
        let out = run(cmd);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    let top = help(&["--help"]);
    assert!(top.contains("check-log"), "{top}");
    let exec = help(&["exec", "--help"]);
    for option in [
        "--servers",
        "--connect-timeout",
        "--session-timeout",
        "--timeout",
        "--identity",
        "--kill-after",
    ] {
        assert!(exec.contains(option), "exec help lacks {option}:\n{exec}");
    }
    let ls = help(&["ls", "--help"]);
    assert!(
        ls.contains("--servers") && ls.contains("--connect-timeout"),
        "{ls}"
    );
    for option in ["--session-timeout", "--timeout", "--identity"] {
        assert!(!ls.contains(option), "ls help lists {option}:\n{ls}");
    }
    for args in [
        &["server", "--help"][..],
        &["server", "start", "--help"],
        &["check-log", "--help"],
    ] {
        let text = help(args);
        for option in ["--servers", "--session-timeout", "--timeout", "--identity"] {
            assert!(!text.contains(option), "{args:?} lists {option}:\n{text}");
        }
    }
    // Given anyway, before the command, an option that does not apply is refused.
    check(
        &["--timeout", "5s", "ls", "/a"],
        64,
        "--timeout does not apply",
    );
    check(
        &["--servers", "x:1", "server", "status"],
        64,
        "--servers does not apply",
    );
}

/// `exec --timeout 1s` against an ensemble that accepts connections and never answers gives up
/// after about a second, not after the 15 s connect timeout: the acquire's deadline bounds the
/// connect it implies (issue 23, point 7).
#[test]
fn a_timeout_bounds_connecting_to_a_silent_ensemble() {
    // Connections complete in the kernel's backlog and then hear nothing.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap().to_string();
    let started = std::time::Instant::now();
    let mut cmd = zklock();
    cmd.args([
        "--servers",
        &addr,
        "exec",
        "--timeout",
        "1s",
        "/locks/x",
        "--",
        "true",
    ]);
    let out = run(cmd);
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(69), "{}", stderr(&out));
    assert!(stderr(&out).contains(&addr), "{}", stderr(&out));
    assert!(
        took < std::time::Duration::from_millis(2500),
        "exec --timeout 1s gave up after {took:?}"
    );
    println!("exec --timeout 1s against a silent ensemble exited after {took:?}");
}
