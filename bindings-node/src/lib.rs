//! zklock's Node face: the native half of the npm package `zklock`.
//!
//! This addon exposes small `Native*` classes; `index.js` wraps them into the public API
//! (`Client`, `Mutex`, `Lease`, AbortSignal wiring, `await using`, events). Every wait happens on
//! the core's private runtime: an acquire is spawned there with [`zklock::runtime::spawn`] and
//! the `#[napi] async fn` that JS awaits only awaits its `JoinHandle` (napi's own small tokio
//! runtime, never the libuv pool). Aborting an acquire aborts that task, which drops the core
//! future on its runtime and removes its waiting node.
//!
//! Errors reach JS as `Error` objects whose `code` is one of API.md's `ZKLOCK_*` values: sync
//! functions return `napi::Error<Code>`, async ones resolve into [`Settled`], whose conversion
//! (on the JS thread) builds the JS error and rejects the promise with it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use napi::bindgen_prelude::{BigInt, Object, ToNapiValue};
use napi::sys;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status, Unknown};
use napi_derive::napi;
use zklock::{ErrorKind, LeaseState, Released};

// ---------------------------------------------------------------------------------------------
// Errors

/// The `err.code` of a zklock error (API.md's error table).
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
    }
}

/// A status that is one of our codes (napi sets it as the JS error's `code`).
pub struct Code(&'static str);

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        self.0
    }
}

fn js_err(e: zklock::Error) -> napi::Error<Code> {
    napi::Error::new(Code(code_of(e.kind())), e.message().to_owned())
}

