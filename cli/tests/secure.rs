//! Secure ZooKeeper from the command line: --tls-ca / ZKLOCK_TLS_CA, --sasl-user with the
//! password from ZKLOCK_SASL_PASSWORD or --sasl-password-file, --acl, chroot, against one
//! secured server (zklock-testkit's `shared_secure`).

mod common;

use std::time::{Duration, Instant};

use common::*;
use zklock_testkit::shared_secure;

/// `zklock` with the given connect string (no --servers of the plain test server).
fn zk_at(servers: &str, args: &[&str]) -> std::process::Command {
    let mut cmd = zklock();
    cmd.arg("--servers").arg(servers).args(args);
    cmd
}

fn ca() -> String {
    shared_secure().ca.display().to_string()
}

#[test]
fn exec_over_tls_with_zklock_tls_ca_runs_the_command_under_the_lock() {
    let s = shared_secure();
    let path = unique_path("cli-tls");
    let mut cmd = zk_at(
        &s.tls_servers,
        &["exec", &path, "--", "sh", "-c", "echo token=$ZKLOCK_TOKEN"],
    );
    cmd.env("ZKLOCK_TLS_CA", ca());
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("token="), "{}", stdout(&out));
}

#[test]
fn a_bad_tls_setup_exits_unavailable_at_once_saying_which() {
    let s = shared_secure();
    let wrong = s.wrong_ca.display().to_string();
    for (servers, args, words) in [
        (&s.tls_servers, vec!["--tls-ca", wrong.as_str()], "wrong CA"),
        (&s.tls_servers, vec![], "speaks TLS"),
        (&s.wrong_host_servers, vec!["--tls-ca", &ca()], "wrong host"),
    ] {
        let mut cmd = zk_at(servers, &args);
        cmd.args(["ls", "/zklock-cli-secure/any"]);
        let start = Instant::now();
        let out = run(cmd);
        assert_eq!(out.status.code(), Some(69), "{}", stderr(&out));
        assert!(stderr(&out).contains(words), "{words}: {}", stderr(&out));
        assert!(
            start.elapsed() < Duration::from_secs(6),
            "{:?}",
            start.elapsed()
        );
    }
}

#[test]
fn a_wrong_sasl_password_exits_with_permission_and_never_prints_it() {
    let s = shared_secure();
    let mut cmd = zk_at(
        &s.servers,
        &["--sasl-user", "alice", "ls", "/zklock-cli-secure/any"],
    );
    cmd.env("ZKLOCK_SASL_PASSWORD", "pw-never-shown-5");
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(77), "{}", stderr(&out));
    assert!(stderr(&out).contains("alice"), "{}", stderr(&out));
    assert!(!(stderr(&out) + &stdout(&out)).contains("pw-never-shown-5"));
}

#[test]
fn creator_all_keeps_another_user_out_and_ls_shows_no_secret() {
    let s = shared_secure();
    let path = unique_path("cli-acl");
    let dir = scratch("secure");
    let (ready, release) = (dir.join("ready"), dir.join("release"));
    let pw_file = dir.join("alice.pw");
    std::fs::write(&pw_file, "alice-sasl-pw\n").unwrap();
    let pw_file = pw_file.display().to_string();
    let mut cmd = zk_at(
        &s.tls_servers,
        &[
            "--tls-ca",
            &ca(),
            "--sasl-user",
            "alice",
            "--sasl-password-file",
            &pw_file,
        ],
    );
    cmd.args(["--acl", "creator-all", "exec", &path, "--"]);
    cmd.args(hold_until(&ready, Some(&release)));
    let holder = spawn(cmd);
    wait_for("the holder to run", Duration::from_secs(20), || {
        ready.exists()
    });

    // bob (digest) can neither join nor list the queue.
    let mut bob = zk_at(&s.servers, &["exec", "--try", &path, "--", "true"]);
    bob.env("ZKLOCK_AUTH", "bob:bob-digest-pw")
        .env("ZKLOCK_ACL", "creator-all");
    let out = run(bob);
    assert_eq!(out.status.code(), Some(77), "{}", stderr(&out));
    assert!(!stderr(&out).contains("bob-digest-pw"), "{}", stderr(&out));

    // alice (another process, same user) sees the queue; nothing secret in the listing.
    let mut ls = zk_at(&s.servers, &["--sasl-user", "alice", "ls", "--json", &path]);
    ls.env("ZKLOCK_SASL_PASSWORD", "alice-sasl-pw");
    let out = run(ls);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown = stdout(&out) + &stderr(&out);
    assert!(shown.contains("_c_"), "{shown}");
    assert!(!shown.contains("alice-sasl-pw"), "{shown}");

    std::fs::write(&release, "").unwrap();
    let out = holder.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn ls_through_a_chroot_shows_paths_relative_to_it() {
    let s = shared_secure();
    let root = unique_path("cli-chroot");
    let dir = scratch("chroot");
    let (ready, release) = (dir.join("ready"), dir.join("release"));
    // The chroot must exist: a holder under it (plain connect string) makes it.
    let mut base = zk_at(&s.servers, &["exec", &format!("{root}/base"), "--"]);
    base.args(hold_until(&ready, Some(&release)));
    let mut base = spawn(base);
    wait_for("the base holder", Duration::from_secs(20), || {
        ready.exists()
    });
    let chrooted = format!("{}{root}", s.tls_servers);
    let mut cmd = zk_at(
        &chrooted,
        &[
            "--tls-ca",
            &ca(),
            "exec",
            "/app/orders",
            "--",
            "sh",
            "-c",
            "echo $ZKLOCK_NODE",
        ],
    );
    cmd.env_remove("ZKLOCK_NODE");
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("/app/orders/_c_"),
        "{}",
        stdout(&out)
    );
    std::fs::write(&release, "").unwrap();
    base.wait().unwrap();
}
