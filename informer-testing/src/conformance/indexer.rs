//! Conformance suite for [`Indexer`] backends: every rule of the [`Store`](informer_core::Store) and [`Indexer`]
//! contracts as a named check, a model-based property test, and a concurrency check.
//!
//! A backend passes with one call per suite, giving a constructor that builds an empty backend
//! with the given index functions:
//!
//! ```
//! use informer_core::{Indexer, Indexers};
//! use informer_testing::JsonObject;
//! use informer_testing::conformance::indexer;
//!
//! /// In a backend's test: `check_backend(MyIndexer::with_indexers)`.
//! fn check_backend<I: Indexer<JsonObject>>(make: impl Fn(Indexers<JsonObject>) -> I) {
//!     indexer::run(&make); // every named check, including concurrency; panics naming failures
//!     indexer::check_against_model(&make, 64); // 64 random operation sequences
//! }
//! ```
//!
//! The object type is [`JsonObject`]. Objects without a name are used to check that key
//! failures are typed errors ([`StoreError::Key`]). What the contracts leave open is not
//! checked: the order of `list` and index results, what `replace` does with an object that has
//! no key, and which taken name an [`StoreError::IndexExists`] reports when several are taken.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use informer_core::{
    IndexFunc, Indexer, Indexers, NAMESPACE_INDEX, Object, StoreError, key_of, label_index_func,
    labels_index_func, namespace_index_func,
};
use parking_lot::Mutex;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use crate::JsonObject;

/// The label index every check registers besides the namespace index: label `app`.
pub const APP_INDEX: &str = "app";

/// The model runs this many cases when called through [`run_all`].
pub const DEFAULT_MODEL_CASES: u32 = 128;

/// Runs every named check of the suite against backends built by `make`, and panics with the
/// names and reasons of all failed checks.
///
/// `make` must return an empty backend with exactly the given index functions. Each check builds
/// its own backend. A check that panics inside the backend counts as failed.
pub fn run<I, F>(make: F)
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    let mut failures = Vec::new();
    let checks = checks::<I, F>();
    for (name, check) in &checks {
        let outcome = catch_unwind(AssertUnwindSafe(|| check(&make)))
            .unwrap_or_else(|panic| Err(format!("panicked: {}", panic_message(&*panic))));
        if let Err(reason) = outcome {
            failures.push(format!("  check `{name}` failed: {reason}"));
        }
    }
    if !failures.is_empty() {
        panic!(
            "indexer conformance: {} of {} checks failed:\n{}",
            failures.len(),
            checks.len(),
            failures.join("\n")
        );
    }
}

/// [`run`], then [`check_against_model`] with [`DEFAULT_MODEL_CASES`] cases.
pub fn run_all<I, F>(make: F)
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    run(&make);
    check_against_model(&make, DEFAULT_MODEL_CASES);
}

/// Applies `cases` random operation sequences to backends built by `make` and to a simple
/// reference model, and panics (with the shrunk failing sequence) on the first difference.
///
/// Operations: add, update, put, delete, delete by key, get, get by key, replace, resync,
/// add_indexers (new or taken names), index, index_keys, by_index, list_index_func_values, and
/// writes of nameless objects; objects span a few namespaces, names and label values. After
/// every operation the backend's return value must match the model's (objects compared by
/// `Arc` identity), and so must its entire observable state: `list`, `list_keys`, `len`,
/// `index_names`, and for every index every value with its keys and objects.
pub fn check_against_model<I, F>(make: F, cases: u32)
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&model::ops(), |ops| {
        model::apply(&make, &ops).map_err(TestCaseError::fail)
    });
    if let Err(err) = result {
        panic!("indexer model check failed: {err}");
    }
}

/// The concurrency check on its own (it is also one of [`run`]'s checks): writers on threads
/// upsert and delete disjoint keys while readers check every snapshot they get, then a replacer
/// swaps whole generations while readers check that they never see two generations mixed.
pub fn check_concurrency<I, F>(make: F)
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    if let Err(reason) = concurrent_readers_and_writers(&make) {
        panic!("indexer conformance: check `concurrent_readers_and_writers` failed: {reason}");
    }
}

/// One named check: `Err` carries the reason.
type Check<F> = fn(&F) -> Result<(), String>;

fn checks<I, F>() -> Vec<(&'static str, Check<F>)>
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    vec![
        ("empty_store", empty_store::<I, F>),
        ("add_then_get_returns_the_same_arc", add_then_get::<I, F>),
        (
            "add_overwrites_and_returns_previous",
            add_overwrites::<I, F>,
        ),
        (
            "update_upserts_and_returns_previous",
            update_upserts::<I, F>,
        ),
        (
            "keys_are_namespace_slash_name",
            keys_are_namespace_slash_name::<I, F>,
        ),
        (
            "delete_returns_what_was_stored",
            delete_returns_stored::<I, F>,
        ),
        ("delete_by_key", delete_by_key::<I, F>),
        (
            "nameless_object_is_a_key_error",
            nameless_object_is_key_error::<I, F>,
        ),
        ("list_and_list_keys_agree", list_and_list_keys_agree::<I, F>),
        (
            "replace_swaps_content_and_indices",
            replace_swaps_content::<I, F>,
        ),
        (
            "replace_with_nothing_clears",
            replace_with_nothing_clears::<I, F>,
        ),
        ("resync_keeps_content", resync_keeps_content::<I, F>),
        ("by_index_and_index_keys", by_index_and_index_keys::<I, F>),
        (
            "updates_move_index_entries",
            updates_move_index_entries::<I, F>,
        ),
        ("no_empty_index_values", no_empty_index_values::<I, F>),
        (
            "index_finds_objects_sharing_any_value",
            index_shares_any_value::<I, F>,
        ),
        (
            "unknown_index_is_index_not_found",
            unknown_index_is_not_found::<I, F>,
        ),
        (
            "index_names_lists_registered",
            index_names_lists_registered::<I, F>,
        ),
        (
            "add_indexers_indexes_existing_content",
            add_indexers_indexes_existing::<I, F>,
        ),
        (
            "add_indexers_rejects_taken_name_and_adds_none",
            add_indexers_rejects_taken::<I, F>,
        ),
        (
            "added_index_is_maintained",
            added_index_is_maintained::<I, F>,
        ),
        (
            "concurrent_readers_and_writers",
            concurrent_readers_and_writers::<I, F>,
        ),
    ]
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_owned())
}

