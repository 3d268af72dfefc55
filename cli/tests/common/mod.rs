//! Helpers for the command-line tests: the built `zklock` binary, a real ZooKeeper from the
//! test harness (a test FAILS when it cannot start), and small polling utilities.
#![allow(dead_code, unused_imports)]

use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub use zklock_testkit::unique_path;

/// The shared test ZooKeeper's connect string (panics, failing the test, if it cannot start).
pub fn servers() -> &'static str {
    zklock_testkit::shared()
}

/// A fresh scratch directory, under one directory per test process
/// ($TMPDIR/zklock-cli-tests/<pid>, emptied of earlier processes' leftovers on first use).
pub fn scratch(name: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let root = ROOT.get_or_init(|| {
        let base = std::env::temp_dir().join("zklock-cli-tests");
        // Remove what finished test processes left behind (their pid is gone).
        if let Ok(entries) = std::fs::read_dir(&base) {
            for e in entries.flatten() {
                let pid = e.file_name().to_string_lossy().parse::<u32>().ok();
                if pid.is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists()) {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        base.join(std::process::id().to_string())
    });
    let dir = root.join(format!(
        "{name}-{}",
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `zklock` with a clean environment: no ZKLOCK_SERVERS, a local-server directory that holds
/// nothing, backtraces on (so that a test would see one if it were printed). Started in its
/// own process group so that signals sent by tests reach it as they would from `kill`.
pub fn zklock() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zklock"));
    cmd.env_remove("ZKLOCK_SERVERS");
    for var in [
        "ZKLOCK_TLS_CA",
        "ZKLOCK_TLS_CERT",
        "ZKLOCK_TLS_KEY",
        "ZKLOCK_TLS_VERIFY_HOSTNAME",
        "ZKLOCK_SASL_USER",
        "ZKLOCK_SASL_PASSWORD",
        "ZKLOCK_SASL_PASSWORD_FILE",
        "ZKLOCK_AUTH",
        "ZKLOCK_ACL",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("ZKLOCK_SERVER_DIR", no_local_server())
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .process_group(0);
    cmd
}

/// A local-server directory that holds no server (so no test uses one by accident).
fn no_local_server() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| scratch("no-local-server")).clone()
}

/// `zklock --servers <test server> ARGS...`
pub fn zk(args: &[&str]) -> Command {
    let mut cmd = zklock();
    cmd.arg("--servers").arg(servers()).args(args);
    cmd
}

pub fn run(mut cmd: Command) -> Output {
    cmd.output().expect("run zklock")
}

pub fn spawn(mut cmd: Command) -> Child {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn zklock")
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Polls `cond` every 20 ms until it holds; panics with `what` after `limit`.
pub fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `wait_for` while the commands in `running` must keep running: one that exits first, or the
/// limit, panics with each command's status and what it printed (a command still running is
/// killed first), so a round that could not start says why.
pub fn wait_for_running(
    what: &str,
    limit: Duration,
    running: &mut [(&str, &mut Child)],
    mut cond: impl FnMut() -> bool,
) {
    let deadline = Instant::now() + limit;
    loop {
        if cond() {
            return;
        }
        let exited = running
            .iter_mut()
            .any(|(_, c)| matches!(c.try_wait(), Ok(Some(_))));
        if exited || Instant::now() >= deadline {
            let mut report = String::new();
            for (name, child) in running.iter_mut() {
                let status = match child.try_wait() {
                    Ok(Some(status)) => format!("exited ({status})"),
                    _ => {
                        let _ = child.kill();
                        let _ = child.wait();
                        "was still running (killed now)".to_owned()
                    }
                };
                report.push_str(&format!(
                    "\n{name} {status}; stderr: {}",
                    child_stderr(child)
                ));
            }
            let why = if exited {
                "a command exited".to_owned()
            } else {
                format!("timed out after {limit:?}")
            };
            panic!("{why} waiting for {what}:{report}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for a child with a limit; kills it and panics when it does not exit.
pub fn wait_exit(child: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: zklock did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The rest of a child's stderr (after it exited).
pub fn child_stderr(child: &mut Child) -> String {
    use std::io::Read;
    let mut s = String::new();
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut s).ok();
    }
    s
}

pub fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as i32, sig);
    }
}

pub use libc::{SIGINT, SIGTERM};

/// `zklock ls --json PATH` parsed.
pub fn ls_json(path: &str) -> serde_json::Value {
    let out = run(zk(&["ls", "--json", path]));
    assert!(out.status.success(), "ls failed: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("ls --json prints JSON")
}

pub fn participants(path: &str) -> Vec<serde_json::Value> {
    ls_json(path)["participants"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// `participants`, as the server (or ensemble member) at `servers` shows them.
pub fn participants_on(servers: &str, path: &str) -> Vec<serde_json::Value> {
    let mut cmd = zklock();
    cmd.args(["--servers", servers, "ls", "--json", path]);
    let out = run(cmd);
    assert!(out.status.success(), "ls failed: {}", stderr(&out));
    let shown: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("ls --json prints JSON");
    shown["participants"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// A shell command for exec that touches `ready` once it runs, then waits for `release` to
/// appear (or for ever when `release` is None).
pub fn hold_until(ready: &Path, release: Option<&Path>) -> Vec<String> {
    let wait = match release {
        Some(r) => format!("while [ ! -e '{}' ]; do sleep 0.05; done", r.display()),
        None => "while :; do sleep 0.05; done".into(),
    };
    vec![
        "sh".into(),
        "-c".into(),
        format!("echo $ZKLOCK_TOKEN > '{}'; {wait}", ready.display()),
    ]
}

/// A pseudo-terminal: (master, slave).
pub fn openpty() -> (OwnedFd, OwnedFd) {
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty writes two descriptors we then own.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // Close-on-exec, as Rust's own descriptors are: otherwise every process started meanwhile
    // (the shared ZooKeeper harness among them) keeps the terminal open, and the master never
    // sees the watcher's end.
    for fd in [master, slave] {
        // SAFETY: fcntl on descriptors we own.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) }
}

/// `sh -c SCRIPT` as a command line.
pub fn sh(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into()]
}

/// What one black-hole round saw (`black_holed_round`).
pub struct Cut {
    /// How long before the next command started the cut-off holder's command got SIGTERM
    /// (negative: both ran at once).
    pub margin_ms: f64,
    /// How long before the next command started this test read the holder's "sending SIGTERM"
    /// line: zklock prints it just before it signals the command, and the test reads it at
    /// that moment or later, so zklock's own lead was at least this. Beside `margin_ms` it
    /// tells a zklock that signalled late from a command that took long to act on the signal.
    pub signalled_ms: Option<f64>,
    pub status: std::process::ExitStatus,
    pub stderr: String,
}

/// The wall clock in nanoseconds since the epoch, as `date +%s%N` prints it.
pub fn wall_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// A child's stderr read by a thread as it comes, each line with the wall clock at which it
/// was read (`wall_ns`): no earlier than the child wrote it. Each line is also passed on to
/// this test's output under `who`, so that a test that fails before `finish` still shows it.
pub struct StampedLines(std::thread::JoinHandle<Vec<(i128, String)>>);

impl StampedLines {
    pub fn read(who: &'static str, from: impl std::io::Read + Send + 'static) -> Self {
        use std::io::BufRead;
        Self(std::thread::spawn(move || {
            std::io::BufReader::new(from)
                .lines()
                .map_while(Result::ok)
                .map(|line| {
                    eprintln!("  {who}: {line}");
                    (wall_ns(), line)
                })
                .collect()
        }))
    }

    /// Every line, once the child has closed its stderr.
    pub fn finish(self) -> Vec<(i128, String)> {
        self.0.join().unwrap_or_default()
    }
}

/// One round of "a cut-off holder's command gets SIGTERM before the next holder's command
/// starts" (issues 12 and 25): `zklock VERB... PATH -- cmd` reaches ZooKeeper through the
/// harness's fault proxy with a 2 s session and records its token, then waits; `zklock NEXT...
/// PATH -- cmd` queues on a direct connection and records when its command starts; the proxy
/// turns into a black hole (the link stays open, nothing crosses).
pub fn black_holed_round(name: &str, verb: &[&str], next: &[&str]) -> Cut {
    faulted_round(name, verb, next, zklock_testkit::Proxy::blackhole)
}

/// As `black_holed_round`, with only the server-to-client direction lost (issue 33): what the
/// holder sends still reaches the server. The trap's stamp is also the moment the command
/// stopped (it exits right after).
pub fn one_way_round(name: &str, verb: &[&str], next: &[&str]) -> Cut {
    faulted_round(name, verb, next, zklock_testkit::Proxy::drop_to_client)
}

/// The round of `black_holed_round`, with `fault` applied to the holder's proxy.
pub fn faulted_round(
    name: &str,
    verb: &[&str],
    next: &[&str],
    fault: impl FnOnce(&zklock_testkit::Proxy),
) -> Cut {
    let path = zklock_testkit::unique_path(name);
    let dir = scratch(name);
    let (ready, term, started) = (dir.join("ready"), dir.join("term"), dir.join("started"));
    let proxy = zklock_testkit::Proxy::start(servers().split(',').next().unwrap())
        .expect("start the fault proxy");
    // `wait` returns at once on a signal, so the trap runs when SIGTERM arrives.
    let script = format!(
        "trap 'date +%s%N > \"{term}\"; kill $! 2>/dev/null; exit 0' TERM; \
         echo $ZKLOCK_TOKEN > '{ready}'; sleep 1000 & wait $!",
        term = term.display(),
        ready = ready.display()
    );
    let mut holder = zklock();
    holder
        .args(["--servers", proxy.addr(), "--session-timeout", "2s"])
        .args(verb)
        .args([&path, "--"])
        .args(sh(&script));
    let mut holder = spawn(holder);
    let holder_lines = StampedLines::read(
        "the holder",
        holder.stderr.take().expect("the holder's stderr"),
    );
    wait_for_running(
        "the holder's command to run",
        Duration::from_secs(20),
        &mut [("the holder", &mut holder)],
        || std::fs::read_to_string(&ready).is_ok_and(|t| !t.trim().is_empty()),
    );
    let mut second = zk(next);
    second
        .args([&path, "--"])
        .args(sh(&format!("date +%s%N > '{}'", started.display())));
    let mut second = spawn(second);
    wait_for_running(
        "the next one to queue",
        Duration::from_secs(20),
        &mut [("the holder", &mut holder), ("the next one", &mut second)],
        || participants(&path).len() == 2,
    );
    fault(&proxy);
    let done = wait_exit(&mut second, Duration::from_secs(60), "the next one");
    assert_eq!(done.code(), Some(0), "{}", child_stderr(&mut second));
    let status = wait_exit(&mut holder, Duration::from_secs(30), "the cut-off holder");
    let holder_lines = holder_lines.finish();
    let stderr: String = holder_lines.iter().map(|(_, l)| format!("{l}\n")).collect();
    proxy.heal();
    let read_ns =
        |file: &Path| -> Option<i128> { std::fs::read_to_string(file).ok()?.trim().parse().ok() };
    let started_ns = read_ns(&started).expect("the next command recorded its start");
    let term_ns = read_ns(&term).unwrap_or_else(|| {
        panic!("the cut-off command never got SIGTERM (status {status:?}; stderr: {stderr})")
    });
    let signalled_ns = holder_lines
        .iter()
        .find(|(_, l)| l.contains("sending SIGTERM"))
        .map(|(at, _)| *at);
    Cut {
        margin_ms: (started_ns - term_ns) as f64 / 1e6,
        signalled_ms: signalled_ns.map(|at| (started_ns - at) as f64 / 1e6),
        status,
        stderr,
    }
}

/// A command running on a pseudo-terminal, and what it has written there so far.
pub struct OnTerminal {
    pub child: Child,
    pub screen: std::sync::Arc<std::sync::Mutex<String>>,
    master: OwnedFd,
    reader: std::thread::JoinHandle<()>,
}

/// Spawns `cmd` with stdin, stdout and stderr on a new pseudo-terminal; a thread gathers what
/// it writes.
pub fn spawn_on_terminal(mut cmd: Command) -> OnTerminal {
    use std::io::Read;
    let (master, slave) = openpty();
    cmd.stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave));
    // A terminal's foreground job has SIGINT at its default action (Ctrl-C ends what installs
    // no handler, as `ls --watch`), as an interactive shell sets it, whatever this test process
    // inherited: `make test` run as a background job of a non-interactive shell has SIGINT
    // ignored, and an ignored signal stays ignored across exec (it failed `ls --watch`'s
    // Ctrl-C test that way).
    // SAFETY: signal() is async-signal-safe, as pre_exec requires.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let child = cmd.spawn().expect("spawn zklock on a terminal");
    // The command keeps its copies of the slave side open: without them the master reads EIO
    // once the child is gone, which ends the reader.
    drop(cmd);
    let screen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let screen = screen.clone();
        let mut master = std::fs::File::from(master.try_clone().unwrap());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // Ends with EIO once the child (the last holder of the slave side) is gone.
            while let Ok(n) = master.read(&mut buf) {
                if n == 0 {
                    break;
                }
                screen
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
    };
    OnTerminal {
        child,
        screen,
        master,
        reader,
    }
}

impl OnTerminal {
    /// Everything written, once the child is gone (after waiting for it).
    pub fn finish(self) -> String {
        drop(self.master);
        self.reader.join().unwrap();
        let text = self.screen.lock().unwrap().clone();
        text
    }
}
