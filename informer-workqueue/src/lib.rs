//! Work queues for Kubernetes controllers: deduplicating, delaying and rate-limited, with the
//! semantics of client-go's `util/workqueue`.
//!
//! Informer event handlers [`add`](RateLimitingQueue::add) object keys; workers
//! [`get`](RateLimitingQueue::get) keys, reconcile, and report back with
//! [`done`](RateLimitingQueue::done). Keys that fail are retried with
//! [`add_rate_limited`](RateLimitingQueue::add_rate_limited) after a per-item backoff, and
//! [`forget`](RateLimitingQueue::forget)-ed once they succeed. The crate depends on no other
//! informer-rs crate: items are any `T: Clone + Eq + Hash + Send + Sync + 'static`.
//!
//! # Parts
//!
//! - [`WorkQueue`]: the queue. Deduplication, processing tracking, shutdown (with or without
//!   drain), and delayed adds ([`add_after`](WorkQueue::add_after)).
//! - [`RateLimiter`]: decides retry delays. Implementations: [`ExponentialRateLimiter`] (per
//!   item), [`TokenBucketRateLimiter`] (overall), [`FastSlowRateLimiter`] (per item),
//!   [`MaxOfRateLimiter`] (combines), [`MaxWaitRateLimiter`] (caps); [`default_rate_limiter`] is
//!   client-go's default, max(exponential 5 ms → 1000 s, token bucket 10/s burst 100).
//! - [`RateLimitingQueue`]: a `WorkQueue` plus a `RateLimiter`, the one type most controllers
//!   need, configured by [`RateLimitingQueueConfig`].
//! - [`WorkQueueMetrics`] (feature `metrics`): client-go's `workqueue_*` metrics into a
//!   `prometheus_client` registry (see [Metrics](#metrics)).
//!
//! Delaying lives inside `WorkQueue` rather than in a wrapper (as it does upstream) because a
//! delayed item must wake idle workers when it falls due: inside the queue, the idle `get`s
//! themselves sleep until the earliest deadline, where a wrapper would need a background task
//! per queue (upstream: a goroutine).
//!
//! # Example: a worker loop
//!
//! ```
//! use informer_workqueue::RateLimitingQueue;
//!
//! # #[derive(Debug)] struct Conflict;
//! // Pretend reconcile: fails the first time it sees a key, then succeeds.
//! async fn reconcile(key: &str, attempt: u32) -> Result<(), Conflict> {
//!     if attempt == 0 { Err(Conflict) } else { println!("reconciled {key}"); Ok(()) }
//! }
//!
//! #[tokio::main(flavor = "current_thread", start_paused = true)]
//! async fn main() {
//!     let queue: RateLimitingQueue<String> = RateLimitingQueue::new();
//!     let workers: Vec<_> = (0..2)
//!         .map(|_| {
//!             let queue = queue.clone();
//!             tokio::spawn(async move {
//!                 // `get` returns None once the queue is shut down and empty.
//!                 while let Some(key) = queue.get().await {
//!                     match reconcile(&key, queue.num_requeues(&key)).await {
//!                         Ok(()) => queue.forget(&key),
//!                         Err(_) => queue.add_rate_limited(key.clone()),
//!                     }
//!                     queue.done(&key);
//!                 }
//!             })
//!         })
//!         .collect();
//!
//!     queue.add("default/web".to_string());
//!     queue.add("default/web".to_string()); // deduplicated: still one item
//!     queue.add("kube-system/dns".to_string());
//!
//!     // Let the workers fail once, wait out the 5 ms backoff (virtual time) and succeed.
//!     tokio::time::sleep(std::time::Duration::from_secs(1)).await;
//!     assert_eq!(queue.num_requeues(&"default/web".to_string()), 0);
//!
//!     queue.shut_down_with_drain().await;
//!     for worker in workers {
//!         worker.await.unwrap();
//!     }
//! }
//! ```
//!
//! # Rules (the queue's invariants)
//!
//! 1. **Never twice at once.** An item handed out by `get` is *processing* until `done`. Added
//!    again meanwhile, it is only marked *dirty*; `done` then queues it again. So no two workers
//!    ever hold the same item.
//! 2. **Never queued twice.** Adding an item that is already queued changes nothing; it keeps
//!    its place. The queue is FIFO in the order items became queued.
//! 3. **Nothing lost.** Every add accepted before shutdown is followed by a `get` of that item
//!    that starts after it (possibly once, for many adds).
//! 4. **Delays.** `add_after(item, d)` queues the item when `d` has passed on tokio's clock
//!    (zero: now); for an item already waiting, the earlier deadline wins. Waiting does not
//!    block a direct `add`.
//! 5. **Shutdown.** After `shut_down`, adds are ignored, waiting items are dropped, and `get`
//!    hands out what is still queued, then returns `None`; idle workers wake at once.
//!    `shut_down_with_drain` also waits until every processing item is `done`.
//! 6. **No busy waiting, no background tasks.** Idle `get`s sleep on a `tokio::sync::Notify`
//!    (one wake-up per queued item) and, when delayed items exist, a timer for the earliest
//!    deadline. The queue spawns nothing and runs under paused tokio time.
//! 7. **Rate limiters never block.** `when` answers a delay; the queue waits it out with
//!    `add_after`. Per-item limiters remember failures until `forget`.
//!
//! All state of a queue sits behind one `parking_lot` mutex, held only for short, non-async
//! sections; no lock is held across an `.await`. Each item is stored at most twice (its state
//! in a `foldhash` map, and once in the FIFO while queued); `get` touches the `Notify` only
//! when nothing is ready, and spends one unit of tokio's cooperative budget like a channel
//! receive, so a worker that always finds work still lets its thread's other tasks run.
//!
//! # Tracing
//!
//! The queue emits `tracing` events (target `informer_workqueue::…`, level `DEBUG`, field
//! `queue` = the queue's name): `work queue shutting down` (with `drain`, `queued`,
//! `processing` and `delayed_dropped`), `work queue shut down` when a drain ends, and, for
//! every [`add_rate_limited`](RateLimitingQueue::add_rate_limited), `retrying an item after
//! its rate-limited delay` (with `requeues` and `delay`). Items are not logged: they need not
//! implement `Debug`.
//!
//! # Metrics
//!
//! With the `metrics` feature, `WorkQueueMetrics::register` adds these families to a
//! `prometheus_client` registry, each labelled with the queue's `name`:
//!
//! | name | type | meaning |
//! |---|---|---|
//! | `workqueue_depth` | gauge | items waiting to be processed (queued, or dirty while processing) |
//! | `workqueue_adds_total` | counter | adds that made an item need processing (deduplicated adds do not count) |
//! | `workqueue_queue_duration_seconds` | histogram | time from add (or from a delayed item's deadline) to `get` |
//! | `workqueue_work_duration_seconds` | histogram | time from `get` to `done` |
//! | `workqueue_unfinished_work_seconds` | gauge | summed age of the items being processed now |
//! | `workqueue_longest_running_processor_seconds` | gauge | age of the oldest item being processed now |
//! | `workqueue_retries_total` | counter | calls to `add_after` / `add_rate_limited` before shutdown |
//!
//! Histograms use client-go's buckets: 10 ns to 10 s, factor 10. **Ours:** the two
//! unfinished-work gauges are computed at scrape time from the queue's state (client-go samples
//! them every 500 ms from a goroutine per queue), so they are exact and need no task. Times are
//! read from tokio's clock: scrape from within the runtime when time is paused in tests.
//!
//! Without the feature, [`WorkQueueMetrics`] still exists (so configuration structs have the
//! same fields with and without it) but cannot be constructed, and queues keep no timestamps.
//!
//! # Features
//!
//! - `metrics` (off by default): records client-go's work queue metrics through
//!   `prometheus-client`. When off, no metric code is compiled, queues keep no timestamps, and
//!   [`WorkQueueMetrics`] cannot be constructed (configuration structs keep the same fields, so
//!   enabling the feature never breaks a build).

mod clock;
mod error;
mod metrics;
mod queue;
mod rate_limiter;
mod rate_limiting;

pub use clock::{Clock, TokioClock};
pub use error::{Error, Result};
pub use metrics::WorkQueueMetrics;
pub use queue::{MAX_DELAY, WorkQueue, WorkQueueConfig};
pub use rate_limiter::{
    DEFAULT_BASE_DELAY, DEFAULT_BURST, DEFAULT_MAX_DELAY, DEFAULT_QPS, ExponentialRateLimiter,
    FastSlowRateLimiter, MaxOfRateLimiter, MaxWaitRateLimiter, RateLimiter, TokenBucketRateLimiter,
    default_rate_limiter,
};
pub use rate_limiting::{RateLimitingQueue, RateLimitingQueueConfig};
