//! The client from JS: [`NativeClient`] (one session), `connect` and its options, the client's
//! statistics, and the locks, semaphores and elections it makes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use napi::bindgen_prelude::{BigInt, Object};
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi::Env;
use napi_derive::napi;
use zklock::{AclPolicy, ErrorKind, Owner, QueuePositions};

use crate::counter::NativeCounter;
use crate::election::{NativeElection, NativeLeaderWatch};
use crate::environment::close_with_environment;
use crate::error::{js_err, Code, Settled};
use crate::lease::StateCallback;
use crate::lock::{NativeLock, Side, Target};
use crate::queue::settle_from_core;

/// One ZooKeeper session (`zklock::Client`).
#[napi]
pub struct NativeClient {
    inner: zklock::Client,
}

/// Options of `connect` (their types checked by index.js, their values by the core).
#[napi(object)]
pub struct NativeConnectOptions {
    pub session_timeout_ms: Option<f64>,
    pub connect_timeout_ms: Option<f64>,
    pub auth: Option<String>,
    pub identity: Option<String>,
    /// An [`AclPolicy`] name: `open` (default), `creator-all` or `read-anyone-creator-all`.
    pub acl: Option<String>,
    /// Secure ZooKeeper: PEM file paths or PEM text, hostname verification, SASL DIGEST-MD5
    /// credentials (checked by the core's `SecureParts`).
    pub tls_ca: Option<String>,
    pub tls_cert: Option<String>,
    pub tls_key: Option<String>,
    pub tls_verify_hostname: Option<bool>,
    pub sasl_user: Option<String>,
    pub sasl_password: Option<String>,
    /// The ensemble's tickTime ([`zklock::Options::server_tick`]).
    pub server_tick_ms: Option<f64>,
    /// How many lock paths get statistics of their own ([`zklock::Options::path_stats_limit`]).
    pub path_stats_limit: Option<f64>,
}

fn options(o: Option<NativeConnectOptions>) -> Result<zklock::Options, zklock::Error> {
    let mut options = zklock::Options::default();
    if let Some(o) = o {
        if let Some(ms) = o.session_timeout_ms {
            options = options.session_timeout(zklock::support::duration_from_millis_f64(
                ms,
                "sessionTimeoutMs",
            )?);
        }
        if let Some(ms) = o.connect_timeout_ms {
            options = options.connect_timeout(zklock::support::duration_from_millis_f64(
                ms,
                "connectTimeoutMs",
            )?);
        }
        if let Some(ms) = o.server_tick_ms {
            options = options.server_tick(zklock::support::duration_from_millis_f64(
                ms,
                "serverTickMs",
            )?);
        }
        if let Some(limit) = o.path_stats_limit {
            options = options.path_stats_limit(zklock::support::path_stats_limit_from_f64(limit)?);
        }
        if let Some(auth) = o.auth {
            options = options.auth(auth);
        }
        if let Some(identity) = o.identity {
            options = options.identity(identity);
        }
        if let Some(acl) = o.acl {
            options = options.acl(acl.parse::<AclPolicy>()?);
        }
        options = zklock::SecureParts {
            tls_ca: o.tls_ca,
            tls_cert: o.tls_cert,
            tls_key: o.tls_key,
            tls_verify_hostname: o.tls_verify_hostname,
            sasl_user: o.sasl_user,
            sasl_password: o.sasl_password,
        }
        .apply(options)?;
    }
    Ok(options)
}

/// One path's statistics ([`zklock::PathStats`]; times in milliseconds; `lost` by reason word).
/// Which ZooKeeper version class answered at connect ([`zklock::ServerFeatures`]).
#[napi(object)]
pub struct NativeServerFeatures {
    /// `"3.5"`, `"3.6"` or `"3.7+"`.
    pub version: String,
    /// The requests that class lacks.
    pub lacks: Vec<String>,
}

#[napi(object)]
pub struct NativePathStats {
    pub path: Option<String>,
    pub acquired: f64,
    pub timed_out: f64,
    pub cancelled: f64,
    pub failed: f64,
    pub wait_sum: f64,
    pub lost: std::collections::HashMap<String, f64>,
    pub held: f64,
    pub oldest_hold: f64,
}

/// Every path's statistics ([`zklock::PathStatsSnapshot`]).
#[napi(object)]
pub struct NativePathStatsSnapshot {
    pub limit: f64,
    pub folded: f64,
    pub paths: Vec<NativePathStats>,
    pub overflow: Option<NativePathStats>,
}

