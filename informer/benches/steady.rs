//! CPU per watch event at a steady rate: what the informer's pipeline (reflector, queue,
//! indexer, handler buffers and tasks) costs per event when events arrive one at a time, the
//! case where nothing batches and every hand-off between tasks is a wake-up.
//!
//! Run: `cargo bench -p informer --bench steady` (Linux: CPU time is read from
//! `/proc/self/task/*/schedstat`). Options after `--`: `--events N` (default 5,000),
//! `--rate R` per second (default 1,000).
//!
//! A producer task sends pre-built `MODIFIED` events of 1,000 objects at the rate through a
//! channel; the contenders consume it on tokio's multi-thread scheduler with 2 workers (as
//! `cargo xtask bench`'s contenders):
//!
//! - `floor`: one task reads the stream and counts (what any consumer pays: the producer, the
//!   channel, the wake-up per event);
//! - `informer, N handlers`: a `SharedIndexInformer` whose lister-watcher returns the same
//!   stream, with N handlers counting updates;
//! - `informer, in-order queue`: the same with one handler and `QueueChoice::in_order()`
//!   (client-go's `RealFIFO`) instead of the default `DeltaFifo`.
//!
//! The figure is the process's CPU time (all threads) from the first event sent to the last
//! one handled, divided by the number of events; `cargo xtask bench` measures the same over
//! HTTP with decoding, where decoding is most of the cost.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "benches")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use informer::reflector::WatchListMode;
use informer::{InformerConfig, QueueChoice, SharedIndexInformer, WatchEvent, handler};
use informer_testing::JsonObject;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

mod support;
use support::{Done, Scripted};

const OBJECTS: usize = 1_000;

fn object(i: usize, rv: usize) -> JsonObject {
    JsonObject::new(Some(&format!("ns-{}", i % 10)), &format!("obj-{i}"))
        .with_resource_version(rv.to_string())
        .with_uid(format!("uid-{i}"))
        .with_label("app", format!("app-{}", i % 20))
}

/// CPU time of every thread of this process, in nanoseconds.
fn process_cpu_ns() -> u64 {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task (Linux)")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Sends `events` MODIFIED events at `rate` per second into `tx`.
async fn produce(tx: mpsc::UnboundedSender<WatchEvent<JsonObject>>, events: usize, rate: u32) {
    let templates: Vec<JsonObject> = (0..OBJECTS).map(|i| object(i, 1)).collect();
    let mut tick = tokio::time::interval(Duration::from_secs(1) / rate);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for e in 0..events {
        tick.tick().await;
        let obj = templates[e % OBJECTS]
            .clone()
            .with_resource_version((e + 2).to_string());
        if tx.send(WatchEvent::Modified(obj)).is_err() {
            return;
        }
    }
}

/// CPU per event of a bare consumer.
fn floor(rt: &tokio::runtime::Runtime, events: usize, rate: u32) -> f64 {
    rt.block_on(async {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let consumer = tokio::spawn(async move {
            let mut seen = 0;
            while let Some(event) = rx.recv().await {
                std::hint::black_box(&event);
                seen += 1;
                if seen == events {
                    break;
                }
            }
        });
        let before = process_cpu_ns();
        tokio::spawn(produce(tx, events, rate));
        consumer.await.unwrap();
        (process_cpu_ns() - before) as f64 / events as f64
    })
}

/// CPU per event of an informer with `handlers` handlers, after its initial sync; its queue
/// is `DeltaFifo` (the default) or, with `in_order`, the in-order FIFO.
fn informer(
    rt: &tokio::runtime::Runtime,
    handlers: usize,
    in_order: bool,
    events: usize,
    rate: u32,
) -> f64 {
    rt.block_on(async {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let lw = Scripted::new(
            (0..OBJECTS).map(|i| object(i, 1)).collect(),
            Box::pin(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).map(Ok)),
        );
        // Lists, then watches: the one watch gets the events.
        let mut config = InformerConfig::default();
        config.list_watch.watch_list = WatchListMode::Off;
        if in_order {
            config.queue = QueueChoice::in_order();
        }
        let informer = SharedIndexInformer::new(lw, config).unwrap();
        let done = Done::new(handlers * events);
        for _ in 0..handlers {
            let done = Arc::clone(&done);
            informer
                .add_handler(handler().on_update(move |_: &Arc<JsonObject>, _| done.bump()))
                .unwrap();
        }
        let stop = CancellationToken::new();
        let run = informer.spawn(stop.clone());
        while !informer.has_synced() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Let the watch start and the initial notifications drain.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let finished = done.notify.notified();
        let before = process_cpu_ns();
        tokio::spawn(produce(tx, events, rate));
        finished.await;
        let cpu = process_cpu_ns() - before;
        stop.cancel();
        run.await.unwrap().unwrap();
        cpu as f64 / events as f64
    })
}

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(default)
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing and wants it quick.
    let benching = std::env::args().any(|a| a == "--bench");
    let events = arg("--events", if benching { 5_000 } else { 200 }) as usize;
    let rate = u32::try_from(arg("--rate", 1_000)).unwrap_or(1_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    let floor = floor(&rt, events, rate);
    let one = informer(&rt, 1, false, events, rate);
    let ten = informer(&rt, 10, false, events, rate);
    let in_order = informer(&rt, 1, true, events, rate);
    println!("steady: {events} events at {rate}/s, CPU per event (all threads)");
    println!("  floor (bare consumer)     {:>8.1} µs", floor / 1e3);
    println!(
        "  informer, 1 handler       {:>8.1} µs  (+{:.1} µs over the floor)",
        one / 1e3,
        (one - floor) / 1e3
    );
    println!(
        "  informer, 10 handlers     {:>8.1} µs  (+{:.1} µs over the floor)",
        ten / 1e3,
        (ten - floor) / 1e3
    );
    println!(
        "  informer, in-order queue  {:>8.1} µs  (+{:.1} µs over the floor; 1 handler)",
        in_order / 1e3,
        (in_order - floor) / 1e3
    );
    println!("  ({:.1} s)", started.elapsed().as_secs_f64());
}
