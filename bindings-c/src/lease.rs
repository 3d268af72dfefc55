//! `zklock_lease`: a held lock (token, node path, state, state callback, release).

use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::{Arc, Mutex, OnceLock};

use zklock::LeaseState;

use crate::error::{guard, guard_value, zklock_status, Failure};
use crate::gate::CallGate;
use crate::handles::{self, Kind};
use crate::UserPtr;

/// Where a lease stands. `ZKLOCK_LEASE_LOST` is final and reported once.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum zklock_lease_state {
    /// We hold the lock.
    ZKLOCK_LEASE_HELD = 0,
    /// Disconnected from the ensemble: we cannot know whether we still hold it.
    ZKLOCK_LEASE_SUSPENDED = 1,
    /// Session expired, our node deleted, the client closed, or no server contact for the
    /// session timeout. Final.
    ZKLOCK_LEASE_LOST = 2,
    /// Released by its holder. Not seen through this API in practice: `zklock_lease_release`
    /// frees the lease, and no state callback comes after it.
    ZKLOCK_LEASE_RELEASED = 3,
}

impl From<LeaseState> for zklock_lease_state {
    fn from(s: LeaseState) -> Self {
        match s {
            LeaseState::Held => zklock_lease_state::ZKLOCK_LEASE_HELD,
            LeaseState::Suspended => zklock_lease_state::ZKLOCK_LEASE_SUSPENDED,
            LeaseState::Lost => zklock_lease_state::ZKLOCK_LEASE_LOST,
            LeaseState::Released => zklock_lease_state::ZKLOCK_LEASE_RELEASED,
        }
    }
}

/// Called on the client's callback thread with a lease's current state, then at each change of
/// it (suspended, held again, lost). It may call any zklock function, including `zklock_lease_release(lease)`; after
/// that release it is not called again.
pub type zklock_state_cb = Option<
    unsafe extern "C" fn(user: *mut c_void, lease: *mut zklock_lease, state: zklock_lease_state),
>;

/// Called once on the client's callback thread when someone asks the holder of `lease` to let
/// go (its node's data set to `__REVOKE__`). It may call any zklock function, including
/// `zklock_lease_release(lease)`.
pub type zklock_revoke_cb =
    Option<unsafe extern "C" fn(user: *mut c_void, lease: *mut zklock_lease)>;

/// Called on the client's callback thread with the milliseconds left once a lease's maximum
/// hold is near its end (`zklock_lease_on_expiring`). It may call any zklock function,
/// including `zklock_lease_extend(lease, ...)` and `zklock_lease_release(lease)`.
pub type zklock_expiring_cb =
    Option<unsafe extern "C" fn(user: *mut c_void, lease: *mut zklock_lease, ms_left: i64)>;

/// A held lock. Opaque; give it back with `zklock_lease_release`, which also frees it.
pub struct zklock_lease {
    lease: Mutex<Option<zklock::Lease>>,
    token: i64,
    path: CString,
    watcher: Slot<StateCb>,
    /// The revocation callback (`zklock_lease_on_revoke`), gated like the state callback.
    revoke_watcher: Slot<RevokeCb>,
    /// The expiring warning's callback (`zklock_lease_on_expiring`), gated the same way.
    expiring_watcher: Slot<ExpiringCb>,
    /// The client's callback thread, where the state callback runs.
    callbacks: zklock::CallbackQueue,
    /// Why the lease was lost, kept once read (`zklock_lease_lost_reason` hands out a pointer
    /// valid until the release).
    lost_reason: OnceLock<CString>,
}

type StateCb = unsafe extern "C" fn(*mut c_void, *mut zklock_lease, zklock_lease_state);
type RevokeCb = unsafe extern "C" fn(*mut c_void, *mut zklock_lease);
type ExpiringCb = unsafe extern "C" fn(*mut c_void, *mut zklock_lease, i64);

/// Where a lease keeps one kind of registered callback (state or revocation).
type Slot<Cb> = Mutex<Option<Arc<Watcher<Cb>>>>;

