//! zklock's Python face: the native module `zklock._zklock`.
//!
//! This layer only translates: one native object per core value (a client, one core lock value,
//! one lease), Python numbers and strings in (the core's rules judge them: `Wait::from_secs`,
//! `AclPolicy::from_str`, the option checks), the core's errors out as the matching `zklock`
//! exception, and the core's names as they are. The core counts re-entrant holds per owner;
//! this module says which owner is calling (the asyncio task, else the thread) and keeps the
//! leases taken through each lock object, so that `zklock.Lock` (a subclass of `NativeLock`)
//! and `zklock.Lease` (this module's class) take and release a lock in one native call: the
//! package adds only the asyncio glue, named tuples and reprs.
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
use pyo3::pyclass::{PyTraverseError, PyVisit};
use pyo3::sync::MutexExt;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyMemoryView, PyModule, PyString, PyTuple,
};

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
    py_error(py, class_name(err.kind()), err.message().to_owned())
}

/// An instance of the `zklock._errors` class `class` (also `InvalidArgumentType`, the face's
/// own: a Python argument of the wrong type, which never reaches the core).
fn py_error(py: Python<'_>, class: &str, message: String) -> PyErr {
    let made = ERRORS
        .get_or_try_init(py, || py.import("zklock._errors").map(|m| m.unbind()))
        .and_then(|module| module.bind(py).getattr(class))
        .and_then(|class| class.call1((message.clone(),)));
    match made {
        Ok(instance) => PyErr::from_value(instance),
        // Without the Python package (never in an installed wheel) fall back to a builtin.
        Err(_) => PyRuntimeError::new_err(format!("{class}: {message}")),
    }
}

