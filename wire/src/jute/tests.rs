//! Byte-for-byte tests: each expected encoding is written out by hand from the field list in
//! `zookeeper.jute` and the binary rules of `BinaryOutputArchive.java` (big-endian ints and
//! longs, a one-byte boolean, a 4-byte length before ustrings, buffers and vectors).

use super::*;

fn roundtrip<T: Record + PartialEq + std::fmt::Debug>(value: &T, expected: &[u8]) {
    assert_eq!(value.to_bytes(), expected, "encoding of {value:?}");
    assert_eq!(&T::decode_all(expected).unwrap(), value);
    // Every strict prefix is truncated, never a panic.
    for cut in 0..expected.len() {
        match T::decode_all(&expected[..cut]) {
            Err(JuteError::Truncated { .. }) => {}
            other => panic!("prefix {cut} of {value:?}: {other:?}"),
        }
    }
}

#[test]
fn request_header() {
    #[rustfmt::skip]
    let bytes = [
        0, 0, 0, 1,    // int xid = 1
        0, 0, 0, 12,   // int type = 12 (getChildren2)
    ];
    roundtrip(
        &RequestHeader {
            xid: 1,
            op: op::GET_CHILDREN2,
        },
        &bytes,
    );
}

#[test]
fn connect_request_new_session() {
    #[rustfmt::skip]
    let bytes = [
        0, 0, 0, 0,                  // int protocolVersion = 0
        0, 0, 0, 0, 0, 0, 0, 0,      // long lastZxidSeen = 0
        0, 0, 0x75, 0x30,            // int timeOut = 30000 ms
        0, 0, 0, 0, 0, 0, 0, 0,      // long sessionId = 0 (a new session)
        0, 0, 0, 16,                 // buffer passwd: length 16 ...
        0, 0, 0, 0, 0, 0, 0, 0,      // ... 16 zero bytes
        0, 0, 0, 0, 0, 0, 0, 0,
        0,                           // boolean readOnly = false
    ];
    roundtrip(
        &ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            timeout: 30000,
            session_id: 0,
            passwd: vec![0; 16],
            read_only: false,
        },
        &bytes,
    );
}

#[test]
fn connect_response_with_and_without_read_only() {
    #[rustfmt::skip]
    let bytes = [
        0, 0, 0, 0,                         // int protocolVersion = 0
        0, 0, 0x27, 0x10,                   // int timeOut = 10000 (negotiated)
        0x01, 0x02, 0, 0, 0, 0, 0, 0x2a,    // long sessionId = 0x010200000000002a
        0, 0, 0, 2, 0xab, 0xcd,             // buffer passwd = ab cd
        1,                                  // boolean readOnly = true
    ];
    let resp = ConnectResponse {
        protocol_version: 0,
        timeout: 10000,
        session_id: 0x0102_0000_0000_002a,
        passwd: vec![0xab, 0xcd],
        read_only: true,
    };
    assert_eq!(resp.to_bytes(), bytes);
    assert_eq!(ConnectResponse::decode_all(&bytes).unwrap(), resp);
    // A server before 3.4 sends no readOnly byte: it reads as false.
    let old = ConnectResponse::decode_all(&bytes[..bytes.len() - 1]).unwrap();
    assert!(!old.read_only);
    assert_eq!(old.session_id, resp.session_id);
}

#[test]
fn create_request_ephemeral_sequential_open_acl() {
    #[rustfmt::skip]
    let bytes = [
        0, 0, 0, 2, b'/', b'a',                          // ustring path = "/a"
        0, 0, 0, 1, b'x',                                // buffer data = "x"
        0, 0, 0, 1,                                      // vector<ACL> acl: 1 element
        0, 0, 0, 31,                                     //   ACL.perms = ALL (0x1f)
        0, 0, 0, 5, b'w', b'o', b'r', b'l', b'd',        //   Id.scheme = "world"
        0, 0, 0, 6, b'a', b'n', b'y', b'o', b'n', b'e',  //   Id.id = "anyone"
        0, 0, 0, 3,                                      // int flags = EPHEMERAL_SEQUENTIAL
    ];
    roundtrip(
        &CreateRequest {
            path: "/a".into(),
            data: b"x".to_vec(),
            acl: Acl::open_unsafe(),
            flags: create_mode::EPHEMERAL_SEQUENTIAL,
        },
        &bytes,
    );
}

#[test]
fn reply_header() {
    #[rustfmt::skip]
    let bytes = [
        0xff, 0xff, 0xff, 0xfe,          // int xid = -2 (a ping's reply)
        0, 0, 0, 0, 0, 0, 0x12, 0x34,    // long zxid = 0x1234
        0xff, 0xff, 0xff, 0x9b,          // int err = -101 (NONODE)
    ];
    roundtrip(
        &ReplyHeader {
            xid: xid::PING,
            zxid: 0x1234,
            err: code::NO_NODE,
        },
        &bytes,
    );
}

