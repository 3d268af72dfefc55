//! zklock's Node face: the native half of the npm package `zklock`.
//!
//! This addon only translates: `index.js` wraps its small `Native*` classes into the public API
//! (`Client`, `Mutex`, `Lease`, AbortSignal wiring, `await using`, events). Everything a lock
//! decides is the core's: re-entrancy is keyed by the owner id of each lock object
//! ([`zklock::Owner`]), a `timeoutMs` becomes a [`zklock::Wait`] by the core's one rule, an
//! acquire runs as a core [`zklock::Acquire`] (cancelled by an AbortSignal), a lease's states
//! come from [`zklock::Lease::subscribe`], and every name shown (states, release outcomes, node
//! kinds, libraries, ACL policies) is the core's `as_str` / `FromStr`. Nothing waits on the JS
//! thread or the libuv pool: promises are settled from the core's runtime.
//!
//! Errors reach JS as `Error` objects whose `code` is one of the `ZKLOCK_*` values (one table,
//! [`code_of`]): sync functions return `napi::Error<Code>`, async ones resolve into [`Settled`],
//! whose conversion (on the JS thread) builds the JS error and rejects the promise with it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;

use napi::bindgen_prelude::{BigInt, Object, ToNapiValue};
use napi::sys;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status, Unknown};
use napi_derive::napi;
use zklock::{AclPolicy, Acquire, ErrorKind, Owner, Wait};

mod keepalive;

// ---------------------------------------------------------------------------------------------
// Errors

/// The `err.code` of a zklock error (docs/contract.md's error table).
pub fn code_of(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Timeout => "ZKLOCK_TIMEOUT",
        ErrorKind::Cancelled => "ZKLOCK_ABORTED",
        ErrorKind::LockLost => "ZKLOCK_LOST",
        ErrorKind::SessionExpired => "ZKLOCK_SESSION_EXPIRED",
        ErrorKind::Connection => "ZKLOCK_CONNECTION",
        ErrorKind::NotHeld => "ZKLOCK_NOT_HELD",
        ErrorKind::UpgradeNotAllowed => "ZKLOCK_UPGRADE",
        ErrorKind::InvalidArgument => "ZKLOCK_INVALID_ARGUMENT",
        ErrorKind::Closed => "ZKLOCK_CLOSED",
        ErrorKind::Permission => "ZKLOCK_PERMISSION",
        ErrorKind::ZooKeeper => "ZKLOCK_ZOOKEEPER",
        ErrorKind::Internal => "ZKLOCK_INTERNAL",
        ErrorKind::OutcomeUnknown => "ZKLOCK_OUTCOME_UNKNOWN",
        ErrorKind::Conflict => "ZKLOCK_CONFLICT",
    }
}

/// A status that is one of our codes (napi sets it as the JS error's `code`).
pub struct Code(&'static str);

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        self.0
    }
}

/// A failure of napi itself (making a promise) as our `ZKLOCK_INTERNAL`.
fn internal(e: napi::Error) -> napi::Error<Code> {
    napi::Error::new(Code("ZKLOCK_INTERNAL"), e.reason.clone())
}

fn js_err(e: zklock::Error) -> napi::Error<Code> {
    let e = node_spelling(e);
    napi::Error::new(Code(code_of(e.kind())), e.message().to_owned())
}

/// The core names options as Rust, Python and C spell them (`tls_ca`); a Node user wrote
/// `tlsCa`, so its errors say that (issue 27, item 14). The core decides which words are
/// option names ([`zklock::OPTION_NAMES`]); this only camel-cases them.
fn node_spelling(e: zklock::Error) -> zklock::Error {
    e.respell_options(|name| {
        // Node takes the maximum hold in milliseconds, as `maxHoldMs`.
        if name == "max_hold" {
            return "maxHoldMs".to_owned();
        }
        let mut out = String::with_capacity(name.len());
        let mut upper = false;
        for c in name.chars() {
            if c == '_' {
                upper = true;
            } else if upper {
                out.push(c.to_ascii_uppercase());
                upper = false;
            } else {
                out.push(c);
            }
        }
        out
    })
}

/// The outcome of an async call. Its conversion to JS runs on the JS thread: a success becomes
/// the value, a failure a JS `Error` with our `code`, with which napi rejects the promise.
pub struct Settled<T>(Result<T, zklock::Error>);

impl<T> From<Result<T, zklock::Error>> for Settled<T> {
    fn from(r: Result<T, zklock::Error>) -> Self {
        Settled(r)
    }
}

impl<T: ToNapiValue> ToNapiValue for Settled<T> {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        match val.0 {
            Ok(v) => unsafe { T::to_napi_value(env, v) },
            Err(e) => Err(unsafe { make_js_error(env, &e) }),
        }
    }
}

/// Builds `new Error(message)` with `code` set, as a napi error that carries that very object.
unsafe fn make_js_error(env: sys::napi_env, e: &zklock::Error) -> napi::Error {
    let e = node_spelling(e.clone());
    let code = code_of(e.kind());
    let msg = e.message();
    let mut js_code = std::ptr::null_mut();
    let mut js_msg = std::ptr::null_mut();
    let mut js_error = std::ptr::null_mut();
    let ok = unsafe {
        sys::napi_create_string_utf8(env, code.as_ptr().cast(), code.len() as isize, &mut js_code)
            == sys::Status::napi_ok
            && sys::napi_create_string_utf8(
                env,
                msg.as_ptr().cast(),
                msg.len() as isize,
                &mut js_msg,
            ) == sys::Status::napi_ok
            && sys::napi_create_error(env, js_code, js_msg, &mut js_error) == sys::Status::napi_ok
    };
    if !ok {
        return napi::Error::new(Status::GenericFailure, format!("{code}: {msg}"));
    }
    napi::Error::from(unsafe { Unknown::from_raw_unchecked(env, js_error) })
}

