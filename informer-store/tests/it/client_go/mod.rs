//! client-go's own cache tests, ported scenario by scenario to [`IndexedStore`]: one module
//! per upstream file of `tools/cache` (`index_test.go`, `store_test.go`,
//! `thread_safe_store_test.go`, and `mutation_detector_test.go`, which immutable `Arc<K>`
//! objects replace).
//!
//! Each test is named after the upstream test it ports (its name without the `Test` prefix, in
//! snake_case) and says which one in its first doc line. `docs/parity/cache-workqueue.md` lists
//! every case and every deviation.
//!
//! [`IndexedStore`]: informer_store::IndexedStore

mod index;
mod mutation_detector;
mod store;
mod thread_safe_store;

use std::collections::BTreeSet;
use std::sync::Arc;

use informer_core::{IndexFunc, Indexer, Object};
use informer_store::IndexedStore;
use informer_testing::JsonObject;

/// A cluster-scoped object (its key is `name`) carrying `value` in label `v`.
pub fn obj(name: &str, value: &str) -> Arc<JsonObject> {
    Arc::new(JsonObject::new(None, name).with_label("v", value))
}

/// An index function over label `v`, split at commas (one value per part; an absent label
/// gives one empty value, as upstream's `strings.Split("", ",")` does).
pub fn split_v() -> IndexFunc<JsonObject> {
    Arc::new(|o: &JsonObject| {
        o.object_labels()
            .get("v")
            .map_or("", String::as_str)
            .split(',')
            .map(str::to_owned)
            .collect()
    })
}

/// A store with one index, `name`, over `func`, and the default keys.
pub fn store_with(name: &str, func: IndexFunc<JsonObject>) -> IndexedStore<JsonObject> {
    IndexedStore::builder().indexer(name, func).build()
}

/// The names of `objects`, as a set.
pub fn names(objects: &[Arc<JsonObject>]) -> BTreeSet<String> {
    objects
        .iter()
        .map(|o| o.object_name().unwrap_or_default().to_owned())
        .collect()
}

/// The keys filed under `value` in index `index`, sorted.
pub fn index_keys(store: &IndexedStore<JsonObject>, index: &str, value: &str) -> Vec<String> {
    let mut keys: Vec<String> = store
        .index_keys(index, value)
        .unwrap()
        .iter()
        .map(|k| k.to_string())
        .collect();
    keys.sort();
    keys
}
