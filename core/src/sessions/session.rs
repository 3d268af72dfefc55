//! One ZooKeeper session and what depends on it: the leases taken through it and the waiters
//! that must fail when it dies. A monitor task turns the client's connection states into lease
//! states (held / suspended / lost); a lifeline task proves to itself, with `sync` heartbeats,
//! that the ZooKeeper leader keeps hearing of the session, and declares it lost before the
//! leader could have expired it (see `lifeline`). Reading a lease's state checks that deadline
//! too, so no state read says `held` after it passed. The proof is made on demand: the session
//! counts its leases and its acquires under way (`Demand`), and its deadline binds only once an
//! acquire found it fresh (`armed`), until the session has been idle for `lifeline::warm`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::time::Instant;
use zklock_wire::client as zk;

use crate::base::clock::BootInstant;
use crate::base::error::{Error, ErrorKind, Result};
use crate::base::options::AclPolicy;
use crate::base::options::Options;
use crate::base::secure;
use crate::base::signal::Signal;
use crate::base::state::{ConnectionState, LeaseState};
use crate::ops::observe;
use crate::ops::stats::Counters;
use crate::sessions::farewell;
use crate::sessions::history::{self, History};
use crate::sessions::lifeline::{self, Lifeline};
use crate::sessions::listeners::ConnectionListeners;
use crate::sessions::own_watch;
use crate::sessions::server_facts::{self, ServerFeatures};

pub(crate) use crate::sessions::member::Member;

/// How long closing a client waits for the transport to tell ZooKeeper (in-flight requests that
/// still hold the transport let go when they fail, which the dead session makes quick).
const CLOSE_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// How long closing a given-up session waits for its farewell beyond the session timeout (the
/// farewell's own sends are bounded; this only keeps a lost thread from holding up a close).
const FAREWELL_CLOSE_SLACK: Duration = Duration::from_secs(5);

/// The values of `Session::link`.
const CONNECTED: u8 = 0;
const DISCONNECTED: u8 = 1;
/// Final: the session can no longer hold locks (`Session::dead` says why).
const DEAD: u8 = 2;

pub(crate) struct Session {
    /// `None` once the session is dead: dropping the last clone closes it.
    zk: Mutex<Option<zk::Client>>,
    pub(crate) id: i64,
    pub(crate) timeout: Duration,
    /// Connected, disconnected or dead.
    link: Signal,
    /// Why the session can no longer hold locks; set before `link` becomes `DEAD`.
    dead: Mutex<Option<Error>>,
    leases: Mutex<HashMap<u64, Weak<dyn Member>>>,
    next_lease: AtomicU64,
    /// Leases waiting to have their own node watched (see `own_watch`).
    pub(crate) own_watches: Arc<own_watch::Queue>,
    /// When the server answered us last (by send time), hence when our leases must be lost.
    lifeline: Lifeline,
    /// Wakes the lifeline task to look again (an answer, a reconnect, demand from idle).
    beat_now: Arc<tokio::sync::Notify>,
    /// Set at each reconnect: the lifeline's next heartbeat goes at once, however recent the
    /// last one (most often lost with the old connection) was.
    relinked: AtomicBool,
    /// What needs the proof: leases registered and acquires under way.
    demand: Mutex<Demand>,
    /// Whether the lifeline's deadline binds (leases turn lost and the session is given up at
    /// it). Set by an acquire that found the deadline at least `lifeline::floor` ahead, cleared
    /// once the session was idle for `lifeline::warm`; written under `demand`'s lock.
    armed: AtomicBool,
    /// Told when a heartbeat's answer came (acquires waiting for a fresh proof look again).
    proof_moved: tokio::sync::Notify,
    /// The client's statistics (reconnects, expiries, and its leases' events).
    pub(crate) counters: Arc<Counters>,
    /// The client's connection-state listeners, told of this session's changes.
    listeners: Arc<ConnectionListeners>,
    /// The ACL policy of the client's nodes (a lease's guarded creates use it too).
    pub(crate) acl: AclPolicy,
    /// The connect string, and whether it is plain TCP (for `farewell`).
    hosts: String,
    plain: bool,
    /// The farewell of a session the lifeline gave up, once scheduled (`give_up`).
    farewell: Mutex<Option<Arc<farewell::Farewell>>>,
    /// The largest zxid the client has seen, over all its sessions (see `history_behind`).
    zxid_seen: Arc<AtomicI64>,
    /// What the client learned of its servers at its first connect (`server_facts`).
    pub(crate) features: ServerFeatures,
    /// Its part in its member's proof chain in this process (`carrier`, `share`).
    share: Mutex<share::Share>,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.own_watches.close();
        self.leave_chain();
    }
}

