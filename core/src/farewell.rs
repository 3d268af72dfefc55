//! Closing a session we gave up, on whatever direction of the link still works.
//!
//! When the lifeline gives a session up, the transport may be unable to say goodbye: with only
//! the server-to-client direction broken, its reconnect attempts reach the server, which
//! revalidates the session on each (`ZooKeeperServer.reopenSession`, `Leader.revalidateSession`
//! touch it) and so keeps our lock nodes alive for a session timeout after the last attempt, while
//! nothing comes back to finish the attempt. So the session sends, on a fresh plain connection
//! to each server of the connect string, a ConnectRequest for the session followed at once by a
//! CloseSession, without waiting for any answer. The server reads the second request only once
//! the first revalidated the session (`NIOServerCnxn` stops reading while a connect is pending),
//! then closes the session and deletes its ephemeral nodes. A server that does not know the
//! session (already closed or expired) refuses the connect, which is harmless.
//!
//! Only for plain connections: a TLS handshake needs both directions, and where both work the
//! transport says goodbye itself.

use std::time::Duration;

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};

/// ZooKeeper's `OpCode.closeSession`.
const CLOSE_SESSION: i32 = -11;
/// How long each step of a farewell may take (connect, write, the wait for the server).
const FAREWELL_WAIT: Duration = Duration::from_millis(1500);
/// ZooKeeper's client port, for hosts given without one.
const DEFAULT_PORT: u16 = 2181;

/// The two frames: ConnectRequest {protocolVersion, lastZxidSeen, timeOut, sessionId, passwd,
/// readOnly} and RequestHeader {xid, type} of a CloseSession, each behind its length
/// (`zookeeper.jute`'s `ConnectRequest` and `RequestHeader`). `lastZxidSeen` is 0, which every
/// server accepts (a larger one than the server's own is refused).
pub(crate) fn frames(session_id: i64, password: &[u8], timeout: Duration) -> Vec<u8> {
    let timeout_ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
    let password_len = i32::try_from(password.len()).unwrap_or(0);
    let password = &password[..password_len as usize];
    let mut connect = Vec::with_capacity(64);
    connect.extend_from_slice(&0i32.to_be_bytes());
    connect.extend_from_slice(&0i64.to_be_bytes());
    connect.extend_from_slice(&timeout_ms.to_be_bytes());
    connect.extend_from_slice(&session_id.to_be_bytes());
    connect.extend_from_slice(&password_len.to_be_bytes());
    connect.extend_from_slice(password);
    connect.push(0); // not read-only
    let mut out = Vec::with_capacity(connect.len() + 16);
    out.extend_from_slice(&(connect.len() as i32).to_be_bytes());
    out.extend_from_slice(&connect);
    out.extend_from_slice(&8i32.to_be_bytes());
    out.extend_from_slice(&1i32.to_be_bytes()); // xid
    out.extend_from_slice(&CLOSE_SESSION.to_be_bytes());
    out
}

/// The `host:port` addresses of a connect string (its chroot dropped).
pub(crate) fn addresses(hosts: &str) -> Vec<(String, u16)> {
    let list = hosts.split('/').next().unwrap_or_default();
    list.split(',')
        .filter_map(|entry| {
            let entry = entry.trim();
            if entry.is_empty() {
                return None;
            }
            let (host, port) = match entry.rsplit_once(':') {
                // an unbracketed IPv6 address has no port
                Some((h, _)) if h.contains(':') && !h.starts_with('[') => (entry, None),
                Some((h, p)) => (h, p.parse::<u16>().ok()),
                None => (entry, None),
            };
            let host = host.trim_start_matches('[').trim_end_matches(']');
            Some((host.to_owned(), port.unwrap_or(DEFAULT_PORT)))
        })
        .collect()
}

/// Sends the farewell to every server of `hosts` at once, each from a short-lived thread of its
/// own (rare, and kept off the runtime so that a stalled runtime cannot hold it up), and returns
/// at once. Errors are ignored: this is a last attempt, the server's own expiry remains the
/// fallback.
pub(crate) fn close_blindly(hosts: &str, session_id: i64, password: &[u8], timeout: Duration) {
    let frames = std::sync::Arc::new(frames(session_id, password, timeout));
    for (host, port) in addresses(hosts) {
        let frames = frames.clone();
        let _ = std::thread::Builder::new()
            .name("zklock-farewell".into())
            .spawn(move || send(&host, port, &frames));
    }
}

fn send(host: &str, port: u16, frames: &[u8]) -> Option<()> {
    let address = (host, port).to_socket_addrs().ok()?.next()?;
    let mut stream = TcpStream::connect_timeout(&address, FAREWELL_WAIT).ok()?;
    stream.set_write_timeout(Some(FAREWELL_WAIT)).ok()?;
    stream.set_read_timeout(Some(FAREWELL_WAIT)).ok()?;
    stream.write_all(frames).ok()?;
    // Wait for the server's answer or close (either shows it read the requests), but do not
    // need it: the direction back may be the broken one.
    let mut sink = [0u8; 256];
    while stream.read(&mut sink).ok()? > 0 {}
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frames_are_a_connect_request_then_a_close_session_each_behind_its_length() {
        let bytes = frames(0x0102030405060708, b"pw", Duration::from_millis(4000));
        let connect_len: i32 = 4 + 8 + 4 + 8 + 4 + 2 + 1;
        assert_eq!(&bytes[..4], &connect_len.to_be_bytes());
        assert_eq!(&bytes[4..8], &0i32.to_be_bytes(), "protocol version");
        assert_eq!(&bytes[16..20], &4000i32.to_be_bytes(), "timeout");
        assert_eq!(&bytes[20..28], &0x0102030405060708i64.to_be_bytes());
        assert_eq!(&bytes[28..32], &2i32.to_be_bytes());
        assert_eq!(&bytes[32..34], b"pw");
        assert_eq!(bytes[34], 0, "not read-only");
        assert_eq!(&bytes[35..39], &8i32.to_be_bytes());
        assert_eq!(&bytes[43..47], &(-11i32).to_be_bytes(), "closeSession");
        assert_eq!(bytes.len(), 47);
    }

    #[test]
    fn addresses_take_every_host_with_its_port_or_2181_and_drop_the_chroot() {
        assert_eq!(
            addresses("a:1,b,[::1]:3,::2/chroot/x"),
            vec![
                ("a".to_owned(), 1),
                ("b".to_owned(), 2181),
                ("::1".to_owned(), 3),
                ("::2".to_owned(), 2181),
            ]
        );
    }
}
