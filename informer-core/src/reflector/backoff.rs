//! Exponential backoff with jitter, driven by the caller's clock and random samples.

use std::time::{Duration, Instant};

/// How the delay of one attempt is spread around its exponential base.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[non_exhaustive]
pub enum Jitter {
    /// No jitter: the delay is the base.
    None,
    /// "Full jitter": the delay is uniform in `[0, base]`. Never exceeds the cap, and spreads
    /// many clients restarting at once over the whole interval. The default.
    #[default]
    Full,
    /// The delay is uniform in `[base, base × (1 + factor)]`: client-go's scheme (it uses a
    /// factor of 1.0, so its delays reach twice the cap).
    Proportional(f64),
}

/// Parameters of an exponential backoff.
///
/// The base delay of the `n`-th consecutive failure (counting from 0) is
/// `min(initial × factor^n, max)`; [`Jitter`] then spreads it. The count returns to 0 once
/// `reset_after` has passed since the last failure.
#[derive(Debug, Clone, PartialEq)]
pub struct BackoffConfig {
    /// The base delay after the first failure. Default 800 ms.
    pub initial: Duration,
    /// The growth factor per consecutive failure (values below 1 are treated as 1). Default 2.
    pub factor: f64,
    /// The largest base delay. Default 30 s.
    pub max: Duration,
    /// A failure this long after the previous one starts the sequence again. Default 2 min.
    pub reset_after: Duration,
    /// How delays are randomised. Default [`Jitter::Full`].
    pub jitter: Jitter,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(800),
            factor: 2.0,
            max: Duration::from_secs(30),
            reset_after: Duration::from_secs(120),
            jitter: Jitter::Full,
        }
    }
}

impl BackoffConfig {
    /// The base delay (before jitter) of the failure numbered `attempt` (0 = first).
    pub fn base_delay(&self, attempt: u32) -> Duration {
        let factor = if self.factor.is_finite() {
            self.factor.max(1.0)
        } else {
            1.0
        };
        let max = self.max.as_secs_f64();
        // powi saturates to +inf for large exponents; `min` then picks the cap.
        let exponent = i32::try_from(attempt).unwrap_or(i32::MAX);
        let base = self.initial.as_secs_f64() * factor.powi(exponent);
        if base.is_finite() && base < max {
            seconds(base)
        } else {
            self.max
        }
    }

    /// The delay for a base delay and a random sample in `[0, 1)` (clamped into that range).
    pub fn jittered(&self, base: Duration, random: f64) -> Duration {
        let random = unit(random);
        match self.jitter {
            Jitter::None => base,
            Jitter::Full => seconds(base.as_secs_f64() * random),
            Jitter::Proportional(factor) => {
                let factor = if factor.is_finite() {
                    factor.max(0.0)
                } else {
                    0.0
                };
                seconds(base.as_secs_f64() * (1.0 + factor * random))
            }
        }
    }

    /// A delay the server asked for (`Retry-After`), clamped into `[initial, max]`: a hint of
    /// zero cannot make the client spin, nor a hint of a day park it.
    pub fn clamp_retry_after(&self, hint: Duration) -> Duration {
        hint.clamp(self.initial.min(self.max), self.max)
    }

    /// The range `[low, high]` (both included) the delay of failure number `attempt` falls
    /// in.
    pub fn delay_bounds(&self, attempt: u32) -> (Duration, Duration) {
        let base = self.base_delay(attempt);
        match self.jitter {
            Jitter::None => (base, base),
            Jitter::Full => (Duration::ZERO, base),
            Jitter::Proportional(_) => (base, self.jittered(base, 1.0)),
        }
    }
}

/// Seconds as a `Duration`, saturating instead of panicking on out-of-range values.
fn seconds(value: f64) -> Duration {
    Duration::try_from_secs_f64(value.max(0.0)).unwrap_or(Duration::MAX)
}

/// Clamps a random sample into `[0, 1)`; NaN counts as 0.
pub(crate) fn unit(random: f64) -> f64 {
    if random.is_nan() || random < 0.0 {
        0.0
    } else if random >= 1.0 {
        // The largest f64 below 1.
        1.0 - f64::EPSILON / 2.0
    } else {
        random
    }
}

