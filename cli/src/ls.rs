//! `zklock ls PATH`: the lock's holders and queue, as a table or JSON.

use serde_json::json;
use zklock::{NodeKind, Participant};

use crate::settings::Settings;
use crate::status::Failure;

/// The election family a node belongs to (selector, latch, kazoo; `-` for a read, write or
/// lease node): the core's `Participant::election_style`. A plain mutex node is what a
/// selector (Curator's, zklock's) or kazoo election makes too.
pub fn style_str(p: &Participant) -> &'static str {
    p.election_style().map_or("-", |s| s.as_str())
}

/// Which contenders hold the lock: an exclusive node when it is first; a read node when no
/// exclusive node is ahead of it, or when the first node is a write node of its own session:
/// that is a write holder's downgrade (core/src/base/protocol.rs and recipes/mutex_holds.rs: a read taken while our
/// own write is held is granted at once, even behind a writer that queued after our write,
/// and our write node stays until the read is released). From the outside a read of the same
/// session that is not a downgrade cannot be told apart; zklock takes such reads only as
/// downgrades.
///
/// A semaphore's nodes (kind `lease`, after the lock nodes) follow Curator's rule: the nodes of
/// `<path>/leases` hold, except those past N when N is known, and, when N is not known (ZooKeeper
/// does not store it), the newest lease node of the session that holds the guard
/// (`<path>/locks`): that is a waiter with its node in place. The guard's nodes wait.
pub fn holders(queue: &[Participant]) -> Vec<bool> {
    let is_lease = |p: &Participant| p.kind == NodeKind::Lease && p.node.contains("/leases/");
    let guard_session = queue
        .iter()
        .find(|p| p.kind == NodeKind::Lease && p.node.contains("/locks/"))
        .map(|p| p.session_id);
    let newest_lease = queue.iter().rposition(is_lease);
    let mut leases_before = 0u64;
    let first_write_session = queue
        .first()
        .filter(|p| p.kind == NodeKind::Write)
        .map(|p| p.session_id);
    let mut exclusive_ahead = false;
    queue
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if p.kind == NodeKind::Lease {
                if !is_lease(p) {
                    return false;
                }
                leases_before += 1;
                return match p.max_leases {
                    Some(n) => leases_before <= u64::from(n),
                    None => !(Some(i) == newest_lease && guard_session == Some(p.session_id)),
                };
            }
            let holds = if p.kind.is_exclusive() {
                i == 0
            } else {
                !exclusive_ahead || first_write_session == Some(p.session_id)
            };
            exclusive_ahead |= p.kind.is_exclusive();
            holds
        })
        .collect()
}

/// How many contenders wait. Curator's semaphore waiter has two nodes: its lease node in
/// `<path>/leases` and, while it waits, its guard node in `<path>/locks` (issue 33: it was
/// counted twice); a guard node whose session has a waiting lease node is that same waiter.
fn waiting(queue: &[Participant], holds: &[bool]) -> usize {
    let waiting_lease = |session: i64| {
        queue
            .iter()
            .zip(holds)
            .any(|(p, &h)| !h && p.session_id == session && p.node.contains("/leases/"))
    };
    queue
        .iter()
        .zip(holds)
        .filter(|(p, &h)| {
            let guard_of_a_waiter = p.kind == NodeKind::Lease
                && p.node.contains("/locks/")
                && waiting_lease(p.session_id);
            !h && !guard_of_a_waiter
        })
        .count()
}

pub fn to_json(path: &str, queue: &[Participant]) -> serde_json::Value {
    let holds = holders(queue);
    let participants: Vec<_> = queue
        .iter()
        .zip(&holds)
        .enumerate()
        .map(|(position, (p, &holds))| {
            let mut fields = participant_fields(p);
            fields.insert("position".into(), json!(position));
            fields.insert(
                "role".into(),
                json!(if holds { "holder" } else { "waiting" }),
            );
            fields.insert("max_leases".into(), json!(p.max_leases));
            serde_json::Value::Object(fields)
        })
        .collect();
    json!({ "path": path, "participants": participants })
}

/// The fields `ls --json` and `ls -r --json` both print of a participant (cli/README.md).
pub fn participant_fields(p: &Participant) -> serde_json::Map<String, serde_json::Value> {
    [
        ("node", json!(p.node)),
        ("name", json!(p.node.rsplit('/').next().unwrap_or_default())),
        ("library", json!(p.library.as_str())),
        ("kind", json!(p.kind.as_str())),
        (
            "election_style",
            json!(p.election_style().map(|s| s.as_str())),
        ),
        ("identity", json!(p.identity)),
        ("token", json!(p.token)),
        ("session_id", json!(format!("0x{:x}", p.session_id))),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value))
    .collect()
}

