//! Secure ZooKeeper: TLS and SASL options, the one place that checks and loads them, and the
//! diagnosis that turns a failed handshake into a message saying which (wrong CA, wrong host,
//! expired certificate, a plaintext client on a TLS port).
//!
//! A connect that no host took is retried until the connect timeout (a server may be starting);
//! retrying a certificate or protocol mismatch would hide a configuration error behind a 15 s
//! wait. So after a failed connect we shake hands once ourselves with the same certificates and,
//! when the answer is definitive, fail at once with `Connection` and the reason in words.

use std::io::ErrorKind as IoKind;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use zklock_wire::client as zk;

use crate::base::error::{Error, Result};

/// PEM text: a file (read when connecting) or the bytes themselves.
#[derive(Clone, PartialEq, Eq)]
pub enum Pem {
    /// A PEM file, read when connecting.
    File(PathBuf),
    /// PEM text itself.
    Bytes(Vec<u8>),
}

/// Shows the file, never the bytes (a key is a secret), nor a "path" that looks like key
/// material.
impl std::fmt::Debug for Pem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pem::File(p) if looks_like_key_material(&p.to_string_lossy()) => {
                write!(f, "File(<not shown: it looks like key material>)")
            }
            Pem::File(p) => write!(f, "File({:?})", p),
            Pem::Bytes(b) => write!(f, "Bytes(<{} bytes>)", b.len()),
        }
    }
}

impl Pem {
    /// A TLS option as every face takes it (Python `tls_key`, Node `tlsKey`, C `tls_key`, CLI
    /// `--tls-key` and `ZKLOCK_TLS_KEY`): PEM text itself when it holds a PEM boundary
    /// (`-----BEGIN `), as Node's `tls.connect` takes `ca`, `cert` and `key`; otherwise the path
    /// of a PEM file. A value that is neither never shows in a message when it looks like key
    /// material (issue 27, point 5: a key given as content was quoted as a missing file).
    pub fn from_option(value: String) -> Pem {
        if value.contains("-----BEGIN ") {
            Pem::Bytes(value.into_bytes())
        } else {
            Pem::File(PathBuf::from(value))
        }
    }

    fn load(&self, what: &str) -> Result<Vec<u8>> {
        match self {
            Pem::Bytes(b) => Ok(b.clone()),
            Pem::File(path) => std::fs::read(path).map_err(|e| {
                Error::invalid(format!(
                    "{what}: cannot read {}: {e}",
                    shown_path(&path.to_string_lossy())
                ))
            }),
        }
    }

    fn describe(&self, what: &str) -> String {
        match self {
            Pem::File(p) => format!("{what} {}", shown_path(&p.to_string_lossy())),
            Pem::Bytes(_) => format!("{what} (given as PEM content)"),
        }
    }
}

/// A PEM file's path as a message quotes it: not at all when it looks like key material.
fn shown_path(path: &str) -> String {
    if looks_like_key_material(path) {
        "the file named (its name looks like key material: not shown)".into()
    } else {
        crate::base::protocol::shown(path)
    }
}

/// Whether a value given as a file path looks like key material rather than a path: a PEM
/// boundary or label, a line break, or a run of 20 or more base64 characters that mixes upper
/// case, lower case and digits (a PEM body without its boundaries; file names rarely do, and a
/// path that does is only not quoted). The CLI asks it of the arguments a usage error quotes.
pub fn looks_like_key_material(value: &str) -> bool {
    if value.contains("-----") || value.contains("PRIVATE KEY") || value.contains(['\n', '\r']) {
        return true;
    }
    let base64 = |c: char| c.is_ascii_alphanumeric() || c == '+' || c == '/' || c == '=';
    value.split(|c: char| !base64(c)).any(|run| {
        run.len() >= 20
            && run.chars().any(|c| c.is_ascii_uppercase())
            && run.chars().any(|c| c.is_ascii_lowercase())
            && run.chars().any(|c| c.is_ascii_digit())
    })
}

/// TLS to every server of the connect string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    /// The CA certificate(s) the servers' certificates must chain to.
    pub ca: Pem,
    /// Our certificate, for servers that ask for one (`ssl.clientAuth`); needs `key`.
    pub cert: Option<Pem>,
    /// The private key of `cert`.
    pub key: Option<Pem>,
    /// Whether a server's certificate must name the host we dialled. On unless turned off.
    pub verify_hostname: bool,
}

