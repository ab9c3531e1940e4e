//! Each rate limiter's delay sequence, forgetting, and the default limiter's values.

use std::sync::Arc;
use std::time::Duration;

use informer_workqueue::{
    Clock, DEFAULT_BASE_DELAY, DEFAULT_BURST, DEFAULT_MAX_DELAY, DEFAULT_QPS, Error,
    ExponentialRateLimiter, FastSlowRateLimiter, MAX_DELAY, MaxOfRateLimiter, MaxWaitRateLimiter,
    RateLimiter, TokenBucketRateLimiter, default_rate_limiter,
};
use parking_lot::Mutex;
use tokio::time::{Instant, advance};

use crate::support::MS;

fn delays<T, R: RateLimiter<T>>(limiter: &R, item: &T, n: usize) -> Vec<Duration> {
    (0..n).map(|_| limiter.when(item)).collect()
}

#[test]
fn exponential_doubles_from_base_up_to_max() {
    let limiter = ExponentialRateLimiter::new(MS, Duration::from_secs(1));
    let got = delays(&limiter, &"a", 12);
    let expected: Vec<Duration> = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000, 1000]
        .into_iter()
        .map(|ms| ms * MS)
        .collect();
    assert_eq!(got, expected);
    assert_eq!(limiter.num_requeues(&"a"), 12);
}

#[test]
fn exponential_counts_each_item_separately() {
    let limiter = ExponentialRateLimiter::new(MS, Duration::from_secs(1));
    assert_eq!(delays(&limiter, &"a", 3), vec![MS, 2 * MS, 4 * MS]);
    assert_eq!(limiter.when(&"b"), MS);
    assert_eq!(limiter.num_requeues(&"a"), 3);
    assert_eq!(limiter.num_requeues(&"b"), 1);
    assert_eq!(limiter.num_requeues(&"c"), 0);
}

#[test]
fn exponential_forget_resets_an_item() {
    let limiter = ExponentialRateLimiter::new(MS, Duration::from_secs(1));
    delays(&limiter, &"a", 5);
    delays(&limiter, &"b", 2);
    limiter.forget(&"a");
    assert_eq!(limiter.num_requeues(&"a"), 0);
    assert_eq!(limiter.when(&"a"), MS);
    // Other items keep their history.
    assert_eq!(limiter.num_requeues(&"b"), 2);
    assert_eq!(limiter.when(&"b"), 4 * MS);
}

#[test]
fn exponential_stays_at_max_without_overflowing() {
    let limiter = ExponentialRateLimiter::new(Duration::from_secs(1), Duration::MAX);
    let last = delays(&limiter, &"a", 200).pop().unwrap();
    assert_eq!(last, Duration::MAX);
    let capped = ExponentialRateLimiter::new(Duration::from_secs(3600), DEFAULT_MAX_DELAY);
    assert_eq!(delays(&capped, &"a", 100).pop().unwrap(), DEFAULT_MAX_DELAY);
}

#[test]
fn fast_slow_switches_after_the_fast_attempts() {
    let limiter = FastSlowRateLimiter::new(5 * MS, 10 * MS, 3);
    assert_eq!(
        delays(&limiter, &"a", 6),
        vec![5 * MS, 5 * MS, 5 * MS, 10 * MS, 10 * MS, 10 * MS]
    );
    assert_eq!(limiter.num_requeues(&"a"), 6);
    assert_eq!(limiter.when(&"b"), 5 * MS);
    limiter.forget(&"a");
    assert_eq!(limiter.num_requeues(&"a"), 0);
    assert_eq!(
        delays(&limiter, &"a", 4),
        vec![5 * MS, 5 * MS, 5 * MS, 10 * MS]
    );
}

#[test]
fn fast_slow_with_no_fast_attempts_is_always_slow() {
    let limiter = FastSlowRateLimiter::new(MS, Duration::from_secs(1), 0);
    assert_eq!(delays(&limiter, &1, 2), vec![Duration::from_secs(1); 2]);
}

