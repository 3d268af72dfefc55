//! How long an acquire may wait, and the one rule that turns a face's timeout (Python seconds,
//! Node milliseconds as a number, C milliseconds as `int64_t`) into it. Every face calls these,
//! so a value means the same everywhere:
//!
//! | value (in the face's unit) | means |
//! |---|---|
//! | absent | wait forever |
//! | exactly `-1` | wait forever (`threading.Lock`'s and C's convention) |
//! | other negative, `-inf`, NaN | `InvalidArgument` |
//! | `0` | one attempt (a try) |
//! | positive | wait at most that long |
//! | `+inf`, or beyond what the clock can hold | wait forever |

use std::time::{Duration, Instant};

use crate::base::error::{Error, Result};

/// How long an acquire may wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Until the lock is ours (or the acquire is cancelled, or the session dies).
    Forever,
    /// One attempt.
    Try,
    /// Until this moment.
    Until(Instant),
}

impl Wait {
    /// At most `timeout` from now (forever when the clock cannot hold the moment).
    pub fn timeout(timeout: Duration) -> Wait {
        if timeout.is_zero() {
            return Wait::Try;
        }
        Instant::now()
            .checked_add(timeout)
            .map_or(Wait::Forever, Wait::Until)
    }

    /// A timeout in seconds (Python's `timeout=`), by the rule above.
    pub fn from_secs(secs: Option<f64>) -> Result<Wait> {
        Self::from_unit(secs, 1.0, "timeout", "seconds")
    }

    /// A timeout in milliseconds given as a number (Node's `timeoutMs`), by the rule above.
    pub fn from_millis(ms: Option<f64>) -> Result<Wait> {
        Self::from_unit(ms, 1e-3, "timeoutMs", "milliseconds")
    }

    /// A deadline as milliseconds since the Unix epoch (Node's `deadline`, on `Date.now()`'s
    /// clock). A deadline that has passed, or is now, is one attempt (a computed
    /// `deadline - Date.now()` as a timeout could land on -1, "forever": issue 27, point 4);
    /// `+inf` or beyond the clock waits forever, `-inf` is a try, NaN (an invalid `Date`) is
    /// `InvalidArgument`. The time left is read from the system clock once, here; the wait
    /// itself runs on the monotonic clock, so a clock step afterwards does not move it.
    pub fn from_epoch_millis(deadline_ms: f64) -> Result<Wait> {
        if deadline_ms.is_nan() {
            return Err(Error::invalid(
                "deadline must be a time (milliseconds since the epoch, or a valid Date), got NaN",
            ));
        }
        let now_ms = match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            Ok(since) => since.as_secs_f64() * 1e3,
            Err(before) => -before.duration().as_secs_f64() * 1e3,
        };
        let left_ms = deadline_ms - now_ms;
        if left_ms <= 0.0 {
            return Ok(Wait::Try);
        }
        Ok(Duration::try_from_secs_f64(left_ms / 1e3).map_or(Wait::Forever, Wait::timeout))
    }

    /// Node's acquire options: `timeoutMs` by the rule above, or a `deadline`
    /// ([`Wait::from_epoch_millis`]); both at once is `InvalidArgument`.
    pub fn from_millis_or_deadline(
        timeout_ms: Option<f64>,
        deadline_ms: Option<f64>,
    ) -> Result<Wait> {
        match (timeout_ms, deadline_ms) {
            (Some(_), Some(_)) => Err(Error::invalid("give timeoutMs or deadline, not both")),
            (None, Some(deadline)) => Self::from_epoch_millis(deadline),
            (timeout, None) => Self::from_millis(timeout),
        }
    }

    /// A timeout in milliseconds as an integer (C's `timeout_ms`), by the rule above.
    pub fn from_millis_i64(ms: i64) -> Result<Wait> {
        match ms {
            -1 => Ok(Wait::Forever),
            ms if ms < 0 => Err(negative("timeout_ms", &ms.to_string(), "milliseconds")),
            ms => Ok(Wait::timeout(Duration::from_millis(ms as u64))),
        }
    }

    fn from_unit(value: Option<f64>, secs_per_unit: f64, what: &str, unit: &str) -> Result<Wait> {
        let Some(value) = value else {
            return Ok(Wait::Forever);
        };
        if value.is_nan() {
            return Err(Error::invalid(format!(
                "{what} must be a number of {unit}, got NaN"
            )));
        }
        if value == -1.0 || value == f64::INFINITY {
            return Ok(Wait::Forever);
        }
        if value < 0.0 {
            return Err(negative(what, &crate::base::text::number(value), unit));
        }
        Ok(Duration::try_from_secs_f64(value * secs_per_unit).map_or(Wait::Forever, Wait::timeout))
    }

    /// The deadline of this wait: `None` forever, now for a try.
    pub fn deadline(self) -> Option<Instant> {
        match self {
            Wait::Forever => None,
            Wait::Try => Some(Instant::now()),
            Wait::Until(at) => Some(at),
        }
    }

    /// The time this wait leaves from now, for the calls that take a bound rather than a wait
    /// (`participants`, guarded writes): `None` forever, zero for a try or a passed deadline.
    pub fn time_left(self) -> Option<Duration> {
        self.deadline()
            .map(|at| at.saturating_duration_since(Instant::now()))
    }
}

