//! Client options and the checks that turn foreign numbers (seconds, milliseconds) into durations.

use std::sync::OnceLock;
use std::time::Duration;

use zklock_wire::jute::{perms, Acl, Id};

use crate::base::error::{Error, Result};

use crate::base::secure::{Pem, Sasl, Tls};

/// Who may touch the lock nodes we create.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AclPolicy {
    /// world:anyone may do anything (ZooKeeper's default, what Curator and kazoo use).
    #[default]
    Open,
    /// Only the authenticated creator (needs `auth`).
    CreatorAll,
    /// Anyone may read (see the queue), only the creator may change or delete.
    ReadAnyoneCreatorAll,
}

crate::base::names::names!(AclPolicy, "ACL policy" {
    Open => "open",
    CreatorAll => "creator-all",
    ReadAnyoneCreatorAll => "read-anyone-creator-all",
});

impl AclPolicy {
    pub(crate) fn acls(self) -> &'static [Acl] {
        static ACLS: OnceLock<[Vec<Acl>; 3]> = OnceLock::new();
        let [open, creator, read_creator] = ACLS.get_or_init(|| {
            [
                vec![acl(perms::ALL, "world", "anyone")],
                vec![acl(perms::ALL, "auth", "")],
                vec![
                    acl(perms::READ, "world", "anyone"),
                    acl(perms::ALL, "auth", ""),
                ],
            ]
        });
        match self {
            AclPolicy::Open => open,
            AclPolicy::CreatorAll => creator,
            AclPolicy::ReadAnyoneCreatorAll => read_creator,
        }
    }

    /// The ACL of the ancestors zklock creates above a lock path (`/locks` of `/locks/orders`):
    /// anyone may read and create (other users make their own lock paths beside ours), only the
    /// creator may change or delete. The lock path itself (the queue) gets `acls()`.
    pub(crate) fn ancestor_acls(self) -> &'static [Acl] {
        static ANCESTOR: OnceLock<Vec<Acl>> = OnceLock::new();
        match self {
            AclPolicy::Open => AclPolicy::Open.acls(),
            _ => ANCESTOR.get_or_init(|| {
                vec![
                    acl(perms::READ | perms::CREATE, "world", "anyone"),
                    acl(perms::ALL, "auth", ""),
                ]
            }),
        }
    }
}

/// An ACL entry (`ZooDefs.Ids`: `world:anyone` is everyone, `auth:` the creator's identities).
fn acl(perms: i32, scheme: &str, id: &str) -> Acl {
    Acl {
        perms,
        id: Id {
            scheme: scheme.into(),
            id: id.into(),
        },
    }
}

/// The longest session timeout the wire format holds (milliseconds in a signed 32-bit field).
pub const MAX_SESSION_TIMEOUT: Duration = Duration::from_millis(i32::MAX as u64);

/// How many lock paths get statistics of their own unless the options say otherwise
/// ([`Options::path_stats_limit`]).
pub const DEFAULT_PATH_STATS_LIMIT: usize = 1000;
/// The largest `path_stats_limit` accepted (a path's counters take about 200 bytes).
pub const MAX_PATH_STATS_LIMIT: usize = 1_000_000;

