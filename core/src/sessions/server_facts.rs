//! What zklock learns of its servers when a client connects (issue 53): their tick, which the
//! lifeline's proof depends on and ZooKeeper never sends, and which version class answered.
//! Learned once per client and connect string (a client's later sessions reuse it), because
//! each probe costs the servers a session.
//!
//! **The tick.** A session that asks for 1 ms is granted `minSessionTimeout`, which is two ticks
//! unless the operator set it (`ZooKeeperServer.getMinSessionTimeout`: `minSessionTimeout == -1
//! ? tickTime * 2`; `QuorumPeerConfig.parse` the same; the clamp is in `ZooKeeperServer
//! .processConnectRequest`). Half of it is the tick, or, when the operator raised the minimum,
//! more than the tick: an upper bound. Either is safe for the proof, which only grows more
//! cautious with a larger tick (docs/safety.md, "The deadline and its terms"); a tick assumed
//! smaller than the server's is what is unsafe. So the lifeline runs on the larger of the
//! user's `server_tick` and this bound, and a session too short for that tick is refused with
//! both named. `conf` (a four-letter word) would say `tickTime` exactly, but ZooKeeper 3.5+
//! answers only `srvr` unless the operator whitelists more (`4lw.commands.whitelist`,
//! `FourLetterCommands.java`), and it needs a plain TCP port: the probe works on every server,
//! TLS included.
//!
//! **The version class.** A server answers an op it does not know with UNIMPLEMENTED and keeps
//! the connection (`ZooKeeperServer.submitRequest`, `UnimplementedRequestProcessor`). Three
//! harmless requests, newest first, tell the classes apart: whoAmI (op 107, 3.7+), getEphemerals
//! of `/` (op 103, 3.6+: this session's own ephemeral nodes) and checkWatches of `/` (op 17,
//! 3.5+: whether this session watches `/`). A 3.7+ server answers the first: one round trip.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use zklock_wire::client as zk;
use zklock_wire::jute::{op, Writer};

use crate::base::error::{Error, ErrorKind, Result};
use crate::base::text::duration;
use crate::ops::stats::Counters;

/// The ZooKeeper version classes zklock tells apart, oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ServerClass {
    /// 3.4: no create2, no container nodes. zklock refuses it.
    V3_4,
    /// 3.5: no persistent watches (addWatch), getEphemerals, multiRead.
    V3_5,
    /// 3.6: no whoAmI.
    V3_6,
    /// 3.7 and later.
    V3_7,
}

/// What the servers of a client's connect string can do, as learned at connect
/// ([`crate::Client::server_features`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ServerFeatures {
    class: ServerClass,
}

impl ServerFeatures {
    /// The version class that answered.
    pub fn class(&self) -> ServerClass {
        self.class
    }

    /// The class as text: `"3.4"`, `"3.5"`, `"3.6"` or `"3.7+"` (what every face shows).
    pub fn version_class(&self) -> &'static str {
        match self.class {
            ServerClass::V3_4 => "3.4",
            ServerClass::V3_5 => "3.5",
            ServerClass::V3_6 => "3.6",
            ServerClass::V3_7 => "3.7+",
        }
    }

    /// create2 (op 15) and container nodes (op 19): 3.5+. zklock's locks need them.
    pub fn create2(&self) -> bool {
        self.class >= ServerClass::V3_5
    }

    /// Persistent watches (addWatch, op 106), getEphemerals (op 103), multiRead (op 22): 3.6+.
    pub fn persistent_watches(&self) -> bool {
        self.class >= ServerClass::V3_6
    }

    /// whoAmI (op 107): 3.7+.
    pub fn who_am_i(&self) -> bool {
        self.class >= ServerClass::V3_7
    }

    /// The requests this class lacks, by name (empty for 3.7+).
    pub fn lacks(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if !self.create2() {
            out.extend(["create2", "createContainer"]);
        }
        if !self.persistent_watches() {
            out.extend(["addWatch", "getEphemerals", "multiRead"]);
        }
        if !self.who_am_i() {
            out.push("whoAmI");
        }
        out
    }
}

/// What one probe learned.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ServerFacts {
    /// Half the shortest session the servers grant: their tick, or more (see the module's
    /// header).
    pub(crate) tick_bound: Duration,
    pub(crate) features: ServerFeatures,
}

/// A client's facts, learned by its first session and reused by the next ones.
pub(crate) type Learned = Arc<Mutex<Option<ServerFacts>>>;

/// The facts for `session`'s servers: `learned`'s, or probed now (and kept there).
pub(crate) async fn learn(
    learned: &Learned,
    hosts: &str,
    options: &zk::ClientOptions,
    secure: Option<zk::Secure>,
    session: &zk::Client,
    counters: &Counters,
) -> Result<ServerFacts> {
    if let Some(facts) = *learned.lock().unwrap() {
        return Ok(facts);
    }
    // The member the session is on: members of one ensemble share their tickTime, and a test
    // that tells a client's member by its open connections sees only that one.
    let granted = zk::shortest_session(&session.connected_host(), options, secure)
        .await
        .map_err(|e| {
            Error::new(
                ErrorKind::Connection,
                format!("cannot learn the tick of ZooKeeper at {hosts}: {e}"),
            )
        })?;
    let class = class_of(session, hosts).await?;
    let facts = ServerFacts {
        tick_bound: granted / 2,
        features: ServerFeatures { class },
    };
    crate::ops::observe::server_facts(
        counters,
        hosts,
        facts.tick_bound,
        facts.features.version_class(),
    );
    *learned.lock().unwrap() = Some(facts);
    Ok(facts)
}

