//! Leader election from C (issue 25): `zklock_election` (a participant in one of the three
//! layouts), the leadership as a `zklock_lease`, `zklock_leader_watch` for observers, the
//! participants and the leader as a `zklock_participants` list (participants.rs) and
//! `zklock_check`. The core decides everything; this converts C values and hands out handles.

use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;

use crate::client::{client_ref, zklock_client};
use crate::error::{guard, guard_value, zklock_status, Failure};
use crate::handles::{self, Kind};
use crate::lease::zklock_lease;
use crate::op::{deliver, zklock_acquire_cb, zklock_op};
use crate::participants::zklock_participants;
use crate::{c_text, str_arg, UserPtr};

/// One participant's side of the leader election on a path. Opaque and thread-safe; free it
/// with `zklock_election_free` (leaderships taken through it stay valid). A leadership is a
/// `zklock_lease`: token, state, state callback, guarded writes, `zklock_lease_valid_for_ms`.
pub struct zklock_election {
    /// Changed in place by `zklock_election_set_lock_delay`; every call works on a clone of
    /// the `Arc`.
    slot: std::sync::Mutex<Arc<zklock::Election>>,
    id: CString,
    style: CString,
    /// The client's callback thread (async leads, and the leases' callbacks).
    callbacks: zklock::CallbackQueue,
}

impl zklock_election {
    fn election(&self) -> Arc<zklock::Election> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

unsafe fn election_ref<'a>(e: *const zklock_election) -> Result<&'a zklock_election, Failure> {
    handles::get(e, Kind::Election, "election")
}

/// Joins the election on `path` as a participant: `style` names the layout, "latch" (Curator's
/// `LeaderLatch`, the default when `style` is NULL), "selector" (Curator's `LeaderSelector`) or
/// "kazoo" (kazoo's `Election`); any other name is `ZKLOCK_INVALID_ARGUMENT`. `id` is the
/// participant id written as the node's data (what `participants` and every peer show; NULL:
/// the client's identity; at most 1024 bytes). `max_hold_ms`: -1 for no limit (the rule of
/// every zklock timeout: -1 is forever), else each leadership ends after that many
/// milliseconds (lost with the reason "max-hold", see `zklock_lock_set_max_hold`); 0 and other
/// negatives are `ZKLOCK_INVALID_ARGUMENT`. No I/O until the first lead. On success `*out`
/// gets a handle to free with `zklock_election_free`.
#[no_mangle]
pub unsafe extern "C" fn zklock_election_new(
    client: *mut zklock_client,
    path: *const c_char,
    style: *const c_char,
    id: *const c_char,
    max_hold_ms: i64,
    out: *mut *mut zklock_election,
) -> zklock_status {
    guard(|| {
        let client = client_ref(client)?;
        let path = str_arg(path, "path")?;
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        let style = if style.is_null() {
            zklock::ElectionStyle::default()
        } else {
            str_arg(style, "style")?.parse::<zklock::ElectionStyle>()?
        };
        let id = if id.is_null() {
            None
        } else {
            Some(str_arg(id, "id")?)
        };
        let limit = zklock::support::max_hold_from_millis_i64(max_hold_ms)?;
        let election = client.client.election(path, style, id)?;
        let election = match limit {
            Some(limit) => election.max_hold(Some(limit))?,
            None => election,
        };
        let handle = Box::into_raw(Box::new(zklock_election {
            id: c_text(election.id()),
            style: c_text(election.style().as_str()),
            slot: std::sync::Mutex::new(Arc::new(election)),
            callbacks: client.callbacks.clone(),
        }));
        out.write(handles::register(handle, Kind::Election));
        Ok(())
    })
}

/// Chubby's lock-delay on this participant's leaderships (`zklock::Election::lock_delay`):
/// after a leader's node went without a clean resign (its session expired, it was broken, its
/// maximum hold ended), a lead through this handle that waited behind it returns its leadership
/// only `lock_delay_ms` later; a clean resign (of a leader that set the same delay) hands over
/// at once. -1 removes it (the default: none); 0 and any other negative are
/// `ZKLOCK_INVALID_ARGUMENT`, as for `zklock_lock_set_lock_delay`. Set it before leading:
/// `ZKLOCK_INVALID_ARGUMENT` while a blocking call through the handle runs; a lead started
/// before (`zklock_election_lead_async` included) and leaderships taken before keep what they
/// had. Every zklock participant of the path sets the same delay. Refused, nothing changes.
#[no_mangle]
pub unsafe extern "C" fn zklock_election_set_lock_delay(
    e: *mut zklock_election,
    lock_delay_ms: i64,
) -> zklock_status {
    guard(|| {
        let this = election_ref(e)?;
        let delay = zklock::support::lock_delay_from_millis_i64(lock_delay_ms)?;
        let mut slot = this.slot.lock().unwrap_or_else(|e| e.into_inner());
        let path = slot.path().to_owned();
        let Some(election) = Arc::get_mut(&mut slot) else {
            return Err(Failure::invalid(format!(
                "a call through the election handle of {path} is running; set the lock-delay before leading"
            )));
        };
        election.set_lock_delay(delay)?;
        Ok(())
    })
}

/// Frees an election handle. Leaderships and ops taken through it stay valid (release or free
/// them as usual); no call on this handle may be running or start afterwards. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn zklock_election_free(e: *mut zklock_election) {
    guard_value((), || handles::free(e, Kind::Election, "election"))
}

