//! zklock-wire over TLS, against the harness's secured ZooKeeper (`shared_secure`: a Netty TLS
//! port whose certificate names 127.0.0.1 only, signed by a test CA; client certificates wanted,
//! not required).

use std::path::Path;
use std::time::{Duration, Instant};

use zklock_wire::jute::{code, create_mode, ExistsRequest};
use zklock_wire::tls::{self, TlsConfigError};
use zklock_wire::{
    connect, ConnectOptions, Connection, Error, Events, OpError, Request, TlsConnect,
};

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Options for TLS to `addr` (`host:port`) trusting `ca`, with the harness's client certificate
/// if `with_cert`.
fn tls_options(addr: &str, ca: &Path, with_cert: bool, verify_hostname: bool) -> ConnectOptions {
    let s = zklock_testkit::shared_secure();
    let (cert, key) = (read(&s.client_cert), read(&s.client_key));
    let identity = with_cert.then_some((cert.as_slice(), key.as_slice()));
    let config = tls::client_config(&read(ca), identity, verify_hostname).expect("TLS config");
    let host = addr.rsplit_once(':').expect("host:port").0;
    ConnectOptions {
        tls: Some(TlsConnect {
            config,
            server_name: tls::server_name(host).expect("server name"),
        }),
        connect_timeout: Duration::from_secs(10),
        ..ConnectOptions::default()
    }
}

async fn open(with_cert: bool) -> (Connection, Events) {
    let s = zklock_testkit::shared_secure();
    connect(
        &s.tls_servers,
        &tls_options(&s.tls_servers, &s.ca, with_cert, true),
    )
    .await
    .expect("TLS connect to the secured ZooKeeper")
}

/// Creates, reads and deletes a node of its own.
async fn round_trip(conn: &Connection, name: &str) {
    let path = format!("/wire-tls-{name}-{:x}", conn.session().id);
    let made = conn
        .create(&path, b"over tls", create_mode::EPHEMERAL)
        .await
        .unwrap();
    assert_eq!(made, path);
    assert_eq!(conn.get_data(&path, false).await.unwrap().data, b"over tls");
    conn.delete(&path, -1).await.unwrap();
    assert_eq!(conn.exists(&path, false).await.unwrap(), None);
}

#[tokio::test]
async fn a_tls_connection_trusting_the_ca_creates_reads_and_deletes_a_node() {
    let (conn, _events) = open(false).await;
    assert_ne!(conn.session().id, 0);
    round_trip(&conn, "ca").await;
    conn.close_session().await.unwrap();
}

#[tokio::test]
async fn a_tls_connection_with_a_client_certificate_creates_reads_and_deletes_a_node() {
    let (conn, _events) = open(true).await;
    round_trip(&conn, "cert").await;
    conn.close_session().await.unwrap();
}

#[tokio::test]
async fn a_server_error_over_tls_is_a_server_error() {
    let (conn, _events) = open(false).await;
    match conn.delete("/wire-tls-never-made", -1).await {
        Err(OpError::Server(code::NO_NODE)) => {}
        other => panic!("{other:?}"),
    }
    conn.close_session().await.unwrap();
}

