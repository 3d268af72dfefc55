//! The read/write lock (Curator's `InterProcessReadWriteLock`): two [`Lock`]s on one path, a
//! read side and a write side, that know each other (for the downgrade rule).

use std::sync::Arc;

use crate::connection::Connection;
use crate::error::Result;
use crate::mutex::{Lock, Participant};
use crate::protocol::NodeKind;

/// A read/write lock (Curator's `InterProcessReadWriteLock`): any number of readers or one
/// writer. A write holder may take the read side (downgrade); a read holder asking for the write
/// side gets `UpgradeNotAllowed` at once.
pub struct RwLock {
    read: Lock,
    write: Lock,
}

impl RwLock {
    pub(crate) fn new(client: Arc<Connection>, path: &str) -> Result<RwLock> {
        let read = Lock::new(client.clone(), path, NodeKind::Read)?;
        let write = Lock::new(client, path, NodeKind::Write)?;
        read.inner.peer.set(Arc::downgrade(&write.inner)).ok();
        write.inner.peer.set(Arc::downgrade(&read.inner)).ok();
        Ok(RwLock { read, write })
    }

    pub fn read(&self) -> &Lock {
        &self.read
    }

    pub fn write(&self) -> &Lock {
        &self.write
    }

    pub fn path(&self) -> &str {
        self.read.path()
    }

    pub async fn participants(&self) -> Result<Vec<Participant>> {
        self.read.participants().await
    }

    /// [`Lock::participants_timeout`] of the shared queue.
    pub async fn participants_timeout(
        &self,
        timeout: Option<std::time::Duration>,
    ) -> Result<Vec<Participant>> {
        self.read.participants_timeout(timeout).await
    }
}
