//! A leader that notices a participant of another layout joining its election (issue 33).
//!
//! An election refuses to *start* leading beside a node of another layout (the engine's
//! `refuse_foreign`), but a foreign participant can join after: a kazoo `Election` sorts our
//! latch node last (it knows only `__lock__` names), finds its own node first and runs its
//! function; a Curator latch sorts a kazoo node after its own. Both would lead, and neither
//! library would ever tell. So a leader keeps one children watch on its election's path while it
//! leads, and when a node of another layout appears it ends the leadership: lost with the
//! reason [`CONFLICT`], then its node is deleted (as a maximum hold does, `limit_hold`), so that
//! our waiters meet the foreign node at their next turn and refuse with `Conflict` instead of
//! leading beside it too.
//!
//! This bounds the overlap, it cannot prevent it: the foreign participant starts leading as soon
//! as its own listing puts it first, before our watch can fire, so both lead for about one
//! notification, one listing and [`FOREIGN_GRACE`] (a zklock participant of another style
//! leaves at once and costs us nothing); up to the lifeline's deadline on a suspended link, when
//! no notification can arrive. The foreign node's czxid is larger
//! than our token, so a resource that checks fencing tokens takes the foreign leader's writes
//! and refuses ours from its first one on (docs/election.md, "A foreign participant").

use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::base::error::is_transient;
use crate::base::protocol::{self, ElectionStyle};
use crate::engine::nodes::delete_node;
use crate::leases::node::LeaseShared;
use crate::ops::runtime;
use crate::sessions::session::Session;
use zklock_wire::client as zk;

/// The reason word of a leadership ended because a participant of another layout joined.
pub const CONFLICT: &str = crate::ops::path_stats::LossReason::Conflict.as_str();

/// How long a foreign node must stay before the leadership ends. A zklock participant of
/// another style creates its node, lists the children in the same round trip, refuses to lead
/// beside us (`Conflict`) and deletes the node at once; ending our leadership for that would
/// trade a good leader for nothing. A peer library's node stays. The grace is what the overlap
/// with a real foreign leader costs on top of the notification.
const FOREIGN_GRACE: Duration = Duration::from_millis(250);

/// Whether the foreign `node` is still there `FOREIGN_GRACE` after we saw it (its deletion is
/// awaited through an exists watch, not polled); `None` when the session could not tell.
async fn stays(session: &Session, node: &str) -> Option<bool> {
    let zk = session.zk().ok()?;
    let looking = zk.check_and_watch_stat(node);
    drop(zk);
    let (stat, watcher) = looking.await.ok()?;
    if stat.is_none() {
        return Some(false);
    }
    match tokio::time::timeout(FOREIGN_GRACE, watcher.changed()).await {
        Err(_) => Some(true), // still there
        Ok(event) if event.event_type == zk::EventType::NodeDeleted => Some(false),
        Ok(_) => {
            let zk = session.zk().ok()?;
            let stat = zk.check_stat(node);
            drop(zk);
            Some(stat.await.ok()?.is_some())
        }
    }
}

/// Watches the election at `dir` for as long as the leadership `shared` lasts (see the module's
/// comment). One task and one children watch per leadership; waiters keep none.
pub(crate) fn guard(shared: &Arc<LeaseShared>, style: ElectionStyle, dir: &str) {
    let lease = Arc::downgrade(shared);
    let dir = dir.to_owned();
    runtime::spawn(async move { watch(lease, style, dir).await });
}

async fn watch(lease: Weak<LeaseShared>, style: ElectionStyle, dir: String) {
    loop {
        // Not holding the lease (nor a client handle, which would keep a given-up session's
        // transport alive) while waiting: look it up again on each turn.
        let Some(shared) = lease.upgrade() else {
            return;
        };
        if shared.is_finished() {
            return;
        }
        let session = shared.session().clone();
        drop(shared);
        let Ok(zk) = session.zk() else { return }; // a dead session lost the lease already
        let listing = zk.list_and_watch_children(&dir);
        drop(zk);
        let (children, watcher) = match listing.await {
            Ok(listed) => listed,
            Err(e) if is_transient(&e) => {
                if session.recover(None, &dir).await.is_err() {
                    return;
                }
                continue;
            }
            Err(_) => return,
        };
        let queue = protocol::queue_of(&children, None);
        if let Some(foreign) = queue.iter().find(|c| style.is_foreign(c)) {
            if stays(&session, &format!("{dir}/{}", foreign.name)).await == Some(false) {
                continue; // a participant that refused to lead beside us and left
            }
            let Some(shared) = lease.upgrade() else {
                return;
            };
            if shared.is_finished() {
                return;
            }
            let theirs = ElectionStyle::of(foreign).map_or_else(
                || format!("a {} node", foreign.kind),
                |s| format!("a {s} participant"),
            );
            shared.lose(&format!(
                "{CONFLICT}: {theirs} ({}, by {}) joined the {style} election on {} while we \
                 led; neither layout sees the other's nodes in its order, so it leads too",
                foreign.name,
                foreign.library,
                protocol::shown(&dir)
            ));
            // Lost was told first; a failed delete leaves a node that goes with the session.
            let _ = delete_node(&session, shared.node()).await;
            return;
        }
        // A change of children, or a look again after a session timeout (a watch lost with a
        // connection is not re-armed by the server).
        let _ = tokio::time::timeout(
            session.timeout.max(Duration::from_millis(100)),
            watcher.changed(),
        )
        .await;
    }
}
