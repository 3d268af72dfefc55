//! Jute, ZooKeeper's record serialization, for the records a lock client needs.
//!
//! Written from ZooKeeper's own definitions (apache/zookeeper, tag release-3.8.4):
//! - the records: `zookeeper-jute/src/main/resources/zookeeper.jute`;
//! - the binary encoding: `zookeeper-jute/src/main/java/org/apache/jute/BinaryOutputArchive.java`
//!   and `BinaryInputArchive.java` — every integer big-endian; `int` 4 bytes, `long` 8 bytes,
//!   `boolean` 1 byte; `ustring` and `buffer` an `int` length then the bytes (length -1 means
//!   null); `vector` an `int` count then the elements (-1 means null);
//! - the multi-op envelope: `zookeeper-server/src/main/java/org/apache/zookeeper/MultiOperationRecord.java`
//!   and `MultiResponse.java` (a `MultiHeader` before each op, one with `done` after the last).
//!
//! Decoding never panics: short input is [`JuteError::Truncated`], a bad length or an unknown
//! multi-op type has its own variant. A null string, buffer or vector decodes as empty.

use thiserror::Error;

// The protocol's numbers (op codes, reserved xids, error codes, create flags, event types),
// kept apart from the records: the records say what bytes are, these say what a number means.
mod numbers;
pub use numbers::{code, create_mode, event_type, op, xid};

// A children listing read in place, without a copy of its names.
mod names;
pub use names::{ChildrenInPlace, ListingParser, Names, NamesIter};

/// Why bytes did not decode as the record asked for.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum JuteError {
    /// The input ended inside a field.
    #[error("truncated record: needed {needed} more bytes, {remaining} left")]
    Truncated { needed: usize, remaining: usize },
    /// A length or count below -1 (-1 is null).
    #[error("negative length {0}")]
    NegativeLength(i32),
    /// A `ustring` that is not UTF-8 (the Java side writes it with `String.getBytes(UTF_8)`).
    #[error("string is not UTF-8")]
    InvalidUtf8,
    /// A multi response or request carried an op type this crate does not know.
    #[error("unknown op type {0} in a multi")]
    UnknownMultiOp(i32),
    /// A reply to an op type this crate does not send.
    #[error("no reply record known for op type {0}")]
    UnknownOp(i32),
    /// Bytes were left over after the record.
    #[error("{0} trailing bytes after the record")]
    TrailingBytes(usize),
}

/// A cursor over a received payload.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Fails with [`JuteError::TrailingBytes`] unless everything was read.
    pub fn finish(&self) -> Result<(), JuteError> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(JuteError::TrailingBytes(n)),
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], JuteError> {
        let remaining = self.remaining();
        if n > remaining {
            return Err(JuteError::Truncated {
                needed: n,
                remaining,
            });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn read_int(&mut self) -> Result<i32, JuteError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn read_long(&mut self) -> Result<i64, JuteError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }

    /// `DataInput.readBoolean`: any non-zero byte is true.
    pub fn read_bool(&mut self) -> Result<bool, JuteError> {
        Ok(self.take(1)?[0] != 0)
    }

    /// A length prefix: -1 (null) reads as 0, anything below is an error.
    fn read_len(&mut self) -> Result<usize, JuteError> {
        match self.read_int()? {
            -1 => Ok(0),
            n if n < 0 => Err(JuteError::NegativeLength(n)),
            n => Ok(n as usize),
        }
    }

    pub fn read_buffer(&mut self) -> Result<Vec<u8>, JuteError> {
        let n = self.read_len()?;
        Ok(self.take(n)?.to_vec())
    }

    pub fn read_string(&mut self) -> Result<String, JuteError> {
        let n = self.read_len()?;
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| JuteError::InvalidUtf8)
    }

    /// A vector whose elements are at least `min_size` bytes each: the count cannot make it
    /// allocate more than the input could hold.
    pub fn read_vec<T>(
        &mut self,
        min_size: usize,
        mut f: impl FnMut(&mut Self) -> Result<T, JuteError>,
    ) -> Result<Vec<T>, JuteError> {
        let n = self.read_len()?;
        let mut v = Vec::with_capacity(n.min(self.remaining() / min_size.max(1)));
        for _ in 0..n {
            v.push(f(self)?);
        }
        Ok(v)
    }
}

