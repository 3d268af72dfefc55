//! What a client connects with and to: its options and logins, the connect string (hosts and
//! chroot) and the path rule every request is checked against before it is sent. Read by the
//! session's task ([`super::session`]) and the requests; it names only the errors.

use std::sync::Arc;
use std::time::Duration;

use super::error::Error;
use crate::conn;
use crate::frame;

/// A SASL DIGEST-MD5 login.
#[derive(Clone)]
pub struct SaslLogin {
    pub user: String,
    pub password: String,
}

impl std::fmt::Debug for SaslLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslLogin")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

/// What a client connects with.
#[derive(Clone)]
pub struct ClientOptions {
    pub session_timeout: Duration,
    /// How long one connection attempt (TCP, TLS and ZooKeeper handshakes) may take.
    pub connect_timeout: Duration,
    /// `(scheme, auth)` pairs sent as `AuthPacket`s on every connection, e.g. `digest`.
    pub auth: Vec<(String, Vec<u8>)>,
    pub sasl: Option<SaslLogin>,
    /// The largest request sent and reply accepted (`jute.maxbuffer`).
    pub max_packet: usize,
    /// The largest zxid an earlier session of the caller saw, sent as `lastZxidSeen` from the
    /// first connection on: a server whose history is older refuses the session, closing the
    /// connection unanswered (`ZooKeeperServer.processConnectRequest`, apache/zookeeper
    /// release-3.8.4, `zookeeper-server/src/main/java/org/apache/zookeeper/server/
    /// ZooKeeperServer.java`: "Refusing session request for client ... as it has seen zxid
    /// ...", `DisconnectReason.CLIENT_ZXID_AHEAD`), as it refuses a reconnect.
    /// 0: none.
    pub last_zxid_seen: i64,
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientOptions")
            .field("session_timeout", &self.session_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field(
                "auth_schemes",
                &self.auth.iter().map(|a| &a.0).collect::<Vec<_>>(),
            )
            .field("sasl", &self.sasl)
            .finish_non_exhaustive()
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            session_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(5),
            auth: Vec::new(),
            sasl: None,
            max_packet: frame::DEFAULT_MAX,
            last_zxid_seen: 0,
        }
    }
}

/// A connect string: `host:port,host:port/chroot`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectString {
    /// `(host, port)`; an IPv6 address without its brackets.
    pub hosts: Vec<(String, u16)>,
    /// Empty for none.
    pub chroot: String,
}

impl ConnectString {
    pub fn parse(s: &str) -> Result<ConnectString, Error> {
        let (list, chroot) = match s.find('/') {
            Some(i) => (&s[..i], &s[i..]),
            None => (s, ""),
        };
        let chroot = if chroot == "/" { "" } else { chroot };
        if !chroot.is_empty() {
            validate_path(chroot)?;
        }
        let mut hosts = Vec::new();
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (host, port) =
                if let Some(rest) = entry.strip_prefix('[') {
                    let (h, after) = rest
                        .split_once(']')
                        .ok_or(Error::BadArguments("unclosed [ in the connect string"))?;
                    (h, after.strip_prefix(':'))
                } else {
                    match entry.rsplit_once(':') {
                        Some((h, p)) if !h.contains(':') => (h, Some(p)),
                        // `a:b:c`, `::1:22201`: where the address ends is a guess.
                        Some(_) => return Err(Error::BadArguments(
                            "a host with more than one ':' must be an IPv6 address in brackets, \
                             as [::1]:2181",
                        )),
                        None => (entry, None),
                    }
                };
            let port = match port {
                None => 2181,
                Some(p) => p
                    .parse()
                    .map_err(|_| Error::BadArguments("bad port in the connect string"))?,
            };
            if host.is_empty() {
                return Err(Error::BadArguments("empty host in the connect string"));
            }
            hosts.push((host.to_owned(), port));
        }
        if hosts.is_empty() {
            return Err(Error::BadArguments("no host in the connect string"));
        }
        Ok(ConnectString {
            hosts,
            chroot: chroot.to_owned(),
        })
    }
}

pub(super) fn address(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `PathUtils.validatePath`, the part a client can get wrong.
pub fn validate_path(path: &str) -> Result<(), Error> {
    if !path.starts_with('/') {
        return Err(Error::BadArguments("path must start with /"));
    }
    if path.len() > 1 && path.ends_with('/') {
        return Err(Error::BadArguments("path must not end with /"));
    }
    if path.len() > 1
        && path[1..]
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return Err(Error::BadArguments("path has an empty, . or .. component"));
    }
    if path.contains('\0') {
        return Err(Error::BadArguments("path contains a NUL character"));
    }
    Ok(())
}

/// How to speak TLS to a host of the connect string: the caller's (the session layer knows no
/// certificates). A host a certificate cannot name fails the attempt.
pub type Secure = Arc<dyn Fn(&str) -> Result<conn::TlsConnect, conn::Error> + Send + Sync>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connect_string_gives_its_hosts_ports_and_chroot() {
        let c = ConnectString::parse("a:1,b,[::1]:3/app/x").unwrap();
        assert_eq!(
            c.hosts,
            vec![
                ("a".to_owned(), 1),
                ("b".to_owned(), 2181),
                ("::1".to_owned(), 3)
            ]
        );
        assert_eq!(c.chroot, "/app/x");
        assert_eq!(ConnectString::parse("a:1/").unwrap().chroot, "");
        assert!(ConnectString::parse("a:x").is_err());
        assert!(ConnectString::parse("/x").is_err());
    }

    #[test]
    fn a_host_with_more_than_one_colon_outside_brackets_is_refused() {
        for bad in ["a:b:c", "::1:22201", "::1"] {
            let err = ConnectString::parse(bad).unwrap_err();
            assert!(err.to_string().contains("[::1]:2181"), "{bad}: {err}");
        }
        assert_eq!(
            ConnectString::parse("[::1]:22201").unwrap().hosts,
            vec![("::1".to_owned(), 22201)]
        );
    }

    #[test]
    fn paths_a_server_would_refuse_are_refused_before_sending() {
        for bad in ["", "x", "/a/", "/a//b", "/a/./b", "/a/../b", "/a\0"] {
            assert!(validate_path(bad).is_err(), "{bad:?} accepted");
        }
        for good in ["/", "/a", "/a/b-", "/a/b c"] {
            assert!(validate_path(good).is_ok(), "{good:?} refused");
        }
    }
}
