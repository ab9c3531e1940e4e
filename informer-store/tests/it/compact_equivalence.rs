//! Property test: a `CompactStore` answers exactly what an `IndexedStore` answers for the same
//! operations, compared by value (the compact store decodes, so identity is not expected), for
//! typed objects (k8s-openapi `Pod`s and `ConfigMap`s) and dynamic ones (`JsonObject`), under
//! several cache sizes and codecs, across dictionary training.
#![cfg(feature = "compact")]

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use informer_core::{
    Indexer, Indexers, KnownObjects, NAMESPACE_INDEX, Object, Store, key_of, label_index_func,
    labels_index_func, namespace_index_func,
};
use informer_store::{
    Codec, CompactStore, DictionaryState, IndexedStore, RoundTripCheck, ZstdDictionary,
};
use informer_testing::JsonObject;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::pods;

const NAMESPACES: &[Option<&str>] = &[None, Some("a"), Some("b")];
const NAMES: &[&str] = &["x", "y", "z"];
const APPS: &[Option<&str>] = &[None, Some("web"), Some("db")];
const INDICES: &[&str] = &[NAMESPACE_INDEX, "app", "labels", "tier"];
const VALUES: &[&str] = &["", "a", "b", "web", "db", "fe", "app=web", "tier=fe"];

/// One object to build: where it lives, its labels, and a payload seed that changes its
/// content.
#[derive(Debug, Clone)]
struct Spec {
    ns: Option<&'static str>,
    name: &'static str,
    app: Option<&'static str>,
    tier: bool,
    payload: u8,
}

#[derive(Debug, Clone)]
enum Op {
    Add(Spec),
    Update(Spec),
    Delete(Spec),
    DeleteByKey(Spec),
    Get(Spec),
    Replace(Vec<Spec>),
    AddTierIndex,
    Index(&'static str, Spec),
    ByIndex(&'static str, &'static str),
    IndexKeys(&'static str, &'static str),
    ListValues(&'static str),
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        prop::sample::select(NAMESPACES),
        prop::sample::select(NAMES),
        prop::sample::select(APPS),
        any::<bool>(),
        any::<u8>(),
    )
        .prop_map(|(ns, name, app, tier, payload)| Spec {
            ns,
            name,
            app,
            tier,
            payload,
        })
}

fn op() -> impl Strategy<Value = Op> {
    let index = || prop::sample::select(INDICES);
    let value = || prop::sample::select(VALUES);
    prop_oneof![
        6 => spec().prop_map(Op::Add),
        4 => spec().prop_map(Op::Update),
        2 => spec().prop_map(Op::Delete),
        1 => spec().prop_map(Op::DeleteByKey),
        2 => spec().prop_map(Op::Get),
        2 => prop::collection::vec(spec(), 0..10).prop_map(Op::Replace),
        1 => Just(Op::AddTierIndex),
        1 => (index(), spec()).prop_map(|(i, s)| Op::Index(i, s)),
        2 => (index(), value()).prop_map(|(i, v)| Op::ByIndex(i, v)),
        1 => (index(), value()).prop_map(|(i, v)| Op::IndexKeys(i, v)),
        1 => index().prop_map(Op::ListValues),
    ]
}

/// An object type under test and how to build one from a spec.
trait Subject: Object + Serialize + DeserializeOwned + PartialEq + Debug + Clone {
    fn build(spec: &Spec, version: u64) -> Self;
}

fn labels(spec: &Spec) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    if let Some(app) = spec.app {
        labels.insert("app".to_owned(), app.to_owned());
    }
    if spec.tier {
        labels.insert("tier".to_owned(), "fe".to_owned());
    }
    labels
}

impl Subject for JsonObject {
    fn build(spec: &Spec, version: u64) -> Self {
        let mut o = JsonObject::new(spec.ns, spec.name).with_resource_version(version.to_string());
        for (k, v) in labels(spec) {
            o = o.with_label(k, v);
        }
        o.with_field(
            "spec",
            serde_json::json!({"replicas": spec.payload % 5, "payload": "p".repeat(spec.payload as usize % 40), "nested": {"n": spec.payload}}),
        )
    }
}

impl Subject for ConfigMap {
    fn build(spec: &Spec, version: u64) -> Self {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(spec.name.to_owned());
        cm.metadata.namespace = spec.ns.map(str::to_owned);
        cm.metadata.resource_version = Some(version.to_string());
        let labels = labels(spec);
        cm.metadata.labels = (!labels.is_empty()).then_some(labels);
        if !spec.payload.is_multiple_of(3) {
            cm.data = Some(BTreeMap::from([
                (
                    "config.yaml".to_owned(),
                    format!("workers: {}\n", spec.payload),
                ),
                ("mode".to_owned(), "x".repeat(spec.payload as usize % 17)),
            ]));
        }
        cm
    }
}

