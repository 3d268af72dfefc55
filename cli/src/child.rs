//! The command that `exec` and `elect` run, as a process: the signals zklock catches and passes
//! on, the process group it runs in, and what stops it when zklock itself dies. Per platform:
//!
//! - Linux: `prctl(PR_SET_PDEATHSIG, SIGTERM)`, the kernel's own parent-death signal.
//! - macOS (and any other Unix): no such call, so a watcher process holds the read end of a
//!   pipe whose write end only zklock holds (the `lifeline` module, below). When zklock dies, however it dies,
//!   the kernel closes its end, the watcher reads end-of-file and sends the command SIGTERM:
//!   the same signal at the same moment as Linux's. No polling (`getppid` every so often) and
//!   no pid to outlive (a kqueue `NOTE_EXIT` on zklock's pid would need the watcher all the
//!   same, since a kqueue does not survive the command's exec); and it is plain POSIX, so the
//!   Linux tests run it too.
//!
//! Its stall is not its death: a zklock stopped (SIGSTOP, a debugger, a freezer cgroup) neither
//! dies nor runs, so on every Unix the command also has a watchdog process that stops it when
//! the lease's `valid_until` passes, whether or not zklock runs ([`crate::watchdog`], issue 50).
//!
//! - Windows: a job object (`JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`, `TerminateJobObject` on a
//!   lost lease, status 143 as on Linux): the `windows` module, below. No watchdog process
//!   there: a zklock suspended as a whole leaves the command running until it resumes.

use std::ffi::OsString;

use crate::status::{self, Failure};

/// What zklock does to the command when the lease is lost, as its message says it.
#[cfg(unix)]
pub const STOPPING: &str = "sending SIGTERM to the command";
#[cfg(windows)]
pub const STOPPING: &str = "ending the command's job (TerminateJobObject, status 143)";

#[cfg(unix)]
pub use unix::{Child, Signals, SIGKILL};
#[cfg(windows)]
pub use windows::{Child, Signals, SIGKILL};

/// Starts `argv` with `env` added; a command that cannot start is a failure (126 or 127).
pub fn spawn(argv: &[OsString], env: &[(&str, String)]) -> Result<Child, Failure> {
    let program = &argv[0];
    let mut command = tokio::process::Command::new(program);
    command.args(&argv[1..]);
    for (name, value) in env {
        command.env(name, value);
    }
    Child::start(command).map_err(|e| {
        let status = if e.kind() == std::io::ErrorKind::NotFound {
            status::NOT_FOUND
        } else {
            status::CANNOT_EXECUTE
        };
        Failure::new(
            status,
            format!("cannot run {}: {e}", program.to_string_lossy()),
        )
    })
}

#[cfg(unix)]
mod unix {
    use std::os::fd::OwnedFd;
    use std::process::ExitStatus;
    use std::time::{Duration, Instant};

    use tokio::signal::unix::{signal, Signal, SignalKind};

    use crate::status::{self, Failure};
    use crate::watchdog::{Fired, Watchdog};

    pub use libc::{SIGKILL, SIGTERM};

    /// SIGINT, SIGTERM and SIGHUP, caught from the start so none kills us with a node behind.
    pub struct Signals {
        int: Signal,
        term: Signal,
        hup: Signal,
    }

    impl Signals {
        pub fn new() -> Result<Signals, Failure> {
            let make = |kind| {
                signal(kind).map_err(|e| Failure::software(format!("cannot catch signals: {e}")))
            };
            Ok(Signals {
                int: make(SignalKind::interrupt())?,
                term: make(SignalKind::terminate())?,
                hup: make(SignalKind::hangup())?,
            })
        }

        pub async fn recv(&mut self) -> i32 {
            tokio::select! {
                _ = self.int.recv() => libc::SIGINT,
                _ = self.term.recv() => libc::SIGTERM,
                _ = self.hup.recv() => libc::SIGHUP,
            }
        }
    }

