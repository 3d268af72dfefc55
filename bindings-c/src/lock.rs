//! `zklock_lock`: a mutex, one side of a read/write lock, or a multi-lock; and blocking acquire.
//!
//! Re-entrancy in C is per handle and thread (Curator's rule): the core is re-entrant per `Lock`
//! value, so a handle keeps one core value per thread that uses it. Another thread using the same
//! handle has its own value and contends like any other holder.

use std::collections::HashMap;
use std::ffi::c_char;
use std::future::Future;
use std::mem::{offset_of, size_of};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use crate::client::{check_size, zklock_client};
use crate::error::{guard, guard_value, zklock_status, Failure};
use crate::handles::{self, Kind};
use crate::lease::zklock_lease;
use crate::str_arg;

/// A lock handle: a mutex (`zklock_mutex_new`), the read or the write side of a read/write lock
/// (`zklock_rwlock_new`) or a multi-lock (`zklock_multi_new`). Opaque and thread-safe; free it
/// with `zklock_lock_free` (its leases stay valid). Re-entrant per handle and thread.
pub struct zklock_lock {
    shape: Shape,
    /// The client's callback thread (async completions, and the leases' state callbacks).
    pub(crate) callbacks: zklock::runtime::CallbackQueue,
}

/// Options of `zklock_mutex_new`. Set `size` to `sizeof(zklock_mutex_options)` (or call
/// `zklock_mutex_options_init`, which also sets the defaults).
#[repr(C)]
pub struct zklock_mutex_options {
    /// `sizeof(zklock_mutex_options)` as the caller knows it.
    pub size: usize,
    /// true (the default): a thread holding the lock through this handle may acquire it again
    /// (counted; release as often). false: every acquire takes its own place in the queue
    /// (Curator's InterProcessSemaphoreMutex): a second acquire by the holder waits for itself.
    pub reentrant: bool,
}

/// Fills `opts` with the defaults (re-entrant) and sets its `size`. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn zklock_mutex_options_init(opts: *mut zklock_mutex_options) {
    guard_value((), || {
        if !opts.is_null() {
            opts.write(zklock_mutex_options {
                size: size_of::<zklock_mutex_options>(),
                reentrant: true,
            });
        }
        Ok(())
    })
}

/// One core value per thread using the handle. Entries of threads that hold nothing and are not
/// in a call are dropped when the map grows, so short-lived threads do not pile up.
struct PerThread<T> {
    map: Mutex<HashMap<ThreadId, Arc<T>>>,
}

trait Idle {
    fn idle(&self) -> bool;
}

impl Idle for zklock::Lock {
    fn idle(&self) -> bool {
        self.hold_count() == 0
    }
}

impl Idle for zklock::RwLock {
    fn idle(&self) -> bool {
        self.read().hold_count() == 0 && self.write().hold_count() == 0
    }
}

pub(crate) struct MultiEntry {
    members: Vec<zklock::Lock>,
    multi: zklock::MultiLock,
}

impl Idle for MultiEntry {
    fn idle(&self) -> bool {
        self.members.iter().all(|m| m.hold_count() == 0)
    }
}

const PRUNE_AT: usize = 32;

impl<T: Idle> PerThread<T> {
    fn new() -> Self {
        PerThread {
            map: Mutex::new(HashMap::new()),
        }
    }

    fn get(&self, make: impl FnOnce() -> zklock::Result<T>) -> Result<Arc<T>, Failure> {
        let id = std::thread::current().id();
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(entry) = map.get(&id) {
            return Ok(entry.clone());
        }
        if map.len() >= PRUNE_AT {
            map.retain(|_, e| Arc::strong_count(e) > 1 || !e.idle());
        }
        let entry = Arc::new(make()?);
        map.insert(id, entry.clone());
        Ok(entry)
    }
}

struct RwShared {
    client: zklock::Client,
    path: String,
    per_thread: PerThread<zklock::RwLock>,
}

enum Shape {
    Mutex {
        client: zklock::Client,
        path: String,
        reentrant: bool,
        per_thread: PerThread<zklock::Lock>,
    },
    Rw {
        shared: Arc<RwShared>,
        write: bool,
    },
    Multi {
        client: zklock::Client,
        paths: Vec<String>,
        per_thread: PerThread<MultiEntry>,
    },
}

/// This thread's core value of a handle (kept alive by the caller for the whole call).
pub(crate) enum Holder {
    Lock(Arc<zklock::Lock>),
    Rw(Arc<zklock::RwLock>, bool),
    Multi(Arc<MultiEntry>),
}

