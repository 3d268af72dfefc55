//! Every Rust block of core/README.md, run against the test ZooKeeper (issue 51). They were
//! `no_run` doctests, only compiled, and two failed when run (`fenced` wrote a node nobody made;
//! `operate` revoked after it broke the only holder, NotHeld). Each block is a module here,
//! verbatim (the first test checks that, ignoring indentation), and the second runs them all, in
//! the README's order, on one client.

use std::time::Duration;

const README: &str = include_str!("../README.md");
const THIS: &str = include_str!("readme.rs");

mod locks {
    use std::time::Duration;

    async fn locks(client: &zklock::Client) -> zklock::Result<()> {
        // Curator's InterProcessMutex layout; kazoo's Lock on the same path works with it.
        let mutex = client.mutex("/locks/orders")?;
        let lease = mutex.acquire().await?; // acquire_timeout(d), try_acquire(), acquire_with(..)
        println!("fencing token {}", lease.token());
        lease.release().await?;

        // Curator's InterProcessSemaphoreV2 with 3 leases, its SemaphoreMutex, a read/write lock
        // and a multi-lock (all members or none).
        let _three = client.semaphore("/locks/pool", 3)?;
        let _single = client.semaphore_mutex("/locks/one")?;
        let rw = client.rw_lock("/locks/table")?;
        let read = rw.read().acquire().await?;
        read.release().await?;
        let both = client.multi_lock(["/locks/a", "/locks/b"])?;
        both.acquire_timeout(Duration::from_secs(5))
            .await?
            .release()
            .await?;
        Ok(())
    }

    // The README's function, callable from the test below.
    pub(super) async fn run(client: &zklock::Client) -> zklock::Result<()> {
        locks(client).await
    }
}

mod shared {
    use std::sync::Arc;
    use zklock::{Owner, Wait};

    async fn shared(mutex: Arc<zklock::Mutex>) -> zklock::Result<()> {
        let mine = mutex.acquire().await?; // this task's; another task's acquire waits
        let again = mutex.acquire().await?; // counts up: hold_count() is 2
        again.release().await?;
        mine.release().await?;
        // On purpose: one hold for every task that asks for SHARED (one node, one token).
        let lease = mutex.acquire_as(Owner::SHARED, Wait::Forever, None).await?;
        lease.release().await?;
        Ok(())
    }

    // The README's function, callable from the test below.
    pub(super) async fn run(client: &zklock::Client) -> zklock::Result<()> {
        shared(Arc::new(client.mutex("/locks/shared")?)).await
    }
}

mod holding {
    use std::time::Duration;

    async fn holding(client: &zklock::Client) -> zklock::Result<()> {
        let lock = client
            .mutex("/locks/job")?
            .max_hold(Some(Duration::from_secs(60)))? // lost with reason "max-hold" after 60 s
            .hold_ceiling(Some(Duration::from_secs(600)))? // extend() never past 10 min in all
            .lock_delay(Some(Duration::from_secs(5)))?; // successors wait 5 s after an unclean end
        let lease = lock.acquire().await?;
        lease.on_state(|state| eprintln!("lease is {state}"));
        lease.on_expiring(Duration::from_secs(10), |left| eprintln!("{left:?} left"));
        let new_end = lease.extend(Duration::from_secs(120))?; // same token, later end
        println!(
            "held until {new_end:?}, proven until {:?}",
            lease.valid_until()
        );
        tokio::select! {
            _ = lease.lost() => eprintln!("lost: {:?}", lease.lost_reason()),
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        lease.release().await?;

        // A multi-lock's maximum hold is one end for the whole hold, from when every member is
        // ours: every member lost and its node deleted at it; extend() moves it for all members.
        let both = client
            .multi_lock(["/locks/a", "/locks/b"])?
            .max_hold(Some(Duration::from_secs(60)))?
            .hold_ceiling(Some(Duration::from_secs(600)))?;
        let all = both.acquire().await?;
        all.extend(Duration::from_secs(120))?;
        all.release().await?;
        // Both sides of a read/write lock take one limit.
        let _rw = client
            .rw_lock("/locks/table")?
            .max_hold(Some(Duration::from_secs(60)))?;
        Ok(())
    }

    // The README's function, callable from the test below.
    pub(super) async fn run(client: &zklock::Client) -> zklock::Result<()> {
        holding(client).await
    }
}

mod fenced {
    use zklock::{CounterWidth, Write};

