//! Property tests with a deterministic generator (no dependency): every record round-trips,
//! and the frame decoder and reply decoder take random and mutated bytes without panicking.
//!
//! `cargo test` runs 20,000 cases per property (80,000 in all). Set `ZKLOCK_WIRE_FUZZ_CASES` for
//! more (e.g. `ZKLOCK_WIRE_FUZZ_CASES=2000000 cargo test -p zklock-wire --release --test fuzz`),
//! and `ZKLOCK_WIRE_FUZZ_SEED` to vary the seed; a failure prints the seed and case to replay.

use std::fmt::Debug;

use zklock_wire::conn::{decode_reply_body, read_children_reply};
use zklock_wire::frame::{write_frame, FrameDecoder, FrameError, DEFAULT_MAX};
use zklock_wire::jute::*;

fn cases() -> u64 {
    std::env::var("ZKLOCK_WIRE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

fn seed() -> u64 {
    std::env::var("ZKLOCK_WIRE_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_2024)
}

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn new(seed: u64, case: u64) -> Self {
        Rng(seed ^ case.wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn int(&mut self) -> i32 {
        match self.below(4) {
            0 => [0, 1, -1, i32::MIN, i32::MAX][self.below(5) as usize],
            1 => self.below(100) as i32,
            _ => self.next() as i32,
        }
    }
    fn long(&mut self) -> i64 {
        match self.below(4) {
            0 => [0, 1, -1, i64::MIN, i64::MAX][self.below(5) as usize],
            1 => self.below(1000) as i64,
            _ => self.next() as i64,
        }
    }
    fn bool(&mut self) -> bool {
        self.below(2) == 1
    }
    fn bytes(&mut self) -> Vec<u8> {
        let n = match self.below(10) {
            0 => 0,
            1 => self.below(2000),
            _ => self.below(24),
        };
        (0..n).map(|_| self.next() as u8).collect()
    }
    fn string(&mut self) -> String {
        const PIECES: &[&str] = &[
            "/",
            "lock-",
            "0000000001",
            "a",
            "é",
            "ß",
            "锁",
            "\u{1F512}",
            "_c_",
        ];
        let n = self.below(8);
        (0..n)
            .map(|_| PIECES[self.below(PIECES.len() as u64) as usize])
            .collect()
    }
    fn strings(&mut self) -> Vec<String> {
        let n = self.below(6);
        (0..n).map(|_| self.string()).collect()
    }
    fn stat(&mut self) -> Stat {
        Stat {
            czxid: self.long(),
            mzxid: self.long(),
            ctime: self.long(),
            mtime: self.long(),
            version: self.int(),
            cversion: self.int(),
            aversion: self.int(),
            ephemeral_owner: self.long(),
            data_length: self.int(),
            num_children: self.int(),
            pzxid: self.long(),
        }
    }
    fn acl(&mut self) -> Vec<Acl> {
        let n = self.below(4);
        (0..n)
            .map(|_| Acl {
                perms: self.int(),
                id: Id {
                    scheme: self.string(),
                    id: self.string(),
                },
            })
            .collect()
    }
    fn create(&mut self) -> CreateRequest {
        CreateRequest {
            path: self.string(),
            data: self.bytes(),
            acl: self.acl(),
            flags: self.int(),
        }
    }
    fn multi_request(&mut self) -> MultiRequest {
        let n = self.below(6);
        MultiRequest {
            ops: (0..n)
                .map(|_| match self.below(5) {
                    0 => MultiOp::Create(self.create()),
                    1 => MultiOp::Create2(self.create()),
                    2 => MultiOp::Delete(DeleteRequest {
                        path: self.string(),
                        version: self.int(),
                    }),
                    3 => MultiOp::SetData(SetDataRequest {
                        path: self.string(),
                        data: self.bytes(),
                        version: self.int(),
                    }),
                    _ => MultiOp::Check(CheckVersionRequest {
                        path: self.string(),
                        version: self.int(),
                    }),
                })
                .collect(),
        }
    }
    fn multi_response(&mut self) -> MultiResponse {
        let n = self.below(6);
        MultiResponse {
            results: (0..n)
                .map(|_| match self.below(6) {
                    0 => MultiResult::Create(CreateResponse {
                        path: self.string(),
                    }),
                    1 => MultiResult::Create2(Create2Response {
                        path: self.string(),
                        stat: self.stat(),
                    }),
                    2 => MultiResult::Delete,
                    3 => MultiResult::SetData(SetDataResponse { stat: self.stat() }),
                    4 => MultiResult::Check,
                    _ => MultiResult::Error(self.int()),
                })
                .collect(),
        }
    }
}

fn roundtrip<T: Record + PartialEq + Debug>(v: T, case: u64) -> Vec<u8> {
    let bytes = v.to_bytes();
    match T::decode_all(&bytes) {
        Ok(back) => assert_eq!(back, v, "case {case}"),
        Err(e) => panic!("case {case}: {v:?} did not decode: {e}"),
    }
    // A strict prefix never decodes: parsing follows the full record's path and runs out.
    // (ConnectResponse's last byte is optional, for servers before 3.4.)
    let optional_tail = std::any::type_name::<T>().ends_with("ConnectResponse") as usize;
    for cut in [
        0,
        bytes.len() / 2,
        bytes.len().saturating_sub(1 + optional_tail),
    ] {
        if cut < bytes.len() {
            assert!(
                T::decode_all(&bytes[..cut]).is_err(),
                "case {case}: prefix {cut} of {v:?}"
            );
        }
    }
    bytes
}

/// Encodes one random record of a random type, checks it round-trips, returns its bytes.
fn random_record(rng: &mut Rng, case: u64) -> Vec<u8> {
    match rng.below(26) {
        0 => roundtrip(rng.stat(), case),
        1 => roundtrip(
            Id {
                scheme: rng.string(),
                id: rng.string(),
            },
            case,
        ),
        2 => roundtrip(
            ConnectRequest {
                protocol_version: rng.int(),
                last_zxid_seen: rng.long(),
                timeout: rng.int(),
                session_id: rng.long(),
                passwd: rng.bytes(),
                read_only: rng.bool(),
            },
            case,
        ),
        3 => roundtrip(
            ConnectResponse {
                protocol_version: rng.int(),
                timeout: rng.int(),
                session_id: rng.long(),
                passwd: rng.bytes(),
                read_only: rng.bool(),
            },
            case,
        ),
        4 => roundtrip(
            RequestHeader {
                xid: rng.int(),
                op: rng.int(),
            },
            case,
        ),
        5 => roundtrip(
            ReplyHeader {
                xid: rng.int(),
                zxid: rng.long(),
                err: rng.int(),
            },
            case,
        ),
        6 => roundtrip(rng.create(), case),
        7 => roundtrip(CreateResponse { path: rng.string() }, case),
        8 => roundtrip(
            Create2Response {
                path: rng.string(),
                stat: rng.stat(),
            },
            case,
        ),
        9 => roundtrip(
            DeleteRequest {
                path: rng.string(),
                version: rng.int(),
            },
            case,
        ),
        10 => roundtrip(
            GetChildren2Request {
                path: rng.string(),
                watch: rng.bool(),
            },
            case,
        ),
        11 => roundtrip(
            GetChildren2Response {
                children: rng.strings(),
                stat: rng.stat(),
            },
            case,
        ),
        12 => roundtrip(
            GetDataRequest {
                path: rng.string(),
                watch: rng.bool(),
            },
            case,
        ),
        13 => roundtrip(
            GetDataResponse {
                data: rng.bytes(),
                stat: rng.stat(),
            },
            case,
        ),
        14 => roundtrip(
            ExistsRequest {
                path: rng.string(),
                watch: rng.bool(),
            },
            case,
        ),
        15 => roundtrip(ExistsResponse { stat: rng.stat() }, case),
        16 => roundtrip(
            SetDataRequest {
                path: rng.string(),
                data: rng.bytes(),
                version: rng.int(),
            },
            case,
        ),
        17 => roundtrip(SetDataResponse { stat: rng.stat() }, case),
        18 => roundtrip(rng.multi_request(), case),
        19 => roundtrip(rng.multi_response(), case),
        20 => roundtrip(SyncRequest { path: rng.string() }, case),
        21 => roundtrip(
            SetWatches {
                relative_zxid: rng.long(),
                data_watches: rng.strings(),
                exist_watches: rng.strings(),
                child_watches: rng.strings(),
            },
            case,
        ),
        22 => roundtrip(
            WatcherEvent {
                event_type: rng.int(),
                state: rng.int(),
                path: rng.string(),
            },
            case,
        ),
        23 => roundtrip(
            AuthPacket {
                auth_type: rng.int(),
                scheme: rng.string(),
                auth: rng.bytes(),
            },
            case,
        ),
        24 => roundtrip(
            MultiHeader {
                op: rng.int(),
                done: rng.bool(),
                err: rng.int(),
            },
            case,
        ),
        _ => roundtrip(
            CheckVersionRequest {
                path: rng.string(),
                version: rng.int(),
            },
            case,
        ),
    }
}

const REPLY_OPS: &[i32] = &[
    op::CREATE,
    op::CREATE2,
    op::DELETE,
    op::EXISTS,
    op::GET_DATA,
    op::SET_DATA,
    op::GET_CHILDREN2,
    op::MULTI,
    op::SYNC,
    op::CLOSE_SESSION,
    op::SASL,
    op::WHO_AM_I,
];

/// What the connection does with a frame: header, then the body by op. Must not panic.
fn decode_frame(payload: &[u8], op: i32) {
    let mut r = Reader::new(payload);
    if let Ok(h) = ReplyHeader::decode(&mut r) {
        let body = &payload[payload.len() - r.remaining()..];
        let decoded = decode_reply_body(op, h.err, body);
        if op == op::GET_CHILDREN2 {
            // Read in place, a listing is accepted or refused exactly as when decoded, and
            // its reader sees the same names.
            let (tx, rx) = std::sync::mpsc::channel();
            let read = Box::new(move |names: Names<'_>| tx.send(names.to_vec()).unwrap());
            let in_place = read_children_reply(h.err, body, read);
            assert_eq!(in_place.is_ok(), decoded.is_ok(), "{payload:?}");
            if let Ok(Ok(zklock_wire::conn::Response::GetChildren2(r))) = &decoded {
                assert_eq!(
                    rx.try_recv().ok().as_ref(),
                    Some(&r.children),
                    "{payload:?}"
                );
            }
            // Read as it arrives (a byte at a time, and whole), the same names and the same
            // error, never a panic.
            if h.err == 0 {
                let whole = ChildrenInPlace::decode_all(body).map(|l| l.children.to_vec());
                for piece in [1, body.len().max(1)] {
                    assert_eq!(
                        streamed(body, piece),
                        whole,
                        "{payload:?}, pieces of {piece}"
                    );
                }
            }
        }
        let _ = WatcherEvent::decode_all(body);
    }
}

/// A listing's record read by [`ListingParser`] in pieces of `piece` bytes: its names, or its
/// error. The parser must finish or fail once it has the whole record.
fn streamed(body: &[u8], piece: usize) -> Result<Vec<String>, JuteError> {
    let mut parser = ListingParser::new(body.len());
    let mut names = Vec::new();
    let mut unread = Vec::new();
    let pieces: Vec<&[u8]> = match body.is_empty() {
        true => vec![&[]],
        false => body.chunks(piece).collect(),
    };
    for chunk in pieces {
        unread.extend_from_slice(chunk);
        let used = parser.feed(&unread, &mut |n| names.push(n.to_owned()))?;
        unread.drain(..used);
    }
    assert!(parser.stat().is_some(), "waited past the record: {body:?}");
    Ok(names)
}

/// Feeds `stream` to a decoder in random chunks; returns the frames and the final error.
fn feed(rng: &mut Rng, stream: &[u8], limit: usize) -> (Vec<Vec<u8>>, Option<FrameError>) {
    let mut d = FrameDecoder::new(limit);
    let mut frames = Vec::new();
    let mut at = 0;
    while at < stream.len() {
        let n = (1 + rng.below(64) as usize).min(stream.len() - at);
        d.extend(&stream[at..at + n]);
        at += n;
        loop {
            match d.next_frame() {
                Ok(Some(f)) => frames.push(f.to_vec()),
                Ok(None) => break,
                Err(e) => return (frames, Some(e)),
            }
        }
    }
    (frames, d.finish().err())
}

#[test]
fn every_record_round_trips() {
    let seed = seed();
    for case in 0..cases() {
        let mut rng = Rng::new(seed, case);
        random_record(&mut rng, case);
    }
}

#[test]
fn valid_frame_streams_split_anywhere() {
    let seed = seed();
    for case in 0..cases() {
        let mut rng = Rng::new(seed ^ 1, case);
        let n = 1 + rng.below(5);
        let mut stream = Vec::new();
        let mut payloads = Vec::new();
        for _ in 0..n {
            let p = random_record(&mut rng, case);
            write_frame(&mut stream, DEFAULT_MAX, |o| o.extend_from_slice(&p)).unwrap();
            payloads.push(p);
        }
        let (frames, err) = feed(&mut rng, &stream, DEFAULT_MAX);
        assert_eq!(err, None, "case {case}");
        assert_eq!(frames, payloads, "case {case}");
    }
}

#[test]
fn mutated_reply_streams_never_panic() {
    let seed = seed();
    for case in 0..cases() {
        let mut rng = Rng::new(seed ^ 2, case);
        // A plausible reply stream: header + a random record, a few frames.
        let mut stream = Vec::new();
        for _ in 0..1 + rng.below(3) {
            let xid = [1, 2, -1, -2, rng.int()][rng.below(5) as usize];
            let err = [0, 0, code::NO_NODE, rng.int()][rng.below(4) as usize];
            let body = random_record(&mut rng, case);
            write_frame(&mut stream, DEFAULT_MAX, |o| {
                ReplyHeader {
                    xid,
                    zxid: rng.long(),
                    err,
                }
                .encode(o);
                o.extend_from_slice(&body);
            })
            .unwrap();
        }
        // Mutate it.
        for _ in 0..1 + rng.below(4) {
            let len = stream.len() as u64;
            match rng.below(6) {
                0 if len > 0 => {
                    let i = rng.below(len) as usize;
                    stream[i] ^= 1 << rng.below(8);
                }
                1 if len > 0 => {
                    let i = rng.below(len) as usize;
                    stream[i] = rng.next() as u8;
                }
                2 => {
                    let i = rng.below(len + 1) as usize;
                    stream.insert(i, rng.next() as u8);
                }
                3 if len > 0 => {
                    let i = rng.below(len) as usize;
                    stream.remove(i);
                }
                4 => stream.truncate(rng.below(len + 1) as usize),
                _ => {
                    let tail: Vec<u8> = (0..rng.below(12)).map(|_| rng.next() as u8).collect();
                    stream.extend(tail);
                }
            }
        }
        let limit = if rng.below(4) == 0 { 64 } else { DEFAULT_MAX };
        let (frames, _err) = feed(&mut rng, &stream, limit);
        for f in &frames {
            assert!(f.len() <= limit);
            let op = REPLY_OPS[rng.below(REPLY_OPS.len() as u64) as usize];
            decode_frame(f, op);
        }
    }
}

#[test]
fn random_bytes_never_panic() {
    let seed = seed();
    for case in 0..cases() {
        let mut rng = Rng::new(seed ^ 3, case);
        let n = rng.below(200) as usize;
        let mut bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
        // Often a sane length prefix, so the bytes reach the record decoders.
        if n >= 4 && rng.bool() {
            let len = (n - 4) as i32 - rng.below(3) as i32;
            bytes[..4].copy_from_slice(&len.max(0).to_be_bytes());
        }
        let (frames, _err) = feed(&mut rng, &bytes, DEFAULT_MAX);
        for f in &frames {
            for &op in REPLY_OPS {
                decode_frame(f, op);
            }
        }
        // Every record type straight from random bytes.
        let _ = Stat::decode_all(&bytes);
        let _ = ConnectResponse::decode_all(&bytes);
        let _ = ConnectRequest::decode_all(&bytes);
        let _ = MultiRequest::decode_all(&bytes);
        let _ = MultiResponse::decode_all(&bytes);
        let _ = GetChildren2Response::decode_all(&bytes);
        let _ = SetWatches::decode_all(&bytes);
        let _ = CreateRequest::decode_all(&bytes);
        let _ = AuthPacket::decode_all(&bytes);
    }
}
