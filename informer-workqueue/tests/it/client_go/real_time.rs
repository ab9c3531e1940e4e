//! The work queue's timers in real time: a multi-thread runtime, tokio's real clock, and
//! tolerances. Paused-time tests prove the arithmetic; these prove the timers fire when they
//! should on a real clock (never early, not much late), which paused time cannot show.
//!
//! Every bound is "never early" (elapsed >= the delay, to the millisecond the timer wheel
//! rounds to) and "not late by more than [`LATE`]", generous because CI machines are small and
//! busy. Each test takes well under a second.

use std::sync::Arc;
use std::time::Duration;

use informer_workqueue::{
    ExponentialRateLimiter, FastSlowRateLimiter, MaxOfRateLimiter, RateLimiter, RateLimitingQueue,
    RateLimitingQueueConfig, TokenBucketRateLimiter, WorkQueue,
};
use tokio::time::Instant;

use crate::support::{GUARD, MS};

/// How late a timer may fire on a loaded 2-core machine before we call it a bug.
const LATE: Duration = Duration::from_millis(100);

/// Asserts `elapsed` lies in `[at, at + LATE]`.
#[track_caller]
fn on_time(what: &str, elapsed: Duration, at: Duration) {
    assert!(
        elapsed >= at,
        "{what}: after {elapsed:?}, before its time {at:?}"
    );
    assert!(
        elapsed <= at + LATE,
        "{what}: after {elapsed:?}, more than {LATE:?} late for {at:?}"
    );
}

/// Gets the next item within a hang guard.
async fn next<T: Clone + Eq + std::hash::Hash + Send + Sync + 'static>(
    q: &RateLimitingQueue<T>,
) -> T {
    tokio::time::timeout(GUARD, q.get())
        .await
        .expect("an item within 10 s")
        .expect("queue not shut down")
}

fn rate_limited<T>(limiter: impl RateLimiter<T> + 'static) -> RateLimitingQueue<T>
where
    T: Clone + Eq + std::hash::Hash + Send + Sync + 'static,
{
    RateLimitingQueue::with_config(RateLimitingQueueConfig {
        rate_limiter: Arc::new(limiter),
        ..RateLimitingQueueConfig::default()
    })
}

/// `add_after`: items come out when their delays pass, in deadline order, a direct add at
/// once, and a sleeping `get` wakes for an item whose deadline is earlier than the one it
/// sleeps for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delaying_queue_add_after() {
    let q: WorkQueue<&str> = WorkQueue::new();
    let start = Instant::now();
    q.add_after("late", 300 * MS);
    q.add_after("early", 100 * MS);
    q.add("now");
    let get = || async { tokio::time::timeout(GUARD, q.get()).await.unwrap().unwrap() };
    assert_eq!(get().await, "now");
    on_time("now", start.elapsed(), Duration::ZERO);
    // A worker already asleep until "early" is woken for an item due sooner.
    let sooner = {
        let q = q.clone();
        tokio::spawn(async move {
            tokio::time::sleep(20 * MS).await;
            q.add_after("sooner", 30 * MS);
        })
    };
    assert_eq!(get().await, "sooner");
    on_time("sooner", start.elapsed(), 50 * MS);
    sooner.await.unwrap();
    assert_eq!(get().await, "early");
    on_time("early", start.elapsed(), 100 * MS);
    assert_eq!(get().await, "late");
    on_time("late", start.elapsed(), 300 * MS);
}

/// The per-item exponential limiter through the rate-limited queue: an item failing four times
/// is retried after 20, 40, 80 and 160 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item_exponential_limiter_in_real_time() {
    let q = rate_limited(ExponentialRateLimiter::new(20 * MS, Duration::from_secs(1)));
    q.add("a");
    assert_eq!(next(&q).await, "a");
    for (attempt, delay) in [20, 40, 80, 160].into_iter().enumerate() {
        let failed_at = Instant::now();
        q.add_rate_limited("a");
        q.done(&"a");
        assert_eq!(next(&q).await, "a");
        on_time(&format!("retry {attempt}"), failed_at.elapsed(), delay * MS);
    }
    assert_eq!(q.num_requeues(&"a"), 4);
    q.forget(&"a");
    assert_eq!(q.num_requeues(&"a"), 0);
}

/// The token bucket (10 per second, burst 1) on the real clock: five items rate-limited at once
/// come out 100 ms apart, the first at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_bucket_limiter_in_real_time() {
    let q = rate_limited(TokenBucketRateLimiter::new(10.0, 1).unwrap());
    let start = Instant::now();
    for i in 0..5 {
        q.add_rate_limited(i);
    }
    for i in 0..5u32 {
        assert_eq!(next(&q).await, i);
        on_time(&format!("item {i}"), start.elapsed(), i * 100 * MS);
    }
}

/// The item fast-slow limiter: two quick retries (30 ms), then slow ones (200 ms).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item_fast_slow_limiter_in_real_time() {
    let q = rate_limited(FastSlowRateLimiter::new(30 * MS, 200 * MS, 2));
    q.add("a");
    assert_eq!(next(&q).await, "a");
    for (attempt, delay) in [30, 30, 200].into_iter().enumerate() {
        let failed_at = Instant::now();
        q.add_rate_limited("a");
        q.done(&"a");
        assert_eq!(next(&q).await, "a");
        on_time(&format!("retry {attempt}"), failed_at.elapsed(), delay * MS);
    }
}

