//! client-go `util/workqueue/rate_limiting_queue_test.go`.

use std::sync::Arc;
use std::time::Duration;

use informer_workqueue::{
    ExponentialRateLimiter, RateLimiter, RateLimitingQueue, RateLimitingQueueConfig,
};
use parking_lot::Mutex;
use tokio::time::advance;

use crate::support::MS;

/// A limiter that records every delay it answers: what upstream reads from the delaying
/// queue's `waitingForAddCh` (the delay each `AddRateLimited` asked for).
struct Recording<R> {
    inner: R,
    answered: Mutex<Vec<Duration>>,
}

impl<T, R: RateLimiter<T>> RateLimiter<T> for Recording<R> {
    fn when(&self, item: &T) -> Duration {
        let delay = self.inner.when(item);
        self.answered.lock().push(delay);
        delay
    }

    fn forget(&self, item: &T) {
        self.inner.forget(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.inner.num_requeues(item)
    }
}

/// client-go util/workqueue/rate_limiting_queue_test.go: TestRateLimitingQueue
#[tokio::test(start_paused = true)]
async fn rate_limiting_queue() {
    let limiter = Arc::new(Recording {
        inner: ExponentialRateLimiter::new(MS, Duration::from_secs(1)),
        answered: Mutex::new(Vec::new()),
    });
    let queue: RateLimitingQueue<&str> = RateLimitingQueue::with_config(RateLimitingQueueConfig {
        rate_limiter: limiter.clone(),
        ..RateLimitingQueueConfig::default()
    });
    let last = || *limiter.answered.lock().last().unwrap();

    queue.add_rate_limited("one");
    assert_eq!(last(), MS);
    queue.add_rate_limited("one");
    assert_eq!(last(), 2 * MS);
    assert_eq!(queue.num_requeues(&"one"), 2);

    queue.add_rate_limited("two");
    assert_eq!(last(), MS);
    queue.add_rate_limited("two");
    assert_eq!(last(), 2 * MS);

    queue.forget(&"one");
    assert_eq!(queue.num_requeues(&"one"), 0);
    queue.add_rate_limited("one");
    assert_eq!(last(), MS);

    // And the queue waits those delays (each item's earliest deadline, 1 ms).
    assert_eq!(queue.len(), 0);
    advance(MS).await;
    assert_eq!(queue.len(), 2);
}
