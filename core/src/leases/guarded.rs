//! Writes guarded by a lease: ZooKeeper writes (create, set data, delete) sent as one multi
//! request together with a check that each of the lease's lock nodes still exists. ZooKeeper
//! applies all of it or none, so the writes land only while the lock is ours (etcd's
//! `IsOwner()` in a transaction; the check op of zookeeper-client's `LockClient`). After the
//! lease was lost they do not apply, and the call fails with `LockLost`. A write on a suspended
//! lease waits for the reconnect (within its timeout) before it is sent; a write whose answer is
//! lost with the connection fails with `OutcomeUnknown`, since it may have been applied.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use zklock_wire::client as zk;
use zklock_wire::jute::Acl;

use crate::base::error::{Error, ErrorKind, Result};
use crate::base::protocol;
use crate::base::state::LeaseState;
use crate::leases::lease::Lease;
use crate::leases::node::LeaseShared;
use crate::ops::runtime::{self, in_runtime};

/// One write of a guarded batch ([`Lease::guarded_write`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    /// Creates a persistent node with `data` (its parent must exist), with the client's ACL
    /// policy.
    Create {
        /// The node to create.
        path: String,
        /// Its data.
        data: Vec<u8>,
    },
    /// Replaces the data of an existing node, whatever its version.
    SetData {
        /// The node.
        path: String,
        /// Its new data.
        data: Vec<u8>,
    },
    /// Deletes a node that has no children, whatever its version.
    Delete {
        /// The node to delete.
        path: String,
    },
    /// Replaces the data of a node whose data version is `version` (a compare-and-set: a node
    /// changed meanwhile fails the batch with ZooKeeper's `BadVersion`). The fenced counter's
    /// write; the faces build their batches from the three ops above.
    SetDataAt {
        /// The node.
        path: String,
        /// Its new data.
        data: Vec<u8>,
        /// The data version the node must still be at.
        version: i32,
    },
}

impl Write {
    /// A [`Write::Create`] of `path` with `data`.
    pub fn create(path: impl Into<String>, data: impl Into<Vec<u8>>) -> Write {
        Write::Create {
            path: path.into(),
            data: data.into(),
        }
    }

    /// A [`Write::SetData`] of `path` to `data`.
    pub fn set_data(path: impl Into<String>, data: impl Into<Vec<u8>>) -> Write {
        Write::SetData {
            path: path.into(),
            data: data.into(),
        }
    }

    /// A [`Write::Delete`] of `path`.
    pub fn delete(path: impl Into<String>) -> Write {
        Write::Delete { path: path.into() }
    }

    /// A write from its op name (`create`, `set_data`, `delete`: the faces take these names),
    /// its path and its data (`None` is empty data; a `delete` with data is refused).
    pub fn from_op(op: &str, path: &str, data: Option<Vec<u8>>) -> Result<Write> {
        let path = path.to_owned();
        match (op, data) {
            ("create", data) => Ok(Write::Create {
                path,
                data: data.unwrap_or_default(),
            }),
            ("set_data", data) => Ok(Write::SetData {
                path,
                data: data.unwrap_or_default(),
            }),
            ("delete", None) => Ok(Write::Delete { path }),
            ("delete", Some(_)) => Err(Error::invalid("a guarded delete takes no data")),
            (other, _) => Err(Error::invalid(format!(
                "unknown guarded write {:?} (known: create, set_data, delete)",
                other.chars().take(64).collect::<String>()
            ))),
        }
    }

    /// The node written.
    pub fn path(&self) -> &str {
        match self {
            Write::Create { path, .. }
            | Write::SetData { path, .. }
            | Write::SetDataAt { path, .. }
            | Write::Delete { path } => path,
        }
    }

    /// The write's name: `create`, `set_data`, `delete` (how the faces spell the ops).
    pub fn op(&self) -> &'static str {
        match self {
            Write::Create { .. } => "create",
            Write::SetData { .. } | Write::SetDataAt { .. } => "set_data",
            Write::Delete { .. } => "delete",
        }
    }
}

/// What one guarded write did, in the order of the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// The node was created (its path).
    Created(String),
    /// The data was set; the node's new data version.
    Set {
        /// The node's data version after the write.
        version: i32,
    },
    /// The node was deleted.
    Deleted,
}