/// Percentiles of recorded times, in milliseconds ([`zklock::Percentiles`]).
#[napi(object)]
pub struct NativePercentiles {
    pub count: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

/// A client's statistics ([`zklock::Stats`]), counts as numbers.
#[napi(object)]
pub struct NativeStats {
    pub acquired: f64,
    pub timed_out: f64,
    pub cancelled: f64,
    pub failed: f64,
    pub wait: NativePercentiles,
    pub hold: NativePercentiles,
    pub held: f64,
    pub waiting: f64,
    pub suspended: f64,
    pub lost: f64,
    pub reconnects: f64,
    pub session_expiries: f64,
}

/// Connects to `hosts` (`host:port,host:port/optional/chroot`).
#[napi]
pub async fn connect(
    hosts: String,
    options_in: Option<NativeConnectOptions>,
) -> napi::Result<Settled<NativeClient>> {
    let result = async {
        let options = options(options_in)?;
        let inner = zklock::Client::connect(&hosts, options).await?;
        Ok(NativeClient { inner })
    }
    .await;
    Ok(Settled(result))
}

/// Ids from one count, never 0 (the core's `Owner::SHARED`): one per `client.mutex()` /
/// `client.rwLock()` / `client.multiLock()` object (its group), and one per caller
/// (`newOwner()`, lib/lock.js's rule: issue 50).
static NEXT_OWNER: AtomicU64 = AtomicU64::new(1);

fn new_owner() -> Owner {
    Owner(NEXT_OWNER.fetch_add(1, Ordering::Relaxed))
}

/// A new caller's owner id, for lib/lock.js: a number below 2^53 (as JS counts exactly).
#[napi(js_name = "newOwner")]
pub fn new_caller() -> f64 {
    new_owner().0 as f64
}

#[napi]
impl NativeClient {
    #[napi(getter)]
    pub fn hosts(&self) -> String {
        self.inner.hosts().to_owned()
    }

    #[napi(getter)]
    pub fn session_id(&self) -> BigInt {
        BigInt::from(self.inner.session_id())
    }

    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// The tick the lifeline runs on, in ms ([`zklock::Client::server_tick`]).
    #[napi(getter)]
    pub fn server_tick_ms(&self) -> f64 {
        self.inner.server_tick().as_secs_f64() * 1e3
    }

    /// [`zklock::Client::server_features`].
    #[napi]
    pub fn server_features(&self) -> NativeServerFeatures {
        let f = self.inner.server_features();
        NativeServerFeatures {
            version: f.version_class().to_owned(),
            lacks: f.lacks().into_iter().map(str::to_owned).collect(),
        }
    }

    /// An exclusive lock on `path` (re-entrant for this object unless `reentrant` is false).
    #[napi(catch_unwind)]
    pub fn mutex(
        &self,
        path: String,
        reentrant: bool,
        max_hold_ms: Option<f64>,
        hold_ceiling_ms: Option<f64>,
        lock_delay_ms: Option<f64>,
    ) -> napi::Result<NativeLock, Code> {
        let lock = self
            .inner
            .mutex(&path)
            .map_err(js_err)?
            .reentrant(reentrant);
        let lock = with_max_hold(lock, max_hold_ms).map_err(js_err)?;
        let ceiling = hold_ceiling_ms
            .map(|ms| zklock::support::duration_from_millis_f64(ms, "holdCeilingMs"))
            .transpose()
            .map_err(js_err)?;
        let lock = lock.hold_ceiling(ceiling).map_err(js_err)?;
        let lock = zklock::support::lock_delay_from_millis(lock_delay_ms)
            .and_then(|delay| lock.lock_delay(delay))
            .map_err(js_err)?;
        Ok(self.lock(Target::Lock(Arc::new(lock)), path))
    }

    /// A semaphore of `max_leases` leases on `path` (Curator's `InterProcessSemaphoreV2`
    /// layout); never re-entrant. A JS number is taken as it is: the core judges N.
    #[napi(catch_unwind)]
    pub fn semaphore(
        &self,
        path: String,
        max_leases: f64,
        max_hold_ms: Option<f64>,
        lock_delay_ms: Option<f64>,
    ) -> napi::Result<NativeLock, Code> {
        let n = max_leases_of(&path, max_leases).map_err(js_err)?;
        let lock = self.inner.semaphore(&path, n).map_err(js_err)?;
        let lock = with_max_hold(lock, max_hold_ms).map_err(js_err)?;
        let lock = zklock::support::lock_delay_from_millis(lock_delay_ms)
            .and_then(|delay| lock.lock_delay(delay))
            .map_err(js_err)?;
        Ok(self.lock(Target::Lock(Arc::new(lock)), path))
    }

