//! The acquire engine shared by every recipe: create our ephemeral sequential node (pipelined
//! with the children listing, one round trip), wait on the one node that blocks us, and never
//! leave a node behind when we give up, time out or are cancelled.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::time::Instant;
use zookeeper_client as zk;

use crate::cancel::CancelToken;
use crate::error::{is_transient, Error, Result};
use crate::lease::LeaseShared;
use crate::options::AclPolicy;
use crate::protocol::{self, NodeKind};
use crate::runtime;
use crate::session::Session;

/// Round trips the acquire path has waited for, process-wide (a test and benchmark hook).
static ROUND_TRIPS: AtomicU64 = AtomicU64::new(0);

/// How many ZooKeeper round trips zklock's acquire paths have waited for in this process.
pub fn round_trips() -> u64 {
    ROUND_TRIPS.load(Ordering::Relaxed)
}

fn count_round_trip() {
    ROUND_TRIPS.fetch_add(1, Ordering::Relaxed);
}

/// One acquire request.
pub(crate) struct Request<'a> {
    pub dir: &'a str,
    pub kind: NodeKind,
    pub identity: &'a [u8],
    pub acl: AclPolicy,
    /// `None`: wait forever. A deadline already past: try once.
    pub deadline: Option<Instant>,
    /// Set for a read taken while our own write is held: granted at once (Curator's rule).
    pub downgrade_of: Option<String>,
}

/// Until disarmed, deletes whatever node this attempt created, in the background; also when the
/// connection is down at that moment (it waits for the reconnect) and when the create reply
/// never came (it finds the node by our protected prefix).
struct Cleanup {
    session: Arc<Session>,
    dir: String,
    prefix: String,
    node: Option<String>,
    armed: bool,
}

impl Cleanup {
    /// Removes the attempt's node now, waiting at most a session timeout (then in the background).
    async fn remove_now(&mut self) {
        self.armed = false;
        let removal = remove_attempt(&self.session, &self.dir, &self.prefix, self.node.clone());
        if tokio::time::timeout(self.session.timeout, removal)
            .await
            .is_err()
        {
            self.armed = true;
        }
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (session, dir, prefix, node) = (
            self.session.clone(),
            std::mem::take(&mut self.dir),
            std::mem::take(&mut self.prefix),
            self.node.take(),
        );
        runtime::spawn(async move {
            let _ = remove_attempt(&session, &dir, &prefix, node).await;
        });
    }
}

async fn remove_attempt(
    session: &Session,
    dir: &str,
    prefix: &str,
    node: Option<String>,
) -> Result<()> {
    let node = match node {
        Some(node) => node,
        None => match find_own(session, dir, prefix).await? {
            Some((node, _)) => node,
            None => return Ok(()),
        },
    };
    crate::lease::delete_node(session, &node).await
}

