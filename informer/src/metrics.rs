//! Prometheus metrics of reflectors, informers and handlers (feature `metrics`): see the crate
//! documentation's [Observability](crate#observability) section for the series.
//!
//! [`InformerMetrics`] is the public handle: the metric families, registered once into a
//! `prometheus_client` registry. The runtime records through two crate-internal recorders, one
//! per reflector ([`ReflectorRecorder`]) and one per informer ([`InformerRecorder`]). Without the
//! feature both are empty types whose methods do nothing, and no value of `InformerMetrics`
//! can exist: no metric code, atomic or timestamp is compiled in.

#[cfg(feature = "metrics")]
pub use enabled::InformerMetrics;
#[cfg(feature = "metrics")]
pub(crate) use enabled::{InformerRecorder, ReflectorRecorder};

#[cfg(not(feature = "metrics"))]
pub use disabled::InformerMetrics;
#[cfg(not(feature = "metrics"))]
pub(crate) use disabled::{InformerRecorder, ReflectorRecorder};

#[cfg(not(feature = "metrics"))]
mod disabled {
    use std::convert::Infallible;
    use std::sync::Arc;
    use std::time::Duration;

    use informer_core::reflector::RestartReason;
    use informer_core::{Delta, Indexer, Object};

    use crate::incident::IncidentKind;
    use crate::registration::RegistrationShared;

    /// Metric families to record reflectors, informers and handlers into. This build has no
    /// `metrics` feature, so no value of this type exists and `metrics: None` is the only
    /// setting (configuration structs keep the same fields with and without the feature).
    #[derive(Debug, Clone)]
    pub struct InformerMetrics {
        never: Infallible,
    }

    /// Records nothing.
    #[derive(Debug, Default)]
    pub(crate) struct ReflectorRecorder;

    impl ReflectorRecorder {
        pub(crate) fn new(metrics: Option<&InformerMetrics>, _name: &str) -> Self {
            if let Some(metrics) = metrics {
                match metrics.never {}
            }
            Self
        }

        #[inline(always)]
        pub(crate) fn list_started(&self) {}

        #[inline(always)]
        pub(crate) fn list_completed(&self, _took: Duration, _items: usize) {}

        #[inline(always)]
        pub(crate) fn watch_started(&self, _streaming: bool) {}

        #[inline(always)]
        pub(crate) fn watch_ended(&self, _took: Duration, _events: u64) {}

        #[inline(always)]
        pub(crate) fn watch_restarted(&self, _reason: RestartReason) {}

        #[inline(always)]
        pub(crate) fn relisted(&self, _reason: &str) {}

        #[inline(always)]
        pub(crate) fn resource_version(&self, _resource_version: Option<&str>) {}
    }

    /// Records nothing.
    #[derive(Debug, Default)]
    pub(crate) struct InformerRecorder;

    impl InformerRecorder {
        pub(crate) fn new(metrics: Option<&InformerMetrics>, _informer: &str) -> Self {
            if let Some(metrics) = metrics {
                match metrics.never {}
            }
            Self
        }

        #[inline(always)]
        pub(crate) fn track_cache<K: Object>(&self, _indexer: &Arc<dyn Indexer<K>>) {}

        #[inline(always)]
        pub(crate) fn track_handler(&self, _shared: &Arc<RegistrationShared>) {}

        #[inline(always)]
        pub(crate) fn deltas<K>(&self, _deltas: &[Delta<K>]) {}

        #[inline(always)]
        pub(crate) fn incident(&self, _handler: &str, _kind: &IncidentKind) {}
    }
}

#[cfg(feature = "metrics")]
mod enabled {
    use std::collections::BTreeMap;
    use std::fmt;
    use std::sync::{Arc, Weak};
    use std::time::Duration;

    use informer_core::reflector::RestartReason;
    use informer_core::{Delta, DeltaType, Indexer, Object};
    use parking_lot::Mutex;
    use prometheus_client::collector::Collector;
    use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
    use prometheus_client::metrics::MetricType;
    use prometheus_client::metrics::counter::{ConstCounter, Counter};
    use prometheus_client::metrics::family::Family;
    use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
    use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
    use prometheus_client::registry::Registry;

    use crate::incident::IncidentKind;
    use crate::registration::{RegistrationShared, RegistrationStatus};