/// Fails when the server did not authenticate our SASL user (issue 27, point 8). A ZooKeeper
/// server without a SASL login (no JAAS `Server` section) has no SASL server on the connection,
/// yet answers the client's SASL token with success and an empty token: `ZooKeeperServer
/// .processSasl` catches the NullPointerException, logs "cnxn.saslServer is null" and replies OK;
/// no `sasl` identity is added (`cnxn.addAuthInfo` runs only when the exchange completes). The
/// credentials would be silently unused, and the first create with a creator ACL would fail with
/// "invalid ACL". `whoami` (ZooKeeper 3.7+, ZOOKEEPER-3969: the session's identities) tells; a
/// server too old for it (known from `server_facts`, as asking would cost the connection) is
/// given the benefit of the doubt.
async fn sasl_in_effect(
    client: &zk::Client,
    hosts: &str,
    sasl: &secure::Sasl,
    deadline: Instant,
) -> Result<()> {
    // The connect's deadline, but time for one round trip even when it is nearly used up.
    let by = deadline.max(Instant::now() + Duration::from_secs(2));
    match tokio::time::timeout_at(by, client.who_am_i()).await {
        Ok(Ok(users)) if users.iter().any(|u| u.auth_scheme == "sasl") => Ok(()),
        Ok(Ok(_)) => Err(Error::new(
            ErrorKind::Permission,
            format!(
                "ZooKeeper at {hosts} did not authenticate SASL user {}: the server has no SASL \
                 configured (no JAAS Server section), so the credentials would be unused and \
                 ACLs naming the user would fail",
                crate::base::protocol::shown(&sasl.user)
            ),
        )),
        Ok(Err(zk::Error::Unimplemented)) => Ok(()),
        Ok(Err(e)) => Err(Error::from_zk(
            e,
            &format!("confirm the SASL login at {hosts}"),
        )),
        Err(_) => Err(Error::new(
            ErrorKind::Connection,
            format!("ZooKeeper at {hosts} did not answer whoami after the SASL login in time"),
        )),
    }
}

