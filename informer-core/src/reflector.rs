//! The reflector's decisions, without IO: which request next, with which resourceVersion,
//! after how long.
//!
//! A reflector keeps a queue equal to the server's state by listing once, then watching
//! forever, relisting when the watch cannot continue. The async driver (`informer::reflector`)
//! performs the requests; every choice it makes comes from a [`Machine`] fed with what
//! happened. The machine reads no clock and draws no random numbers: each call takes `now` and
//! a `random` sample in `[0, 1)`, so its behaviour is reproducible and tested without a clock
//! or a server.
//!
//! # The rules
//!
//! Lists
//! - The first list asks for `resourceVersion=0` (any state, may be served from the watch
//!   cache); later lists ask for the last resourceVersion seen, with
//!   `resourceVersionMatch=NotOlderThan` when paginated (a bare resourceVersion with a `limit`
//!   would mean "exactly"). After a list fails with 410 Expired or 504
//!   `ResourceVersionTooLarge`, the next list is a consistent read (resourceVersion unset),
//!   sent at once; only if that fails too does the machine back off.
//! - Lists from any state (`"0"`) and consistent lists (unset) are paginated
//!   ([`ListWatchConfig::page_size`], 500); a list at a specific resourceVersion (a relist) is
//!   not, as in client-go, so that the API server answers it from its watch cache instead of
//!   paging through etcd; unless the server paged the first list (it then has no watch cache
//!   for the resource, and paging is kinder). Continue pages carry the token and the same
//!   limit, and drop resourceVersion and resourceVersionMatch. If a continue token expires
//!   (410 on a continue page), the list restarts once as a single request without `limit` at
//!   the original resourceVersion. Any other failure discards the pages and retries the list
//!   after a backoff delay.
//! - A complete list is handed over as [`Next::Replace`]; its resourceVersion becomes the last
//!   seen one.
//!
//! Watches
//! - `resourceVersion=<last seen>`, `allowWatchBookmarks=true`, `timeoutSeconds` drawn
//!   uniformly from `[300, 600)`. Every event moves the last seen resourceVersion forward,
//!   bookmarks included.
//! - Normal end (server timeout, closed stream): re-watch at once from the last seen
//!   resourceVersion, without listing; unless the watch lasted under [`MIN_HEALTHY_WATCH`]
//!   and delivered nothing, which is a failure: back off, then re-watch (client-go relists;
//!   the resourceVersion is still a sound place to resume from, and a relist on every blip
//!   of a proxy would cost a full list each time).
//! - 410 Expired, as the HTTP answer or as an `ERROR` event: back off, then relist.
//!   `ResourceVersionTooLarge`: the same, and the relist is a consistent read. Any other API
//!   error that is not listed below: back off, then relist.
//! - An `ERROR` event other than 429 (a 500 included, such as the one announcing the unsafe
//!   delete of a corrupt object): back off, then relist, as client-go does.
//! - 429 (the delay is the server's `Retry-After` when given), transport errors, and other
//!   5xx, on the watch request or mid-stream: back off, then re-watch without relisting.
//! - A watch from `"0"` (after a list that reported resourceVersion `"0"`, as a server that
//!   was never written may; real API servers never do) starts with the current state as
//!   synthetic `ADDED` events in no resourceVersion order: their resourceVersions are not
//!   taken as resume points (re-watching from one would replay older states, or skip the rest
//!   of the snapshot) until a bookmark says where the watch stands. If such a watch ends or
//!   fails after delivering objects and before a bookmark, the machine relists instead of
//!   re-watching (a new watch from `"0"` would not report the deletions since).
//! - A line that cannot be decoded (or an unknown event type): the driver reports a typed
//!   error; back off, then relist from the last good resourceVersion, as client-go does
//!   (re-watching from it would meet the same bad event again, until it left history). An
//!   object the key function cannot key is the driver's to skip: it reports it and still
//!   passes the event to [`Machine::event_received`] (its resourceVersion counts as seen)
//!   without applying it, since re-watching would only bring the same object again.
//!
//! Streaming initial list ([`WatchListMode::On`])
//! - Instead of a list, one watch with `sendInitialEvents=true`,
//!   `resourceVersionMatch=NotOlderThan`, `allowWatchBookmarks=true` and
//!   `resourceVersion=<last seen, or unset>`. Its events go to a buffer
//!   ([`EventAction::Buffer`]) until the bookmark annotated `k8s.io/initial-events-end`, whose
//!   resourceVersion replaces the queue's content atomically
//!   ([`EventAction::ReplaceBuffered`]); the same stream then continues as a normal watch.
//! - 429 and transport errors, a broken or undecodable stream, or a stream ending before the
//!   bookmark: back off and stream again. 410 / too-large: stream again at once without a
//!   resourceVersion. Any other error (a server that refuses the parameter): fall back to a
//!   paginated list for this round.
//! - No progress: no object (and no end bookmark) for [`ListWatchConfig::initial_events_timeout`]
//!   ([`Machine::initial_events_deadline`] moves on with every object, so a slow stream that
//!   keeps sending completes however long it takes; client-go has no limit at all and only
//!   warns). The stream has stalled, or the server ignores `sendInitialEvents`: fall back to a
//!   paginated list for this round. Every later relist streams first again, as client-go's
//!   does.
//! - A list the queue refuses ([`Machine::replace_failed`]): back off, then relist.
//!
//! Shards ([`ListWatchConfig::shard_selector`])
//! - Every list (first page and continue pages), watch and streaming list carries the shard
//!   selector. [`Machine::set_shard_selector`] changes it on a running machine: whatever was in
//!   progress is abandoned and a relist from the last seen resourceVersion starts at once,
//!   so that the queue's replace turns the change of shard into deletes and adds.
//! - Whether the server applied the selector is the driver's to track
//!   ([`ShardFilter`](crate::shard::ShardFilter)): it filters every decoded object with the
//!   same selector whatever the server does.
//!
//! Backoff ([`BackoffConfig`]): exponential from 800 ms, factor 2, capped at 30 s, with full
//! jitter (the delay is uniform in `[0, base]`), restarting from 800 ms once 2 minutes pass
//! without a failure. A delay the server asked for (`Retry-After`, or a `Status`'s
//! `retryAfterSeconds`), on a list or a watch, is clamped into `[800 ms, 30 s]` and
//! lengthens the backoff's own delay, never shortens it
//! ([`Backoff::failure_with_hint`]): `Retry-After: 0` on every answer cannot make the
//! reflector spin, `Retry-After: 100000` cannot park it for a day, and repeated throttling
//! keeps the backoff's growth. (client-go's REST client sleeps exactly what the header says,
//! without floor or cap, for up to 10 retries inside one request.) Failures are: failed lists
//! (except the immediate consistent retry and the full-list fallback), failed watch requests,
//! failed or too-short watches. A normal watch end is not a failure.
//!
//! # States
//!
//! ```text
//!            start / wait_elapsed(Relist)
//!                      │
//!          ┌───────────┴─────────────┐ streaming on
//!          ▼                         ▼
//!   Listing ──continue──▶ Listing   StartingWatch(streaming) ──started──▶ Watching(initial)
//!      │  410 on continue: full list   │ refused: List                  │ events → Buffer
//!      │  410/504: consistent list     │ 429/transport: Wait            │ end bookmark:
//!      │  other: Wait(List)            │                                │   ReplaceBuffered
//!      ▼ last page                     │                                │ timeout: List
//!   Listed ──replaced──▶ StartingWatch ──started──▶ Watching ◀──────────┘
//!                          ▲      │ failed: Wait                 │ events → Apply
//!                          │      ▼                              │ ended: StartingWatch
//!                          └── Waiting(Rewatch | Relist | List) ◀┘ failed: Waiting
//! ```
//!
//! # Driving a machine
//!
//! ```
//! use std::time::{Duration, Instant};
//! use informer_core::reflector::{Machine, ListWatchConfig, Next, Then, WatchListMode};
//! use informer_core::{Error, Status};
//!
//! // A paginated list then a watch (the default streams the initial list instead).
//! let config = ListWatchConfig { watch_list: WatchListMode::Off, ..ListWatchConfig::default() };
//! let mut machine = Machine::new(config);
//! let t0 = Instant::now();
//! machine.start(t0, 0.0);
//! machine.list_succeeded("10", None, t0, 0.0);
//! machine.replaced(t0, 0.0);
//! machine.watch_started(t0);
//! // The watch is compacted away: the server answers 410.
//! let gone = Error::api("watching pods", Status::failure(410, "Expired", "too old"));
//! let next = machine.watch_failed(&gone, t0 + Duration::from_secs(5), 0.5);
//! assert_eq!(next, Next::Wait { delay: Duration::from_millis(400), then: Then::Relist });
//! let Next::List(relist) = machine.wait_elapsed(t0 + Duration::from_secs(6), 0.5) else {
//!     unreachable!()
//! };
//! assert_eq!(relist.resource_version.as_deref(), Some("10"));
//! ```

mod backoff;
mod list_limits;
mod machine;

pub use backoff::{Backoff, BackoffConfig, Jitter};
pub use list_limits::{ListBudget, ListLimits};
pub use machine::{
    Counters, EventAction, ListWatchConfig, MIN_HEALTHY_WATCH, Machine, Next, RestartCounts,
    RestartReason, Then, WatchListMode,
};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_relist;
#[cfg(test)]
mod tests_shard;
