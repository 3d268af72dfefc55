//! The watchdog of a command run under a lease (issue 50, part 2): a process of its own that
//! stops the command once the lease's last known `valid_until` passes, whether or not zklock
//! itself gets to run. Stopping zklock alone (SIGSTOP, a debugger, a freezer cgroup, a swap storm
//! that reaches it first) stops every thread in it, its lifeline's timer included, while the
//! command runs on; the parent-death signal does not help, as zklock has not died. So the
//! deadline has to be kept by a process that the stop does not reach.
//!
//! zklock feeds it each new `valid_until` as an absolute deadline on a clock that counts
//! suspended time (Linux: CLOCK_BOOTTIME; macOS: CLOCK_MONOTONIC, which on Darwin counts sleep
//! too). When the last deadline passes unrenewed, the watchdog sends the command's process group
//! SIGTERM (the target zklock's own stop uses, see `child::Signaller::send`) and SIGKILL after
//! the same `--kill-after`. It ends when the command ends (Linux: a pidfd of the command turns
//! readable; elsewhere `kill(pid, 0)` every 100 ms), when zklock tells it to stand down (after
//! reaping the command, before its pid could be anyone else's) or after its SIGKILL. When zklock
//! dies its pipe reads end-of-file and the watchdog goes on guarding the last deadline: the
//! parent-death signal has stopped the command by then, which ends the watchdog.
//!
//! It is forked twice from zklock (nobody's child: not zklock's, whose runtime must not reap it,
//! nor the command's), leaves zklock's session and process group (no terminal signal and no
//! `kill -TERM -PGID` aimed at zklock reaches it) and closes every descriptor but its own (it
//! keeps no pipe of zklock's or the command's open). Between fork and `_exit` it makes plain
//! system calls only, as a fork of a threaded process must.
//!
//! The messages are 8 bytes each (atomic on a pipe): [`STAND_DOWN`], [`STOP_NOW`] or a
//! deadline in nanoseconds on the clock. Before its SIGTERM the watchdog writes a byte on a
//! second pipe, so that zklock, seeing the command exit, can tell a stop for the lease's
//! deadline (exit 76) from the command's own end, even when the watchdog's deadline and
//! zklock's own notice of the loss meet.

use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// zklock released cleanly or reaped the command: end without a signal.
const STAND_DOWN: u64 = 0;
/// zklock saw the lease lost: stop the command now (one SIGTERM, whoever notices first).
const STOP_NOW: u64 = 1;

/// The clock the deadlines are on: one that counts the time the machine is suspended.
#[cfg(target_os = "linux")]
const CLOCK: libc::clockid_t = libc::CLOCK_BOOTTIME;
#[cfg(not(target_os = "linux"))]
const CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC;

/// Without a pidfd the watchdog looks whether the command still runs this often, and without a
/// timer it looks at the clock as often.
const LIVENESS_MS: i32 = 100;

