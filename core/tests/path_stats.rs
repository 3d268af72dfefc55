//! Per-path statistics (issue 37, point 4): counted per lock path, bounded by
//! `Options::path_stats_limit` whatever paths a program passes, and rendered in OpenMetrics.

mod common;

use std::time::Duration;

use common::*;
use zklock::{ErrorKind, LossReason, Options, PathStats};

fn of<'a>(paths: &'a [PathStats], path: &str) -> &'a PathStats {
    paths
        .iter()
        .find(|p| p.path.as_deref() == Some(path))
        .unwrap_or_else(|| panic!("{path} not in {paths:?}"))
}

fn lost(p: &PathStats, reason: LossReason) -> u64 {
    p.lost.iter().find(|(r, _)| *r == reason).unwrap().1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_path_counts_its_acquires_timeouts_holds_and_a_broken_loss() {
    let (a, b) = (unique_path("path-stats-a"), unique_path("path-stats-b"));
    let (client, other) = (client().await, client().await);
    let lease_a = client.mutex(&a).unwrap().acquire().await.unwrap();
    let lease_b = client.mutex(&b).unwrap().acquire().await.unwrap();
    lease_b.release().await.unwrap();
    let lease_b = client.mutex(&b).unwrap().acquire().await.unwrap();
    let err = other
        .mutex(&a)
        .unwrap()
        .acquire_timeout(Duration::from_millis(200))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);

    let snapshot = client.path_stats();
    assert_eq!((snapshot.limit, snapshot.folded), (1000, 0));
    assert!(snapshot.overflow.is_none());
    let (sa, sb) = (of(&snapshot.paths, &a), of(&snapshot.paths, &b));
    assert_eq!((sa.acquired, sa.held, sb.acquired, sb.held), (1, 1, 2, 1));
    assert!(sa.oldest_hold >= sb.oldest_hold, "{sa:?} {sb:?}");
    let seen_by_other = other.path_stats();
    let oa = of(&seen_by_other.paths, &a);
    assert_eq!((oa.acquired, oa.timed_out, oa.held), (0, 1, 0));

    // Someone deletes our node on `a`: the lease turns lost, counted as `broken` on `a` only.
    let raw = zookeeper_client::Client::connect(servers()).await.unwrap();
    raw.delete(lease_a.path(), None).await.unwrap();
    tokio::time::timeout(Duration::from_secs(30), lease_a.lost())
        .await
        .expect("the lease turns lost");
    // The lost signal wakes us as the state turns; the hold's end is counted just after.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let snapshot = loop {
        let snapshot = client.path_stats();
        if of(&snapshot.paths, &a).held == 0 || std::time::Instant::now() > deadline {
            break snapshot;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let (sa, sb) = (of(&snapshot.paths, &a), of(&snapshot.paths, &b));
    assert_eq!((lost(sa, LossReason::Broken), sa.held), (1, 0), "{sa:?}");
    assert_eq!(sa.oldest_hold, Duration::ZERO);
    assert_eq!(lost(sa, LossReason::Session), 0);
    assert!(sb.lost.iter().all(|(_, n)| *n == 0), "{sb:?}");

    let text = client.openmetrics(&[]);
    let line = format!(
        "zklock_path_leases_lost_total{{client=\"{}\",path=\"{a}\",reason=\"broken\"}} 1\n",
        client.id()
    );
    assert!(text.contains(&line), "{line} not in\n{text}");
    // `a`, held by none of ours now, has no `held` or oldest hold series; `b`, held, has both.
    for (name, path, present) in [
        ("zklock_path_held", &a, false),
        ("zklock_path_oldest_hold_seconds", &a, false),
        ("zklock_path_held", &b, true),
        ("zklock_path_oldest_hold_seconds", &b, true),
    ] {
        let start = format!("{name}{{client=\"{}\",path=\"{path}\"}} ", client.id());
        let found = text.lines().any(|l| l.starts_with(&start));
        assert_eq!(found, present, "{start} in\n{text}");
    }
    lease_b.release().await.unwrap();
    client.close().await;
    other.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_past_the_limit_fold_into_one_series_and_the_kept_paths_never_exceed_it() {
    let client = client_with(Options::default().path_stats_limit(3)).await;
    let base = unique_path("path-stats-many");
    // One wait counter per series that acquired (the idle paths have no `held` series).
    let series = |text: &str| {
        text.lines()
            .filter(|l| l.starts_with("zklock_path_wait_seconds_total{"))
            .count()
    };
    let mut sizes = Vec::new();
    for i in 0..24 {
        let lease = client
            .mutex(&format!("{base}/{i}"))
            .unwrap()
            .acquire()
            .await
            .unwrap();
        lease.release().await.unwrap();
        if i % 8 == 7 {
            sizes.push(series(&client.openmetrics(&[])));
        }
    }
    let snapshot = client.path_stats();
    assert_eq!(snapshot.paths.len(), 3, "{snapshot:?}");
    assert_eq!(snapshot.folded, 21);
    let overflow = snapshot.overflow.expect("an overflow series");
    assert_eq!(
        (overflow.path, overflow.acquired, overflow.held),
        (None, 21, 0)
    );
    // What is rendered stays the same size however many paths came: 3 paths and the overflow.
    assert_eq!(sizes, [4, 4, 4]);
    assert!(client
        .openmetrics(&[])
        .contains("zklock_path_stats_folded_total{client="));
    assert_eq!(client.stats().acquired, 24);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_of_zero_keeps_no_path_and_one_past_the_maximum_is_refused() {
    let off = client_with(Options::default().path_stats_limit(0)).await;
    let lease = off
        .mutex(&unique_path("path-stats-off"))
        .unwrap()
        .acquire()
        .await
        .unwrap();
    lease.release().await.unwrap();
    let snapshot = off.path_stats();
    assert_eq!(
        (snapshot.paths.len(), snapshot.folded, snapshot.limit),
        (0, 0, 0)
    );
    assert!(!off.openmetrics(&[]).contains("zklock_path_"));
    assert_eq!(off.stats().acquired, 1);
    off.close().await;

    let too_many = Options::default().path_stats_limit(zklock::MAX_PATH_STATS_LIMIT + 1);
    let err = zklock::Client::connect(servers(), too_many)
        .await
        .expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.message().contains("path_stats_limit"), "{err}");
}
