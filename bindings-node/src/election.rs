//! Elections from JS: [`NativeElection`] (one participant's side; a leadership is a
//! [`NativeLease`]) and [`NativeLeaderWatch`] (who leads, seen from outside).

use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{BigInt, Object};
use napi::Env;
use napi_derive::napi;
use zklock::{ErrorKind, Wait};

use crate::acquire::NativeAcquire;
use crate::error::{internal, js_err, Code};
use crate::lease::NativeLease;
use crate::queue::settle_from_core;

// ---------------------------------------------------------------------------------------------
// Elections

/// One participant's side of an election ([`zklock::Election`]); a leadership is a
/// [`NativeLease`].
#[napi]
pub struct NativeElection {
    pub(crate) inner: Arc<zklock::Election>,
}

/// One participant of an election, or the leader an observer reports.
#[napi(object)]
pub struct NativeElectionParticipant {
    pub node: String,
    /// The participant id (the node's data).
    pub id: String,
    pub token: BigInt,
    pub library: String,
    pub kind: String,
    pub session_id: BigInt,
    /// The participant's family ([`zklock::Participant::election_style`]); `None` for a node
    /// of no election layout.
    pub style: Option<String>,
}

impl From<zklock::Participant> for NativeElectionParticipant {
    fn from(p: zklock::Participant) -> Self {
        NativeElectionParticipant {
            style: p.election_style().map(|s| s.as_str().to_owned()),
            node: p.node,
            id: p.identity,
            token: BigInt::from(p.token),
            library: p.library.as_str().to_owned(),
            kind: p.kind.as_str().to_owned(),
            session_id: BigInt::from(p.session_id),
        }
    }
}

/// A path shown in a message: at most 100 characters of it.
fn shown(path: &str) -> String {
    if path.chars().count() <= 100 {
        return format!("{path:?}");
    }
    let head: String = path.chars().take(97).collect();
    format!("{head:?}... ({} bytes)", path.len())
}

impl NativeElection {
    /// The core's [`zklock::Election::resign`] takes the lease by value and drops a lease it
    /// refuses, which would release it: the core's rule
    /// ([`zklock::Election::check_leadership`]) is asked first, and a refused lease is kept.
    fn own(&self, lease: &zklock::Lease) -> zklock::Result<()> {
        self.inner.check_leadership(lease)
    }
}

