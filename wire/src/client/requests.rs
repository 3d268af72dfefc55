//! The requests a client sends (create, delete, reads with and without watches, setData, sync,
//! multi) and what they are built from ([`CreateMode`], [`Op`], [`OpResult`]): each puts the
//! chroot before its paths, submits at once on the current connection and waits only for the
//! reply. Methods of [`Client`], kept apart from its session handling in `client.rs`.

use std::future::Future;
use std::sync::atomic::Ordering;

use tokio::sync::oneshot;

use super::error::{connection_error, shape, Error, MultiError};
use super::options::validate_path;
use super::state::{OneshotWatcher, WatchedEvent};
use super::watches::{strip_chroot, WatchKind};
use super::Client;
use crate::conn::{ChildrenSink, OnReply, Reply, Request, Response};
use crate::jute::*;

/// What reads a listing a name at a time ([`Client::read_children_each`]).
pub trait EachName: Send + 'static {
    type Output: Send + 'static;
    /// The next name, in the order the server sent them.
    fn name(&mut self, name: &str);
    /// Every name was seen: what was made of them.
    fn finish(self) -> Self::Output;
}

/// Every name of a listing, copied as it arrives ([`Client::list_children`]).
#[derive(Debug, Clone, Default)]
pub struct AllNames(Vec<String>);

impl EachName for AllNames {
    type Output = Vec<String>;

    fn name(&mut self, name: &str) {
        self.0.push(name.to_owned());
    }

    fn finish(self) -> Vec<String> {
        self.0
    }
}

/// An [`EachName`] as the connection's [`ChildrenSink`]: its result goes to the request's
/// caller once the listing was read whole.
struct SendOnEnd<R: EachName> {
    read: R,
    tx: oneshot::Sender<R::Output>,
}

impl<R: EachName> ChildrenSink for SendOnEnd<R> {
    fn name(&mut self, name: &str) {
        self.read.name(name);
    }

    fn end(self: Box<Self>) {
        let _ = self.tx.send(self.read.finish());
    }
}

/// How a node is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateMode {
    Persistent,
    PersistentSequential,
    Ephemeral,
    EphemeralSequential,
    /// Deleted by the server once its last child is (`ContainerManager`).
    Container,
}

impl CreateMode {
    fn flags(self) -> i32 {
        match self {
            CreateMode::Persistent => create_mode::PERSISTENT,
            CreateMode::PersistentSequential => create_mode::PERSISTENT_SEQUENTIAL,
            CreateMode::Ephemeral => create_mode::EPHEMERAL,
            CreateMode::EphemeralSequential => create_mode::EPHEMERAL_SEQUENTIAL,
            CreateMode::Container => create_mode::CONTAINER,
        }
    }
}

/// One operation of a multi.
#[derive(Debug, Clone)]
pub enum Op<'a> {
    /// The node's version must be this (-1: the node must exist).
    Check {
        path: &'a str,
        version: i32,
    },
    Create {
        path: &'a str,
        data: &'a [u8],
        mode: CreateMode,
        acl: &'a [Acl],
    },
    SetData {
        path: &'a str,
        data: &'a [u8],
        version: i32,
    },
    Delete {
        path: &'a str,
        version: i32,
    },
}

/// One result of a successful multi.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpResult {
    Check,
    /// The created node's path (without the chroot).
    Create {
        path: String,
    },
    SetData {
        stat: Stat,
    },
    Delete,
}

impl Client {
    fn path(&self, path: &str) -> Result<String, Error> {
        validate_path(path)?;
        let chroot = &self.shared().chroot;
        Ok(if chroot.is_empty() {
            path.to_owned()
        } else if path == "/" {
            chroot.clone()
        } else {
            format!("{chroot}{path}")
        })
    }

