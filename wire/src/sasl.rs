//! SASL DIGEST-MD5 (RFC 2831) for ZooKeeper: a pure client state machine ([`DigestMd5`]) and
//! the exchange over a [`Connection`] ([`authenticate`]), plus `whoAmI` to see the result.
//!
//! What ZooKeeper does, from its sources (apache/zookeeper, tag release-3.8.4,
//! `zookeeper-server/src/main/java/org/apache/zookeeper/`):
//! - `client/ZooKeeperSaslClient.java` (`initialize`, `respondToServer`, `sendSaslPacket`): the
//!   client sends each token as a `GetSASLRequest { buffer token }` with op `sasl` (102,
//!   `ZooDefs.OpCode.sasl`) through `ClientCnxn.sendPacket`, which numbers it with an ordinary
//!   xid (`ClientCnxn.getXid`), not a reserved one; the reply is a `SetSASLResponse { buffer
//!   token }`. DIGEST-MD5 has no initial response (`SaslClient.hasInitialResponse()` is false),
//!   so the first packet carries an empty token and the server answers with its challenge.
//! - `server/ZooKeeperServer.java` `processSasl`: the server feeds each token to its
//!   `SaslServer` (`server/ZooKeeperSaslServer.java`: `Sasl.createSaslServer("DIGEST-MD5",
//!   "zookeeper", "zk-sasl-md5", ...)` in `util/SecurityUtils.java`, hence realm `zk-sasl-md5`
//!   and digest-uri `zookeeper/zk-sasl-md5`). When the exchange completes it adds the identity
//!   `sasl:<authorizationID>` to the connection and answers with the final token (`rspauth=...`);
//!   the JDK's `DigestMD5Server` completes on the client's digest-response, so the exchange is
//!   two round trips and nothing is sent after `rspauth` (the Java client's
//!   `DigestMD5Client` returns no token there and `respondToServer` sends nothing; a third token
//!   would reach a completed `SaslServer`, which refuses it). A `SaslException` (unknown user,
//!   wrong password, malformed response) is answered with `AUTHFAILED` (-115) and the server
//!   closes the connection.
//! - A server without a JAAS `Server` section has no `SaslServer` on its connections
//!   (`NIOServerCnxn` / `NettyServerCnxn` create one only when `factory.login != null`);
//!   `processSasl` then catches the `NullPointerException` and answers *OK with a null token*:
//!   nothing is authenticated. [`authenticate`] reports this as [`SaslError::NotOnServer`]
//!   rather than success.
//! - `server/auth/SaslServerCallbackHandler.java`: the users are the `user_<name>="<password>"`
//!   options of the JAAS `Server` section; the realm callback takes the default (the server's
//!   realm); the authorized id is the authentication id (short name, Kerberos-style rules that
//!   leave a plain user name as it is).
//! - `whoAmI` (op 107, `ZooDefs.OpCode.whoAmI`) has no request record; the reply is a
//!   `WhoAmIResponse { vector<ClientInfo> clientInfo }` (`zookeeper-jute/src/main/resources/
//!   zookeeper.jute`), built by `server/FinalRequestProcessor.java` from the connection's auth
//!   info (`server/util/AuthUtil.getClientInfos`).
//!
//! The mechanism, from RFC 2831: the challenge (section 2.1.1) is a comma-separated list of
//! `name=value` directives whose values are tokens or quoted strings; the response (2.1.2) is
//! `response = HEX(KD(HEX(H(A1)), nonce:nc:cnonce:qop:HEX(H(A2))))` with
//! `A1 = H(user:realm:password):nonce:cnonce`, `A2 = "AUTHENTICATE:" digest-uri` for qop `auth`,
//! `KD(k, s) = H(k:s)`, `H` = MD5; the server's `rspauth` (2.1.3) is the same with
//! `A2 = ":" digest-uri`. Only qop `auth` (authentication, no integrity or privacy layer) is
//! offered, which is what ZooKeeper uses.
//!
//! The password is kept only inside [`DigestMd5`] (its `Debug` shows it redacted) and never
//! appears in a [`SaslError`].

use md5::{Digest, Md5};
use thiserror::Error;

use crate::conn::{Connection, Error, OpError, Request, Response};
use crate::jute::{code, ClientInfo, GetSASLRequest};

/// ZooKeeper's SASL protocol name and server name (`ZooKeeperSaslServer.createSaslServer`).
pub const ZK_PROTOCOL: &str = "zookeeper";
pub const ZK_SERVER_NAME: &str = "zk-sasl-md5";
/// The digest-uri ZooKeeper's DIGEST-MD5 server expects: `<protocol>/<server name>`.
pub const ZK_DIGEST_URI: &str = "zookeeper/zk-sasl-md5";

