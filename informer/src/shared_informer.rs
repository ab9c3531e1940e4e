//! [`SharedIndexInformer`]: a cache kept equal to the server by a reflector, and the
//! notifications of its changes, shared by any number of handlers.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use async_trait::async_trait;
use informer_core::shard::ShardSelector;
use informer_core::{
    Delta, Indexer, Indexers, KeyFunc, KnownObjects, Listed, ListerWatcher, NAMESPACE_INDEX,
    Object, ProcessError, ProcessFn, Queue, QueueError, RawObject, ResourceEventHandler, UidChange,
    namespace_index_func,
};
use informer_fifo::{DeltaFifo, DeltaFifoConfig, InOrderFifo, InOrderFifoConfig};
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::cache::Lister;
use crate::config::{HandlerOptions, InformerConfig, QueueChoice, QueueWiring, default_key_func};
use crate::error::InformerError;
use crate::listener::Reporter;
use crate::metrics::InformerRecorder;
use crate::process::Rules;
use crate::processor::{NewRegistration, Processor, RegisterError, ShutdownReport};
use crate::reflector::{Reflector, ReflectorConfig, ReflectorStats};
use crate::registration::{Phase, Registration};
use crate::store_choice::{StoreChoice, StoreWiring};
use crate::stream::EventStream;

/// A cache of one kind of object, kept equal to the server by a
/// [`Reflector`], with any number of handlers told about every change.
///
/// Build it with [`new`](Self::new) from a [`ListerWatcher`] and an [`InformerConfig`], add
/// handlers ([`add_handler`](Self::add_handler), closures with [`handler`](crate::handler),
/// or an async [`stream`](Self::stream)), then [`run`](Self::run) it until a cancellation
/// token fires. The handle is cheap to clone; clones share the informer.
///
/// # What handlers hear
///
/// The processing loop pops batches of deltas from the queue, applies each to the cache and,
/// under the same *distribution lock*, queues the matching notification for every handler
/// (the rules are in the [crate docs](crate#processing-rules)). Each handler has its own
/// buffer and its own task: a slow handler delays only itself, and its lag is
/// [`Registration::pending`]. Buffers are unbounded unless
/// [`HandlerOptions::buffer_limit`] says otherwise (then an overflowing handler is
/// disconnected and reported, never waited for). A handler that panics is reported (an
/// [`Incident`](crate::Incident), `tracing`, [`InformerStats::handler_panics`]) and keeps
/// receiving later notifications.
///
/// A handler added while the informer runs first gets `on_add(obj, true)` for every cached
/// object, then live changes: the cache is read and the replay queued under the distribution
/// lock, so no change falls between the two and none is seen twice.
///
/// # Sync
///
/// [`has_synced`](Self::has_synced) is true once the first full list has been applied to the
/// cache. A registration's [`has_synced`](Registration::has_synced) also waits until that
/// handler has handled every initial-list notification it was given, so a controller that
/// waits for its registrations knows its handlers have seen the whole initial state.
///
/// # Resync
///
/// Each handler has a resync period ([`HandlerOptions::resync_period`], defaulting to
/// [`InformerConfig::resync_period`]). The reflector resyncs at the smallest of them (the
/// *resync check period*), and at each check the handlers whose period is due are marked
/// syncing (until the next check); updates with equal resourceVersions (resyncs, or relists
/// that saw no change) go to the handlers marked syncing only. The rules are client-go's: periods under 1 s are raised to 1 s; a handler
/// added before start with a shorter period than the check period lowers it; one added
/// after start gets at least the check period; if the running informer does not resync, a
/// handler cannot ask it to. One difference: an informer whose own period is zero still
/// resyncs when a handler added before start asks for a period (client-go silently never
/// resyncs it).
///
/// # Shutdown
///
/// When the token fires, the reflector stops, the queue is closed, no handler can be added,
/// and every handler drains its buffer, for at most
/// [`InformerConfig::shutdown_timeout`]; handlers still busy then are abandoned and listed in
/// the [`ShutdownReport`]. Streams yield what they hold, then end.
pub struct SharedIndexInformer<K: Object> {
    inner: Arc<Inner<K>>,
}

