//! What the memory tests share (`memory_per_session.rs`, `session_memory.rs`): a standalone
//! server with one holder of a lock, sessions opened one after another, a waiter queued on that
//! lock from each, and the events they wait for (every waiter's watch counted by the server,
//! one more round trip on each session) instead of sleeps. Each test declares the testkit's
//! counting allocator as its global allocator (`zklock_testkit::counting`) and says only what
//! it measures.

use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use zklock_testkit::ZooKeeper;

/// A standalone server, and a first session holding `path`'s lock.
pub struct Held {
    pub zk: ZooKeeper,
    pub hosts: String,
    pub path: String,
    pub holder: zklock::Client,
    pub lease: zklock::Lease,
}

impl Held {
    pub async fn start(path: &str) -> Held {
        let zk = ZooKeeper::standalone().expect("ZooKeeper must start");
        let hosts = zk.connect_string();
        let holder = connect(&hosts).await;
        let lease = holder.mutex(path).unwrap().acquire().await.unwrap();
        Held {
            zk,
            hosts,
            path: path.to_owned(),
            holder,
            lease,
        }
    }

    /// `n` sessions with the default options, opened one after another.
    pub async fn open_sessions(&self, n: usize) -> Vec<zklock::Client> {
        let mut clients = Vec::with_capacity(n);
        for _ in 0..n {
            clients.push(connect(&self.hosts).await);
        }
        clients
    }

    /// One waiter on the held lock from each client (each acquires, then releases once the
    /// holder has let go), returned once the server counts every waiter's watch on the node
    /// before its own (within 120 s).
    pub async fn queue_waiters(&self, clients: &[zklock::Client]) -> Vec<Waiter> {
        let watches_before = self.watches();
        let waiters = clients
            .iter()
            .map(|client| {
                let mutex = client.mutex(&self.path).unwrap();
                tokio::spawn(async move { mutex.acquire().await?.release().await })
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.watches() < watches_before + clients.len() as i64 {
            assert!(
                Instant::now() < deadline,
                "the {} waiters did not all watch in 120 s",
                clients.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        waiters
    }

    fn watches(&self) -> i64 {
        self.zk.mntr_value(0, "zk_watch_count").unwrap()
    }

    /// The holder releases, every waiter takes and releases the lock in turn, and every session
    /// closes.
    pub async fn finish(self, waiters: Vec<Waiter>, clients: Vec<zklock::Client>) {
        self.lease.release().await.unwrap();
        for w in waiters {
            w.await.unwrap().unwrap();
        }
        for c in clients {
            c.close().await;
        }
        self.holder.close().await;
    }
}

/// A queued waiter: acquires, then releases.
pub type Waiter = JoinHandle<zklock::Result<zklock::Released>>;

pub async fn connect(hosts: &str) -> zklock::Client {
    zklock::Client::connect(hosts, zklock::Options::default())
        .await
        .unwrap()
}

/// One round trip on every client, so that whatever an earlier reply set in motion on that
/// session has been handled (replies come back in order on one connection).
pub async fn round_trip_on_each(clients: &[zklock::Client]) {
    for c in clients {
        let probe = c.mutex("/memory-tests/probe").unwrap();
        probe.participants().await.unwrap();
    }
}
