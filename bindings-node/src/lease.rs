//! `NativeLease`: a held lock for `index.js`, its guarded writes and its keep-alive switch.
//! Once released it keeps the core's `Ended`: lost stays lost, with its reason.

use std::sync::Mutex;

use napi::bindgen_prelude::{BigInt, Function, JsValue, Object};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use napi_derive::napi;
use zklock::{ErrorKind, LeaseState, Wait};

use crate::counter::{NativeCount, NativeCounter};
use crate::queue::settle_from_core;

/// A held lock (`zklock::Lease`).
#[napi]
pub struct NativeLease {
    lease: Mutex<Option<zklock::Lease>>,
    token: i64,
    tokens: Vec<i64>,
    pub(crate) path: String,
    paths: Vec<String>,
    /// What it reads once released (the core's rule: lost stays lost, with its reason).
    /// Shared with the release's future, which takes its outcome in when it settles.
    ended: std::sync::Arc<Mutex<Option<zklock::Ended>>>,
    /// Its share in keeping the event loop alive while held (keepalive.rs).
    pub(crate) keep: std::sync::Arc<crate::keepalive::KeepAlive>,
}

impl NativeLease {
    pub(crate) fn new(lease: zklock::Lease) -> NativeLease {
        NativeLease {
            token: lease.token(),
            tokens: lease.tokens(),
            path: lease.path().to_owned(),
            paths: lease.paths(),
            lease: Mutex::new(Some(lease)),
            ended: std::sync::Arc::default(),
            keep: std::sync::Arc::default(),
        }
    }

    /// Takes the core's lease out to release it, keeping what it is to read afterwards.
    pub(crate) fn take_from(
        &self,
        slot: &mut std::sync::MutexGuard<'_, Option<zklock::Lease>>,
    ) -> Option<zklock::Lease> {
        let lease = slot.take()?;
        *self.ended.lock().unwrap_or_else(|e| e.into_inner()) = Some(lease.ended());
        Some(lease)
    }

    fn ended(&self) -> Option<zklock::Ended> {
        self.ended.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn lease(&self) -> std::sync::MutexGuard<'_, Option<zklock::Lease>> {
        self.lease.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Garbage collection never releases a lock: when the JS side lets go of a lease that is still
/// held (index.js warns), the handle is given up without releasing, and the lock stays held
/// until the client closes, the session ends or the process exits.
impl Drop for NativeLease {
    fn drop(&mut self) {
        if let Some(lease) = self.lease().take() {
            if matches!(lease.state(), LeaseState::Held | LeaseState::Suspended) {
                lease.detach();
            }
        }
    }
}

pub(crate) type StateCallback = ThreadsafeFunction<String, (), String, Status, false, true>;

#[napi]
impl NativeLease {
    /// The fencing token (the largest member's for a multi-lock).
    #[napi(getter)]
    pub fn token(&self) -> BigInt {
        BigInt::from(self.token)
    }

    /// Every member's token, in path order.
    #[napi(getter)]
    pub fn tokens(&self) -> Vec<BigInt> {
        self.tokens.iter().map(|t| BigInt::from(*t)).collect()
    }

    /// Full path of our lock node (the first member's for a multi-lock).
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.path.clone()
    }

    #[napi(getter)]
    pub fn paths(&self) -> Vec<String> {
        self.paths.clone()
    }

    /// Why the lease was lost, once it was.
    #[napi(getter)]
    pub fn lost_reason(&self) -> Option<String> {
        match self.lease().as_ref() {
            Some(lease) => lease.lost_reason(),
            None => self.ended()?.lost_reason().map(str::to_owned),
        }
    }

    /// The core's [`LeaseState`] name; once this handle was released, the state it ended in
    /// ([`zklock::Ended`]: `lost` stays `lost`, else `released`).
    #[napi(getter)]
    pub fn state(&self) -> &'static str {
        let now = self.lease().as_ref().map(|l| l.state());
        now.or_else(|| self.ended().map(|e| e.state()))
            .unwrap_or(LeaseState::Released)
            .as_str()
    }

    /// `callback(state)` on the JS thread with the current state, then at every change, `lost`
    /// once ([`zklock::Lease::subscribe`]). The callback does not keep the event loop alive and
    /// is let go by the core after a final state.
    #[napi(catch_unwind)]
    pub fn subscribe(&self, callback: StateCallback) {
        if let Some(lease) = self.lease().as_ref() {
            lease.subscribe(move |state| {
                callback.call(
                    state.as_str().to_owned(),
                    ThreadsafeFunctionCallMode::NonBlocking,
                );
            });
        }
    }

