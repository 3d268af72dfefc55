//! One proof chain per (process, member) (issue 54, point 2): the `sync`s of one session, the
//! *carrier*, prove the lifeline of every session of the process on the same member, its
//! *sharers*, which then send nothing of their own but their transport's pings.
//!
//! Why it holds (docs/safety.md, "Why holding costs more"; the model's checks 13 to 18,
//! `model/src/carrier.rs`): a proof needs j, a request of the session's own that its member
//! answered (it touched the session there), and k and m, two `sync`s that passed the same
//! member's learner stream after j, behind the ping reply that carried j's touch to the leader.
//! Nothing needs k and m to be the session's own: a follower's ping reply carries every session
//! it touched (`quorum/Learner.java` `ping`, `zk.getTouchSnapshot()`). So a carrier's answered
//! syncs are k or m of a sharer's proof, never its j (`Chain::record_carried`), provided both
//! connections end at the same member's server process the whole time.
//!
//! Which member a connection reached: the server that creates a session puts its own id in the
//! id's top byte (`SessionTrackerImpl.initializeNextSessionId`; a follower's
//! `LearnerSessionTracker` seeds it with its `serverId`), and a TCP connection never changes its
//! backend, also behind a TCP load balancer. So a session is on the member its id names while
//! its first connection lasts (`zk::Client::connection_generation` reads 0), and a member that
//! restarts or loses its leader closes every connection (`Learner.shutdown` →
//! `closeAllConnections`). A carrier hands on only answers read over its first connection; a
//! sharer takes them only while its own first connection lasts. When either breaks the sharing
//! ends for good: the relay is broken (final) and each sharer runs its own chain from then on,
//! its next heartbeat at once, as the model checks (it does not let a session share again).
//!
//! The key is the process, the connect string and the member id: sessions of other connect
//! strings (another ensemble, a proxy, a chroot) never share, nor does a child made by fork()
//! share a carrier of its parent's (whose tasks it does not run).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::base::clock::BootInstant;

/// The member a session's id names: the id of the server that created it.
pub(crate) fn member_of(session_id: i64) -> u8 {
    (session_id as u64 >> 56) as u8
}

/// What a carrier needs of a session that shares its chain (`Session` is one).
pub(crate) trait Sharer: Send + Sync {
    /// A sync of the carrier's, sent and answered over the carrier's first connection. The
    /// sharer takes it only while its own first connection lasts.
    fn carried(&self, sent: BootInstant, answered: BootInstant);
    /// Whether the sharer needs its proof now (the carrier sends its syncs while one does).
    fn needs_proof(&self, now: Instant) -> bool;
    /// The carrier's chain ended: the sharer proves on its own from now on.
    fn carrier_broke(&self);
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    /// The process: a child made by fork() inherits the registry but none of the tasks
    /// that send the carriers' syncs.
    pid: u32,
    hosts: String,
    member: u8,
}

/// The process's carriers, by connect string and member. A weak entry: the carrier session
/// owns its relay, and a relay whose carrier is gone is replaced by the next session to open.
fn carriers() -> &'static Mutex<HashMap<Key, Weak<Relay>>> {
    static CARRIERS: OnceLock<Mutex<HashMap<Key, Weak<Relay>>>> = OnceLock::new();
    CARRIERS.get_or_init(Mutex::default)
}

/// What a new session is in its member's chain.
pub(crate) enum Joined {
    /// It carries the chain: its syncs are handed on to the sharers.
    Carrier(Arc<Relay>),
    /// It shares the chain of the session named by the relay.
    Sharer(Arc<Relay>),
}

/// A carrier's chain as its sharers see it.
pub(crate) struct Relay {
    key: Key,
    /// The carrier's session id.
    carrier: i64,
    /// Final once set: the carrier's first connection broke, or its session ended.
    broken: AtomicBool,
    /// A sharer asked for a sync sent from now on (`ask`); cleared when the carrier sends one.
    asked: AtomicBool,
    /// Wakes the carrier's lifeline task.
    wake: Arc<Notify>,
    sharers: Mutex<Vec<Weak<dyn Sharer>>>,
}

