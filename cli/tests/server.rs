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

/// Issue 33: `zklock server start` had no `--port`.
#[test]
fn server_start_serves_on_the_port_asked_and_refuses_a_taken_one() {
    let local = Local {
        dir: scratch("server-port"),
    };
    // A port something else listens on is refused, naming it; nothing is started.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_port = taken.local_addr().unwrap().port().to_string();
    let out = run(local.cmd(&["server", "start", "--port", &taken_port]));
    assert_eq!(out.status.code(), Some(69), "{}", stderr(&out));
    assert!(stderr(&out).contains(&taken_port), "{}", stderr(&out));
    drop(taken);
    let out = run(local.cmd(&["server", "start", "--port", "0"]));
    assert_eq!(out.status.code(), Some(64), "{}", stderr(&out));

    let port = {
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        free.local_addr().unwrap().port().to_string()
    };
    let out = run(local.cmd(&["server", "start", "--port", &port]));
    assert!(out.status.success(), "start: {}", stderr(&out));
    assert_eq!(stdout(&out).trim(), format!("127.0.0.1:{port}"));
    // Asking the running server for another port says where it runs instead of moving it.
    let out = run(local.cmd(&["server", "start", "--port", "1"]));
    assert_eq!(out.status.code(), Some(69), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("127.0.0.1:{port}")),
        "{}",
        stderr(&out)
    );
    let out = run(local.cmd(&["server", "start", "--port", &port]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("already runs"), "{}", stderr(&out));
    let out = run(local.cmd(&["server", "stop"]));
    assert!(out.status.success(), "{}", stderr(&out));
}