fn invalid(msg: impl Into<String>) -> zklock::Error {
    zklock::Error::new(ErrorKind::InvalidArgument, msg)
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
// Numbers from JS

/// Milliseconds from JS (a number) to a duration: finite and non-negative.
fn millis(ms: f64, what: &str) -> Result<Duration, zklock::Error> {
    if !ms.is_finite() || ms < 0.0 {
        return Err(invalid(format!(
            "{what} must be a non-negative, finite number of milliseconds, got {ms}"
        )));
    }
    Duration::try_from_secs_f64(ms.ceil() / 1000.0)
        .map_err(|_| invalid(format!("{what} {ms} is out of range")))
}

/// `timeoutMs` of an acquire to a deadline (`None`: wait forever).
fn deadline(timeout_ms: Option<f64>) -> Result<Option<Instant>, zklock::Error> {
    match timeout_ms {
        None => Ok(None),
        Some(ms) => {
            let d = millis(ms, "timeoutMs")?;
            // A deadline too far away to represent is no deadline.
            Ok(Instant::now().checked_add(d))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Client

/// Runtime scheduler rounds `close_sync` lets run before the process exits.
const EXIT_DRAIN_ROUNDS: usize = 32;

/// One ZooKeeper session (`zklock::Client`).
#[napi]
pub struct NativeClient {
    inner: zklock::Client,
}

/// Options of `connect`, already type-checked by index.js.
#[napi(object)]
pub struct NativeConnectOptions {
    pub session_timeout_ms: Option<f64>,
    pub connect_timeout_ms: Option<f64>,
    pub auth: Option<String>,
    pub identity: Option<String>,
    /// `open` (default), `creator-all` or `read-anyone-creator-all`.
    pub acl: Option<String>,
}

fn options(o: Option<NativeConnectOptions>) -> Result<zklock::Options, zklock::Error> {
    let mut options = zklock::Options::default();
    if let Some(o) = o {
        if let Some(ms) = o.session_timeout_ms {
            options = options.session_timeout(millis(ms, "sessionTimeoutMs")?);
        }
        if let Some(ms) = o.connect_timeout_ms {
            options = options.connect_timeout(millis(ms, "connectTimeoutMs")?);
        }
        if let Some(auth) = o.auth {
            options = options.auth(auth);
        }
        if let Some(identity) = o.identity {
            options = options.identity(identity);
        }
        if let Some(acl) = o.acl {
            options = options.acl(match acl.as_str() {
                "open" => zklock::AclPolicy::Open,
                "creator-all" => zklock::AclPolicy::CreatorAll,
                "read-anyone-creator-all" => zklock::AclPolicy::ReadAnyoneCreatorAll,
                other => {
                    return Err(invalid(format!(
                    "acl must be 'open', 'creator-all' or 'read-anyone-creator-all', got {other:?}"
                )))
                }
            });
        }
    }
    Ok(options)
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

    /// An exclusive lock on `path` (re-entrant unless `reentrant` is false).
    #[napi(catch_unwind)]
    pub fn mutex(&self, path: String, reentrant: bool) -> napi::Result<NativeLock, Code> {
        let lock = self.inner.mutex(&path).map_err(js_err)?;
        let lock = lock.reentrant(reentrant);
        Ok(NativeLock {
            client: self.inner.clone(),
            target: Target::Lock(Arc::new(lock)),
            path,
        })
    }

    /// Both sides of a read/write lock on `path`: `[read, write]`.
    #[napi(catch_unwind)]
    pub fn rw_lock(&self, path: String) -> napi::Result<Vec<NativeLock>, Code> {
        let rw = Arc::new(self.inner.rw_lock(&path).map_err(js_err)?);
        Ok(vec![
            NativeLock {
                client: self.inner.clone(),
                target: Target::Rw(rw.clone(), Side::Read),
                path: path.clone(),
            },
            NativeLock {
                client: self.inner.clone(),
                target: Target::Rw(rw, Side::Write),
                path,
            },
        ])
    }

    /// Exclusive locks on several paths, taken as one.
    #[napi(catch_unwind)]
    pub fn multi_lock(&self, paths: Vec<String>) -> napi::Result<NativeLock, Code> {
        let multi = self.inner.multi_lock(&paths).map_err(js_err)?;
        Ok(NativeLock {
            client: self.inner.clone(),
            target: Target::Multi(Arc::new(multi)),
            path: paths.join(","),
        })
    }

    /// Closes the session: its leases become lost and later calls fail with `ZKLOCK_CLOSED`.
    #[napi]
    pub async fn close(&self) -> napi::Result<()> {
        self.inner.close().await;
        Ok(())
    }

    /// Closes the session, blocking the JS thread until the core has done so. Only for
    /// index.js's `process.on('exit')` hook, where nothing asynchronous runs any more: a
    /// process that exits with a client open (`process.exit()`, an uncaught exception) frees
    /// its lock nodes at once instead of after the session timeout.
    #[napi(catch_unwind)]
    pub fn close_sync(&self) {
        self.inner.blocking_close();
        // The close only starts there: the transport sends CloseSession once the session's
        // in-flight requests (a waiting acquire's, say) have let go of it, a few polls later
        // on the runtime thread. Let every task that is ready run (no timer: each round
        // yields to what is queued and to the I/O driver) before the process goes away.
        // (Until the core's close waits for the transport itself.)
        let _ = zklock::runtime::block_on(async {
            for _ in 0..EXIT_DRAIN_ROUNDS {
                tokio::task::yield_now().await;
            }
            Ok(())
        });
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

type AcquireFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = zklock::Result<zklock::Lease>> + Send>>;

impl Target {
    fn lock(&self) -> Option<&zklock::Lock> {
        match self {
            Target::Lock(l) => Some(l),
            Target::Rw(rw, Side::Read) => Some(rw.read()),
            Target::Rw(rw, Side::Write) => Some(rw.write()),
            Target::Multi(_) => None,
        }
    }

    fn acquire_until(
        &self,
        deadline: Option<Instant>,
        cancel: zklock::CancelToken,
    ) -> AcquireFuture {
        match self {
            Target::Multi(m) => Box::pin(m.acquire_with(deadline, cancel)),
            _ => match self.lock() {
                Some(l) => Box::pin(l.acquire_with(deadline, cancel)),
                None => Box::pin(async { Err(invalid("no lock")) }),
            },
        }
    }
}

/// A mutex, one side of a read/write lock, or a multi-lock. Re-entrant per object.
#[napi]
pub struct NativeLock {
    client: zklock::Client,
    target: Target,
    path: String,
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
}

#[napi]
impl NativeLock {
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.path.clone()
    }

    /// How many holds this object has (0 when not held); always 0 for a multi-lock.
    #[napi(getter)]
    pub fn hold_count(&self) -> u32 {
        self.target
            .lock()
            .map(|l| l.hold_count() as u32)
            .unwrap_or(0)
    }

    /// Starts an acquire on the core runtime (`timeoutMs` absent: wait forever). The returned
    /// handle is awaited with `wait()` and can be aborted with `cancel()`.
    #[napi(catch_unwind)]
    pub fn start_acquire(&self, timeout_ms: Option<f64>) -> napi::Result<NativePending, Code> {
        let deadline = deadline(timeout_ms).map_err(js_err)?;
        // Cancelling through the token (not by aborting the task) lets the acquire remove its
        // node before `wait()` rejects with ZKLOCK_ABORTED.
        let cancel = zklock::CancelToken::new();
        let fut = self.target.acquire_until(deadline, cancel.clone());
        let handle = zklock::runtime::spawn(fut);
        Ok(NativePending {
            cancel,
            handle: Mutex::new(Some(handle)),
            path: self.path.clone(),
        })
    }

    /// One attempt: the lease, or `null` when someone else holds the lock (no node left).
    #[napi]
    pub async fn try_acquire(&self) -> napi::Result<Settled<Option<NativeLease>>> {
        let fut = self
            .target
            .acquire_until(Some(Instant::now()), zklock::CancelToken::new());
        let path = self.path.clone();
        let result = match join(zklock::runtime::spawn(fut), &path).await {
            Ok(lease) => Ok(Some(NativeLease::new(lease))),
            Err(e) if e.kind() == ErrorKind::Timeout => Ok(None),
            Err(e) => Err(e),
        };
        Ok(Settled(result))
    }

    /// The queue: holder first, then waiters in order (for a multi-lock, each path's in turn).
    #[napi]
    pub async fn participants(&self) -> napi::Result<Settled<Vec<NativeParticipant>>> {
        let result = async {
            let mut out = Vec::new();
            let participants = match &self.target {
                Target::Multi(m) => {
                    let mut all = Vec::new();
                    for p in m.paths() {
                        let member = self.client.mutex(p)?;
                        all.extend(member.participants().await?);
                    }
                    all
                }
                Target::Rw(rw, _) => rw.participants().await?,
                Target::Lock(l) => l.participants().await?,
            };
            for p in participants {
                out.push(NativeParticipant {
                    node: p.node,
                    identity: p.identity,
                    token: BigInt::from(p.token),
                    library: format!("{:?}", p.library).to_lowercase(),
                    kind: format!("{:?}", p.kind).to_lowercase(),
                    session_id: BigInt::from(p.session_id),
                });
            }
            Ok(out)
        }
        .await;
        Ok(Settled(result))
    }
}

/// A promise settled from the core's runtime thread: `fut` runs there and its outcome goes
/// straight to the JS thread. A napi `async fn` would run it on napi's own runtime, one more
/// thread hop per call (acquire and release each pay it; bench scenario 1, Node / Rust).
fn settle_from_core<'env, T: ToNapiValue + Send + 'static>(
    env: &'env Env,
    fut: impl std::future::Future<Output = zklock::Result<T>> + Send + 'static,
) -> napi::Result<Object<'env>> {
    let (deferred, promise) = env.create_deferred::<Settled<T>, _>()?;
    zklock::runtime::spawn(async move {
        let result = fut.await;
        deferred.resolve(move |_| Ok(Settled(result)));
    });
    Ok(promise)
}

/// Awaits an acquire task of the core runtime; an aborted task is `Cancelled`.
async fn join(
    handle: tokio::task::JoinHandle<zklock::Result<zklock::Lease>>,
    path: &str,
) -> zklock::Result<zklock::Lease> {
    match handle.await {
        Ok(r) => r,
        Err(e) if e.is_cancelled() => Err(zklock::Error::new(
            ErrorKind::Cancelled,
            format!("the acquire of {path} was aborted"),
        )),
        Err(e) => Err(zklock::Error::from_join(e)),
    }
}

/// An acquire running on the core runtime.
#[napi]
pub struct NativePending {
    handle: Mutex<Option<tokio::task::JoinHandle<zklock::Result<zklock::Lease>>>>,
    cancel: zklock::CancelToken,
    path: String,
}

#[napi]
impl NativePending {
    /// Resolves with the lease, or rejects (`ZKLOCK_TIMEOUT`, `ZKLOCK_ABORTED`, ...).
    #[napi(ts_return_type = "Promise<NativeLease>")]
    pub fn wait<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let handle = self.handle.lock().unwrap_or_else(|e| e.into_inner()).take();
        let path = self.path.clone();
        settle_from_core(env, async move {
            match handle {
                Some(h) => join(h, &path).await.map(NativeLease::new),
                None => Err(invalid("wait() was already called for this acquire")),
            }
        })
    }

    /// Aborts the acquire: its waiting node is removed and `wait()` rejects with
    /// `ZKLOCK_ABORTED` (unless the lock was already acquired).
    #[napi]
    pub fn cancel(&self) {
        self.cancel.cancel();
    }
}

// ---------------------------------------------------------------------------------------------
// Leases

/// A held lock (`zklock::Lease`).
#[napi]
pub struct NativeLease {
    lease: Mutex<Option<zklock::Lease>>,
    token: i64,
    tokens: Vec<i64>,
    path: String,
    paths: Vec<String>,
}

impl NativeLease {
    fn new(lease: zklock::Lease) -> NativeLease {
        NativeLease {
            token: lease.token(),
            tokens: lease.tokens(),
            path: lease.path().to_owned(),
            paths: lease.paths(),
            lease: Mutex::new(Some(lease)),
        }
    }

    fn take(&self) -> Option<zklock::Lease> {
        self.lease.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// Garbage collection never releases a lock: when the JS side lets go of a lease that is still
/// held (index.js warns), the handle is given up without releasing, and the lock stays held
/// until the client closes, the session ends or the process exits.
impl Drop for NativeLease {
    fn drop(&mut self) {
        if let Some(lease) = self.take() {
            if matches!(lease.state(), LeaseState::Held | LeaseState::Suspended) {
                lease.detach();
            }
        }
    }
}

type StateCallback = ThreadsafeFunction<String, (), String, Status, false, true>;

#[napi]
impl NativeLease {
    /// The fencing token (the largest member's for a multi-lock).
    #[napi(getter)]
    pub fn token(&self) -> BigInt {
        BigInt::from(self.token)
    }

    /// Every member's token, in path order.
    #[napi(getter)]
    pub fn tokens(&self) -> Vec<BigInt> {
        self.tokens.iter().map(|t| BigInt::from(*t)).collect()
    }

    /// Full path of our lock node (the first member's for a multi-lock).
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.path.clone()
    }

    #[napi(getter)]
    pub fn paths(&self) -> Vec<String> {
        self.paths.clone()
    }

    /// Why the lease was lost (session expired, node deleted, client closed, no server contact
    /// for the session timeout), once it was.
    #[napi(getter)]
    pub fn lost_reason(&self) -> Option<String> {
        self.lease
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(|l| l.lost_reason())
    }

    /// `held`, `suspended`, `lost` or `released`.
    #[napi(getter)]
    pub fn state(&self) -> String {
        match &*self.lease.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(l) => l.state().as_str().to_owned(),
            None => LeaseState::Released.as_str().to_owned(),
        }
    }

    /// Calls `callback(state)` on the JS thread at every state change. The callback does not
    /// keep the event loop alive, and is let go after a final state (lost, released), so that
    /// a JS lease object that references it can be collected.
    #[napi(catch_unwind)]
    pub fn on_state(&self, callback: StateCallback) {
        let guard = self.lease.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(lease) = guard.as_ref() {
            let slot = Mutex::new(Some(callback));
            lease.on_state(move |state| {
                let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(callback) = slot.as_ref() {
                    callback.call(
                        state.as_str().to_owned(),
                        ThreadsafeFunctionCallMode::NonBlocking,
                    );
                }
                if matches!(state, LeaseState::Lost | LeaseState::Released) {
                    slot.take();
                }
            });
        }
    }

    /// Releases the lease: `released`, `stillHeld` (a re-entrant hold count went down) or
    /// `wasLost`. A second release rejects with `ZKLOCK_NOT_HELD`.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn release<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let lease = self.take();
        let path = self.path.clone();
        settle_from_core(env, async move {
            match lease {
                None => Err(zklock::Error::new(
                    ErrorKind::NotHeld,
                    format!("the lease on {path} was already released"),
                )),
                Some(lease) => lease.release().await.map(|r| {
                    match r {
                        Released::Released => "released",
                        Released::StillHeld => "stillHeld",
                        Released::WasLost => "wasLost",
                    }
                    .to_owned()
                }),
            }
        })
    }
}
