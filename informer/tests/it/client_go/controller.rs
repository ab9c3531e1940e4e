//! client-go `tools/cache/controller_test.go`, ported. client-go's `Controller` (a reflector
//! feeding a queue, popped by a process function) is our reflector plus a queue popped into a
//! store ([`Consumer`]), or, for the `NewInformer` family, a [`SharedIndexInformer`] with one
//! handler.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use fake_apiserver::FakeApiServer;
use informer::reflector::Reflector;
use informer::{
    InformerConfig, Object, ObjectKey, ObjectOrTombstone, QueueChoice, SharedIndexInformer,
    Tombstone, handler,
};
use informer_core::{
    Delta, DeltaType, Indexer, Indexers, KnownObjects, ListOptions, ListPage, Queue, Status, Store,
    StoreError,
};
use informer_fifo::{DeltaFifo, DeltaFifoConfig, InOrderFifo, InOrderFifoConfig};
use informer_store::IndexedStore;
use informer_testing::JsonObject;
use parking_lot::Mutex;

use super::support::*;
use crate::informer_support::*;

/// client-go tools/cache/controller_test.go: Example
///
/// A controller, here a reflector and a queue popped by hand, that deletes everything it sees
/// and reports each deletion.
#[tokio::test(start_paused = true)]
async fn example() {
    let server = FakeApiServer::new();
    let lw = Arc::new(
        server
            .lister_watcher::<JsonObject>(RESOURCE, Some(NS))
            .unwrap(),
    );
    let downstream = Arc::new(IndexedStore::<JsonObject>::new());
    let known: Arc<dyn KnownObjects<JsonObject>> = downstream.clone();
    let queue: Arc<dyn Queue<JsonObject>> = Arc::new(InOrderFifo::new(InOrderFifoConfig {
        known_objects: Some(known),
        ..InOrderFifoConfig::default()
    }));
    let reflector = Arc::new(Reflector::new(
        lw,
        Arc::clone(&queue),
        None,
        informer::reflector::ReflectorConfig {
            resync_period: Some(millis(100)),
            ..list_watch_config()
        },
    ));
    let running = RunningReflector::start(&reflector);
    let deleted = Arc::new(Mutex::new(BTreeSet::new()));
    let process = tokio::spawn({
        let (server, deleted, queue) = (server.clone(), Arc::clone(&deleted), Arc::clone(&queue));
        async move {
            loop {
                let popped = queue
                    .pop(&mut |deltas: &[Delta<JsonObject>]| {
                        for delta in deltas {
                            let obj = delta.object.object();
                            if delta.kind == DeltaType::Deleted {
                                downstream.delete(obj).unwrap();
                                deleted.lock().insert(key(obj));
                            } else {
                                downstream.add(Arc::clone(obj)).unwrap();
                                let _ = server.delete(RESOURCE, Some(NS), &obj_name(obj));
                            }
                        }
                        Ok(())
                    })
                    .await;
                if matches!(popped, Err(informer_core::QueueError::Closed)) {
                    return;
                }
            }
        }
    });
    for name in ["a-hello", "b-controller", "c-framework"] {
        server.create(RESOURCE, &cm(name)).unwrap();
    }
    eventually("three deletions", || deleted.lock().len() == 3).await;
    assert_eq!(
        *deleted.lock(),
        ["ns/a-hello", "ns/b-controller", "ns/c-framework"]
            .map(String::from)
            .into_iter()
            .collect()
    );
    running.stop().await;
    queue.close();
    process.await.unwrap();
}

fn obj_name(o: &JsonObject) -> String {
    o.object_name().unwrap_or_default().to_owned()
}

/// client-go tools/cache/controller_test.go: ExampleNewInformer
#[tokio::test(start_paused = true)]
async fn example_new_informer() {
    let server = FakeApiServer::new();
    let informer = informer(&server, InformerConfig::default());
    let deleted = Arc::new(Mutex::new(BTreeSet::new()));
    let (adds_server, sink) = (server.clone(), Arc::clone(&deleted));
    informer
        .add_handler(
            handler()
                .on_add(move |o: &Arc<JsonObject>, _| {
                    let _ = adds_server.delete(RESOURCE, Some(NS), &obj_name(o));
                })
                .on_delete(move |o: &ObjectOrTombstone<JsonObject>| {
                    sink.lock().insert(o.key().unwrap().to_string());
                }),
        )
        .unwrap();
    let running = Running::start(&informer);
    running.synced(&server).await;
    for name in ["a-hello", "b-controller", "c-framework"] {
        server.create(RESOURCE, &cm(name)).unwrap();
    }
    eventually("three deletions", || deleted.lock().len() == 3).await;
    let keys: Vec<String> = deleted.lock().iter().cloned().collect();
    assert_eq!(keys, ["ns/a-hello", "ns/b-controller", "ns/c-framework"]);
    running.stop().await;
}

