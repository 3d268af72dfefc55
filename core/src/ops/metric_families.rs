//! A client's statistics as metric families, the one place their names, kinds, help, units and
//! labels are decided (issue 37's "metrics per lock"): the OpenMetrics text (`metrics`) renders
//! them, and the faces' registry adapters (Python's `ZklockCollector`) build their families from
//! them directly, without rendering and parsing text (issue 51: re-parsing made one collect at
//! 1,000 paths take 287 ms). Counters' samples end in `_total`, the client's wait and hold
//! times are summaries in seconds (the quantiles the core keeps: 0.5, 0.9, 0.99, and `_count`),
//! a path's waits a counter of seconds (`zklock_path_wait_seconds_total`), and every
//! sample carries the labels the caller gives (a client id, a service name).

use crate::ops::path_stats::{PathStats, PathStatsSnapshot};
use crate::ops::stats::{Percentiles, Stats};

/// The `path` label of the overflow series, where the acquires on paths past the client's
/// `path_stats_limit` are counted (no lock path looks like it: they all start with `/`).
pub const OVERFLOW_PATH: &str = "(overflow)";

/// One metric family: its name, kind, help, unit and samples, in the order OpenMetrics text
/// lists them.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricFamily {
    /// The family's name (`zklock_acquires`; its counter samples end in `_total`).
    pub name: &'static str,
    /// `counter`, `gauge` or `summary`.
    pub kind: &'static str,
    /// What it counts, for people.
    pub help: &'static str,
    /// `seconds` for the families that measure time (their names end in `_seconds`).
    pub unit: Option<&'static str>,
    /// Its samples.
    pub samples: Vec<Sample>,
}

/// One sample of a family.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The sample's name: the family's and `suffix`.
    pub suffix: &'static str,
    /// Its labels, the caller's first (values as given: the text escapes them).
    pub labels: Vec<(String, String)>,
    /// Its value.
    pub value: f64,
}

/// Builds a family's samples, each with the caller's labels and its own.
struct Families<'a> {
    base: &'a [(String, String)],
    out: Vec<MetricFamily>,
}

impl Families<'_> {
    fn family(&mut self, name: &'static str, kind: &'static str, help: &'static str) {
        let unit = name.ends_with("_seconds").then_some("seconds");
        self.out.push(MetricFamily {
            name,
            kind,
            help,
            unit,
            samples: Vec::new(),
        });
    }

    fn sample(&mut self, suffix: &'static str, more: &[(&str, &str)], value: f64) {
        let mut labels = self.base.to_vec();
        labels.extend(more.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let family = self.out.last_mut().expect("a family first");
        family.samples.push(Sample {
            suffix,
            labels,
            value,
        });
    }

    fn summary(&mut self, name: &'static str, help: &'static str, p: &Percentiles) {
        self.family(name, "summary", help);
        for (q, d) in [("0.5", p.p50), ("0.9", p.p90), ("0.99", p.p99)] {
            self.sample("", &[("quantile", q)], d.as_secs_f64());
        }
        self.sample("_count", &[], p.count as f64);
    }
}

impl Stats {
    /// These statistics (and every path's in `paths`, a `path` label each, the overflow
    /// series as `path="(overflow)"`) as metric families, each sample labelled with `labels`
    /// (a name that is not a valid label name is left out).
    pub fn metric_families(
        &self,
        paths: Option<&PathStatsSnapshot>,
        labels: &[(&str, &str)],
    ) -> Vec<MetricFamily> {
        let base: Vec<(String, String)> = labels
            .iter()
            .filter(|(name, _)| valid_name(name))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut f = Families {
            base: &base,
            out: Vec::with_capacity(16),
        };
        f.family(
            "zklock_acquires",
            "counter",
            "Acquires that went to ZooKeeper, by how they settled.",
        );
        for (outcome, n) in [
            ("acquired", self.acquired),
            ("timed_out", self.timed_out),
            ("cancelled", self.cancelled),
            ("failed", self.failed),
        ] {
            f.sample("_total", &[("outcome", outcome)], n as f64);
        }
        f.summary(
            "zklock_wait_seconds",
            "How long acquired locks were waited for.",
            &self.wait,
        );
        f.summary(
            "zklock_hold_seconds",
            "How long leases were held, until released or lost.",
            &self.hold,
        );
        for (name, help, value) in [
            ("zklock_held", "Leases held now.", self.held),
            ("zklock_waiting", "Acquires waiting now.", self.waiting),
        ] {
            f.family(name, "gauge", help);
            f.sample("", &[], value as f64);
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
            f.family(name, "counter", help);
            f.sample("_total", &[], value as f64);
        }
        if let Some(paths) = paths.filter(|p| p.limit > 0) {
            path_families(&mut f, paths);
        }
        f.out
    }
}

