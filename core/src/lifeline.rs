//! How long a session can still be believed alive, measured from our side of the wire.
//!
//! The server expires a session one session timeout after the last packet it *received* from
//! the client, and then hands our locks to the next waiters. We cannot see when the server
//! received anything, but a request the server answered was received after we *sent* it. So
//! the latest send time of an answered request is a lower bound of the server's last receipt,
//! and `that + session timeout` is the earliest moment the server can expire the session. A
//! lease must turn lost before that moment, less a margin for the two clocks' rates.
//!
//! The transport (zookeeper-client) pings on its own but does not say when it last heard from
//! the server, so the session sends a light request of its own (`exists` on the root, no
//! watch) every [`beat_interval`] and records the send time of each one answered
//! ([`Lifeline::answered`]). Its notice of a broken link comes much later (its read timeout,
//! about two fifths of the session timeout, then a reconnect attempt), and waiting for it is
//! how a black-holed holder used to learn of its loss 1.4–1.8 s after the next holder started.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// The send time of the latest answered request of one session.
pub(crate) struct Lifeline {
    answered: Mutex<Instant>,
    timeout: Duration,
}

/// How much earlier than the server could, at the soonest, expire the session we give up:
/// 200 ms plus 2% of the timeout for the rates of the two clocks (NTP slews a clock by at most
/// 0.05%), never more than a quarter of the timeout. The server's tick only makes its expiry
/// later (it rounds expiry times up to the next tick).
pub(crate) fn margin(timeout: Duration) -> Duration {
    (Duration::from_millis(200) + timeout / 50).min(timeout / 4)
}

/// How often the session proves itself alive: four times per session timeout, so that a
/// single slow reply does not cost the session (three in a row do).
pub(crate) fn beat_interval(timeout: Duration) -> Duration {
    timeout / 4
}

impl Lifeline {
    /// `sent`: when the request that opened the session was sent.
    pub(crate) fn new(timeout: Duration, sent: Instant) -> Lifeline {
        Lifeline {
            answered: Mutex::new(sent),
            timeout,
        }
    }

    /// A request sent at `sent` was answered.
    pub(crate) fn answered(&self, sent: Instant) {
        let mut answered = self.answered.lock().unwrap();
        *answered = (*answered).max(sent);
    }

    /// The send time of the latest answered request.
    pub(crate) fn last_answered(&self) -> Instant {
        *self.answered.lock().unwrap()
    }

    /// The moment our leases must be lost unless a newer request is answered before it.
    pub(crate) fn lost_at(&self) -> Instant {
        self.last_answered() + self.timeout - margin(self.timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_margin_is_200_ms_plus_2_percent_and_at_most_a_quarter_of_the_timeout() {
        assert_eq!(margin(Duration::from_secs(2)), Duration::from_millis(240));
        assert_eq!(margin(Duration::from_secs(10)), Duration::from_millis(400));
        assert_eq!(
            margin(Duration::from_millis(400)),
            Duration::from_millis(100)
        );
    }

    #[test]
    fn lost_at_follows_the_latest_answered_send_time_only() {
        let start = Instant::now();
        let line = Lifeline::new(Duration::from_secs(2), start);
        assert_eq!(line.lost_at(), start + Duration::from_millis(1760));
        line.answered(start + Duration::from_secs(1));
        // An older request answered late moves nothing back.
        line.answered(start + Duration::from_millis(500));
        assert_eq!(line.lost_at(), start + Duration::from_millis(2760));
    }
}
