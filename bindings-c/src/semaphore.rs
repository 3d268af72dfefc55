//! Semaphores (Curator's `InterProcessSemaphoreV2` layout) as `zklock_lock` handles, and
//! revocation requests, and breaking a stuck lock. The core decides everything; this only
//! converts C values.

use std::ffi::c_char;
use std::mem::size_of;

use crate::client::{check_size, client_ref, zklock_client};
use crate::error::{guard, guard_value, zklock_status, Failure};
use crate::lock::{boxed, zklock_lock, Shape};
use crate::participants::zklock_participants;
use crate::str_arg;

/// Options of `zklock_semaphore_new` and `zklock_semaphore_mutex_new`. Set `size` to
/// `sizeof(zklock_semaphore_options)` (or call `zklock_semaphore_options_init`). No option is
/// defined yet: the struct is there so that later ones need no new function.
#[repr(C)]
pub struct zklock_semaphore_options {
    /// `sizeof(zklock_semaphore_options)` as the caller knows it.
    pub size: usize,
}

/// Fills `opts` with the defaults and sets its `size`. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn zklock_semaphore_options_init(opts: *mut zklock_semaphore_options) {
    guard_value((), || {
        if !opts.is_null() {
            opts.write(zklock_semaphore_options {
                size: size_of::<zklock_semaphore_options>(),
            });
        }
        Ok(())
    })
}

unsafe fn read_semaphore_options(opts: *const zklock_semaphore_options) -> Result<(), Failure> {
    if opts.is_null() {
        return Ok(());
    }
    let size = std::ptr::addr_of!((*opts).size).read();
    check_size(
        opts.cast(),
        size,
        size_of::<zklock_semaphore_options>(),
        "zklock_semaphore_options",
    )
}

/// A C `int64_t` as a semaphore's N for the core: a value no `u32` holds cannot reach the
/// core's check, so it gets the same kind of error here, naming the value.
fn max_leases_of(path: &str, n: i64) -> Result<u32, Failure> {
    u32::try_from(n).map_err(|_| zklock::invalid_max_leases(path, n).into())
}

unsafe fn new_semaphore(
    client: *mut zklock_client,
    path: *const c_char,
    max_leases: Option<i64>,
    opts: *const zklock_semaphore_options,
    out: *mut *mut zklock_lock,
) -> Result<(), Failure> {
    let client = client_ref(client)?;
    let path = str_arg(path, "path")?;
    if out.is_null() {
        return Err(Failure::null("out"));
    }
    read_semaphore_options(opts)?;
    let lock = match max_leases {
        Some(n) => client.client.semaphore(path, max_leases_of(path, n)?)?,
        None => client.client.semaphore_mutex(path)?,
    };
    out.write(boxed(Shape::Lock(lock), client));
    Ok(())
}

/// A counting semaphore of `max_leases` leases on `path`, on Curator's `InterProcessSemaphoreV2`
/// layout (`<path>/leases`, `<path>/locks`): at most `max_leases` leases exist at once across
/// every process that uses the path with the same N (ZooKeeper does not store N; 1 to
/// 2147483647, else `ZKLOCK_INVALID_ARGUMENT`). `*out` gets a `zklock_lock` for the usual
/// functions: each `zklock_acquire` / `zklock_acquire_async` takes one lease of its own (never
/// re-entrant, whatever thread), with its token, state and callbacks; `zklock_lease_release`
/// gives it back, from any thread. `opts` NULL means defaults. No I/O until the first acquire.
#[no_mangle]
pub unsafe extern "C" fn zklock_semaphore_new(
    client: *mut zklock_client,
    path: *const c_char,
    max_leases: i64,
    opts: *const zklock_semaphore_options,
    out: *mut *mut zklock_lock,
) -> zklock_status {
    guard(|| new_semaphore(client, path, Some(max_leases), opts, out))
}

/// The semaphore of one lease on `path`: excludes Curator's `InterProcessSemaphoreMutex` (and
/// every zklock semaphore mutex) on the same path. Not re-entrant: a second acquire by the
/// holder waits for itself. (`zklock_mutex_new` excludes Curator's `InterProcessMutex`, not
/// this one.)
#[no_mangle]
pub unsafe extern "C" fn zklock_semaphore_mutex_new(
    client: *mut zklock_client,
    path: *const c_char,
    opts: *const zklock_semaphore_options,
    out: *mut *mut zklock_lock,
) -> zklock_status {
    guard(|| new_semaphore(client, path, None, opts, out))
}

/// Asks the holder of `path` to let go, as Curator's `Revoker.attemptRevoke` does: sets the data
/// of its node to `__REVOKE__` (every lease of a semaphore). `node` NULL asks every current
/// holder; else it names one node (its name or full path). Blocks until written.
/// `ZKLOCK_NOT_HELD` when nobody holds `path` or the node is gone. Holders hear it through
/// `zklock_lease_on_revoke` (zklock) or a `RevocationListener` (Curator); it is a request.
#[no_mangle]
pub unsafe extern "C" fn zklock_revoke(
    client: *mut zklock_client,
    path: *const c_char,
    node: *const c_char,
) -> zklock_status {
    guard(|| {
        let client = client_ref(client)?;
        let path = str_arg(path, "path")?;
        let node = if node.is_null() {
            None
        } else {
            Some(str_arg(node, "node")?)
        };
        client.client.blocking_revoke(path, node)?;
        Ok(())
    })
}

/// Breaks a stuck lock: deletes `node` (one of `path`'s contenders, its name or full path),
/// checked against the version read just before, so a node changed or re-created meanwhile is
/// not touched. Blocks until ZooKeeper answered. `reason` (may be NULL) goes to the logs. When
/// `out` is not NULL, `*out` gets the contender broken as a list of one participant (free it
/// with `zklock_participants_free`). `ZKLOCK_NOT_HELD` when the node is not among the
/// contenders (or went away first), `ZKLOCK_PERMISSION` when the ACL refuses,
/// `ZKLOCK_INVALID_ARGUMENT` for an empty node. A zklock holder's lease turns lost with the
/// reason `broken`.
#[no_mangle]
pub unsafe extern "C" fn zklock_break_lock(
    client: *mut zklock_client,
    path: *const c_char,
    node: *const c_char,
    reason: *const c_char,
    out: *mut *mut zklock_participants,
) -> zklock_status {
    guard(|| {
        let client = client_ref(client)?;
        let path = str_arg(path, "path")?;
        let node = str_arg(node, "node")?;
        let reason = if reason.is_null() {
            None
        } else {
            Some(str_arg(reason, "reason")?)
        };
        let broken = client.client.blocking_break_lock(path, node, reason)?;
        if !out.is_null() {
            out.write(zklock_participants::boxed(vec![broken]));
        }
        Ok(())
    })
}