    /// Where the command runs, which decides who passes signals on to it (issue 33: a signal
    /// sent to zklock's whole process group, `kill -TERM -PGID` after `setsid zklock exec`,
    /// reached the command twice: once from the group, once passed on by zklock).
    #[derive(Clone, Copy)]
    enum Group {
        /// zklock is its terminal's foreground group: the command stays in it, so that it may
        /// read the terminal and Ctrl-C reaches it. SIGINT and SIGHUP from the terminal reach
        /// the whole group, so zklock does not pass those on; SIGTERM (never from the terminal)
        /// it does.
        Terminal,
        /// Anywhere else (no terminal, a background job, a service): the command gets a process
        /// group of its own, so a signal to zklock's group reaches zklock alone, and zklock
        /// passes each one on exactly once, to the command's group (its own children included,
        /// as the group-wide signal would have reached them).
        Own,
    }

    impl Group {
        fn now() -> Group {
            // SAFETY: plain syscalls on a descriptor we own.
            let foreground = unsafe {
                let fd = libc::open(
                    c"/dev/tty".as_ptr(),
                    libc::O_RDONLY | libc::O_NOCTTY | libc::O_CLOEXEC,
                );
                if fd < 0 {
                    false
                } else {
                    let foreground = libc::tcgetpgrp(fd);
                    libc::close(fd);
                    foreground == libc::getpgrp()
                }
            };
            if foreground {
                Group::Terminal
            } else {
                Group::Own
            }
        }
    }

