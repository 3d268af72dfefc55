//! The partition-margin scenario (issue 12): a holder reaches ZooKeeper through a fault proxy, a
//! zklock waiter on a direct link queues for the same lock, the proxy is black-holed (the link
//! stays open, nothing crosses), and we measure
//!
//! ```text
//! margin = (when the waiter's acquire returned) - (when the holder's lost signal fired)
//! ```
//!
//! The same round runs with the black hole one level up ([`run_member_round`], issue 23): the
//! holder's only server is a member of a 3-node ensemble whose links to its peers are
//! black-holed, while the waiter is on another member.
//!
//! Positive: the holder knew first (safe). Negative: for that long two holders believed they held
//! the lock. The holder is anything that can report its signals as [`Event`]s: a child process
//! printing `<signal> <wall-clock ns>` lines ([`Holder::spawn`], used for Curator and kazoo) or
//! an in-process lease feeding a channel ([`Holder::from_channel`]). All times are wall-clock
//! (`CLOCK_REALTIME`) on this machine, so a child's timestamps and ours compare directly.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use zklock_testkit::{Isolation, Proxy, ZooKeeper};

/// A signal of the holder under test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    /// It holds the lock.
    Held,
    /// It cannot reach the ensemble and cannot know whether it still holds the lock.
    Suspended,
    /// Its lost signal: the one a user stops work on.
    Lost,
    /// Anything else it reports (reconnected, connected...), kept for the record.
    Other(String),
}

impl Signal {
    pub fn parse(word: &str) -> Signal {
        match word {
            "held" => Signal::Held,
            "suspended" => Signal::Suspended,
            "lost" => Signal::Lost,
            other => Signal::Other(other.to_owned()),
        }
    }
}

/// One signal and the wall-clock time it fired.
#[derive(Debug, Clone)]
pub struct Event {
    pub signal: Signal,
    pub at: SystemTime,
}

impl Event {
    /// A signal firing now.
    pub fn now(signal: Signal) -> Event {
        Event {
            signal,
            at: SystemTime::now(),
        }
    }
}

/// A lock holder under test: a stream of [`Event`]s, and whatever keeps it alive (dropped, with
/// the holder, at the end of the round).
pub struct Holder {
    name: String,
    events: Receiver<Event>,
    log: Option<PathBuf>,
    _keep: Box<dyn Send>,
}