#[test]
fn watcher_event() {
    #[rustfmt::skip]
    let bytes = [
        0, 0, 0, 1,              // int type = 1 (NodeCreated)
        0, 0, 0, 3,              // int state = 3 (SyncConnected)
        0, 0, 0, 2, b'/', b'n',  // ustring path = "/n"
    ];
    roundtrip(
        &WatcherEvent {
            event_type: event_type::NODE_CREATED,
            state: 3,
            path: "/n".into(),
        },
        &bytes,
    );
}

#[test]
fn multi_request_check_and_delete() {
    #[rustfmt::skip]
    let bytes = [
        0, 0, 0, 13, 0, 0xff, 0xff, 0xff, 0xff,  // MultiHeader{type=13 check, done=false, err=-1}
        0, 0, 0, 2, b'/', b'a',                  //   CheckVersionRequest.path = "/a"
        0, 0, 0, 5,                              //   CheckVersionRequest.version = 5
        0, 0, 0, 2, 0, 0xff, 0xff, 0xff, 0xff,   // MultiHeader{type=2 delete, done=false, err=-1}
        0, 0, 0, 2, b'/', b'b',                  //   DeleteRequest.path = "/b"
        0xff, 0xff, 0xff, 0xff,                  //   DeleteRequest.version = -1 (any)
        0xff, 0xff, 0xff, 0xff, 1,               // MultiHeader{type=-1, done=true, ...
        0xff, 0xff, 0xff, 0xff,                  //   ... err=-1}
    ];
    roundtrip(
        &MultiRequest {
            ops: vec![
                MultiOp::Check(CheckVersionRequest {
                    path: "/a".into(),
                    version: 5,
                }),
                MultiOp::Delete(DeleteRequest {
                    path: "/b".into(),
                    version: -1,
                }),
            ],
        },
        &bytes,
    );
}

#[test]
fn multi_response_of_a_failed_multi() {
    #[rustfmt::skip]
    let bytes = [
        0xff, 0xff, 0xff, 0xff, 0, 0xff, 0xff, 0xff, 0x99,  // MultiHeader{type=-1 error, done=false, err=-103}
        0xff, 0xff, 0xff, 0x99,                             //   ErrorResponse.err = -103 (BADVERSION)
        0xff, 0xff, 0xff, 0xff, 0, 0xff, 0xff, 0xff, 0xfe,  // MultiHeader{type=-1, done=false, err=-2}
        0xff, 0xff, 0xff, 0xfe,                             //   ErrorResponse.err = -2 (RUNTIMEINCONSISTENCY)
        0xff, 0xff, 0xff, 0xff, 1, 0xff, 0xff, 0xff, 0xff,  // MultiHeader{type=-1, done=true, err=-1}
    ];
    let resp = MultiResponse {
        results: vec![
            MultiResult::Error(code::BAD_VERSION),
            MultiResult::Error(code::RUNTIME_INCONSISTENCY),
        ],
    };
    roundtrip(&resp, &bytes);
    assert_eq!(resp.first_error(), Some(code::BAD_VERSION));
}

#[test]
fn exists_response_stat() {
    #[rustfmt::skip]
    let bytes = [
        0, 0, 0, 0, 0, 0, 0, 1,     // long czxid = 1
        0, 0, 0, 0, 0, 0, 0, 2,     // long mzxid = 2
        0, 0, 0, 0, 0, 0, 0, 3,     // long ctime = 3
        0, 0, 0, 0, 0, 0, 0, 4,     // long mtime = 4
        0, 0, 0, 5,                 // int version = 5
        0, 0, 0, 6,                 // int cversion = 6
        0, 0, 0, 7,                 // int aversion = 7
        0, 0, 0, 0, 0, 0, 0, 8,     // long ephemeralOwner = 8
        0, 0, 0, 9,                 // int dataLength = 9
        0, 0, 0, 10,                // int numChildren = 10
        0, 0, 0, 0, 0, 0, 0, 11,    // long pzxid = 11
    ];
    assert_eq!(bytes.len(), 68);
    roundtrip(
        &ExistsResponse {
            stat: Stat {
                czxid: 1,
                mzxid: 2,
                ctime: 3,
                mtime: 4,
                version: 5,
                cversion: 6,
                aversion: 7,
                ephemeral_owner: 8,
                data_length: 9,
                num_children: 10,
                pzxid: 11,
            },
        },
        &bytes,
    );
}

