//! The statistics handed to the `metrics` facade (cargo feature `metrics`, off by default):
//! [`crate::Client::record_metrics`] sets every counter (`absolute`) and gauge (`set`) to the
//! snapshot's value under the same names and labels as the OpenMetrics text (`metrics`), so any
//! `metrics` exporter (Prometheus, StatsD, ...) serves them. Nothing is recorded on the acquire
//! path: the facade is called only when a snapshot is exported (at a scrape, or on a timer of
//! the application's), so the feature costs nothing between exports. The summaries' quantiles
//! are gauges (`zklock_wait_seconds{quantile="0.5"}`), their counts counters.
//!
//! A path's series are recorded whole, zeros included, unlike the text's (issue 51): the facade
//! has no way to remove a series once recorded, so a path's `zklock_path_held` and oldest hold
//! read 0 when it is no longer held (left alone, they would keep their last, held, values), and
//! an exporter keeps them until its own idle timeout, if it has one.

use metrics::{counter, gauge, Label};

use crate::ops::metric_families::OVERFLOW_PATH;
use crate::ops::path_stats::PathStatsSnapshot;
use crate::ops::stats::{Percentiles, Stats};

/// Records `stats` and `paths` in the current `metrics` recorder, each labelled with `labels`.
pub(crate) fn record(stats: &Stats, paths: &PathStatsSnapshot, labels: &[(&str, &str)]) {
    let base: Vec<Label> = labels
        .iter()
        .map(|(k, v)| Label::new(k.to_string(), v.to_string()))
        .collect();
    let with = |more: &[(&'static str, &str)]| -> Vec<Label> {
        let mut all = base.clone();
        all.extend(more.iter().map(|(k, v)| Label::new(*k, v.to_string())));
        all
    };
    for (outcome, n) in [
        ("acquired", stats.acquired),
        ("timed_out", stats.timed_out),
        ("cancelled", stats.cancelled),
        ("failed", stats.failed),
    ] {
        counter!("zklock_acquires_total", with(&[("outcome", outcome)])).absolute(n);
    }
    let summary = |name: &'static str, count: &'static str, p: &Percentiles| {
        for (q, d) in [("0.5", p.p50), ("0.9", p.p90), ("0.99", p.p99)] {
            gauge!(name, with(&[("quantile", q)])).set(d.as_secs_f64());
        }
        counter!(count, with(&[])).absolute(p.count);
    };
    summary(
        "zklock_wait_seconds",
        "zklock_wait_seconds_count",
        &stats.wait,
    );
    summary(
        "zklock_hold_seconds",
        "zklock_hold_seconds_count",
        &stats.hold,
    );
    gauge!("zklock_held", with(&[])).set(stats.held as f64);
    gauge!("zklock_waiting", with(&[])).set(stats.waiting as f64);
    for (name, n) in [
        ("zklock_lease_suspensions_total", stats.suspended),
        ("zklock_leases_lost_total", stats.lost),
        ("zklock_reconnects_total", stats.reconnects),
        ("zklock_session_expiries_total", stats.session_expiries),
    ] {
        counter!(name, with(&[])).absolute(n);
    }
    if paths.limit == 0 {
        return;
    }
    for p in paths.paths.iter().chain(paths.overflow.as_ref()) {
        let path = p.path.as_deref().unwrap_or(OVERFLOW_PATH);
        for (outcome, n) in [
            ("acquired", p.acquired),
            ("timed_out", p.timed_out),
            ("cancelled", p.cancelled),
            ("failed", p.failed),
        ] {
            let labels = with(&[("path", path), ("outcome", outcome)]);
            counter!("zklock_path_acquires_total", labels).absolute(n);
        }
        // A counter of seconds in the text; the facade's counters count whole numbers, so a
        // gauge of the same name carries it here (`rate()` reads either).
        gauge!("zklock_path_wait_seconds_total", with(&[("path", path)]))
            .set(p.wait_sum.as_secs_f64());
        for (reason, n) in p.lost {
            let labels = with(&[("path", path), ("reason", reason.as_str())]);
            counter!("zklock_path_leases_lost_total", labels).absolute(n);
        }
        gauge!("zklock_path_held", with(&[("path", path)])).set(p.held as f64);
        gauge!("zklock_path_oldest_hold_seconds", with(&[("path", path)]))
            .set(p.oldest_hold.as_secs_f64());
    }
    counter!("zklock_path_stats_folded_total", with(&[])).absolute(paths.folded);
}
