//! zklock-wire's frames against ZooKeeper's own Java client, byte for byte, recorded at test
//! time: `tests/java/Script.java` and `tests/java/Reconnect.java` (compiled here with `javac`
//! against the jars of the server the harness runs) and zklock-wire run the same scripts against
//! the same server, each through a recording pass-through relay (`common::Relay`); the request
//! frames are compared pairwise and every frame the server sent either client is decoded with
//! this crate's decoders, whole.
//!
//! - `Script`: connect; create (create2) persistent with data; create ephemeral sequential;
//!   getData with a watch; exists; getChildren2; setData with a version; multi (check + create +
//!   setData + delete); sync; delete twice; close.
//! - `Reconnect`: digest auth, then data, exist and child watches; the test cuts the connection;
//!   the client resumes the session (ConnectRequest with id, password, last zxid; the AuthPacket
//!   again; SetWatches), deletes the node (the watches fire) and closes.
//!
//! What is masked, and why it legitimately differs:
//! - the xid of each numbered request: both clients count up by one from 1 (checked), but the
//!   Java client keeps counting across connections of a session and zklock-wire starts at 1 on
//!   each connection (the server only echoes xids);
//! - pings (xid -2, sent only after a third of the timeout without a request): skipped;
//! - SetWatches: zklock-wire sends it with the reserved xid -8, the Java client numbers it like a
//!   request (`ClientCnxnSocketNIO.doIO` renumbers every packet but pings and auth); its
//!   `relativeZxid` is each client's own last zxid (checked equal to its ConnectRequest's);
//! - a resumed session's ConnectRequest: id, password and last zxid are each client's own
//!   (checked against its first connection: the granted id and password, the largest zxid of a
//!   reply), the rest is compared. Its timeout is the same here, though not by the same rule: the
//!   Java client sends the timeout it asked for, zklock-wire the one granted (both 6000 ms).
//!
//! A new session's ConnectRequest is compared whole: both send id 0, a password of 16 zeros, last
//! zxid 0, the same timeout and `readOnly` false. Node names are the same: the Java client runs
//! first and deletes everything it created, so the sequential node's counter starts again.
//! The Java client sends nothing we do not: no SASL (no JAAS configuration), and auth and
//! SetWatches only where zklock-wire sends them too (the reconnect script).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{frames, xid_of, Relay};
use zklock_wire::client::{Client, ClientOptions, CreateMode, EventType, Op, SessionState};
use zklock_wire::conn::{decode_reply_body, Response};
use zklock_wire::jute::*;

/// A directory of its own under the system's temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "zklock-wire-{name}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).expect("create a temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Compiles `tests/java/*.java` into `out` against the ZooKeeper jars.
fn compile_script(out: &Path, classpath: &str) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java");
    let result = Command::new("javac")
        .arg("-cp")
        .arg(classpath)
        .arg("-d")
        .arg(out)
        .arg(source.join("Script.java"))
        .arg(source.join("Reconnect.java"))
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run javac ({e}): install a JDK (Debian's default-jdk-headless)")
        });
    assert!(
        result.status.success(),
        "javac failed on {}:\n{}",
        source.display(),
        String::from_utf8_lossy(&result.stderr)
    );
}

/// Runs the compiled script against `server` on base path `base`; returns the ephemeral
/// sequential node's path it printed.
fn run_java(classes: &Path, classpath: &str, server: &str, base: &str) -> String {
    let result = Command::new("java")
        .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
        .arg("-cp")
        .arg(format!("{}:{classpath}", classes.display()))
        .arg("Script")
        .arg(server)
        .arg(base)
        .output()
        .unwrap_or_else(|e| panic!("cannot run java ({e}): install Debian's default-jre-headless"));
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(
        result.status.success(),
        "the Java script failed ({}):\nstdout:\n{stdout}\nstderr:\n{}",
        result.status,
        String::from_utf8_lossy(&result.stderr)
    );
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("script done: "))
        .unwrap_or_else(|| panic!("the Java script did not finish: {stdout}"))
        .to_owned()
}