    /// Runs the writes with a check that the lease's node still exists, as one multi request
    /// ([`zklock::Guarded::write`]); rejects with `ZKLOCK_LOST` after loss (nothing applied).
    /// On a suspended lease the batch waits for the reconnect; `timeoutMs`
    /// bounds that wait and the answer by the acquire's rule (`ZKLOCK_TIMEOUT` before sending, `ZKLOCK_OUTCOME_UNKNOWN`
    /// after).
    #[napi(ts_return_type = "Promise<NativeWritten[]>")]
    pub fn guarded_write<'env>(
        &self,
        env: &'env Env,
        writes: Vec<NativeWrite>,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        let timeout = Wait::from_millis(timeout_ms).map(Wait::time_left);
        let guarded = self.lease().as_ref().map(zklock::Lease::guarded);
        let path = self.path.clone();
        let writes: zklock::Result<Vec<zklock::Write>> = writes
            .into_iter()
            .map(|w| zklock::Write::from_op(&w.op, &w.path, w.data.map(|d| d.to_vec())))
            .collect();
        settle_from_core(env, async move {
            let Some(guarded) = guarded else {
                return Err(zklock::Error::new(
                    ErrorKind::NotHeld,
                    format!("the lease on {path} was released; guarded writes need a held lease"),
                ));
            };
            let done = guarded.write_timeout(writes?, timeout?).await?;
            Ok(done
                .into_iter()
                .map(|w| NativeWritten {
                    op: w.op().to_owned(),
                    path: match &w {
                        zklock::Written::Created(p) => Some(p.clone()),
                        _ => None,
                    },
                    version: match w {
                        zklock::Written::Set { version } => Some(version),
                        _ => None,
                    },
                })
                .collect::<Vec<_>>())
        })
    }

    /// Adds `by` to `counter` only while this lease holds its lock
    /// ([`zklock::Guarded::increment`]); rejects with `ZKLOCK_LOST` after loss (nothing
    /// written).
    #[napi(ts_return_type = "Promise<NativeCount>")]
    pub fn guarded_increment<'env>(
        &self,
        env: &'env Env,
        counter: &NativeCounter,
        by: BigInt,
    ) -> napi::Result<Object<'env>> {
        let by = crate::counter::count_arg(&by, "by");
        let guarded = self.lease().as_ref().map(zklock::Lease::guarded);
        let (path, counter) = (self.path.clone(), counter.counter.clone());
        settle_from_core(env, async move {
            let Some(guarded) = guarded else {
                return Err(zklock::Error::new(
                    ErrorKind::NotHeld,
                    format!(
                        "the lease on {path} was released; a guarded increment needs a held lease"
                    ),
                ));
            };
            guarded
                .increment(&counter, by?)
                .await
                .map(NativeCount::from)
        })
    }

    /// Moves the end of the maximum hold to `by_ms` from now ([`zklock::Lease::extend`]): the
    /// new end in milliseconds on `Date.now()`'s clock.
    #[napi(catch_unwind)]
    pub fn extend(&self, by_ms: f64) -> napi::Result<f64, crate::error::Code> {
        let by = zklock::support::duration_from_millis_f64(by_ms, "byMs")
            .map_err(crate::error::js_err)?;
        match self.lease().as_ref() {
            Some(lease) => lease
                .extend(by)
                .map(epoch_ms_of)
                .map_err(crate::error::js_err),
            None => Err(crate::error::js_err(zklock::Error::new(
                ErrorKind::NotHeld,
                format!("the lease on {} was released: not extended", self.path),
            ))),
        }
    }

    /// `callback(msLeft)` (as a decimal string) once the maximum hold is `before_ms` from its
    /// end, again after each extension ([`zklock::Lease::on_expiring`]).
    #[napi(catch_unwind)]
    pub fn on_expiring(
        &self,
        before_ms: f64,
        callback: StateCallback,
    ) -> napi::Result<(), crate::error::Code> {
        let before = zklock::support::duration_from_millis_f64(before_ms, "beforeMs")
            .map_err(crate::error::js_err)?;
        if let Some(lease) = self.lease().as_ref() {
            lease.on_expiring(before, move |left| {
                callback.call(
                    left.as_millis().to_string(),
                    ThreadsafeFunctionCallMode::NonBlocking,
                );
            });
        }
        Ok(())
    }

    /// Until when no one else can hold this lease's lock ([`zklock::Lease::valid_until`]), in
    /// milliseconds on `Date.now()`'s clock, computed now; `null` once released or lost. A wall
    /// clock: a value kept is wrong by any step of that clock; `timeLeft()` cannot be misread.
    #[napi(catch_unwind)]
    pub fn valid_until(&self) -> Option<f64> {
        self.lease()
            .as_ref()
            .and_then(zklock::Lease::valid_until)
            .map(epoch_ms_of)
    }

    /// Milliseconds left until `validUntil()` ([`zklock::Lease::time_left`]), measured now on a
    /// clock that counts the time the machine was suspended (CLOCK_BOOTTIME on Linux): 0 once
    /// it passed, also after a suspend that outlasted it; `null` once released or lost.
    #[napi(catch_unwind)]
    pub fn time_left(&self) -> Option<f64> {
        self.lease()
            .as_ref()
            .and_then(zklock::Lease::time_left)
            .map(|left| left.as_secs_f64() * 1000.0)
    }

    /// Leaving a scoped hold (`using()`, `await using`) after this handle was released: the
    /// core's rule ([`zklock::Ended::leave_scope`]), `ZKLOCK_LOST` when it was lost before the
    /// release; nothing before a release.
    #[napi(catch_unwind)]
    pub fn leave_scope(&self, scope: String) -> napi::Result<(), crate::error::Code> {
        match self.ended() {
            Some(ended) => ended.leave_scope(&scope).map_err(crate::error::js_err),
            None => Ok(()),
        }
    }

    /// True once someone asked the holder to let go (`__REVOKE__` on its node).
    #[napi(getter)]
    pub fn revoke_requested(&self) -> bool {
        self.lease()
            .as_ref()
            .is_some_and(|l| l.is_revoke_requested())
    }

    /// `callback('revoke-requested')` once on the JS thread when a revocation is requested
    /// while the lease is held ([`zklock::Lease::on_revoke`]); never after it ended. The
    /// callback does not keep the event loop alive.
    #[napi(catch_unwind)]
    pub fn on_revoke(&self, callback: StateCallback) {
        if let Some(lease) = self.lease().as_ref() {
            lease.on_revoke(move || {
                callback.call(
                    "revoke-requested".to_owned(),
                    ThreadsafeFunctionCallMode::NonBlocking,
                );
            });
        }
    }

    /// Releases here and now when this only counts a re-entrant hold down
    /// ([`zklock::Lease::release_counted`]): `still-held`, without a trip to the core's runtime
    /// and back; `null` otherwise (the lease stays, for `release`).
    #[napi(catch_unwind)]
    pub fn release_counted(&self, env: Env) -> Option<&'static str> {
        let mut slot = self.lease();
        match self.take_from(&mut slot)?.release_counted() {
            Ok(released) => {
                self.keep.end(env.raw());
                Some(released.as_str())
            }
            Err(lease) => {
                *slot = Some(lease);
                None
            }
        }
    }

    /// Releases the lease: the core's [`zklock::Released`] name (`released`, `still-held`,
    /// `was-lost`). A second release rejects with `ZKLOCK_NOT_HELD`.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn release<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let lease = self.take_from(&mut self.lease());
        self.keep.end(env.raw());
        let path = self.path.clone();
        let ended = self.ended.clone();
        settle_from_core(env, async move {
            match lease {
                None => Err(zklock::Error::new(
                    ErrorKind::NotHeld,
                    format!("the lease on {path} was already released"),
                )),
                Some(lease) => {
                    let outcome = lease.release().await?;
                    if let Some(ended) = ended.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
                        ended.released(outcome);
                    }
                    Ok(outcome.as_str().to_owned())
                }
            }
        })
    }
}

