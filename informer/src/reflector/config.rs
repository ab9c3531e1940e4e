//! The reflector's configuration, its error callback, and what it reports about itself.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use informer_core::reflector::{Counters, ListWatchConfig, Then};
use informer_core::shard::{ShardFiltering, ShardSelector};
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

/// The configuration of a [`Reflector`](super::Reflector) used on its own. Start from
/// `Default`. How it lists and watches is [`list_watch`](Self::list_watch), the core's
/// [`ListWatchConfig`], held once here (an informer builds its reflector from its own
/// [`InformerConfig`](crate::InformerConfig) and never copies these fields).
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use informer::reflector::{ListWatchConfig, ReflectorConfig, WatchListMode};
/// use informer_testing::JsonObject;
///
/// let config = ReflectorConfig::<JsonObject> {
///     name: "configmaps".into(),
///     list_watch: ListWatchConfig {
///         watch_list: WatchListMode::On,
///         label_selector: Some("app=web".into()),
///         ..ListWatchConfig::default()
///     },
///     resync_period: Some(Duration::from_secs(600)),
///     transform: Some(Arc::new(|mut obj: JsonObject| {
///         obj.metadata.other.remove("managedFields");
///         obj
///     })),
///     watch_error_handler: Some(Arc::new(|error, context| {
///         eprintln!("{}: {error} during {:?}", context.reflector, context.stage);
///     })),
///     ..ReflectorConfig::default()
/// };
/// assert_eq!(config.list_watch.page_size, Some(500));
/// ```
pub struct ReflectorConfig<K> {
    /// A name for logs, errors and callbacks (for example the resource). Default empty.
    pub name: String,
    /// How to list and watch: page size, streaming lists, selectors, watch timeouts, backoff,
    /// list limits. Defaults as client-go's (see [`ListWatchConfig`]).
    pub list_watch: ListWatchConfig,
    /// Calls [`Queue::resync`](informer_core::Queue::resync) this often once the first list
    /// is in; `None` (the default) never. Resync never talks to the server.
    pub resync_period: Option<Duration>,
    /// Asked before each resync; `None` always resyncs.
    pub should_resync: Option<ShouldResync>,
    /// Applied to every object right after it is decoded, before it is shared and queued:
    /// the one transform point (for example to drop `metadata.managedFields`). It must keep
    /// the name, namespace, UID and resourceVersion.
    pub transform: Option<Transform<K>>,
    /// The key function of the queue (and the store behind it); `None` (the default) is
    /// [`key_of`](informer_core::key_of), `namespace/name`. Objects it cannot key, in a list
    /// or a watch, are reported (stage [`Stage::ListItem`] or [`Stage::Watch`]) and skipped,
    /// so that the queue is never handed an object it would refuse.
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
    /// `None` (the default) records none. Values exist only with the `metrics` feature.
    pub metrics: Option<InformerMetrics>,
}

impl<K> Default for ReflectorConfig<K> {
    fn default() -> Self {
        Self {
            name: String::new(),
            list_watch: ListWatchConfig::default(),
            resync_period: None,
            should_resync: None,
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
            list_watch: self.list_watch.clone(),
            resync_period: self.resync_period,
            should_resync: self.should_resync.clone(),
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
            .field("list_watch", &self.list_watch)
            .field("resync_period", &self.resync_period)
            .field("should_resync", &self.should_resync.is_some())
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
    /// with [`WatchListMode::Off`](informer_core::reflector::WatchListMode::Off) or `Auto`
    /// settled to it, and after a fallback to a paginated list until a later relist streams
    /// again).
    pub streaming: bool,
    /// Listed objects (relists, streaming lists) that the store held at the same
    /// resourceVersion: handed to the queue as the stored object or as a key, the listed copy
    /// dropped at once.
    pub listed_unchanged: u64,
    /// Of those, the ones skipped before they were decoded (their metadata read from the
    /// text first: `namespace/name` keys and a backend that peeks, such as informer-kube).
    pub listed_undecoded: u64,
    /// Objects handed to the queue with their JSON text as received, for a store that keeps
    /// objects encoded (it then does not encode them again).
    pub raw_kept: u64,
    /// Of those, listed objects handed over as their text alone
    /// ([`Listed::Encoded`](informer_core::Listed::Encoded)): the store decodes text itself, so
    /// the list waited in the queue as text and each object was decoded when popped (and not
    /// by the list, when the backend handed items over as text: `ListSink::takes_text`).
    pub listed_as_text: u64,
    /// Of those, the ones the store packed into its own form as they were listed
    /// ([`KnownObjects::pack_text`](informer_core::KnownObjects::pack_text): a compact store
    /// compresses them once its dictionary is trained), so that they waited in the queue at
    /// about the size the store keeps.
    pub listed_packed: u64,
    /// The shard selector and who applies it.
    pub shard: ShardStats,
}

/// What a reflector knows about its shard selector
/// ([`ListWatchConfig::shard_selector`], [`Reflector::set_shard_selector`](super::Reflector::set_shard_selector)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShardStats {
    /// The selector asked for (`None`: every object): the configured one, or the last one
    /// given to [`Reflector::set_shard_selector`](super::Reflector::set_shard_selector).
    pub selector: Option<ShardSelector>,
    /// The selector of the last complete list handed to the queue: once it equals
    /// [`selector`](Self::selector) and the queue has drained, the cache holds exactly that
    /// shard.
    pub listed_selector: Option<ShardSelector>,
    /// Who filters: the server (its list answers echo the selector), the client (the
    /// server sent objects outside the shard, or a list without the echo), not known yet
    /// (only streaming lists and watches since the selector was set), or off.
    pub filtering: ShardFiltering,
    /// Objects dropped on the client because they were outside the shard (list items, watch
    /// events), over the reflector's life.
    pub dropped: u64,
}