/// One registered C callback. It runs with no lock held (it may release the lease, and so
/// deactivate us); `release` (from another thread) waits for a running call to end before the
/// lease memory goes away, and no call starts after a release or a replacement (what to
/// report, and when, is the core's).
struct Watcher<Cb> {
    cb: Cb,
    user: UserPtr,
    lease: UserPtr,
    gate: CallGate,
}

impl Watcher<StateCb> {
    fn fire(&self, state: LeaseState) {
        self.gate
            .call(|| unsafe { (self.cb)(self.user.0, self.lease.0.cast(), state.into()) });
    }
}

impl Watcher<ExpiringCb> {
    fn fire(&self, left: std::time::Duration) {
        let ms = i64::try_from(left.as_millis()).unwrap_or(i64::MAX);
        self.gate
            .call(|| unsafe { (self.cb)(self.user.0, self.lease.0.cast(), ms) });
    }
}

impl Watcher<RevokeCb> {
    fn fire(&self) {
        self.gate
            .call(|| unsafe { (self.cb)(self.user.0, self.lease.0.cast()) });
    }
}

/// Empties `slot`; the callback that was there (if any) never runs again once this returns.
fn stop<Cb>(slot: &Slot<Cb>) {
    let old = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(old) = old {
        old.gate.deactivate();
    }
}

impl zklock_lease {
    /// A handle for guarded writes, while the lease is not released.
    pub(crate) fn guarded(&self) -> Option<zklock::Guarded> {
        self.lease
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(zklock::Lease::guarded)
    }
}

impl zklock_lease {
    pub(crate) fn boxed(
        lease: zklock::Lease,
        callbacks: zklock::CallbackQueue,
    ) -> *mut zklock_lease {
        let path = CString::new(lease.path().replace('\0', "")).unwrap_or_default();
        let handle = Box::into_raw(Box::new(zklock_lease {
            token: lease.token(),
            path,
            lease: Mutex::new(Some(lease)),
            watcher: Mutex::new(None),
            revoke_watcher: Mutex::new(None),
            expiring_watcher: Mutex::new(None),
            callbacks,
            lost_reason: OnceLock::new(),
        }));
        handles::register(handle, Kind::Lease)
    }

    /// Runs `f` on the core's lease (`None` once released); the lease's lock is held meanwhile.
    pub(crate) fn with_core<T>(&self, f: impl FnOnce(&zklock::Lease) -> T) -> Option<T> {
        self.lease
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(f)
    }

    /// The path of the lease's node.
    pub(crate) fn path_str(&self) -> String {
        self.path.to_string_lossy().into_owned()
    }

    /// Takes a live lease handle apart for a release (or a resign): unregisters and frees it,
    /// stops its callbacks, and returns the core's lease (`None` when it was released already)
    /// with its node's path.
    pub(crate) unsafe fn take(
        lease: *mut zklock_lease,
    ) -> Result<(Option<zklock::Lease>, String), Failure> {
        handles::unregister(lease, Kind::Lease, "lease")?;
        let lease = Box::from_raw(lease);
        stop(&lease.watcher);
        stop(&lease.revoke_watcher);
        stop(&lease.expiring_watcher);
        let core = lease.lease.lock().unwrap_or_else(|e| e.into_inner()).take();
        Ok((core, lease.path_str()))
    }

