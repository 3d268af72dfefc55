//! zklock: distributed locks on Apache ZooKeeper.
//!
//! Re-entrant [`Mutex`], [`RwLock`] and [`MultiLock`] after Apache Curator's recipes, counting
//! semaphores on Curator's `InterProcessSemaphoreV2` layout ([`Client::semaphore`], a [`Lock`]
//! like the others) and Curator-compatible revocation requests ([`Client::revoke`]), with node
//! names Curator and kazoo understand, a fencing token on every [`Lease`] (the czxid of its node)
//! and a lost signal with `held / suspended / lost` states. All I/O runs on a private runtime
//! thread; every async method has a `blocking_` twin for callers without a runtime.
//!
//! ```no_run
//! # async fn demo() -> zklock::Result<()> {
//! let client = zklock::Client::connect("127.0.0.1:2181", zklock::Options::default()).await?;
//! let mutex = client.mutex("/locks/orders")?;
//! let lease = mutex.acquire().await?;
//! println!("fencing token {}", lease.token());
//! lease.release().await?;
//! # Ok(()) }
//! ```

// Every public item says what it is for (issue 51: 89 were undocumented); `make lint` also
// runs rustdoc with `-D warnings`, so a broken intra-doc link fails it too.
#![deny(missing_docs)]

// One folder per layer, bottom first; each uses only the layers before it, and no file names
// another in a circle (scripts/check-layers.py, core/layers.txt; docs/architecture.md):
//
// base/       the leaves: errors, names, options, the protocol's node names, states, timeouts
// ops/        the private runtime, time bounds, logs, observe and stats
// sessions/   one ZooKeeper session, the connection that replaces it, lifeline, farewell
// engine/     node operations and the acquire engine (Curator's LockInternals)
// leases/     what an acquire returns: lease, node, parts, guarded writes, the acquire handle
// recipes/    mutex, semaphore, rwlock, multi, election, revoke, breaking
// client.rs   the entry point; this file re-exports the public API
mod base;

mod ops;

mod sessions;

mod engine;

mod leases;

mod recipes;

mod client;

pub use base::cancel::CancelToken;
pub use base::error::{Error, ErrorKind, Result, OPTION_NAMES};
pub use base::options::{
    AclPolicy, Options, SecureParts, DEFAULT_PATH_STATS_LIMIT, MAX_PATH_STATS_LIMIT,
    MAX_SESSION_TIMEOUT,
};
pub use base::protocol::{ElectionStyle, Library, NodeKind};
pub use base::secure::{Pem, Sasl, Tls};
pub use base::state::{ConnectionState, LeaseState, Released};
pub use base::wait::Wait;
pub use client::Client;
pub use leases::acquire::Acquire;
pub use leases::guarded::{Guarded, Write, Written};
pub use leases::lease::Lease;
pub use leases::node::{BROKEN, MAX_HOLD};
pub use leases::position::{QueuePosition, QueuePositions};
pub use ops::metric_families::{MetricFamily, Sample, OVERFLOW_PATH};
pub use ops::path_stats::{LossReason, PathStats, PathStatsSnapshot};
pub use ops::runtime::CallbackQueue;
pub use ops::stats::{Percentiles, Stats};
pub use recipes::conflict::CONFLICT;
pub use recipes::counter::{Count, Counter, CounterWidth};
pub use recipes::election::{Election, LeaderWatch, MAX_ID_BYTES};
pub use recipes::ended::Ended;
pub use recipes::multi::MultiLock;
pub use recipes::mutex::{Lock, Mutex};
pub use recipes::mutex_holds::Owner;
pub use recipes::mutex_queue::Participant;
pub use recipes::rwlock::RwLock;
pub use recipes::scan::{LockQueue, ScanLimits};
pub use recipes::semaphore::{invalid_max_leases, MAX_LEASES};
pub use sessions::server_facts::{ServerClass, ServerFeatures};

/// For zklock's own faces, tests and benchmarks, not for applications: the private runtime a face
/// drives (spawn, block_on, callback queues), the round-trip counter the benchmarks read, the
/// session that carries a client's proof (the trust rounds read it), and the conversions of
/// foreign numbers the faces used before `Wait`. No stability promise.
#[doc(hidden)]
pub mod support {
    pub use crate::base::options::{
        default_identity, duration_from_millis_f64, duration_from_millis_i64,
        duration_from_secs_f64, lock_delay_from_millis, lock_delay_from_millis_i64,
        lock_delay_from_secs, max_hold_from_millis, max_hold_from_millis_i64, max_hold_from_secs,
        operator_identity, path_stats_limit_from_f64, path_stats_limit_from_i64,
    };
    pub use crate::base::protocol::validate_path;
    pub use crate::base::secure::looks_like_key_material;
    pub use crate::base::text::{duration as duration_text, number as number_text};
    pub use crate::engine::nodes::round_trips;
    pub use crate::ops::logs::{set_sink as set_log_sink, Level as LogLevel, Record as LogRecord};
    pub use crate::ops::runtime::{
        block_on, current_pid, handle, on_runtime_thread, refuse_on_runtime_thread, run_callback,
        spawn, CallbackQueue,
    };
    pub use crate::sessions::session::heartbeats;

    /// The session id of the session whose `sync`s carry `client`'s current proof (its
    /// lifeline, docs/safety.md), or `None` while the client proves on its own chain (it
    /// carries its member's chain itself, shares none, or stopped sharing). Issue 54 shares one
    /// chain per (process, member), carried by a session the same member created (a session
    /// id's top byte names that member: `sessions::carrier`). The trust rounds assert that a
    /// named carrier's member is the client's own (tests/trust/tests/balancer.rs).
    pub fn proof_carrier(client: &crate::Client) -> Option<i64> {
        client.proof_carrier()
    }
}

// The Rust face's README (core/README.md): each of its blocks compiled as a doctest, so the
// calls it shows stay the calls that exist.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
