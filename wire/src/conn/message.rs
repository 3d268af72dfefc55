//! What goes over a connection: the requests this crate sends, the replies' records and how a
//! reply's body is decoded by its request's op. Plain values; the task ([`super::driver`]) and
//! the handle ([`super::Connection`]) exchange them.

use std::time::Instant;

use crate::jute::*;

/// A request this crate can send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Create(CreateRequest),
    Create2(CreateRequest),
    /// A container node (`CreateMode.CONTAINER`): op 19, answered like create2
    /// (`ZooKeeper.create` picks `OpCode.createContainer` for it).
    CreateContainer(CreateRequest),
    Delete(DeleteRequest),
    Exists(ExistsRequest),
    GetData(GetDataRequest),
    SetData(SetDataRequest),
    GetChildren2(GetChildren2Request),
    Multi(MultiRequest),
    Sync(SyncRequest),
    /// A SASL token (op 102); see [`crate::sasl`].
    Sasl(GetSASLRequest),
    /// WhoAmI (op 107), no record.
    WhoAmI,
    /// A request sent only to learn whether the server knows its op (see
    /// `client::probe_session`): the op and its record, already encoded. Its reply's record
    /// is not read.
    Probe(i32, Vec<u8>),
    CloseSession,
}

impl Request {
    pub fn op_code(&self) -> i32 {
        match self {
            Request::Create(_) => op::CREATE,
            Request::Create2(_) => op::CREATE2,
            Request::CreateContainer(_) => op::CREATE_CONTAINER,
            Request::Delete(_) => op::DELETE,
            Request::Exists(_) => op::EXISTS,
            Request::GetData(_) => op::GET_DATA,
            Request::SetData(_) => op::SET_DATA,
            Request::GetChildren2(_) => op::GET_CHILDREN2,
            Request::Multi(_) => op::MULTI,
            Request::Sync(_) => op::SYNC,
            Request::Sasl(_) => op::SASL,
            Request::WhoAmI => op::WHO_AM_I,
            Request::Probe(op, _) => *op,
            Request::CloseSession => op::CLOSE_SESSION,
        }
    }

    /// The record after the header (none for CloseSession and WhoAmI).
    pub fn encode_body(&self, out: &mut Vec<u8>) {
        match self {
            Request::Create(r) | Request::Create2(r) | Request::CreateContainer(r) => r.encode(out),
            Request::Delete(r) => r.encode(out),
            Request::Exists(r) => r.encode(out),
            Request::GetData(r) => r.encode(out),
            Request::SetData(r) => r.encode(out),
            Request::GetChildren2(r) => r.encode(out),
            Request::Multi(r) => r.encode(out),
            Request::Sync(r) => r.encode(out),
            Request::Sasl(r) => r.encode(out),
            Request::Probe(_, body) => out.extend_from_slice(body),
            Request::CloseSession | Request::WhoAmI => {}
        }
    }
}

/// A reply's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    Create(CreateResponse),
    Create2(Create2Response),
    Delete,
    Exists(ExistsResponse),
    GetData(GetDataResponse),
    SetData(SetDataResponse),
    GetChildren2(GetChildren2Response),
    /// A listing that was read in place by its request's [`ReadChildren`] (which kept what it
    /// needed); the names are not here.
    ChildrenRead(Stat),
    Multi(MultiResponse),
    Sync(SyncResponse),
    Sasl(SetSASLResponse),
    WhoAmI(WhoAmIResponse),
    /// The answer to a [`Request::Probe`]: the op is known (its record is not read).
    Probed,
    CloseSession,
}

