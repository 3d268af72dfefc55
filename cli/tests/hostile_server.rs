//! A server is input too (issue 33): what `zklock` exits with when the server sends bad bytes.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use common::*;

/// A server on loopback that runs `serve` on every connection, each in its own thread.
fn server(serve: fn(TcpStream)) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve(stream));
        }
    });
    addr
}

/// Reads one length-prefixed frame.
fn read_frame(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).ok()?;
    let mut payload = vec![0u8; i32::from_be_bytes(len).max(0) as usize];
    s.read_exact(&mut payload).ok()?;
    Some(payload)
}

/// ZooKeeper's ConnectResponse to `hello` (a ConnectRequest): protocol 0, the timeout asked for
/// within [400 ms, 60 s] (a 200 ms tick: a client learns its server's tick from the shortest
/// session it grants, issue 53), session 0x42, a 16-byte password, not read-only.
fn connect_response(hello: &[u8]) -> Vec<u8> {
    let asked = hello
        .get(12..16)
        .map_or(10_000, |b| i32::from_be_bytes(b.try_into().unwrap()));
    let mut body = Vec::new();
    body.extend(0i32.to_be_bytes());
    body.extend(asked.clamp(400, 60_000).to_be_bytes());
    body.extend(0x42i64.to_be_bytes());
    body.extend(16i32.to_be_bytes());
    body.extend([7u8; 16]);
    body.push(0);
    let mut out = (body.len() as i32).to_be_bytes().to_vec();
    out.extend(body);
    out
}

#[test]
fn a_2_gb_frame_length_after_the_handshake_is_a_connection_failure_not_a_usage_error() {
    let addr = server(|mut s| {
        let Some(hello) = read_frame(&mut s) else {
            return;
        };
        if s.write_all(&connect_response(&hello)).is_err() {
            return;
        }
        // whoAmI (op 107, what a new client asks to learn the server's version) is answered
        // with no identities, CloseSession (op -11, the tick probe's) with OK; the first other
        // request with a length no server may send.
        while let Some(req) = read_frame(&mut s) {
            let op = req
                .get(4..8)
                .map(|b| i32::from_be_bytes(b.try_into().unwrap()));
            let reply_body: &[u8] = match op {
                Some(107) => &[0, 0, 0, 0],
                Some(-11) => &[],
                _ => {
                    let _ = s.write_all(&0x7fff_fff0i32.to_be_bytes());
                    break;
                }
            };
            let mut reply = req[..4].to_vec();
            reply.extend(1i64.to_be_bytes());
            reply.extend(0i32.to_be_bytes());
            reply.extend(reply_body);
            let mut out = (reply.len() as i32).to_be_bytes().to_vec();
            out.extend(reply);
            if s.write_all(&out).is_err() {
                return;
            }
        }
        let mut sink = [0u8; 1024];
        while matches!(s.read(&mut sink), Ok(n) if n > 0) {}
    });
    let mut cmd = zklock();
    cmd.args([
        "--servers",
        &addr,
        "exec",
        "--timeout",
        "2s",
        "/locks/x",
        "--",
        "true",
    ]);
    let out = run(cmd);
    let err = stderr(&out);
    // The acquire's deadline passed while the connection kept breaking: a timeout (75) that
    // names the cause, never the usage error (64) the server's bytes used to be taken for.
    assert_eq!(out.status.code(), Some(75), "{err}");
    assert!(err.contains("bad bytes from the server"), "{err}");
}

#[test]
fn a_port_that_answers_http_exits_69_at_once_saying_it_is_not_zookeeper() {
    let addr = server(|mut s| {
        let mut request = [0u8; 64];
        let _ = s.read(&mut request);
        let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    });
    let started = Instant::now();
    let mut cmd = zklock();
    cmd.args([
        "--servers",
        &addr,
        "--connect-timeout",
        "30s",
        "exec",
        "/locks/x",
        "--",
        "true",
    ]);
    let out = run(cmd);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(69), "{err}");
    assert!(err.contains("not ZooKeeper's protocol"), "{err}");
    // At once: well before the 30 s connect timeout, however loaded the machine.
    assert!(started.elapsed() < Duration::from_secs(15), "{err}");
}
