//! The Rust workers: zklock's core (`--impl zklock`) and the raw limit (`--impl raw`: the bare
//! ZooKeeper operations of an uncontended lock cycle through zookeeper-client, nothing else).
//! Each prints one JSON line on stdout (scenario 5 and 6 also a `ready` line first and wait for
//! a line on stdin).

use std::io::BufRead;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use zookeeper_client as zk;

use crate::common::{add_cpu, cpu_ns, mono_ns, rss_bytes, sleep_until_mono, Args, Slots};

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

pub fn run(args: &Args) -> Res<serde_json::Value> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let imp = args.str("impl");
    let scenario = args.str("scenario");
    rt.block_on(async {
        match (imp.as_str(), scenario.as_str()) {
            ("zklock", "s1") => zk_s1(args).await,
            ("zklock", "s2") => zk_s2(args).await,
            ("zklock", "s3") => zk_s3(args).await,
            ("zklock", "s8") => zk_s8(args).await,
            ("zklock", "s4") => zk_s4(args).await,
            ("zklock", "s5") => zk_s5(args).await,
            ("zklock", "s6") => zk_s6(args).await,
            ("zklock", "s7") => zk_s7(args).await,
            ("zklock", "s7r") => zk_s7r(args).await,
            ("zklock", "curve") => zk_curve(args).await,
            ("zklock", "s9") => crate::s9::zk_worker(args).await,
            ("raw", "s1") => raw_s1(args).await,
            ("raw", "s4") => raw_s4(args).await,
            (i, s) => Err(format!("no scenario {s} for {i}").into()),
        }
    })
}

fn windows(args: &Args) -> (u64, u64) {
    let warm = (args.num("warmup", 1.0) * 1e9) as u64;
    let secs = (args.num("secs", 3.0) * 1e9) as u64;
    (warm, secs)
}

async fn zk_client(args: &Args) -> Res<zklock::Client> {
    if args.opt("tls").is_some() {
        // The orchestrator's secured server (`zklock-tls`): its TLS port and CA.
        let servers = std::env::var("ZKBENCH_TLS_SERVERS")?;
        let ca = std::env::var("ZKBENCH_TLS_CA")?;
        let options =
            zklock::Options::default().tls(zklock::Tls::new(zklock::Pem::File(ca.into())));
        return Ok(zklock::Client::connect(&servers, options).await?);
    }
    Ok(zklock::Client::connect(&args.str("servers"), zklock::Options::default()).await?)
}

/// Scenario 1: uncontended acquire+release cycles on one lock. `--api blocking` uses the
/// blocking twins from a plain thread (what the faces call).
async fn zk_s1(args: &Args) -> Res<serde_json::Value> {
    let client = zk_client(args).await?;
    let mutex = client.mutex(&args.str("path"))?;
    let slots = Slots::from_args(args);
    let rt0 = zklock::support::round_trips();
    let (out, cycles) = if args.opt("api").as_deref() == Some("blocking") {
        tokio::task::spawn_blocking(move || blocking_slotted(slots, &mutex)).await??
    } else {
        let mutex = Arc::new(mutex);
        slotted(slots, 1, move |_| {
            let mutex = mutex.clone();
            async move {
                mutex.acquire().await?.release().await?;
                Ok(())
            }
        })
        .await?
    };
    let mut out = out;
    out["round_trips_per_cycle"] =
        json!((zklock::support::round_trips() - rt0) as f64 / cycles.max(1) as f64);
    client.close().await;
    Ok(out)
}

