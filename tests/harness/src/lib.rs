//! Starts real Apache ZooKeeper servers for tests: Debian's `zookeeper` package and the
//! machine's Java, on free 127.0.0.1 ports with temporary data directories. A standalone server
//! or an ensemble; members can be stopped, restarted, paused (SIGSTOP) and resumed, and with
//! `Config::peer_proxies` cut off from their peers (`isolate`: a cut, a black hole, or loss in one
//! direction) while their clients still reach them; a round-robin TCP load balancer can front
//! them (`Balancer`). Everything is killed and removed on drop, and the servers die with the
//! test process.
//!
//! It installs nothing: when Java or the jars are missing it fails with a message saying what to
//! install (`make test` installs them). `ZKLOCK_TEST_SERVERS` points tests at an existing
//! ensemble instead.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

mod balancer;
pub mod conformance;
pub mod counting;
// The CLI's jar list (one list in the project; the published CLI cannot depend on this crate).
#[path = "../../../cli/src/server/jars.rs"]
mod jars;
mod ports;
pub mod procstat;
mod proxy;
mod secure;

pub use balancer::Balancer;
pub use counting::Counting;
pub use jars::classpath;
pub use proxy::Proxy;
pub use secure::{shared_secure, Secured};

/// Harness failures: always with a message saying what to do.
pub type Result<T> = std::result::Result<T, String>;

/// How the servers run.
#[derive(Debug, Clone)]
pub struct Config {
    /// `forceSync=no` trades durability for speed (tests); `yes` is ZooKeeper's default.
    pub force_sync: bool,
    /// ZooKeeper's tick; session timeouts are clamped to [2, 300] ticks.
    pub tick_ms: u32,
    /// A secured server (standalone only): a TLS client port beside the plain one and SASL
    /// DIGEST-MD5 (see `Secured`).
    pub secure: bool,
    /// ZooKeeper's `syncLimit`, in ticks: how long a follower and its leader wait for each other.
    pub sync_limit: u32,
    /// Route every member's links to its peers through fault proxies (see `isolate`).
    pub peer_proxies: bool,
    /// Whether zoo.cfg has a `tickTime` line; without one ZooKeeper runs on its built-in
    /// `ZooKeeperServer.DEFAULT_TICK_TIME`, 3 s (`tick_ms` is then unused).
    pub tick_line: bool,
    /// `minSessionTimeout` in ms (ZooKeeper's default: two ticks); a larger one hides the tick
    /// from a client's probe (issue 53).
    pub min_session_timeout_ms: Option<u32>,
}

/// How `ZooKeeper::isolate` cuts a member off from its peers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// Every peer connection closed and new ones refused: the member notices at once.
    Cut,
    /// Connections stay open and nothing crosses either way: noticed only by timeouts.
    BlackHole,
    /// What the member sends to its peers is lost; what they send still arrives.
    OutgoingLost,
    /// What the peers send to the member is lost; what it sends still arrives.
    IncomingLost,
}

/// The proxies of one directed peer link: member `from` reaches member `to`'s quorum and
/// election ports through them.
struct PeerLink {
    from: usize,
    to: usize,
    quorum: Proxy,
    election: Proxy,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            force_sync: false,
            tick_ms: 200,
            secure: false,
            sync_limit: 10,
            peer_proxies: false,
            tick_line: true,
            min_session_timeout_ms: None,
        }
    }
}

struct Member {
    id: usize,
    client_port: u16,
    /// The TLS client port of a secured server.
    secure_port: Option<u16>,
    dir: PathBuf,
    child: Option<Child>,
    paused: bool,
}

/// A running standalone server or ensemble.
pub struct ZooKeeper {
    members: Vec<Member>,
    root: Option<PathBuf>,
    external: Option<String>,
    /// Extra JVM arguments (the JAAS file of a secured server).
    jvm_args: Vec<String>,
    /// With `Config::peer_proxies`: every directed link between members.
    links: Vec<PeerLink>,
    /// The ports the members bind, claimed until the servers are gone (released in `drop`,
    /// after the kill).
    claims: Vec<ports::Claim>,
}