// ---------------------------------------------------------------------------------------------
// Client

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

/// One record of the core's log ([`zklock::support::LogRecord`]).
#[napi(object)]
pub struct NativeLogRecord {
    pub level: String,
    pub event: String,
    pub message: String,
    pub fields: std::collections::HashMap<String, String>,
}

type LogCallback = ThreadsafeFunction<NativeLogRecord, (), NativeLogRecord, Status, false, true>;

/// Sets this environment's end of the core's log: `callback(record)` on the JS thread for every
/// record up to `level` (`debug`, `info`, `warn`, `error`; the core's names) about a client
/// made in this environment; index.js publishes them on the environment's `zklock` diagnostics
/// channel. Replaces what the environment set before. The callback does not keep the event
/// loop alive.
#[napi(catch_unwind)]
pub fn set_log_sink(env: Env, callback: LogCallback, level: String) -> napi::Result<(), Code> {
    let level = level.parse::<zklock::support::LogLevel>().map_err(js_err)?;
    let registry =
        env_registry(&env).map_err(|e| napi::Error::new(Code("ZKLOCK_INTERNAL"), e.reason))?;
    registry.log.set(Some(callback), level as u8);
    install_log_router();
    Ok(())
}

/// One guarded write from JS: `op` is the core's name (`create`, `set_data`, `delete`).
#[napi(object)]
pub struct NativeWrite {
    pub op: String,
    pub path: String,
    pub data: Option<napi::bindgen_prelude::Buffer>,
}