/// Scenario 1 through the blocking twins, on this thread, in the slots.
fn blocking_slotted(slots: Slots, mutex: &zklock::Mutex) -> Res<(serde_json::Value, u64)> {
    let mut all = 0;
    let (w0, w1) = slots.warm_window();
    sleep_until_mono(w0);
    while mono_ns() < w1 {
        mutex.blocking_acquire()?.blocking_release()?;
        all += 1;
    }
    let mut counts = vec![0; slots.rounds as usize];
    let mut lat = Vec::new();
    let mut cpu = 0;
    for r in 0..slots.rounds {
        let (from, to) = slots.round_window(r);
        sleep_until_mono(from);
        let c0 = cpu_ns();
        loop {
            let t0 = mono_ns();
            if t0 >= to {
                break;
            }
            mutex.blocking_acquire()?.blocking_release()?;
            all += 1;
            let t1 = mono_ns();
            if t1 <= to {
                counts[r as usize] += 1;
                lat.push(t1 - t0);
            }
        }
        cpu += cpu_ns() - c0;
    }
    let mut out = slots.result(&counts, lat);
    add_cpu(&mut out, cpu);
    Ok((out, all))
}

async fn sleep_until_mono_async(t: u64) {
    let now = mono_ns();
    if t > now {
        tokio::time::sleep(Duration::from_nanos(t - now)).await;
    }
}

/// Runs `cycle(i)` on `n` tasks of this thread at once, each in the warm-up window and the
/// measured slots; returns the result line and the number of cycles run in all.
async fn slotted<F, Fut>(slots: Slots, n: usize, cycle: F) -> Res<(serde_json::Value, u64)>
where
    F: Fn(usize) -> Fut + Clone + 'static,
    Fut: std::future::Future<Output = Res<()>> + 'static,
{
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            // The process's CPU time over the measured windows, read once per window for all
            // tasks (spawned first, so that it wakes first at a window's start).
            let meter = tokio::task::spawn_local(async move {
                let mut cpu = 0;
                for r in 0..slots.rounds {
                    let (from, to) = slots.round_window(r);
                    sleep_until_mono_async(from).await;
                    let c0 = cpu_ns();
                    sleep_until_mono_async(to).await;
                    cpu += cpu_ns() - c0;
                }
                cpu
            });
            let mut tasks = Vec::new();
            for i in 0..n {
                let cycle = cycle.clone();
                tasks.push(tokio::task::spawn_local(async move {
                    let mut all = 0u64;
                    let (w0, w1) = slots.warm_window();
                    sleep_until_mono_async(w0).await;
                    while mono_ns() < w1 {
                        cycle(i).await?;
                        all += 1;
                    }
                    let mut counts = vec![0u64; slots.rounds as usize];
                    let mut lat = Vec::new();
                    for r in 0..slots.rounds {
                        let (from, to) = slots.round_window(r);
                        sleep_until_mono_async(from).await;
                        loop {
                            let t0 = mono_ns();
                            if t0 >= to {
                                break;
                            }
                            cycle(i).await?;
                            all += 1;
                            let t1 = mono_ns();
                            if t1 <= to {
                                counts[r as usize] += 1;
                                lat.push(t1 - t0);
                            }
                        }
                    }
                    Res::Ok((counts, lat, all))
                }));
            }
            let mut counts = vec![0u64; slots.rounds as usize];
            let mut lat = Vec::new();
            let mut all = 0;
            for t in tasks {
                let (c, l, a) = t.await??;
                for (x, y) in counts.iter_mut().zip(c) {
                    *x += y;
                }
                lat.extend(l);
                all += a;
            }
            let mut out = slots.result(&counts, lat);
            add_cpu(&mut out, meter.await?);
            Ok((out, all))
        })
        .await
}

