//! The local server on Linux: Debian's `zookeeper` package, installed with apt-get when missing,
//! daemonized (its own session, output to a log file) so that it outlives the command that
//! started it, and recognised by its command line in /proc.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::args::ServerAction;
use crate::status::{self, Failure};

const DEFAULT_PORT: u16 = 2181;

/// Where the local server lives: $ZKLOCK_SERVER_DIR, else $XDG_DATA_HOME/zklock/server, else
/// ~/.local/share/zklock/server.
fn dir() -> PathBuf {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(d) = env("ZKLOCK_SERVER_DIR") {
        return d;
    }
    let data = env("XDG_DATA_HOME").unwrap_or_else(|| {
        env("HOME")
            .unwrap_or_else(|| PathBuf::from("/tmp"))
            .join(".local/share")
    });
    data.join("zklock/server")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct State {
    port: u16,
    pid: Option<i32>,
}

fn read_state(dir: &Path) -> Option<State> {
    let text = std::fs::read_to_string(dir.join("state")).ok()?;
    let mut port = None;
    let mut pid = None;
    for line in text.lines() {
        match line.split_once('=') {
            Some(("port", v)) => port = v.trim().parse().ok(),
            Some(("pid", v)) => pid = v.trim().parse().ok(),
            _ => {}
        }
    }
    Some(State { port: port?, pid })
}

fn write_state(dir: &Path, state: State) -> Result<(), Failure> {
    let mut text = format!("port={}\n", state.port);
    if let Some(pid) = state.pid {
        text.push_str(&format!("pid={pid}\n"));
    }
    let tmp = dir.join("state.tmp");
    std::fs::write(&tmp, text)
        .and_then(|_| std::fs::rename(&tmp, dir.join("state")))
        .map_err(|e| {
            Failure::software(format!("cannot write {}: {e}", dir.join("state").display()))
        })
}

fn config_path(dir: &Path) -> PathBuf {
    dir.join("zoo.cfg")
}

/// True when `pid` is a live ZooKeeper started with our config file (not a zombie, not a
/// recycled pid).
fn alive(pid: i32, dir: &Path) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let cfg = config_path(dir);
    cmdline
        .split(|b| *b == 0)
        .any(|arg| arg == cfg.as_os_str().as_encoded_bytes())
}

fn four_letter(port: u16, word: &str) -> Option<String> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(3))).ok();
    s.write_all(word.as_bytes()).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

fn serving(port: u16) -> bool {
    four_letter(port, "srvr").is_some_and(|r| r.contains("Mode: "))
}

/// The running local server's state, if it runs.
fn running(dir: &Path) -> Option<State> {
    let state = read_state(dir)?;
    alive(state.pid?, dir).then_some(state)
}

/// The connect string of the local server, for commands given no servers.
pub fn local_servers() -> Result<String, Failure> {
    let dir = dir();
    match running(&dir) {
        Some(state) => Ok(format!("127.0.0.1:{}", state.port)),
        None => Err(Failure::new(
            status::UNAVAILABLE,
            "no ZooKeeper servers configured: pass --servers HOST:PORT, set ZKLOCK_SERVERS, or start a local server with `zklock server start`",
        )),
    }
}

pub fn run(action: ServerAction) -> Result<i32, Failure> {
    let dir = dir();
    match action {
        ServerAction::Start { port } => start(&dir, port),
        ServerAction::Stop => stop(&dir),
        ServerAction::Status => Ok(match running(&dir) {
            Some(st) => {
                println!(
                    "running on 127.0.0.1:{} (pid {}, data in {})",
                    st.port,
                    st.pid.unwrap_or_default(),
                    dir.display()
                );
                0
            }
            None => {
                println!("not running (data in {})", dir.display());
                status::NOT_RUNNING
            }
        }),
    }
}

/// Holds an exclusive flock on the server directory (two `server start` at once start one).
struct DirLock {
    _file: std::fs::File,
}

impl DirLock {
    fn take(dir: &Path) -> Result<DirLock, Failure> {
        use std::os::fd::AsRawFd;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join("lock"))
            .map_err(|e| {
                Failure::software(format!("cannot open {}: {e}", dir.join("lock").display()))
            })?;
        // SAFETY: flock(2) on a descriptor we own; released when the file closes.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(Failure::software(format!(
                "cannot lock {}: {}",
                dir.join("lock").display(),
                std::io::Error::last_os_error()
            )));
        }
        Ok(DirLock { _file: file })
    }
}

