//! The reflector's state machine: outcomes in, the next request out.

use std::time::{Duration, Instant};

use crate::reflector::backoff::{Backoff, BackoffConfig, unit};
use crate::reflector::list_limits::ListLimits;
use crate::shard::ShardSelector;
use crate::{
    Error, ErrorClass, ListOptions, Object, ResourceVersionMatch, Status, WatchEvent, WatchOptions,
};

/// How long a watch must last, when it delivered nothing, not to count as a failure.
pub const MIN_HEALTHY_WATCH: Duration = Duration::from_secs(1);

/// Whether the reflector loads its cache with a streaming initial list ("WatchList").
///
/// The default is [`WatchListMode::Auto`]: a streaming list ([`On`](WatchListMode::On)), as in
/// client-go since 1.35 (its `WatchListClient` gate is on by default: a server that refuses
/// the request costs one refused watch before a paginated list, and the server keeps no full
/// list in memory to answer), except for a store that reads listed objects from their text
/// itself, which syncs about twice as fast from a paginated list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum WatchListMode {
    /// Paginated list, then watch.
    Off,
    /// One watch with `sendInitialEvents=true`; falls back to a paginated list, for that
    /// round only, when the server refuses the request or when the stream stops making
    /// progress before its end bookmark (nothing for [`ListWatchConfig::initial_events_timeout`]:
    /// a server that ignores the parameter). The next relist streams again.
    On,
    /// [`On`](WatchListMode::On), unless the store the reflector feeds decodes listed objects
    /// from their JSON text itself (a compact store handed lists as text, the `informer`
    /// crate's `CompactOptions::takes_lists_as_text`): then [`Off`](WatchListMode::Off). A
    /// paginated list's items reach such a store undecoded, while a streaming list's initial
    /// events arrive decoded and are decoded again when stored (at 100k pods about twice the
    /// sync time). The runtime's reflector settles it once, when it is built, from its store
    /// and transform; a bare [`Machine`], which knows no store, streams. The default.
    #[default]
    Auto,
}

impl WatchListMode {
    /// The mode in effect for a reflector whose store reads listed objects from their text
    /// (`text_store`): [`Auto`](WatchListMode::Auto) settled, the others as they are.
    ///
    /// ```
    /// use informer_core::reflector::WatchListMode;
    ///
    /// assert_eq!(WatchListMode::Auto.settle(true), WatchListMode::Off);
    /// assert_eq!(WatchListMode::Auto.settle(false), WatchListMode::On);
    /// assert_eq!(WatchListMode::On.settle(true), WatchListMode::On);
    /// ```
    pub fn settle(self, text_store: bool) -> Self {
        match self {
            Self::Auto if text_store => Self::Off,
            Self::Auto => Self::On,
            mode => mode,
        }
    }
}

/// How a reflector lists and watches: the parameters of a [`Machine`], and the bounds its
/// driver keeps on each list. One struct, owned by whoever configures the reflector (an
/// informer's `InformerConfig::list_watch`, a standalone reflector's config): nothing copies
/// it field by field.
#[derive(Debug, Clone, PartialEq)]
pub struct ListWatchConfig {
    /// `limit` of list requests from any state (`resourceVersion=0`, the first list) or of
    /// consistent lists (no resourceVersion); `None` (or `Some(0)`) lists everything in one
    /// request. Lists at a specific resourceVersion (relists) ask for no limit, as client-go's
    /// do, unless the server paged the first list. Default 500.
    pub page_size: Option<u32>,
    /// Page every list with [`page_size`](Self::page_size), relists at a specific
    /// resourceVersion included (client-go's `WatchListPageSize` set explicitly). Off by
    /// default: a relist without a limit is served from the API server's watch cache, a
    /// paged one goes to etcd. Default false.
    pub always_paginate: bool,
    /// `labelSelector` of every list and watch.
    pub label_selector: Option<String>,
    /// `fieldSelector` of every list and watch.
    pub field_selector: Option<String>,
    /// `shardSelector` of every list (first and continue pages) and watch (streaming lists
    /// included): only the objects of this slice of the hash space (server-side sharded list
    /// and watch, KEP-5866; see [`crate::shard`]). A server without the feature ignores it
    /// and sends everything: the driver filters what it decodes with the same selector
    /// ([`ShardFilter`](crate::shard::ShardFilter)). Change it on a running machine with
    /// [`Machine::set_shard_selector`]. Default `None`: every object.
    pub shard_selector: Option<ShardSelector>,
    /// Streaming initial list or not. Default [`WatchListMode::Auto`] (streaming, except for a
    /// store that reads listed objects from their text).
    pub watch_list: WatchListMode,
    /// How long a streaming list may go without an object before its end bookmark: each
    /// `ADDED`, `MODIFIED` or `DELETED` of the initial events moves the deadline on, so a slow
    /// stream that keeps making progress completes however long it takes. Default 60 s.
    pub initial_events_timeout: Duration,
    /// Watches ask the server for a `timeoutSeconds` drawn uniformly from `[min, 2 × min)`
    /// whole seconds; zero sends none. Default 300 s.
    pub min_watch_timeout: Duration,
    /// Delays between failed attempts.
    pub backoff: BackoffConfig,
    /// Caps on one list (pages, bytes, repeated continue tokens), against a server whose
    /// lists never end; the driver accounts each list against them. Defaults far above any
    /// real cluster: see [`ListLimits`].
    pub list_limits: ListLimits,
}

