//! `NativeElection` (the base of `zklock.Election`), `LeadAttempt` (a requeued run for leader)
//! and `NativeLeaderWatch` (the base of `zklock.LeaderWatch`): the core's election as Python
//! shapes. A leadership is the core's `Lease`, so it is this face's `Lease` object: nothing of
//! a lease is duplicated here. Styles, ids, max-hold, the refusal to lead beside another
//! layout and the order of the participants are the core's.

use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use pyo3::prelude::*;
use pyo3::pyclass::{PyTraverseError, PyVisit};
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PyString};

use zklock::{Acquire, CancelToken, ElectionStyle, ErrorKind, Participant};

use crate::args::wait_of;
use crate::errors::{to_py_err, wrong_type, IntoPy};
use crate::exit_gate;
use crate::lease::{acquire_into_py, PyLease};
use crate::lock::Waiting;
use crate::runtime::{
    delivery, future_into_py, lock, outcome_of, wait, wait_acquire, LoopFuture, SIGNAL_POLL,
};

/// A participant as the package's `Participant` named tuple takes it: `(node, identity, token,
/// library, kind, session_id, max_leases, style)`; `style` is the election layout (family).
pub(crate) type ElectionParticipantTuple = (
    String,
    String,
    i64,
    String,
    String,
    i64,
    Option<u32>,
    Option<&'static str>,
);

pub(crate) fn participant_tuple(p: Participant) -> ElectionParticipantTuple {
    let style = p.election_style().map(ElectionStyle::as_str);
    (
        p.node,
        p.identity,
        p.token,
        p.library.as_str().to_owned(),
        p.kind.as_str().to_owned(),
        p.session_id,
        p.max_leases,
        style,
    )
}

/// A style by the core's name (`InvalidArgument` listing the known names); None is the core's
/// default (`latch`).
pub(crate) fn style_of(py: Python<'_>, style: Option<&str>) -> PyResult<ElectionStyle> {
    style.map_or(Ok(ElectionStyle::default()), |name| {
        ElectionStyle::from_str(name).py(py)
    })
}

/// One participant's side of an election on a path (see `zklock.Election`).
#[pyclass(frozen, subclass, weakref, module = "zklock._zklock")]
pub(crate) struct NativeElection {
    pub(crate) election: Arc<zklock::Election>,
    /// The `zklock.Client` it was made by (None on the value `Client.election()` returns).
    pub(crate) client: Option<Py<PyAny>>,
    /// The blocking runs for leader in progress through this object, for `cancel()`.
    pub(crate) waiting: Arc<Waiting>,
}

impl NativeElection {
    pub(crate) fn new(election: zklock::Election) -> Self {
        NativeElection {
            election: Arc::new(election),
            client: None,
            waiting: Arc::default(),
        }
    }

    /// Checks a `Lease` object before a resign or proclaim by the core's rule
    /// (`Election::check_leadership`): the core's `resign` takes the lease by value, and a lease
    /// it refused would be dropped (released), so a foreign lease is refused here untouched. A
    /// lease already released passes: its resign then reports what the face does for it.
    fn check_own(&self, py: Python<'_>, lease: &PyLease) -> PyResult<()> {
        lease.check_process(py)?;
        if lease.multi.is_some() {
            return Err(to_py_err(
                py,
                zklock::Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "a multi-lock lease on {:?} is not a leadership of the election on {:?}",
                        truncated(&lease.path),
                        truncated(self.election.path())
                    ),
                ),
            ));
        }
        match lock(&lease.lease).as_ref() {
            Some(held) => self
                .election
                .check_leadership(held)
                .map_err(|e| to_py_err(py, e)),
            None => Ok(()),
        }
    }
}

