// The body of both applications (each `src/main.rs` includes it): the application's own
// `rustls::ClientConfig::builder()` first, as a service on aws-lc-rs writes it (it panicked
// when zklock turned on rustls' `ring` feature beside the application's aws-lc-rs: issue 51),
// then a lock taken over TLS, then the process's provider is still the application's. With
// zklock built without a provider feature (`ZKLOCK_NAMES_ITS_PROVIDER` false), first a TLS
// connect before the application chose a provider: refused, and nothing installed.
//
// `ZKLOCK_TLS_SERVERS` and `ZKLOCK_TLS_CA`: the TLS port and CA of `zk-harness --secure`.

use std::path::PathBuf;

fn kx_names(provider: &rustls::crypto::CryptoProvider) -> Vec<String> {
    provider
        .kx_groups
        .iter()
        .map(|g| format!("{:?}", g.name()))
        .collect()
}

#[tokio::main]
async fn main() {
    let app = env!("CARGO_PKG_NAME");
    let servers = std::env::var("ZKLOCK_TLS_SERVERS").expect("ZKLOCK_TLS_SERVERS (run.sh sets it)");
    let ca = std::env::var("ZKLOCK_TLS_CA").expect("ZKLOCK_TLS_CA (run.sh sets it)");

    let options =
        zklock::Options::default().tls(zklock::Tls::new(zklock::Pem::File(PathBuf::from(ca))));
    if !ZKLOCK_NAMES_ITS_PROVIDER {
        // Before the application's rustls chose the process's provider, zklock has none: its
        // TLS connect says so, and it has not installed one of its own in passing.
        let err = zklock::Client::connect(&servers, options.clone())
            .await
            .expect_err("no provider yet");
        assert_eq!(err.kind(), zklock::ErrorKind::InvalidArgument, "{err}");
        assert!(err.message().contains("install_default"), "{err}");
        assert!(rustls::crypto::CryptoProvider::get_default().is_none());
        println!("{app}: before the application chose a provider, zklock's TLS connect said so");
    }

    let own = rustls::ClientConfig::builder()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    drop(own);
    println!("{app}: rustls::ClientConfig::builder() chose its provider without a panic");

    let client = zklock::Client::connect(&servers, options)
        .await
        .expect("zklock connects over TLS");
    let path = format!("/zklock-test/{app}-{}", std::process::id());
    let lease = client
        .mutex(&path)
        .expect("a lock path")
        .acquire()
        .await
        .expect("acquire over TLS");
    assert!(lease.token() > 0);
    lease.release().await.expect("release over TLS");
    client.close().await;
    println!("{app}: zklock acquired and released {path} over TLS");

    let default = rustls::crypto::CryptoProvider::get_default().expect("the process's provider");
    assert_eq!(
        kx_names(default),
        kx_names(&rustls::crypto::aws_lc_rs::default_provider()),
        "the process's provider is still the application's aws-lc-rs"
    );
    println!("{app}: the process's rustls provider is still aws-lc-rs");
}