/// What one guarded write did: `op`, and the created `path` or the new data `version`.
#[napi(object)]
pub struct NativeWritten {
    pub op: String,
    pub path: Option<String>,
    pub version: Option<i32>,
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

/// Owner ids for the lock objects: one per `client.mutex()` / `client.rwLock()` /
/// `client.multiLock()` object, never 0 (the core's `Owner::SHARED`).
static NEXT_OWNER: AtomicU64 = AtomicU64::new(1);

fn new_owner() -> Owner {
    Owner(NEXT_OWNER.fetch_add(1, Ordering::Relaxed))
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

    /// An exclusive lock on `path` (re-entrant for this object unless `reentrant` is false).
    #[napi(catch_unwind)]
    pub fn mutex(
        &self,
        path: String,
        reentrant: bool,
        max_hold_ms: Option<f64>,
    ) -> napi::Result<NativeLock, Code> {
        let lock = self
            .inner
            .mutex(&path)
            .map_err(js_err)?
            .reentrant(reentrant);
        let lock = with_max_hold(lock, max_hold_ms).map_err(js_err)?;
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
    ) -> napi::Result<NativeLock, Code> {
        let n = max_leases_of(&path, max_leases).map_err(js_err)?;
        let lock = self.inner.semaphore(&path, n).map_err(js_err)?;
        let lock = with_max_hold(lock, max_hold_ms).map_err(js_err)?;
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

    /// A participant in the leader election on `path`: `style` is the core's
    /// [`zklock::ElectionStyle`] name (absent: the core's default, `latch`), `id` the
    /// participant id (absent: the client's identity), `maxHoldMs` the longest a leadership
    /// lasts ([`zklock::Election::max_hold`]).
    #[napi(catch_unwind)]
    pub fn election(
        &self,
        path: String,
        style: Option<String>,
        id: Option<String>,
        max_hold_ms: Option<f64>,
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
    pub fn rw_lock(&self, path: String) -> napi::Result<Vec<NativeLock>, Code> {
        let rw = Arc::new(self.inner.rw_lock(&path).map_err(js_err)?);
        let owner = new_owner();
        let side = |side| NativeLock {
            client: self.inner.clone(),
            target: Target::Rw(rw.clone(), side),
            path: path.clone(),
            owner,
        };
        Ok(vec![side(Side::Read), side(Side::Write)])
    }

    /// Exclusive locks on several paths, taken as one.
    #[napi(catch_unwind)]
    pub fn multi_lock(&self, paths: Vec<String>) -> napi::Result<NativeLock, Code> {
        let multi = self.inner.multi_lock(&paths).map_err(js_err)?;
        Ok(self.lock(Target::Multi(Arc::new(multi)), paths.join(",")))
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

// ---------------------------------------------------------------------------------------------
// Closing with the environment
//
// A session ends when its last handle is dropped, which is usually what happens when its
// environment ends and Node finalizes the environment's objects. Not always: a lease whose
// states are watched (a listener, a read `lease.signal`) is kept by the core's watch task until
// a final state, and that lease keeps its session, so a worker terminated while holding it left
// the lock and the session alive for good (issue 27). index.js's `process.on('exit')` does not
// cover it either: a worker's 'exit' event is not emitted on `terminate()`, nor when the process
// ends while the worker runs. So each environment keeps its clients, and one cleanup hook per
// environment (Node runs them on the environment's own thread as it tears it down, also for a
// worker stopped by `process.exit()` in the main thread) closes the ones still open. Closing
// makes every lease lost, which ends the watch tasks and lets their threadsafe functions go.

/// The clients made in one environment, for its cleanup hook, and its end of the log.
struct EnvClients {
    env: sys::napi_env,
    clients: std::cell::RefCell<Vec<zklock::Client>>,
    log: Arc<EnvLog>,
}

thread_local! {
    /// The registries of the environments living on this thread (one for the main thread or a
    /// worker thread; an embedder may run more), each until its cleanup hook runs.
    static ENV_CLIENTS: std::cell::RefCell<Vec<std::rc::Rc<EnvClients>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// This environment's registry, made (with its cleanup hook) on first use.
fn env_registry(env: &Env) -> napi::Result<std::rc::Rc<EnvClients>> {
    ENV_CLIENTS.with(|all| -> napi::Result<_> {
        let mut all = all.borrow_mut();
        if let Some(r) = all.iter().find(|r| r.env == env.raw()) {
            return Ok(r.clone());
        }
        let r = std::rc::Rc::new(EnvClients {
            env: env.raw(),
            clients: std::cell::RefCell::new(Vec::new()),
            log: Arc::new(EnvLog::default()),
        });
        env.add_env_cleanup_hook(r.clone(), close_env_clients)?;
        log_router().envs.push(Arc::downgrade(&r.log));
        all.push(r.clone());
        Ok(r)
    })
}

fn close_with_environment(env: &Env, client: &zklock::Client) -> napi::Result<()> {
    let registry = env_registry(env)?;
    let mut clients = registry.clients.borrow_mut();
    // Closed clients are dropped here, so that a program that connects and closes clients
    // again and again does not grow the list (nor the log's table of owners).
    let mut closed = Vec::new();
    clients.retain(|c| {
        let open = !c.is_closed();
        if !open {
            closed.push(c.id());
        }
        open
    });
    log_forget(closed);
    clients.push(client.clone());
    log_claim(client.id(), registry.log.clone());
    Ok(())
}

/// The environment ends: closes its open clients, all at once (each waits for ZooKeeper to be
/// told, up to half a second when it cannot be reached), before the thread goes on tearing down.
fn close_env_clients(registry: std::rc::Rc<EnvClients>) {
    let _ = ENV_CLIENTS.try_with(|all| {
        all.borrow_mut()
            .retain(|r| !std::rc::Rc::ptr_eq(r, &registry))
    });
    // Nobody is left to read this environment's records; the others' level may be lower.
    registry.log.set(None, 0);
    install_log_router();
    let clients = registry.clients.take();
    let ids = clients.iter().map(zklock::Client::id).collect();
    let open: Vec<zklock::Client> = clients.into_iter().filter(|c| !c.is_closed()).collect();
    if !open.is_empty() {
        // No panic may cross into Node (this runs from a C callback): the sessions then end
        // with their timeout, as before.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            zklock::support::block_on(async move {
                let closing: Vec<_> = open
                    .into_iter()
                    .map(|c| zklock::support::spawn(async move { c.close().await }))
                    .collect();
                for c in closing {
                    let _ = c.await;
                }
                Ok(())
            })
        }));
    }
    // After the closing, so that the records it emitted are not left waiting for an owner.
    log_forget(ids);
}

// ---------------------------------------------------------------------------------------------
// Logs by environment
//
// The core has one log sink per process, and a worker thread that connected used to take it
// from the main thread (issue 27): the main thread's subscribers heard nothing more, and the
// worker's heard the main thread's records. Each record names its client
// ([`zklock::support::LogRecord`]'s `client`, [`zklock::Client::id`]), so the addon installs one
// router as the core's sink and every environment keeps its own callback and level: a record
// goes to the environment its client was made in, and nowhere else.
//
// A client is claimed by its environment once `connect` has resolved, but it has told of its
// session while connecting. The router runs on the core's callback thread, where records arrive
// in the order they were emitted, and the claim is queued there too, behind every record the
// connect emitted: records of a client nobody has claimed yet wait (a bounded number of them),
// and its claim hands them on, in order, before any later one.

/// One environment's end of the log.
#[derive(Default)]
struct EnvLog {
    /// The JS callback that publishes on the environment's channel; `None` once it ended.
    callback: Mutex<Option<LogCallback>>,
    /// The most verbose level it takes ([`zklock::support::LogLevel`] as `u8`; 0: none).
    level: std::sync::atomic::AtomicU8,
}

impl EnvLog {
    fn set(&self, callback: Option<LogCallback>, level: u8) {
        *self.callback.lock().unwrap_or_else(|e| e.into_inner()) = callback;
        self.level.store(level, Ordering::Release);
    }

    fn level(&self) -> u8 {
        self.level.load(Ordering::Acquire)
    }

    /// Hands `r` to the JS thread when the environment takes records of its level.
    fn publish(&self, r: &zklock::support::LogRecord) {
        if r.level as u8 > self.level() {
            return;
        }
        if let Some(callback) = self
            .callback
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            let record = NativeLogRecord {
                level: r.level.as_str().to_owned(),
                event: r.event.to_owned(),
                message: r.message.clone(),
                fields: r
                    .fields
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), v.clone()))
                    .collect(),
            };
            callback.call(record, ThreadsafeFunctionCallMode::NonBlocking);
        }
    }
}

/// Records of clients not claimed yet are kept up to this many (the oldest go first): enough
/// for the few each connect emits, bounded for clients that are never claimed (a connect whose
/// environment ended before it resolved).
const UNCLAIMED_MAX: usize = 256;

struct LogRouter {
    /// Which environment each client's records go to, by client id.
    owners: std::collections::BTreeMap<u64, Arc<EnvLog>>,
    /// Records of clients that no environment has claimed yet, oldest first.
    unclaimed: std::collections::VecDeque<zklock::support::LogRecord>,
    /// Every environment that set a sink, for the level the core is asked for.
    envs: Vec<std::sync::Weak<EnvLog>>,
}