    fn exit_code(status: ExitStatus) -> i32 {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(code), _) => code,
            (None, Some(sig)) => 128 + sig,
            _ => status::SOFTWARE,
        }
    }

    /// Sends signals to a running command (a copy, usable while its [`Child`] is awaited).
    #[derive(Clone, Copy)]
    pub struct Signaller {
        pid: i32,
        group: Group,
    }

    impl Signaller {
        /// Passes on a signal zklock got, unless the command got it already (see [`Group`]).
        pub fn pass_on(self, sig: i32) {
            let forwards = match self.group {
                Group::Terminal => sig == libc::SIGTERM,
                Group::Own => true,
            };
            if forwards {
                self.send(sig);
            }
        }

        /// Where [`Signaller::send`] sends: the command's own group when it has one.
        fn target(self) -> i32 {
            match self.group {
                Group::Terminal => self.pid,
                Group::Own => -self.pid,
            }
        }

        /// Sends `sig` to the command: to its own group when it has one.
        pub fn send(self, sig: i32) {
            let target = self.target();
            if self.pid > 0 {
                // SAFETY: kill(2) on our own child, or the process group it leads.
                unsafe {
                    libc::kill(target, sig);
                }
            }
        }
    }

    pub struct Child {
        child: tokio::process::Child,
        signaller: Signaller,
        /// Not on Linux: zklock's end of the watcher's pipe (see the `lifeline` module).
        #[allow(dead_code)]
        lifeline: Option<OwnedFd>,
        /// The watchdog that stops the command at the lease's deadline even while zklock is
        /// stopped ([`crate::watchdog`]), once [`Child::guard`] started it.
        watchdog: Option<Watchdog>,
        /// What the watchdog had sent the command when the command was reaped.
        watchdog_fired: Fired,
    }

    impl Child {
        pub(super) fn start(mut command: tokio::process::Command) -> std::io::Result<Child> {
            let group = Group::now();
            // If zklock itself dies (SIGKILL, OOM), its session and so the lock go soon after:
            // the command then gets SIGTERM instead of running on unprotected.
            #[cfg(target_os = "linux")]
            let lifeline = {
                let parent = std::process::id() as i32;
                // SAFETY: only async-signal-safe calls between fork and exec.
                unsafe {
                    command.pre_exec(move || {
                        if let Group::Own = group {
                            libc::setpgid(0, 0);
                        }
                        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                        if libc::getppid() != parent {
                            libc::raise(libc::SIGTERM);
                        }
                        Ok(())
                    });
                }
                None
            };
            #[cfg(not(target_os = "linux"))]
            let lifeline = {
                let (watch, ours) = super::lifeline::pipe()?;
                // SAFETY: only async-signal-safe calls between fork and exec (arm's too).
                let mut arm = watch.arm();
                unsafe {
                    command.pre_exec(move || {
                        if let Group::Own = group {
                            libc::setpgid(0, 0);
                        }
                        arm()
                    });
                }
                Some(ours)
            };
            let child = match command.spawn() {
                Ok(child) => child,
                Err(e) => {
                    // It never ran (its exec failed): its watcher, if one started, must end
                    // quietly, not read end-of-file and signal a pid that is no longer ours.
                    #[cfg(not(target_os = "linux"))]
                    if let Some(ours) = lifeline {
                        super::lifeline::release(ours);
                    }
                    return Err(e);
                }
            };
            let pid = child.id().map(|p| p as i32).unwrap_or(0);
            if let Group::Own = group {
                // Also from this side (the shell's way), so that a signal passed on right after
                // the spawn finds the group even if the command has not run its setpgid yet.
                // SAFETY: setpgid(2) on our own child; after its exec it fails (EACCES).
                unsafe { libc::setpgid(pid, pid) };
            }
            Ok(Child {
                child,
                signaller: Signaller { pid, group },
                lifeline,
                watchdog: None,
                watchdog_fired: Fired::No,
            })
        }

        pub fn signaller(&self) -> Signaller {
            self.signaller
        }

        /// Starts the command's watchdog, which stops it (SIGTERM, SIGKILL after `grace`) when
        /// the last deadline [`Child::feed`] gave passes. Before the first `wait`, while the
        /// pid is surely the command's. Without one (it could not start) zklock alone guards.
        pub fn guard(&mut self, grace: Duration) {
            let s = self.signaller;
            self.watchdog = Watchdog::start(s.pid, s.target(), grace);
        }

        /// Gives the watchdog the lease's current `valid_until`.
        pub fn feed(&mut self, valid_until: Instant) {
            if let Some(dog) = &mut self.watchdog {
                dog.feed(valid_until);
            }
        }

        /// Stops the command (the lease is lost): SIGTERM through the watchdog, so that the
        /// command gets one whether the watchdog's deadline or zklock's notice comes first;
        /// from zklock itself when there is no watchdog to tell.
        pub fn stop(&mut self) {
            let told = self.watchdog.as_mut().is_some_and(Watchdog::stop_now);
            if !told {
                self.signaller.send(SIGTERM);
            }
        }

        /// Whether the command, once waited for, had been sent SIGTERM by its watchdog: the
        /// lease's deadline stopped it, not its own end.
        pub fn stopped_by_watchdog(&self) -> bool {
            self.watchdog_fired >= Fired::Term
        }

        /// Whether the watchdog had also sent SIGKILL (the command outlasted `--kill-after`).
        pub fn killed_by_watchdog(&self) -> bool {
            self.watchdog_fired == Fired::Kill
        }

        /// Waits for the command to exit: its status (128+N when signal N killed it).
        pub async fn wait(&mut self) -> std::io::Result<i32> {
            let status = self.child.wait().await?;
            // Reaped: the pid is no longer the command's, so the watchdog must not signal it.
            if let Some(mut dog) = self.watchdog.take() {
                self.watchdog_fired = dog.fired();
                dog.stand_down();
            }
            #[cfg(not(target_os = "linux"))]
            if let Some(ours) = self.lifeline.take() {
                super::lifeline::release(ours);
            }
            Ok(exit_code(status))
        }
    }
}

