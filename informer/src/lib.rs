//! Kubernetes informers for Rust: a local cache kept equal to the API server through
//! disconnects, compactions and relists, and every change told to any number of handlers.
//!
//! This is the crate to import. It holds the runtime ([`reflector`], [`SharedIndexInformer`],
//! handlers and streams, [`InformerFactory`], listers) and re-exports what users need from
//! `informer-core` (object and event types, traits, selectors), `informer-store`
//! ([`IndexedStore`]) and `informer-fifo` ([`DeltaFifo`], [`InOrderFifo`]).
//!
//! # Quick start
//!
//! Against the in-process fake API server of the `fake-apiserver` crate; with a cluster, the
//! `ListerWatcher` comes from `informer-kube` instead.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
//! use std::sync::Arc;
//! use std::time::Duration;
//! use futures::StreamExt;
//! use informer::{
//!     InformerConfig, LabelSelector, Notification, SharedIndexInformer, handler,
//!     label_index_func, wait_for_cache_sync,
//! };
//! use informer_testing::JsonObject;
//! use fake_apiserver::FakeApiServer;
//! use tokio_util::sync::CancellationToken;
//!
//! // A server with one pod.
//! let server = FakeApiServer::new();
//! server.create("pods", &JsonObject::new(Some("prod"), "web-0").with_label("app", "web")).unwrap();
//!
//! // An informer over all pods, with an index on the `app` label.
//! let lister_watcher = Arc::new(server.lister_watcher::<JsonObject>("pods", None).unwrap());
//! let informer = SharedIndexInformer::new(lister_watcher, InformerConfig {
//!     name: "pods".into(),
//!     indexers: [("app".to_owned(), label_index_func("app"))].into(),
//!     ..InformerConfig::default()
//! }).unwrap();
//!
//! // A handler made of closures (it runs on its own task)...
//! let registration = informer.add_handler(
//!     handler()
//!         .on_add(|pod: &Arc<JsonObject>, initial| println!("add {:?} (initial: {initial})", pod.metadata.name))
//!         .on_delete(|pod| println!("delete {:?}", pod.key())),
//! ).unwrap();
//! // ...and an async stream of the same notifications.
//! let mut events = informer.stream().unwrap();
//!
//! // Run until cancelled; wait for the cache and the handler to have the initial list.
//! let stop = CancellationToken::new();
//! let run = informer.spawn(stop.clone());
//! wait_for_cache_sync(Duration::from_secs(10), &[&informer, &registration]).await.unwrap();
//!
//! // Listers read the cache: no request, no copy.
//! let lister = informer.lister();
//! assert_eq!(lister.list(&LabelSelector::parse("app=web").unwrap()).len(), 1);
//! assert!(lister.namespaced("prod").get("web-0").is_some());
//! assert_eq!(lister.by_index("app", "web").unwrap().len(), 1);
//!
//! // Changes on the server reach every consumer.
//! assert!(matches!(events.next().await, Some(Notification::Add { is_in_initial_list: true, .. })));
//! server.create("pods", &JsonObject::new(Some("prod"), "web-1").with_label("app", "web")).unwrap();
//! match events.next().await {
//!     Some(Notification::Add { object, is_in_initial_list }) => {
//!         assert_eq!(object.metadata.name.as_deref(), Some("web-1"));
//!         assert!(!is_in_initial_list);
//!     }
//!     other => panic!("unexpected {other:?}"),
//! }
//!
//! // Shut down: handlers drain their buffers (within a bound) and the report says so.
//! stop.cancel();
//! let report = run.await.unwrap().unwrap();
//! assert!(report.stuck.is_empty());
//! # }
//! ```
//!
//! # Processing rules
//!
//! The informer's processing loop pops batches of deltas from the queue and, for each delta,
//! under the distribution lock (so that a handler added meanwhile sees each change exactly
//! once):
//!
//! - `Added`, `Updated`, `Replaced`, `Sync`: if the cache holds the key, the cache is updated
//!   and handlers get `on_update(old, new)`; otherwise the object is added and handlers get
//!   `on_add(new, is_in_initial_list)` (true while the queue has not synced: the first list).
//! - An update whose old and new resourceVersions are equal (a resync, or a relist that saw no
//!   change) goes only to handlers whose own resync period is due.
//! - **UID change** (ours): when the cached object and the incoming one have different UIDs,
//!   the object was deleted and re-created under the same name while the watch was down.
//!   Handlers get `on_delete` with a tombstone of the old object, then `on_add(new)`.
//!   [`UidChange::Update`] restores client-go's `on_update(old, new)`.
//! - `Deleted`: the cache drops the key and handlers get `on_delete` with the final object,
//!   or a [`Tombstone`] when the deletion was noticed only by a relist. A deletion of a key
//!   the cache does not hold is not delivered.
//! - A delta the cache refuses (or whose key or index function panics), and a listed object
//!   kept as text that the store cannot decode, is logged, counted
//!   ([`InformerStats::apply_errors`]) and skipped; errors never stop the loop.
//!
//! # Handlers
//!
//! Every registration (a [`ResourceEventHandler`], a [`ClosureHandler`] from [`handler`], or
//! an [`EventStream`]) has its own buffer and its own task ([`Delivery::Thread`] for handlers
//! that may block): a slow or stuck handler delays only itself. Its lag is
//! [`Registration::pending`]. Buffers are unbounded by default, as upstream; with
//! [`HandlerOptions::buffer_limit`] a handler that falls that far behind is disconnected and
//! reported (an [`Incident`]) instead of growing memory without end or holding up the others.
//! A panic in a handler is caught, reported, and the handler keeps receiving notifications.
//!
//! # Observability
//!
//! ## Tracing
//!
//! The runtime logs with `tracing`. Events name their informer (`informer` field) or reflector
//! (`reflector` field; an informer's reflector has the informer's name); handler events also
//! carry `handler` and `registration`. Lifecycle at `INFO`, per-request detail at `DEBUG`,
//! trouble at `WARN` (a routine 410 at `INFO`), handler incidents at `ERROR`:
//!
//! | target | level | message | fields |
//! |---|---|---|---|
//! | `informer::reflector` | DEBUG | `reflector starting`, `reflector stopped` | |
//! | | DEBUG | `listing` (a full list starts) | `resource_version`, `limit` |
//! | | DEBUG | `list replaced` (the list is in the queue) | `count`, `resource_version`, `took` |
//! | | INFO | `synced: the first full list is in the queue` | `count`, `resource_version` |
//! | | DEBUG | `watch started`, `watch closed` | `resource_version`, `streaming`; `events`, `took` |
//! | | DEBUG | `watch ended; watching again…`, `watch restarts` | `reason` |
//! | | INFO | `relisting` | `reason` |
//! | | DEBUG | `backing off` | `delay`, `then` |
//! | | WARN (INFO for 410) | each failure: the error and its causes | `stage`, `class`, `then`, `delay` |
//! | `informer::shared_informer` | DEBUG | `informer starting`, `informer shutting down: draining handlers` | `resync_check_period` |
//! | | INFO | `informer synced: the first list is in the cache` | `cached` |
//! | | INFO | `informer stopped` | `drained`, `streams`, `stuck` |
//! | `informer::processor` | DEBUG | `handler registered`, `handler removed` | `replayed`, `resync_period`, `stream`; `dropped` |
//! | `informer::listener` | WARN | `handler falls behind` (its live lag reached 1024 notifications, then at every doubling) | `lag` |
//! | | ERROR | a handler panicked, overflowed its bound, or was abandoned at shutdown | `notification`; `limit`, `dropped`; `pending` |
//! | `informer::process` | WARN | `cannot apply delta to the cache; skipped` | `kind`, `object`, `error` |
//!
//! A `reason` is a [`RestartReason`](reflector::RestartReason) name (`expired`, `transport`,
//! `too_short`...), or `restart` for the relist of a reflector run again after a stop.
//! Spans (`DEBUG`): `list` and `watch` (field `reflector`) around each list page and each
//! watch; `handler` (fields `informer`, `handler`) around every handler's delivery loop, so
//! whatever a handler logs says which informer and handler it runs for.
//!
//! ## Metrics
//!
//! With the `metrics` feature, `InformerMetrics::register` adds these families to a
//! `prometheus_client` registry; give the value to [`InformerConfig::metrics`] (or
//! [`FactoryConfig`]'s `metrics`, or a bare reflector's
//! [`ReflectorConfig::metrics`](reflector::ReflectorConfig::metrics)). The `reflector_*`
//! names are client-go's (labelled `name`, as there); the `informer_*` ones are ours.
//!
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `reflector_lists_total` | counter | `name` | full lists started (a streaming list counts as one) |
//! | `reflector_list_duration_seconds` | histogram | `name` | from the start of a full list to its replace, all pages |
//! | `reflector_items_per_list` | histogram | `name` | objects in each completed full list |
//! | `reflector_watches_total` | counter | `name` | watch requests sent (streaming lists included) |
//! | `reflector_short_watches_total` | counter | `name` | watches that ended in under 1 s having delivered nothing |
//! | `reflector_watch_duration_seconds` | histogram | `name` | how long each opened watch stayed open |
//! | `reflector_items_per_watch` | histogram | `name` | events (bookmarks included) each watch delivered |
//! | `reflector_last_resource_version` | gauge | `name` | the last resourceVersion seen (when numeric) |
//! | `reflector_relists_total` | counter | `name`, `reason` | relists after the first list, by reason |
//! | `reflector_watch_restarts_total` | counter | `name`, `reason` | watch ends and failures, by reason |
//! | `informer_objects` | gauge | `informer` | objects in the cache |
//! | `informer_deltas_total` | counter | `informer`, `type` | deltas processed, by type (`added`, `updated`, `deleted`, `replaced`, `sync`) |
//! | `informer_handler_pending` | gauge | `informer`, `handler` | notifications queued for the handler and not yet handled: its lag |
//! | `informer_handler_notifications_total` | counter | `informer`, `handler` | notifications handled |
//! | `informer_handler_panics_total` | counter | `informer`, `handler` | notifications whose handling panicked |
//! | `informer_handler_overflows_total` | counter | `informer`, `handler` | disconnections of a handler whose buffer hit its bound |
//! | `informer_handler_stuck_total` | counter | `informer`, `handler` | handlers abandoned at shutdown |
//!
//! Differences from client-go: its reflector durations and sizes were summaries;
//! `prometheus-client` has none, so these are histograms (lists 1 ms to 33 s, watches 0.1 s to
//! 14 min, sizes 1 to 262,144 by powers of 4). Its `last_resource_version` was a gauge per
//! reflector; here it is one family. **Ours:** `informer_objects` and the handler gauges
//! are read at scrape time from the live caches and registrations (exact, no bookkeeping; a
//! dropped informer's or removed handler's series disappear); the counters are recorded as
//! things happen. Durations use tokio's clock (virtual in paused tests).
//!
//! # Features
//!
//! - `metrics` (off by default): records the series above through `prometheus-client`. When
//!   off, no metric code is compiled, nothing is counted or timed for metrics, and
//!   [`InformerMetrics`] cannot be constructed; the configuration structs keep their
//!   `metrics` fields (always `None`), so turning the feature on never breaks a build.
//! - `compact` (off by default): [`StoreChoice::compact`] and [`StoreKind::Compact`], an
//!   informer whose cache keeps every object encoded (informer-store's `CompactStore`, whose
//!   types are re-exported here) and decodes it on access: memory follows the objects' size
//!   on the wire. Pulls in the zstd C library. It adds items and changes no default.
//!
//! The object type is yours: anything implementing [`Object`] (with `informer-core`'s `kube`
//! feature, every `kube` resource type). The work queue's metrics are the `metrics` feature
//! of `informer-workqueue`.

