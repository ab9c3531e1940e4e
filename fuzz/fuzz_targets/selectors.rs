//! Label and field selectors: no panic; an accepted label selector prints to text that
//! parses back to the same selector.
#![no_main]

use informer_core::selector::{FieldSelector, LabelSelector};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(selector) = LabelSelector::parse(text) {
        let again = LabelSelector::parse(&selector.to_string())
            .unwrap_or_else(|e| panic!("{selector} does not parse again: {e}"));
        assert_eq!(again, selector);
    }
    let _ = FieldSelector::parse(text);
});