impl Session {
    /// Opens a session, retrying unreachable servers until `connect_timeout`, or until `until`
    /// when that comes first (the deadline of the acquire that needs the session: a deadline
    /// bounds the connect it implies). Runs on the runtime.
    pub(crate) async fn open(
        hosts: &str,
        options: &Options,
        counters: &Arc<Counters>,
        listeners: &Arc<ConnectionListeners>,
        until: Option<Instant>,
        history: &History,
        learned: &server_facts::Learned,
    ) -> Result<Arc<Session>> {
        // A connect timeout beyond what an instant holds means: keep trying.
        let far = Duration::from_secs(100 * 365 * 86_400);
        let started = Instant::now();
        let connect_by = started + options.connect_timeout.min(far);
        let deadline = until.map_or(connect_by, |u| u.min(connect_by));
        let mut last_error;
        let tls = options.tls.as_ref().map(secure::load).transpose()?;
        if tls.is_some() {
            secure::check_tls_hosts(hosts)?;
        }
        let mut diagnosed = false;
        let client_options = zk::ClientOptions {
            session_timeout: options.session_timeout,
            connect_timeout: options.connect_timeout.min(Duration::from_secs(5)),
            auth: options
                .auth
                .iter()
                .map(|a| ("digest".to_owned(), a.as_bytes().to_vec()))
                .collect(),
            sasl: options.sasl.as_ref().map(|s| zk::SaslLogin {
                user: s.user.clone(),
                password: s.password.clone(),
            }),
            max_packet: crate::base::protocol::MAX_PACKET_BYTES,
            // A server whose history is older than what an earlier session of this client saw
            // refuses the session, so no token (a czxid) it hands out can repeat an earlier one.
            last_zxid_seen: history.seen().load(Ordering::Acquire),
        };
        let mut history_checked = false;
        let secure = tls.as_ref().map(secure::LoadedTls::connector);
        let (client, sent) = loop {
            let sent = BootInstant::now();
            let connecting = zk::Client::connect(hosts, client_options.clone(), secure.clone());
            match tokio::time::timeout_at(deadline, connecting).await {
                Ok(Ok(client)) => break (client, sent),
                // Every server answered in HTTP: a wrong port, which retrying cannot heal.
                Ok(Err(zk::ConnectError::Unreachable(
                    err @ zklock_wire::Error::Frame(zklock_wire::frame::FrameError::Http),
                ))) => {
                    return Err(Error::new(
                        ErrorKind::Connection,
                        format!("cannot connect to ZooKeeper at {hosts}: {err}"),
                    ));
                }
                Ok(Err(zk::ConnectError::Unreachable(err))) => {
                    last_error = err.to_string();
                    // How a server refuses a client that saw a newer zxid: it closes the
                    // connection without an answer. Told apart from a server that is going
                    // down, once per connect.
                    if client_options.last_zxid_seen > 0
                        && matches!(err, zklock_wire::Error::ServerClosed)
                        && !history_checked
                    {
                        history_checked = true;
                        let seen = client_options.last_zxid_seen;
                        if let Some(why) = history.refused(seen) {
                            return Err(Error::new(ErrorKind::Connection, why));
                        }
                        let probe = history::behind(hosts, &client_options, secure.clone());
                        if let Ok(Some(why)) = tokio::time::timeout_at(deadline, probe).await {
                            history.remember(seen, &why);
                            return Err(Error::new(ErrorKind::Connection, why));
                        }
                    }
                    // Once per connect: a certificate or protocol mismatch does not heal by
                    // retrying, so it fails now with the reason (see `secure`).
                    if !diagnosed {
                        diagnosed = true;
                        // Within the deadline: a silent server would hold the probe for
                        // its whole limit.
                        let probe = secure::diagnose(hosts, tls.as_ref());
                        let why = tokio::time::timeout_at(deadline, probe)
                            .await
                            .ok()
                            .flatten();
                        if let Some(why) = why {
                            return Err(Error::new(
                                ErrorKind::Connection,
                                format!("cannot connect to ZooKeeper at {hosts}: {why}"),
                            ));
                        }
                    }
                }
                Ok(Err(zk::ConnectError::Client(zk::Error::AuthFailed))) => {
                    let whose = match (&options.sasl, &options.auth) {
                        (Some(s), _) => format!("SASL user {:?}", s.user),
                        (None, Some(a)) => {
                            format!("digest user {:?}", a.split_once(':').map_or("", |(u, _)| u))
                        }
                        (None, None) => "no credentials".into(),
                    };
                    return Err(Error::new(
                        ErrorKind::Permission,
                        format!("ZooKeeper at {hosts} refused the credentials ({whose})"),
                    ));
                }
                Ok(Err(zk::ConnectError::Client(err))) => {
                    return Err(Error::from_zk(err, &format!("connect to {hosts}")))
                }
                Err(_) => last_error = "connect attempt timed out".into(),
            }
            if Instant::now() + Duration::from_millis(100) >= deadline {
                return Err(Error::new(
                    ErrorKind::Connection,
                    format!(
                        "cannot reach ZooKeeper at {hosts} within {:?}{}: {last_error}",
                        deadline.saturating_duration_since(started),
                        if deadline < connect_by {
                            " (the acquire's deadline)"
                        } else {
                            ""
                        }
                    ),
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let granted = client.session_timeout();
        // The servers' tick and version class, once per client (issue 53); within the
        // connect's deadline, with time for a round trip or two when it is nearly used up.
        // Dropping the client closes the session it opened.
        let by = deadline.max(Instant::now() + Duration::from_secs(2));
        let learning = server_facts::learn(
            learned,
            hosts,
            &client_options,
            secure.clone(),
            &client,
            counters,
        );
        let facts = tokio::time::timeout_at(by, learning).await.map_err(|_| {
            Error::new(
                ErrorKind::Connection,
                format!("ZooKeeper at {hosts} did not answer the probe of its tick in time"),
            )
        })??;
        let tick = server_facts::adopt(options.server_tick, &facts, granted, hosts)?;
        // whoAmI only where the server knows it: an op a server does not know costs the
        // connection (`server_facts`), here the client's own. Dropping the client closes the
        // session it opened.
        if let (Some(sasl), true) = (&options.sasl, facts.features.who_am_i()) {
            sasl_in_effect(&client, hosts, sasl, deadline).await?;
        }
        lifeline::check_timing(granted, tick)?;
        let states = client.state_watcher();
        let session = Arc::new(Session {
            id: client.session_id(),
            timeout: granted,
            lifeline: Lifeline::new(granted, tick, sent),
            zk: Mutex::new(Some(client)),
            link: Signal::new(CONNECTED),
            dead: Mutex::new(None),
            leases: Mutex::new(HashMap::new()),
            next_lease: AtomicU64::new(1),
            own_watches: Arc::default(),
            beat_now: Arc::default(),
            relinked: AtomicBool::new(false),
            demand: Mutex::new(Demand {
                count: 0,
                leases: 0,
                warm_until: None,
            }),
            armed: AtomicBool::new(false),
            proof_moved: tokio::sync::Notify::new(),
            counters: counters.clone(),
            listeners: listeners.clone(),
            acl: options.acl,
            hosts: hosts.to_owned(),
            plain: tls.is_none(),
            farewell: Mutex::new(None),
            zxid_seen: history.seen().clone(),
            features: facts.features,
            share: Mutex::default(),
        });
        session.join_chain();
        session.event("opened", "");
        tokio::spawn(monitor(Arc::downgrade(&session), states));
        tokio::spawn(keep_alive(Arc::downgrade(&session)));
        tokio::spawn(own_watch::run(session.own_watches.clone()));
        Ok(session)
    }

    /// The bytes the transport puts before each path of a request: the connect string's chroot
    /// (none for `/` or no chroot).
    /// The connect string's chroot, if it has one (not `/`).
    pub(crate) fn chroot(&self) -> Option<&str> {
        match self.hosts.find('/') {
            Some(i) if &self.hosts[i..] != "/" => Some(&self.hosts[i..]),
            _ => None,
        }
    }

    pub(crate) fn chroot_bytes(&self) -> usize {
        match self.hosts.find('/') {
            Some(i) if &self.hosts[i..] != "/" => self.hosts.len() - i,
            _ => 0,
        }
    }

    /// The tick its lifeline runs on (`server_facts::adopt`).
    pub(crate) fn tick(&self) -> Duration {
        self.lifeline.tick()
    }

    /// A handle for requests, or the reason the session is gone.
    pub(crate) fn zk(&self) -> Result<zk::Client> {
        if let Some(err) = self.dead_reason() {
            return Err(err);
        }
        self.zk
            .lock()
            .unwrap()
            .clone()
            .ok_or_else(|| Error::closed("the ZooKeeper session is closed"))
    }

    /// Why this session's last connection broke (or the last attempt failed), if that was at
    /// or after `since`.
    pub(crate) fn connection_failure_since(&self, since: Instant) -> Option<String> {
        let zk = self.zk.lock().unwrap().clone()?;
        let (at, why) = zk.last_connection_failure()?;
        (Instant::from_std(at) >= since).then(|| why.to_string())
    }

    pub(crate) fn dead_reason(&self) -> Option<Error> {
        if !self.is_dead() {
            return None;
        }
        Some(
            self.dead
                .lock()
                .unwrap()
                .clone()
                .unwrap_or_else(|| Error::closed("session closed")),
        )
    }

    pub(crate) fn is_dead(&self) -> bool {
        self.link.get() == DEAD
    }

    /// Whether the session can still hold locks at this instant: dead, or past the lifeline's
    /// deadline while it binds (then it is given up here and now, before the lifeline task
    /// wakes up). An idle or only waiting session's deadline binds nothing: it holds nothing.
    pub(crate) fn is_lost_now(&self) -> bool {
        if self.is_dead() {
            return true;
        }
        // `is_past` reads the boot clock: a holder resumed from a suspend reads `lost` here at
        // once, before the lifeline's timer (late by the suspend, up to `MAX_SLEEP`) wakes.
        if self.is_armed() && self.lifeline.is_past() && self.rearm(Instant::now()) {
            self.give_up();
            return true;
        }
        false
    }

    /// Until when no one else can hold what this session holds (the lifeline's deadline, see
    /// `Lease::valid_until`); `None` once the session is lost, or while its deadline does not
    /// bind (no lease exists then: an acquire arms it first, `proven`).
    /// On the boot clock (`base::clock`), which counts a suspend.
    pub(crate) fn valid_until(&self) -> Option<BootInstant> {
        (self.is_armed() && !self.is_lost_now()).then(|| self.lifeline.lost_at())
    }

    /// The lifeline's deadline passed: every lease is lost and the session closed, also on the
    /// server when only the direction to it still works (`farewell`). Lost first: the farewell
    /// hands the lock on, so it waits for the lost signal's time and its holder (issue 33).
    fn give_up(&self) {
        // Held through `end`, so that the transport does not close the session itself when
        // `end` lets go of it: a CloseSession would hand the lock on a round trip after the lost
        // signal, while the holder may still be stopping. It is abandoned instead (nothing more
        // is sent), and the farewell or the server's own expiry closes the session.
        let transport = self.zk.lock().unwrap().clone();
        let credentials = transport
            .as_ref()
            .map(|zk| (zk.session_id(), zk.session_password()));
        let proven = self.lifeline.proven();
        let now = BootInstant::now();
        let since = now.saturating_duration_since(proven);
        let lost = self.end(Error::new(
            ErrorKind::SessionExpired,
            format!(
                "the ZooKeeper leader has not provably heard of session 0x{:x} for {} \
                 (session timeout {}, server tick {}); treated as expired before the \
                 server can expire it",
                self.id,
                crate::base::text::duration(since),
                crate::base::text::duration(self.timeout),
                crate::base::text::duration(self.lifeline.tick())
            ),
        ));
        if let Some(transport) = transport {
            transport.abandon();
        }
        let (Some(leases), Some((id, password)), true) = (lost, credentials, self.plain) else {
            return;
        };
        let farewell = farewell::Farewell::new(
            &self.hosts,
            id,
            password.to_vec(),
            self.timeout,
            self.lifeline.tick(),
            proven.to_std(),
            now.to_std(),
            leases,
        );
        farewell.start();
        *self.farewell.lock().unwrap() = Some(farewell);
    }

    /// What happened to the session (`opened`, `disconnected`, `reconnected`, `expired`,
    /// `closed`, `ended`): counted and logged (`observe`), and told to the client's
    /// connection-state listeners.
    fn event(&self, what: &'static str, reason: &str) {
        observe::session_event(&self.counters, self.id, what, reason);
        self.listeners.tell(match what {
            "opened" | "reconnected" => ConnectionState::Connected,
            "disconnected" => ConnectionState::Suspended,
            _ => ConnectionState::Lost,
        });
    }

    /// The connection as a client's listeners see it, checking the lifeline's deadline on the
    /// spot (as a lease's state read does).
    pub(crate) fn connection_state(&self) -> ConnectionState {
        if self.is_lost_now() {
            ConnectionState::Lost
        } else if self.link.get() == CONNECTED {
            ConnectionState::Connected
        } else {
            ConnectionState::Suspended
        }
    }

    /// Resolves at the next change of the connection (see `Signal::changed`).
    pub(crate) fn link_changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.link.changed()
    }

    /// Resolves with the reason once the session dies.
    pub(crate) async fn died(&self) -> Error {
        self.link.wait_until(|l| l == DEAD).await;
        self.dead_reason()
            .unwrap_or_else(|| Error::closed("session closed"))
    }

    /// Waits until connected (or returns at once). Fails when the session dies or the deadline passes.
    pub(crate) async fn wait_connected(&self, deadline: Option<Instant>, what: &str) -> Result<()> {
        let wait = async {
            match self.link.wait_until(|l| l != DISCONNECTED).await {
                DEAD => Err(self.died().await),
                _ => Ok(()),
            }
        };
        match deadline {
            None => wait.await,
            Some(d) => tokio::time::timeout_at(d, wait).await.unwrap_or_else(|_| {
                Err(Error::new(
                    ErrorKind::Timeout,
                    format!("{what}: timed out while disconnected from ZooKeeper"),
                ))
            }),
        }
    }

    /// After a transient error: a short pause (the monitor may not have seen the disconnect
    /// yet), then wait for the connection to come back. Boxed: it is rare, and the futures
    /// of its many callers stay small without it inline (memory per waiting lock).
    pub(crate) fn recover<'a>(
        &'a self,
        deadline: Option<Instant>,
        what: &'a str,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>> + Send + 'a>> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            self.wait_connected(deadline, what).await
        })
    }

