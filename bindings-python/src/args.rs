//! Python arguments for the core: timeouts as `Wait`, seconds, a semaphore's N, who is
//! calling (the owner of a re-entrant hold), and a lease's guarded writes.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyFloat, PyInt, PyMemoryView, PyString, PyTuple};

use zklock::{ErrorKind, Wait};

use crate::errors::{py_error, to_py_err, wrong_type, IntoPy};

/// The `with` statement's way out: `__exit__(exc_type, exc, tb)`.
pub(crate) type ExitArgs<'py> = (
    Option<Bound<'py, PyAny>>,
    Option<Bound<'py, PyAny>>,
    Option<Bound<'py, PyAny>>,
);

pub(crate) fn wait_of(py: Python<'_>, timeout: Option<f64>) -> PyResult<Wait> {
    Wait::from_secs(timeout).py(py)
}

/// A Python int as a semaphore's N for the core: a value no `u32` holds (negative, or beyond)
/// cannot reach the core's check, so it gets the same kind of error here, naming the value.
pub(crate) fn max_leases_of(path: &str, value: &Bound<'_, PyAny>) -> zklock::Result<u32> {
    value.extract::<u32>().map_err(|_| {
        let shown = value
            .str()
            .map(|s| s.to_string())
            .unwrap_or_else(|_| "?".to_owned());
        zklock::invalid_max_leases(path, shown)
    })
}

/// A Python int as a counter's value or step (`what` names it): one beyond the 64 bits a counter
/// holds is the core's `InvalidArgument` naming the value, like a sum that leaves the counter's
/// width, not the `OverflowError` of a bare conversion; a value that is no int keeps its
/// `TypeError` (`InvalidArgumentType`).
pub(crate) fn counter_value_of(
    py: Python<'_>,
    value: &Bound<'_, PyAny>,
    what: &str,
) -> PyResult<i64> {
    if !value.is_instance_of::<pyo3::types::PyInt>() {
        return Err(wrong_type(py, what, "an int", value));
    }
    value.extract::<i64>().map_err(|_| {
        let shown = value
            .str()
            .map(|s| s.to_string())
            .unwrap_or_else(|_| "?".to_owned());
        to_py_err(
            py,
            zklock::Error::new(
                zklock::ErrorKind::InvalidArgument,
                format!(
                    "{what} {shown} does not fit a counter (at most 64 bits: {} to {})",
                    i64::MIN,
                    i64::MAX
                ),
            ),
        )
    })
}

/// The owner bit of an asyncio task (a thread ident never has it).
pub(crate) const TASK_BIT: u64 = 1 << 63;
/// The core's shared owner: a non re-entrant lock's holds belong to no thread.
pub(crate) const SHARED: u64 = 0;

pub(crate) static RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
pub(crate) static CURRENT_TASK: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Who is calling, for the core's re-entrancy: the running asyncio task (its id with the top
/// bit set), else the thread (`threading.get_ident()`). Asked here rather than in the package,
/// so that an acquire or a release is one native call (issue 17: the Python code around each
/// call cost more than the call).
pub(crate) fn current_owner(py: Python<'_>) -> PyResult<u64> {
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
pub(crate) enum Arg<'py> {
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
pub(crate) fn seconds_of(py: Python<'_>, value: &Bound<'_, PyAny>, what: &str) -> PyResult<f64> {
    if value.is_instance_of::<PyBool>()
        || !(value.is_instance_of::<PyInt>() || value.is_instance_of::<PyFloat>())
    {
        return Err(wrong_type(py, what, "a number of seconds", value));
    }
    // An int past a float (10**400) is past any clock: infinite, for the core's time rule to
    // judge (forever for a timeout, InvalidArgument when negative or for a maximum hold).
    value.extract::<f64>().or_else(|e| match value.gt(0) {
        Ok(positive) if value.is_instance_of::<PyInt>() => Ok(if positive {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        }),
        _ => Err(e),
    })
}

/// `threading.Lock.acquire`'s arguments as a timeout for the core (0: one try, -1: forever).
pub(crate) fn acquire_timeout(
    py: Python<'_>,
    blocking: Arg<'_>,
    timeout: Arg<'_>,
) -> PyResult<f64> {
    let blocking = match blocking {
        Arg::Missing => true,
        Arg::Given(b) => {
            if !b.is_instance_of::<PyInt>() {
                return Err(wrong_type(py, "blocking", "a bool", &b));
            }
            b.is_truthy()?
        }
    };
    // None is the contract's absent timeout (docs/contract.md, time rules): wait until acquired,
    // as `lock.hold(timeout=None)` and `acquire_async(timeout=None)` do.
    let number = match timeout {
        Arg::Missing => -1.0,
        Arg::Given(t) if t.is_none() => -1.0,
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

/// Judges a timeout by the core's rule without starting anything (`lock.hold(timeout)` refuses
/// a bad one when it is made, not when it is entered).
#[pyfunction]
#[pyo3(signature = (timeout=None))]
pub(crate) fn check_timeout(py: Python<'_>, timeout: Option<f64>) -> PyResult<()> {
    wait_of(py, timeout).map(drop)
}

pub(crate) type GuardedWriteArgs = Vec<(String, String, Option<Vec<u8>>)>;

/// A list of guarded writes from Python: `(op, path)` or `(op, path, data)` tuples, with the
/// types checked here (the core judges the values).
pub(crate) fn writes_of(py: Python<'_>, writes: &Bound<'_, PyAny>) -> PyResult<GuardedWriteArgs> {
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