#[cfg(any(test, all(unix, not(target_os = "linux"))))]
mod lifeline {
    //! Parent death without `prctl` (macOS): the command's pre-exec hook forks a watcher (twice,
    //! so that it is nobody's child: not the command's, whose `wait` must not see it, nor
    //! zklock's). The watcher leaves the command's session and process group (no terminal
    //! signal, nothing passed on to the command reaches it), closes every descriptor but the
    //! pipe's read end (it keeps no pipe or terminal of the command's open) and reads: one
    //! byte, written by zklock once the command has exited, ends it quietly; end-of-file means
    //! zklock is gone, and the command gets SIGTERM. The window between zklock reaping the
    //! command and writing its byte is the only one in which the command's pid is not ours.

    use std::io::Write;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    /// The watcher's end of the pipe, and how many descriptors it closes.
    pub struct Watch {
        read: OwnedFd,
        max_fd: i32,
    }

    /// A close-on-exec pipe: the watcher's end and zklock's.
    pub fn pipe() -> std::io::Result<(Watch, OwnedFd)> {
        let mut fds = [0; 2];
        // SAFETY: pipe(2) fills two descriptors we then own; fcntl(2) on them.
        let (read, write) = unsafe {
            if libc::pipe(fds.as_mut_ptr()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let pair = (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]));
            for fd in fds {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
            pair
        };
        // SAFETY: sysconf has no preconditions.
        let open_max = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) };
        let max_fd = if open_max <= 0 {
            1024
        } else {
            open_max.min(65536) as i32
        };
        Ok((Watch { read, max_fd }, write))
    }

    impl Watch {
        /// The pre-exec hook that forks the watcher. Errors (no fork) keep the command from
        /// running unwatched.
        pub fn arm(self) -> impl FnMut() -> std::io::Result<()> + Send + Sync + 'static {
            let (read, max_fd) = (self.read, self.max_fd);
            move || unsafe {
                // SAFETY: in the forked child before exec: fork, waitpid, _exit and what
                // `watch` calls are async-signal-safe.
                let command = libc::getpid();
                let fd = read.as_raw_fd();
                match libc::fork() {
                    -1 => Err(std::io::Error::last_os_error()),
                    0 => {
                        if libc::fork() == 0 {
                            watch(fd, command, max_fd);
                        }
                        libc::_exit(0);
                    }
                    middle => {
                        let mut st = 0;
                        libc::waitpid(middle, &mut st, 0);
                        Ok(())
                    }
                }
            }
        }
    }

    /// The watcher's life (never returns).
    unsafe fn watch(fd: i32, command: libc::pid_t, max_fd: i32) -> ! {
        libc::setsid();
        for other in 0..max_fd {
            if other != fd {
                libc::close(other);
            }
        }
        let mut byte = 0u8;
        loop {
            let n = libc::read(fd, (&mut byte as *mut u8).cast(), 1);
            if n == 0 {
                libc::kill(command, libc::SIGTERM);
            } else if n < 0
                && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
            {
                continue;
            }
            libc::_exit(0);
        }
    }

    /// Tells the watcher that the command has exited (it then exits without a signal).
    pub fn release(ours: OwnedFd) {
        let _ = std::fs::File::from(ours).write_all(&[1]);
    }
}

#[cfg(windows)]
mod windows {
    //! The command runs in a job object of its own (issue 55). The job is made with
    //! `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE` and only zklock holds its handle, so when zklock
    //! exits, however it exits, Windows closes the handle and ends every process in the job: the
    //! parent-death signal of Linux. A lost lease ends the job (`TerminateJobObject`): the
    //! command and whatever it started, at once, with status 143 (128 + SIGTERM, as on Linux).
    //! The command is created suspended and resumed only once it is in the job, so nothing it
    //! starts can escape the job. Windows has no SIGTERM to ask a command to stop, so
    //! `--kill-after` has nothing to wait for there.

    use std::process::ExitStatus;
    use std::time::{Duration, Instant};