/// RFC 2831 section 2.1.1: "The size of a digest-challenge MUST be less than 2048 bytes."
pub const MAX_CHALLENGE: usize = 2047;

/// Why SASL authentication did not succeed. Never carries the password.
#[derive(Debug, Clone, Error)]
pub enum SaslError {
    /// The server refused the credentials (`AUTHFAILED`, -115): unknown user or wrong
    /// password. The server closes the connection after this answer.
    #[error("SASL authentication failed: the server refused the user name or password")]
    AuthFailed,
    /// The server answered the first token with an empty challenge: it has no SASL configured
    /// (no JAAS `Server` section), so nothing was authenticated.
    #[error("the server has no SASL configured (empty challenge): nothing was authenticated")]
    NotOnServer,
    /// The challenge is not valid RFC 2831 syntax or misses a required directive.
    #[error("malformed DIGEST-MD5 challenge: {0}")]
    Malformed(String),
    /// The challenge is at least 2048 bytes long (RFC 2831 section 2.1.1).
    #[error("DIGEST-MD5 challenge of {0} bytes is too long")]
    ChallengeTooLong(usize),
    /// The challenge asks for something this client does not do (e.g. only qop `auth-conf`,
    /// an algorithm other than `md5-sess`, a charset other than `utf-8`).
    #[error("unsupported DIGEST-MD5 challenge: {0}")]
    Unsupported(String),
    /// The user name cannot be sent: not ISO 8859-1 while the server did not offer UTF-8.
    #[error("the user name or realm cannot be encoded in the server's charset")]
    Encoding,
    /// The server's `rspauth` is not the one the password gives: the server does not know the
    /// password (or the reply was tampered with).
    #[error("the server's rspauth does not match: the server did not prove it knows the password")]
    BadServerProof,
    /// A token arrived in a state that expects none (after completion), or a step was missing.
    #[error("SASL exchange out of order: {0}")]
    OutOfOrder(&'static str),
    /// No random source for the client nonce.
    #[error("no random source for the client nonce: {0}")]
    Random(String),
    /// Another server error code (see [`crate::jute::code`]).
    #[error("server error {name} ({0}) during SASL", name = code::name(*.0))]
    Server(i32),
    /// The connection failed.
    #[error(transparent)]
    Connection(#[from] Error),
}

impl From<OpError> for SaslError {
    fn from(e: OpError) -> Self {
        match e {
            OpError::Server(code::AUTH_FAILED) => SaslError::AuthFailed,
            OpError::Server(c) => SaslError::Server(c),
            OpError::Connection(e) => SaslError::Connection(e),
        }
    }
}

/// What to do after a challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Send this token to the server.
    Respond(Vec<u8>),
    /// The exchange is complete and the server proved it knows the password.
    Done,
}

#[derive(Clone)]
enum State {
    /// Waiting for the digest-challenge.
    Challenge,
    /// The digest-response was sent; waiting for `rspauth`, which must equal this (lowercase
    /// hex).
    RspAuth(String),
    Done,
    Failed,
}

/// A DIGEST-MD5 client (RFC 2831), authentication only (qop `auth`), without an authzid.
#[derive(Clone)]
pub struct DigestMd5 {
    user: String,
    password: String,
    digest_uri: String,
    cnonce: Option<String>,
    state: State,
}

impl std::fmt::Debug for DigestMd5 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.state {
            State::Challenge => "challenge",
            State::RspAuth(_) => "rspauth",
            State::Done => "done",
            State::Failed => "failed",
        };
        f.debug_struct("DigestMd5")
            .field("user", &self.user)
            .field("password", &"<redacted>")
            .field("digest_uri", &self.digest_uri)
            .field("state", &state)
            .finish()
    }
}

impl DigestMd5 {
    /// A client for `user`/`password` towards `digest_uri` ([`ZK_DIGEST_URI`] for ZooKeeper).
    /// The client nonce is drawn from the OS when the challenge arrives.
    pub fn new(user: &str, password: &str, digest_uri: &str) -> Self {
        DigestMd5 {
            user: user.into(),
            password: password.into(),
            digest_uri: digest_uri.into(),
            cnonce: None,
            state: State::Challenge,
        }
    }

    /// Uses this client nonce instead of a random one (for tests against known vectors). It
    /// must not contain `"` or `\`.
    pub fn with_cnonce(mut self, cnonce: &str) -> Self {
        self.cnonce = Some(cnonce.into());
        self
    }