/// The server's class path: the same jar list as the test harness (one list in the project,
/// `jars.rs`, which the harness compiles too), or why it cannot be made.
fn classpath() -> Result<String, String> {
    super::jars::classpath()
}

fn java() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("JAVA_HOME") {
        let p = Path::new(&home).join("bin/java");
        if p.exists() {
            return Some(p);
        }
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("java"))
            .find(|p| p.exists())
    })
}

/// Installs Debian's zookeeper (and a Java runtime) when missing.
fn ensure_installed() -> Result<(String, PathBuf), Failure> {
    let mut need = Vec::new();
    if classpath().is_err() {
        need.push("zookeeper");
    }
    if java().is_none() {
        need.push("default-jre-headless");
    }
    if !need.is_empty() {
        eprintln!(
            "zklock: installing Debian's {} with apt-get (needed for the local server)...",
            need.join(" ")
        );
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let apt = |args: &[&str]| -> bool {
            let mut cmd = if root {
                Command::new("apt-get")
            } else {
                let mut c = Command::new("sudo");
                c.arg("apt-get");
                c
            };
            let to_stderr = || {
                std::io::stderr()
                    .as_fd()
                    .try_clone_to_owned()
                    .map(Stdio::from)
                    .unwrap_or_else(|_| Stdio::null())
            };
            cmd.args(args)
                .env("DEBIAN_FRONTEND", "noninteractive")
                .stdin(Stdio::null())
                .stdout(to_stderr())
                .stderr(to_stderr())
                .status()
                .is_ok_and(|s| s.success())
        };
        let mut install = vec!["install", "-y", "-q", "--no-install-recommends"];
        install.extend(&need);
        let installed = apt(&install) || (apt(&["update", "-q"]) && apt(&install));
        if !installed {
            return Err(Failure::new(
                status::UNAVAILABLE,
                format!(
                    "cannot install {} with apt-get; install it yourself (apt-get install {}) or point --servers at a ZooKeeper",
                    need.join(" "),
                    need.join(" ")
                ),
            ));
        }
    }
    match (classpath(), java()) {
        (Ok(cp), Some(java)) => Ok((cp, java)),
        (Err(why), _) => Err(Failure::new(
            status::UNAVAILABLE,
            format!("{why} (after installing Debian's zookeeper package)"),
        )),
        (_, None) => Err(Failure::new(
            status::UNAVAILABLE,
            "no `java` found even after installing default-jre-headless",
        )),
    }
}

fn port_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

fn free_port() -> Result<u16, Failure> {
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| Failure::software(format!("cannot find a free port: {e}")))
}

fn log_tail(dir: &Path) -> String {
    let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
    let lines: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" | ")
}

