//! The clock every deadline of the exclusion promise runs on: one that counts the time the
//! machine was suspended (issue 50, part 3).
//!
//! `std::time::Instant` (and tokio's) reads CLOCK_MONOTONIC on Linux and CLOCK_UPTIME_RAW on
//! macOS, and both stand still while the machine is suspended (a laptop's lid, a VM paused by
//! its hypervisor), while ZooKeeper's leader, on another machine, goes on counting the session
//! timeout. A deadline on such a clock is late by the whole suspend: a resumed holder would
//! read `held` while the next holder holds. So the lifeline's proof, its deadline and the lease
//! state reads use [`BootInstant`]:
//!
//! - Linux (and Android): CLOCK_BOOTTIME, CLOCK_MONOTONIC plus the time spent suspended
//!   (clock_gettime(2); the kernel adds the sleep time on resume, `timekeeping_resume`);
//! - macOS and iOS: CLOCK_MONOTONIC of Apple's libc, which is `mach_continuous_time` and goes
//!   on while asleep (clock_gettime(3) on macOS: "will continue to increment while the system
//!   is asleep"); std's Instant there is CLOCK_UPTIME_RAW, which does not;
//! - Windows and the rest: `std::time::Instant`. On Windows that is QueryPerformanceCounter,
//!   which counts sleep and hibernation (unlike QueryUnbiasedInterruptTime).
//!
//! Timers cannot wait on it (tokio's timers run on `Instant`): the lifeline converts a boot
//! deadline to an `Instant` when it goes to sleep and caps its sleeps (`MAX_SLEEP`), so that a
//! resumed process finds its deadline passed within that cap; a state read compares this clock
//! itself and needs no timer.

use std::ops::{Add, Sub};
use std::time::Duration;

/// A moment on the boot clock (see the module's header): the time since the clock's origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BootInstant(Duration);

/// The longest a timer waiting for a boot-clock deadline sleeps before it looks at the boot
/// clock again: how late, at most, a lost signal fires after a suspend ended.
pub(crate) const MAX_SLEEP: Duration = Duration::from_millis(100);

impl BootInstant {
    /// Now, on the boot clock.
    pub fn now() -> BootInstant {
        BootInstant(read())
    }

    /// `self - earlier`, zero when `earlier` is later.
    pub fn saturating_duration_since(self, earlier: BootInstant) -> Duration {
        self.0.saturating_sub(earlier.0)
    }

    /// `self + d`, or `None` past what the clock holds.
    pub(crate) fn checked_add(self, d: Duration) -> Option<BootInstant> {
        self.0.checked_add(d).map(BootInstant)
    }

    /// The time from now until this moment, zero once it passed.
    pub fn remaining(self) -> Duration {
        self.saturating_duration_since(BootInstant::now())
    }

    /// This moment as a tokio `Instant` for a timer, read now: right until the next suspend,
    /// after which the timer fires late by the suspend (hence `MAX_SLEEP`). `Instant` is read
    /// first, so the result errs early by the time between the two reads, never late: a
    /// `valid_until` converted here is never after the boot-clock deadline.
    pub(crate) fn to_tokio(self) -> tokio::time::Instant {
        let now = tokio::time::Instant::now();
        let boot = BootInstant::now();
        if self >= boot {
            now + (self.0 - boot.0)
        } else {
            now.checked_sub(boot.0 - self.0).unwrap_or(now)
        }
    }

    /// This moment as a `std::time::Instant`, read now (see `to_tokio`).
    pub(crate) fn to_std(self) -> std::time::Instant {
        self.to_tokio().into_std()
    }

    /// A moment on this clock for an `Instant` in the past, converted with the offset between
    /// the clocks read now: early enough to be safe only if no suspend happened in between
    /// (callers check `Skew`).
    pub(crate) fn from_past(at: std::time::Instant) -> BootInstant {
        let ago = at.elapsed();
        BootInstant(read().saturating_sub(ago))
    }
}

/// Sleeps until `at` on the boot clock, looking at that clock again at least every `step`: a
/// suspend makes the wake-up late by at most `step` after the machine resumes (tokio's timers
/// stand still with `Instant` while it is suspended).
pub(crate) async fn sleep_until(at: BootInstant, step: Duration) {
    loop {
        let left = at.remaining();
        if left.is_zero() {
            return;
        }
        tokio::time::sleep(left.min(step)).await;
    }
}

impl Add<Duration> for BootInstant {
    type Output = BootInstant;
    fn add(self, d: Duration) -> BootInstant {
        BootInstant(self.0 + d)
    }
}

impl Sub<Duration> for BootInstant {
    type Output = BootInstant;
    fn sub(self, d: Duration) -> BootInstant {
        BootInstant(self.0.saturating_sub(d))
    }
}

impl Sub<BootInstant> for BootInstant {
    type Output = Duration;
    fn sub(self, earlier: BootInstant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

/// Both clocks read once, at the first call of `skew`.
static SKEW_START: std::sync::OnceLock<(std::time::Instant, Duration)> = std::sync::OnceLock::new();

/// How far the boot clock ran ahead of `Instant` since its first call: grows by every suspend
/// (the clocks' rates are the same otherwise). Two reads that differ by more than a little tell
/// that the machine was suspended in between.
pub(crate) fn skew() -> Duration {
    let (mono, boot) = *SKEW_START.get_or_init(|| (std::time::Instant::now(), read()));
    let boot_now = read();
    let mono_now = std::time::Instant::now();
    (boot_now.saturating_sub(boot)).saturating_sub(mono_now.duration_since(mono))
}

#[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple"))]
fn read() -> Duration {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    const CLOCK: libc::clockid_t = libc::CLOCK_BOOTTIME;
    #[cfg(target_vendor = "apple")]
    const CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant the platform has.
    let rc = unsafe { libc::clock_gettime(CLOCK, &mut ts) };
    assert_eq!(rc, 0, "the boot clock is always readable");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[cfg(not(any(target_os = "linux", target_os = "android", target_vendor = "apple")))]
fn read() -> Duration {
    static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    ORIGIN.get_or_init(std::time::Instant::now).elapsed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_boot_clock_never_goes_back_and_converts_to_an_instant_and_back() {
        let a = BootInstant::now();
        let b = BootInstant::now();
        assert!(b >= a);
        let later = a + Duration::from_secs(5);
        let left = later
            .to_std()
            .saturating_duration_since(std::time::Instant::now());
        assert!(left <= Duration::from_secs(5));
        assert_eq!(a.saturating_duration_since(later), Duration::ZERO);
    }
}
