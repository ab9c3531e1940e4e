//! `CompactStore`'s own rules: dictionary training, what it holds, the cache, round-trip
//! refusals, the raw-bytes entry point, and how a stored object that does not decode surfaces.
#![cfg(feature = "compact")]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use informer_core::{
    Indexer, KnownObjects, NAMESPACE_INDEX, Object, Store, StoreError, key_of, label_index_func,
    namespace_indexers,
};
use informer_store::{
    Codec, CompactError, CompactStore, DEFAULT_CACHE_CAPACITY, DecodeError, DictionaryState,
    RoundTripCheck, ZstdDictionary,
};
use informer_testing::{JsonObject, delegate_object};
use k8s_openapi::api::core::v1::Pod;
use serde::{Deserialize, Deserializer, Serialize};

use crate::pods;

fn obj(ns: &str, name: &str, app: &str) -> Arc<JsonObject> {
    Arc::new(
        JsonObject::new(Some(ns), name)
            .with_label("app", app)
            .with_field(
                "spec",
                serde_json::json!({"replicas": 3, "image": format!("{app}:1.0")}),
            ),
    )
}

fn small_dictionary(objects: usize) -> Codec {
    Codec::ZstdDictionary(
        ZstdDictionary::default()
            .training_objects(objects)
            .dictionary_size(4 << 10),
    )
}

/// The `CompactError` inside a `StoreError::Backend`.
/// A store of JSON (no dictionary) whose cache holds `cached` decoded objects.
fn json_store(cached: usize) -> CompactStore<JsonObject> {
    CompactStore::builder()
        .codec(Codec::Json)
        .cache_capacity(cached)
        .build()
}

fn compact_error(err: &StoreError) -> &CompactError {
    match err {
        StoreError::Backend { source, .. } => source
            .downcast_ref::<CompactError>()
            .expect("a compact store error"),
        other => panic!("expected a backend error, got {other:?}"),
    }
}

#[test]
fn trains_once_then_compresses_what_was_stored_before() {
    let store = CompactStore::builder()
        .indexers(namespace_indexers())
        .codec(small_dictionary(40))
        .cache_capacity(0)
        .build();
    for i in 0..39 {
        store
            .add(obj(&format!("ns-{}", i % 3), &format!("o-{i}"), "web"))
            .unwrap();
    }
    let before = store.stats();
    assert!(matches!(
        before.dictionary,
        DictionaryState::Collecting { objects: 39, .. }
    ));
    assert_eq!(
        before.encoded_bytes, before.serialized_bytes,
        "JSON until trained"
    );

    store.add(obj("ns-0", "o-39", "web")).unwrap();
    // The 40th object started the training on a thread of its own; the store serves reads
    // meanwhile (its objects still uncompressed, or already compressed if it has finished).
    let key = "ns-0/o-39";
    assert_eq!(*store.get_by_key(key).unwrap(), *obj("ns-0", "o-39", "web"));
    store.finish_training();
    let after = store.stats();
    assert!(
        matches!(after.dictionary, DictionaryState::Trained { bytes } if bytes > 0),
        "{after:?}"
    );
    assert!(
        after.encoded_bytes * 3 < after.serialized_bytes,
        "every object compressed, those stored before training too: {after:?}"
    );
    // Everything still decodes to what was stored.
    for i in 0..40 {
        let key = format!("ns-{}/o-{i}", i % 3);
        assert_eq!(
            *store.get_by_key(&key).unwrap(),
            *obj(&format!("ns-{}", i % 3), &format!("o-{i}"), "web")
        );
    }
    // Later objects are compressed as they come.
    store.add(obj("ns-1", "late", "db")).unwrap();
    assert_eq!(
        *store.get_by_key("ns-1/late").unwrap(),
        *obj("ns-1", "late", "db")
    );
    assert!(store.stats().encoded_bytes * 3 < store.stats().serialized_bytes);
}

#[test]
fn replace_trains_on_its_own_objects() {
    let store: CompactStore<JsonObject> = CompactStore::builder()
        .indexers(namespace_indexers())
        .codec(small_dictionary(30))
        .build();
    let objects: Vec<_> = (0..200)
        .map(|i| obj("ns", &format!("o-{i}"), "web"))
        .collect();
    store.replace(objects.clone(), "1").unwrap();
    store.finish_training();
    let stats = store.stats();
    assert!(
        matches!(stats.dictionary, DictionaryState::Trained { .. }),
        "{stats:?}"
    );
    assert!(
        stats.encoded_bytes * 3 < stats.serialized_bytes,
        "{stats:?}"
    );
    let mut listed = store.list();
    listed.sort_by(|a, b| a.object_name().cmp(&b.object_name()));
    let mut expected = objects;
    expected.sort_by(|a, b| a.object_name().cmp(&b.object_name()));
    assert_eq!(listed, expected);
}

