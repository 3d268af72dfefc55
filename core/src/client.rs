//! The client: one ZooKeeper session at a time over an ensemble connect string. After a session
//! dies (expired, or no server contact for the session timeout) the next acquire opens a fresh one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::{Error, ErrorKind, Result};
use crate::lease::on_runtime;
use crate::lock::{Lock, MultiLock, RwLock};
use crate::options::{AclPolicy, Options};
use crate::protocol::{self, NodeKind};
use crate::runtime;
use crate::session::Session;

/// A connection to a ZooKeeper ensemble. Cheap to clone; clones share the session.
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

struct ClientInner {
    hosts: String,
    options: Options,
    identity: Vec<u8>,
    /// The process the client was made in: after fork() the child cannot use it.
    pid: u32,
    current: Mutex<Arc<Session>>,
    reconnect: tokio::sync::Mutex<()>,
    closed: AtomicBool,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("hosts", &self.inner.hosts)
            .field("session_id", &self.session_id())
            .finish()
    }
}

impl Client {
    /// Connects to `hosts` (`host:port,host:port/optional/chroot`).
    pub async fn connect(hosts: &str, options: Options) -> Result<Client> {
        let hosts = hosts.to_owned();
        on_runtime(async move { Client::connect_on_runtime(hosts, options).await }).await
    }

    /// Blocking twin of [`Client::connect`].
    pub fn blocking_connect(hosts: &str, options: Options) -> Result<Client> {
        let hosts = hosts.to_owned();
        runtime::block_on(async move { Client::connect_on_runtime(hosts, options).await })
    }

    async fn connect_on_runtime(hosts: String, options: Options) -> Result<Client> {
        protocol::validate_hosts(&hosts)?;
        options.validate()?;
        runtime::claim_transport()?;
        let session = Session::open(&hosts, &options).await?;
        Ok(Client {
            inner: Arc::new(ClientInner {
                identity: options.identity_bytes(),
                hosts,
                options,
                pid: runtime::current_pid(),
                current: Mutex::new(session),
                reconnect: tokio::sync::Mutex::new(()),
                closed: AtomicBool::new(false),
            }),
        })
    }

    /// An exclusive, re-entrant lock on `path`.
    pub fn mutex(&self, path: &str) -> Result<Lock> {
        self.check_usable()?;
        Lock::new(self.clone(), path, NodeKind::Mutex)
    }

    /// A read/write lock on `path`.
    pub fn rw_lock(&self, path: &str) -> Result<RwLock> {
        self.check_usable()?;
        RwLock::new(self.clone(), path)
    }

    /// Exclusive locks on several paths, taken as one.
    pub fn multi_lock<S: AsRef<str>>(
        &self,
        paths: impl IntoIterator<Item = S>,
    ) -> Result<MultiLock> {
        self.check_usable()?;
        MultiLock::from_paths(self, paths)
    }

    /// The connect string this client was made with.
    pub fn hosts(&self) -> &str {
        &self.inner.hosts
    }

    /// The current session's id.
    pub fn session_id(&self) -> i64 {
        self.inner.current.lock().unwrap().id
    }

    /// The negotiated session timeout of the current session.
    pub fn session_timeout(&self) -> std::time::Duration {
        self.inner.current.lock().unwrap().timeout
    }

    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    /// Closes the session: every lease taken through this client becomes lost, its nodes are
    /// deleted by the server, and later calls fail with `Closed`.
    pub async fn close(&self) {
        let this = self.clone();
        let _ = on_runtime(async move {
            this.close_on_runtime().await;
            Ok(())
        })
        .await;
    }

    /// Blocking twin of [`Client::close`].
    pub fn blocking_close(&self) {
        let this = self.clone();
        let _ = runtime::block_on(async move {
            this.close_on_runtime().await;
            Ok(())
        });
    }

    /// Closes the session and waits (a little) until ZooKeeper has been told: a process that
    /// exits right after `close` must not leave its nodes for the session timeout.
    async fn close_on_runtime(&self) {
        if !self.inner.closed.swap(true, Ordering::AcqRel) {
            let session = self.inner.current.lock().unwrap().clone();
            let reason = Error::closed(format!("the client for {} was closed", self.inner.hosts));
            session.close(reason).await;
        }
    }

    pub(crate) fn identity(&self) -> &[u8] {
        &self.inner.identity
    }

    pub(crate) fn acl(&self) -> AclPolicy {
        self.inner.options.acl
    }

    /// The live session, opening a new one when the last one died. Runs on the runtime.
    pub(crate) async fn session(&self) -> Result<Arc<Session>> {
        self.check_usable()?;
        let current = self.inner.current.lock().unwrap().clone();
        if !current.is_dead() {
            return Ok(current);
        }
        let _one_at_a_time = self.inner.reconnect.lock().await;
        self.check_usable()?;
        let current = self.inner.current.lock().unwrap().clone();
        if !current.is_dead() {
            return Ok(current);
        }
        // Boxed: connecting is a large future, and every acquire future would otherwise carry
        // its size (memory per waiting lock).
        let fresh = Box::pin(Session::open(&self.inner.hosts, &self.inner.options)).await?;
        *self.inner.current.lock().unwrap() = fresh.clone();
        Ok(fresh)
    }

    pub(crate) fn check_usable(&self) -> Result<()> {
        if self.is_closed() {
            return Err(Error::new(
                ErrorKind::Closed,
                format!("the client for {} is closed", self.inner.hosts),
            ));
        }
        if self.inner.pid != runtime::current_pid() {
            return Err(Error::new(
                ErrorKind::Closed,
                "this client was created before fork(); create a new client in the child process",
            ));
        }
        Ok(())
    }
}