#[napi]
impl NativeElection {
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.inner.path().to_owned()
    }

    /// The core's [`zklock::ElectionStyle`] name.
    #[napi(getter)]
    pub fn style(&self) -> &'static str {
        self.inner.style().as_str()
    }

    #[napi(getter)]
    pub fn id(&self) -> String {
        self.inner.id().to_owned()
    }

    /// The maximum hold of a leadership in milliseconds, when set.
    #[napi(getter)]
    pub fn max_hold_ms(&self) -> Option<f64> {
        self.inner
            .max_hold_limit()
            .map(|d| d.as_micros() as f64 / 1e3)
    }

    /// Starts running for leader on the core's runtime (`timeoutMs` / `deadline` by the
    /// acquire's rule); awaited with `wait()`, aborted with `cancel()` (its node removed).
    #[napi(catch_unwind)]
    pub fn start_lead(
        &self,
        timeout_ms: Option<f64>,
        deadline_ms: Option<f64>,
    ) -> napi::Result<NativeAcquire, Code> {
        let wait = Wait::from_millis_or_deadline(timeout_ms, deadline_ms).map_err(js_err)?;
        Ok(NativeAcquire {
            acquire: Arc::new(Mutex::new(Some(self.inner.start_lead(wait)))),
        })
    }

    /// Gives the leadership up ([`zklock::Election::resign`]); with `requeue`, resolves with
    /// the acquire of the new attempt at the tail, else with `null`. A leadership released
    /// already rejects with `ZKLOCK_NOT_HELD`.
    #[napi(ts_return_type = "Promise<NativeAcquire | null>")]
    pub fn resign<'env>(
        &self,
        env: &'env Env,
        leadership: &NativeLease,
        requeue: bool,
    ) -> napi::Result<Object<'env>, Code> {
        let taken = {
            let mut slot = leadership.lease();
            match slot.as_ref() {
                None => Err(zklock::Error::new(
                    ErrorKind::NotHeld,
                    format!(
                        "the leadership on {} was already released",
                        shown(&leadership.path)
                    ),
                )),
                Some(l) => self
                    .own(l)
                    .map(|()| leadership.take_from(&mut slot).expect("checked above")),
            }
        }
        .map_err(js_err)?;
        leadership.keep.end(env.raw());
        let election = self.inner.clone();
        settle_from_core(env, async move {
            let again = election.resign(taken, requeue).await?;
            Ok(again.map(|a| NativeAcquire {
                acquire: Arc::new(Mutex::new(Some(a))),
            }))
        })
        .map_err(internal)
    }

    /// Sets the leadership's node data ([`zklock::Election::proclaim`]): a guarded write,
    /// applied only while the node is ours (`ZKLOCK_LOST` after loss).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn proclaim<'env>(
        &self,
        env: &'env Env,
        leadership: &NativeLease,
        data: napi::bindgen_prelude::Buffer,
    ) -> napi::Result<Object<'env>, Code> {
        // The core's proclaim borrows the lease for its whole future, which cannot outlive
        // this call; its write (the core's `proclamation`) goes through the lease's guard.
        let data = data.to_vec();
        let (guarded, writes) = {
            let slot = leadership.lease();
            match slot.as_ref() {
                None => Err(zklock::Error::new(
                    ErrorKind::NotHeld,
                    format!("the leadership on {} was released", shown(&leadership.path)),
                )),
                Some(l) => self
                    .inner
                    .proclamation(l, data)
                    .map(|writes| (l.guarded(), writes)),
            }
        }
        .map_err(js_err)?;
        settle_from_core(env, async move { guarded.write(writes).await.map(drop) })
            .map_err(internal)
    }

    /// Everyone running, in election order (the leader first).
    #[napi(ts_return_type = "Promise<NativeElectionParticipant[]>")]
    pub fn participants<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let election = self.inner.clone();
        settle_from_core(env, async move {
            Ok(election
                .participants()
                .await?
                .into_iter()
                .map(NativeElectionParticipant::from)
                .collect::<Vec<_>>())
        })
    }

    /// The leader now, `null` when nobody leads.
    #[napi(ts_return_type = "Promise<NativeElectionParticipant | null>")]
    pub fn leader<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let election = self.inner.clone();
        settle_from_core(env, async move {
            Ok(election
                .leader()
                .await?
                .map(NativeElectionParticipant::from))
        })
    }
}

/// An observer of an election's leader ([`zklock::LeaderWatch`]).
#[napi]
pub struct NativeLeaderWatch {
    pub(crate) watch: zklock::LeaderWatch,
    /// Set by `stop()`: a pending `next()` resolves as stopped.
    pub(crate) stop: tokio::sync::watch::Sender<bool>,
}

/// What one `next()` found: the leader (`null`: nobody leads), or that the watch was stopped.
#[napi(object)]
pub struct NativeLeaderReport {
    pub stopped: bool,
    pub leader: Option<NativeElectionParticipant>,
}

#[napi]
impl NativeLeaderWatch {
    /// The leader at the first call, then the next change ([`zklock::LeaderWatch::next`]),
    /// within `timeoutMs` by the acquire's rule (`ZKLOCK_TIMEOUT` when nothing changed).
    #[napi(ts_return_type = "Promise<NativeLeaderReport>")]
    pub fn next<'env>(
        &self,
        env: &'env Env,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        let wait = Wait::from_millis(timeout_ms);
        let watch = self.watch.clone();
        let mut stopped = self.stop.subscribe();
        settle_from_core(env, async move {
            let wait = wait?;
            let report = |leader: Option<zklock::Participant>| NativeLeaderReport {
                stopped: false,
                leader: leader.map(NativeElectionParticipant::from),
            };
            if *stopped.borrow_and_update() {
                return Ok(NativeLeaderReport {
                    stopped: true,
                    leader: None,
                });
            }
            tokio::select! {
                next = watch.next(wait) => next.map(report),
                _ = stopped.changed() => Ok(NativeLeaderReport { stopped: true, leader: None }),
            }
        })
    }

    /// Stops the watch: a pending `next()` resolves as stopped, and so does every later one.
    #[napi(catch_unwind)]
    pub fn stop(&self) {
        self.stop.send_replace(true);
    }
}