/// Appends the jute encoding of fields to a buffer.
pub trait Writer {
    fn write_int(&mut self, v: i32);
    fn write_long(&mut self, v: i64);
    fn write_bool(&mut self, v: bool);
    fn write_buffer(&mut self, v: &[u8]);
    fn write_string(&mut self, v: &str);
}

impl Writer for Vec<u8> {
    fn write_int(&mut self, v: i32) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn write_long(&mut self, v: i64) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn write_bool(&mut self, v: bool) {
        self.push(v as u8);
    }
    fn write_buffer(&mut self, v: &[u8]) {
        // Lengths beyond i32 cannot be framed anyway (frame::MAX is far below): the frame
        // limit refuses such a record before it is sent.
        self.write_int(v.len().min(i32::MAX as usize) as i32);
        self.extend_from_slice(v);
    }
    fn write_string(&mut self, v: &str) {
        self.write_buffer(v.as_bytes());
    }
}

/// A jute record.
pub trait Record: Sized {
    fn encode(&self, out: &mut Vec<u8>);
    fn decode(r: &mut Reader<'_>) -> Result<Self, JuteError>;

    /// Decodes a whole payload: bytes left over are an error.
    fn decode_all(buf: &[u8]) -> Result<Self, JuteError> {
        let mut r = Reader::new(buf);
        let v = Self::decode(&mut r)?;
        r.finish()?;
        Ok(v)
    }

    fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.encode(&mut v);
        v
    }
}

