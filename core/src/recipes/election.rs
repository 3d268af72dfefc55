//! Leader election (issue 25): a leadership is a [`Lease`] of the first node in one of three
//! layouts, each its peer library's byte for byte ([`ElectionStyle`]), so it has what every
//! lease has: a fencing token, `held / suspended / lost` with the lost signal before ZooKeeper
//! can let anyone else lead (the session's lifeline), guarded writes, a maximum hold and
//! `valid_until`. The waiting is the lock engine's (one watch on the predecessor); what is
//! election's own is the layout, the participant id as the node's data, the refusal to lead
//! beside another layout (the engine's `refuse_foreign`), resigning with a requeue, proclaiming,
//! and watching the leader from outside ([`LeaderWatch`]).
//!
//! Curator's rules followed here (curator-recipes `leader/LeaderLatch.java`,
//! `leader/LeaderSelector.java`, 5.4): a latch is `_c_<uuid>-latch-<seq>`, leader when its node
//! sorts first by the text after `latch-` and the node's ephemeral owner is our session (the
//! engine only takes a node it created, or found by its protected prefix with our session as
//! owner: `nodes::find_own`); a selector is an `InterProcessMutex` whose node data is the
//! participant id. kazoo's `Election` (`kazoo/recipe/election.py`) is its `Lock` with the
//! identifier as the node's data.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex as AsyncMutex;
use tokio::time::Instant;
use zklock_wire::client as zk;

use crate::base::cancel::CancelToken;
use crate::base::error::{is_transient, Error, Result};
use crate::base::protocol::{self, ElectionStyle, NodeKind};
use crate::base::wait::Wait;
use crate::leases::acquire::Acquire;
use crate::leases::guarded::Write;
use crate::leases::lease::Lease;
use crate::ops::runtime::{self, in_runtime};
use crate::recipes::leadership::Leaderships;
use crate::recipes::mutex::Lock;
use crate::recipes::mutex_holds::Owner;
use crate::recipes::mutex_queue::{participants, Participant};
use crate::sessions::connection::Connection;

/// The longest participant id accepted (as the client's identity).
pub const MAX_ID_BYTES: usize = 1024;

/// One participant's side of an election on a path. Cheap to share by reference; a leadership
/// is the [`Lease`] that [`Election::lead`] returns.
pub struct Election {
    lock: Lock,
    style: ElectionStyle,
    id: String,
    /// What this object led: only these can it resign, and it leads once at a time.
    leaderships: Arc<Leaderships>,
}

impl std::fmt::Debug for Election {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Election")
            .field("path", &self.path())
            .field("style", &self.style)
            .field("id", &self.id)
            .finish()
    }
}

/// Checks a participant id: at most [`MAX_ID_BYTES`] bytes, no NUL (it is the node's data,
/// shown by every peer as a string).
pub(crate) fn validate_id(id: &str) -> Result<()> {
    if id.len() > MAX_ID_BYTES {
        return Err(Error::invalid(format!(
            "election id is {} bytes long (at most {MAX_ID_BYTES})",
            id.len()
        )));
    }
    if id.contains('\0') {
        return Err(Error::invalid(format!(
            "election id {} contains a NUL character",
            protocol::shown(id)
        )));
    }
    Ok(())
}

impl Election {
    /// `id` `None`: the client's identity (host/pid unless set).
    pub(crate) fn new(
        client: Arc<Connection>,
        path: &str,
        style: ElectionStyle,
        id: Option<&str>,
    ) -> Result<Election> {
        let id = match id {
            Some(id) => {
                validate_id(id)?;
                id.to_owned()
            }
            None => String::from_utf8_lossy(client.identity()).into_owned(),
        };
        let lock = Lock::new(client, path, style.kind())?.rebuilt(|inner| {
            inner.reentrant = false;
            inner.election = Some((style, id.clone().into_bytes()));
        });
        Ok(Election {
            lock,
            style,
            id,
            leaderships: Arc::default(),
        })
    }

    /// Every leadership of this value ends after `limit` (`None`: no limit): lost with the
    /// reason `max-hold` and its node deleted (see [`Lock::max_hold`]).
    pub fn max_hold(self, limit: Option<Duration>) -> Result<Election> {
        Ok(Election {
            lock: self.lock.max_hold(limit)?,
            ..self
        })
    }

    /// A successor's leadership starts `delay` after a leader's node vanished without a clean
    /// resign (see [`Lock::lock_delay`]).
    pub fn lock_delay(self, delay: Option<Duration>) -> Result<Election> {
        Ok(Election {
            lock: self.lock.lock_delay(delay)?,
            ..self
        })
    }

