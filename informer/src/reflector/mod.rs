//! The reflector: keeps a [`Queue`] fed with the state of one kind of object, from a
//! [`ListerWatcher`], through disconnects, compactions and relists.
//!
//! Every decision (which request next, with which resourceVersion, after how long) is made by
//! the sans-IO [`Machine`] of `informer-core`, whose module documentation lists the rules. This
//! module only performs what it asks: it sends the requests, reads the streams, waits on tokio's
//! clock (virtual in paused tests), and turns what the server says into queue operations:
//!
//! | server                                   | queue                                        |
//! |------------------------------------------|----------------------------------------------|
//! | a complete list (all pages)              | [`Queue::replace`]`(items, list rv)`         |
//! | a streaming list up to its end bookmark  | [`Queue::replace`]`(items, bookmark rv)`     |
//! | `ADDED` / `MODIFIED` / `DELETED`         | [`Queue::add`] / [`Queue::update`] / [`Queue::delete`] |
//! | `BOOKMARK`                               | nothing (only the resourceVersion moves)     |
//! | every resync period (never the server)   | [`Queue::resync`]                            |
//!
//! # Memory during a relist
//!
//! While the items of a list (or the events of a streaming list) accumulate, each object whose
//! key is already in `known_objects` (the informer's store) with the same resourceVersion is
//! replaced, right away, by the stored `Arc<K>`: the freshly decoded copy is dropped item by
//! item, before the transform even runs. Lists are read through
//! [`ListerWatcher::list_into`], so a backend that decodes as the response arrives (informer-kube
//! does) hands each item over as soon as it is decoded: a relist answered in one response
//! (relists at a specific resourceVersion are not paginated) holds neither the whole body nor
//! a second decoded copy of the unchanged objects. A relist of unchanged objects therefore holds
//! one copy of each object, not two; only objects that changed are held twice until the
//! replace.
//!
//! The versions are compared without reading the stored object
//! ([`KnownObjects::resource_version_of`]). A store that cannot hand out its object without
//! building it (one that keeps objects encoded) gets only the key of an unchanged object
//! ([`Listed::Unchanged`], through [`Queue::replace_listed`]): nothing is decoded or held
//! for it. And when the keys are `namespace/name` (no custom
//! [`key_func`](ReflectorConfig::key_func)), a backend that can read an item's metadata
//! before decoding it (informer-kube) asks first ([`ListSink::unchanged`]): an unchanged item
//! is then not decoded at all, only scanned.
//!
//! # Objects as received
//!
//! When the store keeps objects encoded and takes their JSON as received
//! ([`KnownObjects::wants_raw`]) and no [transform](ReflectorConfig::transform) is set, the
//! reflector keeps each object's text beside it ([`ListSink::item_raw`],
//! [`ListerWatcher::watch_raw`]) and hands both to the queue ([`Queue::add_raw`],
//! [`Queue::update_raw`], [`Listed::Object`]), so that the store never encodes an object
//! again. Otherwise no text is kept. When the store also decodes text itself
//! ([`KnownObjects::decodes_raw`]), a listed object travels as its text alone
//! ([`Listed::Encoded`]), and the queue decodes it when it pops it. With `namespace/name` keys
//! and no shard selector, a backend that reads metadata from the text (informer-kube, the fake
//! server) hands items over undecoded ([`ListSink::item_text`]): each object is decoded once,
//! and a text that is JSON but not the object type is found at the pop (reported, left out)
//! instead of failing the list. Otherwise the reflector decodes each item (to key it and check
//! its shard) and drops the decoded copy. A list of a hundred thousand objects waits in the
//! queue as text, about a seventh of the memory of decoded Kubernetes objects, or smaller
//! still: a store that can pack a text into its own form packs each one as it is listed
//! ([`KnownObjects::pack_text`]; a compact store compresses it with its dictionary, about
//! 290 bytes for a realistic pod's 6.7 KB), and takes that form as it is when it is popped.
//!
//! A streaming list cannot take that path: its initial events are decoded to be keyed, and
//! their copy is dropped to keep the queue small, so the store decodes each object a second
//! time. [`WatchListMode::Auto`], the default, therefore settles to a paginated list
//! ([`WatchListMode::Off`]) when [`Reflector::new`] finds such a store (it wants and decodes
//! text), no transform and `namespace/name` keys; to a streaming list otherwise. Set
//! [`WatchListMode::On`] to stream regardless.
//!
//! # Lists that never end
//!
//! Each list is accounted against [`ListWatchConfig::list_limits`]: a continue token the server
//! already sent in the same list, more pages than `max_pages`, or more response bytes than
//! `max_bytes` (counted as they arrive, by backends that see bytes) fails the list with
//! [`Error::LimitExceeded`]; the items gathered so far are dropped and the list is retried
//! after a backoff, like any failed list.
//!
//! # Shards
//!
//! With a shard selector ([`ListWatchConfig::shard_selector`], or
//! [`Reflector::set_shard_selector`] at run time) every list, continue page, watch and
//! streaming list asks the server for one slice of the hash space (KEP-5866). Whatever the
//! server does, every decoded object is also checked against the selector and dropped when
//! outside it, before it is transformed, shared or queued: a server without the feature
//! sends everything and the cache still holds exactly the shard. The check is one FNV-1a
//! hash of a uid (or namespace) per object. Who did the work is [`ShardStats::filtering`]:
//! the server when a list answer echoes the selector (`metadata.shardInfo.selector`), the
//! client when a list answer lacks the echo or an object outside the shard arrives (said
//! once in the log, as a warning), unconfirmed while only streaming lists and watches have
//! run (they carry no echo). A change of selector ends the list, watch or backoff delay in
//! progress and relists at once with the new one; the queue's replace turns the change into
//! deletes and adds. Except that a list in progress (paginated, or a streaming list before
//! its end bookmark, whose watch then ends at the replace) that overlaps the new
//! selector, and whose replace would drop nothing the cache holds of it, completes first and
//! the new selector's list follows (a handover ending or a replica leaving during the list
//! for a range just gained would otherwise leave that range unowned for one more list, and
//! changes every list would starve it).
//!
//! # Bad input
//!
//! An undecodable watch line or an unknown event type is reported as a typed [`Error`] (to
//! tracing, the stats and the [watch-error handler](ReflectorConfig::watch_error_handler)); the
//! reflector then relists from the last good resourceVersion (as client-go does: re-watching
//! from it would bring the same bad event again), so nothing is lost. An object the key
//! function cannot key (one without a name, or one a custom
//! [`key_func`](ReflectorConfig::key_func) refuses), in a list or in a watch event, is reported
//! and skipped: no key can hold it, and re-watching would only bring it again (the server sends
//! the same history to every watch from before it), so the watch goes on, the event's
//! resourceVersion counting as seen, as client-go does. A list the queue refuses anyway (a
//! custom queue with rules of its own) counts as a failed list: it is reported, the reflector
//! does not call itself synced, and it relists after a backoff delay.
//! Nothing panics.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use informer::reflector::{Reflector, ReflectorConfig};
//! use informer_core::{KnownObjects, ListerWatcher, Object, Queue};
//! use tokio_util::sync::CancellationToken;
//!
//! async fn keep_in_sync<K: Object>(
//!     lister_watcher: Arc<dyn ListerWatcher<K>>,
//!     queue: Arc<dyn Queue<K>>,
//!     store: Arc<dyn KnownObjects<K>>,
//!     stop: CancellationToken,
//! ) {
//!     let config = ReflectorConfig { name: "pods".into(), ..ReflectorConfig::default() };
//!     let reflector = Reflector::new(lister_watcher, queue, Some(store), config);
//!     // Returns when `stop` is cancelled; every request in flight is abandoned.
//!     reflector.run(stop).await;
//!     println!("stopped at resourceVersion {:?}", reflector.last_synced_resource_version());
//! }
//! ```

