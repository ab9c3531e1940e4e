//! The rate-limited queue: retries wait the limiter's delay, `forget` resets, shutdown.

use std::sync::Arc;
use std::time::Duration;

use informer_workqueue::{
    ExponentialRateLimiter, RateLimitingQueue, RateLimitingQueueConfig, TokenBucketRateLimiter,
};
use tokio::time::{Instant, advance};

use crate::support::MS;

fn exponential_queue() -> RateLimitingQueue<&'static str> {
    RateLimitingQueue::with_config(RateLimitingQueueConfig {
        name: "test".into(),
        rate_limiter: Arc::new(ExponentialRateLimiter::new(MS, Duration::from_secs(1))),
        ..RateLimitingQueueConfig::default()
    })
}

#[tokio::test(start_paused = true)]
async fn add_rate_limited_waits_the_limiters_delay() {
    let queue = exponential_queue();
    assert_eq!(queue.name(), "test");
    let start = Instant::now();
    let mut expected_at = Duration::ZERO;
    for attempt in 0..5u32 {
        queue.add_rate_limited("a");
        assert_eq!(queue.len(), 0);
        assert_eq!(queue.get().await, Some("a"));
        expected_at += MS * 2u32.pow(attempt);
        assert_eq!(start.elapsed(), expected_at, "attempt {attempt}");
        queue.done(&"a");
    }
    assert_eq!(queue.num_requeues(&"a"), 5);
}

#[tokio::test(start_paused = true)]
async fn forget_resets_the_backoff() {
    let queue = exponential_queue();
    for _ in 0..4 {
        queue.add_rate_limited("a");
    }
    assert_eq!(queue.num_requeues(&"a"), 4);
    queue.forget(&"a");
    assert_eq!(queue.num_requeues(&"a"), 0);
    // Forget does not take the item out of the queue: it still arrives (earliest deadline).
    let start = Instant::now();
    assert_eq!(queue.get().await, Some("a"));
    assert_eq!(start.elapsed(), MS);
    queue.done(&"a");
    queue.add_rate_limited("a");
    let start = Instant::now();
    assert_eq!(queue.get().await, Some("a"));
    assert_eq!(start.elapsed(), MS);
}

#[tokio::test(start_paused = true)]
async fn items_back_off_independently() {
    let queue = exponential_queue();
    // Three earlier failures of "slow" (recorded without queueing it).
    for _ in 0..3 {
        queue.rate_limiter().when(&"slow");
    }
    let start = Instant::now();
    queue.add_rate_limited("slow"); // 8 ms
    queue.add_rate_limited("fresh"); // 1 ms
    assert_eq!(queue.get().await, Some("fresh"));
    assert_eq!(start.elapsed(), MS);
    assert_eq!(queue.get().await, Some("slow"));
    assert_eq!(start.elapsed(), 8 * MS);
}

#[tokio::test(start_paused = true)]
async fn default_queue_uses_client_gos_limiter() {
    let queue: RateLimitingQueue<u32> = RateLimitingQueue::new();
    let start = Instant::now();
    queue.add_rate_limited(1);
    assert_eq!(queue.get().await, Some(1));
    assert_eq!(start.elapsed(), 5 * MS);
    queue.done(&1);
    queue.add_rate_limited(1);
    assert_eq!(queue.get().await, Some(1));
    assert_eq!(start.elapsed(), 15 * MS);
    assert_eq!(queue.num_requeues(&1), 2);
}

#[tokio::test(start_paused = true)]
async fn a_shared_token_bucket_spreads_a_burst_of_retries() {
    let queue: RateLimitingQueue<u32> = RateLimitingQueue::with_config(RateLimitingQueueConfig {
        rate_limiter: Arc::new(TokenBucketRateLimiter::new(10.0, 2).unwrap()),
        ..RateLimitingQueueConfig::default()
    });
    for item in 0..5 {
        queue.add_rate_limited(item);
    }
    assert_eq!(queue.len(), 2);
    let start = Instant::now();
    let mut seen = Vec::new();
    for _ in 0..5 {
        let item = queue.get().await.unwrap();
        seen.push((item, start.elapsed()));
        queue.done(&item);
    }
    assert_eq!(
        seen,
        vec![
            (0, Duration::ZERO),
            (1, Duration::ZERO),
            (2, 100 * MS),
            (3, 200 * MS),
            (4, 300 * MS)
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn add_rate_limited_after_shut_down_is_ignored_and_not_counted() {
    let queue = exponential_queue();
    queue.shut_down();
    queue.add_rate_limited("a");
    assert_eq!(queue.num_requeues(&"a"), 0);
    advance(Duration::from_secs(10)).await;
    assert!(queue.is_empty());
    assert!(queue.is_shutting_down());
    assert_eq!(queue.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn pass_through_operations_reach_the_same_queue() {
    let queue = exponential_queue();
    let clone = queue.clone();
    queue.add("a");
    clone.add_after("b", 10 * MS);
    assert_eq!(queue.work_queue().len(), 1);
    assert_eq!(clone.get().await, Some("a"));
    assert_eq!(queue.get().await, Some("b"));
    queue.rate_limiter().when(&"c");
    assert_eq!(clone.num_requeues(&"c"), 1);
    queue.done(&"a");
    clone.done(&"b");
    queue.shut_down_with_drain().await;
    assert_eq!(clone.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn a_worker_loop_retries_until_success_then_forgets() {
    let queue: RateLimitingQueue<String> = RateLimitingQueue::new();
    let worker = tokio::spawn({
        let queue = queue.clone();
        async move {
            let mut attempts = Vec::new();
            while let Some(key) = queue.get().await {
                attempts.push(Instant::now());
                if attempts.len() < 4 {
                    queue.add_rate_limited(key.clone());
                } else {
                    queue.forget(&key);
                }
                queue.done(&key);
                if attempts.len() == 4 {
                    break;
                }
            }
            attempts
        }
    });
    let start = Instant::now();
    queue.add("ns/name".to_string());
    let attempts = worker.await.unwrap();
    let offsets: Vec<Duration> = attempts.iter().map(|at| *at - start).collect();
    // Immediately, then after 5, 10 and 20 ms of backoff.
    assert_eq!(offsets, vec![Duration::ZERO, 5 * MS, 15 * MS, 35 * MS]);
    assert_eq!(queue.num_requeues(&"ns/name".to_string()), 0);
}
