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

// The modules read in one direction, each using only those above it (no import circles):
//
// leaves        error, names, signal, cancel, wait, state, options, protocol, lifeline
// runtime       runtime (the private runtime thread, callback queues), bounds (acquire time rules)
// session       own_watch (the own-node watch queue a session keeps), session, nodes (node
//               operations with connection-loss handling), connection (a client's sessions)
// engine        engine (the acquire engine, Curator's LockInternals)
// leases        lease, acquire (a running acquire's handle)
// recipes       semaphore (Curator's InterProcessSemaphoreV2), mutex, rwlock, multi, revoke
// entry point   client
mod cancel;
mod error;
mod lifeline;
mod names;
mod options;
mod protocol;
mod signal;
mod state;
mod wait;

mod bounds;
mod runtime;

mod connection;
mod nodes;
mod own_watch;
mod session;

mod engine;

mod acquire;
mod lease;

mod semaphore;

mod multi;
mod mutex;
mod revoke;
mod rwlock;

mod client;

pub use acquire::Acquire;
pub use cancel::CancelToken;
pub use client::Client;
pub use error::{Error, ErrorKind, Result};
pub use lease::Lease;
pub use multi::MultiLock;
pub use mutex::{Lock, Mutex, Owner, Participant};
pub use options::{AclPolicy, Options, MAX_SESSION_TIMEOUT};
pub use protocol::{Library, NodeKind};
pub use runtime::CallbackQueue;
pub use rwlock::RwLock;
pub use semaphore::MAX_LEASES;
pub use state::{LeaseState, Released};
pub use wait::Wait;

/// For zklock's own faces, tests and benchmarks, not for applications: the private runtime a face
/// drives (spawn, block_on, callback queues), the round-trip counter the benchmarks read, and the
/// conversions of foreign numbers the faces used before `Wait`. No stability promise.
#[doc(hidden)]
pub mod support {
    pub use crate::nodes::round_trips;
    pub use crate::options::{
        default_identity, duration_from_millis_f64, duration_from_millis_i64,
        duration_from_secs_f64,
    };
    pub use crate::protocol::validate_path;
    pub use crate::runtime::{
        block_on, handle, on_runtime_thread, refuse_on_runtime_thread, run_callback, spawn,
        CallbackQueue,
    };
}
