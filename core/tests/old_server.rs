//! Servers older than zklock's requests (issue 53), played by a scripted server on loopback as the
//! real ones behave: an op the server does not know is answered UNIMPLEMENTED and the connection
//! is closed (`ZooKeeperServer.submitRequest` → `UnimplementedRequestProcessor`, which sends the
//! reply and `sendCloseSession()`; apache/zookeeper release-3.4.13, `src/java/main/org/apache/
//! zookeeper/server/UnimplementedRequestProcessor.java`, the same through 3.9). A 3.4 server
//! (no create2) is refused at connect, naming the missing request, after one round trip on the
//! probe session and without a retry; a 3.5 server is told apart without its unknown ops
//! touching the client's own session. `make test-server-3.4` runs the real 3.4.13.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use zklock::{ErrorKind, Options};
use zklock_wire::jute::{code, op, ConnectResponse, Record, ReplyHeader};

async fn read_frame(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).await.ok()?;
    let mut payload = vec![0u8; i32::from_be_bytes(len) as usize];
    s.read_exact(&mut payload).await.ok()?;
    Some(payload)
}

async fn write_frame(s: &mut TcpStream, body: Vec<u8>) {
    let mut out = (body.len() as i32).to_be_bytes().to_vec();
    out.extend(body);
    s.write_all(&out).await.unwrap();
}

#[derive(Default)]
struct Counts {
    connections: AtomicUsize,
    /// Requests other than pings and CloseSession, all connections.
    requests: AtomicUsize,
    /// Ops the server did not know, on the first connection (the client's own session).
    unknown_on_first: AtomicUsize,
    close_sessions: AtomicUsize,
}

/// The ops the scripted server knows besides ping and CloseSession, with their answer.
type Knows = fn(i32) -> Option<i32>;

/// An "answer" that is no answer: the connection is closed before the reply (a blip).
const DROP: i32 = i32::MIN;

/// 3.4: none of the probes.
fn v3_4(_: i32) -> Option<i32> {
    None
}

/// 3.5: checkWatches (no watch on `/`: NOWATCHER, -121), not getEphemerals nor whoAmI.
fn v3_5(kind: i32) -> Option<i32> {
    (kind == op::CHECK_WATCHES).then_some(-121)
}

/// 3.9 on a link that breaks under the first probe (checkWatches): the probe session's
/// connection is closed without its answer, as a network blip would close it.
fn v3_9_blip(kind: i32) -> Option<i32> {
    Some(if kind == op::CHECK_WATCHES {
        DROP
    } else {
        code::OK
    })
}

/// One connection as an old server would serve it: the handshake (timeouts clamped to [400 ms,
/// 60 s], a 200 ms tick), pings and CloseSession answered, the ops `knows` knows answered as it
/// says, any other answered UNIMPLEMENTED and the connection closed.
async fn serve(mut s: TcpStream, counts: Arc<Counts>, knows: Knows) {
    let Some(hello) = read_frame(&mut s).await else {
        return;
    };
    let asked = i32::from_be_bytes(hello[12..16].try_into().unwrap());
    let nth = counts.connections.fetch_add(1, Ordering::SeqCst);
    let mut body = Vec::new();
    ConnectResponse {
        protocol_version: 0,
        timeout: asked.clamp(400, 60_000),
        session_id: 0x34 + nth as i64,
        passwd: vec![7; 16],
        read_only: false,
    }
    .encode(&mut body);
    write_frame(&mut s, body).await;
    while let Some(req) = read_frame(&mut s).await {
        let xid = i32::from_be_bytes(req[..4].try_into().unwrap());
        let kind = i32::from_be_bytes(req[4..8].try_into().unwrap());
        let err = match kind {
            op::PING => Some(code::OK),
            op::CLOSE_SESSION => {
                counts.close_sessions.fetch_add(1, Ordering::SeqCst);
                Some(code::OK)
            }
            _ => {
                counts.requests.fetch_add(1, Ordering::SeqCst);
                knows(kind)
            }
        };
        if err == Some(DROP) {
            return;
        }
        let mut body = Vec::new();
        ReplyHeader {
            xid,
            zxid: 1,
            err: err.unwrap_or(code::UNIMPLEMENTED),
        }
        .encode(&mut body);
        write_frame(&mut s, body).await;
        if err.is_none() && nth == 0 {
            counts.unknown_on_first.fetch_add(1, Ordering::SeqCst);
        }
        // The reply, then the close (`sendCloseSession`): the session lives on until it expires.
        if kind == op::CLOSE_SESSION || err.is_none() {
            return;
        }
    }
}