pub fn to_table(path: &str, queue: &[Participant]) -> String {
    if queue.is_empty() {
        return format!("{path}: free (no contenders)\n");
    }
    let holds = holders(queue);
    let held = holds.iter().filter(|h| **h).count();
    let mut rows = vec![[
        "ROLE".to_owned(),
        "NODE".to_owned(),
        "LIBRARY".to_owned(),
        "KIND".to_owned(),
        "STYLE".to_owned(),
        "TOKEN".to_owned(),
        "SESSION".to_owned(),
        "IDENTITY".to_owned(),
    ]];
    for (p, &h) in queue.iter().zip(&holds) {
        rows.push([
            if h { "holder" } else { "waiting" }.to_owned(),
            p.node.rsplit('/').next().unwrap_or_default().to_owned(),
            p.library.as_str().to_owned(),
            p.kind.as_str().to_owned(),
            style_str(p).to_owned(),
            p.token.to_string(),
            format!("0x{:x}", p.session_id),
            crate::status::one_line(&p.identity),
        ]);
    }
    let title = format!(
        "{path}: {held} holding, {} waiting\n",
        waiting(queue, &holds)
    );
    title + &aligned(&rows)
}

/// The rows as columns padded to their widest cell, two spaces apart (`ls` and `ls --watch`).
pub fn aligned<const N: usize>(rows: &[[String; N]]) -> String {
    let mut widths = [0usize; N];
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// How long ago `created_ms` (a node's ctime) was, as `1h02m`, `3m05s` or `12.3s`.
pub fn age(now_ms: i64, created_ms: i64) -> String {
    let ms = (now_ms - created_ms).max(0);
    let secs = ms / 1000;
    match secs {
        0..=59 => format!("{}.{}s", secs, (ms % 1000) / 100),
        60..=3599 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3600, (secs % 3600) / 60),
    }
}

/// When each holder `ls --watch` shows began to hold. A node's age is how long it has been in
/// the queue, waiting included (issue 33: a holder that waited 10 s and held 2 s showed 12 s):
/// a holder the watch saw waiting holds since the frame it was first seen holding; one that
/// appeared holding holds since its node was made; one that held when the watch began is shown
/// as at most its node's age (`≤1m05s`), since ZooKeeper does not say when it got the lock.
#[derive(Default)]
pub struct HoldClock {
    frames: u64,
    /// Holders and when they began to hold (`None`: before the watch began, unknown).
    since: std::collections::HashMap<String, Option<i64>>,
    waiting: std::collections::HashSet<String>,
}

impl HoldClock {
    fn observe(&mut self, queue: &[Participant], holds: &[bool], now_ms: i64) {
        let first = self.frames == 0;
        self.frames += 1;
        for (p, &h) in queue.iter().zip(holds) {
            if !h {
                self.waiting.insert(p.node.clone());
            } else if !self.since.contains_key(&p.node) {
                let began = if self.waiting.remove(&p.node) {
                    Some(now_ms)
                } else if first {
                    None
                } else {
                    Some(p.created_ms)
                };
                self.since.insert(p.node.clone(), began);
            }
        }
        // Nodes gone from the queue are forgotten (node names are never reused).
        let present: std::collections::HashSet<&str> =
            queue.iter().map(|p| p.node.as_str()).collect();
        self.since.retain(|n, _| present.contains(n.as_str()));
        self.waiting.retain(|n| present.contains(n.as_str()));
    }

    fn holding_for(&self, p: &Participant, now_ms: i64) -> String {
        match self.since.get(&p.node) {
            Some(Some(began)) => age(now_ms, *began),
            _ => format!("≤{}", age(now_ms, p.created_ms)),
        }
    }
}