#[tokio::test]
async fn requests_queued_together_leave_in_one_write_over_tls_too() {
    let (conn, _events) = open(false).await;
    tokio::task::yield_now().await;
    let before = conn.stats();
    let futures: Vec<_> = (0..20)
        .map(|i| {
            conn.submit(&Request::Exists(ExistsRequest {
                path: format!("/wire-tls-batch-absent-{i}"),
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
    for r in &replies {
        assert_eq!(r.sent_at, replies[0].sent_at);
        assert!(r.sent_at <= r.received_at);
        assert_eq!(r.result, Err(code::NO_NODE));
    }
    conn.close_session().await.unwrap();
}

#[tokio::test]
async fn an_idle_tls_connection_pings_at_a_third_of_the_timeout_and_stays_open() {
    let s = zklock_testkit::shared_secure();
    let opts = ConnectOptions {
        session_timeout: Duration::from_secs(3),
        ..tls_options(&s.tls_servers, &s.ca, false, true)
    };
    let (conn, _events) = connect(&s.tls_servers, &opts).await.unwrap();
    tokio::time::sleep(conn.session().timeout / 3 + Duration::from_millis(700)).await;
    let st = conn.stats();
    let sent = st.last_ping_sent.expect("a ping went out");
    assert!(st.last_ping_reply.expect("the ping was answered") >= sent);
    assert!(conn.closed().is_none());
    conn.close_session().await.unwrap();
}

#[tokio::test]
async fn a_server_certificate_from_another_ca_fails_with_a_tls_error_saying_not_trusted() {
    let s = zklock_testkit::shared_secure();
    let r = connect(
        &s.tls_servers,
        &tls_options(&s.tls_servers, &s.wrong_ca, false, true),
    )
    .await;
    match r {
        Err(e @ Error::Tls(_)) => assert!(e.to_string().contains("not trusted"), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn another_ca_fails_even_without_hostname_verification() {
    let s = zklock_testkit::shared_secure();
    let r = connect(
        &s.wrong_host_servers,
        &tls_options(&s.wrong_host_servers, &s.wrong_ca, false, false),
    )
    .await;
    assert!(matches!(r, Err(Error::Tls(_))), "{r:?}");
}

#[tokio::test]
async fn a_name_the_certificate_does_not_hold_fails_when_hostnames_are_verified() {
    let s = zklock_testkit::shared_secure();
    let r = connect(
        &s.wrong_host_servers,
        &tls_options(&s.wrong_host_servers, &s.ca, false, true),
    )
    .await;
    match r {
        Err(e @ Error::Tls(_)) => {
            assert!(e.to_string().contains("does not name the host"), "{e}")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_name_the_certificate_does_not_hold_is_accepted_without_hostname_verification() {
    let s = zklock_testkit::shared_secure();
    let (conn, _events) = connect(
        &s.wrong_host_servers,
        &tls_options(&s.wrong_host_servers, &s.ca, true, false),
    )
    .await
    .expect("TLS connect by a name the certificate does not hold");
    round_trip(&conn, "anyname").await;
    conn.close_session().await.unwrap();
}

#[tokio::test]
async fn plain_tcp_to_the_tls_port_fails_with_a_typed_error_within_the_connect_timeout() {
    let s = zklock_testkit::shared_secure();
    let opts = ConnectOptions {
        connect_timeout: Duration::from_secs(3),
        ..ConnectOptions::default()
    };
    let start = Instant::now();
    let r = connect(&s.tls_servers, &opts).await;
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
    // The server closes the connection on a record that is not TLS (ServerClosed here), or
    // resets it.
    assert!(
        matches!(
            r,
            Err(Error::ServerClosed | Error::Io(_) | Error::ConnectTimeout(_))
        ),
        "{r:?}"
    );
}

#[tokio::test]
async fn tls_to_the_plain_port_fails_with_a_typed_error() {
    let s = zklock_testkit::shared_secure();
    let plain = s.servers.split(',').next().unwrap();
    let r = connect(plain, &tls_options("127.0.0.1:0", &s.ca, false, true)).await;
    // The server closes the connection on the ClientHello (a length over its limit): a TLS
    // error saying so, or a reset.
    assert!(matches!(r, Err(Error::Tls(_) | Error::Io(_))), "{r:?}");
}

#[tokio::test]
async fn a_client_key_that_does_not_match_its_certificate_is_refused_without_quoting_it() {
    let s = zklock_testkit::shared_secure();
    // The server's key, beside the CA in the harness's directory.
    let other_key = read(&s.ca.with_file_name("server.key"));
    let e = tls::client_config(
        &read(&s.ca),
        Some((&read(&s.client_cert), &other_key)),
        true,
    )
    .expect_err("a mismatched key is refused");
    assert!(matches!(e, TlsConfigError::Rustls(_)), "{e:?}");
    let shown = format!("{e} {e:?}");
    let body: String = String::from_utf8_lossy(&other_key)
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    for chunk in body.as_bytes().chunks(16) {
        assert!(
            !shown.contains(std::str::from_utf8(chunk).unwrap()),
            "{shown}"
        );
    }
}

#[tokio::test]
async fn a_key_file_without_a_key_is_refused_by_its_role() {
    let s = zklock_testkit::shared_secure();
    // A certificate where the key should be.
    let e = tls::client_config(
        &read(&s.ca),
        Some((&read(&s.client_cert), &read(&s.client_cert))),
        true,
    )
    .expect_err("no key in the key file");
    assert!(
        matches!(
            e,
            TlsConfigError::Missing {
                role: tls::PemRole::ClientKey
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("client key"), "{e}");
}

#[tokio::test]
async fn options_with_tls_show_the_server_name_and_not_the_configuration() {
    let s = zklock_testkit::shared_secure();
    let opts = tls_options(&s.tls_servers, &s.ca, true, true);
    let shown = format!("{opts:?}");
    assert!(shown.contains("127.0.0.1"), "{shown}");
    assert!(!shown.to_lowercase().contains("key"), "{shown}");
    assert!(!shown.contains("config"), "{shown}");
}

#[tokio::test]
async fn a_configuration_on_a_provider_given_by_the_caller_connects() {
    let s = zklock_testkit::shared_secure();
    let config = tls::client_config_with_provider(
        std::sync::Arc::new(rustls::crypto::ring::default_provider()),
        &read(&s.ca),
        None,
        true,
    )
    .unwrap();
    let opts = ConnectOptions {
        tls: Some(TlsConnect {
            config,
            server_name: tls::server_name("127.0.0.1").unwrap(),
        }),
        ..ConnectOptions::default()
    };
    let (conn, _events) = connect(&s.tls_servers, &opts).await.unwrap();
    round_trip(&conn, "provider").await;
    conn.close_session().await.unwrap();
}