pub(crate) type AcquireFuture =
    Pin<Box<dyn Future<Output = zklock::Result<zklock::Lease>> + Send + 'static>>;

/// How long an acquire may wait: `-1` forever, `0` one try, `> 0` milliseconds.
#[derive(Clone, Copy)]
pub(crate) enum Wait {
    Forever,
    Try,
    For(Duration),
}

/// Waits longer than this are "forever" (no Instant overflow on absurd values).
const FOREVER_ENOUGH: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

impl Wait {
    pub(crate) fn from_ms(timeout_ms: i64) -> Result<Wait, Failure> {
        match timeout_ms {
            -1 => Ok(Wait::Forever),
            0 => Ok(Wait::Try),
            ms if ms > 0 => {
                let d = Duration::from_millis(ms as u64);
                Ok(if d >= FOREVER_ENOUGH {
                    Wait::Forever
                } else {
                    Wait::For(d)
                })
            }
            ms => Err(Failure::invalid(format!(
                "timeout_ms is {ms}; use -1 (wait forever), 0 (try once) or a positive number of milliseconds"
            ))),
        }
    }

    pub(crate) fn deadline(self) -> Option<Instant> {
        match self {
            Wait::Forever => None,
            Wait::Try => Some(Instant::now()),
            Wait::For(d) => Instant::now().checked_add(d),
        }
    }
}

impl zklock_lock {
    /// This thread's core value.
    pub(crate) fn holder(&self) -> Result<Holder, Failure> {
        Ok(match &self.shape {
            Shape::Mutex {
                client,
                path,
                reentrant,
                per_thread,
            } => Holder::Lock(per_thread.get(|| Ok(client.mutex(path)?.reentrant(*reentrant)))?),
            Shape::Rw { shared, write } => Holder::Rw(
                shared
                    .per_thread
                    .get(|| shared.client.rw_lock(&shared.path))?,
                *write,
            ),
            Shape::Multi {
                client,
                paths,
                per_thread,
            } => Holder::Multi(per_thread.get(|| {
                let members = paths
                    .iter()
                    .map(|p| client.mutex(p))
                    .collect::<zklock::Result<Vec<_>>>()?;
                let multi = zklock::MultiLock::from_locks(members.iter())?;
                Ok(MultiEntry { members, multi })
            })?),
        })
    }

    pub(crate) fn describe(&self) -> String {
        match &self.shape {
            Shape::Mutex { path, .. } => format!("the lock {path}"),
            Shape::Rw { shared, write } => format!(
                "the {} lock {}",
                if *write { "write" } else { "read" },
                shared.path
            ),
            Shape::Multi { paths, .. } => format!("the multi-lock [{}]", paths.join(", ")),
        }
    }
}

impl Holder {
    fn lock(&self) -> Option<&zklock::Lock> {
        match self {
            Holder::Lock(l) => Some(l),
            Holder::Rw(rw, true) => Some(rw.write()),
            Holder::Rw(rw, false) => Some(rw.read()),
            Holder::Multi(_) => None,
        }
    }

    pub(crate) fn blocking_acquire(&self, wait: Wait) -> zklock::Result<Option<zklock::Lease>> {
        let wait = match wait {
            Wait::For(d) if Instant::now().checked_add(d).is_none() => Wait::Forever,
            w => w,
        };
        match (self.lock(), self) {
            (Some(lock), _) => match wait {
                Wait::Forever => lock.blocking_acquire().map(Some),
                Wait::Try => lock.blocking_try_acquire(),
                Wait::For(d) => lock.blocking_acquire_timeout(d).map(Some),
            },
            (None, Holder::Multi(m)) => match wait {
                Wait::Forever => m.multi.blocking_acquire().map(Some),
                Wait::Try => m.multi.blocking_try_acquire(),
                Wait::For(d) => m.multi.blocking_acquire_timeout(d).map(Some),
            },
            (None, _) => unreachable!("only a multi-lock has no single lock"),
        }
    }

    /// The acquire future; `cancel` makes it remove its node and fail with `Cancelled`.
    pub(crate) fn acquire_future(&self, wait: Wait, cancel: zklock::CancelToken) -> AcquireFuture {
        let deadline = wait.deadline();
        match (self.lock(), self) {
            (Some(lock), _) => Box::pin(lock.acquire_with(deadline, cancel)),
            (None, Holder::Multi(m)) => Box::pin(m.multi.acquire_with(deadline, cancel)),
            (None, _) => unreachable!("only a multi-lock has no single lock"),
        }
    }
}