static LOG_ROUTER: Mutex<LogRouter> = Mutex::new(LogRouter {
    owners: std::collections::BTreeMap::new(),
    unclaimed: std::collections::VecDeque::new(),
    envs: Vec::new(),
});

fn log_router() -> std::sync::MutexGuard<'static, LogRouter> {
    LOG_ROUTER.lock().unwrap_or_else(|e| e.into_inner())
}

/// (Re)installs the router as the core's sink, at the most verbose level any environment takes
/// (none: no sink, so the core formats nothing).
fn install_log_router() {
    let max = {
        let mut router = log_router();
        router.envs.retain(|e| e.strong_count() > 0);
        router
            .envs
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .map(|e| e.level())
            .max()
            .unwrap_or(0)
    };
    use zklock::support::LogLevel;
    let level = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Warn,
        LogLevel::Error,
    ]
    .into_iter()
    .find(|l| *l as u8 == max);
    zklock::support::set_log_sink(level.map(|level| {
        let route: Arc<dyn Fn(&zklock::support::LogRecord) + Send + Sync> = Arc::new(log_route);
        (level, route)
    }));
}

/// The core's sink (on its callback thread): the record to its client's environment, or kept
/// until the client is claimed.
fn log_route(r: &zklock::support::LogRecord) {
    let mut router = log_router();
    match router.owners.get(&r.client).cloned() {
        Some(owner) => {
            drop(router);
            owner.publish(r);
        }
        None => {
            if router.unclaimed.len() == UNCLAIMED_MAX {
                router.unclaimed.pop_front();
            }
            router.unclaimed.push_back(r.clone());
        }
    }
}

/// `client`'s records go to `log` from now on, the ones it emitted while connecting first.
fn log_claim(client: u64, log: Arc<EnvLog>) {
    // Queued on the callback thread, behind the records the connect emitted (see above).
    zklock::support::run_callback(move || {
        let mut router = log_router();
        router.owners.insert(client, log.clone());
        let (mine, rest) = std::mem::take(&mut router.unclaimed)
            .into_iter()
            .partition::<Vec<_>, _>(|r| r.client == client);
        router.unclaimed = rest.into();
        drop(router);
        for r in &mine {
            log.publish(r);
        }
    });
}

/// Closed clients, or those of an environment that ended: their entries go, after the records
/// they emitted until now (a closed session's last one included) were handed on.
fn log_forget(clients: Vec<u64>) {
    if clients.is_empty() {
        return;
    }
    zklock::support::run_callback(move || {
        let mut router = log_router();
        for c in &clients {
            router.owners.remove(c);
        }
        router.unclaimed.retain(|r| !clients.contains(&r.client));
    });
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

/// An [`std::time::Instant`] on `Date.now()`'s clock: milliseconds since the Unix epoch.
fn epoch_ms_of(instant: std::time::Instant) -> f64 {
    let now = std::time::Instant::now();
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3);
    if instant >= now {
        wall + (instant - now).as_secs_f64() * 1e3
    } else {
        wall - (now - instant).as_secs_f64() * 1e3
    }
}