async fn class_of(session: &zk::Client, hosts: &str) -> Result<ServerClass> {
    let asked = |what: &str, e: zk::Error| {
        Error::from_zk(e, &format!("ask ZooKeeper at {hosts} for {what}"))
    };
    if session
        .knows_op(op::WHO_AM_I, Vec::new())
        .await
        .map_err(|e| asked("whoAmI", e))?
    {
        return Ok(ServerClass::V3_7);
    }
    let mut root = Vec::new();
    root.write_string("/");
    if session
        .knows_op(op::GET_EPHEMERALS, root.clone())
        .await
        .map_err(|e| asked("getEphemerals", e))?
    {
        return Ok(ServerClass::V3_6);
    }
    let mut check = root;
    check.write_int(3); // `Watcher.WatcherType.Any`
    if session
        .knows_op(op::CHECK_WATCHES, check)
        .await
        .map_err(|e| asked("checkWatches", e))?
    {
        return Ok(ServerClass::V3_5);
    }
    Ok(ServerClass::V3_4)
}

/// The tick the lifeline runs on: the larger of the user's and the learned bound (a smaller one
/// would be unsafe), or the learned bound alone. Refuses a server too old for zklock's requests,
/// and a session too short for the tick, naming both ticks.
pub(crate) fn adopt(
    named: Option<Duration>,
    facts: &ServerFacts,
    granted: Duration,
    hosts: &str,
) -> Result<Duration> {
    if !facts.features.create2() {
        return Err(Error::new(
            ErrorKind::ZooKeeper,
            format!(
                "ZooKeeper at {hosts} is 3.4 (UNIMPLEMENTED to checkWatches, a 3.5 request): \
                 zklock's locks need create2 and container nodes, ZooKeeper 3.5+ \
                 (docs/interop.md, \"Server versions\")"
            ),
        ));
    }
    let tick = named.map_or(facts.tick_bound, |n| n.max(facts.tick_bound));
    if !crate::sessions::lifeline_math::timing_fits(granted, tick) {
        let named = named.map_or("none".to_owned(), duration);
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "session timeout {} (granted by ZooKeeper at {hosts}) is under four ticks of \
                 {} (server_tick named: {named}; learned from the server: at most {}): zklock \
                 could not know of a loss in time; use a session of at least {}",
                duration(granted),
                duration(tick),
                duration(facts.tick_bound),
                duration(tick * 4)
            ),
        ));
    }
    Ok(tick)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(tick_ms: u64, class: ServerClass) -> ServerFacts {
        ServerFacts {
            tick_bound: Duration::from_millis(tick_ms),
            features: ServerFeatures { class },
        }
    }

    #[test]
    fn the_learned_tick_wins_over_a_smaller_named_one() {
        let f = facts(3_000, ServerClass::V3_7);
        let t = adopt(
            Some(Duration::from_secs(2)),
            &f,
            Duration::from_secs(20),
            "h",
        )
        .unwrap();
        assert_eq!(t, Duration::from_secs(3));
        let t = adopt(None, &f, Duration::from_secs(20), "h").unwrap();
        assert_eq!(t, Duration::from_secs(3));
    }

    #[test]
    fn a_larger_named_tick_is_kept() {
        let f = facts(200, ServerClass::V3_7);
        let t = adopt(
            Some(Duration::from_millis(500)),
            &f,
            Duration::from_secs(4),
            "h",
        );
        assert_eq!(t.unwrap(), Duration::from_millis(500));
    }

    #[test]
    fn a_session_too_short_for_the_learned_tick_is_refused_naming_both_ticks() {
        let f = facts(3_000, ServerClass::V3_7);
        let err = adopt(
            Some(Duration::from_secs(2)),
            &f,
            Duration::from_secs(10),
            "h",
        )
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.message().contains("server_tick named: 2 s"), "{err}");
        assert!(err.message().contains("at most 3 s"), "{err}");
    }

    #[test]
    fn a_3_4_server_is_refused_naming_create2() {
        let err = adopt(
            None,
            &facts(200, ServerClass::V3_4),
            Duration::from_secs(10),
            "h",
        )
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ZooKeeper);
        assert!(err.message().contains("create2"), "{err}");
    }

    #[test]
    fn each_class_names_what_it_lacks() {
        let lacks = |c| ServerFeatures { class: c }.lacks();
        assert!(lacks(ServerClass::V3_7).is_empty());
        assert_eq!(lacks(ServerClass::V3_6), ["whoAmI"]);
        assert!(lacks(ServerClass::V3_5).contains(&"addWatch"));
        assert!(lacks(ServerClass::V3_4).contains(&"create2"));
    }
}
