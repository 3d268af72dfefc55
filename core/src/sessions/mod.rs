//! Owns one ZooKeeper session and the connection that replaces a dead one: monitor, lifeline,
//! farewell, members, listeners, own-node watch. May use: ops, base and the transport (wire).

pub(crate) mod carrier;
pub(crate) mod connection;
pub(crate) mod farewell;
pub(crate) mod history;
pub(crate) mod lifeline;
pub(crate) mod lifeline_math;
pub(crate) mod listeners;
pub(crate) mod member;
pub(crate) mod own_watch;
pub(crate) mod server_facts;
pub(crate) mod session;
