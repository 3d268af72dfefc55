//! Waiting on what the server shows, so a fault schedule follows events (a waiter's node seen)
//! rather than a sleep that assumes how fast the machine is.

use std::time::{Duration, Instant};

/// Waits until `path`, read through `servers`, has at least `at_least` children, and returns
/// them; panics with what it saw after `limit`.
pub async fn wait_for_children(
    servers: &str,
    path: &str,
    at_least: usize,
    limit: Duration,
) -> Vec<String> {
    let zk = zookeeper_client::Client::connect(servers)
        .await
        .unwrap_or_else(|e| panic!("connect to {servers} to watch {path}: {e}"));
    let deadline = Instant::now() + limit;
    loop {
        let seen = zk.list_children(path).await.unwrap_or_default();
        if seen.len() >= at_least {
            return seen;
        }
        assert!(
            Instant::now() < deadline,
            "{path} has {seen:?}, not {at_least} nodes, after {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