mod cache;
mod config;
mod error;
mod factory;
mod handler;
mod incident;
mod lifecycle;
mod listener;
mod metrics;
mod observability;
mod process;
mod processor;
pub mod reflector;
mod registration;
mod shared_informer;
mod store_choice;
mod stream;
mod sync;

pub use cache::{Lister, NamespacedLister};
pub use config::{
    Delivery, HandlerOptions, InformerConfig, QueueBuilder, QueueChoice, QueueWiring,
};
pub use error::{CacheSyncError, FactoryError, InformerError};
pub use factory::{
    FactoryConfig, FactoryShutdownReport, InformerFactory, InformerSpec, ListerWatcherProvider,
    ProviderError,
};
pub use handler::{ClosureHandler, handler};
pub use incident::{Incident, IncidentHook, IncidentKind};
pub use lifecycle::FactoryLifecycle;
pub use metrics::InformerMetrics;
pub use processor::{ShutdownReport, StuckHandler};
pub use registration::{Registration, RegistrationId, RegistrationStats, RegistrationStatus};
pub use shared_informer::{InformerStats, SharedIndexInformer};
#[cfg(feature = "compact")]
pub use store_choice::{CompactChoice, CompactOptions};
pub use store_choice::{StoreBuilder, StoreChoice, StoreKind, StoreWiring};
pub use stream::EventStream;
pub use sync::{SyncSource, wait_for_cache_sync};

