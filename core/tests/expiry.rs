//! Losing a lease: session expiry hands the lock to the next waiter and fires the lost signal once.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use zklock::{LeaseState, Options, Released};

#[tokio::test]
async fn holder_session_expiry_passes_the_lock_and_fires_lost_once() {
    let path = unique_path("expiry");
    let options = Options::default().session_timeout(Duration::from_secs(2));
    // The holder talks to ZooKeeper through a proxy; black-holing it pauses the holder's
    // connection until the server expires its session.
    let proxy = proxy();
    let holder = zklock::Client::connect(proxy.addr(), options.clone())
        .await
        .unwrap();
    let waiter = client_with(options).await;
    let lease = holder.mutex(&path).unwrap().acquire().await.unwrap();
    let fired = Arc::new(AtomicUsize::new(0));
    let f = fired.clone();
    lease.on_lost(move || {
        f.fetch_add(1, Ordering::SeqCst);
    });
    let lost = lease.lost();
    let wmutex = waiter.mutex(&path).unwrap();
    let waiting = tokio::spawn(async move {
        wmutex
            .acquire_timeout(Duration::from_secs(20))
            .await
            .map(|l| l.token())
    });

    proxy.blackhole();

    let next_token = waiting
        .await
        .unwrap()
        .expect("the waiter acquires after the holder's session expired");
    assert!(
        next_token > lease.token(),
        "token {next_token} must exceed the lost holder's {}",
        lease.token()
    );
    tokio::time::timeout(Duration::from_secs(10), lost)
        .await
        .expect("lost signal fires");
    assert_eq!(lease.state(), LeaseState::Lost);
    let reason = lease.lost_reason().expect("a lost lease says why");
    assert!(reason.contains(&path), "{reason}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(fired.load(Ordering::SeqCst), 1, "on_lost runs exactly once");
    assert_eq!(lease.release().await.unwrap(), Released::WasLost);
    proxy.heal();
    // The client opened a fresh session for later acquires.
    let again = holder
        .mutex(&path)
        .unwrap()
        .acquire_timeout(Duration::from_secs(10))
        .await;
    assert!(again.is_ok(), "{again:?}");
}
