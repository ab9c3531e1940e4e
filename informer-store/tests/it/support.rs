//! The fixtures the suites of this binary share; each was written out again in several test
//! files before they became one binary.

use std::panic::{AssertUnwindSafe, catch_unwind};

/// The panic message of `f`, which must panic (`expectation`, the failure message if it does
/// not, says why it should); a panic without a text message fails the test too.
pub fn panic_message(f: impl FnOnce(), expectation: &str) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err(expectation);
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| panic!("{expectation}: a panic without a text message"))
}
