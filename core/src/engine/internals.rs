//! The acquire engine shared by every recipe (Curator's LockInternals): create our ephemeral sequential node (pipelined
//! with the children listing, one round trip), wait on the one node that blocks us, and never
//! leave a node behind when we give up, time out or are cancelled.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use tokio::sync::futures::Notified;
use tokio::time::Sleep;

use tokio::time::Instant;
use zklock_wire::client as zk;
use zklock_wire::client::EachName;

use crate::base::cancel::CancelToken;
use crate::base::error::{is_transient, Error, Result};
use crate::base::options::AclPolicy;
use crate::base::place::{Own, Place, Placer};
use crate::base::protocol::{self, ElectionStyle, NodeKind};
use crate::base::signal::poll_until;
use crate::engine::nodes::{
    cancelled_error, count_round_trip, find_own, make_parents, parent_error, read_children,
    recover, remove_attempt, timeout_error,
};
use crate::ops::runtime;
use crate::sessions::session::Session;

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
    /// Cancelling it makes the acquire remove its node and fail with `Cancelled`.
    pub cancel: Option<&'a CancelToken>,
    /// Set for an election: its node layout, and the rule that it never leads beside a node
    /// of another layout (`ElectionStyle::is_foreign`).
    pub style: Option<ElectionStyle>,
    /// Set when the lock has a lock-delay: remember the node we wait on, to tell whether its
    /// holder released it cleanly (`Queued::released_cleanly`).
    pub lock_delay: bool,
}

impl Request<'_> {
    /// Waits out a disconnect, unless the acquire is cancelled first.
    async fn recover(&self, session: &Session) -> Result<()> {
        recover(session, self.deadline, self.cancel, self.dir).await
    }
}

/// Until disarmed, deletes whatever node this attempt created, in the background; also when the
/// connection is down at that moment (it waits for the reconnect) and when the create reply
/// never came (it finds the node by our protected prefix).
struct Cleanup {
    session: Arc<Session>,
    /// Our node's full path once known; before that, the lock path and our protected prefix
    /// (`<dir>/_c_<uuid>-`, or kazoo's `<dir>/<hex>`), which our node's name starts with. One
    /// string either way.
    path: String,
    known: bool,
    armed: bool,
}

impl Cleanup {
    /// Counts the attempt as demand for the session's proof of life until it is dropped (by
    /// then its node is ours as a lease, which counts on its own, or it is being removed).
    fn new(session: Arc<Session>, dir: &str, style: Option<ElectionStyle>) -> Cleanup {
        session.demand_began();
        Cleanup {
            session,
            path: format!("{dir}/{}", protocol::attempt_prefix(style)),
            known: false,
            armed: true,
        }
    }

    /// Our node is known.
    fn found(&mut self, node: String) {
        self.path = node;
        self.known = true;
    }

    fn node(&self) -> Option<&str> {
        self.known.then_some(self.path.as_str())
    }

    /// Our protected prefix (meaningful until the node is known).
    fn prefix(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or_default()
    }

    /// Removes the attempt's node now, waiting at most a session timeout. Stays armed until the
    /// removal is done, so when this is dropped or times out the removal goes on in the
    /// background (`Drop`).
    async fn remove_now(&mut self) {
        let removal = remove_attempt(&self.session, &self.path, self.known);
        if let Ok(Ok(())) = tokio::time::timeout(self.session.timeout, removal).await {
            self.armed = false;
        }
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        self.session.demand_ended();
        if !self.armed {
            return;
        }
        let (session, path, known) = (
            self.session.clone(),
            std::mem::take(&mut self.path),
            self.known,
        );
        runtime::spawn(async move {
            let _ = remove_attempt(&session, &path, known).await;
        });
    }
}

/// An acquire between its steps: our node in the queue (with the cleanup that removes it if we
/// give up) and the watch on the node we wait for.
///
/// The steps that talk to ZooKeeper ([`enqueue`], [`Queued::advance`], [`Queued::abandon`]) run
/// in the runtime's context (`runtime::in_runtime`); the wait between them
/// ([`Queued::wait_turn`]) does no I/O. All are polled by the caller's future, so a waiting
/// acquire has no task of its own on the runtime, only this state in the caller's future
/// (memory per waiting lock, bench scenario 6).
pub(crate) struct Queued {
    cleanup: Cleanup,
    token: i64,
    /// An election's: every turn is taken after a fresh listing, so that a node of another
    /// layout that came after ours is seen before we lead (`refuse_foreign`).
    relist: bool,
    /// `None` once the lock is ours.
    blocker: Option<Blocker>,
    /// With a lock-delay: the node that was the only one before us when it went away (the
    /// holder we followed), once the lock is ours.
    predecessor: Option<Box<str>>,
}

