//! zklock's Python face: the native module `zklock._zklock`.
//!
//! This layer only translates: one native object per core value (a client, one core lock value,
//! one lease), Python numbers and strings in (the core's rules judge them: `Wait::from_secs`,
//! `AclPolicy::from_str`, the option checks), the core's errors out as the matching `zklock`
//! exception, and the core's names as they are. The core counts re-entrant holds per owner; the
//! Python package passes the owner (the thread, or the asyncio task).
//!
//! Waiting, with the GIL released:
//!
//! * a blocking acquire starts a core [`zklock::Acquire`] and waits for it in 50 ms slices,
//!   running `check_signals()` in between; a pending signal (Ctrl-C) cancels the acquire, which
//!   removes the waiting node, and the exception propagates;
//! * an asyncio acquire hands the same handle a completion callback that completes an asyncio
//!   future through `loop.call_soon_threadsafe`; cancelling that future cancels the acquire
//!   (its node is removed, a lease granted meanwhile is released).
//!
//! The runtime thread never touches Python: results cross over on a callback queue of this
//! module's own.

use std::future::Future;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyModule};

use zklock::{Acquire, CallbackQueue, ErrorKind, LeaseState, Owner, Wait};

/// How often a blocked Python thread wakes up to look for signals.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// How long a cancelled acquire may take to end (the core promises 100 ms).
const CANCEL_GRACE: Duration = Duration::from_secs(5);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------------------------
// Errors: the one table of this face

/// The Python class (in `zklock._errors`) of each error kind.
fn class_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Timeout => "LockTimeout",
        ErrorKind::Cancelled => "Cancelled",
        ErrorKind::LockLost => "LockLost",
        ErrorKind::SessionExpired => "SessionExpired",
        ErrorKind::Connection => "ConnectionFailed",
        ErrorKind::NotHeld => "NotHeld",
        ErrorKind::UpgradeNotAllowed => "UpgradeNotAllowed",
        ErrorKind::InvalidArgument => "InvalidArgument",
        ErrorKind::Closed => "ClientClosed",
        ErrorKind::Permission => "PermissionDenied",
        ErrorKind::ZooKeeper => "ZooKeeperError",
        ErrorKind::Internal => "InternalError",
    }
}

static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// Turns a core error into an instance of the matching `zklock` exception.
fn to_py_err(py: Python<'_>, err: zklock::Error) -> PyErr {
    let message = err.message().to_owned();
    let made = ERRORS
        .get_or_try_init(py, || py.import("zklock._errors").map(|m| m.unbind()))
        .and_then(|module| module.bind(py).getattr(class_name(err.kind())))
        .and_then(|class| class.call1((message.clone(),)));
    match made {
        Ok(instance) => PyErr::from_value(instance),
        // Without the Python package (never in an installed wheel) fall back to a builtin.
        Err(_) => PyRuntimeError::new_err(format!("{}: {message}", err.kind())),
    }
}