    /// `semaphore(path, 1)`: excludes Curator's `InterProcessSemaphoreMutex`.
    #[napi(catch_unwind)]
    pub fn semaphore_mutex(
        &self,
        path: String,
        max_hold_ms: Option<f64>,
    ) -> napi::Result<NativeLock, Code> {
        let lock = self.inner.semaphore_mutex(&path).map_err(js_err)?;
        let lock = with_max_hold(lock, max_hold_ms).map_err(js_err)?;
        Ok(self.lock(Target::Lock(Arc::new(lock)), path))
    }

    /// A shared counter on `path`: `width` `int32` (absent: the default, Curator's SharedCount)
    /// or `int64` (DistributedAtomicLong), judged by the core.
    #[napi(catch_unwind)]
    pub fn counter(
        &self,
        path: String,
        width: Option<String>,
    ) -> napi::Result<NativeCounter, Code> {
        let width =
            zklock::CounterWidth::parse(width.as_deref().unwrap_or("int32")).map_err(js_err)?;
        let counter = self.inner.counter(&path, width).map_err(js_err)?;
        Ok(NativeCounter { counter })
    }

    /// Asks the holder(s) of `path` (or the one `node`) to let go: `__REVOKE__` on their nodes
    /// (Curator's `Revoker.attemptRevoke`). Resolves with the nodes asked.
    #[napi]
    pub async fn revoke(
        &self,
        path: String,
        node: Option<String>,
    ) -> napi::Result<Settled<Vec<String>>> {
        Ok(Settled(self.inner.revoke(&path, node.as_deref()).await))
    }

    /// Breaks a stuck lock: deletes `node` (one of `path`'s contenders), checked against the
    /// version just read ([`zklock::Client::break_lock`]). Resolves with the contender broken.
    #[napi]
    pub async fn break_lock(
        &self,
        path: String,
        node: String,
        reason: Option<String>,
    ) -> napi::Result<Settled<crate::lock::NativeParticipant>> {
        let broken = self
            .inner
            .break_lock(&path, &node, reason.as_deref())
            .await
            .map(crate::lock::NativeParticipant::from);
        Ok(Settled(broken))
    }

    /// A participant in the leader election on `path`: `style` is the core's
    /// [`zklock::ElectionStyle`] name (absent: the core's default, `latch`), `id` the
    /// participant id (absent: the client's identity), `maxHoldMs` the longest a leadership
    /// lasts ([`zklock::Election::max_hold`]), `lockDelayMs` Chubby's lock-delay
    /// ([`zklock::Election::lock_delay`]).
    #[napi(catch_unwind)]
    pub fn election(
        &self,
        path: String,
        style: Option<String>,
        id: Option<String>,
        max_hold_ms: Option<f64>,
        lock_delay_ms: Option<f64>,
    ) -> napi::Result<NativeElection, Code> {
        let style = match style {
            Some(name) => name.parse::<zklock::ElectionStyle>().map_err(js_err)?,
            None => zklock::ElectionStyle::default(),
        };
        let election = self
            .inner
            .election(&path, style, id.as_deref())
            .map_err(js_err)?;
        let election = zklock::support::max_hold_from_millis(max_hold_ms)
            .and_then(|limit| election.max_hold(limit))
            .and_then(|e| {
                zklock::support::lock_delay_from_millis(lock_delay_ms)
                    .and_then(|delay| e.lock_delay(delay))
            })
            .map_err(js_err)?;
        Ok(NativeElection {
            inner: Arc::new(election),
        })
    }

    /// Watches who leads the election on `path` without taking part
    /// ([`zklock::Client::observe_leader`]).
    #[napi(catch_unwind)]
    pub fn observe_leader(&self, path: String) -> napi::Result<NativeLeaderWatch, Code> {
        let watch = self.inner.observe_leader(&path).map_err(js_err)?;
        let (stop, _) = tokio::sync::watch::channel(false);
        Ok(NativeLeaderWatch { watch, stop })
    }

