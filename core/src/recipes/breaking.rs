//! Breaking a stuck lock: deleting one holder's node from outside (kazoo #371 `break_lock`,
//! CURATOR-150). The delete is checked against the version read just before it, so a node
//! changed or re-created meanwhile is not touched. A zklock holder whose node is deleted turns
//! lost with reason `broken` (its own-node watch, `sessions/own_watch.rs`); Curator and kazoo
//! holders notice as their recipes do (docs/interop.md, "Breaking a lock").

use zklock_wire::client as zk;

use crate::base::error::{is_transient, Error, ErrorKind, Result};
use crate::base::protocol;
use crate::ops::observe;
use crate::recipes::mutex_queue::{participants, Participant};
use crate::sessions::connection::Connection;

/// How much of a break's reason the logs keep.
const REASON_MAX: usize = 256;

/// Deletes `node` (a child's name under `path`, its `leases` or `locks`, or a full path under
/// `path`) and returns the contender it was (identity, token, session, age). `NotHeld` when no
/// such node is among the contenders of `path`, or it went away before the delete; `ZooKeeper`
/// (`BadVersion`) when it changed between the read and the delete; `Permission` when the ACL
/// refuses. The reason is logged with the node, its token and identity, and who broke it
/// (user, host, pid).
pub(crate) async fn break_lock(
    client: &Connection,
    path: &str,
    node: &str,
    reason: Option<&str>,
) -> Result<Participant> {
    protocol::validate_path(path)?;
    if node.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("break_lock of {path} needs the node to delete (see its participants)"),
        ));
    }
    let queue = participants(client, path).await?;
    let Some(target) = queue
        .into_iter()
        .find(|p| p.node == node || p.node.rsplit('/').next() == Some(node))
    else {
        return Err(Error::new(
            ErrorKind::NotHeld,
            format!(
                "no node {:?} among the contenders of {path}: nothing to break",
                node.chars().take(64).collect::<String>()
            ),
        ));
    };
    let session = client.session().await?;
    let gone = || {
        Error::new(
            ErrorKind::NotHeld,
            format!("{} is gone: its holder let go already", target.node),
        )
    };
    loop {
        let zk = session.zk()?;
        // Read the node's version and czxid, then delete that version only: a node re-created
        // under the same name (another czxid) or changed meanwhile is not touched.
        let stat = match zk.get_data(&target.node).await {
            Ok((_, stat)) => stat,
            Err(zk::Error::NoNode) => return Err(gone()),
            Err(e) if is_transient(&e) => {
                session.recover(None, "break").await?;
                continue;
            }
            Err(e) => return Err(Error::from_zk(e, &format!("read {}", target.node))),
        };
        if stat.czxid != target.token {
            return Err(gone());
        }
        match zk.delete(&target.node, Some(stat.version)).await {
            Ok(()) => break,
            Err(zk::Error::NoNode) => return Err(gone()),
            Err(e) if is_transient(&e) => {
                // The delete may have been applied: look again (a node gone is then ours).
                session.recover(None, "break").await?;
                match zk_exists(&session, &target.node).await? {
                    Some(czxid) if czxid == target.token => continue,
                    _ => break,
                }
            }
            Err(e) => return Err(Error::from_zk(e, &format!("delete {}", target.node))),
        }
    }
    let reason: String = reason.unwrap_or("").chars().take(REASON_MAX).collect();
    observe::broken(
        client.counters(),
        &target.node,
        target.token,
        &target.identity,
        &reason,
        &crate::base::options::operator_identity(),
    );
    Ok(target)
}

/// The czxid of `node` if it exists.
async fn zk_exists(session: &crate::sessions::session::Session, node: &str) -> Result<Option<i64>> {
    loop {
        let zk = session.zk()?;
        match zk.get_data(node).await {
            Ok((_, stat)) => return Ok(Some(stat.czxid)),
            Err(zk::Error::NoNode) => return Ok(None),
            Err(e) if is_transient(&e) => session.recover(None, "break").await?,
            Err(e) => return Err(Error::from_zk(e, &format!("read {node}"))),
        }
    }
}