trait IntoPy<T> {
    fn py(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPy<T> for zklock::Result<T> {
    fn py(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py_err(py, e))
    }
}

fn wait_of(py: Python<'_>, timeout: Option<f64>) -> PyResult<Wait> {
    Wait::from_secs(timeout).py(py)
}

// ---------------------------------------------------------------------------------------------
// Waiting

/// Waits for a started acquire with the GIL released, looking for signals every 50 ms. When a
/// handler raises (Ctrl-C) the acquire is cancelled, and the exception is returned once it has
/// ended (its node removed; a lease granted meanwhile is dropped, which releases it).
fn wait_acquire(py: Python<'_>, mut acquire: Acquire) -> PyResult<zklock::Lease> {
    zklock::support::refuse_on_runtime_thread().map_err(|e| to_py_err(py, e))?;
    loop {
        let (done, back) = py.detach(move || (acquire.wait_for(SIGNAL_POLL), acquire));
        acquire = back;
        if let Some(result) = done {
            return result.py(py);
        }
        if let Err(signal) = py.check_signals() {
            acquire.cancel();
            py.detach(move || drop(acquire.wait_for(CANCEL_GRACE)));
            return Err(signal);
        }
    }
}

/// Runs `fut` on zklock's runtime and waits for it with the GIL released (calls that take no
/// node: connecting, the participants). Every 50 ms the wait runs `check_signals()`: when a
/// handler raises (Ctrl-C), the spawned future is aborted and the exception is returned.
fn wait<T, F>(py: Python<'_>, fut: F) -> PyResult<T>
where
    F: Future<Output = zklock::Result<T>> + Send + 'static,
    T: Send + 'static,
{
    zklock::support::refuse_on_runtime_thread().map_err(|e| to_py_err(py, e))?;
    let (tx, mut rx) = sync_channel::<zklock::Result<T>>(1);
    let task = zklock::support::spawn(async move {
        let _ = tx.send(fut.await);
    });
    loop {
        // The receiver moves into the detached closure and back (it is Send, not Sync).
        let (received, back) = py.detach(move || (rx.recv_timeout(SIGNAL_POLL), rx));
        rx = back;
        match received {
            Ok(result) => return result.py(py),
            Err(RecvTimeoutError::Timeout) => {
                if let Err(signal) = py.check_signals() {
                    task.abort();
                    return Err(signal);
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(to_py_err(
                    py,
                    zklock::Error::new(ErrorKind::Internal, "a zklock task ended without a result"),
                ))
            }
        }
    }
}

/// The queue that hands asyncio results to their loops, for this process (a child forked
/// after it started makes its own). Not zklock's process-wide callback thread: user callbacks
/// (`on_lost`) run there and may block, and an asyncio task granted a lock must not wait for
/// them.
fn delivery() -> CallbackQueue {
    static DELIVERY: Mutex<Option<(u32, CallbackQueue)>> = Mutex::new(None);
    let pid = zklock::support::current_pid();
    let mut slot = lock(&DELIVERY);
    match &*slot {
        Some((owner, queue)) if *owner == pid => queue.clone(),
        _ => {
            // No thread to be had: zklock's own callback thread serves.
            let queue = CallbackQueue::own_thread().unwrap_or_else(|_| CallbackQueue::process());
            *slot = Some((pid, queue.clone()));
            queue
        }
    }
}

/// What an asyncio future is completed with, made into Python on the loop's thread. Dropped
/// unmade when the future was cancelled meanwhile: a lease in it is then released by the core.
type Outcome = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

fn outcome_of<T: Send + 'static>(
    result: zklock::Result<T>,
    convert: fn(Python<'_>, T) -> PyResult<Py<PyAny>>,
) -> Outcome {
    match result {
        Ok(value) => Box::new(move |py| convert(py, value)),
        Err(err) => Box::new(move |py| Err(to_py_err(py, err))),
    }
}

/// An asyncio future of the running loop, to be completed from another thread.
struct LoopFuture {
    event_loop: Py<PyAny>,
    future: Py<PyAny>,
}

impl LoopFuture {
    fn new(py: Python<'_>) -> PyResult<(Bound<'_, PyAny>, LoopFuture)> {
        let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
        let future = event_loop.call_method0("create_future")?;
        let target = LoopFuture {
            event_loop: event_loop.unbind(),
            future: future.clone().unbind(),
        };
        Ok((future, target))
    }

    /// Hands `outcome` to the loop (`call_soon_threadsafe`); a closed loop has nobody left to
    /// tell. Runs on the delivery queue.
    fn complete(self, outcome: Outcome) {
        let _ = Python::try_attach(|py| {
            let completer = Completer {
                future: self.future,
                outcome: Mutex::new(Some(outcome)),
            };
            let _ = self
                .event_loop
                .bind(py)
                .call_method1("call_soon_threadsafe", (completer,));
        });
    }
}

/// Sets an asyncio future's result or exception, unless it was cancelled; on the loop's thread.
#[pyclass(frozen, module = "zklock._zklock")]
struct Completer {
    future: Py<PyAny>,
    outcome: Mutex<Option<Outcome>>,
}

#[pymethods]
impl Completer {
    fn __call__(&self, py: Python<'_>) -> PyResult<()> {
        let Some(outcome) = lock(&self.outcome).take() else {
            return Ok(());
        };
        let future = self.future.bind(py);
        if future.call_method0("done")?.is_truthy()? {
            return Ok(()); // cancelled: `outcome` is dropped unmade
        }
        match outcome(py) {
            Ok(value) => future.call_method1("set_result", (value,))?,
            Err(err) => future.call_method1("set_exception", (err.into_value(py),))?,
        };
        Ok(())
    }
}

/// The done-callback of an asyncio acquire: cancelling the future cancels the acquire (its node
/// is removed; a lease granted meanwhile is released).
#[pyclass(frozen, module = "zklock._zklock")]
struct Canceller(zklock::CancelToken);

#[pymethods]
impl Canceller {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if future.call_method0("cancelled")?.is_truthy()? {
            self.0.cancel();
        }
        Ok(())
    }
}

/// An asyncio future of the running loop that gets the started acquire's lease.
fn acquire_into_py(py: Python<'_>, acquire: Acquire) -> PyResult<Bound<'_, PyAny>> {
    let (future, target) = LoopFuture::new(py)?;
    future.call_method1("add_done_callback", (Canceller(acquire.canceller()),))?;
    acquire.on_complete_in(delivery(), move |result| {
        target.complete(outcome_of(result, lease_into_py))
    });
    Ok(future)
}

fn lease_into_py(py: Python<'_>, lease: zklock::Lease) -> PyResult<Py<PyAny>> {
    Ok(Py::new(py, NativeLease::new(lease))?.into_any())
}

/// An asyncio future of the running loop that gets the result of `fut`, run on zklock's
/// runtime (a release: nothing to cancel, it always ends).
fn future_into_py<'py, T, F>(
    py: Python<'py>,
    fut: F,
    convert: fn(Python<'_>, T) -> PyResult<Py<PyAny>>,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = zklock::Result<T>> + Send + 'static,
    T: Send + 'static,
{
    let (future, target) = LoopFuture::new(py)?;
    zklock::support::spawn(async move {
        let outcome = outcome_of(fut.await, convert);
        delivery().run(move || target.complete(outcome));
    });
    Ok(future)
}

/// Calls a Python callable (on zklock's callback thread), with the state's name if given; an
/// exception it raises goes to `sys.unraisablehook`. After the interpreter has shut down (a
/// client closed at exit makes its leases lost) there is no Python left to call, and the
/// callback is skipped.
fn call_unraisable(callback: &Py<PyAny>, state: Option<LeaseState>) {
    let _ = Python::try_attach(|py| {
        let callback = callback.bind(py);
        let called = match state {
            Some(state) => callback.call1((state.as_str(),)),
            None => callback.call0(),
        };
        if let Err(err) = called {
            err.write_unraisable(py, Some(callback));
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Client

/// One ZooKeeper session (see `zklock.Client` for the documented face).
#[pyclass(frozen, module = "zklock._zklock", name = "Client")]
struct PyClient {
    client: zklock::Client,
}

#[pymethods]
impl PyClient {
    #[new]
    #[pyo3(signature = (hosts, session_timeout=10.0, connect_timeout=15.0, auth=None, identity=None, acl="open", tls_ca=None, tls_cert=None, tls_key=None, tls_verify_hostname=None, sasl_user=None, sasl_password=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        hosts: String,
        session_timeout: f64,
        connect_timeout: f64,
        auth: Option<String>,
        identity: Option<String>,
        acl: &str,
        tls_ca: Option<String>,
        tls_cert: Option<String>,
        tls_key: Option<String>,
        tls_verify_hostname: Option<bool>,
        sasl_user: Option<String>,
        sasl_password: Option<String>,
    ) -> PyResult<Self> {
        let secs = zklock::support::duration_from_secs_f64;
        let mut options = zklock::Options::default()
            .session_timeout(secs(session_timeout, "session_timeout").py(py)?)
            .connect_timeout(secs(connect_timeout, "connect_timeout").py(py)?)
            .acl(zklock::AclPolicy::from_str(acl).py(py)?);
        if let Some(auth) = auth {
            options = options.auth(auth);
        }
        if let Some(identity) = identity {
            options = options.identity(identity);
        }
        let options = zklock::SecureParts {
            tls_ca,
            tls_cert,
            tls_key,
            tls_verify_hostname,
            sasl_user,
            sasl_password,
        }
        .apply(options)
        .py(py)?;
        let client = wait(
            py,
            async move { zklock::Client::connect(&hosts, options).await },
        )?;
        Ok(PyClient { client })
    }

    /// Closes the session; leases taken through it become lost. Idempotent.
    fn close(&self, py: Python<'_>) {
        let client = self.client.clone();
        py.detach(move || client.blocking_close());
    }

    #[getter]
    fn closed(&self) -> bool {
        self.client.is_closed()
    }

    #[getter]
    fn hosts(&self) -> &str {
        self.client.hosts()
    }

    #[getter]
    fn session_id(&self) -> i64 {
        self.client.session_id()
    }

    #[getter]
    fn session_timeout(&self) -> f64 {
        self.client.session_timeout().as_secs_f64()
    }

    /// A mutex on `path`.
    #[pyo3(signature = (path, reentrant=true))]
    fn mutex(&self, py: Python<'_>, path: &str, reentrant: bool) -> PyResult<NativeLock> {
        let lock = self.client.mutex(path).py(py)?;
        Ok(NativeLock::new(Inner::Single(Arc::new(
            lock.reentrant(reentrant),
        ))))
    }

    /// A semaphore of `max_leases` leases on `path` (Curator's `InterProcessSemaphoreV2`
    /// layout); never re-entrant. Any Python int is taken: the core judges N.
    fn semaphore(
        &self,
        py: Python<'_>,
        path: &str,
        max_leases: &Bound<'_, PyAny>,
    ) -> PyResult<NativeLock> {
        let n = max_leases_of(path, max_leases).py(py)?;
        let lock = self.client.semaphore(path, n).py(py)?;
        Ok(NativeLock::new(Inner::Single(Arc::new(lock))))
    }

    /// `semaphore(path, 1)`: excludes Curator's `InterProcessSemaphoreMutex`.
    fn semaphore_mutex(&self, py: Python<'_>, path: &str) -> PyResult<NativeLock> {
        let lock = self.client.semaphore_mutex(path).py(py)?;
        Ok(NativeLock::new(Inner::Single(Arc::new(lock))))
    }

    /// Asks the holder(s) of `path` (or the one `node`) to let go: sets `__REVOKE__` on their
    /// nodes (Curator's `Revoker.attemptRevoke`). Returns the nodes asked.
    #[pyo3(signature = (path, node=None))]
    fn revoke(&self, py: Python<'_>, path: String, node: Option<String>) -> PyResult<Vec<String>> {
        let client = self.client.clone();
        wait(
            py,
            async move { client.revoke(&path, node.as_deref()).await },
        )
    }

    /// Both sides of a read/write lock on `path`: `(read, write)`.
    fn rw_lock(&self, py: Python<'_>, path: &str) -> PyResult<(NativeLock, NativeLock)> {
        let rw = Arc::new(self.client.rw_lock(path).py(py)?);
        Ok((
            NativeLock::new(Inner::Read(rw.clone())),
            NativeLock::new(Inner::Write(rw)),
        ))
    }

    /// A multi-lock over existing core lock values (sharing their re-entrancy).
    fn multi_lock(&self, py: Python<'_>, members: Vec<Py<NativeLock>>) -> PyResult<NativeLock> {
        let mut locks: Vec<&zklock::Lock> = Vec::with_capacity(members.len());
        for m in &members {
            match m.get().as_lock() {
                Some(lock) => locks.push(lock),
                None => {
                    return Err(to_py_err(
                        py,
                        zklock::Error::new(
                            ErrorKind::InvalidArgument,
                            "a multi-lock cannot contain another multi-lock",
                        ),
                    ))
                }
            }
        }
        let multi = zklock::MultiLock::from_locks(locks).py(py)?;
        Ok(NativeLock::new(Inner::Multi(multi)))
    }

    /// The core's statistics of this client, as a dict of numbers (times in seconds; `wait` and
    /// `hold` are dicts of `count`, `p50`, `p90`, `p99`, `max`). `zklock.Client.stats()` makes
    /// them a frozen dataclass.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.client.stats();
        let times = |p: zklock::Percentiles| -> PyResult<Bound<'py, PyDict>> {
            let d = PyDict::new(py);
            d.set_item("count", p.count)?;
            for (name, value) in [
                ("p50", p.p50),
                ("p90", p.p90),
                ("p99", p.p99),
                ("max", p.max),
            ] {
                d.set_item(name, value.as_secs_f64())?;
            }
            Ok(d)
        };
        let d = PyDict::new(py);
        for (name, value) in [
            ("acquired", s.acquired),
            ("timed_out", s.timed_out),
            ("cancelled", s.cancelled),
            ("failed", s.failed),
            ("held", s.held),
            ("waiting", s.waiting),
            ("suspended", s.suspended),
            ("lost", s.lost),
            ("reconnects", s.reconnects),
            ("session_expiries", s.session_expiries),
        ] {
            d.set_item(name, value)?;
        }
        d.set_item("wait", times(s.wait)?)?;
        d.set_item("hold", times(s.hold)?)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "<zklock._zklock.Client hosts={:?} session=0x{:x}{}>",
            self.client.hosts(),
            self.client.session_id(),
            if self.client.is_closed() {
                " closed"
            } else {
                ""
            }
        )
    }
}

/// A Python int as a semaphore's N for the core: a value no `u32` holds (negative, or beyond)
/// cannot reach the core's check, so it gets the same kind of error here, naming the value.
fn max_leases_of(path: &str, value: &Bound<'_, PyAny>) -> zklock::Result<u32> {
    value.extract::<u32>().map_err(|_| {
        let shown = value
            .str()
            .map(|s| s.to_string())
            .unwrap_or_else(|_| "?".to_owned());
        zklock::Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "invalid number of leases {} for the semaphore {path}: it must be 1 to {}",
                shown.chars().take(40).collect::<String>(),
                zklock::MAX_LEASES
            ),
        )
    })
}

// ---------------------------------------------------------------------------------------------
// Locks

/// One core lock value: a mutex, one side of a read/write lock, or a multi-lock.
#[pyclass(frozen, module = "zklock._zklock")]
struct NativeLock {
    inner: Inner,
}

enum Inner {
    Single(Arc<zklock::Lock>),
    Read(Arc<zklock::RwLock>),
    Write(Arc<zklock::RwLock>),
    Multi(zklock::MultiLock),
}

impl NativeLock {
    fn new(inner: Inner) -> Self {
        NativeLock { inner }
    }

    fn as_lock(&self) -> Option<&zklock::Lock> {
        match &self.inner {
            Inner::Single(l) => Some(l),
            Inner::Read(rw) => Some(rw.read()),
            Inner::Write(rw) => Some(rw.write()),
            Inner::Multi(_) => None,
        }
    }

    fn start(&self, owner: Owner, wait: Wait) -> Acquire {
        match (&self.inner, self.as_lock()) {
            (Inner::Multi(m), _) => m.start_acquire(owner, wait),
            (_, Some(lock)) => lock.start_acquire(owner, wait),
            (_, None) => unreachable!("a lock that is not a multi-lock has a core lock"),
        }
    }
}

#[pymethods]
impl NativeLock {
    /// Waits for the lock for `owner` (`timeout` seconds by the core's rule; None: forever) and
    /// returns its lease; `LockTimeout` when a try or a deadline fails. The GIL is released
    /// while waiting.
    #[pyo3(signature = (owner, timeout=None))]
    fn acquire(&self, py: Python<'_>, owner: u64, timeout: Option<f64>) -> PyResult<NativeLease> {
        let wait = wait_of(py, timeout)?;
        // A re-entrant hold needs no trip to the runtime.
        if let Some(lease) = self.as_lock().and_then(|l| l.reenter_as(Owner(owner))) {
            return Ok(NativeLease::new(lease));
        }
        wait_acquire(py, self.start(Owner(owner), wait)).map(NativeLease::new)
    }

    /// The asyncio twin of `acquire`: an awaitable future of the running loop.
    #[pyo3(signature = (owner, timeout=None))]
    fn acquire_async<'py>(
        &self,
        py: Python<'py>,
        owner: u64,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let wait = wait_of(py, timeout)?;
        acquire_into_py(py, self.start(Owner(owner), wait))
    }

    /// `owner`'s re-entrant hold count (0 for a multi-lock or a non re-entrant lock).
    fn hold_count(&self, owner: u64) -> usize {
        self.as_lock().map_or(0, |l| l.hold_count_as(Owner(owner)))
    }

    #[getter]
    fn path(&self) -> String {
        self.paths().join(",")
    }

    #[getter]
    fn paths(&self) -> Vec<String> {
        match (&self.inner, self.as_lock()) {
            (Inner::Multi(m), _) => m.paths().into_iter().map(str::to_owned).collect(),
            (_, Some(lock)) => vec![lock.path().to_owned()],
            (_, None) => Vec::new(),
        }
    }

    /// The queue of the lock path: `[(node, identity, token, library, kind, session_id,
    /// max_leases)]`, holder first (a semaphore's leases and guard waiters follow).
    fn participants(&self, py: Python<'_>) -> PyResult<Vec<ParticipantTuple>> {
        let list = match &self.inner {
            Inner::Single(l) => {
                let l = l.clone();
                wait(py, async move { l.participants().await })?
            }
            Inner::Read(rw) | Inner::Write(rw) => {
                let rw = rw.clone();
                wait(py, async move { rw.participants().await })?
            }
            Inner::Multi(_) => {
                return Err(to_py_err(
                    py,
                    zklock::Error::new(
                        ErrorKind::InvalidArgument,
                        "participants() of a multi-lock: ask its members",
                    ),
                ))
            }
        };
        Ok(list
            .into_iter()
            .map(|p| {
                let library = p.library.as_str().to_owned();
                (
                    p.node,
                    p.identity,
                    p.token,
                    library,
                    p.kind.as_str().to_owned(),
                    p.session_id,
                    p.max_leases,
                )
            })
            .collect())
    }
}

type ParticipantTuple = (String, String, i64, String, String, i64, Option<u32>);

// ---------------------------------------------------------------------------------------------
// Leases

/// A held lock (see `zklock.Lease` for the documented face).
#[pyclass(frozen, module = "zklock._zklock")]
struct NativeLease {
    lease: Mutex<Option<zklock::Lease>>,
    /// It was lost before it was released (an `on_lost` registered later still runs).
    lost_before_release: AtomicBool,
    token: i64,
    tokens: Vec<i64>,
    path: String,
    paths: Vec<String>,
    /// The process the lease was taken in (its session cannot be used after fork()).
    pid: u32,
}

impl NativeLease {
    fn new(lease: zklock::Lease) -> Self {
        NativeLease {
            pid: zklock::support::current_pid(),
            token: lease.token(),
            tokens: lease.tokens(),
            path: lease.path().to_owned(),
            paths: lease.paths(),
            lease: Mutex::new(Some(lease)),
            lost_before_release: AtomicBool::new(false),
        }
    }

