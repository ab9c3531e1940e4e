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
//! Against the in-process fake API server of `informer-testing`; with a cluster, the
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
//! use informer_testing::fake::FakeApiServer;
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
//! - A delta the cache refuses (or whose key or index function panics) is logged, counted
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
//! # Feature flags
//!
//! None. The object type is yours: anything implementing [`Object`] (with `informer-core`'s
//! `kube` feature, every `kube` resource type).

mod cache;
mod config;
mod error;
mod factory;
mod handler;
mod listener;
mod metrics;
mod observability;
mod process;
mod processor;
pub mod reflector;
mod registration;
mod shared_informer;
mod stream;
mod sync;

pub use cache::{CacheReader, Lister, NamespacedLister};
pub use config::{
    Delivery, HandlerOptions, Incident, IncidentHook, IncidentKind, InformerConfig, QueueChoice,
    UidChange,
};
pub use error::{CacheSyncError, FactoryError, InformerError};
pub use factory::{
    FactoryConfig, FactoryShutdownReport, InformerFactory, InformerSpec, ListerWatcherProvider,
    ProviderError,
};
pub use handler::{ClosureHandler, handler};
pub use metrics::InformerMetrics;
pub use processor::{ShutdownReport, StuckHandler};
pub use registration::{Registration, RegistrationId, RegistrationStats, RegistrationStatus};
pub use shared_informer::{InformerStats, SharedIndexInformer};
pub use stream::EventStream;
pub use sync::{SyncSource, wait_for_cache_sync};

// What users need from the foundation crates, each under its one name.
pub use informer_core::selector::{FieldSelector, LabelSelector, SelectorError};
pub use informer_core::{
    Bookmark, Delta, DeltaType, Error, ErrorClass, IndexFunc, Indexer, Indexers, KeyError, KeyFunc,
    KnownObjects, ListOptions, ListPage, ListerWatcher, NAMESPACE_INDEX, Notification, Object,
    ObjectKey, ObjectOrTombstone, ProcessError, Queue, QueueError, ResourceEventHandler, Status,
    Store, StoreError, Tombstone, WatchEvent, WatchOptions, WatchStream, key_of, label_index_func,
    labels_index_func, namespace_index_func,
};
pub use informer_fifo::{DeltaFifo, DeltaFifoConfig, InOrderFifo, InOrderFifoConfig};
pub use informer_store::IndexedStore;
