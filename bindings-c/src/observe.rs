//! Observing locks from C: a client's statistics (`zklock_client_stats`), the core's log records
//! through a callback (`zklock_set_log_callback`), and writes guarded by a lease
//! (`zklock_lease_guarded_write`). The core counts, decides the levels and runs the writes; this
//! only lays them out for C.

use std::ffi::{c_char, c_int, c_void, CString};
use std::mem::{offset_of, size_of};
use std::sync::Arc;

use crate::client::{check_size, zklock_client};
use crate::error::{guard, zklock_status, Failure};
use crate::handles::{self, Kind};
use crate::lease::zklock_lease;
use crate::{str_arg, UserPtr};

/// Log level of a record: an error.
pub const ZKLOCK_LOG_ERROR: c_int = 1;
/// Log level: a lease state change (suspended, held again, lost), a broken connection, an
/// expired session.
pub const ZKLOCK_LOG_WARN: c_int = 2;
/// Log level: a new session, a reconnect.
pub const ZKLOCK_LOG_INFO: c_int = 3;
/// Log level: every settled acquire (path, kind, outcome, wait).
pub const ZKLOCK_LOG_DEBUG: c_int = 4;

/// Percentiles of recorded times, in microseconds: each the upper bound of a log bucket at most
/// a quarter wider than the time, never above `max_us`, which is exact.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct zklock_percentiles {
    /// How many times were recorded.
    pub count: u64,
    pub p50_us: i64,
    pub p90_us: i64,
    pub p99_us: i64,
    pub max_us: i64,
}

/// A client's lock statistics, counted by the core since the client connected. Set `size` to
/// `sizeof(zklock_stats)`: the library writes only the fields that fit in it, so a program built
/// against an older header keeps working.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct zklock_stats {
    /// `sizeof(zklock_stats)` as the caller knows it.
    pub size: usize,
    /// Acquires that got the lock (a re-entrant acquire, which only counts up, is not one).
    pub acquired: u64,
    /// Acquires whose deadline passed (a failed try included).
    pub timed_out: u64,
    /// Acquires cancelled by `zklock_op_cancel`.
    pub cancelled: u64,
    /// Acquires that failed otherwise.
    pub failed: u64,
    /// How long acquired locks were waited for.
    pub wait: zklock_percentiles,
    /// How long leases were held, until released or lost.
    pub hold: zklock_percentiles,
    /// Leases held now.
    pub held: u64,
    /// Acquires waiting now.
    pub waiting: u64,
    /// Times a held lease turned suspended.
    pub suspended: u64,
    /// Times a lease turned lost.
    pub lost: u64,
    /// Times the connection came back to the same session.
    pub reconnects: u64,
    /// Sessions that expired.
    pub session_expiries: u64,
}

fn percentiles(p: zklock::Percentiles) -> zklock_percentiles {
    let us = |d: std::time::Duration| i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
    zklock_percentiles {
        count: p.count,
        p50_us: us(p.p50),
        p90_us: us(p.p90),
        p99_us: us(p.p99),
        max_us: us(p.max),
    }
}

/// The end of the last field of `zklock_stats` (a percentiles' own fields counted one by one)
/// that lies wholly within the first `size` bytes.
fn whole_fields_end(size: usize) -> usize {
    let scalar = |offset: usize, width: usize| offset + width;
    let pct = |base: usize| {
        [
            offset_of!(zklock_percentiles, count),
            offset_of!(zklock_percentiles, p50_us),
            offset_of!(zklock_percentiles, p90_us),
            offset_of!(zklock_percentiles, p99_us),
            offset_of!(zklock_percentiles, max_us),
        ]
        .map(|o| scalar(base + o, 8))
    };
    let (wait, hold) = (
        pct(offset_of!(zklock_stats, wait)),
        pct(offset_of!(zklock_stats, hold)),
    );
    let ends = [
        scalar(offset_of!(zklock_stats, size), size_of::<usize>()),
        scalar(offset_of!(zklock_stats, acquired), 8),
        scalar(offset_of!(zklock_stats, timed_out), 8),
        scalar(offset_of!(zklock_stats, cancelled), 8),
        scalar(offset_of!(zklock_stats, failed), 8),
    ]
    .into_iter()
    .chain(wait)
    .chain(hold)
    .chain(
        [
            offset_of!(zklock_stats, held),
            offset_of!(zklock_stats, waiting),
            offset_of!(zklock_stats, suspended),
            offset_of!(zklock_stats, lost),
            offset_of!(zklock_stats, reconnects),
            offset_of!(zklock_stats, session_expiries),
        ]
        .map(|o| scalar(o, 8)),
    );
    ends.filter(|&end| end <= size).max().unwrap_or(0)
}

