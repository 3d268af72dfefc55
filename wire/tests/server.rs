//! zklock-wire against a real ZooKeeper (the harness's shared standalone server).

use std::time::Duration;

use zklock_wire::jute::{code, create_mode, event_type, CheckVersionRequest, MultiOp, MultiResult};
use zklock_wire::jute::{Acl, CreateRequest};
use zklock_wire::{connect, ConnectOptions, Connection, Error, Event, Events, OpError, Request};

fn addr() -> String {
    // One server is enough here; a list's first member is taken.
    let s = zklock_testkit::shared();
    s.split(',').next().unwrap().to_string()
}

async fn open() -> (Connection, Events) {
    connect(&addr(), &ConnectOptions::default())
        .await
        .expect("connect to the test ZooKeeper")
}

/// A fresh persistent node of its own for a test, with its parents.
async fn base(conn: &Connection, name: &str) -> String {
    let path = zklock_testkit::unique_path(&format!("wire-{name}"));
    let mut at = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        at.push('/');
        at.push_str(part);
        match conn.create(&at, b"", create_mode::PERSISTENT).await {
            Ok(_) | Err(OpError::Server(code::NODE_EXISTS)) => {}
            Err(e) => panic!("create {at}: {e}"),
        }
    }
    path
}

#[tokio::test]
async fn connect_negotiates_a_session() {
    let (conn, _events) = open().await;
    let s = conn.session();
    assert_ne!(s.id, 0);
    assert_eq!(s.passwd.len(), 16);
    assert!(s.timeout > Duration::ZERO);
    assert!(conn.closed().is_none());
}

#[tokio::test]
async fn ephemeral_sequential_children_and_delete() {
    let (conn, _events) = open().await;
    let dir = base(&conn, "seq").await;
    let a = conn
        .create(
            &format!("{dir}/lock-"),
            b"a",
            create_mode::EPHEMERAL_SEQUENTIAL,
        )
        .await
        .unwrap();
    let b = conn
        .create2(
            &format!("{dir}/lock-"),
            b"bb",
            create_mode::EPHEMERAL_SEQUENTIAL,
        )
        .await
        .unwrap();
    assert_eq!(a, format!("{dir}/lock-0000000000"));
    assert_eq!(b.path, format!("{dir}/lock-0000000001"));
    assert_eq!(b.stat.ephemeral_owner, conn.session().id);
    assert_eq!(b.stat.data_length, 2);

    let children = conn.get_children2(&dir, false).await.unwrap();
    let mut names = children.children.clone();
    names.sort();
    assert_eq!(names, vec!["lock-0000000000", "lock-0000000001"]);
    assert_eq!(children.stat.num_children, 2);

    let data = conn.get_data(&a, false).await.unwrap();
    assert_eq!(data.data, b"a");
    let stat = conn.set_data(&a, b"a2", data.stat.version).await.unwrap();
    assert_eq!(stat.version, data.stat.version + 1);
    match conn.set_data(&a, b"a3", data.stat.version).await {
        Err(OpError::Server(code::BAD_VERSION)) => {}
        other => panic!("{other:?}"),
    }

    conn.delete(&a, -1).await.unwrap();
    conn.delete(&b.path, b.stat.version).await.unwrap();
    match conn.delete(&a, -1).await {
        Err(OpError::Server(code::NO_NODE)) => {}
        other => panic!("{other:?}"),
    }
    assert!(conn
        .get_children2(&dir, false)
        .await
        .unwrap()
        .children
        .is_empty());
    assert!(conn.exists(&a, false).await.unwrap().is_none());
}