/// Scenario 2: Re-entrant acquire+release while the same lock value already holds the lock. Prints
/// `ready` once held and waits for a line, then `ready <result>` and waits again (the
/// orchestrator reads the server's request counters in between).
async fn zk_s2(args: &Args) -> Res<serde_json::Value> {
    let client = zk_client(args).await?;
    let mutex = client.mutex(&args.str("path"))?;
    let outer = mutex.acquire().await?;
    let (warm, secs) = windows(args);
    let blocking = args.opt("api").as_deref() == Some("blocking");
    ready(json!({}));
    tokio::task::spawn_blocking(read_stdin_line).await?;
    let rt0 = zklock::support::round_trips();
    let start = mono_ns();
    let mut ops = 0u64;
    let mut measured_from = 0;
    let mut measured_ops = 0;
    let mut cpu0 = 0;
    let result = loop {
        for _ in 0..1000 {
            if blocking {
                mutex.blocking_acquire()?.blocking_release()?;
            } else {
                mutex.acquire().await?.release().await?;
            }
        }
        ops += 1000;
        let now = mono_ns();
        if measured_from == 0 && now >= start + warm {
            measured_from = now;
            measured_ops = ops;
            cpu0 = cpu_ns();
        }
        if measured_from != 0 && now >= measured_from + secs {
            let n = ops - measured_ops;
            let ns = (now - measured_from) as f64 / n as f64;
            // CPU time per pair: what a loaded machine's time slicing does not inflate.
            let cpu = (cpu_ns() - cpu0) as f64 / n as f64;
            break json!({"ops": n, "ns_per_op": ns, "ops_s": 1e9 / ns, "cpu_ns_per_op": cpu,
                         "acquire_round_trips": zklock::support::round_trips() - rt0});
        }
    };
    // Where the time goes: 1,000 re-entrant acquires kept, then their 1,000 releases.
    let mut result = result;
    let mut leases = Vec::with_capacity(1000);
    let t0 = mono_ns();
    for _ in 0..1000 {
        leases.push(if blocking {
            mutex.blocking_acquire()?
        } else {
            mutex.acquire().await?
        });
    }
    let t1 = mono_ns();
    for lease in leases.drain(..) {
        if blocking {
            lease.blocking_release()?;
        } else {
            lease.release().await?;
        }
    }
    let t2 = mono_ns();
    result["acquire_ns"] = json!((t1 - t0) as f64 / 1000.0);
    result["release_ns"] = json!((t2 - t1) as f64 / 1000.0);
    ready(result.clone());
    tokio::task::spawn_blocking(read_stdin_line).await?;
    outer.release().await?;
    client.close().await;
    Ok(result)
}

/// Scenario 3's CPU reading: from the first cycle that starts after the warm-up to the end.
struct Window {
    from: u64,
    c0: Option<u64>,
}

impl Window {
    fn new(from: u64) -> Window {
        Window { from, c0: None }
    }

    fn tick(&mut self) {
        if self.c0.is_none() && mono_ns() >= self.from {
            self.c0 = Some(cpu_ns());
        }
    }

    fn cpu(&self) -> u64 {
        self.c0.map(|c0| cpu_ns() - c0).unwrap_or(0)
    }
}

/// Scenario 3: One of several contending processes: acquire, note the time, release at once.
async fn zk_s3(args: &Args) -> Res<serde_json::Value> {
    let client = zk_client(args).await?;
    let mutex = client.mutex(&args.str("path"))?;
    let start = args.int("start-at", 0);
    let (warm, secs) = windows(args);
    let end = start + warm + secs;
    sleep_until_mono(start);
    let mut events = Vec::new();
    let mut window = Window::new(start + warm);
    while mono_ns() < end {
        window.tick();
        let lease = mutex.acquire().await?;
        let acquired = mono_ns();
        let releasing = mono_ns();
        lease.release().await?;
        events.push([acquired, releasing]);
    }
    let cpu = window.cpu();
    client.close().await;
    Ok(json!({ "events": events, "cpu_s": cpu as f64 / 1e9 }))
}