/// `client`'s statistics as OpenMetrics text (what Prometheus scrapes), each sample labelled
/// `client="<id>"`. With `buf` NULL (and `cap` 0) only `*len` is written: the bytes the text
/// needs, its terminating NUL included. Otherwise, when it fits in `cap` bytes, `buf` gets the
/// text and its NUL and `*len` the same count; when it does not fit, nothing is written and the
/// status is `ZKLOCK_INVALID_ARGUMENT` (`zklock_last_error()` says how many bytes it needs).
#[no_mangle]
pub unsafe extern "C" fn zklock_client_openmetrics(
    client: *const zklock_client,
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
) -> zklock_status {
    guard(|| {
        let client = handles::get(client, Kind::Client, "client")?;
        if len.is_null() {
            return Err(Failure::null("len"));
        }
        let text = client.client.openmetrics(&[]);
        let needed = text.len() + 1;
        if buf.is_null() {
            *len = needed;
            return Ok(());
        }
        if cap < needed {
            return Err(Failure::invalid(format!(
                "the OpenMetrics text needs {needed} bytes, the buffer has {cap}"
            )));
        }
        std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), text.len());
        *buf.add(text.len()) = 0;
        *len = needed;
        Ok(())
    })
}

/// Writes `client`'s statistics into `*out`, whose `size` the caller set (see `zklock_stats`).
/// Works after the session was closed too.
#[no_mangle]
pub unsafe extern "C" fn zklock_client_stats(
    client: *const zklock_client,
    out: *mut zklock_stats,
) -> zklock_status {
    guard(|| {
        let client = handles::get(client, Kind::Client, "client")?;
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        let size = std::ptr::addr_of!((*out).size).read();
        let ours = size_of::<zklock_stats>();
        check_size(out.cast(), size.min(ours), ours, "zklock_stats")?;
        let s = client.client.stats();
        let stats = zklock_stats {
            size,
            acquired: s.acquired,
            timed_out: s.timed_out,
            cancelled: s.cancelled,
            failed: s.failed,
            wait: percentiles(s.wait),
            hold: percentiles(s.hold),
            held: s.held,
            waiting: s.waiting,
            suspended: s.suspended,
            lost: s.lost,
            reconnects: s.reconnects,
            session_expiries: s.session_expiries,
        };
        // Only the whole fields the caller's struct has (a `size` ending inside a field gets
        // none of that field: half a counter would read as a wrong number, not an absent one);
        // `size` itself stays as the caller set it.
        let n = whole_fields_end(size.min(ours));
        std::ptr::copy_nonoverlapping(
            (&stats as *const zklock_stats).cast::<u8>(),
            out.cast::<u8>(),
            n,
        );
        Ok(())
    })
}

/// Receives the core's log records: `level` (`ZKLOCK_LOG_WARN`, ...), `event` ("acquire",
/// "state", "session"), a message for people, and `fields`, the record's fields as `key=value`
/// lines (`path`, `kind`, `outcome`, `wait_ms`, `node`, `state`, `session`, `reason`). The
/// strings are valid during the call only. Runs on zklock's callback thread, one record at a
/// time, in order; it may call any zklock function.
pub type zklock_log_cb = Option<
    unsafe extern "C" fn(
        user: *mut c_void,
        level: c_int,
        event: *const c_char,
        message: *const c_char,
        fields: *const c_char,
    ),
>;

/// Installs the process's log callback for the records up to `max_level` (`ZKLOCK_LOG_ERROR`
/// .. `ZKLOCK_LOG_DEBUG`), replacing any earlier one; `cb` NULL removes it. Quiet by default:
/// without a callback nothing is formatted.
#[no_mangle]
pub unsafe extern "C" fn zklock_set_log_callback(
    max_level: c_int,
    cb: zklock_log_cb,
    user: *mut c_void,
) -> zklock_status {
    guard(|| {
        use zklock::support::LogLevel;
        let Some(cb) = cb else {
            zklock::support::set_log_sink(None);
            return Ok(());
        };
        let level = match max_level {
            ZKLOCK_LOG_ERROR => LogLevel::Error,
            ZKLOCK_LOG_WARN => LogLevel::Warn,
            ZKLOCK_LOG_INFO => LogLevel::Info,
            ZKLOCK_LOG_DEBUG => LogLevel::Debug,
            other => {
                return Err(Failure::invalid(format!(
                    "max_level is {other}; use ZKLOCK_LOG_ERROR .. ZKLOCK_LOG_DEBUG"
                )))
            }
        };
        let user = UserPtr(user);
        let sink: Arc<dyn Fn(&zklock::support::LogRecord) + Send + Sync> = Arc::new(move |r| {
            let text = |s: &str| CString::new(s.replace('\0', " ")).unwrap_or_default();
            let fields: String = r.fields.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
            let (event, message, fields) = (text(r.event), text(&r.message), text(&fields));
            let level = match r.level {
                LogLevel::Error => ZKLOCK_LOG_ERROR,
                LogLevel::Warn => ZKLOCK_LOG_WARN,
                LogLevel::Info => ZKLOCK_LOG_INFO,
                LogLevel::Debug => ZKLOCK_LOG_DEBUG,
            };
            let user = user;
            // A panic must not unwind into the callback thread's loop (nor C into Rust).
            let _ = std::panic::catch_unwind(|| unsafe {
                cb(
                    user.0,
                    level,
                    event.as_ptr(),
                    message.as_ptr(),
                    fields.as_ptr(),
                )
            });
        });
        zklock::support::set_log_sink(Some((level, sink)));
        Ok(())
    })
}

