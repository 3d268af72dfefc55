//! Launchers for the workers that contend in the interop and cross-language suites. Each worker
//! takes `SERVERS PATH MODE ROUNDS LOGFILE` (the election peers also `ID`) and appends checker
//! lines to LOGFILE.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The repository root (this crate lives in tests/trust).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"))
}

/// Curator's own jars; the ZooKeeper client, netty and slf4j come from the harness's class path.
const CURATOR_JARS: &[&str] = &[
    "curator-client",
    "curator-framework",
    "curator-recipes",
    "guava",
];

fn curator_classpath() -> Result<String, String> {
    let mut parts = CURATOR_JARS
        .iter()
        .map(|j| {
            let p = PathBuf::from(format!("/usr/share/java/{j}.jar"));
            if p.exists() {
                Ok(p.display().to_string())
            } else {
                Err(format!(
                    "{} missing: install Debian's libcurator-recipes-java (`make test` does)",
                    p.display()
                ))
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    parts.push(zklock_testkit::classpath()?);
    Ok(parts.join(":"))
}

/// The Java peers of tests/trust/peers, each with the class file javac makes of it.
const JAVA_SOURCES: &[(&str, &str)] = &[
    (
        "CuratorWorker.java",
        "org/apache/curator/framework/recipes/locks/CuratorWorker.class",
    ),
    (
        "CuratorPartitionHolder.java",
        "CuratorPartitionHolder.class",
    ),
    (
        "CuratorRevocation.java",
        "org/apache/curator/framework/recipes/locks/CuratorRevocation.class",
    ),
    (
        "CuratorElection.java",
        "org/apache/curator/framework/recipes/leader/CuratorElection.class",
    ),
    ("CuratorCounter.java", "CuratorCounter.class"),
];

/// Compiles the Java peers once (javac against Debian's jars) and returns their class path.
pub fn curator_worker_classpath() -> Result<String, String> {
    let jars = curator_classpath()?;
    let out = target_dir().join("trust-java");
    let peers = repo_root().join("tests/trust/peers");
    let stale = JAVA_SOURCES.iter().any(|(source, class)| {
        match (
            std::fs::metadata(out.join(class)),
            std::fs::metadata(peers.join(source)),
        ) {
            (Ok(c), Ok(s)) => c.modified().ok() < s.modified().ok(),
            _ => true,
        }
    });
    if stale {
        std::fs::create_dir_all(&out).map_err(|e| e.to_string())?;
        let status = Command::new("javac")
            .args(["-nowarn", "-d"])
            .arg(&out)
            .arg("-cp")
            .arg(&jars)
            .args(JAVA_SOURCES.iter().map(|(source, _)| peers.join(source)))
            .status()
            .map_err(|e| format!("javac: {e} (install default-jdk-headless)"))?;
        if !status.success() {
            return Err("javac failed on tests/trust/peers/*.java".into());
        }
    }
    Ok(format!("{}:{jars}", out.display()))
}

/// A real Curator client taking the lock `rounds` times.
pub fn spawn_curator(
    servers: &str,
    path: &str,
    mode: &str,
    rounds: usize,
    log: &Path,
) -> Result<Child, String> {
    Command::new("java")
        .args([
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
        ])
        .arg(curator_worker_classpath()?)
        .arg("org.apache.curator.framework.recipes.locks.CuratorWorker")
        .args([servers, path, mode, &rounds.to_string()])
        .arg(log)
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("java: {e}"))
}

/// Curator's shared counters (tests/trust/peers/CuratorCounter.java): `kind` is `shared`
/// (SharedCount) or `long` (DistributedAtomicLong), `op` is `get` or `add N`; returns the count
/// it printed.
pub fn curator_counter(servers: &str, path: &str, kind: &str, op: &[&str]) -> Result<i64, String> {
    let out = Command::new("java")
        .args([
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
        ])
        .arg(curator_worker_classpath()?)
        .arg("CuratorCounter")
        .args([servers, path, kind])
        .args(op)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("java: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "CuratorCounter {kind} {op:?} failed ({}): {text}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    text.trim()
        .parse()
        .map_err(|e| format!("CuratorCounter printed {text:?}: {e}"))
}

/// Curator's revocation peer (tests/trust/peers/CuratorRevocation.java): `hold SERVERS PATH`,
/// `revoke SERVERS NODE` or `lease SERVERS PATH N`, its stdout piped to the caller.
pub fn curator_revocation(args: &[&str]) -> Result<Child, String> {
    Command::new("java")
        .args([
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
        ])
        .arg(curator_worker_classpath()?)
        .arg("org.apache.curator.framework.recipes.locks.CuratorRevocation")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("java: {e}"))
}

/// Debian's python3 (where python3-kazoo lives), else the python3 on PATH.
fn kazoo_python() -> String {
    for p in ["/usr/bin/python3", "python3"] {
        let ok = Command::new(p)
            .args(["-c", "import kazoo"])
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if ok {
            return p.into();
        }
    }
    "/usr/bin/python3".into()
}

/// A real kazoo client taking the lock `rounds` times.
pub fn spawn_kazoo(
    servers: &str,
    path: &str,
    mode: &str,
    rounds: usize,
    log: &Path,
) -> Result<Child, String> {
    Command::new(kazoo_python())
        .arg(repo_root().join("tests/trust/peers/kazoo_worker.py"))
        .args([servers, path, mode, &rounds.to_string()])
        .arg(log)
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("python3 (kazoo, install python3-kazoo): {e}"))
}

/// How an election peer's stdio is wired: `show*` and `hold*` modes talk on stdout (piped), and
/// `hold*` modes run until their stdin closes (piped: drop `child.stdin` to end them); the
/// logging modes get a null stdin and inherit stdout.
fn election_stdio(command: &mut Command, mode: &str) {
    let talks = mode.starts_with("show") || mode.starts_with("hold");
    command
        .stdin(if mode.starts_with("hold") {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(if talks {
            Stdio::piped()
        } else {
            Stdio::inherit()
        });
}

/// Curator's leader election (tests/trust/peers/CuratorElection.java): `mode` is `latch`,
/// `selector` or `bench-latch` (checker lines `curator-<latch|selector|bench>-<id> exclusive
/// <czxid> <enter_ns> <exit_ns>` appended to `log`, `rounds` leaderships), `show-latch` /
/// `show-selector` (`rounds` JSON lines of getParticipants()/getLeader() on stdout) or
/// `hold-latch` (`leader <czxid> <node>` / `waiting <node>` / `not-leader <node>` on stdout
/// until stdin closes). `show*`/`hold*`: stdout piped; `hold*`: stdin piped, drop it to end.
pub fn spawn_curator_election(
    servers: &str,
    path: &str,
    mode: &str,
    rounds: usize,
    log: &Path,
    id: &str,
) -> Result<Child, String> {
    let mut command = Command::new("java");
    command
        .args([
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
        ])
        .arg(curator_worker_classpath()?)
        .arg("org.apache.curator.framework.recipes.leader.CuratorElection")
        .args([servers, path, mode, &rounds.to_string()])
        .arg(log)
        .arg(id);
    election_stdio(&mut command, mode);
    command.spawn().map_err(|e| format!("java: {e}"))
}

/// kazoo's Election (tests/trust/peers/kazoo_election.py): `mode` is `run` (checker lines
/// `kazoo-election-<id> exclusive <czxid> <enter_ns> <exit_ns>` appended to `log`, `rounds`
/// leaderships), `show` (`rounds` lines `{"contenders": [...]}` on stdout, without running for
/// leader) or `hold` (`leader <czxid> <node>` / `waiting <node>` on stdout until stdin closes).
/// `patterns` become the lock's `extra_lock_patterns` (e.g. `&["-latch-"]` to see
/// Curator-style names, docs/interop.md); empty is kazoo's stock `Election(path, id)`.
/// `show`/`hold`: stdout piped; `hold`: stdin piped, drop it to end.
pub fn spawn_kazoo_election(
    servers: &str,
    path: &str,
    mode: &str,
    rounds: usize,
    log: &Path,
    id: &str,
    patterns: &[&str],
) -> Result<Child, String> {
    let mut command = Command::new(kazoo_python());
    command
        .arg(repo_root().join("tests/trust/peers/kazoo_election.py"))
        .args([servers, path, mode, &rounds.to_string()])
        .arg(log)
        .arg(id);
    if !patterns.is_empty() {
        command.arg(patterns.join(","));
    }
    election_stdio(&mut command, mode);
    command
        .spawn()
        .map_err(|e| format!("python3 (kazoo, install python3-kazoo): {e}"))
}

/// zklock's own worker: the `trust-worker` binary of this crate (tests pass
/// `env!("CARGO_BIN_EXE_trust-worker")`).
pub fn spawn_zklock(
    exe: &str,
    servers: &str,
    path: &str,
    mode: &str,
    rounds: usize,
    log: &Path,
) -> Result<Child, String> {
    Command::new(exe)
        .args([servers, path, mode, &rounds.to_string()])
        .arg(log)
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("trust-worker: {e}"))
}

/// Waits for every worker; fails if one failed.
pub fn wait_all(children: Vec<(String, Child)>) -> Result<(), String> {
    let mut failures = Vec::new();
    for (name, mut child) in children {
        match child.wait() {
            Ok(s) if s.success() => {}
            Ok(s) => failures.push(format!("{name} exited with {s}")),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}

/// A Curator holder for [`crate::margin::run_round`]: an InterProcessMutex on `path` through
/// `servers` with session timeout `session`, reporting its ConnectionStateListener's states
/// (tests/trust/peers/CuratorPartitionHolder.java). Its log goes to `log`.
pub fn curator_partition_holder(
    servers: &str,
    path: &str,
    session: std::time::Duration,
    log: &Path,
) -> Result<crate::margin::Holder, String> {
    let mut command = Command::new("java");
    command
        .args([
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
        ])
        .arg(curator_worker_classpath()?)
        .arg("CuratorPartitionHolder")
        .args([servers, path, &session.as_millis().to_string()]);
    crate::margin::Holder::spawn("curator", command, log)
}

/// A kazoo holder for [`crate::margin::run_round`]: a kazoo Lock on `path` through `servers`
/// with session timeout `session`, reporting its state listener's KazooStates
/// (tests/trust/peers/kazoo_partition_holder.py). Its log goes to `log`.
pub fn kazoo_partition_holder(
    servers: &str,
    path: &str,
    session: std::time::Duration,
    log: &Path,
) -> Result<crate::margin::Holder, String> {
    let mut command = Command::new(kazoo_python());
    command
        .arg(repo_root().join("tests/trust/peers/kazoo_partition_holder.py"))
        .args([servers, path, &session.as_millis().to_string()]);
    crate::margin::Holder::spawn("kazoo", command, log)
}
