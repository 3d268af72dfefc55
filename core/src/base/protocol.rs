//! The lock protocol on the wire: validating paths, naming our nodes byte-for-byte like Curator,
//! and reading every peer's node names (Curator, kazoo, go-zookeeper) into an ordered queue.

use crate::base::error::{Error, Result};

/// What a lock node asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// Exclusive mutex node (`-lock-`, `__lock__`).
    Mutex,
    /// Shared read node (`__READ__`, `__rlock__`).
    Read,
    /// Exclusive write node (`__WRIT__`).
    Write,
    /// A semaphore's lease node (`-lease-`, under `<path>/leases`, Curator's
    /// `InterProcessSemaphoreV2`), or a waiter for one.
    Lease,
    /// A leader latch's node (`-latch-`, Curator's `LeaderLatch`): exclusive among latches.
    Latch,
}

crate::base::names::names!(NodeKind, "node kind" {
    Mutex => "mutex",
    Read => "read",
    Write => "write",
    Lease => "lease",
    Latch => "latch",
});

impl NodeKind {
    /// Curator's marker between the protected prefix and the sequence.
    pub(crate) fn marker(self) -> &'static str {
        match self {
            NodeKind::Mutex => "lock-",
            NodeKind::Read => "__READ__",
            NodeKind::Write => "__WRIT__",
            NodeKind::Lease => "lease-",
            NodeKind::Latch => "latch-",
        }
    }

    /// Whether the node excludes every later node of a lock queue (a lease node counts against
    /// its semaphore's limit instead, see `semaphore`).
    pub fn is_exclusive(self) -> bool {
        matches!(self, NodeKind::Mutex | NodeKind::Write | NodeKind::Latch)
    }
}

/// Which library wrote a lock node, judged by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Library {
    /// zklock's own node (Curator's layout, with zklock's data).
    Zklock,
    /// Apache Curator's recipes (Java).
    Curator,
    /// kazoo's recipes (Python).
    Kazoo,
    /// go-zookeeper's lock (its `_c_<guid>-lock-` names).
    GoZookeeper,
    /// A name no known library writes.
    Unknown,
}

crate::base::names::names!(Library, "library" {
    Zklock => "zklock",
    Curator => "curator",
    Kazoo => "kazoo",
    GoZookeeper => "go-zookeeper",
    Unknown => "unknown",
});

/// The node layout of an election, each its peer's byte for byte. Two layouts on one path do
/// not see each other's nodes in their own order (each sorts the other's names after its own),
/// so both would lead: a participant refuses to lead beside a node of another family
/// ([`ElectionStyle::is_foreign`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElectionStyle {
    /// Curator's `LeaderSelector`: its `InterProcessMutex` layout, `_c_<uuid>-lock-<seq>`, the
    /// participant id as the node's data.
    Selector,
    /// Curator's `LeaderLatch`: `_c_<uuid>-latch-<seq>`, the id as the node's data.
    Latch,
    /// kazoo's `Election` (its `Lock`): `<uuid hex>__lock__<seq>`, the id as the node's data.
    Kazoo,
}

crate::base::names::names!(ElectionStyle, "election style" {
    Selector => "selector",
    Latch => "latch",
    Kazoo => "kazoo",
});

/// The style every face takes when none is named: Curator's `LeaderLatch`, the election most
/// users of ZooKeeper know.
impl Default for ElectionStyle {
    fn default() -> ElectionStyle {
        ElectionStyle::Latch
    }
}

impl ElectionStyle {
    /// The kind of node this style creates.
    pub fn kind(self) -> NodeKind {
        match self {
            ElectionStyle::Latch => NodeKind::Latch,
            ElectionStyle::Selector | ElectionStyle::Kazoo => NodeKind::Mutex,
        }
    }

    /// The style a node of an election was made with, judged by its name; `None` for a node
    /// that no election makes (a read, write or lease node).
    pub fn of(contender: &Contender) -> Option<ElectionStyle> {
        ElectionStyle::of_parts(contender.kind, contender.library)
    }

