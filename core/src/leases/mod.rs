//! Owns what an acquire returns: the lease (token, node, state, lost signal), its members,
//! guarded writes, the acquire handle and its queue position. May use: engine and below.

pub(crate) mod acquire;
pub(crate) mod expiry;
pub(crate) mod guarded;
pub(crate) mod lease;
pub(crate) mod node;
pub(crate) mod parts;
pub(crate) mod position;