impl<K: Object> Clone for SharedIndexInformer<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

struct Inner<K: Object> {
    name: String,
    lister_watcher: Arc<dyn ListerWatcher<K>>,
    indexer: Arc<dyn Indexer<K>>,
    /// The queue as configured (the processing loop and `has_synced` read it).
    raw_queue: Arc<dyn Queue<K>>,
    /// The same queue, signalling sync to waiters: what the reflector writes to.
    queue: Arc<SignallingQueue<K>>,
    key_func: KeyFunc<K>,
    uid_change: UidChange,
    shutdown_timeout: Duration,
    /// Taken by `run`: present until the informer starts.
    reflector_config: Mutex<Option<ReflectorConfig<K>>>,
    reflector: OnceLock<Arc<Reflector<K>>>,
    processor: Arc<Processor<K>>,
    phase: Arc<watch::Sender<Phase>>,
    batches: AtomicU64,
    deltas: AtomicU64,
    apply_errors: AtomicU64,
}

/// What an informer has done, for summaries and metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InformerStats {
    /// Batches popped from the queue and processed.
    pub batches: u64,
    /// Deltas applied to the cache.
    pub deltas: u64,
    /// Deltas the cache refused, and listed objects kept as text that the store could not
    /// decode when the queue handed them over (each reported and skipped).
    pub apply_errors: u64,
    /// Objects in the cache.
    pub cached: usize,
    /// Entries waiting in the queue.
    pub queued: usize,
    /// Active registrations.
    pub handlers: usize,
    /// Notifications whose handling panicked, over all handlers.
    pub handler_panics: u64,
    /// Registrations disconnected because their buffer hit its bound.
    pub handlers_disconnected: u64,
    /// Handlers abandoned at shutdown.
    pub handlers_stuck: u64,
    /// Whether the first list has been applied.
    pub has_synced: bool,
    /// The reflector's own statistics, once started.
    pub reflector: Option<ReflectorStats>,
}