// What users need from the foundation crates, each under its one name.
pub use informer_core::selector::{FieldSelector, LabelSelector, SelectorError};
/// Shard selectors (server-side sharded list and watch): `informer_core::shard`, for
/// [`SharedIndexInformer::set_shard_selector`] and `ListWatchConfig::shard_selector`.
pub use informer_core::shard;
pub use informer_core::{
    Bookmark, Delta, DeltaType, Error, ErrorClass, IndexFunc, Indexer, Indexers, ItemPeek,
    KeyError, KeyFunc, KnownObjects, Limit, ListOptions, ListPage, ListPageInfo, ListSink, Listed,
    ListerWatcher, NAMESPACE_INDEX, Notification, Object, ObjectKey, ObjectOrTombstone, OwnerRef,
    ProcessError, Queue, QueueError, RawObject, RawWatchEvent, RawWatchStream,
    ResourceEventHandler, Status, Store, StoreError, Tombstone, UidChange, WatchEvent,
    WatchOptions, WatchStream, controller_uid_index_func, index_fn, indexers, key_of,
    label_index_func, labels_index_func, namespace_index_func, owner_uid_index_func,
};
pub use informer_fifo::{DeltaFifo, DeltaFifoConfig, InOrderFifo, InOrderFifoConfig};
pub use informer_store::IndexedStore;
#[cfg(feature = "compact")]
pub use informer_store::{
    Codec, CompactError, CompactStats, CompactStore, CompactStoreBuilder, DictionaryState,
    RoundTripCheck, ZstdDictionary,
};