/// Fails the check with a formatted reason unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $($reason:tt)+) => {
        if !$cond {
            return Err(format!($($reason)+));
        }
    };
}

/// Fails the check unless `left == right`, showing both.
fn expect_eq<T: PartialEq + Debug>(what: &str, left: T, right: T) -> Result<(), String> {
    if left == right {
        Ok(())
    } else {
        Err(format!("{what}: got {left:?}, expected {right:?}"))
    }
}

/// The namespace index and the `app` label index.
fn standard_indexers() -> Indexers<JsonObject> {
    let mut indexers = Indexers::new();
    indexers.insert(NAMESPACE_INDEX.to_owned(), namespace_index_func());
    indexers.insert(APP_INDEX.to_owned(), label_index_func(APP_INDEX));
    indexers
}

fn obj(ns: &str, name: &str) -> JsonObject {
    JsonObject::new(Some(ns), name)
}

fn app(ns: &str, name: &str, app: &str) -> Arc<JsonObject> {
    Arc::new(obj(ns, name).with_label(APP_INDEX, app))
}

fn key_string(obj: &JsonObject) -> String {
    key_of(obj).map_or_else(|e| format!("<no key: {e}>"), |k| k.to_string())
}

fn sorted_keys(objects: &[Arc<JsonObject>]) -> Vec<String> {
    let mut keys: Vec<_> = objects.iter().map(|o| key_string(o)).collect();
    keys.sort_unstable();
    keys
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort_unstable();
    v
}

fn same(a: Option<&Arc<JsonObject>>, b: Option<&Arc<JsonObject>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

fn expect_same(
    what: &str,
    got: Option<&Arc<JsonObject>>,
    expected: Option<&Arc<JsonObject>>,
) -> Result<(), String> {
    ensure!(
        same(got, expected),
        "{what}: got {:?}, expected {:?} (objects are compared by Arc identity: the store must \
         hand out the Arc it was given)",
        got.map(|o| key_string(o)),
        expected.map(|o| key_string(o))
    );
    Ok(())
}

fn store_err<T: Debug>(what: &str, result: Result<T, StoreError>) -> Result<T, String> {
    result.map_err(|e| format!("{what} failed: {e} ({e:?})"))
}

/// Checks every index against a recomputation from `list()` with the given functions.
fn consistent<I: Indexer<JsonObject>>(
    store: &I,
    indexers: &Indexers<JsonObject>,
) -> Result<(), String> {
    let objects = store.list();
    for (name, func) in indexers {
        let mut expected: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for o in &objects {
            for value in func(o) {
                expected.entry(value).or_default().insert(key_string(o));
            }
        }
        let values = sorted(store_err(
            "list_index_func_values",
            store.list_index_func_values(name),
        )?);
        expect_eq(
            &format!("list_index_func_values({name:?})"),
            values,
            expected.keys().cloned().collect(),
        )?;
        for (value, keys) in &expected {
            let want: Vec<String> = keys.iter().cloned().collect();
            let got = store_err("index_keys", store.index_keys(name, value))?;
            let got = sorted(got.iter().map(|k| k.to_string()).collect());
            expect_eq(
                &format!("index_keys({name:?}, {value:?})"),
                got,
                want.clone(),
            )?;
            let by_index = store_err("by_index", store.by_index(name, value))?;
            expect_eq(
                &format!("by_index({name:?}, {value:?})"),
                sorted_keys(&by_index),
                want,
            )?;
        }
    }
    Ok(())
}

fn empty_store<I, F>(make: &F) -> Result<(), String>
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    let store = make(standard_indexers());
    expect_eq("len", store.len(), 0)?;
    ensure!(store.is_empty(), "is_empty is false on a new store");
    ensure!(store.list().is_empty(), "list is not empty on a new store");
    ensure!(
        store.list_keys().is_empty(),
        "list_keys is not empty on a new store"
    );
    ensure!(
        store.get_by_key("ns/a").is_none(),
        "get_by_key found something in a new store"
    );
    expect_same(
        "get",
        store_err("get", store.get(&obj("ns", "a")))?.as_ref(),
        None,
    )?;
    for name in [NAMESPACE_INDEX, APP_INDEX] {
        let values = store_err("list_index_func_values", store.list_index_func_values(name))?;
        ensure!(
            values.is_empty(),
            "index {name:?} has values on a new store: {values:?}"
        );
        let found = store_err("by_index", store.by_index(name, "ns"))?;
        ensure!(
            found.is_empty(),
            "by_index({name:?}) found objects on a new store"
        );
    }
    Ok(())
}

fn add_then_get<I, F>(make: &F) -> Result<(), String>
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    let store = make(standard_indexers());
    let a = app("ns", "a", "web");
    let previous = store_err("add", store.add(a.clone()))?;
    expect_same("add of a new key returned", previous.as_ref(), None)?;
    expect_same("get_by_key", store.get_by_key("ns/a").as_ref(), Some(&a))?;
    // `get` keys the probe: any object with the same namespace and name finds it.
    expect_same(
        "get",
        store_err("get", store.get(&obj("ns", "a")))?.as_ref(),
        Some(&a),
    )?;
    expect_eq("len", store.len(), 1)?;
    ensure!(!store.is_empty(), "is_empty is true after an add");
    let listed = store.list();
    ensure!(
        listed.len() == 1 && Arc::ptr_eq(&listed[0], &a),
        "list does not hold exactly the added Arc"
    );
    consistent(&store, &standard_indexers())
}

fn add_overwrites<I, F>(make: &F) -> Result<(), String>
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    let store = make(standard_indexers());
    let first = app("ns", "a", "web");
    let second = app("ns", "a", "db");
    store_err("add", store.add(first.clone()))?;
    let previous = store_err("add", store.add(second.clone()))?;
    expect_same("second add returned", previous.as_ref(), Some(&first))?;
    expect_same(
        "get_by_key",
        store.get_by_key("ns/a").as_ref(),
        Some(&second),
    )?;
    expect_eq("len", store.len(), 1)?;
    consistent(&store, &standard_indexers())
}

