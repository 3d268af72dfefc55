//! `zklock server start|stop|status`: a local single-node ZooKeeper for development and the
//! demo, run from Debian's `zookeeper` package (installed with apt-get when missing) with its
//! data, log and state under a user directory. It is daemonized (its own session, output to a
//! log file), so it outlives the command that started it; the state file remembers its port and
//! pid, and the other commands use it when no servers are configured.
//!
//! Linux only (debian.rs): it installs with apt-get and finds its server through /proc. On
//! macOS and Windows the command is refused as a usage error (64), and the other commands need
//! `--servers` or `ZKLOCK_SERVERS`.

#[cfg(target_os = "linux")]
mod debian;
#[cfg(target_os = "linux")]
mod jars;

#[cfg(target_os = "linux")]
pub use debian::{local_servers, run};

#[cfg(not(target_os = "linux"))]
use crate::{
    args::ServerAction,
    status::{self, Failure},
};

#[cfg(not(target_os = "linux"))]
pub fn run(_action: ServerAction) -> Result<i32, Failure> {
    Err(Failure::new(
        status::USAGE,
        format!(
            "`zklock server` runs Debian's zookeeper package and is Linux only, not for {}: point --servers (or ZKLOCK_SERVERS) at a ZooKeeper",
            std::env::consts::OS
        ),
    ))
}

/// The connect string of the local server, for commands given no servers: none here.
#[cfg(not(target_os = "linux"))]
pub fn local_servers() -> Result<String, Failure> {
    Err(Failure::new(
        status::UNAVAILABLE,
        "no ZooKeeper servers configured: pass --servers HOST:PORT or set ZKLOCK_SERVERS",
    ))
}