/// Declares a record struct whose fields are encoded in order, each by its jute type.
macro_rules! record {
    ($(#[$m:meta])* $name:ident { $($field:ident : $ty:tt),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct $name { $(pub $field: record!(@ty $ty)),* }
        impl Record for $name {
            fn encode(&self, out: &mut Vec<u8>) {
                let _ = &out;
                $(record!(@enc out, self.$field, $ty);)*
            }
            fn decode(r: &mut Reader<'_>) -> Result<Self, JuteError> {
                let _ = &r;
                Ok($name { $($field: record!(@dec r, $ty)),* })
            }
        }
    };
    (@ty int) => { i32 };
    (@ty long) => { i64 };
    (@ty boolean) => { bool };
    (@ty buffer) => { Vec<u8> };
    (@ty ustring) => { String };
    (@ty strings) => { Vec<String> };
    (@ty acls) => { Vec<Acl> };
    (@ty Stat) => { Stat };
    (@ty Id) => { Id };
    (@enc $o:ident, $v:expr, int) => { $o.write_int($v) };
    (@enc $o:ident, $v:expr, long) => { $o.write_long($v) };
    (@enc $o:ident, $v:expr, boolean) => { $o.write_bool($v) };
    (@enc $o:ident, $v:expr, buffer) => { $o.write_buffer(&$v) };
    (@enc $o:ident, $v:expr, ustring) => { $o.write_string(&$v) };
    (@enc $o:ident, $v:expr, strings) => {{
        $o.write_int($v.len() as i32);
        for s in &$v { $o.write_string(s); }
    }};
    (@enc $o:ident, $v:expr, acls) => {{
        $o.write_int($v.len() as i32);
        for a in &$v { a.encode($o); }
    }};
    (@enc $o:ident, $v:expr, Stat) => { $v.encode($o) };
    (@enc $o:ident, $v:expr, Id) => { $v.encode($o) };
    (@dec $r:ident, int) => { $r.read_int()? };
    (@dec $r:ident, long) => { $r.read_long()? };
    (@dec $r:ident, boolean) => { $r.read_bool()? };
    (@dec $r:ident, buffer) => { $r.read_buffer()? };
    (@dec $r:ident, ustring) => { $r.read_string()? };
    // A ustring is at least its 4-byte length; an ACL is an int and two ustrings.
    (@dec $r:ident, strings) => { $r.read_vec(4, |r| r.read_string())? };
    (@dec $r:ident, acls) => { $r.read_vec(12, Acl::decode)? };
    (@dec $r:ident, Stat) => { Stat::decode($r)? };
    (@dec $r:ident, Id) => { Id::decode($r)? };
}

// --- module org.apache.zookeeper.data -------------------------------------------------------

record!(
    /// `data.Id`: an ACL's identity, e.g. `world:anyone`.
    Id { scheme: ustring, id: ustring }
);

record!(
    /// `data.ACL`: permission bits (see [`perms`]) for an [`Id`].
    Acl { perms: int, id: Id }
);

record!(
    /// `data.Stat`: a znode's metadata, 68 bytes on the wire.
    Stat {
        czxid: long,
        mzxid: long,
        ctime: long,
        mtime: long,
        version: int,
        cversion: int,
        aversion: int,
        ephemeral_owner: long,
        data_length: int,
        num_children: int,
        pzxid: long,
    }
);

/// `ZooDefs.Perms`.
pub mod perms {
    pub const READ: i32 = 1;
    pub const WRITE: i32 = 1 << 1;
    pub const CREATE: i32 = 1 << 2;
    pub const DELETE: i32 = 1 << 3;
    pub const ADMIN: i32 = 1 << 4;
    pub const ALL: i32 = READ | WRITE | CREATE | DELETE | ADMIN;
}

impl Acl {
    /// `ZooDefs.Ids.OPEN_ACL_UNSAFE`'s one entry: everything for `world:anyone`.
    pub fn open_unsafe() -> Vec<Acl> {
        vec![Acl {
            perms: perms::ALL,
            id: Id {
                scheme: "world".into(),
                id: "anyone".into(),
            },
        }]
    }
}

// --- module org.apache.zookeeper.proto ------------------------------------------------------

record!(
    /// `proto.ConnectRequest`, the first frame a client sends. `read_only` is the client's
    /// "can be read-only" flag.
    ConnectRequest {
        protocol_version: int,
        last_zxid_seen: long,
        timeout: int,
        session_id: long,
        passwd: buffer,
        read_only: boolean,
    }
);

/// `proto.ConnectResponse`. Servers before 3.4 omit `readOnly`; like the Java client
/// (`ClientCnxnSocket.readConnectResult`, via its protocol manager) it then reads as false.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectResponse {
    pub protocol_version: i32,
    pub timeout: i32,
    pub session_id: i64,
    pub passwd: Vec<u8>,
    pub read_only: bool,
}

