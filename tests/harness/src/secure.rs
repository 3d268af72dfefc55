//! A secured ZooKeeper for the TLS, SASL and ACL tests: Netty with a TLS client port beside the
//! plain one, PEM key and trust stores made at start with Debian's `openssl` (a test CA, a server
//! certificate for IP 127.0.0.1 only, a client certificate, and a second CA that signed nothing
//! of ours), and SASL DIGEST-MD5 with the JAAS users `alice` and `bob`.
//!
//! The server's certificate names 127.0.0.1 and no host name, so dialling `localhost` on the TLS
//! port is the wrong-host case.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::{Config, Result, ZooKeeper};

/// SASL users of the JAAS file (test data, not secrets of anyone).
pub const SASL_USERS: [(&str, &str); 2] = [("alice", "alice-sasl-pw"), ("bob", "bob-sasl-pw")];

pub(crate) struct Prepared {
    pub(crate) port: u16,
    pub(crate) zoo_cfg: String,
    pub(crate) jvm_args: Vec<String>,
}

fn openssl(dir: &Path, args: &[&str]) -> Result<()> {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| {
            format!(
                "cannot run openssl ({e}): install Debian's openssl (scripts/install-deps.sh does)"
            )
        })?;
    if !out.status.success() {
        return Err(format!(
            "openssl {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// A key and a certificate signed by `ca` (`name.key`, `name.crt`) with the given extensions.
fn signed(dir: &Path, name: &str, subject: &str, ext: &str) -> Result<()> {
    std::fs::write(dir.join(format!("{name}.ext")), ext).map_err(|e| e.to_string())?;
    let (key, csr, crt, extfile) = (
        format!("{name}.key"),
        format!("{name}.csr"),
        format!("{name}.crt"),
        format!("{name}.ext"),
    );
    openssl(
        dir,
        &[
            "req", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &csr, "-subj", subject,
        ],
    )?;
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "7",
            "-out",
            &crt,
            "-extfile",
            &extfile,
        ],
    )
}

/// Makes the certificates and the JAAS file under `root/tls`; returns the zoo.cfg lines.
pub(crate) fn prepare(root: &Path, port: u16) -> Result<Prepared> {
    let dir = root.join("tls");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for (ca, cn) in [("ca", "zklock test CA"), ("wrong-ca", "zklock wrong CA")] {
        openssl(
            &dir,
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                &format!("{ca}.key"),
                "-out",
                &format!("{ca}.crt"),
                "-days",
                "7",
                "-subj",
                &format!("/CN={cn}"),
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
        )?;
    }
    signed(
        &dir,
        "server",
        "/CN=zklock test server",
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
    )?;
    signed(
        &dir,
        "client",
        "/CN=zklock test client",
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n",
    )?;
    // ZooKeeper's PEM key store: the private key and the certificate in one file.
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).map_err(|e| e.to_string());
    std::fs::write(
        dir.join("server.pem"),
        format!("{}{}", read("server.key")?, read("server.crt")?),
    )
    .map_err(|e| e.to_string())?;
    let users: String = SASL_USERS
        .iter()
        .map(|(u, p)| format!("    user_{u}=\"{p}\"\n"))
        .collect();
    std::fs::write(
        dir.join("jaas.conf"),
        format!(
            "Server {{\n    org.apache.zookeeper.server.auth.DigestLoginModule required\n{};\n}};\n",
            users.trim_end()
        ),
    )
    .map_err(|e| e.to_string())?;
    let zoo_cfg = format!(
        "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
         secureClientPort={port}\nsecureClientPortAddress=127.0.0.1\n\
         ssl.keyStore.location={ks}\nssl.keyStore.type=PEM\n\
         ssl.trustStore.location={ts}\nssl.trustStore.type=PEM\nssl.clientAuth=want\n\
         authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n",
        ks = dir.join("server.pem").display(),
        ts = dir.join("ca.crt").display(),
    );
    Ok(Prepared {
        port,
        zoo_cfg,
        jvm_args: vec![format!(
            "-Djava.security.auth.login.config={}",
            dir.join("jaas.conf").display()
        )],
    })
}

impl ZooKeeper {
    /// The CA (PEM) that signed a secured server's certificate (`Config::secure`).
    pub fn tls_ca(&self) -> Option<PathBuf> {
        self.members.first()?.secure_port?;
        Some(self.root.as_ref()?.join("tls/ca.crt"))
    }
}

/// A running secured server and what clients need to reach it.
pub struct Secured {
    /// The server (dropping it stops it and removes the certificates).
    pub zk: ZooKeeper,
    /// The plain client port's connect string.
    pub servers: String,
    /// The TLS port: `127.0.0.1:port` (the name the certificate holds).
    pub tls_servers: String,
    /// The TLS port by a name the certificate does not hold (`localhost:port`).
    pub wrong_host_servers: String,
    /// The CA that signed the server's and the client's certificates (PEM).
    pub ca: PathBuf,
    /// A CA that signed nothing of this server's.
    pub wrong_ca: PathBuf,
    /// A client certificate and its key signed by `ca`.
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

impl Secured {
    pub fn start() -> Result<Secured> {
        let zk = ZooKeeper::start(
            1,
            &Config {
                secure: true,
                ..Config::default()
            },
        )?;
        let tls = zk
            .secure_address(0)
            .ok_or("the secured server has no TLS port")?;
        let port = tls
            .rsplit_once(':')
            .map(|(_, p)| p.to_owned())
            .unwrap_or_default();
        let dir = zk
            .root
            .as_ref()
            .ok_or("the secured server has no directory")?
            .join("tls");
        Ok(Secured {
            servers: zk.connect_string(),
            tls_servers: tls,
            wrong_host_servers: format!("localhost:{port}"),
            ca: dir.join("ca.crt"),
            wrong_ca: dir.join("wrong-ca.crt"),
            client_cert: dir.join("client.crt"),
            client_key: dir.join("client.key"),
            zk,
        })
    }

    /// `key=value` lines for the faces' fixtures (`zk-harness --secure`).
    pub fn describe(&self) -> String {
        let users: Vec<String> = SASL_USERS.iter().map(|(u, p)| format!("{u}:{p}")).collect();
        format!(
            "tls_servers={}\ntls_wrong_host_servers={}\ntls_ca={}\ntls_wrong_ca={}\ntls_cert={}\ntls_key={}\nsasl_users={}\n",
            self.tls_servers,
            self.wrong_host_servers,
            self.ca.display(),
            self.wrong_ca.display(),
            self.client_cert.display(),
            self.client_key.display(),
            users.join(","),
        )
    }
}

/// One secured server shared by every test of this process, started at first use.
pub fn shared_secure() -> &'static Secured {
    static SHARED: OnceLock<std::result::Result<&'static Secured, String>> = OnceLock::new();
    let result = SHARED.get_or_init(|| {
        // Leaked on purpose: it lives as long as the process (its JVM dies with the process,
        // PR_SET_PDEATHSIG of a thread that never ends: the main thread's OnceLock caller may
        // end, so the server is started from a parked thread like `shared`).
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("zk-harness-secure".into())
            .spawn(move || match Secured::start() {
                Ok(s) => {
                    tx.send(Ok(&*Box::leak(Box::new(s)))).ok();
                    loop {
                        std::thread::park();
                    }
                }
                Err(e) => {
                    tx.send(Err(e)).ok();
                }
            })
            .expect("spawn harness thread");
        rx.recv()
            .unwrap_or_else(|_| Err("harness thread died".into()))
    });
    match result {
        Ok(s) => s,
        Err(e) => panic!("the secured ZooKeeper did not start: {e}"),
    }
}
