//! client-go `tools/cache/mutation_detector_test.go`, replaced by immutability.
//!
//! Upstream keeps deep copies of cached objects and compares them periodically (when
//! `KUBE_CACHE_MUTATION_DETECTOR` is set) to catch handlers that mutate shared objects. Ours
//! hands out `Arc<K>`: safe code cannot mutate an object others share (`Object` types have no
//! interior mutability), so there is nothing to detect. What replaces the upstream test is this
//! check that the one way to "mutate" a shared object, `Arc::make_mut`, works on a private copy
//! and leaves the cache untouched.

use std::sync::Arc;

use informer_core::{KnownObjects, Store};
use informer_store::IndexedStore;
use informer_testing::JsonObject;

/// client-go tools/cache/mutation_detector_test.go: TestMutationDetector (replaced: cached
/// objects cannot be mutated through the handles the cache gives out)
#[test]
fn mutation_detector() {
    let store = IndexedStore::<JsonObject>::new();
    store
        .add(Arc::new(
            JsonObject::new(None, "anything").with_label("check", "foo"),
        ))
        .unwrap();
    let mut handed_out = store.get_by_key("anything").unwrap();
    // Shared with the cache: no `&mut` to it.
    assert!(Arc::get_mut(&mut handed_out).is_none());
    // Copy-on-write: the change lands on a private copy.
    Arc::make_mut(&mut handed_out)
        .metadata
        .labels
        .insert("change".to_owned(), "true".to_owned());
    let cached = store.get_by_key("anything").unwrap();
    assert!(!cached.metadata.labels.contains_key("change"));
    assert!(!Arc::ptr_eq(&cached, &handed_out));
}
