//! The private runtime: one tokio runtime on a dedicated, named thread per process, started on
//! first use and shared by every client. All ZooKeeper I/O, watches and lease bookkeeping run
//! here, so callers may be plain threads (the blocking twins), another runtime, or a binding.
//!
//! After `fork()` the child has no runtime thread; the first use in the child notices the new pid
//! and starts a fresh runtime. The ZooKeeper transport (async-io's process-wide reactor) does not
//! survive a fork once it has been used, so a child forked after its parent connected cannot
//! connect: `Client::connect` says so at once (`Closed`) instead of timing out, and clients made
//! before the fork refuse to work in the child.

use std::future::Future;
use std::sync::Mutex;

use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use crate::error::{Error, Result};

struct Started {
    pid: u32,
    handle: Handle,
    callbacks: std::sync::mpsc::Sender<Callback>,
}

type Callback = Box<dyn FnOnce() + Send>;

static RUNTIME: Mutex<Option<Started>> = Mutex::new(None);

/// The handle of this process's runtime, started if needed.
pub fn handle() -> Handle {
    with_started(|s| s.handle.clone())
}

/// Queues `f` to run on the library's callback thread. User callbacks (lost, state changes,
/// async completions) run there, never on the runtime thread and never under an internal lock,
/// so they may call any zklock function, blocking ones included.
pub fn run_callback(f: impl FnOnce() + Send + 'static) {
    with_started(|s| s.callbacks.send(Box::new(f)).ok());
}

fn with_started<T>(f: impl FnOnce(&Started) -> T) -> T {
    let pid = std::process::id();
    let mut slot = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    match slot.as_ref() {
        Some(started) if started.pid == pid => f(started),
        _ => {
            let started = Started {
                pid,
                handle: start(),
                callbacks: start_callback_thread(),
            };
            f(slot.insert(started))
        }
    }
}

fn start_callback_thread() -> std::sync::mpsc::Sender<Callback> {
    let (tx, rx) = std::sync::mpsc::channel::<Callback>();
    std::thread::Builder::new()
        .name("zklock-callbacks".into())
        .spawn(move || {
            for callback in rx {
                // A panicking user callback must not kill the thread that serves the others.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(callback));
            }
        })
        .expect("zklock: cannot spawn the callback thread");
    tx
}

fn start() -> Handle {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("zklock-runtime".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("zklock: cannot build the tokio runtime");
            tx.send(rt.handle().clone()).ok();
            // Park the runtime forever; the thread ends with the process.
            rt.block_on(std::future::pending::<()>());
        })
        .expect("zklock: cannot spawn the runtime thread");
    rx.recv()
        .expect("zklock: runtime thread died while starting")
}

/// The pid the runtime was started in (for fork detection by clients).
pub(crate) fn current_pid() -> u32 {
    std::process::id()
}

/// The process that first opened a ZooKeeper connection (the transport's reactor lives there).
static TRANSPORT_PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

/// Records this process as the transport's, or fails in a child forked after the parent used it.
pub(crate) fn claim_transport() -> Result<()> {
    let pid = *TRANSPORT_PID.get_or_init(std::process::id);
    if pid == std::process::id() {
        Ok(())
    } else {
        Err(Error::closed(
            "this process was forked after its parent connected to ZooKeeper, and the connection machinery does not survive fork(); \
             fork before the first client connects, or start child processes fresh (exec, or a spawn/forkserver start method)",
        ))
    }
}

/// Runs `fut` on the private runtime.
pub fn spawn<F>(fut: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    handle().spawn(fut)
}

/// True when the caller runs on the private runtime's thread (blocking there would deadlock).
pub fn on_runtime_thread() -> bool {
    std::thread::current().name() == Some("zklock-runtime")
}

/// Runs `fut` on the private runtime and blocks the calling thread until it finishes.
/// This is the engine of every blocking twin.
pub fn block_on<F, T>(fut: F) -> Result<T>
where
    F: Future<Output = Result<T>> + Send + 'static,
    T: Send + 'static,
{
    if on_runtime_thread() {
        return Err(Error::invalid("a blocking zklock call was made on the zklock runtime thread; use the async form there"));
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    spawn(async move {
        tx.send(fut.await).ok();
    });
    rx.recv()
        .unwrap_or_else(|_| Err(Error::closed("the zklock runtime stopped")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn block_on_runs_on_the_named_thread() {
        let name = super::block_on(async { Ok(std::thread::current().name().map(str::to_owned)) })
            .unwrap();
        assert_eq!(name.as_deref(), Some("zklock-runtime"));
        assert!(!super::on_runtime_thread());
    }
}