    /// [`ElectionStyle::of`] a node of this kind, written by this library.
    pub(crate) fn of_parts(kind: NodeKind, library: Library) -> Option<ElectionStyle> {
        match (kind, library) {
            (NodeKind::Latch, _) => Some(ElectionStyle::Latch),
            (NodeKind::Mutex, Library::Kazoo) => Some(ElectionStyle::Kazoo),
            (NodeKind::Mutex, _) => Some(ElectionStyle::Selector),
            _ => None,
        }
    }

    /// Whether a participant of this style cannot rely on `contender` seeing it, nor see it
    /// itself, in the order its peer library computes:
    /// - Curator's `LeaderLatch` sorts by the text after the last `latch-` and puts any name
    ///   without it last (`StandardLockInternalsDriver.fixForSorting`), so it never waits for a
    ///   `lock-` node;
    /// - its `LeaderSelector` does the same with `lock-`, which kazoo's `__lock__` names lack;
    /// - kazoo sorts by the text after `__lock__` and puts every other name last
    ///   (`kazoo/recipe/lock.py`, `_get_sorted_children`).
    pub fn is_foreign(self, contender: &Contender) -> bool {
        ElectionStyle::of(contender) != Some(self)
    }
}

/// One lock node found under a lock path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contender {
    /// The child's name (not the full path).
    pub name: String,
    pub sequence: i32,
    pub kind: NodeKind,
    pub library: Library,
}

/// Checks an absolute ZooKeeper path: `/a/b`, no empty, `.` or `..` segment, no trailing `/`,
/// no NUL or control character.
/// The longest lock path accepted. ZooKeeper itself takes paths up to its packet limit
/// (jute.maxbuffer, 1 MB by default), but every node name, watch and reconnect's watch list
/// carries the path; a request over the limit makes the server close the connection, and a
/// transport that resends it after the reconnect loops. 4 KiB is far beyond any real lock path.
pub const MAX_PATH_BYTES: usize = 4096;

/// The largest request a ZooKeeper server reads, counted without the 4-byte length prefix that
/// frames it: `jute.maxbuffer`, whose default is 0xfffff (1 MiB minus one byte). The server reads
/// the prefix first and closes the connection when it is over the limit, before reading the
/// request (`zookeeper-server/.../server/NIOServerCnxn.java` `readLength`, and the same test in
/// `NettyServerCnxn.java`, against `zookeeper-jute/.../jute/BinaryInputArchive.java`
/// `maxBuffer`). The client cannot learn the server's setting, so a request is measured against
/// the default: a server started with a larger `jute.maxbuffer` still gets nothing larger.
pub const MAX_PACKET_BYTES: usize = 0xfffff;

/// The bytes jute spends on a string or a byte buffer: its length as an int, then the bytes.
pub(crate) fn jute_bytes(len: usize) -> usize {
    4 + len
}

/// The data a clean release of a lock with a lock-delay writes on the lock path, in the same
/// multi as the delete of its node (`name`, the node's name): its successor reads it to skip
/// the delay. Curator and kazoo never read the lock path's data.
pub(crate) fn release_marker(name: &str) -> Vec<u8> {
    format!("zklock-released {name}").into_bytes()
}

/// A value as an error message shows it: quoted, and cut after 64 characters (a message must
/// not carry a megabyte of input back to the user).
pub(crate) fn shown(value: &str) -> String {
    const SHOWN: usize = 64;
    match value.char_indices().nth(SHOWN) {
        None => format!("{value:?}"),
        Some((cut, _)) => format!("{:?}... ({} bytes)", &value[..cut], value.len()),
    }
}