impl Default for ListWatchConfig {
    fn default() -> Self {
        Self {
            page_size: Some(500),
            always_paginate: false,
            label_selector: None,
            field_selector: None,
            shard_selector: None,
            watch_list: WatchListMode::Auto,
            initial_events_timeout: Duration::from_secs(60),
            min_watch_timeout: Duration::from_secs(300),
            backoff: BackoffConfig::default(),
            list_limits: ListLimits::default(),
        }
    }
}

/// What the driver must do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Start a new list: discard any items accumulated so far, send this request, then report
    /// [`Machine::list_succeeded`] or [`Machine::list_failed`].
    List(ListOptions),
    /// Request the next page of the current list, keeping the items accumulated so far, then
    /// report [`Machine::list_succeeded`] or [`Machine::list_failed`].
    ListNextPage(ListOptions),
    /// The list is complete: replace the queue's content with the accumulated items at this
    /// resourceVersion, then report [`Machine::replaced`].
    Replace {
        /// The list's resourceVersion.
        resource_version: String,
    },
    /// Start this watch, then report [`Machine::watch_started`] or
    /// [`Machine::watch_start_failed`].
    Watch(WatchOptions),
    /// Wait this long, then report [`Machine::wait_elapsed`].
    Wait {
        /// How long.
        delay: Duration,
        /// What will follow (for logs and callbacks; the machine remembers it).
        then: Then,
    },
}

/// What follows a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Then {
    /// A full resynchronisation: a streaming list unless [`WatchListMode::Off`] is in effect,
    /// otherwise a paginated list.
    Relist,
    /// A paginated list (retrying a failed list, or instead of a streaming list).
    List,
    /// A new watch from the last seen resourceVersion, without listing.
    Rewatch,
}

/// What the driver does with one watch event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventAction {
    /// Apply it to the queue: `ADDED` → add, `MODIFIED` → update, `DELETED` → delete.
    Apply,
    /// Apply it to the streaming list's buffer instead (`ADDED`/`MODIFIED` insert, `DELETED`
    /// removes).
    Buffer,
    /// Nothing to apply (a bookmark); keep reading.
    Skip,
    /// The streaming list is complete: replace the queue's content with the buffer at this
    /// resourceVersion, then keep reading the same stream as a normal watch.
    ReplaceBuffered {
        /// The snapshot's resourceVersion, from the end bookmark.
        resource_version: String,
    },
    /// Drop the stream and do this instead (an `ERROR` event).
    Stop(Next),
}

/// Why a watch was restarted; the key of [`RestartCounts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum RestartReason {
    /// The watch ended normally (server timeout, closed stream): re-watch at once.
    Ended,
    /// It ended in under [`MIN_HEALTHY_WATCH`] having delivered nothing: a failure.
    TooShort,
    /// A streaming list ended before its end bookmark.
    InitialEventsIncomplete,
    /// A streaming list stopped making progress before its end bookmark (the server may
    /// ignore `sendInitialEvents`).
    InitialEventsTimeout,
    /// 410 Gone / Expired, as an HTTP answer or an `ERROR` event.
    Expired,
    /// 504 with cause `ResourceVersionTooLarge`.
    ResourceVersionTooLarge,
    /// 429 Too Many Requests.
    Throttled,
    /// The connection failed or broke.
    Transport,
    /// Another 5xx.
    ServerError,
    /// A line of the stream could not be decoded.
    Decode,
    /// An object without a usable key.
    InvalidObject,
    /// Any other API error.
    OtherError,
}

impl RestartReason {
    /// Every reason, in declaration order.
    pub const ALL: [Self; 12] = [
        Self::Ended,
        Self::TooShort,
        Self::InitialEventsIncomplete,
        Self::InitialEventsTimeout,
        Self::Expired,
        Self::ResourceVersionTooLarge,
        Self::Throttled,
        Self::Transport,
        Self::ServerError,
        Self::Decode,
        Self::InvalidObject,
        Self::OtherError,
    ];

