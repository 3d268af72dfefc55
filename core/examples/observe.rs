//! The README's "Observing locks" in Rust, run by scripts/check-readme.sh.

#[tokio::main]
async fn main() -> zklock::Result<()> {
    let servers = std::env::var("ZKLOCK_SERVERS").unwrap_or_else(|_| "127.0.0.1:2181".into());
    let client = zklock::Client::connect(&servers, zklock::Options::default()).await?;
    let lease = client.mutex("/zklock-tour/observe-rust")?.acquire().await?;
    // Applied only while the lock is ours: one multi request with a check of our lock node.
    let state = "/zklock-tour/rust-state";
    let writes = vec![
        zklock::Write::create(state, "v1"),
        zklock::Write::delete(state),
    ];
    lease.guarded_write(writes).await?; // LockLost, and nothing written, once the lease is lost
    lease.release().await?;
    let s = client.stats(); // acquired, timed_out, cancelled, failed, wait, hold, held, lost, ...
    println!(
        "acquired {}, waited {:?}, held {:?}",
        s.acquired, s.wait.max, s.hold.max
    );
    client.close().await;
    Ok(())
}
