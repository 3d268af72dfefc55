//! Reading an election or a lock without taking part: `zklock_leader_watch` (who leads now and
//! at every change, nobody included) and `zklock_check` (whether a fencing token is a current
//! holder's or leader's, Chubby's CheckSequencer). A participant's side is election.rs.

use std::ffi::{c_char, c_int};

use crate::client::{client_ref, zklock_client};
use crate::error::{guard, guard_value, zklock_status, Failure};
use crate::handles::{self, Kind};
use crate::participants::zklock_participants;
use crate::str_arg;

// --- observing the leader ---------------------------------------------------------------------

/// Watches who leads the election on a path without taking part (etcd's `Observe`, which
/// cannot report that nobody leads; this can). Opaque; free it with `zklock_leader_watch_free`.
pub struct zklock_leader_watch {
    watch: zklock::LeaderWatch,
}

/// A watch of the leader of the election on `path` (any layout's first node); no I/O until
/// the first `zklock_leader_watch_next`. It follows the client across reconnects.
#[no_mangle]
pub unsafe extern "C" fn zklock_leader_watch_new(
    client: *mut zklock_client,
    path: *const c_char,
    out: *mut *mut zklock_leader_watch,
) -> zklock_status {
    guard(|| {
        let client = client_ref(client)?;
        let path = str_arg(path, "path")?;
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        let watch = client.client.observe_leader(path)?;
        let handle = Box::into_raw(Box::new(zklock_leader_watch { watch }));
        out.write(handles::register(handle, Kind::LeaderWatch));
        Ok(())
    })
}

/// The leader at the first call, then the next change, blocking up to `timeout_ms`
/// (`zklock_acquire`'s rule: -1 forever, 0 looks once). `*out` gets a list of one participant
/// (the leader), or of none when nobody leads; free it with `zklock_participants_free`.
/// `ZKLOCK_TIMEOUT` when the leader did not change within the timeout (`*out` untouched).
#[no_mangle]
pub unsafe extern "C" fn zklock_leader_watch_next(
    w: *mut zklock_leader_watch,
    timeout_ms: i64,
    out: *mut *mut zklock_participants,
) -> zklock_status {
    guard(|| {
        let this = handles::get(w, Kind::LeaderWatch, "watch")?;
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        let wait = zklock::Wait::from_millis_i64(timeout_ms)?;
        zklock::support::refuse_on_runtime_thread()?;
        let leader = this.watch.blocking_next(wait)?;
        out.write(zklock_participants::boxed(leader.into_iter().collect()));
        Ok(())
    })
}

/// Frees a leader watch. No call on it may be running or start afterwards. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn zklock_leader_watch_free(w: *mut zklock_leader_watch) {
    guard_value((), || handles::free(w, Kind::LeaderWatch, "watch"))
}

// --- sequencer checks -------------------------------------------------------------------------

/// Chubby's `CheckSequencer`: writes into `*out_ok` 1 when `token` is the fencing token of a
/// current holder of the lock, or of the leader of the election, on `path`, else 0 (for a
/// semaphore: a lease among the first `max_leases`; 0 means N is unknown: any lease node's).
/// True at the moment ZooKeeper answered: a resource that must never act for a past holder
/// also keeps the largest token it saw. `max_leases` outside 0..=2147483647 is
/// `ZKLOCK_INVALID_ARGUMENT`. Blocks until ZooKeeper answered.
#[no_mangle]
pub unsafe extern "C" fn zklock_check(
    client: *mut zklock_client,
    path: *const c_char,
    token: i64,
    max_leases: i64,
    out_ok: *mut c_int,
) -> zklock_status {
    guard(|| {
        let client = client_ref(client)?;
        let path = str_arg(path, "path")?;
        if out_ok.is_null() {
            return Err(Failure::null("out_ok"));
        }
        let max = match max_leases {
            0 => None,
            n => Some(
                u32::try_from(n).map_err(|_| Failure::from(zklock::invalid_max_leases(path, n)))?,
            ),
        };
        zklock::support::refuse_on_runtime_thread()?;
        let ok = client.client.blocking_check(path, token, max)?;
        out_ok.write(c_int::from(ok));
        Ok(())
    })
}