    /// A stable snake_case name, for metric labels and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ended => "ended",
            Self::TooShort => "too_short",
            Self::InitialEventsIncomplete => "initial_events_incomplete",
            Self::InitialEventsTimeout => "initial_events_timeout",
            Self::Expired => "expired",
            Self::ResourceVersionTooLarge => "resource_version_too_large",
            Self::Throttled => "throttled",
            Self::Transport => "transport",
            Self::ServerError => "server_error",
            Self::Decode => "decode",
            Self::InvalidObject => "invalid_object",
            Self::OtherError => "other_error",
        }
    }

    /// The reason for a failure of this class.
    pub fn of(class: ErrorClass) -> Self {
        match class {
            ErrorClass::Expired => Self::Expired,
            ErrorClass::ResourceVersionTooLarge => Self::ResourceVersionTooLarge,
            ErrorClass::Throttled => Self::Throttled,
            ErrorClass::Transport => Self::Transport,
            ErrorClass::ServerError => Self::ServerError,
            ErrorClass::Decode => Self::Decode,
            ErrorClass::InvalidObject => Self::InvalidObject,
            _ => Self::OtherError,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// How many watch restarts happened, per [`RestartReason`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestartCounts {
    counts: [u64; RestartReason::ALL.len()],
}

impl RestartCounts {
    /// The count for one reason.
    pub fn get(&self, reason: RestartReason) -> u64 {
        self.counts[reason.index()]
    }

    /// The sum over all reasons.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Every reason with its count (zeros included), in [`RestartReason::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (RestartReason, u64)> + '_ {
        RestartReason::ALL.iter().map(|r| (*r, self.get(*r)))
    }

    pub(crate) fn bump(&mut self, reason: RestartReason) {
        self.counts[reason.index()] += 1;
    }
}

/// What a [`Machine`] has done so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Counters {
    /// List requests asked for (pages included).
    pub list_requests: u64,
    /// List requests that failed.
    pub list_failures: u64,
    /// Full lists completed (paginated or streamed): each ended in a replace.
    pub lists: u64,
    /// Full resynchronisations decided after the watch could not continue (410, too-large
    /// resourceVersion, other errors), or after a restart of a synced machine.
    pub relists: u64,
    /// Watches started (streaming lists included).
    pub watch_starts: u64,
    /// Streaming lists abandoned for a paginated list (each for one round).
    pub streaming_fallbacks: u64,
    /// Changes of the shard selector ([`Machine::set_shard_selector`]), each followed by a
    /// relist with the new one.
    pub shard_changes: u64,
    /// Watch events received (bookmarks and errors included).
    pub events: u64,
    /// Watch ends and failures, by reason.
    pub watch_restarts: RestartCounts,
}

#[derive(Debug, Clone)]
enum State {
    Idle,
    Listing {
        first: ListOptions,
        on_continue_page: bool,
        full_retry: bool,
        /// Whether this list has had more than one page so far.
        paginated: bool,
    },
    Listed {
        resource_version: String,
    },
    Waiting {
        then: Then,
    },
    StartingWatch {
        streaming: bool,
        resumable: bool,
    },
    Watching {
        started: Instant,
        events: u64,
        initial_deadline: Option<Instant>,
        /// Whether the events' resourceVersions are resume points: false for a plain watch
        /// from `"0"` (or from none), which starts with the current state as synthetic
        /// `ADDED` events in no particular resourceVersion order, until a bookmark says
        /// where the watch stands.
        resumable: bool,
    },
}

/// The reflector's decisions, without IO: fed what happened, it answers what to do next.
///
/// See the [module documentation](crate::reflector) for the rules and the state diagram. Time
/// (`now`) and randomness (`random`, a sample in `[0, 1)`) come from the caller, so the same
/// inputs always give the same answers.
///
/// ```
/// use std::time::Instant;
/// use informer_core::reflector::{Machine, ListWatchConfig, Next, WatchListMode};
///
/// let config = ListWatchConfig { watch_list: WatchListMode::Off, ..ListWatchConfig::default() };
/// let mut machine = Machine::new(config);
/// let now = Instant::now();
/// let Next::List(first) = machine.start(now, 0.5) else { unreachable!() };
/// assert_eq!(first.resource_version.as_deref(), Some("0"));
/// assert_eq!(first.limit, Some(500));
/// let next = machine.list_succeeded("41", None, now, 0.5);
/// assert_eq!(next, Next::Replace { resource_version: "41".into() });
/// let Next::Watch(watch) = machine.replaced(now, 0.5) else { unreachable!() };
/// assert_eq!(watch.resource_version.as_deref(), Some("41"));
/// assert!(watch.allow_watch_bookmarks);
/// assert_eq!(watch.timeout_seconds, Some(450));
/// ```
#[derive(Debug, Clone)]
pub struct Machine {
    config: ListWatchConfig,
    backoff: Backoff,
    state: State,
    last_rv: Option<String>,
    rv_unavailable: bool,
    /// Whether the last complete list was streamed.
    last_list_streamed: bool,
    synced: bool,
    /// Whether the server paged the first list (`resourceVersion=0`): it then honours paging
    /// (no watch cache), and relists at a specific resourceVersion keep the page size.
    paginated_result: bool,
    counters: Counters,
}

