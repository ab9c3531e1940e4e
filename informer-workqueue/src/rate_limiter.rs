//! Rate limiters: how long an item must wait before it is retried.
//!
//! A [`RateLimiter`] answers [`when`](RateLimiter::when) an item may be processed again and
//! remembers per-item failures until it is told to [`forget`](RateLimiter::forget) them. The
//! implementations compose: [`MaxOfRateLimiter`] asks several and takes the longest delay,
//! [`MaxWaitRateLimiter`] caps another limiter's delay. [`default_rate_limiter`] is the combination
//! client-go controllers use.

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use crate::clock::{Clock, TokioClock};
use crate::error::{Error, Result};
use crate::queue::MAX_DELAY;

/// Base delay of the per-item exponential part of [`default_rate_limiter`]: 5 ms.
pub const DEFAULT_BASE_DELAY: Duration = Duration::from_millis(5);
/// Maximum delay of the per-item exponential part of [`default_rate_limiter`]: 1000 s.
pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(1000);
/// Rate of the overall token bucket of [`default_rate_limiter`]: 10 items per second.
pub const DEFAULT_QPS: f64 = 10.0;
/// Burst of the overall token bucket of [`default_rate_limiter`]: 100 items.
pub const DEFAULT_BURST: u32 = 100;

/// Decides how long an item waits before it is retried.
///
/// Every call to [`when`](Self::when) counts as one more failure of the item (for limiters that
/// count); [`forget`](Self::forget) clears the item's history, typically after it was processed
/// successfully. Implementations use interior mutability and are shared between workers.
pub trait RateLimiter<T>: Send + Sync {
    /// Records one more failure of `item` and returns how long it must wait before its retry.
    fn when(&self, item: &T) -> Duration;

    /// Clears what this limiter remembers about `item`. Limiters that keep no per-item state
    /// (the token bucket) do nothing.
    fn forget(&self, item: &T);

    /// How many times `item` has failed since it was last forgotten (0 for limiters that do not
    /// count per item).
    fn num_requeues(&self, item: &T) -> u32;
}

impl<T, R: RateLimiter<T> + ?Sized> RateLimiter<T> for Arc<R> {
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }

    fn forget(&self, item: &T) {
        (**self).forget(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        (**self).num_requeues(item)
    }
}

impl<T, R: RateLimiter<T> + ?Sized> RateLimiter<T> for Box<R> {
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }

    fn forget(&self, item: &T) {
        (**self).forget(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        (**self).num_requeues(item)
    }
}

/// The limiter client-go controllers use by default: the longer of a per-item exponential
/// backoff from [`DEFAULT_BASE_DELAY`] (5 ms) doubling up to [`DEFAULT_MAX_DELAY`] (1000 s), and
/// an overall token bucket of [`DEFAULT_QPS`] (10 per second) with a burst of
/// [`DEFAULT_BURST`] (100).
///
/// The exponential part keeps one failing item from spinning; the bucket keeps a storm of
/// failures across many items from flooding the API server.
pub fn default_rate_limiter<T>() -> MaxOfRateLimiter<T>
where
    T: Eq + Hash + Clone + Send + Sync + 'static,
{
    MaxOfRateLimiter::new(vec![
        Box::new(ExponentialRateLimiter::new(
            DEFAULT_BASE_DELAY,
            DEFAULT_MAX_DELAY,
        )),
        Box::new(TokenBucketRateLimiter::from_valid_parts(
            interval_of(DEFAULT_QPS),
            DEFAULT_BURST,
            Arc::new(TokioClock),
        )),
    ])
}

/// Per-item exponential backoff: the n-th failure of an item (counting from 0) waits
/// `base * 2^n`, capped at `max`.
///
/// With the default 5 ms base: 5 ms, 10 ms, 20 ms, 40 ms, ... reaching 1000 s after 18 failures.
pub struct ExponentialRateLimiter<T> {
    base: Duration,
    max: Duration,
    failures: Mutex<HashMap<T, u32>>,
}

impl<T> ExponentialRateLimiter<T> {
    /// A limiter whose first delay is `base`, doubling on every failure, never above `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// The delay after `failures` earlier failures: `base * 2^failures`, at most `max`.
    fn delay_after(&self, failures: u32) -> Duration {
        // 2^96 ns is far beyond any Duration; checking the shift first keeps it in range.
        if failures >= 96 {
            return self.max;
        }
        let delay = self.base.as_nanos().saturating_mul(1u128 << failures);
        if delay >= self.max.as_nanos() {
            self.max
        } else {
            duration_from_nanos(delay)
        }
    }
}

