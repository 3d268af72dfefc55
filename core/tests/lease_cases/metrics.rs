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
        _ => return None,
    })
}