/// How a [`crate::Client`] connects. `Options::default()` suits most uses. Its `Debug` shows no
/// secret (passwords as `***`, PEM bytes by their length).
/// Non-exhaustive: a later release may add an option, so it is made with
/// `Options::default()` and its builder methods or fields, never as a struct literal.
#[derive(Clone)]
#[non_exhaustive]
pub struct Options {
    /// The session timeout asked of the server (it may clamp it). Default 10 s.
    pub session_timeout: Duration,
    /// How long `connect` keeps trying before it fails with `Connection`. Default 15 s.
    pub connect_timeout: Duration,
    /// Digest credentials `user:password`, added to the session.
    pub auth: Option<String>,
    /// ACL of the lock nodes (and lock parents) we create.
    pub acl: AclPolicy,
    /// Identity written into our lock nodes, shown by `participants()`.
    /// Default `host/pid`.
    pub identity: Option<String>,
    /// TLS to every server of the connect string (ZooKeeper's `secureClientPort`).
    pub tls: Option<Tls>,
    /// SASL DIGEST-MD5 credentials (the server's JAAS `Server` section).
    pub sasl: Option<Sasl>,
    /// The ensemble's `tickTime`. The lifeline gives a lease up one tick earlier than the
    /// session's own margin, and spaces its heartbeats by half a tick (docs/safety.md). The
    /// client learns the tick from the servers at connect ([`crate::Client::server_tick`]); this
    /// can raise it, never lower it. A session shorter than four ticks is refused at connect
    /// (`InvalidArgument`).
    pub server_tick: Option<Duration>,
    /// How many lock paths get statistics of their own ([`crate::Client::path_stats`]); the
    /// acquires on later paths are counted together in one overflow series. 0 turns per-path
    /// statistics off. Default [`DEFAULT_PATH_STATS_LIMIT`], at most [`MAX_PATH_STATS_LIMIT`].
    pub path_stats_limit: usize,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("session_timeout", &self.session_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("auth", &self.auth.as_deref().map(redact))
            .field("acl", &self.acl)
            .field("identity", &self.identity)
            .field("tls", &self.tls)
            .field("sasl", &self.sasl)
            .field("server_tick", &self.server_tick)
            .field("path_stats_limit", &self.path_stats_limit)
            .finish()
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            session_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(15),
            auth: None,
            acl: AclPolicy::Open,
            identity: None,
            tls: None,
            sasl: None,
            server_tick: None,
            path_stats_limit: DEFAULT_PATH_STATS_LIMIT,
        }
    }
}

impl Options {
    /// Sets [`Options::session_timeout`].
    pub fn session_timeout(mut self, d: Duration) -> Self {
        self.session_timeout = d;
        self
    }
    /// Sets [`Options::connect_timeout`].
    pub fn connect_timeout(mut self, d: Duration) -> Self {
        self.connect_timeout = d;
        self
    }
    /// Sets [`Options::auth`]: digest credentials `user:password`.
    pub fn auth(mut self, user_password: impl Into<String>) -> Self {
        self.auth = Some(user_password.into());
        self
    }
    /// Sets [`Options::acl`].
    pub fn acl(mut self, acl: AclPolicy) -> Self {
        self.acl = acl;
        self
    }
    /// Sets [`Options::identity`].
    pub fn identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = Some(identity.into());
        self
    }
    /// Sets [`Options::tls`].
    pub fn tls(mut self, tls: Tls) -> Self {
        self.tls = Some(tls);
        self
    }
    /// Sets [`Options::server_tick`]: the ensemble's `tickTime`.
    pub fn server_tick(mut self, tick: Duration) -> Self {
        self.server_tick = Some(tick);
        self
    }
    /// Sets [`Options::path_stats_limit`] (0 turns per-path statistics off).
    pub fn path_stats_limit(mut self, limit: usize) -> Self {
        self.path_stats_limit = limit;
        self
    }
    /// Sets [`Options::sasl`]: SASL DIGEST-MD5 credentials.
    pub fn sasl(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.sasl = Some(Sasl {
            user: user.into(),
            password: password.into(),
        });
        self
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.session_timeout < Duration::from_millis(100) {
            // In milliseconds, the unit of the bound and of most faces' options: Duration's
            // Debug would say "0ns" or "50ms", which no face's user wrote.
            return Err(Error::invalid(format!(
                "session timeout {} ms is too short (at least 100 ms)",
                millis_text(self.session_timeout)
            )));
        }
        if self.session_timeout > MAX_SESSION_TIMEOUT {
            // The server clamps what it is asked to its maxSessionTimeout (20 ticks by
            // default); Client::session_timeout() says what it granted.
            return Err(Error::invalid(format!(
                "session timeout of {} is too long (ZooKeeper's connect request holds at most {} s)",
                crate::base::text::duration(self.session_timeout),
                MAX_SESSION_TIMEOUT.as_secs()
            )));
        }
        if let Some(tick) = self.server_tick {
            if tick < Duration::from_millis(1) || tick > MAX_SESSION_TIMEOUT {
                return Err(Error::invalid(format!(
                    "server tick {tick:?} is out of range (1 ms to {} s)",
                    MAX_SESSION_TIMEOUT.as_secs()
                )));
            }
        }
        if self.path_stats_limit > MAX_PATH_STATS_LIMIT {
            return Err(Error::invalid(format!(
                "path_stats_limit {} is too large (at most {MAX_PATH_STATS_LIMIT}; 0 turns \
                 per-path statistics off)",
                self.path_stats_limit
            )));
        }
        if self.connect_timeout.is_zero() {
            return Err(Error::invalid("connect timeout must be positive"));
        }
        if let Some(auth) = &self.auth {
            if !auth.contains(':') || auth.starts_with(':') {
                return Err(Error::invalid(format!(
                    "auth {:?} must look like user:password",
                    redact(auth)
                )));
            }
        }
        if let Some(sasl) = &self.sasl {
            crate::base::secure::validate_sasl(sasl)?;
        }
        if self.acl != AclPolicy::Open && self.auth.is_none() && self.sasl.is_none() {
            return Err(Error::invalid(format!(
                "ACL policy {:?} needs auth (user:password) or a SASL user",
                self.acl
            )));
        }
        if let Some(identity) = &self.identity {
            if identity.len() > 1024 {
                return Err(Error::invalid(format!(
                    "identity is {} bytes long (at most 1024)",
                    identity.len()
                )));
            }
        }
        Ok(())
    }

    pub(crate) fn identity_bytes(&self) -> Vec<u8> {
        match &self.identity {
            Some(id) => id.clone().into_bytes(),
            None => default_identity().into_bytes(),
        }
    }
}

