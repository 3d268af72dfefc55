//! The acquire queue's bookkeeping of a lock value: the gates that line up first acquisitions of
//! one value (so its tasks share one node), an acquire's steps through the engine's queue (begin
//! in the runtime's context, wait for the turn, settle; all polled by the caller's future), and
//! the queue's listing (`participants`). A lock that is ours becomes a hold in `mutex_holds`.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::base::cancel::CancelToken;
use crate::base::error::{Error, ErrorKind, Result};
use crate::base::protocol::{self, ElectionStyle, Library, NodeKind};
use crate::engine::internals::{self, Request};
use crate::leases::lease::Lease;
use crate::leases::node::LeaseShared;
use crate::leases::parts::{NodeRef, Part, Reentry};
use crate::leases::position::{self, Clearing, QueuePosition};
use crate::ops::bounds;
use crate::ops::observe::AcquireWatch;
use crate::ops::runtime::in_runtime;
use crate::recipes::mutex_holds::{LockInner, Owner};
use crate::sessions::connection::Connection;

/// Holds an owner's gate on a lock value (its one permit) until dropped.
struct GatePass(Arc<LockInner>, Owner);

impl Drop for GatePass {
    fn drop(&mut self) {
        let (lock, owner) = (&self.0, self.1);
        if owner == Owner::SHARED {
            lock.gate.add_permits(1);
            return;
        }
        lock.leave_owner_gate(owner, true);
    }
}

/// Where an acquire stands after a step in the runtime's context.
enum Step {
    Done(Lease),
    Wait(Waiting),
}

/// An acquire waiting for its turn, kept in the caller's future between steps.
struct Waiting {
    lock: Arc<LockInner>,
    owner: Owner,
    gate: Option<GatePass>,
    queued: internals::Queued,
    cancel: Option<CancelToken>,
    /// Where a face or caller reads the acquire's place in the queue (`None`: nobody asked);
    /// cleared when this state goes.
    position: Clearing,
    /// Made on the runtime (a timer needs one to be made), polled wherever the caller is. Its
    /// deadline is the acquire's (not kept twice: memory per waiting lock).
    timer: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl Waiting {
    /// Step 2, in the caller's future: the watched node's event (true if deleted).
    fn wait_turn(&mut self) -> internals::EventWait<'_> {
        self.queued
            .wait_turn(&self.lock.path, self.cancel.as_ref(), self.timer.as_mut())
    }

    /// Step 3, in the runtime's context: look at the queue again after the event.
    async fn resume(mut self, turn: Result<bool>) -> Result<Step> {
        let advanced = match turn {
            Ok(deleted) => {
                let deadline = self.timer.as_ref().map(|t| t.deadline());
                let request = self.lock.request(deadline, None, self.cancel.as_ref());
                self.queued.advance(&request, deleted).await
            }
            Err(e) => Err(e),
        };
        match advanced {
            Ok(()) => self.settle(None).await,
            Err(e) => Err(self.queued.abandon(e).await),
        }
    }

