//! zklock-wire: ZooKeeper's client protocol, the part a lock library needs, written for zklock.
//!
//! - [`jute`]: the records and their binary encoding;
//! - [`frame`]: the length-prefixed framing with the server's size limit;
//! - [`conn`]: one connection to one server, driven by a task on the caller's tokio runtime,
//!   over plain TCP or TLS;
//! - [`tls`]: the rustls client configuration (ring provider) for TLS connections;
//! - [`sasl`]: SASL DIGEST-MD5 authentication over a connection, and `whoAmI`;
//! - [`client`]: the session over a list of servers: reconnects, credentials, watches, chroot.
//!
//! The crate knows nothing of locks. See README.md for what remains of issue 24.

pub mod client;
pub mod conn;
pub mod frame;
pub mod jute;
pub mod sasl;
pub mod tls;

pub use conn::{
    connect, connect_stream, ConnectOptions, Connection, Error, Event, Events, OpError, Reply,
    Request, Response, Session, Stats, TlsConnect,
};