/// Finds the node of this attempt by its protected prefix, checking it belongs to our session.
/// Returns its full path and czxid.
async fn find_own(session: &Session, dir: &str, prefix: &str) -> Result<Option<(String, i64)>> {
    loop {
        let zk = session.zk()?;
        let children = match zk.list_children(dir).await {
            Ok(c) => c,
            Err(zk::Error::NoNode) => return Ok(None),
            Err(e) if is_transient(&e) => {
                session.recover(None, "find node").await?;
                continue;
            }
            Err(e) => return Err(Error::from_zk(e, &format!("list {dir}"))),
        };
        let Some(name) = children.into_iter().find(|c| c.starts_with(prefix)) else {
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

fn timeout_error(dir: &str) -> Error {
    Error::Timeout(format!("timed out waiting for the lock {dir}"))
}

/// Creates the lock parent and its ancestors as container nodes (the server reaps them empty).
async fn make_parents(zk: &zk::Client, dir: &str, acl: AclPolicy) -> Result<(), zk::Error> {
    zk.mkdir(dir, &zk::CreateMode::Container.with_acls(acl.acls()))
        .await
}

/// Takes one lock node for `req`; returns the lease once it is ours. A failed, timed-out or
/// cancelled (through `cancel`) attempt removes its node before it returns; only a dropped
/// future leaves that to a background task.
pub(crate) async fn acquire_node(
    session: Arc<Session>,
    req: Request<'_>,
    cancel: Option<&CancelToken>,
) -> Result<Arc<LeaseShared>> {
    let protected = protocol::protected_prefix();
    let mut cleanup = Cleanup {
        session: session.clone(),
        dir: req.dir.to_owned(),
        prefix: protected.clone(),
        node: None,
        armed: true,
    };
    let attempt = attempt(&session, &req, &protected, &mut cleanup);
    let result = match cancel {
        None => attempt.await,
        Some(token) => tokio::select! {
            r = attempt => r,
            _ = token.cancelled() => Err(Error::Cancelled(format!("the acquire of {} was cancelled", req.dir))),
        },
    };
    match result {
        Ok(token) => {
            cleanup.armed = false;
            let node = cleanup.node.take().unwrap_or_default();
            Ok(LeaseShared::new(session, node, token, req.downgrade_of))
        }
        Err(e) => {
            cleanup.remove_now().await;
            Err(e)
        }
    }
}

/// Creates our node and waits until it holds the lock; returns its czxid.
async fn attempt(
    session: &Arc<Session>,
    req: &Request<'_>,
    protected: &str,
    cleanup: &mut Cleanup,
) -> Result<i64> {
    let name_prefix = protocol::node_prefix(protected, req.kind);
    let create_path = format!("{}/{}", req.dir, name_prefix);
    let create_options = zk::CreateMode::EphemeralSequential.with_acls(req.acl.acls());

    // 1. Create our node and list the children in one round trip.
    let (name, token, mut children) = loop {
        let zk = session.zk()?;
        // Both requests are sent before either reply is awaited: one round trip. Boxed so that
        // a waiting acquire does not carry these futures' size.
        let (created, listed) = Box::pin(async {
            let create = zk.create(&create_path, req.identity, &create_options);
            let list = zk.list_children(req.dir);
            (create.await, list.await)
        })
        .await;
        count_round_trip();
        match created {
            Ok((stat, sequence)) => {
                let name = format!("{name_prefix}{sequence}");
                cleanup.node = Some(format!("{}/{}", req.dir, name));
                match listed {
                    Ok(children) => break (name, stat.czxid, children),
                    Err(_) => {
                        // Our node exists; list again (waiting out a disconnect).
                        let children =
                            Box::pin(list_children(session, req.dir, req.deadline)).await?;
                        break (name, stat.czxid, children);
                    }
                }
            }
            Err(zk::Error::NoNode) => match Box::pin(make_parents(&zk, req.dir, req.acl)).await {
                Err(e) if is_transient(&e) => {
                    Box::pin(session.recover(req.deadline, req.dir)).await?
                }
                Err(e) => {
                    return Err(Error::from_zk(
                        e,
                        &format!("create lock parent {}", req.dir),
                    ))
                }
                Ok(()) => {}
            },
            Err(e) if is_transient(&e) => {
                // The server may have applied the create before the connection broke:
                // look for our protected prefix before trying again (never a duplicate).
                Box::pin(session.recover(req.deadline, req.dir)).await?;
                if let Some((node, czxid)) = Box::pin(find_own(session, req.dir, protected)).await?
                {
                    cleanup.node = Some(node.clone());
                    let name = node.rsplit('/').next().unwrap_or_default().to_owned();
                    let children = Box::pin(list_children(session, req.dir, req.deadline)).await?;
                    break (name, czxid, children);
                }
            }
            Err(zk::Error::NoChildrenForEphemerals) => {
                return Err(Error::invalid(format!(
                    "lock path {} is an ephemeral node and cannot hold locks",
                    req.dir
                )))
            }
            Err(e) => return Err(Error::from_zk(e, &format!("create {create_path}"))),
        }
    };
    let my_sequence = protocol::parse_contender(&name).map(|c| c.sequence);

    // 2. Wait until nothing before us blocks us.
    if req.downgrade_of.is_none() {
        loop {
            let queue = protocol::queue_of(&children, my_sequence);
            let Some((index, others_before)) = protocol::blocker(&queue, &name, req.kind)? else {
                break;
            };
            if req.deadline.is_some_and(|d| d <= Instant::now()) {
                return Err(timeout_error(req.dir));
            }
            let blocker = format!("{}/{}", req.dir, queue[index].name);
            // getData watch, like Curator: an exists watch on a vanished node would leak.
            let zk = session.zk()?;
            let watched = Box::pin(zk.get_and_watch_data(&blocker)).await;
            count_round_trip();
            drop(zk);
            match watched {
                Ok((_, _, watcher)) => {
                    let event = tokio::select! {
                        e = watcher.changed() => e,
                        err = session.died() => return Err(err),
                        _ = sleep_until_opt(req.deadline) => return Err(timeout_error(req.dir)),
                    };
                    if event.event_type == zk::EventType::NodeDeleted && others_before == 0 {
                        // The set of nodes before us only shrinks: nothing else can block us.
                        break;
                    }
                }
                Err(zk::Error::NoNode) => {}
                Err(e) if is_transient(&e) => {
                    Box::pin(session.recover(req.deadline, req.dir)).await?
                }
                Err(e) => return Err(Error::from_zk(e, &format!("watch {blocker}"))),
            }
            children = Box::pin(list_children(session, req.dir, req.deadline)).await?;
        }
    }
    Ok(token)
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Lists the children of `dir`, waiting out connection loss.
pub(crate) async fn list_children(
    session: &Session,
    dir: &str,
    deadline: Option<Instant>,
) -> Result<Vec<String>> {
    loop {
        let zk = session.zk()?;
        let listed = zk.list_children(dir).await;
        count_round_trip();
        match listed {
            Ok(children) => return Ok(children),
            Err(zk::Error::NoNode) => return Ok(Vec::new()),
            Err(e) if is_transient(&e) => session.recover(deadline, dir).await?,
            Err(e) => return Err(Error::from_zk(e, &format!("list {dir}"))),
        }
    }
}
