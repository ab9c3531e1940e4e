//! Informer throughput and cold sync, from the in-process fake API server.
//!
//! Run: `cargo bench -p informer --bench informer`.
//!
//! - `pipeline/*`: 10,000 updates (of 1,000 config maps, round-robin) written to the fake
//!   server while an informer watches; the time from the first write until every handler has
//!   received every update. `server_and_watch_only` is the floor: the same writes read by a
//!   bare watch stream (JSON encode, store, history, decode). `informer_1_handler` and
//!   `informer_10_handlers` add the queue (DeltaFifo), the indexer and the handlers' buffers
//!   and tasks. Throughput is in deltas (elements) per second.
//! - `in_memory/*`: the informer alone: a `ListerWatcher` answering from memory (a list of
//!   1,000 objects, then 100,000 pre-built `MODIFIED` events), through reflector, queue,
//!   indexer and one or ten handlers; the time from start until every handler has received
//!   every update.
//! - `cold_sync/100k`: a fake server seeded with 100,000 config maps; the time from starting
//!   an informer to `has_synced` (one list of 100k objects decoded, queued, indexed, and
//!   distributed to one handler).
//!
//! The runtime is tokio's multi-thread scheduler with 2 workers. Generating the objects
//! happens outside the measurement.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "benches")]
#![allow(
    missing_docs,
    reason = "criterion's macros generate undocumented items"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use fake_apiserver::{FakeApiServer, seed};
use futures::StreamExt;
use informer::reflector::WatchListMode;
use informer::{
    InformerConfig, ListerWatcher, SharedIndexInformer, WatchEvent, WatchOptions, handler,
};
use informer_testing::JsonObject;
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

mod support;
use support::{Done, Scripted};

const OBJECTS: usize = 1_000;
const UPDATES: usize = 10_000;
const NAMESPACES: usize = 10;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn name(i: usize) -> (String, String) {
    (format!("ns-{}", i % NAMESPACES), format!("config-{i}"))
}

/// A server holding `OBJECTS` config maps, and the `UPDATES` new versions to write.
fn server_and_updates() -> (FakeApiServer, Vec<Value>) {
    let server = FakeApiServer::new();
    let mut rng = StdRng::seed_from_u64(1);
    for i in 0..OBJECTS {
        let (ns, n) = name(i);
        server
            .create("configmaps", &seed::config_map(&ns, &n, &mut rng))
            .unwrap();
    }
    let updates = (0..UPDATES)
        .map(|u| {
            let (ns, n) = name(u % OBJECTS);
            let mut v = seed::config_map(&ns, &n, &mut rng);
            v["metadata"]["labels"]["generation"] = json!(u.to_string());
            v
        })
        .collect();
    (server, updates)
}

async fn write_all(server: &FakeApiServer, updates: &[Value]) {
    for (i, u) in updates.iter().enumerate() {
        server.update("configmaps", u).unwrap();
        if i % 64 == 0 {
            // Let the pipeline run on the other worker as the writes come.
            tokio::task::yield_now().await;
        }
    }
}

fn informer_pipeline(rt: &tokio::runtime::Runtime, handlers: usize) -> Duration {
    let (server, updates) = server_and_updates();
    rt.block_on(async {
        let lw = Arc::new(
            server
                .lister_watcher::<JsonObject>("configmaps", None)
                .unwrap(),
        );
        let informer = SharedIndexInformer::new(lw, InformerConfig::default()).unwrap();
        let done = Done::new(handlers * UPDATES);
        for _ in 0..handlers {
            let done = Arc::clone(&done);
            informer
                .add_handler(handler().on_update(move |_: &Arc<JsonObject>, _| done.bump()))
                .unwrap();
        }
        let stop = CancellationToken::new();
        let run = informer.spawn(stop.clone());
        assert!(informer.wait_for_sync().await);
        server.wait_for_open_watches("configmaps", 1).await;
        let started = Instant::now();
        let finished = done.notify.notified();
        write_all(&server, &updates).await;
        finished.await;
        let elapsed = started.elapsed();
        stop.cancel();
        run.await.unwrap().unwrap();
        elapsed
    })
}

