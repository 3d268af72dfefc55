//! A client's statistics as OpenMetrics text (the Prometheus exposition format's successor,
//! which Prometheus reads): what issue 37's "metrics per lock" asks of every face, rendered once
//! here so that every face serves the same names. Counters end in `_total`, the wait and hold
//! times are summaries in seconds (the quantiles the core keeps: 0.5, 0.9, 0.99, and `_count`),
//! and every sample carries the labels the caller gives (a client id, a service name).

use std::fmt::Write as _;

use crate::ops::stats::{Percentiles, Stats};

impl Stats {
    /// These statistics as OpenMetrics text, ending with `# EOF`, each sample labelled with
    /// `labels` (name, value; values escaped as the format requires; a name that is not a
    /// valid label name is left out).
    pub fn to_openmetrics(&self, labels: &[(&str, &str)]) -> String {
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
        out.push_str("# EOF\n");
        out
    }
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
}
