//! The store setting (`InformerConfig::store`): the compact store as the informer's cache, built
//! as the informer builds it (its key function, the namespace index, its indexers), through the
//! indexer conformance suite and a live scenario; custom stores; a store set twice.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use fake_apiserver::FakeApiServer;
use informer::reflector::WatchListMode;
use informer::{
    Codec, CompactOptions, Indexer, Indexers, InformerConfig, InformerError, KeyFunc, KnownObjects,
    NAMESPACE_INDEX, Object, ObjectKey, RoundTripCheck, Store, StoreChoice, StoreError,
    StoreWiring, ZstdDictionary, key_of, label_index_func,
};
use informer_testing::JsonObject;
use informer_testing::conformance::indexer;

use crate::informer_support::*;

/// Options that exercise the compact store's paths on small stores: JSON (kept as received)
/// with a dictionary trained after a dozen objects, and a cache of `cache` decoded objects (0:
/// every read decodes).
fn small(cache: usize) -> CompactOptions {
    small_with(cache, true)
}

/// [`small`], in JSON or in MessagePack (the default, encoded from the object).
fn small_with(cache: usize, json: bool) -> CompactOptions {
    let dictionary = ZstdDictionary::default()
        .training_objects(12)
        .dictionary_size(2 << 10);
    CompactOptions::default()
        .cache_capacity(cache)
        .codec(if json {
            Codec::ZstdDictionary(dictionary)
        } else {
            Codec::MessagePackZstd(dictionary)
        })
}

/// An `Indexer` built as an informer builds its store: `Box<dyn Indexer>` behind a type the
/// suite can name.
struct Built(Box<dyn Indexer<JsonObject>>);

impl Built {
    fn compact(options: CompactOptions, indexers: Indexers<JsonObject>) -> Self {
        let key_func: KeyFunc<JsonObject> = Arc::new(|o: &JsonObject| key_of(o));
        Self(StoreChoice::compact(options).build(StoreWiring::new(key_func, indexers)))
    }
}

impl KnownObjects<JsonObject> for Built {
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.0.list_keys()
    }
    fn get_by_key(&self, key: &str) -> Option<Arc<JsonObject>> {
        self.0.get_by_key(key)
    }
    fn contains_key(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }
    fn resource_version_of(&self, key: &str) -> Option<String> {
        self.0.resource_version_of(key)
    }
    fn shared_by_key(&self, key: &str) -> Option<Arc<JsonObject>> {
        self.0.shared_by_key(key)
    }
}