impl<K: Object> SharedIndexInformer<K> {
    /// An informer over `lister_watcher`.
    ///
    /// Fails only if [`InformerConfig::indexers`] cannot be added to a custom
    /// [`InformerConfig::indexer`] (a name already taken).
    pub fn new(
        lister_watcher: Arc<dyn ListerWatcher<K>>,
        config: InformerConfig<K>,
    ) -> Result<Self, InformerError> {
        let InformerConfig {
            name,
            resync_period,
            indexers,
            transform,
            queue,
            indexer,
            store,
            key_func,
            list_watch,
            watch_error_handler,
            seed,
            uid_change,
            shutdown_timeout,
            on_incident,
            metrics,
        } = config;
        let name = if name.is_empty() {
            "informer".to_owned()
        } else {
            name
        };
        let indexer: Arc<dyn Indexer<K>> = match indexer {
            Some(_) if !matches!(store, StoreChoice::Indexed) => {
                return Err(InformerError::StoreConflict {
                    name,
                    store: format!("{store:?}"),
                });
            }
            Some(indexer) => {
                if !indexers.is_empty() {
                    indexer
                        .add_indexers(indexers)
                        .map_err(|source| InformerError::Indexers {
                            name: name.clone(),
                            source,
                        })?;
                }
                Arc::from(indexer)
            }
            None => {
                let mut all = Indexers::new();
                all.insert(NAMESPACE_INDEX.to_owned(), namespace_index_func());
                all.extend(indexers);
                let wiring = StoreWiring {
                    key_func: Arc::clone(&key_func),
                    indexers: all,
                };
                Arc::from(store.build(wiring))
            }
        };
        let known: Arc<dyn KnownObjects<K>> = indexer.clone();
        let raw_queue: Arc<dyn Queue<K>> = match queue {
            QueueChoice::DeltaFifo => Arc::new(DeltaFifo::new(DeltaFifoConfig {
                key_func: Arc::clone(&key_func),
                known_objects: Some(known),
            })),
            QueueChoice::InOrder { max_batch_size } => {
                Arc::new(InOrderFifo::new(InOrderFifoConfig {
                    key_func: Arc::clone(&key_func),
                    known_objects: Some(known),
                    max_batch_size,
                }))
            }
            QueueChoice::Custom(build) => build(QueueWiring {
                key_func: Arc::clone(&key_func),
                known_objects: known,
            }),
        };
        // The reflector skips (and reports) what the queue's key function cannot key, rather
        // than have the queue refuse a whole list. Its resync settings come from the
        // handlers' periods when it starts. With the default key function it is told none:
        // then it knows keys are `namespace/name` and may key list items from their metadata
        // before decoding them.
        let custom_keys = !Arc::ptr_eq(&key_func, &default_key_func::<K>());
        let reflector = ReflectorConfig {
            name: name.clone(),
            list_watch,
            resync_period: None,
            should_resync: None,
            transform,
            key_func: custom_keys.then(|| Arc::clone(&key_func)),
            watch_error_handler,
            seed,
            metrics: metrics.clone(),
        };
        let recorder = InformerRecorder::new(metrics.as_ref(), &name);
        recorder.track_cache(&indexer);
        let phase = Arc::new(watch::Sender::new(Phase::default()));
        let reporter = Arc::new(Reporter::new(name.clone(), on_incident, recorder));
        let processor = Arc::new(Processor::new(
            reporter,
            phase.subscribe(),
            resync_period.filter(|p| !p.is_zero()),
        ));
        let queue = Arc::new(SignallingQueue {
            inner: Arc::clone(&raw_queue),
            phase: Arc::clone(&phase),
        });
        Ok(Self {
            inner: Arc::new(Inner {
                name,
                lister_watcher,
                indexer,
                raw_queue,
                queue,
                key_func,
                uid_change,
                shutdown_timeout,
                reflector_config: Mutex::new(Some(reflector)),
                reflector: OnceLock::new(),
                processor,
                phase,
                batches: AtomicU64::new(0),
                deltas: AtomicU64::new(0),
                apply_errors: AtomicU64::new(0),
            }),
        })
    }

    /// Whether `other` is a handle on the same informer.
    pub fn ptr_eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The informer's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Registers a handler with default [`HandlerOptions`]. See
    /// [`add_handler_with`](Self::add_handler_with).
    pub fn add_handler(
        &self,
        handler: impl ResourceEventHandler<K>,
    ) -> Result<Registration, InformerError> {
        self.add_handler_with(handler, HandlerOptions::default())
    }

    /// Registers a handler, before or after start. It first gets `on_add(obj, true)` for every
    /// object already cached, then every later change. Fails once the informer has stopped.
    pub fn add_handler_with(
        &self,
        handler: impl ResourceEventHandler<K>,
        options: HandlerOptions,
    ) -> Result<Registration, InformerError> {
        self.register(NewRegistration::Handler(Box::new(handler)), options)
            .map(|(registration, _)| registration)
    }

    /// An async stream of notifications, backed by a registration like any handler (same
    /// replay, same ordering, same sync tracking: see [`EventStream::registration`]).
    /// Dropping the stream removes the registration.
    pub fn stream(&self) -> Result<EventStream<K>, InformerError> {
        self.stream_with(HandlerOptions::default())
    }

    /// [`stream`](Self::stream) with options ([`HandlerOptions::delivery`] is ignored: the
    /// consumer pulls).
    pub fn stream_with(&self, options: HandlerOptions) -> Result<EventStream<K>, InformerError> {
        let (registration, listener) = self.register(NewRegistration::Stream, options)?;
        Ok(EventStream::new(
            listener,
            registration,
            Arc::downgrade(&self.inner.processor),
        ))
    }