/// Kills its child process when dropped.
struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Holder {
    /// A holder that reports through a channel, e.g. a zklock lease whose `on_state` callback
    /// sends `Event::now(...)`. `keep` (the client, the lease...) lives as long as the holder.
    pub fn from_channel(name: &str, events: Receiver<Event>, keep: impl Send + 'static) -> Holder {
        Holder {
            name: name.to_owned(),
            events,
            log: None,
            _keep: Box::new(keep),
        }
    }

    /// A holder in a child process that prints `<signal> <wall-clock ns since the epoch>` lines
    /// on stdout; its stderr goes to `log`. The child is killed when the holder is dropped.
    pub fn spawn(name: &str, mut command: Command, log: &Path) -> Result<Holder, String> {
        let stderr = std::fs::File::create(log)
            .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("{name} holder cannot start: {e}"))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let mut words = line.split_whitespace();
                let (Some(word), Some(ns)) = (words.next(), words.next()) else {
                    continue;
                };
                let Ok(ns) = ns.parse::<u64>() else { continue };
                let event = Event {
                    signal: Signal::parse(word),
                    at: UNIX_EPOCH + Duration::from_nanos(ns),
                };
                if tx.send(event).is_err() {
                    break;
                }
            }
        });
        Ok(Holder {
            name: name.to_owned(),
            events: rx,
            log: Some(log.to_owned()),
            _keep: Box::new(ChildGuard(child)),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The next event within `limit`; `Err` once the holder can send no more.
    pub fn next(&self, limit: Duration) -> Result<Option<Event>, String> {
        match self.events.recv_timeout(limit) {
            Ok(e) => Ok(Some(e)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(format!(
                "the {} holder stopped reporting (exited?){}",
                self.name,
                self.log_hint()
            )),
        }
    }

    fn log_hint(&self) -> String {
        match &self.log {
            Some(p) => {
                let text = std::fs::read_to_string(p).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(15).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                format!("; its log {}:\n{}", p.display(), tail.join("\n"))
            }
            None => String::new(),
        }
    }
}

/// A zklock holder for [`run_round`]: a client on `servers` with session timeout `session`
/// holding a mutex on `path`, its lease's `on_state` stamped on the callback thread (what a
/// user's callback sees).
pub fn zklock_holder(servers: &str, path: &str, session: Duration) -> Result<Holder, String> {
    let options = zklock::Options::default().session_timeout(session);
    let client = zklock::Client::blocking_connect(servers, options)
        .map_err(|e| format!("zklock holder cannot connect: {e}"))?;
    let lease = client
        .mutex(path)
        .and_then(|m| m.blocking_acquire())
        .map_err(|e| format!("zklock holder cannot acquire {path}: {e}"))?;
    let (tx, rx) = mpsc::channel();
    tx.send(Event::now(Signal::Held)).ok();
    let on_state = tx.clone();
    lease.on_state(move |state| {
        on_state
            .send(Event::now(Signal::parse(state.as_str())))
            .ok();
    });
    Ok(Holder::from_channel("zklock", rx, (client, lease, tx)))
}

/// A zklock holder that stops as a careful user's does: as [`zklock_holder`], and when its lease
/// turns lost it lets go of it (releases it) at once, on a thread of its own. A given-up
/// session's farewell waits for that (issue 33), so a holder that kept its lost lease would
/// measure the server's own expiry instead.
pub fn zklock_stopping_holder(
    servers: &str,
    path: &str,
    session: Duration,
) -> Result<Holder, String> {
    let options = zklock::Options::default().session_timeout(session);
    let client = zklock::Client::blocking_connect(servers, options)
        .map_err(|e| format!("zklock holder cannot connect: {e}"))?;
    let lease = client
        .mutex(path)
        .and_then(|m| m.blocking_acquire())
        .map_err(|e| format!("zklock holder cannot acquire {path}: {e}"))?;
    let (tx, rx) = mpsc::channel();
    tx.send(Event::now(Signal::Held)).ok();
    let on_state = tx.clone();
    let slot = std::sync::Arc::new(std::sync::Mutex::new(None::<zklock::Lease>));
    let to_release = slot.clone();
    lease.on_state(move |state| {
        on_state
            .send(Event::now(Signal::parse(state.as_str())))
            .ok();
        if state == zklock::LeaseState::Lost {
            let to_release = to_release.clone();
            std::thread::spawn(move || {
                if let Some(lease) = to_release.lock().unwrap().take() {
                    let _ = lease.blocking_release();
                }
            });
        }
    });
    *slot.lock().unwrap() = Some(lease);
    Ok(Holder::from_channel("zklock", rx, (client, slot, tx)))
}

/// What one round measured.
#[derive(Debug, Clone)]
pub struct Round {
    pub holder: String,
    pub session_timeout: Duration,
    /// When the black hole began: on the holder's link ([`run_round`]) or on its member's peer
    /// links ([`run_member_round`]).
    pub blackholed_at: SystemTime,
    /// When the waiter's acquire returned (the lock changed hands).
    pub waiter_acquired_at: SystemTime,
    /// The holder's first suspended signal after the black hole, if any.
    pub suspended_at: Option<SystemTime>,
    /// The holder's lost signal, if it fired at all.
    pub lost_at: Option<SystemTime>,
    /// When the black hole was healed: [`RoundOptions::outage_after_acquire`] after the waiter
    /// acquired when the holder had not fired its lost signal by then, else once it had.
    pub healed_at: SystemTime,
}

fn signed_ms(later: SystemTime, earlier: SystemTime) -> i64 {
    match later.duration_since(earlier) {
        Ok(d) => d.as_millis() as i64,
        Err(e) => -(e.duration().as_millis() as i64),
    }
}

impl Round {
    /// Waiter's acquire minus holder's lost signal, in ms: positive = the holder knew first.
    pub fn margin_ms(&self) -> Option<i64> {
        self.lost_at
            .map(|lost| signed_ms(self.waiter_acquired_at, lost))
    }

    /// The same for the suspended signal (the one careful users stop work on).
    pub fn suspended_margin_ms(&self) -> Option<i64> {
        self.suspended_at
            .map(|s| signed_ms(self.waiter_acquired_at, s))
    }

    /// Whether the lost signal fired while the link was still black-holed (else only once the
    /// holder could reach the server again and hear its session had expired).
    pub fn lost_during_outage(&self) -> bool {
        self.lost_at.is_some_and(|l| l <= self.healed_at)
    }

    /// The waiter's acquire, counted from the black hole: about when the server expired the
    /// holder's session.
    pub fn handover_ms(&self) -> i64 {
        signed_ms(self.waiter_acquired_at, self.blackholed_at)
    }

    /// The holder's lost signal, counted from the black hole.
    pub fn lost_after_blackhole_ms(&self) -> Option<i64> {
        self.lost_at.map(|l| signed_ms(l, self.blackholed_at))
    }
}

impl std::fmt::Display for Round {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let opt = |v: Option<i64>| v.map_or("never".to_owned(), |v| format!("{v:+} ms"));
        write!(
            f,
            "{} T={}s: margin {}{} (suspended margin {}); waiter acquired {} ms after the black hole",
            self.holder,
            self.session_timeout.as_secs_f64(),
            opt(self.margin_ms()),
            match self.lost_at {
                Some(lost) if !self.lost_during_outage() => format!(
                    ", lost fired only after the heal ({} ms after it)",
                    signed_ms(lost, self.healed_at)
                ),
                _ => String::new(),
            },
            opt(self.suspended_margin_ms()),
            self.handover_ms(),
        )
    }
}

/// Bounds of a round.
#[derive(Debug, Clone)]
pub struct RoundOptions {
    /// How long the holder may take to acquire (a JVM starts in it).
    pub hold_limit: Duration,
    /// How long the waiter may take after the black hole before the round fails.
    pub handover_limit: Duration,
    /// How long the black hole lasts after the waiter acquired, if the holder's lost signal has
    /// not fired by then (it ends as soon as both have happened).
    pub outage_after_acquire: Duration,
    /// How long to wait, after the heal, for a lost signal that had not fired yet.
    pub lost_after_heal: Duration,
}

impl RoundOptions {
    /// Bounds for a session timeout `t`: the waiter gets 5t + 20 s, the black hole lasts up to
    /// 2t (at least 3 s) past the handover, a late lost signal gets 60 s after the heal.
    pub fn for_session(t: Duration) -> RoundOptions {
        RoundOptions {
            hold_limit: Duration::from_secs(60),
            handover_limit: t * 5 + Duration::from_secs(20),
            outage_after_acquire: (t * 2).max(Duration::from_secs(3)),
            lost_after_heal: Duration::from_secs(60),
        }
    }
}

/// Runs one round against the ZooKeeper server at `server` (`host:port`, one server): starts a
/// fault proxy in front of it, starts the holder with `start_holder(proxy address, lock path)`,
/// queues a zklock waiter on a direct link, black-holes the proxy at a varying point of the
/// holder's ping cycle, and records when the lock changed hands and when the holder's signals
/// fired. Fails if the holder never holds, the waiter never acquires, or the holder's lost
/// signal never fires (even after the heal).
pub fn run_round(
    server: &str,
    path: &str,
    session_timeout: Duration,
    options: &RoundOptions,
    start_holder: impl FnOnce(&str, &str) -> Result<Holder, String>,
) -> Result<Round, String> {
    round_through_proxy(
        server,
        path,
        session_timeout,
        options,
        start_holder,
        Proxy::blackhole,
    )
}

/// [`run_round`] with only the server-to-client direction of the holder's link lost (issue 33):
/// what the holder sends still reaches the server, nothing comes back.
pub fn run_one_way_round(
    server: &str,
    path: &str,
    session_timeout: Duration,
    options: &RoundOptions,
    start_holder: impl FnOnce(&str, &str) -> Result<Holder, String>,
) -> Result<Round, String> {
    round_through_proxy(
        server,
        path,
        session_timeout,
        options,
        start_holder,
        Proxy::drop_to_client,
    )
}

/// One round with the holder behind a fault proxy that `cut` breaks and `heal` mends.
fn round_through_proxy(
    server: &str,
    path: &str,
    session_timeout: Duration,
    options: &RoundOptions,
    start_holder: impl FnOnce(&str, &str) -> Result<Holder, String>,
    cut: fn(&Proxy),
) -> Result<Round, String> {
    let proxy = Proxy::start(server)?;
    let holder = start_holder(proxy.addr(), path)?;
    let fault = Fault {
        waiter_server: server,
        waiter_options: zklock::Options::default().session_timeout(crate::timing::WAITER_SESSION),
        begin: || cut(&proxy),
        end: || proxy.heal(),
    };
    let round = watch_round(holder, path, session_timeout, options, fault);
    drop(proxy);
    round
}

/// The member-isolation scenario (issue 23): the holder's only server is member `holder_at` of
/// the ensemble `zk` (started with `Config::peer_proxies`), the zklock waiter is on member
/// `waiter_at` with `waiter_options`, and it is `holder_at`'s peer links that are black-holed:
/// the holder's own link stays healthy, its member still answers it until it notices it lost
/// the leader, while the rest of the ensemble expires the holder's session and hands the lock
/// over. `start_holder(member address, lock path)` starts the holder. Healing ends the
/// isolation; the member then rejoins and the holder can hear that its session expired.
#[allow(clippy::too_many_arguments)]
pub fn run_member_round(
    zk: &ZooKeeper,
    holder_at: usize,
    waiter_at: usize,
    waiter_options: zklock::Options,
    path: &str,
    session_timeout: Duration,
    options: &RoundOptions,
    start_holder: impl FnOnce(&str, &str) -> Result<Holder, String>,
) -> Result<Round, String> {
    let holder = start_holder(&zk.address(holder_at), path)?;
    let waiter_server = zk.address(waiter_at);
    let fault = Fault {
        waiter_server: &waiter_server,
        waiter_options,
        begin: || zk.isolate(holder_at, Isolation::BlackHole),
        end: || zk.heal(holder_at),
    };
    watch_round(holder, path, session_timeout, options, fault)
}

/// What separates a round's holder from the ensemble, and where its waiter queues.
struct Fault<'a, B: FnOnce(), E: FnOnce()> {
    waiter_server: &'a str,
    waiter_options: zklock::Options,
    begin: B,
    end: E,
}