/// The same script with zklock-wire; returns the ephemeral sequential node's path.
async fn run_ours(server: &str, base: &str) -> String {
    let options = ClientOptions {
        session_timeout: Duration::from_millis(6000),
        connect_timeout: Duration::from_secs(5),
        ..ClientOptions::default()
    };
    let client = Client::connect(server, options, None)
        .await
        .expect("connect through the relay");
    let acl = Acl::open_unsafe();
    client
        .create(base, b"zklock-wire", CreateMode::Persistent, &acl)
        .await
        .unwrap();
    let (_, eph) = client
        .create(
            &format!("{base}/e-"),
            b"",
            CreateMode::EphemeralSequential,
            &acl,
        )
        .await
        .unwrap();
    let (_, _, watch) = client.get_and_watch_data(base).await.unwrap();
    assert!(client.check_stat(&eph).await.unwrap().is_some());
    client.list_children(base).await.unwrap();
    client.set_data(base, b"changed", Some(0)).await.unwrap();
    let fired = tokio::time::timeout(Duration::from_secs(5), watch.changed())
        .await
        .expect("the data watch fires on setData");
    assert_eq!(fired.event_type, EventType::NodeDataChanged);
    let m = format!("{base}/m");
    client
        .multi(&[
            Op::Check {
                path: base,
                version: 1,
            },
            Op::Create {
                path: &m,
                data: b"m",
                mode: CreateMode::Persistent,
                acl: &acl,
            },
            Op::SetData {
                path: &m,
                data: b"n",
                version: 0,
            },
            Op::Delete {
                path: &m,
                version: 1,
            },
        ])
        .await
        .unwrap();
    client.sync(base).await.unwrap();
    client.delete(&eph, None).await.unwrap();
    client.delete(base, Some(1)).await.unwrap();
    client.close();
    let mut states = client.state_watcher();
    tokio::time::timeout(Duration::from_secs(5), async {
        while states.peek_state() != SessionState::Closed {
            states.changed().await;
        }
    })
    .await
    .expect("the session closes");
    eph
}

/// What a reply said, for comparing the two clients' replies: the error code and the record
/// with everything that depends on time, zxids and session ids zeroed.
#[derive(Debug, PartialEq, Eq)]
enum Heard {
    Reply(i32, Option<Response>),
    /// The answer to an AuthPacket (xid -4) or SetWatches (xid -8): a header alone.
    Fixed {
        xid: i32,
        err: i32,
    },
    Notification(WatcherEvent),
}

fn masked(mut stat: Stat) -> Stat {
    stat.czxid = 0;
    stat.mzxid = 0;
    stat.pzxid = 0;
    stat.ctime = 0;
    stat.mtime = 0;
    stat.ephemeral_owner = 0;
    stat
}

fn mask(r: Response) -> Response {
    match r {
        Response::Create2(c) => Response::Create2(Create2Response {
            path: c.path,
            stat: masked(c.stat),
        }),
        Response::Exists(e) => Response::Exists(ExistsResponse {
            stat: masked(e.stat),
        }),
        Response::GetData(g) => Response::GetData(GetDataResponse {
            data: g.data,
            stat: masked(g.stat),
        }),
        Response::SetData(s) => Response::SetData(SetDataResponse {
            stat: masked(s.stat),
        }),
        Response::GetChildren2(g) => Response::GetChildren2(GetChildren2Response {
            children: g.children,
            stat: masked(g.stat),
        }),
        Response::Multi(m) => Response::Multi(MultiResponse {
            results: m
                .results
                .into_iter()
                .map(|r| match r {
                    MultiResult::SetData(s) => MultiResult::SetData(SetDataResponse {
                        stat: masked(s.stat),
                    }),
                    MultiResult::Create2(c) => MultiResult::Create2(Create2Response {
                        path: c.path,
                        stat: masked(c.stat),
                    }),
                    other => other,
                })
                .collect(),
        }),
        other => other,
    }
}

/// One recorded connection, taken apart with this crate's decoders.
struct Side<'a> {
    who: &'static str,
    connect: ConnectRequest,
    connect_frame: &'a [u8],
    /// Every request frame after the ConnectRequest, pings left out.
    requests: Vec<&'a [u8]>,
    pings: usize,
    hello: ConnectResponse,
    heard: Vec<Heard>,
    reply_frames: usize,
    /// The largest zxid in the header of a reply to a request (not a ping, notification,
    /// auth or SetWatches answer).
    last_reply_zxid: i64,
}

