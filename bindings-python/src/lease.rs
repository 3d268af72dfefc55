//! `zklock.Lease`: one held lease, its state, callbacks, release and guarded writes, what
//! happens to a lease nobody releases; in `book`, the leases one lock object handed out.

mod book;
mod unreleased;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyString;

use zklock::{Acquire, ErrorKind, LeaseState, Wait};

use crate::args::{counter_value_of, writes_of, ExitArgs};
use crate::counter::{PyCount, PyCounter};
use crate::errors::{py_error, to_py_err, IntoPy};
use crate::exit_gate;
use crate::runtime::{
    call_unraisable, delivery, future_into_py, lock, outcome_of, Canceller, LoopFuture,
};
pub(crate) use book::{Book, Held, Slot};
pub(crate) use unreleased::drop_unreleased;

/// An asyncio future of the running loop that gets the started acquire's lease. `settled`, a
/// future of the same loop, gets None once the acquire has ended, after the lease's future
/// (issue 33): a cancelled future says nothing of the node, and the package's awaiting task
/// waits on `settled` before its CancelledError goes on, so the node is gone by then.
pub(crate) fn acquire_into_py<'py>(
    py: Python<'py>,
    acquire: Acquire,
    settled: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let (future, target) = LoopFuture::new(py)?;
    let settled = settled.map(|settled| LoopFuture {
        event_loop: target.event_loop.clone_ref(py),
        future: settled.unbind(),
    });
    future.call_method1("add_done_callback", (Canceller(acquire.canceller()),))?;
    acquire.on_complete_in(delivery(), move |result| {
        target.complete(outcome_of(result, lease_into_py));
        if let Some(settled) = settled {
            settled.complete(Box::new(|py| Ok(py.None())));
        }
    });
    Ok(future)
}

pub(crate) fn lease_into_py(py: Python<'_>, lease: zklock::Lease) -> PyResult<Py<PyAny>> {
    Ok(Py::new(py, PyLease::new(lease))?.into_any())
}

/// Releases a core lease taken in this process: a re-entrant hold that only counts down keeps
/// the GIL (nothing to wait for), a last hold waits for the delete with the GIL released.
pub(crate) fn release_now(py: Python<'_>, lease: zklock::Lease) -> PyResult<zklock::Released> {
    let lease = match lease.release_counted() {
        Ok(released) => return Ok(released),
        Err(lease) => lease,
    };
    exit_gate::detach(py, move || lease.blocking_release()).py(py)
}

/// Takes a release's outcome into what a released lease reads (`zklock::Ended::released`).
fn note_release(ended: &Mutex<Option<zklock::Ended>>, outcome: zklock::Released) {
    if let Some(ended) = lock(ended).as_mut() {
        ended.released(outcome);
    }
}

