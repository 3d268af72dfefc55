//! `zklock.Client`'s native object: one ZooKeeper session and the locks made on it.

use std::str::FromStr;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use zklock::ErrorKind;

use crate::args::max_leases_of;
use crate::counter::{counter_of, PyCounter};
use crate::election::{style_of, NativeElection, NativeLeaderWatch};
use crate::errors::{to_py_err, IntoPy};
use crate::exit_gate;
use crate::lease::check_callable;
use crate::lock::{Inner, NativeLock};
use crate::runtime::{call_unraisable_with, wait};

/// `lock` with the maximum hold `max_hold` seconds (converted and judged by the core: negative,
/// NaN, infinite and zero are `InvalidArgument`).
fn with_max_hold(
    py: Python<'_>,
    lock: zklock::Lock,
    max_hold: Option<f64>,
) -> PyResult<zklock::Lock> {
    zklock::support::max_hold_from_secs(max_hold)
        .and_then(|limit| lock.max_hold(limit))
        .py(py)
}

/// One ZooKeeper session (see `zklock.Client` for the documented face).
#[pyclass(frozen, module = "zklock._zklock", name = "Client")]
pub(crate) struct PyClient {
    pub(crate) client: zklock::Client,
}

#[pymethods]
impl PyClient {
    #[new]
    #[pyo3(signature = (hosts, session_timeout=10.0, connect_timeout=15.0, auth=None, identity=None, acl="open", tls_ca=None, tls_cert=None, tls_key=None, tls_verify_hostname=None, sasl_user=None, sasl_password=None, server_tick=None, path_stats_limit=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        hosts: String,
        session_timeout: f64,
        connect_timeout: f64,
        auth: Option<String>,
        identity: Option<String>,
        acl: &str,
        tls_ca: Option<String>,
        tls_cert: Option<String>,
        tls_key: Option<String>,
        tls_verify_hostname: Option<bool>,
        sasl_user: Option<String>,
        sasl_password: Option<String>,
        server_tick: Option<f64>,
        path_stats_limit: Option<i64>,
    ) -> PyResult<Self> {
        let secs = zklock::support::duration_from_secs_f64;
        let mut options = zklock::Options::default()
            .session_timeout(secs(session_timeout, "session_timeout").py(py)?)
            .connect_timeout(secs(connect_timeout, "connect_timeout").py(py)?)
            .acl(zklock::AclPolicy::from_str(acl).py(py)?);
        if let Some(auth) = auth {
            options = options.auth(auth);
        }
        if let Some(identity) = identity {
            options = options.identity(identity);
        }
        if let Some(tick) = server_tick {
            options = options.server_tick(secs(tick, "server_tick").py(py)?);
        }
        if let Some(limit) = path_stats_limit {
            options =
                options.path_stats_limit(zklock::support::path_stats_limit_from_i64(limit).py(py)?);
        }
        let options = zklock::SecureParts {
            tls_ca,
            tls_cert,
            tls_key,
            tls_verify_hostname,
            sasl_user,
            sasl_password,
        }
        .apply(options)
        .py(py)?;
        let client = wait(
            py,
            async move { zklock::Client::connect(&hosts, options).await },
        )?;
        Ok(PyClient { client })
    }

    /// Closes the session; leases taken through it become lost. Idempotent.
    fn close(&self, py: Python<'_>) {
        let client = self.client.clone();
        exit_gate::detach(py, move || client.blocking_close());
    }

    #[getter]
    fn closed(&self) -> bool {
        self.client.is_closed()
    }

    /// The connection's state now: 'connected', 'suspended' or 'lost' (the core's names).
    #[getter]
    fn connection_state(&self) -> &'static str {
        self.client.connection_state().as_str()
    }

    /// Calls `callback(state)` with the current state and at every change, on zklock's callback
    /// thread; returns the listener's id for `_remove_connection_listener`.
    fn _on_connection(&self, py: Python<'_>, callback: Bound<'_, PyAny>) -> PyResult<u64> {
        check_callable(py, &callback, "add_listener")?;
        let callback = callback.unbind();
        Ok(self
            .client
            .on_connection(move |state| call_unraisable_with(&callback, state.as_str())))
    }

    fn _remove_connection_listener(&self, id: u64) -> bool {
        self.client.remove_connection_listener(id)
    }

    #[getter]
    fn hosts(&self) -> &str {
        self.client.hosts()
    }

    /// The core's id of this client (`Client::id`): what each of its log records names.
    #[getter]
    fn id(&self) -> u64 {
        self.client.id()
    }

    #[getter]
    fn session_id(&self) -> i64 {
        self.client.session_id()
    }

    #[getter]
    fn session_timeout(&self) -> f64 {
        self.client.session_timeout().as_secs_f64()
    }

    /// The tick the lifeline runs on, in seconds ([`zklock::Client::server_tick`]).
    #[getter]
    fn server_tick(&self) -> f64 {
        self.client.server_tick().as_secs_f64()
    }

    /// The ZooKeeper version class that answered at connect and the requests it lacks
    /// ([`zklock::Client::server_features`]).
    fn server_features(&self) -> (&'static str, Vec<&'static str>) {
        let f = self.client.server_features();
        (f.version_class(), f.lacks())
    }

    /// A mutex on `path`; `max_hold` (seconds, None: no limit) ends every lease of it after
    /// that long (lost, reason `max-hold`); `hold_ceiling` (seconds, None: none) bounds its
    /// extensions; `lock_delay` (seconds, None: none) is Chubby's lock-delay
    /// ([`zklock::Lock::lock_delay`]).
    #[pyo3(signature = (path, reentrant=true, max_hold=None, hold_ceiling=None, lock_delay=None))]
    fn mutex(
        &self,
        py: Python<'_>,
        path: &str,
        reentrant: bool,
        max_hold: Option<f64>,
        hold_ceiling: Option<f64>,
        lock_delay: Option<f64>,
    ) -> PyResult<NativeLock> {
        let lock = self.client.mutex(path).py(py)?;
        let lock = with_max_hold(py, lock.reentrant(reentrant), max_hold)?;
        let ceiling = hold_ceiling
            .map(|s| zklock::support::duration_from_secs_f64(s, "hold_ceiling"))
            .transpose()
            .py(py)?;
        let lock = lock.hold_ceiling(ceiling).py(py)?;
        let lock = zklock::support::lock_delay_from_secs(lock_delay)
            .and_then(|delay| lock.lock_delay(delay))
            .py(py)?;
        Ok(NativeLock::new(Inner::Single(Arc::new(lock))))
    }

    /// An election on `path`: `style` by the core's names ('selector', 'latch', 'kazoo'), `id`
    /// the participant id (None: the client's identity), `max_hold` seconds (None: no limit).
    #[pyo3(signature = (path, style=None, id=None, max_hold=None, lock_delay=None))]
    fn election(
        &self,
        py: Python<'_>,
        path: &str,
        style: Option<&str>,
        id: Option<&str>,
        max_hold: Option<f64>,
        lock_delay: Option<f64>,
    ) -> PyResult<NativeElection> {
        let style = style_of(py, style)?;
        let election = self.client.election(path, style, id).py(py)?;
        let election = zklock::support::max_hold_from_secs(max_hold)
            .and_then(|limit| election.max_hold(limit))
            .py(py)?;
        let election = zklock::support::lock_delay_from_secs(lock_delay)
            .and_then(|delay| election.lock_delay(delay))
            .py(py)?;
        Ok(NativeElection::new(election))
    }

    /// An observer of who leads the election on `path`.
    fn observe_leader(&self, py: Python<'_>, path: &str) -> PyResult<NativeLeaderWatch> {
        let watch = self.client.observe_leader(path).py(py)?;
        Ok(NativeLeaderWatch { watch })
    }

    /// Whether `token` is a current holder's (or leader's) token on `path` (Chubby's
    /// CheckSequencer); `max_leases`: a semaphore's N. The GIL is released meanwhile.
    #[pyo3(signature = (path, token, max_leases=None))]
    fn check(
        &self,
        py: Python<'_>,
        path: String,
        token: &Bound<'_, PyAny>,
        max_leases: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        // Tokens are czxids, positive and 64-bit: an int past that is no holder's token. It is
        // asked as one no node has (so the core still judges the path) instead of leaking
        // pyo3's OverflowError.
        let token = token.extract::<i64>().unwrap_or(i64::MIN);
        let n = match max_leases {
            Some(n) => Some(max_leases_of(&path, n).py(py)?),
            None => None,
        };
        let client = self.client.clone();
        wait(py, async move { client.check(&path, token, n).await })
    }

    /// A semaphore of `max_leases` leases on `path` (Curator's `InterProcessSemaphoreV2`
    /// layout); never re-entrant. Any Python int is taken: the core judges N.
    #[pyo3(signature = (path, max_leases, max_hold=None, lock_delay=None))]
    fn semaphore(
        &self,
        py: Python<'_>,
        path: &str,
        max_leases: &Bound<'_, PyAny>,
        max_hold: Option<f64>,
        lock_delay: Option<f64>,
    ) -> PyResult<NativeLock> {
        let n = max_leases_of(path, max_leases).py(py)?;
        let lock = self.client.semaphore(path, n).py(py)?;
        let lock = with_max_hold(py, lock, max_hold)?;
        let lock = zklock::support::lock_delay_from_secs(lock_delay)
            .and_then(|delay| lock.lock_delay(delay))
            .py(py)?;
        Ok(NativeLock::new(Inner::Single(Arc::new(lock))))
    }

    /// `semaphore(path, 1)`: excludes Curator's `InterProcessSemaphoreMutex`.
    #[pyo3(signature = (path, max_hold=None))]
    fn semaphore_mutex(
        &self,
        py: Python<'_>,
        path: &str,
        max_hold: Option<f64>,
    ) -> PyResult<NativeLock> {
        let lock = self.client.semaphore_mutex(path).py(py)?;
        let lock = with_max_hold(py, lock, max_hold)?;
        Ok(NativeLock::new(Inner::Single(Arc::new(lock))))
    }

    /// Asks the holder(s) of `path` (or the one `node`) to let go: sets `__REVOKE__` on their
    /// nodes (Curator's `Revoker.attemptRevoke`). Returns the nodes asked.
    #[pyo3(signature = (path, node=None))]
    fn revoke(&self, py: Python<'_>, path: String, node: Option<String>) -> PyResult<Vec<String>> {
        let client = self.client.clone();
        wait(
            py,
            async move { client.revoke(&path, node.as_deref()).await },
        )
    }

    /// Breaks a stuck lock: deletes `node` (one of `path`'s contenders), checked against the
    /// version just read; returns the contender broken as a `Participant` tuple. `reason` goes
    /// to the logs.
    #[pyo3(signature = (path, node, reason=None))]
    fn break_lock(
        &self,
        py: Python<'_>,
        path: String,
        node: String,
        reason: Option<String>,
    ) -> PyResult<crate::lock::ParticipantTuple> {
        let client = self.client.clone();
        let broken = wait(py, async move {
            client.break_lock(&path, &node, reason.as_deref()).await
        })?;
        Ok(crate::lock::participant_tuple(broken))
    }

    /// A shared counter on `path`: `width` `'int32'` (Curator's SharedCount) or `'int64'`
    /// (DistributedAtomicLong).
    #[pyo3(signature = (path, width="int32"))]
    fn counter(&self, py: Python<'_>, path: &str, width: &str) -> PyResult<PyCounter> {
        counter_of(py, &self.client, path, width)
    }

    /// Both sides of a read/write lock on `path`: `(read, write)`; `max_hold` (seconds, None: no
    /// limit) on both sides.
    #[pyo3(signature = (path, max_hold=None))]
    fn rw_lock(
        &self,
        py: Python<'_>,
        path: &str,
        max_hold: Option<f64>,
    ) -> PyResult<(NativeLock, NativeLock)> {
        let limit = zklock::support::max_hold_from_secs(max_hold).py(py)?;
        let rw = Arc::new(
            self.client
                .rw_lock(path)
                .and_then(|rw| rw.max_hold(limit))
                .py(py)?,
        );
        Ok((
            NativeLock::new(Inner::Read(rw.clone())),
            NativeLock::new(Inner::Write(rw)),
        ))
    }

    /// A multi-lock over existing core lock values (sharing their re-entrancy); `max_hold`
    /// (seconds, None: no limit) ends the whole hold after that long, `hold_ceiling` (seconds,
    /// None: none) bounds its extensions ([`zklock::MultiLock::max_hold`]).
    #[pyo3(signature = (members, max_hold=None, hold_ceiling=None))]
    fn multi_lock(
        &self,
        py: Python<'_>,
        members: Vec<Py<NativeLock>>,
        max_hold: Option<f64>,
        hold_ceiling: Option<f64>,
    ) -> PyResult<NativeLock> {
        let mut locks: Vec<&zklock::Lock> = Vec::with_capacity(members.len());
        for m in &members {
            match m.get().as_lock() {
                Some(lock) => locks.push(lock),
                None => {
                    return Err(to_py_err(
                        py,
                        zklock::Error::new(
                            ErrorKind::InvalidArgument,
                            "a multi-lock cannot contain another multi-lock",
                        ),
                    ))
                }
            }
        }
        let limit = zklock::support::max_hold_from_secs(max_hold).py(py)?;
        let ceiling = hold_ceiling
            .map(|s| zklock::support::duration_from_secs_f64(s, "hold_ceiling"))
            .transpose()
            .py(py)?;
        let multi = zklock::MultiLock::from_locks(locks)
            .and_then(|m| m.max_hold(limit))
            .and_then(|m| m.hold_ceiling(ceiling))
            .py(py)?;
        Ok(NativeLock::new(Inner::Multi(Arc::new(multi))))
    }

    /// The core's statistics as OpenMetrics text ([`zklock::Client::openmetrics`]): labelled
    /// `client="<id>"` and with `labels`.
    #[pyo3(signature = (labels=None))]
    fn openmetrics(&self, labels: Option<Vec<(String, String)>>) -> String {
        let labels = labels.unwrap_or_default();
        let pairs: Vec<(&str, &str)> = labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        self.client.openmetrics(&pairs)
    }

    /// The core's statistics as metric families ([`zklock::Client::metric_families`]), for
    /// `zklock.metrics.ZklockCollector`: a list of `(name, kind, help, unit, samples)`, each
    /// sample `(name, labels dict, value)`. No text is rendered or parsed (issue 51).
    #[pyo3(signature = (labels=None))]
    fn metric_families<'py>(
        &self,
        py: Python<'py>,
        labels: Option<Vec<(String, String)>>,
    ) -> PyResult<Vec<FamilyTuple<'py>>> {
        let labels = labels.unwrap_or_default();
        let pairs: Vec<(&str, &str)> = labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let mut out = Vec::new();
        for f in self.client.metric_families(&pairs) {
            let mut samples = Vec::with_capacity(f.samples.len());
            for s in f.samples {
                let dict = PyDict::new(py);
                for (k, v) in &s.labels {
                    dict.set_item(k, v)?;
                }
                samples.push((format!("{}{}", f.name, s.suffix), dict, s.value));
            }
            out.push((f.name, f.kind, f.help, f.unit.unwrap_or(""), samples));
        }
        Ok(out)
    }

    /// The core's statistics of this client, as a dict of numbers (times in seconds; `wait` and
    /// `hold` are dicts of `count`, `p50`, `p90`, `p99`, `max`). `zklock.Client.stats()` makes
    /// them a frozen dataclass.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.client.stats();
        let times = |p: zklock::Percentiles| -> PyResult<Bound<'py, PyDict>> {
            let d = PyDict::new(py);
            d.set_item("count", p.count)?;
            for (name, value) in [
                ("p50", p.p50),
                ("p90", p.p90),
                ("p99", p.p99),
                ("max", p.max),
            ] {
                d.set_item(name, value.as_secs_f64())?;
            }
            Ok(d)
        };
        let d = PyDict::new(py);
        for (name, value) in [
            ("acquired", s.acquired),
            ("timed_out", s.timed_out),
            ("cancelled", s.cancelled),
            ("failed", s.failed),
            ("held", s.held),
            ("waiting", s.waiting),
            ("suspended", s.suspended),
            ("lost", s.lost),
            ("reconnects", s.reconnects),
            ("session_expiries", s.session_expiries),
        ] {
            d.set_item(name, value)?;
        }
        d.set_item("wait", times(s.wait)?)?;
        d.set_item("hold", times(s.hold)?)?;
        Ok(d)
    }

    /// The core's per-path statistics ([`zklock::Client::path_stats`]) as a dict: `limit`,
    /// `folded`, `paths` (a list of dicts) and `overflow` (a dict or None); each path's dict has
    /// `path` (None for the overflow), the outcome counts, `wait_sum` and `oldest_hold` in
    /// seconds, `held`, and `lost` (a dict of reason word to count).
    fn path_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.client.path_stats();
        let one = |p: &zklock::PathStats| -> PyResult<Bound<'py, PyDict>> {
            let d = PyDict::new(py);
            d.set_item("path", p.path.as_deref())?;
            for (name, value) in [
                ("acquired", p.acquired),
                ("timed_out", p.timed_out),
                ("cancelled", p.cancelled),
                ("failed", p.failed),
                ("held", p.held),
            ] {
                d.set_item(name, value)?;
            }
            d.set_item("wait_sum", p.wait_sum.as_secs_f64())?;
            d.set_item("oldest_hold", p.oldest_hold.as_secs_f64())?;
            let lost = PyDict::new(py);
            for (reason, n) in p.lost {
                lost.set_item(reason.as_str(), n)?;
            }
            d.set_item("lost", lost)?;
            Ok(d)
        };
        let d = PyDict::new(py);
        d.set_item("limit", s.limit)?;
        d.set_item("folded", s.folded)?;
        let paths = s.paths.iter().map(one).collect::<PyResult<Vec<_>>>()?;
        d.set_item("paths", paths)?;
        d.set_item("overflow", s.overflow.as_ref().map(one).transpose()?)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "<zklock._zklock.Client hosts={:?} session=0x{:x}{}>",
            self.client.hosts(),
            self.client.session_id(),
            if self.client.is_closed() {
                " closed"
            } else {
                ""
            }
        )
    }
}

/// One family for Python: name, kind, help, unit ("" when none), samples.
type FamilyTuple<'py> = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    Vec<(String, Bound<'py, PyDict>, f64)>,
);