impl Subject for Pod {
    fn build(spec: &Spec, version: u64) -> Self {
        // A realistic pod (about 6 KB of JSON), moved to the spec's place and labels.
        let mut pod = pods::pod(u64::from(spec.payload % 4), usize::from(spec.payload));
        pod.metadata.name = Some(spec.name.to_owned());
        pod.metadata.namespace = spec.ns.map(str::to_owned);
        pod.metadata.resource_version = Some(version.to_string());
        let mut all = pod.metadata.labels.take().unwrap_or_default();
        all.remove("app");
        all.remove("tier");
        all.extend(labels(spec));
        pod.metadata.labels = Some(all);
        pod
    }
}

fn indexers<K: Object>() -> Indexers<K> {
    Indexers::from([
        (NAMESPACE_INDEX.to_owned(), namespace_index_func()),
        ("app".to_owned(), label_index_func("app")),
        ("labels".to_owned(), labels_index_func()),
    ])
}

fn key(spec: &Spec) -> String {
    key_of(&JsonObject::new(spec.ns, spec.name))
        .unwrap()
        .to_string()
}

/// Objects by key, for comparing results whose order is unspecified.
fn by_key<K: Object + Clone>(objects: Vec<Arc<K>>) -> BTreeMap<String, K> {
    let mut map = BTreeMap::new();
    for o in objects {
        assert!(
            map.insert(key_of(&*o).unwrap().to_string(), (*o).clone())
                .is_none(),
            "an object reported twice"
        );
    }
    map
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort_unstable();
    v
}

fn same<T: PartialEq + Debug>(what: &str, compact: T, reference: T) -> Result<(), String> {
    if compact == reference {
        Ok(())
    } else {
        Err(format!(
            "{what}: compact store {compact:?}, indexed store {reference:?}"
        ))
    }
}

fn deref<K: Clone>(o: Option<Arc<K>>) -> Option<K> {
    o.map(|o| (*o).clone())
}

/// Everything observable must be equal.
fn compare_state<K: Subject>(
    compact: &CompactStore<K>,
    reference: &IndexedStore<K>,
) -> Result<(), String> {
    same("list", by_key(compact.list()), by_key(reference.list()))?;
    same(
        "list_keys",
        sorted(compact.list_keys()),
        sorted(reference.list_keys()),
    )?;
    same("len", compact.len(), reference.len())?;
    same(
        "index_names",
        sorted(compact.index_names()),
        sorted(reference.index_names()),
    )?;
    for name in reference.index_names() {
        let values = sorted(reference.list_index_func_values(&name).unwrap());
        same(
            &format!("list_index_func_values({name})"),
            sorted(compact.list_index_func_values(&name).unwrap()),
            values.clone(),
        )?;
        for value in values {
            same(
                &format!("by_index({name}, {value})"),
                by_key(compact.by_index(&name, &value).unwrap()),
                by_key(reference.by_index(&name, &value).unwrap()),
            )?;
        }
    }
    for key in reference.list_keys() {
        same(
            &format!("get_by_key({key})"),
            deref(compact.get_by_key(key.as_str())),
            deref(reference.get_by_key(key.as_str())),
        )?;
    }
    Ok(())
}

