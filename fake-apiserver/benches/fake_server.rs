//! Benchmarks of the fake API server's engine (in-process, no HTTP): full and paged lists of
//! 100k realistic pods, decoding through the in-process ListerWatcher, fan-out of events to
//! 100 watchers, and one merge patch of a realistic pod as a request writes it (decoded into
//! the Pod's Go type, defaulted, its managed fields tracked) and as a test writes it directly.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Benches: a failed unwrap is a failed run.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use fake_apiserver::seed::{self, SeedConfig};
use fake_apiserver::{FakeApiServer, Query, WatchFrame};
use informer_core::{ListOptions, ListerWatcher};
use informer_testing::JsonObject;

const PODS: usize = 100_000;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

fn seeded(pods: usize) -> FakeApiServer {
    let server = FakeApiServer::new();
    seed::seed(
        &server,
        &SeedConfig {
            namespaces: 100,
            pods,
            configmaps: 0,
            seed: 1,
        },
    )
    .unwrap();
    server
}

fn lists(c: &mut Criterion) {
    let rt = runtime();
    let server = rt.block_on(async { seeded(PODS) });
    let target = server.target("pods", None).unwrap();
    let mut group = c.benchmark_group("list_100k_pods");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements(PODS as u64));
    group.bench_function("full_list_and_render", |b| {
        b.iter(|| {
            rt.block_on(async {
                let resp = server.list(&target, &Query::default()).await.unwrap();
                let bytes: usize = resp.to_json_chunks().iter().map(|c| c.len()).sum();
                black_box(bytes)
            })
        });
    });
    group.bench_function("paged_limit_500", |b| {
        b.iter(|| {
            rt.block_on(async {
                let mut query = Query {
                    limit: Some(500),
                    ..Query::default()
                };
                let mut items = 0;
                loop {
                    let resp = server.list(&target, &query).await.unwrap();
                    items += resp.items.len();
                    match resp.continue_token {
                        Some(c) => query.continue_token = Some(c),
                        None => break,
                    }
                }
                server.clear_requests();
                black_box(items)
            })
        });
    });
    group.finish();

    let small = rt.block_on(async { seeded(10_000) });
    let lw = small.lister_watcher::<JsonObject>("pods", None).unwrap();
    let mut group = c.benchmark_group("lister_watcher_decode");
    group.sample_size(10);
    group.throughput(Throughput::Elements(10_000));
    group.bench_function("list_10k_pods_into_json_object", |b| {
        b.iter(|| {
            rt.block_on(async {
                let page = lw.list(&ListOptions::default()).await.unwrap();
                small.clear_requests();
                black_box(page.items.len())
            })
        });
    });
    group.finish();
}

fn fan_out(c: &mut Criterion) {
    const WATCHERS: usize = 100;
    const EVENTS: usize = 1_000;
    let rt = runtime();
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(7);
    let pods: Vec<_> = (0..EVENTS)
        .map(|i| seed::pod("ns-0", &format!("p{i}"), &mut rng))
        .collect();
    let watch_query = Query {
        watch: true,
        resource_version: Some("1".into()),
        ..Query::default()
    };

    let mut group = c.benchmark_group("fan_out");
    group.sample_size(10);
    // Delivery: 1000 events already written, 100 watchers each read all of them.
    group.throughput(Throughput::Elements((WATCHERS * EVENTS) as u64));
    group.bench_function("deliver_1000_events_to_100_watchers", |b| {
        b.iter_batched(
            || {
                let server = seeded(0);
                for p in &pods {
                    server.create("pods", p).unwrap();
                }
                let target = server.target("pods", None).unwrap();
                let subs: Vec<_> = rt.block_on(async {
                    let mut subs = Vec::with_capacity(WATCHERS);
                    for _ in 0..WATCHERS {
                        subs.push(server.watch(&target, &watch_query).await.unwrap());
                    }
                    subs
                });
                (server, subs)
            },
            |(server, mut subs)| {
                rt.block_on(async {
                    let mut delivered = 0usize;
                    for sub in &mut subs {
                        for _ in 0..EVENTS {
                            if let Some(WatchFrame::Added(o)) = sub.next().await {
                                delivered += usize::from(!o.bytes().is_empty());
                            }
                        }
                    }
                    black_box(delivered);
                });
                (server, subs)
            },
            BatchSize::PerIteration,
        );
    });
    // Writes with 0 and with 100 open watchers: writers never wait for watchers.
    group.throughput(Throughput::Elements(EVENTS as u64));
    for watchers in [0, WATCHERS] {
        group.bench_function(format!("write_1000_pods_with_{watchers}_watchers"), |b| {
            b.iter_batched(
                || {
                    let server = seeded(0);
                    let target = server.target("pods", None).unwrap();
                    let subs: Vec<_> = rt.block_on(async {
                        let mut subs = Vec::with_capacity(watchers);
                        for _ in 0..watchers {
                            subs.push(server.watch(&target, &watch_query).await.unwrap());
                        }
                        subs
                    });
                    (server, subs)
                },
                |(server, subs)| {
                    for p in &pods {
                        server.create("pods", p).unwrap();
                    }
                    (server, subs)
                },
                BatchSize::PerIteration,
            );
        });
    }
    group.finish();
}

fn writes(c: &mut Criterion) {
    let server = seeded(1_000);
    let pods = server.objects("pods", None).unwrap();
    let (ns, name) = (
        pods[0].namespace().unwrap().to_owned(),
        pods[0].name().to_owned(),
    );
    let target = server.target("pods", Some(&ns)).unwrap();
    let mut group = c.benchmark_group("write_realistic_pod");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(5));
    let mut n = 0u64;
    let mut patch = || {
        n += 1;
        serde_json::json!({"metadata": {"annotations": {"bench/n": n.to_string()}}})
    };
    group.bench_function("merge_patch_request", |b| {
        b.iter(|| black_box(server.patch_at(&target, &name, &patch()).unwrap()));
    });
    group.bench_function("merge_patch_direct", |b| {
        b.iter(|| black_box(server.patch("pods", Some(&ns), &name, &patch()).unwrap()));
    });
    group.finish();
}

criterion_group!(benches, lists, fan_out, writes);
criterion_main!(benches);
