//! The `metrics` feature (issue 37, point 4): `Client::record_metrics` hands the client-wide and
//! per-path statistics to the `metrics` facade's recorder, under the OpenMetrics names. Run with
//! `cargo test -p zklock --features metrics --test metrics_facade` (make test-rust does).

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use common::*;
use metrics::{Counter, CounterFn, Gauge, GaugeFn, Histogram, Key, KeyName, Metadata, Recorder};
use metrics::{SharedString, Unit};

/// Every value recorded, by `name{label=value,...}`.
#[derive(Default, Clone)]
struct Seen(Arc<Mutex<BTreeMap<String, f64>>>);

struct Slot(Seen, String);

impl CounterFn for Slot {
    fn increment(&self, value: u64) {
        *self.0 .0.lock().unwrap().entry(self.1.clone()).or_default() += value as f64;
    }
    fn absolute(&self, value: u64) {
        self.0
             .0
            .lock()
            .unwrap()
            .insert(self.1.clone(), value as f64);
    }
}

impl GaugeFn for Slot {
    fn increment(&self, value: f64) {
        *self.0 .0.lock().unwrap().entry(self.1.clone()).or_default() += value;
    }
    fn decrement(&self, value: f64) {
        *self.0 .0.lock().unwrap().entry(self.1.clone()).or_default() -= value;
    }
    fn set(&self, value: f64) {
        self.0 .0.lock().unwrap().insert(self.1.clone(), value);
    }
}

impl Seen {
    fn slot(&self, key: &Key) -> Arc<Slot> {
        let labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        Arc::new(Slot(
            self.clone(),
            format!("{}{{{}}}", key.name(), labels.join(",")),
        ))
    }
    fn get(&self, key: &str) -> Option<f64> {
        self.0.lock().unwrap().get(key).copied()
    }
}

impl Recorder for Seen {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.slot(key))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(self.slot(key))
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_metrics_hands_the_totals_and_each_paths_series_to_the_recorder() {
    let path = unique_path("metrics-facade");
    let client = client().await;
    let mutex = client.mutex(&path).unwrap();
    mutex.acquire().await.unwrap().release().await.unwrap();
    let held = mutex.acquire().await.unwrap();
    let seen = Seen::default();
    metrics::with_local_recorder(&seen, || client.record_metrics(&[("service", "jobs")]));
    let id = client.id();
    let at = |name: &str, more: &str| {
        let key = format!("{name}{{client={id},service=jobs{more}}}");
        seen.get(&key)
            .unwrap_or_else(|| panic!("{key} not recorded"))
    };
    assert_eq!(at("zklock_acquires_total", ",outcome=acquired"), 2.0);
    assert_eq!(at("zklock_held", ""), 1.0);
    assert_eq!(at("zklock_wait_seconds_count", ""), 2.0);
    let own = format!(",path={path}");
    assert_eq!(
        at(
            "zklock_path_acquires_total",
            &format!("{own},outcome=acquired")
        ),
        2.0
    );
    assert_eq!(at("zklock_path_held", &own), 1.0);
    assert_eq!(
        at(
            "zklock_path_leases_lost_total",
            &format!("{own},reason=broken")
        ),
        0.0
    );
    assert_eq!(at("zklock_path_stats_folded_total", ""), 0.0);
    assert!(at("zklock_path_wait_seconds_total", &own) >= 0.0);

    held.release().await.unwrap();
    metrics::with_local_recorder(&seen, || client.record_metrics(&[("service", "jobs")]));
    // The facade cannot drop a series: a path no longer held reads 0 (the text leaves it out).
    assert_eq!(at("zklock_path_held", &own), 0.0);
    assert_eq!(at("zklock_path_oldest_hold_seconds", &own), 0.0);
    client.close().await;
}
