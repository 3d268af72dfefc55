//! A client's statistics as OpenMetrics text (the Prometheus exposition format's successor,
//! which Prometheus reads): the families of `metric_families`, where the names are decided,
//! rendered once here so that every face serves the same text.

use std::fmt::Write as _;

use crate::ops::metric_families::MetricFamily;
use crate::ops::stats::Stats;

#[cfg(test)]
use crate::ops::path_stats::{PathStats, PathStatsSnapshot};
#[cfg(test)]
use crate::ops::stats::Percentiles;

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
        paths: Option<&crate::PathStatsSnapshot>,
        labels: &[(&str, &str)],
    ) -> String {
        render(&self.metric_families(paths, labels))
    }
}

/// OpenMetrics text of `families`, ending with `# EOF`.
pub(crate) fn render(families: &[MetricFamily]) -> String {
    let mut out = String::with_capacity(2048);
    for f in families {
        let name = f.name;
        let _ = writeln!(out, "# TYPE {name} {}\n# HELP {name} {}", f.kind, f.help);
        if let Some(unit) = f.unit {
            let _ = writeln!(out, "# UNIT {name} {unit}");
        }
        for s in &f.samples {
            out.push_str(name);
            out.push_str(s.suffix);
            if !s.labels.is_empty() {
                out.push('{');
                for (i, (k, v)) in s.labels.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let _ = write!(out, "{k}=\"{}\"", escape(v));
                }
                out.push('}');
            }
            let _ = writeln!(out, " {}", s.value);
        }
    }
    out.push_str("# EOF\n");
    out
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
            format!("zklock_path_wait_seconds_total{{client=\"1\",{esc}}} 0.25"),
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
        assert!(text.contains("# TYPE zklock_path_wait_seconds counter\n"));
        let off = PathStatsSnapshot::default();
        let text = Stats::default().to_openmetrics_with(Some(&off), &[]);
        assert!(!text.contains("zklock_path_"), "{text}");
    }

    #[test]
    fn a_path_acquired_and_released_costs_two_samples_and_one_never_acquired_none_of_waits() {
        use crate::ops::path_stats::LossReason;
        let path = |p: &str, acquired, timed_out, held| PathStats {
            path: Some(p.to_owned()),
            acquired,
            timed_out,
            cancelled: 0,
            failed: 0,
            wait_sum: Duration::from_millis(1500),
            lost: LossReason::ALL.map(|r| (r, 0)),
            held,
            oldest_hold: Duration::from_secs(u64::from(held > 0) * 3),
        };
        let snapshot = PathStatsSnapshot {
            limit: 10,
            paths: vec![
                path("/idle", 4, 0, 0),
                path("/held", 1, 0, 1),
                path("/refused", 0, 2, 0),
            ],
            overflow: None,
            folded: 0,
        };
        let text = Stats::default().to_openmetrics_with(Some(&snapshot), &[]);
        let of = |p: &str| {
            let label = format!("path=\"{p}\"");
            let lines: Vec<&str> = text.lines().filter(|l| l.contains(&label)).collect();
            lines
        };
        assert_eq!(
            of("/idle"),
            [
                "zklock_path_acquires_total{path=\"/idle\",outcome=\"acquired\"} 4",
                "zklock_path_wait_seconds_total{path=\"/idle\"} 1.5",
            ],
            "no held, no oldest hold, no zero outcome while idle:\n{text}"
        );
        assert_eq!(of("/held").len(), 4, "{text}");
        assert!(text.contains("zklock_path_held{path=\"/held\"} 1\n"));
        assert!(text.contains("zklock_path_oldest_hold_seconds{path=\"/held\"} 3\n"));
        assert_eq!(
            of("/refused"),
            ["zklock_path_acquires_total{path=\"/refused\",outcome=\"timed_out\"} 2"],
            "no wait counter without an acquired count to divide it by:\n{text}"
        );
        // The families stay declared when no path has a series of theirs.
        assert!(text.contains("# TYPE zklock_path_held gauge\n"));
    }
}