mod config;

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use futures::StreamExt;
use informer_core::reflector::{EventAction, ListBudget, Machine, Next};
use informer_core::shard::{ShardFilter, ShardFiltering, ShardRange, ShardSelector};
use informer_core::{
    Error, ErrorChain, ErrorClass, ItemPeek, KeyError, KnownObjects, ListOptions, ListSink, Listed,
    ListerWatcher, Object, ObjectKey, Queue, QueueError, RawObject, RawWatchEvent, RawWatchStream,
    WatchEvent, WatchOptions, key_of,
};
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::metrics::ReflectorRecorder;
use crate::observability::{BeforeStep, OpenWatch};

pub use config::{
    FailureContext, LastError, ReflectorConfig, ReflectorStats, ShardStats, ShouldResync, Stage,
    Transform, WatchErrorHandler,
};
pub use informer_core::reflector::{
    BackoffConfig, Counters, Jitter, ListLimits, ListWatchConfig, RestartCounts, RestartReason,
    Then, WatchListMode,
};

/// Lists and watches one kind of object and feeds what it learns into a [`Queue`].
///
/// Build it with [`Reflector::new`], then [`run`](Reflector::run) it until a cancellation
/// token fires. It is `Send + Sync`: share it in an `Arc` to read
/// [`stats`](Reflector::stats) while it runs.
pub struct Reflector<K: Object> {
    lister_watcher: Arc<dyn ListerWatcher<K>>,
    queue: Arc<dyn Queue<K>>,
    known_objects: Option<Arc<dyn KnownObjects<K>>>,
    config: ReflectorConfig<K>,
    decisions: Mutex<Decisions>,
    observed: Mutex<Observed>,
    synced: tokio::sync::watch::Sender<bool>,
    /// A streaming list is in progress: requested, its end bookmark not yet replaced.
    streaming_list: tokio::sync::watch::Sender<bool>,
    running: AtomicBool,
    recorder: ReflectorRecorder,
    /// Listed objects the store held unchanged; of those, skipped before decoding; objects
    /// handed over with their JSON text (see [`ReflectorStats`]).
    unchanged: AtomicU64,
    undecoded: AtomicU64,
    raw_kept: AtomicU64,
    listed_as_text: AtomicU64,
    listed_packed: AtomicU64,
    /// The shard selector asked for ([`Reflector::set_shard_selector`]); the loop relists
    /// when it changes.
    shard_wanted: tokio::sync::watch::Sender<Option<ShardSelector>>,
    /// The client-side filter of the selector in effect, and the selector of the last list
    /// handed to the queue.
    shard: Mutex<ShardState>,
}

/// When a new shard selector takes effect ([`Reflector::when_to_reshard`]).
enum Reshard {
    /// Never: it is the selector in effect.
    Never,
    /// When the list in progress completes (or fails).
    AfterList,
    /// At once: the step in progress is dropped.
    Now,
}

/// What the reflector knows about its shard.
struct ShardState {
    filter: ShardFilter,
    listed: Option<ShardSelector>,
}

/// The state machine and the random numbers it is fed.
struct Decisions {
    machine: Machine,
    rng: StdRng,
}

/// What the driver records besides the machine's counters.
#[derive(Default)]
struct Observed {
    resyncs: u64,
    errors: u64,
    last_error: Option<LastError>,
}

/// Says that a streaming list is in progress until dropped (see `Reflector::streaming_list`).
struct StreamingList<'a>(&'a tokio::sync::watch::Sender<bool>);

impl<'a> StreamingList<'a> {
    fn open(flag: &'a tokio::sync::watch::Sender<bool>) -> Self {
        flag.send_replace(true);
        Self(flag)
    }
}

impl Drop for StreamingList<'_> {
    fn drop(&mut self) {
        self.0.send_replace(false);
    }
}

/// Clears the running flag when `run` returns or is dropped.
struct RunningGuard<'a>(&'a AtomicBool);

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// `Break` when the queue is closed: nothing more can be delivered.
type Flow = ControlFlow<(), Next>;

/// Where a list page's items go as they are decoded: keyed, swapped for the stored copy when
/// unchanged, and added to the list's items; bytes are counted against the list's budget.
struct Gather<'a, K: Object> {
    reflector: &'a Reflector<K>,
    items: &'a mut Vec<Listed<K>>,
    budget: &'a mut ListBudget,
    page: u32,
}

impl<K: Object> Gather<'_, K> {
    fn take(&mut self, item: K, raw: Option<&str>) {
        if !self.reflector.in_shard(&item) {
            // The server did not apply the shard selector: dropped before anything else.
            return;
        }
        match self.reflector.admit(item, raw, true) {
            Ok((_, entry)) => self.items.push(entry),
            Err(source) => self.unkeyable(source),
        }
    }

    /// Reports a list item that cannot be keyed; it is skipped, the rest of the list applied.
    fn unkeyable(&self, source: KeyError) {
        let error = Error::InvalidObject {
            context: format!(
                "{}: item {}",
                self.reflector.list_context(self.page),
                self.items.len() + 1
            ),
            source,
        };
        self.reflector.report(&error, Stage::ListItem, None);
    }
}

