//! SASL DIGEST-MD5 and whoAmI against real ZooKeeper servers: the harness's secured server
//! (JAAS `Server` section with the SASL users, on its plain port) and the plain shared one.

use zklock_wire::jute::code;
use zklock_wire::sasl::{authenticate, SaslError};
use zklock_wire::{connect, ConnectOptions, Connection, Error, OpError};

/// The secured server's SASL users, from the harness's own description of it
/// (`sasl_users=user:password,...`; `SASL_USERS` itself is not exported).
fn sasl_users() -> Vec<(String, String)> {
    let describe = zklock_testkit::shared_secure().describe();
    let line = describe
        .lines()
        .find_map(|l| l.strip_prefix("sasl_users="))
        .expect("the secured server describes its SASL users");
    line.split(',')
        .map(|up| {
            let (u, p) = up.split_once(':').expect("user:password");
            (u.to_owned(), p.to_owned())
        })
        .collect()
}

fn first(servers: &str) -> String {
    servers.split(',').next().unwrap().to_owned()
}

async fn open(servers: &str) -> Connection {
    let (conn, _events) = connect(&first(servers), &ConnectOptions::default())
        .await
        .expect("connect to the test ZooKeeper");
    conn
}

async fn secured() -> Connection {
    let servers = zklock_testkit::shared_secure().servers.clone();
    open(&servers).await
}

async fn sasl_identities(conn: &Connection) -> Vec<String> {
    conn.who_am_i()
        .await
        .expect("whoAmI")
        .into_iter()
        .filter(|c| c.auth_scheme == "sasl")
        .map(|c| c.user)
        .collect()
}

#[tokio::test]
async fn a_sasl_user_authenticates_and_who_am_i_lists_it_as_a_sasl_identity() {
    for (user, password) in sasl_users() {
        let conn = secured().await;
        assert_eq!(sasl_identities(&conn).await, Vec::<String>::new());
        authenticate(&conn, &user, &password)
            .await
            .unwrap_or_else(|e| panic!("{user}: {e}"));
        assert_eq!(sasl_identities(&conn).await, [user.as_str()]);
        // The connection goes on serving requests after the exchange.
        assert!(conn.exists("/", false).await.unwrap().is_some());
        let all = conn.who_am_i().await.unwrap();
        assert!(all.iter().any(|c| c.auth_scheme == "ip"), "{all:?}");
    }
}

#[tokio::test]
async fn a_wrong_password_fails_with_auth_failed_without_showing_the_password() {
    let (user, _) = sasl_users().remove(0);
    let wrong = "not-the-password-of-this-user";
    let conn = secured().await;
    let err = authenticate(&conn, &user, wrong).await.unwrap_err();
    assert!(matches!(err, SaslError::AuthFailed), "{err:?}");
    assert!(!format!("{err}").contains(wrong));
    assert!(!format!("{err:?}").contains(wrong));
    // The server closes the connection after AUTHFAILED (ZooKeeperServer.processSasl).
    match conn.who_am_i().await {
        Err(OpError::Connection(Error::ServerClosed | Error::Closed | Error::Io(_))) => {}
        other => panic!("expected the connection closed, got {other:?}"),
    }
}

#[tokio::test]
async fn an_unknown_user_fails_with_auth_failed() {
    let conn = secured().await;
    let err = authenticate(&conn, "nobody-of-this-server", "x")
        .await
        .unwrap_err();
    assert!(matches!(err, SaslError::AuthFailed), "{err:?}");
}

#[tokio::test]
async fn who_am_i_on_a_fresh_connection_shows_only_its_address() {
    let conn = secured().await;
    let all = conn.who_am_i().await.unwrap();
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0].auth_scheme, "ip");
    assert!(!all[0].user.is_empty());
}

/// A server without a JAAS `Server` section has no `SaslServer` on its connections:
/// `ZooKeeperServer.processSasl` hits a null `zooKeeperSaslServer`, catches the
/// `NullPointerException` and answers OK with a null token. Nothing is authenticated, so
/// `authenticate` says so with `NotOnServer` (the Java client would fail its DIGEST-MD5
/// exchange on the empty challenge too), and the connection stays usable.
#[tokio::test]
async fn a_server_without_sasl_answers_ok_with_an_empty_token_and_authenticates_nobody() {
    let conn = open(zklock_testkit::shared()).await;
    assert_eq!(conn.sasl_token(&[]).await.unwrap(), Vec::<u8>::new());
    let err = authenticate(&conn, "alice", "alice-sasl-pw")
        .await
        .unwrap_err();
    assert!(matches!(err, SaslError::NotOnServer), "{err:?}");
    assert_eq!(sasl_identities(&conn).await, Vec::<String>::new());
    assert!(conn.exists("/", false).await.unwrap().is_some());
}

#[tokio::test]
async fn a_second_exchange_after_success_is_refused_by_the_server() {
    // The server's SaslServer is complete after rspauth: a further token is a SaslException
    // there, answered with AUTHFAILED. This is why nothing is sent after rspauth.
    let (user, password) = sasl_users().remove(0);
    let conn = secured().await;
    authenticate(&conn, &user, &password).await.unwrap();
    match conn.sasl_token(&[]).await {
        Err(OpError::Server(code::AUTH_FAILED)) => {}
        other => panic!("expected AUTHFAILED, got {other:?}"),
    }
}
