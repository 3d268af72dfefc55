//! zklock-wire's frames against ZooKeeper's own Java client, byte for byte, recorded at test
//! time: `tests/java/Script.java` (compiled here with `javac` against the jars of the server the
//! harness runs) and zklock-wire run the same script against the same server, each through a
//! recording pass-through relay; the request frames are compared pairwise and the server's
//! replies to the Java client are decoded with this crate's decoders.
//!
//! What is masked: the xid of each request (both clients number from 1 and count up by one per
//! request; that is checked, then the 4 bytes are left out of the comparison) and pings (xid -2,
//! sent only when a client was idle for a third of the timeout; skipped on both sides). The
//! ConnectRequest is compared whole: both are new sessions (id 0, a password of 16 zeros, last
//! zxid 0), ask for the same timeout and are not read-only. Node names are the same: the Java
//! client runs first and deletes everything it created, so the sequential node's counter starts
//! again for zklock-wire.
//!
//! The Java client sends nothing we do not here: no SetWatches (no watch is set before its only
//! connection), no auth packets (none configured), no SASL (no JAAS configuration).

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

/// Compiles `tests/java/Script.java` into `out` against the ZooKeeper jars.
fn compile_script(out: &Path, classpath: &str) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/Script.java");
    let result = Command::new("javac")
        .arg("-cp")
        .arg(classpath)
        .arg("-d")
        .arg(out)
        .arg(&source)
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
    client.sync(&m).await.ok();
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

/// A request frame: (xid, op, the frame without its xid).
fn request(frame: &[u8]) -> (i32, i32, &[u8]) {
    let mut r = Reader::new(frame);
    let header = RequestHeader::decode(&mut r).expect("a request header");
    (header.xid, header.op, &frame[4..])
}

/// The request frames of a connection after the ConnectRequest, pings left out.
fn requests(up: &[u8]) -> (ConnectRequest, Vec<&[u8]>, Vec<u8>) {
    let all = frames(up);
    assert!(!all.is_empty(), "no ConnectRequest was recorded");
    let connect = ConnectRequest::decode_all(all[0]).expect("the first frame is a ConnectRequest");
    let rest: Vec<&[u8]> = all[1..]
        .iter()
        .copied()
        .filter(|f| xid_of(f) != xid::PING)
        .collect();
    (connect, rest, all[0].to_vec())
}