/// Scenario 8 (issue 25): election handover. Each process runs for leader on one path (Curator's
/// latch layout), resigns as soon as it leads and runs again: the events are (led, resigning)
/// as in scenario 3, and the handover is the next leader's `lead` returning after a resign call.
async fn zk_s8(args: &Args) -> Res<serde_json::Value> {
    let client = zk_client(args).await?;
    let election = client.election(&args.str("path"), zklock::ElectionStyle::Latch, None)?;
    let start = args.int("start-at", 0);
    let (warm, secs) = windows(args);
    let end = start + warm + secs;
    sleep_until_mono(start);
    let mut events = Vec::new();
    let mut window = Window::new(start + warm);
    while mono_ns() < end {
        window.tick();
        let lead = election.lead().await?;
        let led = mono_ns();
        let resigning = mono_ns();
        election.resign(lead, false).await?;
        events.push([led, resigning]);
    }
    let cpu = window.cpu();
    client.close().await;
    Ok(json!({ "events": events, "cpu_s": cpu as f64 / 1e9 }))
}

/// Scenario 4: `--locks` distinct locks cycled concurrently over one client (one session).
async fn zk_s4(args: &Args) -> Res<serde_json::Value> {
    let client = zk_client(args).await?;
    let n = args.int("locks", 64) as usize;
    let path = args.str("path");
    let locks: Arc<Vec<zklock::Mutex>> = Arc::new(
        (0..n)
            .map(|i| client.mutex(&format!("{path}/{i}")))
            .collect::<zklock::Result<_>>()?,
    );
    let (out, _) = slotted(Slots::from_args(args), n, move |i| {
        let locks = locks.clone();
        async move {
            locks[i].acquire().await?.release().await?;
            Ok(())
        }
    })
    .await?;
    client.close().await;
    Ok(out)
}

fn read_stdin_line() -> String {
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).ok();
    line
}

fn ready(v: serde_json::Value) {
    println!("ready {v}");
}