/// client-go tools/cache/controller_test.go: TestHammerController
///
/// Three writers, 100 random writes each; ours also checks every key's story is a valid life
/// and matches the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hammer_controller() {
    let server = FakeApiServer::new();
    let informer = informer(
        &server,
        InformerConfig {
            resync_period: Some(secs(1)),
            ..InformerConfig::default()
        },
    );
    let log = Log::default();
    informer.add_handler(log.handler()).unwrap();
    assert!(!informer.has_synced());
    let running = Running::start(&informer);
    tokio::time::timeout(secs(10), informer.wait_for_sync())
        .await
        .unwrap();
    let writers: Vec<_> = (0..3u64)
        .map(|t| {
            let server = server.clone();
            tokio::spawn(async move {
                let mut current: Vec<String> = Vec::new();
                let mut state = (t + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let mut next = move || {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state
                };
                for i in 0..100 {
                    if current.is_empty() || next() % 3 == 1 {
                        let name = format!("t{t}-{i}");
                        server.create(RESOURCE, &cm(&name)).unwrap();
                        current.push(name);
                    } else {
                        let idx = (next() % current.len() as u64) as usize;
                        if next() % 2 == 0 {
                            let name = &current[idx];
                            server
                                .update(RESOURCE, &cm(name).with_label("i", i.to_string()))
                                .unwrap();
                        } else {
                            let name = current.swap_remove(idx);
                            server.delete(RESOURCE, Some(NS), &name).unwrap();
                        }
                    }
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    let expected = server_state(&server);
    tokio::time::timeout(secs(30), async {
        loop {
            if log.fold().is_ok_and(|s| s == expected) {
                return;
            }
            tokio::time::sleep(millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("fold: {:?}", log.fold()));
    running.stop().await;
}

/// client-go tools/cache/controller_test.go: TestUpdate
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update() {
    let server = FakeApiServer::new();
    let informer = informer(&server, InformerConfig::default());
    let bad = Arc::new(Mutex::new(Vec::new()));
    let deletions = Arc::new(AtomicUsize::new(0));
    let (deleter, bad_sink, deleted) = (server.clone(), Arc::clone(&bad), Arc::clone(&deletions));
    informer
        .add_handler(
            handler()
                .on_update(move |old: &Arc<JsonObject>, new: &Arc<JsonObject>| {
                    let check = |o: &JsonObject| o.metadata.labels["check"].clone();
                    let (from, to) = (check(old), check(new));
                    // A resync may show either state twice; only from → to is a change.
                    let allowed = matches!(
                        (from.as_str(), to.as_str()),
                        ("from", "to") | ("to", "to") | ("from", "from")
                    );
                    if !allowed {
                        bad_sink.lock().push(format!("{from} -> {to}"));
                    }
                    if new.metadata.labels.contains_key("final") {
                        let _ = deleter.delete(RESOURCE, Some(NS), &obj_name(new));
                    }
                })
                .on_delete(move |_| {
                    deleted.fetch_add(1, Ordering::AcqRel);
                }),
        )
        .unwrap();
    let running = Running::start(&informer);
    running.watching(&server).await;
    let writers: Vec<_> = (0..3)
        .map(|i| {
            let server = server.clone();
            tokio::spawn(async move {
                let name = format!("a-{i}-0");
                server
                    .create(RESOURCE, &cm(&name).with_label("check", "from"))
                    .unwrap();
                server
                    .update(
                        RESOURCE,
                        &cm(&name)
                            .with_label("check", "to")
                            .with_label("final", "true"),
                    )
                    .unwrap();
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    tokio::time::timeout(secs(30), async {
        while deletions.load(Ordering::Acquire) < 3 {
            tokio::time::sleep(millis(10)).await;
        }
    })
    .await
    .unwrap();
    assert!(bad.lock().is_empty(), "{:?}", bad.lock());
    running.stop().await;
}

/// client-go tools/cache/controller_test.go: TestTransformingInformer
///
/// Ours: the transform must keep the resourceVersion, which client-go's clears; it sets labels
/// instead.
#[tokio::test(start_paused = true)]
async fn transforming_informer() {
    let server = FakeApiServer::new();
    let pod = |name: &str, generation: &str| {
        cm(name)
            .with_label("generation", generation)
            .with_label("hostname", "hostname")
            .with_label("subdomain", "subdomain")
    };
    server.create(RESOURCE, &pod("pod1", "1")).unwrap();
    server.update(RESOURCE, &pod("pod1", "2")).unwrap();
    let informer = informer(
        &server,
        InformerConfig {
            transform: Some(Arc::new(|mut o: JsonObject| {
                o.metadata
                    .labels
                    .insert("hostname".into(), "new-hostname".into());
                o.metadata.labels.remove("subdomain");
                o.metadata
                    .labels
                    .insert("nodename".into(), "nodename".into());
                o
            })),
            ..InformerConfig::default()
        },
    );
    let events = Arc::new(Mutex::new(
        Vec::<(String, Option<String>, Option<String>)>::new(),
    ));
    let describe = |o: &JsonObject| {
        let l = &o.metadata.labels;
        assert_eq!(l["hostname"], "new-hostname");
        assert!(!l.contains_key("subdomain"));
        assert_eq!(l["nodename"], "nodename");
        format!("{}:{}", obj_name(o), l["generation"])
    };
    let (a, u, d) = (
        Arc::clone(&events),
        Arc::clone(&events),
        Arc::clone(&events),
    );
    informer
        .add_handler(
            handler()
                .on_add(move |o: &Arc<JsonObject>, _| {
                    a.lock().push(("add".into(), None, Some(describe(o))));
                })
                .on_update(move |old: &Arc<JsonObject>, new: &Arc<JsonObject>| {
                    u.lock()
                        .push(("update".into(), Some(describe(old)), Some(describe(new))));
                })
                .on_delete(move |o: &ObjectOrTombstone<JsonObject>| {
                    d.lock()
                        .push(("delete".into(), Some(describe(o.object())), None));
                }),
        )
        .unwrap();
    let running = Running::start(&informer);
    running.synced(&server).await;
    let store = || -> BTreeSet<String> {
        informer
            .lister()
            .list_all()
            .iter()
            .map(|o| format!("{}:{}", obj_name(o), o.metadata.labels["generation"]))
            .collect()
    };
    let wait_events = |n: usize| {
        let events = Arc::clone(&events);
        async move { eventually("events", || events.lock().len() == n).await }
    };
    wait_events(1).await;
    assert_eq!(store(), ["pod1:2"].map(String::from).into());
    server.create(RESOURCE, &pod("pod2", "1")).unwrap();
    wait_events(2).await;
    server.create(RESOURCE, &pod("pod3", "1")).unwrap();
    wait_events(3).await;
    server.update(RESOURCE, &pod("pod2", "2")).unwrap();
    wait_events(4).await;
    server.delete(RESOURCE, Some(NS), "pod1").unwrap();
    wait_events(5).await;
    let s = |x: &str| Some(x.to_owned());
    assert_eq!(
        *events.lock(),
        [
            ("add".into(), None, s("pod1:2")),
            ("add".into(), None, s("pod2:1")),
            ("add".into(), None, s("pod3:1")),
            ("update".into(), s("pod2:1"), s("pod2:2")),
            ("delete".into(), s("pod1:2"), None),
        ]
    );
    assert_eq!(store(), ["pod2:2", "pod3:1"].map(String::from).into());
    running.stop().await;
}

/// client-go tools/cache/controller_test.go: TestTransformingInformerRace
///
/// Resyncs never run the transform again on an already transformed object, while readers keep
/// reading.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transforming_informer_race() {
    let server = FakeApiServer::new();
    for i in 0..5 {
        server
            .create(
                RESOURCE,
                &cm(&format!("pod-{i}")).with_label("to-be-transformed", "true"),
            )
            .unwrap();
    }
    let bad_transform = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&bad_transform);
    let informer = informer(
        &server,
        InformerConfig {
            resync_period: Some(secs(1)),
            transform: Some(Arc::new(move |mut o: JsonObject| {
                if o.metadata
                    .labels
                    .get("to-be-transformed")
                    .map(String::as_str)
                    != Some("true")
                {
                    flag.store(true, Ordering::Release);
                }
                o.metadata
                    .labels
                    .insert("to-be-transformed".into(), "false".into());
                o
            })),
            ..InformerConfig::default()
        },
    );
    let adds = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&adds);
    informer
        .add_handler(handler().on_add(move |_: &Arc<JsonObject>, _| {
            counter.fetch_add(1, Ordering::AcqRel);
        }))
        .unwrap();
    let running = Running::start(&informer);
    tokio::time::timeout(secs(10), async {
        while adds.load(Ordering::Acquire) < 5 {
            tokio::time::sleep(millis(5)).await;
        }
    })
    .await
    .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..5)
        .map(|i| {
            let (reader, stop) = (informer.lister(), Arc::clone(&stop));
            tokio::spawn(async move {
                let key = format!("{NS}/pod-{i}");
                while !stop.load(Ordering::Acquire) {
                    let o = reader.get_by_key(&key).expect("the object is cached");
                    assert_eq!(o.metadata.labels["to-be-transformed"], "false");
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    // Let resyncs happen for a while.
    tokio::time::sleep(millis(2_500)).await;
    stop.store(true, Ordering::Release);
    for r in readers {
        r.await.unwrap();
    }
    assert!(informer.stats().reflector.unwrap().resyncs >= 2);
    assert!(
        !bad_transform.load(Ordering::Acquire),
        "an object was transformed twice"
    );
    running.stop().await;
}

fn config_map(name: &str) -> JsonObject {
    JsonObject::new(Some("testnamespace"), name)
}

/// client-go tools/cache/controller_test.go: TestDeletionHandlingObjectToName
///
/// Ours: the key of a tombstone is the key of its object.
#[test]
fn deletion_handling_object_to_name() {
    let cm = Arc::new(config_map("testname"));
    let key = informer::key_of(cm.as_ref()).unwrap();
    let deleted = ObjectOrTombstone::Tombstone(Tombstone {
        key: key.clone(),
        last_known: Arc::clone(&cm),
    });
    assert_eq!(deleted.key().unwrap(), key);
    assert_eq!(key.as_str(), "testnamespace/testname");
}

/// client-go tools/cache/controller_test.go: TestDeletedObjectGetObjectName
///
/// The cases with a nil or missing object cannot be written: our tombstone always holds an
/// object.
#[test]
fn deleted_object_get_object_name() {
    let cm = Arc::new(config_map("testname"));
    let name = |o: &ObjectOrTombstone<JsonObject>| {
        let obj = o.object();
        (
            obj.object_namespace().map(str::to_owned),
            obj.object_name().map(str::to_owned),
        )
    };
    let expected = (
        Some("testnamespace".to_owned()),
        Some("testname".to_owned()),
    );
    assert_eq!(name(&ObjectOrTombstone::Object(Arc::clone(&cm))), expected);
    let tombstone = ObjectOrTombstone::Tombstone(Tombstone {
        key: informer::key_of(cm.as_ref()).unwrap(),
        last_known: Arc::clone(&cm),
    });
    assert_eq!(name(&tombstone), expected);
}

/// client-go tools/cache/controller_test.go: TestDeletedObjectGetKey
///
/// Same limits as above.
#[test]
fn deleted_object_get_key() {
    let cm = Arc::new(config_map("testname"));
    let expected = ObjectKey::new(Some("testnamespace"), "testname").unwrap();
    assert_eq!(
        ObjectOrTombstone::Object(Arc::clone(&cm)).key().unwrap(),
        expected
    );
    let tombstone = ObjectOrTombstone::Tombstone(Tombstone {
        key: expected.clone(),
        last_known: Arc::clone(&cm),
    });
    assert_eq!(tombstone.key().unwrap(), expected);
    // The tombstone's key is authoritative, whatever its object says.
    let other = ObjectOrTombstone::Tombstone(Tombstone {
        key: expected.clone(),
        last_known: Arc::new(config_map("renamed")),
    });
    assert_eq!(other.key().unwrap(), expected);
}

/// An indexer that refuses to store the objects named in `failing` (client-go's
/// `mockTxnStore`), and counts what it stored.
struct RefusingIndexer {
    inner: IndexedStore<JsonObject>,
    failing: BTreeSet<String>,
    stored: Arc<AtomicUsize>,
}

impl RefusingIndexer {
    fn check(&self, obj: &JsonObject) -> Result<(), StoreError> {
        if self.failing.contains(&obj_name(obj)) {
            return Err(StoreError::Backend {
                context: format!("storing {}", obj_name(obj)),
                source: "test error".into(),
            });
        }
        self.stored.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }
}

impl KnownObjects<JsonObject> for RefusingIndexer {
    fn list_keys(&self) -> Vec<ObjectKey> {
        KnownObjects::list_keys(&self.inner)
    }
    fn get_by_key(&self, key: &str) -> Option<Arc<JsonObject>> {
        KnownObjects::get_by_key(&self.inner, key)
    }
}

impl Store<JsonObject> for RefusingIndexer {
    fn add(&self, obj: Arc<JsonObject>) -> Result<Option<Arc<JsonObject>>, StoreError> {
        self.check(&obj)?;
        Store::add(&self.inner, obj)
    }
    fn delete(&self, obj: &JsonObject) -> Result<Option<Arc<JsonObject>>, StoreError> {
        Store::delete(&self.inner, obj)
    }
    fn delete_by_key(&self, key: &str) -> Option<Arc<JsonObject>> {
        Store::delete_by_key(&self.inner, key)
    }
    fn get(&self, obj: &JsonObject) -> Result<Option<Arc<JsonObject>>, StoreError> {
        Store::get(&self.inner, obj)
    }
    fn list(&self) -> Vec<Arc<JsonObject>> {
        Store::list(&self.inner)
    }
    fn len(&self) -> usize {
        Store::len(&self.inner)
    }
    fn replace(&self, objects: Vec<Arc<JsonObject>>, rv: &str) -> Result<(), StoreError> {
        Store::replace(&self.inner, objects, rv)
    }
}

impl Indexer<JsonObject> for RefusingIndexer {
    fn index(&self, name: &str, obj: &JsonObject) -> Result<Vec<Arc<JsonObject>>, StoreError> {
        Indexer::index(&self.inner, name, obj)
    }
    fn index_keys(&self, name: &str, value: &str) -> Result<Vec<ObjectKey>, StoreError> {
        Indexer::index_keys(&self.inner, name, value)
    }
    fn list_index_func_values(&self, name: &str) -> Result<Vec<String>, StoreError> {
        Indexer::list_index_func_values(&self.inner, name)
    }
    fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<JsonObject>>, StoreError> {
        Indexer::by_index(&self.inner, name, value)
    }
    fn index_names(&self) -> Vec<String> {
        Indexer::index_names(&self.inner)
    }
    fn add_indexers(&self, indexers: Indexers<JsonObject>) -> Result<(), StoreError> {
        Indexer::add_indexers(&self.inner, indexers)
    }
}

/// client-go's TestProcessDeltasInBatch, one row: the objects `listed` arrive in one batch
/// (the first list, through the in-order queue); the indexer refuses `failing`. Handlers hear
/// only what was stored; the refused ones are counted as apply errors.
async fn process_deltas_in_batch(listed: &[&str], failing: &[&str], expected: &[&str]) {
    process_deltas_in_batch_with(listed, failing, expected, true).await;
}

/// The same, with a handler registered (`listen`) or none: without one the processing loop
/// writes without reading the cache, and the same objects must be stored and refused.
async fn process_deltas_in_batch_with(
    listed: &[&str],
    failing: &[&str],
    expected: &[&str],
    listen: bool,
) {
    let stored = Arc::new(AtomicUsize::new(0));
    let indexer = RefusingIndexer {
        inner: IndexedStore::new(),
        failing: failing.iter().map(|s| (*s).to_owned()).collect(),
        stored: Arc::clone(&stored),
    };
    let items: Vec<JsonObject> = listed
        .iter()
        .enumerate()
        .map(|(i, n)| config_map(n).with_resource_version((i + 1).to_string()))
        .collect();
    let source = FakeSource::new(move |_: &ListOptions| -> Result<ListPage<JsonObject>, _> {
        Ok(list_of(items.clone(), "10"))
    });
    let mut config = InformerConfig {
        indexer: Some(Box::new(indexer)),
        queue: QueueChoice::in_order(),
        ..InformerConfig::default()
    };
    list_then_watch(&mut config);
    let informer = SharedIndexInformer::new(source, config).unwrap();
    let received = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&received);
    if listen {
        informer
            .add_handler(handler().on_change(move |o: &Arc<JsonObject>| {
                sink.lock().push(obj_name(o));
            }))
            .unwrap();
    }
    let running = Running::start(&informer);
    assert!(informer.wait_for_sync().await);
    tokio::time::sleep(millis(100)).await;
    if listen {
        assert_eq!(*received.lock(), expected);
    }
    let mut cached: Vec<String> = informer
        .lister()
        .list_all()
        .iter()
        .map(|o| obj_name(o))
        .collect();
    cached.sort();
    assert_eq!(cached, expected);
    assert_eq!(stored.load(Ordering::Acquire), expected.len());
    let stats = informer.stats();
    assert_eq!(stats.apply_errors as usize, failing.len());
    assert_eq!(stats.deltas as usize, expected.len());
    running.stop().await;
}

/// client-go tools/cache/controller_test.go: TestProcessDeltasInBatch/all transaction succeeding should works
#[tokio::test(start_paused = true)]
async fn process_deltas_in_batch_all_succeeding() {
    process_deltas_in_batch(&["testname1"], &[], &["testname1"]).await;
}

/// client-go tools/cache/controller_test.go: TestProcessDeltasInBatch/all transaction failing should not trigger listener
#[tokio::test(start_paused = true)]
async fn process_deltas_in_batch_all_failing() {
    process_deltas_in_batch(&["testname1"], &["testname1"], &[]).await;
}

/// client-go tools/cache/controller_test.go: TestProcessDeltasInBatch/partial transaction failing should only trigger successful events to listener #1
#[tokio::test(start_paused = true)]
async fn process_deltas_in_batch_partial_failing_1() {
    process_deltas_in_batch(&["testname1", "testname2"], &["testname2"], &["testname1"]).await;
}

/// client-go tools/cache/controller_test.go: TestProcessDeltasInBatch/partial transaction
/// failing should only trigger successful events to listener #2, with no listener registered
/// (informer-rs writes without reading the cache then; upstream has no such path).
#[tokio::test(start_paused = true)]
async fn process_deltas_in_batch_partial_failing_2_without_a_listener() {
    process_deltas_in_batch_with(
        &["testname1", "testname2", "testname3"],
        &["testname2"],
        &["testname1", "testname3"],
        false,
    )
    .await;
}

/// client-go tools/cache/controller_test.go: TestProcessDeltasInBatch/partial transaction failing should only trigger successful events to listener #2
#[tokio::test(start_paused = true)]
async fn process_deltas_in_batch_partial_failing_2() {
    process_deltas_in_batch(
        &["testname1", "testname2", "testname3"],
        &["testname2"],
        &["testname1", "testname3"],
    )
    .await;
}

/// One notification as client-go's `eventRecorder` records it: the action, the key, the
/// event's resourceVersion and the store's at the time the handler ran ("" when absent).
type Record = (String, String, String, String);

/// An informer whose queue the test also writes to directly, as client-go's TestReplaceEvents
/// does (`atomic`: the in-order queue, whose replace is one batch; else DeltaFifo).
struct DirectQueue {
    informer: SharedIndexInformer<JsonObject>,
    queue: Arc<dyn Queue<JsonObject>>,
    history: Arc<Mutex<Vec<Record>>>,
    running: Running,
}

impl DirectQueue {
    async fn start(source: Arc<FakeSource>, atomic: bool) -> Self {
        // The informer builds the queue with its indexer; the test keeps a handle on it, to
        // write to it directly.
        let built: Arc<std::sync::OnceLock<Arc<dyn Queue<JsonObject>>>> = Arc::default();
        let slot = Arc::clone(&built);
        let build: informer::QueueBuilder<JsonObject> = Box::new(move |wiring| {
            let known = Some(wiring.known_objects);
            let queue: Arc<dyn Queue<JsonObject>> = if atomic {
                Arc::new(InOrderFifo::new(InOrderFifoConfig {
                    known_objects: known,
                    ..InOrderFifoConfig::default()
                }))
            } else {
                Arc::new(DeltaFifo::new(DeltaFifoConfig {
                    known_objects: known,
                    ..DeltaFifoConfig::default()
                }))
            };
            let _ = slot.set(Arc::clone(&queue));
            queue
        });
        let mut config = InformerConfig {
            queue: QueueChoice::Custom(build),
            ..InformerConfig::default()
        };
        list_then_watch(&mut config);
        let informer = SharedIndexInformer::new(source, config).unwrap();
        let queue = Arc::clone(built.get().expect("the informer built its queue"));
        let history: Arc<Mutex<Vec<Record>>> = Arc::default();
        let record = {
            let (history, store) = (Arc::clone(&history), informer.lister());
            move |action: &str, key: String, obj: &JsonObject| {
                let store_rv = store.get_by_key(&key).map(|o| rv(&o)).unwrap_or_default();
                history
                    .lock()
                    .push((action.to_owned(), key, rv(obj), store_rv));
            }
        };
        let (on_add, on_update, on_delete) = (record.clone(), record.clone(), record);
        informer
            .add_handler(
                handler()
                    .on_add(move |o: &Arc<JsonObject>, _| on_add("add", key(o), o))
                    .on_update(move |_: &Arc<JsonObject>, o: &Arc<JsonObject>| {
                        on_update("update", key(o), o)
                    })
                    .on_delete(move |o: &ObjectOrTombstone<JsonObject>| {
                        on_delete("delete", o.key().unwrap().to_string(), o.object())
                    }),
            )
            .unwrap();
        let running = Running::start(&informer);
        assert!(informer.wait_for_sync().await);
        Self {
            informer,
            queue,
            history,
            running,
        }
    }

    async fn wait_for(&self, n: usize) {
        eventually("the events", || self.history.lock().len() >= n).await;
    }

    fn take(&self) -> Vec<Record> {
        std::mem::take(&mut *self.history.lock())
    }
}

fn pod_at(name: &str, rv: &str) -> Arc<JsonObject> {
    Arc::new(JsonObject::new(Some("default"), name).with_resource_version(rv))
}

fn record(action: &str, key: &str, event_rv: &str, store_rv: &str) -> Record {
    (action.into(), key.into(), event_rv.into(), store_rv.into())
}

/// client-go's testReplaceEvents, one row: `initial` added through the queue, then
/// `replaced` replaces it; the handler's history (sorted by key, as client-go sorts the
/// deletions) and the store's content.
async fn replace_events(
    atomic: bool,
    initial: &[(&str, &str)],
    replaced: &[(&str, &str)],
    replace_rv: &str,
    expected: &[Record],
) {
    let source = FakeSource::new(|_| Ok(list_of(vec![], "1")));
    let rig = DirectQueue::start(source, atomic).await;
    for (name, rv) in initial {
        rig.queue.add(pod_at(name, rv)).unwrap();
    }
    rig.wait_for(initial.len()).await;
    rig.take();
    let items: Vec<Arc<JsonObject>> = replaced.iter().map(|(n, rv)| pod_at(n, rv)).collect();
    rig.queue.replace(items, replace_rv).unwrap();
    rig.wait_for(expected.len()).await;
    tokio::time::sleep(millis(100)).await;
    let mut history = rig.take();
    history.sort_by(|a, b| a.1.cmp(&b.1));
    let mut expected = expected.to_vec();
    expected.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(history, expected, "atomic {atomic}");
    let store: BTreeMap<String, String> = rig
        .informer
        .lister()
        .list_all()
        .iter()
        .map(|o| (key(o), rv(o)))
        .collect();
    let want: BTreeMap<String, String> = replaced
        .iter()
        .map(|(n, rv)| (format!("default/{n}"), (*rv).to_owned()))
        .collect();
    assert_eq!(store, want);
    rig.running.stop().await;
}

async fn replace_events_create_with_no_initial_objects(atomic: bool) {
    replace_events(
        atomic,
        &[],
        &[("pod-1", "1")],
        "1",
        &[record("add", "default/pod-1", "1", "1")],
    )
    .await;
}

async fn replace_events_delete_all_objects(atomic: bool) {
    replace_events(
        atomic,
        &[("pod-1", "1"), ("pod-3", "2")],
        &[],
        "2",
        &[
            record("delete", "default/pod-1", "1", ""),
            record("delete", "default/pod-3", "2", ""),
        ],
    )
    .await;
}

async fn replace_events_create_update_delete(atomic: bool) {
    replace_events(
        atomic,
        &[("pod-1", "1"), ("pod-2", "2"), ("pod-3", "3")],
        &[("pod-1", "4"), ("pod-2", "5"), ("pod-4", "6")],
        "6",
        &[
            record("delete", "default/pod-3", "3", ""),
            record("update", "default/pod-1", "4", "4"),
            record("update", "default/pod-2", "5", "5"),
            record("add", "default/pod-4", "6", "6"),
        ],
    )
    .await;
}

/// client-go tools/cache/controller_test.go: TestReplaceEvents/Create with no initial objects atomic: false
#[tokio::test(start_paused = true)]
async fn replace_events_create_with_no_initial_objects_atomic_false() {
    replace_events_create_with_no_initial_objects(false).await;
}

/// client-go tools/cache/controller_test.go: TestReplaceEvents/Create with no initial objects atomic: true
#[tokio::test(start_paused = true)]
async fn replace_events_create_with_no_initial_objects_atomic_true() {
    replace_events_create_with_no_initial_objects(true).await;
}

/// client-go tools/cache/controller_test.go: TestReplaceEvents/Delete all objects atomic: false
#[tokio::test(start_paused = true)]
async fn replace_events_delete_all_objects_atomic_false() {
    replace_events_delete_all_objects(false).await;
}

/// client-go tools/cache/controller_test.go: TestReplaceEvents/Delete all objects atomic: true
#[tokio::test(start_paused = true)]
async fn replace_events_delete_all_objects_atomic_true() {
    replace_events_delete_all_objects(true).await;
}

/// client-go tools/cache/controller_test.go: TestReplaceEvents/Create, update, delete atomic: false
#[tokio::test(start_paused = true)]
async fn replace_events_create_update_delete_atomic_false() {
    replace_events_create_update_delete(false).await;
}

/// client-go tools/cache/controller_test.go: TestReplaceEvents/Create, update, delete atomic: true
#[tokio::test(start_paused = true)]
async fn replace_events_create_update_delete_atomic_true() {
    replace_events_create_update_delete(true).await;
}

/// A source whose list answers from `state` and whose watches the test expires by hand
/// (client-go's `FakeControllerSource` with `ModifyDropWatch`, `AddDropWatch`, `ResetWatch`).
fn state_source(state: Arc<Mutex<(Vec<JsonObject>, u64)>>) -> Arc<FakeSource> {
    FakeSource::new(move |_| {
        let (items, rv) = state.lock().clone();
        Ok(list_of(items, &rv.to_string()))
    })
}

/// client-go's testResetWatch with `atomic` choosing the queue.
async fn reset_watch(atomic: bool) {
    let pod = |name: &str, rv: u64| {
        JsonObject::new(Some("default"), name).with_resource_version(rv.to_string())
    };
    let state = Arc::new(Mutex::new((vec![pod("pod-1", 1)], 1u64)));
    let source = state_source(Arc::clone(&state));
    let mut config = InformerConfig {
        queue: if atomic {
            QueueChoice::in_order()
        } else {
            QueueChoice::DeltaFifo
        },
        ..InformerConfig::default()
    };
    list_then_watch(&mut config);
    let informer = SharedIndexInformer::new(source.clone(), config).unwrap();
    let log = Log::default();
    informer.add_handler(log.handler()).unwrap();
    let running = Running::start(&informer);
    let watch = source.next_watch().await;
    log.wait_for_len(1).await;
    assert!(
        matches!(&log.seen()[0], Seen::Add { key, initial: true, .. } if key == "default/pod-1")
    );
    // Changes the watch never reports; then the watch is reset (expired): a relist.
    *state.lock() = (vec![pod("pod-1", 2), pod("pod-2", 3)], 3);
    watch.error(Status::failure(410, "Expired", "reset"));
    log.wait_for_len(3).await;
    let after = log.seen()[1..].to_vec();
    assert!(
        after
            .iter()
            .any(|s| matches!(s, Seen::Update { key, .. } if key == "default/pod-1")),
        "{after:?}"
    );
    assert!(
        after
            .iter()
            .any(|s| matches!(s, Seen::Add { key, initial: false, .. } if key == "default/pod-2")),
        "{after:?}"
    );
    assert_eq!(after.len(), 2);
    running.stop().await;
}

/// client-go tools/cache/controller_test.go: TestResetWatch/atomic false
#[tokio::test(start_paused = true)]
async fn reset_watch_atomic_false() {
    reset_watch(false).await;
}

/// client-go tools/cache/controller_test.go: TestResetWatch/atomic true
#[tokio::test(start_paused = true)]
async fn reset_watch_atomic_true() {
    reset_watch(true).await;
}

/// client-go tools/cache/controller_test.go: TestStoreResourceVersion
///
/// client-go's store records the last resourceVersion; ours is the informer's
/// `last_synced_resource_version`.
#[tokio::test(start_paused = true)]
async fn store_resource_version() {
    let server = FakeApiServer::new();
    server.create(RESOURCE, &cm("pod-1")).unwrap();
    let informer = informer(&server, InformerConfig::default());
    let log = Log::default();
    informer.add_handler(log.handler()).unwrap();
    let running = Running::start(&informer);
    running.synced(&server).await;
    log.wait_for_len(1).await;
    assert!(matches!(&log.seen()[0], Seen::Add { initial: true, .. }));
    let updated = server
        .update(RESOURCE, &cm("pod-1").with_label("foo", "bar"))
        .unwrap();
    log.wait_for_len(2).await;
    let Seen::Update { new_rv, .. } = &log.seen()[1] else {
        panic!("{:?}", log.seen())
    };
    assert_eq!(*new_rv, updated.resource_version().to_string());
    assert_eq!(
        informer.last_synced_resource_version().as_deref(),
        Some(new_rv.as_str())
    );
    server.delete(RESOURCE, Some(NS), "pod-1").unwrap();
    log.wait_for_len(3).await;
    let Seen::Delete { rv, .. } = &log.seen()[2] else {
        panic!("{:?}", log.seen())
    };
    assert_eq!(
        informer.last_synced_resource_version().as_deref(),
        Some(rv.as_str())
    );
    running.stop().await;
}
