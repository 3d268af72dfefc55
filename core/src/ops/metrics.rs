//! A client's statistics as OpenMetrics text (the Prometheus exposition format's successor,
//! which Prometheus reads): what issue 37's "metrics per lock" asks of every face, rendered once
//! here so that every face serves the same names. Counters end in `_total`, the wait and hold
//! times are summaries in seconds (the quantiles the core keeps: 0.5, 0.9, 0.99, and `_count`),
//! and every sample carries the labels the caller gives (a client id, a service name).

use std::fmt::Write as _;

use crate::ops::path_stats::{PathStats, PathStatsSnapshot};
use crate::ops::stats::{Percentiles, Stats};

/// The `path` label of the overflow series, where the acquires on paths past the client's
/// `path_stats_limit` are counted (no lock path looks like it: they all start with `/`).
pub const OVERFLOW_PATH: &str = "(overflow)";

impl Stats {
    /// These statistics as OpenMetrics text, ending with `# EOF`, each sample labelled with
    /// `labels` (name, value; values escaped as the format requires; a name that is not a
    /// valid label name is left out).
    pub fn to_openmetrics(&self, labels: &[(&str, &str)]) -> String {
        self.to_openmetrics_with(None, labels)
    }

    /// [`Stats::to_openmetrics`] followed by the statistics of every path in `paths` (a
    /// `path` label each; the overflow series as `path="(overflow)"`).
    pub fn to_openmetrics_with(
        &self,
        paths: Option<&PathStatsSnapshot>,
        labels: &[(&str, &str)],
    ) -> String {
        let base = label_text(labels);
        let mut out = String::with_capacity(2048);
        counter(
            &mut out,
            "zklock_acquires",
            "Acquires that went to ZooKeeper, by how they settled.",
        );
        for (outcome, n) in [
            ("acquired", self.acquired),
            ("timed_out", self.timed_out),
            ("cancelled", self.cancelled),
            ("failed", self.failed),
        ] {
            let labels = join(&base, &format!("outcome=\"{outcome}\""));
            let _ = writeln!(out, "zklock_acquires_total{labels} {n}");
        }
        summary(
            &mut out,
            "zklock_wait_seconds",
            "How long acquired locks were waited for.",
            &base,
            &self.wait,
        );
        summary(
            &mut out,
            "zklock_hold_seconds",
            "How long leases were held, until released or lost.",
            &base,
            &self.hold,
        );
        for (name, help, value) in [
            ("zklock_held", "Leases held now.", self.held),
            ("zklock_waiting", "Acquires waiting now.", self.waiting),
        ] {
            let _ = writeln!(out, "# TYPE {name} gauge\n# HELP {name} {help}");
            let _ = writeln!(out, "{name}{} {value}", braces(&base));
        }
        for (name, help, value) in [
            (
                "zklock_lease_suspensions",
                "Times a held lease turned suspended.",
                self.suspended,
            ),
            (
                "zklock_leases_lost",
                "Times a lease turned lost.",
                self.lost,
            ),
            (
                "zklock_reconnects",
                "Times the connection came back to the same session.",
                self.reconnects,
            ),
            (
                "zklock_session_expiries",
                "Sessions that expired.",
                self.session_expiries,
            ),
        ] {
            counter(&mut out, name, help);
            let _ = writeln!(out, "{name}_total{} {value}", braces(&base));
        }
        if let Some(paths) = paths.filter(|p| p.limit > 0) {
            render_paths(&mut out, &base, paths);
        }
        out.push_str("# EOF\n");
        out
    }
}

