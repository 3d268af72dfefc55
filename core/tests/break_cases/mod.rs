//! The Rust runner's scenarios of issue 37's breaking of a stuck lock (cases.txt's block):
//! apart from `conformance.rs`, which is past the 700-line rule.

use std::time::Duration;

use zklock::{Options, Wait};

use super::{error_word, word, Outcome, Runner};

/// A node name no contender has.
const MISSING: &str = "_c_00000000-0000-0000-0000-000000000000-lock-0000009999";

/// One of this block's scenarios, `None` for a name that is not one of them.
pub(crate) async fn scenario(runner: &Runner, name: &str) -> Option<Outcome> {
    let path = runner.case_path.as_str();
    Some(match name {
        "break-without-node" | "break-missing-node" => {
            let node = if name == "break-missing-node" {
                MISSING
            } else {
                ""
            };
            let held = runner.client.mutex(path).unwrap().acquire().await.unwrap();
            let other = runner.connect(Options::default()).await.unwrap();
            let outcome = match other.break_lock(path, node, Some("conformance")).await {
                Ok(_) => word("broken"),
                Err(e) => error_word(&e),
            };
            other.close().await;
            held.release().await.unwrap();
            outcome
        }
        "break-holder" => {
            let own = runner.connect(Options::default()).await.unwrap();
            let waiter = runner.connect(Options::default()).await.unwrap();
            let breaker = runner.connect(Options::default()).await.unwrap();
            let held = own.mutex(path).unwrap().acquire().await.unwrap();
            let waiting = waiter
                .mutex(path)
                .unwrap()
                .start_acquire(zklock::Owner::SHARED, Wait::Forever);
            let name = held.path().rsplit('/').next().unwrap().to_owned();
            let broken = breaker
                .break_lock(path, &name, Some("conformance"))
                .await
                .unwrap();
            let lost = tokio::time::timeout(Duration::from_secs(10), held.lost()).await;
            let reason = match (lost, held.lost_reason()) {
                (Ok(()), Some(reason)) => {
                    let why = reason.split_once(" lost: ").map_or("", |(_, w)| w);
                    why.split([':', ' ']).next().unwrap_or_default().to_owned()
                }
                _ => "none".to_owned(),
            };
            let state = held.state();
            let next = tokio::time::timeout(Duration::from_secs(10), waiting)
                .await
                .expect("the waiter acquires")
                .unwrap();
            let up = if next.token() > broken.token {
                "token-up"
            } else {
                "token-down"
            };
            next.release().await.unwrap();
            let _ = held.release().await;
            for c in [own, waiter, breaker] {
                c.close().await;
            }
            word(&format!("{},{reason},{up}", state.as_str()))
        }
        _ => return None,
    })
}