    /// Whether `token` is a current holder's or the leader's on `path`
    /// ([`zklock::Client::check`], Chubby's `CheckSequencer`).
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn check<'env>(
        &self,
        env: &'env Env,
        path: String,
        token: BigInt,
        max_leases: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        let client = self.inner.clone();
        let token = token_of(&token);
        let max_leases = max_leases.map(|n| max_leases_of(&path, n)).transpose();
        settle_from_core(env, async move {
            client.check(&path, token?, max_leases?).await
        })
    }

    /// Both sides of a read/write lock on `path`: `[read, write]`, one owner (so that holding
    /// the read side and asking for the write side is the core's refused upgrade).
    #[napi(catch_unwind)]
    pub fn rw_lock(
        &self,
        path: String,
        max_hold_ms: Option<f64>,
    ) -> napi::Result<Vec<NativeLock>, Code> {
        let limit = zklock::support::max_hold_from_millis(max_hold_ms).map_err(js_err)?;
        let rw = self.inner.rw_lock(&path).and_then(|rw| rw.max_hold(limit));
        let rw = Arc::new(rw.map_err(js_err)?);
        let owner = new_owner();
        let side = |side| NativeLock {
            client: self.inner.clone(),
            target: Target::Rw(rw.clone(), side),
            path: path.clone(),
            owner,
            positions: QueuePositions::new(),
        };
        Ok(vec![side(Side::Read), side(Side::Write)])
    }

    /// Exclusive locks on several paths, taken as one; `max_hold_ms` ends the whole hold
    /// ([`zklock::MultiLock::max_hold`]), `hold_ceiling_ms` bounds its extensions.
    #[napi(catch_unwind)]
    pub fn multi_lock(
        &self,
        paths: Vec<String>,
        max_hold_ms: Option<f64>,
        hold_ceiling_ms: Option<f64>,
    ) -> napi::Result<NativeLock, Code> {
        let limit = zklock::support::max_hold_from_millis(max_hold_ms).map_err(js_err)?;
        let ceiling = hold_ceiling_ms
            .map(|ms| zklock::support::duration_from_millis_f64(ms, "holdCeilingMs"))
            .transpose()
            .map_err(js_err)?;
        let multi = self
            .inner
            .multi_lock(&paths)
            .and_then(|m| m.max_hold(limit))
            .and_then(|m| m.hold_ceiling(ceiling))
            .map_err(js_err)?;
        Ok(self.lock(Target::Multi(Arc::new(multi)), paths.join(",")))
    }

    /// The core's statistics as OpenMetrics text ([`zklock::Client::openmetrics`]), labelled
    /// `client="<id>"` and with `labels` (name, value pairs).
    #[napi(catch_unwind)]
    pub fn openmetrics(&self, labels: Option<Vec<Vec<String>>>) -> String {
        let labels = labels.unwrap_or_default();
        let pairs: Vec<(&str, &str)> = labels
            .iter()
            .filter_map(|kv| Some((kv.first()?.as_str(), kv.get(1)?.as_str())))
            .collect();
        self.inner.openmetrics(&pairs)
    }

    /// The core's per-path statistics ([`zklock::Client::path_stats`]; times in milliseconds).
    #[napi(catch_unwind)]
    pub fn path_stats(&self) -> NativePathStatsSnapshot {
        let s = self.inner.path_stats();
        let ms = |d: std::time::Duration| d.as_micros() as f64 / 1e3;
        let one = |p: &zklock::PathStats| NativePathStats {
            path: p.path.clone(),
            acquired: p.acquired as f64,
            timed_out: p.timed_out as f64,
            cancelled: p.cancelled as f64,
            failed: p.failed as f64,
            wait_sum: ms(p.wait_sum),
            lost: p
                .lost
                .iter()
                .map(|(r, n)| (r.as_str().to_owned(), *n as f64))
                .collect(),
            held: p.held as f64,
            oldest_hold: ms(p.oldest_hold),
        };
        NativePathStatsSnapshot {
            limit: s.limit as f64,
            folded: s.folded as f64,
            paths: s.paths.iter().map(one).collect(),
            overflow: s.overflow.as_ref().map(one),
        }
    }