    fn cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(CancelToken::is_cancelled)
    }

    /// The lease once the lock is ours (unless cancelled meanwhile), else wait again.
    async fn settle(self, downgrade_of: Option<String>) -> Result<Step> {
        let ahead = self.queued.ahead();
        position::report(self.position.get(), ahead.unwrap_or(0));
        if ahead.is_some() {
            return Ok(Step::Wait(self));
        }
        if let Some(delay) = self.lock.lock_delay {
            if self.queued.released_cleanly(&self.lock.path).await == Some(false) {
                // The holder before us went without a clean release: Chubby's lock-delay.
                crate::ops::observe::lock_delayed(
                    self.lock.client.counters(),
                    &self.lock.path,
                    delay,
                );
                tokio::time::sleep(delay).await;
            }
        }
        if self.cancelled() {
            let err = crate::engine::nodes::cancelled_error(&self.lock.path);
            return Err(self.queued.abandon(err).await);
        }
        let deadline = self.timer.as_ref().map(|t| t.deadline());
        if let Err(e) = self.queued.prove(deadline, &self.lock.path).await {
            return Err(self.queued.abandon(e).await);
        }
        Ok(Step::Done(self.finish(downgrade_of)))
    }

    /// The lease of a lock that is ours: the hold of this value, and the gate let go. No I/O,
    /// so it runs wherever the caller is.
    fn finish(self, downgrade_of: Option<String>) -> Lease {
        let Waiting {
            lock,
            owner,
            gate,
            queued,
            ..
        } = self;
        let (session, node, token) = queued.into_node();
        let shared = LeaseShared::new(session, &lock.path, node, token, downgrade_of);
        if let Some(limit) = lock.max_hold {
            shared.limit_hold(limit, lock.hold_ceiling);
        }
        if lock.lock_delay.is_some() {
            shared.mark_release_on(&lock.path);
        }
        if let Some((style, _)) = &lock.election {
            crate::recipes::conflict::guard(&shared, *style, &lock.path);
        }
        let counted_by = if lock.reentrant {
            lock.record_hold(owner, &shared);
            Some(lock)
        } else {
            None
        };
        drop(gate);
        Lease::one(Part {
            shared: NodeRef::Owned(shared),
            owner: counted_by.map(|l| l as Arc<dyn Reentry>),
        })
    }
}

