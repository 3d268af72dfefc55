//! A ZooKeeper 3.4 server (issue 53): it lacks create2 and container nodes, which zklock's locks
//! need, and answers every op it does not know with UNIMPLEMENTED (`ZooKeeperServer
//! .submitRequest`, `UnimplementedRequestProcessor`). A scripted server on loopback plays it, as
//! no 3.4 runs here: connect fails at once, naming the missing request, and nothing is retried.

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
    requests: AtomicUsize,
}

/// One connection as a 3.4 server would serve it: the handshake (timeouts clamped to [400 ms,
/// 60 s], a 200 ms tick), pings and CloseSession answered, every other op UNIMPLEMENTED.
async fn serve(mut s: TcpStream, counts: Arc<Counts>) {
    let Some(hello) = read_frame(&mut s).await else {
        return;
    };
    let asked = i32::from_be_bytes(hello[12..16].try_into().unwrap());
    let mut body = Vec::new();
    ConnectResponse {
        protocol_version: 0,
        timeout: asked.clamp(400, 60_000),
        session_id: 0x34 + counts.connections.fetch_add(1, Ordering::SeqCst) as i64,
        passwd: vec![7; 16],
        read_only: false,
    }
    .encode(&mut body);
    write_frame(&mut s, body).await;
    while let Some(req) = read_frame(&mut s).await {
        let xid = i32::from_be_bytes(req[..4].try_into().unwrap());
        let kind = i32::from_be_bytes(req[4..8].try_into().unwrap());
        let err = match kind {
            op::PING | op::CLOSE_SESSION => code::OK,
            _ => {
                counts.requests.fetch_add(1, Ordering::SeqCst);
                code::UNIMPLEMENTED
            }
        };
        let mut body = Vec::new();
        ReplyHeader { xid, zxid: 1, err }.encode(&mut body);
        write_frame(&mut s, body).await;
        if kind == op::CLOSE_SESSION {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_3_4_server_is_refused_at_connect_naming_create2_without_a_retry() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let counts = Arc::new(Counts::default());
    let serving = counts.clone();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(serve(s, serving.clone()));
        }
    });
    let started = Instant::now();
    let err = zklock::Client::connect(&addr, Options::default())
        .await
        .expect_err("zklock refuses a 3.4 server");
    let took = started.elapsed();
    println!("refused in {took:?}: {err}");
    assert_eq!(err.kind(), ErrorKind::ZooKeeper, "{err}");
    assert!(err.message().contains("3.4"), "{err}");
    assert!(err.message().contains("create2"), "{err}");
    // The session and the tick's probe session, and the three requests that tell the class
    // (whoAmI, getEphemerals, checkWatches): nothing more, nothing again.
    assert_eq!(counts.connections.load(Ordering::SeqCst), 2);
    assert_eq!(counts.requests.load(Ordering::SeqCst), 3);
    assert!(took < Duration::from_secs(5), "took {took:?}");
}
