//! A server is input too (issue 33): what an acquire reports when the server it reaches keeps
//! breaking the connection, and that bad bytes from a server are not the caller's bad argument.

mod common;

use std::time::Duration;

use common::*;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use zklock::{ErrorKind, Options};

async fn read_frame<S: AsyncRead + Unpin>(s: &mut S) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).await.ok()?;
    let mut payload = vec![0u8; i32::from_be_bytes(len) as usize];
    s.read_exact(&mut payload).await.ok()?;
    Some(payload)
}

fn framed(payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

/// A relay to the shared ZooKeeper that passes each connection's handshake (so the session is
/// real) and the whoAmI a new client asks to learn its server's version (issue 53), and answers
/// its first other request with a frame length of 2 GB: every connection breaks as soon as it is
/// used.
async fn corrupting_relay() -> String {
    let target = servers().split(['/', ',']).next().unwrap().to_owned();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let target = target.clone();
            tokio::spawn(async move {
                let Ok(mut up) = TcpStream::connect(&target).await else {
                    return;
                };
                let Some(req) = read_frame(&mut s).await else {
                    return;
                };
                if up.write_all(&framed(&req)).await.is_err() {
                    return;
                }
                let Some(resp) = read_frame(&mut up).await else {
                    return;
                };
                if s.write_all(&framed(&resp)).await.is_err() {
                    return;
                }
                // whoAmI (op 107) passes; the first other request breaks the connection.
                while let Some(req) = read_frame(&mut s).await {
                    if req.len() < 8 || req[4..8] != 107i32.to_be_bytes() {
                        break;
                    }
                    if up.write_all(&framed(&req)).await.is_err() {
                        return;
                    }
                    let Some(resp) = read_frame(&mut up).await else {
                        return;
                    };
                    if s.write_all(&framed(&resp)).await.is_err() {
                        return;
                    }
                }
                let _ = s.write_all(&0x7fff_fff0i32.to_be_bytes()).await;
                let mut sink = [0u8; 1024];
                while matches!(s.read(&mut sink).await, Ok(n) if n > 0) {}
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_that_times_out_while_the_server_keeps_breaking_the_connection_names_that_failure(
) {
    let relay = corrupting_relay().await;
    // What a face whose timed-out acquire returns no error (Python's False) shows its user.
    let warnings = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = warnings.clone();
    zklock::support::set_log_sink(Some((
        zklock::support::LogLevel::Warn,
        std::sync::Arc::new(move |r: &zklock::support::LogRecord| {
            if r.event == "acquire" {
                seen.lock().unwrap().push(r.message.clone());
            }
        }),
    )));
    let options = Options::default().session_timeout(Duration::from_secs(20));
    let client = zklock::Client::connect(&relay, options).await.unwrap();
    let path = unique_path("hostile-timeout");
    let err = client
        .mutex(&path)
        .unwrap()
        .acquire_timeout(Duration::from_secs(2))
        .await
        .expect_err("no request is ever answered through the relay");
    // The kind the contract names for a deadline that passed, and what filled it.
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(
        err.message()
            .contains("the connection to ZooKeeper kept failing")
            && err.message().contains("bad bytes from the server"),
        "{err}"
    );
    // The sink is called on the callback thread: wait for the record (at most 10 s).
    let named = |w: &Vec<String>| w.iter().any(|m| m.contains("kept failing"));
    let waited = std::time::Instant::now();
    while !named(&warnings.lock().unwrap()) && waited.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    zklock::support::set_log_sink(None);
    assert!(
        named(&warnings.lock().unwrap()),
        "no warning record names the failure"
    );
    // Apart too, for a face that words the timeout its own way.
    assert!(
        err.note()
            .is_some_and(|n| n.contains("bad bytes from the server")),
        "{err}"
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_that_answers_http_is_refused_at_once_as_not_zookeeper() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = [0u8; 64];
                let _ = s.read(&mut request).await;
                let _ = s
                    .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                    .await;
            });
        }
    });
    let options = Options::default().connect_timeout(Duration::from_secs(30));
    let started = std::time::Instant::now();
    let err = zklock::Client::connect(&addr, options)
        .await
        .expect_err("an HTTP server is not ZooKeeper");
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(err.message().contains("not ZooKeeper's protocol"), "{err}");
    // At once: not after the 30 s connect timeout, however slow the machine.
    assert!(started.elapsed() < Duration::from_secs(15), "{err}");
}
