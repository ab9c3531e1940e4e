//! The fixtures the suites of this binary share; each was defined again in several test files
//! before they became one binary.

use std::time::Duration;

/// One millisecond: delays read `100 * MS`.
pub const MS: Duration = Duration::from_millis(1);

/// The longest a wait for the queue may take before the test fails as hung (a guard, not a
/// timing assertion; in paused time it is virtual).
pub const GUARD: Duration = Duration::from_secs(10);
