//! Owns the leaves: errors, names, options, the lock protocol's node names, TLS/SASL, states,
//! timeouts, cancel tokens, signals, text. May use: each other, and the transport's types.

pub(crate) mod cancel;
pub(crate) mod clock;
pub(crate) mod error;
pub(crate) mod names;
pub(crate) mod options;
pub(crate) mod place;
pub(crate) mod protocol;
pub(crate) mod secure;
pub(crate) mod signal;
pub(crate) mod state;
pub(crate) mod text;
pub(crate) mod wait;
