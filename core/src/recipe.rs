//! The acquire engine shared by every recipe: create our ephemeral sequential node (pipelined
//! with the children listing, one round trip), wait on the one node that blocks us, and never
//! leave a node behind when we give up, time out or are cancelled.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::sync::futures::Notified;

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
    /// Cancelling it makes the acquire remove its node and fail with `Cancelled`.
    pub cancel: Option<&'a CancelToken>,
}

impl Request<'_> {
    fn cancelled_error(&self) -> Error {
        Error::Cancelled(format!("the acquire of {} was cancelled", self.dir))
    }

    /// Waits out a disconnect, unless the acquire is cancelled first.
    async fn recover(&self, session: &Session) -> Result<()> {
        recover(session, self.deadline, self.cancel, self.dir).await
    }
}

/// Waits out a disconnect (`Session::recover`), unless `cancel` fires first. The short phases of
/// an acquire are round trips; only this wait can be long, so this is where they notice a cancel.
async fn recover(
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
        _ = token.cancelled() => Err(Error::Cancelled(format!("the acquire of {dir} was cancelled"))),
    }
}

/// Until disarmed, deletes whatever node this attempt created, in the background; also when the
/// connection is down at that moment (it waits for the reconnect) and when the create reply
/// never came (it finds the node by our protected prefix).
struct Cleanup {
    session: Arc<Session>,
    /// Our node's full path once known; before that, the lock path and our protected prefix
    /// (`<dir>/_c_<uuid>-`), which our node's name starts with. One string either way.
    path: String,
    known: bool,
    armed: bool,
}