/// The running state of a backoff: how many failures in a row, and when the last one was.
///
/// It reads no clock and draws no random numbers: both come in as arguments.
///
/// ```
/// use std::time::{Duration, Instant};
/// use informer_core::reflector::{Backoff, BackoffConfig, Jitter};
///
/// let mut backoff = Backoff::new(BackoffConfig { jitter: Jitter::None, ..BackoffConfig::default() });
/// let t0 = Instant::now();
/// assert_eq!(backoff.failure(t0, 0.5), Duration::from_millis(800));
/// assert_eq!(backoff.failure(t0, 0.5), Duration::from_millis(1600));
/// // Two minutes without a failure: the sequence starts again.
/// assert_eq!(backoff.failure(t0 + Duration::from_secs(120), 0.5), Duration::from_millis(800));
/// ```
#[derive(Debug, Clone)]
pub struct Backoff {
    config: BackoffConfig,
    consecutive: u32,
    last_failure: Option<Instant>,
}

impl Backoff {
    /// A backoff that has seen no failure.
    pub fn new(config: BackoffConfig) -> Self {
        Self {
            config,
            consecutive: 0,
            last_failure: None,
        }
    }

    /// The parameters.
    pub fn config(&self) -> &BackoffConfig {
        &self.config
    }

    /// Records a failure at `now` and returns how long to wait before the next attempt, using
    /// `random` (a sample in `[0, 1)`) for the jitter.
    pub fn failure(&mut self, now: Instant, random: f64) -> Duration {
        let attempt = self.attempt_at(now);
        self.consecutive = attempt.saturating_add(1);
        self.last_failure = Some(now);
        let base = self.config.base_delay(attempt);
        self.config.jittered(base, random)
    }

    /// Records a failure for which the server suggested a delay (`Retry-After`, or a
    /// `Status`'s `retryAfterSeconds`) and returns how long to wait: the longer of the
    /// backoff's own delay ([`failure`](Self::failure), which keeps growing across repeated
    /// throttling) and the hint clamped into `[initial, max]`
    /// ([`BackoffConfig::clamp_retry_after`]). Without a hint it is [`failure`](Self::failure).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use informer_core::reflector::{Backoff, BackoffConfig, Jitter};
    ///
    /// let mut backoff = Backoff::new(BackoffConfig { jitter: Jitter::None, ..BackoffConfig::default() });
    /// let t0 = Instant::now();
    /// let zero = Some(Duration::ZERO);
    /// // `Retry-After: 0` does not spin: the floor, then the backoff's growth.
    /// assert_eq!(backoff.failure_with_hint(t0, 0.5, zero), Duration::from_millis(800));
    /// assert_eq!(backoff.failure_with_hint(t0, 0.5, zero), Duration::from_millis(1600));
    /// // `Retry-After: 100000` does not park: the cap.
    /// let day = Some(Duration::from_secs(100_000));
    /// assert_eq!(backoff.failure_with_hint(t0, 0.5, day), Duration::from_secs(30));
    /// ```
    pub fn failure_with_hint(
        &mut self,
        now: Instant,
        random: f64,
        hint: Option<Duration>,
    ) -> Duration {
        let delay = self.failure(now, random);
        match hint {
            Some(hint) => delay.max(self.config.clamp_retry_after(hint)),
            None => delay,
        }
    }

    /// The number the next failure would get if it happened at `now` (0 when the sequence has
    /// been reset by `reset_after` of calm).
    pub fn attempt_at(&self, now: Instant) -> u32 {
        match self.last_failure {
            Some(last) if now.saturating_duration_since(last) < self.config.reset_after => {
                self.consecutive
            }
            _ => 0,
        }
    }

