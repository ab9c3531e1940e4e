//! Where the rate limiters read the time.

use std::fmt;

use tokio::time::Instant;

/// A source of the current time for rate limiters that depend on it (the token bucket).
///
/// The default, [`TokioClock`], reads tokio's clock, so under `tokio::time::pause` (and
/// `#[tokio::test(start_paused = true)]`) limiters see the same virtual time as the queue's
/// timers. Implement this trait to drive a limiter from a hand-moved clock in tests.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current instant.
    fn now(&self) -> Instant;
}

/// The clock of the tokio runtime in context: [`tokio::time::Instant::now`].
///
/// Outside a runtime (or without a paused clock) this is the system's monotonic clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioClock;

impl Clock for TokioClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}