    fn state(&self) -> LeaseState {
        match &*self.lease.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(lease) => lease.state(),
            None => LeaseState::Released,
        }
    }

    /// What `zklock_lease_on_state` and `zklock_lease_on_revoke` share: the callback in
    /// `slot` is replaced by `cb` (removed when NULL), and `subscribe` tells the core to call
    /// the new one on the client's callback thread. `handle` is this lease's C handle, passed
    /// back to the callback.
    fn replace_callback<Cb: Send + Sync + 'static>(
        &self,
        handle: *mut zklock_lease,
        slot: &Slot<Cb>,
        cb: Option<Cb>,
        user: *mut c_void,
        subscribe: impl FnOnce(&zklock::Lease, zklock::CallbackQueue, Arc<Watcher<Cb>>),
    ) -> Result<(), Failure> {
        stop(slot);
        let Some(cb) = cb else { return Ok(()) };
        let watcher = Arc::new(Watcher {
            cb,
            user: UserPtr(user),
            lease: UserPtr(handle.cast()),
            gate: CallGate::new(),
        });
        let core = self.lease.lock().unwrap_or_else(|e| e.into_inner());
        let core = core.as_ref().ok_or_else(|| {
            Failure::new(zklock_status::ZKLOCK_NOT_HELD, "the lease was released")
        })?;
        subscribe(core, self.callbacks.clone(), watcher.clone());
        *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(watcher);
        Ok(())
    }
}

/// The core's name of a lease state: "held", "suspended", "lost" or "released" (a static
/// string, the same in every zklock face); "unknown" for a value that is no `zklock_lease_state`.
#[no_mangle]
pub extern "C" fn zklock_lease_state_str(state: c_int) -> *const c_char {
    static NAMES: OnceLock<Vec<CString>> = OnceLock::new();
    guard_value(c"unknown".as_ptr(), || {
        let names = NAMES.get_or_init(|| {
            let name = |s: &LeaseState| CString::new(s.as_str()).unwrap_or_default();
            LeaseState::ALL.iter().map(name).collect()
        });
        Ok(LeaseState::ALL
            .iter()
            .position(|s| zklock_lease_state::from(*s) as c_int == state)
            .map_or(c"unknown".as_ptr(), |i| names[i].as_ptr()))
    })
}

/// The fencing token: the czxid of our lock node, strictly increasing from one holder of a lock
/// to the next (for a multi-lock the largest of its members'). -1 when `lease` is NULL or not a live lease.
#[no_mangle]
pub unsafe extern "C" fn zklock_lease_token(lease: *const zklock_lease) -> i64 {
    guard_value(-1, || {
        let lease = handles::get(lease, Kind::Lease, "lease")?;
        Ok(lease.token)
    })
}

/// The full path of our lock node (the first member's for a multi-lock); valid until the lease
/// is released. NULL when `lease` is NULL or not a live lease.
#[no_mangle]
pub unsafe extern "C" fn zklock_lease_path(lease: *const zklock_lease) -> *const c_char {
    guard_value(std::ptr::null(), || {
        let lease = handles::get(lease, Kind::Lease, "lease")?;
        Ok(lease.path.as_ptr())
    })
}

/// The lease's current state. `ZKLOCK_LEASE_LOST` when `lease` is NULL or not a live lease
/// (with the last error set).
#[no_mangle]
pub unsafe extern "C" fn zklock_lease_state_get(lease: *const zklock_lease) -> zklock_lease_state {
    guard_value(zklock_lease_state::ZKLOCK_LEASE_LOST, || {
        let lease = handles::get(lease, Kind::Lease, "lease")?;
        Ok(lease.state().into())
    })
}

/// Calls `cb(user, lease, state)` on the client's callback thread with the lease's current
/// state first, then at every change of it; LOST is reported exactly once, and nothing comes
/// after it. A later call replaces the callback; `cb` NULL removes it. The callback may call any
/// zklock function, `zklock_lease_release(lease)` included.
#[no_mangle]
pub unsafe extern "C" fn zklock_lease_on_state(
    lease: *mut zklock_lease,
    cb: zklock_state_cb,
    user: *mut c_void,
) -> zklock_status {
    guard(|| {
        let this = handles::get(lease, Kind::Lease, "lease")?;
        this.replace_callback(lease, &this.watcher, cb, user, |core, queue, w| {
            core.subscribe_in(queue, move |state| w.fire(state))
        })
    })
}

