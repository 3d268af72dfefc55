//! `zklock_client`: one ZooKeeper session, and its options.

use std::ffi::{c_char, c_int, c_void, CString};
use std::mem::{offset_of, size_of};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use zklock::ConnectionState;

use crate::error::{guard, guard_value, zklock_status, Failure};
use crate::gate::CallGate;
use crate::handles::{self, Kind};
use crate::{str_arg, UserPtr};

/// ACL policy for `zklock_client_options.acl`: world:anyone may do anything (the default).
pub const ZKLOCK_ACL_OPEN: i32 = 0;
/// ACL policy: only the authenticated creator (needs `auth`).
pub const ZKLOCK_ACL_CREATOR_ALL: i32 = 1;
/// ACL policy: anyone may read (see the queue), only the creator may change or delete.
pub const ZKLOCK_ACL_READ_ANYONE_CREATOR_ALL: i32 = 2;

/// `zklock_client_options.tls_verify_hostname`: the default (0) and 1 check that a server's
/// certificate names the host dialled; `ZKLOCK_TLS_VERIFY_HOSTNAME_OFF` turns that off (a
/// zeroed struct stays safe).
pub const ZKLOCK_TLS_VERIFY_HOSTNAME_ON: i32 = 1;
/// See `ZKLOCK_TLS_VERIFY_HOSTNAME_ON`.
pub const ZKLOCK_TLS_VERIFY_HOSTNAME_OFF: i32 = 2;

/// A connection to a ZooKeeper ensemble (one session). Opaque; thread-safe: any number of
/// threads may use it and the locks made from it at once. Each client has its own callback
/// thread: the callbacks of its leases and acquires run there, one at a time, so a slow
/// callback delays only the callbacks of the same client.
pub struct zklock_client {
    pub(crate) client: zklock::Client,
    /// This client's callback thread; its locks and leases hold clones, and the thread ends
    /// when the last of them is freed and the callbacks already queued have run.
    pub(crate) callbacks: zklock::CallbackQueue,
    /// The connection-state callback (`zklock_client_on_connection`) and its core listener id.
    connection: Mutex<Option<(u64, Arc<ConnectionWatcher>)>>,
}

/// Where a client's connection stands (the core's `ConnectionState`). `ZKLOCK_CONNECTION_LOST`
/// is reported once per session; a later acquire opens a new session (`ZKLOCK_CONNECTED` again)
/// unless the client was closed.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum zklock_connection_state {
    /// Connected to a server of the ensemble.
    ZKLOCK_CONNECTED = 0,
    /// The connection broke; the session may still be alive (its leases are suspended).
    ZKLOCK_SUSPENDED = 1,
    /// The session ended (expired, given up, or the client closed): its leases are lost.
    ZKLOCK_CONNECTION_LOST = 2,
}

impl From<ConnectionState> for zklock_connection_state {
    fn from(s: ConnectionState) -> Self {
        match s {
            ConnectionState::Connected => zklock_connection_state::ZKLOCK_CONNECTED,
            ConnectionState::Suspended => zklock_connection_state::ZKLOCK_SUSPENDED,
            ConnectionState::Lost => zklock_connection_state::ZKLOCK_CONNECTION_LOST,
        }
    }
}

/// Called on the client's callback thread with the connection's current state, then at every
/// change. It may call any zklock function except `zklock_client_free` of its own client.
pub type zklock_connection_cb = Option<
    unsafe extern "C" fn(
        user: *mut c_void,
        client: *mut zklock_client,
        state: zklock_connection_state,
    ),
>;

type ConnectionCb = unsafe extern "C" fn(*mut c_void, *mut zklock_client, zklock_connection_state);

/// One registered connection callback, gated so that it never runs after it was replaced or
/// its client freed.
struct ConnectionWatcher {
    cb: ConnectionCb,
    user: UserPtr,
    client: UserPtr,
    gate: CallGate,
}

impl zklock_client {
    /// Stops the connection callback, if any: it never runs again once this returns.
    fn stop_connection_callback(&self) {
        let old = self
            .connection
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some((id, watcher)) = old {
            self.client.remove_connection_listener(id);
            watcher.gate.deactivate();
        }
    }
}

