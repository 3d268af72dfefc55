//! Where the core's events are counted (`stats`) and told (`tracing`, and the faces' sink in
//! `logs`), so that an acquire, a lease state change or a session event is observed in one place
//! whatever face caused it.

use std::time::{Duration, Instant};

use crate::bounds;
use crate::logs::{self, Level};
use crate::protocol::NodeKind;
use crate::state::LeaseState;
use crate::stats::{Counters, Outcome};

/// Counts one acquire that goes to ZooKeeper as waiting until it settles; an acquire dropped
/// before it settled counts as timed out when its deadline had passed (the outer bound fired),
/// else as cancelled.
pub(crate) struct AcquireWatch<'a> {
    counters: &'a Counters,
    path: &'a str,
    kind: NodeKind,
    started: Instant,
    decide_by: Option<tokio::time::Instant>,
    span: tracing::Span,
    settled: bool,
}

impl<'a> AcquireWatch<'a> {
    pub(crate) fn start(
        counters: &'a Counters,
        path: &'a str,
        kind: NodeKind,
        decide_by: Option<tokio::time::Instant>,
        span: tracing::Span,
    ) -> AcquireWatch<'a> {
        counters.wait_started();
        AcquireWatch {
            counters,
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

impl Drop for AcquireWatch<'_> {
    fn drop(&mut self) {
        if !self.settled {
            let outcome = match bounds::too_late(self.decide_by) {
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
        logs::emit(level, "state", message, fields);
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