fn update_upserts<I, F>(make: &F) -> Result<(), String>
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    let store = make(standard_indexers());
    let first = app("ns", "a", "web");
    let previous = store_err("update", store.update(first.clone()))?;
    expect_same("update of an absent key returned", previous.as_ref(), None)?;
    expect_same(
        "get_by_key after update",
        store.get_by_key("ns/a").as_ref(),
        Some(&first),
    )?;
    let second = app("ns", "a", "web");
    let previous = store_err("update", store.update(second.clone()))?;
    expect_same(
        "update of a present key returned",
        previous.as_ref(),
        Some(&first),
    )?;
    expect_same(
        "get_by_key",
        store.get_by_key("ns/a").as_ref(),
        Some(&second),
    )?;
    expect_eq("len", store.len(), 1)?;
    consistent(&store, &standard_indexers())
}

fn keys_are_namespace_slash_name<I, F>(make: &F) -> Result<(), String>
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    let store = make(standard_indexers());
    let node = Arc::new(JsonObject::new(None, "node-1"));
    store_err("add", store.add(node.clone()))?;
    store_err("add", store.add(app("ns", "node-1", "web")))?;
    expect_eq("len", store.len(), 2)?;
    expect_same(
        "get_by_key(\"node-1\")",
        store.get_by_key("node-1").as_ref(),
        Some(&node),
    )?;
    let keys = sorted(store.list_keys().iter().map(|k| k.to_string()).collect());
    expect_eq(
        "list_keys",
        keys,
        vec!["node-1".to_owned(), "ns/node-1".to_owned()],
    )?;
    let cluster_scoped = store_err("by_index", store.by_index(NAMESPACE_INDEX, ""))?;
    ensure!(
        cluster_scoped.len() == 1 && Arc::ptr_eq(&cluster_scoped[0], &node),
        "the namespace index must file a cluster-scoped object under \"\" (client-go's \
         MetaNamespaceIndexFunc)"
    );
    consistent(&store, &standard_indexers())
}

fn delete_returns_stored<I, F>(make: &F) -> Result<(), String>
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    let store = make(standard_indexers());
    let a = app("ns", "a", "web");
    store_err("add", store.add(a.clone()))?;
    // Deleting keys the given object: a different version with the same key deletes it.
    let removed = store_err(
        "delete",
        store.delete(&obj("ns", "a").with_resource_version("9")),
    )?;
    expect_same("delete returned", removed.as_ref(), Some(&a))?;
    expect_same(
        "get_by_key after delete",
        store.get_by_key("ns/a").as_ref(),
        None,
    )?;
    expect_eq("len", store.len(), 0)?;
    let again = store_err("delete of an absent key", store.delete(&a))?;
    expect_same("delete of an absent key returned", again.as_ref(), None)?;
    consistent(&store, &standard_indexers())
}

fn delete_by_key<I, F>(make: &F) -> Result<(), String>
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    let store = make(standard_indexers());
    let a = app("ns", "a", "web");
    let b = app("ns", "b", "web");
    store_err("add", store.add(a.clone()))?;
    store_err("add", store.add(b.clone()))?;
    expect_same(
        "delete_by_key returned",
        store.delete_by_key("ns/a").as_ref(),
        Some(&a),
    )?;
    expect_same(
        "delete_by_key of an absent key",
        store.delete_by_key("ns/a").as_ref(),
        None,
    )?;
    expect_same(
        "the other object",
        store.get_by_key("ns/b").as_ref(),
        Some(&b),
    )?;
    expect_eq("len", store.len(), 1)?;
    consistent(&store, &standard_indexers())
}

fn nameless_object_is_key_error<I, F>(make: &F) -> Result<(), String>
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    let store = make(standard_indexers());
    let a = app("ns", "a", "web");
    store_err("add", store.add(a.clone()))?;
    let nameless = Arc::new(JsonObject {
        metadata: crate::JsonMeta {
            namespace: Some("ns".to_owned()),
            ..Default::default()
        },
        ..Default::default()
    });
    let is_key_error = |what: &str, r: Result<Option<Arc<JsonObject>>, StoreError>| match r {
        Err(StoreError::Key(_)) => Ok(()),
        other => Err(format!(
            "{what} of a nameless object: got {other:?}, expected Err(Key)"
        )),
    };
    is_key_error("add", store.add(nameless.clone()))?;
    is_key_error("update", store.update(nameless.clone()))?;
    is_key_error("delete", store.delete(&nameless))?;
    is_key_error("get", store.get(&nameless))?;
    expect_eq("len after rejected writes", store.len(), 1)?;
    expect_same(
        "the stored object",
        store.get_by_key("ns/a").as_ref(),
        Some(&a),
    )?;
    consistent(&store, &standard_indexers())
}

fn list_and_list_keys_agree<I, F>(make: &F) -> Result<(), String>
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    let store = make(standard_indexers());
    let added = [
        app("a", "x", "web"),
        app("b", "x", "db"),
        app("a", "y", "web"),
    ];
    for o in &added {
        store_err("add", store.add(o.clone()))?;
    }
    let listed = store.list();
    expect_eq("len", store.len(), 3)?;
    expect_eq("list", sorted_keys(&listed), sorted_keys(&added))?;
    let keys = sorted(store.list_keys().iter().map(|k| k.to_string()).collect());
    expect_eq("list_keys", keys, sorted_keys(&added))?;
    for o in &added {
        ensure!(
            listed.iter().any(|l| Arc::ptr_eq(l, o)),
            "list does not hold the added Arc of {}",
            key_string(o)
        );
    }
    Ok(())
}