fn negative(what: &str, value: &str, unit: &str) -> Error {
    Error::invalid(format!(
        "{what} must be a non-negative number of {unit} (or -1 to wait forever), got {value}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn one_rule_for_every_unit() {
        assert_eq!(Wait::from_secs(None).unwrap(), Wait::Forever);
        assert_eq!(Wait::from_secs(Some(-1.0)).unwrap(), Wait::Forever);
        assert_eq!(Wait::from_secs(Some(f64::INFINITY)).unwrap(), Wait::Forever);
        assert_eq!(Wait::from_secs(Some(1e300)).unwrap(), Wait::Forever);
        assert_eq!(Wait::from_secs(Some(0.0)).unwrap(), Wait::Try);
        assert!(matches!(
            Wait::from_secs(Some(0.5)).unwrap(),
            Wait::Until(_)
        ));
        assert_eq!(Wait::from_millis(Some(-1.0)).unwrap(), Wait::Forever);
        assert_eq!(Wait::from_millis(Some(0.0)).unwrap(), Wait::Try);
        assert_eq!(Wait::from_millis_i64(-1).unwrap(), Wait::Forever);
        assert_eq!(Wait::from_millis_i64(0).unwrap(), Wait::Try);
        assert!(matches!(
            Wait::from_millis_i64(i64::MAX).unwrap(),
            Wait::Until(_) | Wait::Forever
        ));
        for bad in [f64::NAN, -2.0, -0.5, f64::NEG_INFINITY] {
            let e = Wait::from_secs(Some(bad)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad}");
            assert!(e.message().len() < 120, "{e}");
        }
        assert_eq!(Wait::Forever.time_left(), None);
        assert_eq!(Wait::Try.time_left(), Some(Duration::ZERO));
        assert!(
            Wait::timeout(Duration::from_secs(60)).time_left().unwrap() > Duration::from_secs(59)
        );
        assert_eq!(
            Wait::from_millis_i64(-2).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }

    #[test]
    fn a_deadline_that_passed_is_a_try_never_forever() {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as f64;
        for passed in [
            now_ms - 1.0,
            now_ms - 1.5,
            now_ms - 3.6e6,
            0.0,
            -1.0,
            f64::NEG_INFINITY,
        ] {
            assert_eq!(
                Wait::from_epoch_millis(passed).unwrap(),
                Wait::Try,
                "{passed}"
            );
        }
        let left = Wait::from_epoch_millis(now_ms + 60_000.0)
            .unwrap()
            .time_left()
            .unwrap();
        assert!(
            left > Duration::from_secs(59) && left <= Duration::from_secs(60),
            "{left:?}"
        );
        assert_eq!(
            Wait::from_epoch_millis(f64::INFINITY).unwrap(),
            Wait::Forever
        );
        assert_eq!(Wait::from_epoch_millis(1e300).unwrap(), Wait::Forever);
        let e = Wait::from_epoch_millis(f64::NAN).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        let e = Wait::from_millis_or_deadline(Some(5.0), Some(now_ms)).unwrap_err();
        assert!(e.message().contains("not both"), "{e}");
        assert_eq!(
            Wait::from_millis_or_deadline(None, None).unwrap(),
            Wait::Forever
        );
        assert_eq!(
            Wait::from_millis_or_deadline(Some(-1.0), None).unwrap(),
            Wait::Forever
        );
    }
}
