//! What each JS environment (the main thread, each worker) keeps of its own: the clients made
//! in it, closed when it ends, and its end of the core's log (`set_log_sink`), routed by the
//! client each record names.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use napi::sys;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use napi_derive::napi;

use crate::error::{js_err, Code};

/// One record of the core's log ([`zklock::support::LogRecord`]).
#[napi(object)]
pub struct NativeLogRecord {
    pub level: String,
    pub event: String,
    pub message: String,
    pub fields: std::collections::HashMap<String, String>,
}

type LogCallback = ThreadsafeFunction<NativeLogRecord, (), NativeLogRecord, Status, false, true>;

/// Sets this environment's end of the core's log: `callback(record)` on the JS thread for every
/// record up to `level` (`debug`, `info`, `warn`, `error`; the core's names) about a client
/// made in this environment; index.js publishes them on the environment's `zklock` diagnostics
/// channel. Replaces what the environment set before. The callback does not keep the event
/// loop alive.
#[napi(catch_unwind)]
pub fn set_log_sink(env: Env, callback: LogCallback, level: String) -> napi::Result<(), Code> {
    let level = level.parse::<zklock::support::LogLevel>().map_err(js_err)?;
    let registry =
        env_registry(&env).map_err(|e| napi::Error::new(Code("ZKLOCK_INTERNAL"), e.reason))?;
    registry.log.set(Some(callback), level as u8);
    install_log_router();
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Closing with the environment
//
// A session ends when its last handle is dropped, which is usually what happens when its
// environment ends and Node finalizes the environment's objects. Not always: a lease whose
// states are watched (a listener, a read `lease.signal`) is kept by the core's watch task until
// a final state, and that lease keeps its session, so a worker terminated while holding it left
// the lock and the session alive for good (issue 27). index.js's `process.on('exit')` does not
// cover it either: a worker's 'exit' event is not emitted on `terminate()`, nor when the process
// ends while the worker runs. So each environment keeps its clients, and one cleanup hook per
// environment (Node runs them on the environment's own thread as it tears it down, also for a
// worker stopped by `process.exit()` in the main thread) closes the ones still open. Closing
// makes every lease lost, which ends the watch tasks and lets their threadsafe functions go.

/// The clients made in one environment, for its cleanup hook, and its end of the log.
pub(crate) struct EnvClients {
    env: sys::napi_env,
    clients: std::cell::RefCell<Vec<zklock::Client>>,
    log: Arc<EnvLog>,
}

thread_local! {
    /// The registries of the environments living on this thread (one for the main thread or a
    /// worker thread; an embedder may run more), each until its cleanup hook runs.
    static ENV_CLIENTS: std::cell::RefCell<Vec<std::rc::Rc<EnvClients>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// This environment's registry, made (with its cleanup hook) on first use.
pub(crate) fn env_registry(env: &Env) -> napi::Result<std::rc::Rc<EnvClients>> {
    ENV_CLIENTS.with(|all| -> napi::Result<_> {
        let mut all = all.borrow_mut();
        if let Some(r) = all.iter().find(|r| r.env == env.raw()) {
            return Ok(r.clone());
        }
        let r = std::rc::Rc::new(EnvClients {
            env: env.raw(),
            clients: std::cell::RefCell::new(Vec::new()),
            log: Arc::new(EnvLog::default()),
        });
        env.add_env_cleanup_hook(r.clone(), close_env_clients)?;
        log_router().envs.push(Arc::downgrade(&r.log));
        all.push(r.clone());
        Ok(r)
    })
}

pub(crate) fn close_with_environment(env: &Env, client: &zklock::Client) -> napi::Result<()> {
    let registry = env_registry(env)?;
    let mut clients = registry.clients.borrow_mut();
    // Closed clients are dropped here, so that a program that connects and closes clients
    // again and again does not grow the list (nor the log's table of owners).
    let mut closed = Vec::new();
    clients.retain(|c| {
        let open = !c.is_closed();
        if !open {
            closed.push(c.id());
        }
        open
    });
    log_forget(closed);
    clients.push(client.clone());
    log_claim(client.id(), registry.log.clone());
    Ok(())
}

/// The environment ends: closes its open clients, all at once (each waits for ZooKeeper to be
/// told, up to half a second when it cannot be reached), before the thread goes on tearing down.
fn close_env_clients(registry: std::rc::Rc<EnvClients>) {
    let _ = ENV_CLIENTS.try_with(|all| {
        all.borrow_mut()
            .retain(|r| !std::rc::Rc::ptr_eq(r, &registry))
    });
    // Nobody is left to read this environment's records; the others' level may be lower.
    registry.log.set(None, 0);
    install_log_router();
    let clients = registry.clients.take();
    let ids = clients.iter().map(zklock::Client::id).collect();
    let open: Vec<zklock::Client> = clients.into_iter().filter(|c| !c.is_closed()).collect();
    if !open.is_empty() {
        // No panic may cross into Node (this runs from a C callback): the sessions then end
        // with their timeout, as before.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            zklock::support::block_on(async move {
                let closing: Vec<_> = open
                    .into_iter()
                    .map(|c| zklock::support::spawn(async move { c.close().await }))
                    .collect();
                for c in closing {
                    let _ = c.await;
                }
                Ok(())
            })
        }));
    }
    // After the closing, so that the records it emitted are not left waiting for an owner.
    log_forget(ids);
}