impl Machine {
    /// A machine that has done nothing yet; call [`Machine::start`].
    pub fn new(config: ListWatchConfig) -> Self {
        Self {
            backoff: Backoff::new(config.backoff.clone()),
            config,
            state: State::Idle,
            last_rv: None,
            rv_unavailable: false,
            last_list_streamed: false,
            synced: false,
            paginated_result: false,
            counters: Counters::default(),
        }
    }

    /// The parameters.
    pub fn config(&self) -> &ListWatchConfig {
        &self.config
    }

    /// The first request. Calling it again (for example when a driver runs again after being
    /// stopped) abandons whatever was in progress and resynchronises from the last seen
    /// resourceVersion.
    pub fn start(&mut self, _now: Instant, random: f64) -> Next {
        if self.synced {
            self.counters.relists += 1;
        }
        self.begin_relist(random)
    }

    /// Changes the shard selector ([`ListWatchConfig::shard_selector`]) and answers the
    /// first request of a relist with it, at once: whatever was in progress (a list, a watch,
    /// a backoff delay) is abandoned, as by [`start`](Self::start). The relist resumes from
    /// the last seen resourceVersion (not older than it), so that the queue's replace turns
    /// the difference between the old and the new shard into deletes (objects no longer
    /// owned) and adds (objects newly owned), and objects in both keep their state. Before
    /// the first list, it is the same as `start` with the new selector.
    ///
    /// Counted in [`Counters::shard_changes`] (and as a relist once synced) even when the
    /// selector is the one already set: the driver decides whether a change is worth a relist.
    ///
    /// ```
    /// use std::time::Instant;
    /// use informer_core::reflector::{ListWatchConfig, Machine, Next, WatchListMode};
    /// use informer_core::shard::{ShardField, ShardSelector};
    ///
    /// let config = ListWatchConfig { watch_list: WatchListMode::Off, ..ListWatchConfig::default() };
    /// let mut machine = Machine::new(config);
    /// let now = Instant::now();
    /// machine.start(now, 0.5);
    /// machine.list_succeeded("10", None, now, 0.5);
    /// machine.replaced(now, 0.5);
    /// machine.watch_started(now);
    /// let mine = ShardSelector::even_split(ShardField::Uid, 0, 2)?;
    /// let Next::List(relist) = machine.set_shard_selector(Some(mine.clone()), now, 0.5) else {
    ///     unreachable!()
    /// };
    /// assert_eq!(relist.shard_selector, Some(mine));
    /// assert_eq!(relist.resource_version.as_deref(), Some("10"));
    /// # Ok::<(), informer_core::shard::ShardSelectorError>(())
    /// ```
    pub fn set_shard_selector(
        &mut self,
        selector: Option<ShardSelector>,
        now: Instant,
        random: f64,
    ) -> Next {
        self.config.shard_selector = selector;
        self.counters.shard_changes += 1;
        self.start(now, random)
    }

    /// The last resourceVersion seen: of the last complete list, or of the last watch event
    /// or bookmark after it. `None` before the first list completes.
    pub fn last_synced_resource_version(&self) -> Option<&str> {
        self.last_rv.as_deref()
    }

    /// Whether a full list (paginated or streamed) has completed.
    pub fn has_synced(&self) -> bool {
        self.synced
    }

    /// Whether the current watch is a streaming list still waiting for its end bookmark.
    pub fn in_initial_events(&self) -> bool {
        matches!(
            self.state,
            State::Watching {
                initial_deadline: Some(_),
                ..
            }
        )
    }

    /// Whether relists try a streaming list first ([`WatchListMode::On`], or
    /// [`Auto`](WatchListMode::Auto) not settled by a driver).
    pub fn streaming(&self) -> bool {
        self.config.watch_list.settle(false) == WatchListMode::On
    }

    /// Whether the last complete list was a streaming list (false after a fallback to a
    /// paginated list, until a later relist streams).
    pub fn last_list_streamed(&self) -> bool {
        self.last_list_streamed
    }