/// Checks a lock path before any I/O: absolute, not the root nor under `/zookeeper`, within
/// ZooKeeper's length, no trailing `/`, no empty, `.` or `..` segment, no character ZooKeeper
/// refuses (`PathUtils.validatePath`); `InvalidArgument` naming the path and the rule otherwise.
pub fn validate_path(path: &str) -> Result<()> {
    let bad = |why: &str| {
        Err(Error::invalid(format!(
            "invalid lock path {}: {why}",
            shown(path)
        )))
    };
    if path.is_empty() {
        return bad("it is empty");
    }
    if !path.starts_with('/') {
        return bad("it must be absolute (start with '/')");
    }
    if path == "/" {
        return bad("the root cannot be a lock path");
    }
    if path.len() > MAX_PATH_BYTES {
        return bad(&format!(
            "it is {} bytes long (at most {MAX_PATH_BYTES})",
            path.len()
        ));
    }
    if path.ends_with('/') {
        return bad("it must not end with '/'");
    }
    // ZooKeeper's own check (`zookeeper-server/.../common/PathUtils.java` `validatePath`) runs
    // on Java's UTF-16 chars and refuses \ud800-\uf8ff: that range holds the surrogates, so
    // every character outside the Basic Multilingual Plane (an emoji) is refused by the server
    // with a bare "bad arguments". Refused here first, with its name.
    if let Some(c) = path.chars().find(|c| *c > '\u{ffff}') {
        return bad(&format!(
            "it contains the character {c:?} (U+{:X}), outside the Basic Multilingual Plane, which \
             ZooKeeper refuses in a path",
            u32::from(c)
        ));
    }
    if let Some(c) = path.chars().find(|c| {
        c.is_control()
            || ('\u{e000}'..='\u{f8ff}').contains(c)
            || ('\u{fff0}'..='\u{ffff}').contains(c)
    }) {
        return bad(&format!("it contains the character {c:?}"));
    }
    for (i, segment) in path[1..].split('/').enumerate() {
        match segment {
            "" => return bad("it contains an empty segment ('//')"),
            "." | ".." => return bad("it contains a '.' or '..' segment"),
            "zookeeper" if i == 0 => return bad("/zookeeper is reserved by the server"),
            _ => {}
        }
    }
    Ok(())
}

/// The protected prefix of one acquire attempt: `_c_<uuid>-`. Its uuid is a version-8 uuid so
/// that `participants()` can tell zklock's nodes from Curator's (whose uuids are version 4);
/// both are the same 36 dashed characters, so Curator reads ours as its own kind.
pub(crate) fn protected_prefix() -> String {
    let mut bytes = *uuid::Uuid::new_v4().as_bytes();
    bytes[0] ^= 0x5a; // any bytes will do; new_v8 stamps the version and variant
    format!("_c_{}-", uuid::Uuid::new_v8(bytes).hyphenated())
}

/// The prefix of one attempt in kazoo's layout: the 32 hex digits of a uuid, as kazoo's `Lock`
/// names its node (`uuid.uuid4().hex` + `__lock__`). It is found again after a lost create
/// reply the same way as a protected prefix.
pub(crate) fn kazoo_prefix() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// The prefix of one attempt, which finds its node again after a lost create reply: kazoo's
/// for a kazoo-style election, else the protected prefix.
pub(crate) fn attempt_prefix(style: Option<ElectionStyle>) -> String {
    match style {
        Some(ElectionStyle::Kazoo) => kazoo_prefix(),
        _ => protected_prefix(),
    }
}

/// The name an attempt creates (before ZooKeeper appends the sequence): kazoo's
/// `<hex>__lock__` for a kazoo-style election, else Curator's `<protected prefix><marker>`.
pub(crate) fn attempt_name(prefix: &str, kind: NodeKind, style: Option<ElectionStyle>) -> String {
    match style {
        Some(ElectionStyle::Kazoo) => format!("{prefix}__lock__"),
        _ => node_prefix(prefix, kind),
    }
}

/// The child name we create (before ZooKeeper appends the sequence).
pub(crate) fn node_prefix(protected: &str, kind: NodeKind) -> String {
    format!("{protected}{}", kind.marker())
}

/// Reads a child name; `None` for anything that is no lock node (it is then ignored).
pub fn parse_contender(name: &str) -> Option<Contender> {
    read_name(name).map(|parts| parts.contender(name))
}

/// What a lock node's name says, read without a copy of the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NameParts {
    pub sequence: i32,
    pub kind: NodeKind,
    pub library: Library,
}

impl NameParts {
    /// The contender `name` is, once a walk decided to keep it (the only copy of the name).
    pub(crate) fn contender(self, name: &str) -> Contender {
        Contender {
            name: name.to_owned(),
            sequence: self.sequence,
            kind: self.kind,
            library: self.library,
        }
    }
}