    /// Submits now; the returned future only waits for the reply. `read` reads the reply as
    /// the connection decodes it, when it is given ([`OnReply`]).
    fn call(
        &self,
        req: Result<Request, Error>,
        watch: Option<(WatchKind, String, oneshot::Sender<WatchedEvent>)>,
        read: Option<OnReply>,
    ) -> impl Future<Output = Result<Reply, Error>> + Send + 'static {
        let submitted = req.and_then(|req| {
            let shared = self.shared();
            let tag = match watch {
                None => 0,
                Some(w) => {
                    let tag = shared.next_tag.fetch_add(1, Ordering::Relaxed);
                    shared.watches.lock().unwrap().pending.insert(tag, w);
                    tag
                }
            };
            let submitted = shared.submit(&req, tag, read);
            if submitted.is_err() && tag != 0 {
                shared.watches.lock().unwrap().pending.remove(&tag);
            }
            submitted
        });
        async move { submitted?.await.map_err(connection_error) }
    }

    fn expect(
        &self,
        req: Result<Request, Error>,
        watch: Option<(WatchKind, String, oneshot::Sender<WatchedEvent>)>,
    ) -> impl Future<Output = Result<Response, Error>> + Send + 'static {
        let reply = self.call(req, watch, None);
        async move { reply.await?.result.map_err(Error::from_code) }
    }

    /// Create (create2, or createContainer for a container): the node's stat and path
    /// (without the chroot).
    pub fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        acl: &[Acl],
    ) -> impl Future<Output = Result<(Stat, String), Error>> + Send + 'static {
        self.create_with(path, data, mode, acl, None)
    }

    /// [`Client::create`] that also hands the node's path (without the chroot) to `created`
    /// where the reply is decoded, in the connection's task (quick, no blocking, no panic), before
    /// any later reply on the connection is read: a listing pipelined behind the create knows
    /// our node before its first name arrives.
    pub fn create_noting(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        acl: &[Acl],
        created: impl FnOnce(&str) + Send + 'static,
    ) -> impl Future<Output = Result<(Stat, String), Error>> + Send + 'static {
        let chroot = self.shared().chroot.clone();
        let note = OnReply::Decoded(Box::new(move |r: &Response| {
            if let Response::Create2(r) = r {
                created(&strip_chroot(&r.path, &chroot));
            }
        }));
        self.create_with(path, data, mode, acl, Some(note))
    }

    fn create_with(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        acl: &[Acl],
        note: Option<OnReply>,
    ) -> impl Future<Output = Result<(Stat, String), Error>> + Send + 'static {
        let chroot = self.shared().chroot.clone();
        let req = self.path(path).map(|path| {
            let r = CreateRequest {
                path,
                data: data.to_vec(),
                acl: acl.to_vec(),
                flags: mode.flags(),
            };
            match mode {
                CreateMode::Container => Request::CreateContainer(r),
                _ => Request::Create2(r),
            }
        });
        let reply = self.call(req, None, note);
        async move {
            match reply.await?.result.map_err(Error::from_code)? {
                Response::Create2(r) => Ok((r.stat, strip_chroot(&r.path, &chroot))),
                _ => Err(shape()),
            }
        }
    }

    /// Creates `path` and every missing ancestor with `mode` and `acl`; an existing node is
    /// fine.
    pub async fn mkdir(&self, path: &str, mode: CreateMode, acl: &[Acl]) -> Result<(), Error> {
        validate_path(path)?;
        if path == "/" {
            return Ok(());
        }
        match self.create(path, b"", mode, acl).await {
            Ok(_) | Err(Error::NodeExists) => return Ok(()),
            Err(Error::NoNode) => {}
            Err(e) => return Err(e),
        }
        let mut end = 0;
        while let Some(i) = path[end + 1..].find('/') {
            end += 1 + i;
            match self.create(&path[..end], b"", mode, acl).await {
                Ok(_) | Err(Error::NodeExists) => {}
                Err(e) => return Err(e),
            }
        }
        match self.create(path, b"", mode, acl).await {
            Ok(_) | Err(Error::NodeExists) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Delete; `None` for any version.
    pub fn delete(
        &self,
        path: &str,
        version: Option<i32>,
    ) -> impl Future<Output = Result<(), Error>> + Send + 'static {
        let req = self.path(path).map(|path| {
            Request::Delete(DeleteRequest {
                path,
                version: version.unwrap_or(-1),
            })
        });
        let reply = self.expect(req, None);
        async move { reply.await.map(|_| ()) }
    }

    pub fn get_data(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat), Error>> + Send + 'static {
        let req = self
            .path(path)
            .map(|path| Request::GetData(GetDataRequest { path, watch: false }));
        let reply = self.expect(req, None);
        async move {
            match reply.await? {
                Response::GetData(r) => Ok((r.data, r.stat)),
                _ => Err(shape()),
            }
        }
    }

    /// getData with a watch on the node (armed only if the node exists).
    pub fn get_and_watch_data(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat, OneshotWatcher), Error>> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let req = self.path(path);
        let watch = req.as_ref().ok().map(|p| (WatchKind::Data, p.clone(), tx));
        let req = req.map(|path| Request::GetData(GetDataRequest { path, watch: true }));
        let reply = self.expect(req, watch);
        async move {
            match reply.await? {
                Response::GetData(r) => Ok((r.data, r.stat, OneshotWatcher(rx))),
                _ => Err(shape()),
            }
        }
    }

    /// exists: the node's stat, or `None`.
    pub fn check_stat(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<Option<Stat>, Error>> + Send + 'static {
        let req = self
            .path(path)
            .map(|path| Request::Exists(ExistsRequest { path, watch: false }));
        let reply = self.expect(req, None);
        async move {
            match reply.await {
                Ok(Response::Exists(r)) => Ok(Some(r.stat)),
                Err(Error::NoNode) => Ok(None),
                Err(e) => Err(e),
                Ok(_) => Err(shape()),
            }
        }
    }

    /// exists with a watch: fires when the node is created, changed or deleted.
    pub fn check_and_watch_stat(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Option<Stat>, OneshotWatcher), Error>> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let req = self.path(path);
        let watch = req.as_ref().ok().map(|p| (WatchKind::Exist, p.clone(), tx));
        let req = req.map(|path| Request::Exists(ExistsRequest { path, watch: true }));
        let reply = self.expect(req, watch);
        async move {
            match reply.await {
                Ok(Response::Exists(r)) => Ok((Some(r.stat), OneshotWatcher(rx))),
                Err(Error::NoNode) => Ok((None, OneshotWatcher(rx))),
                Err(e) => Err(e),
                Ok(_) => Err(shape()),
            }
        }
    }

    /// getChildren2's names, copied as they arrive ([`Client::read_children_each`]): the
    /// reply's frame is never held whole beside them.
    pub fn list_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<Vec<String>, Error>> + Send + 'static {
        self.read_children_each(path, AllNames::default())
    }

    /// getChildren2 whose names `read` reads where the reply is decoded, in the connection's
    /// task (so it must be quick, must not block and must not panic: a panic there would end
    /// the connection's task with every request on it): the result is what `read` made of them.
    /// Nothing else keeps the names, so a listing costs the caller only what `read` keeps.
    pub fn read_children<T: Send + 'static>(
        &self,
        path: &str,
        read: impl FnOnce(Names<'_>) -> T + Send + 'static,
    ) -> impl Future<Output = Result<T, Error>> + Send + 'static {
        // `read` runs, and sends, before the reply is handed on: its result is there when the
        // reply is.
        let (tx, rx) = oneshot::channel();
        let reader = OnReply::Names(Box::new(move |names| {
            let _ = tx.send(read(names));
        }));
        let req = self
            .path(path)
            .map(|path| Request::GetChildren2(GetChildren2Request { path, watch: false }));
        let reply = self.call(req, None, Some(reader));
        async move {
            match reply.await?.result.map_err(Error::from_code)? {
                Response::ChildrenRead(_) => rx.await.map_err(|_| shape()),
                _ => Err(shape()),
            }
        }
    }

    /// getChildren2 whose names `read` reads one at a time as they arrive, in the connection's
    /// task (quick, no blocking, no panic, as [`Client::read_children`]): neither the names nor
    /// the reply's frame are ever held whole, so a listing costs what `read` keeps.
    pub fn read_children_each<R: EachName>(
        &self,
        path: &str,
        read: R,
    ) -> impl Future<Output = Result<R::Output, Error>> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let reader = OnReply::EachName(Box::new(SendOnEnd { read, tx }));
        let req = self
            .path(path)
            .map(|path| Request::GetChildren2(GetChildren2Request { path, watch: false }));
        let reply = self.call(req, None, Some(reader));
        async move {
            match reply.await?.result.map_err(Error::from_code)? {
                Response::ChildrenRead(_) => rx.await.map_err(|_| shape()),
                _ => Err(shape()),
            }
        }
    }

    /// getChildren2 with a watch on the children.
    pub fn list_and_watch_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, OneshotWatcher), Error>> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let req = self.path(path);
        let watch = req.as_ref().ok().map(|p| (WatchKind::Child, p.clone(), tx));
        let req = req.map(|path| Request::GetChildren2(GetChildren2Request { path, watch: true }));
        let reply = self.expect(req, watch);
        async move {
            match reply.await? {
                Response::GetChildren2(r) => Ok((r.children, OneshotWatcher(rx))),
                _ => Err(shape()),
            }
        }
    }

    /// setData; `None` for any version.
    pub fn set_data(
        &self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> impl Future<Output = Result<Stat, Error>> + Send + 'static {
        let req = self.path(path).map(|path| {
            Request::SetData(SetDataRequest {
                path,
                data: data.to_vec(),
                version: version.unwrap_or(-1),
            })
        });
        let reply = self.expect(req, None);
        async move {
            match reply.await? {
                Response::SetData(r) => Ok(r.stat),
                _ => Err(shape()),
            }
        }
    }

    /// sync: the server catches up with the leader. The reply's send and receive times are
    /// the lifeline's evidence.
    pub fn sync(&self, path: &str) -> impl Future<Output = Result<Reply, Error>> + Send + 'static {
        let req = self
            .path(path)
            .map(|path| Request::Sync(SyncRequest { path }));
        let reply = self.call(req, None, None);
        async move {
            let reply = reply.await?;
            match &reply.result {
                Ok(_) => Ok(reply),
                Err(c) => Err(Error::from_code(*c)),
            }
        }
    }

    /// A multi: all of `ops` or none.
    pub fn multi(
        &self,
        ops: &[Op<'_>],
    ) -> impl Future<Output = Result<Vec<OpResult>, MultiError>> + Send + 'static {
        let chroot = self.shared().chroot.clone();
        let built: Result<Vec<MultiOp>, Error> = ops
            .iter()
            .map(|op| {
                Ok(match *op {
                    Op::Check { path, version } => MultiOp::Check(CheckVersionRequest {
                        path: self.path(path)?,
                        version,
                    }),
                    Op::Create {
                        path,
                        data,
                        mode,
                        acl,
                    } => MultiOp::Create(CreateRequest {
                        path: self.path(path)?,
                        data: data.to_vec(),
                        acl: acl.to_vec(),
                        flags: mode.flags(),
                    }),
                    Op::SetData {
                        path,
                        data,
                        version,
                    } => MultiOp::SetData(SetDataRequest {
                        path: self.path(path)?,
                        data: data.to_vec(),
                        version,
                    }),
                    Op::Delete { path, version } => MultiOp::Delete(DeleteRequest {
                        path: self.path(path)?,
                        version,
                    }),
                })
            })
            .collect();
        let reply = self.expect(built.map(|ops| Request::Multi(MultiRequest { ops })), None);
        async move {
            let response = match reply.await {
                Ok(Response::Multi(r)) => r,
                Ok(_) => return Err(MultiError::RequestFailed { source: shape() }),
                Err(source) => return Err(MultiError::RequestFailed { source }),
            };
            // The op that failed; the others of a failed multi say RUNTIMEINCONSISTENCY (or OK).
            let failed = response
                .results
                .iter()
                .enumerate()
                .find_map(|(i, r)| match r {
                    MultiResult::Error(c)
                        if *c != code::OK && *c != code::RUNTIME_INCONSISTENCY =>
                    {
                        Some((i, *c))
                    }
                    _ => None,
                });
            if let Some((index, c)) = failed {
                return Err(MultiError::OperationFailed {
                    index,
                    source: Error::from_code(c),
                });
            }
            response
                .results
                .into_iter()
                .map(|r| match r {
                    MultiResult::Check => Ok(OpResult::Check),
                    MultiResult::Create(c) => Ok(OpResult::Create {
                        path: strip_chroot(&c.path, &chroot),
                    }),
                    MultiResult::Create2(c) => Ok(OpResult::Create {
                        path: strip_chroot(&c.path, &chroot),
                    }),
                    MultiResult::SetData(s) => Ok(OpResult::SetData { stat: s.stat }),
                    MultiResult::Delete => Ok(OpResult::Delete),
                    MultiResult::Error(c) => Err(MultiError::RequestFailed {
                        source: Error::from_code(c),
                    }),
                })
                .collect()
        }
    }
}
