//! The private runtime: one tokio runtime on a dedicated, named thread per process, started on
//! first use and shared by every client. All ZooKeeper I/O, watches and lease bookkeeping run
//! here, so callers may be plain threads (the blocking twins), another runtime, or a binding.
//!
//! After `fork()` the child has no runtime thread; the first use in the child notices the new pid
//! and starts a fresh runtime, so a child makes and uses clients of its own as any process does
//! (prefork servers import module-level clients, then fork workers: issue 33). Clients made
//! before the fork belong to the parent: their connections and tasks live on the parent's
//! runtime thread, which the child does not have, and their sockets are the parent's. In the
//! child such a client reads as closed and every call fails with `Closed` saying it was
//! inherited across fork(); closing or dropping it there touches nothing the parent uses.

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use crate::base::error::{Error, Result};

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

/// Queues `f` to run on the library's process-wide callback thread. User callbacks (lost, state
/// changes, async completions) run there, never on the runtime thread and never under an
/// internal lock, so they may call any zklock function, blocking ones included. One slow
/// callback delays every later one on this thread; a face that wants one client's callbacks
/// kept apart from another's gives each client a [`CallbackQueue`].
pub fn run_callback(f: impl FnOnce() + Send + 'static) {
    with_started(|s| s.callbacks.send(Box::new(f)).ok());
}

/// Where callbacks run: the process-wide callback thread ([`CallbackQueue::process`]) or a
/// thread of its own ([`CallbackQueue::own_thread`], one per client in the C face), so that a
/// slow callback of one client cannot delay another client's notifications (a LOST among
/// them). Callbacks on one queue run one at a time, in order. Clones share the queue; an own
/// thread ends once every clone is dropped and the callbacks already queued have run.
#[derive(Clone)]
pub struct CallbackQueue {
    own: Option<std::sync::mpsc::Sender<Callback>>,
}

impl std::fmt::Debug for CallbackQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.own.is_some() {
            "CallbackQueue(own thread)"
        } else {
            "CallbackQueue(process)"
        })
    }
}

impl CallbackQueue {
    /// The process-wide callback thread (what [`run_callback`] uses).
    pub fn process() -> CallbackQueue {
        CallbackQueue { own: None }
    }

    /// A new thread, named `zklock-cb`, that runs this queue's callbacks and ends when the
    /// last clone is dropped and the queue is drained. When the system refuses the thread (its
    /// limit of threads or of memory for their stacks), `Connection`: like a socket refused for
    /// want of descriptors, a resource a client needs could not be had, and a retry may find it;
    /// it is no bug of zklock, which `Internal` would say (issue 27, point 9).
    pub fn own_thread() -> Result<CallbackQueue> {
        Ok(CallbackQueue {
            own: Some(spawn_callback_thread("zklock-cb").map_err(|e| {
                Error::new(
                    crate::ErrorKind::Connection,
                    format!(
                        "cannot start the client's callback thread: the system refused a new \
                         thread ({e}); see its limits (ulimit -u, memory for thread stacks)"
                    ),
                )
            })?),
        })
    }

    /// Queues `f` to run on this queue's thread.
    pub fn run(&self, f: impl FnOnce() + Send + 'static) {
        match &self.own {
            Some(tx) => {
                // The receiving thread ends only after every sender is gone, so this cannot
                // fail while `self` lives; if it ever did, the process thread still runs it.
                if let Err(std::sync::mpsc::SendError(f)) = tx.send(Box::new(f)) {
                    run_callback(f);
                }
            }
            None => run_callback(f),
        }
    }
}

fn with_started<T>(f: impl FnOnce(&Started) -> T) -> T {
    let pid = current_pid();
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
    spawn_callback_thread("zklock-callbacks").expect("zklock: cannot spawn the callback thread")
}

/// A thread that runs the callbacks sent to it, one at a time, until every sender is dropped.
fn spawn_callback_thread(name: &str) -> std::io::Result<std::sync::mpsc::Sender<Callback>> {
    let (tx, rx) = std::sync::mpsc::channel::<Callback>();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            for callback in rx {
                // A panicking user callback must not kill the thread that serves the others.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(callback));
            }
        })?;
    Ok(tx)
}

