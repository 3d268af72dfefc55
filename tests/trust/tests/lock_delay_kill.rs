//! Lock-delay against a holder killed outright (issue 37, point 2: "SIGKILL a holder; the
//! successor acquires >= lock_delay after the expiry"). The holder is another process
//! (`trust-holder`) killed with SIGKILL: it writes no release marker, its session expires on the
//! server, and the waiter with the same lock-delay holds only `DELAY` after its node went, with a
//! larger token. Measured from the deletion as a raw watch of a third session sees it.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use zklock::Options;
use zklock_testkit::{shared, unique_path};
use zklock_trust::nodes::wait_for_children;

const DELAY: Duration = Duration::from_secs(3);
const SESSION_MS: &str = "2000";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_behind_a_sigkilled_holder_holds_only_a_lock_delay_after_its_session_expired() {
    let servers = shared();
    let path = unique_path("lock-delay-kill");
    let delay_ms = DELAY.as_millis().to_string();
    let mut holder = Command::new(env!("CARGO_BIN_EXE_trust-holder"))
        .args([servers, path.as_str(), SESSION_MS, delay_ms.as_str()])
        .stdout(Stdio::piped())
        .spawn()
        .expect("trust-holder starts");
    let mut lines = BufReader::new(holder.stdout.take().unwrap()).lines();
    let first = lines.next().expect("the holder prints its token").unwrap();
    let held_token: i64 = first
        .strip_prefix("token ")
        .unwrap_or_else(|| panic!("the holder said {first:?}"))
        .parse()
        .unwrap();

    let waiter = zklock::Client::connect(servers, Options::default())
        .await
        .unwrap();
    let lock = waiter
        .mutex(&path)
        .unwrap()
        .lock_delay(Some(DELAY))
        .unwrap();
    let holder_node = lock.participants().await.unwrap()[0].node.clone();
    let waiting = tokio::spawn(async move {
        let lease = lock.acquire_timeout(Duration::from_secs(60)).await;
        (lease, Instant::now())
    });
    wait_for_children(servers, &path, 2, Duration::from_secs(30)).await;

    // A raw watch on the holder's node, polled by its own task (so the moment it records is not
    // held up by this one), then the kill: no release, no marker, only the expiry.
    let raw = zookeeper_client::Client::connect(servers).await.unwrap();
    let (stat, watcher) = raw.check_and_watch_stat(&holder_node).await.unwrap();
    assert!(stat.is_some(), "{holder_node} exists before the kill");
    let deleted = tokio::spawn(async move {
        let event = watcher.changed().await;
        (event.event_type, Instant::now())
    });
    holder.kill().expect("SIGKILL the holder");
    holder.wait().unwrap();
    let (event, gone) = tokio::time::timeout(Duration::from_secs(60), deleted)
        .await
        .expect("the killed holder's session expires")
        .unwrap();
    assert_eq!(event, zookeeper_client::EventType::NodeDeleted);

    let (lease, acquired) = waiting.await.unwrap();
    let lease = lease.expect("the waiter acquires after the delay");
    let after = acquired.saturating_duration_since(gone);
    eprintln!("lock-delay {DELAY:?}: held {after:?} after the killed holder's node went");
    assert!(
        after >= DELAY,
        "held {after:?} after the expiry, before the {DELAY:?} lock-delay"
    );
    assert!(lease.token() > held_token);
    lease.release().await.unwrap();
    waiter.close().await;
}