fn redact(auth: &str) -> String {
    match auth.split_once(':') {
        Some((user, _)) => format!("{user}:***"),
        None => "***".into(),
    }
}

/// `host/pid` of this process.
pub fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into());
    format!("{host}/{}", std::process::id())
}

/// `user@host pid N` of this process: who breaks a lock, for the break's audit record (issue
/// 51: the record named the broken holder but not the operator). The user is `$USER` (else
/// `$LOGNAME`, else `?`): the record is for people, not for access control.
pub fn operator_identity() -> String {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "?".into());
    format!("{user}@{}", default_identity().replacen('/', " pid ", 1))
}

/// Seconds from a foreign face (Python floats) to a duration. `None` for "no deadline" is the
/// caller's business; here negative, NaN and infinite values are `InvalidArgument`.
pub fn duration_from_secs_f64(secs: f64, what: &str) -> Result<Duration> {
    if !secs.is_finite() || secs < 0.0 {
        return Err(Error::invalid(format!(
            "{what} must be a non-negative number of seconds, got {}",
            crate::base::text::number(secs)
        )));
    }
    Duration::try_from_secs_f64(secs).map_err(|_| {
        Error::invalid(format!(
            "{what} of {} seconds is out of range",
            crate::base::text::number(secs)
        ))
    })
}

/// Milliseconds as a number from a foreign face (Node) to a duration; negative, NaN and
/// infinite values are `InvalidArgument`.
pub fn duration_from_millis_f64(ms: f64, what: &str) -> Result<Duration> {
    if !ms.is_finite() || ms < 0.0 {
        return Err(Error::invalid(format!(
            "{what} must be a non-negative number of milliseconds, got {}",
            crate::base::text::number(ms)
        )));
    }
    Duration::try_from_secs_f64(ms / 1000.0).map_err(|_| {
        Error::invalid(format!(
            "{what} of {} milliseconds is out of range",
            crate::base::text::number(ms)
        ))
    })
}