    /// When the current streaming list is given up if no object arrives first: moved on by
    /// every object of the initial events. `None` outside a streaming list's initial events.
    pub fn initial_events_deadline(&self) -> Option<Instant> {
        match self.state {
            State::Watching {
                initial_deadline, ..
            } => initial_deadline,
            _ => None,
        }
    }

    /// The counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// A list page arrived: its resourceVersion and continue token.
    pub fn list_succeeded(
        &mut self,
        resource_version: &str,
        continue_token: Option<&str>,
        _now: Instant,
        random: f64,
    ) -> Next {
        let State::Listing {
            first,
            full_retry,
            paginated,
            ..
        } = std::mem::replace(&mut self.state, State::Idle)
        else {
            return self.misuse(random);
        };
        let token = continue_token.filter(|t| !t.is_empty());
        if token.is_none() && first.resource_version.as_deref() == Some("0") && !full_retry {
            // As client-go: only the first list (any state) tells whether the server pages;
            // a consistent list is paged by etcd even behind a watch cache.
            self.paginated_result = paginated;
        }
        match token {
            Some(token) => {
                let options = ListOptions {
                    continue_token: Some(token.to_owned()),
                    limit: if full_retry { None } else { first.limit },
                    label_selector: first.label_selector.clone(),
                    field_selector: first.field_selector.clone(),
                    shard_selector: first.shard_selector.clone(),
                    ..ListOptions::default()
                };
                self.state = State::Listing {
                    first,
                    on_continue_page: true,
                    full_retry,
                    paginated: true,
                };
                self.counters.list_requests += 1;
                Next::ListNextPage(options)
            }
            None => {
                self.state = State::Listed {
                    resource_version: resource_version.to_owned(),
                };
                Next::Replace {
                    resource_version: resource_version.to_owned(),
                }
            }
        }
    }

    /// A list request failed.
    pub fn list_failed(&mut self, error: &Error, now: Instant, random: f64) -> Next {
        let State::Listing {
            first,
            on_continue_page,
            full_retry,
            ..
        } = std::mem::replace(&mut self.state, State::Idle)
        else {
            return self.misuse(random);
        };
        self.counters.list_failures += 1;
        let class = error.class();
        if class == ErrorClass::Expired && on_continue_page && !full_retry {
            // The continue token expired: one full list at the original resourceVersion.
            let options = ListOptions {
                limit: None,
                continue_token: None,
                ..first.clone()
            };
            self.state = State::Listing {
                first,
                on_continue_page: false,
                full_retry: true,
                paginated: false,
            };
            self.counters.list_requests += 1;
            return Next::List(options);
        }
        if matches!(
            class,
            ErrorClass::Expired | ErrorClass::ResourceVersionTooLarge
        ) {
            self.rv_unavailable = true;
            if first.resource_version.is_some() {
                // Retry at once as a consistent read; only a failure of that one backs off.
                return self.begin_list();
            }
        }
        self.wait(Then::List, error.retry_after(), now, random)
    }

