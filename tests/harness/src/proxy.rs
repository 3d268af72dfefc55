//! A TCP fault proxy between ZooKeeper clients and one server (or between two members of an
//! ensemble): passes bytes through, and on command black-holes them, drops them in one
//! direction only, cuts every connection, refuses new ones, delays, or cuts a connection right
//! after the server's next reply is produced (so a request is applied but its reply never
//! reaches the client).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const PASS: u8 = 0;
const BLACKHOLE: u8 = 1;
const REFUSE: u8 = 2;

struct Shared {
    target: String,
    /// How long a new connection keeps trying to reach the target before it is closed.
    patience: Duration,
    mode: AtomicU8,
    delay_ms: AtomicU64,
    drop_next_reply: AtomicBool,
    /// One-way loss: bytes read from the client (or from the server) are discarded.
    drop_up: AtomicBool,
    drop_down: AtomicBool,
    /// Connections being pumped now.
    open: AtomicU64,
    generation: AtomicU64,
    conns: Mutex<Vec<TcpStream>>,
    stop: AtomicBool,
    /// Bytes read from clients and connections accepted, ever: what a client sent (the
    /// conformance case that nothing is sent after close counts them).
    sent_by_clients: AtomicU64,
    accepted: AtomicU64,
}

/// A running proxy; stops when dropped.
pub struct Proxy {
    addr: String,
    shared: Arc<Shared>,
}

impl Proxy {
    /// Listens on a free loopback port and forwards to `target` (`host:port`). A connection
    /// whose target refuses it is closed at once.
    pub fn start(target: &str) -> crate::Result<Proxy> {
        Self::start_with_patience(target, Duration::ZERO)
    }

    /// A proxy on a link between two ensemble members. The proxy accepts a connection before
    /// it reaches the target, so a member dialling a peer that does not listen yet (a follower
    /// dialling the quorum port of a leader that is still starting) would see the connection
    /// close instead of refused, give up the round and start a new election
    /// (`Learner.connectToLeader` retries only refused connects). This one keeps trying the
    /// target for a while, as the member itself would.
    pub fn start_for_peer(target: &str) -> crate::Result<Proxy> {
        Self::start_with_patience(target, Duration::from_secs(5))
    }