impl Record for ConnectResponse {
    fn encode(&self, out: &mut Vec<u8>) {
        out.write_int(self.protocol_version);
        out.write_int(self.timeout);
        out.write_long(self.session_id);
        out.write_buffer(&self.passwd);
        out.write_bool(self.read_only);
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, JuteError> {
        Ok(ConnectResponse {
            protocol_version: r.read_int()?,
            timeout: r.read_int()?,
            session_id: r.read_long()?,
            passwd: r.read_buffer()?,
            read_only: if r.remaining() > 0 {
                r.read_bool()?
            } else {
                false
            },
        })
    }
}

record!(
    /// `proto.SetWatches` (op 101, xid -8): the watches to re-arm after a reconnect.
    SetWatches {
        relative_zxid: long,
        data_watches: strings,
        exist_watches: strings,
        child_watches: strings,
    }
);

record!(
    /// `proto.RequestHeader`, before every request but the connect request.
    RequestHeader { xid: int, op: int }
);

record!(
    /// `proto.MultiHeader`, before each op of a multi request and each result of its response.
    MultiHeader { op: int, done: boolean, err: int }
);

record!(
    /// `proto.AuthPacket` (op 100, xid -4). `auth_type` is always 0 in ZooKeeper's client.
    AuthPacket { auth_type: int, scheme: ustring, auth: buffer }
);

record!(
    /// `proto.ReplyHeader`, before every reply and watch event.
    ReplyHeader { xid: int, zxid: long, err: int }
);

record!(GetDataRequest {
    path: ustring,
    watch: boolean
});
record!(SetDataRequest {
    path: ustring,
    data: buffer,
    version: int
});
record!(SetDataResponse { stat: Stat });
record!(
    /// `proto.CreateRequest`, for both create (op 1) and create2 (op 15); `flags` from
    /// [`create_mode`].
    CreateRequest { path: ustring, data: buffer, acl: acls, flags: int }
);
record!(DeleteRequest {
    path: ustring,
    version: int
});
record!(GetChildren2Request {
    path: ustring,
    watch: boolean
});
record!(CheckVersionRequest {
    path: ustring,
    version: int
});
record!(SyncRequest { path: ustring });
record!(SyncResponse { path: ustring });
record!(
    /// `proto.WatcherEvent`, the body of a notification (xid -1). `event_type` and `state`
    /// are `Watcher.Event.EventType` / `KeeperState` codes (see [`event_type`]).
    WatcherEvent { event_type: int, state: int, path: ustring }
);
record!(ErrorResponse { err: int });

record!(CreateResponse { path: ustring });
record!(Create2Response {
    path: ustring,
    stat: Stat
});
record!(ExistsRequest {
    path: ustring,
    watch: boolean
});
record!(ExistsResponse { stat: Stat });
record!(GetDataResponse {
    data: buffer,
    stat: Stat
});
record!(GetChildren2Response {
    children: strings,
    stat: Stat
});

// --- multi (MultiOperationRecord.java / MultiResponse.java) ---------------------------------

/// One op of a multi request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiOp {
    Create(CreateRequest),
    Create2(CreateRequest),
    Delete(DeleteRequest),
    SetData(SetDataRequest),
    Check(CheckVersionRequest),
}

impl MultiOp {
    pub fn op_code(&self) -> i32 {
        match self {
            MultiOp::Create(_) => op::CREATE,
            MultiOp::Create2(_) => op::CREATE2,
            MultiOp::Delete(_) => op::DELETE,
            MultiOp::SetData(_) => op::SET_DATA,
            MultiOp::Check(_) => op::CHECK,
        }
    }
}

/// A multi request (op 14): each op after a `MultiHeader{type, done=false, err=-1}`, then
/// `MultiHeader{-1, true, -1}`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MultiRequest {
    pub ops: Vec<MultiOp>,
}

/// The header that ends a multi request or response (`MultiOperationRecord.serialize` and
/// `MultiResponse.serialize` in ZooKeeper: op -1, done, err -1).
const MULTI_END: MultiHeader = MultiHeader {
    op: -1,
    done: true,
    err: -1,
};

impl Record for MultiRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        for o in &self.ops {
            MultiHeader {
                op: o.op_code(),
                done: false,
                err: -1,
            }
            .encode(out);
            match o {
                MultiOp::Create(c) | MultiOp::Create2(c) => c.encode(out),
                MultiOp::Delete(d) => d.encode(out),
                MultiOp::SetData(s) => s.encode(out),
                MultiOp::Check(c) => c.encode(out),
            }
        }
        MULTI_END.encode(out);
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, JuteError> {
        let mut ops = Vec::new();
        loop {
            let h = MultiHeader::decode(r)?;
            if h.done {
                return Ok(MultiRequest { ops });
            }
            ops.push(match h.op {
                op::CREATE => MultiOp::Create(CreateRequest::decode(r)?),
                op::CREATE2 => MultiOp::Create2(CreateRequest::decode(r)?),
                op::DELETE => MultiOp::Delete(DeleteRequest::decode(r)?),
                op::SET_DATA => MultiOp::SetData(SetDataRequest::decode(r)?),
                op::CHECK => MultiOp::Check(CheckVersionRequest::decode(r)?),
                t => return Err(JuteError::UnknownMultiOp(t)),
            });
        }
    }
}