fn clock_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime(2) fills the timespec we pass.
    unsafe { libc::clock_gettime(CLOCK, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// zklock's side: the pipe's write end (non-blocking: a watchdog that is behind never stalls
/// zklock), the read end of the pipe on which the watchdog says it fired, and the last
/// `valid_until` it was sent.
pub struct Watchdog {
    control: Option<std::fs::File>,
    fired: OwnedFd,
    fed: Option<Instant>,
}

/// What the watchdog sent the command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fired {
    No,
    Term,
    Kill,
}

/// A close-on-exec pipe (read end, write end); `nonblock` makes that end non-blocking.
fn pipe(nonblock: usize) -> Option<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills two descriptors we then own; fcntl(2) on them.
    unsafe {
        if libc::pipe(fds.as_mut_ptr()) != 0 {
            return None;
        }
        for fd in fds {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
        libc::fcntl(fds[nonblock], libc::F_SETFL, libc::O_NONBLOCK);
        Some((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

/// The watchdog's descriptors: zklock's messages, its own word that it fired, the command's
/// pidfd and its timer (-1 for none).
#[derive(Clone, Copy)]
struct Fds {
    ctl: i32,
    fired: i32,
    pidfd: i32,
    timer: i32,
}

impl Watchdog {
    /// Starts the watchdog of the command `pid`, which signals `target` (the pid, or its process
    /// group as `-pid`) and waits `grace` between SIGTERM and SIGKILL. Call it before the
    /// command is first waited for (so that its pid is still ours). None when it cannot start:
    /// the command then runs as before, guarded by zklock alone.
    pub fn start(pid: i32, target: i32, grace: Duration) -> Option<Watchdog> {
        if pid <= 0 {
            return None;
        }
        Watchdog::start_with(Watched::open(pid)?, pid, target, grace)
    }

    /// [`Watchdog::start`] with what it watches the command with already open.
    fn start_with(watched: Watched, pid: i32, target: i32, grace: Duration) -> Option<Watchdog> {
        let (read, write) = pipe(1)?;
        let (fired, fired_write) = pipe(0)?;
        // SAFETY: sysconf has no preconditions.
        let open_max = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) };
        let max_fd = if open_max <= 0 {
            1024
        } else {
            open_max.min(65536) as i32
        };
        let grace_ns = grace.as_nanos().min(u64::MAX as u128 / 4) as u64;
        let fds = Fds {
            ctl: read.as_raw_fd(),
            fired: fired_write.as_raw_fd(),
            pidfd: watched.pidfd,
            timer: watched.timer,
        };
        // SAFETY: in the forked children only async-signal-safe system calls run (watch's
        // too), then _exit; the parent waits for the middle child only.
        unsafe {
            match libc::fork() {
                -1 => return None,
                0 => {
                    if libc::fork() == 0 {
                        watch(fds, pid, target, grace_ns, max_fd);
                    }
                    libc::_exit(0);
                }
                middle => {
                    let mut st = 0;
                    // The middle child exits at once; only a signal can cut the wait short.
                    loop {
                        let reaped = libc::waitpid(middle, &mut st, 0) >= 0;
                        let interrupted = !reaped
                            && std::io::Error::last_os_error().kind()
                                == std::io::ErrorKind::Interrupted;
                        if !interrupted {
                            break;
                        }
                    }
                }
            }
        }
        drop((read, fired_write, watched));
        Some(Watchdog {
            control: Some(std::fs::File::from(write)),
            fired,
            fed: None,
        })
    }

    /// Sends `valid_until` as the new deadline, unless it was the last one sent. The clock is
    /// read before `Instant::now()`: a stop between the two reads makes the deadline earlier,
    /// never later.
    pub fn feed(&mut self, valid_until: Instant) {
        if self.fed == Some(valid_until) {
            return;
        }
        let base = clock_ns();
        let left = valid_until.saturating_duration_since(Instant::now());
        let deadline = base
            .saturating_add(left.as_nanos().min(u64::MAX as u128) as u64)
            .max(STOP_NOW + 1);
        if self.send(deadline) {
            self.fed = Some(valid_until);
        }
    }

    /// The lease is lost: the watchdog stops the command (SIGTERM now, SIGKILL after the grace).
    /// False when it could not be told (it is gone): the caller signals the command itself.
    pub fn stop_now(&mut self) -> bool {
        self.send(STOP_NOW)
    }

    /// What the watchdog sent the command (it says so before it sends it): [`Fired::No`],
    /// [`Fired::Term`] or [`Fired::Kill`]. A command that exits after `Term` was stopped for the
    /// lease's deadline, not of its own accord. Read once, after the command was reaped.
    pub fn fired(&self) -> Fired {
        let mut said = [0u8; 2];
        // SAFETY: a non-blocking read(2) into our buffer.
        let n = unsafe { libc::read(self.fired.as_raw_fd(), said.as_mut_ptr().cast(), 2) };
        match said[..n.max(0) as usize].iter().max() {
            Some(2) => Fired::Kill,
            Some(_) => Fired::Term,
            None => Fired::No,
        }
    }

    /// The command ended or the lease was released cleanly: the watchdog ends without a signal.
    pub fn stand_down(&mut self) {
        self.send(STAND_DOWN);
        self.control = None;
    }

    fn send(&mut self, message: u64) -> bool {
        match &mut self.control {
            Some(control) => control.write_all(&message.to_le_bytes()).is_ok(),
            None => false,
        }
    }
}

/// What the watchdog watches the command with, opened in zklock before the fork.
struct Watched {
    /// A pidfd of the command (readable once it exits; never another process's), or -1 where
    /// there is none (before Linux 5.3, and off Linux).
    pidfd: i32,
    /// A timerfd on CLOCK_BOOTTIME (Linux), or -1.
    timer: i32,
}

impl Watched {
    #[cfg(target_os = "linux")]
    fn open(pid: i32) -> Option<Watched> {
        // SAFETY: plain system calls; the descriptors are ours (pidfds are close-on-exec).
        unsafe {
            let pidfd = libc::syscall(libc::SYS_pidfd_open, pid, 0) as i32;
            let timer = libc::timerfd_create(libc::CLOCK_BOOTTIME, libc::TFD_CLOEXEC);
            if timer < 0 {
                if pidfd >= 0 {
                    libc::close(pidfd);
                }
                return None;
            }
            Some(Watched {
                pidfd: pidfd.max(-1),
                timer,
            })
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn open(_pid: i32) -> Option<Watched> {
        Some(Watched::portable())
    }

    /// No pidfd and no timer: poll's own timeout and `kill(pid, 0)`, as off Linux (the Linux
    /// unit tests run this path too).
    #[cfg(any(test, not(target_os = "linux")))]
    fn portable() -> Watched {
        Watched {
            pidfd: -1,
            timer: -1,
        }
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        for fd in [self.pidfd, self.timer] {
            if fd >= 0 {
                // SAFETY: descriptors this value owns.
                unsafe { libc::close(fd) };
            }
        }
    }
}

/// Is the command gone (exited)? With a pidfd: readable. Without: `kill(pid, 0)` fails (a
/// zombie not yet reaped by zklock still counts as there).
unsafe fn gone(pidfd: i32, pid: i32) -> bool {
    if pidfd >= 0 {
        let mut p = libc::pollfd {
            fd: pidfd,
            events: libc::POLLIN,
            revents: 0,
        };
        return libc::poll(&mut p, 1, 0) > 0;
    }
    libc::kill(pid, 0) != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// Arms the timerfd at `at` ns on CLOCK_BOOTTIME (0 disarms).
#[cfg(target_os = "linux")]
unsafe fn arm(timer: i32, at: u64) {
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: (at / 1_000_000_000) as libc::time_t,
            tv_nsec: (at % 1_000_000_000) as libc::c_long,
        },
    };
    libc::timerfd_settime(timer, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut());
}

/// The watchdog's life (never returns).
unsafe fn watch(fds: Fds, pid: i32, target: i32, grace_ns: u64, max_fd: i32) -> ! {
    let Fds {
        ctl,
        fired,
        pidfd,
        timer,
    } = fds;
    libc::setsid();
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
        libc::signal(sig, libc::SIG_DFL);
    }
    for other in 0..max_fd {
        if other != ctl && other != fired && other != pidfd && other != timer {
            libc::close(other);
        }
    }
    let mut ctl_open = true;
    // The deadline (0: none yet), and once SIGTERM went, when SIGKILL goes.
    let mut deadline = 0u64;
    let mut kill_at: Option<u64> = None;
    loop {
        if gone(pidfd, pid) {
            libc::_exit(0);
        }
        let due = kill_at.unwrap_or(deadline);
        let now = clock_ns();
        if due != 0 && now >= due {
            if kill_at.is_some() {
                libc::write(fired, [2u8].as_ptr().cast(), 1);
                libc::kill(target, libc::SIGKILL);
                libc::_exit(0);
            }
            // Said first, so that zklock, seeing the command exit, knows why.
            libc::write(fired, [1u8].as_ptr().cast(), 1);
            libc::kill(target, libc::SIGTERM);
            kill_at = Some(now.saturating_add(grace_ns));
            continue;
        }
        let mut polled = [
            libc::pollfd {
                fd: if ctl_open { ctl } else { -1 },
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: pidfd,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: timer,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let wait_ms = if timer >= 0 {
            #[cfg(target_os = "linux")]
            arm(timer, due);
            if pidfd >= 0 {
                -1
            } else {
                LIVENESS_MS
            }
        } else if due == 0 {
            LIVENESS_MS
        } else {
            // poll's own timeout, cut short to look at the clock and the command again.
            (due.saturating_sub(now).div_ceil(1_000_000)).min(LIVENESS_MS as u64) as i32
        };
        if libc::poll(polled.as_mut_ptr(), 3, wait_ms) < 0 {
            continue;
        }
        if polled[0].revents != 0 {
            let mut buf = [0u8; 8];
            let n = libc::read(ctl, buf.as_mut_ptr().cast(), 8);
            if n == 8 {
                match u64::from_le_bytes(buf) {
                    STAND_DOWN => libc::_exit(0),
                    STOP_NOW if kill_at.is_none() => deadline = 1,
                    STOP_NOW => {}
                    // After SIGTERM a new deadline changes nothing: the command is stopping.
                    fed if kill_at.is_none() => deadline = fed,
                    _ => {}
                }
            } else if n == 0
                || (n < 0
                    && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted)
            {
                // zklock is gone: the last deadline still holds.
                ctl_open = false;
            }
        }
        if timer >= 0 && polled[2].revents != 0 {
            let mut expirations = [0u8; 8];
            libc::read(timer, expirations.as_mut_ptr().cast(), 8);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;
    use std::time::{Duration, Instant};

    use super::{Watchdog, Watched};

    /// A command and its watchdog: Linux's (pidfd and timerfd) or, `portable`, the one of other
    /// Unixes (poll's timeout, `kill(pid, 0)`).
    fn sleeper(portable: bool) -> (std::process::Child, Watchdog) {
        let child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let watched = if portable {
            Watched::portable()
        } else {
            Watched::open(pid).unwrap()
        };
        let dog =
            Watchdog::start_with(watched, pid, pid, Duration::from_secs(5)).expect("a watchdog");
        (child, dog)
    }

    /// The point of it: a deadline that is not renewed stops the command by itself.
    #[test]
    fn a_deadline_left_to_pass_stops_the_command() {
        for portable in [false, true] {
            a_deadline_left_to_pass_stops(portable);
        }
    }

    fn a_deadline_left_to_pass_stops(portable: bool) {
        let (mut child, mut dog) = sleeper(portable);
        let started = Instant::now();
        dog.feed(started + Duration::from_millis(300));
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
        assert_eq!(
            dog.fired(),
            super::Fired::Term,
            "the watchdog says it fired"
        );
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(300) && took < Duration::from_secs(5),
            "{took:?}"
        );
    }

    /// No misfire: a deadline renewed before it passes never fires, and standing down ends the
    /// watchdog without a signal.
    #[test]
    fn a_deadline_renewed_in_time_never_fires() {
        for portable in [false, true] {
            renewed_in_time(portable);
        }
    }

    fn renewed_in_time(portable: bool) {
        let (mut child, mut dog) = sleeper(portable);
        let until = Instant::now() + Duration::from_millis(1500);
        while Instant::now() < until {
            dog.feed(Instant::now() + Duration::from_millis(300));
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(dog.fired(), super::Fired::No);
        dog.stand_down();
        std::thread::sleep(Duration::from_millis(500));
        assert!(
            child.try_wait().unwrap().is_none(),
            "the command was stopped"
        );
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// zklock's own stop goes through the watchdog, so the command gets one SIGTERM.
    #[test]
    fn stop_now_sends_sigterm_at_once() {
        for portable in [false, true] {
            stop_now(portable);
        }
    }

    fn stop_now(portable: bool) {
        let (mut child, mut dog) = sleeper(portable);
        dog.feed(Instant::now() + Duration::from_secs(60));
        let started = Instant::now();
        assert!(dog.stop_now());
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    /// A command that ignores SIGTERM gets SIGKILL after the grace, and zklock can tell.
    #[test]
    fn a_command_that_ignores_sigterm_gets_sigkill_after_the_grace() {
        // An ignored signal stays ignored across exec: sleep itself ignores SIGTERM.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "trap '' TERM; exec sleep 30"])
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let mut dog = Watchdog::start(pid, pid, Duration::from_millis(300)).expect("a watchdog");
        // Let the shell set its trap before the deadline.
        std::thread::sleep(Duration::from_millis(200));
        let started = Instant::now();
        dog.feed(started);
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
        assert!(started.elapsed() >= Duration::from_millis(300));
        assert_eq!(dog.fired(), super::Fired::Kill);
    }
}