fn replace_swaps_content<I, F>(make: &F) -> Result<(), String>
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    let store = make(standard_indexers());
    store_err("add", store.add(app("gone", "a", "old")))?;
    store_err("add", store.add(app("kept", "b", "web")))?;
    let b = app("kept", "b", "db");
    let c = app("new", "c", "web");
    store_err("replace", store.replace(vec![b.clone(), c.clone()], "10"))?;
    expect_eq("len after replace", store.len(), 2)?;
    expect_same(
        "replaced object",
        store.get_by_key("kept/b").as_ref(),
        Some(&b),
    )?;
    expect_same("new object", store.get_by_key("new/c").as_ref(), Some(&c))?;
    expect_same(
        "object missing from the list",
        store.get_by_key("gone/a").as_ref(),
        None,
    )?;
    let values = sorted(store_err(
        "list_index_func_values",
        store.list_index_func_values(APP_INDEX),
    )?);
    expect_eq(
        "app values after replace",
        values,
        vec!["db".to_owned(), "web".to_owned()],
    )?;
    consistent(&store, &standard_indexers())
}

fn replace_with_nothing_clears<I, F>(make: &F) -> Result<(), String>
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    let store = make(standard_indexers());
    store_err("add", store.add(app("ns", "a", "web")))?;
    store_err("replace", store.replace(Vec::new(), "11"))?;
    expect_eq("len", store.len(), 0)?;
    ensure!(
        store.list_keys().is_empty(),
        "keys left after replace with nothing"
    );
    for name in [NAMESPACE_INDEX, APP_INDEX] {
        let values = store_err("list_index_func_values", store.list_index_func_values(name))?;
        ensure!(values.is_empty(), "index {name:?} kept values {values:?}");
    }
    Ok(())
}

fn resync_keeps_content<I, F>(make: &F) -> Result<(), String>
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    let store = make(standard_indexers());
    let a = app("ns", "a", "web");
    store_err("add", store.add(a.clone()))?;
    store_err("resync", store.resync())?;
    expect_same(
        "object after resync",
        store.get_by_key("ns/a").as_ref(),
        Some(&a),
    )?;
    expect_eq("len", store.len(), 1)?;
    consistent(&store, &standard_indexers())
}

fn by_index_and_index_keys<I, F>(make: &F) -> Result<(), String>
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    let store = make(standard_indexers());
    let objects = [
        app("a", "x", "web"),
        app("a", "y", "db"),
        app("b", "x", "web"),
        Arc::new(obj("b", "unlabelled")),
    ];
    for o in &objects {
        store_err("add", store.add(o.clone()))?;
    }
    let in_a = store_err("by_index", store.by_index(NAMESPACE_INDEX, "a"))?;
    expect_eq(
        "by_index(namespace, a)",
        sorted_keys(&in_a),
        vec!["a/x".into(), "a/y".into()],
    )?;
    for o in &in_a {
        ensure!(
            objects.iter().any(|s| Arc::ptr_eq(s, o)),
            "by_index returned a copy of {} instead of the stored Arc",
            key_string(o)
        );
    }
    let web = store_err("index_keys", store.index_keys(APP_INDEX, "web"))?;
    let web = sorted(web.iter().map(|k| k.to_string()).collect());
    expect_eq(
        "index_keys(app, web)",
        web,
        vec!["a/x".into(), "b/x".into()],
    )?;
    ensure!(
        store_err("by_index", store.by_index(APP_INDEX, "absent"))?.is_empty(),
        "by_index of an absent value found objects"
    );
    ensure!(
        store_err("index_keys", store.index_keys(APP_INDEX, "absent"))?.is_empty(),
        "index_keys of an absent value found keys"
    );
    consistent(&store, &standard_indexers())
}

fn updates_move_index_entries<I, F>(make: &F) -> Result<(), String>
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    let store = make(standard_indexers());
    store_err("add", store.add(app("ns", "a", "web")))?;
    store_err("add", store.add(app("ns", "b", "web")))?;
    store_err("update", store.update(app("ns", "a", "db")))?;
    let web = store_err("by_index", store.by_index(APP_INDEX, "web"))?;
    expect_eq(
        "app=web after relabelling a",
        sorted_keys(&web),
        vec!["ns/b".into()],
    )?;
    let db = store_err("by_index", store.by_index(APP_INDEX, "db"))?;
    expect_eq(
        "app=db after relabelling a",
        sorted_keys(&db),
        vec!["ns/a".into()],
    )?;
    // Dropping the label takes the object out of the index.
    store_err("update", store.update(Arc::new(obj("ns", "a"))))?;
    ensure!(
        store_err("by_index", store.by_index(APP_INDEX, "db"))?.is_empty(),
        "object still filed under a label it lost"
    );
    // Same values: still filed once under each.
    store_err("update", store.update(app("ns", "b", "web")))?;
    let web = store_err("index_keys", store.index_keys(APP_INDEX, "web"))?;
    expect_eq("keys under app=web after an unchanged update", web.len(), 1)?;
    consistent(&store, &standard_indexers())
}

fn no_empty_index_values<I, F>(make: &F) -> Result<(), String>
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    let store = make(standard_indexers());
    store_err("add", store.add(app("a", "x", "web")))?;
    store_err("add", store.add(app("b", "x", "db")))?;
    store_err("update", store.update(app("a", "x", "db")))?;
    store_err("delete", store.delete(&obj("b", "x")))?;
    let values = sorted(store_err(
        "list_index_func_values",
        store.list_index_func_values(APP_INDEX),
    )?);
    expect_eq("app values", values, vec!["db".to_owned()])?;
    let namespaces = store_err(
        "list_index_func_values",
        store.list_index_func_values(NAMESPACE_INDEX),
    )?;
    expect_eq("namespace values", namespaces, vec!["a".to_owned()])?;
    consistent(&store, &standard_indexers())
}

fn index_shares_any_value<I, F>(make: &F) -> Result<(), String>
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    let mut indexers = standard_indexers();
    indexers.insert("labels".to_owned(), labels_index_func());
    let store = make(indexers.clone());
    let labelled = |name: &str, labels: &[(&str, &str)]| {
        let mut o = obj("ns", name);
        for (k, v) in labels {
            o = o.with_label(*k, *v);
        }
        Arc::new(o)
    };
    store_err(
        "add",
        store.add(labelled("both", &[("x", "1"), ("y", "2")])),
    )?;
    store_err("add", store.add(labelled("x-only", &[("x", "1")])))?;
    store_err("add", store.add(labelled("y-other", &[("y", "3")])))?;
    let probe = obj("elsewhere", "probe")
        .with_label("x", "1")
        .with_label("y", "2");
    let found = store_err("index", store.index("labels", &probe))?;
    expect_eq(
        "index(labels, x=1 y=2): each object sharing a value, once",
        sorted_keys(&found),
        vec!["ns/both".into(), "ns/x-only".into()],
    )?;
    let none = store_err("index", store.index("labels", &obj("ns", "bare")))?;
    ensure!(
        none.is_empty(),
        "index of an object with no values found {:?}",
        sorted_keys(&none)
    );
    let same_ns = store_err("index", store.index(NAMESPACE_INDEX, &obj("ns", "other")))?;
    expect_eq("index(namespace, ns/other)", same_ns.len(), 3)?;
    consistent(&store, &indexers)
}

