//! Owns how the core runs and reports: the private runtime, callback queues, time bounds, logs,
//! observe, stats (client-wide and per path) and their OpenMetrics text. May use: base only.

pub(crate) mod bounds;
pub(crate) mod logs;
pub(crate) mod metric_families;
pub(crate) mod metrics;
#[cfg(feature = "metrics")]
pub(crate) mod metrics_export;
pub(crate) mod observe;
pub(crate) mod outcome;
pub(crate) mod path_stats;
pub(crate) mod runtime;
pub(crate) mod stats;