    fn register(
        &self,
        new: NewRegistration<K>,
        options: HandlerOptions,
    ) -> Result<(Registration, Arc<crate::listener::Listener<K>>), InformerError> {
        self.inner
            .processor
            .register(new, options, self.inner.indexer.as_ref())
            .map_err(|RegisterError::Stopped(handler)| InformerError::Stopped {
                name: self.inner.name.clone(),
                doing: format!("adding handler {handler:?}"),
            })
    }

    /// Removes a registration: it receives nothing more and its undelivered notifications
    /// are dropped. Returns whether it was registered here.
    pub fn remove_handler(&self, registration: &Registration) -> bool {
        self.inner.processor.remove(registration.id())
    }

    /// Handles on the active registrations, in registration order.
    pub fn registrations(&self) -> Vec<Registration> {
        self.inner.processor.registrations()
    }

    /// Adds indices, before or after start (they are built over the current content). Fails
    /// if a name is taken, or once the informer has stopped.
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), InformerError> {
        if self.is_stopped() {
            return Err(InformerError::Stopped {
                name: self.inner.name.clone(),
                doing: "adding indexers".to_owned(),
            });
        }
        self.inner
            .indexer
            .add_indexers(indexers)
            .map_err(|source| InformerError::Indexers {
                name: self.inner.name.clone(),
                source,
            })
    }

    /// The read-only view of the cache: lookups by key, namespace and name, label
    /// selectors, namespaces and indices. Cheap to clone; every object is the `Arc` the cache
    /// holds.
    pub fn lister(&self) -> Lister<K> {
        Lister::over(Arc::clone(&self.inner.indexer))
    }

    /// Whether the first full list has been applied to the cache (stays true).
    pub fn has_synced(&self) -> bool {
        self.inner.queue.signal();
        self.inner.phase.borrow().synced
    }

    /// Waits until [`has_synced`](Self::has_synced); returns `false` instead if the informer
    /// stops first.
    pub async fn wait_for_sync(&self) -> bool {
        self.inner.queue.signal();
        wait_phase(self.inner.phase.subscribe()).await
    }

    /// The resourceVersion of the last list or watch event the reflector saw; `None` before
    /// the first list.
    pub fn last_synced_resource_version(&self) -> Option<String> {
        self.inner
            .reflector
            .get()
            .and_then(|r| r.last_synced_resource_version())
    }

    /// Lists and watches only the objects of `selector` from now on (`None`: every object):
    /// a shard of the resource, for one replica of a sharded controller (see
    /// [`informer_core::shard`]).
    ///
    /// Before [`run`](Self::run), it replaces
    /// [`InformerConfig::list_watch`]`.shard_selector`. On a running informer, the reflector
    /// ends its watch (or list, or backoff delay) at once and relists with the new selector
    /// from the last seen resourceVersion (a list in progress that overlaps the new selector
    /// and would drop nothing cached of it completes first: see
    /// [`Reflector::set_shard_selector`](crate::reflector::Reflector::set_shard_selector));
    /// when the list is in, handlers hear `on_delete`
    /// (a tombstone, as for any object missing from a relist) for every cached object
    /// outside the new shard and `on_add` for every object new to it, while the objects in
    /// both shards get nothing but what really changed to them meanwhile (no delete and add,
    /// no update with the same resourceVersion): no event of an object the informer keeps
    /// is lost or invented. The cache holds exactly the new shard once
    /// [`ShardStats::listed_selector`](crate::reflector::ShardStats::listed_selector) equals
    /// the new selector and the queue has drained (`InformerStats::queued == 0`).
    /// Setting the selector in effect does nothing. Fails once the informer has stopped.
    ///
    /// Whether the server applies the selector or not, the informer also filters every
    /// decoded object with it; [`ShardStats::filtering`](crate::reflector::ShardStats::filtering)
    /// (in [`InformerStats::reflector`]) says who did the work.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::sync::Arc;
    /// use informer::shard::{ShardField, ShardSelector};
    /// use informer::{InformerConfig, SharedIndexInformer};
    /// use informer_testing::JsonObject;
    /// use fake_apiserver::FakeApiServer;
    ///
    /// let server = FakeApiServer::new();
    /// let lw = Arc::new(server.lister_watcher::<JsonObject>("configmaps", None).unwrap());
    /// let informer = SharedIndexInformer::new(lw, InformerConfig::default())?;
    /// // Replica 1 of 3, by uid.
    /// informer.set_shard_selector(Some(ShardSelector::even_split(ShardField::Uid, 1, 3)?))?;
    /// assert_eq!(
    ///     informer.shard_selector().map(|s| s.to_string()).as_deref(),
    ///     Some("shardRange(object.metadata.uid, '0x5555555555555555', '0xaaaaaaaaaaaaaaaa')")
    /// );
    /// # Ok(()) }
    /// ```
    pub fn set_shard_selector(&self, selector: Option<ShardSelector>) -> Result<(), InformerError> {
        if self.is_stopped() {
            return Err(InformerError::Stopped {
                name: self.inner.name.clone(),
                doing: "changing the shard selector".to_owned(),
            });
        }
        let mut pending = self.inner.reflector_config.lock();
        match (pending.as_mut(), self.inner.reflector.get()) {
            (Some(config), _) => config.list_watch.shard_selector = selector,
            (None, Some(reflector)) => reflector.set_shard_selector(selector),
            // `run` sets the reflector before it lets go of the config's lock.
            (None, None) => {}
        }
        Ok(())
    }

    /// The shard selector in effect (or to be used when the informer starts).
    pub fn shard_selector(&self) -> Option<ShardSelector> {
        let pending = self.inner.reflector_config.lock();
        match (pending.as_ref(), self.inner.reflector.get()) {
            (Some(config), _) => config.list_watch.shard_selector.clone(),
            (None, Some(reflector)) => reflector.shard_selector(),
            (None, None) => None,
        }
    }

    /// Whether [`run`](Self::run) has been called.
    pub fn is_started(&self) -> bool {
        self.inner.reflector_config.lock().is_none()
    }

    /// Whether the informer has stopped.
    pub fn is_stopped(&self) -> bool {
        self.inner.phase.borrow().stopped
    }

    /// The resync period the reflector uses (zero: none): the smallest handler period known at
    /// start.
    pub fn resync_check_period(&self) -> Duration {
        self.inner.processor.resync_check_period()
    }

    /// What the informer has done.
    pub fn stats(&self) -> InformerStats {
        let reporter = &self.inner.processor.reporter;
        InformerStats {
            batches: self.inner.batches.load(Ordering::Relaxed),
            deltas: self.inner.deltas.load(Ordering::Relaxed),
            apply_errors: self.inner.apply_errors.load(Ordering::Relaxed),
            cached: self.inner.indexer.len(),
            queued: self.inner.raw_queue.len(),
            handlers: self.inner.processor.len(),
            handler_panics: reporter.panics.load(Ordering::Relaxed),
            handlers_disconnected: reporter.disconnections.load(Ordering::Relaxed),
            handlers_stuck: reporter.stuck.load(Ordering::Relaxed),
            has_synced: self.has_synced(),
            reflector: self.inner.reflector.get().map(|r| r.stats()),
        }
    }

    /// Runs on a new task of the current runtime; see [`run`](Self::run).
    pub fn spawn(
        &self,
        cancel: CancellationToken,
    ) -> tokio::task::JoinHandle<Result<ShutdownReport, InformerError>> {
        let informer = self.clone();
        tokio::spawn(async move { informer.run(cancel).await })
    }

    /// Lists, watches and delivers until `cancel` fires, then shuts down (see the
    /// [type docs](Self#shutdown)) and reports. An informer runs once: a second call fails
    /// with [`InformerError::AlreadyStarted`].
    ///
    /// Must be called within a tokio runtime (handler tasks are spawned on it). Dropping the
    /// future instead of cancelling stops everything at once, dropping undelivered
    /// notifications.
    pub async fn run(&self, cancel: CancellationToken) -> Result<ShutdownReport, InformerError> {
        let inner = &self.inner;
        // The config's lock is held until the reflector is in place, so that a shard
        // selector set meanwhile lands in the config or in the reflector, never in between.
        let (reflector, check) = {
            let mut pending = inner.reflector_config.lock();
            let Some(mut config) = pending.take() else {
                return Err(InformerError::AlreadyStarted {
                    name: inner.name.clone(),
                });
            };
            let check = inner.processor.resync_check_period();
            config.resync_period = (!check.is_zero()).then_some(check);
            let processor: Weak<Processor<K>> = Arc::downgrade(&inner.processor);
            config.should_resync = Some(Arc::new(move || {
                processor.upgrade().is_some_and(|p| p.should_resync())
            }));
            let queue: Arc<dyn Queue<K>> = inner.queue.clone();
            let known: Arc<dyn KnownObjects<K>> = inner.indexer.clone();
            let reflector = Arc::new(Reflector::new(
                Arc::clone(&inner.lister_watcher),
                queue,
                Some(known),
                config,
            ));
            // `reflector_config` was present, so this is the first and only run.
            let _ = inner.reflector.set(Arc::clone(&reflector));
            (reflector, check)
        };
        if !inner.processor.start(tokio::runtime::Handle::current()) {
            return Err(InformerError::AlreadyStarted {
                name: inner.name.clone(),
            });
        }
        tracing::debug!(informer = %inner.name, resync_check_period = ?check, "informer starting");
        let mut guard = AbandonOnDrop {
            inner: Some(Arc::clone(inner)),
        };
        let stop = cancel.child_token();
        tokio::join!(reflector.run(stop.clone()), self.process_loop(&stop));
        tracing::debug!(informer = %inner.name, "informer shutting down: draining handlers");
        inner.raw_queue.close();
        let report = inner.processor.shutdown(inner.shutdown_timeout).await;
        inner.phase.send_modify(|p| p.stopped = true);
        guard.inner = None;
        tracing::info!(
            informer = %inner.name,
            drained = report.drained,
            streams = report.streams,
            stuck = report.stuck.len(),
            "informer stopped"
        );
        Ok(report)
    }

    /// Pops batches and applies them until `stop` fires or the queue is closed.
    async fn process_loop(&self, stop: &CancellationToken) {
        let inner = &*self.inner;
        let rules = Rules {
            indexer: inner.indexer.as_ref(),
            key_func: &inner.key_func,
            uid_change: inner.uid_change,
            informer: &inner.name,
        };
        let mut process = |deltas: &[Delta<K>]| -> Result<(), ProcessError> {
            // The batch being processed still counts as not popped: a batch of the first
            // list sees the queue unsynced.
            let initial = !inner.raw_queue.has_synced();
            inner.processor.reporter.metrics.deltas(deltas);
            let mut distribution = inner.processor.lock();
            let outcome = rules.apply(deltas, initial, &mut distribution);
            inner.processor.unlock(distribution);
            inner.batches.fetch_add(1, Ordering::Relaxed);
            inner
                .deltas
                .fetch_add(outcome.applied as u64, Ordering::Relaxed);
            if outcome.errors > 0 {
                inner
                    .apply_errors
                    .fetch_add(outcome.errors as u64, Ordering::Relaxed);
            }
            Ok(())
        };
        let mut announced_sync = false;
        loop {
            let popped = tokio::select! {
                biased;
                () = stop.cancelled() => return,
                popped = inner.queue.pop(&mut process) => popped,
            };
            if !announced_sync && inner.phase.borrow().synced {
                announced_sync = true;
                tracing::info!(
                    informer = %inner.name,
                    cached = inner.indexer.len(),
                    "informer synced: the first list is in the cache"
                );
            }
            match popped {
                Ok(()) => {}
                Err(QueueError::Closed) => return,
                Err(QueueError::Decode { key, source }) => {
                    // A listed text the store cannot decode (JSON, but not the object type):
                    // left out, and counted like a delta the cache refuses.
                    inner.apply_errors.fetch_add(1, Ordering::Relaxed);
                    tracing::error!(
                        informer = %inner.name,
                        %key,
                        error = %source,
                        "a listed object cannot be decoded; it is left out of the cache"
                    );
                }
                Err(error) => tracing::warn!(informer = %inner.name, %error, "pop failed"),
            }
            // A long backlog must not monopolise the runtime thread.
            tokio::task::consume_budget().await;
        }
    }

    /// A receiver of the informer's phase, for sync waiters.
    pub(crate) fn phase(&self) -> watch::Receiver<Phase> {
        self.inner.queue.signal();
        self.inner.phase.subscribe()
    }
}