/// The per-path families: each family's samples together, one `path` label per series. An
/// outcome or a loss reason that never happened on a path has no series (issue 51: at the
/// default limit a scrape carried 12 samples a path, most of them zeros, 1.4 MB at 1,000
/// paths); it appears with its first count. `increase()` does not count a series' first sample,
/// so a rule on a first loss looks for new series too (monitoring/alerts.yml, `ZklockLeaseLost`).
/// The wait sum and count, `held` and the oldest hold are always there.
fn render_paths(out: &mut String, base: &str, snapshot: &PathStatsSnapshot) {
    let series: Vec<(String, &PathStats)> = snapshot
        .paths
        .iter()
        .chain(snapshot.overflow.as_ref())
        .map(|p| {
            let path = escape(p.path.as_deref().unwrap_or(OVERFLOW_PATH));
            let labels = match base.is_empty() {
                true => format!("path=\"{path}\""),
                false => format!("{base},path=\"{path}\""),
            };
            (labels, p)
        })
        .collect();
    counter(
        out,
        "zklock_path_acquires",
        "Acquires on a lock path that went to ZooKeeper, by how they settled.",
    );
    for (labels, p) in &series {
        for (outcome, n) in [
            ("acquired", p.acquired),
            ("timed_out", p.timed_out),
            ("cancelled", p.cancelled),
            ("failed", p.failed),
        ] {
            if n > 0 {
                let _ = writeln!(
                    out,
                    "zklock_path_acquires_total{{{labels},outcome=\"{outcome}\"}} {n}"
                );
            }
        }
    }
    let name = "zklock_path_wait_seconds";
    let _ = writeln!(
        out,
        "# TYPE {name} summary\n# HELP {name} How long acquired locks on a path were waited \
         for.\n# UNIT {name} seconds"
    );
    for (labels, p) in &series {
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", p.wait_sum.as_secs_f64());
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", p.acquired);
    }
    counter(
        out,
        "zklock_path_leases_lost",
        "Leases on a lock path that turned lost, by reason.",
    );
    for (labels, p) in &series {
        for (reason, n) in p.lost.into_iter().filter(|(_, n)| *n > 0) {
            let reason = reason.as_str();
            let _ = writeln!(
                out,
                "zklock_path_leases_lost_total{{{labels},reason=\"{reason}\"}} {n}"
            );
        }
    }
    let name = "zklock_path_held";
    let _ = writeln!(
        out,
        "# TYPE {name} gauge\n# HELP {name} Leases held now on a lock path."
    );
    for (labels, p) in &series {
        let _ = writeln!(out, "{name}{{{labels}}} {}", p.held);
    }
    let name = "zklock_path_oldest_hold_seconds";
    let _ = writeln!(
        out,
        "# TYPE {name} gauge\n# HELP {name} How long the oldest lease held now on a lock path \
         has been held (0 when none is).\n# UNIT {name} seconds"
    );
    for (labels, p) in &series {
        let _ = writeln!(out, "{name}{{{labels}}} {}", p.oldest_hold.as_secs_f64());
    }
    let name = "zklock_path_stats_folded";
    counter(
        out,
        name,
        "Acquires on paths past the client's path_stats_limit, counted in the path=\"(overflow)\" series.",
    );
    let _ = writeln!(out, "{name}_total{} {}", braces(base), snapshot.folded);
}

fn counter(out: &mut String, name: &str, help: &str) {
    let _ = writeln!(out, "# TYPE {name} counter\n# HELP {name} {help}");
}

fn summary(out: &mut String, name: &str, help: &str, base: &str, p: &Percentiles) {
    let _ = writeln!(
        out,
        "# TYPE {name} summary\n# HELP {name} {help}\n# UNIT {name} seconds"
    );
    for (q, d) in [("0.5", p.p50), ("0.9", p.p90), ("0.99", p.p99)] {
        let labels = join(base, &format!("quantile=\"{q}\""));
        let _ = writeln!(out, "{name}{labels} {}", d.as_secs_f64());
    }
    let _ = writeln!(out, "{name}_count{} {}", braces(base), p.count);
}

/// `a="1",b="2"` from the caller's labels, valid names only, values escaped.
fn label_text(labels: &[(&str, &str)]) -> String {
    labels
        .iter()
        .filter(|(name, _)| valid_name(name))
        .map(|(name, value)| format!("{name}=\"{}\"", escape(value)))
        .collect::<Vec<_>>()
        .join(",")
}