/// Splits and decodes one connection: the ConnectRequest and the request headers; then every
/// frame the server sent: the ConnectResponse, replies (matched to their request's op by xid),
/// notifications, ping, auth and SetWatches answers. Each must decode whole, with no byte left
/// over.
fn side<'a>(rec: &'a common::Recording, who: &'static str) -> Side<'a> {
    let sent = frames(&rec.up);
    assert!(!sent.is_empty(), "{who}: no ConnectRequest was recorded");
    let connect = ConnectRequest::decode_all(sent[0])
        .unwrap_or_else(|e| panic!("{who}: the first frame is not a ConnectRequest: {e}"));
    let mut ops = std::collections::HashMap::new();
    let mut requests = Vec::new();
    let mut pings = 0;
    for f in &sent[1..] {
        let header = RequestHeader::decode(&mut Reader::new(f))
            .unwrap_or_else(|e| panic!("{who}: a request header does not decode: {e}"));
        if header.xid == xid::PING {
            assert_eq!(header.op, op::PING);
            assert_eq!(f.len(), 8, "{who}: a ping with a body");
            pings += 1;
            continue;
        }
        if header.xid > 0 {
            ops.insert(header.xid, header.op);
        }
        requests.push(*f);
    }

    let all = frames(&rec.down);
    assert!(!all.is_empty(), "{who}: no ConnectResponse was recorded");
    let hello = ConnectResponse::decode_all(all[0])
        .unwrap_or_else(|e| panic!("{who}: the ConnectResponse does not decode: {e}"));
    assert!(hello.timeout > 0 && hello.session_id != 0 && !hello.read_only);
    let mut heard = Vec::new();
    let mut last_reply_zxid = 0;
    for f in &all[1..] {
        let header = ReplyHeader::decode(&mut Reader::new(f))
            .unwrap_or_else(|e| panic!("{who}: a reply header does not decode: {e}"));
        let body = &f[16..];
        match header.xid {
            xid::PING => assert!(body.is_empty(), "{who}: a ping reply with a body"),
            xid::NOTIFICATION => {
                let event = WatcherEvent::decode_all(body)
                    .unwrap_or_else(|e| panic!("{who}: a notification does not decode: {e}"));
                heard.push(Heard::Notification(event));
            }
            x @ (xid::AUTH | xid::SET_WATCHES) => {
                assert!(body.is_empty(), "{who}: an answer to xid {x} with a body");
                heard.push(Heard::Fixed {
                    xid: x,
                    err: header.err,
                });
            }
            x => {
                let op = *ops
                    .get(&x)
                    .unwrap_or_else(|| panic!("{who}: a reply to xid {x}, never sent"));
                if op == op::SET_WATCHES {
                    // The Java client's SetWatches, numbered like any request (see `comparable`).
                    assert!(
                        body.is_empty(),
                        "{who}: an answer to SetWatches with a body"
                    );
                    heard.push(Heard::Fixed {
                        xid: xid::SET_WATCHES,
                        err: header.err,
                    });
                    continue;
                }
                let decoded = decode_reply_body(op, header.err, body).unwrap_or_else(|e| {
                    panic!("{who}: the reply to op {op} (xid {x}) does not decode whole: {e}")
                });
                if header.err != 0 && op != op::MULTI {
                    assert!(body.is_empty(), "{who}: an error reply with a body");
                }
                last_reply_zxid = last_reply_zxid.max(header.zxid);
                heard.push(Heard::Reply(header.err, decoded.ok().map(mask)));
            }
        }
    }
    Side {
        who,
        connect,
        connect_frame: sent[0],
        requests,
        pings,
        hello,
        heard,
        reply_frames: all.len(),
        last_reply_zxid,
    }
}

/// A request frame as compared: without its xid when the client numbered it (the numbers are
/// checked to count up), whole when the xid is reserved (auth, -4). SetWatches without its xid
/// and its `relativeZxid` (the caller checks it is the last zxid): zklock-wire sends it with the
/// reserved xid -8, the Java client numbers it like any request (`ClientCnxnSocketNIO.doIO`
/// gives every packet but pings and auth the next xid, over the -8 `primeConnection` set); the
/// server answers either with the xid it was sent.
fn comparable(frame: &[u8]) -> Vec<u8> {
    let header = RequestHeader::decode_all(&frame[..8]).unwrap();
    if header.op == op::SET_WATCHES {
        let mut f = frame.to_vec();
        f[..4].fill(0);
        f[8..16].fill(0);
        return f;
    }
    if header.xid > 0 {
        return frame[4..].to_vec();
    }
    frame.to_vec()
}

