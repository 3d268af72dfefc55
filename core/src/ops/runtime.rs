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

/// Runs `fut` in the private runtime's context, polled by the caller's own task: the timers
/// and tasks it makes belong to the private runtime, so any executor may await it (a non-tokio
/// one included), but no task is spawned per call. A spawn from another thread always writes
/// the runtime's eventfd (tokio issue 5207) and its completion wakes the caller once more;
/// polled here, a request only wakes the connection's task, which tokio does not wake again
/// while it is already notified (bench scenario 4: 64 cycles at once over one session).
/// Dropping the future drops `fut` in that context, so cancellation reaches its cleanup guards.
/// A panic in `fut` becomes `Internal`, as a spawned task's did (`Error::from_join`).
pub(crate) fn in_runtime<T, F>(fut: F) -> impl Future<Output = Result<T>> + Send + 'static
where
    F: Future<Output = Result<T>> + Send + 'static,
{
    // Boxed: the caller's future keeps only a pointer while the step runs (memory per
    // waiting lock: a step's state is not stored beside the waiting state).
    InRuntime {
        handle: handle(),
        fut: Some(Box::pin(fut)),
    }
}

struct InRuntime<F> {
    handle: Handle,
    /// `None` once it finished.
    fut: Option<std::pin::Pin<Box<F>>>,
}

impl<T, F: Future<Output = Result<T>>> Future for InRuntime<F> {
    type Output = Result<T>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<T>> {
        use std::task::Poll;
        let this = &mut *self;
        let Some(fut) = this.fut.as_mut() else {
            return Poll::Ready(Err(Error::new(
                crate::ErrorKind::Internal,
                "internal error: a zklock step was polled after it finished (please report it)",
            )));
        };
        let _context = this.handle.enter();
        let polled =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.as_mut().poll(cx)));
        let done = match polled {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(result)) => result,
            Err(_) => Err(Error::new(
                crate::ErrorKind::Internal,
                "internal error: a zklock task panicked (please report it)",
            )),
        };
        this.fut = None;
        Poll::Ready(done)
    }
}

impl<F> Drop for InRuntime<F> {
    fn drop(&mut self) {
        if let Some(fut) = self.fut.take() {
            let _context = self.handle.enter();
            drop(fut);
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

    /// A current-thread runtime with neither timers nor I/O: a step that needed the caller's
    /// runtime for them would panic here.
    fn bare_runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    #[test]
    fn a_step_runs_in_the_callers_task_with_the_private_runtimes_timers() {
        let step = super::in_runtime(async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let (tx, rx) = tokio::sync::oneshot::channel();
            tokio::spawn(async move { tx.send(super::on_runtime_thread()).ok() });
            let spawned_on_runtime = rx.await.unwrap();
            Ok((
                std::thread::current().name().map(str::to_owned),
                spawned_on_runtime,
            ))
        });
        let (name, spawned_on_runtime) = bare_runtime().block_on(step).unwrap();
        assert_eq!(name, std::thread::current().name().map(str::to_owned));
        assert!(
            spawned_on_runtime,
            "a task the step spawns runs on the private runtime"
        );
    }

    #[test]
    fn a_step_that_panics_is_an_internal_error_and_the_caller_goes_on() {
        let step = super::in_runtime(async {
            if std::hint::black_box(true) {
                panic!("a bug in a step");
            }
            Ok(())
        });
        let err = bare_runtime().block_on(step).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Internal);
        assert!(err.to_string().contains("panicked"), "{err}");
    }

    #[test]
    fn block_on_runs_on_the_named_thread() {
        let name = super::block_on(async { Ok(std::thread::current().name().map(str::to_owned)) })
            .unwrap();
        assert_eq!(name.as_deref(), Some("zklock-runtime"));
        assert!(!super::on_runtime_thread());
    }
}
