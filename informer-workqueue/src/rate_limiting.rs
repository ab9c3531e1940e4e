//! The rate-limited queue: a [`WorkQueue`] plus a [`RateLimiter`] deciding retry delays.

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use crate::metrics::WorkQueueMetrics;
use crate::queue::{WorkQueue, WorkQueueConfig};
use crate::rate_limiter::{RateLimiter, default_rate_limiter};

/// Settings of a [`RateLimitingQueue`].
pub struct RateLimitingQueueConfig<T> {
    /// The queue's name: the `name` label of its metrics. May be empty.
    pub name: String,
    /// Decides how long a failed item waits before its retry. Default:
    /// [`default_rate_limiter`] (as client-go's controllers).
    pub rate_limiter: Arc<dyn RateLimiter<T>>,
    /// Where to record metrics; `None` records none. Values exist only with the `metrics`
    /// feature (see [`WorkQueueMetrics`]).
    pub metrics: Option<WorkQueueMetrics>,
}

impl<T> Default for RateLimitingQueueConfig<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    fn default() -> Self {
        Self {
            name: String::new(),
            rate_limiter: Arc::new(default_rate_limiter()),
            metrics: None,
        }
    }
}

impl<T> Clone for RateLimitingQueueConfig<T> {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            rate_limiter: Arc::clone(&self.rate_limiter),
            metrics: self.metrics.clone(),
        }
    }
}

impl<T> fmt::Debug for RateLimitingQueueConfig<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitingQueueConfig")
            .field("name", &self.name)
            .field("metrics", &self.metrics)
            .finish_non_exhaustive()
    }
}

/// The queue controllers use: a deduplicating, delaying [`WorkQueue`] whose failed items are
/// retried after a delay chosen by a [`RateLimiter`].
///
/// A worker loop calls [`get`](Self::get); on success it calls [`forget`](Self::forget) (reset
/// the item's backoff), on a retriable failure [`add_rate_limited`](Self::add_rate_limited); in
/// both cases then [`done`](Self::done). See the crate documentation for a full example.
///
/// Cloning is cheap: clones are handles to the same queue and limiter.
pub struct RateLimitingQueue<T> {
    queue: WorkQueue<T>,
    rate_limiter: Arc<dyn RateLimiter<T>>,
}

impl<T> Clone for RateLimitingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            rate_limiter: Arc::clone(&self.rate_limiter),
        }
    }
}

impl<T> fmt::Debug for RateLimitingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitingQueue")
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}

impl<T> Default for RateLimitingQueue<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<T> RateLimitingQueue<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    /// An unnamed queue with the [`default_rate_limiter`] and no metrics.
    pub fn new() -> Self {
        Self::with_config(RateLimitingQueueConfig::default())
    }

    /// A queue with the given settings.
    pub fn with_config(config: RateLimitingQueueConfig<T>) -> Self {
        let RateLimitingQueueConfig {
            name,
            rate_limiter,
            metrics,
        } = config;
        Self {
            queue: WorkQueue::with_config(WorkQueueConfig { name, metrics }),
            rate_limiter,
        }
    }

    /// Adds `item` after the delay the rate limiter answers for it (which counts as one more
    /// failure of the item). Ignored after shutdown (the limiter is then not asked).
    pub fn add_rate_limited(&self, item: T) {
        if self.queue.is_shutting_down() {
            return;
        }
        let delay = self.rate_limiter.when(&item);
        tracing::debug!(
            queue = self.name(),
            requeues = self.rate_limiter.num_requeues(&item),
            ?delay,
            "retrying an item after its rate-limited delay"
        );
        self.queue.add_after(item, delay);
    }

    /// Tells the rate limiter to forget `item`'s failures, typically after it was processed
    /// successfully. It does not remove the item from the queue.
    pub fn forget(&self, item: &T) {
        self.rate_limiter.forget(item);
    }

    /// How many times `item` was rate-limited since it was last forgotten.
    pub fn num_requeues(&self, item: &T) -> u32 {
        self.rate_limiter.num_requeues(item)
    }

    /// The rate limiter.
    pub fn rate_limiter(&self) -> &Arc<dyn RateLimiter<T>> {
        &self.rate_limiter
    }

    /// The underlying queue (the same one this handle operates on).
    pub fn work_queue(&self) -> &WorkQueue<T> {
        &self.queue
    }

    /// The queue's name (the `name` label of its metrics).
    pub fn name(&self) -> &str {
        self.queue.name()
    }

    /// See [`WorkQueue::add`].
    pub fn add(&self, item: T) {
        self.queue.add(item);
    }

    /// See [`WorkQueue::add_after`].
    pub fn add_after(&self, item: T, delay: Duration) {
        self.queue.add_after(item, delay);
    }

    /// See [`WorkQueue::get`].
    pub async fn get(&self) -> Option<T> {
        self.queue.get().await
    }

    /// See [`WorkQueue::done`].
    pub fn done(&self, item: &T) {
        self.queue.done(item);
    }

    /// See [`WorkQueue::len`].
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// See [`WorkQueue::is_empty`].
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// See [`WorkQueue::shut_down`].
    pub fn shut_down(&self) {
        self.queue.shut_down();
    }

    /// See [`WorkQueue::shut_down_with_drain`].
    pub async fn shut_down_with_drain(&self) {
        self.queue.shut_down_with_drain().await;
    }

    /// See [`WorkQueue::is_shutting_down`].
    pub fn is_shutting_down(&self) -> bool {
        self.queue.is_shutting_down()
    }
}
