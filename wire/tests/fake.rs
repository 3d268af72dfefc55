//! zklock-wire against a scripted server on loopback: the misbehaviours a real server does not
//! produce on demand (read-only mode, replies out of order, bad bytes, silence).

mod common;
use common::{frame, read_frame};

use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use zklock_wire::frame::{FrameError, DEFAULT_MAX};
use zklock_wire::jute::*;
use zklock_wire::{connect, connect_stream, ConnectOptions, Error, Event, Request, Response};

fn connect_response(timeout: i32, read_only: bool) -> Vec<u8> {
    frame(|o| {
        ConnectResponse {
            protocol_version: 0,
            timeout,
            session_id: 0x42,
            passwd: vec![7; 16],
            read_only,
        }
        .encode(o)
    })
}

fn reply(xid: i32, err: i32, body: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    frame(|o| {
        ReplyHeader { xid, zxid: 9, err }.encode(o);
        body(o);
    })
}

/// A server that answers the handshake with `hello` and then runs `script`.
async fn fake<F, Fut>(hello: Vec<u8>, script: F) -> String
where
    F: FnOnce(TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let req = read_frame(&mut s).await.unwrap();
        let req = ConnectRequest::decode_all(&req).unwrap();
        assert_eq!(req.passwd, vec![0; 16]);
        s.write_all(&hello).await.unwrap();
        script(s).await;
    });
    addr
}

/// The error an event says the connection closed with, if it is the close.
fn closed(event: Option<Event>) -> Option<Error> {
    match event {
        Some(Event::Closed(e)) => Some(*e),
        _ => None,
    }
}

fn exists() -> Request {
    Request::Exists(ExistsRequest {
        path: "/x".into(),
        watch: false,
    })
}

#[tokio::test]
async fn read_only_server_is_refused() {
    let addr = fake(connect_response(6000, true), |_s| async {}).await;
    let r = connect(&addr, &ConnectOptions::default()).await;
    assert!(matches!(r, Err(Error::ReadOnlyServer)), "{r:?}");
}

#[tokio::test]
async fn zero_timeout_is_an_expired_session() {
    let addr = fake(connect_response(0, false), |_s| async {}).await;
    let r = connect(&addr, &ConnectOptions::default()).await;
    assert!(matches!(r, Err(Error::SessionExpired)), "{r:?}");
}

#[tokio::test]
async fn handshake_cut_short() {
    let hello = connect_response(6000, false);
    let addr = fake(hello[..10].to_vec(), |_s| async {}).await;
    let r = connect(&addr, &ConnectOptions::default()).await;
    assert!(
        matches!(
            r,
            Err(Error::Frame(FrameError::Truncated { have: 10, want: 41 }))
        ),
        "{r:?}"
    );
}

#[tokio::test]
async fn unknown_xid_closes_the_connection() {
    let addr = fake(connect_response(6000, false), |mut s| async move {
        let req = read_frame(&mut s).await.unwrap();
        let h = RequestHeader::decode(&mut Reader::new(&req)).unwrap();
        assert_eq!(
            h,
            RequestHeader {
                xid: 1,
                op: op::EXISTS
            }
        );
        s.write_all(&reply(999, code::NO_NODE, |_| {}))
            .await
            .unwrap();
        let _ = read_frame(&mut s).await;
    })
    .await;
    let (conn, mut events) = connect(&addr, &ConnectOptions::default()).await.unwrap();
    assert_eq!(conn.session().id, 0x42);
    let r = conn.call(&exists()).await;
    assert!(
        matches!(
            r,
            Err(Error::UnexpectedXid {
                got: 999,
                expected: Some(1)
            })
        ),
        "{r:?}"
    );
    assert!(matches!(
        closed(events.recv().await),
        Some(Error::UnexpectedXid { .. })
    ));
    assert!(matches!(
        conn.call(&exists()).await,
        Err(Error::UnexpectedXid { .. })
    ));
}

#[tokio::test]
async fn reply_with_nothing_outstanding_closes_the_connection() {
    let addr = fake(connect_response(6000, false), |mut s| async move {
        s.write_all(&reply(5, 0, |_| {})).await.unwrap();
        let _ = read_frame(&mut s).await;
    })
    .await;
    let (conn, mut events) = connect(&addr, &ConnectOptions::default()).await.unwrap();
    match closed(events.recv().await) {
        Some(Error::UnexpectedXid {
            got: 5,
            expected: None,
        }) => {}
        other => panic!("{other:?}"),
    }
    assert!(conn.closed().is_some());
}