/// The body of every round, whatever the fault: the holder holds, a waiter queues, the fault
/// begins, both are watched until the lock changed hands and the holder fired lost (or the
/// outage bound), the fault ends, and a late lost signal is awaited.
fn watch_round<B: FnOnce(), E: FnOnce()>(
    holder: Holder,
    path: &str,
    session_timeout: Duration,
    options: &RoundOptions,
    fault: Fault<'_, B, E>,
) -> Result<Round, String> {
    let name = holder.name().to_owned();
    let server = fault.waiter_server;

    // 1. The holder holds.
    let deadline = Instant::now() + options.hold_limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match holder.next(left)? {
            Some(Event {
                signal: Signal::Held,
                ..
            }) => break,
            Some(_) => {}
            None => {
                return Err(format!(
                    "the {name} holder did not acquire {path} within {:?}{}",
                    options.hold_limit,
                    holder.log_hint()
                ))
            }
        }
    }

    // 2. A zklock waiter on a direct link queues behind it.
    let waiter = zklock::Client::blocking_connect(server, fault.waiter_options)
        .map_err(|e| format!("waiter cannot connect to {server}: {e}"))?;
    let (acquired_tx, acquired_rx) = mpsc::channel();
    let lock = waiter.mutex(path).map_err(|e| e.to_string())?;
    let handover_limit = options.handover_limit;
    let waiting = std::thread::spawn(move || {
        let result = lock.blocking_acquire_timeout(handover_limit);
        let at = SystemTime::now();
        let _ = acquired_tx.send(result.as_ref().map(|_| at).map_err(|e| e.to_string()));
        result.ok()
    });
    let observer = waiter.mutex(path).map_err(|e| e.to_string())?;
    let queued_by = Instant::now() + Duration::from_secs(20);
    loop {
        let n = observer
            .blocking_participants()
            .map_err(|e| e.to_string())?
            .len();
        if n >= 2 {
            break;
        }
        if Instant::now() > queued_by {
            return Err(format!(
                "the waiter did not queue on {path} (participants: {n})"
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if let Ok(early) = acquired_rx.try_recv() {
        return Err(format!(
            "the waiter's acquire returned before the black hole: {early:?}"
        ));
    }

    // 3. Black hole, at a varying phase of the holder's pings (every third of T or so).
    let phase = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos() as f64
        / 1e9;
    std::thread::sleep(Duration::from_millis(100) + session_timeout.mul_f64(phase / 3.0));
    let blackholed_at = SystemTime::now();
    (fault.begin)();

    // 4. Watch both until the lock changed hands and the holder fired lost, or the outage bound.
    let started = Instant::now();
    let mut waiter_acquired_at = None;
    let mut suspended_at = None;
    let mut lost_at = None;
    let mut heal_by = None;
    loop {
        if waiter_acquired_at.is_none() {
            if let Ok(result) = acquired_rx.try_recv() {
                let at = result.map_err(|e| {
                    format!("the waiter's acquire failed during the {name} round: {e}")
                })?;
                waiter_acquired_at = Some(at);
                heal_by = Some(Instant::now() + options.outage_after_acquire);
            } else if started.elapsed() > options.handover_limit + Duration::from_secs(5) {
                return Err(format!(
                    "the waiter did not acquire within {:?} of the black hole",
                    options.handover_limit
                ));
            }
        }
        if lost_at.is_some() && waiter_acquired_at.is_some() {
            break;
        }
        if heal_by.is_some_and(|h| Instant::now() >= h) {
            break;
        }
        if let Some(e) = holder.next(Duration::from_millis(20))? {
            match e.signal {
                Signal::Suspended if suspended_at.is_none() => suspended_at = Some(e.at),
                Signal::Lost if lost_at.is_none() => lost_at = Some(e.at),
                _ => {}
            }
        }
    }
    let healed_at = SystemTime::now();
    (fault.end)();

    // 5. A lost signal that had not fired during the outage: does it fire once reconnected?
    let limit = Instant::now() + options.lost_after_heal;
    while lost_at.is_none() && Instant::now() < limit {
        if let Some(e) = holder.next(Duration::from_millis(50))? {
            match e.signal {
                Signal::Suspended if suspended_at.is_none() => suspended_at = Some(e.at),
                Signal::Lost => lost_at = Some(e.at),
                _ => {}
            }
        }
    }
    let log_hint = holder.log_hint();
    drop(holder);
    if let Ok(Some(lease)) = waiting.join() {
        let _ = lease.blocking_release();
    }
    waiter.blocking_close();
    if lost_at.is_none() {
        return Err(format!(
            "the {name} holder's lost signal did not fire, not even {:?} after the heal{log_hint}",
            options.lost_after_heal
        ));
    }
    Ok(Round {
        holder: name,
        session_timeout,
        blackholed_at,
        waiter_acquired_at: waiter_acquired_at.expect("acquired"),
        suspended_at,
        lost_at,
        healed_at,
    })
}

/// `min`, `median` (the upper one for an even count) and `max` of the rounds' margins, in ms
/// (rounds without a lost signal are left out).
pub fn margins_summary(rounds: &[Round]) -> Option<(i64, i64, i64)> {
    let mut m: Vec<i64> = rounds.iter().filter_map(Round::margin_ms).collect();
    if m.is_empty() {
        return None;
    }
    m.sort_unstable();
    Some((m[0], m[m.len() / 2], m[m.len() - 1]))
}