impl Tls {
    /// TLS trusting the certificates of `ca`, with no client certificate and the host name checked.
    pub fn new(ca: Pem) -> Tls {
        Tls {
            ca,
            cert: None,
            key: None,
            verify_hostname: true,
        }
    }
}

/// SASL DIGEST-MD5 credentials. GSSAPI (Kerberos) is not offered: zklock-wire speaks
/// DIGEST-MD5 only (a GSSAPI client needs the system's Kerberos libraries).
#[derive(Clone, PartialEq, Eq)]
pub struct Sasl {
    /// The SASL user name.
    pub user: String,
    /// The user's password (never shown: `Debug` redacts it).
    pub password: String,
}

impl std::fmt::Debug for Sasl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sasl")
            .field("user", &self.user)
            .field("password", &"***")
            .finish()
    }
}

pub(crate) fn validate_sasl(sasl: &Sasl) -> Result<()> {
    if sasl.user.is_empty() || sasl.user.len() > 1024 || sasl.user.chars().any(char::is_control) {
        return Err(Error::invalid(
            "sasl_user must be 1 to 1024 characters without control characters",
        ));
    }
    if sasl.password.is_empty() {
        return Err(Error::invalid("sasl_password is empty"));
    }
    Ok(())
}

/// What a TLS connect needs, loaded once per connect: the transport's configuration (hostname
/// rule included) and the handshake configuration of the diagnosis (which always checks the
/// name, to say when it is the name that fails).
pub(crate) struct LoadedTls {
    transport: Arc<rustls::ClientConfig>,
    probe: Arc<rustls::ClientConfig>,
    verify_hostname: bool,
}

impl LoadedTls {
    /// How the transport speaks TLS to a host of the connect string.
    pub(crate) fn connector(&self) -> zk::Secure {
        let config = self.transport.clone();
        Arc::new(move |host: &str| {
            let server_name = zklock_wire::tls::server_name(host)
                .map_err(|e| zklock_wire::Error::Tls(rustls::Error::General(e.to_string())))?;
            Ok(zklock_wire::TlsConnect {
                config: config.clone(),
                server_name,
            })
        })
    }
}

/// The crypto provider of zklock's TLS configurations, named by zklock's cargo feature: `ring`
/// (the default) or `aws-lc-rs`. With neither, the process-level default the application
/// installed (`CryptoProvider::install_default`). Never installed by zklock: the process's
/// default is the application's to choose, and rustls' `install_default` succeeds only once.
pub(crate) fn provider() -> Result<Arc<rustls::crypto::CryptoProvider>> {
    #[cfg(feature = "ring")]
    return Ok(Arc::new(rustls::crypto::ring::default_provider()));
    #[cfg(all(feature = "aws-lc-rs", not(feature = "ring")))]
    return Ok(Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
    #[cfg(not(any(feature = "ring", feature = "aws-lc-rs")))]
    rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .ok_or_else(|| {
            Error::invalid(
                "TLS needs a rustls crypto provider: build zklock with its `ring` or `aws-lc-rs` \
                 feature, or install the process's default (CryptoProvider::install_default) \
                 before connecting",
            )
        })
}

/// Reads and parses the PEM files: `InvalidArgument` naming the file (never its content).
pub(crate) fn load(tls: &Tls) -> Result<LoadedTls> {
    if tls.cert.is_some() != tls.key.is_some() {
        return Err(Error::invalid(
            "tls_cert and tls_key go together (a client certificate needs its key)",
        ));
    }
    let ca = tls.ca.load("tls_ca")?;
    let bad = |what: String| Error::invalid(what);
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&ca) {
        let cert = cert.map_err(|_| bad(format!("{} is not PEM", tls.ca.describe("tls_ca"))))?;
        roots.add(cert).map_err(|e| {
            bad(format!(
                "{} holds a certificate that cannot be a CA: {e}",
                tls.ca.describe("tls_ca")
            ))
        })?;
    }
    if roots.is_empty() {
        return Err(bad(format!(
            "{} holds no PEM certificate",
            tls.ca.describe("tls_ca")
        )));
    }
    let provider = provider()?;
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(format!("TLS setup: {e}")))?
        .with_root_certificates(roots);
    let mut identity = None;
    let probe = match (&tls.cert, &tls.key) {
        (Some(cert_pem), Some(key_pem)) => {
            let cert = cert_pem.load("tls_cert")?;
            let key = key_pem.load("tls_key")?;
            let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert)
                .collect::<std::result::Result<_, _>>()
                .map_err(|_| bad(format!("{} is not PEM", cert_pem.describe("tls_cert"))))?;
            if chain.is_empty() {
                return Err(bad(format!(
                    "{} holds no PEM certificate",
                    cert_pem.describe("tls_cert")
                )));
            }
            // The key's parse error is not quoted: it could echo a piece of the key.
            let private = PrivateKeyDer::from_pem_slice(&key).map_err(|_| {
                bad(format!(
                    "{} holds no PEM private key",
                    key_pem.describe("tls_key")
                ))
            })?;
            let probe = builder.with_client_auth_cert(chain, private).map_err(|_| {
                bad(format!(
                    "{} does not match {}",
                    key_pem.describe("tls_key"),
                    cert_pem.describe("tls_cert")
                ))
            })?;
            identity = Some((cert, key));
            probe
        }
        _ => builder.with_no_client_auth(),
    };
    // The same CA and identity, already checked above; the transport's own hostname rule.
    let transport = zklock_wire::tls::client_config_with_provider(
        provider,
        &ca,
        identity.as_ref().map(|(c, k)| (c.as_slice(), k.as_slice())),
        tls.verify_hostname,
    )
    .map_err(|e| bad(format!("TLS setup: {e}")))?;
    Ok(LoadedTls {
        transport,
        probe: Arc::new(probe),
        verify_hostname: tls.verify_hostname,
    })
}