fn java() -> Result<PathBuf> {
    if let Ok(home) = std::env::var("JAVA_HOME") {
        let p = Path::new(&home).join("bin/java");
        if p.exists() {
            return Ok(p);
        }
    }
    for dir in std::env::var("PATH").unwrap_or_default().split(':') {
        let p = Path::new(dir).join("java");
        if p.exists() {
            return Ok(p);
        }
    }
    Err("ZooKeeper cannot start: no `java` found (install Debian's default-jre-headless; `make test` does)".into())
}

impl ZooKeeper {
    /// One standalone server.
    pub fn standalone() -> Result<ZooKeeper> {
        Self::start(1, &Config::default())
    }

    /// An ensemble of `n` servers (n ≥ 3 for quorum tests).
    pub fn ensemble(n: usize) -> Result<ZooKeeper> {
        Self::start(n, &Config::default())
    }

    /// `ZKLOCK_TEST_SERVERS` when set (nothing is started or managed), else a standalone server.
    pub fn from_env_or_standalone() -> Result<ZooKeeper> {
        match std::env::var("ZKLOCK_TEST_SERVERS") {
            Ok(s) if !s.trim().is_empty() => Ok(ZooKeeper {
                members: Vec::new(),
                root: None,
                external: Some(s),
                jvm_args: Vec::new(),
                links: Vec::new(),
                claims: Vec::new(),
            }),
            _ => Self::standalone(),
        }
    }

    /// Starts `n` members and waits until they serve (and a secured one's TLS port opens). When
    /// a member could not bind a port (a program outside the harness took it between the pick
    /// and the JVM's bind; see `ports`), everything is stopped and started again on new ports.
    pub fn start(n: usize, config: &Config) -> Result<ZooKeeper> {
        Self::start_picking(n, config, &mut ports::free_port)
    }

    /// `start`, with the ports from `pick`.
    fn start_picking(
        n: usize,
        config: &Config,
        pick: &mut dyn FnMut() -> Result<ports::Claim>,
    ) -> Result<ZooKeeper> {
        const ATTEMPTS: usize = 3;
        let mut attempt = 1;
        loop {
            match Self::start_once(n, config, pick) {
                Ok(zk) => return Ok(zk),
                Err(Start::PortTaken(e)) if attempt < ATTEMPTS => {
                    eprintln!("zk-harness: a port was taken, starting again on new ports: {e}");
                    attempt += 1;
                }
                Err(Start::PortTaken(e)) => {
                    return Err(format!(
                        "ZooKeeper could not bind its ports in {ATTEMPTS} attempts: {e}"
                    ))
                }
                Err(Start::Failed(e)) => return Err(e),
            }
        }
    }

