//! client-go `tools/cache/thread_safe_store_test.go`.
//!
//! Upstream reaches into the store's index maps; ours exposes the same facts through
//! `index_keys` and `list_index_func_values` (a value with no key is not listed, and `index_keys`
//! finds nothing for it).

use informer_core::{Indexer, Store};

use super::{index_keys, obj, split_v, store_with};

const INDEX: &str = "testIndexer";

/// client-go tools/cache/thread_safe_store_test.go: TestThreadSafeStoreDeleteRemovesEmptySetsFromIndex
#[test]
fn thread_safe_store_delete_removes_empty_sets_from_index() {
    let store = store_with(INDEX, split_v());
    store.add(obj("testKey", "testKey")).unwrap();
    assert_eq!(index_keys(&store, INDEX, "testKey"), ["testKey"]);
    store.delete_by_key("testKey");
    assert!(index_keys(&store, INDEX, "testKey").is_empty());
    assert!(
        store.list_index_func_values(INDEX).unwrap().is_empty(),
        "the emptied value is gone from the index"
    );
}

/// client-go tools/cache/thread_safe_store_test.go: TestThreadSafeStoreAddKeepsNonEmptySetPostDeleteFromIndex
#[test]
fn thread_safe_store_add_keeps_non_empty_set_post_delete_from_index() {
    let store = store_with(INDEX, split_v());
    store.add(obj("retain", "testIndex")).unwrap();
    store.add(obj("delete", "testIndex")).unwrap();
    assert_eq!(index_keys(&store, INDEX, "testIndex"), ["delete", "retain"]);
    store.delete_by_key("delete");
    assert_eq!(index_keys(&store, INDEX, "testIndex"), ["retain"]);
    assert_eq!(store.list_index_func_values(INDEX).unwrap(), ["testIndex"]);
}

/// client-go tools/cache/thread_safe_store_test.go: TestThreadSafeStoreIndexingFunctionsWithMultipleValues
#[test]
fn thread_safe_store_indexing_functions_with_multiple_values() {
    let store = store_with(INDEX, split_v());
    let check = |expected: [(&str, &[&str]); 3]| {
        for (value, keys) in expected {
            assert_eq!(index_keys(&store, INDEX, value), keys, "value {value}");
        }
    };
    store.add(obj("key1", "foo")).unwrap();
    store.add(obj("key2", "bar")).unwrap();
    check([("foo", &["key1"]), ("bar", &["key2"]), ("baz", &[])]);

    store.update(obj("key2", "foo,bar")).unwrap();
    check([("foo", &["key1", "key2"]), ("bar", &["key2"]), ("baz", &[])]);

    store.update(obj("key1", "foo,bar")).unwrap();
    check([
        ("foo", &["key1", "key2"]),
        ("bar", &["key1", "key2"]),
        ("baz", &[]),
    ]);

    store.add(obj("key3", "foo,bar,baz")).unwrap();
    check([
        ("foo", &["key1", "key2", "key3"]),
        ("bar", &["key1", "key2", "key3"]),
        ("baz", &["key3"]),
    ]);

    store.update(obj("key1", "foo")).unwrap();
    check([
        ("foo", &["key1", "key2", "key3"]),
        ("bar", &["key2", "key3"]),
        ("baz", &["key3"]),
    ]);

    store.update(obj("key2", "bar")).unwrap();
    check([
        ("foo", &["key1", "key3"]),
        ("bar", &["key2", "key3"]),
        ("baz", &["key3"]),
    ]);

    store.delete_by_key("key1");
    check([
        ("foo", &["key3"]),
        ("bar", &["key2", "key3"]),
        ("baz", &["key3"]),
    ]);

    store.delete_by_key("key3");
    check([("foo", &[]), ("bar", &["key2"]), ("baz", &[])]);
}
