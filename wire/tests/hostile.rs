//! A server is input too (issue 33): scripted servers on loopback that flood events, send bad
//! bytes after the handshake, answer HTTP, or break every connection right after its
//! handshake, and what the client does about each.

mod common;
use common::{frame, read_frame};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use zklock_wire::client::{Client, ClientOptions, Error as ZkError, SessionState};
use zklock_wire::conn::EVENT_QUEUE;
use zklock_wire::frame::{write_frame, FrameError, DEFAULT_MAX};
use zklock_wire::jute::*;
use zklock_wire::{connect, ConnectOptions, Error, Event, Request};

fn connect_response() -> Vec<u8> {
    frame(|o| {
        ConnectResponse {
            protocol_version: 0,
            timeout: 10_000,
            session_id: 0x42,
            passwd: vec![7; 16],
            read_only: false,
        }
        .encode(o)
    })
}

/// `n` notifications that a node nobody watches changed, in one buffer.
fn notifications(n: usize) -> Vec<u8> {
    let one = frame(|o| {
        ReplyHeader {
            xid: -1,
            zxid: -1,
            err: 0,
        }
        .encode(o);
        WatcherEvent {
            event_type: event_type::NODE_DATA_CHANGED,
            state: 3,
            path: "/nobody/asked".into(),
        }
        .encode(o)
    });
    one.repeat(n)
}

/// A server that takes every connection, answers its handshake, then runs `script` on it; the
/// count of connections accepted.
async fn server<F, Fut>(script: F) -> (String, Arc<AtomicU64>)
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let accepted = Arc::new(AtomicU64::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(script(s));
        }
    });
    (addr, accepted)
}

