//! A shared counter on Curator's layouts, and the increment only a lock holder can make (issue
//! 37, point 5). The node holds the count as Curator writes it: a 4-byte big-endian `int` for
//! `SharedCount` (`SharedCount.toBytes`/`fromBytes`: `ByteBuffer.putInt`/`getInt`, in Curator's
//! `curator-recipes/src/main/java/org/apache/curator/framework/recipes/shared/SharedCount.java`)
//! or an 8-byte big-endian `long` for `DistributedAtomicLong` (`bytesToValue`: empty data is 0,
//! in `.../framework/recipes/atomic/DistributedAtomicLong.java` of the same module). Both
//! compare and set by the node's data version (`SharedValue.trySetValue`:
//! `setData().withVersion`), and both create a missing node with its parents as containers
//! (`creatingParentContainersIfNeeded`), so a Curator process and a zklock one can share the
//! node.
//!
//! [`Lease::guarded_increment`] reads the count and writes count + n in one multi with the check
//! that the lease's lock node still exists: the count moves only while the lock is held (what
//! Flink's checkpoint counter needs, CURATOR-542/-689), and a holder that lost the lock moves
//! nothing.

use std::sync::Arc;

use zklock_wire::client as zk;

use crate::base::error::{is_transient, Error, ErrorKind, Result};
use crate::base::protocol;
use crate::engine::nodes::make_parents;
use crate::leases::guarded::{Guarded, Write, Written};
use crate::leases::lease::Lease;
use crate::ops::runtime::{self, in_runtime};
use crate::sessions::connection::Connection;

/// How many times a guarded increment reads again after the count changed under it before it
/// gives up (each retry is one read and one multi).
const INCREMENT_ATTEMPTS: usize = 64;

/// The count's encoding: Curator's `SharedCount` (32 bits) or `DistributedAtomicLong` (64).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterWidth {
    /// 4 bytes, big-endian, signed (`SharedCount`).
    Int32,
    /// 8 bytes, big-endian, signed (`DistributedAtomicLong`); empty data reads as 0.
    Int64,
}

impl CounterWidth {
    /// Its name in the faces and messages: `int32` or `int64`.
    pub fn as_str(self) -> &'static str {
        match self {
            CounterWidth::Int32 => "int32",
            CounterWidth::Int64 => "int64",
        }
    }

    /// A width from its name (`int32`, `int64`); `InvalidArgument` for anything else.
    pub fn parse(name: &str) -> Result<CounterWidth> {
        match name {
            "int32" => Ok(CounterWidth::Int32),
            "int64" => Ok(CounterWidth::Int64),
            other => Err(Error::invalid(format!(
                "unknown counter width {:?} (known: int32, int64)",
                other.chars().take(32).collect::<String>()
            ))),
        }
    }

    fn encode(self, value: i64) -> Result<Vec<u8>> {
        match self {
            CounterWidth::Int64 => Ok(value.to_be_bytes().to_vec()),
            CounterWidth::Int32 => i32::try_from(value)
                .map(|v| v.to_be_bytes().to_vec())
                .map_err(|_| {
                    Error::invalid(format!(
                        "{value} does not fit a 32-bit counter (Curator's SharedCount); use an \
                         int64 counter (DistributedAtomicLong's layout)"
                    ))
                }),
        }
    }

    fn decode(self, path: &str, data: &[u8]) -> Result<i64> {
        match (self, data.len()) {
            (CounterWidth::Int32, 4) => Ok(i32::from_be_bytes(data.try_into().expect("4")) as i64),
            (CounterWidth::Int64, 8) => Ok(i64::from_be_bytes(data.try_into().expect("8"))),
            (CounterWidth::Int64, 0) => Ok(0),
            // kazoo's `Counter` (kazoo/recipe/counter.py) writes `repr(value)` in ASCII: a
            // layout zklock does not share (Curator's binary counts are what it reads), named so
            // that the user does not take it for a damaged node.
            (width, n) if looks_like_kazoo_counter(data) => Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "{path} holds {:?} ({n} bytes): a kazoo Counter's layout (its value as ASCII \
                     text), which zklock's {} counter (Curator's binary layout) does not read; \
                     use kazoo's Counter for this node, or another path",
                    String::from_utf8_lossy(data),
                    width.as_str()
                ),
            )),
            (width, n) => Err(Error::new(
                ErrorKind::ZooKeeper,
                format!(
                    "{path} holds {n} bytes of data, not an {} count ({} bytes)",
                    width.as_str(),
                    if width == CounterWidth::Int32 { 4 } else { 8 }
                ),
            )),
        }
    }
}

