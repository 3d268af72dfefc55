//! Numbers and durations in messages, written as people write them, once for every face
//! (issue 33: "-2e0" for a timeout of -2, "999.999956ms" for a maximum hold of one second).
//! Rust's `{:e}` and `Duration`'s `{:?}` are exact, not readable; a message is read by people.

use std::time::Duration;

/// `-2`, `0.5`, `1e400`-like only when too large or too small to read in full, `NaN`,
/// `infinity`.
pub fn number(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "infinity" } else { "-infinity" }.into();
    }
    let size = x.abs();
    if size == 0.0 || (1e-4..1e9).contains(&size) {
        // Display is the shortest text that reads back as the same number: "-2", "0.1".
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// A duration rounded to what matters in a message: `1 s`, `1.5 s`, `250 ms`, `0.2 ms`, and
/// `1e19 s` for one past a billion seconds (no reader counts its zeros).
pub fn duration(d: Duration) -> String {
    if d.as_secs() >= 1_000_000_000 {
        return format!("{} s", number(d.as_secs_f64()));
    }
    let micros = d.as_micros();
    if micros >= 999_500 {
        // Whole milliseconds, in seconds: 999.999956 ms is "1 s".
        let ms = (micros + 500) / 1000;
        return format!("{} s", trimmed(ms / 1000, ms % 1000, 3));
    }
    if micros >= 1000 {
        // Tenths of a millisecond.
        let tenths = (micros + 50) / 100;
        return format!("{} ms", trimmed(tenths / 10, tenths % 10, 1));
    }
    format!("{} ms", trimmed(0, micros, 3))
}

/// `whole.frac` with `digits` fraction digits, trailing zeros (and a bare point) dropped.
fn trimmed(whole: u128, frac: u128, digits: usize) -> String {
    if frac == 0 {
        return whole.to_string();
    }
    let text = format!("{whole}.{frac:0digits$}");
    text.trim_end_matches('0').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(number(-2.0), "-2");
        assert_eq!(number(-0.5), "-0.5");
        assert_eq!(number(f64::INFINITY), "infinity");
        assert_eq!(number(-1e300), "-1e300");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(30.0), "30");
    }

    #[test]
    fn durations_are_rounded_to_what_a_message_needs() {
        assert_eq!(duration(Duration::from_nanos(999_999_956)), "1 s");
        assert_eq!(duration(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(duration(Duration::from_secs(10)), "10 s");
        assert_eq!(duration(Duration::from_millis(250)), "250 ms");
        assert_eq!(duration(Duration::from_micros(1234)), "1.2 ms");
        assert_eq!(duration(Duration::from_micros(200)), "0.2 ms");
        assert_eq!(duration(Duration::ZERO), "0 ms");
        assert_eq!(
            duration(Duration::from_secs(10_000_000_000_000_000_000)),
            "1e19 s"
        );
    }
}
