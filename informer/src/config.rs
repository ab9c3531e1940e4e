//! How to build a [`SharedIndexInformer`](crate::SharedIndexInformer) and how to register a
//! handler: [`InformerConfig`], [`QueueChoice`], [`UidChange`], [`HandlerOptions`],
//! [`Delivery`]. (What misbehaving handlers cause is in `incident.rs`.)

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::num::NonZeroUsize;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::Mutex;

use informer_core::reflector::ListWatchConfig;
use informer_core::{Indexer, Indexers, KeyFunc, KnownObjects, Object, Queue, UidChange, key_of};
use informer_fifo::DEFAULT_MAX_BATCH_SIZE;
#[cfg(doc)]
use informer_fifo::InOrderFifoConfig;

use crate::incident::IncidentHook;
use crate::metrics::InformerMetrics;
use crate::reflector::{Transform, WatchErrorHandler};
use crate::store_choice::StoreChoice;

/// The configuration of a [`SharedIndexInformer`](crate::SharedIndexInformer). Start from
/// `Default`; the `ListerWatcher` is the one thing without a default and is given to
/// [`SharedIndexInformer::new`](crate::SharedIndexInformer::new). Every setting has one owner
/// and one place: nothing here is overridden by the informer.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use informer::reflector::WatchListMode;
/// use informer::{InformerConfig, QueueChoice, UidChange, label_index_func};
/// use informer_testing::JsonObject;
///
/// let mut config = InformerConfig::<JsonObject> {
///     name: "configmaps".into(),
///     resync_period: Some(Duration::from_secs(600)),
///     indexers: [("app".to_owned(), label_index_func("app"))].into(),
///     transform: Some(Arc::new(|mut obj: JsonObject| {
///         obj.metadata.other.remove("managedFields");
///         obj
///     })),
///     queue: QueueChoice::in_order(),
///     uid_change: UidChange::DeleteAndAdd,
///     ..InformerConfig::default()
/// };
/// config.list_watch.watch_list = WatchListMode::Off;
/// config.list_watch.label_selector = Some("app".into());
/// assert_eq!(config.shutdown_timeout, Duration::from_secs(30));
/// ```
pub struct InformerConfig<K> {
    /// A name for logs, errors, sync reports and the reflector. Default empty (shown as
    /// `"informer"`).
    pub name: String,
    /// The resync period of handlers that do not choose their own
    /// ([`HandlerOptions::resync_period`]), and the initial resync check period. `None` (the
    /// default) or zero: no resync. See [`SharedIndexInformer`](crate::SharedIndexInformer)
    /// for the rules.
    pub resync_period: Option<Duration>,
    /// Index functions of the indexer, besides the built-in namespace index of the default
    /// indexer. Given to [`Indexer::add_indexers`] when the informer is built.
    pub indexers: Indexers<K>,
    /// Applied to every object right after it is decoded, before it is shared, queued,
    /// stored or told to anyone (for example to drop `metadata.managedFields`): the one
    /// transform of the informer. It must keep the name, namespace, UID and resourceVersion.
    pub transform: Option<Transform<K>>,
    /// The queue between reflector and processing loop. Default [`QueueChoice::DeltaFifo`].
    pub queue: QueueChoice<K>,
    /// A cache built by you. `None` (the default): the informer builds the one
    /// [`store`](Self::store) names. A custom indexer is moved into the informer, which is
    /// then its only writer; it must use the same key function. Read it through
    /// [`SharedIndexInformer::lister`](crate::SharedIndexInformer::lister). Setting both this
    /// and a `store` other than [`StoreChoice::Indexed`] is refused
    /// ([`InformerError::StoreConflict`](crate::InformerError::StoreConflict)).
    pub indexer: Option<Box<dyn Indexer<K>>>,
    /// Which cache the informer builds (unless [`indexer`](Self::indexer) hands it one):
    /// [`StoreChoice::Indexed`] (the default, objects held as `Arc<K>`),
    /// [`StoreChoice::compact`] (feature `compact`: objects kept encoded, decoded on access),
    /// or your own. It is keyed with [`key_func`](Self::key_func) and holds the namespace index
    /// and [`indexers`](Self::indexers).
    pub store: StoreChoice<K>,
    /// The key function of the queue, the indexer and the reflector. Default [`key_of`]
    /// (`namespace/name`); with the default, relists skip decoding the objects the cache
    /// holds unchanged (their keys and versions are read from the listed text first).
    pub key_func: KeyFunc<K>,
    /// How the reflector lists and watches: page size, streaming lists, selectors, watch
    /// timeouts, backoff, list limits. Defaults as client-go's.
    pub list_watch: ListWatchConfig,
    /// Told about every failure of the reflector (see
    /// [`ReflectorConfig::watch_error_handler`](crate::reflector::ReflectorConfig::watch_error_handler)).
    pub watch_error_handler: Option<WatchErrorHandler>,
    /// Seeds the reflector's random numbers (watch timeouts, backoff jitter); `None` seeds
    /// from the OS.
    pub seed: Option<u64>,
    /// What handlers hear when an object is replaced by a namesake with another UID.
    /// Default [`UidChange::DeleteAndAdd`].
    pub uid_change: UidChange,
    /// How long shutdown waits for handlers to drain their buffers before it reports the
    /// ones still busy and returns. Default 30 s.
    pub shutdown_timeout: Duration,
    /// Told about every [`Incident`](crate::Incident).
    pub on_incident: Option<IncidentHook>,
    /// Where to record the `informer_*` metrics of this informer and its handlers, and the
    /// `reflector_*` metrics of its reflector; `None` (the default) records none. Values
    /// exist only with the `metrics` feature.
    pub metrics: Option<InformerMetrics>,
}