/// The node before us that we watch, and how many other nodes before us would still block us
/// after it.
struct Blocker {
    watcher: Option<zk::OneshotWatcher>,
    others_before: usize,
    /// Its full path, kept only for a lock with a lock-delay.
    node: Option<Box<str>>,
}

/// What `watch_blocker` found: the watch, how many others are before us, and the node.
type Watched = (zk::OneshotWatcher, usize, Box<str>);

impl Blocker {
    fn of((watcher, others_before, node): Watched, req: &Request<'_>) -> Blocker {
        Blocker {
            watcher: Some(watcher),
            others_before,
            node: req.lock_delay.then_some(node),
        }
    }
}

/// Step 1, on the runtime: creates our node and finds our place in the queue (one round trip),
/// watching the node before us if there is one. A failure removes our node before it returns.
/// Beside it, the session's proof of life is made fresh if it is not (`Session::proven`: an
/// idle session proves nothing), so the lock is never ours on a stale deadline.
pub(crate) async fn enqueue(session: &Arc<Session>, req: &Request<'_>) -> Result<Queued> {
    let mut cleanup = Cleanup::new(session.clone(), req.dir, req.style);
    let placed = async {
        // The listing pipelined behind the create learns our node's name from the create's
        // reply, read just before it: one walk over the names then places us.
        let created = Arc::new(OnceLock::new());
        let placer = Placer::new(
            cleanup.prefix(),
            Own::Created(created.clone()),
            req.kind,
            req.style,
        );
        let create = create_node(session, req, &mut cleanup, placer, Some(created));
        let (token, place) = Box::pin(create).await?;
        if req.downgrade_of.is_some() {
            return Ok((token, None));
        }
        let blocker = Box::pin(watch_blocker(session, req, &cleanup, place)).await?;
        Ok((token, blocker))
    };
    let proven = session.proven(req.deadline, req.dir);
    let placed = tokio::try_join!(placed, proven).map(|(placed, ())| placed);
    match placed {
        Ok((token, blocker)) => Ok(Queued {
            cleanup,
            token,
            relist: req.style.is_some(),
            blocker: blocker.map(|w| Blocker::of(w, req)),
            predecessor: None,
        }),
        Err(e) => {
            Box::pin(cleanup.remove_now()).await;
            Err(e)
        }
    }
}

/// Creates our node and lists its parent in one round trip, with no queue (a semaphore's lease
/// node: its rule is a count, `semaphore` decides). A failure removes our node before it
/// returns; the returned node is removed by `abandon`, or kept by `into_node`.
pub(crate) async fn create_listed(
    session: &Arc<Session>,
    req: &Request<'_>,
) -> Result<(Queued, Vec<String>)> {
    let mut cleanup = Cleanup::new(session.clone(), req.dir, req.style);
    let created = Box::pin(create_node(
        session,
        req,
        &mut cleanup,
        zk::AllNames::default(),
        None,
    ));
    let proven = session.proven(req.deadline, req.dir);
    match tokio::try_join!(created, proven).map(|(created, ())| created) {
        Ok((token, children)) => Ok((
            Queued {
                cleanup,
                token,
                relist: false,
                blocker: None,
                predecessor: None,
            },
            children,
        )),
        Err(e) => {
            Box::pin(cleanup.remove_now()).await;
            Err(e)
        }
    }
}

impl Queued {
    /// How many contenders must leave before the lock is ours, as of the last listing (the
    /// queue position a pending acquire reports); `None` once it is ours. For a mutex or a
    /// write node, the nodes ahead; for a read node, the write nodes ahead (only they block
    /// it: `protocol::blocker`). A kazoo or Curator node ahead counts like ours.
    pub(crate) fn ahead(&self) -> Option<usize> {
        self.blocker.as_ref().map(|b| b.others_before + 1)
    }

    /// After the watched node's deletion: the lock is ours if nobody else was before us (the
    /// set of nodes before us only shrinks). No I/O: the caller takes its turn in place,
    /// without a trip to the runtime (handoff latency, bench scenario 3).
    pub(crate) fn take_turn_if_next(&mut self) -> bool {
        if self.relist {
            return false;
        }
        let next = self.blocker.as_ref().is_some_and(|b| b.others_before == 0);
        if next {
            self.predecessor = self.blocker.take().and_then(|b| b.node);
        }
        next
    }