/// One write guarded by a lease: `op` is "create", "set_data" or "delete" (the core's names);
/// `data`/`data_len` the node's data (NULL/0 for none; a "delete" with data is refused).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct zklock_write {
    pub op: *const c_char,
    pub path: *const c_char,
    pub data: *const c_void,
    pub data_len: usize,
    /// Out: after a successful "set_data", the node's new data version (-1 for other ops or
    /// when the batch failed).
    pub version: i32,
}

/// Runs `count` writes as one ZooKeeper multi request with a check that `lease`'s lock node
/// still exists: all apply or none. `ZKLOCK_LOST` when the lease was lost (nothing applied);
/// the failing write's status (e.g. `ZKLOCK_ZOOKEEPER`, the write named in
/// `zklock_last_error()`) when one fails (nothing applied either); `ZKLOCK_OUTCOME_UNKNOWN`
/// when the connection broke after the batch was sent (it may have been applied); `count` 0
/// only checks that the lock is still ours. On a suspended lease the batch waits for the
/// reconnect. Blocks until ZooKeeper answered.
#[no_mangle]
pub unsafe extern "C" fn zklock_lease_guarded_write(
    lease: *const zklock_lease,
    writes: *mut zklock_write,
    count: usize,
) -> zklock_status {
    guard(|| guarded_write(lease, writes, count, None))
}

/// `zklock_lease_guarded_write` within `timeout_ms` (`zklock_acquire`'s rule, -1 no bound):
/// `ZKLOCK_TIMEOUT` when it passed before the batch was sent (nothing applied; 0 always),
/// `ZKLOCK_OUTCOME_UNKNOWN` when it passed after.
#[no_mangle]
pub unsafe extern "C" fn zklock_lease_guarded_write_timeout(
    lease: *const zklock_lease,
    writes: *mut zklock_write,
    count: usize,
    timeout_ms: i64,
) -> zklock_status {
    guard(|| {
        let timeout = zklock::Wait::from_millis_i64(timeout_ms)?.time_left();
        guarded_write(lease, writes, count, timeout)
    })
}

/// The body of both guarded-write calls: reads the C writes, runs them, writes the versions.
unsafe fn guarded_write(
    lease: *const zklock_lease,
    writes: *mut zklock_write,
    count: usize,
    timeout: Option<std::time::Duration>,
) -> Result<(), Failure> {
    let lease = handles::get(lease, Kind::Lease, "lease")?;
    if writes.is_null() && count > 0 {
        return Err(Failure::null("writes"));
    }
    let mut batch = Vec::with_capacity(count);
    for i in 0..count {
        std::ptr::addr_of_mut!((*writes.add(i)).version).write(-1);
    }
    for i in 0..count {
        let w = writes.add(i).read();
        let op = str_arg(w.op, &format!("writes[{i}].op"))?;
        let path = str_arg(w.path, &format!("writes[{i}].path"))?;
        let data = match (w.data.is_null(), w.data_len) {
            (true, 0) => None,
            (true, _) => return Err(Failure::null(&format!("writes[{i}].data"))),
            (false, n) => Some(std::slice::from_raw_parts(w.data.cast::<u8>(), n).to_vec()),
        };
        batch.push(zklock::Write::from_op(op, path, data)?);
    }
    let guarded = lease
        .guarded()
        .ok_or_else(|| Failure::new(zklock_status::ZKLOCK_NOT_HELD, "the lease was released"))?;
    zklock::support::refuse_on_runtime_thread()?;
    let done = guarded.blocking_write_timeout(batch, timeout)?;
    for (i, w) in done.into_iter().enumerate().take(count) {
        if let zklock::Written::Set { version } = w {
            std::ptr::addr_of_mut!((*writes.add(i)).version).write(version);
        }
    }
    Ok(())
}