impl NativeClient {
    fn lock(&self, target: Target, path: String) -> NativeLock {
        NativeLock {
            client: self.inner.clone(),
            target,
            path,
            owner: new_owner(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Locks

#[derive(Clone, Copy)]
enum Side {
    Read,
    Write,
}

enum Target {
    Lock(Arc<zklock::Lock>),
    Rw(Arc<zklock::RwLock>, Side),
    Multi(Arc<zklock::MultiLock>),
}

impl Target {
    fn lock(&self) -> Option<&zklock::Lock> {
        match self {
            Target::Lock(l) => Some(l),
            Target::Rw(rw, Side::Read) => Some(rw.read()),
            Target::Rw(rw, Side::Write) => Some(rw.write()),
            Target::Multi(_) => None,
        }
    }
}

/// A mutex, one side of a read/write lock, or a multi-lock, with its owner id.
#[napi]
pub struct NativeLock {
    client: zklock::Client,
    target: Target,
    path: String,
    owner: Owner,
}

/// One contender in a lock's queue.
#[napi(object)]
pub struct NativeParticipant {
    pub node: String,
    pub identity: String,
    pub token: BigInt,
    pub library: String,
    pub kind: String,
    pub session_id: BigInt,
    /// A semaphore's N on its lease participants, when known.
    pub max_leases: Option<u32>,
}

#[napi]
impl NativeLock {
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.path.clone()
    }

    /// How many holds this object's owner has (0 when not held); always 0 for a multi-lock.
    #[napi(getter)]
    pub fn hold_count(&self) -> u32 {
        let count = self
            .target
            .lock()
            .map_or(0, |l| l.hold_count_as(self.owner));
        u32::try_from(count).unwrap_or(u32::MAX)
    }

    /// The lease of a re-entrant hold, taken here and now when this object's owner already
    /// holds the lock ([`zklock::Lock::reenter_as`]: no I/O, so no trip to the core's runtime
    /// and back to the JS thread); `null` when it does not (then `start_acquire`). `timeoutMs`
    /// is judged first, as `start_acquire` would.
    #[napi(catch_unwind)]
    pub fn try_reenter(
        &self,
        timeout_ms: Option<f64>,
        deadline_ms: Option<f64>,
    ) -> napi::Result<Option<NativeLease>, Code> {
        Wait::from_millis_or_deadline(timeout_ms, deadline_ms).map_err(js_err)?;
        Ok(self
            .target
            .lock()
            .and_then(|l| l.reenter_as(self.owner))
            .map(NativeLease::new))
    }

    /// Starts an acquire on the core's runtime (`timeoutMs` by the core's rule: absent, -1 or
    /// Infinity wait forever, 0 is one attempt; or a `deadline` in milliseconds since the epoch,
    /// one attempt once it passed). Awaited with `wait()`, aborted with `cancel()`.
    #[napi(catch_unwind)]
    pub fn start_acquire(
        &self,
        timeout_ms: Option<f64>,
        deadline_ms: Option<f64>,
    ) -> napi::Result<NativeAcquire, Code> {
        let wait = Wait::from_millis_or_deadline(timeout_ms, deadline_ms).map_err(js_err)?;
        let acquire = match (&self.target, self.target.lock()) {
            (Target::Multi(m), _) => m.start_acquire(self.owner, wait),
            (_, Some(l)) => l.start_acquire(self.owner, wait),
            (_, None) => return Err(js_err(zklock::Error::new(ErrorKind::Internal, "no lock"))),
        };
        Ok(NativeAcquire {
            acquire: Arc::new(Mutex::new(Some(acquire))),
        })
    }

    /// The queue: holder first, then waiters in order (for a multi-lock, each path's in turn).
    /// `timeoutMs` (by the acquire's rule) rejects with `ZKLOCK_TIMEOUT` when listing takes longer.
    #[napi]
    pub async fn participants(
        &self,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Settled<Vec<NativeParticipant>>> {
        let result = async {
            let timeout = Wait::from_millis(timeout_ms)?.time_left();
            let participants = match &self.target {
                Target::Multi(m) => {
                    // One deadline for all the member paths.
                    let deadline = timeout.map(|t| std::time::Instant::now() + t);
                    let mut all = Vec::new();
                    for p in m.paths() {
                        let left = deadline
                            .map(|d| d.saturating_duration_since(std::time::Instant::now()));
                        all.extend(self.client.mutex(p)?.participants_timeout(left).await?);
                    }
                    all
                }
                Target::Rw(rw, _) => rw.participants_timeout(timeout).await?,
                Target::Lock(l) => l.participants_timeout(timeout).await?,
            };
            Ok(participants
                .into_iter()
                .map(|p| NativeParticipant {
                    node: p.node,
                    identity: p.identity,
                    token: BigInt::from(p.token),
                    library: p.library.as_str().to_owned(),
                    kind: p.kind.as_str().to_owned(),
                    session_id: BigInt::from(p.session_id),
                    max_leases: p.max_leases,
                })
                .collect())
        }
        .await;
        Ok(Settled(result))
    }
}

/// A promise settled from the core's runtime thread: `fut` runs there and its outcome goes
/// straight to the JS thread (no hop through napi's own runtime), through this environment's
/// one settle queue ([`settle_queue`]).
fn settle_from_core<'env, T: ToNapiValue + Send + 'static>(
    env: &'env Env,
    fut: impl Future<Output = zklock::Result<T>> + Send + 'static,
) -> napi::Result<Object<'env>> {
    let (settle, promise) = Settle::new(env)?;
    zklock::support::spawn(async move {
        let result = fut.await;
        settle.send(Box::new(move |env| unsafe {
            Settled::<T>::to_napi_value(env, Settled(result))
        }));
    });
    Ok(promise)
}

// ---------------------------------------------------------------------------------------------
// The settle queue
//
// napi-rs makes a threadsafe function for every promise it settles from another thread (its
// create, cleanup hook, uv_close and finalize were about 5-8 % of a Node worker's CPU in bench
// s1 and s4, issue 17). Every promise of this addon is settled through one threadsafe function
// per JS environment instead (the main thread and each worker thread have their own). It does
// not keep the event loop alive by itself, only while a promise made here is pending or a lease
// made here is held (keepalive.rs); when its environment ends, Node finalizes it and later
// outcomes are dropped (nobody can see them).

/// What the JS thread runs to make a promise's outcome: its value, or the error to reject with.
type SettleFn = Box<dyn FnOnce(sys::napi_env) -> napi::Result<sys::napi_value> + Send>;

/// The threadsafe function of one environment; `None` once Node finalized it.
struct QueueShared {
    tsfn: std::sync::RwLock<Option<RawTsfn>>,
}

#[derive(Clone, Copy)]
struct RawTsfn(sys::napi_threadsafe_function);

// A threadsafe function is made to be called from any thread (napi's own contract).
unsafe impl Send for RawTsfn {}
unsafe impl Sync for RawTsfn {}

/// The JS thread's side of its environment's queue: how many promises are pending and how
/// many leases keep the process alive; the queue is referenced while either is not zero.
struct QueueLocal {
    env: sys::napi_env,
    shared: Arc<QueueShared>,
    pending: std::cell::Cell<usize>,
    holds: std::cell::Cell<usize>,
}

impl QueueLocal {
    /// Whether something keeps the event loop alive through this queue.
    fn busy(&self) -> bool {
        self.pending.get() + self.holds.get() > 0
    }

    /// After a count went up from nothing: the queue keeps the loop alive again (JS thread).
    fn wake(&self) {
        if let Some(t) = *self.shared.tsfn.read().unwrap_or_else(|e| e.into_inner()) {
            unsafe { sys::napi_ref_threadsafe_function(self.env, t.0) };
        }
    }

    /// After a count went down: an idle queue lets the process end (JS thread).
    fn rest_if_idle(&self) {
        if !self.busy() {
            if let Some(t) = *self.shared.tsfn.read().unwrap_or_else(|e| e.into_inner()) {
                unsafe { sys::napi_unref_threadsafe_function(self.env, t.0) };
            }
        }
    }
}

thread_local! {
    static QUEUE: std::cell::RefCell<Option<std::rc::Rc<QueueLocal>>> =
        const { std::cell::RefCell::new(None) };
}

/// This environment's queue, made on first use (on the JS thread).
fn settle_queue(env: sys::napi_env) -> napi::Result<std::rc::Rc<QueueLocal>> {
    if let Some(q) = QUEUE.with(|q| q.borrow().clone()) {
        if q.env == env {
            return Ok(q);
        }
    }
    let shared = Arc::new(QueueShared {
        tsfn: std::sync::RwLock::new(None),
    });
    let mut name = std::ptr::null_mut();
    let mut tsfn = std::ptr::null_mut();
    let label = "zklock_settle";
    let finalize_data = Arc::into_raw(shared.clone()) as *mut std::ffi::c_void;
    let status = unsafe {
        let s = sys::napi_create_string_utf8(
            env,
            label.as_ptr().cast(),
            label.len() as isize,
            &mut name,
        );
        if s != sys::Status::napi_ok {
            s
        } else {
            sys::napi_create_threadsafe_function(
                env,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                name,
                0,
                1,
                finalize_data,
                Some(queue_finalized),
                std::ptr::null_mut(),
                Some(queue_settle),
                &mut tsfn,
            )
        }
    };
    if status != sys::Status::napi_ok {
        drop(unsafe { Arc::from_raw(finalize_data as *const QueueShared) });
        return Err(napi::Error::new(
            Status::GenericFailure,
            format!("cannot make the settle queue (napi status {status})"),
        ));
    }
    // Idle, it must not keep the process alive: referenced only while promises are pending.
    unsafe { sys::napi_unref_threadsafe_function(env, tsfn) };
    *shared.tsfn.write().unwrap_or_else(|e| e.into_inner()) = Some(RawTsfn(tsfn));
    let local = std::rc::Rc::new(QueueLocal {
        env,
        shared,
        pending: std::cell::Cell::new(0),
        holds: std::cell::Cell::new(0),
    });
    QUEUE.with(|q| *q.borrow_mut() = Some(local.clone()));
    Ok(local)
}

/// Node let go of the queue (its environment ends): later outcomes are dropped.
unsafe extern "C" fn queue_finalized(
    env: sys::napi_env,
    data: *mut std::ffi::c_void,
    _hint: *mut std::ffi::c_void,
) {
    let shared = unsafe { Arc::from_raw(data as *const QueueShared) };
    *shared.tsfn.write().unwrap_or_else(|e| e.into_inner()) = None;
    let _ = QUEUE.try_with(|q| {
        let mut q = q.borrow_mut();
        if q.as_ref().is_some_and(|l| l.env == env) {
            *q = None;
        }
    });
}

/// One promise's outcome, on the JS thread (`env` null: the environment ends, drop it).
unsafe extern "C" fn queue_settle(
    env: sys::napi_env,
    _js_callback: sys::napi_value,
    _context: *mut std::ffi::c_void,
    data: *mut std::ffi::c_void,
) {
    if data.is_null() {
        return;
    }
    let item = unsafe { Box::from_raw(data as *mut QueueItem) };
    if env.is_null() {
        return;
    }
    let SettleItem { deferred, make } = match *item {
        QueueItem::Settle(item) => item,
        QueueItem::Run(run) => {
            // No panic may cross into Node; a JS-thread chore has nobody to report one to.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(env)));
            return;
        }
    };
    if let Ok(Some(q)) = QUEUE.try_with(|q| q.borrow().clone()) {
        q.pending.set(q.pending.get().saturating_sub(1));
        q.rest_if_idle();
    }
    // No panic may cross into Node: one becomes the promise's ZKLOCK_INTERNAL rejection.
    let made =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| make(env))).unwrap_or_else(|_| {
            Err(unsafe {
                make_js_error(
                    env,
                    &zklock::Error::new(ErrorKind::Internal, "a promise's outcome panicked"),
                )
            })
        });
    unsafe {
        match made {
            Ok(value) => sys::napi_resolve_deferred(env, deferred.0, value),
            Err(e) => {
                sys::napi_reject_deferred(env, deferred.0, napi::JsError::from(e).into_value(env))
            }
        };
    }
}

#[derive(Clone, Copy)]
struct RawDeferred(sys::napi_deferred);

// Only ever used on the JS thread (in `queue_settle`); carried there through the queue.
unsafe impl Send for RawDeferred {}

struct SettleItem {
    deferred: RawDeferred,
    make: SettleFn,
}

/// What goes through the queue: a promise's outcome, or a chore for the JS thread (a lease's
/// end letting the process go, keepalive.rs).
enum QueueItem {
    Settle(SettleItem),
    Run(Box<dyn FnOnce(sys::napi_env) + Send>),
}

/// Hands `item` to the JS thread of `shared`'s environment (from any thread); dropped when
/// that environment ended.
fn post_to_queue(shared: &QueueShared, item: QueueItem) {
    let tsfn = shared.tsfn.read().unwrap_or_else(|e| e.into_inner());
    let Some(t) = *tsfn else {
        return; // The environment ended: nobody waits for this any more.
    };
    let data = Box::into_raw(Box::new(item));
    let status = unsafe {
        sys::napi_call_threadsafe_function(
            t.0,
            data.cast(),
            sys::ThreadsafeFunctionCallMode::nonblocking,
        )
    };
    if status != sys::Status::napi_ok {
        // Closing: the environment ends. Take the item back and drop it.
        drop(unsafe { Box::from_raw(data) });
    }
}

/// A pending promise of the queue: settled once by `send`, or (dropped unsent) rejected.
struct Settle {
    shared: Arc<QueueShared>,
    deferred: Option<RawDeferred>,
}

impl Settle {
    fn new(env: &Env) -> napi::Result<(Settle, Object<'_>)> {
        let queue = settle_queue(env.raw())?;
        let mut deferred = std::ptr::null_mut();
        let mut promise = std::ptr::null_mut();
        let status = unsafe { sys::napi_create_promise(env.raw(), &mut deferred, &mut promise) };
        if status != sys::Status::napi_ok {
            return Err(napi::Error::new(
                Status::GenericFailure,
                format!("cannot make a promise (napi status {status})"),
            ));
        }
        if !queue.busy() {
            queue.wake();
        }
        queue.pending.set(queue.pending.get() + 1);
        let settle = Settle {
            shared: queue.shared.clone(),
            deferred: Some(RawDeferred(deferred)),
        };
        Ok((settle, Object::from_raw(env.raw(), promise)))
    }