    /// Declares the session dead: every lease of it is lost, waiters fail, and the ZooKeeper
    /// session is closed (which deletes its ephemeral nodes when a server is reachable).
    pub(crate) fn kill(&self, reason: Error) {
        let _ = self.end(reason);
    }

    /// `kill`, returning the leases it turned lost, or `None` when the session was dead already.
    fn end(&self, reason: Error) -> Option<Vec<Weak<dyn Member>>> {
        {
            let mut dead = self.dead.lock().unwrap();
            if dead.is_some() {
                return None;
            }
            *dead = Some(reason.clone());
        }
        let what = match reason.kind() {
            ErrorKind::SessionExpired => "expired",
            ErrorKind::Closed => "closed",
            _ => "ended",
        };
        self.event(what, reason.message());
        self.link.set(DEAD);
        self.own_watches.close();
        self.leave_chain();
        let client = self.zk.lock().unwrap().take();
        if let Some(client) = &client {
            self.zxid_seen
                .fetch_max(client.last_zxid(), Ordering::AcqRel);
        }
        drop(client);
        let leases: Vec<_> = self
            .leases
            .lock()
            .unwrap()
            .drain()
            .map(|(_, w)| w)
            .collect();
        self.leases_ended(leases.len());
        for lease in leases.iter().filter_map(Weak::upgrade) {
            lease.lose(reason.message());
        }
        Some(leases)
    }