/// A maximum hold or a hold ceiling as the recipes take it (`what`: its name; `unset`: what
/// leaving it unset means): longer than zero, and short enough that the clocks can hold its end
/// (twice over, for the time that passes before an acquire counts it and for extensions): a
/// longer one is no limit, and would overflow `Instant` when the lease converts its end.
pub(crate) fn check_hold_limit(limit: Option<Duration>, what: &str, unset: &str) -> Result<()> {
    let Some(limit) = limit else { return Ok(()) };
    if limit.is_zero() {
        return Err(Error::invalid(format!(
            "{what} must be longer than zero (leave it unset for {unset})"
        )));
    }
    let end = limit
        .checked_mul(2)
        .and_then(|twice| std::time::Instant::now().checked_add(twice));
    if end.is_none() {
        return Err(Error::invalid(format!(
            "{what} of {} s is beyond what the clock holds (leave it unset for {unset})",
            limit.as_secs()
        )));
    }
    Ok(())
}

/// A face's maximum hold (`max_hold`) in seconds (Python): absent is no limit; negative, NaN
/// and infinite are `InvalidArgument` here, zero where it is set ([`crate::Lock::max_hold`]).
pub fn max_hold_from_secs(secs: Option<f64>) -> Result<Option<Duration>> {
    secs.map(|s| duration_from_secs_f64(s, "max_hold"))
        .transpose()
}

/// [`max_hold_from_secs`] for milliseconds given as a number (Node's `maxHoldMs`).
pub fn max_hold_from_millis(ms: Option<f64>) -> Result<Option<Duration>> {
    ms.map(|m| duration_from_millis_f64(m, "max_hold"))
        .transpose()
}

/// [`max_hold_from_secs`] for C's `int64_t` milliseconds, where -1 is no limit (as -1 is
/// "forever" for every zklock timeout).
pub fn max_hold_from_millis_i64(ms: i64) -> Result<Option<Duration>> {
    if ms == -1 {
        return Ok(None);
    }
    duration_from_millis_i64(ms, "max_hold").map(Some)
}

/// A face's lock-delay (`lock_delay`) in seconds (Python): absent is none; negative, NaN and
/// infinite are `InvalidArgument` here, zero where it is set ([`crate::Lock::lock_delay`]).
pub fn lock_delay_from_secs(secs: Option<f64>) -> Result<Option<Duration>> {
    secs.map(|s| duration_from_secs_f64(s, "lock_delay"))
        .transpose()
}

/// [`lock_delay_from_secs`] for milliseconds given as a number (Node's `lockDelayMs`).
pub fn lock_delay_from_millis(ms: Option<f64>) -> Result<Option<Duration>> {
    ms.map(|m| duration_from_millis_f64(m, "lock_delay"))
        .transpose()
}

/// [`lock_delay_from_secs`] for C's `int64_t` milliseconds, where -1 is none.
pub fn lock_delay_from_millis_i64(ms: i64) -> Result<Option<Duration>> {
    if ms == -1 {
        return Ok(None);
    }
    duration_from_millis_i64(ms, "lock_delay").map(Some)
}

/// Milliseconds from a foreign face (Node, C) to a duration; negative is `InvalidArgument`.
pub fn duration_from_millis_i64(ms: i64, what: &str) -> Result<Duration> {
    if ms < 0 {
        return Err(Error::invalid(format!(
            "{what} must be a non-negative number of milliseconds, got {ms}"
        )));
    }
    Ok(Duration::from_millis(ms as u64))
}

