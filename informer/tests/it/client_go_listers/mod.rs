//! client-go's `tools/cache/listers_test.go`, ported to [`Lister`], and the rules of
//! `listers.go` and `index.go` that our listers follow (namespace views, `NamespaceAll`,
//! cluster-scoped objects in the namespace index, custom keys).
//!
//! Each port is named after the upstream test (its name without the `Test` prefix, in
//! snake_case) and says which one in its first doc line; `docs/parity/cache-workqueue.md` lists
//! every case and every deviation.

use std::collections::BTreeSet;
use std::sync::Arc;

use fake_apiserver::FakeApiServer;
use informer::{
    InformerConfig, KeyFunc, LabelSelector, Lister, NAMESPACE_INDEX, Object, ObjectKey,
    SharedIndexInformer, Store,
};
use informer_store::IndexedStore;
use informer_testing::JsonObject;

use crate::informer_support::Running;

fn lister_over(store: IndexedStore<JsonObject>) -> Lister<JsonObject> {
    Lister::new(store)
}

fn keys(objects: &[Arc<JsonObject>]) -> BTreeSet<String> {
    objects
        .iter()
        .map(|o| informer::key_of(o.as_ref()).unwrap().to_string())
        .collect()
}

/// client-go tools/cache/listers_test.go: TestListAll
///
/// Upstream lists 100,000 objects (10,000 matching) and, in the other two cases, 1,000,000;
/// we keep the first case's sizes and use 100,000 objects for the other two, to bound the
/// test's memory (the scenario is the same: listing with a selector visits every object once).
mod list_all {
    use super::*;

    /// Upstream's `mustCreateStore`: `objects` cluster-scoped objects keyed by name, the first
    /// `matching` of them carrying `labels`.
    fn store(objects: usize, matching: usize, labels: &[(&str, &str)]) -> Lister<JsonObject> {
        let store = IndexedStore::<JsonObject>::new();
        for i in 0..objects {
            let mut obj = JsonObject::new(None, &format!("obj-{i}"));
            if i < matching {
                for (k, v) in labels {
                    obj = obj.with_label(*k, *v);
                }
            }
            store.add(Arc::new(obj)).unwrap();
        }
        lister_over(store)
    }

    /// client-go tools/cache/listers_test.go: TestListAll/subset match
    #[test]
    fn subset_match() {
        let lister = store(100_000, 10_000, &[("match", "true")]);
        let selector = LabelSelector::parse("match=true").unwrap();
        assert_eq!(lister.list(&selector).len(), 10_000);
    }

    /// client-go tools/cache/listers_test.go: TestListAll/all match
    #[test]
    fn all_match() {
        let lister = store(100_000, 0, &[]);
        assert_eq!(lister.list(&LabelSelector::everything()).len(), 100_000);
    }

    /// client-go tools/cache/listers_test.go: TestListAll/no match
    #[test]
    fn no_match() {
        let lister = store(100_000, 0, &[("nomatch", "true")]);
        let selector = LabelSelector::parse("match=true").unwrap();
        assert!(lister.list(&selector).is_empty());
    }
}

/// A cache of namespaced and cluster-scoped objects.
fn mixed() -> Lister<JsonObject> {
    let store = IndexedStore::<JsonObject>::new();
    for (ns, name, app) in [
        (Some("a"), "web-0", "web"),
        (Some("a"), "db-0", "db"),
        (Some("b"), "web-0", "web"),
        (None, "node-1", "web"),
        (None, "node-2", "db"),
    ] {
        store
            .add(Arc::new(JsonObject::new(ns, name).with_label("app", app)))
            .unwrap();
    }
    lister_over(store)
}

/// client-go tools/cache/listers.go: ListAllByNamespace (the source rule: the blank namespace,
/// `NamespaceAll`, lists every object; no upstream test pins it).
///
/// Regression test for issue 10, defect 5: the namespace view of "" asked the namespace index
/// for "" and found nothing.
#[test]
fn list_all_by_namespace_lists_everything_for_namespace_all() {
    let lister = mixed();
    let all = lister.namespaced("").list(&LabelSelector::everything());
    assert_eq!(
        keys(&all),
        BTreeSet::from(["a/web-0", "a/db-0", "b/web-0", "node-1", "node-2"].map(str::to_owned))
    );
    let web = lister
        .namespaced("")
        .list(&LabelSelector::parse("app=web").unwrap());
    assert_eq!(
        keys(&web),
        BTreeSet::from(["a/web-0", "b/web-0", "node-1"].map(str::to_owned))
    );
    // A real namespace still sees only its own objects.
    let in_a = lister.namespaced("a").list(&LabelSelector::everything());
    assert_eq!(
        keys(&in_a),
        BTreeSet::from(["a/web-0", "a/db-0"].map(str::to_owned))
    );
}

/// client-go tools/cache/index.go: MetaNamespaceIndexFunc, through a lister: cluster-scoped
/// objects are in the namespace index under "".
///
/// Regression test for issue 10, defect 5.
#[test]
fn cluster_scoped_objects_are_indexed_under_the_empty_namespace() {
    let lister = mixed();
    assert_eq!(
        keys(&lister.by_index(NAMESPACE_INDEX, "").unwrap()),
        BTreeSet::from(["node-1", "node-2"].map(str::to_owned))
    );
    let mut namespaces = lister.list_index_func_values(NAMESPACE_INDEX).unwrap();
    namespaces.sort();
    assert_eq!(namespaces, ["", "a", "b"]);
    // Gets by namespace and name still tell the two apart.
    assert!(lister.get(None, "node-1").is_some());
    assert!(lister.get(Some(""), "node-1").is_some());
    assert!(lister.namespaced("").get("node-1").is_some());
    assert!(lister.get(Some("a"), "node-1").is_none());
}