impl Cleanup {
    fn new(session: Arc<Session>, dir: &str) -> Cleanup {
        Cleanup {
            session,
            path: format!("{dir}/{}", protocol::protected_prefix()),
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

    /// Removes the attempt's node now, waiting at most a session timeout (then in the background).
    async fn remove_now(&mut self) {
        self.armed = false;
        let removal = remove_attempt(&self.session, &self.path, self.known);
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

/// Deletes the attempt's node: `path` is the node when `known`, else `<dir>/<protected prefix>`.
async fn remove_attempt(session: &Session, path: &str, known: bool) -> Result<()> {
    if known {
        return crate::lease::delete_node(session, path).await;
    }
    let (dir, prefix) = path.rsplit_once('/').unwrap_or(("", path));
    match find_own(session, dir, prefix).await? {
        Some((node, _)) => crate::lease::delete_node(session, &node).await,
        None => Ok(()),
    }
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
///
/// A waiting acquire is mostly this future, so it is kept small (bench scenario 6, memory per
/// waiting lock): the short phases (create, list, watch, cleanup) are boxed, so that only the
/// wait itself is carried inline.
///
/// Written as `async move` blocks rather than `async fn`s: an `async fn` keeps a second copy of
/// its arguments in its state.
#[allow(clippy::manual_async_fn)] // an `async fn` would keep a second copy of its arguments
pub(crate) fn acquire_node<'a>(
    session: &'a Arc<Session>,
    req: &'a Request<'a>,
) -> impl Future<Output = Result<Arc<LeaseShared>>> + Send + 'a {
    async move {
        let mut cleanup = Cleanup::new(session.clone(), req.dir);
        let mut result = attempt(session, req, &mut cleanup).await;
        if result.is_ok() && req.cancel.is_some_and(CancelToken::is_cancelled) {
            result = Err(req.cancelled_error());
        }
        match result {
            Ok(token) => {
                cleanup.armed = false;
                let node = std::mem::take(&mut cleanup.path);
                let downgrade_of = req.downgrade_of.clone();
                Ok(LeaseShared::new(session.clone(), node, token, downgrade_of))
            }
            Err(e) => {
                Box::pin(cleanup.remove_now()).await;
                Err(e)
            }
        }
    }
}

/// Creates our node and waits until it holds the lock; returns its czxid.
#[allow(clippy::manual_async_fn)] // an `async fn` would keep a second copy of its arguments
fn attempt<'a>(
    session: &'a Session,
    req: &'a Request<'a>,
    cleanup: &'a mut Cleanup,
) -> impl Future<Output = Result<i64>> + Send + 'a {
    async move {
        let (token, children) = Box::pin(create_node(session, req, cleanup)).await?;
        if req.downgrade_of.is_some() {
            return Ok(token);
        }
        let mut listed = Some(children);
        loop {
            let Some((watcher, others_before)) =
                Box::pin(watch_blocker(session, req, cleanup, listed.take())).await?
            else {
                return Ok(token);
            };
            let deleted = wait_for_event(session, watcher, req).await?;
            if deleted && others_before == 0 {
                // The set of nodes before us only shrinks: nothing else can block us.
                return Ok(token);
            }
        }
    }
}

/// Finds the node that blocks us and watches it: its watcher, and how many other nodes before
/// us would still block us after it; `None` when the lock is ours. Lists the children first
/// unless `listed` has them.
async fn watch_blocker(
    session: &Session,
    req: &Request<'_>,
    cleanup: &Cleanup,
    mut listed: Option<Vec<String>>,
) -> Result<Option<(zk::OneshotWatcher, usize)>> {
    loop {
        let children = match listed.take() {
            Some(children) => children,
            None => list_children_for(session, req).await?,
        };
        let Some((blocker, others_before)) = next_blocker(req, cleanup, &children)? else {
            return Ok(None);
        };
        if req.deadline.is_some_and(|d| d <= Instant::now()) {
            return Err(timeout_error(req.dir));
        }
        if let Some(watcher) = watch_node(session, req, &blocker).await? {
            return Ok(Some((watcher, others_before)));
        }
    }
}

/// The node we must wait for (full path), and how many other nodes before us would still
/// block us after it; `None` when the lock is ours.
fn next_blocker(
    req: &Request<'_>,
    cleanup: &Cleanup,
    children: &[String],
) -> Result<Option<(String, usize)>> {
    let node = cleanup.node().unwrap_or_default();
    let name = node.rsplit('/').next().unwrap_or_default();
    let my_sequence = protocol::parse_contender(name).map(|c| c.sequence);
    let queue = protocol::queue_of(children, my_sequence);
    Ok(
        protocol::blocker(&queue, name, req.kind)?.map(|(index, others_before)| {
            (format!("{}/{}", req.dir, queue[index].name), others_before)
        }),
    )
}

/// Creates our node and lists the children in one round trip; returns the node's czxid and the
/// children. The node's path goes into `cleanup` as soon as it is known.
async fn create_node(
    session: &Session,
    req: &Request<'_>,
    cleanup: &mut Cleanup,
) -> Result<(i64, Vec<String>)> {
    let name_prefix = protocol::node_prefix(cleanup.prefix(), req.kind);
    let create_path = format!("{}/{}", req.dir, name_prefix);
    let create_options = zk::CreateMode::EphemeralSequential.with_acls(req.acl.acls());
    loop {
        let zk = session.zk()?;
        // Both requests are sent before either reply is awaited: one round trip.
        let create = zk.create(&create_path, req.identity, &create_options);
        let list = zk.list_children(req.dir);
        let (created, listed) = (create.await, list.await);
        count_round_trip();
        match created {
            Ok((stat, sequence)) => {
                cleanup.found(format!("{create_path}{sequence}"));
                let children = match listed {
                    Ok(children) => children,
                    // Our node exists; list again (waiting out a disconnect).
                    Err(_) => Box::pin(list_children_for(session, req)).await?,
                };
                return Ok((stat.czxid, children));
            }
            // The rare paths are boxed: the common one keeps this future small.
            Err(zk::Error::NoNode) => match Box::pin(make_parents(&zk, req.dir, req.acl)).await {
                Err(e) if is_transient(&e) => Box::pin(req.recover(session)).await?,
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
                Box::pin(req.recover(session)).await?;
                if let Some((node, czxid)) =
                    Box::pin(find_own(session, req.dir, cleanup.prefix())).await?
                {
                    cleanup.found(node);
                    let children = Box::pin(list_children_for(session, req)).await?;
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

/// Waits for the watched node's event; true if it was deleted. Fails when the session dies, the
/// deadline passes or the acquire is cancelled.
fn wait_for_event<'a>(
    session: &'a Session,
    watcher: zk::OneshotWatcher,
    req: &'a Request<'a>,
) -> EventWait<'a, impl Future<Output = zk::WatchedEvent>> {
    EventWait {
        event: watcher.changed(),
        died: session.link_changed(),
        cancelled: req.cancel.map(CancelToken::changed),
        timer: req.deadline.map(|d| Box::pin(tokio::time::sleep_until(d))),
        session,
        req,
    }
}

/// The one long wait of an acquire, written out by hand: as an async block with `select!` it
/// took 544 bytes, this takes about 330 (memory per waiting lock, bench scenario 6). The timer
/// is boxed, and only made with a deadline.
struct EventWait<'a, F> {
    event: F,
    died: Notified<'a>,
    cancelled: Option<Notified<'a>>,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
    session: &'a Session,
    req: &'a Request<'a>,
}

impl<F: Future<Output = zk::WatchedEvent>> Future for EventWait<'_, F> {
    type Output = Result<bool>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<bool>> {
        // SAFETY: no field is moved out of the pinned struct; the pinned ones (`event`, `died`,
        // `cancelled`) are only polled in place or replaced in place through `Pin::set`.
        let this = unsafe { self.get_unchecked_mut() };
        let event = unsafe { Pin::new_unchecked(&mut this.event) };
        if let Poll::Ready(event) = event.poll(cx) {
            return Poll::Ready(Ok(event.event_type == zk::EventType::NodeDeleted));
        }
        // A signal's `Notified` is polled (registered) before its value is read, and made anew
        // after it fires (it fires at every change, e.g. a disconnect, not only at death).
        loop {
            let mut died = unsafe { Pin::new_unchecked(&mut this.died) };
            let fired = died.as_mut().poll(cx).is_ready();
            if let Some(err) = this.session.dead_reason() {
                return Poll::Ready(Err(err));
            }
            if !fired {
                break;
            }
            died.set(this.session.link_changed());
        }
        if let (Some(token), Some(cancelled)) = (this.req.cancel, this.cancelled.as_mut()) {
            loop {
                let mut cancelled = unsafe { Pin::new_unchecked(&mut *cancelled) };
                let fired = cancelled.as_mut().poll(cx).is_ready();
                if token.is_cancelled() {
                    return Poll::Ready(Err(this.req.cancelled_error()));
                }
                if !fired {
                    break;
                }
                cancelled.set(token.changed());
            }
        }
        if let Some(timer) = this.timer.as_mut() {
            if timer.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Err(timeout_error(this.req.dir)));
            }
        }
        Poll::Pending
    }
}

/// Lists the children of `dir`, waiting out connection loss.
pub(crate) async fn list_children(
    session: &Session,
    dir: &str,
    deadline: Option<Instant>,
) -> Result<Vec<String>> {
    list_children_until(session, dir, deadline, None).await
}

/// Lists the children of the acquire's lock path (a cancel ends a wait for the reconnect).
async fn list_children_for(session: &Session, req: &Request<'_>) -> Result<Vec<String>> {
    list_children_until(session, req.dir, req.deadline, req.cancel).await
}

async fn list_children_until(
    session: &Session,
    dir: &str,
    deadline: Option<Instant>,
    cancel: Option<&CancelToken>,
) -> Result<Vec<String>> {
    loop {
        let zk = session.zk()?;
        let listed = zk.list_children(dir).await;
        count_round_trip();
        match listed {
            Ok(children) => return Ok(children),
            Err(zk::Error::NoNode) => return Ok(Vec::new()),
            Err(e) if is_transient(&e) => recover(session, deadline, cancel, dir).await?,
            Err(e) => return Err(Error::from_zk(e, &format!("list {dir}"))),
        }
    }
}