    /// The queue refused the replace asked for by [`Next::Replace`] or
    /// [`EventAction::ReplaceBuffered`]: the list did not complete. No watch starts from it (a
    /// streaming list's stream is dropped); after a backoff delay the machine relists.
    pub fn replace_failed(&mut self, now: Instant, random: f64) -> Next {
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Listed { .. } => {}
            State::Watching { .. } => {
                // The end bookmark counted the streamed list as complete: it was not.
                self.counters.lists = self.counters.lists.saturating_sub(1);
                self.synced = self.counters.lists > 0;
            }
            _ => return self.misuse(random),
        }
        self.wait(Then::Relist, None, now, random)
    }

    /// The queue's content was replaced after [`Next::Replace`].
    pub fn replaced(&mut self, _now: Instant, random: f64) -> Next {
        let State::Listed { resource_version } = std::mem::replace(&mut self.state, State::Idle)
        else {
            return self.misuse(random);
        };
        self.set_rv(&resource_version);
        self.rv_unavailable = false;
        self.synced = true;
        self.last_list_streamed = false;
        self.counters.lists += 1;
        self.begin_watch(random)
    }

    /// The watch asked for by [`Next::Watch`] started. Returns, for a streaming list, the
    /// deadline of its first object (see [`Machine::initial_events_deadline`], which moves on
    /// with every object): if it passes first, report [`Machine::initial_events_timed_out`].
    pub fn watch_started(&mut self, now: Instant) -> Option<Instant> {
        let (streaming, resumable) = match self.state {
            State::StartingWatch {
                streaming,
                resumable,
            } => (streaming, resumable),
            _ => (false, true),
        };
        let deadline = streaming.then(|| now + self.config.initial_events_timeout);
        self.counters.watch_starts += 1;
        self.state = State::Watching {
            started: now,
            events: 0,
            initial_deadline: deadline,
            resumable,
        };
        deadline
    }

    /// The watch request itself failed (an HTTP error, a refused connection).
    pub fn watch_start_failed(&mut self, error: &Error, now: Instant, random: f64) -> Next {
        let State::StartingWatch { streaming, .. } =
            std::mem::replace(&mut self.state, State::Idle)
        else {
            return self.misuse(random);
        };
        // Nothing was received: re-watching from the same point is sound.
        self.watch_failure(
            streaming,
            true,
            error.class(),
            error.retry_after(),
            now,
            random,
        )
    }

    /// A watch event arrived. `ERROR` events end the watch ([`EventAction::Stop`]).
    pub fn event_received<K: Object>(
        &mut self,
        event: &WatchEvent<K>,
        now: Instant,
        random: f64,
    ) -> EventAction {
        let State::Watching {
            events,
            initial_deadline,
            resumable,
            ..
        } = &mut self.state
        else {
            return EventAction::Stop(self.misuse(random));
        };
        *events += 1;
        let initial = initial_deadline.is_some();
        let resumable = *resumable;
        self.counters.events += 1;
        match event {
            WatchEvent::Error(status) => EventAction::Stop(self.error_event(status, now, random)),
            WatchEvent::Added(_) | WatchEvent::Modified(_) | WatchEvent::Deleted(_) if initial => {
                // Progress: the stream is slow, not stalled.
                *initial_deadline = Some(now + self.config.initial_events_timeout);
                EventAction::Buffer
            }
            WatchEvent::Added(obj) | WatchEvent::Modified(obj) | WatchEvent::Deleted(obj) => {
                if resumable && let Some(rv) = obj.object_resource_version() {
                    self.set_rv(rv);
                }
                EventAction::Apply
            }
            WatchEvent::Bookmark(bookmark) if initial => {
                if !bookmark.initial_events_end {
                    return EventAction::Skip;
                }
                if let State::Watching {
                    initial_deadline,
                    resumable,
                    ..
                } = &mut self.state
                {
                    // The same stream goes on with live changes, in order.
                    *initial_deadline = None;
                    *resumable = true;
                }
                self.set_rv(&bookmark.resource_version);
                self.rv_unavailable = false;
                self.synced = true;
                self.last_list_streamed = true;
                self.counters.lists += 1;
                EventAction::ReplaceBuffered {
                    resource_version: bookmark.resource_version.clone(),
                }
            }
            WatchEvent::Bookmark(bookmark) => {
                self.set_rv(&bookmark.resource_version);
                if let State::Watching { resumable, .. } = &mut self.state {
                    *resumable = is_resume_point(Some(&bookmark.resource_version));
                }
                EventAction::Skip
            }
        }
    }

    /// The watch stream failed: a transport error, an undecodable line. Everything before it
    /// was applied; the machine resumes from the last good resourceVersion.
    pub fn watch_failed(&mut self, error: &Error, now: Instant, random: f64) -> Next {
        self.stream_failure(error.class(), error.retry_after(), 0, now, random)
    }

    /// The watch stream ended (`None`).
    pub fn watch_ended(&mut self, now: Instant, random: f64) -> Next {
        let State::Watching {
            started,
            events,
            initial_deadline,
            resumable,
        } = std::mem::replace(&mut self.state, State::Idle)
        else {
            return self.misuse(random);
        };
        if initial_deadline.is_some() {
            self.counters
                .watch_restarts
                .bump(RestartReason::InitialEventsIncomplete);
            return self.wait(Then::Relist, None, now, random);
        }
        if events == 0 && now.saturating_duration_since(started) < MIN_HEALTHY_WATCH {
            self.counters.watch_restarts.bump(RestartReason::TooShort);
            return self.wait(Then::Rewatch, None, now, random);
        }
        self.counters.watch_restarts.bump(RestartReason::Ended);
        if !resumable && events > 0 {
            // A snapshot gave no resume point, and a new one would miss deletions: relist.
            self.counters.relists += 1;
            return self.begin_relist(random);
        }
        self.begin_watch(random)
    }

    /// The streaming list's deadline ([`Machine::initial_events_deadline`]) passed before
    /// the end bookmark: no object for [`ListWatchConfig::initial_events_timeout`] (a stalled
    /// stream, or a server that ignores `sendInitialEvents`). A paginated list starts at once;
    /// the next relist streams again.
    pub fn initial_events_timed_out(&mut self, _now: Instant, random: f64) -> Next {
        if !self.in_initial_events() {
            return self.misuse(random);
        }
        self.state = State::Idle;
        self.counters.streaming_fallbacks += 1;
        self.counters
            .watch_restarts
            .bump(RestartReason::InitialEventsTimeout);
        self.begin_list()
    }

    /// The delay of [`Next::Wait`] has passed.
    pub fn wait_elapsed(&mut self, _now: Instant, random: f64) -> Next {
        let State::Waiting { then } = std::mem::replace(&mut self.state, State::Idle) else {
            return self.misuse(random);
        };
        match then {
            Then::Relist => self.begin_relist(random),
            Then::List => self.begin_list(),
            Then::Rewatch => self.begin_watch(random),
        }
    }

    fn error_event(&mut self, status: &Status, now: Instant, random: f64) -> Next {
        // The ERROR event itself was counted. The server ended the watch with its own word:
        // only 429 is worth a plain re-watch (client-go relists on any other, including a 500
        // such as the one announcing an unsafe delete of a corrupt object, which no later
        // event of the watch would undo).
        let class = match status.class() {
            ErrorClass::Throttled => ErrorClass::Throttled,
            ErrorClass::Expired => ErrorClass::Expired,
            ErrorClass::ResourceVersionTooLarge => ErrorClass::ResourceVersionTooLarge,
            _ => ErrorClass::Other,
        };
        let reason = RestartReason::of(status.class());
        self.stream_failure_as(class, reason, status.retry_after(), 1, now, random)
    }

    /// `not_objects`: how many of the watch's counted events were not objects (the ERROR).
    fn stream_failure(
        &mut self,
        class: ErrorClass,
        retry_after: Option<Duration>,
        not_objects: u64,
        now: Instant,
        random: f64,
    ) -> Next {
        self.stream_failure_as(
            class,
            RestartReason::of(class),
            retry_after,
            not_objects,
            now,
            random,
        )
    }

    /// [`Machine::stream_failure`] deciding by `class` and counting the restart as `reason`.
    fn stream_failure_as(
        &mut self,
        class: ErrorClass,
        reason: RestartReason,
        retry_after: Option<Duration>,
        not_objects: u64,
        now: Instant,
        random: f64,
    ) -> Next {
        let State::Watching {
            initial_deadline,
            resumable,
            events,
            ..
        } = std::mem::replace(&mut self.state, State::Idle)
        else {
            return self.misuse(random);
        };
        // A snapshot watch that delivered nothing can be started again as it was.
        let resumable = resumable || events <= not_objects;
        self.watch_failure_as(
            initial_deadline.is_some(),
            resumable,
            class,
            reason,
            retry_after,
            now,
            random,
        )
    }

    /// `resumable`: whether the last seen resourceVersion is a sound point to re-watch from
    /// (not after part of a snapshot, see `State::Watching`); if not, what would re-watch
    /// relists instead.
    fn watch_failure(
        &mut self,
        streaming: bool,
        resumable: bool,
        class: ErrorClass,
        retry_after: Option<Duration>,
        now: Instant,
        random: f64,
    ) -> Next {
        let reason = RestartReason::of(class);
        self.watch_failure_as(
            streaming,
            resumable,
            class,
            reason,
            retry_after,
            now,
            random,
        )
    }

    /// [`Machine::watch_failure`] counting the restart as `reason`.
    #[allow(
        clippy::too_many_arguments,
        reason = "private; each argument is one fact"
    )]
    fn watch_failure_as(
        &mut self,
        streaming: bool,
        resumable: bool,
        class: ErrorClass,
        reason: RestartReason,
        retry_after: Option<Duration>,
        now: Instant,
        random: f64,
    ) -> Next {
        self.counters.watch_restarts.bump(reason);
        if streaming {
            return match class {
                ErrorClass::Throttled
                | ErrorClass::Transport
                | ErrorClass::Decode
                | ErrorClass::InvalidObject => self.wait(Then::Relist, retry_after, now, random),
                ErrorClass::Expired | ErrorClass::ResourceVersionTooLarge => {
                    let had_rv = self.stream_resource_version().is_some();
                    self.rv_unavailable = true;
                    if had_rv {
                        self.begin_relist(random)
                    } else {
                        self.wait(Then::Relist, retry_after, now, random)
                    }
                }
                _ => {
                    self.counters.streaming_fallbacks += 1;
                    self.begin_list()
                }
            };
        }
        match class {
            // Nothing suggests the resourceVersion is a bad place to resume from: the request
            // was refused or the connection broke.
            ErrorClass::Throttled | ErrorClass::Transport | ErrorClass::ServerError
                if resumable =>
            {
                self.wait(Then::Rewatch, retry_after, now, random)
            }
            ErrorClass::ResourceVersionTooLarge => {
                self.rv_unavailable = true;
                self.counters.relists += 1;
                self.wait(Then::Relist, retry_after, now, random)
            }
            _ => {
                self.counters.relists += 1;
                self.wait(Then::Relist, retry_after, now, random)
            }
        }
    }

    fn wait(
        &mut self,
        then: Then,
        retry_after: Option<Duration>,
        now: Instant,
        random: f64,
    ) -> Next {
        // The server's hint is clamped into the backoff's [floor, cap] and never shortens the
        // backoff's own delay: `Retry-After: 0` cannot make the reflector spin, nor a huge
        // value park it, and repeated throttling keeps growing the delay.
        let delay = self.backoff.failure_with_hint(now, random, retry_after);
        self.state = State::Waiting { then };
        Next::Wait { delay, then }
    }

    fn begin_relist(&mut self, random: f64) -> Next {
        if !self.streaming() {
            return self.begin_list();
        }
        let options = WatchOptions {
            resource_version: self.stream_resource_version(),
            resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
            label_selector: self.config.label_selector.clone(),
            field_selector: self.config.field_selector.clone(),
            timeout_seconds: self.watch_timeout(random),
            allow_watch_bookmarks: true,
            send_initial_events: Some(true),
            shard_selector: self.config.shard_selector.clone(),
        };
        self.state = State::StartingWatch {
            streaming: true,
            resumable: true,
        };
        Next::Watch(options)
    }

    fn begin_list(&mut self) -> Next {
        let resource_version = if self.rv_unavailable {
            None
        } else {
            Some(self.last_rv.clone().unwrap_or_else(|| "0".to_owned()))
        };
        // As client-go: a list at a specific resourceVersion (a relist) asks for no page size,
        // so that the API server answers it from its watch cache instead of paging through
        // etcd; unless the first list showed that the server pages (no watch cache), or the
        // user asked for pages on every list.
        let specific = resource_version
            .as_deref()
            .is_some_and(|rv| !rv.is_empty() && rv != "0");
        let limit = self
            .config
            .page_size
            .filter(|n| *n > 0)
            .filter(|_| !specific || self.paginated_result || self.config.always_paginate);
        let resource_version_match = match (&resource_version, limit) {
            // With a limit, a bare resourceVersion would mean "exactly"; keep "not older than".
            (Some(rv), Some(_)) if rv != "0" => Some(ResourceVersionMatch::NotOlderThan),
            _ => None,
        };
        let options = ListOptions {
            resource_version,
            resource_version_match,
            limit,
            continue_token: None,
            label_selector: self.config.label_selector.clone(),
            field_selector: self.config.field_selector.clone(),
            timeout_seconds: None,
            shard_selector: self.config.shard_selector.clone(),
        };
        self.state = State::Listing {
            first: options.clone(),
            on_continue_page: false,
            full_retry: false,
            paginated: false,
        };
        self.counters.list_requests += 1;
        Next::List(options)
    }

    fn begin_watch(&mut self, random: f64) -> Next {
        let options = WatchOptions {
            resource_version: self.last_rv.clone(),
            resource_version_match: None,
            label_selector: self.config.label_selector.clone(),
            field_selector: self.config.field_selector.clone(),
            timeout_seconds: self.watch_timeout(random),
            allow_watch_bookmarks: true,
            send_initial_events: None,
            shard_selector: self.config.shard_selector.clone(),
        };
        self.state = State::StartingWatch {
            streaming: false,
            resumable: is_resume_point(self.last_rv.as_deref()),
        };
        Next::Watch(options)
    }

    fn stream_resource_version(&self) -> Option<String> {
        if self.rv_unavailable {
            None
        } else {
            self.last_rv.clone()
        }
    }

    fn watch_timeout(&self, random: f64) -> Option<u32> {
        let min = self.config.min_watch_timeout.as_secs();
        if min == 0 {
            return None;
        }
        // floor(random × min) < min, so the result stays below 2 × min.
        let extra = (unit(random) * min as f64) as u64;
        Some(u32::try_from(min.saturating_add(extra)).unwrap_or(u32::MAX))
    }

    fn set_rv(&mut self, rv: &str) {
        if rv.is_empty() {
            return;
        }
        match &mut self.last_rv {
            Some(last) => {
                last.clear();
                last.push_str(rv);
            }
            None => self.last_rv = Some(rv.to_owned()),
        }
    }

    /// A report that does not fit the current state: a driver bug. Rather than panic, start
    /// over with a full resynchronisation.
    fn misuse(&mut self, random: f64) -> Next {
        self.begin_relist(random)
    }
}

/// Whether a watch from `rv` gets changes in resourceVersion order (so that each event's
/// resourceVersion is a point to resume from). `"0"` and none ask for the current state first,
/// as synthetic `ADDED` events in no particular order.
fn is_resume_point(rv: Option<&str>) -> bool {
    rv.is_some_and(|rv| !rv.is_empty() && rv != "0")
}