#[test]
fn training_that_fails_keeps_json() {
    // Two tiny samples are not enough to train a dictionary on.
    let store: CompactStore<JsonObject> =
        CompactStore::builder().codec(small_dictionary(2)).build();
    store.add(Arc::new(JsonObject::new(None, "a"))).unwrap();
    store.add(Arc::new(JsonObject::new(None, "b"))).unwrap();
    store.finish_training();
    let stats = store.stats();
    assert!(
        matches!(stats.dictionary, DictionaryState::Failed { .. }),
        "{stats:?}"
    );
    assert_eq!(stats.encoded_bytes, stats.serialized_bytes);
    store.add(Arc::new(JsonObject::new(None, "c"))).unwrap();
    assert_eq!(store.len(), 3);
    assert_eq!(store.get_by_key("c").unwrap().object_name(), Some("c"));
}

/// Realistic pods: what the store holds per pod, against the JSON they stand for. The
/// bound is loose (seed pods resemble each other more than a real cluster's do); the bench
/// prints the figures.
#[test]
fn memory_follows_the_encoded_bytes() {
    const PODS: usize = 2_000;
    let store: CompactStore<Pod> = CompactStore::builder()
        .indexers(namespace_indexers())
        .cache_capacity(16)
        .build();
    for i in 0..PODS {
        store.insert(Arc::new(pods::pod(7, i))).unwrap();
    }
    store.finish_training();
    let stats = store.stats();
    assert_eq!(stats.objects, PODS);
    assert!(matches!(stats.dictionary, DictionaryState::Trained { .. }));
    let json_per_pod = stats.serialized_bytes / PODS as u64;
    let encoded_per_pod = stats.encoded_bytes / PODS as u64;
    let memory_per_pod = stats.memory_bytes / PODS as u64;
    assert!((5_000..9_000).contains(&json_per_pod), "{stats:?}");
    assert!(encoded_per_pod < 1_000, "{stats:?}");
    // Keys, table, indices, resourceVersions and the dictionary (amortized) on top.
    assert!(memory_per_pod < 1_500, "{stats:?}");
    assert!(stats.cached_objects <= 16);
    assert_eq!(store.memory_bytes(), stats.memory_bytes);

    // Deleting gives the bytes back in the accounting.
    for i in 0..PODS {
        assert!(store.remove(&format!("ns-{}/pod-{i}", i % pods::NAMESPACES)));
    }
    let empty = store.stats();
    assert_eq!(
        (empty.objects, empty.encoded_bytes, empty.serialized_bytes),
        (0, 0, 0)
    );
}

#[test]
fn typed_pods_round_trip_through_every_path() {
    for codec in [
        Codec::ZstdDictionary(ZstdDictionary::default().training_objects(20)),
        Codec::MessagePackZstd(ZstdDictionary::default().training_objects(20)),
        Codec::MessagePack,
        Codec::Json,
    ] {
        typed_pods_round_trip_with(codec);
    }
}

fn typed_pods_round_trip_with(codec: Codec) {
    let store: CompactStore<Pod> = CompactStore::builder()
        .indexers(namespace_indexers())
        .indexer("app", label_index_func("app"))
        .codec(codec)
        .round_trip_check(RoundTripCheck::Always)
        .cache_capacity(0)
        .build();
    let pods: Vec<Arc<Pod>> = (0..60).map(|i| Arc::new(pods::pod(3, i))).collect();
    for p in &pods {
        store.add(p.clone()).unwrap();
    }
    for p in &pods {
        let key = format!(
            "{}/{}",
            p.object_namespace().unwrap(),
            p.object_name().unwrap()
        );
        assert_eq!(*store.get_by_key(&key).unwrap(), **p);
        assert_eq!(
            store.resource_version_of(&key).as_deref(),
            p.object_resource_version()
        );
    }
    let in_ns: usize = (0..pods::NAMESPACES)
        .map(|n| {
            store
                .by_index(NAMESPACE_INDEX, &format!("ns-{n}"))
                .unwrap()
                .len()
        })
        .sum();
    assert_eq!(in_ns, 60);
}