#[tokio::test]
async fn multi_with_a_failing_check_applies_nothing() {
    let (conn, _events) = open().await;
    let dir = base(&conn, "multi").await;
    let child = format!("{dir}/child");
    let create = MultiOp::Create(CreateRequest {
        path: child.clone(),
        data: vec![],
        acl: Acl::open_unsafe(),
        flags: create_mode::EPHEMERAL,
    });
    let resp = conn
        .multi(vec![
            MultiOp::Check(CheckVersionRequest {
                path: dir.clone(),
                version: 5,
            }),
            create.clone(),
        ])
        .await
        .unwrap();
    assert_eq!(
        resp.results,
        vec![
            MultiResult::Error(code::BAD_VERSION),
            MultiResult::Error(code::RUNTIME_INCONSISTENCY),
        ]
    );
    assert_eq!(resp.first_error(), Some(code::BAD_VERSION));
    assert!(conn.exists(&child, false).await.unwrap().is_none());

    // The same with the right version goes through.
    let resp = conn
        .multi(vec![
            MultiOp::Check(CheckVersionRequest {
                path: dir.clone(),
                version: 0,
            }),
            create,
        ])
        .await
        .unwrap();
    assert_eq!(resp.first_error(), None);
    assert!(matches!(resp.results[0], MultiResult::Check));
    assert!(matches!(&resp.results[1], MultiResult::Create(c) if c.path == child));
    assert!(conn.exists(&child, false).await.unwrap().is_some());
}

#[tokio::test]
async fn sync_answers_with_its_path() {
    let (conn, _events) = open().await;
    let dir = base(&conn, "sync").await;
    assert_eq!(conn.sync(&dir).await.unwrap(), dir);
}