/// Compares the request frames of two connections after the ConnectRequest, pairwise, byte for
/// byte (see `comparable`), and what the server answered each. Returns the number of frames
/// compared.
fn compare_requests_and_replies(java: &Side<'_>, ours: &Side<'_>, allowed: &[i32]) -> usize {
    let names = |s: &Side<'_>| {
        s.requests
            .iter()
            .map(|f| code_name(RequestHeader::decode_all(&f[..8]).unwrap().op))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(ours),
        names(java),
        "the same requests in the same order"
    );
    for s in [java, ours] {
        let xids: Vec<i32> = s
            .requests
            .iter()
            .map(|f| xid_of(f))
            .filter(|x| *x > 0)
            .collect();
        assert!(
            xids.windows(2).all(|w| w[1] == w[0] + 1),
            "{}: xids count up by one: {xids:?}",
            s.who
        );
    }
    for (i, (j, o)) in java.requests.iter().zip(&ours.requests).enumerate() {
        let op = RequestHeader::decode_all(&j[..8]).unwrap().op;
        let (j, o) = (comparable(j), comparable(o));
        assert_eq!(
            o,
            j,
            "request {i} ({}) differs:\n java: {}\n ours: {}",
            code_name(op),
            hex(&j),
            hex(&o)
        );
    }
    assert!(
        java.heard.iter().all(
            |h| !matches!(h, Heard::Reply(err, _) | Heard::Fixed { err, .. }
                if *err != 0 && !allowed.contains(err))
        ),
        "every request of the script succeeds (or fails as expected): {:?}",
        java.heard
    );
    assert_eq!(
        ours.heard, java.heard,
        "the server answered both clients alike (stats' zxids, times and owner masked)"
    );
    java.requests.len()
}