impl<T> fmt::Debug for ExponentialRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExponentialRateLimiter")
            .field("base", &self.base)
            .field("max", &self.max)
            .field("items", &self.failures.lock().len())
            .finish()
    }
}

impl<T> RateLimiter<T> for ExponentialRateLimiter<T>
where
    T: Eq + Hash + Clone + Send + Sync,
{
    fn when(&self, item: &T) -> Duration {
        let earlier = {
            let mut failures = self.failures.lock();
            match failures.get_mut(item) {
                Some(count) => {
                    let earlier = *count;
                    *count = count.saturating_add(1);
                    earlier
                }
                None => {
                    failures.insert(item.clone(), 1);
                    0
                }
            }
        };
        self.delay_after(earlier)
    }

    fn forget(&self, item: &T) {
        self.failures.lock().remove(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.failures.lock().get(item).copied().unwrap_or(0)
    }
}

/// Two speeds per item: the first `max_fast_attempts` failures wait `fast`, later ones `slow`.
///
/// Useful when a few quick retries usually succeed and persistent failures should back off
/// hard, for example while waiting for another controller to create something.
pub struct FastSlowRateLimiter<T> {
    fast: Duration,
    slow: Duration,
    max_fast_attempts: u32,
    failures: Mutex<HashMap<T, u32>>,
}

impl<T> FastSlowRateLimiter<T> {
    /// A limiter answering `fast` for an item's first `max_fast_attempts` failures and `slow`
    /// afterwards.
    pub fn new(fast: Duration, slow: Duration, max_fast_attempts: u32) -> Self {
        Self {
            fast,
            slow,
            max_fast_attempts,
            failures: Mutex::new(HashMap::new()),
        }
    }
}

impl<T> fmt::Debug for FastSlowRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FastSlowRateLimiter")
            .field("fast", &self.fast)
            .field("slow", &self.slow)
            .field("max_fast_attempts", &self.max_fast_attempts)
            .field("items", &self.failures.lock().len())
            .finish()
    }
}

impl<T> RateLimiter<T> for FastSlowRateLimiter<T>
where
    T: Eq + Hash + Clone + Send + Sync,
{
    fn when(&self, item: &T) -> Duration {
        let attempts = {
            let mut failures = self.failures.lock();
            match failures.get_mut(item) {
                Some(count) => {
                    *count = count.saturating_add(1);
                    *count
                }
                None => {
                    failures.insert(item.clone(), 1);
                    1
                }
            }
        };
        if attempts <= self.max_fast_attempts {
            self.fast
        } else {
            self.slow
        }
    }

    fn forget(&self, item: &T) {
        self.failures.lock().remove(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.failures.lock().get(item).copied().unwrap_or(0)
    }
}

/// An overall token bucket shared by all items: `qps` tokens per second, holding at most `burst`.
///
/// [`when`](RateLimiter::when) takes a token and answers how long until that token is (or was)
/// available; it never blocks. The bucket starts full, so the first `burst` items pass at once,
/// then items are spaced `1/qps` apart. Items taken "on credit" push the next ones further out,
/// exactly like `golang.org/x/time/rate`'s `Reserve().Delay()` that client-go uses.
///
/// Time comes from a [`Clock`] ([`TokioClock`] unless given), so tests under
/// `tokio::time::pause` are deterministic. The bucket keeps no per-item state.
#[derive(Debug)]
pub struct TokenBucketRateLimiter {
    /// Time for one token to accumulate.
    interval: Duration,
    /// Time for a full bucket to accumulate: `interval * burst`.
    window: Duration,
    qps: f64,
    burst: u32,
    /// Theoretical arrival time: when the bucket would be full again if no more tokens were
    /// taken (`None` until first use: the bucket starts full).
    full_at: Mutex<Option<Instant>>,
    clock: Arc<dyn Clock>,
}

impl TokenBucketRateLimiter {
    /// A bucket of `burst` tokens refilled at `qps` tokens per second, on tokio's clock.
    ///
    /// `qps = f64::INFINITY` never delays. Errors: `qps` not positive (or NaN), or so small that
    /// one token would take longer than [`MAX_DELAY`]; `burst` of 0.
    pub fn new(qps: f64, burst: u32) -> Result<Self> {
        Self::with_clock(qps, burst, Arc::new(TokioClock))
    }

    /// Like [`new`](Self::new), reading the time from `clock`.
    pub fn with_clock(qps: f64, burst: u32, clock: Arc<dyn Clock>) -> Result<Self> {
        let positive = qps.partial_cmp(&0.0) == Some(std::cmp::Ordering::Greater); // not NaN
        if !positive || 1.0 / qps > MAX_DELAY.as_secs_f64() {
            return Err(Error::InvalidRate {
                qps,
                max_interval_secs: MAX_DELAY.as_secs(),
            });
        }
        if burst == 0 {
            return Err(Error::ZeroBurst { qps });
        }
        Ok(Self::from_valid_parts(interval_of(qps), burst, clock))
    }

    /// Builds a bucket from an already validated interval (at most [`MAX_DELAY`]) and a
    /// non-zero burst.
    fn from_valid_parts(interval: Duration, burst: u32, clock: Arc<dyn Clock>) -> Self {
        // interval <= MAX_DELAY (about 2^30 s) and burst < 2^32, so the product stays below
        // 2^62 s and never saturates in practice; saturating keeps it panic-free regardless.
        let window = interval.saturating_mul(burst);
        let qps = if interval.is_zero() {
            f64::INFINITY
        } else {
            1.0 / interval.as_secs_f64()
        };
        Self {
            interval,
            window,
            qps,
            burst,
            full_at: Mutex::new(None),
            clock,
        }
    }

    /// The configured rate in tokens per second (as represented: rounded to whole nanoseconds
    /// per token).
    pub fn qps(&self) -> f64 {
        self.qps
    }

    /// The configured burst.
    pub fn burst(&self) -> u32 {
        self.burst
    }

    /// Takes one token and returns how long until it is available (zero if it is now).
    fn reserve(&self) -> Duration {
        let now = self.clock.now();
        let mut full_at = self.full_at.lock();
        let start = match *full_at {
            Some(at) if at > now => at,
            _ => now,
        };
        let next = start.checked_add(self.interval).unwrap_or(start);
        *full_at = Some(next);
        next.saturating_duration_since(now)
            .saturating_sub(self.window)
    }
}

impl<T> RateLimiter<T> for TokenBucketRateLimiter {
    fn when(&self, _item: &T) -> Duration {
        self.reserve()
    }

    fn forget(&self, _item: &T) {}

    fn num_requeues(&self, _item: &T) -> u32 {
        0
    }
}

/// Asks every inner limiter and answers the longest delay and the highest requeue count;
/// `forget` reaches all of them. With no inner limiters it never delays.
pub struct MaxOfRateLimiter<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> MaxOfRateLimiter<T> {
    /// Combines `limiters`.
    pub fn new(limiters: Vec<Box<dyn RateLimiter<T>>>) -> Self {
        Self { limiters }
    }

    /// Adds one more limiter to the combination.
    pub fn with(mut self, limiter: impl RateLimiter<T> + 'static) -> Self {
        self.limiters.push(Box::new(limiter));
        self
    }
}

impl<T> fmt::Debug for MaxOfRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaxOfRateLimiter")
            .field("limiters", &self.limiters.len())
            .finish()
    }
}