impl Lease {
    /// Runs `writes` atomically with a check that this lease's lock node (every member's, for a
    /// multi-lock) still exists: all apply or none. `LockLost` when the lease is lost, or its
    /// node turns out gone (the lease turns lost then); `NotHeld` after release; a failing write
    /// fails the batch with its ZooKeeper error (naming the write), and nothing applies. An empty
    /// batch only checks that the lock is still ours. While the lease is suspended the batch
    /// waits for the reconnect before it is sent; when the connection breaks after it was sent
    /// and before the answer, it fails with `OutcomeUnknown` (it may have been applied).
    pub async fn guarded_write(&self, writes: Vec<Write>) -> Result<Vec<Written>> {
        self.guarded().write(writes).await
    }

    /// Blocking twin of [`Lease::guarded_write`].
    pub fn blocking_guarded_write(&self, writes: Vec<Write>) -> Result<Vec<Written>> {
        self.guarded().blocking_write(writes)
    }

    /// [`Lease::guarded_write`] within `timeout` (`None`: no bound): `Timeout` when the batch
    /// could not be sent by then (nothing applied), `OutcomeUnknown` when it was sent and not
    /// answered by then.
    pub async fn guarded_write_timeout(
        &self,
        writes: Vec<Write>,
        timeout: Option<Duration>,
    ) -> Result<Vec<Written>> {
        self.guarded().write_timeout(writes, timeout).await
    }

    /// Blocking twin of [`Lease::guarded_write_timeout`].
    pub fn blocking_guarded_write_timeout(
        &self,
        writes: Vec<Write>,
        timeout: Option<Duration>,
    ) -> Result<Vec<Written>> {
        self.guarded().blocking_write_timeout(writes, timeout)
    }

    /// A handle for guarded writes that lives apart from the lease (a face keeps it beside a
    /// lease it may release meanwhile); its writes fail with `NotHeld` once the lease was
    /// released.
    pub fn guarded(&self) -> Guarded {
        Guarded {
            parts: self.shared_parts(),
            path: self.path().to_owned(),
        }
    }
}

/// Guarded writes of one lease ([`Lease::guarded`]). Cheap to clone.
#[derive(Clone)]
pub struct Guarded {
    parts: Vec<Arc<LeaseShared>>,
    path: String,
}

impl std::fmt::Debug for Guarded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guarded").field("path", &self.path).finish()
    }
}

impl Guarded {
    /// [`Lease::guarded_write`].
    pub async fn write(&self, writes: Vec<Write>) -> Result<Vec<Written>> {
        self.write_timeout(writes, None).await
    }

    /// Blocking twin of [`Guarded::write`].
    pub fn blocking_write(&self, writes: Vec<Write>) -> Result<Vec<Written>> {
        self.blocking_write_timeout(writes, None)
    }

    /// [`Lease::guarded_write_timeout`].
    pub async fn write_timeout(
        &self,
        writes: Vec<Write>,
        timeout: Option<Duration>,
    ) -> Result<Vec<Written>> {
        self.check(&writes)?;
        let deadline = deadline(timeout);
        in_runtime(commit(self.parts.clone(), writes, deadline)).await
    }

    /// Blocking twin of [`Guarded::write_timeout`].
    pub fn blocking_write_timeout(
        &self,
        writes: Vec<Write>,
        timeout: Option<Duration>,
    ) -> Result<Vec<Written>> {
        self.check(&writes)?;
        let deadline = deadline(timeout);
        runtime::block_on(commit(self.parts.clone(), writes, deadline))
    }

    /// Whether the lease is released or lost (a guarded write would be refused before any I/O).
    pub(crate) fn is_final(&self) -> bool {
        LeaseState::combine(self.parts.iter().map(|p| p.state())).is_final()
    }

    /// The checks before any I/O: the paths, a request the server will read, and a lease still
    /// held (or suspended: the request waits for the reconnect, and the check decides).
    fn check(&self, writes: &[Write]) -> Result<()> {
        for w in writes {
            protocol::validate_path(w.path())?;
        }
        self.check_size(writes)?;
        let states = self.parts.iter().map(|p| p.state());
        match LeaseState::combine(states) {
            LeaseState::Lost => Err(lost_error(&self.parts)),
            LeaseState::Released => Err(Error::new(
                ErrorKind::NotHeld,
                format!(
                    "the lease on {} was released; guarded writes need a held lease",
                    self.path
                ),
            )),
            _ => Ok(()),
        }
    }
}

