//! Owns each recipe's layout and rules: the re-entrant mutex, semaphore, read/write lock,
//! multi-lock, election, revocation, breaking a lock, what an ended lease reads. May use: leases and below.

pub(crate) mod breaking;
pub(crate) mod conflict;
pub(crate) mod counter;
pub(crate) mod election;
pub(crate) mod ended;
pub(crate) mod leadership;
pub(crate) mod multi;
pub(crate) mod mutex;
pub(crate) mod mutex_holds;
pub(crate) mod mutex_queue;
pub(crate) mod revoke;
pub(crate) mod rwlock;
pub(crate) mod scan;
pub(crate) mod semaphore;
