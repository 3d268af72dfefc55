//! `NativeLock`, the base of `zklock.Lock`: one core lock value and its `Book` of the
//! leases taken through it.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::pyclass::{PyTraverseError, PyVisit};

use zklock::{Acquire, ErrorKind, LeaseState, Owner, QueuePositions, Wait};

use crate::args::{acquire_timeout, current_owner, wait_of, Arg, ExitArgs, SHARED, TASK_BIT};
use crate::errors::{py_error, to_py_err, IntoPy};
use crate::exit_gate;
use crate::lease::{
    acquire_into_py, check_callable, forked, release_now, Book, Held, PyLease, Slot,
};
use crate::runtime::{wait, wait_acquire};

/// One core lock value (a mutex, one side of a read/write lock, a multi-lock, a semaphore)
/// and the leases taken through this object: the base of `zklock.Lock`, whose `acquire`,
/// `release`, `with`, `locked`, `hold_count` and `lease` are these methods. The package adds
/// only the asyncio glue and the named tuples.
#[pyclass(frozen, subclass, weakref, module = "zklock._zklock")]
pub(crate) struct NativeLock {
    pub(crate) inner: Inner,
    /// The `zklock.Client` it was made by (None on the value `Client.mutex()` & co. return).
    pub(crate) client: Option<Py<PyAny>>,
    pub(crate) kind: &'static str,
    pub(crate) reentrant: bool,
    /// Each thread (task) keeps its own leases, also of a semaphore, which is not re-entrant.
    pub(crate) per_owner: bool,
    pub(crate) book: Arc<Book>,
    /// The blocking acquires waiting through this object, for `cancel()` from another thread.
    pub(crate) waiting: Arc<Waiting>,
}

/// The acquires in progress through one lock object (blocking and asyncio): the blocking ones'
/// cancel tokens, for `cancel()` from another thread (an asyncio task is cancelled through
/// asyncio), and every one's queue position, for `position` (the core keeps the rule).
#[derive(Default)]
pub(crate) struct Waiting {
    next: std::sync::atomic::AtomicU64,
    tokens: std::sync::Mutex<Vec<(u64, zklock::CancelToken)>>,
    positions: QueuePositions,
}

impl Waiting {
    /// A blocking acquire: keeps its token until the returned guard is dropped (the acquire
    /// ended), and counts its position.
    pub(crate) fn add(self: &Arc<Self>, acquire: &Acquire) -> WaitingGuard {
        self.positions.track(&acquire.queue_position());
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.tokens.lock().unwrap().push((id, acquire.canceller()));
        WaitingGuard {
            waiting: self.clone(),
            id,
        }
    }

    /// An asyncio acquire: counts its position (it goes when the acquire does).
    pub(crate) fn add_async(&self, acquire: &Acquire) {
        self.positions.track(&acquire.queue_position());
    }

    /// Cancels every blocking acquire waiting now; how many there were.
    pub(crate) fn cancel_all(&self) -> usize {
        let tokens = self.tokens.lock().unwrap();
        for (_, token) in tokens.iter() {
            token.cancel();
        }
        tokens.len()
    }

    /// The first queue position among the acquires waiting now (the core's rule,
    /// [`QueuePositions::least`]), `None` when none of them is queued.
    pub(crate) fn position(&self) -> Option<u32> {
        self.positions.least()
    }
}

pub(crate) struct WaitingGuard {
    waiting: Arc<Waiting>,
    id: u64,
}

impl Drop for WaitingGuard {
    fn drop(&mut self) {
        self.waiting
            .tokens
            .lock()
            .unwrap()
            .retain(|(id, _)| *id != self.id);
    }
}

pub(crate) enum Inner {
    Single(Arc<zklock::Lock>),
    Read(Arc<zklock::RwLock>),
    Write(Arc<zklock::RwLock>),
    Multi(Arc<zklock::MultiLock>),
}

impl Inner {
    pub(crate) fn clone_ref(&self) -> Inner {
        match self {
            Inner::Single(l) => Inner::Single(l.clone()),
            Inner::Read(rw) => Inner::Read(rw.clone()),
            Inner::Write(rw) => Inner::Write(rw.clone()),
            Inner::Multi(m) => Inner::Multi(m.clone()),
        }
    }
}

pub(crate) const KINDS: [&str; 5] = ["mutex", "read", "write", "multi", "semaphore"];

