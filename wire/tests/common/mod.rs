//! Shared by `bytes.rs` and `ensemble.rs`: a pass-through TCP relay on the test's tokio runtime
//! that records every byte of each connection in both directions, counts connection attempts
//! (with their times), refuses new connections on demand (accepted, then closed at once, as the
//! harness's `Proxy::refuse` does) and cuts the open ones; and `wait_state`, for every test of
//! the session layer.

#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// One connection that reached the target: what each side sent, in order.
#[derive(Debug, Clone, Default)]
pub struct Recording {
    /// Client to server.
    pub up: Vec<u8>,
    /// Server to client.
    pub down: Vec<u8>,
    /// Still relayed.
    pub open: bool,
}

struct Inner {
    target: String,
    refuse: AtomicBool,
    /// Every accepted connection, refused or not.
    attempts: Mutex<Vec<Instant>>,
    conns: Mutex<Vec<Arc<Mutex<Recording>>>>,
    cut: watch::Sender<u64>,
}

/// A running relay; stops (and closes its connections) when dropped.
pub struct Relay {
    addr: String,
    inner: Arc<Inner>,
    accept: JoinHandle<()>,
}

impl Relay {
    /// Listens on a free loopback port and relays to `target` (`host:port`).
    pub async fn start(target: &str) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port for the relay");
        let addr = listener.local_addr().unwrap().to_string();
        let (cut, _) = watch::channel(0);
        let inner = Arc::new(Inner {
            target: target.to_owned(),
            refuse: AtomicBool::new(false),
            attempts: Mutex::new(Vec::new()),
            conns: Mutex::new(Vec::new()),
            cut,
        });
        let i = inner.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                i.attempts.lock().unwrap().push(Instant::now());
                if i.refuse.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                tokio::spawn(relay(client, i.clone()));
            }
        });
        Relay {
            addr,
            inner,
            accept,
        }
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// New connections are accepted and closed at once (`true`), or relayed (`false`).
    pub fn refuse(&self, refuse: bool) {
        self.inner.refuse.store(refuse, Ordering::SeqCst);
    }

    /// Closes every open connection (both sides).
    pub fn cut(&self) {
        self.inner.cut.send_modify(|g| *g += 1);
    }

    /// When each connection attempt was accepted.
    pub fn attempts(&self) -> Vec<Instant> {
        self.inner.attempts.lock().unwrap().clone()
    }

    /// Every connection relayed so far, in the order they were accepted.
    pub fn recordings(&self) -> Vec<Recording> {
        self.inner
            .conns
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.lock().unwrap().clone())
            .collect()
    }

    /// Whether a connection is being relayed now.
    pub fn is_open(&self) -> bool {
        self.recordings().iter().any(|r| r.open)
    }

    /// Waits until no connection is open; panics after `limit`.
    pub async fn wait_closed(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while self.is_open() {
            assert!(
                Instant::now() < deadline,
                "a connection through the relay to {} is still open after {limit:?}",
                self.inner.target
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}

async fn relay(client: TcpStream, inner: Arc<Inner>) {
    let Ok(server) = TcpStream::connect(&inner.target).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let rec = Arc::new(Mutex::new(Recording {
        open: true,
        ..Recording::default()
    }));
    inner.conns.lock().unwrap().push(rec.clone());
    let mut cut = inner.cut.subscribe();
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let r1 = rec.clone();
    let up = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match cr.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    r1.lock().unwrap().up.extend_from_slice(&buf[..n]);
                    if sw.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            }
        }
    };
    let r2 = rec.clone();
    let down = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match sr.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    r2.lock().unwrap().down.extend_from_slice(&buf[..n]);
                    if cw.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            }
        }
    };
    // Either side closing (or a cut) ends both: the halves are dropped, so both sockets close.
    tokio::select! {
        _ = up => {}
        _ = down => {}
        _ = cut.changed() => {}
    }
    rec.lock().unwrap().open = false;
}

/// Splits a recorded stream into frame payloads (the 4-byte big-endian length prefix taken
/// off). Panics if the stream does not end at a frame boundary.
pub fn frames(stream: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = stream;
    while !rest.is_empty() {
        assert!(rest.len() >= 4, "a stream ends inside a length prefix");
        let len = i32::from_be_bytes(rest[..4].try_into().unwrap());
        assert!(
            len >= 0 && rest.len() >= 4 + len as usize,
            "a stream ends inside a frame of {len} bytes"
        );
        out.push(&rest[4..4 + len as usize]);
        rest = &rest[4 + len as usize..];
    }
    out
}

/// The first 4 bytes of a frame as a big-endian int (the xid of a request or reply).
pub fn xid_of(frame: &[u8]) -> i32 {
    i32::from_be_bytes(frame[..4].try_into().expect("a frame of at least 4 bytes"))
}

/// Waits until `client`'s session is in state `want`, failing the test after `within`.
#[allow(dead_code)] // not every test binary that includes this module waits for a state
pub async fn wait_state(
    client: &zklock_wire::client::Client,
    want: zklock_wire::client::SessionState,
    within: Duration,
) {
    let mut states = client.state_watcher();
    let waited = tokio::time::timeout(within, async {
        while states.peek_state() != want {
            states.changed().await;
        }
    })
    .await;
    assert!(
        waited.is_ok(),
        "state {want:?} not reached within {within:?}; it is {:?}",
        client.state()
    );
}

/// Reads one frame's payload (the scripted servers of `fake.rs` and `hostile.rs`).
pub async fn read_frame<S: tokio::io::AsyncRead + Unpin>(s: &mut S) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).await.ok()?;
    let mut payload = vec![0u8; i32::from_be_bytes(len) as usize];
    s.read_exact(&mut payload).await.ok()?;
    Some(payload)
}

/// One frame whose body `f` writes.
pub fn frame(f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut out = Vec::new();
    zklock_wire::frame::write_frame(&mut out, zklock_wire::frame::DEFAULT_MAX, f).unwrap();
    out
}