/// The handshake, then notifications as fast as the socket takes them, until the client goes.
async fn flood(mut s: TcpStream) {
    if read_frame(&mut s).await.is_none() {
        return;
    }
    if s.write_all(&connect_response()).await.is_err() {
        return;
    }
    let chunk = notifications(10_000);
    while s.write_all(&chunk).await.is_ok() {}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_sends_events_faster_than_they_are_taken_is_cut_off_with_the_queue_bounded() {
    let (addr, _) = server(flood).await;
    let (conn, mut events) = connect(&addr, &ConnectOptions::default()).await.unwrap();
    // Nobody takes the events: the server outruns the client at once. A request outstanding
    // meanwhile fails with the connection's reason.
    let exists = Request::Exists(ExistsRequest {
        path: "/x".into(),
        watch: false,
    });
    let reply = conn.call(&exists);
    let r = tokio::time::timeout(Duration::from_secs(20), reply)
        .await
        .expect("the flooded connection is closed, not left to grow");
    assert!(matches!(r, Err(Error::EventFlood(_))), "{r:?}");
    let mut buffered = 0;
    // The request fails as the task ends; `Closed` follows it.
    let end = loop {
        match events.recv().await {
            Some(Event::Watch { .. }) => buffered += 1,
            Some(Event::Closed(e)) => break *e,
            other => panic!("unexpected {other:?}"),
        }
    };
    assert!(buffered <= EVENT_QUEUE, "{buffered} events buffered");
    assert!(matches!(end, Error::EventFlood(_)), "{end:?}");
    assert!(end
        .to_string()
        .contains("faster than the client takes them"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_nobody_asked_for_are_dropped_and_a_flood_of_them_closes_the_connection() {
    let (addr, accepted) = server(flood).await;
    let options = ClientOptions {
        session_timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(2),
        ..ClientOptions::default()
    };
    let client = Client::connect(&addr, options, None).await.unwrap();
    let mut states = client.state_watcher();
    let closed = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Some((_, e)) = client.last_connection_failure() {
                break e;
            }
            states.changed().await;
        }
    })
    .await
    .expect("the client closes a connection that floods it with notifications");
    assert!(
        matches!(closed, Error::Unsolicited(_) | Error::EventFlood(_)),
        "{closed:?}"
    );
    assert!(accepted.load(Ordering::SeqCst) >= 1);
    client.close();
}

/// The handshake relayed to `target` (a real ZooKeeper, so the session is real), then a frame
/// length of 2 GB instead of the first reply.
async fn corrupting_relay(target: String) -> String {
    let (addr, _) = server(move |mut s| {
        let target = target.clone();
        async move {
            let Ok(mut up) = TcpStream::connect(&target).await else {
                return;
            };
            let Some(req) = read_frame(&mut s).await else {
                return;
            };
            let mut out = Vec::new();
            write_frame(&mut out, DEFAULT_MAX, |o| o.extend_from_slice(&req)).unwrap();
            up.write_all(&out).await.unwrap();
            let Some(resp) = read_frame(&mut up).await else {
                return;
            };
            let mut out = Vec::new();
            write_frame(&mut out, DEFAULT_MAX, |o| o.extend_from_slice(&resp)).unwrap();
            if s.write_all(&out).await.is_err() {
                return;
            }
            // The first request is answered with a length no server may send.
            let _ = read_frame(&mut s).await;
            let _ = s.write_all(&0x7fff_fff0i32.to_be_bytes()).await;
            let mut sink = [0u8; 1024];
            while matches!(s.read(&mut sink).await, Ok(n) if n > 0) {}
        }
    })
    .await;
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2_gb_frame_length_from_the_server_is_a_lost_connection_retried_on_the_healthy_server() {
    let healthy = zklock_testkit::shared().to_owned();
    let first = healthy.split(['/', ',']).next().unwrap().to_owned();
    let bad = corrupting_relay(first).await;
    let servers = format!("{bad},{healthy}");
    let mut saw_loss = false;
    // Every other error the clients saw on the way, for the failure's message.
    let mut others = Vec::new();
    // Clients until one met the bad server: the hosts are shuffled, so each starts there with
    // even odds (eight fixed clients all starting on the healthy one, 1 in 256, failed a run).
    for _ in 0..40 {
        if saw_loss {
            break;
        }
        let options = ClientOptions {
            session_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(2),
            ..ClientOptions::default()
        };
        let client = Client::connect(&servers, options, None).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let answered = loop {
            match client.check_stat("/").await {
                Ok(stat) => break stat,
                Err(e) => {
                    assert!(
                        e.is_transient(),
                        "bad bytes from the server reported as {e:?}"
                    );
                    let bad_bytes =
                        matches!(&e, ZkError::ConnectionLoss(m) if m.contains("bad bytes"));
                    saw_loss |= bad_bytes;
                    if !bad_bytes {
                        others.push(format!("{e:?}"));
                    }
                    assert!(
                        Instant::now() < deadline,
                        "no answer through the healthy server"
                    );
                    let mut states = client.state_watcher();
                    let _ = tokio::time::timeout(Duration::from_secs(1), async {
                        while states.peek_state() != SessionState::SyncConnected {
                            states.changed().await;
                        }
                    })
                    .await;
                }
            }
        };
        assert!(answered.is_some());
        client.close();
    }
    // Forty clients all starting on the healthy one: 1 in 2^40.
    assert!(
        saw_loss,
        "no client met the bad server; other errors seen: {others:?}"
    );
}

#[tokio::test]
async fn a_port_that_answers_http_is_reported_as_not_zookeeper_at_once() {
    let (addr, _) = server(|mut s| async move {
        let _ = read_frame(&mut s).await;
        let _ = s
            .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            .await;
    })
    .await;
    let started = Instant::now();
    let r = connect(&addr, &ConnectOptions::default()).await;
    assert!(
        matches!(r, Err(Error::Frame(FrameError::Http))),
        "{:?}",
        r.map(|_| ())
    );
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_breaks_every_connection_after_its_handshake_is_redialled_with_a_growing_pause(
) {
    // Each connection: the handshake, then a reply with an xid nothing asked for.
    let (addr, accepted) = server(|mut s| async move {
        if read_frame(&mut s).await.is_none() {
            return;
        }
        let mut out = connect_response();
        out.extend(frame(|o| {
            ReplyHeader {
                xid: 777,
                zxid: 1,
                err: 0,
            }
            .encode(o)
        }));
        let _ = s.write_all(&out).await;
        let mut sink = [0u8; 256];
        while matches!(s.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await;
    let options = ClientOptions {
        session_timeout: Duration::from_secs(30),
        connect_timeout: Duration::from_secs(2),
        ..ClientOptions::default()
    };
    let client = Client::connect(&addr, options, None).await.unwrap();
    // Counted over the first 3 s after the third connection, whatever the machine's speed: the
    // pauses (10 ms doubling to 1 s, plus jitter) allow at most about ten; without them, a
    // loopback redial takes well under a millisecond.
    let wait_for = |n: u64| {
        let accepted = accepted.clone();
        async move {
            while accepted.load(Ordering::SeqCst) < n {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), wait_for(3))
        .await
        .expect("the client redials a server that broke its connection");
    let from = accepted.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let in_window = accepted.load(Ordering::SeqCst) - from;
    assert!(
        in_window <= 12,
        "{in_window} connections in 3 s: the backoff was not kept"
    );
    assert!(in_window >= 1, "the client stopped redialling");
    let (_, why) = client
        .last_connection_failure()
        .expect("a failure recorded");
    assert!(
        matches!(why, Error::UnexpectedXid { got: 777, .. }),
        "{why:?}"
    );
    client.close();
}