#[test]
fn cache_serves_the_written_arc_and_never_an_old_version() {
    let store = CompactStore::<JsonObject>::new();
    let v1 = obj("ns", "a", "web");
    assert!(store.add(v1.clone()).unwrap().is_none());
    // The object just written is cached: lookups hand out that very Arc.
    assert!(Arc::ptr_eq(&store.get_by_key("ns/a").unwrap(), &v1));

    let v2 = obj("ns", "a", "db");
    let previous = store.update(v2.clone()).unwrap().unwrap();
    assert!(
        Arc::ptr_eq(&previous, &v1),
        "the previous object came from the cache"
    );
    assert!(Arc::ptr_eq(&store.get_by_key("ns/a").unwrap(), &v2));

    // Delete drops it from the cache; a new namesake is not confused with it.
    let removed = store.delete_by_key("ns/a").unwrap();
    assert!(Arc::ptr_eq(&removed, &v2));
    assert!(store.get_by_key("ns/a").is_none());
    assert_eq!(store.stats().cached_objects, 0);
    let v3 = obj("ns", "a", "api");
    store.add(v3.clone()).unwrap();
    assert!(Arc::ptr_eq(&store.get_by_key("ns/a").unwrap(), &v3));

    // Replace empties the cache; the objects given wait on probation, as written ones do.
    let r = obj("ns", "a", "replaced");
    store
        .replace(vec![r.clone(), obj("ns", "b", "x")], "2")
        .unwrap();
    assert!(Arc::ptr_eq(&store.get_by_key("ns/a").unwrap(), &r));
    let stats = store.stats();
    assert_eq!(stats.cached_objects, 0, "{stats:?}");
    assert_eq!(stats.waiting_objects, 2, "{stats:?}");
}

/// Written objects do not fill the cache, even while it has room: an object nobody read would
/// hold its decoded size for nothing (a compact informer's first list kept 1,024 decoded pods,
/// about 45 MB). They wait on probation; reads fill the cache, and a key read is cached when
/// written.
#[test]
fn writes_leave_an_empty_cache_empty_and_reads_fill_it() {
    let store = json_store(64);
    for i in 0..200 {
        store.add(obj("ns", &format!("o-{i}"), "web")).unwrap();
    }
    let stats = store.stats();
    assert_eq!(stats.cached_objects, 0, "{stats:?}");
    assert_eq!(
        stats.waiting_objects, 16,
        "one shard's probation, a quarter of 64: {stats:?}"
    );
    let read = store.get_by_key("ns/o-3").unwrap();
    assert_eq!(store.stats().cached_objects, 1, "a read found room");
    assert!(Arc::ptr_eq(&store.get_by_key("ns/o-3").unwrap(), &read));
    let v2 = obj("ns", "o-3", "db");
    store.update(v2.clone()).unwrap();
    assert!(Arc::ptr_eq(&store.shared_by_key("ns/o-3").unwrap(), &v2));
    assert_eq!(
        store.stats().cached_objects,
        1,
        "its new version replaced it"
    );
}

#[test]
fn cache_stays_within_its_capacity_and_zero_disables_it() {
    let store: CompactStore<JsonObject> = CompactStore::builder().cache_capacity(8).build();
    for i in 0..100 {
        store.add(obj("ns", &format!("o-{i}"), "web")).unwrap();
        store.get_by_key(&format!("ns/o-{}", i / 2)).unwrap();
    }
    let stats = store.stats();
    assert!(stats.cached_objects <= 8, "{stats:?}");
    assert_eq!(stats.cache_capacity, 8);

    let uncached: CompactStore<JsonObject> = CompactStore::builder().cache_capacity(0).build();
    let a = obj("ns", "a", "web");
    uncached.add(a.clone()).unwrap();
    let first = uncached.get_by_key("ns/a").unwrap();
    let second = uncached.get_by_key("ns/a").unwrap();
    assert_eq!(*first, *a, "equal to what was stored");
    assert!(!Arc::ptr_eq(&first, &a) && !Arc::ptr_eq(&first, &second));
    assert_eq!(uncached.stats().cached_objects, 0);
    assert_eq!(
        CompactStore::<JsonObject>::new().stats().cache_capacity,
        DEFAULT_CACHE_CAPACITY
    );
}

#[test]
fn scans_do_not_fill_the_cache() {
    let store: CompactStore<JsonObject> = CompactStore::builder()
        .indexers(namespace_indexers())
        .cache_capacity(4)
        .build();
    let objects: Vec<_> = (0..50)
        .map(|i| obj("ns", &format!("o-{i}"), "web"))
        .collect();
    store.replace(objects, "1").unwrap();
    let hot = store.get_by_key("ns/o-0").unwrap();
    assert_eq!(store.by_index(NAMESPACE_INDEX, "ns").unwrap().len(), 50);
    assert_eq!(store.list().len(), 50);
    assert!(
        Arc::ptr_eq(&store.get_by_key("ns/o-0").unwrap(), &hot),
        "a listing did not evict the hot object"
    );
}