    /// Hands the outcome to the JS thread (from any thread).
    fn send(mut self, make: SettleFn) {
        if let Some(deferred) = self.deferred.take() {
            self.post(SettleItem { deferred, make });
        }
    }

    fn post(&self, item: SettleItem) {
        post_to_queue(&self.shared, QueueItem::Settle(item));
    }
}

impl Drop for Settle {
    fn drop(&mut self) {
        // A task dropped before its outcome (the runtime going away): reject rather than leave
        // the promise, and the event loop it keeps alive, pending forever.
        if let Some(deferred) = self.deferred.take() {
            self.post(SettleItem {
                deferred,
                make: Box::new(|env| {
                    Err(unsafe {
                        make_js_error(
                            env,
                            &zklock::Error::new(ErrorKind::Internal, "the operation was dropped"),
                        )
                    })
                }),
            });
        }
    }
}

/// A core acquire ([`zklock::Acquire`]) seen from JS: `wait()` once, `cancel()` any time.
#[napi]
pub struct NativeAcquire {
    /// Shared with the `wait()` promise, which polls it, so that `cancel()` still reaches it.
    acquire: Arc<Mutex<Option<Acquire>>>,
}

#[napi]
impl NativeAcquire {
    /// Resolves with the lease, or rejects (`ZKLOCK_TIMEOUT`, `ZKLOCK_ABORTED`, ...).
    #[napi(ts_return_type = "Promise<NativeLease>")]
    pub fn wait<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let acquire = self.acquire.clone();
        settle_from_core(env, async move {
            std::future::poll_fn(|cx| {
                let mut slot = acquire.lock().unwrap_or_else(|e| e.into_inner());
                let Some(a) = slot.as_mut() else {
                    return Poll::Ready(Err(zklock::Error::new(
                        ErrorKind::Internal,
                        "wait() was called twice for one acquire",
                    )));
                };
                let done = Pin::new(a).poll(cx);
                if done.is_ready() {
                    *slot = None;
                }
                done
            })
            .await
            .map(NativeLease::new)
        })
    }

