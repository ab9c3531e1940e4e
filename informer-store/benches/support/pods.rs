//! Realistic pods for the compact store's benches and tests: `informer_testing`'s seed pods
//! (two containers, status, five `managedFields` entries, about 6 KB of JSON) plus the fields
//! the API server sets (uid, resourceVersion, creationTimestamp).
// Included by path by several benches and tests, each using part of it.
#![allow(dead_code)]

use fake_apiserver::seed;
use k8s_openapi::api::core::v1::Pod;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;

/// How many namespaces the pods are spread over.
pub const NAMESPACES: usize = 100;

/// The JSON of pod number `i` (namespace `ns-{i % NAMESPACES}`, name `pod-{i}`), as the API
/// server would send it. The same `(seed, i)` always gives the same pod.
pub fn pod_json(seed: u64, i: usize) -> Value {
    let mut rng = StdRng::seed_from_u64(seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let namespace = format!("ns-{}", i % NAMESPACES);
    let mut pod = seed::pod(&namespace, &format!("pod-{i}"), &mut rng);
    let uid = format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        rng.random::<u32>(),
        rng.random::<u16>(),
        rng.random::<u16>() & 0xfff,
        rng.random::<u16>() & 0xfff,
        rng.random::<u64>() & 0xffff_ffff_ffff
    );
    let meta = &mut pod["metadata"];
    meta["uid"] = Value::String(uid);
    meta["resourceVersion"] = Value::String((1_000_000 + i).to_string());
    meta["creationTimestamp"] = Value::String("2026-01-15T08:29:41Z".to_owned());
    pod
}

/// Pod number `i`, typed.
pub fn pod(seed: u64, i: usize) -> Pod {
    serde_json::from_value(pod_json(seed, i)).expect("seed pods are valid Pods")
}
