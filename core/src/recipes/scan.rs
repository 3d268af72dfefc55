//! Every lock and election queue under a subtree (issue 37, point 4: `zklock ls -r`): a walk that
//! lists each node's children once, level by level (one pipelined batch of getChildren per
//! level), and reads the queue of every path whose children include contenders in a layout the
//! core recognises (zklock's, Curator's and kazoo's mutexes, read/write locks and elections; a
//! semaphore's `leases` and `locks`). Bounded in depth and in nodes listed: past a bound it
//! fails with `InvalidArgument` naming the bound, rather than walk a large tree unasked.

use std::collections::HashSet;

use zklock_wire::client as zk;

use crate::base::error::{Error, ErrorKind, Result};
use crate::base::protocol;
use crate::recipes::mutex_queue::{participants_listed, Participant};
use crate::recipes::semaphore::{LEASES, LOCKS};
use crate::sessions::connection::Connection;

/// How far [`crate::Client::locks_under`] walks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanLimits {
    /// How many levels below the root are listed (the root's children are level 1). A lock
    /// path's contenders are read at its own level, so a lock `depth` levels down is found.
    pub max_depth: u32,
    /// How many nodes may be listed in all (every child of every node walked, contenders
    /// included).
    pub max_nodes: usize,
}

impl Default for ScanLimits {
    /// 32 levels, 100,000 nodes: a few seconds of listing on a local ensemble.
    fn default() -> Self {
        ScanLimits {
            max_depth: 32,
            max_nodes: 100_000,
        }
    }
}

/// One lock or election path found, with its queue (holder(s) first, as
/// [`crate::Lock::participants`] lists it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockQueue {
    /// The lock or election path.
    pub path: String,
    /// Its queue, holder(s) first.
    pub participants: Vec<Participant>,
}

/// Walks the subtree at `root` (the root itself included) within `limits`: every path with
/// contenders, in path order. A node deleted during the walk is skipped; the root missing is
/// `NotHeld` ("no such path").
pub(crate) async fn locks_under(
    client: &Connection,
    root: &str,
    limits: ScanLimits,
) -> Result<Vec<LockQueue>> {
    if root != "/" {
        protocol::validate_path(root)?;
    }
    if limits.max_nodes == 0 {
        return Err(Error::invalid(
            "the node limit of a subtree walk must be at least 1",
        ));
    }
    let session = client.session().await?;
    let mut found = Vec::new();
    let mut level = vec![root.to_owned()];
    let mut listed = 0usize;
    let mut depth = 0u32;
    while !level.is_empty() {
        let zk = session.zk()?;
        // Pipelined: every getChildren of the level is sent before the first reply is awaited.
        let pending: Vec<_> = level.iter().map(|p| zk.list_children(p)).collect();
        let mut next = Vec::new();
        for (path, reply) in level.iter().zip(pending) {
            let children = match reply.await {
                Ok(children) => children,
                // The root missing is the operator's typo, not an empty subtree: say so
                // (`zklock ls -r` printed "0 holders" with status 0 for a path that is not
                // there, issue 51). A node below it deleted during the walk is skipped.
                Err(zk::Error::NoNode) if depth == 0 => {
                    return Err(Error::new(
                        ErrorKind::NotHeld,
                        format!("no such path {root}: nothing is held under it"),
                    ))
                }
                Err(zk::Error::NoNode) => continue,
                Err(e) => return Err(Error::from_zk(e, &format!("list {path}"))),
            };
            listed += children.len();
            if listed > limits.max_nodes {
                return Err(Error::invalid(format!(
                    "the subtree under {root} has more than {} nodes (the node limit): give a \
                     path further down, or a larger limit",
                    limits.max_nodes
                )));
            }
            let contenders: HashSet<String> = protocol::queue_of(&children, None)
                .into_iter()
                .map(|c| c.name)
                .collect();
            let semaphore = children.iter().any(|c| c == LEASES);
            if !contenders.is_empty() || semaphore {
                let participants = participants_listed(&session, path, &children).await?;
                if !participants.is_empty() {
                    found.push(LockQueue {
                        path: path.clone(),
                        participants,
                    });
                }
            }
            let below = children
                .into_iter()
                .filter(|c| !contenders.contains(c) && !(semaphore && (c == LEASES || c == LOCKS)));
            for child in below {
                if depth + 1 > limits.max_depth {
                    return Err(Error::invalid(format!(
                        "the subtree under {root} is deeper than {} levels (the depth limit): \
                         give a path further down, or a larger limit",
                        limits.max_depth
                    )));
                }
                next.push(join(path, &child));
            }
        }
        level = next;
        depth += 1;
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

fn join(parent: &str, child: &str) -> String {
    if parent == "/" {
        format!("/{child}")
    } else {
        format!("{parent}/{child}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_of_the_root_has_one_slash() {
        assert_eq!(join("/", "locks"), "/locks");
        assert_eq!(join("/locks", "a"), "/locks/a");
    }

    #[test]
    fn the_default_limits_are_deep_and_wide_enough_for_a_lock_tree() {
        let limits = ScanLimits::default();
        assert!(limits.max_depth >= 16 && limits.max_nodes >= 10_000);
    }
}
