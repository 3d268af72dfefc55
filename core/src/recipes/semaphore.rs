//! The counting semaphore on Curator's `InterProcessSemaphoreV2` layout, byte for byte:
//!
//! - `<path>/leases`: one protected ephemeral sequential node per lease, `_c_<uuid>-lease-<seq>`.
//!   A lease is held while the number of children of `leases` (ours included, every child
//!   counted, as Curator counts them) is at most N when its holder looked.
//! - `<path>/locks`: an `InterProcessMutex` (`_c_<uuid>-lock-<seq>`) that guards the creation of
//!   waiting lease nodes. N is not stored: every process passes the same N (as in Curator).
//!
//! Why the count is safe without the guard: take the holders at any moment and the one among
//! them that looked last. Every other holder's node was created before it looked (each created
//! its node before its own look) and still exists, so it counted them all and itself, and found
//! at most N. The guard is for progress, not safety: a lease node counts against N while its
//! creator waits, so two waiters with nodes could each see N+1 forever. Curator lets only the
//! guard holder wait with a node; zklock keeps that rule.
//!
//! zklock's fast path: create the lease node and list `leases` in one round trip (pipelined);
//! held if the count allows. Otherwise the node is deleted at once (a waiter never keeps a lease
//! node while it waits for the guard, or a Curator guard holder could wait on our node forever)
//! and the acquire takes Curator's path: the guard, a new lease node, a children watch until the
//! count allows, the guard released. A fast-path node that briefly makes the count N+1 only makes
//! a guard holder wait for its deletion, which follows at once. A try is the fast path alone.

use std::sync::Arc;

use tokio::time::Instant;
use zklock_wire::client as zk;

use crate::base::cancel::CancelToken;
use crate::base::error::{is_transient, Error, ErrorKind, Result};
use crate::base::options::AclPolicy;
use crate::base::protocol::NodeKind;
use crate::engine::internals::{self, Queued, Request};
use crate::engine::nodes::{count_round_trip, recover, timeout_error};
use crate::leases::lease::Lease;
use crate::leases::node::LeaseShared;
use crate::leases::parts::{NodeRef, Part};
use crate::leases::position::{self, QueuePosition};
use crate::sessions::session::Session;

/// The child of a semaphore path that holds the lease nodes (Curator's `LEASE_PARENT`).
pub(crate) const LEASES: &str = "leases";
/// The child of a semaphore path that holds the guard mutex (Curator's `LOCK_PARENT`).
pub(crate) const LOCKS: &str = "locks";

/// The largest N a semaphore takes (Curator's is an `int`).
pub const MAX_LEASES: u32 = i32::MAX as u32;

/// Checks a semaphore's N: 1 to [`MAX_LEASES`].
pub(crate) fn validate_max_leases(path: &str, max_leases: u32) -> Result<()> {
    if max_leases == 0 || max_leases > MAX_LEASES {
        return Err(invalid_max_leases(path, max_leases));
    }
    Ok(())
}

/// The error for a semaphore's N out of 1 to [`MAX_LEASES`], naming the value as the caller
/// wrote it (at most 40 characters of it). The faces use it for a value that cannot even
/// reach the core as a `u32` (negative, fractional, NaN, huge), so every face says the same.
pub fn invalid_max_leases(path: &str, shown: impl std::fmt::Display) -> Error {
    let shown: String = shown.to_string().chars().take(40).collect();
    Error::invalid(format!(
        "invalid number of leases {shown} for the semaphore {path}: it must be 1 to {MAX_LEASES}"
    ))
}

/// One lease acquire.
pub(crate) struct SemaphoreRequest<'a> {
    pub path: &'a str,
    pub max_leases: u32,
    pub identity: &'a [u8],
    pub acl: AclPolicy,
    /// `None`: wait forever. A deadline already past: try once (the fast path alone).
    pub deadline: Option<Instant>,
    pub cancel: Option<&'a CancelToken>,
    /// Chubby's lock-delay (`Lock::lock_delay`): a lease freed without a clean release is
    /// taken only this long after; a clean release writes its marker on `leases`.
    pub lock_delay: Option<std::time::Duration>,
    /// Hears the acquire's place (`report_place`), when a caller asked for it.
    pub position: Option<&'a QueuePosition>,
}

