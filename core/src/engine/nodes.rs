//! Node operations with connection-loss handling, the layer between a session and the acquire
//! engine: list a lock's children, find the node of an attempt by its protected prefix, delete
//! a node, create a lock's parents. Each one waits out a disconnect (until its deadline or a
//! cancel) and retries; only the session's death ends it early.

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::time::Instant;
use zklock_wire::client as zk;
use zklock_wire::client::EachName;

use crate::base::cancel::CancelToken;
use crate::base::error::{is_transient, Error, ErrorKind, Result};
use crate::base::options::AclPolicy;
use crate::sessions::session::Session;

/// The error of a cancelled acquire of `dir`.
pub(crate) fn cancelled_error(dir: &str) -> Error {
    Error::new(
        ErrorKind::Cancelled,
        format!("the acquire of {dir} was cancelled"),
    )
}

/// The error of an acquire of `dir` whose deadline passed.
pub(crate) fn timeout_error(dir: &str) -> Error {
    Error::new(
        ErrorKind::Timeout,
        format!("timed out waiting for the lock {dir}"),
    )
}

/// Round trips the acquire path has waited for, process-wide (a test and benchmark hook).
static ROUND_TRIPS: AtomicU64 = AtomicU64::new(0);

/// How many ZooKeeper round trips zklock's acquire paths have waited for in this process.
pub fn round_trips() -> u64 {
    ROUND_TRIPS.load(Ordering::Relaxed)
}

pub(crate) fn count_round_trip() {
    ROUND_TRIPS.fetch_add(1, Ordering::Relaxed);
}

/// Waits out a disconnect (`Session::recover`), unless `cancel` fires first. The short phases of
/// an acquire are round trips; only this wait can be long, so this is where they notice a cancel.
pub(crate) async fn recover(
    session: &Session,
    deadline: Option<Instant>,
    cancel: Option<&CancelToken>,
    dir: &str,
) -> Result<()> {
    let Some(token) = cancel else {
        return session.recover(deadline, dir).await;
    };
    tokio::select! {
        r = session.recover(deadline, dir) => r,
        _ = token.cancelled() => Err(cancelled_error(dir)),
    }
}

/// Deletes the attempt's node: `path` is the node when `known`, else `<dir>/<protected prefix>`.
pub(crate) async fn remove_attempt(session: &Session, path: &str, known: bool) -> Result<()> {
    if known {
        return delete_node(session, path).await;
    }
    let (dir, prefix) = path.rsplit_once('/').unwrap_or(("", path));
    match find_own(session, dir, prefix).await? {
        Some((node, _)) => delete_node(session, &node).await,
        None => Ok(()),
    }
}

/// Finds the node of this attempt by its protected prefix, checking it belongs to our session.
/// Returns its full path and czxid.
pub(crate) async fn find_own(
    session: &Session,
    dir: &str,
    prefix: &str,
) -> Result<Option<(String, i64)>> {
    loop {
        let zk = session.zk()?;
        let own = FirstWithPrefix {
            prefix: prefix.into(),
            found: None,
        };
        let found = match zk.read_children_each(dir, own).await {
            Ok(found) => found,
            Err(zk::Error::NoNode) => return Ok(None),
            Err(e) if is_transient(&e) => {
                session.recover(None, "find node").await?;
                continue;
            }
            Err(e) => return Err(Error::from_zk(e, &format!("list {dir}"))),
        };
        let Some(name) = found else {
            return Ok(None);
        };
        let node = format!("{dir}/{name}");
        match zk.check_stat(&node).await {
            Ok(Some(stat)) if stat.ephemeral_owner == session.id => {
                return Ok(Some((node, stat.czxid)))
            }
            Ok(_) => return Ok(None),
            Err(e) if is_transient(&e) => session.recover(None, "find node").await?,
            Err(e) => return Err(Error::from_zk(e, &format!("stat {node}"))),
        }
    }
}

/// Deletes `node`, waiting out connection loss. `NoNode` counts as done.
pub(crate) async fn delete_node(session: &Session, node: &str) -> Result<()> {
    loop {
        let zk = session.zk()?;
        match zk.delete(node, None).await {
            Ok(()) | Err(zk::Error::NoNode) => return Ok(()),
            Err(e) if is_transient(&e) => session.recover(None, "delete").await?,
            Err(err) => return Err(Error::from_zk(err, &format!("delete {node}"))),
        }
    }
}

