//! The Rust runner's scenarios of issue 33's lease semantics (cases.txt's last block): apart
//! from `conformance.rs`, which is past the 700-line rule.

use std::time::{Duration, Instant};

use zklock::{ElectionStyle, Lease, LeaseState, Options, Wait};

use super::{error_word, word, Outcome, Runner};

mod counter;
mod extend;
mod metrics;

/// The maximum hold the `valid-until-max-hold` scenarios use, and the rounding they allow.
const MAX_HOLD: Duration = Duration::from_secs(1);
const ROUNDING: Duration = Duration::from_millis(10);
/// `valid-until-max-hold-from-idle`: a short session, the harness's tick, and an idle spell past
/// the warm time (one session timeout) so that the acquire has to earn a fresh proof.
const IDLE_SESSION: Duration = Duration::from_secs(2);
const IDLE_TICK: Duration = Duration::from_millis(200);
const IDLE_SPELL: Duration = Duration::from_millis(2_500);

/// Where `valid_until` stands against the maximum hold counted from `acquired`.
pub(crate) fn against_max_hold(lease: &Lease, acquired: Instant) -> &'static str {
    let now = Instant::now();
    match lease.valid_until() {
        None => "none",
        Some(u) if u <= now => "past",
        Some(u) if u > acquired + MAX_HOLD + ROUNDING => "beyond-max-hold",
        Some(_) => "within-max-hold",
    }
}

/// Where the time left stands against the maximum hold (`time-left-max-hold-short-session`).
fn left_against_max_hold(left: Option<Duration>) -> &'static str {
    match left {
        None => "none",
        Some(l) if l.is_zero() => "past",
        Some(l) if l > MAX_HOLD + ROUNDING => "beyond-max-hold",
        Some(_) => "within-max-hold",
    }
}

/// One of this block's scenarios, `None` for a name that is not one of them.
pub(crate) async fn scenario(runner: &Runner, name: &str) -> Option<Outcome> {
    let path = runner.case_path.as_str();
    Some(match name {
        "valid-until-max-hold" => {
            let lock = runner.client.mutex(path).unwrap().max_hold(Some(MAX_HOLD));
            let lease = lock.unwrap().acquire().await.unwrap();
            let outcome = against_max_hold(&lease, Instant::now());
            lease.release().await.unwrap();
            word(outcome)
        }
        "valid-until-max-hold-election" => {
            let election = runner
                .client
                .election(path, ElectionStyle::Latch, Some("a"))
                .unwrap()
                .max_hold(Some(MAX_HOLD))
                .unwrap();
            let lease = election.lead().await.unwrap();
            let outcome = against_max_hold(&lease, Instant::now());
            election.resign(lease, false).await.unwrap();
            word(outcome)
        }
        "valid-until-max-hold-from-idle" => {
            let options = Options::default()
                .session_timeout(IDLE_SESSION)
                .server_tick(IDLE_TICK);
            let own = runner.connect(options).await.unwrap();
            tokio::time::sleep(IDLE_SPELL).await;
            let lock = own.mutex(path).unwrap().max_hold(Some(MAX_HOLD));
            let lease = lock.unwrap().acquire().await.unwrap();
            let outcome = against_max_hold(&lease, Instant::now());
            lease.release().await.unwrap();
            own.close().await;
            word(outcome)
        }
        "time-left-max-hold-short-session" => {
            let options = Options::default()
                .session_timeout(IDLE_SESSION)
                .server_tick(IDLE_TICK);
            let own = runner.connect(options).await.unwrap();
            let lock = own.mutex(path).unwrap().max_hold(Some(MAX_HOLD));
            let lease = lock.unwrap().acquire().await.unwrap();
            let outcome = left_against_max_hold(lease.time_left());
            lease.release().await.unwrap();
            own.close().await;
            word(outcome)
        }
        "lost-stays-lost" => {
            let own = runner.connect(Options::default()).await.unwrap();
            let lease = own.mutex(path).unwrap().acquire().await.unwrap();
            own.close().await;
            // A Rust lease is consumed by its release: what it reads afterwards is the
            // `Ended` the faces keep in their handles.
            let ended = lease.ended();
            let _ = lease.release().await;
            let reason = match ended.lost_reason() {
                Some(_) => "reason",
                None => "no-reason",
            };
            word(&format!("{},{reason}", ended.state().as_str()))
        }
        "scope-end-after-loss" => Outcome::NotApplicable(
            "Rust has no scoped hold: a dropped Lease releases in the background and cannot \
             fail (Lease::ended().leave_scope is the rule the faces' scopes apply)",
        ),
        "resign-foreign-leadership" => {
            let a = runner
                .client
                .election(path, ElectionStyle::Latch, Some("a"))
                .unwrap();
            let b = runner
                .client
                .election(path, ElectionStyle::Latch, Some("b"))
                .unwrap();
            let lease = a.lead().await.unwrap();
            // The core's resign takes the lease by value (a refused one would be dropped, so
            // released): its check is asked as a face asks it before handing a lease over.
            let refused = match b.check_leadership(&lease) {
                Ok(()) => "ok",
                Err(e) => {
                    assert!(e.message().len() <= 300, "a message of {}", e.message());
                    e.kind().as_str()
                }
            };
            let leader = a.leader().await.unwrap().map(|p| p.identity);
            let leads = lease.state() == LeaseState::Held && leader.as_deref() == Some("a");
            a.resign(lease, false).await.unwrap();
            let leads = if leads { "still-leads" } else { "not-leading" };
            word(&format!("{refused},{leads}"))
        }
        "lead-while-leading" => {
            let election = runner
                .client
                .election(path, ElectionStyle::Latch, Some("a"))
                .unwrap();
            let lease = election.lead().await.unwrap();
            let again = election
                .lead_with(Wait::timeout(Duration::from_secs(2)), None)
                .await;
            let outcome = match again {
                Ok(second) => {
                    second.release().await.unwrap();
                    word("acquired")
                }
                Err(e) => error_word(&e),
            };
            election.resign(lease, false).await.unwrap();
            outcome
        }
        other => match counter::scenario(runner, other).await {
            Some(outcome) => outcome,
            None => match extend::scenario(runner, other).await {
                Some(outcome) => outcome,
                None => return metrics::scenario(runner, other).await,
            },
        },
    })
}