    /// Whether the lock, once ours, may become a lease with no wait: the session's proof binds
    /// and is fresh. A session that only waited may have let it lapse (`Session::holds_proof`).
    pub(crate) fn holds_proof(&self) -> bool {
        self.cleanup.session.holds_proof()
    }

    /// Before the lock becomes a lease: waits for a fresh proof of the session's life unless
    /// it holds one, bounded as `Session::proven` is.
    pub(crate) async fn prove(&self, deadline: Option<Instant>, what: &str) -> Result<()> {
        if self.holds_proof() {
            return Ok(());
        }
        self.cleanup.session.proven(deadline, what).await
    }

    /// With a lock-delay, once the lock is ours: whether the holder we followed released its
    /// node cleanly, i.e. the lock path's data is its release marker (written in the same multi
    /// as its delete: both applied or neither, ZooKeeper's multi). `None` when we waited for
    /// nobody (first at once). `Some(false)` when several nodes before us went at once (which
    /// was the holder is unknown), the marker names another node, or the read failed: the
    /// safe side.
    pub(crate) async fn released_cleanly(&self, dir: &str) -> Option<bool> {
        let predecessor = self.predecessor.as_deref()?;
        let name = predecessor.rsplit('/').next().unwrap_or_default();
        let zk = self.cleanup.session.zk().ok()?;
        match zk.get_data(dir).await {
            Ok((data, _)) => Some(data == protocol::release_marker(name)),
            Err(_) => Some(false),
        }
    }

    /// Step 2, anywhere (no I/O): waits for the watched node's event; true if it was deleted.
    /// Fails when the session dies, `timer` fires (the deadline) or `cancel` is cancelled.
    pub(crate) fn wait_turn<'a>(
        &'a mut self,
        dir: &'a str,
        cancel: Option<&'a CancelToken>,
        timer: Option<&'a mut Pin<Box<Sleep>>>,
    ) -> EventWait<'a> {
        let session = &*self.cleanup.session;
        let watcher = self.blocker.as_mut().and_then(|b| b.watcher.take());
        EventWait {
            event: watcher.map(|w| Box::pin(w.changed()) as EventFuture),
            died: session.link_changed(),
            cancelled: cancel.map(|t| Box::pin(t.changed())),
            timer,
            session,
            cancel,
            dir,
        }
    }

    /// Step 3, on the runtime: after the watched node's event, the lock is ours, or we watch
    /// the node that blocks us now.
    pub(crate) async fn advance(&mut self, req: &Request<'_>, deleted: bool) -> Result<()> {
        if deleted && self.take_turn_if_next() {
            return Ok(());
        }
        let session = self.cleanup.session.clone();
        let next = Box::pin(watch_blocker(&session, req, &self.cleanup, None)).await?;
        let before = std::mem::replace(&mut self.blocker, next.map(|w| Blocker::of(w, req)));
        if self.blocker.is_none() && deleted {
            // Ours after a relisting: we followed one holder only if it was alone before us.
            // Otherwise several went at once: which was the holder is unknown (an empty name,
            // which no marker names: the safe side).
            self.predecessor = before.and_then(|b| match b.others_before {
                0 => b.node,
                _ => b.node.map(|_| Box::from("")),
            });
        }
        Ok(())
    }

    /// Makes `wait_turn` wait for `watcher` (a semaphore's children watch) instead of a node
    /// before us.
    pub(crate) fn wait_for(&mut self, watcher: zk::OneshotWatcher) {
        self.blocker = Some(Blocker {
            watcher: Some(watcher),
            others_before: 1,
            node: None,
        });
    }

    /// Our node's full path.
    pub(crate) fn node(&self) -> &str {
        self.cleanup.node().unwrap_or_default()
    }

    /// Our node, once the lock is ours: its session, path and token (the recipe makes the lease).
    pub(crate) fn into_node(mut self) -> (Arc<Session>, String, i64) {
        self.cleanup.armed = false;
        let node = std::mem::take(&mut self.cleanup.path);
        (self.cleanup.session.clone(), node, self.token)
    }

    /// Gives up, on the runtime: removes our node before it returns `err`.
    pub(crate) async fn abandon(mut self, err: Error) -> Error {
        Box::pin(self.cleanup.remove_now()).await;
        err
    }
}

