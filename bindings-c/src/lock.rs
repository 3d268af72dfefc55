//! `zklock_lock`: a mutex, one side of a read/write lock, or a multi-lock; and blocking acquire.
//!
//! Re-entrancy in C is per handle and thread (Curator's rule): the core keys holds by an owner,
//! and the C face's owner is the calling thread. Another thread using the same handle contends
//! like any other holder.

use std::ffi::c_char;
use std::mem::{offset_of, size_of};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::client::{check_size, client_ref, zklock_client};
use crate::error::{guard, guard_value, zklock_status, Failure};
use crate::handles::{self, Kind};
use crate::lease::zklock_lease;
use crate::participants::zklock_participants;
use crate::str_arg;

/// A lock handle: a mutex (`zklock_mutex_new`), the read or the write side of a read/write lock
/// (`zklock_rwlock_new`) or a multi-lock (`zklock_multi_new`). Opaque and thread-safe; free it
/// with `zklock_lock_free` (its leases stay valid). Re-entrant per handle and thread.
pub struct zklock_lock {
    /// Swapped whole by `zklock_lock_set_max_hold`; acquires work on a clone of the `Arc`.
    shape: std::sync::Mutex<Arc<Shape>>,
    /// The client's callback thread (async completions, and the leases' state callbacks).
    pub(crate) callbacks: zklock::CallbackQueue,
}

/// `zklock_mutex_options.reentrancy`: re-entrant (also what 0, the default, means). A thread
/// holding the lock through the handle may acquire it again (counted; release as often).
pub const ZKLOCK_REENTRANCY_ON: u8 = 1;
/// `zklock_mutex_options.reentrancy`: not re-entrant. Every acquire takes its own place in the
/// queue: a second acquire by the holder waits for itself.
pub const ZKLOCK_REENTRANCY_OFF: u8 = 2;

/// Options of `zklock_mutex_new`. Set `size` to `sizeof(zklock_mutex_options)` (or call
/// `zklock_mutex_options_init`). Zero in a field means its default, as in
/// `zklock_client_options`: a zeroed struct with only `size` set is a re-entrant mutex.
#[repr(C)]
pub struct zklock_mutex_options {
    /// `sizeof(zklock_mutex_options)` as the caller knows it.
    pub size: usize,
    /// 0 (default) or `ZKLOCK_REENTRANCY_ON`: re-entrant per handle and thread;
    /// `ZKLOCK_REENTRANCY_OFF`: not. Any other value is `ZKLOCK_INVALID_ARGUMENT`. Either way
    /// the mutex excludes Curator's InterProcessMutex, not its InterProcessSemaphoreMutex
    /// (`zklock_semaphore_mutex_new` does). This byte was `bool reentrant` up to 0.1: the
    /// layout is the same and `true` (1) still means re-entrant, but `false` (0) now means the
    /// default, so the field was renamed to make source that set it to false fail to compile
    /// rather than change meaning silently.
    pub reentrancy: u8,
}

/// Fills `opts` with the defaults (re-entrant) and sets its `size`. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn zklock_mutex_options_init(opts: *mut zklock_mutex_options) {
    guard_value((), || {
        if !opts.is_null() {
            opts.write(zklock_mutex_options {
                size: size_of::<zklock_mutex_options>(),
                reentrancy: 0,
            });
        }
        Ok(())
    })
}

/// What a handle holds: the core's lock value (re-entrancy and all is the core's, keyed by the
/// calling thread, see [`owner`]).
pub(crate) enum Shape {
    Lock(zklock::Lock),
    /// One side of a read/write lock (both handles share the value, which links the sides).
    Side(Arc<zklock::RwLock>, bool),
    Multi(zklock::MultiLock),
}

/// The calling thread as a re-entrancy owner: a number of its own, never `Owner::SHARED`.
pub(crate) fn owner() -> zklock::Owner {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static ME: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    // During thread teardown the slot may be gone: a fresh number contends like a new thread.
    zklock::Owner(
        ME.try_with(|me| *me)
            .unwrap_or_else(|_| NEXT.fetch_add(1, Ordering::Relaxed)),
    )
}

