//! How to build a [`SharedIndexInformer`](crate::SharedIndexInformer) and how to register a
//! handler: [`InformerConfig`], [`QueueChoice`], [`UidChange`], [`HandlerOptions`],
//! [`Delivery`], and the [`Incident`] reports of misbehaving handlers.

use std::fmt;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use informer_core::{Indexer, Indexers, KeyFunc, Object, Queue, key_of};
use informer_fifo::InOrderFifoConfig;

use crate::metrics::InformerMetrics;
use crate::reflector::{ReflectorConfig, Transform};
use crate::registration::RegistrationId;

/// Called with every [`Incident`]: a handler panicked, overflowed its buffer, or was still busy
/// when shutdown's bound ran out. Incidents are logged with `tracing` either way.
pub type IncidentHook = Arc<dyn Fn(&Incident) + Send + Sync>;

/// The configuration of a [`SharedIndexInformer`](crate::SharedIndexInformer). Start from
/// `Default`; the `ListerWatcher` is the one thing without a default and is given to
/// [`SharedIndexInformer::new`](crate::SharedIndexInformer::new).
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use informer::{InformerConfig, QueueChoice, UidChange, label_index_func};
/// use informer_testing::JsonObject;
///
/// let config = InformerConfig::<JsonObject> {
///     name: "configmaps".into(),
///     resync_period: Some(Duration::from_secs(600)),
///     indexers: [("app".to_owned(), label_index_func("app"))].into(),
///     transform: Some(Arc::new(|mut obj: JsonObject| {
///         obj.metadata.other.remove("managedFields");
///         obj
///     })),
///     queue: QueueChoice::InOrder(Default::default()),
///     uid_change: UidChange::DeleteAndAdd,
///     ..InformerConfig::default()
/// };
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
    /// Applied to every object before it is queued and stored (for example to drop
    /// `metadata.managedFields`). It must keep the name, namespace, UID and resourceVersion.
    /// When set it replaces [`ReflectorConfig::transform`].
    pub transform: Option<Transform<K>>,
    /// The queue between reflector and processing loop. Default [`QueueChoice::DeltaFifo`].
    pub queue: QueueChoice<K>,
    /// The cache. `None` (the default): an `IndexedStore` keyed with [`key_func`](Self::key_func)
    /// holding the namespace index. A custom indexer must use the same key function.
    pub indexer: Option<Arc<dyn Indexer<K>>>,
    /// The key function of the default queue and indexer. Default [`key_of`]
    /// (`namespace/name`).
    pub key_func: KeyFunc<K>,
    /// List/watch behaviour. Its `name` defaults to the informer's name; its `resync_period`
    /// and `should_resync` are set by the informer from the handlers' resync periods (what
    /// is configured there is ignored); its `key_func` is replaced by
    /// [`key_func`](Self::key_func); its `transform` is replaced by
    /// [`transform`](Self::transform) when that is set.
    pub reflector: ReflectorConfig<K>,
    /// What handlers hear when an object is replaced by a namesake with another UID.
    /// Default [`UidChange::DeleteAndAdd`].
    pub uid_change: UidChange,
    /// How long shutdown waits for handlers to drain their buffers before it reports the
    /// ones still busy and returns. Default 30 s.
    pub shutdown_timeout: Duration,
    /// Told about every [`Incident`].
    pub on_incident: Option<IncidentHook>,
    /// Where to record the `informer_*` metrics of this informer and its handlers, and the
    /// `reflector_*` metrics of its reflector (unless [`ReflectorConfig::metrics`] is set);
    /// `None` (the default) records none. Values exist only with the `metrics` feature.
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
            key_func: Arc::new(|obj: &K| key_of(obj)),
            reflector: ReflectorConfig::default(),
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
            .field("reflector", &self.reflector)
            .field("uid_change", &self.uid_change)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .field("on_incident", &self.on_incident.is_some())
            .field("metrics", &self.metrics.is_some())
            .finish_non_exhaustive()
    }
}

/// Which queue sits between the reflector and the processing loop.
#[non_exhaustive]
pub enum QueueChoice<K> {
    /// `informer_fifo::DeltaFifo`: deltas grouped per key (client-go's `DeltaFIFO`).
    DeltaFifo,
    /// `informer_fifo::InOrderFifo`: every delta in arrival order, popped in batches (client-go's
    /// `RealFIFO`). Its `key_func` and `known_objects` are replaced by the informer's.
    InOrder(InOrderFifoConfig<K>),
    /// A queue of your own. It must know the informer's indexer as its known objects (build it
    /// with the indexer you pass in [`InformerConfig::indexer`]) and use the same key function;
    /// the informer closes it when it stops.
    Custom(Arc<dyn Queue<K>>),
}

impl<K> fmt::Debug for QueueChoice<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DeltaFifo => f.write_str("DeltaFifo"),
            Self::InOrder(c) => f.debug_tuple("InOrder").field(&c.max_batch_size).finish(),
            Self::Custom(_) => f.write_str("Custom"),
        }
    }
}

/// What handlers hear when the cache holds an object and the queue brings one with the same
/// key but another UID: the object was deleted and re-created under the same name while the
/// watch was down, and a relist found the newcomer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum UidChange {
    /// `on_delete` with a tombstone of the old object (its final state is unknown), then
    /// `on_add` of the new one. The default: handlers that track objects by UID (owner
    /// references, finalizers, external resources) see two different objects.
    #[default]
    DeleteAndAdd,
    /// `on_update(old, new)`, as client-go does.
    Update,
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
    /// [`Incident`] of kind [`IncidentKind::Overflowed`] is reported. Other handlers and the
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

/// Something went wrong with one handler registration; the informer and the other handlers
/// are unaffected.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Incident {
    /// The informer's name.
    pub informer: String,
    /// The registration.
    pub registration: RegistrationId,
    /// The registration's name.
    pub handler: String,
    /// What happened.
    pub kind: IncidentKind,
}

/// What happened to a handler.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IncidentKind {
    /// The handler panicked while handling a notification. The panic was caught; the handler
    /// keeps receiving later notifications.
    Panicked {
        /// The panic message, when it was a string.
        message: String,
        /// The notification being handled, as `Add(ns/name@rv, ...)`.
        notification: String,
    },
    /// The handler's buffer hit its bound; the registration was disconnected.
    Overflowed {
        /// The bound.
        limit: usize,
        /// Notifications dropped with the buffer.
        dropped: usize,
    },
    /// The handler was still busy when shutdown's bound ran out; it was abandoned with
    /// notifications undelivered.
    StuckAtShutdown {
        /// Notifications not delivered.
        pending: usize,
    },
}