impl NativeLock {
    pub(crate) fn new(inner: Inner) -> Self {
        NativeLock {
            inner,
            client: None,
            kind: "",
            reentrant: true,
            per_owner: true,
            book: Book::new(),
            waiting: Arc::default(),
        }
    }

    pub(crate) fn as_lock(&self) -> Option<&zklock::Lock> {
        match &self.inner {
            Inner::Single(l) => Some(l),
            Inner::Read(rw) => Some(rw.read()),
            Inner::Write(rw) => Some(rw.write()),
            Inner::Multi(_) => None,
        }
    }

    /// Starts an acquire; `on_queued(position)` (a Python callable, checked) is called on
    /// zklock's callback thread when it is queued and on each change of its place.
    pub(crate) fn start(
        &self,
        py: Python<'_>,
        owner: Owner,
        wait: Wait,
        on_queued: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Acquire> {
        if let Some(callback) = on_queued {
            check_callable(py, callback, "on_queued")?;
        }
        let acquire = match (&self.inner, self.as_lock()) {
            (Inner::Multi(m), _) => m.start_acquire(owner, wait),
            (_, Some(lock)) => lock.start_acquire(owner, wait),
            (_, None) => unreachable!("a lock that is not a multi-lock has a core lock"),
        };
        if let Some(callback) = on_queued {
            let callback = callback.clone().unbind();
            acquire.queue_position().on_queued(move |position| {
                let _ = exit_gate::attach(|py| {
                    let callback = callback.bind(py);
                    if let Err(err) = callback.call1((position,)) {
                        err.write_unraisable(py, Some(callback));
                    }
                });
            });
        }
        Ok(acquire)
    }

    /// Whose holds these are: the calling thread (task), or the shared owner.
    pub(crate) fn key(&self, py: Python<'_>) -> PyResult<u64> {
        if self.per_owner {
            current_owner(py)
        } else {
            Ok(SHARED)
        }
    }

    /// Takes the lock for `owner` within `timeout` (the core's rule; None: forever). A
    /// re-entrant hold needs no trip to the runtime.
    pub(crate) fn take(
        &self,
        py: Python<'_>,
        owner: u64,
        timeout: Option<f64>,
        on_queued: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<zklock::Result<zklock::Lease>> {
        let wait = wait_of(py, timeout)?;
        if let Some(lease) = self.as_lock().and_then(|l| l.reenter_as(Owner(owner))) {
            return Ok(Ok(lease));
        }
        let acquire = self.start(py, Owner(owner), wait, on_queued)?;
        let _waiting = self.waiting.add(&acquire);
        wait_acquire(py, acquire)
    }

    /// Takes the lock for the caller and keeps the lease as a `Lease` object.
    pub(crate) fn take_object(
        &self,
        py: Python<'_>,
        timeout: Option<f64>,
        entered: bool,
        on_queued: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyLease>> {
        let owner = self.key(py)?;
        let lease = self.take(py, owner, timeout, on_queued)?.py(py)?;
        let object = Py::new(py, PyLease::new(lease))?;
        self.keep_object(py, &object, owner, entered);
        Ok(object)
    }

    pub(crate) fn keep_object(
        &self,
        py: Python<'_>,
        object: &Py<PyLease>,
        owner: u64,
        entered: bool,
    ) {
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
    pub(crate) fn release_target(&self, entries: &[Held], owner: u64) -> Option<usize> {
        Book::latest(entries, owner).or_else(|| {
            if self.kind == "semaphore" {
                entries.iter().position(|h| !h.slot.done())
            } else {
                None
            }
        })
    }

    pub(crate) fn not_held(&self, py: Python<'_>, owner: u64) -> PyErr {
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
    pub(crate) fn release_object(&self, py: Python<'_>) -> PyResult<Py<PyLease>> {
        let owner = self.key(py)?;
        let found = self.release_target(&self.book.entries(py), owner);
        match found {
            Some(i) => self.book.object_at(py, i),
            None => Err(self.not_held(py, owner)),
        }
    }

    pub(crate) fn path(&self) -> String {
        self.paths().join(",")
    }

    pub(crate) fn paths(&self) -> Vec<String> {
        match (&self.inner, self.as_lock()) {
            (Inner::Multi(m), _) => m.paths().into_iter().map(str::to_owned).collect(),
            (_, Some(lock)) => vec![lock.path().to_owned()],
            (_, None) => Vec::new(),
        }
    }

    pub(crate) fn hold_count_of(&self, owner: u64) -> usize {
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
            waiting: Arc::default(),
        })
    }

    /// Cancels the blocking acquires waiting through this object now, from any thread (kazoo's
    /// `lock.cancel()`): each raises `Cancelled` and leaves no node behind. Returns how many
    /// there were; an acquire that starts later is not affected.
    fn cancel(&self) -> usize {
        self.waiting.cancel_all()
    }

    /// Waits for the lock like `threading.Lock.acquire`: `blocking=False` tries once, `timeout`
    /// (seconds, -1 forever) bounds the wait. Returns False when the lock was not taken (no
    /// node is left behind). The GIL is released while waiting. `on_queued(position)` is
    /// called (on zklock's callback thread) when the acquire is queued behind others and each
    /// time its place changes, never when it holds at once.
    #[pyo3(signature = (blocking = Arg::Missing, timeout = Arg::Missing, on_queued = None))]
    fn acquire(
        &self,
        py: Python<'_>,
        blocking: Arg<'_>,
        timeout: Arg<'_>,
        on_queued: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let timeout = acquire_timeout(py, blocking, timeout)?;
        let owner = self.key(py)?;
        let lease = match self.take(py, owner, Some(timeout), on_queued.as_ref())? {
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
        self.take_object(py, None, true, None)
    }

    /// How many contenders must leave before the first acquire waiting through this object
    /// (any thread or task) can hold, as of its last look at the queue; None when none waits
    /// in the queue (the core's figure: docs/contract.md, "Queue position").
    #[getter]
    fn position(&self) -> Option<u32> {
        self.waiting.position()
    }

    /// Releases the lease `with lock` took; `LockLost` when it was lost inside the block
    /// (unless the block raised: its exception goes on).
    #[pyo3(signature = (*args))]
    fn __exit__(&self, py: Python<'_>, args: ExitArgs<'_>) -> PyResult<()> {
        match self._exit(py)? {
            Some(lease) => {
                PyLease::release_bound(lease.bind(py))?;
                lease.get().leave_scope(py, args.0.is_some())
            }
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
    #[pyo3(signature = (timeout = None, entered = false, on_queued = None))]
    fn _acquire(
        &self,
        py: Python<'_>,
        timeout: Option<f64>,
        entered: bool,
        on_queued: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyLease>> {
        self.take_object(py, timeout, entered, on_queued.as_ref())
    }

    /// Who the caller is for this lock (its thread or task, or the shared owner).
    fn _key(&self, py: Python<'_>) -> PyResult<u64> {
        self.key(py)
    }

    /// The asyncio acquire: an awaitable future of the running loop for `owner` (from
    /// `_key()`); the package keeps the lease it gets with `_keep`. `settled` (a future of the
    /// same loop) gets None once the acquire has ended, its node removed if it was cancelled.
    /// `on_queued` as for `acquire` (the package calls it on the loop's thread).
    #[pyo3(signature = (owner, timeout=None, settled=None, on_queued=None))]
    fn _acquire_async<'py>(
        &self,
        py: Python<'py>,
        owner: u64,
        timeout: Option<f64>,
        settled: Option<Bound<'py, PyAny>>,
        on_queued: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let wait = wait_of(py, timeout)?;
        let acquire = self.start(py, Owner(owner), wait, on_queued.as_ref())?;
        self.waiting.add_async(&acquire);
        acquire_into_py(py, acquire, settled)
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
    #[pyo3(signature = (timeout=None))]
    fn _participants(
        &self,
        py: Python<'_>,
        timeout: Option<f64>,
    ) -> PyResult<Vec<ParticipantTuple>> {
        let timeout = Wait::from_secs(timeout).py(py)?.time_left();
        let list = match &self.inner {
            Inner::Single(l) => {
                let l = l.clone();
                wait(py, async move { l.participants_timeout(timeout).await })?
            }
            Inner::Read(rw) | Inner::Write(rw) => {
                let rw = rw.clone();
                wait(py, async move { rw.participants_timeout(timeout).await })?
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
        Ok(list.into_iter().map(participant_tuple).collect())
    }
}

pub(crate) type ParticipantTuple = (String, String, i64, String, String, i64, Option<u32>);

/// A lock's participant as the package's `Participant` named tuple takes it.
pub(crate) fn participant_tuple(p: zklock::Participant) -> ParticipantTuple {
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
}