/// One frame of `ls --watch`: the queue in order with what each contender does and for how
/// long (holding since it got the lock, see [`HoldClock`]; waiting since its node was made),
/// its identity and library.
pub fn to_watch_frame(
    path: &str,
    queue: &[Participant],
    now_ms: i64,
    clock: &mut HoldClock,
) -> String {
    let holds = holders(queue);
    clock.observe(queue, &holds, now_ms);
    if queue.is_empty() {
        return format!("{path}: free (no contenders)\n");
    }
    let held = holds.iter().filter(|h| **h).count();
    let mut rows = vec![[
        "#".to_owned(),
        "ROLE".to_owned(),
        "FOR".to_owned(),
        "IDENTITY".to_owned(),
        "LIBRARY".to_owned(),
        "KIND".to_owned(),
        "STYLE".to_owned(),
        "TOKEN".to_owned(),
        "NODE".to_owned(),
    ]];
    for (i, (p, &h)) in queue.iter().zip(&holds).enumerate() {
        rows.push([
            i.to_string(),
            if h { "holding" } else { "waiting" }.to_owned(),
            if h {
                clock.holding_for(p, now_ms)
            } else {
                age(now_ms, p.created_ms)
            },
            crate::status::one_line(&p.identity),
            p.library.as_str().to_owned(),
            p.kind.as_str().to_owned(),
            style_str(p).to_owned(),
            p.token.to_string(),
            p.node.rsplit('/').next().unwrap_or_default().to_owned(),
        ]);
    }
    let title = format!(
        "{path}: {held} holding, {} waiting\n",
        waiting(queue, &holds)
    );
    title + &aligned(&rows)
}

