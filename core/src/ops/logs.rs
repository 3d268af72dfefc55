//! What the core says about its locks, said once for every face: each record goes to `tracing`
//! (Rust programs see it behind nothing more than a subscriber) and to at most one sink a face
//! installs (Python's `logging`, Node's `diagnostics_channel`, C's log callback). Quiet by
//! default: without a subscriber and a sink nothing is formatted. Each record names its client
//! ([`Record::client`]), so that a face with several owners in one process (Node's threads) can
//! route it; the sink itself stays one per process.
//!
//! Levels: every settled acquire at `debug`; a new session and a reconnect at `info`; lease state
//! changes (suspended, held again, lost) and connection breaks and session expiries at `warn`.
//! Records carry paths, node names, session ids, outcomes and times, never credentials (the
//! options' digest auth is not in any of them).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, RwLock};

/// The level of a record, from the most to the least severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// A failure the application should hear of.
    Error = 1,
    /// Something that may need attention (a lease lost, a lock broken).
    Warn = 2,
    /// The course of things (acquires, releases, sessions).
    Info = 3,
    /// Details for debugging.
    Debug = 4,
}

crate::base::names::names!(Level, "log level" {
    Error => "error",
    Warn => "warn",
    Info => "info",
    Debug => "debug",
});

/// One record for a face's sink: its level, the client it is about, what it is about
/// (`acquire`, `state`, `session`), a message for people and its fields by name (`path`, `kind`,
/// `outcome`, `wait_ms`, `node`, `state`, `session`, `reason`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// How severe the record is.
    pub level: Level,
    /// The id of the client whose acquire, lease or session this is ([`crate::Client::id`]).
    /// The sink is one per process; a face that serves several owners in one process (Node's
    /// main thread and worker threads) routes each record to its client's owner by it.
    pub client: u64,
    /// What the record is about: `acquire`, `state`, `session`, `break`, ...
    pub event: &'static str,
    /// The message for people.
    pub message: String,
    /// The record's fields by name (`path`, `kind`, `outcome`, `wait_ms`, `node`, ...).
    pub fields: Vec<(&'static str, String)>,
}

type Sink = Arc<dyn Fn(&Record) + Send + Sync>;

/// The most verbose level the sink takes (0: no sink), read before anything is formatted.
static MAX: AtomicU8 = AtomicU8::new(0);
static SINK: RwLock<Option<Sink>> = RwLock::new(None);

/// Installs the process's sink for records up to `max` (replacing any earlier one), or removes
/// it (`None`). The sink runs on the library's callback thread, in order, never on the runtime
/// thread, so it may take a while (take the GIL, call into JavaScript) without holding up I/O.
pub fn set_sink(sink: Option<(Level, Sink)>) {
    let mut slot = SINK.write().unwrap_or_else(|e| e.into_inner());
    match sink {
        Some((max, sink)) => {
            *slot = Some(sink);
            MAX.store(max as u8, Ordering::Release);
        }
        None => {
            MAX.store(0, Ordering::Release);
            *slot = None;
        }
    }
}

/// True when the sink takes records of `level` (so they are worth formatting).
pub(crate) fn wanted(level: Level) -> bool {
    (level as u8) <= MAX.load(Ordering::Acquire)
}

/// Hands a record to the sink, on the callback thread. Call only when `wanted(level)`.
pub(crate) fn emit(
    level: Level,
    client: u64,
    event: &'static str,
    message: String,
    fields: Vec<(&'static str, String)>,
) {
    let Some(sink) = SINK.read().unwrap_or_else(|e| e.into_inner()).clone() else {
        return;
    };
    let record = Record {
        level,
        client,
        event,
        message,
        fields,
    };
    crate::ops::runtime::run_callback(move || sink(&record));
}