fn base_path(name: &str) -> String {
    format!(
        "/zklock-wire-bytes-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    )
}

/// The scripts compiled into a temp dir of the test's own, and the jars' class path.
fn compiled() -> (TempDir, String) {
    let classpath = zklock_testkit::classpath().unwrap_or_else(|e| panic!("{e}"));
    let classes = TempDir::new("java");
    compile_script(&classes.0, &classpath);
    (classes, classpath)
}

fn connect_request_expected(timeout: i32) -> ConnectRequest {
    ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: 0,
        timeout,
        session_id: 0,
        passwd: vec![0; 16],
        read_only: false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_java_client_and_zklock_wire_send_the_same_request_bytes_for_the_same_script() {
    let server = zklock_testkit::shared();
    let (classes, classpath) = compiled();
    let base = base_path("script");

    let java_relay = Relay::start(server).await;
    let java_eph = {
        let (dir, addr, base) = (
            classes.0.clone(),
            java_relay.addr().to_owned(),
            base.clone(),
        );
        tokio::task::spawn_blocking(move || run_java(&dir, &classpath, &addr, &base))
            .await
            .unwrap()
    };
    java_relay.wait_closed(Duration::from_secs(10)).await;

    let ours_relay = Relay::start(server).await;
    let our_eph = run_ours(ours_relay.addr(), &base).await;
    ours_relay.wait_closed(Duration::from_secs(10)).await;
    assert_eq!(
        our_eph, java_eph,
        "the same sequential node name on both runs"
    );

    let (java, ours) = (java_relay.recordings(), ours_relay.recordings());
    assert_eq!(java.len(), 1, "the Java client used one connection");
    assert_eq!(ours.len(), 1, "zklock-wire used one connection");
    let (java, ours) = (side(&java[0], "java"), side(&ours[0], "ours"));

    assert_eq!(java.connect, connect_request_expected(6000));
    assert_eq!(ours.connect, java.connect);
    assert_eq!(
        ours.connect_frame, java.connect_frame,
        "the ConnectRequest, byte for byte"
    );
    let compared = compare_requests_and_replies(&java, &ours, &[]);
    println!(
        "script: compared 1 ConnectRequest and {compared} request frames byte for byte (xids \
         masked; pings skipped: {} from Java, {} from zklock-wire); decoded {} frames from the \
         server to the Java client ({} replies, {} notifications) and {} to ours, each whole",
        java.pings,
        ours.pings,
        java.reply_frames,
        java.heard
            .iter()
            .filter(|h| matches!(h, Heard::Reply(..)))
            .count(),
        java.heard
            .iter()
            .filter(|h| matches!(h, Heard::Notification(..)))
            .count(),
        ours.reply_frames,
    );
}

/// Runs the Java reconnect script against `server` (the relay) and calls `armed` when it
/// printed "armed" (the connection may be cut then).
fn run_java_reconnect(
    (classes, classpath): (TempDir, String),
    server: &str,
    base: &str,
    armed: tokio::sync::oneshot::Sender<()>,
) {
    use std::io::BufRead;
    let mut child = Command::new("java")
        .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
        .arg("-cp")
        .arg(format!("{}:{classpath}", classes.0.display()))
        .arg("Reconnect")
        .arg(server)
        .arg(base)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run java ({e}): install Debian's default-jre-headless"));
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut armed = Some(armed);
    let mut lines = Vec::new();
    for line in stdout.lines() {
        let line = line.unwrap_or_default();
        if line == "armed" {
            if let Some(a) = armed.take() {
                a.send(()).ok();
            }
        }
        lines.push(line);
    }
    let out = child.wait_with_output().expect("wait for java");
    assert!(
        out.status.success() && lines.iter().any(|l| l == "done"),
        "the Java reconnect script failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        lines.join("\n"),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The reconnect script with zklock-wire; `cut` is called when the watches are armed.
async fn run_ours_reconnect(relay: &Relay, base: &str) {
    let options = ClientOptions {
        session_timeout: Duration::from_millis(6000),
        connect_timeout: Duration::from_secs(5),
        auth: vec![("digest".into(), b"wire:secret".to_vec())],
        ..ClientOptions::default()
    };
    let client = Client::connect(relay.addr(), options, None)
        .await
        .expect("connect through the relay");
    let acl = Acl::open_unsafe();
    client
        .create(base, b"r", CreateMode::Persistent, &acl)
        .await
        .unwrap();
    let (_, _, data_watch) = client.get_and_watch_data(base).await.unwrap();
    let (none, exist_watch) = client
        .check_and_watch_stat(&format!("{base}/x"))
        .await
        .unwrap();
    assert!(none.is_none());
    let (_, child_watch) = client.list_and_watch_children(base).await.unwrap();
    let mut states = client.state_watcher();
    relay.cut();
    tokio::time::timeout(Duration::from_secs(10), async {
        while states.peek_state() != SessionState::Disconnected {
            states.changed().await;
        }
        while states.peek_state() != SessionState::SyncConnected {
            states.changed().await;
        }
    })
    .await
    .expect("the client reconnects through the relay");
    client.delete(base, None).await.unwrap();
    for w in [data_watch, child_watch] {
        let fired = tokio::time::timeout(Duration::from_secs(5), w.changed())
            .await
            .expect("the re-armed watch fires on delete");
        assert_eq!(fired.event_type, EventType::NodeDeleted);
    }
    drop(exist_watch);
    client.close();
    tokio::time::timeout(Duration::from_secs(5), async {
        while states.peek_state() != SessionState::Closed {
            states.changed().await;
        }
    })
    .await
    .expect("the session closes");
}

/// The second connection's ConnectRequest resumes the first's session with the last zxid of a
/// reply on the first connection.
fn check_resumed(first: &Side<'_>, second: &Side<'_>) {
    let c = &second.connect;
    assert_eq!(
        c.session_id, first.hello.session_id,
        "{}: the same session",
        second.who
    );
    assert_eq!(c.passwd, first.hello.passwd, "{}: its password", second.who);
    assert_eq!(
        c.last_zxid_seen, first.last_reply_zxid,
        "{}: the last zxid of a reply on the first connection",
        second.who
    );
    assert_eq!(second.hello.session_id, first.hello.session_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_reconnect_the_java_client_and_zklock_wire_send_the_same_auth_and_set_watches_bytes(
) {
    let server = zklock_testkit::shared();
    let compiled = compiled();
    let base = base_path("reconnect");

    let java_relay = Relay::start(server).await;
    let (armed_tx, armed_rx) = tokio::sync::oneshot::channel();
    let java_run = {
        let (addr, base) = (java_relay.addr().to_owned(), base.clone());
        tokio::task::spawn_blocking(move || run_java_reconnect(compiled, &addr, &base, armed_tx))
    };
    match tokio::time::timeout(Duration::from_secs(30), armed_rx).await {
        Ok(Ok(())) => java_relay.cut(),
        // The script failed before arming its watches: its own message says why.
        _ => {
            java_run.await.unwrap();
            panic!("the Java reconnect script never armed its watches");
        }
    }
    java_run.await.unwrap();
    java_relay.wait_closed(Duration::from_secs(10)).await;

    let ours_relay = Relay::start(server).await;
    run_ours_reconnect(&ours_relay, &base).await;
    ours_relay.wait_closed(Duration::from_secs(10)).await;

    let (java, ours) = (java_relay.recordings(), ours_relay.recordings());
    assert_eq!(java.len(), 2, "the Java client used two connections");
    assert_eq!(ours.len(), 2, "zklock-wire used two connections");
    let (java1, java2) = (side(&java[0], "java"), side(&java[1], "java"));
    let (ours1, ours2) = (side(&ours[0], "ours"), side(&ours[1], "ours"));

    // First connection: a new session, then the AuthPacket, the create and the watches.
    assert_eq!(java1.connect, connect_request_expected(6000));
    assert_eq!(ours1.connect_frame, java1.connect_frame);
    // exists on the absent node (the exist watch) is answered NoNode.
    let first = compare_requests_and_replies(&java1, &ours1, &[code::NO_NODE]);

    // Second connection: the ConnectRequest resumes the session; apart from the session's id,
    // password and last zxid (checked above) it is the same. Then the AuthPacket again and
    // SetWatches with the same paths (its relativeZxid, the last zxid, checked here).
    check_resumed(&java1, &java2);
    check_resumed(&ours1, &ours2);
    let general = |c: &ConnectRequest| ConnectRequest {
        session_id: 0,
        passwd: Vec::new(),
        last_zxid_seen: 0,
        ..c.clone()
    };
    assert_eq!(general(&ours2.connect), general(&java2.connect));
    for s in [&java2, &ours2] {
        let set_watches: Vec<&&[u8]> = s
            .requests
            .iter()
            .filter(|f| RequestHeader::decode_all(&f[..8]).unwrap().op == op::SET_WATCHES)
            .collect();
        assert_eq!(set_watches.len(), 1, "{}: one SetWatches", s.who);
        let w = SetWatches::decode_all(&set_watches[0][8..]).unwrap();
        assert_eq!(w.relative_zxid, s.connect.last_zxid_seen, "{}", s.who);
        assert_eq!(
            (
                w.data_watches.len(),
                w.exist_watches.len(),
                w.child_watches.len()
            ),
            (1, 1, 1),
            "{}: {w:?}",
            s.who
        );
    }
    let second = compare_requests_and_replies(&java2, &ours2, &[]);
    println!(
        "reconnect: compared the ConnectRequest and {} request frames byte for byte on the first \
         connection and {} on the second (AuthPacket, SetWatches with relativeZxid masked, \
         delete, closeSession) with its ConnectRequest field by field; decoded {} + {} frames \
         from the server to the Java client, each whole",
        first, second, java1.reply_frames, java2.reply_frames
    );
}

fn code_name(op: i32) -> &'static str {
    match op {
        op::CREATE => "create",
        op::CREATE2 => "create2",
        op::DELETE => "delete",
        op::EXISTS => "exists",
        op::GET_DATA => "getData",
        op::SET_DATA => "setData",
        op::GET_CHILDREN2 => "getChildren2",
        op::MULTI => "multi",
        op::SYNC => "sync",
        op::CLOSE_SESSION => "closeSession",
        op::SET_WATCHES => "setWatches",
        op::AUTH => "auth",
        op::SASL => "sasl",
        _ => "other",
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
