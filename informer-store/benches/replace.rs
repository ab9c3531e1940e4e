//! What holding the objects costs per watch event: the CPU of decoding a realistic pod and
//! replacing the one the cache held (which frees the old pod, long out of the CPU's caches),
//! against decoding it and dropping it at once, as `cargo xtask bench`'s floor does.
//!
//! Run: `cargo bench -p informer-store --features compact --bench replace` (Linux: CPU time from
//! `/proc/thread-self/schedstat`). `REPLACE_SIZES` (default `10000,100000`) sets how many pods
//! the cache holds; `REPLACE_EVENTS` (default 20,000) how many updates each pass applies.
//!
//! On one thread, per event, median of four passes (the two caches take turns at going first):
//!
//! - `decode, drop`: the floor's work (`serde_json::from_str` into a k8s-openapi `Pod`);
//! - `decode, replace in a HashMap`: the least any cache of typed objects does (a map from
//!   key to `Arc<Pod>`, the old `Arc` dropped);
//! - `decode, update IndexedStore`: this crate's store with the namespace index, as an
//!   informer's processing loop applies an update (the old object dropped when the store
//!   returns it).
//!
//! The pods are `support/pods.rs`'s (about 6.7 KB of JSON, five `managedFields` entries, 100
//! namespaces); the events cycle over the cached keys with a stride, so consecutive events
//! touch unrelated pods, as a cluster's updates do.
#![allow(clippy::unwrap_used, clippy::expect_used)] // bench
#![allow(missing_docs)]

#[path = "support/cpu.rs"]
mod cpu;
#[path = "support/pods.rs"]
mod pods;

use cpu::cpu_ns;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use informer_core::{Store, namespace_indexers};
use informer_store::IndexedStore;
use k8s_openapi::api::core::v1::Pod;

const SEED: u64 = 7;

fn env_list(name: &str, default: &[usize]) -> Vec<usize> {
    std::env::var(name).map_or_else(
        |_| default.to_vec(),
        |v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect(),
    )
}

fn decode(text: &str) -> Pod {
    serde_json::from_str(text).expect("seed pods decode")
}

/// Passes per contender (the caches alternate which goes first).
const ROUNDS: usize = 4;

/// Fills a `HashMap` with every pod, then times updates that replace the held `Arc`.
fn map_pass(texts: &[String], events: usize) -> Duration {
    let size = texts.len();
    let mut map: HashMap<usize, Arc<Pod>> = (0..size)
        .map(|i| (i, Arc::new(decode(&texts[i]))))
        .collect();
    per_event(events, size, |i| {
        drop(map.insert(i, Arc::new(decode(&texts[i]))));
    })
}

/// Fills an `IndexedStore` (namespace index) with every pod, then times `update`s.
fn store_pass(texts: &[String], events: usize) -> Duration {
    let size = texts.len();
    let store = IndexedStore::with_indexers(namespace_indexers());
    for text in texts {
        store.add(Arc::new(decode(text))).unwrap();
    }
    per_event(events, size, |i| {
        drop(store.update(Arc::new(decode(&texts[i]))).unwrap());
    })
}

/// CPU per event of `apply` over `events` events; event `e` uses pod `(e * stride) % size`.
fn per_event(events: usize, size: usize, mut apply: impl FnMut(usize)) -> Duration {
    // A stride coprime with every size used here, large enough to jump between namespaces.
    let stride = 7_919;
    let before = cpu_ns();
    for e in 0..events {
        apply((e * stride) % size);
    }
    Duration::from_nanos((cpu_ns() - before) / events as u64)
}

/// The median (the mean of the middle two for an even count).
fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    let n = values.len();
    if n.is_multiple_of(2) {
        (values[n / 2 - 1] + values[n / 2]) / 2
    } else {
        values[n / 2]
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing and wants it quick.
    let benching = std::env::args().any(|a| a == "--bench");
    let sizes = env_list(
        "REPLACE_SIZES",
        if benching { &[10_000, 100_000] } else { &[500] },
    );
    let events = env_list("REPLACE_EVENTS", &[if benching { 20_000 } else { 500 }])
        .first()
        .copied()
        .unwrap_or(20_000);
    println!("replace: CPU per event on one thread, median of {ROUNDS} passes of {events} events");
    for size in sizes {
        let texts: Vec<String> = (0..size)
            .map(|i| pods::pod_json(SEED, i).to_string())
            .collect();
        let mut floor = Vec::new();
        let mut map_times = Vec::new();
        let mut store_times = Vec::new();
        for round in 0..ROUNDS {
            floor.push(per_event(events, size, |i| {
                drop(std::hint::black_box(decode(&texts[i])));
            }));
            // Each pass leaves the heap as it found it only roughly: the two caches take turns
            // at going first, so neither always inherits the other's leftovers.
            if round.is_multiple_of(2) {
                map_times.push(map_pass(&texts, events));
                store_times.push(store_pass(&texts, events));
            } else {
                store_times.push(store_pass(&texts, events));
                map_times.push(map_pass(&texts, events));
            }
        }
        let floor = median(floor);
        let ratio = |d: Duration| d.as_secs_f64() / floor.as_secs_f64();
        let map = median(map_times);
        let store = median(store_times);
        println!("  {size} pods cached");
        println!("    decode, drop                      {:>8.1?}", floor);
        println!(
            "    decode, replace in a HashMap      {:>8.1?}  ({:.2}× decode, drop)",
            map,
            ratio(map)
        );
        println!(
            "    decode, update IndexedStore       {:>8.1?}  ({:.2}× decode, drop)",
            store,
            ratio(store)
        );
    }
}
