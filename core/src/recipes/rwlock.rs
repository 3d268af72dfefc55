//! The read/write lock (Curator's `InterProcessReadWriteLock`): two [`Lock`]s on one path, a
//! read side and a write side, that know each other (for the downgrade rule).

use std::sync::Arc;
use std::time::Duration;

use crate::base::error::Result;
use crate::base::protocol::NodeKind;
use crate::recipes::mutex::Lock;
use crate::recipes::mutex_queue::Participant;
use crate::sessions::connection::Connection;

/// A read/write lock (Curator's `InterProcessReadWriteLock`): any number of readers or one
/// writer. A write holder may take the read side (downgrade); a read holder asking for the write
/// side gets `UpgradeNotAllowed` at once.
#[derive(Debug)]
pub struct RwLock {
    read: Lock,
    write: Lock,
}

impl RwLock {
    pub(crate) fn new(client: Arc<Connection>, path: &str) -> Result<RwLock> {
        Self::linked(
            Lock::new(client.clone(), path, NodeKind::Read)?,
            Lock::new(client, path, NodeKind::Write)?,
        )
    }

    /// The two sides, each told of the other (for the downgrade rule).
    fn linked(read: Lock, write: Lock) -> Result<RwLock> {
        read.inner.peer.set(Arc::downgrade(&write.inner)).ok();
        write.inner.peer.set(Arc::downgrade(&read.inner)).ok();
        Ok(RwLock { read, write })
    }

    /// Both sides with a maximum hold (see [`Lock::max_hold`]): a new read/write lock value on
    /// the same path, holding nothing (a lease taken through this value before keeps its own
    /// limit). `InvalidArgument` for zero.
    pub fn max_hold(self, limit: Option<Duration>) -> Result<RwLock> {
        let client = self.read.inner.client.clone();
        let path = self.path().to_owned();
        Self::linked(
            Lock::new(client.clone(), &path, NodeKind::Read)?.max_hold(limit)?,
            Lock::new(client, &path, NodeKind::Write)?.max_hold(limit)?,
        )
    }

    /// [`RwLock::max_hold`] for a face that keeps this value behind handles: a new value on
    /// the same path with both sides limited, this one left as it was. `InvalidArgument` for
    /// zero, and while either side of this value holds or is being acquired (a hold of this
    /// value could not be re-entered, nor downgraded, through the new one).
    pub fn with_max_hold(&self, limit: Option<Duration>) -> Result<RwLock> {
        let busy = |side: &Lock| Arc::strong_count(&side.inner) > 1;
        if busy(&self.read) || busy(&self.write) {
            return Err(crate::base::error::Error::invalid(format!(
                "the read/write lock {} is held or being acquired; set its maximum hold before acquiring",
                self.path()
            )));
        }
        let client = self.read.inner.client.clone();
        Self::linked(
            Lock::new(client.clone(), self.path(), NodeKind::Read)?.max_hold(limit)?,
            Lock::new(client, self.path(), NodeKind::Write)?.max_hold(limit)?,
        )
    }

    /// The read side: shared among readers, excluded by a writer.
    pub fn read(&self) -> &Lock {
        &self.read
    }

    /// The write side: exclusive.
    pub fn write(&self) -> &Lock {
        &self.write
    }

    /// The lock's path.
    pub fn path(&self) -> &str {
        self.read.path()
    }

    /// Everyone queued on either side, holders first.
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