/// The secure options as every face spells them (Python `tls_ca`, Node `tlsCa`, C `tls_ca`,
/// CLI `--tls-ca`): PEM file paths or PEM text ([`Pem::from_option`]) and a flag, checked once
/// here by [`SecureParts::apply`].
#[derive(Default, Clone)]
pub struct SecureParts {
    /// The CA certificates that sign the servers' certificates (PEM file path or text).
    pub tls_ca: Option<String>,
    /// The client's own certificate, for servers that ask for one (PEM).
    pub tls_cert: Option<String>,
    /// The private key of `tls_cert` (PEM).
    pub tls_key: Option<String>,
    /// Whether a server's certificate must name the host dialled (default on).
    pub tls_verify_hostname: Option<bool>,
    /// The SASL DIGEST-MD5 user; needs `sasl_password`.
    pub sasl_user: Option<String>,
    /// The SASL DIGEST-MD5 password; needs `sasl_user`.
    pub sasl_password: Option<String>,
}

impl SecureParts {
    /// Adds the parts to `options`: `InvalidArgument` for a combination that cannot work.
    pub fn apply(self, mut options: Options) -> Result<Options> {
        let file = Pem::from_option;
        match self.tls_ca {
            Some(ca) => {
                if self.tls_cert.is_some() != self.tls_key.is_some() {
                    return Err(Error::invalid(
                        "tls_cert and tls_key go together (a client certificate needs its key)",
                    ));
                }
                options.tls = Some(Tls {
                    ca: file(ca),
                    cert: self.tls_cert.map(file),
                    key: self.tls_key.map(file),
                    verify_hostname: self.tls_verify_hostname.unwrap_or(true),
                });
            }
            None if self.tls_cert.is_some()
                || self.tls_key.is_some()
                || self.tls_verify_hostname.is_some() =>
            {
                return Err(Error::invalid(
                    "tls_cert, tls_key and tls_verify_hostname need tls_ca (the CA that signed the servers' certificates)",
                ));
            }
            None => {}
        }
        match (self.sasl_user, self.sasl_password) {
            (Some(user), Some(password)) => options.sasl = Some(Sasl { user, password }),
            (None, None) => {}
            (Some(_), None) => {
                return Err(Error::invalid(
                    "sasl_user needs sasl_password (the CLI reads it from ZKLOCK_SASL_PASSWORD or --sasl-password-file)",
                ))
            }
            (None, Some(_)) => return Err(Error::invalid("sasl_password needs sasl_user")),
        }
        Ok(options)
    }
}

/// A duration in milliseconds as a person writes it: "0", "50", "99.5", "0.001" (to the µs).
fn millis_text(d: Duration) -> String {
    let micros = d.as_micros();
    let (whole, frac) = (micros / 1000, micros % 1000);
    if frac == 0 {
        whole.to_string()
    } else {
        format!("{whole}.{frac:03}")
            .trim_end_matches('0')
            .to_string()
    }
}

/// A face's `path_stats_limit` given as a signed number (Node, C): negative is
/// `InvalidArgument` here, too large where the options are checked.
pub fn path_stats_limit_from_i64(limit: i64) -> Result<usize> {
    usize::try_from(limit).map_err(|_| {
        Error::invalid(format!(
            "path_stats_limit must be a non-negative number of paths, got {limit}"
        ))
    })
}