    /// Aborts the acquire: its waiting node is removed and `wait()` rejects with
    /// `ZKLOCK_ABORTED` (unless the lock was already acquired).
    #[napi]
    pub fn cancel(&self) {
        if let Some(a) = self
            .acquire
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            a.cancel();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Elections

/// One participant's side of an election ([`zklock::Election`]); a leadership is a
/// [`NativeLease`].
#[napi]
pub struct NativeElection {
    inner: Arc<zklock::Election>,
}

/// One participant of an election, or the leader an observer reports.
#[napi(object)]
pub struct NativeElectionParticipant {
    pub node: String,
    /// The participant id (the node's data).
    pub id: String,
    pub token: BigInt,
    pub library: String,
    pub kind: String,
    pub session_id: BigInt,
    /// The participant's family ([`zklock::Participant::election_style`]); `None` for a node
    /// of no election layout.
    pub style: Option<String>,
}

impl From<zklock::Participant> for NativeElectionParticipant {
    fn from(p: zklock::Participant) -> Self {
        NativeElectionParticipant {
            style: p.election_style().map(|s| s.as_str().to_owned()),
            node: p.node,
            id: p.identity,
            token: BigInt::from(p.token),
            library: p.library.as_str().to_owned(),
            kind: p.kind.as_str().to_owned(),
            session_id: BigInt::from(p.session_id),
        }
    }
}

/// A path shown in a message: at most 100 characters of it.
fn shown(path: &str) -> String {
    if path.chars().count() <= 100 {
        return format!("{path:?}");
    }
    let head: String = path.chars().take(97).collect();
    format!("{head:?}... ({} bytes)", path.len())
}

impl NativeElection {
    /// The core's [`zklock::Election::resign`] takes the lease by value and drops a lease it
    /// refuses, which would release it: the core's rule
    /// ([`zklock::Election::check_leadership`]) is asked first, and a refused lease is kept.
    fn own(&self, lease: &zklock::Lease) -> zklock::Result<()> {
        self.inner.check_leadership(lease)
    }
}

#[napi]
impl NativeElection {
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.inner.path().to_owned()
    }

    /// The core's [`zklock::ElectionStyle`] name.
    #[napi(getter)]
    pub fn style(&self) -> &'static str {
        self.inner.style().as_str()
    }

    #[napi(getter)]
    pub fn id(&self) -> String {
        self.inner.id().to_owned()
    }

    /// The maximum hold of a leadership in milliseconds, when set.
    #[napi(getter)]
    pub fn max_hold_ms(&self) -> Option<f64> {
        self.inner
            .max_hold_limit()
            .map(|d| d.as_micros() as f64 / 1e3)
    }