#[test]
fn get_children2_response_and_null_fields() {
    let mut bytes = vec![
        0, 0, 0, 2, // vector<ustring> children: 2 elements
        0, 0, 0, 1, b'a', // "a"
        0xff, 0xff, 0xff, 0xff, // null ustring (-1): reads as ""
    ];
    bytes.extend_from_slice(&[0; 68]); // Stat, all zero
    let r = GetChildren2Response::decode_all(&bytes).unwrap();
    assert_eq!(r.children, vec!["a".to_string(), String::new()]);
    // A null buffer (GetData of a node created with null data) reads as empty.
    let mut bytes = vec![0xff, 0xff, 0xff, 0xff];
    bytes.extend_from_slice(&[0; 68]);
    assert_eq!(
        GetDataResponse::decode_all(&bytes).unwrap().data,
        Vec::<u8>::new()
    );
}

#[test]
fn auth_packet_set_watches_sync() {
    #[rustfmt::skip]
    let bytes = [
        0, 0, 0, 0,                                // int type = 0
        0, 0, 0, 6, b'd', b'i', b'g', b'e', b's', b't', // ustring scheme = "digest"
        0, 0, 0, 3, b'u', b':', b'p',              // buffer auth = "u:p"
    ];
    roundtrip(
        &AuthPacket {
            auth_type: 0,
            scheme: "digest".into(),
            auth: b"u:p".to_vec(),
        },
        &bytes,
    );
    #[rustfmt::skip]
    let bytes = [
        0, 0, 0, 0, 0, 0, 0, 7,     // long relativeZxid = 7
        0, 0, 0, 1, 0, 0, 0, 2, b'/', b'd', // dataWatches = ["/d"]
        0, 0, 0, 0,                 // existWatches = []
        0, 0, 0, 1, 0, 0, 0, 2, b'/', b'c', // childWatches = ["/c"]
    ];
    roundtrip(
        &SetWatches {
            relative_zxid: 7,
            data_watches: vec!["/d".into()],
            exist_watches: vec![],
            child_watches: vec!["/c".into()],
        },
        &bytes,
    );
    roundtrip(&SyncRequest { path: "/".into() }, &[0, 0, 0, 1, b'/']);
}

#[test]
fn malformed_input_is_typed() {
    // A length below -1.
    assert_eq!(
        SyncResponse::decode_all(&[0xff, 0xff, 0xff, 0xfe]),
        Err(JuteError::NegativeLength(-2))
    );
    // A length past the end.
    assert_eq!(
        SyncResponse::decode_all(&[0x7f, 0xff, 0xff, 0xff, b'/']),
        Err(JuteError::Truncated {
            needed: 0x7fff_ffff,
            remaining: 1
        })
    );
    // Not UTF-8.
    assert_eq!(
        SyncResponse::decode_all(&[0, 0, 0, 1, 0xff]),
        Err(JuteError::InvalidUtf8)
    );
    // Trailing bytes.
    assert_eq!(
        SyncResponse::decode_all(&[0, 0, 0, 1, b'/', 0]),
        Err(JuteError::TrailingBytes(1))
    );
    // A huge vector count with nothing behind it allocates nothing and fails.
    assert!(matches!(
        GetChildren2Response::decode_all(&[0x7f, 0xff, 0xff, 0xff]),
        Err(JuteError::Truncated { .. })
    ));
    // An unknown op in a multi response.
    assert_eq!(
        MultiResponse::decode_all(&[0, 0, 0, 99, 0, 0, 0, 0, 0]),
        Err(JuteError::UnknownMultiOp(99))
    );
}

#[test]
fn a_listing_read_in_place_gives_the_same_names_as_the_decoded_record() {
    let mut bytes = vec![
        0, 0, 0, 3, // three names
        0, 0, 0, 1, b'a', // "a"
        0xff, 0xff, 0xff, 0xff, // null: ""
        0, 0, 0, 3, 0xc3, 0xa9, b'x', // "éx", three bytes
    ];
    bytes.extend_from_slice(&[0; 68]);
    let decoded = GetChildren2Response::decode_all(&bytes).unwrap();
    let in_place = ChildrenInPlace::decode_all(&bytes).unwrap();
    assert_eq!(in_place.children.len(), 3);
    assert_eq!(in_place.children.to_vec(), decoded.children);
    // Walked twice, the same names.
    let twice: Vec<&str> = in_place
        .children
        .iter()
        .chain(in_place.children.iter())
        .collect();
    assert_eq!(twice, ["a", "", "éx", "a", "", "éx"]);
    assert_eq!(in_place.stat, decoded.stat);
    assert!(Names::EMPTY.is_empty());
    assert_eq!(Names::EMPTY.iter().next(), None);
}

