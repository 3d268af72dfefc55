//! What every lock of a client shares: the connect string, the options and the current
//! ZooKeeper session. After a session dies (expired, or ZooKeeper silent for most of a session
//! timeout) the next acquire opens a fresh one. The recipes hold this, not the public `Client`,
//! which is built on top of them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::time::Instant;

use crate::base::error::{Error, Result};
use crate::base::options::{AclPolicy, Options};
use crate::base::protocol;
use crate::base::state::ConnectionState;
use crate::ops::runtime;
use crate::ops::stats::Counters;
use crate::sessions::history::History;
use crate::sessions::listeners::ConnectionListeners;
use crate::sessions::server_facts;
use crate::sessions::session::Session;

pub(crate) struct Connection {
    hosts: String,
    options: Options,
    identity: Vec<u8>,
    /// The process the client was made in: after fork() the child cannot use it.
    pid: u32,
    current: Mutex<Arc<Session>>,
    reconnect: tokio::sync::Mutex<()>,
    closed: AtomicBool,
    /// The client's lock statistics, shared with its sessions and leases.
    counters: Arc<Counters>,
    /// The client's connection-state listeners, shared with its sessions.
    listeners: Arc<ConnectionListeners>,
    /// The largest zxid any session of this client saw (a later session refuses a server whose
    /// history is older: tokens never repeat within a client's life), and a refusal of a
    /// server behind it, remembered so that the next refused acquire needs no probe session
    /// (issue 51; `history`).
    history: History,
    /// The servers' tick and version class, learned by the first session (a probe costs the
    /// servers a session: once per client).
    learned: server_facts::Learned,
}

impl Connection {
    /// Checks the input, then opens the first session. Runs on the runtime.
    pub(crate) async fn open(hosts: String, options: Options) -> Result<Connection> {
        protocol::validate_hosts(&hosts)?;
        options.validate()?;
        let counters = Arc::new(Counters::new(options.path_stats_limit));
        let listeners = Arc::new(ConnectionListeners::default());
        let history = History::default();
        let learned = server_facts::Learned::default();
        let session = Session::open(
            &hosts, &options, &counters, &listeners, None, &history, &learned,
        )
        .await?;
        Ok(Connection {
            counters,
            listeners,
            identity: options.identity_bytes(),
            hosts,
            options,
            pid: runtime::current_pid(),
            current: Mutex::new(session),
            reconnect: tokio::sync::Mutex::new(()),
            closed: AtomicBool::new(false),
            history,
            learned,
        })
    }

    pub(crate) fn hosts(&self) -> &str {
        &self.hosts
    }

    pub(crate) fn current(&self) -> Arc<Session> {
        self.current.lock().unwrap().clone()
    }

    /// Closed, or inherited across fork() (then it is the parent's, and closed here).
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire) || self.inherited()
    }

    /// This client was made in a parent process and reached us through fork().
    fn inherited(&self) -> bool {
        self.pid != runtime::current_pid()
    }

    /// Closes the session and waits (a little) until ZooKeeper has been told: a process that
    /// exits right after `close` must not leave its nodes for the session timeout.
    pub(crate) async fn close(&self) {
        // An inherited client's session and socket are the parent's: closing them here would
        // end the parent's session (and its locks). Only this process's view closes.
        if self.inherited() {
            self.closed.store(true, Ordering::Release);
            return;
        }
        if !self.closed.swap(true, Ordering::AcqRel) {
            let reason = Error::closed(format!("the client for {} was closed", self.hosts));
            self.current().close(reason).await;
        }
    }

    /// Where the connection stands: `Lost` once closed, else the current session's state.
    pub(crate) fn connection_state(&self) -> ConnectionState {
        if self.is_closed() {
            return ConnectionState::Lost;
        }
        self.current().connection_state()
    }

    pub(crate) fn listeners(&self) -> &ConnectionListeners {
        &self.listeners
    }

    pub(crate) fn identity(&self) -> &[u8] {
        &self.identity
    }

    pub(crate) fn counters(&self) -> &Counters {
        &self.counters
    }

    pub(crate) fn acl(&self) -> AclPolicy {
        self.options.acl
    }

    /// The live session, opening a new one when the last one died. Runs on the runtime.
    pub(crate) async fn session(&self) -> Result<Arc<Session>> {
        self.session_by(None).await
    }

    /// `session`, opening a new one (when needed) by `deadline` at the latest: an acquire's
    /// deadline bounds the reconnect it implies.
    pub(crate) async fn session_by(&self, deadline: Option<Instant>) -> Result<Arc<Session>> {
        self.check_usable()?;
        let current = self.current();
        if !current.is_dead() {
            return Ok(current);
        }
        let _one_at_a_time = self.reconnect.lock().await;
        self.check_usable()?;
        let current = self.current();
        if !current.is_dead() {
            return Ok(current);
        }
        // Boxed: connecting is a large future, and every acquire future would otherwise carry
        // its size (memory per waiting lock).
        let fresh = Box::pin(Session::open(
            &self.hosts,
            &self.options,
            &self.counters,
            &self.listeners,
            deadline,
            &self.history,
            &self.learned,
        ))
        .await?;
        *self.current.lock().unwrap() = fresh.clone();
        Ok(fresh)
    }

    /// `err`, and when it is a timeout and a connection to ZooKeeper failed since `since`, that
    /// failure as its cause: a wait filled by a server that kept breaking the connection must
    /// not read as a lock that was contended. The kind stays `Timeout`.
    pub(crate) fn explain_timeout<T>(&self, result: Result<T>, since: Instant) -> Result<T> {
        match result {
            Err(e) if e.kind() == crate::ErrorKind::Timeout => {
                match self.current().connection_failure_since(since) {
                    Some(why) => {
                        let e = e.noted(format!(
                            "meanwhile the connection to ZooKeeper kept failing (last: {why})"
                        ));
                        // At warn, unlike a settled acquire: a face whose timed-out acquire
                        // returns no error (Python's `acquire()` returning False) still lets
                        // its user see the cause.
                        crate::ops::observe::explained_timeout(&self.counters, e.message());
                        Err(e)
                    }
                    None => Err(e),
                }
            }
            other => other,
        }
    }

    /// `Closed` after close, or in a child forked after the client was made.
    pub(crate) fn check_usable(&self) -> Result<()> {
        if self.inherited() {
            return Err(Error::closed(format!(
                "this client for {} was inherited across fork() from process {}: it belongs to \
                 the parent and is closed here; create a new client in the child process",
                self.hosts, self.pid
            )));
        }
        if self.is_closed() {
            return Err(Error::closed(format!(
                "the client for {} is closed",
                self.hosts
            )));
        }
        Ok(())
    }
}
