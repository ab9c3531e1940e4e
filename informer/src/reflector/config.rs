//! The reflector's configuration, its error callback, and what it reports about itself.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use informer_core::reflector::{
    BackoffConfig, Counters, ListLimits, MachineConfig, Then, WatchListMode,
};
use informer_core::{Error, ErrorClass, KeyFunc};

use crate::metrics::InformerMetrics;

/// A function applied to every object before it is shared and queued (for example to drop
/// `metadata.managedFields`). It must keep the name, namespace and resourceVersion.
pub type Transform<K> = Arc<dyn Fn(K) -> K + Send + Sync>;

/// Called with every failure the reflector meets, and what it will do about it.
pub type WatchErrorHandler = Arc<dyn Fn(&Error, &FailureContext<'_>) + Send + Sync>;

/// Asked before each periodic resync; `false` skips that one.
pub type ShouldResync = Arc<dyn Fn() -> bool + Send + Sync>;

/// Where in the reflector's cycle a failure happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Stage {
    /// A list request (any page), or a complete list the queue refused.
    List,
    /// One item of a list could not be used (no name, or the key function refused it); it is
    /// skipped, the list goes on.
    ListItem,
    /// A watch request.
    WatchStart,
    /// A running watch: a broken connection, an `ERROR` event, an undecodable line, or an
    /// object without a name (skipped; the watch goes on).
    Watch,
    /// A streaming initial list, before its end bookmark: the request or the stream.
    StreamingList,
}

/// What the reflector knows about a failure when it reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct FailureContext<'a> {
    /// [`ReflectorConfig::name`].
    pub reflector: &'a str,
    /// Where it happened.
    pub stage: Stage,
    /// The last resourceVersion seen before it.
    pub resource_version: Option<&'a str>,
    /// What the reflector does next: `None` when it just goes on (an object without a name,
    /// in a list page or a watch event, is skipped).
    pub then: Option<Then>,
    /// After how long (zero: at once).
    pub delay: Duration,
}

/// The configuration of a [`Reflector`](super::Reflector). Start from `Default`.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use informer::reflector::{ReflectorConfig, WatchListMode};
/// use informer_testing::JsonObject;
///
/// let config = ReflectorConfig::<JsonObject> {
///     name: "configmaps".into(),
///     watch_list: WatchListMode::On,
///     resync_period: Some(Duration::from_secs(600)),
///     label_selector: Some("app=web".into()),
///     transform: Some(Arc::new(|mut obj: JsonObject| {
///         obj.metadata.other.remove("managedFields");
///         obj
///     })),
///     watch_error_handler: Some(Arc::new(|error, context| {
///         eprintln!("{}: {error} during {:?}", context.reflector, context.stage);
///     })),
///     ..ReflectorConfig::default()
/// };
/// assert_eq!(config.page_size, Some(500));
/// ```
pub struct ReflectorConfig<K> {
    /// A name for logs, errors and callbacks (for example the resource). Default empty.
    pub name: String,
    /// `limit` of list requests from any state (the first list) and of consistent lists;
    /// `None` lists in one request. Relists at a specific resourceVersion ask for no limit
    /// (client-go's choice: the API server answers them from its watch cache) unless the
    /// server paged the first list. Default 500.
    pub page_size: Option<u32>,
    /// Page every list with [`page_size`](Self::page_size), relists at a specific
    /// resourceVersion included, as client-go does when `WatchListPageSize` is set. Default
    /// false (relists then come from the API server's watch cache, not from etcd).
    pub always_paginate: bool,
    /// Streaming initial list or paginated list. Default [`WatchListMode::On`] (as client-go
    /// since 1.35), falling back to a paginated list when the server refuses it.
    pub watch_list: WatchListMode,
    /// How long a streaming list may go without sending an object (or its end bookmark)
    /// before the reflector gives it up and lists instead, for that round (a stalled stream,
    /// or a server that ignores `sendInitialEvents`). Every object moves the deadline on: a
    /// slow stream that keeps making progress completes however long it takes. The next
    /// relist streams again. Default 60 s.
    pub initial_events_timeout: Duration,
    /// Watches ask for a `timeoutSeconds` uniformly drawn from `[min, 2 × min)`. Default 300 s.
    pub min_watch_timeout: Duration,
    /// Calls [`Queue::resync`](informer_core::Queue::resync) this often once the first list
    /// is in; `None` (the default) never. Resync never talks to the server.
    pub resync_period: Option<Duration>,
    /// Asked before each resync; `None` always resyncs.
    pub should_resync: Option<ShouldResync>,
    /// Delays between failed attempts: 800 ms doubling to 30 s, full jitter, reset after
    /// 2 minutes without failures.
    pub backoff: BackoffConfig,
    /// `labelSelector` of every list and watch.
    pub label_selector: Option<String>,
    /// `fieldSelector` of every list and watch.
    pub field_selector: Option<String>,
    /// Caps on one list (pages, bytes, repeated continue tokens), against a server whose
    /// lists never end. Defaults far above any real cluster: see [`ListLimits`].
    pub list_limits: ListLimits,
    /// Applied to every object before it is queued.
    pub transform: Option<Transform<K>>,
    /// The key function of the queue (and the store behind it); `None` (the default) is
    /// [`key_of`](informer_core::key_of), `namespace/name`. Objects it cannot key, in a list
    /// or a watch, are reported (stage [`Stage::ListItem`] or [`Stage::Watch`]) and skipped,
    /// so that the queue is never handed an object it would refuse. An informer sets it to
    /// [`InformerConfig::key_func`](crate::InformerConfig::key_func).
    pub key_func: Option<KeyFunc<K>>,
    /// Told about every failure: failed requests, broken or undecodable streams, `ERROR`
    /// events, objects without a name. Failures are logged with `tracing` either way. A
    /// streaming list given up for lack of progress is not an error from the server: it is
    /// logged and counted ([`Counters::streaming_fallbacks`]), not passed here.
    pub watch_error_handler: Option<WatchErrorHandler>,
    /// Seeds the random numbers (watch timeouts, backoff jitter); `None` seeds from the OS.
    /// A fixed seed makes a run against a deterministic server reproducible.
    pub seed: Option<u64>,
    /// Where to record the `reflector_*` metrics (series labelled with [`name`](Self::name));
    /// `None` (the default) records none. Values exist only with the `metrics` feature. An
    /// informer fills it from [`InformerConfig::metrics`](crate::InformerConfig::metrics)
    /// when left `None`.
    pub metrics: Option<InformerMetrics>,
}