fn start(dir: &Path, asked: Option<u16>) -> Result<i32, Failure> {
    std::fs::create_dir_all(dir.join("data"))
        .map_err(|e| Failure::software(format!("cannot create {}: {e}", dir.display())))?;
    let _lock = DirLock::take(dir)?;
    if let Some(st) = running(dir) {
        if serving(st.port) || wait_serving(dir, st, Duration::from_secs(30)).is_ok() {
            if asked.is_some_and(|p| p != st.port) {
                return Err(Failure::new(
                    status::UNAVAILABLE,
                    format!(
                        "the local ZooKeeper already runs on 127.0.0.1:{} (pid {}); `zklock server stop` first to move it to port {}",
                        st.port,
                        st.pid.unwrap_or_default(),
                        asked.unwrap_or_default()
                    ),
                ));
            }
            eprintln!(
                "zklock: the local ZooKeeper already runs on 127.0.0.1:{} (pid {}, data in {})",
                st.port,
                st.pid.unwrap_or_default(),
                dir.display()
            );
            println!("127.0.0.1:{}", st.port);
            return Ok(0);
        }
    }
    let (classpath, java) = ensure_installed()?;
    let remembered = read_state(dir).map(|s| s.port);
    let port = match (asked, remembered) {
        (Some(p), _) if port_free(p) => p,
        (Some(p), _) => {
            return Err(Failure::new(
                status::UNAVAILABLE,
                format!("cannot serve on port {p}: something else listens on 127.0.0.1:{p}"),
            ))
        }
        (None, Some(p)) if port_free(p) => p,
        _ if port_free(DEFAULT_PORT) => DEFAULT_PORT,
        _ => free_port()?,
    };
    let cfg = format!(
        "# written by `zklock server start`\n\
         tickTime=500\n\
         dataDir={data}\n\
         clientPort={port}\n\
         clientPortAddress=127.0.0.1\n\
         minSessionTimeout=1000\n\
         maxSessionTimeout=120000\n\
         maxClientCnxns=0\n\
         admin.enableServer=false\n\
         4lw.commands.whitelist=srvr,ruok,stat,mntr,cons\n\
         autopurge.snapRetainCount=3\n\
         autopurge.purgeInterval=1\n",
        data = dir.join("data").display()
    );
    std::fs::write(config_path(dir), cfg).map_err(|e| {
        Failure::software(format!("cannot write {}: {e}", config_path(dir).display()))
    })?;
    let log_path = dir.join("server.log");
    let open_log = || {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| Failure::software(format!("cannot open {}: {e}", log_path.display())))
    };
    let mut cmd = Command::new(&java);
    cmd.args([
        "-Xms32m",
        "-Xmx256m",
        "-XX:+UseSerialGC",
        "-Dzookeeper.jmx.log4j.disable=true",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-Dorg.slf4j.simpleLogger.showDateTime=true",
    ])
    .arg("-cp")
    .arg(&classpath)
    .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
    .arg(config_path(dir))
    .current_dir(dir)
    .stdin(Stdio::null())
    .stdout(open_log()?)
    .stderr(open_log()?);
    // SAFETY: setsid(2) between fork and exec: the server gets its own session, so no terminal
    // signal or hangup of ours reaches it.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .map_err(|e| Failure::software(format!("cannot start {}: {e}", java.display())))?;
    let state = State {
        port,
        pid: Some(child.id() as i32),
    };
    drop(child);
    write_state(dir, state)?;
    wait_serving(dir, state, Duration::from_secs(90))?;
    eprintln!(
        "zklock: local ZooKeeper serving on 127.0.0.1:{port} (pid {}, data and log in {}; `zklock server stop` stops it)",
        state.pid.unwrap_or_default(),
        dir.display()
    );
    println!("127.0.0.1:{port}");
    Ok(0)
}

fn wait_serving(dir: &Path, state: State, limit: Duration) -> Result<(), Failure> {
    let deadline = Instant::now() + limit;
    let pid = state.pid.unwrap_or_default();
    loop {
        if serving(state.port) {
            return Ok(());
        }
        if !alive(pid, dir) {
            return Err(Failure::software(format!(
                "the local ZooKeeper exited at start: {} (see {})",
                log_tail(dir),
                dir.join("server.log").display()
            )));
        }
        if Instant::now() > deadline {
            return Err(Failure::software(format!(
                "the local ZooKeeper (pid {pid}) did not serve on 127.0.0.1:{} within {limit:?} (see {})",
                state.port,
                dir.join("server.log").display()
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn stop(dir: &Path) -> Result<i32, Failure> {
    if !dir.exists() {
        eprintln!(
            "zklock: no local ZooKeeper runs (nothing in {})",
            dir.display()
        );
        return Ok(0);
    }
    let _lock = DirLock::take(dir)?;
    let Some(state) = running(dir) else {
        eprintln!(
            "zklock: no local ZooKeeper runs (data in {})",
            dir.display()
        );
        return Ok(0);
    };
    let pid = state.pid.unwrap_or_default();
    // SAFETY: kill(2) on the pid we started, verified by its command line.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(15);
    while alive(pid, dir) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    if alive(pid, dir) {
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        std::thread::sleep(Duration::from_millis(200));
    }
    write_state(
        dir,
        State {
            port: state.port,
            pid: None,
        },
    )?;
    eprintln!(
        "zklock: stopped the local ZooKeeper on 127.0.0.1:{} (data kept in {})",
        state.port,
        dir.display()
    );
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips() {
        let dir = std::env::temp_dir().join(format!("zklock-state-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let st = State {
            port: 2999,
            pid: Some(42),
        };
        write_state(&dir, st).unwrap();
        assert_eq!(read_state(&dir), Some(st));
        write_state(
            &dir,
            State {
                port: 3000,
                pid: None,
            },
        )
        .unwrap();
        assert_eq!(
            read_state(&dir),
            Some(State {
                port: 3000,
                pid: None
            })
        );
        assert!(running(&dir).is_none());
        std::fs::remove_dir_all(&dir).ok();
    }
}