#[tokio::test]
async fn garbage_after_a_valid_frame() {
    let addr = fake(connect_response(6000, false), |mut s| async move {
        let _ = read_frame(&mut s).await.unwrap();
        let _ = read_frame(&mut s).await.unwrap();
        let mut bytes = reply(1, code::NO_NODE, |_| {});
        bytes.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef, 0, 1]);
        s.write_all(&bytes).await.unwrap();
        let _ = read_frame(&mut s).await;
    })
    .await;
    let (conn, mut events) = connect(&addr, &ConnectOptions::default()).await.unwrap();
    let first = conn.submit(&exists()).unwrap();
    let second = conn.submit(&exists()).unwrap();
    // The valid reply completes the first request; the garbage fails the second.
    assert_eq!(first.await.unwrap().result, Err(code::NO_NODE));
    let r = second.await;
    assert!(
        matches!(r, Err(Error::Frame(FrameError::NegativeLength(_)))),
        "{r:?}"
    );
    assert!(matches!(closed(events.recv().await), Some(Error::Frame(_))));
}

#[tokio::test]
async fn closed_mid_frame() {
    let addr = fake(connect_response(6000, false), |mut s| async move {
        let _ = read_frame(&mut s).await.unwrap();
        let bytes = reply(1, 0, |o| Stat::default().encode(o));
        s.write_all(&bytes[..30]).await.unwrap();
    })
    .await;
    let (conn, _events) = connect(&addr, &ConnectOptions::default()).await.unwrap();
    let r = conn.call(&exists()).await;
    assert!(
        matches!(
            r,
            Err(Error::Frame(FrameError::Truncated { have: 30, want: 88 }))
        ),
        "{r:?}"
    );
}

#[tokio::test]
async fn reply_of_the_wrong_shape() {
    let addr = fake(connect_response(6000, false), |mut s| async move {
        let _ = read_frame(&mut s).await.unwrap();
        // An exists reply whose Stat is 3 bytes long.
        s.write_all(&reply(1, 0, |o| o.extend_from_slice(&[1, 2, 3])))
            .await
            .unwrap();
        let _ = read_frame(&mut s).await;
    })
    .await;
    let (conn, _events) = connect(&addr, &ConnectOptions::default()).await.unwrap();
    let r = conn.call(&exists()).await;
    assert!(
        matches!(r, Err(Error::Jute(JuteError::Truncated { .. }))),
        "{r:?}"
    );
}

#[tokio::test]
async fn frame_over_the_limit_from_the_server() {
    let addr = fake(connect_response(6000, false), |mut s| async move {
        let _ = read_frame(&mut s).await.unwrap();
        s.write_all(&0x0010_0000i32.to_be_bytes()).await.unwrap();
        let _ = read_frame(&mut s).await;
    })
    .await;
    let (conn, _events) = connect(&addr, &ConnectOptions::default()).await.unwrap();
    let r = conn.call(&exists()).await;
    assert!(
        matches!(
            r,
            Err(Error::Frame(FrameError::TooLarge {
                len: 0x10_0000,
                limit: DEFAULT_MAX
            }))
        ),
        "{r:?}"
    );
}

