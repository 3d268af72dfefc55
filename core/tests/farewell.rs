//! A session the lifeline gives up is closed on the server too, over whatever direction still
//! works (issue 23, point 4). With only the server-to-client direction of the holder's link lost,
//! the transport's reconnect attempts still reach the server and revalidate the session, which
//! used to keep the holder's node (and the lock) for about a session timeout after the holder
//! had turned `lost`; the next holder waited about twice the session timeout.
//!
//! The farewell hands the lock on, so it must not come before the holder stopped (issue 33): it
//! was sent before the lost signal fired, and the next holder started a few milliseconds after
//! it. Now it waits for the lost signal's margin and for the holder to let go of its lease.

mod common;

use std::time::Duration;

use common::*;
use tokio::time::Instant;
use zklock::Options;

/// How the holder's link fails.
#[derive(Clone, Copy)]
enum Fault {
    /// The server-to-client direction is lost: nothing comes back.
    OneWay,
    /// Every chunk, both ways, is held this many milliseconds: the transport stays connected
    /// (something arrives well within its read timeout), but answers come too late for any
    /// proof, so the lifeline gives the session up with both directions working.
    Slow(u64),
}

/// When a round's link failed, the holder's lost signal fired, the holder let go and the
/// waiter acquired.
type Round = (Instant, Instant, Instant, Instant);

async fn one_way_round(stop_after: Duration) -> Round {
    round(Fault::OneWay, Duration::from_secs(3), stop_after).await
}

/// One round: a holder on a proxy, a waiter on a direct link, both with session timeout
/// `session`; the proxy's link fails as `fault` says. The holder lets go of its lease
/// `stop_after` after its lost signal. Returns (split, lost, let go, acquired).
async fn round(fault: Fault, session: Duration, stop_after: Duration) -> Round {
    let path = unique_path("farewell");
    let options = Options::default().session_timeout(session);
    let proxy = proxy();
    let holder = zklock::Client::connect(proxy.addr(), options.clone())
        .await
        .unwrap();
    let waiter = client_with(options).await;
    let lease = holder.mutex(&path).unwrap().acquire().await.unwrap();
    let stopped = tokio::spawn(async move {
        lease.lost().await;
        let lost = Instant::now();
        // The holder's work takes this long to stop; then it lets go of the lease.
        tokio::time::sleep(stop_after).await;
        let let_go = Instant::now();
        let _ = lease.release().await;
        (lost, let_go)
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
    // Queued: the waiter's node is there before the link breaks.
    wait_for_nodes(&path, 2).await;
    let split = Instant::now();
    match fault {
        Fault::OneWay => proxy.drop_to_client(),
        Fault::Slow(ms) => proxy.delay(ms),
    }

    let acquired_at = acquired_at.await.unwrap();
    let (lost_at, let_go_at) = stopped.await.unwrap();
    proxy.heal();
    holder.close().await;
    waiter.close().await;
    (split, lost_at, let_go_at, acquired_at)
}

fn ms(later: Instant, earlier: Instant) -> i128 {
    if later >= earlier {
        later.duration_since(earlier).as_millis() as i128
    } else {
        -(earlier.duration_since(later).as_millis() as i128)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_hears_nothing_back_closes_its_session_when_it_gives_it_up() {
    let (split, lost_at, _, acquired_at) = one_way_round(Duration::ZERO).await;
    let (lost_ms, acquired_ms) = (ms(lost_at, split), ms(acquired_at, split));
    let margin = ms(acquired_at, lost_at);
    println!("one-way loss: holder lost at {lost_ms} ms, waiter acquired at {acquired_ms} ms (margin {margin:+} ms)");
    // The farewell waits for the lost signal's margin (docs/safety.md, "Closing a session we
    // gave up"): margin + tick = 240 + 600 ms at T = 3 s.
    assert!(
        margin >= 200,
        "the waiter acquired {margin} ms after the holder's lost signal (at least 200 ms)"
    );
    // The server learned of the close then: no second session timeout for the next holder.
    assert!(
        margin < 2500,
        "the waiter waited {margin} ms after the holder gave its session up (the server kept it)"
    );
}

/// Prints one round of a holder that stops slowly and checks that the waiter acquired only
/// after the holder let go of its lost lease.
fn acquired_after_let_go(what: &str, (split, lost_at, let_go_at, acquired_at): Round) {
    println!(
        "{what}: lost at {} ms, let go at {} ms, waiter acquired at {} ms",
        ms(lost_at, split),
        ms(let_go_at, split),
        ms(acquired_at, split)
    );
    assert!(
        acquired_at > let_go_at,
        "{what}: the waiter acquired {} ms before the holder let go of its lost lease",
        ms(let_go_at, acquired_at)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_farewell_waits_for_a_holder_that_stops_slowly_to_let_go() {
    // Longer than the farewell's own wait (840 ms), shorter than the session timeout.
    let seen = one_way_round(Duration::from_millis(1800)).await;
    acquired_after_let_go("one-way loss, slow holder", seen);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_given_up_on_a_slow_link_is_not_closed_before_its_holder_let_go() {
    // Both directions work, slowly: the transport could say goodbye itself, and used to once
    // its heartbeats in flight were answered, while the holder was still stopping. The give-up
    // now leaves the session to the farewell (or the server's own expiry), which waits for the
    // lost signal's lead and for the holder to let go.
    //
    // T = 6 s (tick 1.2 s, keep 4.48 s), every chunk held 700 ms each way: a round trip of
    // 1.4 s is over the (keep − gap) / 3 = 1.28 s a proof allows, so the session is given up
    // while its pings still reach the server. The old goodbye came about a round trip and a
    // half after the lost signal (2.1 s); the server's own expiry comes no sooner than a
    // session timeout after the last ping arrived (about 6.7 s). The holder lets go 3.5 s after
    // its lost signal: well after the first, and with 3 s to spare before the second for a
    // starved test process.
    let session = Duration::from_secs(6);
    let seen = round(Fault::Slow(700), session, Duration::from_millis(3500)).await;
    acquired_after_let_go("slow link, slow holder", seen);
}