/// Calls `cb(user, client, state)` on the client's callback thread with the connection's current
/// state first, then at every change (kazoo's `add_listener`). A later call replaces the
/// callback; `cb` NULL removes it; none runs after `zklock_client_free` returned.
#[no_mangle]
pub unsafe extern "C" fn zklock_client_on_connection(
    client: *mut zklock_client,
    cb: zklock_connection_cb,
    user: *mut c_void,
) -> zklock_status {
    guard(|| {
        let this = handles::get(client, Kind::Client, "client")?;
        this.stop_connection_callback();
        let Some(cb) = cb else { return Ok(()) };
        let watcher = Arc::new(ConnectionWatcher {
            cb,
            user: UserPtr(user),
            client: UserPtr(client.cast()),
            gate: CallGate::new(),
        });
        let w = watcher.clone();
        let id = this
            .client
            .on_connection_in(this.callbacks.clone(), move |state| {
                w.gate
                    .call(|| unsafe { (w.cb)(w.user.0, w.client.0.cast(), state.into()) })
            });
        *this.connection.lock().unwrap_or_else(|e| e.into_inner()) = Some((id, watcher));
        Ok(())
    })
}

/// The connection's state now; `ZKLOCK_CONNECTION_LOST` when `client` is NULL or not a live
/// client (with the last error set).
#[no_mangle]
pub unsafe extern "C" fn zklock_client_connection_state(
    client: *const zklock_client,
) -> zklock_connection_state {
    guard_value(zklock_connection_state::ZKLOCK_CONNECTION_LOST, || {
        Ok(handles::get(client, Kind::Client, "client")?
            .client
            .connection_state()
            .into())
    })
}

/// The tick the lease proof runs on, in milliseconds: the larger of `server_tick_ms` and the
/// tick learned from the servers at connect (half the shortest session they grant: their
/// `tickTime`, or more when the operator raised `minSessionTimeout`). -1 when `client` is NULL
/// or not a live client (with the last error set).
#[no_mangle]
pub unsafe extern "C" fn zklock_client_server_tick_ms(client: *const zklock_client) -> i64 {
    guard_value(-1, || {
        let tick = handles::get(client, Kind::Client, "client")?
            .client
            .server_tick();
        Ok(i64::try_from(tick.as_millis()).unwrap_or(i64::MAX))
    })
}

/// Which ZooKeeper version class answered at connect: "3.5", "3.6" or "3.7+" (a static
/// string; docs/interop.md says what each lacks). NULL when `client` is NULL or not a live
/// client (with the last error set).
#[no_mangle]
pub unsafe extern "C" fn zklock_client_server_version(
    client: *const zklock_client,
) -> *const c_char {
    guard_value(std::ptr::null(), || {
        let class = handles::get(client, Kind::Client, "client")?
            .client
            .server_features()
            .version_class();
        Ok(match class {
            "3.4" => c"3.4".as_ptr(),
            "3.5" => c"3.5".as_ptr(),
            "3.6" => c"3.6".as_ptr(),
            _ => c"3.7+".as_ptr(),
        })
    })
}

/// The name of a `zklock_connection_state` ("connected", "suspended", "lost": the core's
/// names, as every face shows them); "unknown" for another value. A static string.
#[no_mangle]
pub extern "C" fn zklock_connection_state_str(state: c_int) -> *const c_char {
    static NAMES: OnceLock<Vec<CString>> = OnceLock::new();
    guard_value(c"unknown".as_ptr(), || {
        let names = NAMES.get_or_init(|| {
            let name = |s: &ConnectionState| CString::new(s.as_str()).unwrap_or_default();
            ConnectionState::ALL.iter().map(name).collect()
        });
        Ok(ConnectionState::ALL
            .iter()
            .position(|s| zklock_connection_state::from(*s) as c_int == state)
            .map_or(c"unknown".as_ptr(), |i| names[i].as_ptr()))
    })
}

