//! Asking a holder to let go, compatible with Curator's revocation: the data of the holder's
//! node is set to `__REVOKE__` (Curator's `Revoker.attemptRevoke`). A Curator holder that called
//! `makeRevocable` hears it through its `RevocationListener`; a zklock holder through
//! `Lease::revoke_requested` / `Lease::on_revoke`. It is a request: the holder decides.

use zklock_wire::client as zk;

use crate::base::error::{is_transient, Error, ErrorKind, Result};
use crate::base::protocol::{self, NodeKind};
use crate::leases::node::REVOKE_MESSAGE;
use crate::recipes::mutex_queue::{participants, Participant};
use crate::sessions::connection::Connection;

/// Sets `__REVOKE__` on `node` (a child's name under `path`, its `leases` or `locks`, or a full
/// path under `path`), or, with `None`, on every current holder of `path`: the first node of a
/// lock queue (with the reads beside a leading read), or every lease node of a semaphore.
/// Returns the nodes asked. `NotHeld` when there is nobody, or the node is gone.
pub(crate) async fn revoke(
    client: &Connection,
    path: &str,
    node: Option<&str>,
) -> Result<Vec<String>> {
    protocol::validate_path(path)?;
    let queue = participants(client, path).await?;
    let targets: Vec<String> = match node {
        Some(node) => {
            let found = queue
                .iter()
                .find(|p| p.node == node || p.node.rsplit('/').next() == Some(node));
            match found {
                Some(p) => vec![p.node.clone()],
                None => {
                    return Err(Error::new(
                        ErrorKind::NotHeld,
                        format!(
                            "no node {:?} among the contenders of {path}",
                            node.chars().take(64).collect::<String>()
                        ),
                    ))
                }
            }
        }
        None => holders(&queue),
    };
    if targets.is_empty() {
        return Err(Error::new(
            ErrorKind::NotHeld,
            format!("nobody holds {path}: nothing to revoke"),
        ));
    }
    let session = client.session().await?;
    for target in &targets {
        loop {
            let zk = session.zk()?;
            match zk.set_data(target, REVOKE_MESSAGE, None).await {
                Ok(_) => break,
                Err(zk::Error::NoNode) => {
                    return Err(Error::new(
                        ErrorKind::NotHeld,
                        format!("{target} is gone: its holder let go already"),
                    ))
                }
                Err(e) if is_transient(&e) => session.recover(None, "revoke").await?,
                Err(e) => return Err(Error::from_zk(e, &format!("set data of {target}"))),
            }
        }
    }
    Ok(targets)
}

/// The holders among the participants: every node of a semaphore's `leases`; else the first
/// node of the queue, and when it is a read node the reads up to the first exclusive node.
fn holders(queue: &[Participant]) -> Vec<String> {
    let leases = format!("/{}/", crate::recipes::semaphore::LEASES);
    let lease_nodes: Vec<String> = queue
        .iter()
        .filter(|p| p.kind == NodeKind::Lease && p.node.contains(&leases))
        .map(|p| p.node.clone())
        .collect();
    if !lease_nodes.is_empty() {
        return lease_nodes;
    }
    let locks: Vec<&Participant> = queue.iter().filter(|p| p.kind != NodeKind::Lease).collect();
    match locks.first() {
        Some(first) if first.kind.is_exclusive() => vec![first.node.clone()],
        Some(_) => locks
            .iter()
            .take_while(|p| !p.kind.is_exclusive())
            .map(|p| p.node.clone())
            .collect(),
        None => Vec::new(),
    }
}
