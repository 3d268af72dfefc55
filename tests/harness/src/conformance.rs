//! The conformance cases (`tests/conformance/cases.txt`, format in its README) as the Rust
//! runners read them: the core's (`core/tests/conformance.rs`) and the CLI's
//! (`cli/tests/conformance.rs`).

/// One case, its input decoded (`%XX` bytes, `%*N(x)` repeats, `$SERVERS` replaced).
#[derive(Debug, Clone)]
pub struct Case {
    pub id: String,
    pub op: String,
    /// UTF-8, but it may hold a NUL (which no argv and no C string can carry).
    pub input: String,
    pub expected: String,
}

/// Every case of the file, with `$SERVERS` replaced by `servers`. Panics on a malformed line.
pub fn cases(servers: &str) -> Vec<Case> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../conformance/cases.txt");
    let text = std::fs::read_to_string(path).expect("read tests/conformance/cases.txt");
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|line| {
            let cols: Vec<&str> = line.split('|').map(str::trim).collect();
            assert_eq!(cols.len(), 4, "a case has four columns: {line:?}");
            let input = decode(cols[2]).unwrap_or_else(|e| panic!("{}: {e}", cols[0]));
            Case {
                id: cols[0].into(),
                op: cols[1].into(),
                input: String::from_utf8(input)
                    .expect("decoded input is UTF-8")
                    .replace("$SERVERS", servers),
                expected: cols[3].into(),
            }
        })
        .collect()
}

/// The `secret_pem` op's test: whether `shown` holds 12 consecutive characters of the body of
/// `pem` (its lines other than the `-----` boundaries, joined).
pub fn pem_body_shown(shown: &str, pem: &str) -> bool {
    let body: Vec<char> = pem
        .lines()
        .filter(|l| !l.trim_start().starts_with("-----"))
        .flat_map(|l| l.trim().chars())
        .collect();
    body.windows(12)
        .any(|w| shown.contains(&w.iter().collect::<String>()))
}

/// `%XX` bytes and `%*N(x)` repeats.
pub fn decode(text: &str) -> Result<Vec<u8>, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && bytes.get(i + 1) == Some(&b'*') {
            let rest = &text[i + 2..];
            let open = rest.find('(').ok_or(format!("bad repeat in {text:?}"))?;
            let n: usize = rest[..open]
                .parse()
                .map_err(|_| format!("bad repeat count in {text:?}"))?;
            let x = rest[open + 1..]
                .chars()
                .next()
                .ok_or(format!("bad repeat in {text:?}"))?;
            if !rest[open + 1 + x.len_utf8()..].starts_with(')') {
                return Err(format!("bad repeat in {text:?}"));
            }
            out.extend(x.to_string().repeat(n).into_bytes());
            i += 2 + open + 1 + x.len_utf8() + 1;
        } else if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or(format!("bad escape in {text:?}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_and_repeats_decode() {
        assert_eq!(super::decode("/a%00b%7C").unwrap(), b"/a\0b|");
        assert_eq!(super::decode("x%*3(é)y").unwrap(), "xéééy".as_bytes());
        assert!(super::decode("%zz").is_err());
        assert!(!super::cases("h:1").is_empty());
    }
}
