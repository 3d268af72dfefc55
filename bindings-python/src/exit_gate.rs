//! The interpreter's exit: when zklock's threads may still enter Python.
//!
//! Why this exists (issue 57): once CPython has begun to finalize, a thread that takes the GIL
//! is ended on the spot (3.8–3.13: `PyThread_exit_thread`, on glibc a forced unwind). On one of
//! zklock's native threads, in the middle of a callback, that unwind runs Rust's drop glue:
//! Python objects freed and `PyGILState_Release` called without the GIL while the main thread
//! tears the interpreter down — SIGSEGV, or "Fatal Python error: PyGILState_Release". A Python
//! thread (a daemon thread) that comes back from a wait with the GIL released meets the same
//! end, unwinding through pyo3's frames.
//!
//! So Python's `atexit` hook [`close`] (it runs after the non-daemon threads have been joined
//! and before finalization begins) closes a gate, for good in this process:
//!
//! * a native thread enters Python only through [`attach`], which counts it in while it is
//!   there; once the gate is closed the call is skipped, and what it held (a callback, a
//!   future) is dropped without the GIL: pyo3 queues those decrefs and nothing runs them, a
//!   deliberate leak of a process that is ending;
//! * a Python thread returns from a wait with the GIL released only through [`detach`]: once
//!   the gate is closed it never takes the GIL again but parks (a daemon thread has nothing
//!   left to do), unless it is the thread running the exit (the main thread: an `atexit`
//!   handler may still close a client) or one already counted in (Python code run by a
//!   callback);
//! * [`close`] waits, with the GIL released, until no thread is counted in: a callback that is
//!   running when the program ends finishes first, as a non-daemon thread does.

use std::cell::Cell;
use std::sync::{Condvar, Mutex};
use std::thread::{self, ThreadId};
use std::time::Duration;

use pyo3::prelude::*;

/// Who may enter Python, in the process `pid` (a child forked from a process whose gate had
/// threads in it starts afresh: those threads are not in the child).
struct Gate {
    pid: u32,
    closed: bool,
    inside: usize,
    exiting: Option<ThreadId>,
}

static GATE: Mutex<Gate> = Mutex::new(Gate {
    pid: 0,
    closed: false,
    inside: 0,
    exiting: None,
});
static EMPTIED: Condvar = Condvar::new();

thread_local! {
    /// How many passes this thread holds: Python code that a counted-in callback runs may wait
    /// in zklock again, and must come back.
    static PASSES: Cell<usize> = const { Cell::new(0) };
}

fn gate() -> std::sync::MutexGuard<'static, Gate> {
    let mut gate = GATE.lock().unwrap_or_else(|e| e.into_inner());
    let pid = zklock::support::current_pid();
    if gate.pid != pid {
        *gate = Gate {
            pid,
            closed: false,
            inside: 0,
            exiting: None,
        };
    }
    gate
}

/// A thread counted in: the gate's [`close`] waits until every pass is dropped.
struct Pass(());

impl Pass {
    fn enter() -> Option<Pass> {
        let mut gate = gate();
        let held = PASSES.with(Cell::get);
        if gate.closed && held == 0 && gate.exiting != Some(thread::current().id()) {
            return None;
        }
        gate.inside += 1;
        PASSES.with(|n| n.set(held + 1));
        Some(Pass(()))
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        PASSES.with(|n| n.set(n.get().saturating_sub(1)));
        let mut gate = gate();
        gate.inside = gate.inside.saturating_sub(1);
        if gate.inside == 0 {
            EMPTIED.notify_all();
        }
    }
}

/// Runs `f` attached to Python from one of zklock's native threads, unless the interpreter is
/// exiting (then `f` is dropped unrun and None returned).
pub(crate) fn attach<R>(f: impl FnOnce(Python<'_>) -> R) -> Option<R> {
    let _pass = Pass::enter()?;
    Python::try_attach(f)
}

/// `py.detach(f)` for a Python thread: `f` runs with the GIL released, and the thread takes the
/// GIL back only while the interpreter is not exiting; otherwise it parks for good.
pub(crate) fn detach<T, F>(py: Python<'_>, f: F) -> T
where
    F: Send + FnOnce() -> T,
    T: Send,
{
    let (out, pass) = py.detach(move || {
        let out = f();
        match Pass::enter() {
            Some(pass) => (out, pass),
            None => park_for_good(),
        }
    });
    drop(pass);
    out
}

/// Where a thread ends up that may no longer take the GIL: the process is about to end.
fn park_for_good() -> ! {
    loop {
        thread::park();
    }
}

/// How often the exit's wait looks for a signal (a second Ctrl-C ends the wait).
const EXIT_POLL: Duration = Duration::from_millis(50);

/// Python's `atexit` hook (registered when the module is imported): closes the gate and waits,
/// with the GIL released, until no thread is in Python through it. A pending signal's handler
/// that raises (Ctrl-C) ends the wait, and `atexit` reports it.
#[pyfunction]
pub(crate) fn close(py: Python<'_>) -> PyResult<()> {
    {
        let mut gate = gate();
        gate.closed = true;
        gate.exiting = Some(thread::current().id());
    }
    loop {
        let emptied = py.detach(|| {
            let gate = gate();
            let (gate, _) = EMPTIED
                .wait_timeout_while(gate, EXIT_POLL, |g| g.inside > 0)
                .unwrap_or_else(|e| e.into_inner());
            gate.inside == 0
        });
        if emptied {
            return Ok(());
        }
        py.check_signals()?;
    }
}

/// Registers [`close`] with `atexit`.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let hook = wrap_pyfunction!(close, module)?;
    module
        .py()
        .import("atexit")?
        .call_method1("register", (hook,))?;
    Ok(())
}
