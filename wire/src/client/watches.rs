//! The watches of a session (after `ZKWatchManager.java`, apache/zookeeper release-3.8.4): armed
//! when the request that sets one is answered, fired by the server's notifications, re-armed
//! after a reconnect, ended with the session.

use std::collections::HashMap;

use tokio::sync::oneshot;

use super::state::{EventType, SessionState, WatchedEvent};
use crate::jute::*;

/// The watches of a session, by the path the server knows (with the chroot).
#[derive(Default)]
pub(super) struct Watches {
    pub(super) data: HashMap<String, Vec<oneshot::Sender<WatchedEvent>>>,
    pub(super) exist: HashMap<String, Vec<oneshot::Sender<WatchedEvent>>>,
    pub(super) child: HashMap<String, Vec<oneshot::Sender<WatchedEvent>>>,
    /// Requests in flight that set a watch, by tag: armed when answered.
    pub(super) pending: HashMap<u64, (WatchKind, String, oneshot::Sender<WatchedEvent>)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WatchKind {
    /// getData's (and exists' on a node that exists).
    Data,
    /// exists' on a node that does not exist.
    Exist,
    Child,
}

impl Watches {
    pub(super) fn armed(&mut self, tag: u64, err: i32) {
        let Some((kind, path, tx)) = self.pending.remove(&tag) else {
            return;
        };
        let kind = match (kind, err) {
            (_, code::OK) => kind,
            (WatchKind::Data | WatchKind::Exist, code::NO_NODE) if kind == WatchKind::Exist => {
                WatchKind::Exist
            }
            _ => return,
        };
        let map = match kind {
            WatchKind::Data => &mut self.data,
            WatchKind::Exist => &mut self.exist,
            WatchKind::Child => &mut self.child,
        };
        map.entry(path).or_default().push(tx);
    }

    /// `ZKWatchManager.materialize`: which watches a notification fires. Returns whether it
    /// fired any: a notification nobody asked for is dropped here, before any allocation.
    pub(super) fn fire(&mut self, event: &WatcherEvent, chroot: &str) -> bool {
        let path = &event.path;
        let (event_type, maps): (EventType, &[u8]) = match event.event_type {
            event_type::NODE_CREATED => (EventType::NodeCreated, &[0, 1]),
            event_type::NODE_DATA_CHANGED => (EventType::NodeDataChanged, &[0, 1]),
            event_type::NODE_CHILDREN_CHANGED => (EventType::NodeChildrenChanged, &[2]),
            event_type::NODE_DELETED => (EventType::NodeDeleted, &[0, 1, 2]),
            _ => return false,
        };
        let asked = maps.iter().any(|&m| match m {
            0 => self.data.contains_key(path),
            1 => self.exist.contains_key(path),
            _ => self.child.contains_key(path),
        });
        if !asked {
            return false;
        }
        let shown = strip_chroot(path, chroot);
        for &m in maps {
            let map = match m {
                0 => &mut self.data,
                1 => &mut self.exist,
                _ => &mut self.child,
            };
            for tx in map.remove(path).unwrap_or_default() {
                let _ = tx.send(WatchedEvent {
                    event_type,
                    session_state: SessionState::SyncConnected,
                    path: shown.clone(),
                });
            }
        }
        true
    }

    /// The session ended: every watch gets a session event.
    pub(super) fn end(&mut self, state: SessionState) {
        let all = self
            .data
            .drain()
            .chain(self.exist.drain())
            .chain(self.child.drain())
            .flat_map(|(_, v)| v);
        for tx in all {
            let _ = tx.send(WatchedEvent::session(state));
        }
        self.pending.clear();
    }

    /// The `SetWatches` records re-arming every watch after a reconnect, each under the
    /// packet limit (`ClientCnxn.SET_WATCHES_MAX_LENGTH` splits them at 128 KB likewise).
    pub(super) fn set_watches(&self, relative_zxid: i64) -> Vec<SetWatches> {
        const MAX: usize = 128 * 1024;
        let mut out = Vec::new();
        let mut current = SetWatches {
            relative_zxid,
            ..Default::default()
        };
        let mut size = 0;
        let lists = [(&self.data, 0u8), (&self.exist, 1), (&self.child, 2)];
        for (map, which) in lists {
            for (path, txs) in map {
                if txs.iter().all(|t| t.is_closed()) {
                    continue;
                }
                if size + path.len() + 4 > MAX && size > 0 {
                    out.push(std::mem::replace(
                        &mut current,
                        SetWatches {
                            relative_zxid,
                            ..Default::default()
                        },
                    ));
                    size = 0;
                }
                size += path.len() + 4;
                match which {
                    0 => current.data_watches.push(path.clone()),
                    1 => current.exist_watches.push(path.clone()),
                    _ => current.child_watches.push(path.clone()),
                }
            }
        }
        if size > 0 {
            out.push(current);
        }
        out
    }

    /// Drops the watches nobody waits for any more.
    pub(super) fn prune(&mut self) {
        for map in [&mut self.data, &mut self.exist, &mut self.child] {
            map.retain(|_, v| {
                v.retain(|t| !t.is_closed());
                !v.is_empty()
            });
        }
    }
}

pub(super) fn strip_chroot(path: &str, chroot: &str) -> String {
    if chroot.is_empty() {
        return path.to_owned();
    }
    match path.strip_prefix(chroot) {
        Some("") => "/".to_owned(),
        Some(rest) if rest.starts_with('/') => rest.to_owned(),
        _ => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chroot_is_taken_off_paths_received_and_only_at_a_boundary() {
        assert_eq!(strip_chroot("/app/x", "/app"), "/x");
        assert_eq!(strip_chroot("/app", "/app"), "/");
        assert_eq!(strip_chroot("/apple", "/app"), "/apple");
        assert_eq!(strip_chroot("/x", ""), "/x");
    }

    #[test]
    fn a_deletion_fires_data_exist_and_child_watches_and_nothing_else() {
        let mut w = Watches::default();
        let mut rx = Vec::new();
        for (tag, kind, path) in [
            (1, WatchKind::Data, "/r/a"),
            (2, WatchKind::Exist, "/r/a"),
            (3, WatchKind::Child, "/r/a"),
            (4, WatchKind::Data, "/r/b"),
        ] {
            let (tx, r) = oneshot::channel();
            w.pending.insert(tag, (kind, path.to_owned(), tx));
            rx.push(r);
        }
        w.armed(1, code::OK);
        w.armed(2, code::NO_NODE);
        w.armed(3, code::OK);
        w.armed(4, code::OK);
        w.fire(
            &WatcherEvent {
                event_type: event_type::NODE_DELETED,
                state: 3,
                path: "/r/a".into(),
            },
            "/r",
        );
        for r in rx.iter_mut().take(3) {
            let e = r.try_recv().expect("fired");
            assert_eq!(e.event_type, EventType::NodeDeleted);
            assert_eq!(e.path, "/a");
        }
        assert!(rx[3].try_recv().is_err(), "the other node's watch fired");
        let rearm = w.set_watches(7);
        assert_eq!(rearm.len(), 1);
        assert_eq!(rearm[0].data_watches, vec!["/r/b".to_owned()]);
        assert_eq!(rearm[0].relative_zxid, 7);
    }

    #[test]
    fn a_watch_whose_request_failed_is_never_armed() {
        let mut w = Watches::default();
        let (tx, mut rx) = oneshot::channel();
        w.pending.insert(9, (WatchKind::Data, "/n".into(), tx));
        w.armed(9, code::NO_NODE);
        assert!(w.data.is_empty() && w.exist.is_empty());
        assert!(rx.try_recv().is_err());
    }
}