impl Store<JsonObject> for Built {
    fn add(&self, obj: Arc<JsonObject>) -> Result<Option<Arc<JsonObject>>, StoreError> {
        self.0.add(obj)
    }
    fn update(&self, obj: Arc<JsonObject>) -> Result<Option<Arc<JsonObject>>, StoreError> {
        self.0.update(obj)
    }
    fn delete(&self, obj: &JsonObject) -> Result<Option<Arc<JsonObject>>, StoreError> {
        self.0.delete(obj)
    }
    fn delete_by_key(&self, key: &str) -> Option<Arc<JsonObject>> {
        self.0.delete_by_key(key)
    }
    fn get(&self, obj: &JsonObject) -> Result<Option<Arc<JsonObject>>, StoreError> {
        self.0.get(obj)
    }
    fn list(&self) -> Vec<Arc<JsonObject>> {
        self.0.list()
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn replace(&self, objects: Vec<Arc<JsonObject>>, rv: &str) -> Result<(), StoreError> {
        self.0.replace(objects, rv)
    }
}

impl Indexer<JsonObject> for Built {
    fn index(&self, name: &str, obj: &JsonObject) -> Result<Vec<Arc<JsonObject>>, StoreError> {
        self.0.index(name, obj)
    }
    fn index_keys(&self, name: &str, value: &str) -> Result<Vec<ObjectKey>, StoreError> {
        self.0.index_keys(name, value)
    }
    fn list_index_func_values(&self, name: &str) -> Result<Vec<String>, StoreError> {
        self.0.list_index_func_values(name)
    }
    fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<JsonObject>>, StoreError> {
        self.0.by_index(name, value)
    }
    fn index_names(&self) -> Vec<String> {
        self.0.index_names()
    }
    fn add_indexers(&self, indexers: Indexers<JsonObject>) -> Result<(), StoreError> {
        self.0.add_indexers(indexers)
    }
}

/// The informer's compact store passes the indexer conformance suite unchanged: with the
/// default options, and with a dictionary trained early (so the suite's larger checks cross
/// the switch from JSON to compressed entries).
#[test]
fn the_compact_store_an_informer_builds_passes_the_indexer_conformance_suite() {
    indexer::run_all(|indexers| Built::compact(CompactOptions::default(), indexers));
    indexer::run_all(|indexers| Built::compact(small(1_024), indexers));
    indexer::run_all(|indexers| Built::compact(small_with(1_024, false), indexers));
}

/// The same informer scenario with each store: the cache equals the server through creates,
/// updates, deletes and a relist, handlers hear the same notifications, lookups by namespace
/// and by a label index agree, and the compact store keeps encoded objects.
#[tokio::test(start_paused = true)]
async fn a_compact_informer_holds_and_tells_what_an_indexed_one_does() {
    for (cache, json) in [(0, true), (0, false), (4, false), (1_024, true)] {
        let server = FakeApiServer::new();
        for i in 0..40 {
            server
                .create(
                    RESOURCE,
                    &cm(&format!("o{i}")).with_label("app", format!("a{}", i % 3)),
                )
                .unwrap();
        }
        let make = |store: StoreChoice<JsonObject>| {
            informer(
                &server,
                InformerConfig {
                    store,
                    indexers: [("app".to_owned(), label_index_func("app"))].into(),
                    ..InformerConfig::default()
                },
            )
        };
        let indexed = make(StoreChoice::Indexed);
        let compact = make(StoreChoice::compact(small_with(cache, json)));
        let (indexed_log, compact_log) = (Log::default(), Log::default());
        indexed.add_handler(indexed_log.handler()).unwrap();
        compact.add_handler(compact_log.handler()).unwrap();
        let runs = [Running::start(&indexed), Running::start(&compact)];
        for run in &runs {
            assert!(
                tokio::time::timeout(crate::support::GUARD, run.informer.wait_for_sync())
                    .await
                    .unwrap()
            );
        }
        tokio::time::timeout(
            crate::support::GUARD,
            server.wait_for_open_watches(RESOURCE, 2),
        )
        .await
        .unwrap();
        for i in 0..40 {
            match i % 4 {
                0 => {
                    server
                        .update(RESOURCE, &cm(&format!("o{i}")).with_label("app", "moved"))
                        .unwrap();
                }
                1 => {
                    server.delete(RESOURCE, Some(NS), &format!("o{i}")).unwrap();
                }
                2 => {
                    server.create(RESOURCE, &cm(&format!("n{i}"))).unwrap();
                }
                _ => {}
            }
        }
        let marker = server.create(RESOURCE, &cm("zz-marker")).unwrap();
        let marker_rv = marker.resource_version().to_string();
        for log in [&indexed_log, &compact_log] {
            log.wait_until("the marker", |s| {
                s.iter().any(|e| matches!(e, Seen::Add { key, rv, .. } if key == "ns/zz-marker" && *rv == marker_rv))
            })
            .await;
        }
        let expected = server_state(&server);
        assert_eq!(
            cache_state(&compact),
            expected,
            "cache {cache}, json {json}"
        );
        assert_eq!(cache_state(&indexed), expected);
        // Each key's notifications, in order (keys interleave as the two queues pop).
        let by_key = |log: &Log| {
            let mut map: BTreeMap<String, Vec<Seen>> = BTreeMap::new();
            for seen in log.seen() {
                map.entry(seen.key().to_owned()).or_default().push(seen);
            }
            map
        };
        assert!(
            by_key(&compact_log) == by_key(&indexed_log),
            "cache {cache}, json {json}"
        );
        let (a, b) = (indexed.lister(), compact.lister());
        for value in ["a0", "a1", "a2", "moved"] {
            let names = |l: &informer::Lister<JsonObject>| {
                let mut v: Vec<String> = l
                    .by_index("app", value)
                    .unwrap()
                    .iter()
                    .map(|o| key(o))
                    .collect();
                v.sort();
                v
            };
            assert_eq!(
                names(&b),
                names(&a),
                "app={value}, cache {cache}, json {json}"
            );
        }
        assert_eq!(
            b.by_index(NAMESPACE_INDEX, NS).unwrap().len(),
            expected.len()
        );
        for k in expected.keys() {
            let (ns, name) = k.split_once('/').unwrap();
            assert_eq!(b.get(Some(ns), name), a.get(Some(ns), name));
        }
        for run in runs {
            run.stop().await;
        }
    }
}

/// A custom store is built by the informer with its key function and indices: the
/// namespace index and the configured ones.
#[tokio::test(start_paused = true)]
async fn a_custom_store_gets_the_informers_key_function_and_indices() {
    let server = FakeApiServer::new();
    server
        .create(RESOURCE, &cm("a").with_label("app", "web"))
        .unwrap();
    let built = Arc::new(AtomicUsize::new(0));
    let names: Arc<parking_lot::Mutex<Vec<String>>> = Arc::default();
    let store = StoreChoice::Custom({
        let (built, names) = (Arc::clone(&built), Arc::clone(&names));
        Box::new(move |wiring: StoreWiring<JsonObject>| {
            built.fetch_add(1, Ordering::SeqCst);
            let mut got: Vec<String> = wiring.indexers.keys().cloned().collect();
            got.sort();
            *names.lock() = got;
            Box::new(
                informer::IndexedStore::builder()
                    .key_func(wiring.key_func)
                    .indexers(wiring.indexers)
                    .build(),
            )
        })
    });
    let informer = informer(
        &server,
        InformerConfig {
            store,
            indexers: [("app".to_owned(), label_index_func("app"))].into(),
            ..InformerConfig::default()
        },
    );
    assert_eq!(built.load(Ordering::SeqCst), 1);
    assert_eq!(*names.lock(), ["app", NAMESPACE_INDEX]);
    let running = Running::start(&informer);
    running.synced(&server).await;
    assert_eq!(informer.lister().by_index("app", "web").unwrap().len(), 1);
    running.stop().await;
}

/// A cache handed in (`indexer`) and a store to build (`store`) are one setting too many.
#[test]
fn an_indexer_and_a_store_together_are_refused() {
    let server = FakeApiServer::new();
    let lw = Arc::new(
        server
            .lister_watcher::<JsonObject>(RESOURCE, Some(NS))
            .unwrap(),
    );
    let config = InformerConfig::<JsonObject> {
        name: "both".into(),
        indexer: Some(Box::new(informer::IndexedStore::new())),
        store: StoreChoice::compact(CompactOptions::default()),
        ..InformerConfig::default()
    };
    let error = informer::SharedIndexInformer::new(lw, config).unwrap_err();
    assert!(
        matches!(&error, InformerError::StoreConflict { name, store } if name == "both" && store.starts_with("Compact")),
        "{error:?}"
    );
    assert!(error.to_string().contains("set one"), "{error}");
}

/// Lookups through the compact store's lister return objects equal to the server's, also
/// for keys that are not cached (every read decodes with a cache of 0).
#[tokio::test(start_paused = true)]
async fn compact_lookups_decode_objects_equal_to_the_servers() {
    let server = FakeApiServer::new();
    let mut expected = BTreeMap::new();
    for i in 0..30 {
        let created = server
            .create(
                RESOURCE,
                &cm(&format!("o{i}")).with_field("data", serde_json::json!({ "n": i })),
            )
            .unwrap();
        expected.insert(format!("o{i}"), created.resource_version().to_string());
    }
    let informer = informer(
        &server,
        InformerConfig {
            store: StoreChoice::compact(small(0)),
            ..InformerConfig::default()
        },
    );
    let running = Running::start(&informer);
    running.synced(&server).await;
    let lister = informer.lister();
    for (name, rv) in &expected {
        let obj = lister.get(Some(NS), name).unwrap();
        assert_eq!(obj.object_resource_version(), Some(rv.as_str()));
        let n: u64 = name[1..].parse().unwrap();
        assert_eq!(obj.fields["data"]["n"], n);
    }
    running.stop().await;
}

/// Relists and the text path, by the reflector's counters: a relist hands over what the
/// cache holds unchanged without decoding it (with the default key function) or without
/// keeping the copy (a custom one); objects travel with their text to a compact store that
/// keeps JSON unless a transform changes them, and never to the indexed store nor to a
/// MessagePack compact store (which encodes the object itself); to the JSON compact store,
/// which decodes text itself, listed objects travel as their text alone.
#[tokio::test(start_paused = true)]
async fn relists_skip_unchanged_objects_and_texts_reach_only_a_json_compact_store() {
    struct Case {
        store: fn() -> StoreChoice<JsonObject>,
        transform: bool,
        custom_keys: bool,
        streaming: bool,
        texts: bool,
    }
    let compact = || StoreChoice::compact(small(0));
    let indexed = || StoreChoice::Indexed;
    let message_pack = || StoreChoice::compact(small_with(0, false));
    let compact_lists_decoded = || StoreChoice::compact(small(0).lists_as_text(false));
    #[rustfmt::skip]
    let cases = [
        Case { store: message_pack, transform: false, custom_keys: false, streaming: false, texts: false },
        Case { store: indexed, transform: false, custom_keys: false, streaming: false, texts: false },
        Case { store: compact, transform: false, custom_keys: false, streaming: false, texts: true },
        Case { store: compact, transform: true, custom_keys: false, streaming: false, texts: false },
        Case { store: compact, transform: false, custom_keys: true, streaming: false, texts: true },
        Case { store: indexed, transform: false, custom_keys: true, streaming: false, texts: false },
        Case { store: compact, transform: false, custom_keys: false, streaming: true, texts: true },
        Case { store: indexed, transform: false, custom_keys: false, streaming: true, texts: false },
        Case { store: compact_lists_decoded, transform: false, custom_keys: false, streaming: false, texts: true },
    ];
    for (n, case) in cases.iter().enumerate() {
        let server = FakeApiServer::new();
        for i in 0..20 {
            server.create(RESOURCE, &cm(&format!("o{i}"))).unwrap();
        }
        let mut config = InformerConfig {
            store: (case.store)(),
            ..InformerConfig::default()
        };
        if case.transform {
            config.transform = Some(Arc::new(|o: JsonObject| o.with_label("seen", "yes")));
        }
        if case.custom_keys {
            config.key_func = Arc::new(|o: &JsonObject| key_of(o));
        }
        config.list_watch.watch_list = if case.streaming {
            WatchListMode::On
        } else {
            WatchListMode::Off
        };
        let informer = informer(&server, config);
        let log = Log::default();
        informer.add_handler(log.handler()).unwrap();
        let running = Running::start(&informer);
        running.synced(&server).await;
        // Two changes while watching, then a relist: 410 on the watch.
        server
            .update(RESOURCE, &cm("o1").with_label("v", "2"))
            .unwrap();
        server.create(RESOURCE, &cm("new")).unwrap();
        log.wait_until("the new object", |s| s.iter().any(|e| e.key() == "ns/new"))
            .await;
        assert_eq!(server.faults().expire_watches(RESOURCE), 1);
        server
            .update(RESOURCE, &cm("o2").with_label("v", "3"))
            .unwrap();
        let stats = loop {
            let stats = informer.stats().reflector.unwrap();
            if stats.counters.lists >= 2 && informer.stats().queued == 0 {
                break stats;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        };
        log.wait_until("o2 at v=3", |s| {
            s.iter()
                .any(|e| matches!(e, Seen::Update { key, .. } if key == "ns/o2"))
        })
        .await;
        assert_eq!(cache_state(&informer), server_state(&server), "case {n}");
        // 20 of the 21 objects unchanged by the relist (o2 changed before it).
        assert_eq!(stats.listed_unchanged, 20, "case {n}: {stats:?}");
        // Skipped before decoding: list items (not a streaming list's events) keyed
        // `namespace/name`.
        let undecoded = if case.custom_keys || case.streaming {
            0
        } else {
            20
        };
        assert_eq!(stats.listed_undecoded, undecoded, "case {n}: {stats:?}");
        // 20 listed + 2 events + 1 relisted change, each with its text.
        let texts = if case.texts { 23 } else { 0 };
        assert_eq!(stats.raw_kept, texts, "case {n}: {stats:?}");
        // The listed ones (20 and the relisted change) waited in the queue as text alone: the
        // compact store with JSON decodes text itself (unless told not to, the last case).
        let lists_as_text = case.texts && n != cases.len() - 1;
        let as_text = if lists_as_text { 21 } else { 0 };
        assert_eq!(stats.listed_as_text, as_text, "case {n}: {stats:?}");
        // Each packed by the store as it was listed (compressed once its dictionary exists,
        // else as it is): every store here that takes lists as text trains a dictionary.
        assert_eq!(stats.listed_packed, as_text, "case {n}: {stats:?}");
        running.stop().await;
    }
}

/// A `JsonObject` that records, by name, which thread decoded it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(transparent)]
struct Traced(JsonObject);

static DECODED_ON: std::sync::Mutex<Vec<(String, std::thread::ThreadId)>> =
    std::sync::Mutex::new(Vec::new());

impl<'de> serde::Deserialize<'de> for Traced {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let obj = <JsonObject as serde::Deserialize>::deserialize(d)?;
        let name = obj.object_name().unwrap_or_default().to_owned();
        DECODED_ON
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((name, std::thread::current().id()));
        Ok(Self(obj))
    }
}

informer_testing::delegate_object!(Traced);

/// The default list mode (`WatchListMode::Auto`) lists first for a store that reads listed
/// objects from their text, so that its first sync decodes each object once; a streaming list
/// (asked for, or settled for any other store) decodes each object as it arrives, and the
/// compact store a second time. Decodes are counted by [`Traced`] until the sync.
#[tokio::test(start_paused = true)]
async fn the_default_list_mode_lists_first_for_a_store_that_reads_text() {
    const OBJECTS: usize = 30;
    let text = || {
        StoreChoice::compact(
            small(0)
                .codec(Codec::Json)
                .round_trip_check(RoundTripCheck::Never),
        )
    };
    let keyed: KeyFunc<Traced> = Arc::new(|o: &Traced| key_of(o));
    // (case, store, the mode set, a custom key function, list requests, decodes per object)
    let cases = [
        ("auto-text", text(), None, false, 1, 1),
        ("on-text", text(), Some(WatchListMode::On), false, 0, 2),
        ("auto-keyed", text(), None, true, 0, 2),
        ("auto-indexed", StoreChoice::Indexed, None, false, 0, 1),
        (
            "off-indexed",
            StoreChoice::Indexed,
            Some(WatchListMode::Off),
            false,
            1,
            1,
        ),
    ];
    for (case, store, mode, custom_keys, list_requests, decodes) in cases {
        let server = FakeApiServer::new();
        for i in 0..OBJECTS {
            server
                .create(RESOURCE, &cm(&format!("{case}-{i}")))
                .unwrap();
        }
        let mut config = InformerConfig {
            name: RESOURCE.into(),
            store,
            seed: Some(7),
            ..InformerConfig::default()
        };
        assert_eq!(config.list_watch.watch_list, WatchListMode::Auto);
        if let Some(mode) = mode {
            config.list_watch.watch_list = mode;
        }
        if custom_keys {
            config.key_func = Arc::clone(&keyed);
        }
        let lw = Arc::new(server.lister_watcher::<Traced>(RESOURCE, Some(NS)).unwrap());
        let informer = informer::SharedIndexInformer::new(lw, config).unwrap();
        let stop = tokio_util::sync::CancellationToken::new();
        let task = informer.spawn(stop.clone());
        assert!(
            tokio::time::timeout(crate::support::GUARD, informer.wait_for_sync())
                .await
                .unwrap(),
            "{case}"
        );
        let decoded = DECODED_ON
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|(name, _)| name.starts_with(&format!("{case}-")))
            .count();
        assert_eq!(decoded, OBJECTS * decodes, "{case}: decodes until the sync");
        let stats = informer.stats().reflector.unwrap();
        assert_eq!(
            stats.counters.list_requests, list_requests,
            "{case}: {stats:?}"
        );
        assert_eq!(stats.streaming, list_requests == 0, "{case}: {stats:?}");
        assert_eq!(informer.lister().list_all().len(), OBJECTS, "{case}");
        stop.cancel();
        task.await.unwrap().unwrap();
    }
}

