//! `zklock ls -r PATH [--held-over DURATION] [--json]`: the holders of every lock and election
//! under a subtree (issue 37, point 4: "which job holds the table lock too long"). The walk is
//! the core's (`Client::locks_under`, bounded by `--max-depth` and `--max-nodes`); who holds is
//! `ls`'s rule ([`crate::ls::holders`]). Status 2 when PATH does not exist; with `--held-over`,
//! 1 when no holder qualified (grep's convention).
//!
//! A holder's age is its node's: now on this machine's wall clock minus the node's ctime, which
//! the ZooKeeper leader stamps with its own wall clock when it orders the create
//! (`PrepRequestProcessor.pRequest2Txn` puts `Time.currentWallTime()` in the transaction
//! header, which `DataTree.createNode` keeps as ctime; apache/zookeeper,
//! zookeeper-server/src/main/java/org/apache/zookeeper/server/). So the skew between the two
//! clocks goes into every age, and the age counts the time the holder waited in the queue
//! before it got the lock (ZooKeeper does not record that moment).

use serde_json::json;
use zklock::{LockQueue, Participant, ScanLimits};

use crate::settings::Settings;
use crate::status::Failure;

/// One holder of one lock path, with its age in milliseconds.
pub struct Held<'a> {
    pub path: &'a str,
    pub holder: &'a Participant,
    pub age_ms: i64,
}

/// The holders of `queues` whose node is at least `over_ms` old at `now_ms`, in path order
/// (a path's holders in queue order).
pub fn held_over(queues: &[LockQueue], now_ms: i64, over_ms: i64) -> Vec<Held<'_>> {
    let mut out = Vec::new();
    for q in queues {
        let holds = crate::ls::holders(&q.participants);
        for (p, &h) in q.participants.iter().zip(&holds) {
            let age_ms = (now_ms - p.created_ms).max(0);
            if h && age_ms >= over_ms {
                out.push(Held {
                    path: &q.path,
                    holder: p,
                    age_ms,
                });
            }
        }
    }
    out
}

/// One holder as the JSON line `ls -r --json` prints (cli/README.md, "ls -r", lists the fields).
pub fn to_json_line(h: &Held<'_>) -> serde_json::Value {
    let mut fields = crate::ls::participant_fields(h.holder);
    fields.insert("path".into(), json!(h.path));
    fields.insert("created_ms".into(), json!(h.holder.created_ms));
    fields.insert("age_ms".into(), json!(h.age_ms));
    serde_json::Value::Object(fields)
}

