//! A session that only waits holds nothing another could take from it (docs/safety.md,
//! "Proving on demand"): when its proof of life lapses (a slow server, a starved process) it is
//! not given up. Its acquire keeps its place in the queue and waits for a fresh proof before
//! the lock becomes its lease. Giving such sessions up lost most of 5,000 waiters at T = 4 s in
//! bench scenario 9, and the lock's queue listed itself again after every give-up.

mod common;

use std::time::Duration;

use common::*;
use tokio::time::Instant;
use zklock::{ConnectionState, Options};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_proof_lapses_keeps_its_place_and_holds_only_on_a_fresh_proof() {
    lapse_round(Recipe::Mutex).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_semaphore_waiter_whose_proof_lapses_keeps_its_node_and_leases_only_on_a_fresh_proof() {
    lapse_round(Recipe::Semaphore).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapsed_waiter_with_max_hold_and_lock_delay_gets_a_lease_whose_deadline_keeps_both() {
    lapse_round(Recipe::MutexWithLimits).await;
}

/// The ways a lock becomes a lease after a wait: a mutex's turn (its node first in the
/// queue) and a semaphore's count (Curator's lease nodes, under the guard).
#[derive(Clone, Copy)]
enum Recipe {
    Mutex,
    Semaphore,
    /// A mutex with a maximum hold and a lock-delay: the options that bound or delay a lease.
    MutexWithLimits,
}

/// The maximum hold of `Recipe::MutexWithLimits`.
const MAX_HOLD: Duration = Duration::from_secs(20);

impl Recipe {
    fn on(self, client: &zklock::Client, path: &str) -> zklock::Lock {
        match self {
            Recipe::Mutex => client.mutex(path).unwrap(),
            Recipe::Semaphore => client.semaphore(path, 1).unwrap(),
            Recipe::MutexWithLimits => client
                .mutex(path)
                .unwrap()
                .max_hold(Some(MAX_HOLD))
                .unwrap()
                .lock_delay(Some(Duration::from_secs(1)))
                .unwrap(),
        }
    }

    /// Where the holder's and the waiter's nodes both are once the waiter waits.
    fn queue(self, path: &str) -> String {
        match self {
            Recipe::Mutex | Recipe::MutexWithLimits => path.to_owned(),
            Recipe::Semaphore => format!("{path}/leases"),
        }
    }
}

async fn lapse_round(recipe: Recipe) {
    let path = unique_path("lapse");
    let timeout = Duration::from_secs(3);
    let options = Options::default().session_timeout(timeout);
    let holder = client_with(options.clone()).await;
    let proxy = proxy();
    let waiter = zklock::Client::connect(proxy.addr(), options)
        .await
        .unwrap();
    let lease = recipe.on(&holder, &path).acquire().await.unwrap();
    let wmutex = recipe.on(&waiter, &path);
    let acquire = tokio::spawn(async move {
        let lease = wmutex.acquire_timeout(Duration::from_secs(120)).await;
        (lease, Instant::now())
    });
    wait_for_nodes(&recipe.queue(&path), 2).await;

    // Every chunk through the waiter's proxy is held 500 ms both ways. The transport stays
    // connected, but a proof takes three answered requests, each a second's round trip, so it
    // always ends in the past: the session's deadline (at most T after the newest proof's first
    // request was sent) passes a session timeout after the delay began, and stays passed.
    proxy.delay(500);
    tokio::time::sleep(timeout + Duration::from_secs(1)).await;
    assert!(
        !acquire.is_finished(),
        "the waiter's acquire ended while it only waited: {:?}",
        acquire.await.unwrap().0.err()
    );
    assert_eq!(
        waiter.connection_state(),
        ConnectionState::Connected,
        "a session that holds nothing is not given up when its proof lapses"
    );

    // The lock is the waiter's now, but its proof is stale: no lease until a fresh one. (The
    // waiter hears of the release half a second later; what it does after that is checked
    // here only as far as the machine ran it within two seconds.)
    lease.release().await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        !acquire.is_finished(),
        "the waiter's lock became a lease on a lapsed proof"
    );

    proxy.heal();
    let healed = Instant::now();
    let (lease, acquired) = acquire.await.unwrap();
    let lease = lease.expect("the waiter acquires once its proof is fresh again");
    assert!(acquired >= healed);
    let valid_until = lease
        .valid_until()
        .expect("a lease made on a fresh proof has a deadline");
    assert!(
        tokio::time::Instant::from_std(valid_until) > acquired,
        "the lease's deadline is {:?} in the past at its grant",
        acquired.into_std().duration_since(valid_until)
    );
    if matches!(recipe, Recipe::MutexWithLimits) {
        assert!(
            tokio::time::Instant::from_std(valid_until) <= acquired + MAX_HOLD,
            "the lease's deadline is past its maximum hold"
        );
    }
    assert_eq!(lease.state(), zklock::LeaseState::Held);
    lease.release().await.unwrap();
    holder.close().await;
    waiter.close().await;
}