impl<K: Object> fmt::Debug for SharedIndexInformer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedIndexInformer")
            .field("name", &self.inner.name)
            .field("started", &self.is_started())
            .field("has_synced", &self.has_synced())
            .field("stopped", &self.is_stopped())
            .field("handlers", &self.inner.processor.len())
            .finish_non_exhaustive()
    }
}

/// Waits until the phase is synced (true) or stopped (false).
pub(crate) async fn wait_phase(mut phase: watch::Receiver<Phase>) -> bool {
    let waited = phase
        .wait_for(|p| p.synced || p.stopped)
        .await
        .map(|p| p.synced);
    // Err: the informer is gone; its last word stands.
    waited.unwrap_or_else(|_| phase.borrow().synced)
}

/// Drops every buffer if `run` is dropped before its orderly end.
struct AbandonOnDrop<K: Object> {
    inner: Option<Arc<Inner<K>>>,
}

impl<K: Object> Drop for AbandonOnDrop<K> {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            inner.raw_queue.close();
            inner.processor.abandon();
            inner.phase.send_modify(|p| p.stopped = true);
        }
    }
}

/// The configured queue, telling sync waiters when it has synced. The first list may sync
/// the queue without any pop (an empty list), so `replace` checks too.
struct SignallingQueue<K> {
    inner: Arc<dyn Queue<K>>,
    phase: Arc<watch::Sender<Phase>>,
}

