//! `Lease.extend` and `Lease.on_expiring`'s work: the core's [`zklock::Lease::extend`] and
//! [`zklock::Lease::on_expiring`], seconds in and out.

use pyo3::prelude::*;

use crate::errors::IntoPy;
use crate::exit_gate;

/// Moves the end of `lease`'s maximum hold to `by` seconds from now (the core judges `by`).
pub(crate) fn extend(py: Python<'_>, lease: &zklock::Lease, by: f64) -> PyResult<()> {
    let by = zklock::support::duration_from_secs_f64(by, "by").py(py)?;
    lease.extend(by).py(py).map(|_| ())
}

/// Calls `callback(seconds_left)` on zklock's callback thread once the maximum hold is
/// `before` seconds from its end (again after each extension); an exception it raises goes to
/// `sys.unraisablehook`.
pub(crate) fn on_expiring(
    py: Python<'_>,
    lease: &zklock::Lease,
    before: f64,
    callback: Py<PyAny>,
) -> PyResult<()> {
    let before = zklock::support::duration_from_secs_f64(before, "before").py(py)?;
    lease.on_expiring(before, move |left| {
        let _ = exit_gate::attach(|py| {
            let callback = callback.bind(py);
            if let Err(err) = callback.call1((left.as_secs_f64(),)) {
                err.write_unraisable(py, Some(callback));
            }
        });
    });
    Ok(())
}