impl<K: Object> ListSink<K> for Gather<'_, K> {
    fn item(&mut self, item: K) -> Result<(), Error> {
        self.take(item, None);
        Ok(())
    }

    fn item_raw(&mut self, item: K, raw: &str) -> Result<(), Error> {
        self.take(item, Some(raw));
        Ok(())
    }

    fn received(&mut self, bytes: u64) -> Result<(), Error> {
        self.budget
            .received(bytes)
            .map_err(|limit| Error::limit(self.reflector.list_context(self.page), limit))
    }

    /// Relists only (the store is empty before the first list), and only with `namespace/name`
    /// keys, which an item's metadata gives before it is decoded.
    ///
    /// Not with a shard selector: an item kept as unchanged is never decoded, so the
    /// client-side shard check could not drop it (after a change of shard, against a server
    /// that does not filter).
    fn peeks(&self) -> bool {
        self.reflector.config.key_func.is_none()
            && self.reflector.known_objects.is_some()
            && self.reflector.has_synced()
            && self.reflector.shard_wanted.borrow().is_none()
    }

    /// When listed objects would travel as text alone anyway ([`Listed::Encoded`]) and
    /// nothing needs the decoded object: `namespace/name` keys (read from the text) and no
    /// shard selector (whose client-side check reads the uid).
    fn takes_text(&self) -> bool {
        text_store(
            &self.reflector.config,
            self.reflector.known_objects.as_ref(),
        ) && self.reflector.shard_wanted.borrow().is_none()
    }

    /// Keyed from its metadata and queued as text; an item without a name is reported and
    /// skipped, as a decoded one would be.
    fn item_text(&mut self, peek: &ItemPeek<'_>, raw: &str) -> Result<(), Error> {
        match peek.key() {
            Ok(key) => {
                let entry = self.reflector.as_text(key, raw);
                self.items.push(entry);
            }
            Err(source) => self.unkeyable(source),
        }
        Ok(())
    }

    fn unchanged(&mut self, peek: &ItemPeek<'_>) -> Result<bool, Error> {
        let Some(known) = &self.reflector.known_objects else {
            return Ok(false);
        };
        let (Some(listed), Ok(key)) = (peek.resource_version.as_deref(), peek.key()) else {
            // Decoded as usual (and reported if it cannot be keyed).
            return Ok(false);
        };
        if known.resource_version_of(key.as_str()).as_deref() != Some(listed) {
            return Ok(false);
        }
        self.items
            .push(self.reflector.unchanged(known.as_ref(), key, listed));
        self.reflector.undecoded.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }
}

/// Whether listed items can reach `known_objects` as their text alone, undecoded: the store
/// wants the text and decodes it itself, no transform changes the objects, and keys are
/// `namespace/name` (read from the text). A shard selector, which can change at run time, is
/// the one other condition ([`ListSink::takes_text`]).
fn text_store<K: Object>(
    config: &ReflectorConfig<K>,
    known_objects: Option<&Arc<dyn KnownObjects<K>>>,
) -> bool {
    config.transform.is_none()
        && config.key_func.is_none()
        && known_objects.is_some_and(|known| known.wants_raw() && known.decodes_raw())
}

impl<K: Object> Reflector<K> {
    /// A reflector reading from `lister_watcher` into `queue`.
    ///
    /// `known_objects` is the store the queue feeds (the informer's indexer), used to keep
    /// unchanged objects shared during relists (see the [module docs](self)); `None` works
    /// too, at the price of a second copy of each object while a relist is in progress.
    pub fn new(
        lister_watcher: Arc<dyn ListerWatcher<K>>,
        queue: Arc<dyn Queue<K>>,
        known_objects: Option<Arc<dyn KnownObjects<K>>>,
        mut config: ReflectorConfig<K>,
    ) -> Self {
        // `WatchListMode::Auto` settled once: off when listed items can reach the store as
        // text (`ListSink::takes_text`), the one case a paginated list syncs faster.
        let text_store = text_store(&config, known_objects.as_ref());
        config.list_watch.watch_list = config.list_watch.watch_list.settle(text_store);
        let rng = match config.seed {
            Some(seed) => StdRng::seed_from_u64(seed),
            None => StdRng::from_os_rng(),
        };
        let recorder = ReflectorRecorder::new(config.metrics.as_ref(), &config.name);
        let selector = config.list_watch.shard_selector.clone();
        Self {
            recorder,
            shard_wanted: tokio::sync::watch::Sender::new(selector.clone()),
            shard: Mutex::new(ShardState {
                filter: ShardFilter::new(selector),
                listed: None,
            }),
            decisions: Mutex::new(Decisions {
                machine: Machine::new(config.list_watch.clone()),
                rng,
            }),
            lister_watcher,
            queue,
            known_objects,
            config,
            observed: Mutex::new(Observed::default()),
            synced: tokio::sync::watch::Sender::new(false),
            streaming_list: tokio::sync::watch::Sender::new(false),
            running: AtomicBool::new(false),
            unchanged: AtomicU64::new(0),
            undecoded: AtomicU64::new(0),
            raw_kept: AtomicU64::new(0),
            listed_as_text: AtomicU64::new(0),
            listed_packed: AtomicU64::new(0),
        }
    }

    /// Lists, watches and resyncs until `cancel` fires (or the queue is closed), then returns.
    ///
    /// Cancel-safe: dropping the future, or cancelling the token, abandons the request in
    /// flight; no task is spawned. Running again later resynchronises with a relist from the
    /// last seen resourceVersion. A second call while one is running does nothing but wait
    /// for its own token.
    pub async fn run(&self, cancel: CancellationToken) {
        if self.running.swap(true, Ordering::AcqRel) {
            tracing::warn!(reflector = self.name(), "reflector is already running");
            cancel.cancelled().await;
            return;
        }
        let _guard = RunningGuard(&self.running);
        tracing::debug!(reflector = self.name(), "reflector starting");
        tokio::select! {
            biased;
            () = cancel.cancelled() => {}
            () = self.drive() => {}
            () = self.resync_loop() => {}
        }
        tracing::debug!(reflector = self.name(), "reflector stopped");
    }

