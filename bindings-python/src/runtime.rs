//! Waiting with the GIL released, asyncio futures completed from zklock's runtime
//! (`LoopFuture`, `Completer`, `Canceller`), and Python callbacks run from zklock's threads
//! (user callbacks, the log sink).

use std::future::Future;
use std::str::FromStr;
use std::sync::mpsc::{sync_channel, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use zklock::{Acquire, CallbackQueue, ErrorKind, LeaseState};

use crate::errors::{to_py_err, IntoPy};
use crate::exit_gate;

/// How often a blocked Python thread wakes up to look for signals.
pub(crate) const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// How long a cancelled acquire may take to end (the core promises 100 ms).
pub(crate) const CANCEL_GRACE: Duration = Duration::from_secs(5);

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Waits for a started acquire with the GIL released, looking for signals every 50 ms. When a
/// handler raises (Ctrl-C) the acquire is cancelled, and the exception is returned once it has
/// ended (its node removed; a lease granted meanwhile is dropped, which releases it).
///
/// The outer error is a signal's; the inner result is the core's (`acquire()` turns a timeout
/// into False).
pub(crate) fn wait_acquire(
    py: Python<'_>,
    mut acquire: Acquire,
) -> PyResult<zklock::Result<zklock::Lease>> {
    if let Err(err) = zklock::support::refuse_on_runtime_thread() {
        return Ok(Err(err));
    }
    loop {
        let (done, back) = exit_gate::detach(py, move || (acquire.wait_for(SIGNAL_POLL), acquire));
        acquire = back;
        if let Some(result) = done {
            return Ok(result);
        }
        if let Err(signal) = py.check_signals() {
            acquire.cancel();
            exit_gate::detach(py, move || drop(acquire.wait_for(CANCEL_GRACE)));
            return Err(signal);
        }
    }
}

/// Runs `fut` on zklock's runtime and waits for it with the GIL released (calls that take no
/// node: connecting, the participants). Every 50 ms the wait runs `check_signals()`: when a
/// handler raises (Ctrl-C), the spawned future is aborted and the exception is returned.
pub(crate) fn wait<T, F>(py: Python<'_>, fut: F) -> PyResult<T>
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
        let (received, back) = exit_gate::detach(py, move || (rx.recv_timeout(SIGNAL_POLL), rx));
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
pub(crate) fn delivery() -> CallbackQueue {
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
pub(crate) type Outcome = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

pub(crate) fn outcome_of<T: Send + 'static>(
    result: zklock::Result<T>,
    convert: fn(Python<'_>, T) -> PyResult<Py<PyAny>>,
) -> Outcome {
    match result {
        Ok(value) => Box::new(move |py| convert(py, value)),
        Err(err) => Box::new(move |py| Err(to_py_err(py, err))),
    }
}

/// An asyncio future of the running loop, to be completed from another thread.
pub(crate) struct LoopFuture {
    pub(crate) event_loop: Py<PyAny>,
    pub(crate) future: Py<PyAny>,
}

impl LoopFuture {
    pub(crate) fn new(py: Python<'_>) -> PyResult<(Bound<'_, PyAny>, LoopFuture)> {
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
    pub(crate) fn complete(self, outcome: Outcome) {
        let _ = exit_gate::attach(|py| {
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
pub(crate) struct Completer {
    pub(crate) future: Py<PyAny>,
    pub(crate) outcome: Mutex<Option<Outcome>>,
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
pub(crate) struct Canceller(pub(crate) zklock::CancelToken);

#[pymethods]
impl Canceller {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if future.call_method0("cancelled")?.is_truthy()? {
            self.0.cancel();
        }
        Ok(())
    }
}

/// An asyncio future of the running loop that gets the result of `fut`, run on zklock's
/// runtime (a release: nothing to cancel, it always ends).
pub(crate) fn future_into_py<'py, T, F>(
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
pub(crate) fn call_unraisable(callback: &Py<PyAny>, state: Option<LeaseState>) {
    match state {
        Some(state) => call_unraisable_with(callback, state.as_str()),
        None => {
            let _ = exit_gate::attach(|py| {
                let callback = callback.bind(py);
                if let Err(err) = callback.call0() {
                    err.write_unraisable(py, Some(callback));
                }
            });
        }
    }
}

/// `callback(name)` for a state's name, with the same rules as `call_unraisable`.
pub(crate) fn call_unraisable_with(callback: &Py<PyAny>, name: &'static str) {
    let _ = exit_gate::attach(|py| {
        let callback = callback.bind(py);
        if let Err(err) = callback.call1((name,)) {
            err.write_unraisable(py, Some(callback));
        }
    });
}

/// Installs (or with None removes) the core's log sink: `callback(level, event, message,
/// fields, client)` (`client`: the id of the client the record is about) on zklock's callback
/// thread for every record up to `level` (`'debug'`, `'info'`,
/// `'warn'`, `'error'`); the package forwards them to `logging.getLogger("zklock")`.
#[pyfunction]
#[pyo3(signature = (callback, level="info"))]
pub(crate) fn set_log_sink(
    py: Python<'_>,
    callback: Option<Py<PyAny>>,
    level: &str,
) -> PyResult<()> {
    let level = zklock::support::LogLevel::from_str(level).py(py)?;
    let sink = callback.map(|callback| {
        let sink: Arc<dyn Fn(&zklock::support::LogRecord) + Send + Sync> = Arc::new(move |r| {
            let _ = exit_gate::attach(|py| {
                let fields = PyDict::new(py);
                for (k, v) in &r.fields {
                    let _ = fields.set_item(*k, v);
                }
                let args = (
                    r.level.as_str(),
                    r.event,
                    r.message.as_str(),
                    fields,
                    r.client,
                );
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