/// Decodes the body of a reply to a request of type `op` whose header carried `err`.
///
/// A non-zero `err` has no record (the server sends the header alone; like `ClientCnxn` any
/// bytes after it are not read), except a multi, which answers with its per-op results. A
/// record of the wrong shape — short, malformed or with bytes left over — is an error.
pub fn decode_reply_body(
    op: i32,
    err: i32,
    body: &[u8],
) -> Result<Result<Response, i32>, JuteError> {
    if err != 0 && (op != op::MULTI || body.is_empty()) {
        return Ok(Err(err));
    }
    let r = match op {
        op::CREATE => Response::Create(CreateResponse::decode_all(body)?),
        op::CREATE2 | op::CREATE_CONTAINER => Response::Create2(Create2Response::decode_all(body)?),
        op::DELETE => Reader::new(body).finish().map(|_| Response::Delete)?,
        op::EXISTS => Response::Exists(ExistsResponse::decode_all(body)?),
        op::GET_DATA => Response::GetData(GetDataResponse::decode_all(body)?),
        op::SET_DATA => Response::SetData(SetDataResponse::decode_all(body)?),
        op::GET_CHILDREN2 => Response::GetChildren2(GetChildren2Response::decode_all(body)?),
        op::MULTI => Response::Multi(MultiResponse::decode_all(body)?),
        op::SYNC => Response::Sync(SyncResponse::decode_all(body)?),
        op::SASL => Response::Sasl(SetSASLResponse::decode_all(body)?),
        op::WHO_AM_I => Response::WhoAmI(WhoAmIResponse::decode_all(body)?),
        op::CLOSE_SESSION => Reader::new(body).finish().map(|_| Response::CloseSession)?,
        op::CHECK_WATCHES | op::GET_EPHEMERALS => Response::Probed,
        other => return Err(JuteError::UnknownOp(other)),
    };
    Ok(Ok(r))
}

/// Reads a getChildren2 reply's names where the connection decodes it, before the reply is
/// handed on: whoever lists keeps what it needs, and no reply holds every name. A thousand
/// waiters that each list a thousand-deep queue at once would otherwise hold a million decoded
/// names between them (issue 34, s5).
pub type ReadChildren = Box<dyn FnOnce(Names<'_>) + Send>;

/// Reads a getChildren2 reply's names one at a time as they arrive, in the connection's task:
/// the reply is never held whole either (its frame is read as it comes, [`ListingParser`]),
/// so 5,000 waiters listing a 5,000-deep queue at once hold what they keep, not 5,000 frames
/// of 250 KB (issue 54, point 5). A name may be seen before a later part of the record turns
/// out malformed: the connection then fails, and `end` is never called.
pub trait ChildrenSink: Send {
    /// The next name, in the order the server sent them.
    fn name(&mut self, name: &str);
    /// The record was read whole: every name was seen.
    fn end(self: Box<Self>);
}

/// What the connection's task does with a reply as it reads it, beside handing it on
/// (`Connection::submit_reading`).
pub enum OnReply {
    /// A getChildren2's names, read in place once its frame is whole.
    Names(ReadChildren),
    /// A getChildren2's names, read as they arrive.
    EachName(Box<dyn ChildrenSink>),
    /// Any reply's record that decoded, before it is handed on: a create's name is known to a
    /// listing pipelined behind it (the server answers in order) before its names arrive.
    Decoded(Box<dyn FnOnce(&Response) + Send>),
}

impl std::fmt::Debug for OnReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            OnReply::Names(_) => "OnReply::Names",
            OnReply::EachName(_) => "OnReply::EachName",
            OnReply::Decoded(_) => "OnReply::Decoded",
        })
    }
}

/// [`decode_reply_body`] for a getChildren2 whose names go to `read` ([`Response::ChildrenRead`]).
/// `read` runs only on a record that decoded whole.
pub fn read_children_reply(
    err: i32,
    body: &[u8],
    read: ReadChildren,
) -> Result<Result<Response, i32>, JuteError> {
    if err != 0 {
        return Ok(Err(err));
    }
    let listing = ChildrenInPlace::decode_all(body)?;
    read(listing.children);
    Ok(Ok(Response::ChildrenRead(listing.stat)))
}

/// A reply, with the times the lifeline needs.
#[derive(Debug, Clone)]
pub struct Reply {
    pub xid: i32,
    pub zxid: i64,
    /// The record, or the server's error code.
    pub result: Result<Response, i32>,
    /// When the request's last byte was handed to the kernel.
    pub sent_at: Instant,
    /// When the reply was read.
    pub received_at: Instant,
}
