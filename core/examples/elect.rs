//! The README's Leader election snippet for Rust, run by scripts/check-readme.sh against the
//! harness's ZooKeeper.

#[tokio::main]
async fn main() -> zklock::Result<()> {
    let servers = std::env::var("ZKLOCK_SERVERS").unwrap_or("127.0.0.1:2181".into());
    let client = zklock::Client::connect(&servers, zklock::Options::default()).await?;
    let style = zklock::ElectionStyle::Latch; // Curator's LeaderLatch; Selector, Kazoo
    let election = client.election("/zklock-tour/leader", style, Some("worker-1"))?;
    let watch = client.observe_leader("/zklock-tour/leader")?; // for anyone, not only participants
    let lead = election.lead().await?; // a Lease: token, state, lost signal, guarded writes
    let leader = watch.next(zklock::Wait::Forever).await?.map(|p| p.identity);
    println!("leading as {leader:?} with token {}", lead.token());
    let left = lead.time_left(); // measured on a clock that counts a suspend
    println!("nobody else can lead for at least {left:?}"); // the lost signal comes before that
    tokio::select! {
        _ = lead.lost() => println!("lost: stop acting as leader"),
        _ = tokio::time::sleep(std::time::Duration::from_millis(100)) => {} // the work
    }
    election.resign(lead, false).await?; // requeue = true runs again at the tail
    client.close().await;
    Ok(())
}