    /// Forgets every failure.
    pub fn reset(&mut self) {
        self.consecutive = 0;
        self.last_failure = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn base_delays_double_from_800ms_up_to_30s() {
        let config = BackoffConfig::default();
        let bases: Vec<_> = (0..8).map(|n| config.base_delay(n)).collect();
        assert_eq!(
            bases,
            vec![
                ms(800),
                ms(1600),
                ms(3200),
                ms(6400),
                ms(12800),
                ms(25600),
                ms(30000),
                ms(30000)
            ]
        );
        assert_eq!(config.base_delay(u32::MAX), ms(30000));
    }

    #[test]
    fn full_jitter_spans_zero_to_base() {
        let config = BackoffConfig::default();
        assert_eq!(config.jittered(ms(800), 0.0), Duration::ZERO);
        assert_eq!(config.jittered(ms(800), 0.5), ms(400));
        assert!(config.jittered(ms(800), 0.999_999) <= ms(800));
        // Out-of-range samples are clamped rather than trusted.
        assert!(config.jittered(ms(800), 7.0) <= ms(800));
        assert_eq!(config.jittered(ms(800), -1.0), Duration::ZERO);
        assert_eq!(config.jittered(ms(800), f64::NAN), Duration::ZERO);
        assert_eq!(config.delay_bounds(2), (Duration::ZERO, ms(3200)));
    }

    #[test]
    fn proportional_jitter_is_client_go_style() {
        let config = BackoffConfig {
            jitter: Jitter::Proportional(1.0),
            ..BackoffConfig::default()
        };
        assert_eq!(config.jittered(ms(800), 0.0), ms(800));
        assert_eq!(config.jittered(ms(800), 0.5), ms(1200));
        assert_eq!(config.delay_bounds(10), (ms(30000), ms(60000)));
        let none = BackoffConfig {
            jitter: Jitter::None,
            ..BackoffConfig::default()
        };
        assert_eq!(none.delay_bounds(1), (ms(1600), ms(1600)));
    }

    #[test]
    fn consecutive_failures_grow_and_calm_resets() {
        let mut backoff = Backoff::new(BackoffConfig {
            jitter: Jitter::None,
            ..BackoffConfig::default()
        });
        let mut now = Instant::now();
        let mut delays = Vec::new();
        for _ in 0..8 {
            let d = backoff.failure(now, 0.3);
            delays.push(d);
            now += d;
        }
        assert_eq!(delays[0], ms(800));
        assert_eq!(delays[5], ms(25600));
        assert_eq!(delays[7], ms(30000));
        // `now` is the last failure plus its 30 s delay: calm so far is 30 s. Just under two
        // minutes of calm keeps the sequence.
        now += ms(89_999);
        assert_eq!(backoff.failure(now, 0.3), ms(30000));
        // Exactly two minutes resets it.
        assert_eq!(backoff.attempt_at(now + ms(120_000)), 0);
        assert_eq!(backoff.failure(now + ms(120_000), 0.3), ms(800));
        backoff.reset();
        assert_eq!(backoff.attempt_at(now), 0);
    }

    #[test]
    fn retry_after_is_clamped_and_the_growth_kept() {
        let config = BackoffConfig::default();
        assert_eq!(config.clamp_retry_after(Duration::ZERO), ms(800));
        assert_eq!(config.clamp_retry_after(ms(5000)), ms(5000));
        assert_eq!(config.clamp_retry_after(Duration::MAX), ms(30000));
        // A floor above the cap does not panic: the cap wins.
        let odd = BackoffConfig {
            initial: ms(5000),
            max: ms(1000),
            ..BackoffConfig::default()
        };
        assert_eq!(odd.clamp_retry_after(Duration::ZERO), ms(1000));

        // Full jitter, sample 0.5: the backoff's half-base grows past a constant hint.
        let mut backoff = Backoff::new(config);
        let t0 = Instant::now();
        let one = Some(Duration::from_secs(1));
        let delays: Vec<Duration> = (0..8)
            .map(|_| backoff.failure_with_hint(t0, 0.5, one))
            .collect();
        assert_eq!(
            delays,
            vec![
                ms(1000),
                ms(1000),
                ms(1600),
                ms(3200),
                ms(6400),
                ms(12800),
                ms(15000),
                ms(15000)
            ]
        );
        // Every delay of a run of `Retry-After: 0` is at least the floor, whatever the sample.
        let mut backoff = Backoff::new(BackoffConfig::default());
        for i in 0..50 {
            let d = backoff.failure_with_hint(t0, f64::from(i % 7) / 7.0, Some(Duration::ZERO));
            assert!(d >= ms(800) && d <= ms(30000), "{d:?}");
        }
        // A huge hint never exceeds the cap.
        assert_eq!(
            backoff.failure_with_hint(t0, 0.0, Some(Duration::from_secs(100_000))),
            ms(30000)
        );
    }

    #[test]
    fn odd_parameters_do_not_panic() {
        let config = BackoffConfig {
            factor: f64::NAN,
            jitter: Jitter::Proportional(f64::INFINITY),
            ..BackoffConfig::default()
        };
        assert_eq!(config.base_delay(5), ms(800));
        assert_eq!(config.jittered(ms(800), 0.5), ms(800));
        let shrinking = BackoffConfig {
            factor: 0.5,
            ..BackoffConfig::default()
        };
        assert_eq!(shrinking.base_delay(3), ms(800));
    }
}