/// Calls `cb(user, lease)` once on the client's callback thread when someone asks the holder to
/// let go: the data of the lease's node is set to `__REVOKE__` (`zklock_revoke`, `zklock
/// revoke`, or Curator's `Revoker.attemptRevoke`), also when that happened before this call.
/// Opt-in, as Curator's `makeRevocable`: nothing is reported without a callback. Only a request:
/// the lease stays held until released. Not called once the lease is released or lost. A later
/// call replaces the callback; `cb` NULL removes it. The callback may call any zklock function,
/// `zklock_lease_release(lease)` included.
#[no_mangle]
pub unsafe extern "C" fn zklock_lease_on_revoke(
    lease: *mut zklock_lease,
    cb: zklock_revoke_cb,
    user: *mut c_void,
) -> zklock_status {
    guard(|| {
        let this = handles::get(lease, Kind::Lease, "lease")?;
        this.replace_callback(lease, &this.revoke_watcher, cb, user, |core, queue, w| {
            core.on_revoke_in(queue, move || w.fire())
        })
    })
}

/// Moves the end of `lease`'s maximum hold to `by_ms` milliseconds from now (never earlier),
/// same token. `ZKLOCK_LOST` after a loss; `ZKLOCK_INVALID_ARGUMENT` for a lease without a
/// maximum hold, a negative `by_ms`, or an end past the lock's hold ceiling
/// (`zklock_lock_set_hold_ceiling`): nothing moves then. `zklock_lease_valid_for_ms` follows.
#[no_mangle]
pub unsafe extern "C" fn zklock_lease_extend(
    lease: *const zklock_lease,
    by_ms: i64,
) -> zklock_status {
    guard(|| {
        let lease = handles::get(lease, Kind::Lease, "lease")?;
        let by = zklock::support::duration_from_millis_i64(by_ms, "by_ms")?;
        let core = lease.lease.lock().unwrap_or_else(|e| e.into_inner());
        let core = core.as_ref().ok_or_else(|| {
            Failure::new(zklock_status::ZKLOCK_NOT_HELD, "the lease was released")
        })?;
        core.extend(by)?;
        Ok(())
    })
}

/// Calls `cb(user, lease, ms_left)` on the client's callback thread once `lease`'s maximum hold
/// is `before_ms` from its end (at once when less is left), and again before each new end after
/// `zklock_lease_extend`. Never for a lease without a maximum hold, nor once it is released or
/// lost. A later call replaces the callback; `cb` NULL removes it.
#[no_mangle]
pub unsafe extern "C" fn zklock_lease_on_expiring(
    lease: *mut zklock_lease,
    before_ms: i64,
    cb: zklock_expiring_cb,
    user: *mut c_void,
) -> zklock_status {
    guard(|| {
        let this = handles::get(lease, Kind::Lease, "lease")?;
        let before = zklock::support::duration_from_millis_i64(before_ms, "before_ms")?;
        this.replace_callback(lease, &this.expiring_watcher, cb, user, |core, queue, w| {
            core.on_expiring_in(queue, before, move |left| w.fire(left))
        })
    })
}

/// True once someone asked the holder of `lease` to let go (see `zklock_lease_on_revoke`); the
/// request is noticed by a watch set shortly after the lease was granted. false when `lease` is
/// NULL or not a live lease (with the last error set).
#[no_mangle]
pub unsafe extern "C" fn zklock_lease_revoke_requested(lease: *const zklock_lease) -> bool {
    guard_value(false, || {
        let lease = handles::get(lease, Kind::Lease, "lease")?;
        let core = lease.lease.lock().unwrap_or_else(|e| e.into_inner());
        Ok(core.as_ref().is_some_and(|l| l.is_revoke_requested()))
    })
}