unsafe fn client_ref<'a>(client: *const zklock_client) -> Result<&'a zklock_client, Failure> {
    handles::get(client, Kind::Client, "client")
}

/// Borrows a live lock handle (NULL, freed or not a lock: `ZKLOCK_INVALID_ARGUMENT`).
pub(crate) unsafe fn lock_ref<'a>(lock: *const zklock_lock) -> Result<&'a zklock_lock, Failure> {
    handles::get(lock, Kind::Lock, "lock")
}

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
    let offset = offset_of!(zklock_mutex_options, reentrant);
    if size > offset {
        // Read the byte, not a Rust bool: any non-zero value a C caller stored means true.
        Ok(opts.cast::<u8>().add(offset).read() != 0)
    } else {
        Ok(true)
    }
}

fn boxed(shape: Shape, client: &zklock_client) -> *mut zklock_lock {
    let lock = Box::into_raw(Box::new(zklock_lock {
        shape,
        callbacks: client.callbacks.clone(),
    }));
    handles::register(lock, Kind::Lock)
}

/// An exclusive lock on `path` (re-entrant unless `opts->reentrant` is false; `opts` NULL means
/// defaults). No I/O happens until the first acquire.
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
        let per_thread = PerThread::new();
        // Validates the path, and is this thread's value from now on.
        per_thread.get(|| Ok(client.client.mutex(path)?.reentrant(reentrant)))?;
        out.write(boxed(
            Shape::Mutex {
                client: client.client.clone(),
                path: path.to_owned(),
                reentrant,
                per_thread,
            },
            client,
        ));
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
        let shared = Arc::new(RwShared {
            client: client.client.clone(),
            path: path.to_owned(),
            per_thread: PerThread::new(),
        });
        shared.per_thread.get(|| client.client.rw_lock(path))?;
        read_side.write(boxed(
            Shape::Rw {
                shared: shared.clone(),
                write: false,
            },
            client,
        ));
        write_side.write(boxed(
            Shape::Rw {
                shared,
                write: true,
            },
            client,
        ));
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
        if n == 0 {
            return Err(Failure::invalid(
                "a multi-lock needs at least one path (n is 0)",
            ));
        }
        let paths = (0..n)
            .map(|i| str_arg(paths.add(i).read(), &format!("paths[{i}]")).map(str::to_owned))
            .collect::<Result<Vec<_>, _>>()?;
        let shape = Shape::Multi {
            client: client.client.clone(),
            paths,
            per_thread: PerThread::new(),
        };
        let lock = zklock_lock {
            shape,
            callbacks: client.callbacks.clone(),
        };
        lock.holder()?; // validates the paths and the set
        out.write(handles::register(Box::into_raw(Box::new(lock)), Kind::Lock));
        Ok(())
    })
}

/// Frees a lock handle. Leases taken through it stay valid (release them as usual); no call on
/// this handle may be running or start afterwards. NULL is a no-op; a handle already freed is
/// detected in the common case (nothing happens and `zklock_last_error()` says so).
#[no_mangle]
pub unsafe extern "C" fn zklock_lock_free(lock: *mut zklock_lock) {
    guard_value((), || {
        if !lock.is_null() {
            handles::unregister(lock, Kind::Lock, "lock")?;
            drop(Box::from_raw(lock));
        }
        Ok(())
    })
}

/// Acquires the lock, blocking the calling thread: `timeout_ms` -1 waits forever, 0 tries once,
/// a positive value waits at most that many milliseconds (`ZKLOCK_TIMEOUT` after it). A timed-out
/// or failed acquire leaves no node behind. On success `*out` gets a lease to give back with
/// `zklock_lease_release`. A thread that already holds the lock through this handle gets a new
/// lease at once (counted); with a write side held, the read side of the same read/write lock
/// is granted (downgrade).
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
        let wait = Wait::from_ms(timeout_ms)?;
        let holder = lock.holder()?;
        match holder.blocking_acquire(wait)? {
            Some(lease) => {
                out.write(zklock_lease::boxed(lease, lock.callbacks.clone()));
                Ok(())
            }
            None => Err(Failure::new(
                zklock_status::ZKLOCK_TIMEOUT,
                format!("{} is held by someone else (try)", lock.describe()),
            )),
        }
    })
}