impl<T> RateLimiter<T> for MaxOfRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        // Every limiter is asked (not short-circuited): each one records the failure.
        self.limiters
            .iter()
            .map(|l| l.when(item))
            .max()
            .unwrap_or(Duration::ZERO)
    }

    fn forget(&self, item: &T) {
        for limiter in &self.limiters {
            limiter.forget(item);
        }
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.limiters
            .iter()
            .map(|l| l.num_requeues(item))
            .max()
            .unwrap_or(0)
    }
}

/// Caps another limiter's delay at `max`; counting and forgetting pass through.
#[derive(Debug)]
pub struct MaxWaitRateLimiter<R> {
    inner: R,
    max: Duration,
}

impl<R> MaxWaitRateLimiter<R> {
    /// Wraps `inner`, never answering more than `max`.
    pub fn new(inner: R, max: Duration) -> Self {
        Self { inner, max }
    }
}

impl<T, R: RateLimiter<T>> RateLimiter<T> for MaxWaitRateLimiter<R> {
    fn when(&self, item: &T) -> Duration {
        self.inner.when(item).min(self.max)
    }

    fn forget(&self, item: &T) {
        self.inner.forget(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.inner.num_requeues(item)
    }
}

/// Time per token at `qps` tokens per second, for a rate already checked to be positive with
/// `1/qps <= MAX_DELAY` (infinite rates give zero).
fn interval_of(qps: f64) -> Duration {
    Duration::try_from_secs_f64(1.0 / qps).unwrap_or(MAX_DELAY)
}

/// A duration of `nanos` nanoseconds, saturating at [`Duration::MAX`].
fn duration_from_nanos(nanos: u128) -> Duration {
    const NANOS_PER_SEC: u128 = 1_000_000_000;
    match u64::try_from(nanos / NANOS_PER_SEC) {
        // The remainder is below 10^9, which fits in u32.
        Ok(secs) => Duration::new(secs, (nanos % NANOS_PER_SEC) as u32),
        Err(_) => Duration::MAX,
    }
}
