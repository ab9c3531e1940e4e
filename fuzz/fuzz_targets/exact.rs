//! The exact-capacity decoder: hinted decode equals plain decode (the same value, or both
//! fail) for any text, into pods and into arbitrary JSON; its pre-pass never panics.
#![no_main]

use k8s_openapi::api::core::v1::Pod;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = informer_kube::fuzzing::array_lengths(data);
    if let Ok(text) = std::str::from_utf8(data) {
        informer_kube::fuzzing::exact_matches_plain::<Pod>(text);
        informer_kube::fuzzing::exact_matches_plain::<serde_json::Value>(text);
        informer_kube::fuzzing::exact_matches_plain::<Vec<Vec<String>>>(text);
    }
});
