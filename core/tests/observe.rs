//! Observing locks (issue 18): per-client stats moving as locks are taken, timed out, cancelled
//! and lost; `tracing` spans and events at their levels; writes guarded by the lease that do not
//! apply once it was lost.

mod common;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use common::*;
use zklock::{CancelToken, ErrorKind, LeaseState, Write, Written};

/// What the test subscriber saw: (level, span or event name, fields as `name=value`).
type Seen = Arc<Mutex<Vec<(tracing::Level, String, String)>>>;

/// A `tracing` subscriber that keeps every span and event, installed once for this process
/// (the core emits from its runtime thread, so a thread-local default would see nothing).
fn seen() -> &'static Seen {
    static SEEN: OnceLock<Seen> = OnceLock::new();
    SEEN.get_or_init(|| {
        let seen: Seen = Arc::default();
        tracing::subscriber::set_global_default(Keep(seen.clone())).expect("one subscriber");
        seen
    })
}

struct Keep(Seen);

struct Fields(String);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!("{}={:?} ", field.name(), value));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.push_str(&format!("{}={} ", field.name(), value));
    }
}

impl tracing::Subscriber for Keep {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut f = Fields(String::new());
        span.record(&mut f);
        let m = span.metadata();
        self.0
            .lock()
            .unwrap()
            .push((*m.level(), format!("span {}", m.name()), f.0));
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        let mut f = Fields(String::new());
        values.record(&mut f);
        self.0
            .lock()
            .unwrap()
            .push((tracing::Level::TRACE, "record".into(), f.0));
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut f = Fields(String::new());
        event.record(&mut f);
        self.0
            .lock()
            .unwrap()
            .push((*event.metadata().level(), "event".into(), f.0));
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

async fn eventually(what: &str, mut ok: impl FnMut() -> bool) {
    for _ in 0..200 {
        if ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("not within 10 s: {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_count_acquires_by_outcome_and_what_is_held_and_waiting_now() {
    let path = unique_path("stats");
    let (client, other) = (client().await, client().await);
    assert_eq!(client.stats(), zklock::Stats::default());

    let held_elsewhere = other.mutex(&path).unwrap().acquire().await.unwrap();
    let mutex = client.mutex(&path).unwrap();
    assert!(mutex.try_acquire().await.unwrap().is_none());
    let err = mutex
        .acquire_timeout(Duration::from_millis(200))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);

    let cancel = CancelToken::new();
    let waiting = tokio::spawn(mutex.acquire_with(None, cancel.clone()));
    eventually("one acquire waiting", || client.stats().waiting == 1).await;
    cancel.cancel();
    assert_eq!(
        waiting.await.unwrap().unwrap_err().kind(),
        ErrorKind::Cancelled
    );

    let waiting = tokio::spawn(mutex.acquire_with(None, CancelToken::new()));
    eventually("waiting again", || client.stats().waiting == 1).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    held_elsewhere.release().await.unwrap();
    let lease = waiting.await.unwrap().unwrap();
    let again = mutex.acquire().await.unwrap(); // re-entrant: not an acquire of its own
    let s = client.stats();
    assert_eq!(
        (
            s.acquired,
            s.timed_out,
            s.cancelled,
            s.failed,
            s.held,
            s.waiting
        ),
        (1, 2, 1, 0, 1, 0),
        "{s:?}"
    );
    assert_eq!(s.wait.count, 1);
    assert!(s.wait.p50 >= Duration::from_millis(100), "{s:?}");
    assert!(s.wait.p50 <= s.wait.max && s.wait.p99 <= s.wait.max);
    assert_eq!(s.hold.count, 0);

    tokio::time::sleep(Duration::from_millis(50)).await;
    again.release().await.unwrap();
    lease.release().await.unwrap();
    let s = client.stats();
    assert_eq!((s.held, s.hold.count, s.lost), (0, 1, 0), "{s:?}");
    assert!(s.hold.max >= Duration::from_millis(50), "{s:?}");
    assert_eq!(other.stats().acquired, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_holed_holder_counts_suspended_lost_and_an_expiry_and_its_guarded_write_does_not_apply(
) {
    let seen = seen();
    let path = unique_path("guarded-lost");
    let target = format!("{path}-data");
    let (proxy, holder) = client_behind_proxy(Duration::from_secs(2)).await;
    let lease = holder.mutex(&path).unwrap().acquire().await.unwrap();
    let written = lease
        .guarded_write(vec![Write::create(&target, b"one".to_vec())])
        .await
        .unwrap();
    assert_eq!(written, vec![Written::Created(target.clone())]);

    proxy.blackhole();
    tokio::time::timeout(Duration::from_secs(15), lease.lost())
        .await
        .expect("the lease is lost while black-holed");
    let err = lease
        .guarded_write(vec![
            Write::set_data(&target, b"two".to_vec()),
            Write::create(format!("{target}-2"), b"x".to_vec()),
        ])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LockLost, "{err}");
    proxy.heal();

    let raw = zookeeper_client::Client::connect(servers()).await.unwrap();
    let (data, _) = raw.get_data(&target).await.unwrap();
    assert_eq!(data, b"one", "the write after loss did not apply");
    assert_eq!(
        raw.check_stat(&format!("{target}-2")).await.unwrap(),
        None,
        "nothing was created after loss"
    );
    let s = holder.stats();
    assert!(s.suspended >= 1, "{s:?}");
    assert_eq!((s.lost, s.held, s.session_expiries), (1, 0, 1), "{s:?}");
    assert_eq!(s.hold.count, 1);

    // The state changes are WARN events naming the node; the session's end too.
    let node = lease.path().to_owned();
    eventually("a warn event for the lost lease", || {
        seen.lock().unwrap().iter().any(|(l, _, f)| {
            *l == tracing::Level::WARN && f.contains(&node) && f.contains("state=lost")
        })
    })
    .await;
    assert!(seen
        .lock()
        .unwrap()
        .iter()
        .any(|(l, _, f)| { *l == tracing::Level::WARN && f.contains("event=expired") }));
    raw.delete(&target, None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guarded_write_whose_lock_node_is_gone_fails_with_lock_lost_and_applies_nothing() {
    let path = unique_path("guarded-gone");
    let target = format!("{path}-data");
    let client = client().await;
    let lease = client.mutex(&path).unwrap().acquire().await.unwrap();
    // Someone deletes our lock node behind our back (an operator, or a session that ended).
    let raw = zookeeper_client::Client::connect(servers()).await.unwrap();
    raw.delete(lease.path(), None).await.unwrap();
    let err = lease
        .guarded_write(vec![Write::create(&target, b"late".to_vec())])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LockLost, "{err}");
    assert_eq!(raw.check_stat(&target).await.unwrap(), None);
    assert_eq!(lease.state(), LeaseState::Lost);

    // A failing write fails the whole batch: the create before it does not apply either.
    let lease = client.mutex(&path).unwrap().acquire().await.unwrap();
    let err = lease
        .guarded_write(vec![
            Write::create(&target, b"a".to_vec()),
            Write::delete(format!("{target}-missing")),
        ])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ZooKeeper, "{err}");
    assert!(err.message().contains("delete"), "{err}");
    assert_eq!(raw.check_stat(&target).await.unwrap(), None);
    let bad = lease
        .guarded_write(vec![Write::create("relative", b"".to_vec())])
        .await
        .unwrap_err();
    assert_eq!(bad.kind(), ErrorKind::InvalidArgument);
    // Only the check: still ours.
    assert_eq!(lease.guarded_write(vec![]).await.unwrap(), vec![]);
    lease.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_is_a_debug_span_with_its_path_kind_outcome_and_wait() {
    let seen = seen();
    let path = unique_path("traced");
    let client = client().await;
    let lease = client.mutex(&path).unwrap().acquire().await.unwrap();
    lease.release().await.unwrap();
    let seen = seen.lock().unwrap();
    assert!(
        seen.iter().any(|(l, n, f)| *l == tracing::Level::DEBUG
            && n == "span acquire"
            && f.contains(&format!("path={path}"))
            && f.contains("kind=mutex")),
        "{seen:?}"
    );
    assert!(seen.iter().any(|(l, n, f)| *l == tracing::Level::TRACE
        && n == "record"
        && f.contains("outcome=acquired")));
    assert!(seen
        .iter()
        .any(|(_, n, f)| n == "record" && f.contains("wait_ms=")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_connection_counts_a_suspension_and_a_reconnect_and_the_lease_stays_held() {
    let path = unique_path("reconnect");
    let (proxy, client) = client_behind_proxy(Duration::from_secs(10)).await;
    let lease = client.mutex(&path).unwrap().acquire().await.unwrap();
    proxy.cut();
    eventually("a reconnect to the same session", || {
        let s = client.stats();
        s.reconnects >= 1 && s.suspended >= 1 && lease.state() == LeaseState::Held
    })
    .await;
    let s = client.stats();
    assert_eq!((s.lost, s.session_expiries, s.held), (0, 0, 1), "{s:?}");
    // Still ours, as a guarded write shows.
    assert_eq!(lease.guarded_write(vec![]).await.unwrap(), vec![]);
    lease.release().await.unwrap();
}

/// Waits (at most 10 s) until the listener has heard `n` states, and returns them.
fn heard_states(heard: &Arc<Mutex<Vec<&'static str>>>, n: usize) -> Vec<&'static str> {
    for _ in 0..200 {
        if heard.lock().unwrap().len() >= n {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    heard.lock().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_listener_hears_connected_suspended_connected_and_lost_once() {
    let (proxy, client) = client_behind_proxy(Duration::from_secs(10)).await;
    let heard: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let sink = heard.clone();
    client.on_connection(move |s| sink.lock().unwrap().push(s.as_str()));
    assert_eq!(heard_states(&heard, 1), ["connected"]);
    assert_eq!(client.connection_state().as_str(), "connected");

    // The connection breaks and new ones are refused: suspended, not lost (the session lives).
    proxy.refuse();
    proxy.cut();
    assert_eq!(heard_states(&heard, 2), ["connected", "suspended"]);
    assert_eq!(client.connection_state().as_str(), "suspended");

    proxy.heal();
    assert_eq!(
        heard_states(&heard, 3),
        ["connected", "suspended", "connected"]
    );
    assert_eq!(client.connection_state().as_str(), "connected");

    client.close().await;
    assert_eq!(
        heard_states(&heard, 4),
        ["connected", "suspended", "connected", "lost"]
    );
    assert_eq!(client.connection_state().as_str(), "lost");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        heard.lock().unwrap().len(),
        4,
        "lost is the last word of a closed client"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_connection_listener_hears_nothing_more() {
    let client = client().await;
    let heard: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let sink = heard.clone();
    let id = client.on_connection(move |s| sink.lock().unwrap().push(s.as_str()));
    assert_eq!(heard_states(&heard, 1), ["connected"]);
    assert!(client.remove_connection_listener(id));
    assert!(!client.remove_connection_listener(id));
    client.close().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(*heard.lock().unwrap(), ["connected"]);
}