fn truncated(text: &str) -> &str {
    match text.char_indices().nth(120) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

/// `proclaim`'s data: bytes-like, or a str (UTF-8).
fn data_of(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(text) = data.cast::<PyString>() {
        return Ok(text.extract::<String>()?.into_bytes());
    }
    let bytes_like = data.is_instance_of::<PyBytes>()
        || data.is_instance_of::<PyByteArray>()
        || data.is_instance_of::<PyMemoryView>();
    if !bytes_like {
        return Err(wrong_type(py, "proclaim()'s data", "bytes or str", data));
    }
    let made = py.get_type::<PyBytes>().call1((data,))?;
    Ok(made.cast::<PyBytes>()?.as_bytes().to_vec())
}

#[pymethods]
impl NativeElection {
    /// `zklock.Election(client, native)`: an election object over the core election of
    /// `native` (made by the client).
    #[new]
    fn py_new(client: Py<PyAny>, native: &Bound<'_, NativeElection>) -> Self {
        NativeElection {
            election: native.get().election.clone(),
            client: Some(client),
            waiting: Arc::default(),
        }
    }

    #[getter]
    fn path(&self) -> &str {
        self.election.path()
    }

    /// 'selector', 'latch' or 'kazoo' (the core's names).
    #[getter]
    fn style(&self) -> &'static str {
        self.election.style().as_str()
    }

    /// This participant's id (its node's data).
    #[getter]
    fn id(&self) -> &str {
        self.election.id()
    }

    /// The maximum hold of every leadership, in seconds (None: no limit).
    #[getter]
    fn max_hold(&self) -> Option<f64> {
        self.election.max_hold_limit().map(|d| d.as_secs_f64())
    }

    #[getter]
    fn client(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.client.as_ref().map(|c| c.clone_ref(py))
    }

    /// Cancels the blocking runs for leader waiting through this object now, from any thread:
    /// each raises `Cancelled` and leaves no node behind. Returns how many there were.
    fn cancel(&self) -> usize {
        self.waiting.cancel_all()
    }

    /// Waits until this participant leads (`timeout` by the core's rule; None: forever), with
    /// the GIL released, and returns the leadership (a `Lease`).
    #[pyo3(signature = (timeout=None))]
    fn _lead(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Py<PyLease>> {
        let wait = wait_of(py, timeout)?;
        let acquire = self.election.start_lead(wait);
        let _waiting = self.waiting.add(&acquire);
        let lease = wait_acquire(py, acquire)?.py(py)?;
        Py::new(py, PyLease::new(lease))
    }

    /// The asyncio run for leader: an awaitable future of the running loop; cancelling it
    /// removes the node (a leadership granted meanwhile is released). `settled` (a future of
    /// the same loop) gets None once the run has ended, its node removed if it was cancelled.
    #[pyo3(signature = (timeout=None, settled=None))]
    fn _lead_async<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<f64>,
        settled: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let wait = wait_of(py, timeout)?;
        acquire_into_py(py, self.election.start_lead(wait), settled)
    }

    /// Gives the leadership up (its node is deleted, the next participant leads); with
    /// `requeue`, runs again at the tail of the queue and returns that attempt.
    #[pyo3(signature = (lease, requeue=false))]
    fn resign(
        &self,
        py: Python<'_>,
        lease: &Bound<'_, PyLease>,
        requeue: bool,
    ) -> PyResult<Option<LeadAttempt>> {
        self.check_own(py, lease.get())?;
        let taken = lease.get().take(py);
        PyLease::forget(lease);
        let taken = taken?;
        let election = self.election.clone();
        let again =
            exit_gate::detach(py, move || election.blocking_resign(taken, requeue)).py(py)?;
        Ok(again.map(|acquire| LeadAttempt::new(self.election.path(), acquire)))
    }

    /// The asyncio twin of `resign`: an awaitable of None, or with `requeue` of an asyncio
    /// future of the next leadership (cancelling it ends that attempt).
    #[pyo3(signature = (lease, requeue=false))]
    fn resign_async<'py>(
        &self,
        py: Python<'py>,
        lease: &Bound<'py, PyLease>,
        requeue: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        py.import("asyncio")?.call_method0("get_running_loop")?;
        self.check_own(py, lease.get())?;
        let taken = lease.get().take(py);
        PyLease::forget(lease);
        let taken = taken?;
        let election = self.election.clone();
        future_into_py(
            py,
            async move { election.resign(taken, requeue).await },
            requeued_into_py,
        )
    }

    /// Sets the leadership's node data to `data` (what participants and observers see as its
    /// id from then on), applied only while the node is ours (a guarded write: `LockLost`
    /// after loss). The GIL is released meanwhile.
    #[pyo3(signature = (lease, data, timeout=None))]
    fn proclaim(
        &self,
        py: Python<'_>,
        lease: &Bound<'_, PyLease>,
        data: &Bound<'_, PyAny>,
        timeout: Option<f64>,
    ) -> PyResult<()> {
        let timeout = wait_of(py, timeout)?.time_left();
        let data = data_of(py, data)?;
        let this = lease.get();
        self.check_own(py, this)?;
        // The core's `Election::proclaim` borrows the lease for the whole write, and this face
        // keeps it behind a mutex that readers take with the GIL held: its write (the core's
        // `proclamation`) goes through the lease's `Guarded` handle instead.
        let prepared = lock(&this.lease).as_ref().map(|held| {
            self.election
                .proclamation(held, data)
                .map(|writes| (held.guarded(), writes))
        });
        let Some(prepared) = prepared else {
            return Err(to_py_err(
                py,
                zklock::Error::new(
                    ErrorKind::NotHeld,
                    format!(
                        "the leadership on {:?} was resigned; proclaim() needs a held one",
                        truncated(&this.path)
                    ),
                ),
            ));
        };
        let (guarded, writes) = prepared.map_err(|e| to_py_err(py, e))?;
        exit_gate::detach(py, move || guarded.blocking_write_timeout(writes, timeout))
            .py(py)
            .map(drop)
    }

    /// Everyone running, in election order (the leader first), as tuples for `Participant`.
    fn _participants(&self, py: Python<'_>) -> PyResult<Vec<ElectionParticipantTuple>> {
        let election = self.election.clone();
        let list = wait(py, async move { election.participants().await })?;
        Ok(list.into_iter().map(participant_tuple).collect())
    }

    /// The leader now (the first participant of this layout), None when nobody runs.
    fn _leader(&self, py: Python<'_>) -> PyResult<Option<ElectionParticipantTuple>> {
        let election = self.election.clone();
        let leader = wait(py, async move { election.leader().await })?;
        Ok(leader.map(participant_tuple))
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Some(client) = &self.client {
            visit.call(client)?;
        }
        Ok(())
    }
}