/// Neither a read of a cold key nor a write of a key nobody read lately evicts a hot object
/// (freeing an object decoded long ago is most of such an operation's cost); a key's second
/// miss caches it.
#[test]
fn a_cold_read_leaves_the_hot_objects_cached_until_its_second_miss() {
    let store = json_store(2);
    let written: Vec<_> = (0..10)
        .map(|i| obj("ns", &format!("o-{i}"), "web"))
        .collect();
    for o in &written {
        store.add(Arc::clone(o)).unwrap();
    }
    // The writes waited on probation, each displacing the one before; the first two reads
    // found room.
    assert_eq!(store.stats().cached_objects, 0);
    let hot: Vec<_> = (0..2)
        .map(|i| store.get_by_key(&format!("ns/o-{i}")).unwrap())
        .collect();
    let hot_still_cached = || {
        hot.iter().all(|o| {
            store
                .shared_by_key(key_of(o.as_ref()).unwrap().as_str())
                .is_some_and(|cached| Arc::ptr_eq(&cached, o))
        })
    };
    assert!(hot_still_cached());
    assert!(Arc::ptr_eq(
        &store.shared_by_key("ns/o-9").unwrap(),
        &written[9]
    ));
    assert!(store.shared_by_key("ns/o-8").is_none());
    let cold = store.get_by_key("ns/o-5").unwrap();
    assert_eq!(*cold, *written[5]);
    assert!(hot_still_cached(), "a first miss evicts nothing");
    let stats = store.stats();
    assert_eq!(stats.cached_objects, 2);
    assert_eq!(
        stats.waiting_objects, 2,
        "o-9 on probation, o-5 in the read slot: {stats:?}"
    );
    // Read again at once (what an informer's write does after its read): not decoded again.
    assert!(Arc::ptr_eq(&store.get_by_key("ns/o-5").unwrap(), &cold));
    // Another cold read takes its place; o-5's second miss caches it.
    store.get_by_key("ns/o-6").unwrap();
    let admitted = store.get_by_key("ns/o-5").unwrap();
    assert!(!Arc::ptr_eq(&admitted, &cold), "decoded again");
    assert!(!hot_still_cached(), "one hot object made room");
    assert!(Arc::ptr_eq(&store.get_by_key("ns/o-5").unwrap(), &admitted));
    assert!(Arc::ptr_eq(
        &store.shared_by_key("ns/o-5").unwrap(),
        &admitted
    ));
    let stats = store.stats();
    assert_eq!(stats.cached_objects, 2);
    assert_eq!(
        stats.waiting_objects, 2,
        "o-9 on probation, o-6 in the read slot: {stats:?}"
    );
}

/// A `JsonObject` that counts how often it is decoded.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
struct Counted(JsonObject);

static DECODES: AtomicUsize = AtomicUsize::new(0);

impl<'de> Deserialize<'de> for Counted {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        DECODES.fetch_add(1, Ordering::SeqCst);
        JsonObject::deserialize(d).map(Counted)
    }
}

delegate_object!(Counted);

fn counted(name: &str, rv: &str) -> Arc<Counted> {
    Arc::new(Counted(
        JsonObject::new(Some("ns"), name).with_resource_version(rv),
    ))
}

/// What an informer does per event: read the cached object, then write the new one. At most
/// one decode per event, and none while the key stays in the cache.
#[test]
fn one_event_costs_at_most_one_decode() {
    let store: CompactStore<Counted> = CompactStore::builder()
        .codec(Codec::Json)
        .cache_capacity(2)
        .round_trip_check(RoundTripCheck::Never)
        .build();
    for i in 0..10 {
        store.add(counted(&format!("o-{i}"), "1")).unwrap();
    }
    let decodes = || DECODES.load(Ordering::SeqCst);
    // A cold key (the cache holds the first two written, the last waits on probation): the
    // read decodes once, the write reuses it.
    let start = decodes();
    let old = store.get_by_key("ns/o-3").unwrap();
    let previous = store.update(counted("o-3", "2")).unwrap().unwrap();
    assert!(Arc::ptr_eq(&old, &previous));
    assert_eq!(decodes() - start, 1);
    // A hot key (just written after a read): no decode at all.
    let start = decodes();
    store.get_by_key("ns/o-3").unwrap();
    store.update(counted("o-3", "3")).unwrap();
    assert_eq!(decodes(), start);
    // Writes that do not want the previous object never decode it.
    let start = decodes();
    store.insert(counted("o-5", "2")).unwrap();
    assert!(store.remove("ns/o-6"));
    assert_eq!(decodes(), start);
    // What the queues and the reflector ask of a cold key decodes nothing: whether it is
    // held, which version, and the shared object (none: it would have to be decoded).
    let start = decodes();
    assert!(store.contains_key("ns/o-7"));
    assert!(!store.contains_key("ns/o-6"));
    assert_eq!(store.resource_version_of("ns/o-7").as_deref(), Some("1"));
    assert_eq!(store.resource_version_of("ns/o-6"), None);
    assert!(store.shared_by_key("ns/o-7").is_none());
    assert_eq!(decodes(), start);
    // A key just written is shared (cached or on probation): the very Arc written.
    let hot = counted("o-8", "2");
    store.add(Arc::clone(&hot)).unwrap();
    assert!(Arc::ptr_eq(&store.shared_by_key("ns/o-8").unwrap(), &hot));
}