    /// True once the server's `rspauth` was verified.
    pub fn is_complete(&self) -> bool {
        matches!(self.state, State::Done)
    }

    /// Takes the server's next token: the digest-challenge first, then the `rspauth`. Any
    /// error leaves the client failed.
    pub fn step(&mut self, token: &[u8]) -> Result<Step, SaslError> {
        let state = std::mem::replace(&mut self.state, State::Failed);
        let (next, step) = match state {
            State::Challenge => {
                let (response, rspauth) = self.respond(token)?;
                (State::RspAuth(rspauth), Step::Respond(response))
            }
            State::RspAuth(expected) => {
                verify_rspauth(token, &expected)?;
                (State::Done, Step::Done)
            }
            State::Done => return Err(SaslError::OutOfOrder("a token after completion")),
            State::Failed => return Err(SaslError::OutOfOrder("a token after a failure")),
        };
        self.state = next;
        Ok(step)
    }

    /// The digest-response to a challenge, and the `rspauth` the server must answer with.
    fn respond(&self, challenge: &[u8]) -> Result<(Vec<u8>, String), SaslError> {
        let c = Challenge::parse(challenge)?;
        let cnonce = match &self.cnonce {
            Some(c) => c.clone(),
            None => random_cnonce()?,
        };
        // RFC 2831 2.1.2.1: with charset=utf-8, user name, realm and password are hashed in
        // ISO 8859-1 when they fit, in UTF-8 otherwise; without it they must be ISO 8859-1.
        let hashed = |s: &str| -> Result<Vec<u8>, SaslError> {
            match latin1(s) {
                Some(b) => Ok(b),
                None if c.utf8 => Ok(s.as_bytes().to_vec()),
                None => Err(SaslError::Encoding),
            }
        };
        // On the wire the response is in UTF-8 if the server offered it, else ISO 8859-1.
        let wire = |s: &str| -> Result<Vec<u8>, SaslError> {
            if c.utf8 {
                Ok(s.as_bytes().to_vec())
            } else {
                latin1(s).ok_or(SaslError::Encoding)
            }
        };
        let realm = c.realm.clone().unwrap_or_default();
        let nc = "00000001";
        let qop = "auth";

        let mut secret = Vec::new();
        secret.extend(hashed(&self.user)?);
        secret.push(b':');
        secret.extend(hashed(&realm)?);
        secret.push(b':');
        secret.extend(hashed(&self.password)?);
        let mut a1 = md5(&secret).to_vec();
        a1.push(b':');
        a1.extend_from_slice(&c.nonce);
        a1.push(b':');
        a1.extend_from_slice(cnonce.as_bytes());
        let ha1 = hex(&md5(&a1));

        let digest = |a2: &str| -> String {
            let mut kd = Vec::new();
            kd.extend_from_slice(ha1.as_bytes());
            kd.push(b':');
            kd.extend_from_slice(&c.nonce);
            kd.extend_from_slice(format!(":{nc}:{cnonce}:{qop}:").as_bytes());
            kd.extend_from_slice(hex(&md5(a2.as_bytes())).as_bytes());
            hex(&md5(&kd))
        };
        let response = digest(&format!("AUTHENTICATE:{}", self.digest_uri));
        let rspauth = digest(&format!(":{}", self.digest_uri));

        // In the order of RFC 2831's example (section 4).
        let mut out = Vec::new();
        if c.utf8 {
            out.extend_from_slice(b"charset=utf-8,");
        }
        out.extend_from_slice(b"username=");
        quoted(&mut out, &wire(&self.user)?);
        if c.realm.is_some() {
            out.extend_from_slice(b",realm=");
            quoted(&mut out, &wire(&realm)?);
        }
        out.extend_from_slice(b",nonce=");
        quoted(&mut out, &c.nonce);
        out.extend_from_slice(format!(",nc={nc},cnonce=").as_bytes());
        quoted(&mut out, cnonce.as_bytes());
        out.extend_from_slice(b",digest-uri=");
        quoted(&mut out, &wire(&self.digest_uri)?);
        out.extend_from_slice(format!(",response={response},qop={qop}").as_bytes());
        Ok((out, rspauth))
    }
}

/// What the client takes from a digest-challenge.
#[derive(Debug)]
struct Challenge {
    /// The first realm offered (the client may pick any; ZooKeeper offers one).
    realm: Option<String>,
    nonce: Vec<u8>,
    utf8: bool,
}

