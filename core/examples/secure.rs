//! The README's Secure ZooKeeper snippet for Rust, run by scripts/check-readme.sh against the
//! harness's secured server.

#[tokio::main]
async fn main() -> zklock::Result<()> {
    let env = |name: &str| std::env::var(name).unwrap_or_default();
    let ca = zklock::Pem::File(env("ZKLOCK_TLS_CA").into()); // the CA's PEM file
    let options = zklock::Options::default()
        .tls(zklock::Tls::new(ca)) // Tls { cert, key, verify_hostname, .. } for more
        .sasl(env("ZKLOCK_SASL_USER"), env("ZKLOCK_SASL_PASSWORD"))
        .acl(zklock::AclPolicy::CreatorAll); // only our SASL user may touch our nodes
    let client = zklock::Client::connect(&env("ZKLOCK_SERVERS"), options).await?;
    let lease = client.mutex("/zklock-tour/secure-rust")?.acquire().await?;
    let token = lease.token();
    println!("rust holds the lock over TLS, fencing token {token}");
    lease.release().await?;
    client.close().await;
    Ok(())
}