/// The participant id (the node's data); valid while the handle lives. NULL when `e` is NULL
/// or not a live election.
#[no_mangle]
pub unsafe extern "C" fn zklock_election_id(e: *const zklock_election) -> *const c_char {
    guard_value(std::ptr::null(), || Ok(election_ref(e)?.id.as_ptr()))
}

/// The layout's name: "latch", "selector" or "kazoo"; valid while the handle lives. NULL when
/// `e` is NULL or not a live election.
#[no_mangle]
pub unsafe extern "C" fn zklock_election_style(e: *const zklock_election) -> *const c_char {
    guard_value(std::ptr::null(), || Ok(election_ref(e)?.style.as_ptr()))
}

/// Runs for leader, blocking the calling thread: `timeout_ms` as for `zklock_acquire` (-1
/// forever, 0 one attempt, `ZKLOCK_TIMEOUT` past it). `ZKLOCK_CONFLICT` when a participant of
/// another layout is on the path (`zklock_last_error()` names its node): no layout sees the
/// other's nodes, so both would lead. Every failure removes our node. On success `*out` gets
/// the leadership, a lease: give it up with `zklock_election_resign` (or
/// `zklock_lease_release`).
#[no_mangle]
pub unsafe extern "C" fn zklock_election_lead(
    e: *mut zklock_election,
    timeout_ms: i64,
    out: *mut *mut zklock_lease,
) -> zklock_status {
    guard(|| {
        let this = election_ref(e)?;
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        let wait = zklock::Wait::from_millis_i64(timeout_ms)?;
        let lease = this.election().blocking_lead_with(wait, None)?;
        out.write(zklock_lease::boxed(lease, this.callbacks.clone()));
        Ok(())
    })
}

/// Starts running for leader without blocking, as `zklock_acquire_async`: `cb(user, status,
/// lease)` is called exactly once on the client's callback thread, with the leadership or the
/// error (`ZKLOCK_TIMEOUT`, `ZKLOCK_CANCELLED` after `zklock_op_cancel`, `ZKLOCK_CONFLICT`...).
/// On success `*op` gets a handle to free with `zklock_op_free`; on failure the callback is
/// never called.
#[no_mangle]
pub unsafe extern "C" fn zklock_election_lead_async(
    e: *mut zklock_election,
    timeout_ms: i64,
    cb: zklock_acquire_cb,
    user: *mut c_void,
    op: *mut *mut zklock_op,
) -> zklock_status {
    guard(|| {
        let this = election_ref(e)?;
        let cb = cb.ok_or_else(|| Failure::null("cb"))?;
        if op.is_null() {
            return Err(Failure::null("op"));
        }
        let wait = zklock::Wait::from_millis_i64(timeout_ms)?;
        op.write(start(this.election().start_lead(wait), this, cb, user));
        Ok(())
    })
}

/// Hands an attempt's outcome to `cb` on the client's callback thread; its op handle.
fn start(
    attempt: zklock::Acquire,
    this: &zklock_election,
    cb: unsafe extern "C" fn(*mut c_void, zklock_status, *mut zklock_lease),
    user: *mut c_void,
) -> *mut zklock_op {
    let cancel = attempt.canceller();
    let (user, queue) = (UserPtr(user), this.callbacks.clone());
    attempt.on_complete_in(queue.clone(), move |result| {
        deliver(cb, user, result, queue)
    });
    zklock_op::boxed(cancel)
}