/// [`path_stats_limit_from_i64`] for a number (Node): NaN, infinite, negative and fractional
/// are `InvalidArgument`; one past what a count holds is pinned, for the options' check.
pub fn path_stats_limit_from_f64(limit: f64) -> Result<usize> {
    if !limit.is_finite() || limit < 0.0 || limit.fract() != 0.0 {
        return Err(Error::invalid(format!(
            "path_stats_limit must be a non-negative whole number of paths, got {}",
            crate::base::text::number(limit)
        )));
    }
    Ok(if limit >= usize::MAX as f64 {
        usize::MAX
    } else {
        limit as usize
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn a_too_short_session_timeout_is_told_in_milliseconds() {
        // Issue 27, item 14: was "session timeout 0ns is too short".
        for (given, shown) in [
            (Duration::ZERO, "session timeout 0 ms is too short"),
            (
                Duration::from_millis(50),
                "session timeout 50 ms is too short",
            ),
            (
                Duration::from_micros(99_500),
                "session timeout 99.5 ms is too short",
            ),
            (
                Duration::from_nanos(1_500),
                "session timeout 0.001 ms is too short",
            ),
        ] {
            let e = Options::default()
                .session_timeout(given)
                .validate()
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            assert!(e.message().starts_with(shown), "{given:?}: {e}");
        }
    }

    #[test]
    fn secure_parts_are_checked_once() {
        let o = || Options::default();
        let e = SecureParts {
            tls_cert: Some("c.pem".into()),
            ..Default::default()
        }
        .apply(o())
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains("need tls_ca"), "{e}");
        let e = SecureParts {
            tls_ca: Some("ca.pem".into()),
            tls_key: Some("k.pem".into()),
            ..Default::default()
        }
        .apply(o())
        .unwrap_err();
        assert!(e.message().contains("go together"), "{e}");
        let e = SecureParts {
            sasl_user: Some("alice".into()),
            ..Default::default()
        }
        .apply(o())
        .unwrap_err();
        assert!(e.message().contains("needs sasl_password"), "{e}");
        let ok = SecureParts {
            tls_ca: Some("ca.pem".into()),
            sasl_user: Some("alice".into()),
            sasl_password: Some("pw-not-shown".into()),
            ..Default::default()
        }
        .apply(o())
        .unwrap();
        assert!(ok.tls.as_ref().unwrap().verify_hostname);
        assert!(!format!("{ok:?}").contains("pw-not-shown"), "{ok:?}");
    }

    #[test]
    fn foreign_durations_are_checked() {
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            let e = duration_from_secs_f64(bad, "timeout").unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            assert!(e.message().contains("timeout"), "{e}");
        }
        assert_eq!(
            duration_from_secs_f64(0.25, "t").unwrap(),
            Duration::from_millis(250)
        );
        assert_eq!(
            duration_from_millis_i64(-5, "timeoutMs")
                .unwrap_err()
                .kind(),
            ErrorKind::InvalidArgument
        );
    }

    #[test]
    fn options_are_checked() {
        assert!(Options::default().validate().is_ok());
        let e = Options::default()
            .auth("nopassword")
            .validate()
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        let e = Options::default()
            .acl(AclPolicy::CreatorAll)
            .validate()
            .unwrap_err();
        assert!(e.message().contains("needs auth"), "{e}");
        let e = Options::default()
            .session_timeout(Duration::from_millis(1))
            .validate()
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    }

    #[test]
    fn a_session_timeout_beyond_the_wire_format_is_refused_not_wrapped() {
        let e = Options::default()
            .session_timeout(Duration::from_millis(i32::MAX as u64 + 400))
            .validate()
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains("too long"), "{e}");
        assert!(Options::default()
            .session_timeout(MAX_SESSION_TIMEOUT)
            .validate()
            .is_ok());
    }

    #[test]
    fn a_huge_duration_is_named_briefly() {
        let e = duration_from_secs_f64(1e300, "timeout").unwrap_err();
        assert!(e.message().len() < 80, "{e}");
        assert!(e.message().contains("1e300"), "{e}");
    }

    #[test]
    fn a_path_stats_limit_from_a_face_is_a_whole_non_negative_number() {
        assert_eq!(path_stats_limit_from_i64(7).unwrap(), 7);
        assert!(path_stats_limit_from_i64(-1).is_err());
        assert_eq!(path_stats_limit_from_f64(0.0).unwrap(), 0);
        for bad in [-1.0, 1.5, f64::NAN, f64::INFINITY] {
            assert!(path_stats_limit_from_f64(bad).is_err(), "{bad}");
        }
        let huge = path_stats_limit_from_f64(1e30).unwrap();
        let err = Options::default()
            .path_stats_limit(huge)
            .validate()
            .unwrap_err();
        assert!(err.message().contains("path_stats_limit"), "{err}");
    }
}
