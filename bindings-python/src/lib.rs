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

//!
//! Modules, in reading order (each reads only the ones below it):
//!
//! * `client`: `zklock.Client`'s native object, one session and the locks made on it;
//! * `counter`: `zklock.Counter` and `zklock.Count`, a shared counter on Curator's layouts;
//! * `election`: `NativeElection` (the base of `zklock.Election`), `LeadAttempt` (a requeued run
//!   for leader) and `NativeLeaderWatch` (an observer of who leads);
//! * `lock`: `NativeLock` (the base of `zklock.Lock`), one core lock value;
//! * `lease`: `zklock.Lease`, guarded-write arguments, leases nobody releases, and the `Book`
//!   of the leases taken through one lock object (a `Lease` leaves its book when released);
//! * `runtime`: waiting with the GIL released, asyncio `LoopFuture`, `Completer`, `Canceller`,
//!   callbacks and the log sink run from zklock's threads;
//! * `exit_gate`: the interpreter's exit, and when zklock's threads may still enter Python (every
//!   native thread's call into Python and every return from a wait with the GIL released pass
//!   its gate);
//! * `args`: Python arguments as the core's `Wait`, seconds, a semaphore's N, owners;
//! * `errors`: the core's error kinds as `zklock` exceptions, `to_py_err`, `wrong_type`.

mod args;
mod client;
mod counter;
mod election;
mod errors;
mod exit_gate;
mod expiry;
mod lease;
mod lock;
mod runtime;

use pyo3::prelude::*;

use crate::args::check_timeout;
use crate::client::PyClient;
use crate::counter::{PyCount, PyCounter};
use crate::election::{LeadAttempt, NativeElection, NativeLeaderWatch};
use crate::lease::PyLease;
use crate::lock::NativeLock;
use crate::runtime::set_log_sink;

#[pymodule]
fn _zklock(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyClient>()?;
    m.add_class::<NativeLock>()?;
    m.add_class::<PyLease>()?;
    m.add_class::<NativeElection>()?;
    m.add_class::<NativeLeaderWatch>()?;
    m.add_class::<LeadAttempt>()?;
    m.add_class::<PyCounter>()?;
    m.add_class::<PyCount>()?;
    m.add_function(wrap_pyfunction!(check_timeout, m)?)?;
    m.add_function(wrap_pyfunction!(set_log_sink, m)?)?;
    exit_gate::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