/// Closes the session without freeing the client: every lease taken through it becomes lost,
/// the connection callback hears `ZKLOCK_CONNECTION_LOST`, and later acquires fail with
/// `ZKLOCK_CLOSED`. Free it with `zklock_client_free` as usual. Closing twice is fine.
#[no_mangle]
pub unsafe extern "C" fn zklock_client_close(client: *mut zklock_client) -> zklock_status {
    guard(|| {
        let this = handles::get(client, Kind::Client, "client")?;
        zklock::support::refuse_on_runtime_thread()?;
        this.client.blocking_close();
        Ok(())
    })
}

/// Options of `zklock_client_connect`. Set `size` to `sizeof(zklock_client_options)` (or call
/// `zklock_client_options_init`): the library reads only the fields that fit in `size`, so a
/// program built against an older header keeps working. Zero in a field means its default,
/// except `session_timeout_ms` (0 is `ZKLOCK_INVALID_ARGUMENT`, as in every zklock face).
#[repr(C)]
pub struct zklock_client_options {
    /// `sizeof(zklock_client_options)` as the caller knows it.
    pub size: usize,
    /// Session timeout asked of the server, in milliseconds (at least 100; the default that
    /// `zklock_client_options_init` sets is 10000; 0 is `ZKLOCK_INVALID_ARGUMENT`).
    pub session_timeout_ms: i64,
    /// How long connect keeps trying before it fails with `ZKLOCK_CONNECTION`, in milliseconds
    /// (0: 15000).
    pub connect_timeout_ms: i64,
    /// Digest credentials "user:password", or NULL.
    pub auth: *const c_char,
    /// `ZKLOCK_ACL_OPEN` (0), `ZKLOCK_ACL_CREATOR_ALL` or `ZKLOCK_ACL_READ_ANYONE_CREATOR_ALL`.
    pub acl: i32,
    /// Identity written into our lock nodes (NULL: "host/pid").
    pub identity: *const c_char,
    /// PEM file of the CA that signed the servers' certificates: TLS to every server (NULL: no
    /// TLS). This and the next two also take PEM text itself (a string holding "-----BEGIN "),
    /// which no error message ever shows.
    pub tls_ca: *const c_char,
    /// PEM files (or text) of a client certificate and its key (both or neither; need `tls_ca`).
    pub tls_cert: *const c_char,
    pub tls_key: *const c_char,
    /// 0 (default) or `ZKLOCK_TLS_VERIFY_HOSTNAME_ON`: check the host name;
    /// `ZKLOCK_TLS_VERIFY_HOSTNAME_OFF`: do not.
    pub tls_verify_hostname: i32,
    /// SASL DIGEST-MD5 user and password, or NULL (a wrong password is `ZKLOCK_PERMISSION`).
    pub sasl_user: *const c_char,
    pub sasl_password: *const c_char,
    /// The ensemble's tickTime in milliseconds (0: the tick learned from the servers at connect;
    /// a value here can raise it, never lower it); the lost signal's deadline depends on it. A
    /// session shorter than four ticks is `ZKLOCK_INVALID_ARGUMENT` at connect.
    pub server_tick_ms: i64,
    /// How many lock paths get statistics of their own (per-path series in
    /// `zklock_client_openmetrics`); the acquires on later paths are counted together in one
    /// overflow series. 0 turns them off; `zklock_client_options_init` sets the default, 1000;
    /// negative or above 1000000 is `ZKLOCK_INVALID_ARGUMENT` at connect.
    pub path_stats_limit: i64,
}

/// Fills `opts` with the defaults and sets its `size`. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn zklock_client_options_init(opts: *mut zklock_client_options) {
    guard_value((), || {
        if !opts.is_null() {
            opts.write(zklock_client_options {
                size: size_of::<zklock_client_options>(),
                session_timeout_ms: 10_000,
                connect_timeout_ms: 15_000,
                auth: std::ptr::null(),
                acl: ZKLOCK_ACL_OPEN,
                identity: std::ptr::null(),
                tls_ca: std::ptr::null(),
                tls_cert: std::ptr::null(),
                tls_key: std::ptr::null(),
                tls_verify_hostname: 0,
                sasl_user: std::ptr::null(),
                sasl_password: std::ptr::null(),
                server_tick_ms: 0,
                path_stats_limit: zklock::DEFAULT_PATH_STATS_LIMIT as i64,
            });
        }
        Ok(())
    })
}

