//! The README's Rust tour, run by scripts/check-readme.sh.

#[tokio::main]
async fn main() -> zklock::Result<()> {
    let servers = std::env::var("ZKLOCK_SERVERS").unwrap_or_else(|_| "127.0.0.1:2181".into());
    let client = zklock::Client::connect(&servers, zklock::Options::default()).await?;
    let mutex = client.mutex("/zklock-tour/rust")?;
    let lease = mutex.acquire().await?; // acquire_timeout(d), try_acquire()
    tokio::select! {
        _ = lease.lost() => eprintln!("lost: {:?}", lease.lost_reason()),
        _ = async { println!("rust holds the lock, fencing token {}", lease.token()) } => {}
    }
    lease.release().await?;
    client.close().await;
    Ok(())
}