    /// The last resourceVersion seen: of the last complete list, or of the last watch event or
    /// bookmark since. `None` before the first list completes.
    pub fn last_synced_resource_version(&self) -> Option<String> {
        self.decisions
            .lock()
            .machine
            .last_synced_resource_version()
            .map(str::to_owned)
    }

    /// Whether a full list has been handed to the queue.
    pub fn has_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Whether [`run`](Reflector::run) is in progress.
    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::Acquire)
    }

    /// The configuration (as given: the shard selector in effect is
    /// [`shard_selector`](Self::shard_selector)).
    pub fn config(&self) -> &ReflectorConfig<K> {
        &self.config
    }

    /// Lists and watches only the objects of `selector` from now on (`None`: every object).
    ///
    /// A running reflector ends its list, watch or backoff delay at once and relists with
    /// the new selector from the last seen resourceVersion (except that a list in progress,
    /// paginated or streaming before its end bookmark, that overlaps the new selector and
    /// would drop nothing the cache holds of it, such
    /// as the list for a range just gained when the old range's handover ends, completes
    /// first: the new selector's list follows it); the queue's replace then
    /// delivers deletes for the objects it no longer owns and adds for the new ones, and the
    /// objects in both shards keep their state (unchanged ones are not even decoded twice:
    /// see the [module docs](self)). A reflector not running uses it when it next runs.
    /// Setting the selector already asked for does nothing.
    ///
    /// Whatever the server does with it, the reflector also filters every decoded object
    /// with it ([`ShardStats::filtering`] says who did the work).
    pub fn set_shard_selector(&self, selector: Option<ShardSelector>) {
        self.shard_wanted.send_if_modified(|wanted| {
            let changed = *wanted != selector;
            *wanted = selector;
            changed
        });
    }

    /// The shard selector asked for: the configured one, or the last given to
    /// [`set_shard_selector`](Self::set_shard_selector).
    pub fn shard_selector(&self) -> Option<ShardSelector> {
        self.shard_wanted.borrow().clone()
    }

    /// The name given in the configuration, or `"reflector"`.
    pub fn name(&self) -> &str {
        if self.config.name.is_empty() {
            "reflector"
        } else {
            &self.config.name
        }
    }

    /// What the reflector has done so far.
    pub fn stats(&self) -> ReflectorStats {
        let (counters, last_synced_resource_version, streaming) = {
            let decisions = self.decisions.lock();
            let m = &decisions.machine;
            (
                m.counters().clone(),
                m.last_synced_resource_version().map(str::to_owned),
                m.last_list_streamed(),
            )
        };
        let shard = {
            let state = self.shard.lock();
            ShardStats {
                selector: self.shard_selector(),
                listed_selector: state.listed.clone(),
                filtering: state.filter.mode(),
                dropped: state.filter.dropped(),
            }
        };
        let observed = self.observed.lock();
        ReflectorStats {
            shard,
            counters,
            resyncs: observed.resyncs,
            errors: observed.errors,
            last_error: observed.last_error.clone(),
            last_synced_resource_version,
            has_synced: self.has_synced(),
            streaming,
            listed_unchanged: self.unchanged.load(Ordering::Relaxed),
            listed_undecoded: self.undecoded.load(Ordering::Relaxed),
            raw_kept: self.raw_kept.load(Ordering::Relaxed),
            listed_as_text: self.listed_as_text.load(Ordering::Relaxed),
            listed_packed: self.listed_packed.load(Ordering::Relaxed),
        }
    }

    /// Feeds the machine one outcome, with the current time and a fresh random sample.
    fn decide<R>(&self, f: impl FnOnce(&mut Machine, Instant, f64) -> R) -> R {
        let now = tokio::time::Instant::now().into_std();
        let mut decisions = self.decisions.lock();
        let random = decisions.rng.random::<f64>();
        let before = BeforeStep::of(&decisions.machine);
        let result = f(&mut decisions.machine, now, random);
        before.after(self.name(), &self.recorder, &decisions.machine);
        result
    }

    /// The list/watch loop. Returns only when the queue is closed.
    async fn drive(&self) {
        let mut items: Vec<Listed<K>> = Vec::new();
        let mut budget = ListBudget::new(self.config.list_watch.list_limits);
        let mut list_started = tokio::time::Instant::now();
        let mut shard_wanted = self.shard_wanted.subscribe();
        let wanted = shard_wanted.borrow_and_update().clone();
        let mut next = if self.decisions.lock().machine.config().shard_selector == wanted {
            self.decide(|m, now, r| m.start(now, r))
        } else {
            // Changed while the reflector was not running.
            self.reshard(wanted)
        };
        // A selector that waits for the list in progress to complete.
        let mut after_list: Option<Option<ShardSelector>> = None;
        let mut streaming_list = self.streaming_list.subscribe();
        loop {
            let paginated = matches!(
                next,
                Next::List(_) | Next::ListNextPage(_) | Next::Replace { .. }
            );
            let streams = matches!(&next, Next::Watch(w) if w.send_initial_events == Some(true));
            let flow = {
                let step = self.step(next, &mut items, &mut budget, &mut list_started);
                tokio::pin!(step);
                loop {
                    tokio::select! {
                        biased;
                        // The sender lives in `self`: `changed` cannot fail while `self` is
                        // borrowed.
                        Ok(()) = shard_wanted.changed() => {
                            let wanted = shard_wanted.borrow_and_update().clone();
                            // A list in progress: paginated, or streaming before its end
                            // bookmark.
                            let listing = paginated || (streams && *self.streaming_list.borrow());
                            match self.when_to_reshard(listing, wanted.as_ref()) {
                                Reshard::AfterList => after_list = Some(wanted),
                                // Back to the list's own selector.
                                Reshard::Never => after_list = None,
                                Reshard::Now => break None,
                            }
                        }
                        // The streaming list a new selector waits for is replaced (or ended):
                        // its watch, still with the old selector, ends here for the new one.
                        _ = streaming_list.wait_for(|open| !open), if streams && after_list.is_some() => {
                            break None;
                        }
                        flow = &mut step => break Some(flow),
                    }
                }
            };
            next = match flow {
                Some(ControlFlow::Continue(next))
                    if !matches!(next, Next::ListNextPage(_) | Next::Replace { .. }) =>
                {
                    match after_list.take() {
                        // The list is over (replaced, or failed): now the new selector's.
                        Some(wanted) => self.reshard(wanted),
                        None => next,
                    }
                }
                Some(ControlFlow::Continue(next)) => next,
                Some(ControlFlow::Break(())) => return,
                None => {
                    // The step in progress was dropped: a partial list is of no use.
                    items = Vec::new();
                    after_list = None;
                    let wanted = shard_wanted.borrow_and_update().clone();
                    self.reshard(wanted)
                }
            };
        }
    }

    /// When a new shard selector `wanted` takes effect, given whether a list is in progress
    /// (`listing`: paginated, or streaming before its end bookmark; made with the machine's
    /// selector).
    ///
    /// A list in progress completes first when it holds objects `wanted` selects (it
    /// overlaps `wanted`) and its replace drops none that the cache holds and `wanted`
    /// selects (it covers what the last list holds of `wanted`). Restarted instead, it would
    /// leave a range this replica just gained unowned for one more list, and a change every
    /// list would never let a list complete: a handover ending narrows the selector, a
    /// replica leaving grows it, each at any moment. A selector disjoint from the list in
    /// progress (or a first one for an unsharded informer, or none) interrupts it.
    fn when_to_reshard(&self, listing: bool, wanted: Option<&ShardSelector>) -> Reshard {
        let (current, synced) = {
            let decisions = self.decisions.lock();
            let machine = &decisions.machine;
            (
                machine.config().shard_selector.clone(),
                machine.has_synced(),
            )
        };
        let (current, wanted) = match (&current, wanted) {
            (None, None) => return Reshard::Never,
            (Some(current), Some(wanted)) if current == wanted => return Reshard::Never,
            (Some(current), Some(wanted)) if listing => (current, wanted),
            _ => return Reshard::Now,
        };
        let listed = match (self.shard.lock().listed.clone(), synced) {
            (Some(listed), _) => Some(listed),
            // The last list was of every object.
            (None, true) => ShardSelector::new(current.field(), [ShardRange::ALL]).ok(),
            (None, false) => None,
        };
        let overlaps = current.intersection(wanted).is_some();
        let keeps_cache = listed
            .and_then(|listed| listed.intersection(wanted))
            .is_none_or(|held| current.covers(&held));
        if overlaps && keeps_cache {
            Reshard::AfterList
        } else {
            Reshard::Now
        }
    }

    /// A new shard selector: the filter takes it, and the machine relists with it at once
    /// (whatever was in progress has been dropped).
    fn reshard(&self, selector: Option<ShardSelector>) -> Next {
        {
            let mut state = self.shard.lock();
            state.filter.set_selector(selector.clone());
            // Unconfirmed (or off) again: said by the line below.
            state.filter.take_change();
        }
        tracing::info!(
            reflector = self.name(),
            shard_selector = selector.as_ref().map(ToString::to_string),
            "shard selector changed: relisting with it"
        );
        self.decide(|m, now, r| m.set_shard_selector(selector, now, r))
    }

    /// Whether `obj` belongs to the shard (always without a selector); says once when the
    /// objects show that the server does not filter.
    fn in_shard(&self, obj: &K) -> bool {
        let (admitted, change) = {
            let mut state = self.shard.lock();
            let admitted = state.filter.admit(obj);
            (admitted, state.filter.take_change())
        };
        if let Some(mode) = change {
            self.filtering_changed(mode);
        }
        admitted
    }

    /// A list answer's shard echo (`metadata.shardInfo.selector`).
    fn list_echo(&self, echo: Option<&str>) {
        let change = {
            let mut state = self.shard.lock();
            state.filter.list_answered(echo);
            state.filter.take_change()
        };
        if let Some(mode) = change {
            self.filtering_changed(mode);
        }
    }

    /// Says, once per change, who filters the shard.
    fn filtering_changed(&self, mode: ShardFiltering) {
        let selector = self.shard.lock().filter.selector().map(ToString::to_string);
        match mode {
            ShardFiltering::Client => tracing::warn!(
                reflector = self.name(),
                shard_selector = selector,
                "the server does not apply the shard selector (no shardInfo echo on a list, or \
                 an object outside the shard): filtering every object after decoding it"
            ),
            ShardFiltering::Server => tracing::info!(
                reflector = self.name(),
                shard_selector = selector,
                "the server applies the shard selector (its list answers echo it)"
            ),
            other => tracing::debug!(
                reflector = self.name(),
                shard_selector = selector,
                filtering = %other,
                "shard filtering"
            ),
        }
    }

    /// Performs one request of the machine (or waits), and answers the next one. `Break`
    /// when the queue is closed. Dropping it abandons what is in progress.
    async fn step(
        &self,
        next: Next,
        items: &mut Vec<Listed<K>>,
        budget: &mut ListBudget,
        list_started: &mut tokio::time::Instant,
    ) -> Flow {
        ControlFlow::Continue(match next {
            Next::List(options) => {
                items.clear();
                budget.restart();
                *list_started = tokio::time::Instant::now();
                self.recorder.list_started();
                tracing::debug!(
                    reflector = self.name(),
                    resource_version = options.resource_version.as_deref(),
                    limit = options.limit,
                    "listing"
                );
                self.list_page(&options, items, budget)
                    .instrument(tracing::debug_span!("list", reflector = self.name()))
                    .await
            }
            Next::ListNextPage(options) => {
                self.list_page(&options, items, budget)
                    .instrument(tracing::debug_span!("list", reflector = self.name()))
                    .await
            }
            Next::Replace { resource_version } => {
                let objects = std::mem::take(items);
                match self.replace(objects, &resource_version, *list_started)? {
                    None => self.decide(|m, now, r| m.replaced(now, r)),
                    Some(refused) => {
                        // Never claim sync with the list missing: back off and relist.
                        let next = self.decide(|m, now, r| m.replace_failed(now, r));
                        self.report(&refused, Stage::List, Some(&next));
                        next
                    }
                }
            }
            Next::Watch(options) => {
                self.watch(&options)
                    .instrument(tracing::debug_span!("watch", reflector = self.name()))
                    .await?
            }
            Next::Wait { delay, then } => {
                tracing::debug!(reflector = self.name(), ?delay, ?then, "backing off");
                tokio::time::sleep(delay).await;
                self.decide(|m, now, r| m.wait_elapsed(now, r))
            }
        })
    }

    /// Requests one list page and adds its items to `items` as they are decoded, accounting
    /// the page against the list's `budget`.
    async fn list_page(
        &self,
        options: &ListOptions,
        items: &mut Vec<Listed<K>>,
        budget: &mut ListBudget,
    ) -> Next {
        let page = budget.pages() + 1;
        let mut sink = Gather {
            reflector: self,
            items,
            budget,
            page,
        };
        let result = match self.lister_watcher.list_into(options, &mut sink).await {
            Ok(info) => match budget.page(info.continue_token.as_deref()) {
                Ok(()) => Ok(info),
                Err(limit) => Err(Error::limit(self.list_context(page), limit)),
            },
            Err(error) => Err(error),
        };
        match result {
            Ok(info) => {
                self.list_echo(info.shard_info_selector.as_deref());
                self.decide(|m, now, r| {
                    m.list_succeeded(
                        &info.resource_version,
                        info.continue_token.as_deref(),
                        now,
                        r,
                    )
                })
            }
            Err(error) => {
                let next = self.decide(|m, now, r| m.list_failed(&error, now, r));
                self.report(&error, Stage::List, Some(&next));
                next
            }
        }
    }

    /// `listing pods (page 3)`.
    fn list_context(&self, page: u32) -> String {
        format!("listing {} (page {page})", self.name())
    }

    /// Starts a watch and reads it until it ends, fails, or the queue closes.
    // The stream's error is the contract's `Error`, passed through unchanged.
    #[allow(clippy::result_large_err)]
    async fn watch(&self, options: &WatchOptions) -> Flow {
        let streaming = options.send_initial_events == Some(true);
        // Cleared when the list is replaced, or when this watch ends or is dropped.
        let _streaming_list = streaming.then(|| StreamingList::open(&self.streaming_list));
        self.recorder.watch_started(streaming);
        let started: Result<RawWatchStream<K>, Error> = if self.keeps_raw() {
            self.lister_watcher.watch_raw(options).await
        } else {
            self.lister_watcher.watch(options).await.map(|stream| {
                Box::pin(stream.map(|item| item.map(|event| RawWatchEvent { event, raw: None })))
                    as RawWatchStream<K>
            })
        };
        let mut stream = match started {
            Ok(stream) => stream,
            Err(error) => {
                let next = self.decide(|m, now, r| m.watch_start_failed(&error, now, r));
                let stage = if streaming {
                    Stage::StreamingList
                } else {
                    Stage::WatchStart
                };
                self.report(&error, stage, Some(&next));
                return ControlFlow::Continue(next);
            }
        };
        let mut open = OpenWatch::new(
            self.name(),
            &self.recorder,
            options.resource_version.as_deref(),
            streaming,
        );
        let mut deadline = self
            .decide(|m, now, _| m.watch_started(now))
            .map(tokio::time::Instant::from_std);
        // The streaming list's objects until its end bookmark, by key.
        let mut buffer: HashMap<ObjectKey, Listed<K>> = HashMap::new();
        loop {
            let item = match deadline {
                Some(at) => tokio::select! {
                    item = stream.next() => item,
                    () = tokio::time::sleep_until(at) => {
                        tracing::warn!(
                            reflector = self.name(),
                            buffered = buffer.len(),
                            idle = ?self.config.list_watch.initial_events_timeout,
                            "the streaming list made no progress (no object, no \
                             initial-events-end bookmark) within the idle limit; falling back \
                             to a paginated list for this round"
                        );
                        return ControlFlow::Continue(
                            self.decide(|m, now, r| m.initial_events_timed_out(now, r)),
                        );
                    }
                },
                None => stream.next().await,
            };
            let stage = if deadline.is_some() {
                Stage::StreamingList
            } else {
                Stage::Watch
            };
            let (event, raw) = match item {
                None => {
                    return ControlFlow::Continue(self.decide(|m, now, r| m.watch_ended(now, r)));
                }
                Some(Err(error)) => return ControlFlow::Continue(self.watch_failed(&error, stage)),
                Some(Ok(RawWatchEvent { event, raw })) => (event, raw),
            };
            open.events += 1;
            if let WatchEvent::Added(obj) | WatchEvent::Modified(obj) | WatchEvent::Deleted(obj) =
                &event
                && !self.in_shard(obj)
            {
                // Outside the shard (the server did not filter): its resourceVersion counts
                // as seen, nothing else. The hashed fields never change, so no event of an
                // object inside the shard is ever dropped.
                let (action, moved) = self.receive(&event);
                deadline = moved;
                match action {
                    EventAction::Stop(next) => return ControlFlow::Continue(next),
                    _ => continue,
                }
            }
            if let WatchEvent::Added(obj) | WatchEvent::Modified(obj) | WatchEvent::Deleted(obj) =
                &event
                && let Err(source) = self.key(obj)
            {
                let error = Error::InvalidObject {
                    context: format!(
                        "watching {}: {} event after resourceVersion {:?}",
                        self.name(),
                        event.type_name(),
                        self.last_synced_resource_version().unwrap_or_default()
                    ),
                    source,
                };
                // No key can hold it. Re-watching would only bring it again (the server sends
                // the same history to every watch from before it), so it is reported and
                // skipped, its resourceVersion counting as seen, and the watch goes on.
                self.report(&error, stage, None);
                let (action, moved) = self.receive(&event);
                deadline = moved;
                match action {
                    EventAction::Stop(next) => return ControlFlow::Continue(next),
                    _ => continue,
                }
            }
            let (action, moved) = self.receive(&event);
            deadline = moved;
            match action {
                EventAction::Apply => self.apply(event, raw)?,
                EventAction::Buffer => self.buffer(event, raw, &mut buffer),
                EventAction::Skip => {}
                EventAction::ReplaceBuffered { resource_version } => {
                    let objects: Vec<Listed<K>> =
                        std::mem::take(&mut buffer).into_values().collect();
                    if let Some(refused) = self.replace(objects, &resource_version, open.started)? {
                        let next = self.decide(|m, now, r| m.replace_failed(now, r));
                        self.report(&refused, Stage::StreamingList, Some(&next));
                        return ControlFlow::Continue(next);
                    }
                    self.streaming_list.send_replace(false);
                    deadline = None;
                }
                EventAction::Stop(next) => {
                    if let WatchEvent::Error(status) = event {
                        let error = Error::api(
                            format!(
                                "watching {}: ERROR event after resourceVersion {:?}",
                                self.name(),
                                self.last_synced_resource_version().unwrap_or_default()
                            ),
                            status,
                        );
                        self.report(&error, stage, Some(&next));
                    }
                    return ControlFlow::Continue(next);
                }
            }
        }
    }

    /// Feeds the machine one event; returns what to do with it and the streaming list's
    /// deadline after it (moved on by every object of the initial events).
    fn receive(&self, event: &WatchEvent<K>) -> (EventAction, Option<tokio::time::Instant>) {
        self.decide(|m, now, r| {
            let action = m.event_received(event, now, r);
            let deadline = m
                .initial_events_deadline()
                .map(tokio::time::Instant::from_std);
            (action, deadline)
        })
    }

    fn watch_failed(&self, error: &Error, stage: Stage) -> Next {
        let next = self.decide(|m, now, r| m.watch_failed(error, now, r));
        self.report(error, stage, Some(&next));
        next
    }

    /// The key of `obj` under the queue's key function.
    fn key(&self, obj: &K) -> Result<ObjectKey, KeyError> {
        match &self.config.key_func {
            Some(key_func) => key_func(obj),
            None => key_of(obj),
        }
    }

    /// Keys a listed object and decides what the list holds of it. When `reuse` is set and
    /// `known_objects` holds the same resourceVersion (compared without reading the stored
    /// object, [`KnownObjects::resource_version_of`]): the stored `Arc` if the store can hand
    /// it out without building one ([`KnownObjects::shared_by_key`]), else only the key
    /// ([`Listed::Unchanged`]); the decoded copy is dropped at once either way. Otherwise the
    /// transformed object in a new `Arc`, with its text when the store wants it
    /// ([`Reflector::keeps_raw`]), or only the text and key when the store also decodes text
    /// ([`Listed::Encoded`]).
    fn admit(
        &self,
        obj: K,
        raw: Option<&str>,
        reuse: bool,
    ) -> Result<(ObjectKey, Listed<K>), KeyError> {
        let key = self.key(&obj)?;
        if reuse
            && let Some(known) = &self.known_objects
            && let Some(listed) = obj.object_resource_version()
            && known.resource_version_of(key.as_str()).as_deref() == Some(listed)
        {
            let entry = self.unchanged(known.as_ref(), key.clone(), listed);
            return Ok((key, entry));
        }
        if let Some(raw) = raw.filter(|_| self.keeps_raw()) {
            if self.keeps_text_only() {
                // Keyed and checked: the decoded copy goes, the text waits in the queue.
                drop(obj);
                return Ok((key.clone(), self.as_text(key, raw)));
            }
            let raw = RawObject::new(raw);
            self.raw_kept.fetch_add(1, Ordering::Relaxed);
            let object = Arc::new(obj);
            return Ok((
                key,
                Listed::Object {
                    object,
                    raw: Some(raw),
                },
            ));
        }
        let object = Arc::new(self.transform(obj));
        Ok((key, Listed::Object { object, raw: None }))
    }

    /// What a list holds of an object the store holds at the `listed` resourceVersion: the
    /// stored `Arc` when the store shares it, else the key.
    fn unchanged(&self, known: &dyn KnownObjects<K>, key: ObjectKey, listed: &str) -> Listed<K> {
        self.unchanged.fetch_add(1, Ordering::Relaxed);
        match known.shared_by_key(key.as_str()) {
            Some(stored) if stored.object_resource_version() == Some(listed) => {
                Listed::object(stored)
            }
            _ => Listed::Unchanged(key),
        }
    }

    /// Whether objects travel with their JSON text: the store keeps objects encoded and
    /// takes the text as received ([`KnownObjects::wants_raw`]), and no transform changes
    /// objects after they are decoded (the text would no longer be their encoding).
    fn keeps_raw(&self) -> bool {
        self.config.transform.is_none()
            && self
                .known_objects
                .as_ref()
                .is_some_and(|known| known.wants_raw())
    }

    /// A listed object as its text alone, counted: in the store's own form if it packs it
    /// ([`KnownObjects::pack_text`]; a compact store compresses it), so that a list waits in
    /// the queue at about the size the store will keep.
    fn as_text(&self, key: ObjectKey, text: &str) -> Listed<K> {
        self.raw_kept.fetch_add(1, Ordering::Relaxed);
        self.listed_as_text.fetch_add(1, Ordering::Relaxed);
        let packed = self
            .known_objects
            .as_ref()
            .and_then(|known| known.pack_text(&key, text));
        let raw = match packed {
            Some(packed) => {
                self.listed_packed.fetch_add(1, Ordering::Relaxed);
                packed
            }
            None => RawObject::new(text),
        };
        Listed::Encoded { key, raw }
    }

    /// Whether listed objects travel as text alone ([`Listed::Encoded`]): they travel with
    /// their text and the store decodes text itself ([`KnownObjects::decodes_raw`]).
    fn keeps_text_only(&self) -> bool {
        self.known_objects
            .as_ref()
            .is_some_and(|known| known.decodes_raw())
    }

    fn transform(&self, obj: K) -> K {
        match &self.config.transform {
            Some(transform) => transform(obj),
            None => obj,
        }
    }

    /// Applies a watch event to the queue, with its object's text when the store wants it.
    fn apply(&self, event: WatchEvent<K>, raw: Option<RawObject>) -> ControlFlow<()> {
        let raw = raw.filter(|_| self.keeps_raw());
        if raw.is_some() && !matches!(event, WatchEvent::Deleted(_)) {
            self.raw_kept.fetch_add(1, Ordering::Relaxed);
        }
        let result = match (event, raw) {
            (WatchEvent::Added(obj), Some(raw)) => self.queue.add_raw(Arc::new(obj), raw),
            (WatchEvent::Modified(obj), Some(raw)) => self.queue.update_raw(Arc::new(obj), raw),
            (WatchEvent::Added(obj), None) => self.queue.add(Arc::new(self.transform(obj))),
            (WatchEvent::Modified(obj), None) => self.queue.update(Arc::new(self.transform(obj))),
            (WatchEvent::Deleted(obj), _) => self.queue.delete(Arc::new(self.transform(obj))),
            (WatchEvent::Bookmark(_) | WatchEvent::Error(_), _) => Ok(()),
        };
        match result {
            Ok(()) => ControlFlow::Continue(()),
            Err(QueueError::Closed) => self.queue_closed(),
            Err(source) => {
                // Nothing better to do than report it and go on (client-go logs it).
                let error = Error::Queue {
                    context: format!("a watch event for {}", self.name()),
                    source,
                };
                self.report(&error, Stage::Watch, None);
                ControlFlow::Continue(())
            }
        }
    }

    /// Applies a streaming list's event to its buffer.
    fn buffer(
        &self,
        event: WatchEvent<K>,
        raw: Option<RawObject>,
        buffer: &mut HashMap<ObjectKey, Listed<K>>,
    ) {
        match event {
            WatchEvent::Added(obj) | WatchEvent::Modified(obj) => {
                // The key was checked before the machine saw the event.
                if let Ok((key, entry)) = self.admit(obj, raw.as_ref().map(RawObject::as_str), true)
                {
                    buffer.insert(key, entry);
                }
            }
            WatchEvent::Deleted(obj) => {
                if let Ok(key) = self.key(&obj) {
                    buffer.remove(&key);
                }
            }
            WatchEvent::Bookmark(_) | WatchEvent::Error(_) => {}
        }
    }

    /// Hands a complete list to the queue. `Continue(None)`: applied; `Continue(Some(error))`:
    /// the queue refused it (nothing was applied, the reflector is not synced by it);
    /// `Break`: the queue is closed.
    fn replace(
        &self,
        entries: Vec<Listed<K>>,
        resource_version: &str,
        started: tokio::time::Instant,
    ) -> ControlFlow<(), Option<Error>> {
        let count = entries.len();
        let selector = self
            .decisions
            .lock()
            .machine
            .config()
            .shard_selector
            .clone();
        let replaced = match &self.known_objects {
            Some(known) => self
                .queue
                .replace_listed(entries, resource_version, known.as_ref()),
            // Without a store every entry is an object (only a store makes keys unchanged
            // or keeps text alone).
            None => {
                let objects = entries
                    .into_iter()
                    .filter_map(|entry| match entry {
                        Listed::Object { object, .. } => Some(object),
                        Listed::Unchanged(_) | Listed::Encoded { .. } => None,
                    })
                    .collect();
                self.queue.replace(objects, resource_version)
            }
        };
        match replaced {
            Ok(()) => self.shard.lock().listed = selector,
            Err(QueueError::Closed) => return self.queue_closed(),
            Err(source) => {
                return ControlFlow::Continue(Some(Error::Queue {
                    context: format!(
                        "the list of {} ({count} objects) at resourceVersion {resource_version:?}",
                        self.name()
                    ),
                    source,
                }));
            }
        }
        let took = started.elapsed();
        self.recorder.list_completed(took, count);
        tracing::debug!(
            reflector = self.name(),
            count,
            resource_version,
            ?took,
            "list replaced"
        );
        if !self.synced.send_replace(true) {
            tracing::info!(
                reflector = self.name(),
                count,
                resource_version,
                "synced: the first full list is in the queue"
            );
        }
        ControlFlow::Continue(None)
    }

    fn queue_closed<T>(&self) -> ControlFlow<(), T> {
        tracing::debug!(reflector = self.name(), "queue closed; reflector stops");
        ControlFlow::Break(())
    }

    /// Calls [`Queue::resync`] every resync period once the first list is in. Returns only
    /// when the queue is closed.
    ///
    /// The timer is re-armed a full period after each check has run (as client-go's reflector
    /// does), not at a fixed rate: a handler's next resync is counted from the moment its check
    /// ran, so a fixed-rate tick that fires a little earlier relative to that moment than the
    /// previous one would find it not yet due and skip it for a whole period.
    async fn resync_loop(&self) {
        let Some(period) = self.config.resync_period.filter(|p| !p.is_zero()) else {
            return std::future::pending().await;
        };
        let mut synced = self.synced.subscribe();
        // The sender lives in `self`, so waiting cannot fail.
        let _ = synced.wait_for(|synced| *synced).await;
        let mut due = tokio::time::Instant::now() + period;
        loop {
            // A timer never fires before its deadline; the loop only guards the invariant
            // the handlers' bookkeeping relies on (a check never comes early).
            while tokio::time::Instant::now() < due {
                tokio::time::sleep_until(due).await;
            }
            let checked = self.resync_check();
            due = tokio::time::Instant::now() + period;
            if checked.is_break() {
                return;
            }
        }
    }

    /// One resync check: asks `should_resync`, then resyncs the queue. `Break` when the queue
    /// is closed.
    fn resync_check(&self) -> ControlFlow<()> {
        if self
            .config
            .should_resync
            .as_ref()
            .is_some_and(|should| !should())
        {
            return ControlFlow::Continue(());
        }
        match self.queue.resync() {
            Ok(()) => self.observed.lock().resyncs += 1,
            Err(QueueError::Closed) => return ControlFlow::Break(()),
            Err(error) => {
                tracing::warn!(reflector = self.name(), error = %error, "resync failed")
            }
        }
        ControlFlow::Continue(())
    }

    /// Logs a failure, records it, and tells the watch-error handler.
    fn report(&self, error: &Error, stage: Stage, next: Option<&Next>) {
        let (then, delay) = match next {
            Some(Next::Wait { delay, then }) => (Some(*then), *delay),
            Some(Next::List(_) | Next::ListNextPage(_)) => (Some(Then::List), Default::default()),
            Some(Next::Watch(options)) if options.send_initial_events == Some(true) => {
                (Some(Then::Relist), Default::default())
            }
            Some(Next::Watch(_)) => (Some(Then::Rewatch), Default::default()),
            Some(Next::Replace { .. }) | None => (None, Default::default()),
        };
        let message = ErrorChain(error).to_string();
        let class = error.class();
        if class == ErrorClass::Expired {
            // Routine: history moved on while the watch was away; a relist follows.
            tracing::info!(
                reflector = self.name(),
                ?stage,
                ?class,
                ?then,
                ?delay,
                "{message}"
            );
        } else {
            tracing::warn!(
                reflector = self.name(),
                ?stage,
                ?class,
                ?then,
                ?delay,
                "{message}"
            );
        }
        {
            let mut observed = self.observed.lock();
            observed.errors += 1;
            observed.last_error = Some(LastError {
                stage,
                class,
                message,
                at: tokio::time::Instant::now().into_std(),
            });
        }
        if let Some(handler) = &self.config.watch_error_handler {
            let resource_version = self.last_synced_resource_version();
            let context = FailureContext {
                reflector: self.name(),
                stage,
                resource_version: resource_version.as_deref(),
                then,
                delay,
            };
            if catch_unwind(AssertUnwindSafe(|| handler(error, &context))).is_err() {
                tracing::error!(reflector = self.name(), "the watch-error handler panicked");
            }
        }
    }
}