    /// Starts running for leader on the core's runtime (`timeoutMs` / `deadline` by the
    /// acquire's rule); awaited with `wait()`, aborted with `cancel()` (its node removed).
    #[napi(catch_unwind)]
    pub fn start_lead(
        &self,
        timeout_ms: Option<f64>,
        deadline_ms: Option<f64>,
    ) -> napi::Result<NativeAcquire, Code> {
        let wait = Wait::from_millis_or_deadline(timeout_ms, deadline_ms).map_err(js_err)?;
        Ok(NativeAcquire {
            acquire: Arc::new(Mutex::new(Some(self.inner.start_lead(wait)))),
        })
    }

    /// Gives the leadership up ([`zklock::Election::resign`]); with `requeue`, resolves with
    /// the acquire of the new attempt at the tail, else with `null`. A leadership released
    /// already rejects with `ZKLOCK_NOT_HELD`.
    #[napi(ts_return_type = "Promise<NativeAcquire | null>")]
    pub fn resign<'env>(
        &self,
        env: &'env Env,
        leadership: &NativeLease,
        requeue: bool,
    ) -> napi::Result<Object<'env>, Code> {
        let taken = {
            let mut slot = leadership.lease();
            match slot.as_ref() {
                None => Err(zklock::Error::new(
                    ErrorKind::NotHeld,
                    format!(
                        "the leadership on {} was already released",
                        shown(&leadership.path)
                    ),
                )),
                Some(l) => self
                    .own(l)
                    .map(|()| leadership.take_from(&mut slot).expect("checked above")),
            }
        }
        .map_err(js_err)?;
        leadership.keep.end(env.raw());
        let election = self.inner.clone();
        settle_from_core(env, async move {
            let again = election.resign(taken, requeue).await?;
            Ok(again.map(|a| NativeAcquire {
                acquire: Arc::new(Mutex::new(Some(a))),
            }))
        })
        .map_err(internal)
    }

    /// Sets the leadership's node data ([`zklock::Election::proclaim`]): a guarded write,
    /// applied only while the node is ours (`ZKLOCK_LOST` after loss).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn proclaim<'env>(
        &self,
        env: &'env Env,
        leadership: &NativeLease,
        data: napi::bindgen_prelude::Buffer,
    ) -> napi::Result<Object<'env>, Code> {
        // The core's proclaim borrows the lease for its whole future, which cannot outlive
        // this call; its write (the core's `proclamation`) goes through the lease's guard.
        let data = data.to_vec();
        let (guarded, writes) = {
            let slot = leadership.lease();
            match slot.as_ref() {
                None => Err(zklock::Error::new(
                    ErrorKind::NotHeld,
                    format!("the leadership on {} was released", shown(&leadership.path)),
                )),
                Some(l) => self
                    .inner
                    .proclamation(l, data)
                    .map(|writes| (l.guarded(), writes)),
            }
        }
        .map_err(js_err)?;
        settle_from_core(env, async move { guarded.write(writes).await.map(drop) })
            .map_err(internal)
    }

    /// Everyone running, in election order (the leader first).
    #[napi(ts_return_type = "Promise<NativeElectionParticipant[]>")]
    pub fn participants<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let election = self.inner.clone();
        settle_from_core(env, async move {
            Ok(election
                .participants()
                .await?
                .into_iter()
                .map(NativeElectionParticipant::from)
                .collect::<Vec<_>>())
        })
    }

    /// The leader now, `null` when nobody leads.
    #[napi(ts_return_type = "Promise<NativeElectionParticipant | null>")]
    pub fn leader<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let election = self.inner.clone();
        settle_from_core(env, async move {
            Ok(election
                .leader()
                .await?
                .map(NativeElectionParticipant::from))
        })
    }
}

/// An observer of an election's leader ([`zklock::LeaderWatch`]).
#[napi]
pub struct NativeLeaderWatch {
    watch: zklock::LeaderWatch,
    /// Set by `stop()`: a pending `next()` resolves as stopped.
    stop: tokio::sync::watch::Sender<bool>,
}

/// What one `next()` found: the leader (`null`: nobody leads), or that the watch was stopped.
#[napi(object)]
pub struct NativeLeaderReport {
    pub stopped: bool,
    pub leader: Option<NativeElectionParticipant>,
}

#[napi]
impl NativeLeaderWatch {
    /// The leader at the first call, then the next change ([`zklock::LeaderWatch::next`]),
    /// within `timeoutMs` by the acquire's rule (`ZKLOCK_TIMEOUT` when nothing changed).
    #[napi(ts_return_type = "Promise<NativeLeaderReport>")]
    pub fn next<'env>(
        &self,
        env: &'env Env,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        let wait = Wait::from_millis(timeout_ms);
        let watch = self.watch.clone();
        let mut stopped = self.stop.subscribe();
        settle_from_core(env, async move {
            let wait = wait?;
            let report = |leader: Option<zklock::Participant>| NativeLeaderReport {
                stopped: false,
                leader: leader.map(NativeElectionParticipant::from),
            };
            if *stopped.borrow_and_update() {
                return Ok(NativeLeaderReport {
                    stopped: true,
                    leader: None,
                });
            }
            tokio::select! {
                next = watch.next(wait) => next.map(report),
                _ = stopped.changed() => Ok(NativeLeaderReport { stopped: true, leader: None }),
            }
        })
    }

    /// Stops the watch: a pending `next()` resolves as stopped, and so does every later one.
    #[napi(catch_unwind)]
    pub fn stop(&self) {
        self.stop.send_replace(true);
    }
}

mod lease;
pub use lease::NativeLease;
use lease::StateCallback;