impl LockInner {
    /// The acquire, as the caller's future. The steps that talk to ZooKeeper run in the
    /// runtime's context (`in_runtime`: no task spawned per step); the wait for our turn runs
    /// here, so a waiting acquire has no task of its own on the runtime (memory per waiting
    /// lock, bench scenario 6).
    #[allow(clippy::manual_async_fn)] // an `async fn` would keep a second copy of its arguments
    /// `position`, when given, hears the acquire's place in the queue after each listing
    /// (`QueuePosition`), and is cleared when the acquire's state goes.
    pub(crate) fn acquire_until(
        self: Arc<Self>,
        owner: Owner,
        deadline: Option<Instant>,
        cancel: Option<CancelToken>,
        position: Option<QueuePosition>,
    ) -> impl std::future::Future<Output = Result<Lease>> + Send + 'static {
        // The bound is made here and the steps are one async block: each argument is stored
        // once in the caller's future (memory per waiting lock, bench scenario 6).
        let decide_by = bounds::decide_by(deadline);
        let guard = match decide_by.is_some() || cancel.is_some() {
            true => bounds::guard(decide_by, cancel.clone(), self.path.clone()),
            false => None,
        };
        // A timeout says what filled it when the connection kept failing meanwhile (issue 33):
        // the lock may never have been contended.
        let client = self.client.clone();
        let started = Instant::now();
        let bounded = bounds::within(guard, async move {
            if let Some(lease) = self.try_reenter(owner) {
                return Ok(lease);
            }
            // Made only for an acquire that goes to ZooKeeper (a re-entrant one pays nothing);
            // disabled, at the cost of a check, unless a `tracing` subscriber wants it.
            let span = tracing::debug_span!(
                "acquire",
                path = self.path.as_str(),
                kind = self.kind.as_str(),
                outcome = tracing::field::Empty,
                wait_ms = tracing::field::Empty,
            );
            let counters = self.client.counters();
            let mut watch = AcquireWatch::start(counters, &self.path, self.kind, &decide_by, span);
            let result = async {
                // A lock obtained after `decide_by` is given back (released in the background).
                let in_time = |lease: Lease, lock: &LockInner| {
                    if bounds::too_late(decide_by) {
                        drop(lease);
                        return Err(crate::engine::nodes::timeout_error(&lock.path));
                    }
                    Ok(lease)
                };
                // One `waiting` across the awaits, never a `Step` beside it: the state of a
                // waiting acquire is stored once in this future (memory per waiting lock).
                let mut waiting = match in_runtime(
                    self.clone().begin(owner, deadline, cancel, position),
                )
                .await?
                {
                    Step::Done(lease) => return in_time(lease, &self),
                    Step::Wait(waiting) => waiting,
                };
                loop {
                    let turn = waiting.wait_turn().await;
                    // With a lock-delay, or a proof that lapsed while we waited, the turn is
                    // taken in a step (`settle` reads the lock path's marker, or waits for
                    // a fresh proof).
                    if matches!(turn, Ok(true))
                        && !waiting.cancelled()
                        && waiting.lock.lock_delay.is_none()
                        && waiting.queued.holds_proof()
                        && waiting.queued.take_turn_if_next()
                    {
                        return in_time(waiting.finish(None), &self);
                    }
                    waiting = match in_runtime(waiting.resume(turn)).await? {
                        Step::Done(lease) => return in_time(lease, &self),
                        Step::Wait(waiting) => waiting,
                    };
                }
            };
            let result = watch.in_span(result).await;
            watch.settle(&result);
            result
        });
        async move { client.explain_timeout(bounded.await, started) }
    }

    /// Waits for the gate that serialises first acquisitions of this value.
    async fn enter_gate(
        self: Arc<Self>,
        owner: Owner,
        deadline: Option<Instant>,
        cancel: Option<&CancelToken>,
    ) -> Result<GatePass> {
        if owner != Owner::SHARED {
            return self.enter_owner_gate(owner, deadline, cancel).await;
        }
        let wait = async {
            let permit = match deadline {
                None => self.gate.acquire().await,
                Some(d) => tokio::time::timeout_at(d, self.gate.acquire())
                    .await
                    .map_err(|_| {
                        Error::new(
                            ErrorKind::Timeout,
                            format!("timed out waiting for the lock {}", self.path),
                        )
                    })?,
            };
            permit
                .map(|p| p.forget())
                .map_err(|_| Error::closed("the lock's gate was closed"))
        };
        let cancelled = async {
            match cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            entered = wait => entered?,
            _ = cancelled => return Err(crate::engine::nodes::cancelled_error(&self.path)),
        }
        Ok(GatePass(self.clone(), Owner::SHARED))
    }

    /// The gate of one owner other than `SHARED` (each caller's, by default: issue 50): made on
    /// first use, gone when its last user leaves. Boxed, so the acquire future stays small.
    fn enter_owner_gate<'a>(
        self: Arc<Self>,
        owner: Owner,
        deadline: Option<Instant>,
        cancel: Option<&'a CancelToken>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<GatePass>> + Send + 'a>> {
        Box::pin(async move {
            let gate = {
                let mut gates = self.owner_gates.lock().unwrap();
                match gates.iter_mut().find(|(o, _, _)| *o == owner) {
                    Some((_, gate, users)) => {
                        *users += 1;
                        gate.clone()
                    }
                    None => {
                        let gate = Arc::new(tokio::sync::Semaphore::new(1));
                        gates.push((owner, gate.clone(), 1));
                        gate
                    }
                }
            };
            let wait = async {
                match deadline {
                    None => gate.acquire().await.map(|p| p.forget()).ok(),
                    Some(d) => match tokio::time::timeout_at(d, gate.acquire()).await {
                        Ok(permit) => permit.map(|p| p.forget()).ok(),
                        Err(_) => None,
                    },
                }
            };
            let cancelled = async {
                match cancel {
                    Some(token) => token.cancelled().await,
                    None => std::future::pending().await,
                }
            };
            // Until we hold the permit, leaving (an error, or this future dropped) only counts
            // this user out of the gate.
            struct Waiter<'l>(&'l LockInner, Owner);
            impl Drop for Waiter<'_> {
                fn drop(&mut self) {
                    self.0.leave_owner_gate(self.1, false);
                }
            }
            let waiter = Waiter(&self, owner);
            let entered = tokio::select! {
                entered = wait => entered.is_some(),
                _ = cancelled => return Err(crate::engine::nodes::cancelled_error(&self.path)),
            };
            if !entered {
                return Err(crate::engine::nodes::timeout_error(&self.path));
            }
            std::mem::forget(waiter);
            Ok(GatePass(self.clone(), owner))
        })
    }

    /// One user of `owner`'s gate leaves (giving its permit back when it held it).
    fn leave_owner_gate(&self, owner: Owner, held: bool) {
        let mut gates = self.owner_gates.lock().unwrap();
        if let Some(i) = gates.iter().position(|(o, _, _)| *o == owner) {
            if held {
                gates[i].1.add_permits(1);
            }
            gates[i].2 -= 1;
            if gates[i].2 == 0 {
                gates.swap_remove(i);
            }
        }
    }

    fn request<'a>(
        &'a self,
        deadline: Option<Instant>,
        downgrade_of: Option<String>,
        cancel: Option<&'a CancelToken>,
    ) -> Request<'a> {
        Request {
            dir: &self.path,
            kind: self.kind,
            identity: match &self.election {
                Some((_, id)) => id,
                None => self.client.identity(),
            },
            acl: self.client.acl(),
            deadline,
            downgrade_of,
            cancel,
            style: self.election.as_ref().map(|(style, _)| *style),
            lock_delay: self.lock_delay.is_some(),
        }
    }

    /// Step 1, on the runtime: the gate, our node, our place in the queue.
    async fn begin(
        self: Arc<Self>,
        owner: Owner,
        deadline: Option<Instant>,
        cancel: Option<CancelToken>,
        position: Option<QueuePosition>,
    ) -> Result<Step> {
        let position = Clearing(position);
        if let Some(max_leases) = self.max_leases {
            let session = self.client.session_by(deadline).await?;
            let request = crate::recipes::semaphore::SemaphoreRequest {
                path: &self.path,
                max_leases,
                identity: self.client.identity(),
                acl: self.client.acl(),
                deadline,
                cancel: cancel.as_ref(),
                lock_delay: self.lock_delay,
                position: position.get(),
            };
            let lease = crate::recipes::semaphore::acquire(&session, &request).await?;
            if let Some(limit) = self.max_hold {
                lease
                    .shared_parts()
                    .iter()
                    .for_each(|p| p.limit_hold(limit, self.hold_ceiling));
            }
            return Ok(Step::Done(lease));
        }
        let gate = if self.reentrant {
            Some(
                self.clone()
                    .enter_gate(owner, deadline, cancel.as_ref())
                    .await?,
            )
        } else {
            None
        };
        if let Some(lease) = self.try_reenter(owner) {
            return Ok(Step::Done(lease));
        }
        let downgrade_of = self.downgrade_of(owner)?;
        let session = self.client.session_by(deadline).await?;
        let request = self.request(deadline, downgrade_of.clone(), cancel.as_ref());
        let queued = internals::enqueue(&session, &request).await?;
        let waiting = Waiting {
            owner,
            timer: deadline.map(|d| Box::pin(tokio::time::sleep_until(d))),
            lock: self.clone(),
            gate,
            queued,
            cancel,
            position,
        };
        waiting.settle(downgrade_of).await
    }
}

