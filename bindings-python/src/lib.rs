//! zklock's Python face: the native module `zklock._zklock`.
//!
//! This layer is deliberately small: one native object per core value (a client, one core lock
//! value, one lease) and the two ways of waiting for the core from Python:
//!
//! * blocking calls spawn the core future on zklock's runtime and wait for its result with the
//!   GIL released, waking every 50 ms to run `check_signals()`; a pending signal (Ctrl-C) aborts
//!   the spawned future, which removes the waiting node, and the exception propagates;
//! * asyncio calls return an `asyncio.Future` of the running loop and complete it from the
//!   library's callback thread with `loop.call_soon_threadsafe`; cancelling that future aborts
//!   the core future.
//!
//! The runtime thread never touches Python: results cross over on the callback thread. The
//! per-thread / per-task re-entrancy, the `with` statements and the exception classes live in
//! the Python package (`zklock/__init__.py`, `zklock/_errors.py`).

use std::future::Future;
use std::sync::mpsc::{sync_channel, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyModule;

use zklock::{ErrorKind, LeaseState, Released};

/// How often a blocked Python thread wakes up to look for signals.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

// ---------------------------------------------------------------------------------------------
// Errors

/// The Python class name (in `zklock._errors`) of each error kind, as in API.md.
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
        Err(_) => PyRuntimeError::new_err(format!("{}: {message}", class_name(err.kind()))),
    }
}

/// `zklock.InvalidArgument` for a value the core has no check for.
fn invalid(py: Python<'_>, message: impl Into<String>) -> PyErr {
    to_py_err(py, zklock::Error::new(ErrorKind::InvalidArgument, message))
}

/// A timeout argument in seconds: `None` waits forever, otherwise a finite number >= 0.
fn deadline_of(py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<Instant>> {
    match timeout {
        None => Ok(None),
        Some(secs) => {
            let d =
                zklock::duration_from_secs_f64(secs, "timeout").map_err(|e| to_py_err(py, e))?;
            Ok(Some(Instant::now().checked_add(d).ok_or_else(|| {
                invalid(py, format!("timeout {} is out of range", secs_str(secs)))
            })?))
        }
    }
}

/// A number of seconds for a message, short whatever its size: `2.5 s`, `1e+300 s` (Python's
/// own notation past a million; a plain `{}` of an `f64` writes every digit).
fn secs_str(secs: f64) -> String {
    if secs.is_finite() && secs.abs() >= 1e6 {
        let e = format!("{secs:e}");
        match e.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp} s"),
            _ => format!("{e} s"),
        }
    } else {
        format!("{secs} s")
    }
}

// ---------------------------------------------------------------------------------------------
// Waiting