/// `InvalidArgumentType` (both `InvalidArgument` and `TypeError`): `what` must be `expected`.
fn wrong_type(py: Python<'_>, what: &str, expected: &str, got: &Bound<'_, PyAny>) -> PyErr {
    let name = got
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".to_owned());
    py_error(
        py,
        "InvalidArgumentType",
        format!("{what} must be {expected}, got {name}"),
    )
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
///
/// The outer error is a signal's; the inner result is the core's (`acquire()` turns a timeout
/// into False).
fn wait_acquire(py: Python<'_>, mut acquire: Acquire) -> PyResult<zklock::Result<zklock::Lease>> {
    if let Err(err) = zklock::support::refuse_on_runtime_thread() {
        return Ok(Err(err));
    }
    loop {
        let (done, back) = py.detach(move || (acquire.wait_for(SIGNAL_POLL), acquire));
        acquire = back;
        if let Some(result) = done {
            return Ok(result);
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
    Ok(Py::new(py, PyLease::new(lease))?.into_any())
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
        Ok(NativeLock::new(Inner::Multi(Arc::new(multi))))
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

/// The owner bit of an asyncio task (a thread ident never has it).
const TASK_BIT: u64 = 1 << 63;
/// The core's shared owner: a non re-entrant lock's holds belong to no thread.
const SHARED: u64 = 0;

static RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static CURRENT_TASK: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Who is calling, for the core's re-entrancy: the running asyncio task (its id with the top
/// bit set), else the thread (`threading.get_ident()`). Asked here rather than in the package,
/// so that an acquire or a release is one native call (issue 17: the Python code around each
/// call cost more than the call).
fn current_owner(py: Python<'_>) -> PyResult<u64> {
    let running = RUNNING_LOOP.get_or_try_init(py, || {
        py.import("asyncio.events")?
            .getattr("_get_running_loop")
            .map(Bound::unbind)
    })?;
    let event_loop = running.bind(py).call0()?;
    if !event_loop.is_none() {
        let current = CURRENT_TASK.get_or_try_init(py, || {
            py.import("asyncio")?
                .getattr("current_task")
                .map(Bound::unbind)
        })?;
        let task = current.bind(py).call1((event_loop,))?;
        if !task.is_none() {
            // `id(task)`: the task lives while it runs, so no other task has its id meanwhile.
            return Ok(task.as_ptr() as usize as u64 | TASK_BIT);
        }
    }
    // SAFETY: a plain function of the interpreter, called attached; what `threading.get_ident`
    // returns.
    Ok(unsafe { pyo3::ffi::PyThread_get_thread_ident() } as u64)
}

/// An argument that may be left out: told apart from an explicit `None`, which is a wrong type
/// for `acquire(blocking, timeout)` as it was when the package checked it.
enum Arg<'py> {
    Missing,
    Given(Bound<'py, PyAny>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for Arg<'py> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Arg::Given(obj.to_owned()))
    }
}

/// A number of seconds from Python: an int or a float, not a bool.
fn seconds_of(py: Python<'_>, value: &Bound<'_, PyAny>, what: &str) -> PyResult<f64> {
    if value.is_instance_of::<PyBool>()
        || !(value.is_instance_of::<PyInt>() || value.is_instance_of::<PyFloat>())
    {
        return Err(wrong_type(py, what, "a number of seconds", value));
    }
    value.extract::<f64>()
}

/// `threading.Lock.acquire`'s arguments as a timeout for the core (0: one try, -1: forever).
fn acquire_timeout(py: Python<'_>, blocking: Arg<'_>, timeout: Arg<'_>) -> PyResult<f64> {
    let blocking = match blocking {
        Arg::Missing => true,
        Arg::Given(b) => {
            if !b.is_instance_of::<PyInt>() {
                return Err(wrong_type(py, "blocking", "a bool", &b));
            }
            b.is_truthy()?
        }
    };
    let number = match timeout {
        Arg::Missing => -1.0,
        Arg::Given(t) => seconds_of(py, &t, "timeout")?,
    };
    if !blocking {
        if number != -1.0 {
            return Err(to_py_err(
                py,
                zklock::Error::new(
                    ErrorKind::InvalidArgument,
                    "can't specify a timeout for a non-blocking acquire",
                ),
            ));
        }
        return Ok(0.0);
    }
    Ok(number)
}

/// The `with` statement's way out: `__exit__(exc_type, exc, tb)`.
type ExitArgs<'py> = (
    Option<Bound<'py, PyAny>>,
    Option<Bound<'py, PyAny>>,
    Option<Bound<'py, PyAny>>,
);

/// The leases taken through one lock object and not yet released, oldest first, each with its
/// owner. `acquire()` returns a bool and `release()` finds the lease again, so a hold taken that
/// way keeps only the core's lease here; a `Lease` object is made when Python asks for one
/// (`with`, `lock.lease`, asyncio) and then kept instead, so that it stays the same object.
///
/// Locked only for list work, with the GIL held and never across a Python call (a Python
/// object is neither made nor dropped under it); a thread that finds it taken waits detached
/// (`lock_py_attached`), so it cannot deadlock with the GIL.
struct Book {
    held: Mutex<Vec<Held>>,
}

struct Held {
    owner: u64,
    /// Taken by `with lock` / `async with lock`: that exit releases it, and it stays here
    /// (released or not) until then.
    entered: bool,
    slot: Slot,
}

enum Slot {
    /// A hold taken by `acquire()`: the core's lease and the process it was taken in.
    Bare(zklock::Lease, u32),
    Object(Py<PyLease>),
}

impl Slot {
    /// Released (or tried to be): no longer this owner's to release.
    fn done(&self) -> bool {
        match self {
            Slot::Bare(..) => false,
            Slot::Object(lease) => lease.get().done(),
        }
    }
}

impl Book {
    fn new() -> Arc<Book> {
        Arc::new(Book {
            held: Mutex::new(Vec::new()),
        })
    }

    fn entries<'a>(&'a self, py: Python<'_>) -> std::sync::MutexGuard<'a, Vec<Held>> {
        self.held
            .lock_py_attached(py)
            .unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, py: Python<'_>, held: Held) {
        let mut entries = self.entries(py);
        if entries.capacity() == 0 {
            // Most locks hold one lease at a time: room for one, not the four `push` makes
            // first (more holds grow the list as usual).
            entries.reserve_exact(1);
        }
        entries.push(held);
    }

    /// The index of `owner`'s most recent lease that is not released.
    fn latest(entries: &[Held], owner: u64) -> Option<usize> {
        entries
            .iter()
            .rposition(|h| h.owner == owner && !h.slot.done())
    }

    /// Forgets a `Lease` object that was released (or tried to be), unless a `with` still has
    /// to exit it. Returns what to drop once the book is unlocked.
    fn forget(&self, py: Python<'_>, lease: *mut pyo3::ffi::PyObject) -> Option<Held> {
        let mut entries = self.entries(py);
        let i = entries.iter().rposition(|h| {
            matches!(&h.slot, Slot::Object(o) if o.as_ptr() == lease) && !h.entered
        })?;
        Some(entries.remove(i))
    }

    /// Makes the entry at `i` (of `owner`) a `Lease` object if it is not one yet, and returns
    /// the object. The object is made with the book unlocked (making a Python object may run
    /// the garbage collector and other threads), empty, and the lease moved into it after.
    fn object_at(self: &Arc<Self>, py: Python<'_>, i: usize) -> PyResult<Py<PyLease>> {
        let (owner, info) = {
            let entries = self.entries(py);
            let held = &entries[i];
            match &held.slot {
                Slot::Object(lease) => return Ok(lease.clone_ref(py)),
                Slot::Bare(lease, pid) => (held.owner, LeaseInfo::of(lease, *pid)),
            }
        };
        let token = info.token;
        let object = Py::new(py, PyLease::empty(info))?;
        let mut entries = self.entries(py);
        // Other threads may have changed the list meanwhile (a semaphore's release() takes any
        // thread's lease): find the entry again. This owner's bare holds of one node are alike.
        let same = |h: &Held| {
            h.owner == owner && matches!(&h.slot, Slot::Bare(l, _) if l.token() == token)
        };
        let found = match entries.get(i) {
            Some(h) if same(h) => Some(i),
            _ => entries.iter().rposition(same),
        };
        if let Some(i) = found {
            let slot = std::mem::replace(&mut entries[i].slot, Slot::Object(object.clone_ref(py)));
            if let Slot::Bare(lease, _) = slot {
                *lock(&object.get().lease) = Some(lease);
            }
        }
        drop(entries);
        object.get().set_book(Arc::downgrade(self));
        if found.is_none() {
            // Released meanwhile by another thread: the empty object reads 'released'.
            object.get().done.store(true, Ordering::Relaxed);
        }
        Ok(object)
    }
}

/// Garbage collection never releases a lock: the holds of a collected lock object that
/// `acquire()` took are detached, each with a `ResourceWarning` (see `drop_unreleased`).
impl Drop for Book {
    fn drop(&mut self) {
        let entries = std::mem::take(self.held.get_mut().unwrap_or_else(|e| e.into_inner()));
        for held in entries {
            if let Slot::Bare(lease, pid) = held.slot {
                drop_unreleased(lease, pid);
            }
        }
    }
}

/// One core lock value (a mutex, one side of a read/write lock, a multi-lock, a semaphore)
/// and the leases taken through this object: the base of `zklock.Lock`, whose `acquire`,
/// `release`, `with`, `locked`, `hold_count` and `lease` are these methods. The package adds
/// only the asyncio glue and the named tuples.
#[pyclass(frozen, subclass, weakref, module = "zklock._zklock")]
struct NativeLock {
    inner: Inner,
    /// The `zklock.Client` it was made by (None on the value `Client.mutex()` & co. return).
    client: Option<Py<PyAny>>,
    kind: &'static str,
    reentrant: bool,
    /// Each thread (task) keeps its own leases, also of a semaphore, which is not re-entrant.
    per_owner: bool,
    book: Arc<Book>,
}

enum Inner {
    Single(Arc<zklock::Lock>),
    Read(Arc<zklock::RwLock>),
    Write(Arc<zklock::RwLock>),
    Multi(Arc<zklock::MultiLock>),
}

impl Inner {
    fn clone_ref(&self) -> Inner {
        match self {
            Inner::Single(l) => Inner::Single(l.clone()),
            Inner::Read(rw) => Inner::Read(rw.clone()),
            Inner::Write(rw) => Inner::Write(rw.clone()),
            Inner::Multi(m) => Inner::Multi(m.clone()),
        }
    }
}

const KINDS: [&str; 5] = ["mutex", "read", "write", "multi", "semaphore"];

impl NativeLock {
    fn new(inner: Inner) -> Self {
        NativeLock {
            inner,
            client: None,
            kind: "",
            reentrant: true,
            per_owner: true,
            book: Book::new(),
        }
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

    /// Whose holds these are: the calling thread (task), or the shared owner.
    fn key(&self, py: Python<'_>) -> PyResult<u64> {
        if self.per_owner {
            current_owner(py)
        } else {
            Ok(SHARED)
        }
    }

    /// Takes the lock for `owner` within `timeout` (the core's rule; None: forever). A
    /// re-entrant hold needs no trip to the runtime.
    fn take(
        &self,
        py: Python<'_>,
        owner: u64,
        timeout: Option<f64>,
    ) -> PyResult<zklock::Result<zklock::Lease>> {
        let wait = wait_of(py, timeout)?;
        if let Some(lease) = self.as_lock().and_then(|l| l.reenter_as(Owner(owner))) {
            return Ok(Ok(lease));
        }
        wait_acquire(py, self.start(Owner(owner), wait))
    }

    /// Takes the lock for the caller and keeps the lease as a `Lease` object.
    fn take_object(
        &self,
        py: Python<'_>,
        timeout: Option<f64>,
        entered: bool,
    ) -> PyResult<Py<PyLease>> {
        let owner = self.key(py)?;
        let lease = self.take(py, owner, timeout)?.py(py)?;
        let object = Py::new(py, PyLease::new(lease))?;
        self.keep_object(py, &object, owner, entered);
        Ok(object)
    }

    fn keep_object(&self, py: Python<'_>, object: &Py<PyLease>, owner: u64, entered: bool) {
        object.get().set_book(Arc::downgrade(&self.book));
        self.book.push(
            py,
            Held {
                owner,
                entered,
                slot: Slot::Object(object.clone_ref(py)),
            },
        );
    }

    /// The index of the lease `release()` releases: this owner's most recent one, else (a
    /// semaphore, as `threading.Semaphore` allows) the oldest lease of any thread.
    fn release_target(&self, entries: &[Held], owner: u64) -> Option<usize> {
        Book::latest(entries, owner).or_else(|| {
            if self.kind == "semaphore" {
                entries.iter().position(|h| !h.slot.done())
            } else {
                None
            }
        })
    }

    fn not_held(&self, py: Python<'_>, owner: u64) -> PyErr {
        let message = if self.kind == "semaphore" {
            format!(
                "release of the semaphore {}: this process holds no lease of it",
                self.path()
            )
        } else {
            let who = if !self.reentrant {
                "process"
            } else if owner & TASK_BIT != 0 {
                "task"
            } else {
                "thread"
            };
            format!(
                "release of the lock {}: this {who} does not hold it",
                self.path()
            )
        };
        py_error(py, "NotHeld", message)
    }

    /// The `Lease` object `release()` would release, made if need be (the asyncio release).
    fn release_object(&self, py: Python<'_>) -> PyResult<Py<PyLease>> {
        let owner = self.key(py)?;
        let found = self.release_target(&self.book.entries(py), owner);
        match found {
            Some(i) => self.book.object_at(py, i),
            None => Err(self.not_held(py, owner)),
        }
    }

    fn path(&self) -> String {
        self.paths().join(",")
    }

    fn paths(&self) -> Vec<String> {
        match (&self.inner, self.as_lock()) {
            (Inner::Multi(m), _) => m.paths().into_iter().map(str::to_owned).collect(),
            (_, Some(lock)) => vec![lock.path().to_owned()],
            (_, None) => Vec::new(),
        }
    }

    fn hold_count_of(&self, owner: u64) -> usize {
        self.as_lock().map_or(0, |l| l.hold_count_as(Owner(owner)))
    }
}

#[pymethods]
impl NativeLock {
    /// `zklock.Lock(client, native, kind, reentrant)`: a lock object over the core lock value
    /// of `native` (made by the client), with a book of its own.
    #[new]
    fn py_new(
        py: Python<'_>,
        client: Py<PyAny>,
        native: &Bound<'_, NativeLock>,
        kind: &str,
        reentrant: bool,
    ) -> PyResult<Self> {
        let Some(kind) = KINDS.iter().copied().find(|k| *k == kind) else {
            return Err(to_py_err(
                py,
                zklock::Error::new(ErrorKind::InvalidArgument, format!("no lock kind {kind:?}")),
            ));
        };
        Ok(NativeLock {
            inner: native.get().inner.clone_ref(),
            client: Some(client),
            kind,
            reentrant,
            per_owner: reentrant || kind == "semaphore",
            book: Book::new(),
        })
    }

    /// Waits for the lock like `threading.Lock.acquire`: `blocking=False` tries once, `timeout`
    /// (seconds, -1 forever) bounds the wait. Returns False when the lock was not taken (no
    /// node is left behind). The GIL is released while waiting.
    #[pyo3(signature = (blocking = Arg::Missing, timeout = Arg::Missing))]
    fn acquire(&self, py: Python<'_>, blocking: Arg<'_>, timeout: Arg<'_>) -> PyResult<bool> {
        let timeout = acquire_timeout(py, blocking, timeout)?;
        let owner = self.key(py)?;
        let lease = match self.take(py, owner, Some(timeout))? {
            Ok(lease) => lease,
            Err(err) if err.kind() == ErrorKind::Timeout => return Ok(false),
            Err(err) => return Err(to_py_err(py, err)),
        };
        let pid = zklock::support::current_pid();
        self.book.push(
            py,
            Held {
                owner,
                entered: false,
                slot: Slot::Bare(lease, pid),
            },
        );
        Ok(true)
    }

    /// Releases this owner's most recent hold (a semaphore: else the oldest lease of this
    /// object held by any thread). Raises `NotHeld` when this thread (task) holds nothing.
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        let owner = self.key(py)?;
        let mut entries = self.book.entries(py);
        let Some(i) = self.release_target(&entries, owner) else {
            drop(entries);
            return Err(self.not_held(py, owner));
        };
        match &entries[i].slot {
            Slot::Bare(lease, pid) if *pid != zklock::support::current_pid() => {
                let path = lease.path().to_owned();
                drop(entries); // the error is a Python object: made with the book unlocked
                Err(forked(py, &path))
            }
            Slot::Bare(..) => {
                let Slot::Bare(lease, _) = entries.remove(i).slot else {
                    unreachable!()
                };
                drop(entries);
                release_now(py, lease).map(drop)
            }
            Slot::Object(object) => {
                let object = object.clone_ref(py);
                drop(entries);
                PyLease::release_bound(object.bind(py)).map(drop)
            }
        }
    }

    /// True while any thread or task of this process holds the lock through this object (or
    /// this thread or task holds it through a multi-lock made of it).
    fn locked(&self, py: Python<'_>) -> PyResult<bool> {
        let objects: Vec<Py<PyLease>> = {
            let entries = self.book.entries(py);
            let mut objects = Vec::new();
            for held in entries.iter() {
                match &held.slot {
                    Slot::Bare(lease, pid) => {
                        if *pid != zklock::support::current_pid() {
                            let path = lease.path().to_owned();
                            drop(entries);
                            return Err(forked(py, &path));
                        }
                        if matches!(lease.state(), LeaseState::Held | LeaseState::Suspended) {
                            return Ok(true);
                        }
                    }
                    Slot::Object(object) if !object.get().done() => {
                        objects.push(object.clone_ref(py))
                    }
                    Slot::Object(_) => {}
                }
            }
            objects
        };
        for object in &objects {
            let lease = object.get();
            lease.check_process(py)?;
            if matches!(lease.state(), LeaseState::Held | LeaseState::Suspended) {
                return Ok(true);
            }
        }
        Ok(self.hold_count(py)? > 0)
    }

    /// How many holds this thread (task) has on the lock, as the core counts them (0 when it
    /// holds none, or its lease was lost).
    fn hold_count(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.hold_count_of(self.key(py)?))
    }

    /// This thread's (task's) lease while it holds the lock (state 'held' or 'suspended'),
    /// else None. A lost lease is not returned, but still needs releasing (`release()` does
    /// that without raising).
    #[getter]
    fn lease(&self, py: Python<'_>) -> PyResult<Option<Py<PyLease>>> {
        let owner = self.key(py)?;
        let found = Book::latest(&self.book.entries(py), owner);
        let Some(i) = found else {
            return Ok(None);
        };
        let object = self.book.object_at(py, i)?;
        let lease = object.get();
        lease.check_process(py)?;
        Ok(matches!(lease.state(), LeaseState::Held | LeaseState::Suspended).then_some(object))
    }

    fn __enter__(&self, py: Python<'_>) -> PyResult<Py<PyLease>> {
        self.take_object(py, None, true)
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: ExitArgs<'_>) -> PyResult<()> {
        match self._exit(py)? {
            Some(lease) => PyLease::release_bound(lease.bind(py)).map(drop),
            None => Ok(()),
        }
    }

    /// The lease the innermost `with` of this owner entered (forgotten here), if it still
    /// needs releasing.
    fn _exit(&self, py: Python<'_>) -> PyResult<Option<Py<PyLease>>> {
        let owner = self.key(py)?;
        let held = {
            let mut entries = self.book.entries(py);
            let Some(i) = entries.iter().rposition(|h| h.owner == owner && h.entered) else {
                return Ok(None);
            };
            entries.remove(i)
        };
        match held.slot {
            Slot::Object(lease) if !lease.get().done() => Ok(Some(lease)),
            _ => Ok(None),
        }
    }

    /// Takes the lock (`timeout` by the core's rule; None: forever) and returns the lease;
    /// `entered`: a `with` will release it.
    #[pyo3(signature = (timeout = None, entered = false))]
    fn _acquire(
        &self,
        py: Python<'_>,
        timeout: Option<f64>,
        entered: bool,
    ) -> PyResult<Py<PyLease>> {
        self.take_object(py, timeout, entered)
    }

    /// Who the caller is for this lock (its thread or task, or the shared owner).
    fn _key(&self, py: Python<'_>) -> PyResult<u64> {
        self.key(py)
    }

    /// The asyncio acquire: an awaitable future of the running loop for `owner` (from
    /// `_key()`); the package keeps the lease it gets with `_keep`.
    #[pyo3(signature = (owner, timeout=None))]
    fn _acquire_async<'py>(
        &self,
        py: Python<'py>,
        owner: u64,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let wait = wait_of(py, timeout)?;
        acquire_into_py(py, self.start(Owner(owner), wait))
    }

    /// Keeps a lease taken by `_acquire_async` as `owner`'s.
    fn _keep(&self, py: Python<'_>, lease: Py<PyLease>, owner: u64, entered: bool) -> Py<PyLease> {
        self.keep_object(py, &lease, owner, entered);
        lease
    }

    /// The lease `release()` would release, as a `Lease` object (for the asyncio release);
    /// `NotHeld` when there is none.
    fn _release_target(&self, py: Python<'_>) -> PyResult<Py<PyLease>> {
        self.release_object(py)
    }

    /// The garbage collector's view of what this object holds (its client, the `Lease`
    /// objects of its book): a cycle through it (`client.lock_of_mine = lock`) is then found,
    /// as it was when the package's Lock kept them in its `__dict__`. The book is skipped when
    /// another thread has it locked (a traversal must not wait).
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Some(client) = &self.client {
            visit.call(client)?;
        }
        if let Ok(entries) = self.book.held.try_lock() {
            for held in entries.iter() {
                if let Slot::Object(lease) = &held.slot {
                    visit.call(lease)?;
                }
            }
        }
        Ok(())
    }

    /// How many leases this object keeps (none once every hold taken through it was
    /// released and every `with` exited).
    #[getter]
    fn _held(&self, py: Python<'_>) -> usize {
        self.book.entries(py).len()
    }

    /// The lock path (comma-separated paths for a multi-lock).
    #[getter(path)]
    fn path_py(&self) -> String {
        self.path()
    }

    #[getter(paths)]
    fn paths_py(&self) -> Vec<String> {
        self.paths()
    }

    /// 'mutex', 'read', 'write', 'multi' or 'semaphore'.
    #[getter]
    fn kind(&self) -> &'static str {
        self.kind
    }

    #[getter]
    fn reentrant(&self) -> bool {
        self.reentrant
    }

    #[getter]
    fn client(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.client.as_ref().map(|c| c.clone_ref(py))
    }

    /// The queue of the lock path: `[(node, identity, token, library, kind, session_id,
    /// max_leases)]`, holder first (a semaphore's leases and guard waiters follow).
    fn _participants(&self, py: Python<'_>) -> PyResult<Vec<ParticipantTuple>> {
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

/// Releases a core lease taken in this process: a re-entrant hold that only counts down keeps
/// the GIL (nothing to wait for), a last hold waits for the delete with the GIL released.
fn release_now(py: Python<'_>, lease: zklock::Lease) -> PyResult<zklock::Released> {
    let lease = match lease.release_counted() {
        Ok(released) => return Ok(released),
        Err(lease) => lease,
    };
    py.detach(move || lease.blocking_release()).py(py)
}

/// `ClientClosed` in a child process after fork(): a lease and its session belong to the
/// parent, so the child can neither use it nor know its state (it must not read `held`).
fn forked(py: Python<'_>, path: &str) -> PyErr {
    to_py_err(
        py,
        zklock::Error::new(
            ErrorKind::Closed,
            format!(
                "the lease on {path} was taken before fork(); it belongs to the parent process, \
                 which alone can know its state or release it"
            ),
        ),
    )
}

/// A lease nobody will release (its lock object or `Lease` was collected): a lease that is
/// still held (or suspended) is detached, not released, with a `ResourceWarning` naming the
/// path; its node stays until the client closes, its session ends or the process exits (as
/// with kazoo and Curator). A released or lost lease has nothing to keep and is dropped as
/// usual; a lease inherited through fork() belongs to the parent and is left alone.
fn drop_unreleased(lease: zklock::Lease, pid: u32) {
    if pid != zklock::support::current_pid() {
        lease.detach();
        return;
    }
    if !matches!(lease.state(), LeaseState::Held | LeaseState::Suspended) {
        return;
    }
    let message = format!(
        "a zklock lease on {} was garbage-collected while held; the lock stays held until \
         its client is closed or the process exits (release the lease, or use `with`)",
        lease.path()
    );
    lease.detach();
    // Dropped by the garbage collector, with the GIL held; after the interpreter is gone
    // there is nobody left to warn.
    let _ = Python::try_attach(|py| warn_resource(py, &message));
}

// ---------------------------------------------------------------------------------------------
// Leases

/// What a `Lease` object keeps of its lease for after the release.
struct LeaseInfo {
    token: i64,
    path: String,
    /// A multi-lock's members (tokens, paths); a single lock's are its own.
    multi: Option<Box<(Vec<i64>, Vec<String>)>>,
    pid: u32,
}

impl LeaseInfo {
    fn of(lease: &zklock::Lease, pid: u32) -> LeaseInfo {
        let paths = lease.paths();
        LeaseInfo {
            token: lease.token(),
            path: lease.path().to_owned(),
            multi: (paths.len() > 1).then(|| Box::new((lease.tokens(), paths))),
            pid,
        }
    }
}

static EVENT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// A new `threading.Event`.
fn new_event(py: Python<'_>) -> PyResult<Py<PyAny>> {
    let class = EVENT.get_or_try_init(py, || {
        py.import("threading")?.getattr("Event").map(Bound::unbind)
    })?;
    Ok(class.bind(py).call0()?.unbind())
}

fn check_callable(py: Python<'_>, callback: &Bound<'_, PyAny>, what: &str) -> PyResult<()> {
    if callback.is_callable() {
        return Ok(());
    }
    let name = callback
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".to_owned());
    Err(py_error(
        py,
        "InvalidArgumentType",
        format!("{what}() needs a callable, got {name}"),
    ))
}

/// A held lock: its fencing token, its node, its state and a lost signal.
///
/// `state` is 'held', 'suspended' (disconnected: we cannot know whether we still hold it),
/// 'lost' (final) or 'released'. `lost` is a `threading.Event` set when the lease is lost;
/// `on_lost(callback)` calls `callback()` once, from zklock's callback thread.
///
/// A lease stays held until it is released, its client is closed or the process exits:
/// garbage collection never releases it (a lease collected while held emits a
/// `ResourceWarning` and its node stays until the client closes). In a child process made by
/// `fork()`, a lease of the parent raises `ClientClosed` for its state, `lost`, callbacks and
/// release.
#[pyclass(frozen, weakref, module = "zklock", name = "Lease")]
struct PyLease {
    lease: Mutex<Option<zklock::Lease>>,
    /// Release was asked (`_done`): no longer its owner's to release, whatever came of it.
    done: AtomicBool,
    /// It was lost before it was released (an `on_lost` registered later still runs).
    lost_before_release: AtomicBool,
    token: i64,
    path: String,
    multi: Option<Box<(Vec<i64>, Vec<String>)>>,
    /// The process the lease was taken in (its session cannot be used after fork()).
    pid: u32,
    /// The book of the lock object it was taken through, to leave it when released.
    book: std::sync::OnceLock<std::sync::Weak<Book>>,
    /// `lost` and `revoke_requested`, made on first use: most leases are never asked.
    lost_event: PyOnceLock<Py<PyAny>>,
    revoke_event: PyOnceLock<Py<PyAny>>,
}

impl PyLease {
    fn new(lease: zklock::Lease) -> Self {
        let object = PyLease::empty(LeaseInfo::of(&lease, zklock::support::current_pid()));
        *lock(&object.lease) = Some(lease);
        object
    }

    fn empty(info: LeaseInfo) -> Self {
        PyLease {
            lease: Mutex::new(None),
            done: AtomicBool::new(false),
            lost_before_release: AtomicBool::new(false),
            token: info.token,
            path: info.path,
            multi: info.multi,
            pid: info.pid,
            book: std::sync::OnceLock::new(),
            lost_event: PyOnceLock::new(),
            revoke_event: PyOnceLock::new(),
        }
    }

    fn set_book(&self, book: std::sync::Weak<Book>) {
        let _ = self.book.set(book);
    }

    fn done(&self) -> bool {
        self.done.load(Ordering::Relaxed)
    }

    /// `ClientClosed` in a child process after fork().
    fn check_process(&self, py: Python<'_>) -> PyResult<()> {
        if self.pid == zklock::support::current_pid() {
            return Ok(());
        }
        Err(forked(py, &self.path))
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

    /// Marks the lease done (release was asked, whatever came of it) and leaves its lock
    /// object's book, unless a `with` still has to exit it.
    fn forget(slf: &Bound<'_, PyLease>) {
        let this = slf.get();
        this.done.store(true, Ordering::Relaxed);
        if let Some(book) = this.book.get().and_then(std::sync::Weak::upgrade) {
            let forgotten = book.forget(slf.py(), slf.as_ptr());
            drop(forgotten); // the book unlocked: dropping the entry may run Python
        }
    }

    fn release_bound(slf: &Bound<'_, PyLease>) -> PyResult<&'static str> {
        let py = slf.py();
        let taken = slf.get().take(py);
        let released = taken.and_then(|lease| release_now(py, lease));
        PyLease::forget(slf);
        Ok(released?.as_str())
    }

    fn event(
        &self,
        py: Python<'_>,
        cell: &PyOnceLock<Py<PyAny>>,
        listen: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<()>,
    ) -> PyResult<Py<PyAny>> {
        if let Some(event) = cell.get(py) {
            return Ok(event.clone_ref(py));
        }
        let event = new_event(py)?;
        // Made outside any lock (making it runs Python); the first made is the one kept, and
        // only that one listens.
        if cell.set(py, event.clone_ref(py)).is_ok() {
            listen(event.bind(py))?;
        }
        Ok(cell.get(py).map_or(event, |e| e.clone_ref(py)))
    }
}

/// Garbage collection never releases a lock (see `drop_unreleased`).
impl Drop for PyLease {
    fn drop(&mut self) {
        if let Some(lease) = self
            .lease
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            drop_unreleased(lease, self.pid);
        }
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

type GuardedWriteArgs = Vec<(String, String, Option<Vec<u8>>)>;

/// A list of guarded writes from Python: `(op, path)` or `(op, path, data)` tuples, with the
/// types checked here (the core judges the values).
fn writes_of(py: Python<'_>, writes: &Bound<'_, PyAny>) -> PyResult<GuardedWriteArgs> {
    let iterable = !(writes.is_instance_of::<PyString>() || writes.is_instance_of::<PyBytes>())
        && writes.try_iter().is_ok();
    if !iterable {
        let name = writes
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        return Err(py_error(
            py,
            "InvalidArgumentType",
            format!("guarded_write() needs a list of writes, got {name}"),
        ));
    }
    let mut out = Vec::new();
    for w in writes.try_iter()? {
        let w = w?;
        let tuple = w
            .cast::<PyTuple>()
            .ok()
            .filter(|t| matches!(t.len(), 2 | 3));
        let Some(tuple) = tuple else {
            let name = w
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default();
            return Err(py_error(
                py,
                "InvalidArgumentType",
                format!("a guarded write is (op, path) or (op, path, data), got {name}"),
            ));
        };
        let text = |i: usize, what: &str| -> PyResult<String> {
            let item = tuple.get_item(i)?;
            if !item.is_instance_of::<PyString>() {
                return Err(wrong_type(py, what, "a str", &item));
            }
            item.extract()
        };
        let op = text(0, "the write's op")?;
        let path = text(1, "the write's path")?;
        let data = if tuple.len() == 3 {
            let item = tuple.get_item(2)?;
            let bytes_like = item.is_instance_of::<PyBytes>()
                || item.is_instance_of::<PyByteArray>()
                || item.is_instance_of::<PyMemoryView>();
            if !bytes_like {
                return Err(wrong_type(py, "the write's data", "bytes", &item));
            }
            let made = py.get_type::<PyBytes>().call1((item,))?;
            Some(made.cast::<PyBytes>()?.as_bytes().to_vec())
        } else {
            None
        };
        out.push((op, path, data));
    }
    Ok(out)
}

#[pymethods]
impl PyLease {
    /// The fencing token: the czxid of our lock node (for a multi-lock, the largest).
    #[getter]
    fn token(&self) -> i64 {
        self.token
    }

    /// Every member's token (one for a plain lock), in path order.
    #[getter]
    fn tokens(&self) -> Vec<i64> {
        self.multi
            .as_ref()
            .map_or_else(|| vec![self.token], |m| m.0.clone())
    }

    /// Full path of our lock node (the first member's for a multi-lock).
    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// Full paths of every member's node.
    #[getter]
    fn paths(&self) -> Vec<String> {
        self.multi
            .as_ref()
            .map_or_else(|| vec![self.path.clone()], |m| m.1.clone())
    }

    /// 'held', 'suspended', 'lost' or 'released'.
    #[getter(state)]
    fn state_name(&self, py: Python<'_>) -> PyResult<&'static str> {
        self.check_process(py)?;
        Ok(self.state().as_str())
    }

    /// True while the state is 'held'.
    fn is_held(&self, py: Python<'_>) -> PyResult<bool> {
        self.check_process(py)?;
        Ok(self.state() == LeaseState::Held)
    }

    /// Released (or tried to be).
    #[getter]
    fn _done(&self) -> bool {
        self.done()
    }

    /// A `threading.Event`, set once the lease is lost.
    #[getter]
    fn lost(slf: &Bound<'_, PyLease>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let this = slf.get();
        this.check_process(py)?;
        this.event(py, &this.lost_event, |event| {
            if this.state() == LeaseState::Lost {
                event.call_method0("set")?; // visible at once
            }
            this.on_lost(py, event.getattr("set")?)
        })
    }

    /// A `threading.Event`, set once someone asks this holder to let go: the data of its node
    /// was set to `__REVOKE__` (`client.revoke(path)`, `zklock revoke`, or Curator's
    /// `Revoker.attemptRevoke`). Only a request: the lease stays held until released. Opt-in,
    /// as Curator's `makeRevocable`: nothing listens until this is read.
    #[getter]
    fn revoke_requested(slf: &Bound<'_, PyLease>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let this = slf.get();
        this.check_process(py)?;
        this.event(py, &this.revoke_event, |event| {
            this.on_revoke(py, event.getattr("set")?)?;
            if this.is_revoke_requested(py)? {
                event.call_method0("set")?; // asked before we listened: visible at once
            }
            Ok(())
        })
    }

    /// Calls `callback()` once, from zklock's callback thread, if the lease is lost (at once,
    /// on that thread, if it already is). The callback may call into zklock.
    fn on_lost(&self, py: Python<'_>, callback: Bound<'_, PyAny>) -> PyResult<()> {
        check_callable(py, &callback, "on_lost")?;
        self.check_process(py)?;
        let callback = callback.unbind();
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

    /// Calls `callback()` once, from zklock's callback thread, when a revocation is requested
    /// while the lease is held (Curator's `RevocationListener`); never after the lease was
    /// released or lost. The callback may call into zklock (release the lease).
    fn on_revoke(&self, py: Python<'_>, callback: Bound<'_, PyAny>) -> PyResult<()> {
        check_callable(py, &callback, "on_revoke")?;
        self.check_process(py)?;
        let callback = callback.unbind();
        if let Some(lease) = &*lock(&self.lease) {
            lease.on_revoke(move || call_unraisable(&callback, None));
        }
        Ok(())
    }

    /// Calls `callback(state)` from zklock's callback thread with the lease's current state
    /// first, then at every change ('held', 'suspended', 'lost', 'released'), ending after a
    /// final state; 'lost' comes at most once.
    fn on_state(&self, py: Python<'_>, callback: Bound<'_, PyAny>) -> PyResult<()> {
        check_callable(py, &callback, "on_state")?;
        self.check_process(py)?;
        let callback = callback.unbind();
        match &*lock(&self.lease) {
            Some(lease) => lease.subscribe(move |state| call_unraisable(&callback, Some(state))),
            None => zklock::support::run_callback(move || {
                call_unraisable(&callback, Some(LeaseState::Released))
            }),
        }
        Ok(())
    }

    /// Releases the lease and says how: 'released', 'still-held' (a re-entrant hold counted
    /// down) or 'was-lost'. Releasing a lost lease succeeds; releasing twice raises `NotHeld`.
    fn release(slf: &Bound<'_, PyLease>) -> PyResult<&'static str> {
        PyLease::release_bound(slf)
    }

    /// The asyncio twin of `release`: an awaitable.
    fn release_async<'py>(slf: &Bound<'py, PyLease>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        // Outside a running loop this raises before anything is taken (as awaiting the
        // package's coroutine did), instead of releasing a lease nobody would hear of.
        py.import("asyncio")?.call_method0("get_running_loop")?;
        let taken = slf.get().take(py);
        PyLease::forget(slf);
        future_into_py(py, taken?.release(), released_into_py)
    }

    /// Runs ZooKeeper writes only while this lease holds the lock: `("create", path, data)`,
    /// `("set_data", path, data)`, `("delete", path)` go in one multi request with a check
    /// that the lease's node still exists, so all apply or none. Returns per write the created
    /// path, the new data version, or None for a delete. Raises `LockLost` when the lease was
    /// lost (nothing applied), the write's own error (e.g. `ZooKeeperError`) when a write
    /// fails (nothing applied either). The GIL is released meanwhile.
    fn guarded_write(&self, py: Python<'_>, writes: &Bound<'_, PyAny>) -> PyResult<Vec<Py<PyAny>>> {
        let writes = writes_of(py, writes)?;
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

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let state = if self.pid == zklock::support::current_pid() {
            self.state().as_str()
        } else {
            "forked" // a lease of the parent process, seen in a child
        };
        let path = PyString::new(py, &self.path).repr()?;
        Ok(format!(
            "<zklock.Lease path={path} token={} state='{state}'>",
            self.token
        ))
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
    m.add_class::<PyLease>()?;
    m.add_function(wrap_pyfunction!(check_timeout, m)?)?;
    m.add_function(wrap_pyfunction!(set_log_sink, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