/// What `resign_async` gives: None, or a requeued attempt as an asyncio future.
fn requeued_into_py(py: Python<'_>, again: Option<Acquire>) -> PyResult<Py<PyAny>> {
    match again {
        None => Ok(py.None()),
        Some(acquire) => Ok(acquire_into_py(py, acquire, None)?.unbind()),
    }
}

enum Attempt {
    Running(Option<Acquire>),
    Done(Result<Py<PyLease>, zklock::Error>),
}

/// A run for leader that `resign(lead, requeue=True)` started at the tail of the queue: the
/// shape of `concurrent.futures.Future` (`result(timeout)`, `cancel()`, `done()`), waiting with
/// the GIL released. Dropping it unfinished cancels the attempt (its node is removed).
#[pyclass(frozen, module = "zklock", name = "LeadAttempt")]
pub(crate) struct LeadAttempt {
    path: String,
    canceller: CancelToken,
    state: Mutex<Attempt>,
}

impl LeadAttempt {
    pub(crate) fn new(path: &str, acquire: Acquire) -> Self {
        LeadAttempt {
            path: path.to_owned(),
            canceller: acquire.canceller(),
            state: Mutex::new(Attempt::Running(Some(acquire))),
        }
    }

    fn finished(&self, py: Python<'_>) -> Option<PyResult<Py<PyLease>>> {
        match &*lock(&self.state) {
            Attempt::Done(Ok(lease)) => Some(Ok(lease.clone_ref(py))),
            Attempt::Done(Err(err)) => Some(Err(to_py_err(py, err.clone()))),
            Attempt::Running(_) => None,
        }
    }
}