/// Every host of a TLS connect string must be a name or address a certificate can hold (the
/// transport would panic on one that is not).
pub(crate) fn check_tls_hosts(hosts: &str) -> Result<()> {
    let list = hosts.split('/').next().unwrap_or_default();
    for entry in list.split(',') {
        let Some((host, _)) = first_host(entry) else {
            continue;
        };
        if ServerName::try_from(host.clone()).is_err() {
            return Err(Error::invalid(format!(
                "{} is not a host name or IP address a TLS certificate can name",
                crate::base::protocol::shown(&host)
            )));
        }
    }
    Ok(())
}

/// After a failed connect: why, when a handshake of our own tells definitively (a certificate
/// problem, or a TLS server answering a plaintext client). `None` when it cannot tell (the
/// server is down or silent): then connecting goes on until the connect timeout.
pub(crate) async fn diagnose(hosts: &str, tls: Option<&LoadedTls>) -> Option<String> {
    let (host, port) = first_host(hosts)?;
    let (config, verify_hostname, plain) = match tls {
        Some(t) => (t.probe.clone(), t.verify_hostname, false),
        None => (saw_certificate_config()?, true, true),
    };
    let probe = tokio::task::spawn_blocking(move || handshake(&host, port, config));
    let outcome = tokio::time::timeout(PROBE_LIMIT + Duration::from_millis(500), probe)
        .await
        .ok()?
        .ok()?;
    let host_port = first_host(hosts).map(|(h, p)| format!("{h}:{p}"))?;
    match outcome {
        Probe::Certificate(why) if plain => {
            let _ = why;
            Some(format!(
                "{host_port} speaks TLS on this port and this client does not (give the CA: tls_ca, --tls-ca, ZKLOCK_TLS_CA)"
            ))
        }
        Probe::Certificate(why) => certificate_reason(&why, verify_hostname, &host_port),
        Probe::NotTls if !plain => Some(format!(
            "{host_port} does not speak TLS on this port (a plaintext port? leave tls_ca out, or use the server's secureClientPort)"
        )),
        Probe::Alert(alert) if !plain => Some(format!(
            "{host_port} refused our TLS handshake ({alert}); does it require a client certificate (tls_cert, tls_key)?"
        )),
        _ => None,
    }
}