/// How often `ls --watch` looks at the queue (one getChildren and a pipelined getData per node):
/// a change shows within this, and the ages tick once a second.
const WATCH_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// `zklock ls --watch PATH`: redraws the queue when it changes (and every second, for the
/// ages) until interrupted. On a terminal each frame replaces the last (home + clear, plain
/// ANSI, fine over ssh); otherwise frames follow each other, separated by a blank line, and
/// only when the queue changed.
pub async fn watch(cli: &Settings, path: &str) -> Result<i32, Failure> {
    use std::io::{IsTerminal, Write};
    let client = crate::settings::connect(cli, path).await?;
    let lock = client.mutex(path)?;
    let tty = std::io::stdout().is_terminal();
    let (mut last_queue, mut last_second) = (None::<String>, -1i64);
    let mut clock = HoldClock::default();
    loop {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let (body, queue_key) = match lock.participants().await {
            Ok(queue) => (
                to_watch_frame(path, &queue, now_ms, &mut clock),
                queue
                    .iter()
                    .map(|p| p.node.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            Err(e) => {
                let why = crate::status::one_line(e.message());
                (
                    format!("{path}: cannot read the queue: {why}\n"),
                    format!("error {why}"),
                )
            }
        };
        let changed = last_queue.as_deref() != Some(queue_key.as_str());
        let tick = tty && now_ms / 1000 != last_second;
        if changed || tick {
            let clock = now_ms / 1000 % 86_400;
            let stamp = format!(
                "{:02}:{:02}:{:02} UTC",
                clock / 3600,
                clock / 60 % 60,
                clock % 60
            );
            let mut out = std::io::stdout().lock();
            let frame = if tty {
                format!("\x1b[H\x1b[2J{body}\n(updated {stamp}; Ctrl-C to quit)\n")
            } else {
                format!("{body}(at {stamp})\n\n")
            };
            if out
                .write_all(frame.as_bytes())
                .and_then(|_| out.flush())
                .is_err()
            {
                // The reader went away (a closed pipe, a hung-up terminal): stop quietly.
                client.close().await;
                return Ok(0);
            }
            last_queue = Some(queue_key);
            last_second = now_ms / 1000;
        }
        tokio::time::sleep(WATCH_POLL).await;
    }
}

/// `zklock revoke PATH [NODE]`: asks the holder(s) to let go; prints the nodes asked.
pub async fn revoke(cli: &Settings, path: &str, node: Option<&str>) -> Result<i32, Failure> {
    let client = crate::settings::connect(cli, path).await?;
    let asked = client.revoke(path, node).await;
    client.close().await;
    match asked {
        Ok(nodes) => {
            for node in nodes {
                println!("{node}");
            }
            Ok(0)
        }
        Err(e) if e.kind() == zklock::ErrorKind::NotHeld => Err(Failure::new(
            crate::status::NOBODY,
            crate::status::one_line(e.message()),
        )),
        Err(e) => Err(e.into()),
    }
}

pub async fn run(cli: &Settings, path: &str, json: bool) -> Result<i32, Failure> {
    let client = crate::settings::connect(cli, path).await?;
    let queue = client.mutex(path)?.participants().await?;
    if json {
        println!("{}", to_json(path, &queue));
    } else {
        print!("{}", to_table(path, &queue));
    }
    client.close().await;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zklock::Library;

    fn p(name: &str, kind: NodeKind, library: Library) -> Participant {
        Participant {
            node: format!("/l/{name}"),
            identity: "me".into(),
            token: 7,
            library,
            kind,
            session_id: 0x1234,
            created_ms: 1_700_000_000_000,
            max_leases: None,
        }
    }

    #[test]
    fn lease_nodes_hold_except_past_n_or_the_guard_holders_newest() {
        let lease = |name: &str, session: i64, max: Option<u32>| Participant {
            session_id: session,
            max_leases: max,
            ..p(name, NodeKind::Lease, Library::Curator)
        };
        // N unknown: the guard holder's (session 9) newest lease node waits, the guard's waits.
        let q = [
            lease("leases/a-lease-1", 1, None),
            lease("leases/b-lease-2", 9, None),
            lease("locks/c-lock-3", 9, None),
            lease("locks/d-lock-4", 5, None),
        ];
        assert_eq!(holders(&q), vec![true, false, false, false]);
        // N known: the first N lease nodes hold.
        let q = [
            lease("leases/a-lease-1", 1, Some(1)),
            lease("leases/b-lease-2", 2, Some(1)),
        ];
        assert_eq!(holders(&q), vec![true, false]);
    }

    #[test]
    fn readers_ahead_of_a_writer_all_hold() {
        let q = [
            p("a", NodeKind::Read, Library::Zklock),
            p("b", NodeKind::Read, Library::Kazoo),
            p("c", NodeKind::Write, Library::Curator),
            p("d", NodeKind::Read, Library::Zklock),
        ];
        assert_eq!(holders(&q), [true, true, false, false]);
        let q = [
            p("a", NodeKind::Mutex, Library::Zklock),
            p("b", NodeKind::Mutex, Library::Kazoo),
        ];
        assert_eq!(holders(&q), [true, false]);
    }

    #[test]
    fn a_write_holders_downgraded_read_node_holds_even_behind_a_waiting_writer() {
        let mut ours_w = p("a__WRIT__1", NodeKind::Write, Library::Zklock);
        let mut theirs_w = p("b__WRIT__2", NodeKind::Write, Library::Zklock);
        let mut ours_r = p("c__READ__3", NodeKind::Read, Library::Zklock);
        let mut theirs_r = p("d__READ__4", NodeKind::Read, Library::Zklock);
        ours_w.session_id = 1;
        ours_r.session_id = 1;
        theirs_w.session_id = 2;
        theirs_r.session_id = 2;
        // Our write, our downgraded read: both hold.
        assert_eq!(holders(&[ours_w.clone(), ours_r.clone()]), [true, true]);
        // Another writer queued between them: our read still holds, the writer waits.
        assert_eq!(
            holders(&[ours_w.clone(), theirs_w.clone(), ours_r.clone()]),
            [true, false, true]
        );
        // Another session's read behind our write waits.
        assert_eq!(holders(&[ours_w.clone(), theirs_r]), [true, false]);
        // Our read behind another session's write waits.
        assert_eq!(holders(&[theirs_w, ours_r.clone()]), [true, false]);
        // A mutex node of our session does not cover a read.
        let mut ours_m = p("e-lock-5", NodeKind::Mutex, Library::Curator);
        ours_m.session_id = 1;
        assert_eq!(holders(&[ours_m, ours_r]), [true, false]);
    }

    #[test]
    fn the_watch_frame_shows_each_contenders_role_age_identity_and_library_in_order() {
        let q = [
            p("x-lock-0000000001", NodeKind::Mutex, Library::Zklock),
            p("y__lock__0000000002", NodeKind::Mutex, Library::Kazoo),
        ];
        let mut clock = HoldClock::default();
        let f = to_watch_frame("/l", &q, 1_700_000_000_000 + 65_000, &mut clock);
        let lines: Vec<&str> = f.lines().collect();
        assert_eq!(lines[0], "/l: 1 holding, 1 waiting");
        // Held when the watch began: at most its node's age.
        assert!(
            lines[2].starts_with("0  holding  ≤1m05s  me") && lines[2].contains("zklock"),
            "{f}"
        );
        let row: Vec<&str> = lines[3].split_whitespace().collect();
        assert_eq!(row[..4], ["1", "waiting", "1m05s", "me"], "{f}");
        assert!(lines[3].contains("kazoo"), "{f}");
        assert_eq!(age(10_500, 10_000), "0.5s");
        assert_eq!(age(0, -7_200_000), "2h00m");
        assert_eq!(
            to_watch_frame("/l", &[], 0, &mut HoldClock::default()),
            "/l: free (no contenders)\n"
        );
    }

    #[test]
    fn a_holder_the_watch_saw_waiting_shows_how_long_it_has_held_not_its_nodes_age() {
        let first = p("x-lock-0000000001", NodeKind::Mutex, Library::Zklock);
        let second = p("y-lock-0000000002", NodeKind::Mutex, Library::Zklock);
        let t0 = 1_700_000_000_000 + 10_000; // both nodes are 10 s old
        let mut clock = HoldClock::default();
        to_watch_frame("/l", &[first, second.clone()], t0, &mut clock);
        // The first lets go; 2 s later the second has held for 2 s, its node is 12 s old.
        to_watch_frame("/l", std::slice::from_ref(&second), t0, &mut clock);
        let f = to_watch_frame("/l", &[second], t0 + 2_000, &mut clock);
        assert!(
            f.lines().nth(2).unwrap().starts_with("0  holding  2.0s  "),
            "{f}"
        );
    }

    #[test]
    fn a_semaphore_waiter_with_a_lease_and_a_guard_node_counts_once() {
        let lease = |name: &str, session: i64| Participant {
            session_id: session,
            ..p(name, NodeKind::Lease, Library::Curator)
        };
        // Session 1 holds; session 9 waits with its lease node and the guard.
        let q = [
            lease("leases/a-lease-1", 1),
            lease("leases/b-lease-2", 9),
            lease("locks/c-lock-3", 9),
        ];
        assert!(
            to_table("/s", &q).starts_with("/s: 1 holding, 1 waiting\n"),
            "{}",
            to_table("/s", &q)
        );
        let f = to_watch_frame("/s", &q, 1_700_000_000_000, &mut HoldClock::default());
        assert!(f.starts_with("/s: 1 holding, 1 waiting\n"), "{f}");
    }

    #[test]
    fn latch_and_kazoo_contenders_show_their_kind_style_and_id() {
        let q = [
            p("_c_x-latch-0000000001", NodeKind::Latch, Library::Zklock),
            p("y__lock__0000000002", NodeKind::Mutex, Library::Kazoo),
            p("_c_z-lock-0000000003", NodeKind::Mutex, Library::Curator),
            p("_c_w-__READ__0000000004", NodeKind::Read, Library::Curator),
        ];
        let v = to_json("/e", &q);
        let styles: Vec<_> = (0..4)
            .map(|i| v["participants"][i]["election_style"].clone())
            .collect();
        assert_eq!(
            styles,
            [
                json!("latch"),
                json!("kazoo"),
                json!("selector"),
                serde_json::Value::Null
            ]
        );
        assert_eq!(v["participants"][0]["kind"], "latch");
        let t = to_table("/e", &q);
        let row = t.lines().nth(2).unwrap();
        assert!(
            row.contains("latch  latch") && row.ends_with("me"),
            "kind, style and id: {t}"
        );
        assert!(t.lines().nth(1).unwrap().contains("KIND   STYLE"), "{t}");
        let row = t.lines().nth(3).unwrap();
        assert!(row.contains("kazoo") && row.contains("mutex  kazoo"), "{t}");
    }

    #[test]
    fn json_and_table_name_every_field() {
        let q = [
            p("x-lock-0000000001", NodeKind::Mutex, Library::Curator),
            p("y__lock__0000000002", NodeKind::Mutex, Library::Kazoo),
        ];
        let v = to_json("/l", &q);
        assert_eq!(v["participants"][0]["role"], "holder");
        assert_eq!(v["participants"][1]["library"], "kazoo");
        assert_eq!(v["participants"][1]["kind"], "mutex");
        assert_eq!(v["participants"][1]["session_id"], "0x1234");
        assert_eq!(v["participants"][1]["election_style"], "kazoo");
        let t = to_table("/l", &q);
        assert!(t.starts_with("/l: 1 holding, 1 waiting\n"), "{t}");
        assert!(t.contains("kazoo") && t.contains("curator"), "{t}");
        assert_eq!(to_table("/l", &[]), "/l: free (no contenders)\n");
    }
}