/// Gives the leadership up: its node is deleted and the next participant leads. `lease` is
/// freed whatever the outcome, as by `zklock_lease_release` (`ZKLOCK_LOST` when it had been
/// lost and `requeue` is false; with `requeue` a lost leadership is no error: the new attempt
/// starts), except when it is no leadership of this election (`ZKLOCK_INVALID_ARGUMENT`, the
/// lease untouched). With `requeue` true the participant runs again at the tail of the queue
/// (Curator's `requeue`, no timeout): the next leadership comes like `zklock_election_lead_async`'s,
/// through `cb(user, status, lease)` on the callback thread, and `*op` gets the attempt's
/// handle (cancel it with `zklock_op_cancel`, free it with `zklock_op_free`); `cb` and `op` are
/// then required, and are ignored (may be NULL) when `requeue` is false. When the resign fails
/// no attempt starts and `cb` is never called.
#[no_mangle]
pub unsafe extern "C" fn zklock_election_resign(
    e: *mut zklock_election,
    lease: *mut zklock_lease,
    requeue: bool,
    cb: zklock_acquire_cb,
    user: *mut c_void,
    op: *mut *mut zklock_op,
) -> zklock_status {
    guard(|| {
        let this = election_ref(e)?;
        let leadership = handles::get(lease, Kind::Lease, "lease")?;
        let cb = match (requeue, cb) {
            (true, None) => return Err(Failure::null("cb (requeue is true)")),
            (true, Some(_)) if op.is_null() => return Err(Failure::null("op (requeue is true)")),
            (_, cb) => cb,
        };
        // A lease of another path would be released (and freed) by the core's refusal: the
        // core's rule is asked first, before the handle is taken apart.
        if let Some(refused) = leadership.with_core(|core| this.election().check_leadership(core)) {
            refused?;
        }
        let (core, path) = zklock_lease::take(lease)?;
        let Some(core) = core else { return Ok(()) };
        let was_lost = core.state() == zklock::LeaseState::Lost;
        let again = this.election().blocking_resign(core, requeue)?;
        if let (Some(attempt), Some(cb)) = (again, cb) {
            op.write(start(attempt, this, cb, user));
            return Ok(());
        }
        if was_lost {
            return Err(Failure::new(
                zklock_status::ZKLOCK_LOST,
                format!("the leadership on {path} had been lost before the resign"),
            ));
        }
        Ok(())
    })
}

/// Sets the leadership's node data to `data` (`len` bytes; NULL with 0 for none): what
/// participants and observers see as the leader's id from then on. A guarded write: applied
/// only while the node is ours (`ZKLOCK_LOST` after a loss, nothing written). Blocks until
/// ZooKeeper answered. `ZKLOCK_INVALID_ARGUMENT` for a lease of another election.
#[no_mangle]
pub unsafe extern "C" fn zklock_election_proclaim(
    e: *mut zklock_election,
    lease: *const zklock_lease,
    data: *const c_void,
    len: usize,
) -> zklock_status {
    guard(|| {
        let this = election_ref(e)?;
        let leadership = handles::get(lease, Kind::Lease, "lease")?;
        let bytes = match (data.is_null(), len) {
            (true, 0) => Vec::new(),
            (true, _) => return Err(Failure::null("data")),
            (false, n) => std::slice::from_raw_parts(data.cast::<u8>(), n).to_vec(),
        };
        zklock::support::refuse_on_runtime_thread()?;
        leadership
            .with_core(|core| this.election().blocking_proclaim(core, bytes, None))
            .ok_or_else(|| {
                Failure::new(zklock_status::ZKLOCK_NOT_HELD, "the lease was released")
            })??;
        Ok(())
    })
}

/// Lists everyone running in the election, in election order (the leader first), with their
/// node, id, token, library, kind and style; nodes of other layouts are listed too (they make
/// `zklock_election_lead` fail with `ZKLOCK_CONFLICT`). Blocks until ZooKeeper answered. On
/// success `*out` gets a list to free with `zklock_participants_free`.
#[no_mangle]
pub unsafe extern "C" fn zklock_election_participants(
    e: *mut zklock_election,
    out: *mut *mut zklock_participants,
) -> zklock_status {
    guard(|| {
        let this = election_ref(e)?;
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        let listed = this.election().blocking_participants()?;
        out.write(zklock_participants::boxed(listed));
        Ok(())
    })
}

/// The leader now, as a list of one participant, or of none when nobody leads (the first
/// participant of this election's layout). Blocks until ZooKeeper answered; free the list
/// with `zklock_participants_free`.
#[no_mangle]
pub unsafe extern "C" fn zklock_election_leader(
    e: *mut zklock_election,
    out: *mut *mut zklock_participants,
) -> zklock_status {
    guard(|| {
        let this = election_ref(e)?;
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        let leader = this.election().blocking_leader()?;
        out.write(zklock_participants::boxed(leader.into_iter().collect()));
        Ok(())
    })
}
