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
//! notification and one listing (milliseconds on a healthy link; up to the lifeline's deadline
//! on a suspended one, when no notification can arrive). The foreign node's czxid is larger
//! than our token, so a resource that checks fencing tokens takes the foreign leader's writes
//! and refuses ours from its first one on (docs/election.md, "A foreign participant").

use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::error::is_transient;
use crate::lease::LeaseShared;
use crate::nodes::delete_node;
use crate::protocol::{self, ElectionStyle};
use crate::runtime;

/// The reason word of a leadership ended because a participant of another layout joined.
pub const CONFLICT: &str = "conflict";

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
