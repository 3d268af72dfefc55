//! The Rust runner's scenarios of issue 53's block: the peers' 2024–2026 fixes that apply to our
//! recipes, each with a client that talks to the server through a fault proxy of the harness
//! (`zklock_testkit::Proxy`), so the connection can be cut and every byte the client sends
//! counted.
//!
//! - `election-path-deleted-while-disconnected`: CURATOR-724 (apache/curator#1239, fixed by
//!   apache/curator#515: `LeaderLatch.java`'s `getChildren` callback after RECONNECTED now
//!   `reset()`s on NONODE instead of never re-creating its node). The leader must report `lost`
//!   (or lead again on a node of its own), never keep leading on a node that is gone.
//! - `nothing-sent-after-close`: CURATOR-720 (apache/curator#1235, fixed by #511:
//!   `CuratorZookeeperClient.internalBlockUntilConnectedOrTimedOut` kept waiting to connect
//!   after close) and CURATOR-729 (#1244, fixed by #520: `PersistentWatcher` re-registered
//!   itself in a loop after close). Once `close` returned, the proxy counts no byte and no
//!   connection more.
//! - `connection-event-not-deletion`: Curator GH-1290 (apache/curator#1290, fixed by #1291:
//!   `DistributedDoubleBarrier.internalEnter` returned after one wake-up, and its watcher fires
//!   on SyncConnected too; it now re-reads the children after every wake-up). A waiter whose
//!   connection breaks and comes back keeps waiting while its predecessor still holds.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zklock::{Client, ElectionStyle, Options, Owner, Wait};
use zklock_testkit::Proxy;

use super::{word, Outcome, Runner};

/// One of this block's scenarios, `None` for a name that is not one of them.
pub(crate) async fn scenario(runner: &Runner, name: &str) -> Option<Outcome> {
    Some(match name {
        "election-path-deleted-while-disconnected" => election_path_deleted(runner).await,
        "nothing-sent-after-close" => nothing_sent_after_close(runner).await,
        "connection-event-not-deletion" => connection_event_not_deletion(runner).await,
        _ => return None,
    })
}

/// A proxy in front of the first server of the test ZooKeeper, and a client through it with a
/// 4 s session (its pings every ~1.3 s, so a few seconds of quiet cover several).
async fn proxied(runner: &Runner) -> (Proxy, Client, States) {
    let first = runner.servers.split(',').next().unwrap().to_owned();
    let proxy = Proxy::start(&first).expect("start a fault proxy");
    let client = Client::connect(
        proxy.addr(),
        Options::default()
            .session_timeout(Duration::from_secs(4))
            .connect_timeout(Duration::from_secs(5)),
    )
    .await
    .expect("connect through the proxy");
    let states = States::default();
    let sink = states.0.clone();
    client.on_connection(move |s| sink.lock().unwrap().push(s.as_str()));
    (proxy, client, states)
}

