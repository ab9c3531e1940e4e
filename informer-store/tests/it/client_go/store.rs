//! client-go `tools/cache/store_test.go`.

use std::collections::BTreeSet;
use std::error::Error as _;
use std::sync::Arc;

use informer_core::{Indexer, KeyError, KnownObjects, QueueError, Store, StoreError};
use informer_store::IndexedStore;
use informer_testing::JsonObject;

use super::{names, obj, store_with};

/// The values (label `v`) of every stored object.
fn values(store: &IndexedStore<JsonObject>) -> BTreeSet<String> {
    store
        .list()
        .iter()
        .map(|o| o.metadata.labels["v"].clone())
        .collect()
}

fn value_of(store: &IndexedStore<JsonObject>, id: &str) -> Option<String> {
    store
        .get(&JsonObject::new(None, id))
        .unwrap()
        .map(|o| o.metadata.labels["v"].clone())
}

/// Upstream's `doTestStore`: the public `Store` interface.
fn do_test_store(store: &IndexedStore<JsonObject>) {
    store.add(obj("foo", "bar")).unwrap();
    assert_eq!(value_of(store, "foo").as_deref(), Some("bar"));
    store.update(obj("foo", "baz")).unwrap();
    assert_eq!(value_of(store, "foo").as_deref(), Some("baz"));
    store.delete(&JsonObject::new(None, "foo")).unwrap();
    assert_eq!(value_of(store, "foo"), None, "found deleted item");

    // List.
    store.add(obj("a", "b")).unwrap();
    store.add(obj("c", "d")).unwrap();
    store.add(obj("e", "e")).unwrap();
    assert_eq!(
        values(store),
        BTreeSet::from(["b".to_owned(), "d".to_owned(), "e".to_owned()])
    );

    // Replace.
    store
        .replace(vec![obj("foo", "foo"), obj("bar", "bar")], "0")
        .unwrap();
    assert_eq!(
        values(store),
        BTreeSet::from(["bar".to_owned(), "foo".to_owned()])
    );
    assert_eq!(store.len(), 2);
}

/// client-go tools/cache/store_test.go: TestCache
#[test]
fn cache() {
    do_test_store(&IndexedStore::new());
}

/// client-go tools/cache/store_test.go: TestIndex
#[test]
fn index() {
    let indexer = store_with("by_val", super::split_v());
    for (id, val) in [("a", "b"), ("c", "b"), ("e", "f"), ("g", "h")] {
        indexer.add(obj(id, val)).unwrap();
    }
    for (val, ids) in [("b", vec!["a", "c"]), ("f", vec!["e"]), ("h", vec!["g"])] {
        // An object with only the value, no name: index() runs the index function on it.
        let probe = JsonObject::new(None, "").with_label("v", val);
        let found = names(&indexer.index("by_val", &probe).unwrap());
        let expected: BTreeSet<String> = ids.into_iter().map(str::to_owned).collect();
        assert_eq!(found, expected, "index value {val}");
    }
    // The store behaves as a Store too (upstream runs doTestStore on indexers elsewhere).
    assert_eq!(indexer.list_keys().len(), 4);
}

/// client-go tools/cache/store_test.go: TestKeyError
///
/// Upstream's `KeyError` wraps the key function's error and unwraps to it, also when nested.
/// Ours: `KeyError` is the cause carried by `StoreError::Key` and `QueueError::Key`, reachable
/// through `source()`.
#[test]
fn key_error() {
    let cause = KeyError::MissingName {
        namespace: Some("ns".to_owned()),
    };
    let store_err = StoreError::from(cause.clone());
    let source = store_err.source().expect("a cause");
    assert_eq!(source.downcast_ref::<KeyError>(), Some(&cause));
    let queue_err = QueueError::from(cause.clone());
    let source = queue_err.source().expect("a cause");
    assert_eq!(source.downcast_ref::<KeyError>(), Some(&cause));

    // What a store answers for an object without a name.
    let err = IndexedStore::<JsonObject>::new()
        .add(Arc::new(JsonObject::new(Some("ns"), "")))
        .unwrap_err();
    assert!(matches!(err, StoreError::Key(KeyError::MissingName { .. })));
}