    async fn fenced(client: &zklock::Client) -> zklock::Result<()> {
        let lease = client.mutex("/locks/job")?.acquire().await?;
        // /jobs/state is the application's node (set_data of a missing node fails: NoNode).
        lease
            .guarded_write(vec![Write::set_data("/jobs/state", b"running".to_vec())])
            .await?;
        let counter = client.counter("/counters/epoch", CounterWidth::Int64)?;
        let next = lease.guarded_increment(&counter, 1).await?;
        println!("epoch {} (version {})", next.value, next.version);
        let seen = counter.get().await?;
        let _swapped = counter.compare_and_set(seen, seen.value + 1).await?; // None: it moved
        lease.release().await?;
        // Anyone holding a token can ask whether it is still the holder's.
        let _current = client.check("/locks/job", next.value, None).await?;
        Ok(())
    }

    // The README's function, callable from the test below.
    pub(super) async fn run(client: &zklock::Client) -> zklock::Result<()> {
        fenced(client).await
    }
}

mod elect {
    use zklock::ElectionStyle;

    async fn elect(client: &zklock::Client) -> zklock::Result<()> {
        // Curator's LeaderLatch layout (Selector: LeaderSelector's; Kazoo: kazoo's Election).
        let election =
            client.election("/elections/scheduler", ElectionStyle::Latch, Some("node-1"))?;
        let leadership = election.lead().await?;
        println!("leading with token {}", leadership.token());
        println!("participants: {}", election.participants().await?.len());
        election.resign(leadership, false).await?;
        Ok(())
    }

    // The README's function, callable from the test below.
    pub(super) async fn run(client: &zklock::Client) -> zklock::Result<()> {
        elect(client).await
    }
}

mod operate {
    async fn operate(client: &zklock::Client) -> zklock::Result<()> {
        let mutex = client.mutex("/locks/stuck")?;
        for p in mutex.participants().await? {
            println!(
                "{} token {} by {} ({:?})",
                p.node, p.token, p.identity, p.library
            );
        }
        // Revocation Curator's way: the holder is asked to let go (NotHeld when nobody holds).
        client.revoke("/locks/stuck", None).await?;
        // Deletes exactly that node (version-checked); its zklock holder turns lost, reason "broken".
        if let Some(holder) = mutex.participants().await?.first() {
            let broken = client
                .break_lock("/locks/stuck", &holder.node, Some("ticket 4711"))
                .await?;
            println!("broke token {}", broken.token);
        }
        // Every lock under a subtree with its queue (zklock, Curator, kazoo layouts), bounded in
        // depth and nodes listed: what `zklock ls -r PATH --held-over D` prints.
        for queue in client
            .locks_under("/locks", zklock::ScanLimits::default())
            .await?
        {
            println!("{}: {} contenders", queue.path, queue.participants.len());
        }
        // Statistics, client-wide and per lock path (at most `Options::path_stats_limit` paths,
        // the rest folded into one overflow series), and all of it as OpenMetrics text.
        let stats = client.stats();
        println!("{} acquired, {} held now", stats.acquired, stats.held);
        for path in client.path_stats().paths {
            println!(
                "{:?}: {} acquired, {} held, {:?} waited",
                path.path, path.acquired, path.held, path.wait_sum
            );
        }
        print!("{}", client.openmetrics(&[("service", "orders")]));
        Ok(())
    }