/// The connection states a client reported, in order.
#[derive(Default, Clone)]
struct States(Arc<Mutex<Vec<&'static str>>>);

impl States {
    /// Waits (up to 30 s) until `state` is reported after the first `from` reports.
    async fn until(&self, from: usize, state: &str) -> usize {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            {
                let seen = self.0.lock().unwrap();
                if let Some(i) = seen.iter().skip(from).position(|s| *s == state) {
                    return from + i + 1;
                }
                assert!(Instant::now() < deadline, "never {state}: {seen:?}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

async fn raw(runner: &Runner) -> zookeeper_client::Client {
    zookeeper_client::Client::connect(&runner.servers)
        .await
        .expect("raw connect")
}

async fn election_path_deleted(runner: &Runner) -> Outcome {
    let path = runner.case_path.as_str();
    let (proxy, client, states) = proxied(runner).await;
    let election = client
        .election(path, ElectionStyle::Latch, Some("a"))
        .unwrap();
    let lease = election.lead().await.unwrap();
    // Disconnected, the session alive: the client's connection is cut and it cannot come back.
    let seen = states.len();
    proxy.refuse();
    proxy.cut();
    states.until(seen, "suspended").await;
    // Meanwhile the election path goes away, the leader's node with it (an operator's cleanup,
    // or a tool that deletes a recipe's path recursively).
    let zk = raw(runner).await;
    for child in zk.list_children(path).await.unwrap_or_default() {
        zk.delete(&format!("{path}/{child}"), None).await.unwrap();
    }
    zk.delete(path, None).await.ok();
    let seen = states.len();
    proxy.heal();
    states.until(seen, "connected").await;
    // Back on the same session: the leader must learn that its node is gone.
    let outcome = match tokio::time::timeout(Duration::from_secs(20), lease.lost()).await {
        Ok(()) => "lost",
        Err(_) => {
            let ours = zk.list_children(path).await.unwrap_or_default();
            if ours.is_empty() {
                "still-leading-on-no-node"
            } else {
                "re-registered"
            }
        }
    };
    drop(lease);
    client.close().await;
    word(outcome)
}

async fn nothing_sent_after_close(runner: &Runner) -> Outcome {
    let path = runner.case_path.as_str();
    let (proxy, client, _) = proxied(runner).await;
    // Something of each kind running when close comes: a held lease (its lifeline), a waiting
    // acquire (its watch on the predecessor) and an election's watch.
    let held = client.mutex(path).unwrap().acquire().await.unwrap();
    let other_path = format!("{path}-other");
    let holder = runner
        .client
        .mutex(&other_path)
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let waiting = client
        .mutex(&other_path)
        .unwrap()
        .start_acquire(Owner::SHARED, Wait::Forever);
    let zk = raw(runner).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while zk
        .list_children(&other_path)
        .await
        .unwrap_or_default()
        .len()
        < 2
    {
        assert!(Instant::now() < deadline, "the waiter never queued");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    client.close().await;
    let (bytes, conns) = (proxy.bytes_from_clients(), proxy.connections_accepted());
    assert!(
        bytes > 0 && conns > 0,
        "the proxy counted the client's traffic"
    );
    // What would wake a loop left behind: the waiter's predecessor goes, the connection is cut.
    holder.release().await.unwrap();
    proxy.cut();
    drop(held);
    drop(waiting);
    // Three of the closed session's ping intervals (4 s / 3) of quiet.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (more_bytes, more_conns) = (
        proxy.bytes_from_clients() - bytes,
        proxy.connections_accepted() - conns,
    );
    word(&if more_bytes == 0 && more_conns == 0 {
        "none-sent".to_owned()
    } else {
        format!("sent={more_bytes},connections={more_conns}")
    })
}

async fn connection_event_not_deletion(runner: &Runner) -> Outcome {
    let path = runner.case_path.as_str();
    let holder = runner.client.mutex(path).unwrap().acquire().await.unwrap();
    let (proxy, client, states) = proxied(runner).await;
    let mut waiting = client
        .mutex(path)
        .unwrap()
        .start_acquire(Owner::SHARED, Wait::Forever);
    let zk = raw(runner).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while zk.list_children(path).await.unwrap_or_default().len() < 2 {
        assert!(Instant::now() < deadline, "the waiter never queued");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A connection event while the waiter watches its predecessor: cut, then back.
    let seen = states.len();
    proxy.cut();
    let at = states.until(seen, "suspended").await;
    states.until(at, "connected").await;
    // The predecessor still holds: the waiter must still be waiting (given two seconds after
    // the reconnect to go wrong: a waiter that takes the event for the deletion acquires at once).
    let early = tokio::time::timeout(Duration::from_secs(2), &mut waiting).await;
    let first = match early {
        Ok(Ok(lease)) => {
            lease.release().await.ok();
            "acquired-while-held"
        }
        Ok(Err(_)) => "failed",
        Err(_) => "waited",
    };
    holder.release().await.unwrap();
    let second = if first == "waited" {
        match tokio::time::timeout(Duration::from_secs(30), waiting).await {
            Ok(Ok(lease)) => {
                lease.release().await.unwrap();
                "acquired"
            }
            Ok(Err(e)) => e.kind().as_str(),
            Err(_) => "hung",
        }
    } else {
        "-"
    };
    client.close().await;
    word(&format!("{first},{second}"))
}
