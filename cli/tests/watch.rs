//! `zklock ls --watch` in a pseudo-terminal: it redraws the queue (who holds, who waits in
//! which order, for how long, identity, library) when the queue changes; and `zklock exec
//! --stats` prints the wait and hold time when the command ends.

mod common;

use std::sync::Mutex;
use std::time::Duration;

use common::*;

/// The last frame drawn so far: the text after the last clear-screen sequence.
fn last_frame(screen: &Mutex<String>) -> String {
    let s = screen.lock().unwrap();
    s.rsplit("\x1b[H\x1b[2J").next().unwrap_or("").to_owned()
}

#[test]
fn ls_watch_redraws_the_queue_in_a_terminal_as_holders_and_waiters_come_and_go() {
    let path = unique_path("cli-watch");
    let dir = scratch("watch");
    let mut watcher = spawn_on_terminal(zk(&["ls", "--watch", &path]));
    let screen = watcher.screen.clone();
    let limit = Duration::from_secs(30);
    wait_for("a first frame: the lock is free", limit, || {
        last_frame(&screen).contains(&format!("{path}: free"))
    });

    let (ready, release) = (dir.join("ready"), dir.join("release"));
    let mut cmd = zk(&["exec", "--identity", "first-holder", &path, "--"]);
    cmd.args(hold_until(&ready, Some(&release)));
    let mut holder = spawn(cmd);
    wait_for("the holder to run", limit, || ready.exists());
    wait_for("a frame with the holder", limit, || {
        let f = last_frame(&screen);
        f.contains("1 holding, 0 waiting") && f.contains("first-holder") && f.contains("zklock")
    });

    let (ready2, release2) = (dir.join("ready2"), dir.join("release2"));
    let mut cmd = zk(&["exec", "--identity", "second-in-line", &path, "--"]);
    cmd.args(hold_until(&ready2, Some(&release2)));
    let mut waiter = spawn(cmd);
    wait_for("a frame with the waiter behind the holder", limit, || {
        let f = last_frame(&screen);
        let (h, w) = (f.find("first-holder"), f.find("second-in-line"));
        f.contains("1 holding, 1 waiting") && matches!((h, w), (Some(h), Some(w)) if h < w)
    });
    let frame = last_frame(&screen);
    assert!(
        frame
            .lines()
            .any(|l| l.contains("waiting") && l.contains("second-in-line")),
        "{frame}"
    );
    assert!(frame.contains("s "), "each row says for how long: {frame}");

    // The holder leaves: the waiter holds, and the view says so.
    std::fs::write(&release, "").unwrap();
    wait_exit(&mut holder, limit, "the first holder");
    wait_for("a frame with the waiter holding", limit, || {
        let f = last_frame(&screen);
        f.contains("1 holding, 0 waiting")
            && f.contains("second-in-line")
            && !f.contains("first-holder")
    });
    std::fs::write(&release2, "").unwrap();
    wait_exit(&mut waiter, limit, "the second holder");
    wait_for("the lock free again", limit, || {
        last_frame(&screen).contains(&format!("{path}: free"))
    });
    assert!(
        screen.lock().unwrap().matches("\x1b[H\x1b[2J").count() >= 5,
        "every change redraws the terminal"
    );

    signal(&watcher.child, SIGINT);
    wait_exit(&mut watcher.child, limit, "ls --watch after Ctrl-C");
    watcher.finish();
}

#[test]
fn ls_watch_refuses_json() {
    let out = run(zk(&["ls", "--watch", "--json", "/x"]));
    assert_eq!(out.status.code(), Some(64), "stderr: {}", stderr(&out));
}

#[test]
fn exec_stats_prints_the_wait_and_hold_time_when_the_command_ends() {
    let path = unique_path("cli-stats");
    let out = run({
        let mut cmd = zk(&["exec", "--stats", &path, "--"]);
        cmd.args(["sh", "-c", "sleep 0.3; echo done"]);
        cmd
    });
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), "done\n", "the command's output stays its own");
    let err = stderr(&out);
    let line = err
        .lines()
        .find(|l| l.starts_with(&format!("zklock: stats for {path}: waited ")))
        .unwrap_or_else(|| panic!("no stats line in {err:?}"));
    let held: f64 = line
        .split("held ")
        .nth(1)
        .and_then(|r| r.split(" ms").next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no hold time in {line:?}"));
    assert!((300.0..30_000.0).contains(&held), "{line}");
    assert!(line.contains("acquired 1, timed out 0"), "{line}");
    // Without --stats, nothing of the kind.
    let out = run(zk(&["exec", &path, "--", "true"]));
    assert!(!stderr(&out).contains("stats for"), "{}", stderr(&out));
}
