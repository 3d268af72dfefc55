//! `zklock server start|stop|status` in a scratch directory: a real daemonized ZooKeeper that
//! the other commands use when no servers are configured.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::*;

struct Local {
    dir: PathBuf,
}

impl Local {
    fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = zklock();
        cmd.env("ZKLOCK_SERVER_DIR", &self.dir).args(args);
        cmd
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        let _ = self.cmd(&["server", "stop"]).output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn server_start_status_reuse_stop() {
    let local = Local {
        dir: scratch("server"),
    };
    let out = run(local.cmd(&["server", "status"]));
    assert_eq!(out.status.code(), Some(3), "{}", stdout(&out));
    assert!(stdout(&out).starts_with("not running"));

    let out = run(local.cmd(&["server", "start"]));
    assert!(out.status.success(), "start: {}", stderr(&out));
    let servers = stdout(&out).trim().to_owned();
    assert!(servers.starts_with("127.0.0.1:"), "{servers}");
    assert!(stderr(&out).contains("serving"), "{}", stderr(&out));

    let out = run(local.cmd(&["server", "status"]));
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains(&servers), "{}", stdout(&out));

    // A second start reuses the running server.
    let out = run(local.cmd(&["server", "start"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), servers);
    assert!(stderr(&out).contains("already runs"), "{}", stderr(&out));

    // Commands without --servers use it.
    let token_file = local.dir.join("token");
    let out = run(local.cmd(&[
        "exec",
        "/zklock-test/local",
        "--",
        "sh",
        "-c",
        &format!("echo $ZKLOCK_TOKEN > '{}'", token_file.display()),
    ]));
    assert!(
        out.status.success(),
        "exec on the local server: {}",
        stderr(&out)
    );
    assert!(std::fs::read_to_string(&token_file)
        .unwrap()
        .trim()
        .parse::<i64>()
        .is_ok());
    let out = run(local.cmd(&["ls", "/zklock-test/local"]));
    assert!(out.status.success(), "{}", stderr(&out));

    let out = run(local.cmd(&["server", "stop"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(local.cmd(&["server", "status"]));
    assert_eq!(out.status.code(), Some(3));
    let out = run(local.cmd(&["ls", "/zklock-test/local"]));
    assert_eq!(out.status.code(), Some(69), "{}", stderr(&out));

    // It starts again on the port it remembered, with its data.
    let out = run(local.cmd(&["server", "start"]));
    assert!(out.status.success(), "restart: {}", stderr(&out));
    assert_eq!(stdout(&out).trim(), servers);
}
