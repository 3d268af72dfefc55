//! TLS client configuration for [`crate::conn::connect`]: rustls with the `ring` provider
//! (`client_config`, feature `ring`) or one the caller gives ([`client_config_with_provider`]),
//! never a process-wide default; the trusted roots from a CA file, an optional client
//! certificate, and the choice of checking the server's certificate against the name dialled.
//!
//! With `verify_hostname` off the certificate chain is still verified against the CA (expiry,
//! signatures, key usage); only a certificate that does not name the host dialled is accepted,
//! which is what ZooKeeper's `zookeeper.ssl.hostnameVerification=false` does.
//!
//! Errors name the file's role and what is wrong with it, never its bytes.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use thiserror::Error;

/// What [`TlsConfigError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PemRole {
    /// The CA certificates (PEM) the server's chain must lead to.
    Ca,
    /// The client's certificate chain (PEM).
    ClientCert,
    /// The client's private key (PEM).
    ClientKey,
}

impl std::fmt::Display for PemRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PemRole::Ca => "CA certificate",
            PemRole::ClientCert => "client certificate",
            PemRole::ClientKey => "client key",
        })
    }
}

/// Why a TLS configuration could not be built. No variant carries the input's bytes.
#[derive(Debug, Clone, Error)]
pub enum TlsConfigError {
    /// The PEM text could not be read (the reason is one of a fixed set of phrases).
    #[error("{role} PEM is malformed: {reason}")]
    Pem { role: PemRole, reason: &'static str },
    /// The PEM text holds no item of the kind needed.
    #[error("{role} PEM holds no {role}")]
    Missing { role: PemRole },
    /// A CA certificate that is not a usable trust anchor.
    #[error("CA certificate {index} (0-based) is not a usable trust anchor: {reason}")]
    BadCa { index: usize, reason: String },
    /// The verifier could not be built from the CA certificates.
    #[error("cannot build the certificate verifier: {0}")]
    Verifier(String),
    /// rustls refused the configuration: no safe protocol version, or the client key does not
    /// suit the certificate or the provider.
    #[error("TLS configuration refused: {0}")]
    Rustls(String),
    /// The host is neither a DNS name nor an IP address.
    #[error("{0:?} is not a valid TLS server name")]
    ServerName(String),
}

fn pem_reason(e: &pem::Error) -> &'static str {
    match e {
        pem::Error::MissingSectionEnd { .. } => "a section has no END line",
        pem::Error::IllegalSectionStart { .. } => "a BEGIN line is malformed",
        pem::Error::Base64Decode(_) => "a section is not valid base64",
        pem::Error::NoItemsFound => "no section of the kind needed",
        pem::Error::SectionTooLarge => "a section is too large",
        _ => "unreadable",
    }
}

fn certificates(
    role: PemRole,
    text: &[u8],
) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    let certs = CertificateDer::pem_slice_iter(text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsConfigError::Pem {
            role,
            reason: pem_reason(&e),
        })?;
    if certs.is_empty() {
        return Err(TlsConfigError::Missing { role });
    }
    Ok(certs)
}

/// A client configuration on rustls' ring provider that trusts the certificates of `ca_pem`,
/// presents `identity` (a certificate chain and its private key, PEM) if given, and — if
/// `verify_hostname` — requires the server's certificate to name the host dialled.
#[cfg(feature = "ring")]
pub fn client_config(
    ca_pem: &[u8],
    identity: Option<(&[u8], &[u8])>,
    verify_hostname: bool,
) -> Result<Arc<ClientConfig>, TlsConfigError> {
    client_config_with_provider(
        Arc::new(rustls::crypto::ring::default_provider()),
        ca_pem,
        identity,
        verify_hostname,
    )
}

/// `client_config` (feature `ring`) on the given provider (e.g. the one a program already links).
pub fn client_config_with_provider(
    provider: Arc<CryptoProvider>,
    ca_pem: &[u8],
    identity: Option<(&[u8], &[u8])>,
    verify_hostname: bool,
) -> Result<Arc<ClientConfig>, TlsConfigError> {
    let mut roots = RootCertStore::empty();
    for (index, cert) in certificates(PemRole::Ca, ca_pem)?.into_iter().enumerate() {
        roots.add(cert).map_err(|e| TlsConfigError::BadCa {
            index,
            reason: e.to_string(),
        })?;
    }
    let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| TlsConfigError::Verifier(e.to_string()))?;
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsConfigError::Rustls(e.to_string()))?;
    let builder = if verify_hostname {
        builder.with_webpki_verifier(webpki)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyName(webpki)))
    };
    let config = match identity {
        None => builder.with_no_client_auth(),
        Some((cert_pem, key_pem)) => {
            let chain = certificates(PemRole::ClientCert, cert_pem)?;
            let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| match e {
                pem::Error::NoItemsFound => TlsConfigError::Missing {
                    role: PemRole::ClientKey,
                },
                e => TlsConfigError::Pem {
                    role: PemRole::ClientKey,
                    reason: pem_reason(&e),
                },
            })?;
            // rustls' errors here describe the mismatch (e.g. "keys may not be consistent"),
            // not the key.
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| TlsConfigError::Rustls(e.to_string()))?
        }
    };
    Ok(Arc::new(config))
}

/// The TLS server name for `host` (a DNS name or an IP address; `[v6]` brackets are removed).
pub fn server_name(host: &str) -> Result<ServerName<'static>, TlsConfigError> {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    ServerName::try_from(bare.to_owned()).map_err(|_| TlsConfigError::ServerName(host.to_owned()))
}

/// The webpki verifier, except that a certificate not valid for the name dialled is accepted.
/// The chain is checked first (rustls' `WebPkiServerVerifier::verify_server_cert` verifies the
/// chain to a trust anchor before the name), so the name error is only seen for a trusted chain.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }

    fn root_hint_subjects(&self) -> Option<&[rustls::DistinguishedName]> {
        self.0.root_hint_subjects()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "ring")]
    #[test]
    fn a_ca_file_without_certificates_is_refused() {
        let r = client_config(b"nothing here\n", None, true);
        assert!(
            matches!(r, Err(TlsConfigError::Missing { role: PemRole::Ca })),
            "{r:?}"
        );
    }

    #[cfg(feature = "ring")]
    #[test]
    fn malformed_pem_is_reported_without_its_bytes() {
        let text =
            b"-----BEGIN CERTIFICATE-----\nc2VjcmV0LXNlY3JldA@@@\n-----END CERTIFICATE-----\n";
        let e = client_config(text, None, true).unwrap_err();
        let shown = format!("{e} {e:?}");
        assert!(
            matches!(
                e,
                TlsConfigError::Pem {
                    role: PemRole::Ca,
                    ..
                }
            ),
            "{shown}"
        );
        assert!(!shown.contains("c2VjcmV0"), "{shown}");
    }

    #[test]
    fn server_names_are_dns_names_or_ip_addresses() {
        assert!(matches!(
            server_name("127.0.0.1"),
            Ok(ServerName::IpAddress(_))
        ));
        assert!(matches!(server_name("[::1]"), Ok(ServerName::IpAddress(_))));
        assert!(matches!(
            server_name("zk1.example"),
            Ok(ServerName::DnsName(_))
        ));
        assert!(matches!(
            server_name("not a host"),
            Err(TlsConfigError::ServerName(_))
        ));
    }
}
