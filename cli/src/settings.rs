//! The options in force for one run (those after the command win over those before it) and
//! the connect every networked command makes with them: the servers (flag, environment, else
//! the local server), the session, TLS, SASL and ACL settings.

use std::time::Duration;

use crate::args::{Cli, Connection, Holding, Secure};
use crate::server;
use crate::status::{self, Failure};

/// The options in force for one run: those after the command win over those before it.
#[derive(Debug, Clone)]
pub struct Settings {
    pub servers: Option<String>,
    pub connect_timeout: Duration,
    pub session_timeout: Duration,
    pub server_tick: Option<Duration>,
    pub timeout: Option<Duration>,
    pub identity: Option<String>,
    pub secure: Secure,
}

impl Settings {
    pub fn new(before: &Cli, connection: &Connection, holding: Option<&Holding>) -> Settings {
        let none = Holding::default();
        let holding = holding.unwrap_or(&none);
        Settings {
            servers: connection
                .servers
                .clone()
                .or_else(|| before.connection.servers.clone()),
            connect_timeout: connection
                .connect_timeout
                .or(before.connection.connect_timeout)
                .unwrap_or(Duration::from_secs(15)),
            session_timeout: holding
                .session_timeout
                .or(before.holding.session_timeout)
                .unwrap_or(Duration::from_secs(10)),
            server_tick: holding.server_tick.or(before.holding.server_tick),
            timeout: holding.timeout.or(before.holding.timeout).and_then(|t| t.0),
            identity: holding
                .identity
                .clone()
                .or_else(|| before.holding.identity.clone()),
            secure: connection.secure.or(&before.connection.secure),
        }
    }
}

// Not in `refuse_unused`: these come from the environment too (ZKLOCK_TLS_CA exported for the
// demo), and `zklock server ...` must not fail because of it.
impl Secure {
    /// After the command wins over before it, field by field.
    pub fn or(&self, before: &Secure) -> Secure {
        Secure {
            tls_ca: self.tls_ca.clone().or_else(|| before.tls_ca.clone()),
            tls_cert: self.tls_cert.clone().or_else(|| before.tls_cert.clone()),
            tls_key: self.tls_key.clone().or_else(|| before.tls_key.clone()),
            no_tls_verify_hostname: self.no_tls_verify_hostname || before.no_tls_verify_hostname,
            sasl_user: self.sasl_user.clone().or_else(|| before.sasl_user.clone()),
            sasl_password_file: self
                .sasl_password_file
                .clone()
                .or_else(|| before.sasl_password_file.clone()),
            acl: self.acl.clone().or_else(|| before.acl.clone()),
        }
    }

    /// The core's options from these flags and the environment; the core checks them.
    fn apply(&self, mut options: zklock::Options) -> Result<zklock::Options, Failure> {
        let password = match (
            &self.sasl_password_file,
            std::env::var("ZKLOCK_SASL_PASSWORD"),
        ) {
            (Some(file), _) => Some(
                std::fs::read_to_string(file)
                    .map_err(|e| {
                        Failure::new(
                            status::USAGE,
                            format!("--sasl-password-file {file}: cannot read it: {e}"),
                        )
                    })?
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_owned(),
            ),
            (None, Ok(p)) if !p.is_empty() => Some(p),
            _ => None,
        };
        let verify = match std::env::var("ZKLOCK_TLS_VERIFY_HOSTNAME").as_deref() {
            _ if self.no_tls_verify_hostname => Some(false),
            Ok("false" | "0" | "no") => Some(false),
            _ => None,
        };
        if let Ok(auth) = std::env::var("ZKLOCK_AUTH") {
            if !auth.is_empty() {
                options = options.auth(auth);
            }
        }
        if let Some(acl) = &self.acl {
            options = options.acl(acl.parse::<zklock::AclPolicy>()?);
        }
        Ok(zklock::SecureParts {
            tls_ca: self.tls_ca.clone(),
            tls_cert: self.tls_cert.clone(),
            tls_key: self.tls_key.clone(),
            tls_verify_hostname: verify.filter(|_| self.tls_ca.is_some()),
            sasl_user: self.sasl_user.clone(),
            sasl_password: password.filter(|_| self.sasl_user.is_some()),
        }
        .apply(options)?)
    }
}

/// The servers to talk to: --servers, $ZKLOCK_SERVERS, else the local server if it runs.
/// An empty --servers is an error (as an empty connect string is in every face), not a
/// request for the default.
pub fn servers(cli: &Settings) -> Result<String, Failure> {
    if let Some(s) = cli.servers.as_deref() {
        if s.trim().is_empty() {
            return Err(Failure::new(
                status::USAGE,
                "--servers is empty: give a connect string (host:port[,host:port...][/chroot]), or leave the option out to use $ZKLOCK_SERVERS or the local server",
            ));
        }
        return Ok(s.to_owned());
    }
    if let Ok(s) = std::env::var("ZKLOCK_SERVERS") {
        if !s.trim().is_empty() {
            return Ok(s);
        }
    }
    server::local_servers()
}

/// Connects with the command line's options; the lock path is checked first (no network).
pub async fn connect(cli: &Settings, path: &str) -> Result<zklock::Client, Failure> {
    connect_within(cli, path, cli.connect_timeout).await
}

/// `connect`, giving up after `limit` (at most the connect timeout; `exec --timeout` passes
/// its own when shorter).
pub async fn connect_within(
    cli: &Settings,
    path: &str,
    limit: Duration,
) -> Result<zklock::Client, Failure> {
    zklock::support::validate_path(path).map_err(Failure::from)?;
    open(cli, limit).await
}

/// `connect` for a walk of a subtree (`ls -r`), whose PATH may be `/`, the one path that is no
/// lock path: the core's walk checks it.
pub async fn connect_to_tree(cli: &Settings) -> Result<zklock::Client, Failure> {
    open(cli, cli.connect_timeout).await
}

async fn open(cli: &Settings, limit: Duration) -> Result<zklock::Client, Failure> {
    let servers = servers(cli)?;
    let mut options = zklock::Options::default()
        .session_timeout(cli.session_timeout)
        .connect_timeout(limit);
    if let Some(id) = &cli.identity {
        options = options.identity(id.clone());
    }
    options.server_tick = cli.server_tick;
    let options = cli.secure.apply(options)?;
    zklock::Client::connect(&servers, options)
        .await
        .map_err(Failure::from)
}

/// With `--lock-delay`, says on stderr when the acquire waits one out: without it, a command
/// that starts seconds late looked hung (issue 51). The core tells through its log record
/// `lock-delay` (the only record this sink prints); the sink runs on the core's callback
/// thread, while the acquire still waits.
pub fn announce_lock_delay(lock_delay: Option<std::time::Duration>) {
    if lock_delay.is_none() {
        return;
    }
    let sink: std::sync::Arc<dyn Fn(&zklock::support::LogRecord) + Send + Sync> =
        std::sync::Arc::new(|r| {
            if r.event == "lock-delay" {
                eprintln!("zklock: {}", crate::status::one_line(&r.message));
            }
        });
    zklock::support::set_log_sink(Some((zklock::support::LogLevel::Info, sink)));
}