    /// Kills the session (`kill`) and waits until the transport has sent ZooKeeper its
    /// CloseSession (then the server deletes our nodes at once), at most `CLOSE_WAIT` (a healthy
    /// link answers in milliseconds; a dead one must not hold up an exiting process for long).
    pub(crate) async fn close(&self, reason: Error) {
        let watcher = self
            .zk
            .lock()
            .unwrap()
            .as_ref()
            .map(zk::Client::state_watcher);
        self.kill(reason);
        // A given-up session's farewell (`give_up`): a process that exits right after closing
        // would take it along, and the server would keep the lock until its own expiry. Waited
        // for only once the holder let go of its leases (else it is not due before that).
        let farewell = self.farewell.lock().unwrap().clone();
        if let Some(farewell) = farewell.filter(|f| f.let_go()) {
            let bound = self.timeout + FAREWELL_CLOSE_SLACK;
            let _ = tokio::time::timeout(bound, farewell.finished()).await;
        }
        let Some(mut watcher) = watcher else { return };
        let closed = async {
            while !watcher.peek_state().is_terminated() {
                watcher.changed().await;
            }
        };
        let _ = tokio::time::timeout(CLOSE_WAIT, closed).await;
    }

    /// A lease of this session: it counts as demand for the proof until `deregister`.
    pub(crate) fn register(&self, lease: Weak<dyn Member>) -> u64 {
        let id = self.next_lease.fetch_add(1, Ordering::Relaxed);
        self.leases.lock().unwrap().insert(id, lease);
        self.lease_began();
        id
    }