impl SemaphoreRequest<'_> {
    fn node_request<'b>(&'b self, dir: &'b str, kind: NodeKind) -> Request<'b> {
        Request {
            dir,
            kind,
            identity: self.identity,
            acl: self.acl,
            deadline: self.deadline,
            downgrade_of: None,
            cancel: self.cancel,
            style: None,
            lock_delay: false,
        }
    }

    fn allows(&self, children: &[String]) -> bool {
        children.len() as u64 <= u64::from(self.max_leases)
    }

    /// How many lease nodes of `children` (ours among them) are over N: how many leases must
    /// be released before ours is held (Curator's rule: held while the count is at most N).
    fn over(&self, children: &[String]) -> usize {
        children.len().saturating_sub(self.max_leases as usize)
    }

    fn is_past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| d <= Instant::now())
    }

    fn is_cancelled(&self) -> bool {
        self.cancel.is_some_and(CancelToken::is_cancelled)
    }
}

/// Takes one lease: the fast path, then Curator's guarded path. No node is left behind when it
/// fails (the engine's cleanup, protected-create recovery included).
pub(crate) async fn acquire(session: &Arc<Session>, req: &SemaphoreRequest<'_>) -> Result<Lease> {
    let leases = format!("{}/{LEASES}", req.path);
    let lease_req = req.node_request(&leases, NodeKind::Lease);
    let (fast, children) = internals::create_listed(session, &lease_req).await?;
    if req.allows(&children) && !req.is_cancelled() {
        return Ok(lease_of(fast, req, &leases));
    }
    // Deleted before anything else: never wait for the guard with a lease node.
    let gone = fast.abandon(timeout_error(req.path)).await;
    if req.is_cancelled() {
        return Err(crate::engine::nodes::cancelled_error(req.path));
    }
    if req.is_past_deadline() {
        return Err(gone);
    }
    let over = req.over(&children);
    drop(children);
    Box::pin(guarded(session, req, &lease_req, over)).await
}

/// Curator's path: hold the guard while our lease node waits for the count to allow it.
/// `over`: the lease nodes over N at the fast path's listing (ours counted). While it waits
/// for the guard, the acquire's place is that plus the guard's contenders ahead of it (each
/// of them takes a lease first).
async fn guarded(
    session: &Arc<Session>,
    req: &SemaphoreRequest<'_>,
    lease_req: &Request<'_>,
    over: usize,
) -> Result<Lease> {
    let locks = format!("{}/{LOCKS}", req.path);
    let guard_req = req.node_request(&locks, NodeKind::Mutex);
    let mut timer = req.deadline.map(|d| Box::pin(tokio::time::sleep_until(d)));
    let mut guard = internals::enqueue(session, &guard_req).await?;
    while let Some(ahead) = guard.ahead() {
        position::report(req.position, ahead + over.max(1));
        let turn = guard.wait_turn(&locks, req.cancel, timer.as_mut()).await;
        let advanced = match turn {
            Ok(deleted) => guard.advance(&guard_req, deleted).await,
            Err(e) => Err(e),
        };
        if let Err(e) = advanced {
            return Err(guard.abandon(e).await);
        }
    }
    let leased = wait_for_count(session, req, lease_req, timer.as_mut()).await;
    // The guard goes whatever happened; its deletion runs in the background (dropping an
    // abandoned attempt deletes its node), so a lease does not wait a round trip for it.
    drop(guard);
    leased
}