/// The table `ls -r` prints: a title, then one row per holder.
pub fn to_table(root: &str, over_ms: i64, paths: usize, held: &[Held<'_>], now_ms: i64) -> String {
    let over = if over_ms > 0 {
        format!(" held over {}", crate::ls::age(over_ms, 0))
    } else {
        String::new()
    };
    let title = format!(
        "{root}: {} holder{}{over} in {paths} lock path{} (ages by ZooKeeper's ctime)\n",
        held.len(),
        if held.len() == 1 { "" } else { "s" },
        if paths == 1 { "" } else { "s" },
    );
    if held.is_empty() {
        return title;
    }
    let mut rows = vec![[
        "PATH", "AGE", "NODE", "LIBRARY", "KIND", "STYLE", "TOKEN", "SESSION", "IDENTITY",
    ]
    .map(str::to_owned)];
    for h in held {
        let p = h.holder;
        rows.push([
            h.path.to_owned(),
            crate::ls::age(now_ms, p.created_ms),
            p.node.rsplit('/').next().unwrap_or_default().to_owned(),
            p.library.as_str().to_owned(),
            p.kind.as_str().to_owned(),
            crate::ls::style_str(p).to_owned(),
            p.token.to_string(),
            format!("0x{:x}", p.session_id),
            crate::status::one_line(&p.identity),
        ]);
    }
    title + &crate::ls::aligned(&rows)
}

pub async fn run(
    cli: &Settings,
    root: &str,
    over: std::time::Duration,
    limits: ScanLimits,
    json: bool,
) -> Result<i32, Failure> {
    if root != "/" {
        zklock::support::validate_path(root)?;
    }
    let client = crate::settings::connect_to_tree(cli).await?;
    let queues = client.locks_under(root, limits).await;
    client.close().await;
    let queues = match queues {
        // A path that is not there is not "0 holders": a script must not read a typo as
        // "nothing held" (issue 51), so it has a status of its own.
        Err(e) if e.kind() == zklock::ErrorKind::NotHeld => {
            return Err(Failure::new(
                crate::status::NO_SUCH_PATH,
                crate::status::one_line(e.message()),
            ))
        }
        other => other?,
    };
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let over_ms = i64::try_from(over.as_millis()).unwrap_or(i64::MAX);
    let held = held_over(&queues, now_ms, over_ms);
    if json {
        for h in &held {
            println!("{}", to_json_line(h));
        }
    } else {
        print!("{}", to_table(root, over_ms, queues.len(), &held, now_ms));
    }
    // `--held-over` answers a question, so its status does, as grep's: 0 when some holder
    // qualified, 1 when none did. A plain listing succeeded whatever it found.
    Ok(if over_ms > 0 && held.is_empty() {
        crate::status::NONE_HELD_OVER
    } else {
        0
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use zklock::{Library, NodeKind};

    fn p(node: &str, kind: NodeKind, library: Library, created_ms: i64) -> Participant {
        Participant {
            node: node.into(),
            identity: "job-7".into(),
            token: 42,
            library,
            kind,
            session_id: 0xabc,
            created_ms,
            max_leases: None,
        }
    }

    #[test]
    fn only_holders_at_least_as_old_as_the_bound_are_kept_in_path_order() {
        let now = 1_700_000_600_000;
        let queues = vec![
            LockQueue {
                path: "/l/a".into(),
                participants: vec![
                    // Held for 10 minutes; its waiter is older still but waits.
                    p(
                        "/l/a/x-lock-1",
                        NodeKind::Mutex,
                        Library::Curator,
                        now - 600_000,
                    ),
                    p(
                        "/l/a/y-lock-2",
                        NodeKind::Mutex,
                        Library::Zklock,
                        now - 700_000,
                    ),
                ],
            },
            LockQueue {
                path: "/l/b".into(),
                participants: vec![p(
                    "/l/b/k__lock__3",
                    NodeKind::Mutex,
                    Library::Kazoo,
                    now - 1_000,
                )],
            },
        ];
        let held = held_over(&queues, now, 60_000);
        assert_eq!(held.len(), 1);
        assert_eq!(held[0].path, "/l/a");
        assert_eq!(held[0].age_ms, 600_000);
        let line = to_json_line(&held[0]);
        assert_eq!(line["library"], "curator");
        assert_eq!(line["session_id"], "0xabc");
        assert_eq!(line["age_ms"], 600_000);
        assert_eq!(line["name"], "x-lock-1");
        assert_eq!(
            held_over(&queues, now, 0).len(),
            2,
            "no bound: every holder"
        );
        let t = to_table("/l", 60_000, 2, &held, now);
        assert!(
            t.starts_with("/l: 1 holder held over 1m00s in 2 lock paths"),
            "{t}"
        );
        assert!(
            t.lines()
                .nth(2)
                .unwrap()
                .starts_with("/l/a  10m00s  x-lock-1"),
            "{t}"
        );
        assert_eq!(
            to_table("/l", 0, 0, &[], now),
            "/l: 0 holders in 0 lock paths (ages by ZooKeeper's ctime)\n"
        );
    }

    #[test]
    fn a_node_stamped_ahead_of_this_clock_is_zero_old_not_negative() {
        let now = 1_700_000_000_000;
        let queues = vec![LockQueue {
            path: "/l".into(),
            participants: vec![p(
                "/l/x-lock-1",
                NodeKind::Mutex,
                Library::Zklock,
                now + 5_000,
            )],
        }];
        assert_eq!(held_over(&queues, now, 0)[0].age_ms, 0);
        assert!(held_over(&queues, now, 1).is_empty());
    }
}