    use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close, CtrlBreak, CtrlC, CtrlClose};
    use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, INVALID_HANDLE_VALUE};
    use windows_sys::Win32::System::Diagnostics::ToolHelp::{
        CreateToolhelp32Snapshot, Thread32First, Thread32Next, TH32CS_SNAPTHREAD, THREADENTRY32,
    };
    use windows_sys::Win32::System::JobObjects::{
        AssignProcessToJobObject, CreateJobObjectW, JobObjectExtendedLimitInformation,
        SetInformationJobObject, TerminateJobObject, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
        JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    };
    use windows_sys::Win32::System::Threading::{
        OpenThread, ResumeThread, CREATE_SUSPENDED, THREAD_SUSPEND_RESUME,
    };

    use crate::status::{self, Failure};

    /// The C runtime's numbers, for the 128+N statuses: Ctrl-C is SIGINT, Ctrl-Break SIGBREAK.
    const SIGINT: i32 = 2;
    const SIGBREAK: i32 = 21;
    pub const SIGTERM: i32 = 15;
    pub const SIGKILL: i32 = 9;

    /// Ctrl-C, Ctrl-Break and the console's closing, caught from the start.
    pub struct Signals {
        int: CtrlC,
        brk: CtrlBreak,
        close: CtrlClose,
    }

    impl Signals {
        pub fn new() -> Result<Signals, Failure> {
            let fail = |e: std::io::Error| Failure::software(format!("cannot catch Ctrl-C: {e}"));
            Ok(Signals {
                int: ctrl_c().map_err(fail)?,
                brk: ctrl_break().map_err(fail)?,
                close: ctrl_close().map_err(fail)?,
            })
        }

        pub async fn recv(&mut self) -> i32 {
            tokio::select! {
                _ = self.int.recv() => SIGINT,
                _ = self.brk.recv() => SIGBREAK,
                _ = self.close.recv() => SIGTERM,
            }
        }
    }

    /// A job handle that closes itself; closing it ends what is left in the job.
    struct Job(HANDLE);

    // SAFETY: a job handle is a kernel handle, usable from any thread.
    unsafe impl Send for Job {}
    unsafe impl Sync for Job {}

    impl Drop for Job {
        fn drop(&mut self) {
            // SAFETY: our own handle, closed once.
            unsafe { CloseHandle(self.0) };
        }
    }

    impl Job {
        /// A new job whose processes end when its last handle closes.
        fn new() -> std::io::Result<Job> {
            // SAFETY: no attributes, no name; the info struct is ours and of the size given.
            unsafe {
                let handle = CreateJobObjectW(std::ptr::null(), std::ptr::null());
                if handle.is_null() {
                    return Err(std::io::Error::last_os_error());
                }
                let job = Job(handle);
                let mut info: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = std::mem::zeroed();
                info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
                let set = SetInformationJobObject(
                    job.0,
                    JobObjectExtendedLimitInformation,
                    (&info as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
                    std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
                );
                if set == 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(job)
            }
        }
    }

    /// Resumes the threads of a process created suspended (its one main thread): std gives no
    /// handle to it, so it is found in a snapshot of the system's threads.
    fn resume(pid: u32) -> std::io::Result<()> {
        // SAFETY: a snapshot we own and close; the entry struct is ours with its size set.
        unsafe {
            let snapshot = CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
            if snapshot == INVALID_HANDLE_VALUE {
                return Err(std::io::Error::last_os_error());
            }
            let mut entry: THREADENTRY32 = std::mem::zeroed();
            entry.dwSize = std::mem::size_of::<THREADENTRY32>() as u32;
            let mut resumed = 0;
            let mut more = Thread32First(snapshot, &mut entry) != 0;
            while more {
                if entry.th32OwnerProcessID == pid {
                    let thread = OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID);
                    if !thread.is_null() {
                        if ResumeThread(thread) != u32::MAX {
                            resumed += 1;
                        }
                        CloseHandle(thread);
                    }
                }
                more = Thread32Next(snapshot, &mut entry) != 0;
            }
            CloseHandle(snapshot);
            if resumed == 0 {
                return Err(std::io::Error::other(
                    "the command was created suspended and its thread could not be resumed",
                ));
            }
            Ok(())
        }
    }

    fn exit_code(status: ExitStatus) -> i32 {
        status.code().unwrap_or(status::SOFTWARE)
    }

    /// Ends a running command's job (a copy, usable while its [`Child`] is awaited).
    #[derive(Clone, Copy)]
    pub struct Signaller {
        /// The job's handle as a number (owned by the [`Child`], which outlives every use).
        job: usize,
    }

    impl Signaller {
        /// Ctrl-C, Ctrl-Break and the console's closing reach every process attached to the
        /// console, the command's included: nothing to pass on.
        pub fn pass_on(self, _sig: i32) {}

        /// Ends the command's job, with status 128 + `sig` (Windows has no signals to send).
        pub fn send(self, sig: i32) {
            // SAFETY: the Child's live job handle.
            unsafe { TerminateJobObject(self.job as HANDLE, (128 + sig) as u32) };
        }
    }

    pub struct Child {
        child: tokio::process::Child,
        /// Dropped after the command was waited for: what it left running in the job ends then,
        /// before zklock gives the lease back.
        job: Job,
    }

    impl Child {
        pub(super) fn start(mut command: tokio::process::Command) -> std::io::Result<Child> {
            let job = Job::new()?;
            command.creation_flags(CREATE_SUSPENDED);
            let child = command.spawn()?;
            let handle = child.raw_handle().map(|h| h as HANDLE);
            let pid = child.id();
            // SAFETY: our job's handle and our own child's process handle.
            let placed = match (handle, pid) {
                (Some(process), Some(pid)) => {
                    if unsafe { AssignProcessToJobObject(job.0, process) } == 0 {
                        Err(std::io::Error::last_os_error())
                    } else {
                        resume(pid)
                    }
                }
                _ => Err(std::io::Error::other("the command exited before it ran")),
            };
            if let Err(e) = placed {
                // It never ran: it must not run outside the job either.
                let mut child = child;
                let _ = child.start_kill();
                return Err(e);
            }
            Ok(Child { child, job })
        }

        pub fn signaller(&self) -> Signaller {
            Signaller {
                job: self.job.0 as usize,
            }
        }

        /// No watchdog process on Windows (issue 50's is Unix's): the job ends with zklock.
        pub fn guard(&mut self, _grace: Duration) {}

        pub fn feed(&mut self, _valid_until: Instant) {}

        /// Stops the command (the lease is lost): its job ends, status 143.
        pub fn stop(&mut self) {
            self.signaller().send(SIGTERM);
        }

        pub fn stopped_by_watchdog(&self) -> bool {
            false
        }

        pub fn killed_by_watchdog(&self) -> bool {
            false
        }

        /// Waits for the command to exit: its exit code.
        pub async fn wait(&mut self) -> std::io::Result<i32> {
            Ok(exit_code(self.child.wait().await?))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::time::{Duration, Instant};

    use super::lifeline;

    fn sleeper(secs: &str) -> (std::process::Command, std::os::fd::OwnedFd) {
        let (watch, ours) = lifeline::pipe().unwrap();
        let mut command = std::process::Command::new("sleep");
        command.arg(secs);
        // SAFETY: arm's hook only makes async-signal-safe calls.
        unsafe { command.pre_exec(watch.arm()) };
        (command, ours)
    }

    /// macOS's parent-death signal, run here: zklock's end of the pipe closing (as when zklock
    /// dies) makes the watcher send the command SIGTERM.
    #[test]
    fn the_watcher_stops_the_command_when_zklock_is_gone() {
        let (mut command, ours) = sleeper("30");
        let mut child = command.spawn().unwrap();
        let started = Instant::now();
        drop(ours);
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    /// A command that ended is left alone: zklock's byte ends the watcher without a signal.
    #[test]
    fn the_watcher_leaves_quietly_when_the_command_ended() {
        let (mut command, ours) = sleeper("0");
        let status = command.spawn().unwrap().wait().unwrap();
        assert_eq!(status.code(), Some(0));
        lifeline::release(ours);
    }
}