impl Guarded {
    /// Refuses a batch whose request is over ZooKeeper's packet limit
    /// ([`protocol::MAX_PACKET_BYTES`]). Sent, it would make the server close the connection
    /// before reading it: every lease of the client would turn suspended, and the write could
    /// only end as `OutcomeUnknown` (issue 27). The message names the sizes and the largest
    /// write's path, never its data.
    fn check_size(&self, writes: &[Write]) -> Result<()> {
        let Some(first) = self.parts.first() else {
            return Ok(());
        };
        let session = first.session();
        let nodes: Vec<&str> = self.parts.iter().map(|p| p.node()).collect();
        let size = request_bytes(&nodes, writes, session.chroot_bytes(), session.acl.acls());
        if size <= protocol::MAX_PACKET_BYTES {
            return Ok(());
        }
        let data_len = |w: &Write| match w {
            Write::Create { data, .. }
            | Write::SetData { data, .. }
            | Write::SetDataAt { data, .. } => data.len(),
            Write::Delete { .. } => 0,
        };
        let largest = writes.iter().max_by_key(|w| data_len(w));
        let which = largest.map_or_else(String::new, |w| {
            format!("; {} carries {} bytes of data", describe(w), data_len(w))
        });
        Err(Error::invalid(format!(
            "guarded write not sent: its request would be {size} bytes, over ZooKeeper's packet \
             limit of {} (jute.maxbuffer){which}",
            protocol::MAX_PACKET_BYTES
        )))
    }
}

/// The length of the multi request of a guarded batch as jute encodes it, without the 4-byte
/// frame (`zookeeper-jute/src/main/resources/zookeeper.jute`: `RequestHeader`, `MultiHeader`
/// and the op records; `MultiOperationRecord.serialize` writes a header before each op and a
/// closing one). `chroot` bytes go before each path.
fn request_bytes(nodes: &[&str], writes: &[Write], chroot: usize, acls: &[Acl]) -> usize {
    use protocol::jute_bytes;
    const REQUEST_HEADER: usize = 4 + 4; // xid, type
    const MULTI_HEADER: usize = 4 + 1 + 4; // type, done, err
    const INT: usize = 4;
    let path = |p: &str| jute_bytes(chroot + p.len());
    let acl_bytes: usize = INT
        + acls
            .iter()
            .map(|a| INT + jute_bytes(a.id.scheme.len()) + jute_bytes(a.id.id.len()))
            .sum::<usize>();
    let checks: usize = nodes
        .iter()
        .map(|n| MULTI_HEADER + path(n) + INT) // CheckVersionRequest: path, version
        .sum();
    let ops: usize = writes
        .iter()
        .map(|w| {
            MULTI_HEADER
                + match w {
                    // CreateRequest: path, data, acl, flags
                    Write::Create { path: p, data } => {
                        path(p) + jute_bytes(data.len()) + acl_bytes + INT
                    }
                    // SetDataRequest: path, data, version
                    Write::SetData { path: p, data } | Write::SetDataAt { path: p, data, .. } => {
                        path(p) + jute_bytes(data.len()) + INT
                    }
                    // DeleteRequest: path, version
                    Write::Delete { path: p } => path(p) + INT,
                }
        })
        .sum();
    REQUEST_HEADER + checks + ops + MULTI_HEADER
}

/// The instant a timeout ends (a timeout beyond what an instant holds is no bound).
fn deadline(timeout: Option<Duration>) -> Option<Instant> {
    timeout.and_then(|t| Instant::now().checked_add(t))
}

fn lost_error(parts: &[Arc<LeaseShared>]) -> Error {
    let reason = parts
        .iter()
        .find_map(|p| p.lost_reason())
        .unwrap_or_else(|| "the lease was lost".into());
    Error::new(
        ErrorKind::LockLost,
        format!("guarded write not applied: {reason}"),
    )
}