async fn old_server(knows: Knows) -> (String, Arc<Counts>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let counts = Arc::new(Counts::default());
    let serving = counts.clone();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(serve(s, serving.clone(), knows));
        }
    });
    (addr, counts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_3_4_server_is_refused_at_connect_naming_create2_without_a_retry() {
    let (addr, counts) = old_server(v3_4).await;
    let started = Instant::now();
    let err = zklock::Client::connect(&addr, Options::default())
        .await
        .expect_err("zklock refuses a 3.4 server");
    let took = started.elapsed();
    println!("refused in {took:?}: {err}");
    assert_eq!(err.kind(), ErrorKind::ZooKeeper, "{err}");
    assert!(err.message().contains("older than 3.5"), "{err}");
    assert!(err.message().contains("create2"), "{err}");
    // Give a retry, had there been one, time to show.
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The client's session and the probe session, nothing again. The server answers the first
    // probe (checkWatches) UNIMPLEMENTED and closes; no other probe is sent. The client's own
    // session saw no unknown op and was closed; the probe session was abandoned.
    assert_eq!(counts.connections.load(Ordering::SeqCst), 2);
    assert_eq!(counts.requests.load(Ordering::SeqCst), 1);
    assert_eq!(counts.unknown_on_first.load(Ordering::SeqCst), 0);
    assert_eq!(counts.close_sessions.load(Ordering::SeqCst), 1);
    assert!(took < Duration::from_secs(5), "took {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_3_5_server_is_told_apart_on_the_probe_session_and_its_client_keeps_its_connection() {
    let (addr, counts) = old_server(v3_5).await;
    let client = zklock::Client::connect(&addr, Options::default())
        .await
        .expect("zklock runs on 3.5");
    let features = client.server_features();
    assert_eq!(features.version_class(), "3.5");
    assert!(features.create2());
    assert!(features.lacks().contains(&"getEphemerals"));
    // checkWatches answered, getEphemerals UNIMPLEMENTED and the probe's connection closed:
    // two requests, none on the client's own session, which is still its first connection.
    assert_eq!(counts.requests.load(Ordering::SeqCst), 2);
    assert_eq!(counts.unknown_on_first.load(Ordering::SeqCst), 0);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(counts.connections.load(Ordering::SeqCst), 2);
    client.close().await;
}

/// A probe whose answer a broken connection took away tells nothing of the version (the real
/// server answers an unknown op before it closes): the client connects, on the class it could
/// confirm and at least 3.5, so nothing of 3.6+ is used on the guess. A lost answer taken for
/// 3.4 refused every good server behind a breaking link (`hostile_server.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_answer_lost_to_a_broken_connection_never_refuses_the_server() {
    let (addr, counts) = old_server(v3_9_blip).await;
    let client = zklock::Client::connect(&addr, Options::default())
        .await
        .expect("a blip on the probe is not an old server");
    let features = client.server_features();
    assert_eq!(
        features.version_class(),
        "3.5",
        "the floor, not a guess upward"
    );
    assert!(features.create2());
    assert!(features.lacks().contains(&"getEphemerals"));
    // One probe sent (checkWatches), its connection dropped, nothing more asked.
    assert_eq!(counts.requests.load(Ordering::SeqCst), 1);
    client.close().await;
}

/// The real ZooKeeper 3.4.13 (Debian bullseye's jars), behind a counting proxy: refused at
/// connect within a round trip of the probe session, naming create2 and 3.5, and nothing
/// retried. Needs `ZKLOCK_ZK_CLASSPATH` of 3.4.13: `make test-server-3.4` runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs ZooKeeper 3.4.13's jars in ZKLOCK_ZK_CLASSPATH: make test-server-3.4"]
async fn the_real_3_4_13_is_refused_at_connect_naming_create2_without_a_retry() {
    let zk = zklock_testkit::ZooKeeper::start(1, &zklock_testkit::Config::default())
        .expect("ZooKeeper 3.4.13 must start (scripts/zk-versions.sh 3.4.13)");
    let version = zk.four_letter(0, "srvr").unwrap_or_default();
    assert!(version.contains("3.4.13"), "not 3.4.13: {version}");
    let proxy = zklock_testkit::Proxy::start(&zk.address(0)).unwrap();
    let started = Instant::now();
    let err = zklock::Client::connect(proxy.addr(), Options::default())
        .await
        .expect_err("zklock refuses ZooKeeper 3.4.13");
    let took = started.elapsed();
    println!("ZooKeeper 3.4.13 refused in {took:?}: {err}");
    assert_eq!(err.kind(), ErrorKind::ZooKeeper, "{err}");
    assert!(err.message().contains("older than 3.5"), "{err}");
    assert!(err.message().contains("create2"), "{err}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    // The client's session and the probe session; both connections ended (the client closed
    // its own, the server the probe's), none opened again.
    assert_eq!(proxy.connections_accepted(), 2);
    assert_eq!(proxy.open_connections(), 0);
    assert!(took < Duration::from_secs(2), "took {took:?}");
}
