//! Reflector throughput: watch events into a queue, and relists with and without the
//! known-objects sharing.
//!
//! Run: `cargo bench -p informer --bench reflector`.
//!
//! - `watch_events/100k`: one empty list, then 100,000 `MODIFIED` events from an in-memory
//!   stream, each decided by the state machine, transformed (identity) and queued as an `Arc`;
//! - `relist_10k/*`: a list of 10,000 objects in 20 pages of 500, ending in one `replace`:
//!   `fresh` without known objects (every object transformed and wrapped in a new `Arc`), and
//!   `unchanged_shared` with a store already holding every object at the same resourceVersion
//!   (every decoded copy dropped for the stored `Arc`, no transform).
//!
//! Building the objects (the decoder's work) happens outside the measurement.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "benches")]
#![allow(
    missing_docs,
    reason = "criterion's macros generate undocumented items"
)]

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use informer::reflector::{Reflector, ReflectorConfig};
use informer_core::{
    Error, KnownObjects, ListOptions, ListPage, ListerWatcher, ObjectKey, ProcessFn, Queue,
    QueueError, WatchEvent, WatchOptions, WatchStream,
};
use informer_testing::JsonObject;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

fn object(i: usize, rv: usize) -> JsonObject {
    JsonObject::new(Some(&format!("ns-{}", i % 10)), &format!("object-{i}"))
        .with_resource_version(rv.to_string())
        .with_label("app", format!("app-{}", i % 50))
}

/// Answers from pre-built pages and events, then keeps the watch open.
struct InMemory {
    pages: Mutex<Vec<ListPage<JsonObject>>>,
    events: Mutex<Option<Vec<WatchEvent<JsonObject>>>>,
}

#[async_trait]
impl ListerWatcher<JsonObject> for InMemory {
    async fn list(&self, _: &ListOptions) -> Result<ListPage<JsonObject>, Error> {
        Ok(self.pages.lock().remove(0))
    }

    async fn watch(&self, _: &WatchOptions) -> Result<WatchStream<JsonObject>, Error> {
        let events = self.events.lock().take().unwrap_or_default();
        let stream = futures::StreamExt::chain(
            futures::stream::iter(events.into_iter().map(Ok)),
            futures::stream::pending(),
        );
        Ok(Box::pin(stream))
    }
}

/// Counts operations and cancels the run once `target` is reached.
struct Counting {
    ops: AtomicUsize,
    target: usize,
    done: CancellationToken,
}

impl Counting {
    fn bump(&self, n: usize) -> Result<(), QueueError> {
        if self.ops.fetch_add(n, Ordering::Relaxed) + n >= self.target {
            self.done.cancel();
        }
        Ok(())
    }
}

#[async_trait]
impl Queue<JsonObject> for Counting {
    fn add(&self, obj: Arc<JsonObject>) -> Result<(), QueueError> {
        black_box(obj);
        self.bump(1)
    }
    fn update(&self, obj: Arc<JsonObject>) -> Result<(), QueueError> {
        black_box(obj);
        self.bump(1)
    }
    fn delete(&self, obj: Arc<JsonObject>) -> Result<(), QueueError> {
        black_box(obj);
        self.bump(1)
    }
    fn replace(&self, objects: Vec<Arc<JsonObject>>, _: &str) -> Result<(), QueueError> {
        black_box(objects);
        self.bump(1)
    }
    fn resync(&self) -> Result<(), QueueError> {
        Ok(())
    }
    async fn pop(&self, _: &mut ProcessFn<'_, JsonObject>) -> Result<(), QueueError> {
        Err(QueueError::Closed)
    }
    fn has_synced(&self) -> bool {
        true
    }
    fn len(&self) -> usize {
        0
    }
    fn close(&self) {}
    fn is_closed(&self) -> bool {
        false
    }
}

struct Known(HashMap<String, Arc<JsonObject>>);

impl KnownObjects<JsonObject> for Known {
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.0
            .keys()
            .map(|k| ObjectKey::from_raw(k.as_str()))
            .collect()
    }
    fn get_by_key(&self, key: &str) -> Option<Arc<JsonObject>> {
        self.0.get(key).cloned()
    }
}

fn run(
    runtime: &tokio::runtime::Runtime,
    lw: InMemory,
    target: usize,
    known: Option<Arc<dyn KnownObjects<JsonObject>>>,
) {
    let done = CancellationToken::new();
    let queue = Arc::new(Counting {
        ops: AtomicUsize::new(0),
        target,
        done: done.clone(),
    });
    let config = ReflectorConfig {
        seed: Some(1),
        transform: Some(Arc::new(|o: JsonObject| o)),
        list_watch: informer::reflector::ListWatchConfig {
            // Paginated lists then a watch: what the pages and events here are for (the
            // default streams the initial list since issue 10).
            watch_list: informer::reflector::WatchListMode::Off,
            ..informer::reflector::ListWatchConfig::default()
        },
        ..ReflectorConfig::default()
    };
    let reflector = Reflector::new(Arc::new(lw), queue, known, config);
    runtime.block_on(reflector.run(done));
}

fn pages(objects: usize, page_size: usize) -> Vec<ListPage<JsonObject>> {
    let mut pages = Vec::new();
    let mut start = 0;
    loop {
        let end = (start + page_size).min(objects);
        pages.push(ListPage {
            items: (start..end).map(|i| object(i, i + 1)).collect(),
            resource_version: objects.max(1).to_string(),
            continue_token: (end < objects).then(|| format!("page-{end}")),
            remaining_item_count: None,
        });
        if end >= objects {
            return pages;
        }
        start = end;
    }
}

fn benches(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();

    const EVENTS: usize = 100_000;
    let mut group = c.benchmark_group("watch_events");
    group.throughput(Throughput::Elements(EVENTS as u64));
    group.sample_size(20);
    group.bench_function("100k", |b| {
        b.iter_batched(
            || InMemory {
                pages: Mutex::new(pages(0, 500)),
                events: Mutex::new(Some(
                    (0..EVENTS)
                        .map(|i| WatchEvent::Modified(object(i % 1000, i + 2)))
                        .collect(),
                )),
            },
            // One replace, then every event.
            |lw| run(&runtime, lw, EVENTS + 1, None),
            BatchSize::PerIteration,
        );
    });
    group.finish();

    const OBJECTS: usize = 10_000;
    let stored: Arc<dyn KnownObjects<JsonObject>> = Arc::new(Known(
        (0..OBJECTS)
            .map(|i| {
                let o = object(i, i + 1);
                (informer_core::key_of(&o).unwrap().to_string(), Arc::new(o))
            })
            .collect(),
    ));
    let mut group = c.benchmark_group("relist_10k");
    group.throughput(Throughput::Elements(OBJECTS as u64));
    group.sample_size(20);
    for (name, known) in [("fresh", None), ("unchanged_shared", Some(stored))] {
        group.bench_function(name, |b| {
            b.iter_batched(
                || InMemory {
                    pages: Mutex::new(pages(OBJECTS, 500)),
                    events: Mutex::new(None),
                },
                |lw| run(&runtime, lw, 1, known.clone()),
                BatchSize::PerIteration,
            );
        });
    }
    group.finish();
}

criterion_group!(reflector, benches);
criterion_main!(reflector);