#[tokio::test(start_paused = true)]
async fn token_bucket_passes_the_burst_then_spaces_items() {
    let limiter = TokenBucketRateLimiter::new(10.0, 3).unwrap();
    // The bucket starts full: three at once, then one every 100 ms, on credit.
    assert_eq!(
        delays(&limiter, &"x", 6),
        vec![
            Duration::ZERO,
            Duration::ZERO,
            Duration::ZERO,
            100 * MS,
            200 * MS,
            300 * MS
        ]
    );
    // Tokens are shared by all items and nothing is counted per item.
    assert_eq!(limiter.when(&"other"), 400 * MS);
    assert_eq!(limiter.num_requeues(&"x"), 0);
}

#[tokio::test(start_paused = true)]
async fn token_bucket_refills_with_time_up_to_the_burst() {
    let limiter = TokenBucketRateLimiter::new(10.0, 2).unwrap();
    assert_eq!(
        delays(&limiter, &(), 3),
        vec![Duration::ZERO, Duration::ZERO, 100 * MS]
    );
    // The third token was taken on credit: 100 ms to pay it back, then 50 ms refill half a token.
    advance(150 * MS).await;
    assert_eq!(limiter.when(&()), 50 * MS);
    // A long pause refills the bucket only up to its burst.
    advance(Duration::from_secs(60)).await;
    assert_eq!(
        delays(&limiter, &(), 3),
        vec![Duration::ZERO, Duration::ZERO, 100 * MS]
    );
}

#[tokio::test(start_paused = true)]
async fn token_bucket_forget_does_not_refill() {
    let limiter = TokenBucketRateLimiter::new(1.0, 1).unwrap();
    assert_eq!(limiter.when(&"a"), Duration::ZERO);
    limiter.forget(&"a");
    assert_eq!(limiter.when(&"a"), Duration::from_secs(1));
}

#[test]
fn token_bucket_with_infinite_rate_never_delays() {
    let limiter = TokenBucketRateLimiter::new(f64::INFINITY, 1).unwrap();
    assert!(delays(&limiter, &(), 1000).iter().all(Duration::is_zero));
}

#[test]
fn token_bucket_rejects_bad_settings() {
    for qps in [0.0, -1.0, f64::NAN, f64::NEG_INFINITY, 1e-12] {
        match TokenBucketRateLimiter::new(qps, 10) {
            Err(Error::InvalidRate {
                qps: got,
                max_interval_secs,
            }) => {
                assert!(got.is_nan() || got == qps);
                assert_eq!(max_interval_secs, MAX_DELAY.as_secs());
            }
            other => panic!("qps {qps}: expected InvalidRate, got {other:?}"),
        }
    }
    assert_eq!(
        TokenBucketRateLimiter::new(10.0, 0).unwrap_err(),
        Error::ZeroBurst { qps: 10.0 }
    );
    let message = TokenBucketRateLimiter::new(-2.0, 1)
        .unwrap_err()
        .to_string();
    assert!(message.contains("-2"), "{message}");
}

/// A clock that only moves when told to.
#[derive(Debug)]
struct HandClock(Mutex<Instant>);

impl Clock for HandClock {
    fn now(&self) -> Instant {
        *self.0.lock()
    }
}

#[test]
fn token_bucket_reads_an_injected_clock() {
    let clock = Arc::new(HandClock(Mutex::new(Instant::now())));
    let limiter = TokenBucketRateLimiter::with_clock(4.0, 1, clock.clone()).unwrap();
    assert_eq!(limiter.qps(), 4.0);
    assert_eq!(limiter.burst(), 1);
    assert_eq!(
        delays(&limiter, &(), 3),
        vec![Duration::ZERO, 250 * MS, 500 * MS]
    );
    *clock.0.lock() += Duration::from_secs(10);
    assert_eq!(limiter.when(&()), Duration::ZERO);
}