/// Releases the lease and frees it, whatever the outcome: the node is deleted (members in
/// reverse order for a multi-lock) or a re-entrant hold count goes down. Returns `ZKLOCK_OK`,
/// or `ZKLOCK_LOST` when the lease had been lost (there was nothing left to delete), or another
/// error when the node could not be deleted (the session's end removes it). Blocks until done;
/// may be called from any thread, including from the lease's own state callback. Called from
/// another thread while that callback runs, it first waits for the callback to return.
/// Releasing the same lease twice is a caller's bug that the library detects in the common
/// case: the second call returns `ZKLOCK_INVALID_ARGUMENT` and touches nothing (see the note on
/// handles at the top of zklock.h).
#[no_mangle]
pub unsafe extern "C" fn zklock_lease_release(lease: *mut zklock_lease) -> zklock_status {
    guard(|| {
        let (core, path) = zklock_lease::take(lease)?;
        let Some(core) = core else { return Ok(()) };
        match core.blocking_release()? {
            zklock::Released::Released | zklock::Released::StillHeld => Ok(()),
            zklock::Released::WasLost => Err(Failure::new(
                zklock_status::ZKLOCK_LOST,
                format!("the lease on {path} had been lost before it was released"),
            )),
        }
    })
}

/// Why the lease was lost (its reason contains "max-hold" when `zklock_lock_set_max_hold`'s
/// limit ended it; else the session expired, the node was deleted, the client closed, no
/// server contact for the session timeout), or NULL while it is not lost (and when `lease` is
/// NULL or not a live lease, with the last error set). Valid until the lease is released.
#[no_mangle]
pub unsafe extern "C" fn zklock_lease_lost_reason(lease: *const zklock_lease) -> *const c_char {
    guard_value(std::ptr::null(), || {
        let lease = handles::get(lease, Kind::Lease, "lease")?;
        if let Some(reason) = lease.lost_reason.get() {
            return Ok(reason.as_ptr());
        }
        let reason = {
            let core = lease.lease.lock().unwrap_or_else(|e| e.into_inner());
            core.as_ref().and_then(zklock::Lease::lost_reason)
        };
        Ok(reason.map_or(std::ptr::null(), |r| {
            let c = CString::new(r.replace('\0', " ")).unwrap_or_default();
            lease.lost_reason.get_or_init(|| c).as_ptr()
        }))
    })
}

/// Writes into `*out_ms` how many whole milliseconds remain until the lease's `valid_until`
/// (Chubby's local lease: until then no one else can hold the lock, given a clock-rate drift
/// within the core's margin); it moves forward with every answered heartbeat, and stays put
/// while the connection is suspended. Measured at the call on a clock that counts the time the
/// machine was suspended (CLOCK_BOOTTIME on Linux; docs/contract.md, "The clock"): after a
/// machine's suspend it is 0 or `ZKLOCK_LOST`, never the time left before it. `ZKLOCK_LOST`
/// (the reason in `zklock_last_error()`) once the lease is lost, `ZKLOCK_NOT_HELD` when there is
/// no such instant (nothing proven yet); `*out_ms` is then left alone. Check it before a side
/// effect; a pause after the check is what the fencing token is for.
#[no_mangle]
pub unsafe extern "C" fn zklock_lease_valid_for_ms(
    lease: *const zklock_lease,
    out_ms: *mut i64,
) -> zklock_status {
    guard(|| {
        let this = handles::get(lease, Kind::Lease, "lease")?;
        if out_ms.is_null() {
            return Err(Failure::null("out_ms"));
        }
        let core = this.lease.lock().unwrap_or_else(|e| e.into_inner());
        let Some(core) = core.as_ref() else {
            return Err(Failure::new(
                zklock_status::ZKLOCK_NOT_HELD,
                "the lease was released",
            ));
        };
        match core.time_left() {
            Some(left) => {
                out_ms.write(i64::try_from(left.as_millis()).unwrap_or(i64::MAX));
                Ok(())
            }
            None => Err(match core.lost_reason() {
                Some(reason) => Failure::new(zklock_status::ZKLOCK_LOST, reason),
                None => Failure::new(
                    zklock_status::ZKLOCK_NOT_HELD,
                    format!(
                        "the lease on {} has no valid_until (state {})",
                        this.path_str(),
                        core.state().as_str()
                    ),
                ),
            }),
        }
    })
}