/// Scenario 5: `--waiters` waiters (over `--sessions` sessions) queue on one lock; on a stdin line the
/// holder releases and every waiter, once it holds the lock, releases at once.
async fn zk_s5(args: &Args) -> Res<serde_json::Value> {
    let servers = args.str("servers");
    let path = args.str("path");
    let waiters = args.int("waiters", 1000) as usize;
    let sessions = args.int("sessions", waiters as u64).max(1) as usize;
    let holder = zk_client(args).await?;
    let held = holder.mutex(&path)?.acquire().await?;
    let mut clients = Vec::new();
    for _ in 0..sessions {
        clients.push(zklock::Client::connect(&servers, zklock::Options::default()).await?);
    }
    let done = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for i in 0..waiters {
        let mutex = clients[i % sessions].mutex(&path)?;
        let done = done.clone();
        tasks.push(tokio::spawn(async move {
            let lease = mutex.acquire().await?;
            done.fetch_add(1, Ordering::Relaxed);
            lease.release().await?;
            Ok::<(), zklock::Error>(())
        }));
        // Queue them in order, one after another, so that the queue is what we think it is.
        if i % 50 == 49 {
            tokio::task::yield_now().await;
        }
    }
    // Wait until every waiter's node is in the queue and its watch is set.
    let counter = holder.mutex(&path)?;
    loop {
        let n = counter.participants().await?.len();
        if n == waiters + 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let rt_queued = zklock::support::round_trips();
    tokio::time::sleep(Duration::from_millis(500)).await;
    ready(json!({"queued": waiters, "sessions": sessions, "rss": rss_bytes()}));
    tokio::task::spawn_blocking(read_stdin_line).await?;
    let rt0 = zklock::support::round_trips();
    let t0 = mono_ns();
    held.release().await?;
    for t in tasks {
        t.await??;
    }
    let elapsed = mono_ns() - t0;
    let acquire_round_trips = zklock::support::round_trips() - rt0;
    let _ = rt_queued;
    let result = json!({
        "releases": waiters + 1,
        "handoffs_s": waiters as f64 / (elapsed as f64 / 1e9),
        "acquire_round_trips_after_release": acquire_round_trips,
    });
    // The server's counters are read now, before the sessions close.
    ready(result.clone());
    tokio::task::spawn_blocking(read_stdin_line).await?;
    for c in clients {
        c.close().await;
    }
    holder.close().await;
    Ok(result)
}

/// Scenario 6: RSS of this process while it holds (`--mode hold`) or waits on (`--mode wait`) `--locks`
/// distinct locks. Waiting needs another process holding them first.
async fn zk_s6(args: &Args) -> Res<serde_json::Value> {
    let client = zk_client(args).await?;
    let n = args.int("locks", 10_000) as usize;
    let path = args.str("path");
    let waiting = args.opt("mode").as_deref() == Some("wait");
    // Warm up what is allocated once (runtime, session buffers, first lock).
    let warm = client.mutex(&format!("{path}-warm"))?;
    for _ in 0..20 {
        warm.acquire().await?.release().await?;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = rss_bytes();
    let rt0 = zklock::support::round_trips();
    let mut locks = Vec::with_capacity(n);
    for i in 0..n {
        locks.push(client.mutex(&format!("{path}/{i}"))?);
    }
    let mut leases = Vec::new();
    let mut tasks = Vec::new();
    if waiting {
        // Queued in batches like the held locks below: the figure is what stays per waiting
        // lock, not the allocator's high-water mark of 10,000 acquires started in one instant
        // (that burst adds about 1.4 KB per lock of freed but still resident heap).
        for chunk in locks.chunks(200) {
            for m in chunk {
                tasks.push(tokio::spawn(m.acquire_until(None)));
            }
            // Each waiter: create+list, then the watch on its predecessor.
            while zklock::support::round_trips() - rt0 < 2 * tasks.len() as u64 {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
    } else {
        // Pipelined in batches like a busy service would.
        for chunk in locks.chunks(200) {
            let futs: Vec<_> = chunk
                .iter()
                .map(|m| tokio::spawn(m.acquire_until(None)))
                .collect();
            for f in futs {
                leases.push(f.await??);
            }
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_bytes();
    let out = json!({
        "locks": n,
        "mode": if waiting { "wait" } else { "hold" },
        "rss_before": before,
        "rss_after": after,
        "bytes_per_lock": (after as f64 - before as f64) / n as f64,
    });
    ready(out.clone());
    tokio::task::spawn_blocking(read_stdin_line).await?;
    std::process::exit(0);
}

/// The cost curve: `--depth` waiters (over at most 16 sessions) queue behind a holder on one
/// lock. `ready {"try_p50_us"}` once queued: the median of 30 try-acquires (after 10 unmeasured) by another session
/// at that depth (create, the listing of the whole queue, delete: an acquire's own work without
/// the wait). On a stdin line the holder releases and every waiter cycles (acquire, release,
/// queue again at the back, so the depth stays) for `--secs`; then `ready {"events"}` (acquired,
/// releasing) of every cycle, and the CPU time of the process over that window.
async fn zk_curve(args: &Args) -> Res<serde_json::Value> {
    let servers = args.str("servers");
    let path = args.str("path");
    let depth = args.int("depth", 10) as usize;
    let secs = (args.num("secs", 2.0) * 1e9) as u64;
    let holder = zk_client(args).await?;
    let held = holder.mutex(&path)?.acquire().await?;
    let mut clients = Vec::new();
    for _ in 0..depth.clamp(1, 16) {
        clients.push(zklock::Client::connect(&servers, zklock::Options::default()).await?);
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let events = Arc::new(std::sync::Mutex::new(Vec::<[u64; 2]>::new()));
    for i in 0..depth {
        let mutex = clients[i % clients.len()].mutex(&path)?;
        let (stop, events) = (stop.clone(), events.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let Ok(lease) = mutex.acquire().await else {
                    return;
                };
                let acquired = mono_ns();
                let releasing = mono_ns();
                if lease.release().await.is_err() {
                    return;
                }
                events.lock().unwrap().push([acquired, releasing]);
            }
        });
    }
    let probe = zklock::Client::connect(&servers, zklock::Options::default()).await?;
    let counter = probe.mutex(&path)?;
    // Counted by a bare listing, as the peers' workers do (participants() would also read
    // every node's data: 5,000 requests a poll at the deepest point).
    let lister = raw_client(args).await?;
    while lister.list_children(&path).await?.len() < depth + 1 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(lister);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut tries = Vec::new();
    for i in 0..40 {
        let t0 = mono_ns();
        if counter.try_acquire().await?.is_some() {
            return Err("curve: a try-acquire behind the holder got the lock".into());
        }
        // The first 10 warm up (a fresh session's first requests, the peers' JIT).
        if i >= 10 {
            tries.push(mono_ns() - t0);
        }
    }
    let try_p50 = crate::common::percentile(&mut tries, 50.0);
    ready(json!({"depth": depth, "try_p50_us": try_p50 as f64 / 1000.0, "rss": rss_bytes()}));
    tokio::task::spawn_blocking(read_stdin_line).await?;
    let (t0, c0) = (mono_ns(), cpu_ns());
    let releasing = mono_ns();
    held.release().await?;
    tokio::time::sleep(Duration::from_nanos(secs)).await;
    stop.store(true, Ordering::Relaxed);
    let cpu = cpu_ns() - c0;
    let mut events = std::mem::take(&mut *events.lock().unwrap());
    events.push([t0, releasing]);
    let result = json!({"depth": depth, "window_s": (mono_ns() - t0) as f64 / 1e9,
                        "cpu_s": cpu as f64 / 1e9, "events": events});
    ready(result);
    tokio::task::spawn_blocking(read_stdin_line).await?;
    // Closing the sessions deletes the waiters' nodes at once (no lingering queue).
    for c in clients {
        c.close().await;
    }
    probe.close().await;
    holder.close().await;
    std::process::exit(0);
}

async fn raw_client(args: &Args) -> Res<zk::Client> {
    Ok(zk::Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .connect(&args.str("servers"))
        .await?)
}

/// The bare operations of one uncontended lock cycle: create(ephemeral sequential) pipelined
/// with getChildren (one round trip, as zklock does), then delete.
async fn raw_cycle(zk: &zk::Client, dir: &str, prefix: &str) -> Res<()> {
    let options = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    let create = zk.create(prefix, b"raw", &options);
    let list = zk.list_children(dir);
    let ((_, seq), _children) = (create.await?, list.await?);
    zk.delete(&format!("{prefix}{seq}"), None).await?;
    Ok(())
}

/// The raw cycle plus what zklock adds, one cost at a time (`--variant`, comma-separated), to
/// measure each cause of a gap side by side:
///   watch: a getData watch on our own node after the create (zklock's lost-node watch): one
///          more request per cycle and one more notification per delete;
///   hop:   acquire and release each run as a task on a private runtime thread and are awaited
///          from this one (what zklock's steps did until 2026-11-29, and its blocking twins'
///          `block_on` still does): two cross-thread hand-offs per operation.
async fn raw_s1(args: &Args) -> Res<serde_json::Value> {
    let variant = args.opt("variant").unwrap_or_default();
    let watch = variant.split(',').any(|v| v == "watch");
    let hop = variant.split(',').any(|v| v == "hop");
    // The private runtime (only used with `hop`): one thread, like zklock's.
    let private = if hop {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            tx.send(rt.handle().clone()).ok();
            rt.block_on(std::future::pending::<()>());
        });
        Some(rx.recv()?)
    } else {
        None
    };
    let servers = args.str("servers");
    let connect = async move {
        zk::Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .connect(&servers)
            .await
    };
    let zk = match &private {
        Some(h) => h.spawn(connect).await??,
        None => connect.await?,
    };
    let dir = args.str("path");
    zk.mkdir(
        &dir,
        &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
    )
    .await
    .ok();
    let prefix = format!("{dir}/_c_00000000-0000-0000-0000-000000000000-lock-");
    let acquire = move |zk: zk::Client, dir: String, prefix: String| async move {
        let options = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
        let create = zk.create(&prefix, b"raw", &options);
        let list = zk.list_children(&dir);
        let ((_, seq), _children) = (create.await?, list.await?);
        let node = format!("{prefix}{seq}");
        if watch {
            let (zk, node) = (zk.clone(), node.clone());
            tokio::spawn(async move {
                if let Ok((_, _, w)) = zk.get_and_watch_data(&node).await {
                    w.changed().await;
                }
            });
        }
        Res::Ok(node)
    };
    let release = |zk: zk::Client, node: String| async move {
        zk.delete(&node, None).await?;
        Res::Ok(())
    };
    let (out, _) = slotted(Slots::from_args(args), 1, move |_| {
        let (zk, dir, prefix, private) = (zk.clone(), dir.clone(), prefix.clone(), private.clone());
        async move {
            match &private {
                Some(h) => {
                    let node = h.spawn(acquire(zk.clone(), dir, prefix)).await??;
                    h.spawn(release(zk, node)).await??;
                }
                None => {
                    let node = acquire(zk.clone(), dir, prefix).await?;
                    release(zk, node).await?;
                }
            }
            Ok(())
        }
    })
    .await?;
    Ok(out)
}

async fn raw_s4(args: &Args) -> Res<serde_json::Value> {
    let zk = raw_client(args).await?;
    let n = args.int("locks", 64) as usize;
    let path = args.str("path");
    for i in 0..n {
        zk.mkdir(
            &format!("{path}/{i}"),
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .ok();
    }
    let (out, _) = slotted(Slots::from_args(args), n, move |i| {
        let zk = zk.clone();
        let dir = format!("{path}/{i}");
        async move {
            let prefix = format!("{dir}/_c_00000000-0000-0000-0000-000000000000-lock-");
            raw_cycle(&zk, &dir, &prefix).await
        }
    })
    .await?;
    Ok(out)
}

/// Scenario 7: a semaphore of `--leases` N (Curator's InterProcessSemaphoreV2 layout), cycled
/// acquire+release by `--contenders` clients at once (one session each), in the slots.
async fn zk_s7(args: &Args) -> Res<serde_json::Value> {
    let (n, k) = (
        args.int("leases", 4) as u32,
        args.int("contenders", 1) as usize,
    );
    let mut clients = Vec::with_capacity(k);
    let mut sems = Vec::with_capacity(k);
    for _ in 0..k {
        let client = zk_client(args).await?;
        sems.push(Arc::new(client.semaphore(&args.str("path"), n)?));
        clients.push(client);
    }
    let slots = Slots::from_args(args);
    let rt0 = zklock::support::round_trips();
    let (mut out, cycles) = slotted(slots, k, move |i| {
        let sem = sems[i].clone();
        async move {
            sem.acquire().await?.release().await?;
            Ok(())
        }
    })
    .await?;
    out["round_trips_per_cycle"] =
        json!((zklock::support::round_trips() - rt0) as f64 / cycles.max(1) as f64);
    for c in clients {
        c.close().await;
    }
    Ok(out)
}

/// Scenario 7's request count: `ready` → (the orchestrator reads the server's packet counter)
/// go → `--cycles` uncontended cycles → `ready {"cycles": n}` → (counter again) → go.
async fn zk_s7r(args: &Args) -> Res<serde_json::Value> {
    let client = zk_client(args).await?;
    let sem = client.semaphore(&args.str("path"), args.int("leases", 4) as u32)?;
    sem.acquire().await?.release().await?;
    let cycles = args.int("cycles", 300);
    ready(json!({}));
    tokio::task::spawn_blocking(read_stdin_line).await?;
    for _ in 0..cycles {
        sem.acquire().await?.release().await?;
    }
    let result = json!({ "cycles": cycles });
    ready(result.clone());
    tokio::task::spawn_blocking(read_stdin_line).await?;
    client.close().await;
    Ok(result)
}