/// One guarded write from JS: `op` is the core's name (`create`, `set_data`, `delete`).
#[napi(object)]
pub struct NativeWrite {
    pub op: String,
    pub path: String,
    pub data: Option<napi::bindgen_prelude::Buffer>,
}

/// What one guarded write did: `op`, and the created `path` or the new data `version`.
#[napi(object)]
pub struct NativeWritten {
    pub op: String,
    pub path: Option<String>,
    pub version: Option<i32>,
}

/// An [`std::time::Instant`] on `Date.now()`'s clock: milliseconds since the Unix epoch.
fn epoch_ms_of(instant: std::time::Instant) -> f64 {
    let now = std::time::Instant::now();
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3);
    if instant >= now {
        wall + (instant - now).as_secs_f64() * 1e3
    } else {
        wall - (now - instant).as_secs_f64() * 1e3
    }
}

#[napi]
impl NativeLease {
    /// `true`: the lease keeps the event loop alive until released or lost (the default, set
    /// by index.js when it wraps the lease, with `onLost` to run first when the core reports a
    /// loss); `false`: it does not (`lease.unref()`).
    #[napi(catch_unwind)]
    pub fn keep_alive(
        &self,
        env: Env,
        on: bool,
        on_lost: Option<Function<'_, (), ()>>,
    ) -> napi::Result<()> {
        if on {
            let on_lost = on_lost.map(|f| f.value().value);
            let lease = self.lease();
            self.keep.keep(env.raw(), lease.as_ref(), on_lost)
        } else {
            self.keep.uncount(env.raw());
            Ok(())
        }
    }

    /// Whether the lease keeps the event loop alive now (`lease.hasRef()`).
    #[napi(getter)]
    pub fn kept_alive(&self) -> bool {
        self.keep.counted()
    }
}