/// Whether `data` reads as kazoo's `Counter` writes it: `repr()` of an int or a float, in ASCII
/// (a sign, digits, at most one '.', an exponent).
fn looks_like_kazoo_counter(data: &[u8]) -> bool {
    let text = match std::str::from_utf8(data) {
        Ok(t) if !t.is_empty() && t.len() <= 32 => t,
        _ => return false,
    };
    text.bytes().any(|b| b.is_ascii_digit())
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'))
}

/// A count and the data version it was read at (`-1`: the node does not exist yet, count 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    /// The count.
    pub value: i64,
    /// The node's data version the count was read at (`-1`: no node yet).
    pub version: i32,
}

/// A shared counter on `path` ([`crate::Client::counter`]). Cheap to clone.
#[derive(Clone)]
pub struct Counter {
    inner: Arc<Connection>,
    path: String,
    width: CounterWidth,
}

impl std::fmt::Debug for Counter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counter")
            .field("path", &self.path)
            .field("width", &self.width)
            .finish()
    }
}

impl Counter {
    pub(crate) fn new(inner: Arc<Connection>, path: &str, width: CounterWidth) -> Result<Counter> {
        protocol::validate_path(path)?;
        Ok(Counter {
            inner,
            path: path.to_owned(),
            width,
        })
    }

    /// The counter's node.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// How the count is stored: Curator's `SharedCount` (`Int32`) or `DistributedAtomicLong`
    /// (`Int64`).
    pub fn width(&self) -> CounterWidth {
        self.width
    }

    /// The count and its version; a missing node is count 0 at version -1.
    pub async fn get(&self) -> Result<Count> {
        let c = self.clone();
        in_runtime(async move { c.read().await }).await
    }

    /// Blocking twin of [`Counter::get`].
    pub fn blocking_get(&self) -> Result<Count> {
        let c = self.clone();
        runtime::block_on(async move { c.read().await })
    }

    /// Sets the count to `value` if it is still at `seen.version` (creating the node when
    /// `seen` is the missing node's): the new count, or `None` when it changed meanwhile (read
    /// it again). `InvalidArgument` when `value` does not fit the width.
    pub async fn compare_and_set(&self, seen: Count, value: i64) -> Result<Option<Count>> {
        let c = self.clone();
        in_runtime(async move { c.swap(seen, value).await }).await
    }

    /// Blocking twin of [`Counter::compare_and_set`].
    pub fn blocking_compare_and_set(&self, seen: Count, value: i64) -> Result<Option<Count>> {
        let c = self.clone();
        runtime::block_on(async move { c.swap(seen, value).await })
    }

    async fn read(&self) -> Result<Count> {
        self.inner.check_usable()?;
        let session = self.inner.session().await?;
        loop {
            let zk = session.zk()?;
            match zk.get_data(&self.path).await {
                Ok((data, stat)) => {
                    return Ok(Count {
                        value: self.width.decode(&self.path, &data)?,
                        version: stat.version,
                    })
                }
                Err(zk::Error::NoNode) => {
                    return Ok(Count {
                        value: 0,
                        version: -1,
                    })
                }
                Err(e) if is_transient(&e) => session.recover(None, "counter read").await?,
                Err(e) => return Err(Error::from_zk(e, &format!("read {}", self.path))),
            }
        }
    }