/// Finds the node that blocks us and watches it: its watcher, and how many other nodes before
/// us would still block us after it; `None` when the lock is ours. Lists the children first
/// unless `listed` has our place in them.
async fn watch_blocker(
    session: &Session,
    req: &Request<'_>,
    cleanup: &Cleanup,
    mut listed: Option<Place>,
) -> Result<Option<Watched>> {
    loop {
        let place = match listed.take() {
            Some(place) => place,
            None => place_in(session, req, cleanup).await?,
        };
        let Some((blocker, others_before)) = next_blocker(req, cleanup, place)? else {
            return Ok(None);
        };
        if req.deadline.is_some_and(|d| d <= Instant::now()) {
            return Err(timeout_error(req.dir));
        }
        if let Some(watcher) = watch_node(session, req, &blocker).await? {
            return Ok(Some((watcher, others_before, blocker.into_boxed_str())));
        }
    }
}

/// Lists the children and reads our place in them as they arrive ([`Placer`]): the listing
/// itself is never kept (a thousand waiters queueing at once would each hold every waiter's
/// name), unless one walk could not place us (then it is read again, keeping the names).
async fn place_in(session: &Session, req: &Request<'_>, cleanup: &Cleanup) -> Result<Place> {
    let own = Own::Named(cleanup.prefix().into());
    let mut placer = Placer::new(cleanup.prefix(), own, req.kind, req.style);
    loop {
        if let Some(place) = read_children_for(session, req, placer.clone()).await? {
            return Ok(place);
        }
        placer = placer.keeping();
    }
}

/// The node we must wait for (full path), and how many other nodes before us would still
/// block us after it; `None` when the lock is ours.
fn next_blocker(
    req: &Request<'_>,
    cleanup: &Cleanup,
    place: Place,
) -> Result<Option<(String, usize)>> {
    if let (Some(style), Some(foreign)) = (req.style, &place.foreign) {
        return Err(refuse_foreign(style, req.dir, foreign));
    }
    if place.own.is_none() {
        let node = cleanup.node().unwrap_or_default();
        let name = node.rsplit('/').next().unwrap_or_default();
        return Err(Error::new(
            crate::base::error::ErrorKind::ZooKeeper,
            format!("our lock node {name} is no longer among the children"),
        ));
    }
    Ok(place
        .blocker
        .map(|(name, others_before)| (format!("{}/{name}", req.dir), others_before)))
}

/// An election never leads beside a node of another layout: the other library would not see
/// our node ahead of its own, nor we its node ahead of ours, and both would lead. Checked at
/// every listing, so a foreign node that appears while we wait ends the attempt too.
fn refuse_foreign(style: ElectionStyle, dir: &str, foreign: &protocol::Contender) -> Error {
    let theirs = ElectionStyle::of(foreign).map_or_else(
        || format!("a {} node", foreign.kind),
        |s| format!("a {s} participant"),
    );
    Error::new(
        crate::base::error::ErrorKind::Conflict,
        format!(
            "refusing to lead the {style} election on {}: {theirs} ({}, by {}) is on the same \
             path, and neither layout sees the other's nodes in its order",
            protocol::shown(dir),
            foreign.name,
            foreign.library
        ),
    )
}