fn watch_only(rt: &tokio::runtime::Runtime) -> Duration {
    let (server, updates) = server_and_updates();
    rt.block_on(async {
        let lw = server
            .lister_watcher::<JsonObject>("configmaps", None)
            .unwrap();
        let options = WatchOptions {
            resource_version: Some(server.resource_version().to_string()),
            ..WatchOptions::default()
        };
        let mut stream = lw.watch(&options).await.unwrap();
        let reader = tokio::spawn(async move {
            let mut seen = 0;
            while seen < UPDATES {
                if let Some(Ok(WatchEvent::Modified(obj))) = stream.next().await {
                    std::hint::black_box(Arc::new(obj));
                    seen += 1;
                }
            }
        });
        let started = Instant::now();
        write_all(&server, &updates).await;
        reader.await.unwrap();
        started.elapsed()
    })
}

fn pipeline(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("pipeline");
    group.sample_size(10);
    group.throughput(Throughput::Elements(UPDATES as u64));
    group.bench_function("server_and_watch_only", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| watch_only(&rt)).sum())
    });
    group.bench_function("informer_1_handler", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| informer_pipeline(&rt, 1)).sum())
    });
    group.bench_function("informer_10_handlers", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| informer_pipeline(&rt, 10)).sum())
    });
    group.finish();
}

const IN_MEMORY_EVENTS: usize = 100_000;

fn in_memory_object(i: usize, rv: usize) -> JsonObject {
    let (ns, n) = name(i);
    JsonObject::new(Some(&ns), &n)
        .with_resource_version(rv.to_string())
        .with_uid(format!("uid-{i}"))
        .with_label("app", format!("app-{}", i % 20))
}

fn in_memory_pipeline(rt: &tokio::runtime::Runtime, handlers: usize) -> Duration {
    let list = (0..OBJECTS).map(|i| in_memory_object(i, 1)).collect();
    let events: Vec<_> = (0..IN_MEMORY_EVENTS)
        .map(|e| WatchEvent::Modified(in_memory_object(e % OBJECTS, e + 2)))
        .collect();
    let lw = Scripted::new(list, Box::pin(futures::stream::iter(events).map(Ok)));
    rt.block_on(async {
        // The scripted lister-watcher has no streaming list: list, then watch.
        let mut config = InformerConfig::default();
        config.list_watch.watch_list = WatchListMode::Off;
        let informer = SharedIndexInformer::new(lw, config).unwrap();
        let done = Done::new(handlers * IN_MEMORY_EVENTS);
        for _ in 0..handlers {
            let done = Arc::clone(&done);
            informer
                .add_handler(handler().on_update(move |_: &Arc<JsonObject>, _| done.bump()))
                .unwrap();
        }
        let finished = done.notify.notified();
        let stop = CancellationToken::new();
        let started = Instant::now();
        let run = informer.spawn(stop.clone());
        finished.await;
        let elapsed = started.elapsed();
        stop.cancel();
        run.await.unwrap().unwrap();
        elapsed
    })
}

fn in_memory(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("in_memory");
    group.sample_size(10);
    group.throughput(Throughput::Elements(IN_MEMORY_EVENTS as u64));
    for handlers in [1, 10] {
        group.bench_function(format!("{handlers}_handlers"), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| in_memory_pipeline(&rt, handlers)).sum())
        });
    }
    group.finish();
}

fn cold_sync(c: &mut Criterion) {
    let rt = runtime();
    let server = FakeApiServer::new();
    seed::seed(
        &server,
        &seed::SeedConfig {
            namespaces: NAMESPACES,
            configmaps: 100_000,
            ..seed::SeedConfig::default()
        },
    )
    .unwrap();
    let mut group = c.benchmark_group("cold_sync");
    group.sample_size(10);
    group.throughput(Throughput::Elements(100_000));
    group.bench_function("100k", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                total += rt.block_on(async {
                    let lw = Arc::new(
                        server
                            .lister_watcher::<JsonObject>("configmaps", None)
                            .unwrap(),
                    );
                    let informer = SharedIndexInformer::new(lw, InformerConfig::default()).unwrap();
                    let registration = informer.add_handler(handler()).unwrap();
                    let stop = CancellationToken::new();
                    let started = Instant::now();
                    let run = informer.spawn(stop.clone());
                    assert!(informer.wait_for_sync().await);
                    let elapsed = started.elapsed();
                    assert!(registration.wait_for_sync().await);
                    assert_eq!(informer.lister().len(), 100_000);
                    stop.cancel();
                    run.await.unwrap().unwrap();
                    elapsed
                });
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, pipeline, in_memory, cold_sync);
criterion_main!(benches);
