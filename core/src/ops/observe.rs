//! Where the core's events are counted (`stats`) and told (`tracing`, and the faces' sink in
//! `logs`), so that an acquire, a lease state change or a session event is observed in one place
//! whatever face caused it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::base::protocol::NodeKind;
use crate::base::state::LeaseState;
use crate::ops::bounds;
use crate::ops::logs::{self, Level};
use crate::ops::outcome::Outcome;
use crate::ops::path_stats::PathCounters;
use crate::ops::stats::Counters;

/// Counts one acquire that goes to ZooKeeper as waiting until it settles; an acquire dropped
/// before it settled counts as timed out when its deadline had passed (the outer bound fired),
/// else as cancelled.
pub(crate) struct AcquireWatch<'a> {
    counters: &'a Counters,
    /// This path's own counters (or the overflow series'); `None` when they are off.
    path_counters: Option<Arc<PathCounters>>,
    path: &'a str,
    kind: NodeKind,
    started: Instant,
    /// Borrowed from the acquire, which keeps it anyway (memory per waiting lock).
    decide_by: &'a Option<tokio::time::Instant>,
    span: tracing::Span,
    settled: bool,
}

impl<'a> AcquireWatch<'a> {
    pub(crate) fn start(
        counters: &'a Counters,
        path: &'a str,
        kind: NodeKind,
        decide_by: &'a Option<tokio::time::Instant>,
        span: tracing::Span,
    ) -> AcquireWatch<'a> {
        counters.wait_started();
        AcquireWatch {
            counters,
            path_counters: counters.paths.acquire_on(path),
            path,
            kind,
            started: Instant::now(),
            decide_by,
            span,
            settled: false,
        }
    }

    pub(crate) fn settle<T>(&mut self, result: &crate::Result<T>) {
        let (outcome, error) = match result {
            Ok(_) => (Outcome::Acquired, None),
            Err(e) => (Outcome::of_error(e.kind()), Some(e.message())),
        };
        self.record(outcome, error);
    }

    fn record(&mut self, outcome: Outcome, error: Option<&str>) {
        self.settled = true;
        let waited = self.started.elapsed();
        self.counters.wait_ended(outcome, waited);
        if let Some(p) = &self.path_counters {
            p.wait_ended(outcome, waited);
        }
        let wait_ms = millis(waited);
        self.span.record("outcome", outcome.as_str());
        self.span.record("wait_ms", wait_ms);
        tracing::debug!(
            path = self.path,
            kind = self.kind.as_str(),
            outcome = outcome.as_str(),
            wait_ms,
            "acquire settled"
        );
        if logs::wanted(Level::Debug) {
            let mut fields = vec![
                ("path", self.path.to_owned()),
                ("kind", self.kind.as_str().to_owned()),
                ("outcome", outcome.as_str().to_owned()),
                ("wait_ms", format!("{wait_ms:.3}")),
            ];
            if let Some(e) = error {
                fields.push(("reason", e.to_owned()));
            }
            logs::emit(
                Level::Debug,
                self.counters.client(),
                "acquire",
                format!(
                    "acquire of {} ({}): {} after {wait_ms:.1} ms",
                    self.path,
                    self.kind,
                    outcome.as_str()
                ),
                fields,
            );
        }
    }
}

impl AcquireWatch<'_> {
    /// `work` run inside this acquire's span (entered at each poll and at its drop), as
    /// `tracing::Instrument` would, but borrowing the watch's span instead of keeping a second
    /// copy in the acquire's future (memory per waiting lock, bench s6).
    pub(crate) fn in_span<F: std::future::Future>(&self, work: F) -> InSpan<'_, F> {
        InSpan {
            span: &self.span,
            work: std::mem::ManuallyDrop::new(work),
        }
    }
}

/// See [`AcquireWatch::in_span`].
pub(crate) struct InSpan<'a, F> {
    span: &'a tracing::Span,
    work: std::mem::ManuallyDrop<F>,
}