fn unknown_index_is_not_found<I, F>(make: &F) -> Result<(), String>
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    let store = make(standard_indexers());
    store_err("add", store.add(app("ns", "a", "web")))?;
    let check = |what: &str, r: Result<usize, StoreError>| match r {
        Err(StoreError::IndexNotFound { name }) if name == "nope" => Ok(()),
        other => Err(format!(
            "{what} on an unknown index: got {other:?}, expected IndexNotFound"
        )),
    };
    check(
        "index",
        store.index("nope", &obj("ns", "a")).map(|v| v.len()),
    )?;
    check("index_keys", store.index_keys("nope", "x").map(|v| v.len()))?;
    check(
        "list_index_func_values",
        store.list_index_func_values("nope").map(|v| v.len()),
    )?;
    check("by_index", store.by_index("nope", "x").map(|v| v.len()))
}

fn index_names_lists_registered<I, F>(make: &F) -> Result<(), String>
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    let store = make(standard_indexers());
    expect_eq(
        "index_names",
        sorted(store.index_names()),
        vec![APP_INDEX.to_owned(), NAMESPACE_INDEX.to_owned()],
    )?;
    let bare = make(Indexers::new());
    ensure!(
        bare.index_names().is_empty(),
        "a store made without indexers reports indices"
    );
    store_err("add", bare.add(app("ns", "a", "web")))?;
    expect_eq("len of a store without indices", bare.len(), 1)?;
    Ok(())
}

fn add_indexers_indexes_existing<I, F>(make: &F) -> Result<(), String>
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    let store = make(standard_indexers());
    store_err(
        "add",
        store.add(
            app("a", "x", "web")
                .as_ref()
                .clone()
                .with_label("tier", "fe")
                .into(),
        ),
    )?;
    store_err(
        "add",
        store.add(
            app("b", "y", "db")
                .as_ref()
                .clone()
                .with_label("tier", "be")
                .into(),
        ),
    )?;
    store_err("add", store.add(app("b", "z", "db")))?;
    let tier = label_index_func::<JsonObject>("tier");
    store_err(
        "add_indexers",
        store.add_indexers([("tier".to_owned(), tier.clone())].into()),
    )?;
    let fe = store_err("by_index", store.by_index("tier", "fe"))?;
    expect_eq(
        "tier=fe right after add_indexers",
        sorted_keys(&fe),
        vec!["a/x".into()],
    )?;
    let values = sorted(store_err(
        "list_index_func_values",
        store.list_index_func_values("tier"),
    )?);
    expect_eq(
        "tier values",
        values,
        vec!["be".to_owned(), "fe".to_owned()],
    )?;
    let mut all = standard_indexers();
    all.insert("tier".to_owned(), tier);
    expect_eq(
        "index_names",
        sorted(store.index_names()),
        sorted(all.keys().cloned().collect()),
    )?;
    consistent(&store, &all)
}

fn add_indexers_rejects_taken<I, F>(make: &F) -> Result<(), String>
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    let store = make(standard_indexers());
    store_err("add", store.add(app("a", "x", "web")))?;
    let both: Indexers<JsonObject> = [
        (
            APP_INDEX.to_owned(),
            label_index_func::<JsonObject>("other"),
        ),
        ("tier".to_owned(), label_index_func::<JsonObject>("tier")),
    ]
    .into();
    match store.add_indexers(both) {
        Err(StoreError::IndexExists { name }) if name == APP_INDEX => {}
        other => {
            return Err(format!(
                "add_indexers with a taken name: got {other:?}, expected IndexExists(\"app\")"
            ));
        }
    }
    expect_eq(
        "index_names after a rejected add_indexers (none may be added)",
        sorted(store.index_names()),
        vec![APP_INDEX.to_owned(), NAMESPACE_INDEX.to_owned()],
    )?;
    // The taken index keeps its original function.
    let web = store_err("by_index", store.by_index(APP_INDEX, "web"))?;
    expect_eq("app=web after the rejected add_indexers", web.len(), 1)?;
    match store.list_index_func_values("tier") {
        Err(StoreError::IndexNotFound { .. }) => {}
        other => return Err(format!("the rejected batch's new index exists: {other:?}")),
    }
    consistent(&store, &standard_indexers())
}

fn added_index_is_maintained<I, F>(make: &F) -> Result<(), String>
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    let store = make(Indexers::new());
    store_err("add", store.add(app("a", "x", "web")))?;
    store_err("add_indexers", store.add_indexers(standard_indexers()))?;
    store_err("add", store.add(app("a", "y", "web")))?;
    store_err("update", store.update(app("a", "x", "db")))?;
    store_err("delete", store.delete(&obj("a", "y")))?;
    store_err("add", store.add(app("b", "z", "web")))?;
    consistent(&store, &standard_indexers())?;
    store_err("replace", store.replace(vec![app("c", "w", "web")], "5"))?;
    consistent(&store, &standard_indexers())
}

