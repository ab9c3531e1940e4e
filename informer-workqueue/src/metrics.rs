//! Work queue metrics: see the crate documentation's "Metrics" section.

use tokio::time::Instant;

/// A queue as the scrape-time collector sees it: how long the items being processed have
/// been at it. The queue implements it; metrics only hold it weakly.
#[cfg_attr(
    not(feature = "metrics"),
    allow(dead_code, reason = "only the metrics collector asks")
)]
pub(crate) trait UnfinishedWork: Send + Sync {
    /// (Sum of the ages of the items being processed, the oldest age), in seconds.
    fn unfinished_work(&self, now: Instant) -> (f64, f64);
}

#[cfg(feature = "metrics")]
pub use enabled::WorkQueueMetrics;
#[cfg(feature = "metrics")]
pub(crate) use enabled::{Recorder, RecorderSeed};

#[cfg(not(feature = "metrics"))]
pub(crate) use disabled::RecorderSeed;
#[cfg(not(feature = "metrics"))]
pub use disabled::WorkQueueMetrics;

#[cfg(not(feature = "metrics"))]
mod disabled {
    use std::convert::Infallible;
    use std::sync::Weak;

    use super::UnfinishedWork;

    /// Metric families to record work queues into. This build has no `metrics` feature, so no
    /// value of this type exists and `metrics: None` is the only setting.
    #[derive(Debug, Clone)]
    pub struct WorkQueueMetrics {
        never: Infallible,
    }

    /// Per-queue metric handles; none exist without the feature.
    pub(crate) enum RecorderSeed {}

    impl WorkQueueMetrics {
        pub(crate) fn recorder(&self, _name: &str) -> RecorderSeed {
            match self.never {}
        }

        pub(crate) fn track(&self, _name: &str, _queue: Weak<dyn UnfinishedWork>) {
            match self.never {}
        }
    }
}

#[cfg(feature = "metrics")]
mod enabled {
    use std::collections::{BTreeMap, HashMap};
    use std::fmt;
    use std::hash::Hash;
    use std::sync::{Arc, Weak};

    use parking_lot::Mutex;
    use prometheus_client::collector::Collector;
    use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
    use prometheus_client::metrics::MetricType;
    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::family::Family;
    use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
    use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
    use prometheus_client::registry::Registry;
    use tokio::time::Instant;

    use super::UnfinishedWork;

