//! The demo's checker: critical sections logged by every face as
//! `<face> <token> <enter_ns> <exit_ns>` (wall-clock ns since the epoch) must not overlap, and
//! fencing tokens must strictly increase in entry order.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::status::{self, Failure};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub face: String,
    pub token: i64,
    pub enter_ns: u128,
    pub exit_ns: u128,
}

/// Reads a log; blank lines and `#` comments are skipped.
pub fn parse(text: &str, source: &str) -> Result<Vec<Section>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why: &str| format!("{source}:{}: {why}: {line:?}", n + 1);
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [face, token, enter, exit] = fields[..] else {
            return Err(bad("expected `<face> <token> <enter_ns> <exit_ns>`"));
        };
        let token = token.parse().map_err(|_| bad("token is not an integer"))?;
        let enter_ns: u128 = enter.parse().map_err(|_| bad("enter_ns is not a number"))?;
        let exit_ns: u128 = exit.parse().map_err(|_| bad("exit_ns is not a number"))?;
        out.push(Section {
            face: face.to_owned(),
            token,
            enter_ns,
            exit_ns,
        });
    }
    Ok(out)
}

#[derive(Debug, Default)]
pub struct Verdict {
    pub sections: usize,
    pub per_face: BTreeMap<String, usize>,
    /// Human-readable violations; empty when the log is sound.
    pub problems: Vec<String>,
}

impl Verdict {
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

fn describe(s: &Section) -> String {
    format!(
        "{} token {} [{} .. {}]",
        s.face,
        s.token,
        clock(s.enter_ns),
        clock(s.exit_ns)
    )
}

/// `HH:MM:SS.uuuuuu` UTC of a wall-clock time in ns.
pub fn clock(ns: u128) -> String {
    let secs = (ns / 1_000_000_000) % 86_400;
    let micros = (ns / 1_000) % 1_000_000;
    format!(
        "{:02}:{:02}:{:02}.{micros:06}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

pub fn check(mut sections: Vec<Section>) -> Verdict {
    let mut verdict = Verdict {
        sections: sections.len(),
        ..Verdict::default()
    };
    for s in &sections {
        *verdict.per_face.entry(s.face.clone()).or_default() += 1;
        if s.exit_ns < s.enter_ns {
            verdict
                .problems
                .push(format!("exit before entry: {}", describe(s)));
        }
    }
    sections.sort_by_key(|s| (s.enter_ns, s.exit_ns));
    for pair in sections.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if b.enter_ns < a.exit_ns {
            verdict.problems.push(format!(
                "overlap: {} entered before {} left",
                describe(b),
                describe(a)
            ));
        }
        if b.token <= a.token {
            verdict.problems.push(format!(
                "token not increasing: {} entered after {}",
                describe(b),
                describe(a)
            ));
        }
    }
    verdict
}

/// The sections in entry order, one line each: face, token, entry and exit time, time held.
pub fn timeline(sections: &[Section]) -> String {
    let mut sorted: Vec<&Section> = sections.iter().collect();
    sorted.sort_by_key(|s| (s.enter_ns, s.exit_ns));
    let mut out = String::new();
    for s in sorted {
        out.push_str(&format!(
            "  {:<7} token {:>12}  in {} .. {}  ({:.1} ms)\n",
            s.face,
            s.token,
            clock(s.enter_ns),
            clock(s.exit_ns),
            s.exit_ns.saturating_sub(s.enter_ns) as f64 / 1e6
        ));
    }
    out
}

pub fn run(files: &[PathBuf], expect: Option<usize>, show_timeline: bool) -> Result<i32, Failure> {
    let mut sections = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f)
            .map_err(|e| Failure::new(status::DATA, format!("cannot read {}: {e}", f.display())))?;
        sections.extend(
            parse(&text, &f.display().to_string()).map_err(|e| Failure::new(status::DATA, e))?,
        );
    }
    if show_timeline {
        print!("{}", timeline(&sections));
    }
    let mut verdict = check(sections);
    if verdict.sections == 0 {
        verdict
            .problems
            .push("no critical sections were logged".into());
    }
    if let Some(n) = expect {
        if verdict.sections != n {
            verdict.problems.push(format!(
                "expected {n} critical sections, found {}",
                verdict.sections
            ));
        }
    }
    let faces: Vec<String> = verdict
        .per_face
        .iter()
        .map(|(f, n)| format!("{f} {n}"))
        .collect();
    println!(
        "check: {} critical sections from {} face(s) ({})",
        verdict.sections,
        verdict.per_face.len(),
        faces.join(", ")
    );
    for p in &verdict.problems {
        println!("  VIOLATION {p}");
    }
    if verdict.ok() {
        println!("verdict: OK: no two critical sections overlapped, fencing tokens strictly increased in entry order");
        Ok(0)
    } else {
        println!(
            "verdict: FAILED: {} violation(s) of mutual exclusion or token order",
            verdict.problems.len()
        );
        Ok(status::VIOLATION)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(face: &str, token: i64, enter: u128, exit: u128) -> Section {
        Section {
            face: face.into(),
            token,
            enter_ns: enter,
            exit_ns: exit,
        }
    }

    #[test]
    fn sound_log_passes_in_any_line_order() {
        let v = check(vec![
            s("python", 30, 300, 400),
            s("rust", 10, 100, 200),
            s("c", 20, 200, 250),
        ]);
        assert!(v.ok(), "{:?}", v.problems);
        assert_eq!(v.sections, 3);
        assert_eq!(v.per_face.len(), 3);
    }

    #[test]
    fn overlap_is_caught() {
        let v = check(vec![s("rust", 10, 100, 200), s("node", 20, 150, 300)]);
        assert_eq!(v.problems.len(), 1, "{:?}", v.problems);
        assert!(v.problems[0].starts_with("overlap"), "{:?}", v.problems);
    }

    #[test]
    fn token_order_is_caught() {
        let v = check(vec![s("rust", 20, 100, 200), s("node", 10, 200, 300)]);
        assert!(v.problems[0].starts_with("token not increasing"));
        let v = check(vec![s("rust", 20, 100, 200), s("node", 20, 200, 300)]);
        assert!(!v.ok(), "equal tokens are a violation");
    }

    #[test]
    fn backwards_section_is_caught() {
        let v = check(vec![s("rust", 20, 300, 200)]);
        assert!(v.problems[0].starts_with("exit before entry"));
    }

    #[test]
    fn parse_reads_lines_and_names_bad_ones() {
        let text = "# demo\nrust 12 1000 2000\n\n  c 13 2000 3000  \n";
        let got = parse(text, "log").unwrap();
        assert_eq!(got, vec![s("rust", 12, 1000, 2000), s("c", 13, 2000, 3000)]);
        let e = parse("rust 12 1000\n", "log").unwrap_err();
        assert!(e.starts_with("log:1: expected"), "{e}");
        let e = parse("rust x 1 2\n", "log").unwrap_err();
        assert!(e.contains("token"), "{e}");
    }

    #[test]
    fn timeline_is_in_entry_order() {
        let t = timeline(&[
            s("c", 20, 3_000_000, 5_000_000),
            s("rust", 10, 1_000_000, 2_000_000),
        ]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].contains("rust") && lines[0].contains("(1.0 ms)"),
            "{t}"
        );
        assert!(
            lines[1].contains("c ") && lines[1].contains("token           20"),
            "{t}"
        );
    }

    #[test]
    fn clock_formats_utc() {
        assert_eq!(clock(3_723_000_004_000), "01:02:03.000004");
    }
}