/// Whether a field ending at `end` bytes fits in the caller's `size`.
fn fits(size: usize, end: usize) -> bool {
    size >= end
}

/// Checks the caller's `size` against ours: smaller than the first version or larger with
/// non-zero unknown bytes (options this library does not know) is an error.
pub(crate) unsafe fn check_size(
    base: *const u8,
    size: usize,
    ours: usize,
    what: &str,
) -> Result<(), Failure> {
    if size < size_of::<usize>() {
        return Err(Failure::invalid(format!(
            "{what}.size is {size}; set it to sizeof({what})"
        )));
    }
    if size > ours {
        let extra = std::slice::from_raw_parts(base.add(ours), size - ours);
        if extra.iter().any(|b| *b != 0) {
            return Err(Failure::invalid(format!(
                "{what}.size is {size} but this libzklock knows {ours} bytes of it, and the rest sets options it does not support"
            )));
        }
    }
    Ok(())
}

unsafe fn read_options(opts: *const zklock_client_options) -> Result<zklock::Options, Failure> {
    let mut options = zklock::Options::default();
    if opts.is_null() {
        return Ok(options);
    }
    let size = std::ptr::addr_of!((*opts).size).read();
    check_size(
        opts.cast(),
        size,
        size_of::<zklock_client_options>(),
        "zklock_client_options",
    )?;
    macro_rules! field {
        ($name:ident, $ty:ty) => {{
            if fits(
                size,
                offset_of!(zklock_client_options, $name) + size_of::<$ty>(),
            ) {
                Some(std::ptr::addr_of!((*opts).$name).read())
            } else {
                None
            }
        }};
    }
    let ms = |v: i64, what: &str| -> Result<Option<Duration>, Failure> {
        if v == 0 {
            Ok(None)
        } else {
            Ok(Some(zklock::support::duration_from_millis_i64(v, what)?))
        }
    };
    // Zero is no default here: a session timeout of 0 is refused, as in every face.
    if let Some(v) = field!(session_timeout_ms, i64) {
        options.session_timeout =
            zklock::support::duration_from_millis_i64(v, "session_timeout_ms")?;
    }
    if let Some(d) = ms(
        field!(connect_timeout_ms, i64).unwrap_or(0),
        "connect_timeout_ms",
    )? {
        options.connect_timeout = d;
    }
    if let Some(d) = ms(field!(server_tick_ms, i64).unwrap_or(0), "server_tick_ms")? {
        options.server_tick = Some(d);
    }
    if let Some(limit) = field!(path_stats_limit, i64) {
        options.path_stats_limit = zklock::support::path_stats_limit_from_i64(limit)?;
    }
    if let Some(auth) = field!(auth, *const c_char).filter(|p| !p.is_null()) {
        options.auth = Some(str_arg(auth, "zklock_client_options.auth")?.to_owned());
    }
    options.acl = match field!(acl, i32).unwrap_or(ZKLOCK_ACL_OPEN) {
        ZKLOCK_ACL_OPEN => zklock::AclPolicy::Open,
        ZKLOCK_ACL_CREATOR_ALL => zklock::AclPolicy::CreatorAll,
        ZKLOCK_ACL_READ_ANYONE_CREATOR_ALL => zklock::AclPolicy::ReadAnyoneCreatorAll,
        other => {
            return Err(Failure::invalid(format!(
                "zklock_client_options.acl is {other}; use one of the ZKLOCK_ACL_ constants"
            )))
        }
    };
    if let Some(identity) = field!(identity, *const c_char).filter(|p| !p.is_null()) {
        options.identity = Some(str_arg(identity, "zklock_client_options.identity")?.to_owned());
    }
    macro_rules! text {
        ($name:ident) => {
            match field!($name, *const c_char).filter(|p| !p.is_null()) {
                Some(p) => Some(
                    str_arg(p, concat!("zklock_client_options.", stringify!($name)))?.to_owned(),
                ),
                None => None,
            }
        };
    }
    let tls_verify_hostname = match field!(tls_verify_hostname, i32).unwrap_or(0) {
        0 => None,
        ZKLOCK_TLS_VERIFY_HOSTNAME_ON => Some(true),
        ZKLOCK_TLS_VERIFY_HOSTNAME_OFF => Some(false),
        other => {
            return Err(Failure::invalid(format!(
                "zklock_client_options.tls_verify_hostname is {other}; use 0 or one of the ZKLOCK_TLS_VERIFY_HOSTNAME_ constants"
            )))
        }
    };
    let options = zklock::SecureParts {
        tls_ca: text!(tls_ca),
        tls_cert: text!(tls_cert),
        tls_key: text!(tls_key),
        tls_verify_hostname,
        sasl_user: text!(sasl_user),
        sasl_password: text!(sasl_password),
    }
    .apply(options)?;
    Ok(options)
}