/// Under the guard: creates our lease node and waits until the count allows it.
async fn wait_for_count(
    session: &Arc<Session>,
    req: &SemaphoreRequest<'_>,
    lease_req: &Request<'_>,
    mut timer: Option<&mut std::pin::Pin<Box<tokio::time::Sleep>>>,
) -> Result<Lease> {
    let (mut ours, mut children) = internals::create_listed(session, lease_req).await?;
    // With a lock-delay: the listing that did not allow us, before the change that did.
    let mut before: Option<Vec<String>> = None;
    loop {
        let name = ours
            .node()
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_owned();
        if !children.contains(&name) {
            let err = Error::new(
                ErrorKind::ZooKeeper,
                format!("our lease node {} vanished while waiting", ours.node()),
            );
            return Err(ours.abandon(err).await);
        }
        position::report(req.position, req.over(&children));
        if req.allows(&children) {
            if let (Some(delay), Some(before)) = (req.lock_delay, before.as_deref()) {
                if !released_cleanly(session, lease_req.dir, before, &children).await {
                    crate::ops::observe::lock_delayed(session.counters.as_ref(), req.path, delay);
                    tokio::time::sleep(delay).await;
                }
            }
            if req.is_cancelled() {
                let err = crate::engine::nodes::cancelled_error(req.path);
                return Err(ours.abandon(err).await);
            }
            if let Err(e) = ours.prove(req.deadline, req.path).await {
                return Err(ours.abandon(e).await);
            }
            return Ok(lease_of(ours, req, lease_req.dir));
        }
        if req.is_past_deadline() {
            return Err(ours.abandon(timeout_error(req.path)).await);
        }
        let (listed, watcher) = match watch_children(session, lease_req).await {
            Ok(watched) => watched,
            Err(e) => return Err(ours.abandon(e).await),
        };
        if !req.allows(&listed) {
            position::report(req.position, req.over(&listed));
            ours.wait_for(watcher);
            let turn = ours
                .wait_turn(lease_req.dir, req.cancel, timer.as_deref_mut())
                .await;
            if let Err(e) = turn {
                return Err(ours.abandon(e).await);
            }
            if req.lock_delay.is_some() {
                before = Some(listed);
            }
            children = match crate::engine::nodes::list_children(
                session,
                lease_req.dir,
                req.deadline,
                req.cancel,
            )
            .await
            {
                Ok(children) => children,
                Err(e) => return Err(ours.abandon(e).await),
            };
        } else {
            children = listed;
        }
    }
}

/// Lists the lease nodes with a children watch, waiting out a disconnect.
async fn watch_children(
    session: &Session,
    req: &Request<'_>,
) -> Result<(Vec<String>, zk::OneshotWatcher)> {
    loop {
        let zk = session.zk()?;
        let listed = zk.list_and_watch_children(req.dir).await;
        count_round_trip();
        match listed {
            Ok(watched) => return Ok(watched),
            Err(e) if is_transient(&e) => {
                recover(session, req.deadline, req.cancel, req.dir).await?
            }
            Err(e) => return Err(Error::from_zk(e, &format!("watch {}", req.dir))),
        }
    }
}

/// Whether the one lease node that went between `before` and `after` was released cleanly:
/// `leases`' data is its release marker (written in the same multi as its delete). Several
/// gone at once, none, or a failed read: false, the safe side.
async fn released_cleanly(
    session: &Session,
    dir: &str,
    before: &[String],
    after: &[String],
) -> bool {
    let mut gone = before.iter().filter(|n| !after.contains(n));
    let (Some(gone), None) = (gone.next(), gone.next()) else {
        return false;
    };
    let Ok(zk) = session.zk() else { return false };
    matches!(zk.get_data(dir).await, Ok((data, _)) if data == crate::base::protocol::release_marker(gone))
}

fn lease_of(node: Queued, req: &SemaphoreRequest<'_>, leases: &str) -> Lease {
    let (session, node, token) = node.into_node();
    let shared = LeaseShared::new(session, req.path, node, token, None);
    if req.lock_delay.is_some() {
        shared.mark_release_on(leases);
    }
    Lease::one(Part {
        shared: NodeRef::Owned(shared),
        owner: None,
    })
}