#[test]
fn a_malformed_listing_read_in_place_fails_like_the_decoded_record() {
    let stat = [0u8; 68];
    let with_stat = |head: &[u8]| [head, &stat[..]].concat();
    for bad in [
        with_stat(&[0, 0, 0, 1, 0, 0, 0, 1, 0xff]), // not UTF-8
        with_stat(&[0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe]), // a length below -1
        with_stat(&[0xff, 0xff, 0xff, 0xfe]),       // a count below -1
        vec![0x7f, 0xff, 0xff, 0xff],               // a huge count with nothing behind it
        with_stat(&[0, 0, 0, 0, 9]),                // a byte left over
        vec![0, 0, 0, 0, 0, 0],                     // no whole Stat
    ] {
        let decoded = GetChildren2Response::decode_all(&bad).map(|_| ());
        let in_place = ChildrenInPlace::decode_all(&bad).map(|_| ());
        assert!(decoded.is_err(), "{bad:?}");
        assert_eq!(in_place, decoded, "{bad:?}");
    }
}

/// A listing fed to [`ListingParser`] in pieces of `piece` bytes, the way a connection's reads
/// arrive: the bytes a call leaves unread wait in front of the next piece.
fn parsed_in_pieces(bytes: &[u8], piece: usize) -> Result<(Vec<String>, Stat), JuteError> {
    let mut parser = ListingParser::new(bytes.len());
    let mut names = Vec::new();
    let mut unread = Vec::new();
    // An empty record is read once, with nothing.
    let pieces: Vec<&[u8]> = match bytes.is_empty() {
        true => vec![&[]],
        false => bytes.chunks(piece).collect(),
    };
    for chunk in pieces {
        unread.extend_from_slice(chunk);
        let used = parser.feed(&unread, &mut |n| names.push(n.to_owned()))?;
        unread.drain(..used);
        if let Some(stat) = parser.stat() {
            assert!(unread.is_empty(), "bytes left after the record");
            return Ok((names, stat.clone()));
        }
    }
    panic!("the parser waited for bytes past the record's end: {bytes:?}");
}

#[test]
fn a_listing_read_as_it_arrives_gives_the_same_names_wherever_the_reads_cut_it() {
    let mut bytes = vec![
        0, 0, 0, 3, // three names
        0, 0, 0, 1, b'a', // "a"
        0xff, 0xff, 0xff, 0xff, // null: ""
        0, 0, 0, 3, 0xc3, 0xa9, b'x', // "éx", three bytes
    ];
    let stat = Stat {
        cversion: 7,
        pzxid: 9,
        ..Stat::default()
    };
    stat.encode(&mut bytes);
    let whole = ChildrenInPlace::decode_all(&bytes).unwrap();
    for piece in 1..=bytes.len() {
        let (names, got) = parsed_in_pieces(&bytes, piece).unwrap();
        assert_eq!(names, whole.children.to_vec(), "pieces of {piece}");
        assert_eq!(got, whole.stat);
    }
    // No names: the count, then the Stat.
    let mut empty = vec![0, 0, 0, 0];
    stat.encode(&mut empty);
    assert_eq!(parsed_in_pieces(&empty, 5).unwrap(), (vec![], stat));
}

#[test]
fn a_malformed_listing_read_as_it_arrives_fails_with_the_error_of_the_whole_record() {
    let stat = [0u8; 68];
    let with_stat = |head: &[u8]| [head, &stat[..]].concat();
    for bad in [
        with_stat(&[0, 0, 0, 1, 0, 0, 0, 1, 0xff]), // not UTF-8
        with_stat(&[0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe]), // a length below -1
        with_stat(&[0xff, 0xff, 0xff, 0xfe]),       // a count below -1
        vec![0x7f, 0xff, 0xff, 0xff],               // a huge count with nothing behind it
        vec![0, 0, 0, 2, 0, 0, 0, 1, b'a', 0, 0],   // cut inside the second name's length
        vec![0, 0, 0, 1, 0, 0, 0, 9, b'a'],         // a name longer than the record
        with_stat(&[0, 0, 0, 0, 9]),                // a byte left over
        vec![0, 0, 0, 0, 0, 0],                     // no whole Stat
        vec![0, 0],                                 // no whole count
        vec![],                                     // nothing at all
    ] {
        let whole = ChildrenInPlace::decode_all(&bad).map(|_| ());
        assert!(whole.is_err(), "{bad:?}");
        for piece in 1..=bad.len().max(1) {
            let streamed = parsed_in_pieces(&bad, piece).map(|_| ());
            assert_eq!(streamed, whole, "{bad:?} in pieces of {piece}");
        }
    }
}