/// Writers upsert and delete disjoint keys while readers check what they see; then a replacer
/// swaps whole generations while readers check they never see two generations mixed.
fn concurrent_readers_and_writers<I, F>(make: &F) -> Result<(), String>
where
    F: Fn(Indexers<JsonObject>) -> I,
    I: Indexer<JsonObject>,
{
    const WRITERS: usize = 2;
    const READERS: usize = 2;
    const ROUNDS: usize = 2_000;
    const KEYS_PER_WRITER: usize = 24;
    const GENERATIONS: usize = 200;
    const GENERATION_SIZE: usize = 32;

    let store = make(standard_indexers());
    let violations: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let report = |v: String| {
        let mut all = violations.lock();
        if all.len() < 10 {
            all.push(v);
        }
    };

    // Phase 1: point writes.
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let store = &store;
                s.spawn(move || -> Result<(), String> {
                    for round in 0..ROUNDS {
                        let i = round % KEYS_PER_WRITER;
                        let ns = format!("ns{}", i % 3);
                        let name = format!("w{w}-{i}");
                        if round % 7 == 6 {
                            store_err("delete", store.delete(&obj(&ns, &name)))?;
                        } else {
                            let label = if round % 2 == 0 { "web" } else { "db" };
                            store_err("add", store.add(app(&ns, &name, label)))?;
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        for _ in 0..READERS {
            s.spawn(|| {
                while !stop.load(Ordering::Acquire) {
                    match store.by_index(APP_INDEX, "web") {
                        Ok(objects) => {
                            for o in objects {
                                if o.object_labels().get(APP_INDEX).map(String::as_str)
                                    != Some("web")
                                {
                                    report(format!(
                                        "by_index(app, web) returned {}",
                                        key_string(&o)
                                    ));
                                }
                            }
                        }
                        Err(e) => report(format!("by_index failed under concurrency: {e}")),
                    }
                    match store.by_index(NAMESPACE_INDEX, "ns1") {
                        Ok(objects) => {
                            for o in objects {
                                if o.object_namespace() != Some("ns1") {
                                    report(format!(
                                        "by_index(namespace, ns1) returned {}",
                                        key_string(&o)
                                    ));
                                }
                            }
                        }
                        Err(e) => report(format!("by_index failed under concurrency: {e}")),
                    }
                    let listed = store.list();
                    let keys: BTreeSet<String> = listed.iter().map(|o| key_string(o)).collect();
                    if keys.len() != listed.len() {
                        report(format!(
                            "list returned {} objects for {} keys",
                            listed.len(),
                            keys.len()
                        ));
                    }
                    for key in store.list_keys().iter().take(4) {
                        if let Some(o) = store.get_by_key(key.as_str())
                            && key_string(&o) != key.as_str()
                        {
                            report(format!("get_by_key({key}) returned {}", key_string(&o)));
                        }
                    }
                }
            });
        }
        for (w, writer) in writers.into_iter().enumerate() {
            match writer.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => report(format!("writer {w}: {e}")),
                Err(panic) => report(format!("writer {w} panicked: {}", panic_message(&*panic))),
            }
        }
        stop.store(true, Ordering::Release);
    });
    consistent(&store, &standard_indexers())
        .map_err(|e| format!("after concurrent writes: {e}"))?;

    // Phase 2: whole-content swaps. Every generation has GENERATION_SIZE objects, all labelled
    // app=g<generation>.
    let generation = |g: usize| -> Vec<Arc<JsonObject>> {
        (0..GENERATION_SIZE)
            .map(|i| {
                app(
                    &format!("ns{}", i % 4),
                    &format!("o{}", (i + g) % (GENERATION_SIZE * 2)),
                    &format!("g{g}"),
                )
            })
            .collect()
    };
    store_err("replace", store.replace(generation(0), "0"))?;
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        let replacer = s.spawn(|| -> Result<(), String> {
            for g in 1..GENERATIONS {
                store_err("replace", store.replace(generation(g), &g.to_string()))?;
            }
            Ok(())
        });
        for _ in 0..READERS {
            s.spawn(|| {
                while !stop.load(Ordering::Acquire) {
                    let listed = store.list();
                    let labels: BTreeSet<Option<&String>> =
                        listed.iter().map(|o| o.object_labels().get(APP_INDEX)).collect();
                    if listed.len() != GENERATION_SIZE || labels.len() != 1 {
                        report(format!(
                            "list during replace saw {} objects from {} generations (expected {GENERATION_SIZE} from one)",
                            listed.len(),
                            labels.len()
                        ));
                    }
                    let len = store.len();
                    if len != GENERATION_SIZE {
                        report(format!("len during replace was {len}, expected {GENERATION_SIZE}"));
                    }
                    match store.list_index_func_values(APP_INDEX) {
                        Ok(values) if values.len() == 1 => {
                            // The generation may be swapped out between the two calls: then
                            // nothing is found, never a partial set.
                            match store.by_index(APP_INDEX, &values[0]) {
                                Ok(found) if found.is_empty() || found.len() == GENERATION_SIZE => {}
                                Ok(found) => report(format!(
                                    "by_index(app, {}) during replace found {} objects",
                                    values[0],
                                    found.len()
                                )),
                                Err(e) => report(format!("by_index failed during replace: {e}")),
                            }
                        }
                        Ok(values) => report(format!("app values during replace: {values:?} (expected one generation)")),
                        Err(e) => report(format!("list_index_func_values failed during replace: {e}")),
                    }
                }
            });
        }
        match replacer.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => report(format!("replacer: {e}")),
            Err(panic) => report(format!("replacer panicked: {}", panic_message(&*panic))),
        }
        stop.store(true, Ordering::Release);
    });
    let violations = violations.into_inner();
    ensure!(violations.is_empty(), "{}", violations.join("; "));
    consistent(&store, &standard_indexers()).map_err(|e| format!("after concurrent replaces: {e}"))
}

/// The reference model and the random operations of [`check_against_model`].
mod model {
    use super::*;

    const NAMESPACES: &[Option<&str>] = &[None, Some("a"), Some("b"), Some("c")];
    const NAMES: &[&str] = &["x", "y", "z"];
    const APPS: &[Option<&str>] = &[None, Some("web"), Some("db")];
    const TIERS: &[Option<&str>] = &[None, Some("fe"), Some("be")];
    /// Indices the operations may add, or query while absent.
    const EXTRA_INDICES: &[&str] = &["tier", "labels", APP_INDEX];
    const QUERIED_INDICES: &[&str] = &[NAMESPACE_INDEX, APP_INDEX, "tier", "labels", "missing"];
    const QUERIED_VALUES: &[&str] = &[
        "a", "b", "c", "web", "db", "fe", "be", "app=web", "tier=fe", "none",
    ];

