//! The client: the entry point of the crate. It connects, makes the recipes (mutex, read/write
//! lock, multi-lock) and closes; everything else lives below it (`connection`, the recipes).

use std::sync::Arc;

use crate::connection::Connection;
use crate::error::Result;
use crate::multi::MultiLock;
use crate::mutex::Lock;
use crate::options::Options;
use crate::protocol::NodeKind;
use crate::runtime::{self, on_runtime};
use crate::rwlock::RwLock;
use crate::stats::Stats;

/// A connection to a ZooKeeper ensemble. Cheap to clone; clones share the session.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Connection>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("hosts", &self.inner.hosts())
            .field("session_id", &self.session_id())
            .finish()
    }
}

impl Client {
    /// Connects to `hosts` (`host:port,host:port/optional/chroot`).
    pub async fn connect(hosts: &str, options: Options) -> Result<Client> {
        let hosts = hosts.to_owned();
        on_runtime(async move { Client::open(hosts, options).await }).await
    }

    /// Blocking twin of [`Client::connect`].
    pub fn blocking_connect(hosts: &str, options: Options) -> Result<Client> {
        let hosts = hosts.to_owned();
        runtime::block_on(async move { Client::open(hosts, options).await })
    }

    async fn open(hosts: String, options: Options) -> Result<Client> {
        let inner = Arc::new(Connection::open(hosts, options).await?);
        Ok(Client { inner })
    }

    /// An exclusive, re-entrant lock on `path`.
    pub fn mutex(&self, path: &str) -> Result<Lock> {
        self.inner.check_usable()?;
        Lock::new(self.inner.clone(), path, NodeKind::Mutex)
    }

    /// A read/write lock on `path`.
    pub fn rw_lock(&self, path: &str) -> Result<RwLock> {
        self.inner.check_usable()?;
        RwLock::new(self.inner.clone(), path)
    }

    /// Exclusive locks on several paths, taken as one.
    pub fn multi_lock<S: AsRef<str>>(
        &self,
        paths: impl IntoIterator<Item = S>,
    ) -> Result<MultiLock> {
        self.inner.check_usable()?;
        MultiLock::from_paths(&self.inner, paths)
    }

    /// The connect string this client was made with.
    pub fn hosts(&self) -> &str {
        self.inner.hosts()
    }

    /// The current session's id.
    pub fn session_id(&self) -> i64 {
        self.inner.current().id
    }

    /// The session timeout the server granted the current session.
    pub fn session_timeout(&self) -> std::time::Duration {
        self.inner.current().timeout
    }

    /// A snapshot of this client's lock statistics since it was made: acquires by outcome, wait
    /// and hold times, leases held and acquires waiting now, lease state events, reconnects and
    /// session expiries (see [`Stats`]). A few atomic reads; works after close too.
    pub fn stats(&self) -> Stats {
        self.inner.counters().snapshot()
    }

    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// Closes the session: every lease taken through this client becomes lost, its nodes are
    /// deleted by the server, and later calls fail with `Closed`. Returns once ZooKeeper has
    /// been told (at most half a second when it cannot be reached).
    pub async fn close(&self) {
        let inner = self.inner.clone();
        let _ = on_runtime(async move {
            inner.close().await;
            Ok(())
        })
        .await;
    }

    /// Blocking twin of [`Client::close`].
    pub fn blocking_close(&self) {
        let inner = self.inner.clone();
        let _ = runtime::block_on(async move {
            inner.close().await;
            Ok(())
        });
    }
}