    /// The `name` label of every series.
    type NameLabel = [(&'static str, String); 1];

    fn name_label(name: &str) -> NameLabel {
        [("name", name.to_owned())]
    }

    /// client-go's duration buckets: 1e-8 s to 10 s, factor 10.
    fn duration_histogram() -> Histogram {
        Histogram::new(exponential_buckets(1e-8, 10.0, 10))
    }

    /// The work queue metric families, registered once into a registry and shared by any number
    /// of queues (each queue's series carry its `name`).
    ///
    /// Cloning is cheap: clones record into the same families.
    ///
    /// ```
    /// use informer_workqueue::{WorkQueue, WorkQueueConfig, WorkQueueMetrics};
    /// use prometheus_client::registry::Registry;
    ///
    /// let mut registry = Registry::default();
    /// let metrics = WorkQueueMetrics::register(&mut registry);
    /// let queue: WorkQueue<String> = WorkQueue::with_config(WorkQueueConfig {
    ///     name: "configmaps".into(),
    ///     metrics: Some(metrics),
    /// });
    /// queue.add("default/settings".to_string());
    ///
    /// let mut text = String::new();
    /// prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    /// assert!(text.contains(r#"workqueue_adds_total{name="configmaps"} 1"#));
    /// ```
    #[derive(Clone)]
    pub struct WorkQueueMetrics {
        families: Arc<Families>,
    }

    struct Families {
        depth: Family<NameLabel, Gauge>,
        adds: Family<NameLabel, Counter>,
        queue_duration: Family<NameLabel, Histogram>,
        work_duration: Family<NameLabel, Histogram>,
        retries: Family<NameLabel, Counter>,
        live: Arc<LiveQueues>,
    }

    impl fmt::Debug for WorkQueueMetrics {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("WorkQueueMetrics")
                .field("live_queues", &self.families.live.queues.lock().len())
                .finish_non_exhaustive()
        }
    }

    impl WorkQueueMetrics {
        /// Registers the work queue metric families into `registry` (its prefix, if any, comes
        /// before `workqueue_`). Call once per registry and pass clones to every queue.
        pub fn register(registry: &mut Registry) -> Self {
            let families = Families {
                depth: Family::default(),
                adds: Family::default(),
                queue_duration: Family::new_with_constructor(duration_histogram),
                work_duration: Family::new_with_constructor(duration_histogram),
                retries: Family::default(),
                live: Arc::new(LiveQueues::default()),
            };
            registry.register(
                "workqueue_depth",
                "Items in the work queue waiting to be processed",
                families.depth.clone(),
            );
            registry.register(
                "workqueue_adds",
                "Adds that made an item need processing",
                families.adds.clone(),
            );
            registry.register(
                "workqueue_queue_duration_seconds",
                "Seconds an item waited in the work queue before a worker took it",
                families.queue_duration.clone(),
            );
            registry.register(
                "workqueue_work_duration_seconds",
                "Seconds a worker spent on an item, from get to done",
                families.work_duration.clone(),
            );
            registry.register(
                "workqueue_retries",
                "Delayed or rate-limited re-adds",
                families.retries.clone(),
            );
            registry.register_collector(Box::new(UnfinishedWorkCollector {
                live: Arc::clone(&families.live),
            }));
            Self {
                families: Arc::new(families),
            }
        }

        /// The handles of one queue's series.
        pub(crate) fn recorder(&self, name: &str) -> RecorderSeed {
            let label = name_label(name);
            let f = &self.families;
            RecorderSeed {
                depth: f.depth.get_or_create_owned(&label),
                adds: f.adds.get_or_create_owned(&label),
                queue_duration: f.queue_duration.get_or_create_owned(&label),
                work_duration: f.work_duration.get_or_create_owned(&label),
                retries: f.retries.get_or_create_owned(&label),
            }
        }

        /// Makes the unfinished-work gauges report on `queue` while it lives.
        pub(crate) fn track(&self, name: &str, queue: Weak<dyn UnfinishedWork>) {
            let mut queues = self.families.live.queues.lock();
            queues.retain(|q| q.queue.strong_count() > 0);
            queues.push(LiveQueue {
                name: name.to_owned(),
                queue,
            });
        }
    }

    /// One queue's metric handles.
    pub(crate) struct RecorderSeed {
        depth: Gauge,
        adds: Counter,
        queue_duration: Histogram,
        work_duration: Histogram,
        retries: Counter,
    }

    /// One queue's metric handles plus the timestamps the durations need. Lives behind the
    /// queue's lock.
    pub(crate) struct Recorder<T> {
        seed: RecorderSeed,
        /// When each item needing processing was added (removed at `get`).
        added: HashMap<T, Instant>,
        /// When each item being processed was handed out (removed at `done`).
        started: HashMap<T, Instant>,
    }

    impl<T: Clone + Eq + Hash> Recorder<T> {
        pub(crate) fn new(seed: RecorderSeed) -> Self {
            Self {
                seed,
                added: HashMap::new(),
                started: HashMap::new(),
            }
        }

        /// `item` now needs processing (it was not dirty before); `at` is when it became due.
        pub(crate) fn add(&mut self, item: &T, at: Option<Instant>) {
            self.seed.adds.inc();
            self.seed.depth.inc();
            if !self.added.contains_key(item) {
                self.added
                    .insert(item.clone(), at.unwrap_or_else(Instant::now));
            }
        }

        /// `item` was handed to a worker.
        pub(crate) fn get(&mut self, item: &T) {
            let now = Instant::now();
            self.seed.depth.dec();
            if let Some(added) = self.added.remove(item) {
                self.seed
                    .queue_duration
                    .observe(now.saturating_duration_since(added).as_secs_f64());
            }
            self.started.insert(item.clone(), now);
        }

        /// A worker finished `item`.
        pub(crate) fn done(&mut self, item: &T) {
            if let Some(started) = self.started.remove(item) {
                self.seed.work_duration.observe(
                    Instant::now()
                        .saturating_duration_since(started)
                        .as_secs_f64(),
                );
            }
        }

        /// An `add_after` (or `add_rate_limited`) was accepted.
        pub(crate) fn retry(&self) {
            self.seed.retries.inc();
        }
    }

    impl<T> Recorder<T> {
        /// (Sum of the ages of the items being processed, the oldest age), in seconds.
        pub(crate) fn unfinished_work(&self, now: Instant) -> (f64, f64) {
            self.started
                .values()
                .fold((0.0, 0.0), |(total, longest), started| {
                    let age = now.saturating_duration_since(*started).as_secs_f64();
                    (total + age, f64::max(longest, age))
                })
        }
    }

    /// Queues the unfinished-work gauges report on.
    #[derive(Default)]
    struct LiveQueues {
        queues: Mutex<Vec<LiveQueue>>,
    }

    struct LiveQueue {
        name: String,
        queue: Weak<dyn UnfinishedWork>,
    }

    /// Computes `workqueue_unfinished_work_seconds` and
    /// `workqueue_longest_running_processor_seconds` at scrape time.
    struct UnfinishedWorkCollector {
        live: Arc<LiveQueues>,
    }

    impl fmt::Debug for UnfinishedWorkCollector {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("UnfinishedWorkCollector")
                .finish_non_exhaustive()
        }
    }

    impl Collector for UnfinishedWorkCollector {
        fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> fmt::Result {
            let now = Instant::now();
            // Queues sharing a name report as one series: summed work, the longest processor.
            let mut by_name: BTreeMap<String, (f64, f64)> = BTreeMap::new();
            {
                let mut queues = self.live.queues.lock();
                queues.retain(|live| {
                    let Some(queue) = live.queue.upgrade() else {
                        return false;
                    };
                    let (total, longest) = queue.unfinished_work(now);
                    let entry = by_name.entry(live.name.clone()).or_insert((0.0, 0.0));
                    entry.0 += total;
                    entry.1 = entry.1.max(longest);
                    true
                });
            }
            let series = [
                (
                    "workqueue_unfinished_work_seconds",
                    "Seconds spent so far on the items being processed now, summed; a \
                     steady climb means workers are stuck",
                    0,
                ),
                (
                    "workqueue_longest_running_processor_seconds",
                    "Seconds the oldest item being processed now has been in progress",
                    1,
                ),
            ];
            for (metric, help, column) in series {
                let mut family =
                    encoder.encode_descriptor(metric, help, None, MetricType::Gauge)?;
                for (name, values) in &by_name {
                    let value = if column == 0 { values.0 } else { values.1 };
                    let label = name_label(name);
                    ConstGauge::new(value).encode(family.encode_family(&label)?)?;
                }
            }
            Ok(())
        }
    }
}
