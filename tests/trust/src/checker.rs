//! The exclusion checker: every critical section is logged as
//! `<who> <exclusive|shared> <token> <enter_ns> <exit_ns>`, or `<who> <token> <enter_ns>
//! <exit_ns>` for an exclusive one (the faces' demo workers), in wall-clock ns (all processes
//! run on one machine). It fails on any overlap of an exclusive section with another section, and on
//! tokens that do not strictly increase from one exclusive holder to the next.

/// One critical section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub who: String,
    pub exclusive: bool,
    pub token: i64,
    pub enter: i128,
    pub exit: i128,
}

/// What a log showed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    pub sections: usize,
    pub overlaps: Vec<String>,
    pub token_regressions: Vec<String>,
    pub shared_overlaps: usize,
}

impl Verdict {
    pub fn ok(&self) -> bool {
        self.overlaps.is_empty() && self.token_regressions.is_empty()
    }
}

/// Parses log lines; malformed lines are errors (a worker that wrote garbage is a failure).
pub fn parse(text: &str) -> Result<Vec<Section>, String> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let mut f: Vec<&str> = line.split_whitespace().collect();
            if f.len() == 4 {
                f.insert(1, "exclusive");
            }
            if f.len() != 5 {
                return Err(format!("bad log line {line:?}"));
            }
            let num = |s: &str| {
                s.parse::<i128>()
                    .map_err(|_| format!("bad number {s:?} in {line:?}"))
            };
            Ok(Section {
                who: f[0].to_owned(),
                exclusive: match f[1] {
                    "exclusive" => true,
                    "shared" => false,
                    other => return Err(format!("bad kind {other:?} in {line:?}")),
                },
                token: f[2].parse().map_err(|_| format!("bad token in {line:?}"))?,
                enter: num(f[3])?,
                exit: num(f[4])?,
            })
        })
        .collect()
}

/// Checks exclusion and token order.
pub fn check(mut sections: Vec<Section>) -> Verdict {
    sections.sort_by_key(|s| s.enter);
    let mut verdict = Verdict {
        sections: sections.len(),
        ..Verdict::default()
    };
    let mut last_exclusive: Option<&Section> = None;
    // Sections are sorted by entry, so any section overlapping `s` and entered before it is
    // among those whose exit is later than s.enter.
    for (i, s) in sections.iter().enumerate() {
        for earlier in sections[..i].iter().rev() {
            if earlier.exit > s.enter {
                if s.exclusive || earlier.exclusive {
                    verdict.overlaps.push(format!("{earlier:?} overlaps {s:?}"));
                } else {
                    verdict.shared_overlaps += 1;
                }
            }
        }
        if s.exclusive {
            if let Some(prev) = last_exclusive {
                if s.token <= prev.token {
                    verdict.token_regressions.push(format!(
                        "token {} ({}) after {} ({})",
                        s.token, s.who, prev.token, prev.who
                    ));
                }
            }
            last_exclusive = Some(s);
        }
    }
    verdict
}

/// Reads and checks a log file.
pub fn check_file(path: &std::path::Path) -> Result<Verdict, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    Ok(check(parse(&text)?))
}

/// The most sections inside at one moment (a semaphore of N must never show more than N).
pub fn max_concurrent(sections: &[Section]) -> usize {
    let mut edges: Vec<(i128, i32)> = sections
        .iter()
        .flat_map(|s| [(s.enter, 1), (s.exit, -1)])
        .collect();
    // At one instant an exit comes before an enter: touching sections do not overlap.
    edges.sort();
    let (mut inside, mut most) = (0i32, 0i32);
    for (_, step) in edges {
        inside += step;
        most = most.max(inside);
    }
    most as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_overlaps_and_regressions() {
        let log = "a exclusive 5 100 200\nb exclusive 7 150 250\nc exclusive 6 300 400\nd shared 8 500 600\ne shared 9 550 650\n";
        let v = check(parse(log).unwrap());
        assert_eq!(v.sections, 5);
        assert_eq!(v.overlaps.len(), 1, "{v:?}");
        assert_eq!(v.token_regressions.len(), 1, "{v:?}");
        assert_eq!(v.shared_overlaps, 1);
        assert!(!v.ok());
        let clean = check(parse("a exclusive 1 0 10\nb exclusive 2 11 20\n").unwrap());
        assert!(clean.ok());
        assert!(parse("a exclusive x 1 2").is_err());
        assert!(parse("python 7 1 2").unwrap()[0].exclusive);
    }
}