    /// `ClientClosed` in a child process after fork(): the lease and its session belong to the
    /// parent, so the child can neither use it nor know its state (it must not read `held`).
    fn check_process(&self, py: Python<'_>) -> PyResult<()> {
        if self.pid == zklock::support::current_pid() {
            return Ok(());
        }
        Err(to_py_err(
            py,
            zklock::Error::new(
                ErrorKind::Closed,
                format!(
                    "the lease on {} was taken before fork(); it belongs to the parent process, \
                     which alone can know its state or release it",
                    self.path
                ),
            ),
        ))
    }

    fn take(&self, py: Python<'_>) -> PyResult<zklock::Lease> {
        self.check_process(py)?;
        let Some(lease) = lock(&self.lease).take() else {
            return Err(to_py_err(
                py,
                zklock::Error::new(
                    ErrorKind::NotHeld,
                    format!("the lease on {} was already released", self.path),
                ),
            ));
        };
        if lease.state() == LeaseState::Lost {
            self.lost_before_release.store(true, Ordering::Relaxed);
        }
        Ok(lease)
    }

    fn state(&self) -> LeaseState {
        lock(&self.lease)
            .as_ref()
            .map_or(LeaseState::Released, |l| l.state())
    }
}

/// Garbage collection never releases a lock: a lease that is still held (or suspended) when
/// its last reference goes is detached, not released. Its node stays until the client closes,
/// its session ends or the process exits (as with kazoo and Curator), and a `ResourceWarning`
/// naming the path says so. A released or lost lease has nothing to keep and is dropped as
/// usual; a lease inherited through fork() belongs to the parent and is left alone.
impl Drop for NativeLease {
    fn drop(&mut self) {
        let Some(lease) = self
            .lease
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return;
        };
        if self.pid != zklock::support::current_pid() {
            lease.detach();
            return;
        }
        if !matches!(lease.state(), LeaseState::Held | LeaseState::Suspended) {
            return;
        }
        lease.detach();
        let message = format!(
            "a zklock lease on {} was garbage-collected while held; the lock stays held until \
             its client is closed or the process exits (release the lease, or use `with`)",
            self.path
        );
        // Dropped by the garbage collector, with the GIL held; after the interpreter is gone
        // there is nobody left to warn.
        let _ = Python::try_attach(|py| warn_resource(py, &message));
    }
}

