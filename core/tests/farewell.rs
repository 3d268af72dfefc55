//! A session the lifeline gives up is closed on the server too, over whatever direction still
//! works (issue 23, point 4). With only the server-to-client direction of the holder's link lost,
//! the transport's reconnect attempts still reach the server and revalidate the session, which
//! used to keep the holder's node (and the lock) for about a session timeout after the holder
//! had turned `lost`; the next holder waited about twice the session timeout.

mod common;

use std::time::Duration;

use common::*;
use tokio::time::Instant;
use zklock::Options;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_hears_nothing_back_closes_its_session_when_it_gives_it_up() {
    let path = unique_path("farewell");
    let session = Duration::from_secs(3);
    let options = Options::default().session_timeout(session);
    let proxy = proxy();
    let holder = zklock::Client::connect(proxy.addr(), options.clone())
        .await
        .unwrap();
    let waiter = client_with(options).await;
    let lease = holder.mutex(&path).unwrap().acquire().await.unwrap();
    let lost = lease.lost();
    let lost_at = tokio::spawn(async move {
        lost.await;
        Instant::now()
    });
    let wmutex = waiter.mutex(&path).unwrap();
    let acquired_at = tokio::spawn(async move {
        let lease = wmutex
            .acquire_timeout(Duration::from_secs(30))
            .await
            .expect("the waiter acquires");
        let at = Instant::now();
        lease.release().await.unwrap();
        at
    });
    wait_for_nodes(&path, 2).await;
    let split = Instant::now();
    proxy.drop_to_client();

    let acquired_at = acquired_at.await.unwrap();
    let lost_at = lost_at.await.unwrap();
    let lost_ms = lost_at.duration_since(split).as_millis();
    let acquired_ms = acquired_at.duration_since(split).as_millis();
    println!("one-way loss: holder lost at {lost_ms} ms, waiter acquired at {acquired_ms} ms");
    assert!(
        lost_at < acquired_at,
        "the holder knows first ({lost_ms} ms, waiter {acquired_ms} ms)"
    );
    // The server learned of the close at once: no second session timeout for the next holder.
    assert!(
        acquired_at.duration_since(lost_at) < Duration::from_millis(1500),
        "the waiter waited {} ms after the holder gave its session up (the server kept it)",
        acquired_at.duration_since(lost_at).as_millis()
    );
    assert!(
        acquired_at.duration_since(split) < session,
        "the lock changed hands {acquired_ms} ms after the split, later than one session timeout"
    );
    proxy.heal();
    holder.close().await;
    waiter.close().await;
}
