//! The Rust runner's scenarios of issue 37's queue position (cases.txt's block): a pending
//! acquire's `position()` and its `on_queued` callback.

use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

use zklock::{Acquire, Options, Owner, Wait};

use super::{error_word, word, Outcome, Runner};

/// One of this block's scenarios, `None` for a name that is not one of them.
pub(crate) async fn scenario(runner: &Runner, name: &str) -> Option<Outcome> {
    let path = runner.case_path.as_str();
    Some(match name {
        "queue-position-third" => {
            let holder = runner.client.mutex(path).unwrap().acquire().await.unwrap();
            let second = runner.connect(Options::default()).await.unwrap();
            let third = runner.connect(Options::default()).await.unwrap();
            let middle = second
                .mutex(path)
                .unwrap()
                .start_acquire(Owner::SHARED, Wait::Forever);
            until_position(&middle, 1).await;
            let (acquire, heard) = queued(&third.mutex(path).unwrap());
            let mut calls = vec![next_call(&heard)];
            middle.cancel();
            calls.push(next_call(&heard));
            holder.release().await.unwrap();
            let outcome = ended(acquire, &heard, calls).await;
            second.close().await;
            third.close().await;
            outcome
        }
        "queue-position-uncontended" => {
            let (acquire, heard) = queued(&runner.client.mutex(path).unwrap());
            ended(acquire, &heard, Vec::new()).await
        }
        "queue-position-reader" => {
            let reader = runner.client.rw_lock(path).unwrap();
            let held = reader.read().acquire().await.unwrap();
            let second = runner.connect(Options::default()).await.unwrap();
            let third = runner.connect(Options::default()).await.unwrap();
            let writer = second
                .rw_lock(path)
                .unwrap()
                .write()
                .start_acquire(Owner::SHARED, Wait::Forever);
            until_position(&writer, 1).await;
            let (acquire, heard) = queued(third.rw_lock(path).unwrap().read());
            let calls = vec![next_call(&heard)];
            writer.cancel();
            let outcome = ended(acquire, &heard, calls).await;
            held.release().await.unwrap();
            second.close().await;
            third.close().await;
            outcome
        }
        _ => return None,
    })
}

/// Starts an acquire of `lock` whose `on_queued` calls go to the receiver.
fn queued(lock: &zklock::Lock) -> (Acquire, Receiver<u32>) {
    let acquire = lock.start_acquire(Owner::SHARED, Wait::Forever);
    let (tx, rx) = channel();
    acquire.queue_position().on_queued(move |n| {
        let _ = tx.send(n);
    });
    (acquire, rx)
}

/// The next `on_queued` figure (at most 10 s), as text.
fn next_call(heard: &Receiver<u32>) -> String {
    match heard.recv_timeout(Duration::from_secs(10)) {
        Ok(n) => n.to_string(),
        Err(_) => "silent".to_owned(),
    }
}

/// Waits (at most 10 s) until a pending acquire's position is `n`.
async fn until_position(acquire: &Acquire, n: u32) {
    for _ in 0..500 {
        if acquire.position() == Some(n) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "the acquire's position never was {n}: {:?}",
        acquire.position()
    );
}

/// `calls` and the acquire's outcome (released at once), then `quiet` when no call came
/// before it and none within 300 ms after.
async fn ended(acquire: Acquire, heard: &Receiver<u32>, mut calls: Vec<String>) -> Outcome {
    let outcome = match tokio::time::timeout(Duration::from_secs(20), acquire).await {
        Ok(Ok(lease)) => {
            lease.release().await.unwrap();
            "acquired".to_owned()
        }
        Ok(Err(e)) => match error_word(&e) {
            Outcome::Is(kind) => kind,
            Outcome::NotApplicable(why) => why.to_owned(),
        },
        Err(_) => "still-waiting".to_owned(),
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    calls.extend(heard.try_iter().map(|n| n.to_string()));
    let quiet = calls.is_empty();
    calls.push(outcome);
    if quiet {
        calls.push("quiet".to_owned());
    }
    word(&calls.join(","))
}