#[tokio::test]
async fn exists_watch_fires_on_create_before_the_create_reply() {
    let (conn, mut events) = open().await;
    let dir = base(&conn, "watch").await;
    let node = format!("{dir}/n");
    assert!(conn.exists(&node, true).await.unwrap().is_none());
    assert!(events.try_recv().is_none());
    conn.create(&node, b"", create_mode::EPHEMERAL)
        .await
        .unwrap();
    // The server triggers the watch while applying the create, before it answers: the event is
    // already delivered when the create's reply completes.
    match events.try_recv() {
        Some(Event::Watch { event, .. }) => {
            assert_eq!(event.event_type, event_type::NODE_CREATED);
            assert_eq!(event.path, node);
            assert_eq!(event.state, 3); // SyncConnected
        }
        other => panic!("expected the watch event first, got {other:?}"),
    }

    // A watch fired by another session arrives too.
    let (other, _e) = open().await;
    assert!(conn.exists(&node, true).await.unwrap().is_some());
    other.delete(&node, -1).await.unwrap();
    match tokio::time::timeout(Duration::from_secs(5), events.recv()).await {
        Ok(Some(Event::Watch { event, .. })) => {
            assert_eq!(event.event_type, event_type::NODE_DELETED);
            assert_eq!(event.path, node);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn close_session_deletes_ephemerals() {
    let (conn, mut events) = open().await;
    let dir = base(&conn, "close").await;
    let node = conn
        .create(&format!("{dir}/e-"), b"", create_mode::EPHEMERAL_SEQUENTIAL)
        .await
        .unwrap();
    conn.close_session().await.unwrap();
    let (other, _e) = open().await;
    assert!(other.exists(&node, false).await.unwrap().is_none());
    match tokio::time::timeout(Duration::from_secs(5), events.recv()).await {
        Ok(Some(Event::Closed(e))) if matches!(*e, Error::Closed) => {}
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        conn.exists(&node, false).await,
        Err(OpError::Connection(Error::Closed))
    ));
}

#[tokio::test]
async fn session_resumes_with_id_and_password_and_a_bad_password_is_refused() {
    let (first, _e1) = open().await;
    let dir = base(&first, "resume").await;
    let node = first
        .create(&format!("{dir}/e"), b"", create_mode::EPHEMERAL)
        .await
        .unwrap();
    let s = first.session().clone();
    let opts = ConnectOptions {
        session_id: s.id,
        passwd: s.passwd.clone(),
        ..ConnectOptions::default()
    };
    let (second, _e2) = connect(&addr(), &opts).await.unwrap();
    assert_eq!(second.session().id, s.id);
    let stat = second.exists(&node, false).await.unwrap().unwrap();
    assert_eq!(stat.ephemeral_owner, s.id);

    let mut bad = s.passwd.clone();
    bad[0] ^= 0xff;
    let opts = ConnectOptions {
        session_id: s.id,
        passwd: bad,
        ..ConnectOptions::default()
    };
    assert!(matches!(
        connect(&addr(), &opts).await,
        Err(Error::SessionExpired)
    ));
    // The server closes the session's current connection before it checks the password
    // (ZooKeeperServer.processConnectRequest: closeSession(sessionId, CLIENT_RECONNECT), then
    // reopenSession), so `second` is gone, but the session is not: the right password resumes it.
    let (third, _e3) = connect(
        &addr(),
        &ConnectOptions {
            session_id: s.id,
            passwd: s.passwd.clone(),
            ..ConnectOptions::default()
        },
    )
    .await
    .unwrap();
    assert!(third.exists(&node, false).await.unwrap().is_some());
    third.close_session().await.unwrap();
    assert!(second.closed().is_some());
}

#[tokio::test]
async fn requests_queued_together_leave_in_one_write_and_replies_keep_order() {
    let (conn, _events) = open().await;
    let dir = base(&conn, "batch").await;
    // Let the task go idle, then queue 20 requests without yielding to it.
    tokio::task::yield_now().await;
    let before = conn.stats();
    let futures: Vec<_> = (0..20)
        .map(|i| {
            conn.submit(&Request::Exists(zklock_wire::jute::ExistsRequest {
                path: format!("{dir}/{i}"),
                watch: false,
            }))
            .unwrap()
        })
        .collect();
    let mut replies = Vec::new();
    for f in futures {
        replies.push(f.await.unwrap());
    }
    let after = conn.stats();
    assert_eq!(after.writes - before.writes, 1, "{before:?} {after:?}");
    assert_eq!(after.frames_sent - before.frames_sent, 20);
    let sent = replies[0].sent_at;
    for w in replies.windows(2) {
        assert!(w[0].xid < w[1].xid);
        assert!(w[0].received_at <= w[1].received_at);
    }
    for r in &replies {
        assert_eq!(r.sent_at, sent);
        assert!(r.sent_at <= r.received_at);
        assert_eq!(r.result, Err(code::NO_NODE));
    }
    assert!(after.last_recv >= replies[19].received_at);
}

#[tokio::test]
async fn a_request_over_the_limit_is_refused_and_never_sent() {
    let (conn, _events) = open().await;
    let dir = base(&conn, "limit").await;
    let before = conn.stats();
    match conn.set_data(&dir, &vec![0u8; 0x100000], -1).await {
        Err(OpError::Connection(Error::RequestTooLarge { limit, .. })) => {
            assert_eq!(limit, 0xfffff)
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(conn.stats().frames_sent, before.frames_sent);
    // The connection is unharmed, and a large value under the limit goes through.
    conn.set_data(&dir, &vec![1u8; 0xfffff - 200], -1)
        .await
        .unwrap();
    assert_eq!(
        conn.get_data(&dir, false).await.unwrap().data.len(),
        0xfffff - 200
    );
}

#[tokio::test]
async fn idle_connection_pings_at_a_third_of_the_timeout() {
    let opts = ConnectOptions {
        session_timeout: Duration::from_secs(3),
        ..ConnectOptions::default()
    };
    let (conn, _events) = connect(&addr(), &opts).await.unwrap();
    let third = conn.session().timeout / 3;
    tokio::time::sleep(third + Duration::from_millis(700)).await;
    let s = conn.stats();
    let sent = s.last_ping_sent.expect("a ping went out");
    let reply = s.last_ping_reply.expect("the ping was answered");
    assert!(reply >= sent);
    assert!(conn.closed().is_none());
    conn.close_session().await.unwrap();
}