#[test]
fn max_of_answers_the_longest_delay_and_forgets_everywhere() {
    let limiter = MaxOfRateLimiter::new(vec![
        Box::new(FastSlowRateLimiter::new(3 * MS, Duration::from_secs(1), 2)),
        Box::new(ExponentialRateLimiter::new(MS, Duration::from_secs(60))),
    ]);
    assert_eq!(
        delays(&limiter, &"a", 5),
        vec![
            3 * MS,
            3 * MS,
            Duration::from_secs(1),
            Duration::from_secs(1),
            Duration::from_secs(1)
        ]
    );
    assert_eq!(limiter.num_requeues(&"a"), 5);
    limiter.forget(&"a");
    assert_eq!(limiter.num_requeues(&"a"), 0);
    assert_eq!(limiter.when(&"a"), 3 * MS);
}

#[test]
fn max_of_asks_every_limiter_even_when_one_dominates() {
    let counting = Arc::new(ExponentialRateLimiter::new(MS, MS));
    let limiter = MaxOfRateLimiter::new(vec![Box::new(FastSlowRateLimiter::new(
        Duration::from_secs(1),
        Duration::from_secs(1),
        0,
    ))])
    .with(Arc::clone(&counting));
    delays(&limiter, &"a", 4);
    assert_eq!(counting.num_requeues(&"a"), 4);
}

#[test]
fn max_of_nothing_never_delays() {
    let limiter: MaxOfRateLimiter<u8> = MaxOfRateLimiter::new(Vec::new());
    assert_eq!(limiter.when(&1), Duration::ZERO);
    assert_eq!(limiter.num_requeues(&1), 0);
}

#[test]
fn max_wait_caps_the_inner_delay() {
    let limiter = MaxWaitRateLimiter::new(ExponentialRateLimiter::new(MS, Duration::MAX), 5 * MS);
    assert_eq!(
        delays(&limiter, &"a", 5),
        vec![MS, 2 * MS, 4 * MS, 5 * MS, 5 * MS]
    );
    assert_eq!(limiter.num_requeues(&"a"), 5);
    limiter.forget(&"a");
    assert_eq!(limiter.num_requeues(&"a"), 0);
}

#[test]
fn default_constants_are_client_gos() {
    assert_eq!(DEFAULT_BASE_DELAY, 5 * MS);
    assert_eq!(DEFAULT_MAX_DELAY, Duration::from_secs(1000));
    assert_eq!(DEFAULT_QPS, 10.0);
    assert_eq!(DEFAULT_BURST, 100);
}

#[tokio::test(start_paused = true)]
async fn default_limiter_backs_off_per_item_from_5ms_to_1000s() {
    let limiter = default_rate_limiter();
    let expected: Vec<Duration> = (0..18).map(|n| 5 * MS * 2u32.pow(n)).collect();
    // 18 failures stay within the bucket's burst of 100, so the exponential part decides.
    assert_eq!(delays(&limiter, &"a", 18), expected);
    // 5 ms * 2^18 = 1310.72 s > 1000 s.
    assert_eq!(limiter.when(&"a"), Duration::from_secs(1000));
    assert_eq!(limiter.num_requeues(&"a"), 19);
    limiter.forget(&"a");
    assert_eq!(limiter.num_requeues(&"a"), 0);
    assert_eq!(limiter.when(&"a"), 5 * MS);
}

#[tokio::test(start_paused = true)]
async fn default_limiter_spaces_a_storm_at_10_per_second_after_100() {
    let limiter = default_rate_limiter();
    // 100 distinct items fail once each: the bucket's burst lets all of them through at 5 ms.
    for item in 0..100 {
        assert_eq!(limiter.when(&item), 5 * MS, "item {item}");
    }
    // From the 101st, the bucket dominates: 100 ms, 200 ms, ...
    assert_eq!(limiter.when(&100), 100 * MS);
    assert_eq!(limiter.when(&101), 200 * MS);
    assert_eq!(limiter.when(&102), 300 * MS);
}
