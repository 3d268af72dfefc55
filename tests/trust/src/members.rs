//! Which member of a harness ensemble is which: the server id each member reports (its `myid`),
//! the member that created a session (a session id's top byte), and the wait for an ensemble
//! that serves under one leader.

use std::time::{Duration, Instant};

use zklock_testkit::ZooKeeper;

/// The server id (`myid`) member `i` reports in its `conf` four-letter word.
pub fn server_id(zk: &ZooKeeper, i: usize) -> u64 {
    let conf = zk
        .four_letter(i, "conf")
        .unwrap_or_else(|e| panic!("member {i} did not answer `conf`: {e}"));
    conf.lines()
        .find_map(|l| l.trim().strip_prefix("serverId="))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("member {i}'s `conf` names no serverId:\n{conf}"))
}

/// The server id in a session id: the top byte, set by the member that created the session
/// (`SessionTrackerImpl.initializeNextSessionId`: `... | (id << 56)`; a follower's
/// `LearnerSessionTracker` seeds it with its own server id).
pub fn creator_id(session_id: i64) -> u64 {
    (session_id as u64) >> 56
}

/// The server ids of every member, by member index.
pub fn server_ids(zk: &ZooKeeper) -> Vec<u64> {
    (0..zk.len()).map(|i| server_id(zk, i)).collect()
}

/// The member (index) that created session `session_id`, given `server_ids(zk)`.
pub fn creator(ids: &[u64], session_id: i64) -> usize {
    let id = creator_id(session_id);
    ids.iter().position(|&s| s == id).unwrap_or_else(|| {
        panic!("session {session_id:#x} names server id {id}, which no member has ({ids:?})")
    })
}

/// Waits until every member serves under one leader, and returns the leader (fails after 90 s
/// saying what served).
pub fn settled(zk: &ZooKeeper) -> usize {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let (serving, leader) = (zk.serving(), zk.leader());
        if let (n, Some(leader)) = (serving.len(), leader) {
            if n == zk.len() {
                return leader;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the ensemble did not settle with {} members serving (serving: {serving:?})",
            zk.len()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