#[pymethods]
impl LeadAttempt {
    /// The leadership once this participant leads again: waits at most `timeout` seconds
    /// (None: forever) with the GIL released, then raises `LockTimeout`, the attempt going on
    /// (`cancel()` ends it). Raises the attempt's error (`Cancelled` after `cancel()`,
    /// `Conflict`, ...). Every call returns the same `Lease` object.
    #[pyo3(signature = (timeout=None))]
    fn result(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Py<PyLease>> {
        let deadline = wait_of(py, timeout)?.deadline();
        loop {
            if let Some(done) = self.finished(py) {
                return done;
            }
            let slice = deadline.map_or(SIGNAL_POLL, |d| {
                d.saturating_duration_since(Instant::now()).min(SIGNAL_POLL)
            });
            let taken = match &mut *lock(&self.state) {
                Attempt::Running(acquire) => acquire.take(),
                Attempt::Done(_) => continue,
            };
            match taken {
                Some(mut acquire) => {
                    let (outcome, acquire) =
                        exit_gate::detach(py, move || (acquire.wait_for(slice), acquire));
                    let done = match outcome {
                        Some(Ok(lease)) => Some(Ok(Py::new(py, PyLease::new(lease))?)),
                        Some(Err(err)) => Some(Err(err)),
                        None => None,
                    };
                    let mut state = lock(&self.state);
                    *state = match done {
                        Some(done) => Attempt::Done(done),
                        None => Attempt::Running(Some(acquire)),
                    };
                }
                // Another thread waits on the handle: look again after a slice.
                None => exit_gate::detach(py, || std::thread::sleep(slice)),
            }
            if self.finished(py).is_some() {
                continue;
            }
            py.check_signals()?;
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(to_py_err(
                    py,
                    zklock::Error::new(
                        ErrorKind::Timeout,
                        format!(
                            "the requeued run for leader of {:?} did not lead in time (it goes \
                             on: cancel() ends it)",
                            truncated(&self.path)
                        ),
                    ),
                ));
            }
        }
    }

    /// Ends the attempt unless it ended already (its node is removed; `result()` then raises
    /// `Cancelled`). True when it was still running.
    fn cancel(&self) -> bool {
        let running = !self.done();
        self.canceller.cancel();
        running
    }

    /// True once the attempt ended (led, failed or was cancelled).
    fn done(&self) -> bool {
        match &*lock(&self.state) {
            Attempt::Done(_) => true,
            Attempt::Running(Some(a)) => a.is_done(),
            Attempt::Running(None) => false,
        }
    }

    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let path = PyString::new(py, &self.path).repr()?;
        let state = if self.done() { "done" } else { "running" };
        Ok(format!("<zklock.LeadAttempt path={path} {state}>"))
    }
}

/// Who leads an election, seen from outside it (the base of `zklock.LeaderWatch`).
#[pyclass(frozen, subclass, module = "zklock._zklock")]
pub(crate) struct NativeLeaderWatch {
    pub(crate) watch: zklock::LeaderWatch,
}

#[pymethods]
impl NativeLeaderWatch {
    #[new]
    fn py_new(native: &Bound<'_, NativeLeaderWatch>) -> Self {
        NativeLeaderWatch {
            watch: native.get().watch.clone(),
        }
    }

    #[getter]
    fn path(&self) -> &str {
        self.watch.path()
    }

    /// The leader at the first call, then the next change within `timeout` seconds (None:
    /// forever; `LockTimeout` when nothing changed by then), with the GIL released.
    #[pyo3(signature = (timeout=None))]
    fn _next(
        &self,
        py: Python<'_>,
        timeout: Option<f64>,
    ) -> PyResult<Option<ElectionParticipantTuple>> {
        let next = self.watch.next(wait_of(py, timeout)?);
        Ok(wait(py, next)?.map(participant_tuple))
    }

    /// The asyncio twin of `_next`: an awaitable future of the running loop.
    #[pyo3(signature = (timeout=None))]
    fn _next_async<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let next = self.watch.next(wait_of(py, timeout)?);
        let (future, target) = LoopFuture::new(py)?;
        let task = zklock::support::spawn(async move {
            let outcome = outcome_of(next.await, leader_into_py);
            delivery().run(move || target.complete(outcome));
        });
        // A cancelled wait must end: the watch serves one `next` at a time.
        future.call_method1("add_done_callback", (Aborter(task.abort_handle()),))?;
        Ok(future)
    }
}

fn leader_into_py(py: Python<'_>, leader: Option<Participant>) -> PyResult<Py<PyAny>> {
    Ok(leader
        .map(participant_tuple)
        .into_pyobject(py)?
        .into_any()
        .unbind())
}

/// The done-callback of an asyncio `next`: cancelling the future ends the core's wait.
#[pyclass(frozen, module = "zklock._zklock")]
pub(crate) struct Aborter(tokio::task::AbortHandle);

#[pymethods]
impl Aborter {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if future.call_method0("cancelled")?.is_truthy()? {
            self.0.abort();
        }
        Ok(())
    }
}