    /// The lease is released or gone (twice is harmless).
    pub(crate) fn deregister(&self, id: u64) {
        if self.leases.lock().unwrap().remove(&id).is_some() {
            self.leases_ended(1);
        }
    }

    fn live_leases(&self) -> Vec<Arc<dyn Member>> {
        self.leases
            .lock()
            .unwrap()
            .values()
            .filter_map(Weak::upgrade)
            .collect()
    }

    /// True if the link changed (a live session's connection broke or came back).
    fn set_connected(&self, connected: bool) -> bool {
        let link = if connected { CONNECTED } else { DISCONNECTED };
        self.link.update(|l| (l != DEAD).then_some(link))
    }

    /// After a reconnect to the same session: a lease is held again only if its node still exists
    /// and still belongs to us.
    async fn verify_leases(self: Arc<Self>) {
        let Ok(zk) = self.zk() else { return };
        for lease in self.live_leases() {
            if lease.state() != LeaseState::Suspended {
                continue;
            }
            match zk.check_stat(lease.node()).await {
                Ok(Some(stat)) if stat.ephemeral_owner == self.id => {
                    lease.set_state(LeaseState::Held)
                }
                Ok(_) => lease.lose("our lock node no longer exists after reconnecting"),
                Err(_) => {} // disconnected again: the next reconnect checks again
            }
        }
    }
}

// The session's tasks (its connection monitor and its lifeline's heartbeat), in a file of their
// own to keep this one under the size limit; a child module, so they reach the session's fields.
mod tasks;
pub use tasks::heartbeats;
// What needs the proof, and when its deadline binds; a child module for the same reasons.
mod demand;
// Its part in its member's proof chain (carrier, sharer or its own); the same.
mod share;
use demand::Demand;
use tasks::{keep_alive, monitor};