/// The `ZKLOCK_ACL_` constant of an ACL policy named as in every zklock face: "open",
/// "creator-all" or "read-anyone-creator-all" (for a policy read from configuration). Any other
/// name is `ZKLOCK_INVALID_ARGUMENT`, and `*acl` is left alone.
#[no_mangle]
pub unsafe extern "C" fn zklock_acl_from_str(name: *const c_char, acl: *mut i32) -> zklock_status {
    guard(|| {
        let name = str_arg(name, "name")?;
        if acl.is_null() {
            return Err(Failure::null("acl"));
        }
        acl.write(match name.parse::<zklock::AclPolicy>()? {
            zklock::AclPolicy::Open => ZKLOCK_ACL_OPEN,
            zklock::AclPolicy::CreatorAll => ZKLOCK_ACL_CREATOR_ALL,
            zklock::AclPolicy::ReadAnyoneCreatorAll => ZKLOCK_ACL_READ_ANYONE_CREATOR_ALL,
        });
        Ok(())
    })
}

/// Connects to `hosts` ("host:port,host:port/optional/chroot"); `opts` NULL means defaults.
/// Blocks until the session is established or the connect timeout passes
/// (`ZKLOCK_CONNECTION`). On success `*out` gets a client to free with `zklock_client_free`.
#[no_mangle]
pub unsafe extern "C" fn zklock_client_connect(
    hosts: *const c_char,
    opts: *const zklock_client_options,
    out: *mut *mut zklock_client,
) -> zklock_status {
    guard(|| {
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        let hosts = str_arg(hosts, "hosts")?;
        let options = read_options(opts)?;
        // The client's own callback thread first: when the system refuses it, no session was
        // opened for nothing.
        let callbacks = zklock::CallbackQueue::own_thread()?;
        let client = zklock::Client::blocking_connect(hosts, options)?;
        let handle = Box::into_raw(Box::new(zklock_client {
            client,
            callbacks,
            connection: Mutex::new(None),
        }));
        out.write(handles::register(handle, Kind::Client));
        Ok(())
    })
}

/// Closes the session (every lease taken through it becomes lost; locks made from it then fail
/// with `ZKLOCK_CLOSED`) and frees the client. Locks and leases made from it stay valid to free.
/// NULL is a no-op; a client already freed is detected in the common case (nothing happens and
/// `zklock_last_error()` says so).
#[no_mangle]
pub unsafe extern "C" fn zklock_client_free(client: *mut zklock_client) {
    guard_value((), || {
        if !client.is_null() {
            handles::unregister(client, Kind::Client, "client")?;
            let client = Box::from_raw(client);
            client.stop_connection_callback();
            client.client.blocking_close();
        }
        Ok(())
    })
}

/// Borrows a live client handle (NULL, freed or not a client: `ZKLOCK_INVALID_ARGUMENT`).
pub(crate) unsafe fn client_ref<'a>(
    client: *const zklock_client,
) -> Result<&'a zklock_client, Failure> {
    handles::get(client, Kind::Client, "client")
}