    /// [`Election::lock_delay`] in place, for a face that keeps the value behind a handle:
    /// refused (`InvalidArgument` for zero), it leaves the value as it was. Leaderships taken
    /// before keep what they had.
    pub fn set_lock_delay(&mut self, delay: Option<Duration>) -> Result<()> {
        self.lock.set_lock_delay(delay)
    }

    /// The delay [`Election::lock_delay`] set.
    pub fn lock_delay_limit(&self) -> Option<Duration> {
        self.lock.lock_delay_limit()
    }

    /// The limit [`Election::max_hold`] set.
    pub fn max_hold_limit(&self) -> Option<Duration> {
        self.lock.max_hold_limit()
    }

    /// The election's path.
    pub fn path(&self) -> &str {
        self.lock.path()
    }

    /// The layout of this participant's nodes.
    pub fn style(&self) -> ElectionStyle {
        self.style
    }

    /// This participant's id (its node's data).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Waits until this participant leads. `Conflict` when a node of another layout is on the
    /// path; our node is removed on every failure.
    pub async fn lead(&self) -> Result<Lease> {
        self.lead_with(Wait::Forever, None).await
    }

    /// Leads within `wait` (`Timeout` past it; `Wait::Try` is one attempt), unless `cancel`
    /// is cancelled first (`Cancelled`). `InvalidArgument` at once while this object leads
    /// already (a leadership neither resigned nor lost): a second node of ours would queue
    /// behind the first and wait for itself.
    pub fn lead_with(
        &self,
        wait: Wait,
        cancel: Option<CancelToken>,
    ) -> impl std::future::Future<Output = Result<Lease>> + Send + 'static {
        let refused = self.refuse_while_leading();
        let leaderships = self.leaderships.clone();
        let acquire = self.lock.acquire_as(Owner::SHARED, wait, cancel);
        async move {
            refused?;
            let lease = acquire.await?;
            leaderships.record(&lease);
            Ok(lease)
        }
    }

    /// Blocking twin of [`Election::lead_with`] (from a thread that is not the runtime's).
    pub fn blocking_lead_with(&self, wait: Wait, cancel: Option<CancelToken>) -> Result<Lease> {
        self.refuse_while_leading()?;
        let lease = self.lock.blocking_acquire_as(Owner::SHARED, wait, cancel)?;
        self.leaderships.record(&lease);
        Ok(lease)
    }

    /// Starts running for leader on the runtime: a handle to cancel, wait, await or be called
    /// back (see [`Acquire`]); it fails with `InvalidArgument` while this object leads.
    pub fn start_lead(&self, wait: Wait) -> Acquire {
        Acquire::start(|cancel, _| self.lead_with(wait, Some(cancel)))
    }

    /// The contract's rule for a second lead (docs/election.md): refused while this object
    /// holds a leadership, so the caller learns of it at once instead of waiting for itself.
    fn refuse_while_leading(&self) -> Result<()> {
        match self.leaderships.leading() {
            None => Ok(()),
            Some(node) => Err(Error::invalid(format!(
                "the election on {} already leads through {}: resign that leadership before \
                 leading again",
                protocol::shown(self.path()),
                protocol::shown(&node)
            ))),
        }
    }

    /// Gives the leadership up (its node is deleted, the next participant leads) and, with
    /// `requeue`, runs again at the tail of the queue: the handle of that new attempt.
    /// `InvalidArgument` for a lease that is not a leadership of this election's path; that
    /// lease is dropped, which releases it, so a face handing over a lease it was given checks
    /// it with [`Election::check_leadership`] first.
    pub async fn resign(&self, leadership: Lease, requeue: bool) -> Result<Option<Acquire>> {
        self.check_own(&leadership)?;
        leadership.release().await?;
        Ok(requeue.then(|| self.start_lead(Wait::Forever)))
    }

    /// Blocking twin of [`Election::resign`].
    pub fn blocking_resign(&self, leadership: Lease, requeue: bool) -> Result<Option<Acquire>> {
        self.check_own(&leadership)?;
        leadership.blocking_release()?;
        Ok(requeue.then(|| self.start_lead(Wait::Forever)))
    }

    /// Sets the leadership's node data to `data` (what participants and observers see as its
    /// id from then on), as a guarded write: applied only while the node is ours. `timeout`
    /// bounds it as it bounds a guarded write (`None`: no bound).
    pub async fn proclaim(
        &self,
        leadership: &Lease,
        data: Vec<u8>,
        timeout: Option<Duration>,
    ) -> Result<()> {
        let writes = self.proclamation(leadership, data)?;
        leadership
            .guarded()
            .write_timeout(writes, timeout)
            .await
            .map(drop)
    }

    /// Blocking twin of [`Election::proclaim`].
    pub fn blocking_proclaim(
        &self,
        leadership: &Lease,
        data: Vec<u8>,
        timeout: Option<Duration>,
    ) -> Result<()> {
        let writes = self.proclamation(leadership, data)?;
        leadership
            .guarded()
            .blocking_write_timeout(writes, timeout)
            .map(drop)
    }

    /// The guarded write [`Election::proclaim`] makes, for a face that writes through the
    /// lease's [`crate::Guarded`] handle (without holding the lease meanwhile).
    pub fn proclamation(&self, leadership: &Lease, data: Vec<u8>) -> Result<Vec<Write>> {
        self.check_own(leadership)?;
        Ok(vec![Write::set_data(leadership.path(), data)])
    }

    /// `InvalidArgument` unless `leadership` is a leadership this election object took (one
    /// node, directly under its path, led through this object and not another participant's
    /// on the same path): what [`Election::resign`] and [`Election::proclaim`] check.
    pub fn check_leadership(&self, leadership: &Lease) -> Result<()> {
        self.check_own(leadership)
    }

    fn check_own(&self, leadership: &Lease) -> Result<()> {
        let parent = leadership.path().rsplit_once('/').map(|(p, _)| p);
        if parent != Some(self.path()) || leadership.paths().len() != 1 {
            return Err(Error::invalid(format!(
                "the lease on {} is not a leadership of the election on {}",
                protocol::shown(leadership.path()),
                protocol::shown(self.path())
            )));
        }
        if !self.leaderships.took(leadership) {
            // The node's name in full (it is ours, at most a uuid and a sequence number long:
            // cut at 64 characters it lost the part that tells two participants apart), under
            // the election's path quoted as every input is.
            let node = leadership
                .path()
                .rsplit_once('/')
                .map_or(leadership.path(), |(_, n)| n);
            return Err(Error::invalid(format!(
                "the leadership node {node:?} of the election on {} was not taken through this \
                 election object (id {}): only the participant that leads can resign it",
                protocol::shown(self.path()),
                protocol::shown(&self.id)
            )));
        }
        Ok(())
    }

    /// Everyone running, in election order (the leader first), with their layout, id,
    /// session and token; nodes of other layouts are listed too (they make `lead` fail).
    pub async fn participants(&self) -> Result<Vec<Participant>> {
        self.lock.participants().await
    }

    /// Blocking twin of [`Election::participants`].
    pub fn blocking_participants(&self) -> Result<Vec<Participant>> {
        self.lock.blocking_participants()
    }

    /// The leader now: the first participant of this layout; `None` when nobody runs.
    pub async fn leader(&self) -> Result<Option<Participant>> {
        Ok(first_of(self.style, self.participants().await?))
    }

    /// Blocking twin of [`Election::leader`].
    pub fn blocking_leader(&self) -> Result<Option<Participant>> {
        Ok(first_of(self.style, self.blocking_participants()?))
    }
}

