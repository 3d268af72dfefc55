//! The numbers ZooKeeper's protocol gives names to: create flags, event types, op codes, the
//! reserved xids and the reply codes (with their names), after `CreateMode.java`,
//! `Watcher.java`, `ZooDefs.OpCode`, `ClientCnxn.java` and `KeeperException.Code`
//! (apache/zookeeper release-3.8.4). Plain constants, no encoding: [`super`] holds the records.

/// `CreateMode` flags (`zookeeper-server/.../CreateMode.java`).
pub mod create_mode {
    pub const PERSISTENT: i32 = 0;
    pub const EPHEMERAL: i32 = 1;
    pub const PERSISTENT_SEQUENTIAL: i32 = 2;
    pub const EPHEMERAL_SEQUENTIAL: i32 = 3;
    /// Sent with op 19 (`CREATE_CONTAINER`), never with create/create2.
    pub const CONTAINER: i32 = 4;
}

/// `Watcher.Event.EventType` codes.
pub mod event_type {
    pub const NONE: i32 = -1;
    pub const NODE_CREATED: i32 = 1;
    pub const NODE_DELETED: i32 = 2;
    pub const NODE_DATA_CHANGED: i32 = 3;
    pub const NODE_CHILDREN_CHANGED: i32 = 4;
}

/// `ZooDefs.OpCode`, the ones this crate sends or reads.
pub mod op {
    pub const NOTIFICATION: i32 = 0;
    pub const CREATE: i32 = 1;
    pub const DELETE: i32 = 2;
    pub const EXISTS: i32 = 3;
    pub const GET_DATA: i32 = 4;
    pub const SET_DATA: i32 = 5;
    pub const SYNC: i32 = 9;
    pub const PING: i32 = 11;
    pub const GET_CHILDREN2: i32 = 12;
    pub const CHECK: i32 = 13;
    pub const MULTI: i32 = 14;
    pub const CREATE2: i32 = 15;
    /// ZooKeeper 3.5+ (ZOOKEEPER-442): asked only to learn whether a server has it.
    pub const CHECK_WATCHES: i32 = 17;
    pub const CREATE_CONTAINER: i32 = 19;
    pub const AUTH: i32 = 100;
    pub const SET_WATCHES: i32 = 101;
    pub const CLOSE_SESSION: i32 = -11;
    pub const ERROR: i32 = -1;
    pub const SASL: i32 = 102;
    /// ZooKeeper 3.6+ (ZOOKEEPER-2847): asked only to learn whether a server has it.
    pub const GET_EPHEMERALS: i32 = 103;
    pub const WHO_AM_I: i32 = 107;
}

/// The reserved xids of `ClientCnxn.java`.
pub mod xid {
    pub const NOTIFICATION: i32 = -1;
    pub const PING: i32 = -2;
    pub const AUTH: i32 = -4;
    pub const SET_WATCHES: i32 = -8;
}

/// `KeeperException.Code`: the error codes of a `ReplyHeader`, and their names.
pub mod code {
    pub const OK: i32 = 0;
    pub const SYSTEM_ERROR: i32 = -1;
    pub const RUNTIME_INCONSISTENCY: i32 = -2;
    pub const DATA_INCONSISTENCY: i32 = -3;
    pub const CONNECTION_LOSS: i32 = -4;
    pub const MARSHALLING_ERROR: i32 = -5;
    pub const UNIMPLEMENTED: i32 = -6;
    pub const OPERATION_TIMEOUT: i32 = -7;
    pub const BAD_ARGUMENTS: i32 = -8;
    pub const UNKNOWN_SESSION: i32 = -12;
    pub const API_ERROR: i32 = -100;
    pub const NO_NODE: i32 = -101;
    pub const NO_AUTH: i32 = -102;
    pub const BAD_VERSION: i32 = -103;
    pub const NO_CHILDREN_FOR_EPHEMERALS: i32 = -108;
    pub const NODE_EXISTS: i32 = -110;
    pub const NOT_EMPTY: i32 = -111;
    pub const SESSION_EXPIRED: i32 = -112;
    pub const INVALID_ACL: i32 = -114;
    pub const AUTH_FAILED: i32 = -115;
    pub const SESSION_MOVED: i32 = -118;
    pub const NOT_READ_ONLY: i32 = -119;
    pub const EPHEMERAL_ON_LOCAL_SESSION: i32 = -120;
    pub const REQUEST_TIMEOUT: i32 = -122;
    /// The server requires SASL before any request (`zookeeper.sessionRequireClientSASLAuth`,
    /// 3.5.x and later) and closes the connection after this answer.
    pub const SESSION_CLOSED_REQUIRE_SASL_AUTH: i32 = -124;
    pub const QUOTA_EXCEEDED: i32 = -125;
    pub const THROTTLED_OP: i32 = -127;

    pub fn name(code: i32) -> &'static str {
        match code {
            OK => "OK",
            SYSTEM_ERROR => "SYSTEMERROR",
            RUNTIME_INCONSISTENCY => "RUNTIMEINCONSISTENCY",
            DATA_INCONSISTENCY => "DATAINCONSISTENCY",
            CONNECTION_LOSS => "CONNECTIONLOSS",
            MARSHALLING_ERROR => "MARSHALLINGERROR",
            UNIMPLEMENTED => "UNIMPLEMENTED",
            OPERATION_TIMEOUT => "OPERATIONTIMEOUT",
            BAD_ARGUMENTS => "BADARGUMENTS",
            UNKNOWN_SESSION => "UNKNOWNSESSION",
            API_ERROR => "APIERROR",
            NO_NODE => "NONODE",
            NO_AUTH => "NOAUTH",
            BAD_VERSION => "BADVERSION",
            NO_CHILDREN_FOR_EPHEMERALS => "NOCHILDRENFOREPHEMERALS",
            NODE_EXISTS => "NODEEXISTS",
            NOT_EMPTY => "NOTEMPTY",
            SESSION_EXPIRED => "SESSIONEXPIRED",
            INVALID_ACL => "INVALIDACL",
            AUTH_FAILED => "AUTHFAILED",
            SESSION_MOVED => "SESSIONMOVED",
            NOT_READ_ONLY => "NOTREADONLY",
            EPHEMERAL_ON_LOCAL_SESSION => "EPHEMERALONLOCALSESSION",
            REQUEST_TIMEOUT => "REQUESTTIMEOUT",
            QUOTA_EXCEEDED => "QUOTAEXCEEDED",
            THROTTLED_OP => "THROTTLEDOP",
            _ => "UNKNOWN",
        }
    }
}