impl<K: Object> SignallingQueue<K> {
    fn signal(&self) {
        if !self.phase.borrow().synced && self.inner.has_synced() {
            self.phase.send_if_modified(|p| {
                let changed = !p.synced;
                p.synced = true;
                changed
            });
        }
    }
}

#[async_trait]
impl<K: Object> Queue<K> for SignallingQueue<K> {
    fn add(&self, obj: Arc<K>) -> Result<(), QueueError> {
        self.inner.add(obj)
    }

    fn update(&self, obj: Arc<K>) -> Result<(), QueueError> {
        self.inner.update(obj)
    }

    fn delete(&self, obj: Arc<K>) -> Result<(), QueueError> {
        self.inner.delete(obj)
    }

    fn replace(&self, objects: Vec<Arc<K>>, resource_version: &str) -> Result<(), QueueError> {
        let result = self.inner.replace(objects, resource_version);
        self.signal();
        result
    }

    fn add_raw(&self, obj: Arc<K>, raw: RawObject) -> Result<(), QueueError> {
        self.inner.add_raw(obj, raw)
    }

    fn update_raw(&self, obj: Arc<K>, raw: RawObject) -> Result<(), QueueError> {
        self.inner.update_raw(obj, raw)
    }

    fn replace_listed(
        &self,
        entries: Vec<Listed<K>>,
        resource_version: &str,
        known: &dyn KnownObjects<K>,
    ) -> Result<(), QueueError> {
        let result = self.inner.replace_listed(entries, resource_version, known);
        self.signal();
        result
    }

    fn resync(&self) -> Result<(), QueueError> {
        self.inner.resync()
    }

    async fn pop(&self, process: &mut ProcessFn<'_, K>) -> Result<(), QueueError> {
        let result = self.inner.pop(process).await;
        self.signal();
        result
    }

    fn has_synced(&self) -> bool {
        self.inner.has_synced()
    }

    fn len(&self) -> usize {
        self.inner.len()
    }

    fn close(&self) {
        self.inner.close();
    }

    fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }
}