/// `ClientClosed` in a child process after fork(): a lease and its session belong to the
/// parent, so the child can neither use it nor know its state (it must not read `held`).
pub(crate) fn forked(py: Python<'_>, path: &str) -> PyErr {
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

/// What a `Lease` object keeps of its lease for after the release.
pub(crate) struct LeaseInfo {
    pub(crate) token: i64,
    pub(crate) path: String,
    /// A multi-lock's members (tokens, paths); a single lock's are its own.
    pub(crate) multi: Option<Box<(Vec<i64>, Vec<String>)>>,
    pub(crate) pid: u32,
}

impl LeaseInfo {
    pub(crate) fn of(lease: &zklock::Lease, pid: u32) -> LeaseInfo {
        let paths = lease.paths();
        LeaseInfo {
            token: lease.token(),
            path: lease.path().to_owned(),
            multi: (paths.len() > 1).then(|| Box::new((lease.tokens(), paths))),
            pid,
        }
    }
}

pub(crate) static EVENT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
pub(crate) static MONOTONIC: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// A new `threading.Event`.
pub(crate) fn new_event(py: Python<'_>) -> PyResult<Py<PyAny>> {
    let class = EVENT.get_or_try_init(py, || {
        py.import("threading")?.getattr("Event").map(Bound::unbind)
    })?;
    Ok(class.bind(py).call0()?.unbind())
}

pub(crate) fn check_callable(
    py: Python<'_>,
    callback: &Bound<'_, PyAny>,
    what: &str,
) -> PyResult<()> {
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
pub(crate) struct PyLease {
    pub(crate) lease: Mutex<Option<zklock::Lease>>,
    /// Release was asked (`_done`): no longer its owner's to release, whatever came of it.
    pub(crate) done: AtomicBool,
    /// It was lost before it was released (an `on_lost` registered later still runs).
    pub(crate) lost_before_release: AtomicBool,
    /// What it reads once released (the core's rule: lost stays lost, with its reason).
    /// Shared with an asyncio release, which takes its outcome in when it settles.
    pub(crate) ended: Arc<Mutex<Option<zklock::Ended>>>,
    pub(crate) token: i64,
    pub(crate) path: String,
    pub(crate) multi: Option<Box<(Vec<i64>, Vec<String>)>>,
    /// The process the lease was taken in (its session cannot be used after fork()).
    pub(crate) pid: u32,
    /// The book of the lock object it was taken through, to leave it when released.
    pub(crate) book: std::sync::OnceLock<std::sync::Weak<Book>>,
    /// `lost` and `revoke_requested`, made on first use: most leases are never asked.
    pub(crate) lost_event: PyOnceLock<Py<PyAny>>,
    pub(crate) revoke_event: PyOnceLock<Py<PyAny>>,
}

impl PyLease {
    pub(crate) fn new(lease: zklock::Lease) -> Self {
        let object = PyLease::empty(LeaseInfo::of(&lease, zklock::support::current_pid()));
        *lock(&object.lease) = Some(lease);
        object
    }

    pub(crate) fn empty(info: LeaseInfo) -> Self {
        PyLease {
            lease: Mutex::new(None),
            done: AtomicBool::new(false),
            lost_before_release: AtomicBool::new(false),
            ended: Arc::default(),
            token: info.token,
            path: info.path,
            multi: info.multi,
            pid: info.pid,
            book: std::sync::OnceLock::new(),
            lost_event: PyOnceLock::new(),
            revoke_event: PyOnceLock::new(),
        }
    }

    pub(crate) fn set_book(&self, book: std::sync::Weak<Book>) {
        let _ = self.book.set(book);
    }

    pub(crate) fn done(&self) -> bool {
        self.done.load(Ordering::Relaxed)
    }

    /// `ClientClosed` in a child process after fork().
    pub(crate) fn check_process(&self, py: Python<'_>) -> PyResult<()> {
        if self.pid == zklock::support::current_pid() {
            return Ok(());
        }
        Err(forked(py, &self.path))
    }

    /// `f` with the core lease; `NotHeld` (or `LockLost` when it was lost) once released.
    fn with_held<T>(
        &self,
        py: Python<'_>,
        what: &str,
        f: impl FnOnce(&zklock::Lease) -> PyResult<T>,
    ) -> PyResult<T> {
        match &*lock(&self.lease) {
            Some(lease) => f(lease),
            None => Err(to_py_err(
                py,
                zklock::Error::new(
                    ErrorKind::NotHeld,
                    format!("the lease on {} was released: not {what}", self.path),
                ),
            )),
        }
    }

    pub(crate) fn take(&self, py: Python<'_>) -> PyResult<zklock::Lease> {
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
        let ended = lease.ended();
        if ended.state() == LeaseState::Lost {
            self.lost_before_release.store(true, Ordering::Relaxed);
        }
        *lock(&self.ended) = Some(ended);
        Ok(lease)
    }

    /// The lease's state; once released, the state it ended in (lost stays lost).
    pub(crate) fn state(&self) -> LeaseState {
        if let Some(lease) = lock(&self.lease).as_ref() {
            return lease.state();
        }
        lock(&self.ended)
            .as_ref()
            .map_or(LeaseState::Released, zklock::Ended::state)
    }

    /// The lost reason, kept after the release.
    fn reason(&self) -> Option<String> {
        if let Some(lease) = lock(&self.lease).as_ref() {
            return lease.lost_reason();
        }
        lock(&self.ended)
            .as_ref()
            .and_then(|e| e.lost_reason().map(str::to_owned))
    }

    /// Leaving a scoped hold (`with`, `async with`) that released this lease: `LockLost` when
    /// it was lost before (the core's rule), unless the body raised (`body_raised`), whose
    /// exception goes on instead.
    pub(crate) fn leave_scope(&self, py: Python<'_>, body_raised: bool) -> PyResult<()> {
        let ended = lock(&self.ended).clone().filter(|_| !body_raised);
        ended.map_or(Ok(()), |e| e.leave_scope("the with block").py(py))
    }

    /// Marks the lease done (release was asked, whatever came of it) and leaves its lock
    /// object's book, unless a `with` still has to exit it.
    pub(crate) fn forget(slf: &Bound<'_, PyLease>) {
        let this = slf.get();
        this.done.store(true, Ordering::Relaxed);
        if let Some(book) = this.book.get().and_then(std::sync::Weak::upgrade) {
            let forgotten = book.forget(slf.py(), slf.as_ptr());
            drop(forgotten); // the book unlocked: dropping the entry may run Python
        }
    }

    pub(crate) fn release_bound(slf: &Bound<'_, PyLease>) -> PyResult<&'static str> {
        let py = slf.py();
        let taken = slf.get().take(py);
        let released = taken.and_then(|lease| release_now(py, lease));
        if let Ok(outcome) = &released {
            note_release(&slf.get().ended, *outcome);
        }
        PyLease::forget(slf);
        Ok(released?.as_str())
    }

    pub(crate) fn event(
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

pub(crate) fn released_into_py(py: Python<'_>, r: zklock::Released) -> PyResult<Py<PyAny>> {
    Ok(pyo3::types::PyString::new(py, r.as_str())
        .into_any()
        .unbind())
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

    /// Why the lease was lost ('... lost: max-hold: ...', session expired, node deleted, client
    /// closed, no server contact for the session timeout), once it is; None while it is not.
    #[getter]
    fn lost_reason(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.check_process(py)?;
        Ok(self.reason())
    }

    /// The moment until which no one else can hold this lease's lock (Chubby's local lease),
    /// on `time.monotonic()`'s clock, or None once released or lost. Later than now while held
    /// (it moves forward with every answered heartbeat); while suspended it stays where the
    /// last proof put it. Check it before a side effect; a pause after the check is what the
    /// fencing token is for. `time.monotonic()` stands still while the machine is suspended,
    /// so a value kept across a suspend reads later than it is: `time_left()` cannot be misread.
    fn valid_until(&self, py: Python<'_>) -> PyResult<Option<f64>> {
        self.check_process(py)?;
        let until = lock(&self.lease).as_ref().and_then(|l| l.valid_until());
        let Some(until) = until else {
            return Ok(None);
        };
        // Rust's Instant and time.monotonic() are one clock on Linux, not everywhere: the
        // difference from now is carried over instead.
        let now = std::time::Instant::now();
        let monotonic: f64 = MONOTONIC
            .get_or_try_init(py, || {
                py.import("time")?.getattr("monotonic").map(Bound::unbind)
            })?
            .bind(py)
            .call0()?
            .extract()?;
        Ok(Some(match until.checked_duration_since(now) {
            Some(ahead) => monotonic + ahead.as_secs_f64(),
            None => monotonic - now.duration_since(until).as_secs_f64(),
        }))
    }

    /// Seconds left until `valid_until()` (0.0 once it passed, while suspended), or None once
    /// released or lost; measured at the call on a clock that counts the time the machine was
    /// suspended (`zklock::Lease::time_left`), so a suspend cannot make it look longer.
    fn time_left(&self, py: Python<'_>) -> PyResult<Option<f64>> {
        self.check_process(py)?;
        let left = lock(&self.lease).as_ref().and_then(|l| l.time_left());
        Ok(left.map(|l| l.as_secs_f64()))
    }

    /// A lease is a context manager: `with election.lead() as lead:` releases (resigns) it on
    /// exit, unless it was released already.
    fn __enter__(slf: Py<PyLease>) -> Py<PyLease> {
        slf
    }

    /// Raises `LockLost` when the lease was lost inside the block (and the block raised
    /// nothing itself); a lease released by hand in the block is left alone.
    #[pyo3(signature = (*args))]
    fn __exit__(slf: &Bound<'_, PyLease>, args: ExitArgs<'_>) -> PyResult<()> {
        if slf.get().done() {
            return Ok(());
        }
        PyLease::release_bound(slf)?;
        slf.get().leave_scope(slf.py(), args.0.is_some())
    }

    /// `leave_scope` for the package's scoped holds (`lock.hold()`, `async with`).
    fn _leave_scope(&self, py: Python<'_>, body_raised: bool) -> PyResult<()> {
        self.leave_scope(py, body_raised)
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

    /// Moves the end of the maximum hold to `by` seconds from now (same token).
    fn extend(&self, py: Python<'_>, by: f64) -> PyResult<()> {
        self.check_process(py)?;
        self.with_held(py, "extended", |lease| crate::expiry::extend(py, lease, by))
    }

    /// `callback(seconds_left)` once the maximum hold is `before` seconds from its end.
    fn on_expiring(&self, py: Python<'_>, before: f64, callback: Bound<'_, PyAny>) -> PyResult<()> {
        check_callable(py, &callback, "on_expiring")?;
        self.check_process(py)?;
        let callback = callback.unbind();
        self.with_held(py, "watched", |l| {
            crate::expiry::on_expiring(py, l, before, callback)
        })
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
        let (release, ended) = (taken?.release(), slf.get().ended.clone());
        let noted = async move {
            let outcome = release.await;
            if let Ok(outcome) = &outcome {
                note_release(&ended, *outcome);
            }
            outcome
        };
        future_into_py(py, noted, released_into_py)
    }

    /// Runs ZooKeeper writes only while this lease holds the lock: `("create", path, data)`,
    /// `("set_data", path, data)`, `("delete", path)` go in one multi request with a check
    /// that the lease's node still exists, so all apply or none. Returns per write the created
    /// path, the new data version, or None for a delete. Raises `LockLost` when the lease was
    /// lost (nothing applied), the write's own error (e.g. `ZooKeeperError`) when a write
    /// fails (nothing applied either). `OutcomeUnknown` when the connection broke after the
    /// batch was sent and before the answer (it may have been applied). On a suspended lease the
    /// batch waits for the reconnect; `timeout` (seconds, by the acquire's rule) bounds that wait and
    /// the answer. The GIL is released meanwhile.
    #[pyo3(signature = (writes, timeout=None))]
    fn guarded_write(
        &self,
        py: Python<'_>,
        writes: &Bound<'_, PyAny>,
        timeout: Option<f64>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let timeout = Wait::from_secs(timeout).py(py)?.time_left();
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
        let done = exit_gate::detach(py, move || guarded.blocking_write_timeout(writes, timeout));
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

    /// Adds `by` to `counter` only while this lease holds the lock (one multi with the lock
    /// node's check, at the version just read, read again when the count moved): the new
    /// `Count`. `LockLost` after a loss (nothing written); `InvalidArgument` when the sum does
    /// not fit the counter's width. The GIL is released meanwhile.
    #[pyo3(signature = (counter, by=None))]
    fn guarded_increment(
        &self,
        py: Python<'_>,
        counter: PyRef<'_, PyCounter>,
        by: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyCount> {
        let by = by.map_or(Ok(1), |by| counter_value_of(py, by, "by"))?;
        self.check_process(py)?;
        let guarded = lock(&self.lease).as_ref().map(zklock::Lease::guarded);
        let Some(guarded) = guarded else {
            return Err(to_py_err(
                py,
                zklock::Error::new(
                    ErrorKind::NotHeld,
                    format!(
                        "the lease on {} was released; a guarded increment needs a held lease",
                        self.path
                    ),
                ),
            ));
        };
        let counter = counter.counter.clone();
        exit_gate::detach(py, move || guarded.blocking_increment(&counter, by))
            .py(py)
            .map(PyCount::from)
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