impl<K> ReflectorConfig<K> {
    /// The decision parameters, for the core state machine.
    pub fn machine_config(&self) -> MachineConfig {
        MachineConfig {
            page_size: self.page_size,
            always_paginate: self.always_paginate,
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            watch_list: self.watch_list,
            initial_events_timeout: self.initial_events_timeout,
            min_watch_timeout: self.min_watch_timeout,
            backoff: self.backoff.clone(),
        }
    }
}

impl<K> Default for ReflectorConfig<K> {
    fn default() -> Self {
        let machine = MachineConfig::default();
        Self {
            name: String::new(),
            page_size: machine.page_size,
            always_paginate: machine.always_paginate,
            watch_list: machine.watch_list,
            initial_events_timeout: machine.initial_events_timeout,
            min_watch_timeout: machine.min_watch_timeout,
            resync_period: None,
            should_resync: None,
            backoff: machine.backoff,
            label_selector: None,
            field_selector: None,
            list_limits: ListLimits::default(),
            transform: None,
            key_func: None,
            watch_error_handler: None,
            seed: None,
            metrics: None,
        }
    }
}

impl<K> Clone for ReflectorConfig<K> {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            page_size: self.page_size,
            always_paginate: self.always_paginate,
            watch_list: self.watch_list,
            initial_events_timeout: self.initial_events_timeout,
            min_watch_timeout: self.min_watch_timeout,
            resync_period: self.resync_period,
            should_resync: self.should_resync.clone(),
            backoff: self.backoff.clone(),
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            list_limits: self.list_limits,
            transform: self.transform.clone(),
            key_func: self.key_func.clone(),
            watch_error_handler: self.watch_error_handler.clone(),
            seed: self.seed,
            metrics: self.metrics.clone(),
        }
    }
}

impl<K> fmt::Debug for ReflectorConfig<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReflectorConfig")
            .field("name", &self.name)
            .field("page_size", &self.page_size)
            .field("always_paginate", &self.always_paginate)
            .field("watch_list", &self.watch_list)
            .field("initial_events_timeout", &self.initial_events_timeout)
            .field("min_watch_timeout", &self.min_watch_timeout)
            .field("resync_period", &self.resync_period)
            .field("should_resync", &self.should_resync.is_some())
            .field("backoff", &self.backoff)
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .field("list_limits", &self.list_limits)
            .field("transform", &self.transform.is_some())
            .field("key_func", &self.key_func.is_some())
            .field("watch_error_handler", &self.watch_error_handler.is_some())
            .field("seed", &self.seed)
            .field("metrics", &self.metrics.is_some())
            .finish()
    }
}

/// The last failure a reflector reported.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LastError {
    /// Where it happened.
    pub stage: Stage,
    /// Its classification.
    pub class: ErrorClass,
    /// The error and its causes, as text.
    pub message: String,
    /// When (on the runtime's clock, virtual in paused tests).
    pub at: Instant,
}

/// A snapshot of what a reflector has done, for summaries and metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReflectorStats {
    /// Lists, relists, watch starts, events, restarts by reason.
    pub counters: Counters,
    /// Periodic resyncs performed.
    pub resyncs: u64,
    /// Failures reported (each one also went to the watch-error handler).
    pub errors: u64,
    /// The last of them.
    pub last_error: Option<LastError>,
    /// See [`Reflector::last_synced_resource_version`](super::Reflector::last_synced_resource_version).
    pub last_synced_resource_version: Option<String>,
    /// Whether a full list has been handed to the queue.
    pub has_synced: bool,
    /// Whether the last complete list was a streaming list (false before the first list,
    /// with [`WatchListMode::Off`], and after a fallback to a paginated list until a later
    /// relist streams again).
    pub streaming: bool,
}
