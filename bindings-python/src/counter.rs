//! `zklock.Counter` and `zklock.Count`: the core's shared counter on Curator's layouts
//! (`zklock::Counter`), read and compared-and-set with the GIL released. The width's names and
//! every rule are the core's; this module converts.

use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::args::counter_value_of;
use crate::errors::IntoPy;
use crate::runtime::wait;

/// A count and the data version it was read at (version -1: the node does not exist yet).
#[pyclass(frozen, eq, module = "zklock", name = "Count")]
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct PyCount {
    #[pyo3(get)]
    value: i64,
    #[pyo3(get)]
    version: i32,
}

impl From<zklock::Count> for PyCount {
    fn from(c: zklock::Count) -> Self {
        PyCount {
            value: c.value,
            version: c.version,
        }
    }
}

#[pymethods]
impl PyCount {
    #[new]
    fn new(value: i64, version: i32) -> Self {
        PyCount { value, version }
    }

    fn __repr__(&self) -> String {
        format!("Count(value={}, version={})", self.value, self.version)
    }
}

/// A shared counter (see `Client.counter`).
#[pyclass(frozen, module = "zklock", name = "Counter")]
pub(crate) struct PyCounter {
    pub(crate) counter: zklock::Counter,
}

#[pymethods]
impl PyCounter {
    /// The counter's node.
    #[getter]
    fn path(&self) -> &str {
        self.counter.path()
    }

    /// `'int32'` (Curator's SharedCount) or `'int64'` (DistributedAtomicLong).
    #[getter]
    fn width(&self) -> &'static str {
        self.counter.width().as_str()
    }

    /// The count and its version (`Count(0, -1)` while the node does not exist).
    fn get(&self, py: Python<'_>) -> PyResult<PyCount> {
        let c = self.counter.clone();
        wait(py, async move { c.get().await }).map(PyCount::from)
    }

    /// Sets the count to `value` if it is still at `seen`'s version (creating the node when
    /// `seen` is the missing node's): the new `Count`, or None when it changed meanwhile.
    fn compare_and_set(
        &self,
        py: Python<'_>,
        seen: PyRef<'_, PyCount>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<Option<PyCount>> {
        let value = counter_value_of(py, value, "value")?;
        let c = self.counter.clone();
        let seen = zklock::Count {
            value: seen.value,
            version: seen.version,
        };
        wait(py, async move { c.compare_and_set(seen, value).await }).map(|c| c.map(PyCount::from))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let path = PyString::new(py, self.counter.path()).repr()?;
        Ok(format!(
            "<zklock.Counter path={path} width='{}'>",
            self.counter.width().as_str()
        ))
    }
}

/// A counter on `path` of the width named `width`, made by `client`.
pub(crate) fn counter_of(
    py: Python<'_>,
    client: &zklock::Client,
    path: &str,
    width: &str,
) -> PyResult<PyCounter> {
    let width = zklock::CounterWidth::parse(width).py(py)?;
    let counter = client.counter(path, width).py(py)?;
    Ok(PyCounter { counter })
}
