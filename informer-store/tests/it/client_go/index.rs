//! client-go `tools/cache/index_test.go` (and `index.go`'s `MetaNamespaceIndexFunc`).

use std::collections::BTreeSet;
use std::sync::Arc;

use informer_core::{Indexer, NAMESPACE_INDEX, Object, Store, namespace_index_func};
use informer_store::IndexedStore;
use informer_testing::JsonObject;

use super::{names, store_with};

/// Upstream's `testIndexFunc`: the value of label `foo` (empty when absent): always one value.
fn label_foo(o: &JsonObject) -> Vec<String> {
    vec![o.object_labels().get("foo").cloned().unwrap_or_default()]
}

/// Upstream's `testUsersIndexFunc`: annotation `users`, split at commas.
fn users(o: &JsonObject) -> Vec<String> {
    o.object_annotations()
        .get("users")
        .map_or("", String::as_str)
        .split(',')
        .map(str::to_owned)
        .collect()
}

fn pod(name: &str, users: &str) -> Arc<JsonObject> {
    let mut o = JsonObject::new(None, name);
    o.metadata
        .annotations
        .insert("users".to_owned(), users.to_owned());
    Arc::new(o)
}

/// client-go tools/cache/index_test.go: TestGetIndexFuncValues
#[test]
fn get_index_func_values() {
    let index = store_with("testmodes", Arc::new(label_foo));
    for (name, foo) in [("one", "bar"), ("two", "bar"), ("tre", "biz")] {
        index
            .add(Arc::new(JsonObject::new(None, name).with_label("foo", foo)))
            .unwrap();
    }
    let values: BTreeSet<String> = index
        .list_index_func_values("testmodes")
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(values, BTreeSet::from(["bar".to_owned(), "biz".to_owned()]));
}

/// client-go tools/cache/index_test.go: TestMultiIndexKeys
#[test]
fn multi_index_keys() {
    let index = store_with("byUser", Arc::new(users));
    let (pod1, pod2, pod3) = (
        pod("one", "ernie,bert"),
        pod("two", "bert,oscar"),
        pod("tre", "ernie,elmo"),
    );
    for p in [&pod1, &pod2, &pod3] {
        index.add(Arc::clone(p)).unwrap();
    }
    for (user, expected) in [
        ("ernie", vec!["one", "tre"]),
        ("bert", vec!["one", "two"]),
        ("elmo", vec!["tre"]),
        ("oscar", vec!["two"]),
        ("elmo1", vec![]),
    ] {
        let found = names(&index.by_index("byUser", user).unwrap());
        let expected: BTreeSet<String> = expected.into_iter().map(str::to_owned).collect();
        assert_eq!(found, expected, "index value {user}");
    }

    index.delete(&pod3).unwrap();
    assert_eq!(
        names(&index.by_index("byUser", "ernie").unwrap()),
        BTreeSet::from(["one".to_owned()])
    );
    assert!(index.by_index("byUser", "elmo").unwrap().is_empty());

    // An updated copy (ours: a new object; the stored one is never mutated).
    index.update(pod("two", "oscar")).unwrap();
    assert_eq!(
        names(&index.by_index("byUser", "bert").unwrap()),
        BTreeSet::from(["one".to_owned()])
    );
}

/// client-go tools/cache/index.go: MetaNamespaceIndexFunc (the source rule: every object's
/// namespace, so cluster-scoped objects are filed under "").
///
/// Regression test for issue 10, defect 5: our namespace index left cluster-scoped objects out,
/// so `by_index("namespace", "")` found nothing.
#[test]
fn meta_namespace_index_func_files_cluster_scoped_objects_under_the_empty_namespace() {
    let func = namespace_index_func::<JsonObject>();
    assert_eq!(func(&JsonObject::new(None, "node-1")), [""]);
    assert_eq!(func(&JsonObject::new(Some("prod"), "web-0")), ["prod"]);

    let store = IndexedStore::<JsonObject>::new();
    let node = Arc::new(JsonObject::new(None, "node-1"));
    store.add(Arc::clone(&node)).unwrap();
    store
        .add(Arc::new(JsonObject::new(Some("prod"), "web-0")))
        .unwrap();
    let cluster_scoped = store.by_index(NAMESPACE_INDEX, "").unwrap();
    assert_eq!(cluster_scoped.len(), 1);
    assert!(Arc::ptr_eq(&cluster_scoped[0], &node));
    let mut values = store.list_index_func_values(NAMESPACE_INDEX).unwrap();
    values.sort();
    assert_eq!(values, ["", "prod"]);
    // Objects sharing the (empty) namespace of a cluster-scoped object.
    let peers = store
        .index(NAMESPACE_INDEX, &JsonObject::new(None, "node-2"))
        .unwrap();
    assert_eq!(names(&peers), BTreeSet::from(["node-1".to_owned()]));
    // Deleting it leaves no empty value behind.
    store.delete(&node).unwrap();
    assert_eq!(
        store.list_index_func_values(NAMESPACE_INDEX).unwrap(),
        ["prod"]
    );
    assert!(store.by_index(NAMESPACE_INDEX, "").unwrap().is_empty());
}
