//! Secure ZooKeeper (issue 15): TLS, SASL, ACLs and chroot against one real secured server from
//! the harness (Netty, a TLS port beside the plain one, SASL DIGEST-MD5 users alice and bob).

use std::time::{Duration, Instant};

use zklock::{AclPolicy, Client, ErrorKind, Options, Pem, Tls};
use zklock_testkit::{shared_secure, unique_path};

/// A configuration error must not cost the connect timeout: well under its 15 s.
const FAST: Duration = Duration::from_secs(6);

fn tls(ca: &std::path::Path) -> Tls {
    Tls::new(Pem::File(ca.to_owned()))
}

async fn connect_err(hosts: &str, options: Options) -> (zklock::Error, Duration) {
    let start = Instant::now();
    let err = Client::connect(hosts, options)
        .await
        .expect_err("the connect should fail");
    (err, start.elapsed())
}

fn alice() -> Options {
    Options::default().sasl("alice", "alice-sasl-pw")
}

#[tokio::test]
async fn a_tls_connect_acquires_and_releases_with_and_without_a_client_certificate() {
    let s = shared_secure();
    let mut with_cert = tls(&s.ca);
    with_cert.cert = Some(Pem::File(s.client_cert.clone()));
    with_cert.key = Some(Pem::File(s.client_key.clone()));
    for t in [tls(&s.ca), with_cert] {
        let client = Client::connect(&s.tls_servers, Options::default().tls(t))
            .await
            .expect("TLS connect");
        let lock = client.mutex(&unique_path("tls")).unwrap();
        let lease = lock.acquire().await.expect("acquire over TLS");
        assert!(lease.token() > 0);
        assert_eq!(lease.release().await.unwrap().as_str(), "released");
        client.close().await;
    }
}

/// Issue 27, point 5: a TLS option holding PEM text is the content itself, as Node's
/// `tls.connect` takes it (every face passes its strings through `SecureParts`).
#[tokio::test]
async fn pem_text_in_the_options_connects_like_the_files() {
    let s = shared_secure();
    let text = |p: &std::path::Path| Some(std::fs::read_to_string(p).unwrap());
    let options = zklock::SecureParts {
        tls_ca: text(&s.ca),
        tls_cert: text(&s.client_cert),
        tls_key: text(&s.client_key),
        ..Default::default()
    }
    .apply(Options::default())
    .unwrap();
    let shown = format!("{options:?}");
    assert!(!shown.contains("PRIVATE KEY"), "{shown}");
    let client = Client::connect(&s.tls_servers, options)
        .await
        .expect("TLS connect with PEM text");
    let lease = client
        .mutex(&unique_path("tls-text"))
        .unwrap()
        .acquire()
        .await;
    lease.unwrap().release().await.unwrap();
    client.close().await;
}

/// Issue 27, point 8: SASL credentials sent to a server without SASL used to be silently
/// unused (the server answers the exchange with success), and the first creator-ACL acquire
/// failed with "invalid ACL". The connect says so, with `Permission`, never the password.
#[tokio::test]
async fn sasl_credentials_for_a_server_without_sasl_fail_at_connect_with_permission() {
    let plain = zklock_testkit::shared();
    for acl in [AclPolicy::Open, AclPolicy::CreatorAll] {
        let options = Options::default()
            .sasl("alice", "pw-of-a-plain-server-9")
            .acl(acl);
        let (err, took) = connect_err(plain, options).await;
        assert_eq!(err.kind(), ErrorKind::Permission, "{err}");
        assert!(
            err.message().contains("did not authenticate SASL user"),
            "{err}"
        );
        assert!(err.message().contains("\"alice\""), "{err}");
        assert!(!format!("{err} {err:?}").contains("pw-of-a-plain-server-9"));
        assert!(took < FAST, "took {took:?}");
    }
    // The secured server authenticates the same way: the check lets a real login through.
    let s = shared_secure();
    let client = Client::connect(&s.servers, alice().acl(AclPolicy::CreatorAll))
        .await
        .expect("a SASL login on a SASL server");
    client.close().await;
}