impl<K: Object> Default for InformerConfig<K> {
    fn default() -> Self {
        Self {
            name: String::new(),
            resync_period: None,
            indexers: Indexers::new(),
            transform: None,
            queue: QueueChoice::DeltaFifo,
            indexer: None,
            store: StoreChoice::Indexed,
            key_func: default_key_func(),
            list_watch: ListWatchConfig::default(),
            watch_error_handler: None,
            seed: None,
            uid_change: UidChange::DeleteAndAdd,
            shutdown_timeout: Duration::from_secs(30),
            on_incident: None,
            metrics: None,
        }
    }
}

impl<K> fmt::Debug for InformerConfig<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut indexers: Vec<&String> = self.indexers.keys().collect();
        indexers.sort();
        f.debug_struct("InformerConfig")
            .field("name", &self.name)
            .field("resync_period", &self.resync_period)
            .field("indexers", &indexers)
            .field("transform", &self.transform.is_some())
            .field("queue", &self.queue)
            .field("indexer", &self.indexer.is_some())
            .field("store", &self.store)
            .field("list_watch", &self.list_watch)
            .field("watch_error_handler", &self.watch_error_handler.is_some())
            .field("seed", &self.seed)
            .field("uid_change", &self.uid_change)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .field("on_incident", &self.on_incident.is_some())
            .field("metrics", &self.metrics.is_some())
            .finish_non_exhaustive()
    }
}

/// The default key function of `K` ([`key_of`]): one `Arc` per object type, shared by every
/// default configuration, so that the informer can tell whether its configuration kept it
/// (its keys are then `namespace/name`, which the reflector can read from a list item's
/// metadata before decoding it).
pub(crate) fn default_key_func<K: Object>() -> KeyFunc<K> {
    type Registry = Mutex<HashMap<TypeId, Box<dyn Any + Send + Sync>>>;
    static FUNCS: OnceLock<Registry> = OnceLock::new();
    let mut funcs = FUNCS.get_or_init(Registry::default).lock();
    let func = funcs
        .entry(TypeId::of::<K>())
        .or_insert_with(|| Box::new(Arc::new(|obj: &K| key_of(obj)) as KeyFunc<K>));
    match func.downcast_ref::<KeyFunc<K>>() {
        Some(func) => Arc::clone(func),
        // The entry under `K`'s type id was made for `K` just above: not reached.
        None => Arc::new(|obj: &K| key_of(obj)),
    }
}

