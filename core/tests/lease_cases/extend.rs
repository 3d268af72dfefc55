//! The Rust runner's scenarios of extending a maximum hold (issue 37, point 3: cases.txt's
//! extend block).

use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use zklock::{LeaseState, Options};

use super::super::{error_word, word, Outcome, Runner};
use super::against_max_hold;

fn kind_or_ok<T>(r: zklock::Result<T>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) => e.kind().as_str().into(),
    }
}

/// One of this block's scenarios, `None` for a name that is not one of them.
pub(crate) async fn scenario(runner: &Runner, name: &str) -> Option<Outcome> {
    let path = runner.case_path.as_str();
    let client = &runner.client;
    let secs = Duration::from_secs;
    Some(match name {
        "extend-no-max-hold" => {
            let lease = client.mutex(path).unwrap().acquire().await.unwrap();
            let outcome = kind_or_ok(lease.extend(secs(1)));
            lease.release().await.unwrap();
            word(&outcome)
        }
        "extend-past-ceiling" => {
            let lock = client.mutex(path).unwrap().max_hold(Some(secs(5))).unwrap();
            let lease = lock
                .hold_ceiling(Some(secs(8)))
                .unwrap()
                .acquire()
                .await
                .unwrap();
            let first = kind_or_ok(lease.extend(secs(60)));
            let second = kind_or_ok(lease.extend(secs(6)));
            lease.release().await.unwrap();
            word(&format!("{first},{second}"))
        }
        "extend-after-loss" => {
            let own = runner.connect(Options::default()).await.unwrap();
            let lock = own.mutex(path).unwrap().max_hold(Some(secs(30))).unwrap();
            let lease = lock.acquire().await.unwrap();
            own.close().await;
            match lease.extend(secs(1)) {
                Ok(_) => word("ok"),
                Err(e) => error_word(&e),
            }
        }
        "extend-moves-valid-until" => {
            let lock = client.mutex(path).unwrap().max_hold(Some(secs(1))).unwrap();
            let lease = lock.acquire().await.unwrap();
            let acquired = Instant::now();
            lease.extend(secs(20)).unwrap();
            let outcome = against_max_hold(&lease, acquired);
            lease.release().await.unwrap();
            word(outcome)
        }
        "expiring-warns-first" => {
            let lock = client.mutex(path).unwrap();
            let lock = lock.max_hold(Some(Duration::from_millis(800))).unwrap();
            let lease = lock.acquire().await.unwrap();
            let events = Arc::new(StdMutex::new(Vec::<&'static str>::new()));
            let seen = events.clone();
            lease.on_expiring(Duration::from_millis(400), move |_| {
                seen.lock().unwrap().push("expiring")
            });
            let seen = events.clone();
            lease.on_lost(move || seen.lock().unwrap().push("lost"));
            let deadline = Instant::now() + secs(10);
            while Instant::now() < deadline && !events.lock().unwrap().contains(&"lost") {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert_eq!(lease.state(), LeaseState::Lost);
            let got = events.lock().unwrap().join(",");
            word(&got)
        }
        "rw-max-hold" => {
            let rw = client.rw_lock(path).unwrap();
            let rw = rw.max_hold(Some(Duration::from_millis(500))).unwrap();
            let mut words = Vec::new();
            for side in [rw.read(), rw.write()] {
                let lease = side.acquire().await.unwrap();
                let deadline = Instant::now() + secs(10);
                while lease.state() != LeaseState::Lost && Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                let reason = lease.lost_reason().unwrap_or_default();
                let why = reason.split(" lost: ").nth(1).unwrap_or("");
                words.push(why.split(':').next().unwrap_or("").trim().to_owned());
                let _ = lease.release().await;
            }
            word(&words.join(","))
        }
        "multi-max-hold" => {
            let members = [format!("{path}/a"), format!("{path}/b")];
            let multi = client.multi_lock(&members).unwrap();
            let multi = multi.max_hold(Some(Duration::from_millis(500))).unwrap();
            let lease = multi.acquire_timeout(secs(10)).await.unwrap();
            let deadline = Instant::now() + secs(10);
            while lease.state() != LeaseState::Lost && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let reason = lease.lost_reason().unwrap_or_default();
            let why = reason.split(" lost: ").nth(1).unwrap_or("");
            let why = why.split(':').next().unwrap_or("").trim().to_owned();
            let _ = lease.release().await;
            let again = client.multi_lock(members.iter().rev()).unwrap();
            let next = match again.acquire_timeout(secs(10)).await {
                Ok(next) => {
                    next.release().await.unwrap();
                    "acquired".to_owned()
                }
                Err(e) => e.kind().as_str().to_owned(),
            };
            word(&format!("{why},{next}"))
        }
        "multi-max-hold-extend" => {
            let members = [format!("{path}/a"), format!("{path}/b")];
            let multi = client.multi_lock(&members).unwrap();
            let multi = multi.max_hold(Some(secs(1))).unwrap();
            let multi = multi.hold_ceiling(Some(secs(5))).unwrap();
            let lease = multi.acquire_timeout(secs(10)).await.unwrap();
            let acquired = Instant::now();
            let first = kind_or_ok(lease.extend(secs(60)));
            let outcome = match lease.extend(secs(3)) {
                Ok(_) => against_max_hold(&lease, acquired).to_owned(),
                Err(e) => e.kind().as_str().to_owned(),
            };
            lease.release().await.unwrap();
            word(&format!("{first},{outcome}"))
        }
        "multi-max-hold-zero" => {
            let multi = client.multi_lock([format!("{path}/a")]).unwrap();
            word(&kind_or_ok(multi.max_hold(Some(Duration::ZERO))))
        }
        _ => return None,
    })
}