/// [`parse_contender`] without the copy: for a walk over every name of a listing.
pub(crate) fn read_name(name: &str) -> Option<NameParts> {
    // `__rlock__` ends like `__lock__`, so it is tried first.
    const MARKERS: [(&str, NodeKind); 7] = [
        ("__READ__", NodeKind::Read),
        ("__WRIT__", NodeKind::Write),
        ("__rlock__", NodeKind::Read),
        ("__lock__", NodeKind::Mutex),
        ("lock-", NodeKind::Mutex),
        ("lease-", NodeKind::Lease),
        ("latch-", NodeKind::Latch),
    ];
    // The sequence is the trailing digits, with a '-' before them when it wrapped negative
    // (`%010d` of a signed int32). This runs for every child at every listing: no searching,
    // just suffix comparisons.
    let bytes = name.as_bytes();
    let digits_at = bytes.len()
        - bytes
            .iter()
            .rev()
            .take_while(|b| b.is_ascii_digit())
            .count();
    let signed = digits_at > 0 && bytes[digits_at - 1] == b'-';
    let splits = [signed.then(|| digits_at - 1), Some(digits_at)];
    for at in splits.into_iter().flatten() {
        let (head, digits) = name.split_at(at);
        if digits.len() < 10 {
            continue;
        }
        let Some((marker, kind)) = MARKERS.iter().find(|(m, _)| head.ends_with(m)) else {
            continue;
        };
        let Ok(sequence) = digits.parse::<i32>() else {
            continue;
        };
        let head = &head[..head.len() - marker.len()];
        return Some(NameParts {
            sequence,
            kind: *kind,
            library: library_of(head, marker),
        });
    }
    None
}

fn library_of(head: &str, marker: &str) -> Library {
    let is_hex = |s: &str| s.bytes().all(|b| b.is_ascii_hexdigit());
    if let Some(id) = head.strip_prefix("_c_").and_then(|h| h.strip_suffix('-')) {
        if id.len() == 36 && uuid::Uuid::try_parse(id).is_ok() {
            return if id.as_bytes()[14] == b'8' {
                Library::Zklock
            } else {
                Library::Curator
            };
        }
        if id.len() == 32 && is_hex(id) {
            return Library::GoZookeeper;
        }
    }
    if marker.starts_with("__") && marker.ends_with("lock__") && head.len() == 32 && is_hex(head) {
        return Library::Kazoo;
    }
    Library::Unknown
}

/// Sorts contenders into queue order. Sequences are compared relative to `reference` with
/// wrapping arithmetic, so the order stays right when the parent's cversion wraps past i32::MAX
/// (as long as the live nodes span less than 2^31 sequence numbers, which always holds).
pub fn sort_queue(contenders: &mut [Contender], reference: i32) {
    // Borrowed keys: a key clone per comparison was 2·n·log n Strings per listing (about
    // 20,000 allocations for a 1,000-deep queue), all transient heap while waiters queue.
    contenders.sort_by(|a, b| {
        (a.sequence.wrapping_sub(reference), &a.name)
            .cmp(&(b.sequence.wrapping_sub(reference), &b.name))
    });
}

/// Reads and orders the lock nodes among `children`, ignoring the rest.
pub fn queue_of(children: &[String], reference: Option<i32>) -> Vec<Contender> {
    let mut queue: Vec<Contender> = children.iter().filter_map(|c| parse_contender(c)).collect();
    if let Some(reference) = reference.or_else(|| queue.first().map(|c| c.sequence)) {
        sort_queue(&mut queue, reference);
    }
    queue
}

