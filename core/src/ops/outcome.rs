//! How an acquire settled, for the client-wide counters (`stats`) and the per-path ones
//! (`path_stats`) alike.

/// How an acquire ended, for the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Acquired,
    TimedOut,
    Cancelled,
    Failed,
}

impl Outcome {
    pub(crate) fn of_error(kind: crate::ErrorKind) -> Outcome {
        match kind {
            crate::ErrorKind::Timeout => Outcome::TimedOut,
            crate::ErrorKind::Cancelled => Outcome::Cancelled,
            _ => Outcome::Failed,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Acquired => "acquired",
            Outcome::TimedOut => "timed_out",
            Outcome::Cancelled => "cancelled",
            Outcome::Failed => "failed",
        }
    }
}