fn join(base: &str, more: &str) -> String {
    if base.is_empty() {
        format!("{{{more}}}")
    } else {
        format!("{{{base},{more}}}")
    }
}

fn braces(base: &str) -> String {
    if base.is_empty() {
        String::new()
    } else {
        format!("{{{base}}}")
    }
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with("__")
}

fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_text_names_every_counter_and_summary_and_ends_with_eof() {
        let stats = Stats {
            acquired: 3,
            timed_out: 1,
            wait: Percentiles {
                count: 3,
                p50: Duration::from_millis(2),
                p90: Duration::from_millis(5),
                p99: Duration::from_millis(9),
                max: Duration::from_millis(9),
            },
            held: 1,
            ..Stats::default()
        };
        let text = stats.to_openmetrics(&[("client", "7")]);
        assert!(
            text.contains("zklock_acquires_total{client=\"7\",outcome=\"acquired\"} 3\n"),
            "{text}"
        );
        assert!(text.contains("zklock_acquires_total{client=\"7\",outcome=\"timed_out\"} 1\n"));
        assert!(text.contains("zklock_wait_seconds{client=\"7\",quantile=\"0.9\"} 0.005\n"));
        assert!(text.contains("zklock_wait_seconds_count{client=\"7\"} 3\n"));
        assert!(text.contains("zklock_held{client=\"7\"} 1\n"));
        assert!(text.contains("# TYPE zklock_leases_lost counter\n"));
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn label_values_are_escaped_and_bad_label_names_left_out() {
        let text = Stats::default().to_openmetrics(&[
            ("svc", "a\"b\\c\nd"),
            ("bad-name", "x"),
            ("__x", "y"),
        ]);
        assert!(
            text.contains("zklock_held{svc=\"a\\\"b\\\\c\\nd\"} 0\n"),
            "{text}"
        );
        assert!(!text.contains("bad-name") && !text.contains("__x"));
        let bare = Stats::default().to_openmetrics(&[]);
        assert!(bare.contains("zklock_held 0\n"), "{bare}");
    }

    #[test]
    fn each_path_gets_its_series_with_the_path_escaped_and_the_overflow_its_own() {
        use crate::ops::path_stats::LossReason;
        let path = |p: Option<&str>, acquired| PathStats {
            path: p.map(str::to_owned),
            acquired,
            timed_out: 0,
            cancelled: 0,
            failed: 0,
            wait_sum: Duration::from_millis(250),
            lost: LossReason::ALL.map(|r| (r, u64::from(r == LossReason::Broken))),
            held: 1,
            oldest_hold: Duration::from_secs(2),
        };
        let snapshot = PathStatsSnapshot {
            limit: 1,
            paths: vec![path(Some("/a\"b\\c\nd"), 2)],
            overflow: Some(path(None, 5)),
            folded: 5,
        };
        let text = Stats::default().to_openmetrics_with(Some(&snapshot), &[("client", "1")]);
        let esc = r#"path="/a\"b\\c\nd""#;
        for line in [
            format!("zklock_path_acquires_total{{client=\"1\",{esc},outcome=\"acquired\"}} 2"),
            format!("zklock_path_wait_seconds_sum{{client=\"1\",{esc}}} 0.25"),
            format!("zklock_path_leases_lost_total{{client=\"1\",{esc},reason=\"broken\"}} 1"),
            format!("zklock_path_held{{client=\"1\",{esc}}} 1"),
            format!("zklock_path_oldest_hold_seconds{{client=\"1\",{esc}}} 2"),
            "zklock_path_acquires_total{client=\"1\",path=\"(overflow)\",outcome=\"acquired\"} 5"
                .into(),
            "zklock_path_stats_folded_total{client=\"1\"} 5".into(),
        ] {
            assert!(text.contains(&format!("{line}\n")), "{line} not in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
        let off = PathStatsSnapshot::default();
        let text = Stats::default().to_openmetrics_with(Some(&off), &[]);
        assert!(!text.contains("zklock_path_"), "{text}");
    }
}