/// Runs `fut` on zklock's runtime and waits for it with the GIL released. Every 50 ms the wait
/// runs `check_signals()`: when a handler raises (Ctrl-C), the spawned future is aborted (its
/// node is removed) and the exception is returned. A result that won the race with the abort is
/// dropped here, which releases a lease in the background.
fn wait<T, F>(py: Python<'_>, fut: F, cancel: Option<zklock::CancelToken>) -> PyResult<T>
where
    F: Future<Output = zklock::Result<T>> + Send + 'static,
    T: Send + 'static,
{
    if zklock::runtime::on_runtime_thread() {
        return Err(invalid(
            py,
            "a blocking zklock call was made on the zklock runtime thread",
        ));
    }
    let (tx, mut rx) = sync_channel::<zklock::Result<T>>(1);
    let task = zklock::runtime::spawn(async move {
        let _ = tx.send(fut.await);
    });
    loop {
        // The receiver moves into the detached closure and back (it is Send, not Sync).
        let (received, back) = py.detach(move || (rx.recv_timeout(SIGNAL_POLL), rx));
        rx = back;
        match received {
            Ok(result) => return result.map_err(|e| to_py_err(py, e)),
            Err(RecvTimeoutError::Timeout) => {
                if let Err(signal) = py.check_signals() {
                    // An acquire cancelled through its token removes its node before it ends;
                    // anything else is aborted (and cleans up in the background).
                    match &cancel {
                        Some(token) => token.cancel(),
                        None => task.abort(),
                    }
                    // Wait until the task is gone (its sender dropped), so that the cleanup of
                    // the waiting node has been started before the exception reaches Python.
                    let late = py.detach(move || rx.recv_timeout(Duration::from_secs(5)).ok());
                    drop(late);
                    return Err(signal);
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                // The task ended without sending: it panicked inside the core.
                return Err(to_py_err(
                    py,
                    zklock::Error::new(
                        ErrorKind::Internal,
                        "internal error: a zklock task ended without a result",
                    ),
                ));
            }
        }
    }
}

/// What an asyncio future is completed with.
type Outcome = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

/// Runs `fut` on zklock's runtime and returns an asyncio future of the running loop that gets
/// its result. Cancelling the asyncio future aborts `fut`. `convert` turns the core result into
/// a Python value on the loop's thread; if the future was cancelled meanwhile the result is
/// dropped instead (a lease is then released in the background).
fn future_into_py<'py, T, F>(
    py: Python<'py>,
    fut: F,
    convert: fn(Python<'_>, T) -> PyResult<Py<PyAny>>,
    cancel: Option<zklock::CancelToken>,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = zklock::Result<T>> + Send + 'static,
    T: Send + 'static,
{
    let asyncio = py.import("asyncio")?;
    let event_loop = asyncio.call_method0("get_running_loop")?;
    let py_future = event_loop.call_method0("create_future")?;
    let loop_ref = event_loop.unbind();
    let future_ref = py_future.clone().unbind();
    let task = zklock::runtime::spawn(async move {
        let result = fut.await;
        deliver(move || {
            let _ = Python::try_attach(|py| {
                let outcome: Outcome = match result {
                    Ok(value) => Box::new(move |py| convert(py, value)),
                    Err(err) => Box::new(move |py| Err(to_py_err(py, err))),
                };
                let completer = Completer {
                    future: future_ref.clone_ref(py),
                    outcome: Mutex::new(Some(outcome)),
                };
                let scheduled = loop_ref
                    .bind(py)
                    .call_method1("call_soon_threadsafe", (completer,));
                if let Err(e) = scheduled {
                    // The loop is closed: nobody can await the result any more.
                    drop(e);
                }
            });
        });
    });
    let canceller = Canceller {
        abort: task.abort_handle(),
        cancel,
    };
    py_future.call_method1("add_done_callback", (canceller,))?;
    Ok(py_future)
}

type Job = Box<dyn FnOnce() + Send>;

/// The thread that hands asyncio results to their loops, and the process it belongs to.
static DELIVERY: Mutex<Option<(u32, std::sync::mpsc::Sender<Job>)>> = Mutex::new(None);

/// Runs `job` on this module's delivery thread. asyncio results do not go through zklock's
/// callback thread, where user callbacks (`on_lost`) run and may block: a callback waiting for
/// a lock that an asyncio task has just been granted must not keep that task from learning it.
/// Like the core runtime, the thread is started again in a child process after fork().
fn deliver(job: impl FnOnce() + Send + 'static) {
    let pid = std::process::id();
    let mut slot = DELIVERY.lock().unwrap_or_else(|e| e.into_inner());
    let job: Job = Box::new(job);
    if let Some((owner, tx)) = slot.as_ref() {
        if *owner == pid {
            match tx.send(job) {
                Ok(()) => return,
                Err(std::sync::mpsc::SendError(job)) => return start_delivery(&mut slot, pid, job),
            }
        }
    }
    start_delivery(&mut slot, pid, job)
}

fn start_delivery(slot: &mut Option<(u32, std::sync::mpsc::Sender<Job>)>, pid: u32, first: Job) {
    let (tx, rx) = std::sync::mpsc::channel::<Job>();
    let spawned = std::thread::Builder::new()
        .name("zklock-py-asyncio".into())
        .spawn(move || {
            for job in rx {
                // Nothing may unwind out of this thread (it serves every loop of the process).
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            }
        });
    match spawned {
        Ok(_) => {
            let _ = tx.send(first);
            *slot = Some((pid, tx));
        }
        // No thread to be had: fall back to zklock's callback thread.
        Err(_) => zklock::runtime::run_callback(first),
    }
}

/// Sets an asyncio future's result or exception; runs on the loop's thread.
#[pyclass(frozen, module = "zklock._zklock")]
struct Completer {
    future: Py<PyAny>,
    outcome: Mutex<Option<Outcome>>,
}

#[pymethods]
impl Completer {
    fn __call__(&self, py: Python<'_>) -> PyResult<()> {
        let Some(outcome) = self
            .outcome
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return Ok(());
        };
        let future = self.future.bind(py);
        if future.call_method0("done")?.is_truthy()? {
            // Cancelled meanwhile: dropping the outcome releases what it holds.
            drop(outcome);
            return Ok(());
        }
        match outcome(py) {
            Ok(value) => future.call_method1("set_result", (value,))?,
            Err(err) => future.call_method1("set_exception", (err.into_value(py),))?,
        };
        Ok(())
    }
}

/// The done-callback of an asyncio future: aborts the core future when it was cancelled.
#[pyclass(frozen, module = "zklock._zklock")]
struct Canceller {
    abort: tokio::task::AbortHandle,
    /// For an acquire: cancelling through the token removes the node before the task ends.
    cancel: Option<zklock::CancelToken>,
}

#[pymethods]
impl Canceller {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if future.call_method0("cancelled")?.is_truthy()? {
            match &self.cancel {
                Some(token) => token.cancel(),
                None => self.abort.abort(),
            }
        }
        Ok(())
    }
}

/// Runs a Python callable on zklock's callback thread (where lost callbacks run). An exception
/// it raises goes to `sys.unraisablehook`.
#[pyfunction]
fn run_callback(callback: Py<PyAny>) {
    zklock::runtime::run_callback(move || call_unraisable(callback));
}

fn call_unraisable(callback: Py<PyAny>) {
    // After the interpreter has shut down (a client closed at exit makes its leases lost)
    // there is no Python left to call: the callback is skipped instead of panicking.
    let _ = Python::try_attach(|py| {
        let callback = callback.bind(py);
        if let Err(err) = callback.call0() {
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
    /// The process the client was made in (a child forked after it connected cannot use it).
    pid: u32,
}

impl PyClient {
    /// `ClientClosed` after `close()` or in a child process after fork(), before any lock
    /// object is made (the docstring of `Client.lock` promises it).
    fn check_usable(&self, py: Python<'_>) -> PyResult<()> {
        if self.client.is_closed() {
            return Err(to_py_err(
                py,
                zklock::Error::new(
                    ErrorKind::Closed,
                    format!("the client for {} is closed", self.client.hosts()),
                ),
            ));
        }
        if self.pid != std::process::id() {
            return Err(to_py_err(
                py,
                zklock::Error::new(ErrorKind::Closed,
                    "this client was created before fork(); create a new client in the child process",
                ),
            ));
        }
        Ok(())
    }
}

#[pymethods]
impl PyClient {
    #[new]
    #[pyo3(signature = (hosts, session_timeout=10.0, connect_timeout=15.0, auth=None, identity=None, acl="open"))]
    fn new(
        py: Python<'_>,
        hosts: String,
        session_timeout: f64,
        connect_timeout: f64,
        auth: Option<String>,
        identity: Option<String>,
        acl: &str,
    ) -> PyResult<Self> {
        let err = |e| to_py_err(py, e);
        let mut options = zklock::Options::default()
            .session_timeout(
                zklock::duration_from_secs_f64(session_timeout, "session_timeout").map_err(err)?,
            )
            .connect_timeout(
                zklock::duration_from_secs_f64(connect_timeout, "connect_timeout").map_err(err)?,
            )
            .acl(match acl {
                "open" => zklock::AclPolicy::Open,
                "creator" => zklock::AclPolicy::CreatorAll,
                "read-anyone" => zklock::AclPolicy::ReadAnyoneCreatorAll,
                other => {
                    return Err(invalid(
                        py,
                        format!("acl must be 'open', 'creator' or 'read-anyone', got {other:?}"),
                    ))
                }
            });
        if let Some(auth) = auth {
            options = options.auth(auth);
        }
        if let Some(identity) = identity {
            options = options.identity(identity);
        }
        let client = wait(
            py,
            async move { zklock::Client::connect(&hosts, options).await },
            None,
        )?;
        Ok(PyClient {
            client,
            pid: std::process::id(),
        })
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

    /// A mutex on `path` (a new core lock value: its own re-entrancy count).
    #[pyo3(signature = (path, reentrant=true))]
    fn mutex(&self, py: Python<'_>, path: &str, reentrant: bool) -> PyResult<NativeLock> {
        self.check_usable(py)?;
        let lock = self.client.mutex(path).map_err(|e| to_py_err(py, e))?;
        Ok(NativeLock::single(lock.reentrant(reentrant)))
    }

    /// Both sides of a read/write lock on `path`: `(read, write)`.
    fn rw_lock(&self, py: Python<'_>, path: &str) -> PyResult<(NativeLock, NativeLock)> {
        self.check_usable(py)?;
        let rw = Arc::new(self.client.rw_lock(path).map_err(|e| to_py_err(py, e))?);
        Ok((
            NativeLock::new(Inner::Read(rw.clone())),
            NativeLock::new(Inner::Write(rw)),
        ))
    }

    /// A multi-lock over existing core lock values (sharing their re-entrancy).
    fn multi_lock(&self, py: Python<'_>, members: Vec<Py<NativeLock>>) -> PyResult<NativeLock> {
        self.check_usable(py)?;
        let mut locks: Vec<&zklock::Lock> = Vec::with_capacity(members.len());
        for m in &members {
            match m.get().as_lock() {
                Some(lock) => locks.push(lock),
                None => {
                    return Err(invalid(
                        py,
                        "a multi-lock cannot contain another multi-lock",
                    ))
                }
            }
        }
        let multi = zklock::MultiLock::from_locks(locks).map_err(|e| to_py_err(py, e))?;
        Ok(NativeLock::new(Inner::Multi(multi)))
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

// ---------------------------------------------------------------------------------------------
// Locks

enum Inner {
    Single(Arc<zklock::Lock>),
    Read(Arc<zklock::RwLock>),
    Write(Arc<zklock::RwLock>),
    Multi(zklock::MultiLock),
}

/// One core lock value: a mutex, one side of a read/write lock, or a multi-lock.
#[pyclass(frozen, module = "zklock._zklock")]
struct NativeLock {
    inner: Inner,
    /// The process this value was made in. The core's re-entrant fast path does not check for
    /// fork(), so a child would "re-enter" a hold that belongs to its parent; refuse instead.
    pid: u32,
}

impl NativeLock {
    fn new(inner: Inner) -> Self {
        NativeLock {
            inner,
            pid: std::process::id(),
        }
    }

    fn single(lock: zklock::Lock) -> Self {
        NativeLock::new(Inner::Single(Arc::new(lock)))
    }

    fn check_process(&self, py: Python<'_>) -> PyResult<()> {
        if self.pid == std::process::id() {
            return Ok(());
        }
        Err(to_py_err(
            py,
            zklock::Error::new(
                ErrorKind::Closed,
                "this lock was created before fork(); create a new client in the child process",
            ),
        ))
    }

    fn as_lock(&self) -> Option<&zklock::Lock> {
        match &self.inner {
            Inner::Single(l) => Some(l),
            Inner::Read(rw) => Some(rw.read()),
            Inner::Write(rw) => Some(rw.write()),
            Inner::Multi(_) => None,
        }
    }

    fn acquire_future(
        &self,
        deadline: Option<Instant>,
        cancel: zklock::CancelToken,
    ) -> std::pin::Pin<Box<dyn Future<Output = zklock::Result<zklock::Lease>> + Send + 'static>>
    {
        match (&self.inner, self.as_lock()) {
            (Inner::Multi(m), _) => Box::pin(m.acquire_with(deadline, cancel)),
            (_, Some(lock)) => Box::pin(lock.acquire_with(deadline, cancel)),
            (_, None) => {
                Box::pin(async { Err(zklock::Error::new(ErrorKind::InvalidArgument, "no lock")) })
            }
        }
    }
}

impl NativeLock {
    /// The queue of this lock's path as a `'static` future.
    fn participants_future(
        &self,
    ) -> std::pin::Pin<
        Box<dyn Future<Output = zklock::Result<Vec<zklock::Participant>>> + Send + 'static>,
    > {
        match &self.inner {
            Inner::Single(l) => {
                let l = l.clone();
                Box::pin(async move { l.participants().await })
            }
            Inner::Read(rw) | Inner::Write(rw) => {
                let rw = rw.clone();
                Box::pin(async move { rw.participants().await })
            }
            Inner::Multi(_) => Box::pin(async {
                Err(zklock::Error::new(
                    ErrorKind::InvalidArgument,
                    "participants() of a multi-lock: ask its members",
                ))
            }),
        }
    }
}

fn lease_into_py(py: Python<'_>, lease: zklock::Lease) -> PyResult<Py<PyAny>> {
    Ok(Py::new(py, NativeLease::new(lease))?.into_any())
}

#[pymethods]
impl NativeLock {
    /// Waits for the lock (`timeout` None: forever; 0: one try) and returns its lease. Raises
    /// `LockTimeout` when the deadline passes. The GIL is released while waiting.
    #[pyo3(signature = (timeout=None))]
    fn acquire(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<NativeLease> {
        self.check_process(py)?;
        let deadline = deadline_of(py, timeout)?;
        // A re-entrant hold needs no trip to the runtime.
        if let Some(lease) = self.as_lock().and_then(|l| l.reenter()) {
            return Ok(NativeLease::new(lease));
        }
        let cancel = zklock::CancelToken::new();
        let fut = self.acquire_future(deadline, cancel.clone());
        wait(py, fut, Some(cancel)).map(NativeLease::new)
    }

    /// The asyncio twin of `acquire`: an awaitable future of the running loop.
    #[pyo3(signature = (timeout=None))]
    fn acquire_async<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.check_process(py)?;
        let deadline = deadline_of(py, timeout)?;
        let cancel = zklock::CancelToken::new();
        let fut = self.acquire_future(deadline, cancel.clone());
        future_into_py(py, fut, lease_into_py, Some(cancel))
    }

    /// This core value's re-entrant hold count (0 for a multi-lock or a non re-entrant lock).
    fn hold_count(&self) -> usize {
        self.as_lock().map(|l| l.hold_count()).unwrap_or(0)
    }

    #[getter]
    fn path(&self) -> String {
        match &self.inner {
            Inner::Multi(m) => m.paths().join(","),
            _ => self
                .as_lock()
                .map(|l| l.path().to_owned())
                .unwrap_or_default(),
        }
    }

    #[getter]
    fn paths(&self) -> Vec<String> {
        match &self.inner {
            Inner::Multi(m) => m.paths().into_iter().map(str::to_owned).collect(),
            _ => vec![self.path()],
        }
    }

    /// The queue of the lock path: `[(node, identity, token, library, kind, session_id)]`,
    /// holder first.
    fn participants(&self, py: Python<'_>) -> PyResult<Vec<ParticipantTuple>> {
        self.check_process(py)?;
        let fut = self.participants_future();
        let list = wait(py, fut, None)?;
        Ok(list
            .into_iter()
            .map(|p| {
                (
                    p.node,
                    p.identity,
                    p.token,
                    p.library.as_str().to_owned(),
                    kind_str(p.kind).to_owned(),
                    p.session_id,
                )
            })
            .collect())
    }
}

type ParticipantTuple = (String, String, i64, String, String, i64);

fn kind_str(kind: zklock::NodeKind) -> &'static str {
    match kind {
        zklock::NodeKind::Mutex => "mutex",
        zklock::NodeKind::Read => "read",
        zklock::NodeKind::Write => "write",
    }
}

// ---------------------------------------------------------------------------------------------
// Leases

/// A held lock (see `zklock.Lease` for the documented face).
#[pyclass(frozen, module = "zklock._zklock")]
struct NativeLease {
    lease: Mutex<Option<zklock::Lease>>,
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
            pid: std::process::id(),
            token: lease.token(),
            tokens: lease.tokens(),
            path: lease.path().to_owned(),
            paths: lease.paths(),
            lease: Mutex::new(Some(lease)),
        }
    }

    /// `ClientClosed` in a child process after fork(): the lease and its session belong to the
    /// parent, so the child can neither use it nor know its state (it must not read `held`).
    fn check_process(&self, py: Python<'_>) -> PyResult<()> {
        if self.pid == std::process::id() {
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
        let taken = self.lease.lock().unwrap_or_else(|e| e.into_inner()).take();
        taken.ok_or_else(|| to_py_err(py, self.not_held()))
    }

    fn state_str(&self) -> &'static str {
        match &*self.lease.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(lease) => lease.state().as_str(),
            None => LeaseState::Released.as_str(),
        }
    }

    fn not_held(&self) -> zklock::Error {
        zklock::Error::new(
            ErrorKind::NotHeld,
            format!("the lease on {} was already released", self.path),
        )
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
        if self.pid != std::process::id() {
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

fn released_str(r: Released) -> &'static str {
    match r {
        Released::Released => "released",
        Released::StillHeld => "still_held",
        Released::WasLost => "was_lost",
    }
}

fn released_into_py(py: Python<'_>, r: Released) -> PyResult<Py<PyAny>> {
    Ok(pyo3::types::PyString::new(py, released_str(r))
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

    /// 'held', 'suspended', 'lost' or 'released'; `ClientClosed` in a child process after
    /// fork().
    #[getter]
    fn state(&self, py: Python<'_>) -> PyResult<&'static str> {
        self.check_process(py)?;
        Ok(self.state_str())
    }

    fn is_held(&self, py: Python<'_>) -> PyResult<bool> {
        self.check_process(py)?;
        let held = match &*self.lease.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(lease) => lease.is_held(),
            None => false,
        };
        Ok(held)
    }

    /// Calls `callback()` once, on zklock's callback thread, if the lease is lost.
    fn on_lost(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<()> {
        self.check_process(py)?;
        if !callback.bind(py).is_callable() {
            return Err(PyTypeError::new_err("on_lost() needs a callable"));
        }
        // A released lease can no longer be lost: nothing to register then.
        if let Some(lease) = &*self.lease.lock().unwrap_or_else(|e| e.into_inner()) {
            lease.on_lost(move || call_unraisable(callback));
        }
        Ok(())
    }

    /// Calls `callback(state)` on zklock's callback thread at every change of the lease's state
    /// ('held', 'suspended', 'lost', 'released'), ending after a final state.
    fn on_state(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<()> {
        self.check_process(py)?;
        if !callback.bind(py).is_callable() {
            return Err(PyTypeError::new_err("on_state() needs a callable"));
        }
        if let Some(lease) = &*self.lease.lock().unwrap_or_else(|e| e.into_inner()) {
            lease.on_state(move |state| {
                let _ = Python::try_attach(|py| {
                    let callback = callback.bind(py);
                    if let Err(err) = callback.call1((state.as_str(),)) {
                        err.write_unraisable(py, Some(callback));
                    }
                });
            });
        }
        Ok(())
    }

    /// Releases the lease: 'released', 'still_held' (a re-entrant count went down) or
    /// 'was_lost'. Raises `NotHeld` when it was already released.
    fn release(&self, py: Python<'_>) -> PyResult<&'static str> {
        let lease = self.take(py)?;
        let result = py.detach(move || lease.blocking_release());
        result.map(released_str).map_err(|e| to_py_err(py, e))
    }

    /// The asyncio twin of `release`.
    fn release_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let lease = self.take(py)?;
        future_into_py(py, lease.release(), released_into_py, None)
    }

    fn __repr__(&self) -> String {
        format!(
            "<zklock._zklock.NativeLease path={:?} token={} state={}>",
            self.path,
            self.token,
            if self.pid == std::process::id() {
                self.state_str()
            } else {
                "forked"
            }
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Module

#[pymodule]
fn _zklock(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyClient>()?;
    m.add_class::<NativeLock>()?;
    m.add_class::<NativeLease>()?;
    m.add_function(wrap_pyfunction!(run_callback, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