    /// `name="<reflector>"`, client-go's only reflector label.
    type NameLabel = [(&'static str, String); 1];
    /// `name`, `reason`.
    type ReasonLabels = [(&'static str, String); 2];
    /// `informer="<informer>"`.
    type InformerLabel = [(&'static str, String); 1];
    /// `informer`, `type`.
    type DeltaLabels = [(&'static str, String); 2];
    /// `informer`, `handler`.
    type HandlerLabels = [(&'static str, String); 2];

    /// List durations: 1 ms to 32 s, factor 2.
    fn list_duration_histogram() -> Histogram {
        Histogram::new(exponential_buckets(0.001, 2.0, 16))
    }

    /// Watch durations: 100 ms to about 14 minutes (watches last 5 to 10), factor 2.
    fn watch_duration_histogram() -> Histogram {
        Histogram::new(exponential_buckets(0.1, 2.0, 14))
    }

    /// Items per list or watch: 1 to 262,144, factor 4.
    fn items_histogram() -> Histogram {
        Histogram::new(exponential_buckets(1.0, 4.0, 10))
    }

    /// The metric families of reflectors, informers and handlers, registered once into a
    /// registry and shared by any number of informers (each one's series carry its name).
    ///
    /// Give a clone to [`InformerConfig::metrics`](crate::InformerConfig::metrics) (the
    /// informer's reflector records into it too), to
    /// [`FactoryConfig::metrics`](crate::FactoryConfig) for every informer of a factory, or to
    /// [`ReflectorConfig::metrics`](crate::reflector::ReflectorConfig::metrics) for a reflector
    /// used on its own. Cloning is cheap: clones record into the same families.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use informer::{InformerConfig, InformerMetrics, SharedIndexInformer, wait_for_cache_sync};
    /// use informer_testing::JsonObject;
    /// use fake_apiserver::FakeApiServer;
    /// use prometheus_client::registry::Registry;
    /// use tokio_util::sync::CancellationToken;
    ///
    /// let server = FakeApiServer::new();
    /// server.create("pods", &JsonObject::new(Some("prod"), "web-0")).unwrap();
    ///
    /// let mut registry = Registry::default();
    /// let metrics = InformerMetrics::register(&mut registry);
    /// let lister_watcher = Arc::new(server.lister_watcher::<JsonObject>("pods", None).unwrap());
    /// let informer = SharedIndexInformer::new(lister_watcher, InformerConfig {
    ///     name: "pods".into(),
    ///     metrics: Some(metrics),
    ///     ..InformerConfig::default()
    /// }).unwrap();
    /// let stop = CancellationToken::new();
    /// let run = informer.spawn(stop.clone());
    /// wait_for_cache_sync(Duration::from_secs(10), &[&informer]).await.unwrap();
    ///
    /// let mut text = String::new();
    /// prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    /// assert!(text.contains(r#"reflector_lists_total{name="pods"} 1"#));
    /// assert!(text.contains(r#"informer_objects{informer="pods"} 1"#));
    /// stop.cancel();
    /// run.await.unwrap().unwrap();
    /// # }
    /// ```
    #[derive(Clone)]
    pub struct InformerMetrics {
        families: Arc<Families>,
    }

    struct Families {
        lists: Family<NameLabel, Counter>,
        list_duration: Family<NameLabel, Histogram>,
        items_per_list: Family<NameLabel, Histogram>,
        watches: Family<NameLabel, Counter>,
        short_watches: Family<NameLabel, Counter>,
        watch_duration: Family<NameLabel, Histogram>,
        items_per_watch: Family<NameLabel, Histogram>,
        last_resource_version: Family<NameLabel, Gauge>,
        relists: Family<ReasonLabels, Counter>,
        watch_restarts: Family<ReasonLabels, Counter>,
        deltas: Family<DeltaLabels, Counter>,
        handler_panics: Family<HandlerLabels, Counter>,
        handler_overflows: Family<HandlerLabels, Counter>,
        handler_stuck: Family<HandlerLabels, Counter>,
        live: Arc<Live>,
    }

    impl fmt::Debug for InformerMetrics {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            let live = &self.families.live;
            f.debug_struct("InformerMetrics")
                .field("caches", &live.caches.lock().len())
                .field("handlers", &live.handlers.lock().len())
                .finish_non_exhaustive()
        }
    }

    impl InformerMetrics {
        /// Registers the reflector, informer and handler metric families into `registry` (its
        /// prefix, if any, comes before `reflector_` and `informer_`). Call once per registry
        /// and pass clones to every informer.
        pub fn register(registry: &mut Registry) -> Self {
            let families = Families {
                lists: Family::default(),
                list_duration: Family::new_with_constructor(list_duration_histogram),
                items_per_list: Family::new_with_constructor(items_histogram),
                watches: Family::default(),
                short_watches: Family::default(),
                watch_duration: Family::new_with_constructor(watch_duration_histogram),
                items_per_watch: Family::new_with_constructor(items_histogram),
                last_resource_version: Family::default(),
                relists: Family::default(),
                watch_restarts: Family::default(),
                deltas: Family::default(),
                handler_panics: Family::default(),
                handler_overflows: Family::default(),
                handler_stuck: Family::default(),
                live: Arc::new(Live::default()),
            };
            let r = registry;
            r.register(
                "reflector_lists",
                "Full lists started by the reflector (paginated or streaming)",
                families.lists.clone(),
            );
            r.register(
                "reflector_list_duration_seconds",
                "Seconds from the start of a full list to its replace (all pages)",
                families.list_duration.clone(),
            );
            r.register(
                "reflector_items_per_list",
                "Objects in each completed full list",
                families.items_per_list.clone(),
            );
            r.register(
                "reflector_watches",
                "Watch requests sent by the reflector (streaming lists included)",
                families.watches.clone(),
            );
            r.register(
                "reflector_short_watches",
                "Watches that ended in under a second having delivered nothing",
                families.short_watches.clone(),
            );
            r.register(
                "reflector_watch_duration_seconds",
                "Seconds each watch stayed open",
                families.watch_duration.clone(),
            );
            r.register(
                "reflector_items_per_watch",
                "Events (bookmarks included) received on each watch",
                families.items_per_watch.clone(),
            );
            r.register(
                "reflector_last_resource_version",
                "The last resourceVersion the reflector saw (when numeric)",
                families.last_resource_version.clone(),
            );
            r.register(
                "reflector_relists",
                "Relists after the first list, by the reason the watch could not go on",
                families.relists.clone(),
            );
            r.register(
                "reflector_watch_restarts",
                "Watch ends and failures, by reason",
                families.watch_restarts.clone(),
            );
            r.register(
                "informer_deltas",
                "Deltas popped from the queue and processed, by type",
                families.deltas.clone(),
            );
            r.register(
                "informer_handler_panics",
                "Notifications whose handling panicked",
                families.handler_panics.clone(),
            );
            r.register(
                "informer_handler_overflows",
                "Handlers disconnected because their buffer hit its bound",
                families.handler_overflows.clone(),
            );
            r.register(
                "informer_handler_stuck",
                "Handlers abandoned at shutdown with notifications undelivered",
                families.handler_stuck.clone(),
            );
            r.register_collector(Box::new(LiveCollector {
                live: Arc::clone(&families.live),
            }));
            Self {
                families: Arc::new(families),
            }
        }
    }

    // ----- Reflector -------------------------------------------------------------------

    /// One reflector's series; inactive (records nothing) without metrics.
    #[derive(Default)]
    pub(crate) struct ReflectorRecorder {
        series: Option<ReflectorSeries>,
    }

    struct ReflectorSeries {
        name: String,
        families: Arc<Families>,
        lists: Counter,
        list_duration: Histogram,
        items_per_list: Histogram,
        watches: Counter,
        short_watches: Counter,
        watch_duration: Histogram,
        items_per_watch: Histogram,
        last_resource_version: Gauge,
    }

    impl fmt::Debug for ReflectorRecorder {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("ReflectorRecorder")
                .field("name", &self.series.as_ref().map(|s| &s.name))
                .finish()
        }
    }

    impl ReflectorRecorder {
        pub(crate) fn new(metrics: Option<&InformerMetrics>, name: &str) -> Self {
            let Some(metrics) = metrics else {
                return Self::default();
            };
            let name = if name.is_empty() { "reflector" } else { name };
            let f = &metrics.families;
            let label = [("name", name.to_owned())];
            Self {
                series: Some(ReflectorSeries {
                    name: name.to_owned(),
                    families: Arc::clone(f),
                    lists: f.lists.get_or_create_owned(&label),
                    list_duration: f.list_duration.get_or_create_owned(&label),
                    items_per_list: f.items_per_list.get_or_create_owned(&label),
                    watches: f.watches.get_or_create_owned(&label),
                    short_watches: f.short_watches.get_or_create_owned(&label),
                    watch_duration: f.watch_duration.get_or_create_owned(&label),
                    items_per_watch: f.items_per_watch.get_or_create_owned(&label),
                    last_resource_version: f.last_resource_version.get_or_create_owned(&label),
                }),
            }
        }

        /// A full list (paginated) starts.
        pub(crate) fn list_started(&self) {
            if let Some(s) = &self.series {
                s.lists.inc();
            }
        }

        /// A full list (paginated or streaming) was handed to the queue.
        pub(crate) fn list_completed(&self, took: Duration, items: usize) {
            if let Some(s) = &self.series {
                s.list_duration.observe(took.as_secs_f64());
                s.items_per_list.observe(items as f64);
            }
        }

        /// A watch request is sent; a streaming one is also a list.
        pub(crate) fn watch_started(&self, streaming: bool) {
            if let Some(s) = &self.series {
                s.watches.inc();
                if streaming {
                    s.lists.inc();
                }
            }
        }

        /// An open watch ended (for whatever reason) after `took`, having delivered `events`.
        pub(crate) fn watch_ended(&self, took: Duration, events: u64) {
            if let Some(s) = &self.series {
                s.watch_duration.observe(took.as_secs_f64());
                s.items_per_watch.observe(events as f64);
            }
        }

        /// The state machine counted a watch restart.
        pub(crate) fn watch_restarted(&self, reason: RestartReason) {
            if let Some(s) = &self.series {
                if reason == RestartReason::TooShort {
                    s.short_watches.inc();
                }
                s.families
                    .watch_restarts
                    .get_or_create(&[
                        ("name", s.name.clone()),
                        ("reason", reason.as_str().to_owned()),
                    ])
                    .inc();
            }
        }

        /// The state machine decided a relist.
        pub(crate) fn relisted(&self, reason: &str) {
            if let Some(s) = &self.series {
                s.families
                    .relists
                    .get_or_create(&[("name", s.name.clone()), ("reason", reason.to_owned())])
                    .inc();
            }
        }

        /// The last seen resourceVersion, after a step of the state machine.
        pub(crate) fn resource_version(&self, resource_version: Option<&str>) {
            if let Some(s) = &self.series
                && let Some(rv) = resource_version.and_then(|rv| rv.parse::<i64>().ok())
            {
                s.last_resource_version.set(rv);
            }
        }
    }

    // ----- Informer and handlers -------------------------------------------------------

    /// One informer's series; inactive (records nothing) without metrics.
    #[derive(Default)]
    pub(crate) struct InformerRecorder {
        series: Option<InformerSeries>,
    }

    struct InformerSeries {
        informer: String,
        families: Arc<Families>,
        /// Indexed by [`delta_index`].
        deltas: [Counter; 5],
    }

    impl fmt::Debug for InformerRecorder {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("InformerRecorder")
                .field("informer", &self.series.as_ref().map(|s| &s.informer))
                .finish()
        }
    }

    const DELTA_TYPES: [&str; 5] = ["added", "updated", "deleted", "replaced", "sync"];

    fn delta_index(kind: DeltaType) -> usize {
        match kind {
            DeltaType::Added => 0,
            DeltaType::Updated => 1,
            DeltaType::Deleted => 2,
            DeltaType::Replaced => 3,
            DeltaType::Sync => 4,
        }
    }

    impl InformerRecorder {
        pub(crate) fn new(metrics: Option<&InformerMetrics>, informer: &str) -> Self {
            let Some(metrics) = metrics else {
                return Self::default();
            };
            let f = &metrics.families;
            let deltas = DELTA_TYPES.map(|kind| {
                f.deltas.get_or_create_owned(&[
                    ("informer", informer.to_owned()),
                    ("type", kind.to_owned()),
                ])
            });
            Self {
                series: Some(InformerSeries {
                    informer: informer.to_owned(),
                    families: Arc::clone(f),
                    deltas,
                }),
            }
        }

        /// Makes `informer_objects` report the size of `indexer` while it lives.
        pub(crate) fn track_cache<K: Object>(&self, indexer: &Arc<dyn Indexer<K>>) {
            if let Some(s) = &self.series {
                let weak = Arc::downgrade(indexer);
                let size: CacheSize = Box::new(move || weak.upgrade().map(|i| i.len()));
                let mut caches = s.families.live.caches.lock();
                caches.retain(|(_, size)| size().is_some());
                caches.push((s.informer.clone(), size));
            }
        }

        /// Makes the handler gauges report on a registration while it is active.
        pub(crate) fn track_handler(&self, shared: &Arc<RegistrationShared>) {
            if let Some(s) = &self.series {
                let mut handlers = s.families.live.handlers.lock();
                handlers.retain(|h| h.upgrade().is_some_and(|h| is_tracked(&h)));
                handlers.push(Arc::downgrade(shared));
            }
        }

        /// A batch popped from the queue.
        pub(crate) fn deltas<K>(&self, deltas: &[Delta<K>]) {
            if let Some(s) = &self.series {
                for delta in deltas {
                    s.deltas[delta_index(delta.kind)].inc();
                }
            }
        }

        /// A handler incident (already logged and counted in the informer's stats).
        pub(crate) fn incident(&self, handler: &str, kind: &IncidentKind) {
            if let Some(s) = &self.series {
                let family = match kind {
                    IncidentKind::Panicked { .. } => &s.families.handler_panics,
                    IncidentKind::Overflowed { .. } => &s.families.handler_overflows,
                    IncidentKind::StuckAtShutdown { .. } => &s.families.handler_stuck,
                };
                family
                    .get_or_create(&[
                        ("informer", s.informer.clone()),
                        ("handler", handler.to_owned()),
                    ])
                    .inc();
            }
        }
    }

    /// Whether a registration still has series: active, or stopped with its informer (its
    /// last values stay visible); removed and disconnected ones are dropped.
    fn is_tracked(shared: &RegistrationShared) -> bool {
        matches!(
            shared.status(),
            RegistrationStatus::Active | RegistrationStatus::Stopped
        )
    }

    /// The size of a cache, `None` once it is gone.
    type CacheSize = Box<dyn Fn() -> Option<usize> + Send + Sync>;

    /// What is read at scrape time.
    #[derive(Default)]
    struct Live {
        caches: Mutex<Vec<(String, CacheSize)>>,
        handlers: Mutex<Vec<Weak<RegistrationShared>>>,
    }

    /// Encodes `informer_objects`, `informer_handler_pending` and
    /// `informer_handler_notifications_total` from the live caches and registrations.
    struct LiveCollector {
        live: Arc<Live>,
    }

    impl fmt::Debug for LiveCollector {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("LiveCollector").finish_non_exhaustive()
        }
    }

    impl Collector for LiveCollector {
        fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> fmt::Result {
            // Informers (or handlers) sharing a name report as one series: their sum.
            let mut objects: BTreeMap<String, usize> = BTreeMap::new();
            {
                let mut caches = self.live.caches.lock();
                caches.retain(|(informer, size)| match size() {
                    Some(n) => {
                        *objects.entry(informer.clone()).or_default() += n;
                        true
                    }
                    None => false,
                });
            }
            let mut handlers: BTreeMap<(String, String), (usize, u64)> = BTreeMap::new();
            {
                let mut live = self.live.handlers.lock();
                live.retain(|weak| {
                    let Some(shared) = weak.upgrade().filter(|s| is_tracked(s)) else {
                        return false;
                    };
                    let entry = handlers
                        .entry((shared.informer.clone(), shared.name.clone()))
                        .or_default();
                    entry.0 += shared.pending.load(std::sync::atomic::Ordering::Acquire);
                    entry.1 += shared.delivered.load(std::sync::atomic::Ordering::Acquire);
                    true
                });
            }
            let mut family = encoder.encode_descriptor(
                "informer_objects",
                "Objects in the informer's cache",
                None,
                MetricType::Gauge,
            )?;
            for (informer, n) in &objects {
                let label: InformerLabel = [("informer", informer.clone())];
                ConstGauge::new(*n as i64).encode(family.encode_family(&label)?)?;
            }
            let mut family = encoder.encode_descriptor(
                "informer_handler_pending",
                "Notifications queued for the handler and not yet handled: its lag",
                None,
                MetricType::Gauge,
            )?;
            for ((informer, handler), (pending, _)) in &handlers {
                let label: HandlerLabels =
                    [("informer", informer.clone()), ("handler", handler.clone())];
                ConstGauge::new(*pending as i64).encode(family.encode_family(&label)?)?;
            }
            let mut family = encoder.encode_descriptor(
                "informer_handler_notifications",
                "Notifications the handler has handled",
                None,
                MetricType::Counter,
            )?;
            for ((informer, handler), (_, delivered)) in &handlers {
                let label: HandlerLabels =
                    [("informer", informer.clone()), ("handler", handler.clone())];
                ConstCounter::new(*delivered).encode(family.encode_family(&label)?)?;
            }
            Ok(())
        }
    }
}