/// Runs a listing within `timeout` (`None`: no bound), failing with `Timeout` past it.
pub(super) async fn within<T>(
    timeout: Option<Duration>,
    path: &str,
    listing: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    let Some(timeout) = timeout else {
        return listing.await;
    };
    let too_long = || {
        Err(Error::timeout(format!(
            "listing the participants of {} took longer than {timeout:?}",
            crate::base::protocol::shown(path)
        )))
    };
    // No time at all fails without asking: a zero tokio timeout races a fast reply.
    if timeout.is_zero() {
        return too_long();
    }
    tokio::time::timeout(timeout, listing)
        .await
        .unwrap_or_else(|_| too_long())
}

/// One contender in a lock's queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Participant {
    /// Full path of the node.
    pub node: String,
    /// The node's data (zklock writes its identity there; Curator its IP address).
    pub identity: String,
    /// The node's czxid: the fencing token its holder got.
    pub token: i64,
    /// Which library created it.
    pub library: Library,
    /// Mutex, read or write.
    pub kind: NodeKind,
    /// The ZooKeeper session that owns the node.
    pub session_id: i64,
    /// When the node was made (ZooKeeper's ctime: milliseconds since the Unix epoch, by the
    /// server's clock): since when its holder has held or waited.
    pub created_ms: i64,
    /// A semaphore's N, when known (asked of a semaphore value; ZooKeeper does not store it).
    pub max_leases: Option<u32>,
}

