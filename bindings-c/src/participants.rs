//! The participants' listing (`zklock_participants`): a list of a lock's queue, an election's
//! participants or its leader, and `zklock_participant`, the record read from it. Its own room
//! because both the locks (`zklock_lock_participants`) and the elections hand it out: in either
//! it made an import circle (election -> op -> lock -> election).

use std::ffi::{c_char, CString};
use std::mem::{offset_of, size_of};

use crate::c_text;
use crate::client::check_size;
use crate::error::{guard, guard_value, zklock_status, Failure};
use crate::handles::{self, Kind};

/// One participant of a lock or an election, as `zklock_participants_get` writes it. Set
/// `size` to `sizeof(zklock_participant)`: the library writes only the fields that fit in it.
/// The strings belong to the list and are valid until `zklock_participants_free`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct zklock_participant {
    /// `sizeof(zklock_participant)` as the caller knows it.
    pub size: usize,
    /// Full path of the node.
    pub node: *const c_char,
    /// The node's data: the participant id of an election, the holder's identity of a lock
    /// (Curator writes an IP address).
    pub id: *const c_char,
    /// The node's czxid: the fencing token its holder got (or gets).
    pub token: i64,
    /// Which library made the node: "zklock", "curator", "kazoo", "go-zookeeper" or "unknown".
    pub library: *const c_char,
    /// The node's kind: "mutex", "read", "write", "lease" or "latch".
    pub kind: *const c_char,
    /// The election layout (family) of the node: "latch", "selector" or "kazoo"; NULL for a
    /// read, write or lease node.
    pub style: *const c_char,
    /// The ZooKeeper session that owns the node.
    pub session_id: i64,
    /// When the node was made (the server's clock, milliseconds since the Unix epoch).
    pub created_ms: i64,
}

struct Entry {
    node: CString,
    id: CString,
    token: i64,
    library: CString,
    kind: CString,
    style: Option<CString>,
    session_id: i64,
    created_ms: i64,
}

/// A list of participants (of a lock's queue, an election, or a leader: zero or one). Opaque;
/// free it with `zklock_participants_free`.
pub struct zklock_participants {
    entries: Vec<Entry>,
}

impl zklock_participants {
    pub(crate) fn boxed(listed: Vec<zklock::Participant>) -> *mut zklock_participants {
        let entries = listed
            .into_iter()
            .map(|p| Entry {
                node: c_text(&p.node),
                id: c_text(&p.identity),
                token: p.token,
                library: c_text(p.library.as_str()),
                kind: c_text(p.kind.as_str()),
                style: p.election_style().map(|s| c_text(s.as_str())),
                session_id: p.session_id,
                created_ms: p.created_ms,
            })
            .collect();
        let handle = Box::into_raw(Box::new(zklock_participants { entries }));
        handles::register(handle, Kind::Participants)
    }
}

/// How many participants the list holds (0 when `list` is NULL or not a live list).
#[no_mangle]
pub unsafe extern "C" fn zklock_participants_count(list: *const zklock_participants) -> usize {
    guard_value(0, || {
        Ok(handles::get(list, Kind::Participants, "list")?
            .entries
            .len())
    })
}

/// Writes the participant at `index` (0: the holder or leader) into `*out`, whose `size` the
/// caller set. `ZKLOCK_INVALID_ARGUMENT` for an index past the end.
#[no_mangle]
pub unsafe extern "C" fn zklock_participants_get(
    list: *const zklock_participants,
    index: usize,
    out: *mut zklock_participant,
) -> zklock_status {
    guard(|| {
        let list = handles::get(list, Kind::Participants, "list")?;
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        let size = std::ptr::addr_of!((*out).size).read();
        let ours = size_of::<zklock_participant>();
        check_size(out.cast(), size.min(ours), ours, "zklock_participant")?;
        let e = list.entries.get(index).ok_or_else(|| {
            Failure::invalid(format!(
                "index {index} is past the list's {} participants",
                list.entries.len()
            ))
        })?;
        let p = zklock_participant {
            size,
            node: e.node.as_ptr(),
            id: e.id.as_ptr(),
            token: e.token,
            library: e.library.as_ptr(),
            kind: e.kind.as_ptr(),
            style: e.style.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()),
            session_id: e.session_id,
            created_ms: e.created_ms,
        };
        // Only the whole fields the caller's struct has; `size` stays as the caller set it.
        let ends = [
            offset_of!(zklock_participant, size) + size_of::<usize>(),
            offset_of!(zklock_participant, node) + size_of::<*const c_char>(),
            offset_of!(zklock_participant, id) + size_of::<*const c_char>(),
            offset_of!(zklock_participant, token) + size_of::<i64>(),
            offset_of!(zklock_participant, library) + size_of::<*const c_char>(),
            offset_of!(zklock_participant, kind) + size_of::<*const c_char>(),
            offset_of!(zklock_participant, style) + size_of::<*const c_char>(),
            offset_of!(zklock_participant, session_id) + size_of::<i64>(),
            offset_of!(zklock_participant, created_ms) + size_of::<i64>(),
        ];
        let n = ends
            .into_iter()
            .filter(|&end| end <= size.min(ours))
            .max()
            .unwrap_or(0);
        std::ptr::copy_nonoverlapping(
            (&p as *const zklock_participant).cast::<u8>(),
            out.cast::<u8>(),
            n,
        );
        Ok(())
    })
}

/// Frees a list (its strings with it). NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn zklock_participants_free(list: *mut zklock_participants) {
    guard_value((), || handles::free(list, Kind::Participants, "list"))
}
