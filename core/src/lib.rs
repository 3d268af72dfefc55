//! zklock: distributed locks on Apache ZooKeeper.
//!
//! Re-entrant [`Mutex`], [`RwLock`] and [`MultiLock`] after Apache Curator's recipes, with node
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

mod acquire;
mod bounds;
mod cancel;
mod client;
mod error;
mod lease;
mod lifeline;
mod lock;
mod names;
mod options;
mod own_watch;
pub mod protocol;
mod recipe;
pub mod runtime;
mod session;
mod signal;
mod wait;

pub use acquire::Acquire;
pub use cancel::CancelToken;
pub use client::Client;
pub use error::{Error, ErrorKind, Result};
pub use lease::{Lease, LeaseState, Released};
pub use lock::{Lock, MultiLock, Mutex, Owner, Participant, RwLock};
pub use options::{
    default_identity, duration_from_millis_i64, duration_from_secs_f64, AclPolicy, Options,
};
pub use protocol::{Library, NodeKind};
pub use recipe::round_trips;
pub use runtime::CallbackQueue;
pub use wait::Wait;