/// Serializes `secret` but never deserializes it back: what a `#[serde(skip_deserializing)]`
/// field does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Lossy {
    metadata: informer_testing::JsonMeta,
    #[serde(skip_deserializing)]
    secret: String,
}

impl Object for Lossy {
    fn object_name(&self) -> Option<&str> {
        self.metadata.name.as_deref()
    }
    fn object_namespace(&self) -> Option<&str> {
        self.metadata.namespace.as_deref()
    }
    fn object_uid(&self) -> Option<&str> {
        None
    }
    fn object_resource_version(&self) -> Option<&str> {
        None
    }
    fn object_labels(&self) -> &BTreeMap<String, String> {
        &self.metadata.labels
    }
    fn object_annotations(&self) -> &BTreeMap<String, String> {
        &self.metadata.annotations
    }
}

fn lossy(name: &str, secret: &str) -> Arc<Lossy> {
    Arc::new(Lossy {
        metadata: informer_testing::JsonMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        secret: secret.to_owned(),
    })
}

#[test]
fn a_type_that_does_not_round_trip_is_refused_at_add() {
    let store = CompactStore::<Lossy>::new();
    let err = store.add(lossy("a", "s3cr3t")).unwrap_err();
    assert!(
        matches!(compact_error(&err), CompactError::NotRoundTripping { key, .. } if key.as_str() == "a"),
        "{err:?}"
    );
    assert!(err.to_string().contains("storing a"), "{err}");
    assert_eq!(store.len(), 0, "nothing stored");
    let err = store.replace(vec![lossy("b", "x")], "1").unwrap_err();
    assert!(matches!(
        compact_error(&err),
        CompactError::NotRoundTripping { .. }
    ));
    // An object whose lossy field is empty does round-trip.
    store.add(lossy("c", "")).unwrap();
    assert_eq!(store.len(), 1);
}

/// With the check off, an object that does not decode surfaces loudly: an error where the
/// trait returns `Result`, a panic naming the key where it cannot.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct Fragile(JsonObject);

impl<'de> Deserialize<'de> for Fragile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let inner = JsonObject::deserialize(d)?;
        if inner.object_labels().contains_key("poison") {
            return Err(serde::de::Error::custom("poisoned"));
        }
        Ok(Fragile(inner))
    }
}
delegate_object!(Fragile);

#[test]
fn a_stored_object_that_does_not_decode_is_an_error_or_a_panic_never_absent() {
    let store: CompactStore<Fragile> = CompactStore::builder()
        .indexers(namespace_indexers())
        .cache_capacity(0)
        .round_trip_check(RoundTripCheck::Never)
        .build();
    let poisoned = Arc::new(Fragile(
        JsonObject::new(Some("ns"), "bad").with_label("poison", "1"),
    ));
    store.add(poisoned.clone()).unwrap();
    assert!(matches!(
        store.try_get_by_key("ns/bad"),
        Err(CompactError::Decode { key, source: DecodeError::Json(_) }) if key.as_str() == "ns/bad"
    ));
    let err = store.by_index(NAMESPACE_INDEX, "ns").unwrap_err();
    assert!(
        matches!(compact_error(&err), CompactError::Decode { .. }),
        "{err:?}"
    );
    assert!(store.get(&poisoned).is_err());
    assert!(store.delete(&poisoned).is_err());
    assert_eq!(store.len(), 1, "a failed delete changes nothing");
    let panic =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| store.get_by_key("ns/bad")))
            .unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(
        message.contains("ns/bad") && message.contains("poisoned"),
        "{message}"
    );
    // It can still be removed without decoding.
    assert!(store.remove("ns/bad"));
    assert!(store.is_empty());
}

/// Scans large enough to decode on several threads return what one thread returns, cached
/// objects included (sorted: two stores file the same keys in different hash orders).
#[test]
fn scans_decoded_on_several_threads_equal_one_thread() {
    let build = |threads: usize| {
        let store: CompactStore<JsonObject> = CompactStore::builder()
            .indexers(namespace_indexers())
            .cache_capacity(8)
            .decode_threads(threads)
            .codec(small_dictionary(50))
            .build();
        for i in 0..700 {
            store
                .add(obj(&format!("ns-{}", i % 2), &format!("o-{i}"), "web"))
                .unwrap();
        }
        store
    };
    let (one, three) = (build(1), build(3));
    let sorted = |mut v: Vec<Arc<JsonObject>>| {
        v.sort_by(|x, y| x.object_name().cmp(&y.object_name()));
        v
    };
    for ns in ["ns-0", "ns-1"] {
        let a = sorted(one.by_index(NAMESPACE_INDEX, ns).unwrap());
        let b = sorted(three.by_index(NAMESPACE_INDEX, ns).unwrap());
        assert_eq!(a.len(), 350);
        assert_eq!(a, b, "{ns}");
        // The keys the index lists, in its order, are the objects' keys in the same order.
        let keys = three.index_keys(NAMESPACE_INDEX, ns).unwrap();
        let listed = three.by_index(NAMESPACE_INDEX, ns).unwrap();
        let listed_keys: Vec<String> = listed
            .iter()
            .map(|o| format!("{ns}/{}", o.object_name().unwrap()))
            .collect();
        let keys: Vec<String> = keys.iter().map(|k| k.as_str().to_owned()).collect();
        assert_eq!(
            listed_keys, keys,
            "{ns}: decoded on several threads, in index order"
        );
    }
    let (a, b) = (sorted(one.list()), sorted(three.list()));
    assert_eq!(a.len(), 700);
    assert_eq!(a, b);
}