/// The per-path families: each family's samples together, one `path` label per series. An
/// outcome or a loss reason that never happened on a path has no series (issue 51: at the
/// default limit a scrape carried 12 samples a path, most of them zeros, 1.4 MB at 1,000
/// paths); it appears with its first count. `increase()` does not count a series' first sample,
/// so a rule on a first loss looks for new series too (monitoring/alerts.yml, `ZklockLeaseLost`).
/// A path held by none of the client's leases now has no `held` and no oldest hold (absent, not
/// zero), and the waits are one counter of seconds beside the acquired count, not a summary
/// whose `_count` repeated it: a path acquired and released costs 2 samples, not 5 (443 KB a
/// scrape at 1,000 paths before).
fn path_families(f: &mut Families<'_>, snapshot: &PathStatsSnapshot) {
    let series: Vec<(&str, &PathStats)> = snapshot
        .paths
        .iter()
        .chain(snapshot.overflow.as_ref())
        .map(|p| (p.path.as_deref().unwrap_or(OVERFLOW_PATH), p))
        .collect();
    f.family(
        "zklock_path_acquires",
        "counter",
        "Acquires on a lock path that went to ZooKeeper, by how they settled.",
    );
    for (path, p) in &series {
        for (outcome, n) in [
            ("acquired", p.acquired),
            ("timed_out", p.timed_out),
            ("cancelled", p.cancelled),
            ("failed", p.failed),
        ] {
            if n > 0 {
                f.sample("_total", &[("path", path), ("outcome", outcome)], n as f64);
            }
        }
    }
    f.family(
        "zklock_path_wait_seconds",
        "counter",
        "Seconds waited by the acquires on a lock path that got the lock (the mean wait: its \
         rate over the rate of zklock_path_acquires_total, outcome acquired).",
    );
    for (path, p) in series.iter().filter(|(_, p)| p.acquired > 0) {
        f.sample("_total", &[("path", path)], p.wait_sum.as_secs_f64());
    }
    f.family(
        "zklock_path_leases_lost",
        "counter",
        "Leases on a lock path that turned lost, by reason.",
    );
    for (path, p) in &series {
        for (reason, n) in p.lost.into_iter().filter(|(_, n)| *n > 0) {
            let reason = reason.as_str();
            f.sample("_total", &[("path", path), ("reason", reason)], n as f64);
        }
    }
    let held: Vec<&(&str, &PathStats)> = series.iter().filter(|(_, p)| p.held > 0).collect();
    f.family(
        "zklock_path_held",
        "gauge",
        "Leases held now on a lock path (no series while none is).",
    );
    for (path, p) in &held {
        f.sample("", &[("path", path)], p.held as f64);
    }
    f.family(
        "zklock_path_oldest_hold_seconds",
        "gauge",
        "How long the oldest lease held now on a lock path has been held (no series while none is).",
    );
    for (path, p) in &held {
        f.sample("", &[("path", path)], p.oldest_hold.as_secs_f64());
    }
    f.family(
        "zklock_path_stats_folded",
        "counter",
        "Acquires on paths past the client's path_stats_limit, counted in the path=\"(overflow)\" series.",
    );
    f.sample("_total", &[], snapshot.folded as f64);
}

/// Whether `name` is a valid label name (and not one reserved, `__`).
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with("__")
}