#[tokio::test]
async fn watch_event_before_a_reply_is_delivered_first() {
    let addr = fake(connect_response(6000, false), |mut s| async move {
        let _ = read_frame(&mut s).await.unwrap();
        let mut bytes = reply(xid::NOTIFICATION, 0, |o| {
            WatcherEvent {
                event_type: event_type::NODE_DELETED,
                state: 3,
                path: "/x".into(),
            }
            .encode(o)
        });
        bytes.extend(reply(1, 0, |o| Stat::default().encode(o)));
        s.write_all(&bytes).await.unwrap();
        let _ = read_frame(&mut s).await;
    })
    .await;
    let (conn, mut events) = connect(&addr, &ConnectOptions::default()).await.unwrap();
    let r = conn.call(&exists()).await.unwrap();
    assert_eq!(
        r.result,
        Ok(Response::Exists(ExistsResponse {
            stat: Stat::default()
        }))
    );
    match events.try_recv() {
        Some(Event::Watch { event, .. }) => assert_eq!(event.path, "/x"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn silent_server_gets_pings_then_the_connection_times_out() {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let addr = fake(connect_response(600, false), |mut s| async move {
        // Collect what the client sends while never answering.
        let mut pings = 0;
        let until = tokio::time::Instant::now() + Duration::from_millis(1000);
        while let Ok(Some(f)) = tokio::time::timeout_at(until, read_frame(&mut s)).await {
            let h = RequestHeader::decode_all(&f).unwrap();
            assert_eq!(
                h,
                RequestHeader {
                    xid: xid::PING,
                    op: op::PING
                }
            );
            pings += 1;
        }
        let _ = tx.send(pings);
    })
    .await;
    let (conn, mut events) = connect(&addr, &ConnectOptions::default()).await.unwrap();
    assert_eq!(conn.session().timeout, Duration::from_millis(600));
    let started = std::time::Instant::now();
    match closed(events.recv().await) {
        Some(Error::ReadTimeout(d)) => assert_eq!(d, Duration::from_millis(400)),
        other => panic!("{other:?}"),
    }
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(390), "{took:?}");
    // Pings at 200 ms and 400 ms: the read timeout (400 ms) may win the second.
    let pings = rx.await.unwrap();
    assert!((1..=2).contains(&pings), "{pings} pings");
}

#[tokio::test]
async fn a_connection_runs_over_any_stream_even_one_that_takes_16_bytes_at_a_time() {
    // An in-memory pipe of 16 bytes: every frame is written and read in pieces.
    let (client, mut server) = tokio::io::duplex(16);
    tokio::spawn(async move {
        let req = read_frame(&mut server).await.unwrap();
        ConnectRequest::decode_all(&req).unwrap();
        server
            .write_all(&connect_response(6000, false))
            .await
            .unwrap();
        for want in 1..=3 {
            let req = read_frame(&mut server).await.unwrap();
            let h = RequestHeader::decode(&mut Reader::new(&req)).unwrap();
            assert_eq!(h.xid, want);
            server
                .write_all(&reply(want, code::NO_NODE, |_| {}))
                .await
                .unwrap();
        }
        let _ = read_frame(&mut server).await;
    });
    let (conn, mut events) = connect_stream(client, &ConnectOptions::default())
        .await
        .unwrap();
    assert_eq!(conn.session().id, 0x42);
    let futures: Vec<_> = (0..3).map(|_| conn.submit(&exists()).unwrap()).collect();
    for (i, f) in futures.into_iter().enumerate() {
        let r = f.await.unwrap();
        assert_eq!(r.xid, i as i32 + 1);
        assert_eq!(r.result, Err(code::NO_NODE));
        assert!(r.sent_at <= r.received_at);
    }
    assert_eq!(conn.stats().frames_sent, 3);
    drop(conn);
    assert!(
        matches!(closed(events.recv().await), Some(Error::Closed)),
        "the last handle dropped closes the connection"
    );
}

/// What a listing's reader saw, in order: `name:…`, `end`; and `created:…` from the create's
/// note before it.
type Seen = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

struct Sink(Seen);

impl zklock_wire::conn::ChildrenSink for Sink {
    fn name(&mut self, name: &str) {
        self.0.lock().unwrap().push(format!("name:{name}"));
    }
    fn end(self: Box<Self>) {
        self.0.lock().unwrap().push("end".into());
    }
}

fn listing_request() -> Request {
    Request::GetChildren2(GetChildren2Request {
        path: "/q".into(),
        watch: false,
    })
}

/// A listing's reply body: `n` names of 40 bytes, then a Stat.
fn listing_body(o: &mut Vec<u8>, n: usize) {
    GetChildren2Response {
        children: (0..n).map(|i| format!("_c_{i:027}-lock-{i:010}")).collect(),
        stat: Stat {
            cversion: n as i32,
            ..Stat::default()
        },
    }
    .encode(o)
}

fn read_each(conn: &zklock_wire::Connection, seen: &Seen) -> zklock_wire::conn::ReplyFuture {
    let sink = zklock_wire::conn::OnReply::EachName(Box::new(Sink(seen.clone())));
    conn.submit_reading(&listing_request(), 0, Some(sink))
        .unwrap()
}

#[tokio::test]
async fn a_listing_read_name_by_name_arrives_whole_after_the_create_pipelined_before_it() {
    // 3,000 names (about 130 KB) through a 1 KB pipe: the frame arrives in many reads, and a
    // notification and another reply follow it in the stream.
    let (client, mut server) = tokio::io::duplex(1024);
    tokio::spawn(async move {
        ConnectRequest::decode_all(&read_frame(&mut server).await.unwrap()).unwrap();
        let hello = connect_response(6000, false);
        server.write_all(&hello).await.unwrap();
        for _ in 0..3 {
            read_frame(&mut server).await.unwrap();
        }
        let created = reply(1, 0, |o| {
            Create2Response {
                path: "/q/_c_x-lock-0000000007".into(),
                stat: Stat::default(),
            }
            .encode(o)
        });
        let event = reply(xid::NOTIFICATION, 0, |o| {
            WatcherEvent {
                event_type: event_type::NODE_DELETED,
                state: 3,
                path: "/q/a".into(),
            }
            .encode(o)
        });
        let after = reply(3, code::NO_NODE, |_| {});
        let stream = [
            created,
            reply(2, 0, |o| listing_body(o, 3000)),
            event,
            after,
        ];
        server.write_all(&stream.concat()).await.unwrap();
        let _ = read_frame(&mut server).await;
    });
    let (conn, mut events) = connect_stream(client, &ConnectOptions::default())
        .await
        .unwrap();
    let seen = Seen::default();
    let noted = seen.clone();
    let note = zklock_wire::conn::OnReply::Decoded(Box::new(move |r: &Response| {
        if let Response::Create2(c) = r {
            noted.lock().unwrap().push(format!("created:{}", c.path));
        }
    }));
    let create = Request::Create2(CreateRequest {
        path: "/q/_c_x-lock-".into(),
        data: vec![],
        acl: vec![],
        flags: create_mode::EPHEMERAL_SEQUENTIAL,
    });
    let created = conn.submit_reading(&create, 0, Some(note)).unwrap();
    let listed = read_each(&conn, &seen);
    let after = conn.submit(&exists()).unwrap();
    assert!(created.await.unwrap().result.is_ok());
    let listed = listed.await.unwrap();
    let Ok(Response::ChildrenRead(stat)) = listed.result else {
        panic!("{listed:?}");
    };
    assert_eq!(stat.cversion, 3000);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3002);
    assert_eq!(seen[0], "created:/q/_c_x-lock-0000000007");
    assert_eq!(seen[1], format!("name:_c_{:027}-lock-{:010}", 0, 0));
    assert_eq!(
        seen[3000],
        format!("name:_c_{:027}-lock-{:010}", 2999, 2999)
    );
    assert_eq!(seen[3001], "end");
    assert!(matches!(events.recv().await, Some(Event::Watch { .. })));
    assert_eq!(after.await.unwrap().result, Err(code::NO_NODE));
}

/// A server that answers the first request (a listing) with `bytes` and then closes.
async fn listing_answered_with(bytes: Vec<u8>) -> (Result<zklock_wire::Reply, Error>, Vec<String>) {
    let addr = fake(connect_response(6000, false), |mut s| async move {
        let _ = read_frame(&mut s).await.unwrap();
        s.write_all(&bytes).await.unwrap();
        let _ = read_frame(&mut s).await;
    })
    .await;
    let (conn, _events) = connect(&addr, &ConnectOptions::default()).await.unwrap();
    let seen = Seen::default();
    let r = read_each(&conn, &seen).await;
    let seen = seen.lock().unwrap().clone();
    (r, seen)
}

#[tokio::test]
async fn a_listing_cut_short_fails_its_request_as_a_truncated_frame_and_its_reader_never_ends() {
    let whole = reply(1, 0, |o| listing_body(o, 10));
    let (r, seen) = listing_answered_with(whole[..100].to_vec()).await;
    let want = whole.len();
    assert!(
        matches!(r, Err(Error::Frame(FrameError::Truncated { have: 100, want: w })) if w == want),
        "{r:?}"
    );
    assert!(!seen.contains(&"end".to_owned()), "{seen:?}");
}

#[tokio::test]
async fn a_malformed_name_in_a_listing_read_name_by_name_is_a_typed_error_not_a_panic() {
    let bytes = reply(1, 0, |o| {
        o.extend_from_slice(&[0, 0, 0, 2, 0, 0, 0, 1, b'a', 0, 0, 0, 1, 0xff]);
        Stat::default().encode(o);
    });
    let (r, seen) = listing_answered_with(bytes).await;
    assert!(
        matches!(r, Err(Error::Jute(JuteError::InvalidUtf8))),
        "{r:?}"
    );
    assert_eq!(
        seen,
        ["name:a"],
        "the first name is seen, the listing never ends"
    );
}

#[tokio::test]
async fn an_error_answer_to_a_listing_read_name_by_name_is_the_error() {
    let (r, seen) = listing_answered_with(reply(1, code::NO_NODE, |_| {})).await;
    assert_eq!(r.unwrap().result, Err(code::NO_NODE));
    assert!(seen.is_empty());
}