async fn commit(
    parts: Vec<Arc<LeaseShared>>,
    writes: Vec<Write>,
    deadline: Option<Instant>,
) -> Result<Vec<Written>> {
    let Some(first) = parts.first() else {
        return Err(Error::new(ErrorKind::NotHeld, "the lease holds no lock"));
    };
    let session = first.session().clone();
    // A suspended lease: wait for the reconnect (or the deadline) before sending anything, so
    // that a batch never goes out on a link that is known to be down.
    if let Err(e) = session
        .wait_connected(deadline, "guarded write not sent")
        .await
    {
        if e.kind() == ErrorKind::Timeout {
            return Err(e);
        }
        for p in &parts {
            p.lose_unless_released("the ZooKeeper session ended");
        }
        return Err(lost_error(&parts));
    }
    // A deadline that has passed (a zero timeout among them) sends nothing: a batch sent with
    // no time left for its answer could only end as OutcomeUnknown.
    if deadline.is_some_and(|d| d <= Instant::now()) {
        return Err(Error::timeout(
            "guarded write not sent: its timeout passed before it could be sent",
        ));
    }
    let zk = match session.zk() {
        Ok(zk) => zk,
        Err(_) => {
            // The session died: its nodes are gone with it, and so is the lease.
            for p in &parts {
                p.lose_unless_released("the ZooKeeper session ended");
            }
            return Err(lost_error(&parts));
        }
    };
    let acls = session.acl.acls();
    let ops: Vec<zk::Op<'_>> = parts
        .iter()
        .map(|p| zk::Op::Check {
            path: p.node(),
            version: -1,
        })
        .chain(writes.iter().map(|w| match w {
            Write::Create { path, data } => zk::Op::Create {
                path,
                data,
                mode: zk::CreateMode::Persistent,
                acl: acls,
            },
            Write::SetData { path, data } => zk::Op::SetData {
                path,
                data,
                version: -1,
            },
            Write::SetDataAt {
                path,
                data,
                version,
            } => zk::Op::SetData {
                path,
                data,
                version: *version,
            },
            Write::Delete { path } => zk::Op::Delete { path, version: -1 },
        }))
        .collect();
    let sent = zk.multi(&ops);
    let answered =
        match deadline {
            None => sent.await,
            Some(d) => match tokio::time::timeout_at(d, sent).await {
                Ok(answered) => answered,
                Err(_) => return Err(Error::new(
                    ErrorKind::OutcomeUnknown,
                    "guarded write sent, but ZooKeeper did not answer within the timeout: it may \
                     or may not have been applied; read back before retrying",
                )),
            },
        };
    let results = match answered {
        Ok(results) => results,
        Err(zk::MultiError::OperationFailed { index, source }) if index < parts.len() => {
            let _ = source;
            parts[index].lose_unless_released("our lock node no longer exists");
            return Err(lost_error(&parts));
        }
        Err(zk::MultiError::OperationFailed { index, source }) => {
            let w = &writes[index - parts.len()];
            return Err(Error::from_zk(
                source,
                &format!("guarded write not applied: {} failed", describe(w)),
            ));
        }
        Err(zk::MultiError::RequestFailed { source }) => {
            if matches!(
                source,
                zk::Error::SessionExpired | zk::Error::SessionMoved | zk::Error::ClientClosed
            ) || session.is_dead()
            {
                for p in &parts {
                    p.lose_unless_released("the ZooKeeper session ended");
                }
                return Err(lost_error(&parts));
            }
            if crate::base::error::is_transient(&source) {
                return Err(Error::outcome_unknown(source, "guarded write"));
            }
            return Err(Error::from_zk(source, "guarded write not applied"));
        }
    };
    Ok(results
        .into_iter()
        .skip(parts.len())
        .map(|r| match r {
            zk::OpResult::Create { path } => Written::Created(path),
            zk::OpResult::SetData { stat } => Written::Set {
                version: stat.version,
            },
            _ => Written::Deleted,
        })
        .collect())
}

impl Written {
    /// The write's op name, as in [`Write::op`].
    pub fn op(&self) -> &'static str {
        match self {
            Written::Created(_) => "create",
            Written::Set { .. } => "set_data",
            Written::Deleted => "delete",
        }
    }
}

/// `create /path` (quoting at most 64 characters of the path).
fn describe(w: &Write) -> String {
    let path: String = w.path().chars().take(64).collect();
    format!("{} {path}", w.op())
}