impl<F: std::future::Future> std::future::Future for InSpan<'_, F> {
    type Output = F::Output;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        // SAFETY: `work` is pinned where it is: never moved out of the struct (dropped in place
        // by `Drop`).
        let this = unsafe { self.get_unchecked_mut() };
        let _entered = this.span.enter();
        unsafe { std::pin::Pin::new_unchecked(&mut *this.work) }.poll(cx)
    }
}

impl<F> Drop for InSpan<'_, F> {
    fn drop(&mut self) {
        let _entered = self.span.enter();
        // SAFETY: dropped once, in place, and never used again.
        unsafe { std::mem::ManuallyDrop::drop(&mut self.work) }
    }
}

impl Drop for AcquireWatch<'_> {
    fn drop(&mut self) {
        if !self.settled {
            let outcome = match bounds::too_late(*self.decide_by) {
                true => Outcome::TimedOut,
                false => Outcome::Cancelled,
            };
            self.record(outcome, Some("the acquire was dropped before it settled"));
        }
    }
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A lease's state changed from `old` to `new` (counted and told; `released` only at debug).
pub(crate) fn lease_state(
    counters: &Counters,
    node: &str,
    old: LeaseState,
    new: LeaseState,
    reason: Option<&str>,
) {
    match new {
        LeaseState::Suspended => counters.suspended(),
        LeaseState::Lost => counters.lost(),
        _ => {}
    }
    let level = match new {
        LeaseState::Released => Level::Debug,
        _ => Level::Warn,
    };
    let reason = reason.unwrap_or("");
    match level {
        Level::Debug => tracing::debug!(
            node,
            from = old.as_str(),
            state = new.as_str(),
            "lease state"
        ),
        _ => tracing::warn!(
            node,
            from = old.as_str(),
            state = new.as_str(),
            reason,
            "lease state"
        ),
    }
    if logs::wanted(level) {
        let mut fields = vec![
            ("node", node.to_owned()),
            ("from", old.as_str().to_owned()),
            ("state", new.as_str().to_owned()),
        ];
        let mut message = format!("lease on {node}: {old} -> {new}");
        if !reason.is_empty() {
            fields.push(("reason", reason.to_owned()));
            message.push_str(&format!(" ({reason})"));
        }
        logs::emit(level, counters.client(), "state", message, fields);
    }
}

/// A lock node was broken by this client (`Client::break_lock`): its node, token, holder's
/// identity, the reason given and who broke it (`user@host pid N`), at warning level.
pub(crate) fn broken(
    counters: &Counters,
    node: &str,
    token: i64,
    identity: &str,
    reason: &str,
    by: &str,
) {
    tracing::warn!(node, token, identity, reason, by, "lock broken");
    if logs::wanted(Level::Warn) {
        let mut message = format!("{by} broke {node} (token {token}, holder {identity:?})");
        if !reason.is_empty() {
            message.push_str(&format!(": {reason}"));
        }
        let fields = vec![
            ("node", node.to_owned()),
            ("token", token.to_string()),
            ("identity", identity.to_owned()),
            ("reason", reason.to_owned()),
            ("by", by.to_owned()),
        ];
        logs::emit(Level::Warn, counters.client(), "break", message, fields);
    }
}

/// An acquire got its node after a holder went without a clean release, and waits out its
/// lock-delay before its lease is held (`Lock::lock_delay`), at info level.
pub(crate) fn lock_delayed(counters: &Counters, path: &str, delay: Duration) {
    let shown = crate::base::text::duration(delay);
    tracing::info!(path, delay = shown.as_str(), "lock-delay");
    if logs::wanted(Level::Info) {
        logs::emit(
            Level::Info,
            counters.client(),
            "lock-delay",
            format!("{path}: the holder before us went without a clean release; waiting out the lock-delay of {shown}"),
            vec![("path", path.to_owned()), ("delay", shown)],
        );
    }
}

