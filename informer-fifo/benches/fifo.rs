//! Push+pop throughput of both FIFOs (distinct keys, and a hot-key workload), and `replace` of a
//! large list that also produces tombstones.
//!
//! Run: `cargo bench -p informer-fifo --bench fifo`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // benches

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use futures::FutureExt;
use informer_core::{KnownObjects, Queue};
use informer_fifo::{DeltaFifo, DeltaFifoConfig, InOrderFifo, InOrderFifoConfig};
use informer_testing::JsonObject;
use informer_testing::conformance::queue::KnownObjectsMap;

const N: usize = 100_000;
const HOT_KEYS: usize = 10;

fn objects(n: usize, prefix: &str, namespaces: usize) -> Vec<Arc<JsonObject>> {
    (0..n)
        .map(|i| {
            Arc::new(
                JsonObject::new(
                    Some(&format!("ns-{}", i % namespaces)),
                    &format!("{prefix}-{i}"),
                )
                .with_resource_version(i.to_string()),
            )
        })
        .collect()
}

fn hot_objects(n: usize) -> Vec<Arc<JsonObject>> {
    (0..n)
        .map(|i| {
            Arc::new(
                JsonObject::new(Some("hot"), &format!("key-{}", i % HOT_KEYS))
                    .with_resource_version(i.to_string()),
            )
        })
        .collect()
}

/// Pops until empty; returns how many deltas were handed out.
fn drain<Q: Queue<JsonObject>>(q: &Q) -> usize {
    let mut seen = 0;
    let mut count = |deltas: &[informer_core::Delta<JsonObject>]| {
        seen += deltas.len();
        Ok(())
    };
    while !q.is_empty() {
        // Never pending: the queue is not empty and nothing else pops.
        q.pop(&mut count).now_or_never().unwrap().unwrap();
    }
    seen
}

fn delta_fifo(known_objects: Option<Arc<dyn KnownObjects<JsonObject>>>) -> DeltaFifo<JsonObject> {
    DeltaFifo::new(DeltaFifoConfig {
        known_objects,
        ..DeltaFifoConfig::default()
    })
}

fn in_order(known_objects: Option<Arc<dyn KnownObjects<JsonObject>>>) -> InOrderFifo<JsonObject> {
    InOrderFifo::new(InOrderFifoConfig {
        known_objects,
        ..InOrderFifoConfig::default()
    })
}

fn push_pop<Q: Queue<JsonObject>>(
    c: &mut Criterion,
    group: &str,
    make: fn(Option<Arc<dyn KnownObjects<JsonObject>>>) -> Q,
) {
    let distinct = objects(N, "obj", 100);
    let hot = hot_objects(N);
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(10);
    for (name, input) in [
        ("distinct_keys_100k", &distinct),
        ("hot_keys_10_x_10k", &hot),
    ] {
        g.bench_function(name, |b| {
            b.iter_batched(
                || (make(None), input.clone()),
                |(q, input)| {
                    for obj in input {
                        q.update(obj).unwrap();
                    }
                    assert_eq!(drain(&q), N);
                    q
                },
                BatchSize::PerIteration,
            );
        });
    }
    g.finish();
}

fn replace<Q: Queue<JsonObject>>(
    c: &mut Criterion,
    group: &str,
    make: fn(Option<Arc<dyn KnownObjects<JsonObject>>>) -> Q,
) {
    // The store knows 100k objects; the relist returns 100k, half of them new: 100k `Replaced`
    // plus 50k tombstones.
    let known = objects(N, "obj", 100);
    let mut listed = known[N / 2..].to_vec();
    listed.extend(objects(N / 2, "new", 100));
    let store: Arc<dyn KnownObjects<JsonObject>> =
        Arc::new(KnownObjectsMap::with_objects(known).unwrap());
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(10);
    g.bench_function("replace_100k_with_50k_tombstones", |b| {
        b.iter_batched(
            || (make(Some(Arc::clone(&store))), listed.clone()),
            |(q, list)| {
                q.replace(list, "1").unwrap();
                black_box(q.len());
                q
            },
            BatchSize::PerIteration,
        );
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    push_pop(c, "delta_fifo", delta_fifo);
    push_pop(c, "in_order_fifo", in_order);
    replace(c, "delta_fifo", delta_fifo);
    replace(c, "in_order_fifo", in_order);
}

criterion_group!(fifo, benches);
criterion_main!(fifo);