fn step<K: Subject>(
    compact: &CompactStore<K>,
    reference: &IndexedStore<K>,
    version: &mut u64,
    op: &Op,
) -> Result<(), String> {
    let mut build = |spec: &Spec| {
        *version += 1;
        Arc::new(K::build(spec, *version))
    };
    match op {
        Op::Add(spec) => {
            let o = build(spec);
            same(
                "add",
                deref(compact.add(o.clone()).unwrap()),
                deref(reference.add(o).unwrap()),
            )
        }
        Op::Update(spec) => {
            let o = build(spec);
            same(
                "update",
                deref(compact.update(o.clone()).unwrap()),
                deref(reference.update(o).unwrap()),
            )
        }
        Op::Delete(spec) => {
            let o = build(spec);
            same(
                "delete",
                deref(compact.delete(&o).unwrap()),
                deref(reference.delete(&o).unwrap()),
            )
        }
        Op::DeleteByKey(spec) => same(
            "delete_by_key",
            deref(compact.delete_by_key(&key(spec))),
            deref(reference.delete_by_key(&key(spec))),
        ),
        Op::Get(spec) => {
            let probe = build(spec);
            same(
                "get",
                deref(compact.get(&probe).unwrap()),
                deref(reference.get(&probe).unwrap()),
            )
        }
        Op::Replace(specs) => {
            let objects: Vec<Arc<K>> = specs.iter().map(&mut build).collect();
            compact.replace(objects.clone(), "1").unwrap();
            reference.replace(objects, "1").unwrap();
            Ok(())
        }
        Op::AddTierIndex => {
            let tier = || Indexers::from([("tier".to_owned(), label_index_func::<K>("tier"))]);
            same(
                "add_indexers",
                format!("{:?}", compact.add_indexers(tier())),
                format!("{:?}", reference.add_indexers(tier())),
            )
        }
        Op::Index(name, spec) => {
            let probe = build(spec);
            same(
                &format!("index({name})"),
                compact
                    .index(name, &probe)
                    .map(by_key)
                    .map_err(|e| e.to_string()),
                reference
                    .index(name, &probe)
                    .map(by_key)
                    .map_err(|e| e.to_string()),
            )
        }
        Op::ByIndex(name, value) => same(
            &format!("by_index({name}, {value})"),
            compact
                .by_index(name, value)
                .map(by_key)
                .map_err(|e| e.to_string()),
            reference
                .by_index(name, value)
                .map(by_key)
                .map_err(|e| e.to_string()),
        ),
        Op::IndexKeys(name, value) => same(
            &format!("index_keys({name}, {value})"),
            compact
                .index_keys(name, value)
                .map(sorted)
                .map_err(|e| e.to_string()),
            reference
                .index_keys(name, value)
                .map(sorted)
                .map_err(|e| e.to_string()),
        ),
        Op::ListValues(name) => same(
            &format!("list_index_func_values({name})"),
            compact
                .list_index_func_values(name)
                .map(sorted)
                .map_err(|e| e.to_string()),
            reference
                .list_index_func_values(name)
                .map(sorted)
                .map_err(|e| e.to_string()),
        ),
    }
}

/// The compact store configurations every sequence runs against.
fn configurations<K: Subject>() -> Vec<(&'static str, CompactStore<K>)> {
    let early = || {
        Codec::ZstdDictionary(
            ZstdDictionary::default()
                .training_objects(12)
                .dictionary_size(4 << 10),
        )
    };
    vec![
        (
            "no cache, dictionary trained after 12 objects",
            CompactStore::builder()
                .indexers(indexers())
                .cache_capacity(0)
                .codec(early())
                .round_trip_check(RoundTripCheck::Always)
                .build(),
        ),
        (
            "cache of 2, dictionary trained after 12 objects",
            CompactStore::builder()
                .indexers(indexers())
                .cache_capacity(2)
                .codec(early())
                .build(),
        ),
        (
            "no cache, MessagePack, dictionary trained after 12 objects",
            CompactStore::builder()
                .indexers(indexers())
                .cache_capacity(0)
                .codec(Codec::MessagePackZstd(
                    ZstdDictionary::default()
                        .training_objects(12)
                        .dictionary_size(4 << 10),
                ))
                .round_trip_check(RoundTripCheck::Always)
                .build(),
        ),
        (
            "cache of 2, MessagePack",
            CompactStore::builder()
                .indexers(indexers())
                .cache_capacity(2)
                .codec(Codec::MessagePack)
                .build(),
        ),
        (
            "default cache, JSON",
            CompactStore::builder()
                .indexers(indexers())
                .codec(Codec::Json)
                .build(),
        ),
    ]
}

fn check<K: Subject>(cases: u32) {
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let trained = std::sync::atomic::AtomicUsize::new(0);
    let result = runner.run(&prop::collection::vec(op(), 1..40), |ops| {
        for (name, compact) in configurations::<K>() {
            let reference = IndexedStore::with_indexers(indexers());
            let mut version = 0;
            for (i, op) in ops.iter().enumerate() {
                step(&compact, &reference, &mut version, op)
                    .and_then(|()| compare_state(&compact, &reference))
                    .map_err(|e| TestCaseError::fail(format!("[{name}] step {i} ({op:?}): {e}")))?;
            }
            compact.finish_training();
            match compact.stats().dictionary {
                DictionaryState::Trained { .. } => {
                    trained.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                DictionaryState::Failed { reason } => {
                    eprintln!("[{name}] training failed: {reason}")
                }
                _ => {}
            }
        }
        Ok(())
    });
    if let Err(err) = result {
        panic!("compact store differs from IndexedStore: {err}");
    }
    // The sequences crossed dictionary training, not only the JSON phase before it.
    assert!(trained.into_inner() > 0, "no sequence trained a dictionary");
}

#[test]
fn dynamic_objects_equal_the_indexed_store() {
    check::<JsonObject>(64);
}

#[test]
fn config_maps_equal_the_indexed_store() {
    check::<ConfigMap>(40);
}

#[test]
fn realistic_pods_equal_the_indexed_store() {
    check::<Pod>(16);
}