/// A watch update costs a compact informer one decode (the event's) when no handler is
/// registered, and two with one (the event's, and the cached object for `on_update`): the
/// store is written without decoding the object it replaces (`Store::put`). The store keeps no
/// decoded object (cache 0), so every read decodes; before `put`, the write decoded the
/// replaced object once more (2 and 3).
#[tokio::test(start_paused = true)]
async fn a_watch_update_decodes_the_replaced_object_only_for_handlers() {
    const OBJECTS: usize = 12;
    const UPDATES: usize = 6;
    for (case, handler) in [("puts-alone", false), ("puts-handled", true)] {
        let server = FakeApiServer::new();
        for i in 0..OBJECTS {
            server
                .create(RESOURCE, &cm(&format!("{case}-{i}")))
                .unwrap();
        }
        let options = small(0)
            .codec(Codec::Json)
            .round_trip_check(RoundTripCheck::Never);
        let config = InformerConfig {
            name: RESOURCE.into(),
            store: StoreChoice::compact(options),
            seed: Some(7),
            ..InformerConfig::default()
        };
        let lw = Arc::new(server.lister_watcher::<Traced>(RESOURCE, Some(NS)).unwrap());
        let informer = informer::SharedIndexInformer::new(lw, config).unwrap();
        let updates = Arc::new(AtomicUsize::new(0));
        if handler {
            let updates = Arc::clone(&updates);
            informer
                .add_handler(informer::handler().on_update(move |_, _| {
                    updates.fetch_add(1, Ordering::Relaxed);
                }))
                .unwrap();
        }
        let stop = tokio_util::sync::CancellationToken::new();
        let task = informer.spawn(stop.clone());
        let synced = tokio::time::timeout(crate::support::GUARD, informer.wait_for_sync());
        assert!(synced.await.unwrap(), "{case}");
        tokio::time::timeout(
            crate::support::GUARD,
            server.wait_for_open_watches(RESOURCE, 1),
        )
        .await
        .unwrap();
        let decoded = || {
            DECODED_ON
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .filter(|(name, _)| name.starts_with(&format!("{case}-")))
                .count()
        };
        let (before, deltas) = (decoded(), informer.stats().deltas);
        for i in 0..UPDATES {
            let changed = cm(&format!("{case}-{i}")).with_label("v", "2");
            server.update(RESOURCE, &changed).unwrap();
        }
        let applied = async {
            while informer.stats().deltas < deltas + UPDATES as u64 {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        };
        tokio::time::timeout(crate::support::GUARD, applied)
            .await
            .unwrap();
        let per_update = if handler { 2 } else { 1 };
        assert_eq!(decoded() - before, UPDATES * per_update, "{case}");
        if handler {
            let heard = async {
                while updates.load(Ordering::Relaxed) < UPDATES {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            };
            tokio::time::timeout(crate::support::GUARD, heard)
                .await
                .unwrap();
        }
        let got = informer
            .lister()
            .get(Some(NS), &format!("{case}-0"))
            .unwrap();
        assert_eq!(
            got.object_labels().get("v").map(String::as_str),
            Some("2"),
            "{case}"
        );
        stop.cancel();
        task.await.unwrap().unwrap();
    }
}

/// `CompactOptions::decode_threads` reaches the store an informer builds: a scan of 256
/// objects to decode runs on the caller's thread alone with 1, on two threads with 2.
#[test]
fn compact_options_set_how_many_threads_a_scan_decodes_on() {
    for (threads, prefix) in [(1, "one"), (2, "two")] {
        let key_func: KeyFunc<Traced> = Arc::new(|o: &Traced| key_of(o));
        let options = CompactOptions::default()
            .cache_capacity(0)
            .codec(Codec::Json)
            .round_trip_check(RoundTripCheck::Never)
            .decode_threads(threads);
        let store =
            StoreChoice::compact(options).build(StoreWiring::new(key_func, Indexers::new()));
        for i in 0..256 {
            let obj = JsonObject::new(Some("ns"), &format!("{prefix}-{i}"));
            store.add(Arc::new(Traced(obj))).unwrap();
        }
        assert_eq!(store.list().len(), 256);
        let seen: std::collections::HashSet<std::thread::ThreadId> = DECODED_ON
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|(name, _)| name.starts_with(&format!("{prefix}-")))
            .map(|(_, thread)| *thread)
            .collect();
        assert_eq!(seen.len(), threads, "{prefix}: decoded on {seen:?}");
        assert!(
            seen.contains(&std::thread::current().id()),
            "{prefix}: the caller decodes too"
        );
    }
}
