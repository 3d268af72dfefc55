//! The one table of this face: the core's error kinds as `zklock._errors` exceptions, and
//! the face's own `InvalidArgumentType` for a Python argument of the wrong type.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyModule;

use zklock::ErrorKind;

/// The Python class (in `zklock._errors`) of each error kind.
pub(crate) fn class_name(kind: ErrorKind) -> &'static str {
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
        ErrorKind::OutcomeUnknown => "OutcomeUnknown",
        ErrorKind::Conflict => "Conflict",
        // ErrorKind is non-exhaustive: a kind this face does not know yet is still a
        // ZkLockError, the base every `except` of the face's errors catches.
        _ => "ZkLockError",
    }
}

pub(crate) static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// Turns a core error into an instance of the matching `zklock` exception.
pub(crate) fn to_py_err(py: Python<'_>, err: zklock::Error) -> PyErr {
    py_error(py, class_name(err.kind()), err.message().to_owned())
}

/// An instance of the `zklock._errors` class `class` (also `InvalidArgumentType`, the face's
/// own: a Python argument of the wrong type, which never reaches the core).
pub(crate) fn py_error(py: Python<'_>, class: &str, message: String) -> PyErr {
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
pub(crate) fn wrong_type(
    py: Python<'_>,
    what: &str,
    expected: &str,
    got: &Bound<'_, PyAny>,
) -> PyErr {
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

pub(crate) trait IntoPy<T> {
    fn py(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPy<T> for zklock::Result<T> {
    fn py(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py_err(py, e))
    }
}
