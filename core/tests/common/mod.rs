//! Shared helpers for the core's scenario tests: a real ZooKeeper from the harness, clients,
//! and a raw ZooKeeper view of lock paths (to check that no node is left behind).
#![allow(dead_code)]

use std::time::Duration;

pub mod memory;

#[allow(unused_imports)]
pub use zklock_testkit::unique_path;

pub fn servers() -> &'static str {
    zklock_testkit::shared()
}

pub async fn client() -> zklock::Client {
    client_with(zklock::Options::default()).await
}

pub async fn client_with(options: zklock::Options) -> zklock::Client {
    zklock::Client::connect(servers(), options)
        .await
        .expect("connect to the test ZooKeeper")
}

/// The children of `path` as ZooKeeper has them (empty when the path is gone).
pub async fn children_at(servers: &str, path: &str) -> Vec<String> {
    let zk = zookeeper_client::Client::connect(servers)
        .await
        .expect("raw connect");
    match zk.list_children(path).await {
        Ok(c) => c,
        Err(zookeeper_client::Error::NoNode) => Vec::new(),
        Err(e) => panic!("list {path}: {e}"),
    }
}

pub async fn children(path: &str) -> Vec<String> {
    children_at(servers(), path).await
}

/// Waits up to 60 s until `path` holds at least `n` nodes, so a test moves on once a waiter
/// has queued (its node is there), whatever the machine's speed.
pub async fn wait_for_nodes(path: &str, n: usize) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let seen = children(path).await;
        if seen.len() >= n {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{path} holds {seen:?}, not {n} nodes, after 60 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits up to 10 s for `path` to hold no children (background deletes may still be in flight).
pub async fn assert_empty_eventually(path: &str) {
    let mut left = Vec::new();
    for _ in 0..100 {
        left = children(path).await;
        if left.is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("lock path {path} still holds {left:?}");
}

/// A fault proxy in front of the shared server.
pub fn proxy() -> zklock_testkit::Proxy {
    let first = servers().split(',').next().unwrap().to_owned();
    zklock_testkit::Proxy::start(&first).expect("start proxy")
}

/// A client that reaches the shared server through its own fault proxy, with the given session
/// timeout: black-hole the proxy to pause the client's connection.
pub async fn client_behind_proxy(
    session_timeout: Duration,
) -> (zklock_testkit::Proxy, zklock::Client) {
    let proxy = proxy();
    let options = zklock::Options::default().session_timeout(session_timeout);
    let client = zklock::Client::connect(proxy.addr(), options)
        .await
        .expect("connect through the proxy");
    (proxy, client)
}
