//! Refusing a server whose history went backwards (issue 33), and remembering the refusal
//! (issue 51). A client that saw zxid Z connects with `lastZxidSeen` Z; a server whose data was
//! wiped or restored has an older history and closes such a connection without an answer
//! (`ZooKeeperServer.processConnectRequest`: "Refusing session request for client ... as it has
//! seen zxid ... our last zxid is ..."), before it creates a session, so that attempt writes
//! nothing. Telling that refusal apart from a server going down takes a probe: a session opened
//! as a new client would, which is two writes on the server (its createSession and
//! closeSession). Without memory, every refused acquire of every client paid that probe, for as
//! long as the server stayed behind; with it, a client probes once per zxid it has seen, and
//! later refusals of the same history answer from memory (the connect attempt itself still
//! goes out, so a server that caught up is used again at once).

use std::sync::atomic::AtomicI64;
use std::sync::{Arc, Mutex};

use zklock_wire::client as zk;

/// What a client knows of its servers' history over all its sessions: the largest zxid any of
/// them saw (a later session refuses a server whose history is older, so tokens never repeat
/// within a client's life), and the refusal it remembers: the zxid it had seen when a probe
/// showed the server behind it, and the message that said so.
#[derive(Default)]
pub(crate) struct History {
    seen: Arc<AtomicI64>,
    refused: Mutex<Option<(i64, String)>>,
}

impl History {
    /// The largest zxid the client's sessions saw, shared with each session, which raises it
    /// when it ends.
    pub(crate) fn seen(&self) -> &Arc<AtomicI64> {
        &self.seen
    }

    /// The remembered refusal's message, when it was for a client that had seen `seen`: the
    /// same closed connection from the same history needs no second probe.
    pub(crate) fn refused(&self, seen: i64) -> Option<String> {
        let refused = self.refused.lock().unwrap();
        refused
            .as_ref()
            .filter(|(at, _)| *at == seen)
            .map(|(_, why)| why.clone())
    }

    /// Remembers that a probe found the servers behind `seen`.
    pub(crate) fn remember(&self, seen: i64, why: &str) {
        *self.refused.lock().unwrap() = Some((seen, why.to_owned()));
    }
}

/// Whether the servers of `hosts` have a history older than `options.last_zxid_seen` (a data
/// directory wiped, or restored from a backup): the message saying so, or `None`. Connects as a
/// new client would (lastZxidSeen 0), reads the zxid of the server's first reply (a read's
/// reply header carries its last processed zxid, `FinalRequestProcessor`) and closes that
/// session at once, waiting for the close to be answered.
pub(crate) async fn behind(
    hosts: &str,
    options: &zk::ClientOptions,
    secure: Option<zk::Secure>,
) -> Option<String> {
    let seen = options.last_zxid_seen;
    let probe_options = zk::ClientOptions {
        last_zxid_seen: 0,
        ..options.clone()
    };
    let probe = zk::Client::connect(hosts, probe_options, secure)
        .await
        .ok()?;
    let answered = probe.check_stat("/").await;
    let theirs = probe.last_zxid();
    // The probe's session is closed before the refusal is told: nothing this client did is
    // still under way on the server once the caller hears of it. Bounded: the close ends with
    // the server's answer or with the connection.
    let mut states = probe.state_watcher();
    probe.close();
    let closed = async {
        while !states.peek_state().is_terminated() {
            states.changed().await;
        }
    };
    let _ = tokio::time::timeout(options.connect_timeout, closed).await;
    answered.ok()?;
    (theirs < seen).then(|| {
        format!(
            "ZooKeeper at {hosts} has an older history than this client has seen (its last \
             zxid 0x{theirs:x}, this client saw 0x{seen:x}): its data was wiped or restored \
             from a backup. Refused: the fencing tokens it would hand out could repeat tokens \
             this client's earlier leases had (docs/safety.md, \"History that goes backwards\")"
        )
    })
}
