//! The locks from JS: [`NativeLock`] (a mutex, a side of a read/write lock, a semaphore or a
//! multi-lock) and the participants it lists. The client makes them; index.js wraps them.

use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::BigInt;
use napi_derive::napi;
use zklock::{ErrorKind, Owner, QueuePositions, Wait};

use crate::acquire::NativeAcquire;
use crate::error::{js_err, Code, Settled};
use crate::lease::NativeLease;

/// A caller's id as JS holds it (a whole number from `newOwner()`, exact below 2^53).
fn caller(owner: f64) -> Owner {
    Owner(owner as u64)
}

#[derive(Clone, Copy)]
pub(crate) enum Side {
    Read,
    Write,
}

pub(crate) enum Target {
    Lock(Arc<zklock::Lock>),
    Rw(Arc<zklock::RwLock>, Side),
    Multi(Arc<zklock::MultiLock>),
}

impl Target {
    fn lock(&self) -> Option<&zklock::Lock> {
        match self {
            Target::Lock(l) => Some(l),
            Target::Rw(rw, Side::Read) => Some(rw.read()),
            Target::Rw(rw, Side::Write) => Some(rw.write()),
            Target::Multi(_) => None,
        }
    }
}

/// A mutex, one side of a read/write lock, or a multi-lock, with its group's id.
#[napi]
pub struct NativeLock {
    pub(crate) client: zklock::Client,
    pub(crate) target: Target,
    pub(crate) path: String,
    /// The id of the lock object (both sides of a read/write lock share one): lib/lock.js keys
    /// a `using()` scope's owner by it, so a read taken inside a write's scope downgrades.
    pub(crate) owner: Owner,
    /// Where the acquires started through this object stand, for `position` (the core's rule).
    pub(crate) positions: QueuePositions,
}

/// One contender in a lock's queue.
#[napi(object)]
pub struct NativeParticipant {
    pub node: String,
    pub identity: String,
    pub token: BigInt,
    pub library: String,
    pub kind: String,
    pub session_id: BigInt,
    /// A semaphore's N on its lease participants, when known.
    pub max_leases: Option<u32>,
}

impl From<zklock::Participant> for NativeParticipant {
    fn from(p: zklock::Participant) -> Self {
        NativeParticipant {
            node: p.node,
            identity: p.identity,
            token: BigInt::from(p.token),
            library: p.library.as_str().to_owned(),
            kind: p.kind.as_str().to_owned(),
            session_id: BigInt::from(p.session_id),
            max_leases: p.max_leases,
        }
    }
}

#[napi]
impl NativeLock {
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.path.clone()
    }

    /// The id of this lock object's group (see `owner`), as lib/lock.js keys its scopes.
    #[napi(getter)]
    pub fn group(&self) -> f64 {
        self.owner.0 as f64
    }

    /// How many holds `owner` (a caller's id from `newOwner()`) has (0 when not held); always 0
    /// for a multi-lock.
    #[napi]
    pub fn hold_count_of(&self, owner: f64) -> u32 {
        let count = self
            .target
            .lock()
            .map_or(0, |l| l.hold_count_as(caller(owner)));
        u32::try_from(count).unwrap_or(u32::MAX)
    }

    /// How many contenders must leave before the first acquire waiting through this object
    /// can hold, as of its last look at the queue ([`QueuePositions::least`]); `null` when
    /// none is queued.
    #[napi(getter)]
    pub fn position(&self) -> Option<u32> {
        self.positions.least()
    }

    /// The lease of a re-entrant hold, taken here and now when `owner` (a caller's id) already
    /// holds the lock ([`zklock::Lock::reenter_as`]: no I/O, so no trip to the core's runtime
    /// and back to the JS thread); `null` when it does not (then `start_acquire`). `timeoutMs`
    /// is judged first, as `start_acquire` would.
    #[napi(catch_unwind)]
    pub fn try_reenter(
        &self,
        timeout_ms: Option<f64>,
        deadline_ms: Option<f64>,
        owner: f64,
    ) -> napi::Result<Option<NativeLease>, Code> {
        Wait::from_millis_or_deadline(timeout_ms, deadline_ms).map_err(js_err)?;
        Ok(self
            .target
            .lock()
            .and_then(|l| l.reenter_as(caller(owner)))
            .map(NativeLease::new))
    }

    /// Starts an acquire on the core's runtime (`timeoutMs` by the core's rule: absent, -1 or
    /// Infinity wait forever, 0 is one attempt; or a `deadline` in milliseconds since the epoch,
    /// one attempt once it passed). Awaited with `wait()`, aborted with `cancel()`.
    /// `owner` is the caller's id (`newOwner()`): lib/lock.js's rule (issue 50).
    #[napi(catch_unwind)]
    pub fn start_acquire(
        &self,
        timeout_ms: Option<f64>,
        deadline_ms: Option<f64>,
        owner: f64,
    ) -> napi::Result<NativeAcquire, Code> {
        let wait = Wait::from_millis_or_deadline(timeout_ms, deadline_ms).map_err(js_err)?;
        let acquire = match (&self.target, self.target.lock()) {
            (Target::Multi(m), _) => m.start_acquire(caller(owner), wait),
            (_, Some(l)) => l.start_acquire(caller(owner), wait),
            (_, None) => return Err(js_err(zklock::Error::new(ErrorKind::Internal, "no lock"))),
        };
        self.positions.track(&acquire.queue_position());
        Ok(NativeAcquire {
            acquire: Arc::new(Mutex::new(Some(acquire))),
        })
    }

    /// The queue: holder first, then waiters in order (for a multi-lock, each path's in turn).
    /// `timeoutMs` (by the acquire's rule) rejects with `ZKLOCK_TIMEOUT` when listing takes longer.
    #[napi]
    pub async fn participants(
        &self,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Settled<Vec<NativeParticipant>>> {
        let result = async {
            let timeout = Wait::from_millis(timeout_ms)?.time_left();
            let participants = match &self.target {
                Target::Multi(m) => {
                    // One deadline for all the member paths.
                    let deadline = timeout.map(|t| std::time::Instant::now() + t);
                    let mut all = Vec::new();
                    for p in m.paths() {
                        let left = deadline
                            .map(|d| d.saturating_duration_since(std::time::Instant::now()));
                        all.extend(self.client.mutex(p)?.participants_timeout(left).await?);
                    }
                    all
                }
                Target::Rw(rw, _) => rw.participants_timeout(timeout).await?,
                Target::Lock(l) => l.participants_timeout(timeout).await?,
            };
            Ok(participants
                .into_iter()
                .map(NativeParticipant::from)
                .collect())
        }
        .await;
        Ok(Settled(result))
    }
}