    /// The core's statistics of this client ([`zklock::Stats`]; times in milliseconds).
    #[napi(catch_unwind)]
    pub fn stats(&self) -> NativeStats {
        let s = self.inner.stats();
        // Whole microseconds divided by 1000: the double nearest the decimal, which JS prints
        // as written (12.287); seconds times 1e3 printed float noise (12.286999999999999) and
        // nanoseconds no one measures to (issue 27, item 14). C gets the same microseconds.
        let ms = |d: std::time::Duration| d.as_micros() as f64 / 1e3;
        let times = |p: zklock::Percentiles| NativePercentiles {
            count: p.count as f64,
            p50: ms(p.p50),
            p90: ms(p.p90),
            p99: ms(p.p99),
            max: ms(p.max),
        };
        NativeStats {
            acquired: s.acquired as f64,
            timed_out: s.timed_out as f64,
            cancelled: s.cancelled as f64,
            failed: s.failed as f64,
            wait: times(s.wait),
            hold: times(s.hold),
            held: s.held as f64,
            waiting: s.waiting as f64,
            suspended: s.suspended as f64,
            lost: s.lost as f64,
            reconnects: s.reconnects as f64,
            session_expiries: s.session_expiries as f64,
        }
    }

    /// Closes the session: its leases become lost and later calls fail with `ZKLOCK_CLOSED`.
    #[napi]
    pub async fn close(&self) -> napi::Result<()> {
        self.inner.close().await;
        Ok(())
    }

    /// Closes the session, blocking the JS thread until ZooKeeper has been told. Only for
    /// index.js's `process.on('exit')` hook, where nothing asynchronous runs any more: a
    /// process that exits with a client open (`process.exit()`, an uncaught exception) frees
    /// its lock nodes at once instead of after the session timeout.
    #[napi(catch_unwind)]
    pub fn close_sync(&self) {
        self.inner.blocking_close();
    }

    /// The connection's state now (the core's [`zklock::ConnectionState`] name).
    #[napi(getter)]
    pub fn connection_state(&self) -> &'static str {
        self.inner.connection_state().as_str()
    }

    /// `callback(state)` on the JS thread with the current state, then at every change
    /// ([`zklock::Client::on_connection`]); does not keep the event loop alive. Returns the
    /// listener's id for `removeConnectionListener`.
    #[napi(catch_unwind)]
    pub fn on_connection(&self, callback: StateCallback) -> f64 {
        let id = self.inner.on_connection(move |state| {
            callback.call(
                state.as_str().to_owned(),
                ThreadsafeFunctionCallMode::NonBlocking,
            );
        });
        id as f64
    }

    #[napi(catch_unwind)]
    pub fn remove_connection_listener(&self, id: f64) -> bool {
        self.inner.remove_connection_listener(id as u64)
    }

    /// Ties the session to the JS environment (main thread or worker thread) it was made in:
    /// when that environment goes away, the session is closed if still open. index.js calls
    /// this once per client, right after connecting.
    #[napi(catch_unwind)]
    pub fn close_with_environment(&self, env: &Env) -> napi::Result<()> {
        close_with_environment(env, &self.inner)
    }
}

/// A JS number as a semaphore's N for the core: one no `u32` holds (negative, fractional,
/// NaN, beyond) cannot reach the core's check, so it gets the same kind of error here.
fn max_leases_of(path: &str, n: f64) -> Result<u32, zklock::Error> {
    if n.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&n) {
        return Ok(n as u32);
    }
    Err(zklock::invalid_max_leases(path, n))
}

/// `lock` with the maximum hold `max_hold_ms` ([`zklock::Lock::max_hold`]; absent: none).
fn with_max_hold(lock: zklock::Lock, max_hold_ms: Option<f64>) -> zklock::Result<zklock::Lock> {
    lock.max_hold(zklock::support::max_hold_from_millis(max_hold_ms)?)
}

/// A JS bigint as a fencing token (ZooKeeper's czxid, an `i64`).
fn token_of(token: &BigInt) -> zklock::Result<i64> {
    let (value, lossless) = token.get_i64();
    if !lossless {
        return Err(zklock::Error::new(
            ErrorKind::InvalidArgument,
            "token is out of the range of a fencing token (a signed 64-bit integer)",
        ));
    }
    Ok(value)
}

impl NativeClient {
    fn lock(&self, target: Target, path: String) -> NativeLock {
        NativeLock {
            client: self.inner.clone(),
            target,
            path,
            owner: new_owner(),
            positions: QueuePositions::new(),
        }
    }
}