// ---------------------------------------------------------------------------------------------
// Logs by environment
//
// The core has one log sink per process, and a worker thread that connected used to take it
// from the main thread (issue 27): the main thread's subscribers heard nothing more, and the
// worker's heard the main thread's records. Each record names its client
// ([`zklock::support::LogRecord`]'s `client`, [`zklock::Client::id`]), so the addon installs one
// router as the core's sink and every environment keeps its own callback and level: a record
// goes to the environment its client was made in, and nowhere else.
//
// A client is claimed by its environment once `connect` has resolved, but it has told of its
// session while connecting. The router runs on the core's callback thread, where records arrive
// in the order they were emitted, and the claim is queued there too, behind every record the
// connect emitted: records of a client nobody has claimed yet wait (a bounded number of them),
// and its claim hands them on, in order, before any later one.

/// One environment's end of the log.
#[derive(Default)]
pub(crate) struct EnvLog {
    /// The JS callback that publishes on the environment's channel; `None` once it ended.
    callback: Mutex<Option<LogCallback>>,
    /// The most verbose level it takes ([`zklock::support::LogLevel`] as `u8`; 0: none).
    level: std::sync::atomic::AtomicU8,
}

impl EnvLog {
    fn set(&self, callback: Option<LogCallback>, level: u8) {
        *self.callback.lock().unwrap_or_else(|e| e.into_inner()) = callback;
        self.level.store(level, Ordering::Release);
    }

    fn level(&self) -> u8 {
        self.level.load(Ordering::Acquire)
    }

    /// Hands `r` to the JS thread when the environment takes records of its level.
    fn publish(&self, r: &zklock::support::LogRecord) {
        if r.level as u8 > self.level() {
            return;
        }
        if let Some(callback) = self
            .callback
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            let record = NativeLogRecord {
                level: r.level.as_str().to_owned(),
                event: r.event.to_owned(),
                message: r.message.clone(),
                fields: r
                    .fields
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), v.clone()))
                    .collect(),
            };
            callback.call(record, ThreadsafeFunctionCallMode::NonBlocking);
        }
    }
}

/// Records of clients not claimed yet are kept up to this many (the oldest go first): enough
/// for the few each connect emits, bounded for clients that are never claimed (a connect whose
/// environment ended before it resolved).
const UNCLAIMED_MAX: usize = 256;

struct LogRouter {
    /// Which environment each client's records go to, by client id.
    owners: std::collections::BTreeMap<u64, Arc<EnvLog>>,
    /// Records of clients that no environment has claimed yet, oldest first.
    unclaimed: std::collections::VecDeque<zklock::support::LogRecord>,
    /// Every environment that set a sink, for the level the core is asked for.
    envs: Vec<std::sync::Weak<EnvLog>>,
}

static LOG_ROUTER: Mutex<LogRouter> = Mutex::new(LogRouter {
    owners: std::collections::BTreeMap::new(),
    unclaimed: std::collections::VecDeque::new(),
    envs: Vec::new(),
});

fn log_router() -> std::sync::MutexGuard<'static, LogRouter> {
    LOG_ROUTER.lock().unwrap_or_else(|e| e.into_inner())
}

/// (Re)installs the router as the core's sink, at the most verbose level any environment takes
/// (none: no sink, so the core formats nothing).
fn install_log_router() {
    let max = {
        let mut router = log_router();
        router.envs.retain(|e| e.strong_count() > 0);
        router
            .envs
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .map(|e| e.level())
            .max()
            .unwrap_or(0)
    };
    use zklock::support::LogLevel;
    let level = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Warn,
        LogLevel::Error,
    ]
    .into_iter()
    .find(|l| *l as u8 == max);
    zklock::support::set_log_sink(level.map(|level| {
        let route: Arc<dyn Fn(&zklock::support::LogRecord) + Send + Sync> = Arc::new(log_route);
        (level, route)
    }));
}

/// The core's sink (on its callback thread): the record to its client's environment, or kept
/// until the client is claimed.
fn log_route(r: &zklock::support::LogRecord) {
    let mut router = log_router();
    match router.owners.get(&r.client).cloned() {
        Some(owner) => {
            drop(router);
            owner.publish(r);
        }
        None => {
            if router.unclaimed.len() == UNCLAIMED_MAX {
                router.unclaimed.pop_front();
            }
            router.unclaimed.push_back(r.clone());
        }
    }
}

/// `client`'s records go to `log` from now on, the ones it emitted while connecting first.
pub(crate) fn log_claim(client: u64, log: Arc<EnvLog>) {
    // Queued on the callback thread, behind the records the connect emitted (see above).
    zklock::support::run_callback(move || {
        let mut router = log_router();
        router.owners.insert(client, log.clone());
        let (mine, rest) = std::mem::take(&mut router.unclaimed)
            .into_iter()
            .partition::<Vec<_>, _>(|r| r.client == client);
        router.unclaimed = rest.into();
        drop(router);
        for r in &mine {
            log.publish(r);
        }
    });
}

/// Closed clients, or those of an environment that ended: their entries go, after the records
/// they emitted until now (a closed session's last one included) were handed on.
fn log_forget(clients: Vec<u64>) {
    if clients.is_empty() {
        return;
    }
    zklock::support::run_callback(move || {
        let mut router = log_router();
        for c in &clients {
            router.owners.remove(c);
        }
        router.unclaimed.retain(|r| !clients.contains(&r.client));
    });
}
