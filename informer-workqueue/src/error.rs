//! The crate's error type: what can go wrong when building a queue's parts.

/// An invalid rate limiter setting, reported when the limiter is built.
///
/// Queue operations themselves cannot fail: `add` after shutdown is ignored (as upstream), and
/// `get` reports shutdown as `None`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A token bucket rate that is not a positive number of tokens per second (zero, negative or
    /// NaN), or one so small that the time for one token cannot be represented.
    #[error(
        "cannot build a token bucket with {qps} tokens per second: the rate must be positive \
         and at least one token per {max_interval_secs} s"
    )]
    InvalidRate {
        /// The rate that was given.
        qps: f64,
        /// The longest supported time between two tokens, in seconds.
        max_interval_secs: u64,
    },
    /// A token bucket that holds no tokens would delay every item forever.
    #[error(
        "cannot build a token bucket with burst 0 at {qps} tokens per second: burst must be at least 1"
    )]
    ZeroBurst {
        /// The rate that was given with it.
        qps: f64,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
