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
//! **The version class.** A server answers an op it does not know with UNIMPLEMENTED and then
//! closes the connection: `ZooKeeperServer.submitRequest` gives a request `Request.isValid`
//! refuses to `UnimplementedRequestProcessor`, which sends the reply and `sendCloseSession()`
//! (apache/zookeeper release-3.4.13, `src/java/main/org/apache/zookeeper/server/
//! UnimplementedRequestProcessor.java` and `ZooKeeperServer.java`; the same through 3.9). So the
//! requests that tell the classes apart go on the tick's probe session, never on the client's
//! own, and oldest first: checkWatches of `/` (op 17, 3.5+: whether this session watches `/`),
//! getEphemerals of `/` (op 103, 3.6+: this session's own ephemeral nodes), whoAmI (op 107,
//! 3.7+), one at a time (`zk::probe_session`); the first the server answers UNIMPLEMENTED names
//! the class below it. An answer lost to a broken connection tells nothing (`class_of`).
//! A 3.4 server is known after one round trip on the probe session and refused (`adopt`), the
//! probe session left to expire in its two ticks; nothing is retried. A 3.7+ server costs three
//! round trips on the probe session, once per client.
//!
//! A server that requires SASL before any request (`zookeeper.sessionRequireClientSASLAuth`,
//! 3.5.x and later) answers the probe session, which carries no credentials, with
//! SESSIONCLOSEDREQUIRESASLAUTH: the class is then taken as 3.5, the lowest such a server can
//! be, so nothing of 3.6+ is used on it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use zklock_wire::client as zk;
use zklock_wire::jute::{code, op, Writer};

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
    let probed = zk::probe_session(&session.connected_host(), options, secure, &probes())
        .await
        .map_err(|e| {
            Error::new(
                ErrorKind::Connection,
                format!("cannot learn the tick of ZooKeeper at {hosts}: {e}"),
            )
        })?;
    let facts = ServerFacts {
        tick_bound: probed.granted / 2,
        features: ServerFeatures {
            class: class_of(&probed.answers),
        },
    };
    crate::ops::observe::server_facts(
        counters,
        hosts,
        facts.tick_bound,
        facts.features.version_class(),
    );
    // A 3.4 verdict is not kept: the client is refused, and a connect retried later (after an
    // upgrade) probes again. Nor is a class that rests on a lost answer (see `class_of`).
    let lost = probed.answers.contains(&zk::ProbeAnswer::Lost);
    if facts.features.create2() && !lost {
        *learned.lock().unwrap() = Some(facts);
    }
    Ok(facts)
}

/// The classes [`probes`] tell, in its order: each probe is a request its class was first to
/// know (see the module's header).
const PROBED: [ServerClass; 3] = [ServerClass::V3_5, ServerClass::V3_6, ServerClass::V3_7];

fn probes() -> Vec<(i32, Vec<u8>)> {
    let mut root = Vec::new();
    root.write_string("/");
    let mut check = root.clone();
    check.write_int(3); // `Watcher.WatcherType.Any`
    vec![
        (op::CHECK_WATCHES, check),
        (op::GET_EPHEMERALS, root),
        (op::WHO_AM_I, Vec::new()),
    ]
}

/// The newest class whose probe, and every older one's, the server knew. An answer lost (the
/// connection broke or timed out before it) tells nothing: the real server answers an unknown
/// op before it closes, and the probes go one at a time, so that answer is never cut off by the
/// close. Then the class is the newest one known so far, and at least 3.5: a blip on the probe
/// must not refuse a good server, and on a 3.4 the first acquire's `create2` fails at once with
/// UNIMPLEMENTED anyway; nothing of 3.6+ is used on such a guess, and it is not kept.
fn class_of(answers: &[zk::ProbeAnswer]) -> ServerClass {
    let mut class = ServerClass::V3_4;
    for (newer, answer) in PROBED.iter().zip(answers) {
        match answer {
            zk::ProbeAnswer::Answered(code::SESSION_CLOSED_REQUIRE_SASL_AUTH) => {
                return class.max(ServerClass::V3_5)
            }
            zk::ProbeAnswer::Answered(code::UNIMPLEMENTED) => return class,
            zk::ProbeAnswer::Lost => return class.max(ServerClass::V3_5),
            zk::ProbeAnswer::Answered(_) => class = *newer,
        }
    }
    class
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
                "ZooKeeper at {hosts} is older than 3.5 (it does not know checkWatches, a 3.5 \
                 request: it answered UNIMPLEMENTED): zklock's locks \
                 need create2 and container nodes, ZooKeeper 3.5 or later \
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
    fn the_first_probe_the_server_does_not_know_names_the_class_below_it() {
        use zk::ProbeAnswer::{Answered, Lost};
        let nowatcher = -121;
        let unimplemented = code::UNIMPLEMENTED;
        assert_eq!(class_of(&[Answered(unimplemented)]), ServerClass::V3_4);
        // The real 3.4 answers and then closes; an answer lost tells nothing (a blip): the
        // class is the newest confirmed, and at least 3.5.
        assert_eq!(class_of(&[Lost]), ServerClass::V3_5);
        assert_eq!(
            class_of(&[Answered(nowatcher), Answered(unimplemented)]),
            ServerClass::V3_5
        );
        assert_eq!(
            class_of(&[Answered(nowatcher), Answered(0), Lost]),
            ServerClass::V3_6
        );
        assert_eq!(
            class_of(&[Answered(nowatcher), Answered(0), Answered(0)]),
            ServerClass::V3_7
        );
        let sasl_first = Answered(code::SESSION_CLOSED_REQUIRE_SASL_AUTH);
        assert_eq!(class_of(&[sasl_first]), ServerClass::V3_5);
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