/// Creates our node and lists the children in one round trip; returns the node's czxid and
/// what `read` made of the children. The node's path goes into `cleanup` as soon as it is known,
/// and its name into `created` (when given) as soon as the create's reply is read.
async fn create_node<R>(
    session: &Session,
    req: &Request<'_>,
    cleanup: &mut Cleanup,
    read: R,
    created: Option<Arc<OnceLock<Box<str>>>>,
) -> Result<(i64, R::Output)>
where
    R: EachName + Clone,
{
    let name_prefix = protocol::attempt_name(cleanup.prefix(), req.kind, req.style);
    let create_path = format!("{}/{}", req.dir, name_prefix);
    loop {
        let zk = session.zk()?;
        // Both requests are sent before either reply is awaited: one round trip.
        let mode = zk::CreateMode::EphemeralSequential;
        let note = created.clone();
        let create = zk.create_noting(&create_path, req.identity, mode, req.acl.acls(), |p| {
            if let Some(cell) = note {
                let _ = cell.set(p.rsplit('/').next().unwrap_or_default().into());
            }
        });
        let list = zk.read_children_each(req.dir, read.clone());
        let (created, listed) = (create.await, list.await);
        count_round_trip();
        match created {
            Ok((stat, node)) => {
                cleanup.found(node);
                let children = match listed {
                    Ok(children) => children,
                    // Our node exists; list again (waiting out a disconnect).
                    Err(_) => Box::pin(read_children_for(session, req, read)).await?,
                };
                return Ok((stat.czxid, children));
            }
            // The rare paths are boxed: the common one keeps this future small.
            Err(zk::Error::NoNode) => match Box::pin(make_parents(&zk, req.dir, req.acl)).await {
                Err(e) if is_transient(&e) => Box::pin(req.recover(session)).await?,
                Err(e) => return Err(Box::pin(parent_error(session, &zk, e, req.dir)).await),
                Ok(()) => {}
            },
            Err(e) if is_transient(&e) => {
                // The server may have applied the create before the connection broke:
                // look for our protected prefix before trying again (never a duplicate).
                Box::pin(req.recover(session)).await?;
                if let Some((node, czxid)) =
                    Box::pin(find_own(session, req.dir, cleanup.prefix())).await?
                {
                    cleanup.found(node);
                    let children = Box::pin(read_children_for(session, req, read)).await?;
                    return Ok((czxid, children));
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
    }
}

/// Sets a getData watch on `node` (like Curator: an exists watch on a vanished node would
/// leak). `None` when the node is already gone.
async fn watch_node(
    session: &Session,
    req: &Request<'_>,
    node: &str,
) -> Result<Option<zk::OneshotWatcher>> {
    let zk = session.zk()?;
    let watched = zk.get_and_watch_data(node).await;
    count_round_trip();
    match watched {
        Ok((_, _, watcher)) => Ok(Some(watcher)),
        Err(zk::Error::NoNode) => Ok(None),
        Err(e) if is_transient(&e) => {
            // The caller lists again after the reconnect: the queue may have moved.
            req.recover(session).await?;
            Ok(None)
        }
        Err(e) => Err(Error::from_zk(e, &format!("watch {node}"))),
    }
}

type EventFuture = Pin<Box<dyn Future<Output = zk::WatchedEvent> + Send>>;

/// The wait of an acquire for its turn, written out by hand rather than with `select!` (which
/// took 544 bytes; see `Queued::wait_turn`). The watch future is boxed, so this state stays
/// small when the acquire is not waiting.
pub(crate) struct EventWait<'a> {
    /// `None`: nothing to wait for (resolves at once, as a deletion).
    event: Option<EventFuture>,
    died: Notified<'a>,
    cancelled: Option<Pin<Box<Notified<'a>>>>,
    timer: Option<&'a mut Pin<Box<Sleep>>>,
    session: &'a Session,
    cancel: Option<&'a CancelToken>,
    dir: &'a str,
}

impl Future for EventWait<'_> {
    type Output = Result<bool>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<bool>> {
        // SAFETY: `died` is the only field pinned in place; it is polled where it is and only
        // replaced through `Pin::set`. Nothing is moved out of the struct.
        let this = unsafe { self.get_unchecked_mut() };
        let Some(event) = this.event.as_mut() else {
            return Poll::Ready(Ok(true));
        };
        if let Poll::Ready(event) = event.as_mut().poll(cx) {
            return Poll::Ready(Ok(event.event_type == zk::EventType::NodeDeleted));
        }
        let session = this.session;
        let died = unsafe { Pin::new_unchecked(&mut this.died) };
        if poll_until(died, cx, || session.is_dead(), || session.link_changed()) {
            let err = session.dead_reason();
            return Poll::Ready(Err(err.unwrap_or_else(|| Error::closed("session closed"))));
        }
        if let (Some(token), Some(cancelled)) = (this.cancel, this.cancelled.as_mut()) {
            if poll_until(
                cancelled.as_mut(),
                cx,
                || token.is_cancelled(),
                || token.changed(),
            ) {
                return Poll::Ready(Err(cancelled_error(this.dir)));
            }
        }
        if let Some(timer) = this.timer.as_mut() {
            if timer.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Err(timeout_error(this.dir)));
            }
        }
        Poll::Pending
    }
}

/// Lists the children of the acquire's lock path into what `read` makes of them (a cancel ends
/// a wait for the reconnect).
async fn read_children_for<R>(session: &Session, req: &Request<'_>, read: R) -> Result<R::Output>
where
    R: EachName + Clone,
{
    read_children(session, req.dir, req.deadline, req.cancel, read).await
}