#[tokio::test]
async fn a_wrong_ca_fails_fast_saying_wrong_ca() {
    let s = shared_secure();
    let (err, took) = connect_err(&s.tls_servers, Options::default().tls(tls(&s.wrong_ca))).await;
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(err.message().contains("wrong CA"), "{err}");
    assert!(took < FAST, "took {took:?}");
}

#[tokio::test]
async fn a_plaintext_client_on_the_tls_port_fails_fast_saying_the_port_speaks_tls() {
    let s = shared_secure();
    let (err, took) = connect_err(&s.tls_servers, Options::default()).await;
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(err.message().contains("speaks TLS"), "{err}");
    assert!(took < FAST, "took {took:?}");
}

#[tokio::test]
async fn a_certificate_for_another_host_fails_fast_unless_hostname_verification_is_off() {
    let s = shared_secure();
    let (err, took) = connect_err(&s.wrong_host_servers, Options::default().tls(tls(&s.ca))).await;
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(err.message().contains("wrong host"), "{err}");
    assert!(took < FAST, "took {took:?}");
    let mut lax = tls(&s.ca);
    lax.verify_hostname = false;
    let client = Client::connect(&s.wrong_host_servers, Options::default().tls(lax))
        .await
        .expect("without hostname verification the CA alone is checked");
    client.close().await;
}

#[tokio::test]
async fn a_tls_client_on_the_plain_port_fails_fast_saying_it_is_not_tls() {
    let s = shared_secure();
    let (err, took) = connect_err(&s.servers, Options::default().tls(tls(&s.ca))).await;
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(err.message().contains("does not speak TLS"), "{err}");
    assert!(took < FAST, "took {took:?}");
}

#[tokio::test]
async fn a_wrong_sasl_password_fails_fast_with_permission_and_never_shows_it() {
    let s = shared_secure();
    let options = Options::default().sasl("alice", "not-alices-pw-7");
    let (err, took) = connect_err(&s.tls_servers, options.tls(tls(&s.ca))).await;
    assert_eq!(err.kind(), ErrorKind::Permission, "{err}");
    assert!(err.message().contains("alice"), "{err}");
    assert!(
        !format!("{err:?} {err}").contains("not-alices-pw-7"),
        "{err:?}"
    );
    assert!(took < FAST, "took {took:?}");
}

#[tokio::test]
async fn options_and_errors_show_no_password_or_key() {
    let options = Options::default()
        .auth("carol:digest-pw-3")
        .sasl("alice", "sasl-pw-3");
    let shown = format!("{options:?}");
    assert!(
        shown.contains("carol") && shown.contains("alice"),
        "{shown}"
    );
    assert!(
        !shown.contains("digest-pw-3") && !shown.contains("sasl-pw-3"),
        "{shown}"
    );
    let key = Pem::Bytes(b"-----BEGIN PRIVATE KEY-----\nSECRETKEYBYTES\n".to_vec());
    let mut t = tls(&shared_secure().ca);
    t.cert = Some(Pem::File(shared_secure().client_cert.clone()));
    t.key = Some(key);
    let options = Options::default().tls(t);
    assert!(!format!("{options:?}").contains("SECRETKEYBYTES"));
    let (err, _) = connect_err(&shared_secure().tls_servers, options).await;
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(!format!("{err:?}").contains("SECRETKEYBYTES"), "{err:?}");
}

async fn raw(servers: &str, digest: Option<&str>) -> zookeeper_client::Client {
    let mut c = zookeeper_client::Client::connector();
    if let Some(d) = digest {
        c = c.with_auth("digest", d.as_bytes());
    }
    c.connect(servers).await.expect("raw connect")
}