    /// An object to build: the suite gives each built object a fresh `Arc` (and
    /// resourceVersion), so identity tells versions apart.
    #[derive(Debug, Clone)]
    pub(super) struct Spec {
        ns: Option<&'static str>,
        name: &'static str,
        app: Option<&'static str>,
        tier: Option<&'static str>,
    }

    #[derive(Debug, Clone)]
    pub(super) enum Op {
        Add(Spec),
        Update(Spec),
        Put(Spec),
        Delete(Spec),
        DeleteByKey(Spec),
        Get(Spec),
        GetByKey(Spec),
        Replace(Vec<Spec>),
        Resync,
        WriteNameless,
        AddIndexers(Vec<&'static str>),
        Index(&'static str, Spec),
        IndexKeys(&'static str, &'static str),
        ByIndex(&'static str, &'static str),
        ListValues(&'static str),
    }

    fn spec() -> impl Strategy<Value = Spec> {
        (
            prop::sample::select(NAMESPACES),
            prop::sample::select(NAMES),
            prop::sample::select(APPS),
            prop::sample::select(TIERS),
        )
            .prop_map(|(ns, name, app, tier)| Spec {
                ns,
                name,
                app,
                tier,
            })
    }

    fn op() -> impl Strategy<Value = Op> {
        let index = || prop::sample::select(QUERIED_INDICES);
        let value = || prop::sample::select(QUERIED_VALUES);
        prop_oneof![
            6 => spec().prop_map(Op::Add),
            4 => spec().prop_map(Op::Update),
            2 => spec().prop_map(Op::Put),
            3 => spec().prop_map(Op::Delete),
            1 => spec().prop_map(Op::DeleteByKey),
            1 => spec().prop_map(Op::Get),
            1 => spec().prop_map(Op::GetByKey),
            2 => prop::collection::vec(spec(), 0..8).prop_map(Op::Replace),
            1 => Just(Op::Resync),
            1 => Just(Op::WriteNameless),
            2 => prop::sample::subsequence(EXTRA_INDICES, 1..=2).prop_map(Op::AddIndexers),
            2 => (index(), spec()).prop_map(|(i, s)| Op::Index(i, s)),
            1 => (index(), value()).prop_map(|(i, v)| Op::IndexKeys(i, v)),
            1 => (index(), value()).prop_map(|(i, v)| Op::ByIndex(i, v)),
            1 => index().prop_map(Op::ListValues),
        ]
    }

    pub(super) fn ops() -> impl Strategy<Value = Vec<Op>> {
        prop::collection::vec(op(), 1..48)
    }

    fn func(name: &str) -> Option<IndexFunc<JsonObject>> {
        match name {
            NAMESPACE_INDEX => Some(namespace_index_func()),
            APP_INDEX => Some(label_index_func(APP_INDEX)),
            "tier" => Some(label_index_func("tier")),
            "labels" => Some(labels_index_func()),
            _ => None,
        }
    }

    /// The reference: a sorted map and index functions evaluated by brute force.
    struct Model {
        items: BTreeMap<String, Arc<JsonObject>>,
        indexers: Indexers<JsonObject>,
        version: u64,
    }

    impl Model {
        fn build(&mut self, spec: &Spec) -> Arc<JsonObject> {
            self.version += 1;
            let mut o =
                JsonObject::new(spec.ns, spec.name).with_resource_version(self.version.to_string());
            if let Some(v) = spec.app {
                o = o.with_label(APP_INDEX, v);
            }
            if let Some(v) = spec.tier {
                o = o.with_label("tier", v);
            }
            Arc::new(o)
        }

        fn values(&self, index: &str) -> Option<BTreeMap<String, Vec<String>>> {
            let func = self.indexers.get(index)?;
            let mut values: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            for (key, o) in &self.items {
                for v in func(o) {
                    values.entry(v).or_default().insert(key.clone());
                }
            }
            Some(
                values
                    .into_iter()
                    .map(|(v, keys)| (v, keys.into_iter().collect()))
                    .collect(),
            )
        }
    }

    fn spec_key(spec: &Spec) -> String {
        key_string(&JsonObject::new(spec.ns, spec.name))
    }

    fn compare_option(
        what: &str,
        got: Option<&Arc<JsonObject>>,
        want: Option<&Arc<JsonObject>>,
    ) -> Result<(), String> {
        expect_same(what, got, want)
    }

    /// Compares a backend's list of objects with the model's keys, by identity.
    fn compare_objects(
        what: &str,
        model: &Model,
        got: &[Arc<JsonObject>],
        want_keys: &[String],
    ) -> Result<(), String> {
        expect_eq(what, sorted_keys(got), want_keys.to_vec())?;
        for o in got {
            let stored = model.items.get(&key_string(o));
            ensure!(
                stored.is_some_and(|s| Arc::ptr_eq(s, o)),
                "{what}: {} is not the stored Arc",
                key_string(o)
            );
        }
        Ok(())
    }

    fn not_found<T: Debug>(what: &str, r: Result<T, StoreError>, name: &str) -> Result<(), String> {
        match r {
            Err(StoreError::IndexNotFound { name: n }) if n == name => Ok(()),
            other => Err(format!(
                "{what} on unregistered index {name:?}: got {other:?}, expected IndexNotFound"
            )),
        }
    }

    /// Everything observable must match the model.
    fn compare_state<I: Indexer<JsonObject>>(store: &I, model: &Model) -> Result<(), String> {
        let keys: Vec<String> = model.items.keys().cloned().collect();
        compare_objects("list", model, &store.list(), &keys)?;
        let listed_keys = sorted(store.list_keys().iter().map(|k| k.to_string()).collect());
        expect_eq("list_keys", listed_keys, keys.clone())?;
        expect_eq("len", store.len(), keys.len())?;
        expect_eq("is_empty", store.is_empty(), keys.is_empty())?;
        expect_eq(
            "index_names",
            sorted(store.index_names()),
            sorted(model.indexers.keys().cloned().collect()),
        )?;
        for name in model.indexers.keys() {
            let Some(values) = model.values(name) else {
                continue;
            };
            let got = sorted(store_err(
                "list_index_func_values",
                store.list_index_func_values(name),
            )?);
            expect_eq(
                &format!("list_index_func_values({name:?})"),
                got,
                values.keys().cloned().collect(),
            )?;
            for (value, want) in &values {
                let got = store_err("index_keys", store.index_keys(name, value))?;
                let got = sorted(got.iter().map(|k| k.to_string()).collect());
                expect_eq(&format!("index_keys({name:?}, {value:?})"), &got, want)?;
                let objects = store_err("by_index", store.by_index(name, value))?;
                compare_objects(
                    &format!("by_index({name:?}, {value:?})"),
                    model,
                    &objects,
                    want,
                )?;
            }
        }
        Ok(())
    }

    pub(super) fn apply<I, F>(make: &F, ops: &[Op]) -> Result<(), String>
    where
        F: Fn(Indexers<JsonObject>) -> I,
        I: Indexer<JsonObject>,
    {
        let store = make(standard_indexers());
        let mut model = Model {
            items: BTreeMap::new(),
            indexers: standard_indexers(),
            version: 0,
        };
        for (step, op) in ops.iter().enumerate() {
            step_once(&store, &mut model, op).map_err(|e| format!("step {step} ({op:?}): {e}"))?;
            compare_state(&store, &model)
                .map_err(|e| format!("state after step {step} ({op:?}): {e}"))?;
        }
        Ok(())
    }

    fn step_once<I: Indexer<JsonObject>>(
        store: &I,
        model: &mut Model,
        op: &Op,
    ) -> Result<(), String> {
        match op {
            Op::Add(spec) | Op::Update(spec) => {
                let o = model.build(spec);
                let got = if matches!(op, Op::Add(_)) {
                    store.add(o.clone())
                } else {
                    store.update(o.clone())
                };
                let got = store_err("write", got)?;
                let want = model.items.insert(spec_key(spec), o);
                compare_option("previous object", got.as_ref(), want.as_ref())
            }
            Op::Put(spec) => {
                let o = model.build(spec);
                store_err("put", store.put(o.clone(), None))?;
                model.items.insert(spec_key(spec), o);
                Ok(())
            }
            Op::Delete(spec) => {
                let probe = model.build(spec);
                let got = store_err("delete", store.delete(&probe))?;
                let want = model.items.remove(&spec_key(spec));
                compare_option("deleted object", got.as_ref(), want.as_ref())
            }
            Op::DeleteByKey(spec) => {
                let key = spec_key(spec);
                let got = store.delete_by_key(&key);
                let want = model.items.remove(&key);
                compare_option("deleted object", got.as_ref(), want.as_ref())
            }
            Op::Get(spec) => {
                let probe = model.build(spec);
                let got = store_err("get", store.get(&probe))?;
                compare_option("get", got.as_ref(), model.items.get(&spec_key(spec)))
            }
            Op::GetByKey(spec) => {
                let key = spec_key(spec);
                compare_option(
                    "get_by_key",
                    store.get_by_key(&key).as_ref(),
                    model.items.get(&key),
                )
            }
            Op::Replace(specs) => {
                let objects: Vec<_> = specs.iter().map(|s| model.build(s)).collect();
                store_err(
                    "replace",
                    store.replace(objects.clone(), &model.version.to_string()),
                )?;
                // Later duplicates win.
                model.items = objects.into_iter().map(|o| (key_string(&o), o)).collect();
                Ok(())
            }
            Op::Resync => store_err("resync", store.resync()),
            Op::WriteNameless => {
                let nameless = Arc::new(JsonObject::default().with_label(APP_INDEX, "web"));
                match store.add(nameless) {
                    Err(StoreError::Key(_)) => Ok(()),
                    other => Err(format!(
                        "add of a nameless object: got {other:?}, expected Err(Key)"
                    )),
                }
            }
            Op::AddIndexers(names) => {
                let indexers: Indexers<JsonObject> = names
                    .iter()
                    .filter_map(|n| Some(((*n).to_owned(), func(n)?)))
                    .collect();
                let taken: Vec<&str> = names
                    .iter()
                    .copied()
                    .filter(|n| model.indexers.contains_key(*n))
                    .collect();
                match (store.add_indexers(indexers.clone()), taken.is_empty()) {
                    (Ok(()), true) => {
                        model.indexers.extend(indexers);
                        Ok(())
                    }
                    (Err(StoreError::IndexExists { name }), false)
                        if taken.contains(&name.as_str()) =>
                    {
                        Ok(())
                    }
                    (got, _) => Err(format!(
                        "add_indexers({names:?}): got {got:?}, taken names {taken:?}"
                    )),
                }
            }
            Op::Index(name, spec) => {
                let probe = model.build(spec);
                let got = store.index(name, &probe);
                let Some(func) = model.indexers.get(*name) else {
                    return not_found("index", got, name);
                };
                let got = store_err("index", got)?;
                let probe_values: BTreeSet<String> = func(&probe).into_iter().collect();
                let want: Vec<String> = model
                    .items
                    .iter()
                    .filter(|(_, o)| func(o).iter().any(|v| probe_values.contains(v)))
                    .map(|(k, _)| k.clone())
                    .collect();
                compare_objects("index", model, &got, &want)
            }
            Op::IndexKeys(name, value) => {
                let got = store.index_keys(name, value);
                let Some(values) = model.values(name) else {
                    return not_found("index_keys", got, name);
                };
                let got = sorted(
                    store_err("index_keys", got)?
                        .iter()
                        .map(|k| k.to_string())
                        .collect(),
                );
                expect_eq(
                    "index_keys",
                    got,
                    values.get(*value).cloned().unwrap_or_default(),
                )
            }
            Op::ByIndex(name, value) => {
                let got = store.by_index(name, value);
                let Some(values) = model.values(name) else {
                    return not_found("by_index", got, name);
                };
                let got = store_err("by_index", got)?;
                compare_objects(
                    "by_index",
                    model,
                    &got,
                    &values.get(*value).cloned().unwrap_or_default(),
                )
            }
            Op::ListValues(name) => {
                let got = store.list_index_func_values(name);
                let Some(values) = model.values(name) else {
                    return not_found("list_index_func_values", got, name);
                };
                let got = sorted(store_err("list_index_func_values", got)?);
                expect_eq(
                    "list_index_func_values",
                    got,
                    values.keys().cloned().collect(),
                )
            }
        }
    }
}