impl Challenge {
    fn parse(input: &[u8]) -> Result<Challenge, SaslError> {
        if input.len() > MAX_CHALLENGE {
            return Err(SaslError::ChallengeTooLong(input.len()));
        }
        let directives = parse_directives(input)?;
        let once = |name: &str| -> Result<Option<&[u8]>, SaslError> {
            let mut found = directives.iter().filter(|(n, _)| n == name);
            let first = found.next();
            if found.next().is_some() {
                return Err(SaslError::Malformed(format!(
                    "directive {name} given twice"
                )));
            }
            Ok(first.map(|(_, v)| v.as_slice()))
        };
        for name in ["stale", "maxbuf", "cipher"] {
            once(name)?;
        }
        let utf8 = match once("charset")? {
            None => false,
            Some(v) if v.eq_ignore_ascii_case(b"utf-8") => true,
            Some(v) => {
                return Err(SaslError::Unsupported(format!(
                    "charset {}",
                    String::from_utf8_lossy(v)
                )))
            }
        };
        match once("algorithm")? {
            Some(v) if v.eq_ignore_ascii_case(b"md5-sess") => {}
            Some(v) => {
                return Err(SaslError::Unsupported(format!(
                    "algorithm {}",
                    String::from_utf8_lossy(v)
                )))
            }
            None => return Err(SaslError::Malformed("no algorithm directive".into())),
        }
        // qop-options: a quoted list of tokens; absent means "auth".
        if let Some(v) = once("qop")? {
            let offered = v
                .split(|&b| b == b',')
                .map(|t| t.trim_ascii())
                .any(|t| t.eq_ignore_ascii_case(b"auth"));
            if !offered {
                return Err(SaslError::Unsupported(format!(
                    "qop {} (only auth is supported)",
                    String::from_utf8_lossy(v)
                )));
            }
        }
        let nonce = match once("nonce")? {
            Some(v) if !v.is_empty() => v.to_vec(),
            _ => return Err(SaslError::Malformed("no nonce directive".into())),
        };
        let realm = match directives.iter().find(|(n, _)| n == "realm") {
            None => None,
            Some((_, v)) if utf8 => Some(
                String::from_utf8(v.clone())
                    .map_err(|_| SaslError::Malformed("realm is not UTF-8".into()))?,
            ),
            // ISO 8859-1: each byte is the code point.
            Some((_, v)) => Some(v.iter().map(|&b| b as char).collect()),
        };
        Ok(Challenge { realm, nonce, utf8 })
    }
}

/// Splits `name=value, name="quoted value", ...` (RFC 2831 section 7.1's `#rule` with linear
/// white space around elements; empty elements allowed). Names are lowercased; quoted values
/// are unescaped (`\x` is `x`).
fn parse_directives(input: &[u8]) -> Result<Vec<(String, Vec<u8>)>, SaslError> {
    let malformed = |what: &str, at: usize| SaslError::Malformed(format!("{what} at byte {at}"));
    let is_lws = |b: u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    // RFC 2616 section 2.2: a token is CHARs other than CTLs and separators.
    let is_token = |b: u8| b > 0x20 && b < 0x7f && !b"()<>@,;:\\\"/[]?={}".contains(&b);
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < input.len() && (is_lws(input[i]) || input[i] == b',') {
            i += 1;
        }
        if i == input.len() {
            return Ok(out);
        }
        let start = i;
        while i < input.len() && is_token(input[i]) {
            i += 1;
        }
        if i == start {
            return Err(malformed("expected a directive name", i));
        }
        let name = String::from_utf8_lossy(&input[start..i]).to_ascii_lowercase();
        while i < input.len() && is_lws(input[i]) {
            i += 1;
        }
        if input.get(i) != Some(&b'=') {
            return Err(malformed("expected '='", i));
        }
        i += 1;
        while i < input.len() && is_lws(input[i]) {
            i += 1;
        }
        let mut value = Vec::new();
        if input.get(i) == Some(&b'"') {
            i += 1;
            loop {
                match input.get(i) {
                    None => return Err(malformed("unterminated quoted string", i)),
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') => match input.get(i + 1) {
                        None => return Err(malformed("unterminated quoted string", i)),
                        Some(&b) => {
                            value.push(b);
                            i += 2;
                        }
                    },
                    Some(&b) => {
                        value.push(b);
                        i += 1;
                    }
                }
            }
        } else {
            let start = i;
            while i < input.len() && is_token(input[i]) {
                i += 1;
            }
            if i == start {
                return Err(malformed("expected a value", i));
            }
            value.extend_from_slice(&input[start..i]);
        }
        while i < input.len() && is_lws(input[i]) {
            i += 1;
        }
        match input.get(i) {
            None | Some(b',') => {}
            Some(_) => return Err(malformed("expected ','", i)),
        }
        out.push((name, value));
    }
}