/// A MessagePack store encodes the object itself: JSON handed in is not kept (so the store
/// does not ask the informer for it), yet everything reads back equal.
#[test]
fn message_pack_encodes_the_object_whatever_json_is_given() {
    let store: CompactStore<Pod> = CompactStore::builder()
        .codec(Codec::MessagePack)
        .round_trip_check(RoundTripCheck::Always)
        .cache_capacity(0)
        .build();
    assert!(!store.wants_raw());
    assert!(
        CompactStore::<Pod>::builder()
            .codec(Codec::Json)
            .build()
            .wants_raw()
    );
    let json = serde_json::to_vec(&pods::pod_json(1, 0)).unwrap();
    let pod: Arc<Pod> = Arc::new(serde_json::from_slice(&json).unwrap());
    store.add_encoded(pod.clone(), &json).unwrap();
    let stats = store.stats();
    assert!(
        stats.serialized_bytes < json.len() as u64,
        "MessagePack, smaller than the JSON: {stats:?}"
    );
    assert_eq!(stats.encoded_bytes, stats.serialized_bytes);
    let stored = store.try_get_by_key("ns-0/pod-0").unwrap().unwrap();
    assert!(!Arc::ptr_eq(&stored, &pod), "decoded: no cache");
    assert_eq!(*stored, *pod);
    // Text that is not UTF-8 is still refused, and nothing changes.
    let err = store.add_encoded(pod.clone(), &[0xff, 0xfe]).unwrap_err();
    assert!(
        matches!(compact_error(&err), CompactError::EncodedMismatch { .. }),
        "{err:?}"
    );
    assert_eq!(store.len(), 1);
}

#[test]
fn add_encoded_keeps_the_given_json() {
    let store: CompactStore<Pod> = CompactStore::builder()
        .codec(Codec::Json)
        .round_trip_check(RoundTripCheck::Always)
        .build();
    let mut json = pods::pod_json(1, 0);
    // A field the typed object does not know: kept in the bytes, ignored on decoding.
    json["status"]["futureField"] = serde_json::json!({"x": 1});
    let bytes = serde_json::to_vec(&json).unwrap();
    let pod: Pod = serde_json::from_slice(&bytes).unwrap();
    let pod = Arc::new(pod);
    assert!(store.add_encoded(pod.clone(), &bytes).unwrap().is_none());
    assert_eq!(store.stats().serialized_bytes, bytes.len() as u64);
    store.remove("ns-0/pod-0");
    store.insert_encoded(pod.clone(), &bytes).unwrap();
    let stored = store.try_get_by_key("ns-0/pod-0").unwrap().unwrap();
    assert!(Arc::ptr_eq(&stored, &pod), "cached: the given Arc");

    // Bytes of another object are refused, and nothing changes.
    let other = serde_json::to_vec(&pods::pod_json(1, 1)).unwrap();
    let err = store.add_encoded(pod.clone(), &other).unwrap_err();
    assert!(
        matches!(compact_error(&err), CompactError::EncodedMismatch { .. }),
        "{err:?}"
    );
    assert!(Arc::ptr_eq(&store.get_by_key("ns-0/pod-0").unwrap(), &pod));
    let err = store.add_encoded(pod.clone(), b"{not json").unwrap_err();
    assert!(
        matches!(compact_error(&err), CompactError::EncodedMismatch { .. }),
        "{err:?}"
    );

    // Bytes that are not UTF-8 are refused on every write, sampled or not.
    let unchecked: CompactStore<Pod> = CompactStore::builder()
        .round_trip_check(RoundTripCheck::Never)
        .build();
    let mut latin1 = bytes.clone();
    latin1.push(0xff);
    let err = unchecked.insert_encoded(pod, &latin1).unwrap_err();
    assert!(
        matches!(compact_error(&err), CompactError::EncodedMismatch { detail, .. } if detail.contains("UTF-8")),
        "{err:?}"
    );
    assert!(unchecked.is_empty());
}