    fn start_with_patience(target: &str, patience: Duration) -> crate::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        let addr = listener
            .local_addr()
            .map_err(|e| e.to_string())?
            .to_string();
        let shared = Arc::new(Shared {
            target: target.to_owned(),
            patience,
            mode: AtomicU8::new(PASS),
            delay_ms: AtomicU64::new(0),
            drop_next_reply: AtomicBool::new(false),
            drop_up: AtomicBool::new(false),
            drop_down: AtomicBool::new(false),
            open: AtomicU64::new(0),
            generation: AtomicU64::new(0),
            conns: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            sent_by_clients: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
        });
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let s = shared.clone();
        std::thread::Builder::new()
            .name("zk-proxy".into())
            .spawn(move || accept_loop(listener, s))
            .map_err(|e| e.to_string())?;
        Ok(Proxy { addr, shared })
    }

    /// The address clients connect to.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Stops forwarding in both directions and holds new connections: to the client the server
    /// looks paused (its pings go unanswered).
    pub fn blackhole(&self) {
        self.shared.mode.store(BLACKHOLE, Ordering::SeqCst);
    }

    /// Refuses new connections (closes them at once); existing ones keep working.
    pub fn refuse(&self) {
        self.shared.mode.store(REFUSE, Ordering::SeqCst);
    }

    /// Drops every byte the client sends (the server hears nothing) while the server's bytes
    /// still reach the client; connections stay open.
    pub fn drop_to_server(&self) {
        self.shared.drop_up.store(true, Ordering::SeqCst);
    }

    /// Drops every byte the server sends (the client hears nothing) while the client's bytes
    /// still reach the server; connections stay open.
    pub fn drop_to_client(&self) {
        self.shared.drop_down.store(true, Ordering::SeqCst);
    }

    /// How many connections the proxy is forwarding now.
    pub fn open_connections(&self) -> u64 {
        self.shared.open.load(Ordering::SeqCst)
    }

    /// Bytes clients have sent through the proxy so far (dropped ones included).
    pub fn bytes_from_clients(&self) -> u64 {
        self.shared.sent_by_clients.load(Ordering::SeqCst)
    }

    /// Connections clients have opened to the proxy so far (refused ones included).
    pub fn connections_accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Back to passing bytes through.
    pub fn heal(&self) {
        self.shared.drop_up.store(false, Ordering::SeqCst);
        self.shared.drop_down.store(false, Ordering::SeqCst);
        self.shared.delay_ms.store(0, Ordering::SeqCst);
        self.shared.mode.store(PASS, Ordering::SeqCst);
    }

    /// Closes every open connection (clients see a connection loss and reconnect).
    pub fn cut(&self) {
        self.shared.generation.fetch_add(1, Ordering::SeqCst);
        for c in self.shared.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }

    /// Delays every forwarded chunk by `ms`.
    pub fn delay(&self, ms: u64) {
        self.shared.delay_ms.store(ms, Ordering::SeqCst);
    }

    /// The next chunk the server sends is dropped and its connection cut: whatever request it
    /// answers was applied, but the client never learns the result.
    pub fn drop_next_reply(&self) {
        self.shared.drop_next_reply.store(true, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.cut();
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    while !shared.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((client, _)) => {
                shared.accepted.fetch_add(1, Ordering::SeqCst);
                if shared.mode.load(Ordering::SeqCst) == REFUSE {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let s = shared.clone();
                std::thread::spawn(move || connect_and_pump(client, s));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

fn connect_and_pump(client: TcpStream, shared: Arc<Shared>) {
    let generation = shared.generation.load(Ordering::SeqCst);
    // A black-holed proxy holds a new connection without answering.
    while shared.mode.load(Ordering::SeqCst) == BLACKHOLE {
        if shared.stop.load(Ordering::SeqCst)
            || shared.generation.load(Ordering::SeqCst) != generation
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let started = std::time::Instant::now();
    let server = loop {
        match TcpStream::connect(&shared.target) {
            Ok(server) => break server,
            Err(_)
                if started.elapsed() < shared.patience && !shared.stop.load(Ordering::SeqCst) =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(_) => {
                let _ = client.shutdown(Shutdown::Both);
                return;
            }
        }
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    {
        let mut conns = shared.conns.lock().unwrap();
        conns.push(client.try_clone().unwrap());
        conns.push(server.try_clone().unwrap());
    }
    let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    let sh = shared.clone();
    shared.open.fetch_add(1, Ordering::SeqCst);
    let up = std::thread::spawn(move || pump(c2, s2, sh, false));
    pump(server, client, shared.clone(), true);
    let _ = up.join();
    shared.open.fetch_sub(1, Ordering::SeqCst);
}

fn pump(mut from: TcpStream, mut to: TcpStream, shared: Arc<Shared>, from_server: bool) {
    let _ = from.set_read_timeout(Some(Duration::from_millis(20)));
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        if shared.mode.load(Ordering::SeqCst) == BLACKHOLE {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(_) => break,
        };
        if !from_server {
            shared.sent_by_clients.fetch_add(n as u64, Ordering::SeqCst);
        }
        if from_server && shared.drop_next_reply.swap(false, Ordering::SeqCst) {
            break;
        }
        let dropped = if from_server {
            &shared.drop_down
        } else {
            &shared.drop_up
        };
        if dropped.load(Ordering::SeqCst) {
            continue;
        }
        let delay = shared.delay_ms.load(Ordering::SeqCst);
        if delay > 0 {
            std::thread::sleep(Duration::from_millis(delay));
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}