/// Deletes `node` and writes its release marker on the lock path `dir` in one multi (a clean
/// release of a lock with a lock-delay: `Lock::lock_delay`). ZooKeeper applies a multi's ops
/// all or none (its `MultiOperationRecord`, one transaction), so a successor never sees the
/// node gone without the marker of a clean release. When the marker cannot be written (the
/// lock path's ACL refuses, the path went away), the plain delete: the successor then waits
/// its delay, the safe side.
pub(crate) async fn delete_node_marked(session: &Session, node: &str, dir: &str) -> Result<()> {
    let name = node.rsplit('/').next().unwrap_or_default();
    let marker = crate::base::protocol::release_marker(name);
    loop {
        let zk = session.zk()?;
        let ops = [
            zk::Op::Delete {
                path: node,
                version: -1,
            },
            zk::Op::SetData {
                path: dir,
                data: &marker,
                version: -1,
            },
        ];
        match zk.multi(&ops).await {
            Ok(_) => return Ok(()),
            Err(zk::MultiError::OperationFailed { index: 0, source }) => {
                return match source {
                    zk::Error::NoNode => Ok(()),
                    e => Err(Error::from_zk(e, &format!("delete {node}"))),
                }
            }
            Err(zk::MultiError::OperationFailed { .. }) => return delete_node(session, node).await,
            Err(zk::MultiError::RequestFailed { source }) if is_transient(&source) => {
                session.recover(None, "delete").await?
            }
            Err(zk::MultiError::RequestFailed { source }) => {
                return Err(Error::from_zk(source, &format!("delete {node}")))
            }
        }
    }
}

/// Creates the lock parent and its ancestors as container nodes (the server reaps them empty).
/// The lock parent (the queue) gets the policy's ACL; ancestors let other users beside it
/// (`AclPolicy::ancestor_acls`, docs/contract.md "ACLs").
pub(crate) async fn make_parents(
    zk: &zk::Client,
    dir: &str,
    acl: AclPolicy,
) -> Result<(), zk::Error> {
    if acl != AclPolicy::Open {
        if let Some(up) = dir.rfind('/').filter(|&i| i > 0) {
            zk.mkdir(&dir[..up], zk::CreateMode::Container, acl.ancestor_acls())
                .await?;
        }
    }
    zk.mkdir(dir, zk::CreateMode::Container, acl.acls()).await
}

/// The error of creating the lock parent `dir` and its ancestors. Under a chroot, a node that
/// does not exist there is the chroot itself (every ancestor below it was being created): the
/// message says so, after checking, instead of blaming the lock parent.
pub(crate) async fn parent_error(
    session: &Session,
    zk: &zk::Client,
    err: zk::Error,
    dir: &str,
) -> Error {
    if let (zk::Error::NoNode, Some(chroot)) = (&err, session.chroot()) {
        // "/" under a chroot is the chroot node.
        if let Ok(None) = zk.check_stat("/").await {
            return Error::from_zk(
                err,
                &format!(
                    "the chroot {} of the connect string does not exist on ZooKeeper (create it \
                     first); create lock parent {dir}",
                    crate::base::protocol::shown(chroot)
                ),
            );
        }
    }
    Error::from_zk(err, &format!("create lock parent {dir}"))
}

/// The first name with a prefix, the only one kept of a listing (`find_own`).
struct FirstWithPrefix {
    prefix: Box<str>,
    found: Option<String>,
}

impl EachName for FirstWithPrefix {
    type Output = Option<String>;

    fn name(&mut self, name: &str) {
        if self.found.is_none() && name.starts_with(&*self.prefix) {
            self.found = Some(name.to_owned());
        }
    }

    fn finish(self) -> Option<String> {
        self.found
    }
}

/// Lists the children of `dir`, waiting out connection loss (until `deadline`, or `cancel`).
pub(crate) async fn list_children(
    session: &Session,
    dir: &str,
    deadline: Option<Instant>,
    cancel: Option<&CancelToken>,
) -> Result<Vec<String>> {
    read_children(session, dir, deadline, cancel, zk::AllNames::default()).await
}

/// [`list_children`] whose names `read` reads a name at a time as they arrive, keeping only
/// what it makes of them (`Client::read_children_each`); a missing `dir` reads as no names.
pub(crate) async fn read_children<R>(
    session: &Session,
    dir: &str,
    deadline: Option<Instant>,
    cancel: Option<&CancelToken>,
    read: R,
) -> Result<R::Output>
where
    R: EachName + Clone,
{
    loop {
        let zk = session.zk()?;
        let listed = zk.read_children_each(dir, read.clone()).await;
        count_round_trip();
        match listed {
            Ok(read) => return Ok(read),
            Err(zk::Error::NoNode) => return Ok(read.finish()),
            Err(e) if is_transient(&e) => recover(session, deadline, cancel, dir).await?,
            Err(e) => return Err(Error::from_zk(e, &format!("list {dir}"))),
        }
    }
}
