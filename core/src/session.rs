//! One ZooKeeper session and what depends on it: the leases taken through it and the waiters
//! that must fail when it dies. A monitor task turns the client's connection states into lease
//! states (held / suspended / lost), after Curator's rules (safety.md).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client as zk;

use crate::error::{Error, Result};
use crate::lease::{LeaseShared, LeaseState};
use crate::options::Options;
use crate::own_watch;
use crate::signal::Signal;

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
    leases: Mutex<HashMap<u64, Weak<LeaseShared>>>,
    next_lease: AtomicU64,
    /// Leases waiting to have their own node watched (see `own_watch`).
    pub(crate) own_watches: Arc<own_watch::Queue>,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.own_watches.close();
    }
}

impl Session {
    /// Opens a session, retrying unreachable servers until `connect_timeout`. Runs on the runtime.
    pub(crate) async fn open(hosts: &str, options: &Options) -> Result<Arc<Session>> {
        let deadline = Instant::now() + options.connect_timeout;
        let mut last_error;
        let client = loop {
            let mut connector = zk::Client::connector()
                .with_session_timeout(options.session_timeout)
                .with_connection_timeout(options.connect_timeout.min(Duration::from_secs(5)))
                .with_fail_eagerly();
            if let Some(auth) = &options.auth {
                connector = connector.with_auth("digest", auth.as_bytes());
            }
            match tokio::time::timeout_at(deadline, connector.connect(hosts)).await {
                Ok(Ok(client)) => break client,
                Ok(Err(
                    err @ (zk::Error::NoHosts | zk::Error::ConnectionLoss | zk::Error::Timeout),
                )) => {
                    last_error = err.to_string();
                }
                Ok(Err(zk::Error::AuthFailed)) => {
                    return Err(Error::Permission(format!(
                        "ZooKeeper at {hosts} refused the credentials"
                    )))
                }
                Ok(Err(err)) => return Err(Error::from_zk(err, &format!("connect to {hosts}"))),
                Err(_) => last_error = "connect attempt timed out".into(),
            }
            if Instant::now() + Duration::from_millis(100) >= deadline {
                return Err(Error::Connection(format!(
                    "cannot reach ZooKeeper at {hosts} within {:?}: {last_error}",
                    options.connect_timeout
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let states = client.state_watcher();
        let session = Arc::new(Session {
            id: client.session_id().0,
            timeout: client.session_timeout(),
            zk: Mutex::new(Some(client)),
            link: Signal::new(CONNECTED),
            dead: Mutex::new(None),
            leases: Mutex::new(HashMap::new()),
            next_lease: AtomicU64::new(1),
            own_watches: Arc::default(),
        });
        tokio::spawn(monitor(Arc::downgrade(&session), states));
        tokio::spawn(own_watch::run(session.own_watches.clone()));
        Ok(session)
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
            .ok_or_else(|| Error::Closed("the ZooKeeper session is closed".into()))
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
                .unwrap_or_else(|| Error::Closed("session closed".into())),
        )
    }

    pub(crate) fn is_dead(&self) -> bool {
        self.link.get() == DEAD
    }

    /// Resolves at the next change of the connection (see `Signal::changed`).
    pub(crate) fn link_changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.link.changed()
    }

    /// Resolves with the reason once the session dies.
    pub(crate) async fn died(&self) -> Error {
        self.link.wait_until(|l| l == DEAD).await;
        self.dead_reason()
            .unwrap_or_else(|| Error::Closed("session closed".into()))
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
                Err(Error::Timeout(format!(
                    "{what}: timed out while disconnected from ZooKeeper"
                )))
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
        {
            let mut dead = self.dead.lock().unwrap();
            if dead.is_some() {
                return;
            }
            *dead = Some(reason.clone());
        }
        self.link.set(DEAD);
        self.own_watches.close();
        let client = self.zk.lock().unwrap().take();
        drop(client);
        let leases: Vec<_> = self
            .leases
            .lock()
            .unwrap()
            .drain()
            .filter_map(|(_, w)| w.upgrade())
            .collect();
        for lease in leases {
            lease.lose(reason.message());
        }
    }

    pub(crate) fn register(&self, lease: Weak<LeaseShared>) -> u64 {
        let id = self.next_lease.fetch_add(1, Ordering::Relaxed);
        self.leases.lock().unwrap().insert(id, lease);
        id
    }

    pub(crate) fn deregister(&self, id: u64) {
        self.leases.lock().unwrap().remove(&id);
    }

    fn live_leases(&self) -> Vec<Arc<LeaseShared>> {
        self.leases
            .lock()
            .unwrap()
            .values()
            .filter_map(Weak::upgrade)
            .collect()
    }

    fn set_connected(&self, connected: bool) {
        let link = if connected { CONNECTED } else { DISCONNECTED };
        self.link.update(|l| (l != DEAD).then_some(link));
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

/// Follows the connection states of one session until it ends.
async fn monitor(session: Weak<Session>, mut states: zk::StateWatcher) {
    let mut disconnected_since: Option<Instant> = None;
    loop {
        let timeout = session.upgrade().map(|s| s.timeout).unwrap_or_default();
        let state = match disconnected_since {
            // Curator's simulated expiry: without server contact for the session timeout we can
            // no longer believe we hold anything, whatever the server will decide later.
            Some(since) => match tokio::time::timeout_at(since + timeout, states.changed()).await {
                Ok(state) => state,
                Err(_) => {
                    if let Some(s) = session.upgrade() {
                        s.kill(Error::SessionExpired(format!(
                            "no contact with ZooKeeper for the session timeout ({timeout:?}); session 0x{:x} treated as expired",
                            s.id
                        )));
                    }
                    return;
                }
            },
            None => states.changed().await,
        };
        let Some(s) = session.upgrade() else { return };
        match state {
            zk::SessionState::Disconnected | zk::SessionState::ConnectedReadOnly => {
                if disconnected_since.is_none() {
                    disconnected_since = Some(Instant::now());
                }
                s.set_connected(false);
                for lease in s.live_leases() {
                    lease.set_state(LeaseState::Suspended);
                }
            }
            zk::SessionState::SyncConnected => {
                disconnected_since = None;
                s.set_connected(true);
                tokio::spawn(s.clone().verify_leases());
            }
            zk::SessionState::Expired => {
                s.kill(Error::SessionExpired(format!(
                    "ZooKeeper session 0x{:x} expired",
                    s.id
                )));
                return;
            }
            zk::SessionState::AuthFailed => {
                s.kill(Error::Permission(format!(
                    "ZooKeeper session 0x{:x} failed authentication",
                    s.id
                )));
                return;
            }
            _ => {
                s.kill(Error::Closed(format!(
                    "ZooKeeper session 0x{:x} closed",
                    s.id
                )));
                return;
            }
        }
    }
}
