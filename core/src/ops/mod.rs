//! Runs and reports: the private runtime and its callback queues, an acquire's time bounds, the
//! log sink, counting and telling events (observe, stats). May use: base.

pub(crate) mod bounds;
pub(crate) mod logs;
pub(crate) mod observe;
pub(crate) mod runtime;
pub(crate) mod stats;