#[test]
fn debug_and_builder() {
    let store: CompactStore<JsonObject> = CompactStore::builder()
        .indexer("app", label_index_func("app"))
        .build();
    store.add(obj("ns", "a", "web")).unwrap();
    let text = format!("{store:?}");
    assert!(text.contains("len: 1") && text.contains("app"), "{text}");
    let builder = CompactStore::<JsonObject>::builder().cache_capacity(3);
    assert!(format!("{builder:?}").contains("cache_capacity: 3"));
    assert!(store.contains_key("ns/a"));
    assert!(!store.contains_key("ns/b"));
}

/// A `JsonObject` whose decoding runs a hook: lets a test write to the store between the
/// moment a write decodes the previous object (outside the lock) and the moment it takes the
/// lock.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
struct Hooked(JsonObject);

type Hook = Box<dyn Fn() + Send + Sync>;

static DECODE_HOOK: std::sync::Mutex<Option<Hook>> = std::sync::Mutex::new(None);

/// Held by every test that sets `DECODE_HOOK`, so they do not run at once.
static HOOK_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl<'de> Deserialize<'de> for Hooked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let inner = JsonObject::deserialize(d)?;
        let hook = DECODE_HOOK.lock().unwrap().take();
        if let Some(hook) = hook {
            hook();
            // Put it back for the next decode (it decides itself when to stop).
            let mut slot = DECODE_HOOK.lock().unwrap();
            if slot.is_none() {
                *slot = Some(hook);
            }
        }
        Ok(Hooked(inner))
    }
}
delegate_object!(Hooked);

fn hooked(name: &str, rv: &str) -> Arc<Hooked> {
    Arc::new(Hooked(
        JsonObject::new(Some("ns"), name)
            .with_resource_version(rv)
            .with_label("app", rv),
    ))
}

/// Writes that return the previous object decode it outside the lock and go ahead only if
/// it is still the stored version: a write that slips in between makes them decode again,
/// and after four such races they decode under the lock. What they return is always the
/// version they replaced, and every index stays exact.
#[test]
fn a_write_racing_the_previous_objects_decode_is_not_lost() {
    let _serial = HOOK_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let store: Arc<CompactStore<Hooked>> = Arc::new(
        CompactStore::builder()
            .indexer("app", label_index_func("app"))
            .codec(Codec::Json)
            .cache_capacity(0)
            .round_trip_check(RoundTripCheck::Never)
            .build(),
    );
    store.insert(hooked("a", "1")).unwrap();

    // Each decode (up to `races` of them) overwrites the key with a new version first.
    let arm = |races: usize| {
        let writer = Arc::downgrade(&store);
        let count = Arc::new(AtomicUsize::new(0));
        let seen = count.clone();
        *DECODE_HOOK.lock().unwrap() = Some(Box::new(move || {
            let n = seen.fetch_add(1, Ordering::SeqCst);
            if n < races {
                let store = writer.upgrade().unwrap();
                store.insert(hooked("a", &format!("race-{n}"))).unwrap();
            }
        }));
        count
    };

    // One race: the second attempt wins and returns the racer's version.
    let decodes = arm(1);
    let previous = store.update(hooked("a", "2")).unwrap().unwrap();
    assert_eq!(previous.object_resource_version(), Some("race-0"));
    assert_eq!(decodes.load(Ordering::SeqCst), 2);
    assert_eq!(store.resource_version_of("ns/a").as_deref(), Some("2"));

    // Races every time: after four attempts the previous object is decoded under the lock,
    // where no write can slip in.
    let decodes = arm(4);
    let previous = store.update(hooked("a", "3")).unwrap().unwrap();
    assert_eq!(previous.object_resource_version(), Some("race-3"));
    assert_eq!(decodes.load(Ordering::SeqCst), 5);

    // Deletes follow the same rule.
    let decodes = arm(1);
    let removed = store.delete_by_key("ns/a").unwrap();
    assert_eq!(removed.object_resource_version(), Some("race-0"));
    assert_eq!(decodes.load(Ordering::SeqCst), 2);
    assert!(store.is_empty());
    *DECODE_HOOK.lock().unwrap() = None;
    assert!(store.list_index_func_values("app").unwrap().is_empty());
}