/// The max-of limiter (exponential from 50 ms, token bucket 10/s burst 1), client-go's default
/// shape with small numbers: for one item the exponential part dominates once it exceeds the
/// bucket's spacing; across many items the bucket spaces them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_of_limiter_in_real_time() {
    let limiter = MaxOfRateLimiter::new(vec![
        Box::new(ExponentialRateLimiter::new(
            50 * MS,
            Duration::from_secs(10),
        )),
        Box::new(TokenBucketRateLimiter::new(10.0, 1).unwrap()),
    ]);
    let q = rate_limited(limiter);
    let start = Instant::now();
    // Three items at once: the first waits the exponential 50 ms (the bucket would let it go at
    // once), the next two the bucket's 100 and 200 ms.
    for i in 0..3 {
        q.add_rate_limited(i);
    }
    for (i, at) in [50u32, 100, 200].into_iter().enumerate() {
        let got = next(&q).await;
        assert_eq!(got, u32::try_from(i).unwrap());
        on_time(&format!("item {i}"), start.elapsed(), at * MS);
        q.done(&got);
    }
    // Item 0 fails again: exponential 100 ms; the bucket's next token (300 ms from start) is
    // already within that.
    let failed_at = Instant::now();
    q.add_rate_limited(0);
    assert_eq!(next(&q).await, 0);
    let bucket_at = (300 * MS).saturating_sub(failed_at - start);
    on_time(
        "item 0 retry",
        failed_at.elapsed(),
        (100 * MS).max(bucket_at),
    );
}

/// The rate-limited queue end to end: two workers, three keys that fail twice before they
/// succeed (exponential from 25 ms); every retry waits its delay, successes are forgotten, and
/// a drain at the end returns once every worker is done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limited_queue_end_to_end() {
    let q = rate_limited(ExponentialRateLimiter::new(25 * MS, Duration::from_secs(1)));
    let log = Arc::new(parking_lot::Mutex::new(Vec::<(&str, Instant)>::new()));
    // Attempts fully handled (requeued or forgotten, then done): the log records an attempt
    // when it starts, before its key is forgotten.
    let handled = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let (q, log, handled) = (q.clone(), Arc::clone(&log), Arc::clone(&handled));
            tokio::spawn(async move {
                while let Some(key) = q.get().await {
                    log.lock().push((key, Instant::now()));
                    if q.num_requeues(&key) < 2 {
                        q.add_rate_limited(key);
                    } else {
                        q.forget(&key);
                    }
                    q.done(&key);
                    handled.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            })
        })
        .collect();
    for key in ["a", "b", "c"] {
        q.add(key);
    }
    tokio::time::timeout(GUARD, async {
        while handled.load(std::sync::atomic::Ordering::SeqCst) < 9 {
            tokio::time::sleep(5 * MS).await;
        }
    })
    .await
    .expect("nine attempts within 10 s");
    for key in ["a", "b", "c"] {
        let times: Vec<Instant> = log
            .lock()
            .iter()
            .filter(|(k, _)| *k == key)
            .map(|(_, t)| *t)
            .collect();
        assert_eq!(times.len(), 3, "{key}: three attempts");
        on_time(&format!("{key} retry 1"), times[1] - times[0], 25 * MS);
        on_time(&format!("{key} retry 2"), times[2] - times[1], 50 * MS);
        assert_eq!(q.num_requeues(&key), 0, "{key} forgotten");
    }
    tokio::time::timeout(GUARD, q.shut_down_with_drain())
        .await
        .expect("drained");
    for w in workers {
        w.await.unwrap();
    }
}

/// `shut_down_with_drain` in real time: it returns when the last item in process is done (here
/// 200 ms later), not before, and at once when nothing is in process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shut_down_with_drain_in_real_time() {
    let q: WorkQueue<&str> = WorkQueue::new();
    q.add("slow");
    q.add("queued");
    let item = q.get().await.unwrap();
    assert_eq!(item, "slow");
    // Taken before the worker starts its 200 ms, which may begin at once on another thread.
    let start = Instant::now();
    let worker = {
        let q = q.clone();
        tokio::spawn(async move {
            tokio::time::sleep(200 * MS).await;
            q.done(&"slow");
        })
    };
    tokio::time::timeout(GUARD, q.shut_down_with_drain())
        .await
        .expect("drain returned");
    on_time("drain", start.elapsed(), 200 * MS);
    worker.await.unwrap();
    // What was queued before shutdown is still handed out, then the queue reports shutdown.
    assert_eq!(q.get().await, Some("queued"));
    q.done(&"queued");
    assert_eq!(q.get().await, None);

    let idle: WorkQueue<&str> = WorkQueue::new();
    let start = Instant::now();
    idle.shut_down_with_drain().await;
    on_time("idle drain", start.elapsed(), Duration::ZERO);
}
