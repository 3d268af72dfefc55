//! zklock's Node face: the native half of the npm package `zklock`.
//!
//! This addon only translates: `index.js` wraps its small `Native*` classes into the public API
//! (`Client`, `Mutex`, `Lease`, AbortSignal wiring, `await using`, events). Everything a lock
//! decides is the core's: re-entrancy is keyed by the owner id lib/lock.js gives each caller
//! ([`zklock::Owner`]), a `timeoutMs` becomes a [`zklock::Wait`] by the core's one rule, an
//! acquire runs as a core [`zklock::Acquire`] (cancelled by an AbortSignal), a lease's states
//! come from [`zklock::Lease::subscribe`], and every name shown (states, release outcomes, node
//! kinds, libraries, ACL policies) is the core's `as_str` / `FromStr`. Nothing waits on the JS
//! thread or the libuv pool: promises are settled from the core's runtime.
//!
//! Errors reach JS as `Error` objects whose `code` is one of the `ZKLOCK_*` values (one table,
//! [`code_of`]): sync functions return `napi::Error<Code>`, async ones resolve into [`Settled`],
//! whose conversion (on the JS thread) builds the JS error and rejects the promise with it.
//!
//! The rooms, from the bottom up: `error` (codes and settled outcomes), `queue` (the settle
//! queue), `keepalive` (held leases keep the event loop alive), `counter`, `lease`, `acquire`, `lock`,
//! `election`, `environment` (each JS environment's clients and log), `client`.

mod acquire;
mod client;
mod counter;
mod election;
mod environment;
mod error;
mod keepalive;
mod lease;
mod lock;
mod queue;

// What lib.rs held before it was split, public as it was (napi registers the `#[napi]` items
// wherever they live; the crate's own surface stays the same).
pub use acquire::*;
pub use client::*;
pub use counter::*;
pub use election::*;
pub use environment::*;
pub use error::*;
pub use lease::*;
pub use lock::*;
