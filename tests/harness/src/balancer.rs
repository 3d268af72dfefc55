//! A TCP load balancer in front of an ensemble's members, as an L4 balancer (a Kubernetes
//! ClusterIP, an haproxy `mode tcp`) is: one listening address; each new connection is forwarded
//! to the next member in turn (round-robin) and stays with that member for its whole life; the
//! bytes are passed through unread. Clients given its one address cannot choose a member, and a
//! reconnect may land on another one.
//!
//! On command it holds new connections (accepted, never forwarded, nothing answered) while the
//! established ones keep passing: a client that loses its connection cannot get anywhere else.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

struct Shared {
    targets: Vec<String>,
    /// The next connection's member (an index into `targets`).
    next: AtomicUsize,
    /// New connections are held rather than forwarded.
    hold_new: AtomicBool,
    /// Connections being forwarded now, per member.
    open: Vec<AtomicU64>,
    /// Connections accepted, ever.
    accepted: AtomicU64,
    /// Both sockets of every connection, for the shutdown on drop.
    conns: Mutex<Vec<TcpStream>>,
    stop: AtomicBool,
}

/// A running balancer; stops (and closes every connection) when dropped.
pub struct Balancer {
    addr: String,
    shared: Arc<Shared>,
}

impl Balancer {
    /// Listens on a free loopback port and spreads connections over `targets` (`host:port`
    /// each), in their order, round-robin.
    pub fn start(targets: &[String]) -> crate::Result<Balancer> {
        if targets.is_empty() {
            return Err("a load balancer needs at least one member to forward to".into());
        }
        let listener = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| format!("the load balancer cannot listen on 127.0.0.1: {e}"))?;
        let addr = listener
            .local_addr()
            .map_err(|e| e.to_string())?
            .to_string();
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let shared = Arc::new(Shared {
            targets: targets.to_vec(),
            next: AtomicUsize::new(0),
            hold_new: AtomicBool::new(false),
            open: targets.iter().map(|_| AtomicU64::new(0)).collect(),
            accepted: AtomicU64::new(0),
            conns: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        std::thread::Builder::new()
            .name("zk-balancer".into())
            .spawn(move || accept_loop(listener, s))
            .map_err(|e| e.to_string())?;
        Ok(Balancer { addr, shared })
    }

    /// The one address clients connect to.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// How many connections are being forwarded to each member now, in the order of `targets`.
    pub fn open_per_member(&self) -> Vec<u64> {
        self.shared
            .open
            .iter()
            .map(|n| n.load(Ordering::SeqCst))
            .collect()
    }

    /// Connections clients have opened to the balancer so far.
    pub fn connections_accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Holds every new connection (accepted, never forwarded) until `pass`; the established
    /// ones keep passing bytes.
    pub fn hold_new(&self) {
        self.shared.hold_new.store(true, Ordering::SeqCst);
    }

    /// New connections are forwarded again (the held ones too, each to the member it was given).
    pub fn pass(&self) {
        self.shared.hold_new.store(false, Ordering::SeqCst);
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for c in self.shared.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    while !shared.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((client, _)) => {
                shared.accepted.fetch_add(1, Ordering::SeqCst);
                // The member is chosen at accept, once: the connection never changes it.
                let member = shared.next.fetch_add(1, Ordering::SeqCst) % shared.targets.len();
                let s = shared.clone();
                std::thread::spawn(move || forward(client, member, s));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

fn forward(client: TcpStream, member: usize, shared: Arc<Shared>) {
    if let Ok(c) = client.try_clone() {
        shared.conns.lock().unwrap().push(c);
    }
    while shared.hold_new.load(Ordering::SeqCst) {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // A member that refuses (stopped, restarting) closes the client's connection, as a
    // balancer without health checks does.
    let Ok(server) = TcpStream::connect(&shared.targets[member]) else {
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    if let Ok(s) = server.try_clone() {
        shared.conns.lock().unwrap().push(s);
    }
    shared.open[member].fetch_add(1, Ordering::SeqCst);
    let up = std::thread::spawn(move || pump(c2, s2));
    pump(server, client);
    let _ = up.join();
    shared.open[member].fetch_sub(1, Ordering::SeqCst);
}

/// Copies `from` to `to` until either end closes, then closes both.
fn pump(mut from: TcpStream, mut to: TcpStream) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}