    // The README's function, callable from the test below.
    pub(super) async fn run(client: &zklock::Client) -> zklock::Result<()> {
        operate(client).await
    }
}

mod queued {
    use zklock::{Owner, QueuePosition, Wait};

    async fn queued(client: &zklock::Client) -> zklock::Result<()> {
        let mutex = client.mutex("/locks/orders")?;
        let position = QueuePosition::new();
        position.on_queued(|ahead| eprintln!("{ahead} ahead of us"));
        let acquire =
            mutex.acquire_watched(Owner::current(), Wait::Forever, None, position.clone());
        let lease = acquire.await?; // `position.get()` meanwhile; `None` once it holds
        lease.release().await?;
        Ok(())
    }

    // The README's function, callable from the test below.
    pub(super) async fn run(client: &zklock::Client) -> zklock::Result<()> {
        queued(client).await
    }
}

mod connect {
    // hosts: "zk1:2181,zk2:2181,zk3:2181/app" (a chroot after the last host is optional)
    async fn connect(hosts: &str) -> zklock::Result<zklock::Client> {
        // `Options` is non-exhaustive (a later release may add an option): start from the default.
        let mut options = zklock::Options::default();
        options.session_timeout = std::time::Duration::from_secs(10);
        options.identity = Some("orders-7".into());
        zklock::Client::connect(hosts, options).await
    }

    // The README's function, callable from the test below.
    pub(super) async fn run(hosts: &str) -> zklock::Result<zklock::Client> {
        connect(hosts).await
    }
}

/// The README's Rust blocks, each as its lines without indentation or blank lines.
fn readme_blocks() -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in README.lines() {
        match current.as_mut() {
            None if line.starts_with("```rust") => current = Some(Vec::new()),
            None => {}
            Some(_) if line.starts_with("```") => blocks.push(current.take().unwrap().join("\n")),
            Some(lines) => lines.push(line),
        }
    }
    blocks.iter().map(|b| normalized(b)).collect()
}

fn normalized(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines.join("\n")
}

#[test]
fn every_rust_block_of_the_readme_is_a_module_of_this_file_verbatim() {
    let this = normalized(THIS);
    let blocks = readme_blocks();
    assert!(
        blocks.len() >= 7,
        "the README's Rust blocks: {}",
        blocks.len()
    );
    for block in &blocks {
        assert!(
            this.contains(block.as_str()),
            "a README block is not here verbatim (copy it into a module and run it below):\n{block}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_rust_block_of_the_readme_runs_against_zookeeper() {
    let servers = zklock_testkit::shared();
    let client = connect::run(servers).await.expect("connect");
    // `fenced` writes the application's node /jobs/state: the application made it, so here.
    let raw = zookeeper_client::Client::connect(servers)
        .await
        .expect("raw connect");
    let open =
        zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    for node in ["/jobs", "/jobs/state"] {
        match raw.create(node, b"", &open).await {
            Ok(_) | Err(zookeeper_client::Error::NodeExists) => {}
            Err(e) => panic!("create {node}: {e}"),
        }
    }
    locks::run(&client).await.expect("locks");
    shared::run(&client).await.expect("shared");
    holding::run(&client).await.expect("holding");
    fenced::run(&client).await.expect("fenced");
    elect::run(&client).await.expect("elect");
    // `operate` revokes and breaks the holder of /locks/stuck: a holder on another client.
    let other = zklock::Client::connect(servers, zklock::Options::default())
        .await
        .expect("the stuck holder connects");
    let stuck = other
        .mutex("/locks/stuck")
        .expect("mutex")
        .acquire_timeout(Duration::from_secs(10))
        .await
        .expect("the stuck holder acquires");
    operate::run(&client).await.expect("operate");
    tokio::time::timeout(Duration::from_secs(10), stuck.lost())
        .await
        .expect("operate broke the stuck holder: its lease is lost");
    queued::run(&client).await.expect("queued");
    other.close().await;
    client.close().await;
}
