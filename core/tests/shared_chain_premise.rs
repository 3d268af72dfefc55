//! The shared chain's premise, read from the server (issue 54; `sessions::carrier`): a session
//! shares its member's chain only if the top byte of its id names one member. ZooKeeper puts the
//! creating server's id there shifted by 56 bits (`SessionTrackerImpl.initializeNextSessionId`),
//! so members 1 and 257 give their sessions ids that look alike. The client reads the ensemble's
//! configuration (`/zookeeper/config`) from the member that created the session and keeps each
//! session on its own chain when two member ids agree modulo 256. A file of its own: it starts
//! an ensemble of such ids.

use std::time::Duration;

use zklock::support::proof_carrier;
use zklock::{Client, Options};
use zklock_testkit::{Config, ZooKeeper};

/// Long enough for the tick (200 ms) that a sharer could live on its transport's pings, so
/// only the premise keeps the sessions apart.
const SESSION: Duration = Duration::from_secs(4);
const TICK: Duration = Duration::from_millis(200);

fn member(session_id: i64) -> u8 {
    (session_id as u64 >> 56) as u8
}

async fn two_sessions(hosts: &str) -> (Client, Client) {
    let options = Options::default()
        .session_timeout(SESSION)
        .server_tick(TICK);
    let first = Client::connect(hosts, options.clone())
        .await
        .unwrap_or_else(|e| panic!("connect to {hosts}: {e}"));
    let second = Client::connect(hosts, options)
        .await
        .unwrap_or_else(|e| panic!("connect to {hosts}: {e}"));
    (first, second)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_never_share_a_chain_on_an_ensemble_whose_member_ids_agree_modulo_256() {
    let ids = vec![1, 2, 257];
    let zk = ZooKeeper::start(
        3,
        &Config {
            tick_ms: TICK.as_millis() as u32,
            server_ids: Some(ids.clone()),
            ..Config::default()
        },
    )
    .unwrap_or_else(|e| panic!("cannot start a 3-member ensemble with ids {ids:?}: {e}"));
    zk.wait_serving(Duration::from_secs(120))
        .unwrap_or_else(|e| panic!("the ensemble with ids {ids:?} did not serve: {e}"));

    // Pinned to one member each, so both sessions of a pair are on the same member.
    let (a, b) = two_sessions(&zk.address(2)).await;
    assert_eq!(
        member(a.session_id()),
        1,
        "member 257's sessions carry 1 in their id's top byte, as member 1's do"
    );
    assert_eq!(member(b.session_id()), member(a.session_id()));
    assert_eq!(
        proof_carrier(&b),
        None,
        "a session on member 257 shares no chain: its id would name member 1"
    );
    let (c, d) = two_sessions(&zk.address(1)).await;
    assert_eq!(member(d.session_id()), 2);
    assert_eq!(
        proof_carrier(&d),
        None,
        "the whole ensemble's ids are ambiguous, so no session on it shares"
    );

    // The same process, the same timings, on a server whose configuration is unambiguous (a
    // standalone server, the only member): the second session shares the first one's chain.
    let (e, f) = two_sessions(zklock_testkit::shared()).await;
    assert_eq!(proof_carrier(&f), Some(e.session_id()));
    drop((a, b, c, d, e, f));
}
