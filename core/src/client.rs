//! The client: the entry point of the crate. It connects, makes the recipes (mutex, read/write
//! lock, multi-lock) and closes; everything else lives below it (`connection`, the recipes).

use std::sync::Arc;

use crate::base::error::Result;
use crate::base::options::Options;
use crate::base::protocol::{ElectionStyle, NodeKind};
use crate::base::state::ConnectionState;
use crate::ops::runtime::{self, in_runtime};
use crate::ops::stats::Stats;
use crate::recipes::counter::{Counter, CounterWidth};
use crate::recipes::election::{Election, LeaderWatch};
use crate::recipes::multi::MultiLock;
use crate::recipes::mutex::Lock;
use crate::recipes::rwlock::RwLock;
use crate::sessions::connection::Connection;

/// A connection to a ZooKeeper ensemble. Cheap to clone; clones share the session.
///
/// ```no_run
/// # async fn run() -> zklock::Result<()> {
/// let client = zklock::Client::connect("zk1:2181,zk2:2181,zk3:2181", zklock::Options::default())
///     .await?;
/// let lease = client.mutex("/locks/orders")?.acquire().await?;
/// lease.release().await?;
/// client.close().await;
/// # Ok(())
/// # }
/// ```
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
        in_runtime(async move { Client::open(hosts, options).await }).await
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

    /// A participant in the leader election on `path`, in the layout of `style` (Curator's
    /// `LeaderSelector` or `LeaderLatch`, kazoo's `Election`), with `id` as its node's data
    /// (`None`: the client's identity).
    pub fn election(&self, path: &str, style: ElectionStyle, id: Option<&str>) -> Result<Election> {
        self.inner.check_usable()?;
        Election::new(self.inner.clone(), path, style, id)
    }

    /// Watches who leads the election on `path` without taking part (see [`LeaderWatch`]).
    pub fn observe_leader(&self, path: &str) -> Result<LeaderWatch> {
        self.inner.check_usable()?;
        LeaderWatch::new(self.inner.clone(), path)
    }

    /// Whether `token` is the fencing token of a current holder of the lock, or leader of the
    /// election, on `path` (Chubby's `CheckSequencer`), so that a third party handed a token
    /// can verify it: the first exclusive node's czxid, or a read node's before it; for a
    /// semaphore a lease node's among the first `max_leases` (any lease node's when `None`).
    /// An answer is true at the moment ZooKeeper answered; a resource that must never act for
    /// a past holder also keeps the largest token it saw.
    pub async fn check(&self, path: &str, token: i64, max_leases: Option<u32>) -> Result<bool> {
        let inner = self.inner.clone();
        let path = path.to_owned();
        in_runtime(async move {
            crate::recipes::election::check(&inner, &path, token, max_leases).await
        })
        .await
    }

    /// Blocking twin of [`Client::check`].
    pub fn blocking_check(&self, path: &str, token: i64, max_leases: Option<u32>) -> Result<bool> {
        let inner = self.inner.clone();
        let path = path.to_owned();
        runtime::block_on(async move {
            crate::recipes::election::check(&inner, &path, token, max_leases).await
        })
    }

    /// An exclusive, re-entrant lock on `path`.
    pub fn mutex(&self, path: &str) -> Result<Lock> {
        self.inner.check_usable()?;
        Lock::new(self.inner.clone(), path, NodeKind::Mutex)
    }

    /// A counting semaphore of `max_leases` leases on `path`, on Curator's
    /// `InterProcessSemaphoreV2` layout (`<path>/leases`, `<path>/locks`): every acquire takes
    /// one lease (not re-entrant), held while at most `max_leases` exist. Every process on the
    /// path must pass the same N (ZooKeeper does not store it). `InvalidArgument` for 0.
    pub fn semaphore(&self, path: &str, max_leases: u32) -> Result<Lock> {
        self.inner.check_usable()?;
        Lock::semaphore(self.inner.clone(), path, max_leases)
    }

    /// `semaphore(path, 1)`: excludes Curator's `InterProcessSemaphoreMutex` on `path`. Not
    /// re-entrant (a second acquire by the same holder waits for itself, as in Curator).
    pub fn semaphore_mutex(&self, path: &str) -> Result<Lock> {
        self.semaphore(path, 1)
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

    /// A shared counter on `path`, on Curator's `SharedCount` layout (`CounterWidth::Int32`, a
    /// 4-byte big-endian int) or `DistributedAtomicLong`'s (`Int64`): `get`, `compare_and_set`,
    /// and [`crate::Lease::guarded_increment`], which moves it only while a lock is held.
    pub fn counter(&self, path: &str, width: CounterWidth) -> Result<Counter> {
        self.inner.check_usable()?;
        Counter::new(self.inner.clone(), path, width)
    }

    /// Asks the holder of `path` to let go, as Curator's `Revoker.attemptRevoke` does: sets the
    /// data of its node to `__REVOKE__`. `node` names one node (its name or full path); `None`
    /// asks every current holder (each lease of a semaphore). Returns the nodes asked;
    /// `NotHeld` when nobody holds the path or the node is gone. Holders hear it through
    /// [`crate::Lease::revoke_requested`] (zklock) or a `RevocationListener` (Curator).
    pub async fn revoke(&self, path: &str, node: Option<&str>) -> Result<Vec<String>> {
        self.inner.check_usable()?;
        let inner = self.inner.clone();
        let (path, node) = (path.to_owned(), node.map(str::to_owned));
        in_runtime(
            async move { crate::recipes::revoke::revoke(&inner, &path, node.as_deref()).await },
        )
        .await
    }

    /// Every lock and election queue in the subtree at `path` (`/` included), in path order:
    /// each path whose children are contenders in a layout zklock recognises (its own,
    /// Curator's, kazoo's; semaphores too), with its participants as [`Lock::participants`]
    /// lists them. Walks at most `limits` (depth and nodes listed): past either, fails with
    /// `InvalidArgument` naming the bound; `NotHeld` ("no such path") when `path` does not
    /// exist. What `zklock ls -r` shows.
    pub async fn locks_under(
        &self,
        path: &str,
        limits: crate::recipes::scan::ScanLimits,
    ) -> Result<Vec<crate::recipes::scan::LockQueue>> {
        self.inner.check_usable()?;
        let inner = self.inner.clone();
        let path = path.to_owned();
        in_runtime(async move { crate::recipes::scan::locks_under(&inner, &path, limits).await })
            .await
    }

    /// Blocking twin of [`Client::locks_under`].
    pub fn blocking_locks_under(
        &self,
        path: &str,
        limits: crate::recipes::scan::ScanLimits,
    ) -> Result<Vec<crate::recipes::scan::LockQueue>> {
        self.inner.check_usable()?;
        let inner = self.inner.clone();
        let path = path.to_owned();
        runtime::block_on(
            async move { crate::recipes::scan::locks_under(&inner, &path, limits).await },
        )
    }

    /// Blocking twin of [`Client::revoke`].
    pub fn blocking_revoke(&self, path: &str, node: Option<&str>) -> Result<Vec<String>> {
        self.inner.check_usable()?;
        let inner = self.inner.clone();
        let (path, node) = (path.to_owned(), node.map(str::to_owned));
        runtime::block_on(async move {
            crate::recipes::revoke::revoke(&inner, &path, node.as_deref()).await
        })
    }

    /// Breaks a stuck lock: deletes `node` (its name or full path, one of `path`'s
    /// contenders, as [`Lock::participants`] lists them), checked against the version read
    /// just before, so a node changed or re-created meanwhile is not touched. Returns the
    /// contender broken (identity, token, age). `NotHeld` when the node is not there (or went
    /// away first), `Permission` when the ACL refuses, `InvalidArgument` for an empty node.
    /// `reason` goes to the logs. A zklock holder's lease turns lost with reason `broken`; the
    /// next waiter acquires with a larger token.
    pub async fn break_lock(
        &self,
        path: &str,
        node: &str,
        reason: Option<&str>,
    ) -> Result<crate::Participant> {
        self.inner.check_usable()?;
        let inner = self.inner.clone();
        let (path, node, reason) = (path.to_owned(), node.to_owned(), reason.map(str::to_owned));
        in_runtime(async move {
            crate::recipes::breaking::break_lock(&inner, &path, &node, reason.as_deref()).await
        })
        .await
    }

    /// Blocking twin of [`Client::break_lock`].
    pub fn blocking_break_lock(
        &self,
        path: &str,
        node: &str,
        reason: Option<&str>,
    ) -> Result<crate::Participant> {
        self.inner.check_usable()?;
        let inner = self.inner.clone();
        let (path, node, reason) = (path.to_owned(), node.to_owned(), reason.map(str::to_owned));
        runtime::block_on(async move {
            crate::recipes::breaking::break_lock(&inner, &path, &node, reason.as_deref()).await
        })
    }

    /// This client's id: unique in the process and never reused, and carried by every log record
    /// about the client ([`crate::support::LogRecord`]'s `client`), so that a face whose
    /// clients belong to different owners (Node's worker threads) gives each its own records.
    pub fn id(&self) -> u64 {
        self.inner.counters().client()
    }

    /// The connect string this client was made with.
    pub fn hosts(&self) -> &str {
        self.inner.hosts()
    }

    /// The current session's id.
    pub fn session_id(&self) -> i64 {
        self.inner.current().id
    }

    /// The session whose `sync`s carry the current session's proof, `None` while it proves on
    /// its own chain: `support::proof_carrier`.
    pub(crate) fn proof_carrier(&self) -> Option<i64> {
        self.inner.current().proof_carrier()
    }

    /// The session timeout the server granted the current session.
    pub fn session_timeout(&self) -> std::time::Duration {
        self.inner.current().timeout
    }

    /// The tick the lifeline runs on (docs/safety.md): the larger of `Options::server_tick` and
    /// the bound learned from the servers at connect, half the shortest session they grant
    /// (their `tickTime`, or more when the operator raised `minSessionTimeout`).
    pub fn server_tick(&self) -> std::time::Duration {
        self.inner.current().tick()
    }

    /// Which ZooKeeper version class answered at connect, and what it lacks (docs/interop.md).
    pub fn server_features(&self) -> crate::ServerFeatures {
        self.inner.current().features
    }

    /// A snapshot of this client's lock statistics since it was made: acquires by outcome, wait
    /// and hold times, leases held and acquires waiting now, lease state events, reconnects and
    /// session expiries (see [`Stats`]). A few atomic reads; works after close too.
    pub fn stats(&self) -> Stats {
        self.inner.counters().snapshot()
    }

    /// [`Client::stats`] as OpenMetrics text (what Prometheus scrapes), each sample labelled
    /// `client="<id>"` ([`Client::id`]) and with `labels`.
    pub fn openmetrics(&self, labels: &[(&str, &str)]) -> String {
        let id = self.id().to_string();
        let mut all = vec![("client", id.as_str())];
        all.extend_from_slice(labels);
        let paths = self.path_stats();
        self.stats().to_openmetrics_with(Some(&paths), &all)
    }

    /// [`Client::stats`] and [`Client::path_stats`] as metric families, labelled as
    /// [`Client::openmetrics`] labels them: what a face's registry adapter builds its families
    /// from, without parsing text.
    pub fn metric_families(&self, labels: &[(&str, &str)]) -> Vec<crate::MetricFamily> {
        let id = self.id().to_string();
        let mut all = vec![("client", id.as_str())];
        all.extend_from_slice(labels);
        let paths = self.path_stats();
        self.stats().metric_families(Some(&paths), &all)
    }

    /// Hands [`Client::stats`] and [`Client::path_stats`] to the `metrics` facade's current
    /// recorder (cargo feature `metrics`): every counter set to its total, every gauge to its
    /// value, under the names of [`Client::openmetrics`], labelled `client="<id>"` and with
    /// `labels`. Call it before each scrape (or on a timer); nothing is recorded in between.
    /// Unlike the text, every path's series are recorded, zeros included: a recorder cannot
    /// drop a series, so a path no longer held reads `zklock_path_held` 0 here (absent in the
    /// text), and its wait seconds are a gauge (the facade's counters are integers).
    #[cfg(feature = "metrics")]
    pub fn record_metrics(&self, labels: &[(&str, &str)]) {
        let id = self.id().to_string();
        let mut all = vec![("client", id.as_str())];
        all.extend_from_slice(labels);
        crate::ops::metrics_export::record(&self.stats(), &self.path_stats(), &all);
    }

    /// The statistics of every lock path this client acquired on (at most its
    /// `Options::path_stats_limit` paths; the acquires on later paths counted together in the
    /// overflow series): acquires by outcome, wait time, leases lost by reason, leases held now
    /// and the age of the oldest of them. Works after close too.
    pub fn path_stats(&self) -> crate::ops::path_stats::PathStatsSnapshot {
        self.inner.counters().paths.snapshot()
    }

    /// Where the connection to the ensemble stands now (the lifeline's deadline checked on the
    /// spot): `Connected`, `Suspended` (broken; the session may live), `Lost` (the session
    /// ended, or the client was closed).
    pub fn connection_state(&self) -> ConnectionState {
        self.inner.connection_state()
    }

    /// Calls `callback` with the connection's current state, then at every change, on the
    /// process-wide callback thread (kazoo's `add_listener`): `Lost` once per session, then
    /// `Connected` when a later acquire opens a new one; nothing after `Lost` of a closed
    /// client. Returns an id for [`Client::remove_connection_listener`].
    pub fn on_connection(&self, callback: impl Fn(ConnectionState) + Send + Sync + 'static) -> u64 {
        self.on_connection_in(runtime::CallbackQueue::process(), callback)
    }

    /// [`Client::on_connection`] with the callbacks run on `queue` (a client's own thread).
    pub fn on_connection_in(
        &self,
        queue: runtime::CallbackQueue,
        callback: impl Fn(ConnectionState) + Send + Sync + 'static,
    ) -> u64 {
        let inner = self.inner.clone();
        self.inner
            .listeners()
            .add(queue, Arc::new(callback), move || inner.connection_state())
    }

    /// Stops the listener `id`; false when it was removed already. A call already queued may
    /// still run.
    pub fn remove_connection_listener(&self, id: u64) -> bool {
        self.inner.listeners().remove(id)
    }

    /// Whether [`Client::close`] was called on this client (or a clone).
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// Closes the session: every lease taken through this client becomes lost, its nodes are
    /// deleted by the server, and later calls fail with `Closed`. Returns once ZooKeeper has
    /// been told (at most half a second when it cannot be reached).
    pub async fn close(&self) {
        let inner = self.inner.clone();
        let _ = in_runtime(async move {
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
