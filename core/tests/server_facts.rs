//! What a client learns of its servers at connect (issue 53): their tick, from the shortest
//! session they grant (half of it), and their version class, from the requests they know. The
//! lifeline never runs on a tick smaller than the server's: a smaller `server_tick` is raised to
//! it, and a session too short for it is refused before any lease (docs/safety.md, "The deadline
//! and its terms"; docs/interop.md, "Server versions").

use std::time::Duration;

use zklock::{ErrorKind, Options, ServerClass};
use zklock_testkit::{unique_path, Config, ZooKeeper};

fn start(config: Config) -> ZooKeeper {
    ZooKeeper::start(1, &config).expect("ZooKeeper must start (scripts/install-deps.sh)")
}

/// A zoo.cfg without `tickTime`: ZooKeeper's built-in `DEFAULT_TICK_TIME`, 3 s.
fn built_in_tick() -> Config {
    Config {
        tick_line: false,
        ..Config::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_default_client_is_refused_before_its_first_lease_by_a_server_on_the_built_in_3_s_tick() {
    let zk = start(built_in_tick());
    // The default session, 10 s, is shorter than four 3 s ticks.
    let err = zklock::Client::connect(&zk.connect_string(), Options::default())
        .await
        .expect_err("a 10 s session on a 3 s tick cannot be proven");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(err.message().contains("server_tick named: none"), "{err}");
    assert!(err.message().contains("at most 3 s"), "{err}");
    println!("refused: {err}");

    // A session long enough runs on 3 s, also when the user named the sample 2 s.
    for named in [None, Some(Duration::from_secs(2))] {
        let mut options = Options::default().session_timeout(Duration::from_secs(15));
        if let Some(tick) = named {
            options = options.server_tick(tick);
        }
        let client = zklock::Client::connect(&zk.connect_string(), options)
            .await
            .unwrap();
        assert_eq!(
            client.server_tick(),
            Duration::from_secs(3),
            "named {named:?}"
        );
        let lease = client
            .mutex(&unique_path("built-in-tick"))
            .unwrap()
            .acquire()
            .await
            .unwrap();
        lease.release().await.unwrap();
        client.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_learned_tick_is_the_servers_and_a_larger_named_tick_is_kept() {
    let zk = start(Config::default());
    let client = zklock::Client::connect(&zk.connect_string(), Options::default())
        .await
        .unwrap();
    assert_eq!(client.server_tick(), Duration::from_millis(200));
    let features = client.server_features();
    assert_eq!(features.class(), ServerClass::V3_7);
    assert_eq!(features.version_class(), "3.7+");
    assert!(features.lacks().is_empty());
    client.close().await;

    let named = Options::default().server_tick(Duration::from_millis(500));
    let client = zklock::Client::connect(&zk.connect_string(), named)
        .await
        .unwrap();
    assert_eq!(client.server_tick(), Duration::from_millis(500));
    client.close().await;
}

/// An operator's `minSessionTimeout` of 2 s on a 200 ms tick: the probe is granted 2 s, so the
/// client knows only that the tick is at most 1 s, and runs on that (documented in
/// docs/safety.md): safe, at the price of a shorter deadline, and a session shorter than 4 s
/// is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_min_session_timeout_that_hides_the_tick_makes_the_client_run_on_the_upper_bound() {
    let zk = start(Config {
        min_session_timeout_ms: Some(2_000),
        ..Config::default()
    });
    let client = zklock::Client::connect(&zk.connect_string(), Options::default())
        .await
        .unwrap();
    assert_eq!(client.server_tick(), Duration::from_secs(1));
    let lease = client
        .mutex(&unique_path("hidden-tick"))
        .unwrap()
        .acquire()
        .await
        .unwrap();
    lease.release().await.unwrap();
    client.close().await;

    let short = Options::default().session_timeout(Duration::from_secs(3));
    let err = zklock::Client::connect(&zk.connect_string(), short)
        .await
        .expect_err("a 3 s session on a tick of up to 1 s is refused");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
}

/// What the probe costs, printed (no timed assertion): a session opened and closed on one
/// member, two transactions through the leader, and the three class probes on it (a 3.7+ server
/// knows them all).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_probe_costs_one_short_session_per_client() {
    use zklock_wire::client::{probe_session, ClientOptions, ProbeAnswer};
    use zklock_wire::jute::{op, Writer};
    let zk = start(Config::default());
    let options = ClientOptions::default();
    let mut root = Vec::new();
    root.write_string("/");
    let mut check = root.clone();
    check.write_int(3);
    let probes = [
        (op::CHECK_WATCHES, check),
        (op::GET_EPHEMERALS, root),
        (op::WHO_AM_I, Vec::new()),
    ];
    let mut took = Vec::new();
    for _ in 0..5 {
        let started = std::time::Instant::now();
        let probed = probe_session(&zk.connect_string(), &options, None, &probes)
            .await
            .unwrap();
        took.push(started.elapsed());
        assert_eq!(probed.granted, Duration::from_millis(400));
        assert_eq!(probed.answers.len(), 3);
        assert!(
            !probed.answers.contains(&ProbeAnswer::Lost)
                && !probed.answers.contains(&ProbeAnswer::Answered(
                    zklock_wire::jute::code::UNIMPLEMENTED
                )),
            "{:?}",
            probed.answers
        );
    }
    took.sort();
    println!(
        "the probe (connect, handshake, three class probes, closeSession answered): min {:?}, \
         median {:?}, max {:?}",
        took[0], took[2], took[4]
    );
}
