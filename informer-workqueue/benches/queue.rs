//! Work queue throughput: add/get/done with 1 and 8 workers on a multi-thread tokio runtime,
//! distinct items and a hot-item workload; and, on one task, the queue against kube-runtime's
//! `scheduler` (the closest thing kube-rs has: a deduplicating delay stream, with no
//! processing/done tracking, no worker pool and no rate limiting).
//!
//! Run: `cargo bench -p informer-workqueue --bench queue`. Each figure is per add.
#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmark harness

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use informer_workqueue::WorkQueue;
use kube_runtime::scheduler::{ScheduleRequest, scheduler};

/// Distinct keys in the hot-item workload.
const HOT_KEYS: u64 = 16;

/// Most items outstanding (queued or processing) in the distinct workload: the producer waits
/// for the workers beyond it, so the figures show a queue of realistic depth rather than one
/// growing to millions of entries.
const WINDOW: u64 = 4096;

#[derive(Clone, Copy)]
enum Workload {
    /// Every add is a new item.
    Distinct,
    /// Adds cycle over a few keys: most adds hit a queued or processing item.
    Hot,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Self::Distinct => "distinct",
            Self::Hot => "hot",
        }
    }

    fn key(self, i: u64) -> u64 {
        match self {
            Self::Distinct => i,
            Self::Hot => i % HOT_KEYS,
        }
    }
}

/// `adds` adds from one producer task while `workers` tasks get and done concurrently; ends when
/// the workers have emptied the queue after shutdown. In the distinct workload the producer
/// keeps at most [`WINDOW`] items outstanding.
fn concurrent_run(
    runtime: &tokio::runtime::Runtime,
    workload: Workload,
    workers: usize,
    adds: u64,
) -> Duration {
    runtime.block_on(async {
        let queue: WorkQueue<u64> = WorkQueue::new();
        let processed = Arc::new(AtomicU64::new(0));
        let progress = Arc::new(tokio::sync::Notify::new());
        let start = Instant::now();
        let tasks: Vec<_> = (0..workers)
            .map(|_| {
                let queue = queue.clone();
                let processed = Arc::clone(&processed);
                let progress = Arc::clone(&progress);
                tokio::spawn(async move {
                    while let Some(item) = queue.get().await {
                        queue.done(&item);
                        if processed.fetch_add(1, Ordering::Relaxed) % 256 == 255 {
                            progress.notify_one();
                        }
                    }
                })
            })
            .collect();
        let producer = tokio::spawn({
            let queue = queue.clone();
            async move {
                for i in 0..adds {
                    if matches!(workload, Workload::Distinct) {
                        while i >= processed.load(Ordering::Relaxed) + WINDOW {
                            progress.notified().await;
                        }
                    }
                    queue.add(workload.key(i));
                }
                queue.shut_down();
            }
        });
        producer.await.unwrap();
        for task in tasks {
            task.await.unwrap();
        }
        start.elapsed()
    })
}

fn concurrent(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("workqueue_add_get_done");
    group.throughput(Throughput::Elements(1));
    for workload in [Workload::Distinct, Workload::Hot] {
        for workers in [1, 8] {
            group.bench_with_input(
                BenchmarkId::new(workload.name(), format!("{workers}_workers")),
                &workers,
                |b, &workers| {
                    b.iter_custom(|iters| concurrent_run(&runtime, workload, workers, iters));
                },
            );
        }
    }
    group.finish();
}

/// One task, in rounds of [`WINDOW`] adds: add them, then get/done until empty.
fn ours_add_then_drain(
    runtime: &tokio::runtime::Runtime,
    workload: Workload,
    adds: u64,
) -> Duration {
    runtime.block_on(async {
        let queue: WorkQueue<u64> = WorkQueue::new();
        let start = Instant::now();
        let mut i = 0;
        while i < adds {
            let round_end = (i + WINDOW).min(adds);
            for key in i..round_end {
                queue.add(workload.key(key));
            }
            i = round_end;
            while !queue.is_empty() {
                let item = queue.get().await.unwrap();
                queue.done(&item);
            }
        }
        start.elapsed()
    })
}

/// One task, in rounds of [`WINDOW`]: send that many schedule requests due now, then read the
/// scheduler until every distinct key of the round came out.
fn kube_add_then_drain(
    runtime: &tokio::runtime::Runtime,
    workload: Workload,
    adds: u64,
) -> Duration {
    runtime.block_on(async {
        let (requests, receiver) = futures::channel::mpsc::unbounded();
        let mut stream = scheduler(receiver);
        let start = Instant::now();
        let mut i = 0;
        while i < adds {
            let round_end = (i + WINDOW).min(adds);
            for key in i..round_end {
                let request = ScheduleRequest {
                    message: workload.key(key),
                    run_at: tokio::time::Instant::now(),
                };
                requests.unbounded_send(request).unwrap();
            }
            let expected = match workload {
                Workload::Distinct => round_end - i,
                Workload::Hot => (round_end - i).min(HOT_KEYS),
            };
            i = round_end;
            for _ in 0..expected {
                stream.next().await.unwrap();
            }
        }
        let elapsed = start.elapsed();
        drop(requests);
        elapsed
    })
}

fn versus_kube_runtime(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("add_then_drain_one_task");
    group.throughput(Throughput::Elements(1));
    for workload in [Workload::Distinct, Workload::Hot] {
        group.bench_function(
            BenchmarkId::new("informer_workqueue", workload.name()),
            |b| {
                b.iter_custom(|iters| ours_add_then_drain(&runtime, workload, iters));
            },
        );
        group.bench_function(
            BenchmarkId::new("kube_runtime_scheduler", workload.name()),
            |b| {
                b.iter_custom(|iters| kube_add_then_drain(&runtime, workload, iters));
            },
        );
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = config();
    targets = concurrent, versus_kube_runtime
}
criterion_main!(benches);