impl Participant {
    /// The election layout its node has (`None` for a read, write or lease node): what an
    /// election's `participants()` shows as the participant's family.
    pub fn election_style(&self) -> Option<ElectionStyle> {
        ElectionStyle::of(&protocol::Contender {
            name: String::new(),
            sequence: 0,
            kind: self.kind,
            library: self.library,
        })
    }
}

/// Sets the semaphore's N on its lease participants.
pub(super) fn with_max(mut queue: Vec<Participant>, max: Option<u32>) -> Vec<Participant> {
    for p in queue.iter_mut().filter(|p| p.kind == NodeKind::Lease) {
        p.max_leases = max;
    }
    queue
}

/// The lock nodes of `path` (holder first, then waiters in order), followed, when `path` is a
/// semaphore (it has a `leases` child: Curator's layout), by its lease nodes in order and the
/// waiters for its guard (`locks`), reported as kind `lease`: they wait for a lease.
pub(crate) async fn participants(client: &Connection, path: &str) -> Result<Vec<Participant>> {
    let session = client.session().await?;
    let children = crate::engine::nodes::list_children(&session, path, None, None).await?;
    participants_listed(&session, path, &children).await
}

/// [`participants`] of a path whose `children` were listed already (`scan`'s walk).
pub(crate) async fn participants_listed(
    session: &crate::sessions::session::Session,
    path: &str,
    children: &[String],
) -> Result<Vec<Participant>> {
    let mut out = participants_of(session, path, children, None).await?;
    if children
        .iter()
        .any(|c| c == crate::recipes::semaphore::LEASES)
    {
        for (dir, kind) in [
            (crate::recipes::semaphore::LEASES, None),
            (crate::recipes::semaphore::LOCKS, Some(NodeKind::Lease)),
        ] {
            let dir = format!("{path}/{dir}");
            let children = crate::engine::nodes::list_children(session, &dir, None, None).await?;
            out.extend(participants_of(session, &dir, &children, kind).await?);
        }
    }
    Ok(out)
}

/// The lock nodes among `children` of `path`, in queue order, read with one pipelined batch of
/// getData; `kind` overrides the kind read from their names.
async fn participants_of(
    session: &crate::sessions::session::Session,
    path: &str,
    children: &[String],
    kind: Option<NodeKind>,
) -> Result<Vec<Participant>> {
    let queue = protocol::queue_of(children, None);
    let zk = session.zk()?;
    let nodes: Vec<String> = queue.iter().map(|c| format!("{path}/{}", c.name)).collect();
    // Pipelined: every getData is sent before the first reply is awaited.
    let pending: Vec<_> = nodes.iter().map(|n| zk.get_data(n)).collect();
    let mut out = Vec::with_capacity(queue.len());
    for ((contender, node), reply) in queue.into_iter().zip(nodes).zip(pending) {
        if let Ok((data, stat)) = reply.await {
            out.push(Participant {
                identity: String::from_utf8_lossy(&data).into_owned(),
                node,
                token: stat.czxid,
                library: contender.library,
                kind: kind.unwrap_or(contender.kind),
                session_id: stat.ephemeral_owner,
                created_ms: stat.ctime,
                max_leases: None,
            });
        }
    }
    Ok(out)
}
