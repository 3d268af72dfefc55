//! `zklock ls PATH`: the lock's holders and queue, as a table or JSON.

use serde_json::json;
use zklock::{NodeKind, Participant};

use crate::status::Failure;
use crate::Cli;

pub fn kind_str(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::Mutex => "mutex",
        NodeKind::Read => "read",
        NodeKind::Write => "write",
    }
}

/// Which contenders hold the lock: an exclusive node when it is first, a read node when no
/// exclusive node is ahead of it.
pub fn holders(queue: &[Participant]) -> Vec<bool> {
    let mut exclusive_ahead = false;
    queue
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let holds = if p.kind.is_exclusive() {
                i == 0
            } else {
                !exclusive_ahead
            };
            exclusive_ahead |= p.kind.is_exclusive();
            holds
        })
        .collect()
}

pub fn to_json(path: &str, queue: &[Participant]) -> serde_json::Value {
    let holds = holders(queue);
    let participants: Vec<_> = queue
        .iter()
        .zip(&holds)
        .enumerate()
        .map(|(position, (p, &holds))| {
            json!({
                "position": position,
                "role": if holds { "holder" } else { "waiting" },
                "node": p.node,
                "name": p.node.rsplit('/').next().unwrap_or_default(),
                "library": p.library.as_str(),
                "kind": kind_str(p.kind),
                "identity": p.identity,
                "token": p.token,
                "session_id": format!("0x{:x}", p.session_id),
            })
        })
        .collect();
    json!({ "path": path, "participants": participants })
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
        "TOKEN".to_owned(),
        "SESSION".to_owned(),
        "IDENTITY".to_owned(),
    ]];
    for (p, &h) in queue.iter().zip(&holds) {
        rows.push([
            if h { "holder" } else { "waiting" }.to_owned(),
            p.node.rsplit('/').next().unwrap_or_default().to_owned(),
            p.library.as_str().to_owned(),
            kind_str(p.kind).to_owned(),
            p.token.to_string(),
            format!("0x{:x}", p.session_id),
            crate::one_line(&p.identity),
        ]);
    }
    let mut widths = [0usize; 7];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = format!("{path}: {held} holding, {} waiting\n", queue.len() - held);
    for row in &rows {
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

pub async fn run(cli: &Cli, path: &str, json: bool) -> Result<i32, Failure> {
    let client = crate::connect(cli, path).await?;
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
        }
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
        let t = to_table("/l", &q);
        assert!(t.starts_with("/l: 1 holding, 1 waiting\n"), "{t}");
        assert!(t.contains("kazoo") && t.contains("curator"), "{t}");
        assert_eq!(to_table("/l", &[]), "/l: free (no contenders)\n");
    }
}