    async fn swap(&self, seen: Count, value: i64) -> Result<Option<Count>> {
        let data = self.width.encode(value)?;
        self.inner.check_usable()?;
        let session = self.inner.session().await?;
        let zk = session.zk()?;
        if seen.version < 0 {
            self.make_parent(&zk).await?;
            return match zk
                .create(
                    &self.path,
                    &data,
                    zk::CreateMode::Persistent,
                    self.inner.acl().acls(),
                )
                .await
            {
                Ok((stat, _)) => Ok(Some(Count {
                    value,
                    version: stat.version,
                })),
                Err(zk::Error::NodeExists) => Ok(None),
                Err(e) if is_transient(&e) => Err(Error::outcome_unknown(e, "counter create")),
                Err(e) => Err(Error::from_zk(e, &format!("create {}", self.path))),
            };
        }
        match zk.set_data(&self.path, &data, Some(seen.version)).await {
            Ok(stat) => Ok(Some(Count {
                value,
                version: stat.version,
            })),
            Err(zk::Error::BadVersion) | Err(zk::Error::NoNode) => Ok(None),
            Err(e) if is_transient(&e) => Err(Error::outcome_unknown(e, "counter set")),
            Err(e) => Err(Error::from_zk(e, &format!("set data of {}", self.path))),
        }
    }

    /// The counter's parents, as containers, as Curator makes them.
    async fn make_parent(&self, zk: &zk::Client) -> Result<()> {
        let Some(dir) = self
            .path
            .rfind('/')
            .filter(|&i| i > 0)
            .map(|i| &self.path[..i])
        else {
            return Ok(());
        };
        make_parents(zk, dir, self.inner.acl())
            .await
            .map_err(|e| Error::from_zk(e, &format!("create the parents of {}", self.path)))
    }
}

impl Lease {
    /// Adds `by` to `counter` only while this lease holds its lock: the write goes in one multi
    /// with the check that the lock node still exists, at the version just read (read again
    /// and retried when the count moved meanwhile). The new count; `LockLost` when the lease is
    /// lost (nothing written), `InvalidArgument` when the sum does not fit the counter.
    pub async fn guarded_increment(&self, counter: &Counter, by: i64) -> Result<Count> {
        self.guarded().increment(counter, by).await
    }

    /// Blocking twin of [`Lease::guarded_increment`].
    pub fn blocking_guarded_increment(&self, counter: &Counter, by: i64) -> Result<Count> {
        self.guarded().blocking_increment(counter, by)
    }
}

impl Guarded {
    /// [`Lease::guarded_increment`], from a handle that lives apart from the lease.
    pub async fn increment(&self, counter: &Counter, by: i64) -> Result<Count> {
        if self.is_final() {
            // The lease's own error (LockLost, NotHeld), before anything of the counter's.
            self.write(Vec::new()).await?;
        }
        for _ in 0..INCREMENT_ATTEMPTS {
            let seen = counter.get().await?;
            let (value, write) = increment(counter, seen, by)?;
            if seen.version < 0 {
                let c = counter.clone();
                in_runtime(async move { c.parent().await }).await?;
            }
            if let Some(count) = settled(value, self.write(vec![write]).await)? {
                return Ok(count);
            }
        }
        Err(too_busy(counter))
    }

    /// Blocking twin of [`Guarded::increment`].
    pub fn blocking_increment(&self, counter: &Counter, by: i64) -> Result<Count> {
        if self.is_final() {
            self.blocking_write(Vec::new())?;
        }
        for _ in 0..INCREMENT_ATTEMPTS {
            let seen = counter.blocking_get()?;
            let (value, write) = increment(counter, seen, by)?;
            if seen.version < 0 {
                let c = counter.clone();
                runtime::block_on(async move { c.parent().await })?;
            }
            if let Some(count) = settled(value, self.blocking_write(vec![write]))? {
                return Ok(count);
            }
        }
        Err(too_busy(counter))
    }
}

