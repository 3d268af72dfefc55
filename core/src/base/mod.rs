//! Leaves: errors, names, options, the lock protocol's nodes, TLS/SASL, states, timeouts, signals.
//! May use: only each other (no I/O, no runtime), so every rule is decided once, for every face.

pub(crate) mod cancel;
pub(crate) mod error;
pub(crate) mod names;
pub(crate) mod options;
pub(crate) mod protocol;
pub(crate) mod secure;
pub(crate) mod signal;
pub(crate) mod state;
pub(crate) mod text;
pub(crate) mod wait;
