//! Helpers shared by the ported suites (on top of `reflector_support` and `informer_support`).

#![allow(dead_code, reason = "each module uses a different subset")]

use std::time::Duration;

/// Whole seconds.
pub fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Milliseconds.
pub fn millis(n: u64) -> Duration {
    Duration::from_millis(n)
}
