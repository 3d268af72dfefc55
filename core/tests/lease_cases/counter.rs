//! The Rust runner's counter scenarios (issue 37, point 5: cases.txt's counter block).

use zklock::{Count, CounterWidth, Options};

use super::super::{error_word, word, Outcome, Runner};

/// One of this block's scenarios, `None` for a name that is not one of them.
pub(crate) async fn scenario(runner: &Runner, name: &str) -> Option<Outcome> {
    let path = runner.case_path.as_str();
    let counter_path = format!("{path}-counter");
    let client = &runner.client;
    Some(match name {
        "counter-width-unknown" => match CounterWidth::parse("int16") {
            Ok(_) => word("ok"),
            Err(e) => error_word(&e),
        },
        "counter-guarded" => {
            let counter = client.counter(&counter_path, CounterWidth::Int64).unwrap();
            let lease = client.mutex(path).unwrap().acquire().await.unwrap();
            let a = lease.guarded_increment(&counter, 1).await.unwrap().value;
            let b = lease.guarded_increment(&counter, 41).await.unwrap().value;
            lease.release().await.unwrap();
            word(&format!("{a},{b}"))
        }
        "counter-after-loss" => {
            let own = runner.connect(Options::default()).await.unwrap();
            let counter = own.counter(&counter_path, CounterWidth::Int32).unwrap();
            let lease = own.mutex(path).unwrap().acquire().await.unwrap();
            own.close().await;
            let kind = match lease.guarded_increment(&counter, 1).await {
                Ok(_) => "ok".to_owned(),
                Err(e) => e.kind().as_str().to_owned(),
            };
            let read = client.counter(&counter_path, CounterWidth::Int32).unwrap();
            word(&format!("{kind},{}", read.get().await.unwrap().value))
        }
        "counter-int32-overflow" => {
            let counter = client.counter(&counter_path, CounterWidth::Int32).unwrap();
            let lease = client.mutex(path).unwrap().acquire().await.unwrap();
            lease
                .guarded_increment(&counter, i32::MAX as i64)
                .await
                .unwrap();
            let kind = match lease.guarded_increment(&counter, 1).await {
                Ok(_) => "ok".to_owned(),
                Err(e) => e.kind().as_str().to_owned(),
            };
            lease.release().await.unwrap();
            word(&format!("{kind},{}", counter.get().await.unwrap().value))
        }
        "counter-cas-stale" => {
            let counter = client.counter(&counter_path, CounterWidth::Int32).unwrap();
            let seen: Count = counter.get().await.unwrap();
            let first = counter.compare_and_set(seen, 7).await.unwrap();
            let second = counter.compare_and_set(seen, 9).await.unwrap();
            let first = first.map_or("stale".to_owned(), |c| c.value.to_string());
            let second = second.map_or("stale".to_owned(), |c| c.value.to_string());
            word(&format!("{first},{second}"))
        }
        _ => return None,
    })
}