/// The same through an informer on the fake API server: a cluster-scoped resource's cache
/// answers `by_index(NAMESPACE_INDEX, "")` and the `NamespaceAll` view.
#[tokio::test(start_paused = true)]
async fn an_informer_of_a_cluster_scoped_resource_indexes_it_under_the_empty_namespace() {
    let server = FakeApiServer::new();
    for name in ["a", "b"] {
        server
            .create("namespaces", &JsonObject::new(None, name))
            .unwrap();
    }
    let lw = Arc::new(
        server
            .lister_watcher::<JsonObject>("namespaces", None)
            .unwrap(),
    );
    let informer = SharedIndexInformer::new(lw, InformerConfig::default()).unwrap();
    let running = Running::start(&informer);
    assert!(
        tokio::time::timeout(std::time::Duration::from_secs(60), informer.wait_for_sync())
            .await
            .unwrap()
    );
    let lister = informer.lister();
    assert_eq!(
        keys(&lister.by_index(NAMESPACE_INDEX, "").unwrap()),
        BTreeSet::from(["a", "b"].map(str::to_owned))
    );
    assert_eq!(
        lister
            .namespaced("")
            .list(&LabelSelector::everything())
            .len(),
        2
    );
    assert!(lister.get(None, "a").is_some());
    running.stop().await;
}

/// Keys by name only, ignoring the namespace: a custom key function under which a namespaced
/// object's key looks like a cluster-scoped object's default key.
fn name_only() -> KeyFunc<JsonObject> {
    Arc::new(|o: &JsonObject| ObjectKey::new(None, o.object_name().unwrap_or_default()))
}

/// Regression test for issue 10 (item 6, `Lister::get` and custom key functions): with a custom
/// key function, `get` looked up the default-key string and answered whatever sat there (here
/// `b/x`, stored under `x`, for the cluster-scoped `x`). Now it answers only an object with the
/// asked namespace and name, and `find` finds objects whatever the keys.
#[test]
fn lister_get_with_a_custom_key_function_never_answers_another_object() {
    let store = IndexedStore::<JsonObject>::builder()
        .key_func(name_only())
        .indexer(NAMESPACE_INDEX, informer::namespace_index_func())
        .build();
    let bx = Arc::new(JsonObject::new(Some("b"), "x"));
    store.add(Arc::clone(&bx)).unwrap();
    let lister = lister_over(store);

    assert!(
        lister.get(None, "x").is_none(),
        "b/x is not the cluster-scoped x"
    );
    assert!(lister.namespaced("").get("x").is_none());
    // Not under its default key, so get cannot see it; find can.
    assert!(lister.get(Some("b"), "x").is_none());
    assert!(Arc::ptr_eq(&lister.find(Some("b"), "x").unwrap(), &bx));
    assert!(lister.find(None, "x").is_none());
    assert!(lister.find(Some("a"), "x").is_none());
}

/// `find` without a namespace index scans, and with the default keys answers as `get` does.
#[test]
fn lister_find_works_without_a_namespace_index_and_with_default_keys() {
    let store = IndexedStore::<JsonObject>::builder()
        .key_func(Arc::new(|o: &JsonObject| {
            ObjectKey::new(None, o.object_uid().unwrap_or_default())
        }))
        .build();
    let web = Arc::new(JsonObject::new(Some("a"), "web-0").with_uid("u-1"));
    store.add(Arc::clone(&web)).unwrap();
    let lister = lister_over(store);
    assert!(lister.get(Some("a"), "web-0").is_none());
    assert!(Arc::ptr_eq(&lister.find(Some("a"), "web-0").unwrap(), &web));

    let lister = mixed();
    assert_eq!(
        lister.find(Some("a"), "db-0").map(|o| keys(&[o])),
        lister.get(Some("a"), "db-0").map(|o| keys(&[o]))
    );
    assert!(lister.find(Some("a"), "nope").is_none());
}

/// An informer configured with a custom key function (keys by UID): its lister's `find` finds
/// objects by namespace and name.
#[tokio::test(start_paused = true)]
async fn an_informer_with_uid_keys_finds_objects_by_namespace_and_name() {
    let server = FakeApiServer::new();
    server
        .create("configmaps", &JsonObject::new(Some("a"), "cm-0"))
        .unwrap();
    let lw = Arc::new(
        server
            .lister_watcher::<JsonObject>("configmaps", None)
            .unwrap(),
    );
    let informer = SharedIndexInformer::new(
        lw,
        InformerConfig {
            key_func: Arc::new(|o: &JsonObject| {
                ObjectKey::new(None, o.object_uid().unwrap_or_default())
            }),
            ..InformerConfig::default()
        },
    )
    .unwrap();
    let running = Running::start(&informer);
    assert!(
        tokio::time::timeout(std::time::Duration::from_secs(60), informer.wait_for_sync())
            .await
            .unwrap()
    );
    let lister = informer.lister();
    let found = lister
        .find(Some("a"), "cm-0")
        .expect("found by namespace and name");
    assert_eq!(found.object_name(), Some("cm-0"));
    assert!(
        lister.get(Some("a"), "cm-0").is_none(),
        "not under its default key"
    );
    running.stop().await;
}