/// Builds a custom queue from what the informer wires it to: its key function and its
/// indexer as the queue's known objects.
pub type QueueBuilder<K> = Box<dyn FnOnce(QueueWiring<K>) -> Arc<dyn Queue<K>> + Send>;

/// What a custom queue must be built with (see [`QueueChoice::Custom`]).
#[non_exhaustive]
pub struct QueueWiring<K> {
    /// The informer's key function: the queue must key objects with it.
    pub key_func: KeyFunc<K>,
    /// The informer's indexer, read-only: the queue's known objects (relists queue tombstones
    /// for its keys missing from a list, resyncs re-queue its objects).
    pub known_objects: Arc<dyn KnownObjects<K>>,
}

/// Which queue sits between the reflector and the processing loop.
#[non_exhaustive]
pub enum QueueChoice<K> {
    /// `informer_fifo::DeltaFifo`: deltas grouped per key (client-go's `DeltaFIFO`).
    DeltaFifo,
    /// `informer_fifo::InOrderFifo`: every delta in arrival order, popped in batches (client-go's
    /// `RealFIFO`), at most `max_batch_size` single deltas per batch.
    InOrder {
        /// See [`InOrderFifoConfig::max_batch_size`].
        max_batch_size: NonZeroUsize,
    },
    /// A queue of your own, built by the informer with its key function and indexer (so it
    /// cannot be wired to another store); the informer closes it when it stops.
    Custom(QueueBuilder<K>),
}

impl<K> QueueChoice<K> {
    /// [`QueueChoice::InOrder`] with the default batch size.
    pub fn in_order() -> Self {
        Self::InOrder {
            max_batch_size: DEFAULT_MAX_BATCH_SIZE,
        }
    }
}

impl<K> fmt::Debug for QueueChoice<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DeltaFifo => f.write_str("DeltaFifo"),
            Self::InOrder { max_batch_size } => f
                .debug_struct("InOrder")
                .field("max_batch_size", max_batch_size)
                .finish(),
            Self::Custom(_) => f.write_str("Custom"),
        }
    }
}

/// How a handler registration is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Delivery {
    /// On a tokio task of the informer's runtime (the default). The handler must not block the
    /// thread for long (hand slow work to a work queue); an `async` consumer should use an
    /// [`EventStream`](crate::EventStream) instead.
    #[default]
    Task,
    /// On a dedicated OS thread: for handlers that may block (synchronous IO, locks held by
    /// others). A blocked handler then never holds up a runtime worker.
    Thread,
}

/// Options of one handler registration. Start from `Default`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HandlerOptions {
    /// A name for logs, incidents and sync reports. Default: `handler-<id>`.
    pub name: Option<String>,
    /// This handler's resync period: `None` uses the informer's
    /// [`resync_period`](InformerConfig::resync_period); `Some(Duration::ZERO)` never resyncs.
    pub resync_period: Option<Duration>,
    /// At most this many live notifications may wait in the handler's buffer. `None` (the
    /// default): unbounded, as upstream. When a notification would exceed the bound, the
    /// registration is **disconnected**: its buffer is dropped, it receives nothing more,
    /// its [`has_synced`](crate::Registration::has_synced) turns false, and an
    /// [`Incident`](crate::Incident) of kind [`IncidentKind::Overflowed`](crate::IncidentKind::Overflowed) is reported. Other handlers and the
    /// processing loop never wait for it. Re-add the handler to resume: it then gets the
    /// whole cache again as initial-list adds. The replay of the cache to a handler added
    /// to a running informer does not count against the bound.
    pub buffer_limit: Option<NonZeroUsize>,
    /// Where the handler runs. Default [`Delivery::Task`]. Streams ignore it.
    pub delivery: Delivery,
}

impl HandlerOptions {
    /// Options with just a name.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: Some(name.into()),
            ..Self::default()
        }
    }
}