impl Counter {
    /// The counter's parents, made before a guarded create (which cannot make them in its
    /// multi).
    async fn parent(&self) -> Result<()> {
        let session = self.inner.session().await?;
        self.make_parent(&session.zk()?).await
    }
}

/// The count after adding `by` to `seen`, and the write that sets it at `seen`'s version (or
/// creates the node when `seen` is the missing node's).
fn increment(counter: &Counter, seen: Count, by: i64) -> Result<(i64, Write)> {
    let value = seen
        .value
        .checked_add(by)
        .ok_or_else(|| Error::invalid(format!("{} + {by} overflows a 64-bit count", seen.value)))?;
    let data = counter.width.encode(value)?;
    let write = if seen.version < 0 {
        Write::create(counter.path(), data)
    } else {
        Write::SetDataAt {
            path: counter.path().to_owned(),
            data,
            version: seen.version,
        }
    };
    Ok((value, write))
}

/// The count a guarded write set, `None` when the count moved under it (read again), or the
/// error that ends the increment.
fn settled(value: i64, written: Result<Vec<Written>>) -> Result<Option<Count>> {
    match written {
        Ok(written) => {
            let version = match written.first() {
                Some(Written::Set { version }) => *version,
                _ => 0,
            };
            Ok(Some(Count { value, version }))
        }
        Err(e)
            if matches!(
                e.zk_error(),
                Some(zk::Error::BadVersion | zk::Error::NodeExists | zk::Error::NoNode)
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

fn too_busy(counter: &Counter) -> Error {
    Error::new(
        ErrorKind::ZooKeeper,
        format!(
            "{} changed {INCREMENT_ATTEMPTS} times while a guarded increment tried to write it",
            counter.path()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_encoded_as_curator_writes_them() {
        assert_eq!(CounterWidth::Int32.encode(258).unwrap(), vec![0, 0, 1, 2]);
        assert_eq!(CounterWidth::Int32.encode(-1).unwrap(), vec![255; 4]);
        assert_eq!(
            CounterWidth::Int64.encode(1 << 40).unwrap(),
            vec![0, 0, 1, 0, 0, 0, 0, 0]
        );
        assert_eq!(
            CounterWidth::Int32.decode("/c", &[0, 0, 1, 2]).unwrap(),
            258
        );
        assert_eq!(CounterWidth::Int64.decode("/c", &[]).unwrap(), 0);
    }

    #[test]
    fn a_count_past_32_bits_is_refused_by_a_shared_count() {
        let e = CounterWidth::Int32.encode(1 << 31).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.to_string().contains("int64"), "{e}");
    }

    #[test]
    fn data_of_the_wrong_length_is_an_error_naming_the_node() {
        let e = CounterWidth::Int32.decode("/c/n", &[1, 2, 3]).unwrap_err();
        assert!(e.to_string().contains("/c/n holds 3 bytes"), "{e}");
        assert!(CounterWidth::Int32.decode("/c", &[]).is_err());
        assert!(CounterWidth::parse("int16").is_err());
    }

    #[test]
    fn a_kazoo_counter_node_is_refused_naming_kazoos_layout() {
        for data in [&b"5"[..], b"-12", b"1234", b"2.5", b"12345678"] {
            for width in [CounterWidth::Int32, CounterWidth::Int64] {
                if data.len() == 4 && width == CounterWidth::Int32
                    || data.len() == 8 && width == CounterWidth::Int64
                {
                    continue; // the same length as Curator's binary count: read as one
                }
                let e = width.decode("/c/k", data).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
                assert!(e.to_string().contains("kazoo Counter"), "{e}");
            }
        }
        // Binary data that is no text stays the plain length error.
        let e = CounterWidth::Int32.decode("/c/n", &[0, 1, 2]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ZooKeeper);
    }
}
