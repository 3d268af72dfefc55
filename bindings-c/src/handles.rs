//! The registry of live handles: every handle the library gives out is recorded here with its
//! kind until it is freed, and every function checks the pointer it gets against it before
//! touching the memory. A second `zklock_lease_release` (or any use of a freed handle) then
//! fails with `ZKLOCK_INVALID_ARGUMENT` instead of reading freed memory. It is a check for the
//! common mistake, not a guarantee: once the allocator hands the same address to a new handle
//! of the same kind, a stale pointer names that new handle.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::error::Failure;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Client,
    Lock,
    Lease,
    Op,
    Election,
    LeaderWatch,
    Participants,
    Counter,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Client => "zklock_client",
            Kind::Lock => "zklock_lock",
            Kind::Lease => "zklock_lease",
            Kind::Op => "zklock_op",
            Kind::Election => "zklock_election",
            Kind::LeaderWatch => "zklock_leader_watch",
            Kind::Participants => "zklock_participants",
            Kind::Counter => "zklock_counter",
        }
    }

    fn freed_by(self) -> &'static str {
        match self {
            Kind::Client => "zklock_client_free",
            Kind::Lock => "zklock_lock_free",
            Kind::Lease => "zklock_lease_release",
            Kind::Op => "zklock_op_free",
            Kind::Election => "zklock_election_free",
            Kind::LeaderWatch => "zklock_leader_watch_free",
            Kind::Participants => "zklock_participants_free",
            Kind::Counter => "zklock_counter_free",
        }
    }
}

static LIVE: Mutex<Option<HashMap<usize, Kind>>> = Mutex::new(None);

fn with_live<T>(f: impl FnOnce(&mut HashMap<usize, Kind>) -> T) -> T {
    let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    f(live.get_or_insert_with(HashMap::new))
}

/// Records a handle just made (before it is handed to the caller).
pub(crate) fn register<T>(ptr: *mut T, kind: Kind) -> *mut T {
    with_live(|live| live.insert(ptr as usize, kind));
    ptr
}

fn not_live(what: &str, kind: Kind, found: Option<Kind>) -> Failure {
    match found {
        Some(other) => Failure::invalid(format!(
            "{what} is a {}, not a {}",
            other.name(),
            kind.name()
        )),
        None => Failure::invalid(format!(
            "{what} is not a live {} (already freed by {}, or never made by zklock)",
            kind.name(),
            kind.freed_by()
        )),
    }
}

/// Checks that `ptr` is a live handle of `kind` (NULL is its own error).
pub(crate) fn check<T>(ptr: *const T, kind: Kind, what: &str) -> Result<(), Failure> {
    if ptr.is_null() {
        return Err(Failure::null(what));
    }
    match with_live(|live| live.get(&(ptr as usize)).copied()) {
        Some(k) if k == kind => Ok(()),
        found => Err(not_live(what, kind, found)),
    }
}

/// Borrows a live handle of `kind`.
pub(crate) unsafe fn get<'a, T>(ptr: *const T, kind: Kind, what: &str) -> Result<&'a T, Failure> {
    check(ptr, kind, what)?;
    Ok(&*ptr)
}

/// Takes a live handle of `kind` out of the registry, so that it can be freed once: a second
/// call with the same pointer fails.
/// What every `zklock_*_free` of a plain handle does: NULL is a no-op; a live handle of `kind`
/// is unregistered and dropped; anything else is refused (nothing happens, the caller's guard
/// reports it through `zklock_last_error()`).
///
/// # Safety
/// `ptr` is NULL or a pointer `register` gave out for a `Box<T>` of `kind`.
pub(crate) unsafe fn free<T>(ptr: *mut T, kind: Kind, what: &str) -> Result<(), Failure> {
    if !ptr.is_null() {
        unregister(ptr, kind, what)?;
        drop(Box::from_raw(ptr));
    }
    Ok(())
}

pub(crate) fn unregister<T>(ptr: *mut T, kind: Kind, what: &str) -> Result<(), Failure> {
    if ptr.is_null() {
        return Err(Failure::null(what));
    }
    with_live(|live| match live.get(&(ptr as usize)).copied() {
        Some(k) if k == kind => {
            live.remove(&(ptr as usize));
            Ok(())
        }
        found => Err(not_live(what, kind, found)),
    })
}