fn first_of(style: ElectionStyle, participants: Vec<Participant>) -> Option<Participant> {
    participants
        .into_iter()
        .find(|p| p.election_style() == Some(style))
}

/// A leader as an observer last reported it: its node and its data (the id, which a proclaim
/// changes).
type Seen = (String, String);

/// Watches who leads an election from outside it (etcd's `Observe`, which cannot report that
/// nobody leads; this can): [`LeaderWatch::next`] returns the leader now at its first call,
/// then each change, `None` meaning no leader. One children watch on the path (and an exists
/// watch while the path does not exist, and a data watch on the leader's node, which a proclaim
/// fires); it follows the client across reconnects and new
/// sessions, and looks again at least once a session timeout whatever the watch says.
#[derive(Clone)]
pub struct LeaderWatch {
    client: Arc<Connection>,
    path: String,
    /// The leader last reported (its node and its data, which a proclaim changes): `None`
    /// before the first report.
    last: Arc<AsyncMutex<Option<Option<Seen>>>>,
}

impl std::fmt::Debug for LeaderWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderWatch")
            .field("path", &self.path)
            .finish()
    }
}

impl LeaderWatch {
    pub(crate) fn new(client: Arc<Connection>, path: &str) -> Result<LeaderWatch> {
        protocol::validate_path(path)?;
        Ok(LeaderWatch {
            client,
            path: path.to_owned(),
            last: Arc::new(AsyncMutex::new(None)),
        })
    }