    fn start_once(
        n: usize,
        config: &Config,
        pick: &mut dyn FnMut() -> Result<ports::Claim>,
    ) -> std::result::Result<ZooKeeper, Start> {
        assert!(n >= 1);
        let classpath = classpath()?;
        let java = java()?;
        static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let root = std::env::temp_dir().join(format!(
            "zklock-zk-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let mut claims = Vec::new();
        let mut port = || -> Result<u16> {
            let claim = pick()?;
            let port = claim.port();
            claims.push(claim);
            Ok(port)
        };
        let ports: Vec<(u16, u16, u16)> = (0..n)
            .map(|_| Ok((port()?, port()?, port()?)))
            .collect::<Result<_>>()?;
        let mut members = Vec::new();
        let mut jvm_args = Vec::new();
        // Member i names member j (j != i) by the ports of the proxies of link i -> j, and
        // itself by its own ports, which it binds. A follower reaches its leader's quorum port
        // by its own view of the leader (`Learner.findLeader`), so every quorum link is proxied.
        // Election connections are kept only when the larger id opened them: a connection from
        // a smaller id is closed and opened back to the election address the smaller id
        // announced in its initial message (`QuorumCnxManager.handleConnection`), which would
        // bypass the proxies. A wildcard address is left out of that message's list
        // (`InitialMessage.parse`, `isWildcardAddress`), and the larger id then connects back to
        // the address of its own view, the proxy of its link. So with peer proxies each member
        // names itself `0.0.0.0` (it binds its ports on every interface, loopback included):
        // every election link runs through its proxy, whoever opens it, and a member restarted
        // while the others stay up can announce itself to every peer.
        let mut links = Vec::new();
        if config.peer_proxies && n > 1 {
            for from in 0..n {
                for (to, &(_, peer, election)) in ports.iter().enumerate() {
                    if from != to {
                        links.push(PeerLink {
                            from,
                            to,
                            quorum: Proxy::start_for_peer(&format!("127.0.0.1:{peer}"))?,
                            election: Proxy::start_for_peer(&format!("127.0.0.1:{election}"))?,
                        });
                    }
                }
            }
        }
        let secured = match config.secure {
            true if n == 1 => Some(secure::prepare(&root, port()?)?),
            true => return Err("a secured ZooKeeper is standalone only".to_owned().into()),
            false => None,
        };
        for (i, &(client_port, _, _)) in ports.iter().enumerate() {
            let id = i + 1;
            let dir = root.join(format!("server{id}"));
            std::fs::create_dir_all(dir.join("data"))
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            let mut cfg = format!(
                "{}dataDir={}\nclientPort={client_port}\nclientPortAddress=127.0.0.1\n\
                 admin.enableServer=false\n4lw.commands.whitelist=*\nforceSync={}\n\
                 maxSessionTimeout=60000\ninitLimit=20\nsyncLimit={}\nmaxClientCnxns=0\n\
                 autopurge.purgeInterval=0\nreconfigEnabled=false\nstandaloneEnabled=true\n",
                match config.tick_line {
                    true => format!("tickTime={}\n", config.tick_ms),
                    false => String::new(),
                },
                dir.join("data").display(),
                if config.force_sync { "yes" } else { "no" },
                config.sync_limit,
            );
            if let Some(min) = config.min_session_timeout_ms {
                cfg.push_str(&format!("minSessionTimeout={min}\n"));
            }
            if let Some(sec) = &secured {
                cfg.push_str(&sec.zoo_cfg);
                jvm_args = sec.jvm_args.clone();
            }
            if n > 1 {
                for (j, &(_, peer, election)) in ports.iter().enumerate() {
                    let (host, peer, election) =
                        match links.iter().find(|l| l.from == i && l.to == j) {
                            Some(l) => (
                                "127.0.0.1",
                                port_of(l.quorum.addr()),
                                port_of(l.election.addr()),
                            ),
                            // Itself: the wildcard when its links are proxied (above).
                            None if !links.is_empty() => ("0.0.0.0", peer, election),
                            None => ("127.0.0.1", peer, election),
                        };
                    cfg.push_str(&format!("server.{}={host}:{peer}:{election}\n", j + 1));
                }
                std::fs::write(dir.join("data/myid"), format!("{id}\n"))
                    .map_err(|e| e.to_string())?;
            }
            std::fs::write(dir.join("zoo.cfg"), cfg).map_err(|e| e.to_string())?;
            members.push(Member {
                id,
                client_port,
                secure_port: secured.as_ref().map(|s| s.port),
                dir,
                child: None,
                paused: false,
            });
        }
        let mut zk = ZooKeeper {
            members,
            root: Some(root),
            external: None,
            jvm_args,
            links,
            claims,
        };
        for i in 0..n {
            zk.spawn(i, &java, &classpath)?;
        }
        let started = zk.wait_serving(Duration::from_secs(60)).and_then(|()| {
            match zk.members[0].secure_port {
                Some(port) => zk.wait_port(0, port, Duration::from_secs(30)),
                None => Ok(()),
            }
        });
        match started {
            Ok(()) => Ok(zk),
            Err(e) if zk.a_port_was_taken() => Err(Start::PortTaken(e)),
            Err(e) => Err(Start::Failed(e)),
        }
    }

    /// Whether a member's log says it could not bind a port.
    fn a_port_was_taken(&self) -> bool {
        self.members.iter().any(|m| {
            std::fs::read_to_string(m.dir.join("server.log"))
                .is_ok_and(|log| log.contains("Address already in use"))
        })
    }

    /// Whether member `i` was started and its process has exited (a zombie until reaped).
    fn exited(&self, i: usize) -> bool {
        let Some(child) = &self.members[i].child else {
            return false;
        };
        match std::fs::read_to_string(format!("/proc/{}/stat", child.id())) {
            // `pid (comm) S ...`: the state follows the last ')'.
            Ok(stat) => stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
            Err(_) => true,
        }
    }

    /// The last lines of member `i`'s log, for an error.
    fn log_tail(&self, i: usize) -> String {
        let log =
            std::fs::read_to_string(self.members[i].dir.join("server.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Waits until member `i` accepts connections on `port` (a secured server's TLS port opens
    /// a moment after the plain one answers `srvr`).
    fn wait_port(&self, i: usize, port: u16, limit: Duration) -> Result<()> {
        let deadline = Instant::now() + limit;
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        while TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err() {
            if self.exited(i) || Instant::now() > deadline {
                return Err(format!(
                    "port {port} of ZooKeeper server {} never opened; log tail:\n{}",
                    self.members[i].id,
                    self.log_tail(i)
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    }

    fn spawn(&mut self, i: usize, java: &Path, classpath: &str) -> Result<()> {
        let jvm_args = self.jvm_args.clone();
        let m = &mut self.members[i];
        let log = std::fs::File::create(m.dir.join("server.log")).map_err(|e| e.to_string())?;
        let mut cmd = Command::new(java);
        cmd.args([
            "-Xms64m",
            "-Xmx512m",
            "-XX:+UseSerialGC",
            "-Dzookeeper.jmx.log4j.disable=true",
        ])
        .args(&jvm_args)
        .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
        // Reap empty container parents within a second (default: a minute) so tests see it.
        .arg("-Dznode.container.checkIntervalMs=1000")
        .arg("-cp")
        .arg(classpath)
        .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
        .arg(m.dir.join("zoo.cfg"))
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log);
        // The server dies with the thread that started it; harness threads live as long as
        // the process (see `shared`), so no server outlives a killed test run.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .map_err(|e| format!("ZooKeeper cannot start: {e}"))?;
        m.child = Some(child);
        m.paused = false;
        Ok(())
    }

    /// Waits until every running member answers `srvr` with a mode (it serves requests).
    pub fn wait_serving(&self, limit: Duration) -> Result<()> {
        let deadline = Instant::now() + limit;
        for (i, m) in self.members.iter().enumerate() {
            if m.child.is_none() || m.paused {
                continue;
            }
            loop {
                if let Ok(reply) = self.four_letter(i, "srvr") {
                    if reply.contains("Mode: ") {
                        break;
                    }
                }
                let exited = self.exited(i);
                if exited || Instant::now() > deadline {
                    return Err(format!(
                        "ZooKeeper server {} on 127.0.0.1:{} {}; log tail:\n{}",
                        m.id,
                        m.client_port,
                        if exited {
                            "exited before it served".to_owned()
                        } else {
                            format!("did not start serving within {limit:?}")
                        },
                        self.log_tail(i)
                    ));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Ok(())
    }

    /// The connect string of every member: `127.0.0.1:p1,127.0.0.1:p2,...`.
    pub fn connect_string(&self) -> String {
        if let Some(s) = &self.external {
            return s.clone();
        }
        self.members
            .iter()
            .map(|m| format!("127.0.0.1:{}", m.client_port))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The TLS address of member `i` of a secured server.
    pub fn secure_address(&self, i: usize) -> Option<String> {
        self.members[i]
            .secure_port
            .map(|p| format!("127.0.0.1:{p}"))
    }

    /// The address of member `i` (0-based).
    pub fn address(&self, i: usize) -> String {
        format!("127.0.0.1:{}", self.members[i].client_port)
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    pub fn is_external(&self) -> bool {
        self.external.is_some()
    }

    /// Kills member `i` (SIGKILL: a crash, not a clean shutdown).
    pub fn stop(&mut self, i: usize) {
        if let Some(mut child) = self.members[i].child.take() {
            if self.members[i].paused {
                unsafe { libc::kill(child.id() as i32, libc::SIGCONT) };
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        self.members[i].paused = false;
    }

    /// Starts member `i` again with its data, and waits until the running members serve.
    pub fn restart(&mut self, i: usize) -> Result<()> {
        self.stop(i);
        let (java, classpath) = (java()?, classpath()?);
        self.spawn(i, &java, &classpath)?;
        self.wait_serving(Duration::from_secs(60))
    }

    /// Kills member `i`, deletes its snapshots and transaction logs (its `version-2`; `myid`
    /// stays), as a restore from an empty backup would, and starts it again: its history
    /// restarts from zxid 0 while clients remember newer zxids.
    pub fn restart_wiped(&mut self, i: usize) -> Result<()> {
        self.stop(i);
        let history = self.members[i].dir.join("data").join("version-2");
        if history.exists() {
            std::fs::remove_dir_all(&history)
                .map_err(|e| format!("cannot wipe {}: {e}", history.display()))?;
        }
        self.restart(i)
    }

    /// Starts member `i` again without waiting (for a full restart: start all, then wait).
    pub fn start_member(&mut self, i: usize) -> Result<()> {
        self.stop(i);
        let (java, classpath) = (java()?, classpath()?);
        self.spawn(i, &java, &classpath)
    }

    /// Kills every member, starts them all again and waits until they serve.
    pub fn restart_all(&mut self) -> Result<()> {
        for i in 0..self.members.len() {
            self.stop(i);
        }
        for i in 0..self.members.len() {
            self.start_member(i)?;
        }
        self.wait_serving(Duration::from_secs(60))
    }

    /// SIGSTOP member `i`.
    pub fn pause(&mut self, i: usize) {
        if let Some(child) = &self.members[i].child {
            unsafe { libc::kill(child.id() as i32, libc::SIGSTOP) };
            self.members[i].paused = true;
        }
    }

    /// SIGCONT member `i`.
    pub fn resume(&mut self, i: usize) {
        if let Some(child) = &self.members[i].child {
            unsafe { libc::kill(child.id() as i32, libc::SIGCONT) };
            self.members[i].paused = false;
        }
    }

    /// Cuts member `i` off from every peer as `how` says, in both directions of each link;
    /// its clients still reach it. Needs `Config::peer_proxies`.
    pub fn isolate(&self, i: usize, how: Isolation) {
        assert!(
            !self.links.is_empty(),
            "isolate needs an ensemble started with Config::peer_proxies"
        );
        for link in self.links.iter().filter(|l| l.from == i || l.to == i) {
            for proxy in [&link.quorum, &link.election] {
                match how {
                    Isolation::Cut => {
                        proxy.refuse();
                        proxy.cut();
                    }
                    Isolation::BlackHole => proxy.blackhole(),
                    // The member is the proxy's client on the links it opened, its server on
                    // the links its peers opened.
                    Isolation::OutgoingLost if link.from == i => proxy.drop_to_server(),
                    Isolation::OutgoingLost => proxy.drop_to_client(),
                    Isolation::IncomingLost if link.from == i => proxy.drop_to_client(),
                    Isolation::IncomingLost => proxy.drop_to_server(),
                }
            }
        }
    }

    /// Ends member `i`'s isolation: its peer links pass bytes again (cut connections are
    /// opened anew by the members themselves).
    pub fn heal(&self, i: usize) {
        for link in self.links.iter().filter(|l| l.from == i || l.to == i) {
            link.quorum.heal();
            link.election.heal();
        }
    }

    /// The members that say they follow or lead (serve), by index.
    pub fn serving(&self) -> Vec<usize> {
        (0..self.members.len())
            .filter(|&i| {
                self.four_letter(i, "srvr")
                    .map(|r| r.contains("Mode: leader") || r.contains("Mode: follower"))
                    .unwrap_or(false)
            })
            .collect()
    }

    /// The index of the current leader, if any member says it leads.
    pub fn leader(&self) -> Option<usize> {
        (0..self.members.len()).find(|&i| {
            self.four_letter(i, "srvr")
                .map(|r| r.contains("Mode: leader"))
                .unwrap_or(false)
        })
    }

    /// The process id of member `i`'s JVM (None when it is stopped or external): the bench reads
    /// the server's CPU time from `/proc/<pid>/stat`.
    pub fn pid(&self, i: usize) -> Option<u32> {
        self.members[i].child.as_ref().map(Child::id)
    }

    /// Sends a four-letter word to member `i` and returns the reply.
    pub fn four_letter(&self, i: usize, word: &str) -> Result<String> {
        let addr = match &self.external {
            Some(s) => s
                .split(',')
                .next()
                .unwrap_or_default()
                .split('/')
                .next()
                .unwrap_or_default()
                .to_owned(),
            None => self.address(i),
        };
        four_letter(&addr, word)
    }

    /// `mntr` of member `i` as (key, value) pairs.
    pub fn mntr(&self, i: usize) -> Result<Vec<(String, String)>> {
        Ok(self
            .four_letter(i, "mntr")?
            .lines()
            .filter_map(|l| {
                l.split_once('\t')
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
            })
            .collect())
    }

    /// One `mntr` counter of member `i` as a number.
    pub fn mntr_value(&self, i: usize, key: &str) -> Result<i64> {
        self.mntr(i)?
            .into_iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.trim().parse().ok())
            .ok_or_else(|| format!("mntr has no numeric {key}"))
    }
}

fn port_of(addr: &str) -> u16 {
    addr.rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .expect("a proxy address ends in its port")
}

/// Sends a four-letter word to `addr` and returns the reply.
pub fn four_letter(addr: &str, word: &str) -> Result<String> {
    let sock: std::net::SocketAddr = addr
        .parse()
        .map_err(|e| format!("bad address {addr}: {e}"))?;
    let mut s =
        TcpStream::connect_timeout(&sock, Duration::from_secs(2)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok();
    s.write_all(word.as_bytes()).map_err(|e| e.to_string())?;
    let mut out = String::new();
    s.read_to_string(&mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

impl Drop for ZooKeeper {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.stop(i);
        }
        self.claims.clear();
        if let Some(root) = &self.root {
            let _ = std::fs::remove_dir_all(root);
        }
    }
}

/// Why a start failed: a port taken (started again on new ports) or anything else.
enum Start {
    PortTaken(String),
    Failed(String),
}

impl From<String> for Start {
    fn from(e: String) -> Start {
        Start::Failed(e)
    }
}

/// One standalone server shared by every test of this process (or `ZKLOCK_TEST_SERVERS`). It is
/// started from a thread that lives until the process exits, and dies with the process.
pub fn shared() -> &'static str {
    static SHARED: OnceLock<std::result::Result<String, String>> = OnceLock::new();
    let result = SHARED.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("zk-harness".into())
            .spawn(move || match ZooKeeper::from_env_or_standalone() {
                Ok(zk) => {
                    tx.send(Ok(zk.connect_string())).ok();
                    let _keep = zk;
                    loop {
                        std::thread::park();
                    }
                }
                Err(e) => {
                    tx.send(Err(e)).ok();
                }
            })
            .expect("spawn harness thread");
        rx.recv()
            .unwrap_or_else(|_| Err("harness thread died".into()))
    });
    match result {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    }
}

/// A lock path no other test uses.
pub fn unique_path(name: &str) -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    format!(
        "/zklock-test/{}-{}-{}",
        name,
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_taken_before_the_server_binds_it_is_traded_for_a_new_one() {
        // Another program holds the first port picked: the first server exits at its bind and
        // the harness starts again on new ports.
        let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let taken = holder.local_addr().unwrap().port();
        let mut picks = 0;
        let mut pick = || {
            picks += 1;
            match picks {
                1 => ports::claim(taken).ok_or_else(|| "the taken port is claimed".to_owned()),
                _ => ports::free_port(),
            }
        };
        let zk = ZooKeeper::start_picking(1, &Config::default(), &mut pick).unwrap();
        assert_ne!(zk.members[0].client_port, taken);
        let reply = zk.four_letter(0, "srvr").unwrap();
        assert!(reply.contains("Mode: standalone"), "{reply}");
    }
}
