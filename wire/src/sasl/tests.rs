//! DIGEST-MD5 against RFC 2831's worked examples, the parser against malformed challenges, and
//! the SASL / whoAmI records byte for byte (written by hand from `zookeeper.jute`).

use super::*;
use crate::conn::decode_reply_body;
use crate::jute::{op, Record, SetSASLResponse, WhoAmIResponse};

/// RFC 2831 section 4, the IMAP example: user chris, password secret.
const RFC_CHALLENGE: &[u8] = b"realm=\"elwood.innosoft.com\",nonce=\"OA6MG9tEQGm2hh\",qop=\"auth\",algorithm=md5-sess,charset=utf-8";
const RFC_RESPONSE: &[u8] = b"charset=utf-8,username=\"chris\",realm=\"elwood.innosoft.com\",nonce=\"OA6MG9tEQGm2hh\",nc=00000001,cnonce=\"OA6MHXh6VqTrRk\",digest-uri=\"imap/elwood.innosoft.com\",response=d388dad90d4bbd760a152321f2143af7,qop=auth";
const RFC_RSPAUTH: &[u8] = b"rspauth=ea40f60335c427b5527b84dbabcdfffd";

fn rfc_client() -> DigestMd5 {
    DigestMd5::new("chris", "secret", "imap/elwood.innosoft.com").with_cnonce("OA6MHXh6VqTrRk")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn the_rfc_2831_example_gives_its_response_byte_for_byte_and_accepts_its_rspauth() {
    let mut c = rfc_client();
    let step = c.step(RFC_CHALLENGE).unwrap();
    assert_eq!(step, Step::Respond(RFC_RESPONSE.to_vec()), "{step:?}");
    assert!(!c.is_complete());
    assert_eq!(c.step(RFC_RSPAUTH).unwrap(), Step::Done);
    assert!(c.is_complete());
}

#[test]
fn a_wrong_rspauth_is_a_bad_server_proof() {
    let mut c = rfc_client();
    c.step(RFC_CHALLENGE).unwrap();
    let err = c
        .step(b"rspauth=ea40f60335c427b5527b84dbabcdfffe")
        .unwrap_err();
    assert!(matches!(err, SaslError::BadServerProof), "{err:?}");
    assert!(!c.is_complete());
    // Failed for good: nothing more is accepted.
    assert!(matches!(c.step(RFC_RSPAUTH), Err(SaslError::OutOfOrder(_))));
}

#[test]
fn rspauth_in_upper_case_hex_is_accepted() {
    let mut c = rfc_client();
    c.step(RFC_CHALLENGE).unwrap();
    assert_eq!(
        c.step(b"rspauth=EA40F60335C427B5527B84DBABCDFFFD").unwrap(),
        Step::Done
    );
}

#[test]
fn a_final_token_without_rspauth_is_malformed() {
    for fin in [&b""[..], b"rspauth", b"nonce=\"x\"", b"rspauth=a,rspauth=a"] {
        let mut c = rfc_client();
        c.step(RFC_CHALLENGE).unwrap();
        let err = c.step(fin).unwrap_err();
        assert!(
            matches!(err, SaslError::Malformed(_)),
            "{}: {err:?}",
            text(fin)
        );
    }
}

#[test]
fn a_token_after_completion_is_out_of_order() {
    let mut c = rfc_client();
    c.step(RFC_CHALLENGE).unwrap();
    c.step(RFC_RSPAUTH).unwrap();
    assert!(matches!(c.step(RFC_RSPAUTH), Err(SaslError::OutOfOrder(_))));
}

#[test]
fn the_challenge_parser_takes_white_space_escapes_and_unknown_directives() {
    // Same challenge, spelt loosely: LWS around elements, an empty element, names in upper
    // case, escapes inside quoted strings, an unknown directive (ignored, RFC 2831 2.1.1).
    let loose = b" realm = \"elwood.innosoft.com\" ,, NONCE=\"OA6MG9\\tEQGm2hh\",\r\n\tqop=\"auth-int, auth\", x-ext=whatever,algorithm=MD5-SESS,charset=UTF-8 ";
    let mut c = rfc_client();
    let Step::Respond(r) = c.step(loose).unwrap() else {
        panic!("no response")
    };
    // "\t" in a quoted string is the character t: the same nonce, the same digest.
    assert_eq!(text(&r), text(RFC_RESPONSE));
}

#[test]
fn quoted_values_in_the_response_are_escaped() {
    let mut c = DigestMd5::new("a\"b\\c", "pw", "zookeeper/zk-sasl-md5").with_cnonce("cn");
    let Step::Respond(r) = c
        .step(b"realm=\"zk-sasl-md5\",nonce=\"n\",qop=\"auth\",charset=utf-8,algorithm=md5-sess")
        .unwrap()
    else {
        panic!("no response")
    };
    assert!(
        text(&r).starts_with("charset=utf-8,username=\"a\\\"b\\\\c\",realm=\"zk-sasl-md5\","),
        "{}",
        text(&r)
    );
}

#[test]
fn without_a_realm_or_charset_the_response_has_neither() {
    let mut c = DigestMd5::new("chris", "secret", "imap/x").with_cnonce("cn");
    let Step::Respond(r) = c.step(b"nonce=\"n\",algorithm=md5-sess").unwrap() else {
        panic!("no response")
    };
    let r = text(&r);
    assert!(r.starts_with("username=\"chris\",nonce=\"n\",nc=00000001,cnonce=\"cn\",digest-uri=\"imap/x\",response="), "{r}");
    assert!(r.ends_with(",qop=auth"), "{r}");
}

#[test]
fn a_user_name_outside_latin_1_needs_the_utf8_charset() {
    let challenge = b"realm=\"r\",nonce=\"n\",algorithm=md5-sess";
    let mut c = DigestMd5::new("\u{4e16}", "pw", "zookeeper/zk-sasl-md5");
    assert!(matches!(c.step(challenge), Err(SaslError::Encoding)));
    // Latin-1 fits: sent and hashed as ISO 8859-1.
    let mut c = DigestMd5::new("j\u{f6}rg", "pw", "zookeeper/zk-sasl-md5").with_cnonce("c");
    let Step::Respond(r) = c.step(challenge).unwrap() else {
        panic!("no response")
    };
    assert!(r.starts_with(b"username=\"j\xf6rg\""), "{}", text(&r));
    // With charset=utf-8 it goes out in UTF-8.
    let mut c = DigestMd5::new("\u{4e16}", "pw", "zookeeper/zk-sasl-md5").with_cnonce("c");
    let Step::Respond(r) = c
        .step(b"realm=\"r\",nonce=\"n\",algorithm=md5-sess,charset=utf-8")
        .unwrap()
    else {
        panic!("no response")
    };
    assert!(text(&r).contains("username=\"\u{4e16}\""), "{}", text(&r));
}

#[test]
fn random_client_nonces_differ_between_clients() {
    let response = || {
        let mut c = DigestMd5::new("u", "p", ZK_DIGEST_URI);
        match c.step(b"nonce=\"n\",algorithm=md5-sess").unwrap() {
            Step::Respond(r) => text(&r),
            Step::Done => panic!("done"),
        }
    };
    let (a, b) = (response(), response());
    assert_ne!(a, b);
    let cnonce = a
        .split("cnonce=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    assert_eq!(cnonce.len(), 32, "{a}");
}

#[test]
fn malformed_challenges_are_errors_not_panics() {
    let malformed: &[&[u8]] = &[
        b"",
        b",,,",
        b"nonce",
        b"nonce=",
        b"=x",
        b"nonce=\"abc",
        b"nonce=\"abc\\",
        b"nonce=\"abc\"x,algorithm=md5-sess",
        b"nonce=\"a\" \"b\",algorithm=md5-sess",
        b"nonce=\"n\"",
        b"algorithm=md5-sess",
        b"nonce=\"\",algorithm=md5-sess",
        b"nonce=\"a\",nonce=\"b\",algorithm=md5-sess",
        b"nonce=\"a\",algorithm=md5-sess,algorithm=md5-sess",
        b"nonce=\"a\",algorithm=md5-sess,charset=utf-8,charset=utf-8",
        b"nonce=\"a\",algorithm=md5-sess,qop=auth,qop=auth",
        b"nonce=\"a\",algorithm=md5-sess,stale=true,stale=true",
        b"nonce=\"a\",algorithm=md5-sess,charset=utf-8,realm=\"\xff\"",
        b"\x00\x01\x02",
        b"nonce=\xff,algorithm=md5-sess",
    ];
    for m in malformed {
        let err = rfc_client().step(m).unwrap_err();
        assert!(
            matches!(err, SaslError::Malformed(_)),
            "{:?}: {err:?}",
            text(m)
        );
    }
    let unsupported: &[&[u8]] = &[
        b"nonce=\"a\",algorithm=md5",
        b"nonce=\"a\",algorithm=md5-sess,qop=\"auth-int,auth-conf\"",
        b"nonce=\"a\",algorithm=md5-sess,charset=iso-8859-1",
    ];
    for u in unsupported {
        let err = rfc_client().step(u).unwrap_err();
        assert!(
            matches!(err, SaslError::Unsupported(_)),
            "{:?}: {err:?}",
            text(u)
        );
    }
    let long = format!("nonce=\"{}\",algorithm=md5-sess", "n".repeat(2048));
    assert!(matches!(
        rfc_client().step(long.as_bytes()),
        Err(SaslError::ChallengeTooLong(_))
    ));
}

#[test]
fn arbitrary_bytes_never_panic_the_client() {
    // A small deterministic generator (xorshift) over bytes that matter to the parser.
    let alphabet = b"a=\",\\ \t\r\nnoncealgorithmmd5-sessqopauthrealmcharsetutf-8rspauth\xff\x00";
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = (x % 64) as usize;
        let mut input = Vec::with_capacity(len);
        let mut y = x;
        for _ in 0..len {
            y ^= y << 13;
            y ^= y >> 7;
            y ^= y << 17;
            input.push(alphabet[(y % alphabet.len() as u64) as usize]);
        }
        let mut c = rfc_client();
        if c.step(&input).is_ok() {
            let _ = c.step(&input);
        }
    }
}

#[test]
fn neither_debug_nor_errors_show_the_password() {
    let pw = "hunter2-secret-pw";
    let mut c = DigestMd5::new("chris", pw, ZK_DIGEST_URI);
    assert!(!format!("{c:?}").contains(pw));
    assert!(format!("{c:?}").contains("<redacted>"));
    let errors = [
        c.step(b"nonce").unwrap_err(),
        SaslError::AuthFailed,
        SaslError::BadServerProof,
        SaslError::from(OpError::Server(code::AUTH_FAILED)),
    ];
    for e in errors {
        assert!(!format!("{e}").contains(pw));
        assert!(!format!("{e:?}").contains(pw));
    }
}

#[test]
fn auth_failed_from_the_server_maps_to_auth_failed() {
    assert!(matches!(
        SaslError::from(OpError::Server(code::AUTH_FAILED)),
        SaslError::AuthFailed
    ));
    assert!(matches!(
        SaslError::from(OpError::Server(code::NO_AUTH)),
        SaslError::Server(code::NO_AUTH)
    ));
}

#[test]
fn sasl_records_encode_as_zookeeper_jute_says() {
    // GetSASLRequest { buffer token }: int length, bytes.
    let r = GetSASLRequest {
        token: b"ab".to_vec(),
    };
    assert_eq!(r.to_bytes(), [0, 0, 0, 2, b'a', b'b']);
    // The first DIGEST-MD5 packet: an empty token.
    assert_eq!(GetSASLRequest::default().to_bytes(), [0, 0, 0, 0]);
    // SetSASLResponse { buffer token }; the server's null token (-1) reads as empty.
    assert_eq!(
        SetSASLResponse::decode_all(&[0xff, 0xff, 0xff, 0xff]).unwrap(),
        SetSASLResponse::default()
    );
    assert_eq!(
        SetSASLResponse::decode_all(&[0, 0, 0, 1, b'x'])
            .unwrap()
            .token,
        b"x"
    );
    // WhoAmIResponse { vector<ClientInfo> }, ClientInfo { ustring authScheme; ustring user }.
    let bytes = [
        0, 0, 0, 2, // two ClientInfo
        0, 0, 0, 2, b'i', b'p', // authScheme "ip"
        0, 0, 0, 3, b'1', b'.', b'2', // user "1.2"
        0, 0, 0, 4, b's', b'a', b's', b'l', // authScheme "sasl"
        0, 0, 0, 5, b'a', b'l', b'i', b'c', b'e', // user "alice"
    ];
    let w = WhoAmIResponse::decode_all(&bytes).unwrap();
    assert_eq!(
        w.client_info,
        [
            ClientInfo {
                auth_scheme: "ip".into(),
                user: "1.2".into()
            },
            ClientInfo {
                auth_scheme: "sasl".into(),
                user: "alice".into()
            }
        ]
    );
    assert_eq!(w.to_bytes(), bytes);
    // A count larger than the input is truncation, not a huge allocation.
    assert!(WhoAmIResponse::decode_all(&[0x7f, 0xff, 0xff, 0xff]).is_err());
}

#[test]
fn sasl_and_who_am_i_requests_and_replies_go_through_conn() {
    let req = Request::Sasl(GetSASLRequest {
        token: b"t".to_vec(),
    });
    assert_eq!(req.op_code(), 102);
    let mut body = Vec::new();
    req.encode_body(&mut body);
    assert_eq!(body, [0, 0, 0, 1, b't']);
    assert_eq!(Request::WhoAmI.op_code(), 107);
    let mut body = Vec::new();
    Request::WhoAmI.encode_body(&mut body);
    assert!(body.is_empty());

    assert_eq!(
        decode_reply_body(op::SASL, 0, &[0, 0, 0, 1, b'c']).unwrap(),
        Ok(Response::Sasl(SetSASLResponse {
            token: b"c".to_vec()
        }))
    );
    // AUTHFAILED carries a null token after the header; the code is what counts.
    assert_eq!(
        decode_reply_body(op::SASL, code::AUTH_FAILED, &[0xff, 0xff, 0xff, 0xff]).unwrap(),
        Err(code::AUTH_FAILED)
    );
    assert_eq!(
        decode_reply_body(op::WHO_AM_I, 0, &[0, 0, 0, 0]).unwrap(),
        Ok(Response::WhoAmI(WhoAmIResponse::default()))
    );
    assert!(decode_reply_body(op::WHO_AM_I, 0, &[0, 0, 0]).is_err());
}