/// Checks the server's final token `rspauth=<32 hex digits>` against the expected value.
fn verify_rspauth(token: &[u8], expected: &str) -> Result<(), SaslError> {
    let directives = parse_directives(token)?;
    let mut found = directives.iter().filter(|(n, _)| n == "rspauth");
    let got = match (found.next(), found.next()) {
        (Some((_, v)), None) => v,
        (None, _) => return Err(SaslError::Malformed("no rspauth in the final token".into())),
        (Some(_), Some(_)) => {
            return Err(SaslError::Malformed("rspauth given twice".into()));
        }
    };
    // Constant time over the 32 digits: the comparison does not stop at the first difference.
    let got = got.to_ascii_lowercase();
    if got.len() != expected.len() {
        return Err(SaslError::BadServerProof);
    }
    let diff = got
        .iter()
        .zip(expected.as_bytes())
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    if diff != 0 {
        return Err(SaslError::BadServerProof);
    }
    Ok(())
}

/// Appends `"value"` with `"` and `\` escaped (RFC 2616 quoted-pair).
fn quoted(out: &mut Vec<u8>, v: &[u8]) {
    out.push(b'"');
    for &b in v {
        if b == b'"' || b == b'\\' {
            out.push(b'\\');
        }
        out.push(b);
    }
    out.push(b'"');
}

/// The ISO 8859-1 bytes of `s`, if every character fits.
fn latin1(s: &str) -> Option<Vec<u8>> {
    s.chars().map(|c| u8::try_from(u32::from(c)).ok()).collect()
}

fn md5(data: &[u8]) -> [u8; 16] {
    Md5::digest(data).into()
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// 128 bits from the OS, in hex (RFC 2831 asks for at least 64 bits of entropy).
fn random_cnonce() -> Result<String, SaslError> {
    let mut b = [0u8; 16];
    getrandom::getrandom(&mut b).map_err(|e| SaslError::Random(e.to_string()))?;
    Ok(hex(&b))
}

impl Connection {
    /// Sends one SASL token (op `sasl`, 102, as a `GetSASLRequest`) and returns the server's
    /// token from its `SetSASLResponse` (a null token reads as empty).
    pub async fn sasl_token(&self, token: &[u8]) -> Result<Vec<u8>, OpError> {
        let req = Request::Sasl(GetSASLRequest {
            token: token.to_vec(),
        });
        match self.call(&req).await?.result.map_err(OpError::Server)? {
            Response::Sasl(r) => Ok(r.token),
            _ => Err(OpError::Connection(Error::UnexpectedShape)),
        }
    }

    /// WhoAmI (op 107): the identities the server holds for this connection, e.g.
    /// `ip:127.0.0.1` and, after SASL, `sasl:<user>`.
    pub async fn who_am_i(&self) -> Result<Vec<ClientInfo>, OpError> {
        match self
            .call(&Request::WhoAmI)
            .await?
            .result
            .map_err(OpError::Server)?
        {
            Response::WhoAmI(r) => Ok(r.client_info),
            _ => Err(OpError::Connection(Error::UnexpectedShape)),
        }
    }
}

/// Authenticates `user` with DIGEST-MD5 over `conn`, right after its handshake and before
/// other requests (as `ClientCnxn` does): an empty token, the server's challenge, the
/// digest-response, the server's `rspauth`, verified here. On success the server holds the
/// identity `sasl:<user>` for this connection (see [`Connection::who_am_i`]); like any
/// connection-scoped auth it must be redone after a reconnect.
///
/// A wrong user name or password is [`SaslError::AuthFailed`] (the server then closes the
/// connection); a server without SASL is [`SaslError::NotOnServer`] (the connection stays
/// usable, unauthenticated). After [`SaslError::BadServerProof`] the server has accepted the
/// client but did not prove it knows the password: drop the connection.
pub async fn authenticate(conn: &Connection, user: &str, password: &str) -> Result<(), SaslError> {
    let mut mech = DigestMd5::new(user, password, ZK_DIGEST_URI);
    let challenge = conn.sasl_token(&[]).await?;
    if challenge.is_empty() {
        return Err(SaslError::NotOnServer);
    }
    let Step::Respond(response) = mech.step(&challenge)? else {
        return Err(SaslError::OutOfOrder("no response to the challenge"));
    };
    let rspauth = conn.sasl_token(&response).await?;
    match mech.step(&rspauth)? {
        Step::Done => Ok(()),
        Step::Respond(_) => Err(SaslError::OutOfOrder("a response after rspauth")),
    }
}

#[cfg(test)]
mod tests;