impl zklock_lock {
    fn shape(&self) -> Arc<Shape> {
        self.shape.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// An acquire for the calling thread, running on the core's runtime.
    pub(crate) fn start_acquire(&self, wait: zklock::Wait) -> zklock::Acquire {
        let me = owner();
        match &*self.shape() {
            Shape::Lock(lock) => lock.start_acquire(me, wait),
            Shape::Side(rw, write) => side(rw, *write).start_acquire(me, wait),
            Shape::Multi(multi) => multi.start_acquire(me, wait),
        }
    }

    fn blocking_acquire(&self, wait: zklock::Wait) -> zklock::Result<zklock::Lease> {
        let me = owner();
        match &*self.shape() {
            Shape::Lock(lock) => lock.blocking_acquire_as(me, wait, None),
            Shape::Side(rw, write) => side(rw, *write).blocking_acquire_as(me, wait, None),
            Shape::Multi(multi) => multi.blocking_acquire_as(me, wait, None),
        }
    }
}

fn side(rw: &zklock::RwLock, write: bool) -> &zklock::Lock {
    if write {
        rw.write()
    } else {
        rw.read()
    }
}

/// Borrows a live lock handle (NULL, freed or not a lock: `ZKLOCK_INVALID_ARGUMENT`).
pub(crate) unsafe fn lock_ref<'a>(lock: *const zklock_lock) -> Result<&'a zklock_lock, Failure> {
    handles::get(lock, Kind::Lock, "lock")
}

/// Whether the mutex is re-entrant (NULL options, a `size` ending before the field, and 0 all
/// mean the default, re-entrant).
unsafe fn read_mutex_options(opts: *const zklock_mutex_options) -> Result<bool, Failure> {
    if opts.is_null() {
        return Ok(true);
    }
    let size = std::ptr::addr_of!((*opts).size).read();
    check_size(
        opts.cast(),
        size,
        size_of::<zklock_mutex_options>(),
        "zklock_mutex_options",
    )?;
    let offset = offset_of!(zklock_mutex_options, reentrancy);
    if size <= offset {
        return Ok(true);
    }
    match opts.cast::<u8>().add(offset).read() {
        0 | ZKLOCK_REENTRANCY_ON => Ok(true),
        ZKLOCK_REENTRANCY_OFF => Ok(false),
        other => Err(Failure::invalid(format!(
            "zklock_mutex_options.reentrancy is {other}; use 0 or one of the ZKLOCK_REENTRANCY_ constants"
        ))),
    }
}

pub(crate) fn boxed(shape: Shape, client: &zklock_client) -> *mut zklock_lock {
    let lock = Box::into_raw(Box::new(zklock_lock {
        shape: std::sync::Mutex::new(Arc::new(shape)),
        callbacks: client.callbacks.clone(),
    }));
    handles::register(lock, Kind::Lock)
}

/// An exclusive lock on `path` (re-entrant unless `opts->reentrancy` is
/// `ZKLOCK_REENTRANCY_OFF`; `opts` NULL means defaults). No I/O happens until the first acquire.
#[no_mangle]
pub unsafe extern "C" fn zklock_mutex_new(
    client: *mut zklock_client,
    path: *const c_char,
    opts: *const zklock_mutex_options,
    out: *mut *mut zklock_lock,
) -> zklock_status {
    guard(|| {
        let client = client_ref(client)?;
        let path = str_arg(path, "path")?;
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        let reentrant = read_mutex_options(opts)?;
        let lock = client.client.mutex(path)?.reentrant(reentrant);
        out.write(boxed(Shape::Lock(lock), client));
        Ok(())
    })
}

/// A read/write lock on `path`: `*read_side` and `*write_side` get its two sides, each a lock to
/// acquire and free on its own. Any number of readers or one writer; a thread holding the write
/// side may take the read side (downgrade); a thread holding the read side asking for the write
/// side fails at once with `ZKLOCK_UPGRADE`.
#[no_mangle]
pub unsafe extern "C" fn zklock_rwlock_new(
    client: *mut zklock_client,
    path: *const c_char,
    read_side: *mut *mut zklock_lock,
    write_side: *mut *mut zklock_lock,
) -> zklock_status {
    guard(|| {
        let client = client_ref(client)?;
        let path = str_arg(path, "path")?;
        if read_side.is_null() {
            return Err(Failure::null("read_side"));
        }
        if write_side.is_null() {
            return Err(Failure::null("write_side"));
        }
        let rw = Arc::new(client.client.rw_lock(path)?);
        read_side.write(boxed(Shape::Side(rw.clone(), false), client));
        write_side.write(boxed(Shape::Side(rw, true), client));
        Ok(())
    })
}

/// Exclusive locks on the `n` paths in `paths`, taken as one: all or nothing, one deadline for
/// the whole set, in path order (no deadlock between differently ordered lists), released in
/// reverse order. A path listed twice or `n == 0` is `ZKLOCK_INVALID_ARGUMENT`.
#[no_mangle]
pub unsafe extern "C" fn zklock_multi_new(
    client: *mut zklock_client,
    paths: *const *const c_char,
    n: usize,
    out: *mut *mut zklock_lock,
) -> zklock_status {
    guard(|| {
        let client = client_ref(client)?;
        if paths.is_null() {
            return Err(Failure::null("paths"));
        }
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        let paths = (0..n)
            .map(|i| str_arg(paths.add(i).read(), &format!("paths[{i}]")))
            .collect::<Result<Vec<_>, _>>()?;
        let multi = client.client.multi_lock(paths)?;
        out.write(boxed(Shape::Multi(multi), client));
        Ok(())
    })
}

/// Frees a lock handle. Leases taken through it stay valid (release them as usual); no call on
/// this handle may be running or start afterwards. NULL is a no-op; a handle already freed is
/// detected in the common case (nothing happens and `zklock_last_error()` says so).
#[no_mangle]
pub unsafe extern "C" fn zklock_lock_free(lock: *mut zklock_lock) {
    guard_value((), || handles::free(lock, Kind::Lock, "lock"))
}

/// Acquires the lock, blocking the calling thread: `timeout_ms` -1 waits forever, 0 tries once,
/// a positive value waits at most that many milliseconds (`ZKLOCK_TIMEOUT` after it; a value
/// beyond what the clock holds waits forever), any other negative is `ZKLOCK_INVALID_ARGUMENT`
/// (zklock's one timeout rule, the same in every face). A timed-out or failed acquire leaves no
/// node behind. On success `*out` gets a lease to give back with `zklock_lease_release`. A
/// thread that already holds the lock through this handle gets a new lease at once (counted);
/// with a write side held, the read side of the same read/write lock is granted (downgrade).
#[no_mangle]
pub unsafe extern "C" fn zklock_acquire(
    lock: *mut zklock_lock,
    timeout_ms: i64,
    out: *mut *mut zklock_lease,
) -> zklock_status {
    guard(|| {
        let lock = lock_ref(lock)?;
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        let lease = lock.blocking_acquire(zklock::Wait::from_millis_i64(timeout_ms)?)?;
        out.write(zklock_lease::boxed(lease, lock.callbacks.clone()));
        Ok(())
    })
}

/// Every lease taken through `lock` from now on ends after `max_hold_ms` milliseconds, whatever
/// its holder does (CURATOR-28): at the limit the core turns it lost (`zklock_lease_lost_reason`
/// contains "max-hold", the state callback hears `ZKLOCK_LEASE_LOST`) and deletes its node.
/// `max_hold_ms` -1 removes the limit (the default: none), as -1 means "forever" for every
/// zklock timeout; 0 is `ZKLOCK_INVALID_ARGUMENT` (the core refuses a lease that ends as it
/// starts), as is any other negative. For mutexes, semaphores and multi-locks: on a multi-lock
/// (`zklock_multi_new`) it is one end for the whole hold, counted from when every member is
/// ours (every member lost and its node deleted at it; `zklock_lease_extend` moves it for all).
/// A read/write side is `ZKLOCK_INVALID_ARGUMENT`: both sides take theirs at once with
/// `zklock_rwlock_set_max_hold`. Set it before acquiring: leases taken before keep the limit
/// they had, and a thread holding the lock through this handle does not re-enter those holds
/// afterwards. `ZKLOCK_INVALID_ARGUMENT` while an acquire through the handle runs.
#[no_mangle]
pub unsafe extern "C" fn zklock_lock_set_max_hold(
    lock: *mut zklock_lock,
    max_hold_ms: i64,
) -> zklock_status {
    guard(|| {
        let this = lock_ref(lock)?;
        let limit = zklock::support::max_hold_from_millis_i64(max_hold_ms)?;
        let mut slot = this.shape.lock().unwrap_or_else(|e| e.into_inner());
        let path = settable_path(&slot, "a maximum hold")?;
        match Arc::get_mut(&mut slot) {
            // Refused, the core leaves the value as it was.
            Some(Shape::Lock(l)) => l.set_max_hold(limit)?,
            Some(Shape::Multi(m)) => m.set_max_hold(limit)?,
            _ => return Err(running(&path, "the maximum hold")),
        }
        Ok(())
    })
}

/// The path (a multi-lock's paths) of a mutex, semaphore or multi-lock handle whose `what` is
/// being set; a read/write side is refused (its sides are set together).
fn settable_path(shape: &Shape, what: &str) -> Result<String, Failure> {
    match shape {
        Shape::Lock(l) => Ok(l.path().to_owned()),
        Shape::Multi(m) => Ok(m.paths().join(",")),
        Shape::Side(..) => Err(Failure::invalid(format!(
            "{what} is set on a mutex, a semaphore or a multi-lock handle; a read/write lock's \
             maximum hold on both sides at once (zklock_rwlock_set_max_hold)"
        ))),
    }
}

/// The refusal of a setting while an acquire through the handle runs.
fn running(path: &str, what: &str) -> Failure {
    Failure::invalid(format!(
        "an acquire of {path} through this handle is running; set {what} before acquiring"
    ))
}

/// Both sides of a read/write lock (`zklock_rwlock_new`'s `read_side` and `write_side`, in that
/// order) end every lease taken through them from now on after `max_hold_ms` milliseconds, as
/// `zklock_lock_set_max_hold` says (-1: no limit, the default; 0 and other negatives are
/// `ZKLOCK_INVALID_ARGUMENT`), like Python's `rw_lock(path, max_hold=)` and Node's
/// `rwLock(path, { maxHoldMs })`. Two handles that are not the read and the write side of one
/// `zklock_rwlock_new` are `ZKLOCK_INVALID_ARGUMENT`, as is a call while either side holds the
/// lock or an acquire through it runs (set it before acquiring). Refused, nothing changes.
#[no_mangle]
pub unsafe extern "C" fn zklock_rwlock_set_max_hold(
    read_side: *mut zklock_lock,
    write_side: *mut zklock_lock,
    max_hold_ms: i64,
) -> zklock_status {
    guard(|| {
        let read = lock_ref(read_side)?;
        let write = lock_ref(write_side)?;
        let limit = zklock::support::max_hold_from_millis_i64(max_hold_ms)?;
        let not_a_pair = || {
            Failure::invalid(
                "zklock_rwlock_set_max_hold takes the read side and the write side of one \
                 zklock_rwlock_new, in that order",
            )
        };
        if std::ptr::eq(read, write) {
            return Err(not_a_pair());
        }
        let mut read_slot = read.shape.lock().unwrap_or_else(|e| e.into_inner());
        let Shape::Side(rw, false) = &**read_slot else {
            return Err(not_a_pair());
        };
        let rw = rw.clone();
        let mut write_slot = write.shape.lock().unwrap_or_else(|e| e.into_inner());
        match &**write_slot {
            Shape::Side(other, true) if Arc::ptr_eq(&rw, other) => {}
            _ => return Err(not_a_pair()),
        }
        // Only these two slots (and `rw` here) own the value: no acquire through it runs.
        if Arc::strong_count(&read_slot) > 1
            || Arc::strong_count(&write_slot) > 1
            || Arc::strong_count(&rw) > 3
        {
            return Err(running(rw.path(), "the maximum hold"));
        }
        // The core refuses while either side holds (a hold it could not re-enter afterwards).
        let limited = Arc::new(rw.with_max_hold(limit)?);
        *read_slot = Arc::new(Shape::Side(limited.clone(), false));
        *write_slot = Arc::new(Shape::Side(limited, true));
        Ok(())
    })
}

/// The longest a lease of `lock` may be held counting its extensions (`zklock_lease_extend`),
/// in milliseconds from the acquire; -1 (the default): no ceiling; 0 or another negative is
/// `ZKLOCK_INVALID_ARGUMENT`. Like `zklock_lock_set_max_hold`: for mutexes, semaphores and
/// multi-locks (the whole hold's ceiling), set before acquiring.
#[no_mangle]
pub unsafe extern "C" fn zklock_lock_set_hold_ceiling(
    lock: *mut zklock_lock,
    ceiling_ms: i64,
) -> zklock_status {
    guard(|| {
        let this = lock_ref(lock)?;
        let ceiling = if ceiling_ms == -1 {
            None
        } else {
            Some(zklock::support::duration_from_millis_i64(
                ceiling_ms,
                "ceiling_ms",
            )?)
        };
        let mut slot = this.shape.lock().unwrap_or_else(|e| e.into_inner());
        let path = settable_path(&slot, "a hold ceiling")?;
        match Arc::get_mut(&mut slot) {
            Some(Shape::Lock(l)) => l.set_hold_ceiling(ceiling)?,
            Some(Shape::Multi(m)) => m.set_hold_ceiling(ceiling)?,
            _ => return Err(running(&path, "the hold ceiling")),
        }
        Ok(())
    })
}

/// Chubby's lock-delay on `lock` (`zklock::Lock::lock_delay`): after a holder's node went
/// without a clean release (its session expired, it was broken), the next acquire through this
/// handle that waited behind it returns its lease only `lock_delay_ms` later; a clean release
/// (of a holder that set the same delay) hands over at once. -1 removes it (the default: none);
/// 0 and any other negative are `ZKLOCK_INVALID_ARGUMENT`, as is a read/write side or a
/// multi-lock (a semaphore takes it per lease). Set it before acquiring, as
/// `zklock_lock_set_max_hold`.
#[no_mangle]
pub unsafe extern "C" fn zklock_lock_set_lock_delay(
    lock: *mut zklock_lock,
    lock_delay_ms: i64,
) -> zklock_status {
    guard(|| {
        let this = lock_ref(lock)?;
        let delay = zklock::support::lock_delay_from_millis_i64(lock_delay_ms)?;
        let mut slot = this.shape.lock().unwrap_or_else(|e| e.into_inner());
        let path = match &**slot {
            Shape::Lock(l) => l.path().to_owned(),
            Shape::Side(..) | Shape::Multi(..) => {
                return Err(Failure::invalid(
                    "a lock-delay is set on a mutex or a semaphore (not on a read/write side or a multi-lock)",
                ))
            }
        };
        let Some(Shape::Lock(l)) = Arc::get_mut(&mut slot) else {
            return Err(Failure::invalid(format!(
                "an acquire of {path} through this handle is running; set the lock-delay before acquiring"
            )));
        };
        // Refused, the core leaves the value as it was.
        l.set_lock_delay(delay)?;
        Ok(())
    })
}

/// Lists the participants of `lock`'s path (holder first, then the waiters in order; for a
/// semaphore its lease nodes, kind "lease"), each with its node, id, token, library, kind and
/// election style (`zklock_participant`), within `timeout_ms` (`zklock_acquire`'s rule: -1 no
/// bound, 0 only an answer already at hand, i.e. `ZKLOCK_TIMEOUT` in practice). The two sides
/// of a read/write lock list the same queue; a multi-lock is `ZKLOCK_INVALID_ARGUMENT` (list
/// each path's mutex). On success `*out` gets a list to free with `zklock_participants_free`.
#[no_mangle]
pub unsafe extern "C" fn zklock_lock_participants(
    lock: *mut zklock_lock,
    timeout_ms: i64,
    out: *mut *mut zklock_participants,
) -> zklock_status {
    guard(|| {
        let this = lock_ref(lock)?;
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        let bound = zklock::Wait::from_millis_i64(timeout_ms)?.time_left();
        let listed =
            match &*this.shape() {
                Shape::Lock(l) => l.blocking_participants_timeout(bound)?,
                Shape::Side(rw, write) => side(rw, *write).blocking_participants_timeout(bound)?,
                Shape::Multi(_) => return Err(Failure::invalid(
                    "a multi-lock has no single queue: list the participants of each path's mutex",
                )),
            };
        out.write(zklock_participants::boxed(listed));
        Ok(())
    })
}