/// Issues a `ResourceWarning` from a destructor: an exception being raised meanwhile is kept,
/// and a warning turned into an error (`-W error`) goes to `sys.unraisablehook`.
fn warn_resource(py: Python<'_>, message: &str) {
    let pending = PyErr::take(py);
    let text = std::ffi::CString::new(message.replace('\0', ""))
        .unwrap_or_else(|_| c"a zklock lease was garbage-collected while held".to_owned());
    let category = py.get_type::<pyo3::exceptions::PyResourceWarning>();
    if let Err(err) = PyErr::warn(py, category.as_any(), &text, 1) {
        err.write_unraisable(py, None);
    }
    if let Some(pending) = pending {
        pending.restore(py);
    }
}

fn released_into_py(py: Python<'_>, r: zklock::Released) -> PyResult<Py<PyAny>> {
    Ok(pyo3::types::PyString::new(py, r.as_str())
        .into_any()
        .unbind())
}

#[pymethods]
impl NativeLease {
    #[getter]
    fn token(&self) -> i64 {
        self.token
    }

    #[getter]
    fn tokens(&self) -> Vec<i64> {
        self.tokens.clone()
    }

    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    #[getter]
    fn paths(&self) -> Vec<String> {
        self.paths.clone()
    }

    /// The core's state name; `ClientClosed` in a child process after fork().
    #[getter(state)]
    fn state_name(&self, py: Python<'_>) -> PyResult<&'static str> {
        self.check_process(py)?;
        Ok(self.state().as_str())
    }

    fn is_held(&self, py: Python<'_>) -> PyResult<bool> {
        self.check_process(py)?;
        Ok(self.state() == LeaseState::Held)
    }

    /// Calls `callback()` once, on zklock's callback thread, if the lease is lost (at once if
    /// it already is): the core's subscription delivers `lost` exactly once.
    fn on_lost(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<()> {
        self.check_process(py)?;
        match &*lock(&self.lease) {
            Some(lease) => lease.subscribe(move |state| {
                if state == LeaseState::Lost {
                    call_unraisable(&callback, None);
                }
            }),
            None if self.lost_before_release.load(Ordering::Relaxed) => {
                zklock::support::run_callback(move || call_unraisable(&callback, None))
            }
            // Released while held: it can no longer be lost.
            None => {}
        }
        Ok(())
    }

    /// True once someone asked the holder to let go (`__REVOKE__` on its node).
    fn is_revoke_requested(&self, py: Python<'_>) -> PyResult<bool> {
        self.check_process(py)?;
        Ok(lock(&self.lease)
            .as_ref()
            .is_some_and(|l| l.is_revoke_requested()))
    }

    /// Calls `callback()` once, on zklock's callback thread, when a revocation is requested
    /// while the lease is held (the core's `on_revoke`); never after it ended.
    fn on_revoke(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<()> {
        self.check_process(py)?;
        if let Some(lease) = &*lock(&self.lease) {
            lease.on_revoke(move || call_unraisable(&callback, None));
        }
        Ok(())
    }

    /// The core's subscription: `callback(state)` on zklock's callback thread with the current
    /// state first, then at every change, ending after a final state (`'released'` at once for
    /// a released lease).
    fn on_state(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<()> {
        self.check_process(py)?;
        match &*lock(&self.lease) {
            Some(lease) => lease.subscribe(move |state| call_unraisable(&callback, Some(state))),
            None => zklock::support::run_callback(move || {
                call_unraisable(&callback, Some(LeaseState::Released))
            }),
        }
        Ok(())
    }

    /// Releases the lease: 'released', 'still-held' (a re-entrant count went down) or
    /// 'was-lost'. Raises `NotHeld` when it was already released.
    fn release(&self, py: Python<'_>) -> PyResult<&'static str> {
        let lease = self.take(py)?;
        // A re-entrant hold that only counts down keeps the GIL: nothing to wait for.
        let lease = match lease.release_counted() {
            Ok(released) => return Ok(released.as_str()),
            Err(lease) => lease,
        };
        let released = py.detach(move || lease.blocking_release()).py(py)?;
        Ok(released.as_str())
    }

    /// The asyncio twin of `release`.
    fn release_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let lease = self.take(py)?;
        future_into_py(py, lease.release(), released_into_py)
    }

    /// Runs `(op, path, data)` writes (`create`, `set_data`, `delete`; the core judges them) as
    /// one multi request with a check that the lease's node still exists, the GIL released.
    /// Returns per write the created path, the new data version, or None for a delete;
    /// `LockLost` when the lease was lost (nothing applied).
    fn guarded_write(
        &self,
        py: Python<'_>,
        writes: Vec<(String, String, Option<Vec<u8>>)>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        self.check_process(py)?;
        let writes = writes
            .into_iter()
            .map(|(op, path, data)| zklock::Write::from_op(&op, &path, data))
            .collect::<zklock::Result<Vec<_>>>()
            .py(py)?;
        let guarded = lock(&self.lease).as_ref().map(zklock::Lease::guarded);
        let Some(guarded) = guarded else {
            return Err(to_py_err(
                py,
                zklock::Error::new(
                    ErrorKind::NotHeld,
                    format!(
                        "the lease on {} was released; guarded writes need a held lease",
                        self.path
                    ),
                ),
            ));
        };
        let done = py.detach(move || guarded.blocking_write(writes));
        done.py(py)?
            .into_iter()
            .map(|w| -> PyResult<Py<PyAny>> {
                Ok(match w {
                    zklock::Written::Created(p) => p.into_pyobject(py)?.into_any().unbind(),
                    zklock::Written::Set { version } => {
                        version.into_pyobject(py)?.into_any().unbind()
                    }
                    zklock::Written::Deleted => py.None(),
                })
            })
            .collect()
    }

    fn __repr__(&self) -> String {
        let state = if self.pid == zklock::support::current_pid() {
            self.state().as_str()
        } else {
            "forked"
        };
        format!(
            "<zklock._zklock.NativeLease path={:?} token={} state={state}>",
            self.path, self.token
        )
    }
}

/// Judges a timeout by the core's rule without starting anything (`lock.hold(timeout)` refuses
/// a bad one when it is made, not when it is entered).
#[pyfunction]
#[pyo3(signature = (timeout=None))]
fn check_timeout(py: Python<'_>, timeout: Option<f64>) -> PyResult<()> {
    wait_of(py, timeout).map(drop)
}

/// Installs (or with None removes) the core's log sink: `callback(level, event, message,
/// fields)` on zklock's callback thread for every record up to `level` (`'debug'`, `'info'`,
/// `'warn'`, `'error'`); the package forwards them to `logging.getLogger("zklock")`.
#[pyfunction]
#[pyo3(signature = (callback, level="info"))]
fn set_log_sink(py: Python<'_>, callback: Option<Py<PyAny>>, level: &str) -> PyResult<()> {
    let level = zklock::support::LogLevel::from_str(level).py(py)?;
    let sink = callback.map(|callback| {
        let sink: Arc<dyn Fn(&zklock::support::LogRecord) + Send + Sync> = Arc::new(move |r| {
            let _ = Python::try_attach(|py| {
                let fields = PyDict::new(py);
                for (k, v) in &r.fields {
                    let _ = fields.set_item(*k, v);
                }
                let args = (r.level.as_str(), r.event, r.message.as_str(), fields);
                if let Err(err) = callback.bind(py).call1(args) {
                    err.write_unraisable(py, Some(callback.bind(py)));
                }
            });
        });
        (level, sink)
    });
    zklock::support::set_log_sink(sink);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Module

#[pymodule]
fn _zklock(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyClient>()?;
    m.add_class::<NativeLock>()?;
    m.add_class::<NativeLease>()?;
    m.add_function(wrap_pyfunction!(check_timeout, m)?)?;
    m.add_function(wrap_pyfunction!(set_log_sink, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