/// What a reply said, for comparing the two clients' replies: the error code and the record
/// with everything that depends on time, zxids and session ids zeroed.
#[derive(Debug, PartialEq, Eq)]
enum Heard {
    Reply(i32, Option<Response>),
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

/// Decodes every frame the server sent on a connection with this crate's decoders: the
/// ConnectResponse, then replies (matched to their request's op by xid), notifications and
/// ping replies. Each must decode whole, with no byte left over.
fn replies(down: &[u8], ops: &std::collections::HashMap<i32, i32>, who: &str) -> Vec<Heard> {
    let all = frames(down);
    assert!(!all.is_empty(), "{who}: no ConnectResponse was recorded");
    let hello = ConnectResponse::decode_all(all[0])
        .unwrap_or_else(|e| panic!("{who}: the ConnectResponse does not decode: {e}"));
    assert!(hello.timeout > 0 && hello.session_id != 0 && !hello.read_only);
    let mut heard = Vec::new();
    for f in &all[1..] {
        let mut r = Reader::new(f);
        let header = ReplyHeader::decode(&mut r)
            .unwrap_or_else(|e| panic!("{who}: a reply header does not decode: {e}"));
        let body = &f[16..];
        match header.xid {
            xid::PING => assert!(body.is_empty(), "{who}: a ping reply with a body"),
            xid::NOTIFICATION => {
                let event = WatcherEvent::decode_all(body)
                    .unwrap_or_else(|e| panic!("{who}: a notification does not decode: {e}"));
                heard.push(Heard::Notification(event));
            }
            x => {
                let op = *ops
                    .get(&x)
                    .unwrap_or_else(|| panic!("{who}: a reply to xid {x}, never sent"));
                let decoded = decode_reply_body(op, header.err, body).unwrap_or_else(|e| {
                    panic!("{who}: the reply to op {op} (xid {x}) does not decode whole: {e}")
                });
                if header.err != 0 && op != op::MULTI {
                    assert!(body.is_empty(), "{who}: an error reply with a body");
                }
                heard.push(Heard::Reply(header.err, decoded.ok().map(mask)));
            }
        }
    }
    heard
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_java_client_and_zklock_wire_send_the_same_request_bytes_for_the_same_script() {
    let server = zklock_testkit::shared();
    let classpath = zklock_testkit::classpath().unwrap_or_else(|e| panic!("{e}"));
    let classes = TempDir::new("java");
    compile_script(&classes.0, &classpath);
    let base = format!(
        "/zklock-wire-bytes-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    );

    let java_relay = Relay::start(server).await;
    let java_eph = {
        let (dir, cp, addr, base) = (
            classes.0.clone(),
            classpath.clone(),
            java_relay.addr().to_owned(),
            base.clone(),
        );
        tokio::task::spawn_blocking(move || run_java(&dir, &cp, &addr, &base))
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

    let java = java_relay.recordings();
    let ours = ours_relay.recordings();
    assert_eq!(java.len(), 1, "the Java client used one connection");
    assert_eq!(ours.len(), 1, "zklock-wire used one connection");

    let (java_connect, java_requests, java_connect_bytes) = requests(&java[0].up);
    let (our_connect, our_requests, our_connect_bytes) = requests(&ours[0].up);
    assert_eq!(
        java_connect,
        ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            timeout: 6000,
            session_id: 0,
            passwd: vec![0; 16],
            read_only: false,
        }
    );
    assert_eq!(our_connect, java_connect);
    assert_eq!(
        our_connect_bytes, java_connect_bytes,
        "the ConnectRequest, byte for byte"
    );

    let names = |reqs: &[&[u8]]| {
        reqs.iter()
            .map(|f| code_name(request(f).1))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(&our_requests),
        names(&java_requests),
        "the same requests in the same order"
    );
    let mut ops = (
        std::collections::HashMap::new(),
        std::collections::HashMap::new(),
    );
    for (i, (j, o)) in java_requests.iter().zip(&our_requests).enumerate() {
        let (jx, jop, jrest) = request(j);
        let (ox, oop, orest) = request(o);
        assert_eq!(jx, i as i32 + 1, "the Java client's xids count up from 1");
        assert_eq!(ox, i as i32 + 1, "our xids count up from 1");
        assert_eq!(
            orest,
            jrest,
            "request {i} ({}) differs after the xid:\n java: {}\n ours: {}",
            code_name(jop),
            hex(jrest),
            hex(orest)
        );
        ops.0.insert(jx, jop);
        ops.1.insert(ox, oop);
    }
    let pings = |up: &[u8]| {
        frames(up)[1..]
            .iter()
            .filter(|f| xid_of(f) == xid::PING)
            .count()
    };

    let java_heard = replies(&java[0].down, &ops.0, "java");
    let our_heard = replies(&ours[0].down, &ops.1, "ours");
    assert!(
        java_heard
            .iter()
            .all(|h| !matches!(h, Heard::Reply(err, _) if *err != 0)),
        "every request of the script succeeds: {java_heard:?}"
    );
    assert_eq!(
        our_heard, java_heard,
        "the server answered both clients alike (stats' zxids, times and owner masked)"
    );
    println!(
        "compared 1 ConnectRequest and {} request frames byte for byte (xids masked; pings \
         skipped: {} from Java, {} from zklock-wire); decoded {} reply frames to the Java \
         client ({} replies, {} notifications) and {} to ours, each whole",
        java_requests.len(),
        pings(&java[0].up),
        pings(&ours[0].up),
        frames(&java[0].down).len(),
        java_heard
            .iter()
            .filter(|h| matches!(h, Heard::Reply(..)))
            .count(),
        java_heard
            .iter()
            .filter(|h| matches!(h, Heard::Notification(..)))
            .count(),
        frames(&ours[0].down).len(),
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
