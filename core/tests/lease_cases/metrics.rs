//! The Rust runner's OpenMetrics scenario (issue 37, point 4).

use zklock::Options;

use super::super::{word, Outcome, Runner};

/// The outcome words of a rendered text: `eof` when it ends with `# EOF`, then `acquired=N`.
pub(crate) fn words_of(text: &str) -> String {
    let eof = if text.ends_with("# EOF\n") {
        "eof"
    } else {
        "no-eof"
    };
    let acquired = text
        .lines()
        .find(|l| l.starts_with("zklock_acquires_total{") && l.contains("outcome=\"acquired\""))
        .and_then(|l| l.rsplit(' ').next())
        .unwrap_or("none");
    format!("{eof},acquired={acquired}")
}

/// The value of the first sample of `name` whose labels hold every one of `labels`
/// (`name="value"` each), `none` when there is none.
pub(crate) fn sample(text: &str, name: &str, labels: &[&str]) -> String {
    text.lines()
        .find(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
                && labels.iter().all(|x| l.contains(x))
        })
        .and_then(|l| l.rsplit(' ').next())
        .unwrap_or("none")
        .to_owned()
}

/// The outcome words of `path-stats-bound`: the case path's acquires and holds, the overflow's
/// acquires, and the folded count.
pub(crate) fn path_words(text: &str, path: &str) -> String {
    let own = format!("path=\"{path}\"");
    let acquired = "outcome=\"acquired\"";
    format!(
        "acquired={},held={},overflow={},folded={}",
        sample(text, "zklock_path_acquires_total", &[&own, acquired]),
        sample(text, "zklock_path_held", &[&own]),
        sample(
            text,
            "zklock_path_acquires_total",
            &["path=\"(overflow)\"", acquired]
        ),
        sample(text, "zklock_path_stats_folded_total", &[]),
    )
}

/// One of this block's scenarios, `None` for a name that is not one of them.
pub(crate) async fn scenario(runner: &Runner, name: &str) -> Option<Outcome> {
    Some(match name {
        "openmetrics" => {
            let own = runner.connect(Options::default()).await.unwrap();
            let lease = own
                .mutex(&runner.case_path)
                .unwrap()
                .acquire()
                .await
                .unwrap();
            lease.release().await.unwrap();
            let text = own.openmetrics(&[]);
            own.close().await;
            word(&words_of(&text))
        }
        "path-stats-bound" => {
            let own = runner
                .connect(Options::default().path_stats_limit(1))
                .await
                .unwrap();
            let mutex = own.mutex(&runner.case_path).unwrap();
            mutex.acquire().await.unwrap().release().await.unwrap();
            let held = mutex.acquire().await.unwrap();
            let other = own.mutex(&format!("{}-other", runner.case_path)).unwrap();
            other.acquire().await.unwrap().release().await.unwrap();
            let text = own.openmetrics(&[]);
            held.release().await.unwrap();
            own.close().await;
            word(&path_words(&text, &runner.case_path))
        }
        _ => return None,
    })
}
