//! client-go `util/workqueue/default_rate_limiters_test.go`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use informer_workqueue::{
    ExponentialRateLimiter, FastSlowRateLimiter, MaxOfRateLimiter, MaxWaitRateLimiter, RateLimiter,
};

use crate::support::MS;

/// client-go util/workqueue/default_rate_limiters_test.go: TestItemExponentialFailureRateLimiter
#[test]
fn item_exponential_failure_rate_limiter() {
    let limiter = ExponentialRateLimiter::new(MS, Duration::from_secs(1));
    for expected in [1, 2, 4, 8, 16] {
        assert_eq!(limiter.when(&"one"), expected * MS);
    }
    assert_eq!(limiter.num_requeues(&"one"), 5);

    assert_eq!(limiter.when(&"two"), MS);
    assert_eq!(limiter.when(&"two"), 2 * MS);
    assert_eq!(limiter.num_requeues(&"two"), 2);

    limiter.forget(&"one");
    assert_eq!(limiter.num_requeues(&"one"), 0);
    assert_eq!(limiter.when(&"one"), MS);
}

/// client-go util/workqueue/default_rate_limiters_test.go: TestItemExponentialFailureRateLimiterOverFlow
#[test]
fn item_exponential_failure_rate_limiter_over_flow() {
    let limiter = ExponentialRateLimiter::new(MS, Duration::from_secs(1000));
    for _ in 0..5 {
        limiter.when(&"one");
    }
    assert_eq!(limiter.when(&"one"), 32 * MS);
    for _ in 0..1000 {
        limiter.when(&"overflow1");
    }
    assert_eq!(limiter.when(&"overflow1"), Duration::from_secs(1000));

    let limiter =
        ExponentialRateLimiter::new(Duration::from_secs(60), Duration::from_secs(1000 * 3600));
    for _ in 0..2 {
        limiter.when(&"two");
    }
    assert_eq!(limiter.when(&"two"), Duration::from_secs(4 * 60));
    for _ in 0..1000 {
        limiter.when(&"overflow2");
    }
    assert_eq!(limiter.when(&"overflow2"), Duration::from_secs(1000 * 3600));
}

/// client-go util/workqueue/default_rate_limiters_test.go: TestItemFastSlowRateLimiter
#[test]
fn item_fast_slow_rate_limiter() {
    let limiter = FastSlowRateLimiter::new(5 * MS, Duration::from_secs(10), 3);
    for expected in [
        5 * MS,
        5 * MS,
        5 * MS,
        Duration::from_secs(10),
        Duration::from_secs(10),
    ] {
        assert_eq!(limiter.when(&"one"), expected);
    }
    assert_eq!(limiter.num_requeues(&"one"), 5);

    assert_eq!(limiter.when(&"two"), 5 * MS);
    assert_eq!(limiter.when(&"two"), 5 * MS);
    assert_eq!(limiter.num_requeues(&"two"), 2);

    limiter.forget(&"one");
    assert_eq!(limiter.num_requeues(&"one"), 0);
    assert_eq!(limiter.when(&"one"), 5 * MS);
}

/// client-go util/workqueue/default_rate_limiters_test.go: TestMaxOfRateLimiter
#[test]
fn max_of_rate_limiter() {
    let limiter = MaxOfRateLimiter::new(vec![
        Box::new(FastSlowRateLimiter::new(5 * MS, Duration::from_secs(3), 3)),
        Box::new(ExponentialRateLimiter::new(MS, Duration::from_secs(1))),
    ]);
    for expected in [
        5 * MS,
        5 * MS,
        5 * MS,
        Duration::from_secs(3),
        Duration::from_secs(3),
    ] {
        assert_eq!(limiter.when(&"one"), expected);
    }
    assert_eq!(limiter.num_requeues(&"one"), 5);

    assert_eq!(limiter.when(&"two"), 5 * MS);
    assert_eq!(limiter.when(&"two"), 5 * MS);
    assert_eq!(limiter.num_requeues(&"two"), 2);

    limiter.forget(&"one");
    assert_eq!(limiter.num_requeues(&"one"), 0);
    assert_eq!(limiter.when(&"one"), 5 * MS);
}

/// Upstream's `StepRateLimiter` (a test helper): `base` for the first `threshold` calls,
/// whatever the item, `max` afterwards.
struct StepRateLimiter {
    count: AtomicU32,
    threshold: u32,
    base: Duration,
    max: Duration,
}

impl<T> RateLimiter<T> for StepRateLimiter {
    fn when(&self, _item: &T) -> Duration {
        if self.count.fetch_add(1, Ordering::Relaxed) < self.threshold {
            self.base
        } else {
            self.max
        }
    }

    fn forget(&self, _item: &T) {}

    fn num_requeues(&self, _item: &T) -> u32 {
        0
    }
}

/// client-go util/workqueue/default_rate_limiters_test.go: TestWithMaxWaitRateLimiter
#[test]
fn with_max_wait_rate_limiter() {
    let limiter = MaxWaitRateLimiter::new(
        StepRateLimiter {
            count: AtomicU32::new(0),
            threshold: 100,
            base: 5 * MS,
            max: Duration::from_secs(1000),
        },
        Duration::from_secs(500),
    );
    for i in 0..100 {
        assert_eq!(limiter.when(&i), 5 * MS);
    }
    for i in 100..200 {
        assert_eq!(limiter.when(&i), Duration::from_secs(500));
    }
}