/// Checks a connect string: `host:port[,host:port...][/chroot]`.
pub fn validate_hosts(hosts: &str) -> Result<()> {
    let bad = |why: String| {
        Err(Error::invalid(format!(
            "invalid connect string {}: {why}",
            shown(hosts)
        )))
    };
    if hosts.len() > MAX_PATH_BYTES * 2 {
        return bad(format!(
            "it is {} bytes long (at most {})",
            hosts.len(),
            MAX_PATH_BYTES * 2
        ));
    }
    if hosts.chars().any(char::is_whitespace) {
        return bad("it contains white space".into());
    }
    let (list, chroot) = match hosts.find('/') {
        Some(i) => (&hosts[..i], Some(&hosts[i..])),
        None => (hosts, None),
    };
    if list.trim().is_empty() {
        return bad("no host given".into());
    }
    for entry in list.split(',') {
        let entry = entry.trim();
        // More than one ':' outside brackets (`a:b:c`, `::1:22201`) cannot be read one way: the
        // port may be part of the address. Refused at once rather than resolved as a name, which
        // would wait the whole connect timeout and report a DNS failure.
        if !entry.starts_with('[') && entry.matches(':').count() > 1 {
            return bad(format!(
                "{entry:?} has more than one ':': write host:port, and an IPv6 address in \
                 brackets, as [::1]:2181"
            ));
        }
        let (host, port) = match entry.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (entry, None),
        };
        if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return bad(format!("bad host {entry:?}"));
        }
        if let Some(port) = port {
            match port.parse::<u16>() {
                Ok(p) if p > 0 => {}
                _ => return bad(format!("bad port {port:?} in {entry:?}")),
            }
        }
    }
    if let Some(chroot) = chroot {
        if chroot != "/" {
            validate_path(chroot).map_err(|e| {
                Error::invalid(format!("invalid connect string {hosts:?}: chroot: {e}"))
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_or_connect_string_too_long_for_a_request_is_refused_with_a_short_message() {
        let long_path = format!("/{}", "x".repeat(1_100_000));
        let err = validate_path(&long_path).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument);
        assert!(err.message().contains("1100001 bytes long"), "{err}");
        assert!(err.message().len() < 200, "the message echoes the input");
        assert!(validate_path(&format!("/{}", "x".repeat(MAX_PATH_BYTES - 1))).is_ok());
        let long_hosts = format!("h{}:2181", "o".repeat(100_000));
        let err = validate_hosts(&long_hosts).unwrap_err();
        assert!(err.message().len() < 200, "{err}");
    }

    #[test]
    fn bad_paths_are_invalid_and_named() {
        for p in [
            "",
            "locks",
            "/",
            "/a/",
            "/a//b",
            "/a/./b",
            "/a/../b",
            "/a\0b",
            "/zookeeper/x",
        ] {
            let err = validate_path(p).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument);
            assert!(err.message().contains(&format!("{p:?}")), "{err}");
        }
        validate_path("/locks/orders-1").unwrap();
    }

    #[test]
    fn a_path_with_a_character_outside_the_bmp_is_refused_before_any_io_with_its_code_point() {
        let err = validate_path("/locks/\u{1f512}-orders").unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument);
        assert!(err.message().contains("U+1F512"), "{err}");
        assert!(err.message().contains("Basic Multilingual Plane"), "{err}");
        // The BMP's own letters beyond ASCII stay allowed, as the server allows them.
        validate_path("/locks/z\u{fc}rich-\u{65e5}\u{672c}").unwrap();
    }

    #[test]
    fn bad_hosts_are_invalid() {
        for h in [
            "",
            ",",
            "a:b",
            "a:0",
            "a:70000",
            "host:2181//a",
            "host:2181/a/",
            "h o:1",
        ] {
            let err = validate_hosts(h).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument, "{h}");
            assert!(err.message().contains(&format!("{h:?}")), "{err}");
        }
        validate_hosts("127.0.0.1:2181,localhost:2182/chroot/x").unwrap();
        validate_hosts("zk1").unwrap();
    }

    #[test]
    fn a_host_with_more_than_one_colon_outside_brackets_is_refused_naming_the_bracketed_form() {
        for h in ["a:b:c", "::1:22201", "[::1]:22201,::1"] {
            let err = validate_hosts(h).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument, "{h}");
            assert!(err.message().contains("[::1]:2181"), "{err}");
        }
        validate_hosts("[::1]:22201,[fe80::1]:2181/x").unwrap();
    }

    #[test]
    fn reads_every_peer_name() {
        let zk = format!("{}lock-0000000007", protected_prefix());
        let c = parse_contender(&zk).unwrap();
        assert_eq!(
            (c.sequence, c.kind, c.library),
            (7, NodeKind::Mutex, Library::Zklock)
        );
        let cur =
            parse_contender("_c_0f8fad5b-d9cb-469f-a165-70867728950e-__READ__0000000012").unwrap();
        assert_eq!(
            (c.kind, cur.kind, cur.library),
            (NodeKind::Mutex, NodeKind::Read, Library::Curator)
        );
        let w =
            parse_contender("_c_0f8fad5b-d9cb-469f-a165-70867728950e-__WRIT__0000000013").unwrap();
        assert_eq!(w.kind, NodeKind::Write);
        let kz = parse_contender("9a8b7c6d5e4f30211203948576abcdef__lock__0000000003").unwrap();
        assert_eq!(
            (kz.kind, kz.library, kz.sequence),
            (NodeKind::Mutex, Library::Kazoo, 3)
        );
        let kr = parse_contender("9a8b7c6d5e4f30211203948576abcdef__rlock__0000000004").unwrap();
        assert_eq!((kr.kind, kr.library), (NodeKind::Read, Library::Kazoo));
        let go = parse_contender("_c_9a8b7c6d5e4f30211203948576abcdef-lock-0000000005").unwrap();
        assert_eq!(go.library, Library::GoZookeeper);
        assert!(parse_contender("config").is_none());
        assert!(parse_contender("leases").is_none());
        assert!(parse_contender("lock-abc").is_none());
        let lease =
            parse_contender("_c_0f8fad5b-d9cb-469f-a165-70867728950e-lease-0000000009").unwrap();
        assert_eq!(
            (lease.kind, lease.library, lease.sequence),
            (NodeKind::Lease, Library::Curator, 9)
        );
    }

    #[test]
    fn sequences_order_across_the_i32_wrap() {
        let names = [
            "x-lock--2147483647",
            "x-lock-2147483646",
            "x-lock--2147483648",
            "x-lock-2147483647",
        ];
        let children: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        // reference: any live node; the queue spans 4 sequence numbers across the wrap
        for reference in [2147483646, -2147483647] {
            let q = queue_of(&children, Some(reference));
            let seqs: Vec<i32> = q.iter().map(|c| c.sequence).collect();
            assert_eq!(seqs, vec![2147483646, 2147483647, -2147483648, -2147483647]);
        }
    }

    #[test]
    fn latch_names_order_across_the_i32_wrap_and_each_layout_is_foreign_to_the_others() {
        let names = [
            "_c_0f8fad5b-d9cb-469f-a165-70867728950e-latch--2147483648",
            "_c_1f8fad5b-d9cb-469f-a165-70867728950e-latch-2147483647",
        ];
        let children: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let q = queue_of(&children, Some(2147483647));
        assert_eq!(
            q.iter().map(|c| c.sequence).collect::<Vec<_>>(),
            [2147483647, -2147483648]
        );
        assert!(q.iter().all(|c| c.kind == NodeKind::Latch));
        let lock = parse_contender("_c_0f8fad5b-d9cb-469f-a165-70867728950e-lock-0000000001");
        let kazoo = parse_contender("9a8b7c6d5e4f30211203948576abcdef__lock__0000000003");
        let read = parse_contender("9a8b7c6d5e4f30211203948576abcdef__rlock__0000000004");
        let (lock, kazoo, read) = (lock.unwrap(), kazoo.unwrap(), read.unwrap());
        assert_eq!(ElectionStyle::of(&q[0]), Some(ElectionStyle::Latch));
        assert_eq!(ElectionStyle::of(&lock), Some(ElectionStyle::Selector));
        assert_eq!(ElectionStyle::of(&kazoo), Some(ElectionStyle::Kazoo));
        assert_eq!(ElectionStyle::of(&read), None);
        for style in ElectionStyle::ALL {
            let same = [&q[0], &lock, &kazoo]
                .into_iter()
                .filter(|c| !style.is_foreign(c))
                .count();
            assert_eq!(same, 1, "{style}: exactly its own layout is not foreign");
            assert!(style.is_foreign(&read));
        }
        let name = attempt_name(
            &attempt_prefix(Some(ElectionStyle::Kazoo)),
            NodeKind::Mutex,
            Some(ElectionStyle::Kazoo),
        );
        assert!(name.len() == 40 && name.ends_with("__lock__"), "{name}");
    }

    #[test]
    fn our_names_are_curators_bytes() {
        let p = node_prefix(&protected_prefix(), NodeKind::Write);
        assert!(
            p.starts_with("_c_") && p.ends_with("-__WRIT__") && p.len() == 3 + 36 + 1 + 8,
            "{p}"
        );
    }
}