/// A session just opened, whose id is `session_id` and whose lifeline task `wake` wakes, joins
/// its member's chain in this process: it shares the live carrier's, or carries one itself.
pub(crate) fn join(
    hosts: &str,
    session_id: i64,
    wake: &Arc<Notify>,
    sharer: Weak<dyn Sharer>,
) -> Joined {
    let key = Key {
        pid: std::process::id(),
        hosts: hosts.to_owned(),
        member: member_of(session_id),
    };
    let mut carriers = carriers().lock().unwrap();
    if let Some(relay) = carriers.get(&key).and_then(Weak::upgrade) {
        if !relay.is_broken() {
            relay.sharers.lock().unwrap().push(sharer);
            return Joined::Sharer(relay);
        }
    }
    let relay = Arc::new(Relay {
        key: key.clone(),
        carrier: session_id,
        broken: AtomicBool::new(false),
        asked: AtomicBool::new(false),
        wake: wake.clone(),
        sharers: Mutex::default(),
    });
    carriers.insert(key, Arc::downgrade(&relay));
    Joined::Carrier(relay)
}

impl Relay {
    /// The carrier's session id.
    pub(crate) fn carrier(&self) -> i64 {
        self.carrier
    }

    pub(crate) fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Acquire)
    }

    /// A sharer's catch-up: the carrier sends a sync at its next look, after this call.
    pub(crate) fn ask(&self) {
        self.asked.store(true, Ordering::Release);
        self.wake.notify_one();
    }

    /// The carrier takes the sharers' asks (it is about to send a sync).
    pub(crate) fn take_asked(&self) -> bool {
        self.asked.swap(false, Ordering::AcqRel)
    }

    /// Whether a sharer needs the proof now.
    pub(crate) fn needed(&self, now: Instant) -> bool {
        let mut sharers = self.sharers.lock().unwrap();
        sharers.retain(|s| s.strong_count() > 0);
        sharers
            .iter()
            .filter_map(Weak::upgrade)
            .any(|s| s.needs_proof(now))
    }

    /// The carrier's sync sent at `sent` was answered at `answered` over its first connection:
    /// every sharer takes it.
    pub(crate) fn hand_on(&self, sent: BootInstant, answered: BootInstant) {
        if self.is_broken() {
            return;
        }
        let sharers: Vec<_> = self
            .sharers
            .lock()
            .unwrap()
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for sharer in sharers {
            sharer.carried(sent, answered);
        }
    }

    /// The carrier's first connection broke or its session ended: the relay is broken for
    /// good, the next session to open on the member carries a new chain, and every sharer
    /// proves on its own. Twice is harmless.
    pub(crate) fn break_off(&self) {
        if self.broken.swap(true, Ordering::AcqRel) {
            return;
        }
        {
            let mut carriers = carriers().lock().unwrap();
            let ours = carriers
                .get(&self.key)
                .is_some_and(|w| std::ptr::eq(w.as_ptr(), self));
            if ours {
                carriers.remove(&self.key);
            }
        }
        let sharers: Vec<_> = std::mem::take(&mut *self.sharers.lock().unwrap());
        for sharer in sharers.iter().filter_map(Weak::upgrade) {
            sharer.carrier_broke();
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.break_off();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[derive(Default)]
    struct Probe {
        carried: AtomicUsize,
        broke: AtomicBool,
        active: AtomicBool,
    }

    impl Sharer for Probe {
        fn carried(&self, _: BootInstant, _: BootInstant) {
            self.carried.fetch_add(1, Ordering::Relaxed);
        }
        fn needs_proof(&self, _: Instant) -> bool {
            self.active.load(Ordering::Relaxed)
        }
        fn carrier_broke(&self) {
            self.broke.store(true, Ordering::Relaxed);
        }
    }

    fn sharer(p: &Arc<Probe>) -> Weak<dyn Sharer> {
        let p: Arc<dyn Sharer> = p.clone();
        Arc::downgrade(&p)
    }

    // Each test its own connect string: the registry is the process's.
    #[test]
    fn the_member_is_the_top_byte_of_the_session_id() {
        assert_eq!(member_of(0x0300_0001_2345_6789), 3);
        assert_eq!(member_of(-0x0100_0000_0000_0000), 0xff);
        assert_eq!(member_of(0x0000_0000_0000_0001), 0);
    }

    #[test]
    fn the_first_session_on_a_member_carries_and_the_next_share_its_chain() {
        let wake = Arc::new(Notify::new());
        let (a, b) = (Arc::new(Probe::default()), Arc::new(Probe::default()));
        let hosts = "carrier-test-1:2181";
        let Joined::Carrier(relay) = join(hosts, 0x0200_0000_0000_0001, &wake, sharer(&a)) else {
            panic!("the first session must carry");
        };
        let Joined::Sharer(shared) = join(hosts, 0x0200_0000_0000_0002, &wake, sharer(&b)) else {
            panic!("the second session on the member must share");
        };
        assert!(Arc::ptr_eq(&relay, &shared));
        assert_eq!(shared.carrier(), 0x0200_0000_0000_0001);
        let now = BootInstant::now();
        relay.hand_on(now, now);
        assert_eq!(b.carried.load(Ordering::Relaxed), 1);
        assert_eq!(
            a.carried.load(Ordering::Relaxed),
            0,
            "the carrier is not its own sharer"
        );
    }

    #[test]
    fn sessions_on_other_members_or_connect_strings_never_share() {
        let wake = Arc::new(Notify::new());
        let p = Arc::new(Probe::default());
        let hosts = "carrier-test-2:2181";
        let _one = join(hosts, 0x0100_0000_0000_0001, &wake, sharer(&p));
        assert!(matches!(
            join(hosts, 0x0200_0000_0000_0001, &wake, sharer(&p)),
            Joined::Carrier(_)
        ));
        assert!(matches!(
            join(
                "carrier-test-2:2182",
                0x0100_0000_0000_0002,
                &wake,
                sharer(&p)
            ),
            Joined::Carrier(_)
        ));
    }

    #[test]
    fn a_broken_relay_tells_its_sharers_hands_on_nothing_and_the_next_session_carries_anew() {
        let wake = Arc::new(Notify::new());
        let (a, b) = (Arc::new(Probe::default()), Arc::new(Probe::default()));
        let hosts = "carrier-test-3:2181";
        let Joined::Carrier(relay) = join(hosts, 0x0100_0000_0000_0001, &wake, sharer(&a)) else {
            panic!("the first session must carry");
        };
        let _b = join(hosts, 0x0100_0000_0000_0002, &wake, sharer(&b));
        relay.break_off();
        assert!(b.broke.load(Ordering::Relaxed));
        let now = BootInstant::now();
        relay.hand_on(now, now);
        assert_eq!(b.carried.load(Ordering::Relaxed), 0);
        assert!(matches!(
            join(hosts, 0x0100_0000_0000_0003, &wake, sharer(&a)),
            Joined::Carrier(_)
        ));
    }

    #[test]
    fn a_dropped_carrier_breaks_its_relay() {
        let wake = Arc::new(Notify::new());
        let b = Arc::new(Probe::default());
        let hosts = "carrier-test-4:2181";
        let Joined::Carrier(relay) = join(hosts, 0x0100_0000_0000_0001, &wake, sharer(&b)) else {
            panic!("the first session must carry");
        };
        let Joined::Sharer(shared) = join(hosts, 0x0100_0000_0000_0002, &wake, sharer(&b)) else {
            panic!("the second must share");
        };
        drop(shared);
        drop(relay);
        assert!(b.broke.load(Ordering::Relaxed));
    }

    #[test]
    fn the_carrier_is_asked_until_it_takes_the_ask_and_beats_while_a_sharer_needs_it() {
        let wake = Arc::new(Notify::new());
        let b = Arc::new(Probe::default());
        let hosts = "carrier-test-5:2181";
        let Joined::Carrier(relay) = join(hosts, 0x0100_0000_0000_0001, &wake, sharer(&b)) else {
            panic!("the first session must carry");
        };
        let _b = join(hosts, 0x0100_0000_0000_0002, &wake, sharer(&b));
        assert!(!relay.needed(Instant::now()));
        b.active.store(true, Ordering::Relaxed);
        assert!(relay.needed(Instant::now()));
        assert!(!relay.take_asked());
        relay.ask();
        assert!(relay.take_asked());
        assert!(!relay.take_asked(), "one ask, one sync");
    }
}