/// `add_indexers` decodes and indexes a snapshot outside the lock and installs it if nothing
/// was written meanwhile; a write that slips in makes it start over, and after four it
/// indexes under the lock. Either way the new index is exact.
#[test]
fn add_indexers_over_a_store_written_meanwhile() {
    let _serial = HOOK_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    for races in [1, 4] {
        let store: Arc<CompactStore<Hooked>> = Arc::new(
            CompactStore::builder()
                .codec(Codec::Json)
                .cache_capacity(0)
                .round_trip_check(RoundTripCheck::Never)
                .build(),
        );
        for i in 0..5 {
            store.insert(hooked(&format!("o-{i}"), "web")).unwrap();
        }
        let writer = Arc::downgrade(&store);
        let count = Arc::new(AtomicUsize::new(0));
        let seen = count.clone();
        // The first decode of each of the first `races` snapshots adds an object (snapshots
        // of 5, 6, 7 and 8 objects start at these decode counts).
        let starts = [0, 5, 11, 18];
        *DECODE_HOOK.lock().unwrap() = Some(Box::new(move || {
            let n = seen.fetch_add(1, Ordering::SeqCst);
            if let Some(snapshot) = starts[..races].iter().position(|&s| s == n) {
                let store = writer.upgrade().unwrap();
                store
                    .insert(hooked(&format!("late-{snapshot}"), "db"))
                    .unwrap();
            }
        }));
        store
            .add_indexers([("app".to_owned(), label_index_func("app"))].into())
            .unwrap();
        *DECODE_HOOK.lock().unwrap() = None;
        assert_eq!(store.len(), 5 + races);
        assert_eq!(store.index_keys("app", "web").unwrap().len(), 5);
        assert_eq!(
            store.index_keys("app", "db").unwrap().len(),
            races,
            "objects written while indexing are indexed too"
        );
    }
}

/// Decoding reenters the store from a `Deserialize` impl: the per-thread decompression
/// buffer is in use, and a second one is used for the nested call.
#[test]
fn a_deserialize_that_reenters_the_store_works() {
    let _serial = HOOK_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let store: Arc<CompactStore<Hooked>> = Arc::new(
        CompactStore::builder()
            .codec(small_dictionary(30))
            .cache_capacity(0)
            .round_trip_check(RoundTripCheck::Never)
            .build(),
    );
    for i in 0..40 {
        store.insert(hooked(&format!("o-{i}"), "1")).unwrap();
    }
    store.finish_training();
    assert!(matches!(
        store.stats().dictionary,
        DictionaryState::Trained { .. }
    ));
    let reader = Arc::downgrade(&store);
    let nested = Arc::new(AtomicUsize::new(0));
    let seen = nested.clone();
    *DECODE_HOOK.lock().unwrap() = Some(Box::new(move || {
        // Only the outer decode reads again (the hook is taken while it runs).
        if seen.fetch_add(1, Ordering::SeqCst) == 0 {
            let store = reader.upgrade().unwrap();
            assert_eq!(
                store.get_by_key("ns/o-7").unwrap().object_name(),
                Some("o-7")
            );
        }
    }));
    assert_eq!(
        store.get_by_key("ns/o-3").unwrap().object_name(),
        Some("o-3")
    );
    *DECODE_HOOK.lock().unwrap() = None;
    assert_eq!(nested.load(Ordering::SeqCst), 1);
}

/// Index functions run before the write lock; an index registered in between (here by an
/// index function itself) is computed under the lock before anything changes, by writes and
/// by `replace` alike.
#[test]
fn writes_catch_up_with_indices_registered_meanwhile() {
    use std::sync::atomic::AtomicBool;
    use std::sync::{Mutex, Weak};

    type Cell = Arc<Mutex<Weak<CompactStore<JsonObject>>>>;
    let make = || -> (Arc<CompactStore<JsonObject>>, Arc<AtomicBool>) {
        let trigger = Arc::new(AtomicBool::new(false));
        let cell: Cell = Arc::new(Mutex::new(Weak::new()));
        let armed = trigger.clone();
        let hook_cell = cell.clone();
        let inner = namespace_indexers::<JsonObject>();
        let ns = inner[NAMESPACE_INDEX].clone();
        let hook: informer_core::IndexFunc<JsonObject> = Arc::new(move |o: &JsonObject| {
            if armed.swap(false, Ordering::SeqCst) {
                let store = hook_cell.lock().unwrap().upgrade().unwrap();
                store
                    .add_indexers([("app".to_owned(), label_index_func("app"))].into())
                    .unwrap();
            }
            ns(o)
        });
        let store = Arc::new(CompactStore::builder().indexer("hook", hook).build());
        *cell.lock().unwrap() = Arc::downgrade(&store);
        (store, trigger)
    };

    let (store, trigger) = make();
    trigger.store(true, Ordering::SeqCst);
    store.add(obj("ns", "a", "web")).unwrap();
    assert_eq!(store.index_keys("app", "web").unwrap().len(), 1);

    let (store, trigger) = make();
    store.add(obj("ns", "old", "db")).unwrap();
    trigger.store(true, Ordering::SeqCst);
    store
        .replace(vec![obj("ns", "a", "web"), obj("ns", "b", "db")], "1")
        .unwrap();
    let mut values = store.list_index_func_values("app").unwrap();
    values.sort();
    assert_eq!(values, ["db", "web"]);
    assert_eq!(
        store.index_keys("app", "db").unwrap().len(),
        1,
        "the old object is gone"
    );
}
