//! Owns what an acquire returns: the lease (token, node, state, lost signal), its members,
//! guarded writes, and the acquire handle the faces poll. May use: engine and below.

pub(crate) mod acquire;
pub(crate) mod expiry;
pub(crate) mod guarded;
pub(crate) mod lease;
pub(crate) mod node;
pub(crate) mod parts;
pub(crate) mod position;