fn start() -> Handle {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("zklock-runtime".into())
        .spawn(move || {
            block_sigpipe();
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

/// Blocks SIGPIPE on the calling thread, the runtime thread that does all of zklock's socket
/// I/O. The transport writes with write(2), which raises SIGPIPE when the server has reset the
/// connection (a cut link, a restarted server); a C or C++ host that keeps SIGPIPE's default
/// action would die of it (Rust programs, Python and Node ignore it). Blocked on this thread,
/// the signal stays pending and the write fails with EPIPE, which the transport handles as a
/// lost connection. The host's own disposition of SIGPIPE is left alone.
///
/// Unix only (Linux and macOS alike: macOS's write(2) raises SIGPIPE too). Windows has no
/// SIGPIPE: a send on a reset socket fails with WSAECONNRESET, so there is nothing to block.
#[cfg(unix)]
fn block_sigpipe() {
    // SAFETY: plain libc calls on a local, zero-initialised signal set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

#[cfg(not(unix))]
fn block_sigpipe() {}

/// This process's pid (for fork detection by clients), without a system call per check: every
/// re-entrant acquire checks it, and getpid costs 100-300 ns where system calls are dear (about
/// 300 ns in the bench's sandbox, more than the rest of a re-entrant acquire+release). Cached,
/// and forgotten in the child of a fork() by an atfork handler (what glibc's fork, Python's
/// os.fork and multiprocessing run; posix_spawn and vfork children exec at once).
pub fn current_pid() -> u32 {
    static PID: AtomicU32 = AtomicU32::new(0);
    let pid = PID.load(Ordering::Relaxed);
    if pid != 0 {
        return pid;
    }
    // The handler first: a fork after the pid is cached always clears it in the child.
    // Unix only: Windows has no fork (a new process starts from main with an empty cache), so
    // there is nothing to forget and no pthread_atfork to call.
    #[cfg(unix)]
    {
        static HANDLER: std::sync::Once = std::sync::Once::new();
        extern "C" fn forget_pid() {
            PID.store(0, Ordering::Relaxed); // async-signal-safe: one atomic store
        }
        HANDLER.call_once(|| unsafe {
            libc::pthread_atfork(None, None, Some(forget_pid));
        });
    }
    let pid = std::process::id();
    PID.store(pid, Ordering::Relaxed);
    pid
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

/// `InvalidArgument` on the private runtime's thread, where a blocking call would deadlock (the
/// check every blocking call makes, the faces' own waits included).
pub fn refuse_on_runtime_thread() -> Result<()> {
    if on_runtime_thread() {
        return Err(Error::invalid(
            "a blocking zklock call was made on the zklock runtime thread; use the async form there",
        ));
    }
    Ok(())
}

/// Runs `fut` on the private runtime and blocks the calling thread until it finishes.
/// This is the engine of every blocking twin.
pub fn block_on<F, T>(fut: F) -> Result<T>
where
    F: Future<Output = Result<T>> + Send + 'static,
    T: Send + 'static,
{
    refuse_on_runtime_thread()?;
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    spawn(async move {
        tx.send(fut.await).ok();
    });
    rx.recv()
        .unwrap_or_else(|_| Err(Error::closed("the zklock runtime stopped")))
}

/// Runs `fut` on the private runtime and awaits it from any executor. Dropping the returned
/// future aborts the task, so cancellation reaches the runtime (and its cleanup guards).
/// A plain function that spawns at once: the caller's future then holds only the task handle,
/// not a copy of `fut` (memory per waiting lock).
pub(crate) fn on_runtime<T: Send + 'static>(
    fut: impl std::future::Future<Output = Result<T>> + Send + 'static,
) -> impl std::future::Future<Output = Result<T>> + Send + 'static {
    struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);
    impl<T> Drop for AbortOnDrop<T> {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    let mut task = AbortOnDrop(spawn(fut));
    async move {
        match (&mut task.0).await {
            Ok(r) => r,
            Err(e) => Err(Error::from_join(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    #[test]
    fn a_slow_callback_on_one_queue_does_not_delay_another_queue() {
        let slow = super::CallbackQueue::own_thread().unwrap();
        let fast = super::CallbackQueue::own_thread().unwrap();
        slow.run(|| std::thread::sleep(Duration::from_secs(2)));
        let (tx, rx) = std::sync::mpsc::channel();
        let queued = Instant::now();
        fast.run(move || {
            tx.send(std::thread::current().name().map(str::to_owned))
                .unwrap()
        });
        let name = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(
            queued.elapsed() < Duration::from_secs(1),
            "{:?}",
            queued.elapsed()
        );
        assert_eq!(name.as_deref(), Some("zklock-cb"));
    }

    #[test]
    fn an_own_callback_thread_drains_its_queue_and_ends_when_the_last_clone_is_dropped() {
        let queue = super::CallbackQueue::own_thread().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        for i in 0..3 {
            let tx = tx.clone();
            queue.run(move || {
                std::thread::sleep(Duration::from_millis(50));
                tx.send(i).unwrap();
            });
        }
        // A value owned by the thread's last callback is dropped when that thread ends.
        struct OnDrop(std::sync::mpsc::Sender<()>);
        impl Drop for OnDrop {
            fn drop(&mut self) {
                self.0.send(()).ok();
            }
        }
        let guard = OnDrop(done_tx);
        queue.clone().run(move || drop(guard));
        drop(queue);
        drop(tx);
        let got: Vec<i32> = rx.iter().collect();
        assert_eq!(
            got,
            [0, 1, 2],
            "queued callbacks run in order after the drop"
        );
        done_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    }

    #[test]
    fn block_on_runs_on_the_named_thread() {
        let name = super::block_on(async { Ok(std::thread::current().name().map(str::to_owned)) })
            .unwrap();
        assert_eq!(name.as_deref(), Some("zklock-runtime"));
        assert!(!super::on_runtime_thread());
    }
}