/// How long the diagnosing handshake waits for each step. A JVM's TLS handshake took more than
/// a second on a loaded 2-core machine (`make test` beside `stress-ng --cpu 2`: the probe gave
/// up and `a_plaintext_client_on_the_tls_port_fails_fast_saying_the_port_speaks_tls` got the
/// bare "connection closed" after the whole connect timeout); the probe runs once, after a
/// failed connect, within the connect's deadline.
const PROBE_LIMIT: Duration = Duration::from_secs(3);

enum Probe {
    Certificate(rustls::CertificateError),
    Alert(String),
    NotTls,
    Unknown,
}

fn handshake(host: &str, port: u16, config: Arc<rustls::ClientConfig>) -> Probe {
    let Some(addr) = (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
    else {
        return Probe::Unknown;
    };
    let Ok(mut sock) = TcpStream::connect_timeout(&addr, PROBE_LIMIT) else {
        return Probe::Unknown;
    };
    sock.set_read_timeout(Some(PROBE_LIMIT)).ok();
    sock.set_write_timeout(Some(PROBE_LIMIT)).ok();
    let Ok(name) = ServerName::try_from(host.to_owned()) else {
        return Probe::Unknown;
    };
    let Ok(mut conn) = rustls::ClientConnection::new(config, name) else {
        return Probe::Unknown;
    };
    while conn.is_handshaking() {
        if let Err(e) = conn.complete_io(&mut sock) {
            let tls = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
            return match tls {
                Some(rustls::Error::InvalidCertificate(c)) => Probe::Certificate(c.clone()),
                Some(rustls::Error::General(g)) if g == SAW_CERTIFICATE => {
                    Probe::Certificate(rustls::CertificateError::UnknownIssuer)
                }
                Some(rustls::Error::AlertReceived(a)) => Probe::Alert(format!("{a:?}")),
                Some(rustls::Error::InvalidMessage(_)) => Probe::NotTls,
                _ if e.kind() == IoKind::UnexpectedEof => Probe::NotTls,
                _ => Probe::Unknown,
            };
        }
    }
    Probe::Unknown
}

fn certificate_reason(
    why: &rustls::CertificateError,
    verify_hostname: bool,
    host_port: &str,
) -> Option<String> {
    use rustls::CertificateError as C;
    Some(match why {
        C::UnknownIssuer | C::BadSignature => format!(
            "the certificate of {host_port} is not signed by the CA given (tls_ca): wrong CA"
        ),
        C::NotValidForName | C::NotValidForNameContext { .. } if verify_hostname => format!(
            "the certificate of {host_port} is not valid for that host name: wrong host (connect by a name the certificate holds, or turn tls_verify_hostname off)"
        ),
        C::NotValidForName | C::NotValidForNameContext { .. } => return None,
        C::Expired | C::ExpiredContext { .. } => {
            format!("the certificate of {host_port} has expired")
        }
        C::NotValidYet | C::NotValidYetContext { .. } => {
            format!("the certificate of {host_port} is not valid yet")
        }
        C::Revoked => format!("the certificate of {host_port} is revoked"),
        other => format!("the certificate of {host_port} was refused: {other:?}"),
    })
}

/// host and port of the first server of a connect string (2181 when none is given).
fn first_host(hosts: &str) -> Option<(String, u16)> {
    let list = hosts.split('/').next()?;
    let entry = list.split(',').next()?.trim();
    let entry = entry
        .strip_prefix("tcp+tls://")
        .or_else(|| entry.strip_prefix("tcp://"))
        .unwrap_or(entry);
    let (host, port) = match entry.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') || h.starts_with('[') => (h, p.parse().ok()?),
        _ => (entry, 2181),
    };
    Some((
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned(),
        port,
    ))
}

const SAW_CERTIFICATE: &str = "zklock probe: the server sent a certificate";

/// A handshake that stops at the server's certificate: proof that the port speaks TLS.
fn saw_certificate_config() -> Option<Arc<rustls::ClientConfig>> {
    static CONFIG: std::sync::OnceLock<Arc<rustls::ClientConfig>> = std::sync::OnceLock::new();
    // Without zklock's provider feature the process's default may be installed later: nothing
    // is cached until there is a provider.
    let provider = provider().ok()?;
    Some(
        CONFIG
            .get_or_init(|| {
                let builder = rustls::ClientConfig::builder_with_provider(provider)
                    .with_safe_default_protocol_versions()
                    .expect("rustls' providers support its default protocol versions");
                let schemes = builder
                    .crypto_provider()
                    .signature_verification_algorithms
                    .supported_schemes();
                Arc::new(
                    builder
                        .dangerous()
                        .with_custom_certificate_verifier(Arc::new(SawCertificate(schemes)))
                        .with_no_client_auth(),
                )
            })
            .clone(),
    )
}

#[derive(Debug)]
struct SawCertificate(Vec<rustls::SignatureScheme>);

impl rustls::client::danger::ServerCertVerifier for SawCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> std::result::Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Err(rustls::Error::General(SAW_CERTIFICATE.into()))
    }

    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::General(SAW_CERTIFICATE.into()))
    }

    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::General(SAW_CERTIFICATE.into()))
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn a_missing_ca_file_is_named() {
        let e = match load(&Tls::new(Pem::File("/nonexistent/ca.pem".into()))) {
            Err(e) => e,
            Ok(_) => panic!("a missing CA file loaded"),
        };
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains("/nonexistent/ca.pem"), "{e}");
    }

    /// A private key for these tests only, made up: never a real one.
    const MADE_UP_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIFpLbG9ja0NvbmZvcm1hbmNlT25seU5vdEFLZXkx\n-----END PRIVATE KEY-----\n";

    #[test]
    fn pem_text_is_content_and_a_path_that_looks_like_a_key_is_never_quoted() {
        assert_eq!(
            Pem::from_option(MADE_UP_KEY.into()),
            Pem::Bytes(MADE_UP_KEY.as_bytes().to_vec())
        );
        assert_eq!(
            Pem::from_option("/etc/zk/ca.pem".into()),
            Pem::File("/etc/zk/ca.pem".into())
        );
        let body = "MC4CAQAwBQYDK2VwBCIEIFpLbG9ja0NvbmZvcm1hbmNlT25seU5vdEFLZXkx";
        for value in [MADE_UP_KEY, body, &MADE_UP_KEY[..40]] {
            let tls = Tls::new(Pem::File(value.into()));
            let e = load(&tls).err().expect("no such file");
            let shown = format!("{e} {e:?} {tls:?}");
            assert!(!shown.contains(&body[..12]), "{shown}");
        }
        // A key given as content where the CA belongs: the error names the option, not the key.
        let e = load(&Tls::new(Pem::from_option(MADE_UP_KEY.into())))
            .err()
            .unwrap();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(
            e.message()
                .contains("tls_ca (given as PEM content) holds no PEM certificate"),
            "{e}"
        );
        for path in [
            "/etc/zookeeper/ssl/client-key.pem",
            "certs/zk_ca.crt",
            "C:\\zk\\ca.pem",
        ] {
            assert!(!looks_like_key_material(path), "{path}");
            let e = load(&Tls::new(Pem::File(path.into()))).err().unwrap();
            assert!(
                e.message()
                    .contains(path.split(['/', '\\']).next_back().unwrap()),
                "{e}"
            );
        }
    }

    #[test]
    fn key_bytes_never_show_in_debug() {
        let tls = Tls {
            cert: Some(Pem::Bytes(b"-----BEGIN CERTIFICATE-----".to_vec())),
            key: Some(Pem::Bytes(b"TOPSECRETKEY".to_vec())),
            ..Tls::new(Pem::Bytes(Vec::new()))
        };
        assert!(!format!("{tls:?}").contains("TOPSECRETKEY"));
    }

    #[test]
    fn a_tls_host_a_certificate_cannot_name_is_refused() {
        assert!(check_tls_hosts("127.0.0.1:1,zk-1.example:2,[::1]:3/chroot").is_ok());
        let e = check_tls_hosts("good:1,bad_name!:2").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains("bad_name!"), "{e}");
    }

    #[test]
    fn the_first_host_of_a_connect_string() {
        assert_eq!(first_host("a:1,b:2/chroot"), Some(("a".to_owned(), 1)));
        assert_eq!(first_host("[::1]:7"), Some(("::1".to_owned(), 7)));
        assert_eq!(first_host("h"), Some(("h".to_owned(), 2181)));
    }
}
