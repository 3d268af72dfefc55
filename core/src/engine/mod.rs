//! Owns the acquire engine every recipe shares (Curator's LockInternals: enqueue, wait on the node
//! ahead, never leave a node behind) and node operations. May use: sessions and below.

pub(crate) mod internals;
pub(crate) mod nodes;