#[tokio::test]
async fn with_creator_all_another_user_can_neither_delete_nor_take_over_our_node() {
    let s = shared_secure();
    // A fresh ancestor (made by alice below) so that the sibling check shows the ancestor rule.
    let path = format!("{}/orders", unique_path("creator-all"));
    let ours = Client::connect(
        &s.tls_servers,
        alice().acl(AclPolicy::CreatorAll).tls(tls(&s.ca)),
    )
    .await
    .unwrap();
    let lease = ours.mutex(&path).unwrap().acquire().await.unwrap();
    let node = lease.path().to_owned();

    // bob, another authenticated user: no delete, no write, no joining the queue.
    let bob = raw(&s.servers, Some("bob:bob-digest-pw")).await;
    assert_eq!(
        bob.delete(&node, None).await,
        Err(zookeeper_client::Error::NoAuth)
    );
    assert_eq!(
        bob.set_data(&node, b"mine", None).await.map(|_| ()),
        Err(zookeeper_client::Error::NoAuth)
    );
    let theirs = Client::connect(
        &s.servers,
        Options::default()
            .auth("bob:bob-digest-pw")
            .acl(AclPolicy::CreatorAll),
    )
    .await
    .unwrap();
    let err = theirs
        .mutex(&path)
        .unwrap()
        .try_acquire()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Permission, "{err}");
    let err = theirs
        .mutex(&path)
        .unwrap()
        .participants()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Permission, "{err}");
    // ... but bob makes lock paths of his own beside ours (the ancestors let him create).
    let sibling = format!("{path}-bob");
    let his = theirs.mutex(&sibling).unwrap().acquire().await.unwrap();
    his.release().await.unwrap();

    // Another session of alice is a contender like any other: it waits in the queue.
    let second = Client::connect(
        &s.tls_servers,
        alice().acl(AclPolicy::CreatorAll).tls(tls(&s.ca)),
    )
    .await
    .unwrap();
    assert!(second
        .mutex(&path)
        .unwrap()
        .try_acquire()
        .await
        .unwrap()
        .is_none());
    assert_eq!(
        second
            .mutex(&path)
            .unwrap()
            .participants()
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(lease.is_held());
    lease.release().await.unwrap();
    let next = second.mutex(&path).unwrap().acquire().await.unwrap();
    next.release().await.unwrap();
    for c in [ours, theirs, second] {
        c.close().await;
    }
}

#[tokio::test]
async fn with_read_anyone_creator_all_another_user_lists_the_queue_but_cannot_change_it() {
    let s = shared_secure();
    let path = unique_path("read-anyone");
    let ours = Client::connect(&s.servers, alice().acl(AclPolicy::ReadAnyoneCreatorAll))
        .await
        .unwrap();
    let lease = ours.mutex(&path).unwrap().acquire().await.unwrap();
    let bob = Client::connect(&s.servers, Options::default().sasl("bob", "bob-sasl-pw"))
        .await
        .unwrap();
    let seen = bob.mutex(&path).unwrap().participants().await.unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].node, lease.path());
    let err = bob.mutex(&path).unwrap().try_acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Permission, "{err}");
    let raw_bob = raw(&s.servers, Some("bob:x")).await;
    assert_eq!(
        raw_bob.delete(lease.path(), None).await,
        Err(zookeeper_client::Error::NoAuth)
    );
    assert!(lease.is_held());
    lease.release().await.unwrap();
    ours.close().await;
    bob.close().await;
}

#[tokio::test]
async fn lock_paths_are_relative_to_the_chroot() {
    let s = shared_secure();
    let root = unique_path("chroot");
    let plain = raw(&s.servers, None).await;
    plain
        .mkdir(
            &root,
            &zookeeper_client::CreateMode::Persistent
                .with_acls(zookeeper_client::Acls::anyone_all()),
        )
        .await
        .unwrap();
    let chrooted = Client::connect(
        &format!("{}{root}", s.tls_servers),
        Options::default().tls(tls(&s.ca)),
    )
    .await
    .unwrap();
    let lease = chrooted
        .mutex("/app/orders")
        .unwrap()
        .acquire()
        .await
        .unwrap();
    assert!(
        lease.path().starts_with("/app/orders/_c_"),
        "{}",
        lease.path()
    );
    let seen = plain
        .list_children(&format!("{root}/app/orders"))
        .await
        .unwrap();
    assert_eq!(seen.len(), 1);
    assert!(
        lease.path().ends_with(&seen[0]),
        "{} vs {seen:?}",
        lease.path()
    );
    lease.release().await.unwrap();
    chrooted.close().await;
}