/// An acquire timed out while the connection kept failing (`message` names the failure).
pub(crate) fn explained_timeout(counters: &Counters, message: &str) {
    tracing::warn!(message, "acquire timed out");
    if logs::wanted(Level::Warn) {
        logs::emit(
            Level::Warn,
            counters.client(),
            "acquire",
            message.to_owned(),
            Vec::new(),
        );
    }
}

/// What a client learned of its servers at connect (`sessions::server_facts`), at info level:
/// the tick bound the lifeline will not go under and the version class.
pub(crate) fn server_facts(counters: &Counters, hosts: &str, tick: Duration, class: &str) {
    let shown = crate::base::text::duration(tick);
    tracing::info!(
        hosts,
        tick = shown.as_str(),
        class,
        "zookeeper server facts"
    );
    if logs::wanted(Level::Info) {
        logs::emit(
            Level::Info,
            counters.client(),
            "server",
            format!("ZooKeeper at {hosts}: tick at most {shown} (half its shortest session), version {class}"),
            vec![("tick", shown), ("class", class.to_owned())],
        );
    }
}

/// What happened to a session (by its id): `opened`, `disconnected`, `reconnected`, `expired`,
/// `closed`.
pub(crate) fn session_event(counters: &Counters, session: i64, what: &'static str, reason: &str) {
    match what {
        "reconnected" => counters.reconnected(),
        "expired" => counters.session_expired(),
        _ => {}
    }
    let level = match what {
        "opened" | "reconnected" => Level::Info,
        "closed" => Level::Debug,
        _ => Level::Warn,
    };
    let id = format!("0x{session:x}");
    match level {
        Level::Info => tracing::info!(
            session = id.as_str(),
            event = what,
            reason,
            "zookeeper session"
        ),
        Level::Debug => tracing::debug!(
            session = id.as_str(),
            event = what,
            reason,
            "zookeeper session"
        ),
        _ => tracing::warn!(
            session = id.as_str(),
            event = what,
            reason,
            "zookeeper session"
        ),
    }
    if logs::wanted(level) {
        let mut message = format!("ZooKeeper session {id} {what}");
        if !reason.is_empty() {
            message.push_str(&format!(": {reason}"));
        }
        logs::emit(
            level,
            counters.client(),
            "session",
            message,
            vec![
                ("session", id),
                ("event", what.to_owned()),
                ("reason", reason.to_owned()),
            ],
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{mpsc, Arc, Mutex};

    #[test]
    fn every_record_names_the_client_whose_event_it_tells() {
        let (a, b) = (Counters::default(), Counters::default());
        let ids = [a.client(), b.client()];
        let (tx, rx) = mpsc::channel();
        let tx = Mutex::new(tx);
        // The sink is the process's: other tests' records may pass by, so keep ours only.
        logs::set_sink(Some((
            Level::Debug,
            Arc::new(move |r: &logs::Record| {
                if ids.contains(&r.client) {
                    let by = r.fields.iter().find(|(k, _)| *k == "by");
                    let by = by.map(|(_, v)| v.clone());
                    let _ = tx.lock().unwrap().send((r.client, r.event, by));
                }
            }),
        )));
        session_event(&a, 7, "opened", "");
        lease_state(&b, "n", LeaseState::Held, LeaseState::Lost, Some("closed"));
        let decide_by = None;
        let mut watch =
            AcquireWatch::start(&a, "/p", NodeKind::Mutex, &decide_by, tracing::Span::none());
        watch.settle(&Ok::<(), crate::Error>(()));
        drop(watch);
        // The break's audit record names who broke, not only whom (issue 51).
        broken(&b, "/p/n", 5, "holder", "hung", "ann@ops1 pid 42");
        let got: Vec<_> = (0..4)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).expect("a record"))
            .collect();
        logs::set_sink(None);
        assert_eq!(
            got,
            [
                (a.client(), "session", None),
                (b.client(), "state", None),
                (a.client(), "acquire", None),
                (b.client(), "break", Some("ann@ops1 pid 42".to_owned())),
            ]
        );
    }
}