    /// The election's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The leader at the first call, then the next change within `wait` (`Timeout` when
    /// nothing changed by then; `Wait::Try` looks once). `None`: nobody leads.
    pub fn next(
        &self,
        wait: Wait,
    ) -> impl std::future::Future<Output = Result<Option<Participant>>> + Send + 'static {
        let watch = self.clone();
        in_runtime(async move {
            watch
                .next_change(wait.deadline().map(Instant::from_std))
                .await
        })
    }

    /// Blocking twin of [`LeaderWatch::next`].
    pub fn blocking_next(&self, wait: Wait) -> Result<Option<Participant>> {
        runtime::block_on(self.next(wait))
    }

    async fn next_change(&self, deadline: Option<Instant>) -> Result<Option<Participant>> {
        let mut last = self.last.lock().await;
        loop {
            let (leader, children, data) = self.look(deadline).await?;
            let seen = leader
                .as_ref()
                .map(|p| (p.node.clone(), p.identity.clone()));
            if last.as_ref() != Some(&seen) {
                *last = Some(seen);
                return Ok(leader);
            }
            let session = self.client.session_by(deadline).await?;
            let wake = session.timeout.max(Duration::from_millis(100));
            let until = deadline.map_or(Instant::now() + wake, |d| d.min(Instant::now() + wake));
            // A new first node (the children) or a proclaim (the leader's data), whichever
            // comes first (issue 33).
            let either = async move {
                match data {
                    Some(data) => {
                        tokio::select! {
                            _ = children.changed() => {}
                            _ = data.changed() => {}
                        }
                    }
                    None => {
                        children.changed().await;
                    }
                }
            };
            let _ = tokio::time::timeout_at(until, either).await;
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(Error::timeout(format!(
                    "the leader of {} did not change in time",
                    protocol::shown(&self.path)
                )));
            }
        }
    }

    /// The leader now (the first node of the queue, with its data), a watch on the children
    /// that fires when the first node may change, and one on the leader's data (a proclaim).
    async fn look(
        &self,
        deadline: Option<Instant>,
    ) -> Result<(
        Option<Participant>,
        zk::OneshotWatcher,
        Option<zk::OneshotWatcher>,
    )> {
        loop {
            let session = self.client.session_by(deadline).await?;
            let zk = session.zk()?;
            let listed = zk.list_and_watch_children(&self.path).await;
            let (children, watcher) = match listed {
                Ok(listed) => listed,
                Err(zk::Error::NoNode) => match zk.check_and_watch_stat(&self.path).await {
                    Ok((None, watcher)) => return Ok((None, watcher, None)),
                    Ok((Some(_), _)) => continue,
                    Err(e) if is_transient(&e) => {
                        session.recover(deadline, &self.path).await?;
                        continue;
                    }
                    Err(e) => return Err(Error::from_zk(e, &format!("watch {}", self.path))),
                },
                Err(e) if is_transient(&e) => {
                    session.recover(deadline, &self.path).await?;
                    continue;
                }
                Err(e) => return Err(Error::from_zk(e, &format!("list {}", self.path))),
            };
            let queue = protocol::queue_of(&children, None);
            let Some(first) = queue.into_iter().find(|c| c.kind.is_exclusive()) else {
                return Ok((None, watcher, None));
            };
            let node = format!("{}/{}", self.path, first.name);
            match zk.get_and_watch_data(&node).await {
                Ok((data, stat, data_watcher)) => {
                    let leader = Participant {
                        identity: String::from_utf8_lossy(&data).into_owned(),
                        node,
                        token: stat.czxid,
                        library: first.library,
                        kind: first.kind,
                        session_id: stat.ephemeral_owner,
                        created_ms: stat.ctime,
                        max_leases: None,
                    };
                    return Ok((Some(leader), watcher, Some(data_watcher)));
                }
                // Gone meanwhile: look again.
                Err(zk::Error::NoNode) => {}
                Err(e) if is_transient(&e) => session.recover(deadline, &self.path).await?,
                Err(e) => return Err(Error::from_zk(e, &format!("read {node}"))),
            }
        }
    }
}

/// Whether `token` is the fencing token of a current holder of the lock (or leader of the
/// election) on `path` (Chubby's `CheckSequencer`): the czxid of the first exclusive node of
/// its queue, or of a read node before the first exclusive one; for a semaphore, of a lease
/// node among the first `max_leases` when that is given, of any lease node when it is not.
pub(crate) async fn check(
    client: &Connection,
    path: &str,
    token: i64,
    max_leases: Option<u32>,
) -> Result<bool> {
    protocol::validate_path(path)?;
    let listed = participants(client, path).await?;
    let leases = format!("{path}/{}/", crate::recipes::semaphore::LEASES);
    let (lease_nodes, queue): (Vec<&Participant>, Vec<&Participant>) = listed
        .iter()
        .filter(|p| p.kind != NodeKind::Lease || p.node.starts_with(&leases))
        .partition(|p| p.node.starts_with(&leases));
    let mut holders = queue
        .iter()
        .take_while(|p| !p.kind.is_exclusive())
        .map(|p| p.token)
        .collect::<Vec<_>>();
    if holders.is_empty() {
        holders.extend(queue.first().map(|p| p.token));
    }
    let limit = max_leases.map_or(usize::MAX, |n| n as usize);
    holders.extend(lease_nodes.iter().take(limit).map(|p| p.token));
    Ok(holders.contains(&token))
}