/// One result of a multi response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiResult {
    Create(CreateResponse),
    Create2(Create2Response),
    Delete,
    SetData(SetDataResponse),
    Check,
    /// `ErrorResponse`: the op failed with this code (0 for ops of a failed multi that would
    /// have succeeded is not used by the server: it sends `RUNTIMEINCONSISTENCY`).
    Error(i32),
}

/// A multi response: each result after a `MultiHeader`, ending with one whose `done` is set.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MultiResponse {
    pub results: Vec<MultiResult>,
}

impl MultiResponse {
    /// The first error of a failed multi, if any.
    pub fn first_error(&self) -> Option<i32> {
        self.results.iter().find_map(|r| match r {
            MultiResult::Error(e) if *e != 0 => Some(*e),
            _ => None,
        })
    }
}

impl Record for MultiResponse {
    fn encode(&self, out: &mut Vec<u8>) {
        for res in &self.results {
            let (op, err) = match res {
                MultiResult::Create(_) => (op::CREATE, 0),
                MultiResult::Create2(_) => (op::CREATE2, 0),
                MultiResult::Delete => (op::DELETE, 0),
                MultiResult::SetData(_) => (op::SET_DATA, 0),
                MultiResult::Check => (op::CHECK, 0),
                MultiResult::Error(e) => (op::ERROR, *e),
            };
            MultiHeader {
                op,
                done: false,
                err,
            }
            .encode(out);
            match res {
                MultiResult::Create(c) => c.encode(out),
                MultiResult::Create2(c) => c.encode(out),
                MultiResult::SetData(s) => s.encode(out),
                MultiResult::Error(e) => ErrorResponse { err: *e }.encode(out),
                MultiResult::Delete | MultiResult::Check => {}
            }
        }
        MULTI_END.encode(out);
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, JuteError> {
        let mut results = Vec::new();
        loop {
            let h = MultiHeader::decode(r)?;
            if h.done {
                return Ok(MultiResponse { results });
            }
            results.push(match h.op {
                op::CREATE => MultiResult::Create(CreateResponse::decode(r)?),
                op::CREATE2 => MultiResult::Create2(Create2Response::decode(r)?),
                op::DELETE => MultiResult::Delete,
                op::SET_DATA => MultiResult::SetData(SetDataResponse::decode(r)?),
                op::CHECK => MultiResult::Check,
                op::ERROR => MultiResult::Error(ErrorResponse::decode(r)?.err),
                t => return Err(JuteError::UnknownMultiOp(t)),
            });
        }
    }
}

// --- SASL and whoAmI (zookeeper.jute; see sasl.rs) ------------------------------------------

record!(
    /// `proto.GetSASLRequest` (op 102): a token from the client's SASL mechanism (despite its
    /// name, it is what the client sends).
    GetSASLRequest { token: buffer }
);
record!(
    /// `proto.SetSASLResponse`: the server's SASL token (a null token decodes as empty).
    SetSASLResponse { token: buffer }
);
record!(
    /// `data.ClientInfo`: one of a connection's identities, e.g. `sasl` / `alice`.
    ClientInfo { auth_scheme: ustring, user: ustring }
);

/// `proto.WhoAmIResponse` (op 107): `vector<org.apache.zookeeper.data.ClientInfo> clientInfo`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WhoAmIResponse {
    pub client_info: Vec<ClientInfo>,
}

impl Record for WhoAmIResponse {
    fn encode(&self, out: &mut Vec<u8>) {
        out.write_int(self.client_info.len() as i32);
        for c in &self.client_info {
            c.encode(out);
        }
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, JuteError> {
        // A ClientInfo is two ustrings, at least 8 bytes.
        Ok(WhoAmIResponse {
            client_info: r.read_vec(8, ClientInfo::decode)?,
        })
    }
}

#[cfg(test)]
mod tests;
