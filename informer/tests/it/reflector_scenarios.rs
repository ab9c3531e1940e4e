//! Reflector scenarios against the in-process fake API server: the requests are asserted from
//! the server's request log, times from virtual time, and the outcome by popping the queue
//! into a store and comparing it with the server's state.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use fake_apiserver::{FakeApiServer, RawLine, RequestRecord, status};
use informer::reflector::{
    BackoffConfig, FailureContext, Reflector, ReflectorConfig, RestartReason, Stage, Then,
    WatchListMode,
};
use informer_core::{DeltaType, Error, ErrorClass, KnownObjects, Queue};
use informer_fifo::{DeltaFifo, DeltaFifoConfig};
use informer_store::IndexedStore;
use informer_testing::JsonObject;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::reflector_support::*;
use crate::support::{NS, RESOURCE, millis, secs};

fn cm(name: &str, version: &str) -> JsonObject {
    JsonObject::new(Some(NS), name).with_label("v", version)
}

/// The server's state as `key → resourceVersion`.
fn server_state(server: &FakeApiServer) -> BTreeMap<String, String> {
    server
        .objects(RESOURCE, Some(NS))
        .unwrap()
        .iter()
        .map(|o| {
            (
                format!("{NS}/{}", o.name()),
                o.resource_version().to_string(),
            )
        })
        .collect()
}

/// The default configuration with paginated lists: most scenarios here are about list+watch
/// (the default streams the initial list first since issue 10; the streaming scenarios set
/// it explicitly).
fn list_watch() -> ReflectorConfig<JsonObject> {
    ReflectorConfig {
        list_watch: informer::reflector::ListWatchConfig {
            watch_list: WatchListMode::Off,
            ..informer::reflector::ListWatchConfig::default()
        },
        ..ReflectorConfig::default()
    }
}

type Failures = Arc<Mutex<Vec<(Stage, ErrorClass, Option<Then>)>>>;

/// A server, a reflector over it feeding a `DeltaFifo`, and a consumer popping into a store.
struct Rig {
    server: FakeApiServer,
    lw: Arc<TimedListerWatcher<fake_apiserver::FakeListerWatcher<JsonObject>>>,
    reflector: Arc<Reflector<JsonObject>>,
    consumer: Consumer,
    failures: Failures,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Rig {
    fn start(server: FakeApiServer, config: ReflectorConfig<JsonObject>) -> Self {
        Self::start_with_queue(server, config, None)
    }

    fn start_with_queue(
        server: FakeApiServer,
        mut config: ReflectorConfig<JsonObject>,
        queue: Option<Arc<dyn Queue<JsonObject>>>,
    ) -> Self {
        let lw = TimedListerWatcher::new(server.lister_watcher(RESOURCE, Some(NS)).unwrap());
        let store = Arc::new(IndexedStore::<JsonObject>::new());
        let known: Arc<dyn KnownObjects<JsonObject>> = store.clone();
        let queue = queue.unwrap_or_else(|| {
            Arc::new(DeltaFifo::new(DeltaFifoConfig {
                known_objects: Some(Arc::clone(&known)),
                ..DeltaFifoConfig::default()
            }))
        });
        let failures: Failures = Arc::default();
        let sink = Arc::clone(&failures);
        config.name = "configmaps".into();
        config.seed = Some(42);
        config.watch_error_handler = Some(Arc::new(move |e: &Error, cx: &FailureContext<'_>| {
            sink.lock().push((cx.stage, e.class(), cx.then));
        }));
        let reflector = Arc::new(Reflector::new(
            lw.clone(),
            queue.clone(),
            Some(known),
            config,
        ));
        let consumer = Consumer::spawn(queue, store);
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let reflector = Arc::clone(&reflector);
            let cancel = cancel.clone();
            async move { reflector.run(cancel).await }
        });
        Self {
            server,
            lw,
            reflector,
            consumer,
            failures,
            cancel,
            task,
        }
    }

    async fn synced(&self) {
        until("first sync and an open watch", || {
            self.reflector.has_synced() && self.server.open_watches(RESOURCE) == 1
        })
        .await;
    }

    async fn converged(&self) {
        until("the store equals the server", || {
            self.consumer.state() == server_state(&self.server)
        })
        .await;
    }

    async fn stop(self) -> (FakeApiServer, Consumer) {
        self.cancel.cancel();
        self.task.await.unwrap();
        self.server.faults().assert_all_used();
        (self.server, self.consumer)
    }

    fn requests(&self) -> Vec<RequestRecord> {
        self.server.requests()
    }

    fn failures(&self) -> Vec<(Stage, ErrorClass, Option<Then>)> {
        self.failures.lock().clone()
    }
}

fn is_list(r: &RequestRecord) -> bool {
    r.is_list_of(RESOURCE)
}

fn is_watch(r: &RequestRecord) -> bool {
    r.is_watch_of(RESOURCE)
}

fn seeded(names: &[&str]) -> FakeApiServer {
    let server = FakeApiServer::new();
    for name in names {
        server.create(RESOURCE, &cm(name, "1")).unwrap();
    }
    server
}

#[tokio::test(start_paused = true)]
async fn compaction_during_a_watch_gap_relists_with_the_right_resource_versions() {
    let rig = Rig::start(seeded(&["c0", "c1", "c2"]), list_watch());
    rig.synced().await;
    let listed = rig.server.resource_version().to_string();
    tokio::time::sleep(secs(2)).await;
    // The watch drops; before the reflector is back, objects change and history is compacted.
    rig.server.faults().drop_watches(RESOURCE);
    rig.server.update(RESOURCE, &cm("c0", "2")).unwrap();
    rig.server.delete(RESOURCE, Some(NS), "c1").unwrap();
    rig.server.create(RESOURCE, &cm("c3", "1")).unwrap();
    let compacted = rig.server.compact_all().to_string();
    rig.converged().await;

    let requests = rig.requests();
    assert_eq!(requests.len(), 5, "{requests:#?}");
    // First list: any state, paginated.
    assert!(is_list(&requests[0]));
    assert_eq!(requests[0].param("resourceVersion"), Some("0"));
    assert_eq!(requests[0].param("limit"), Some("500"));
    // Watch from the list's resourceVersion, with bookmarks and a timeout in [300, 600).
    for watch in [&requests[1], &requests[2]] {
        assert!(is_watch(watch));
        assert_eq!(watch.param("resourceVersion"), Some(listed.as_str()));
        assert_eq!(watch.param("allowWatchBookmarks"), Some("true"));
        let timeout: u32 = watch.param("timeoutSeconds").unwrap().parse().unwrap();
        assert!((300..600).contains(&timeout));
    }
    // The re-watch got 410: relist, not older than the last seen resourceVersion, without a
    // page size (client-go's choice: the API server answers it from its watch cache instead
    // of paging through etcd); a bare resourceVersion without a limit means "not older than".
    assert!(is_list(&requests[3]));
    assert_eq!(requests[3].param("resourceVersion"), Some(listed.as_str()));
    assert_eq!(requests[3].param("resourceVersionMatch"), None);
    assert_eq!(requests[3].param("limit"), None);
    assert!(is_watch(&requests[4]));
    assert_eq!(
        requests[4].param("resourceVersion"),
        Some(compacted.as_str())
    );

    assert_eq!(
        rig.failures(),
        vec![(Stage::Watch, ErrorClass::Expired, Some(Then::Relist))]
    );
    let stats = rig.reflector.stats();
    assert_eq!(stats.counters.relists, 1);
    assert_eq!(stats.counters.watch_restarts.get(RestartReason::Ended), 1);
    assert_eq!(stats.counters.watch_restarts.get(RestartReason::Expired), 1);
    assert_eq!(
        stats.last_synced_resource_version.as_deref(),
        Some(compacted.as_str())
    );
    let (_, consumer) = rig.stop().await;
    // The deletion seen only by the relist arrives once, as a tombstone.
    let deletes: Vec<_> = consumer
        .processed()
        .into_iter()
        .filter(|p| p.kind == DeltaType::Deleted)
        .collect();
    assert_eq!(deletes.len(), 1);
    assert_eq!(deletes[0].key, "ns/c1");
    assert!(deletes[0].tombstone);
}

#[tokio::test(start_paused = true)]
async fn expired_continue_mid_list_restarts_as_one_full_list_at_the_original_rv() {
    let server = FakeApiServer::new();
    for i in 0..1200 {
        server
            .create(RESOURCE, &cm(&format!("c{i:04}"), "1"))
            .unwrap();
    }
    let rig = Rig::start(server, list_watch());
    rig.synced().await;
    let listed = rig.server.resource_version().to_string();
    // Slow lists, so the test can expire the token while the second page is in flight.
    rig.server.faults().delay_lists(RESOURCE, Some(secs(1)));
    // The relist at the last seen resourceVersion (one request, no page size) gets 410 too:
    // the consistent list that follows is paginated.
    rig.server.faults().fail_lists(
        RESOURCE,
        1,
        informer::Status::failure(410, "Expired", "too old resource version"),
    );
    // The watch is told 410 before it sees this update: the relist brings it.
    rig.server.faults().expire_watches(RESOURCE);
    rig.server.update(RESOURCE, &cm("c0007", "2")).unwrap();
    until("a continue page is requested", || {
        rig.requests().iter().any(|r| r.param("continue").is_some())
    })
    .await;
    rig.server.faults().expire_continue_tokens();
    rig.converged().await;

    let requests = rig.requests();
    let relist: Vec<_> = requests[2..].to_vec();
    assert_eq!(relist.len(), 5, "{requests:#?}");
    // The relist at the last seen resourceVersion, unpaginated: 410.
    assert_eq!(relist[0].param("resourceVersion"), Some(listed.as_str()));
    assert_eq!(relist[0].param("limit"), None);
    // Page one of the consistent list that follows at once.
    assert_eq!(relist[1].param("resourceVersion"), None);
    assert_eq!(relist[1].param("resourceVersionMatch"), None);
    assert_eq!(relist[1].param("limit"), Some("500"));
    // Page two: only the token and the limit.
    assert!(relist[2].param("continue").is_some());
    assert_eq!(relist[2].param("resourceVersion"), None);
    assert_eq!(relist[2].param("resourceVersionMatch"), None);
    assert_eq!(relist[2].param("limit"), Some("500"));
    // The token expired: one full list, without limit, at the original (unset)
    // resourceVersion.
    assert!(is_list(&relist[3]));
    assert_eq!(relist[3].param("continue"), None);
    assert_eq!(relist[3].param("limit"), None);
    assert_eq!(relist[3].param("resourceVersion"), None);
    assert!(is_watch(&relist[4]));
    assert_eq!(
        rig.failures(),
        vec![
            (Stage::Watch, ErrorClass::Expired, Some(Then::Relist)),
            (Stage::List, ErrorClass::Expired, Some(Then::List)),
            (Stage::List, ErrorClass::Expired, Some(Then::List)),
        ]
    );
    rig.stop().await;
}

#[tokio::test(start_paused = true)]
async fn streaming_list_ends_with_the_bookmark_and_replaces_atomically() {
    let queue = RecordingQueue::new();
    let config = ReflectorConfig {
        list_watch: informer::reflector::ListWatchConfig {
            watch_list: WatchListMode::On,
            ..list_watch().list_watch
        },
        ..list_watch()
    };
    let rig = Rig::start_with_queue(seeded(&["a", "b", "c"]), config, Some(queue.clone()));
    rig.synced().await;
    let snapshot = rig.server.resource_version().to_string();
    rig.server.update(RESOURCE, &cm("b", "2")).unwrap();
    let updated = rig.server.resource_version().to_string();
    until("the update arrives", || queue.ops().len() == 2).await;

    let requests = rig.requests();
    assert_eq!(
        requests.len(),
        1,
        "one streaming request, no list: {requests:#?}"
    );
    assert!(is_watch(&requests[0]));
    assert_eq!(requests[0].param("sendInitialEvents"), Some("true"));
    assert_eq!(
        requests[0].param("resourceVersionMatch"),
        Some("NotOlderThan")
    );
    assert_eq!(requests[0].param("allowWatchBookmarks"), Some("true"));
    assert_eq!(requests[0].param("resourceVersion"), None);
    let ops = queue.ops();
    assert_eq!(
        ops[0],
        Op::Replace(
            vec!["ns/a@1".into(), "ns/b@2".into(), "ns/c@3".into()],
            snapshot
        )
    );
    assert_eq!(ops[1], Op::Update("ns/b".into(), updated.clone()));
    assert_eq!(rig.reflector.last_synced_resource_version(), Some(updated));
    assert_eq!(rig.reflector.stats().counters.lists, 1);
    rig.stop().await;
}

#[tokio::test(start_paused = true)]
async fn server_ignoring_send_initial_events_falls_back_to_list_and_watch() {
    let server = seeded(&["a", "b"]);
    server.faults().ignore_send_initial_events(RESOURCE, true);
    let queue = RecordingQueue::new();
    let config = ReflectorConfig {
        list_watch: informer::reflector::ListWatchConfig {
            watch_list: WatchListMode::On,
            initial_events_timeout: secs(10),
            ..list_watch().list_watch
        },
        ..list_watch()
    };
    let rig = Rig::start_with_queue(server, config, Some(queue.clone()));
    rig.synced().await;
    let listed = rig.server.resource_version().to_string();

    let requests = rig.requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    assert_eq!(requests[0].param("sendInitialEvents"), Some("true"));
    assert!(is_list(&requests[1]));
    assert_eq!(requests[1].param("resourceVersion"), Some("0"));
    assert!(is_watch(&requests[2]));
    assert_eq!(requests[2].param("sendInitialEvents"), None);
    assert_eq!(requests[2].param("resourceVersion"), Some(listed.as_str()));
    let log = rig.lw.log();
    assert_eq!(log[0].at, Duration::ZERO);
    assert_eq!(log[1].at, secs(10), "the list follows the timeout at once");
    // The old server's plain ADDED events were never applied: one replace from the list.
    assert_eq!(
        queue.ops(),
        vec![Op::Replace(vec!["ns/a@1".into(), "ns/b@2".into()], listed)]
    );
    let stats = rig.reflector.stats();
    assert!(!stats.streaming);
    assert_eq!(stats.counters.streaming_fallbacks, 1);
    rig.stop().await;
}

/// Issue 10 (item 6) changed the rule: an undecodable line relists (it used to re-watch from
/// the last good resourceVersion), as client-go does.
#[tokio::test(start_paused = true)]
async fn garbage_lines_are_typed_errors_and_nothing_is_lost() {
    let rig = Rig::start(seeded(&["x"]), list_watch());
    rig.synced().await;
    let mut written = Vec::new();
    let lines = [
        RawLine::garbage(),
        RawLine::unknown_event_type(),
        RawLine::object_without_metadata(),
    ];
    for (i, line) in lines.into_iter().enumerate() {
        tokio::time::sleep(secs(2)).await;
        rig.server
            .update(RESOURCE, &cm("x", &format!("{i}a")))
            .unwrap();
        written.push(rig.server.resource_version().to_string());
        assert_eq!(rig.server.faults().inject_raw_line(RESOURCE, line), 1);
        rig.server
            .update(RESOURCE, &cm("x", &format!("{i}b")))
            .unwrap();
        written.push(rig.server.resource_version().to_string());
        until("the watch is back", || {
            rig.server.open_watches(RESOURCE) == 1
        })
        .await;
    }
    rig.converged().await;
    assert_eq!(
        rig.failures(),
        vec![
            (Stage::Watch, ErrorClass::Decode, Some(Then::Relist)),
            (Stage::Watch, ErrorClass::Decode, Some(Then::Relist)),
            // An object without a name is skipped; the watch goes on.
            (Stage::Watch, ErrorClass::InvalidObject, None),
        ]
    );
    // Each undecodable line cost a relist from the last good resourceVersion.
    let requests = rig.requests();
    assert_eq!(requests.iter().filter(|r| is_list(r)).count(), 3);
    let stats = rig.reflector.stats();
    assert_eq!(stats.counters.relists, 2);
    assert_eq!(stats.errors, 3);
    let (_, consumer) = rig.stop().await;
    // Every state the queue saw is newer than the one before, and the last write arrived.
    let seen: Vec<u64> = consumer
        .processed()
        .into_iter()
        .filter(|p| matches!(p.kind, DeltaType::Updated | DeltaType::Replaced))
        .map(|p| p.rv.parse().unwrap())
        .collect();
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    assert_eq!(
        seen.last().map(u64::to_string).as_ref(),
        written.last(),
        "{seen:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn throttled_rewatch_waits_retry_after_without_relisting() {
    let rig = Rig::start(seeded(&["a"]), list_watch());
    rig.synced().await;
    tokio::time::sleep(secs(5)).await;
    rig.server
        .faults()
        .fail_watches(RESOURCE, 1, status::too_many_requests(7));
    rig.server.faults().drop_watches(RESOURCE);
    rig.server.update(RESOURCE, &cm("a", "2")).unwrap();
    rig.converged().await;
    let log = rig.lw.log();
    assert_eq!(log.len(), 4, "{log:#?}");
    // The re-watch right after the drop gets 429; the next one comes exactly 7 s later.
    assert_eq!(log[3].at - log[2].at, secs(7));
    let requests = rig.requests();
    assert_eq!(requests.iter().filter(|r| is_list(r)).count(), 1);
    assert_eq!(
        requests[3].param("resourceVersion"),
        requests[1].param("resourceVersion")
    );
    assert_eq!(
        rig.failures(),
        vec![(
            Stage::WatchStart,
            ErrorClass::Throttled,
            Some(Then::Rewatch)
        )]
    );
    rig.stop().await;
}

#[tokio::test(start_paused = true)]
async fn too_large_resource_version_makes_the_next_list_consistent() {
    let rig = Rig::start(seeded(&["a"]), list_watch());
    rig.synced().await;
    let listed = rig.server.resource_version();
    rig.server.faults().fail_lists(
        RESOURCE,
        1,
        status::resource_version_too_large(listed + 100, listed),
    );
    rig.server.faults().expire_watches(RESOURCE);
    until("relisted and watching", || rig.requests().len() == 5).await;
    let requests = rig.requests();
    assert_eq!(
        requests[2].param("resourceVersion"),
        Some(listed.to_string().as_str())
    );
    assert!(is_list(&requests[3]));
    assert_eq!(
        requests[3].param("resourceVersion"),
        None,
        "consistent read"
    );
    assert_eq!(requests[3].param("resourceVersionMatch"), None);
    assert_eq!(requests[3].param("limit"), Some("500"));
    assert!(is_watch(&requests[4]));
    // The consistent retry is immediate.
    let log = rig.lw.log();
    assert_eq!(log[3].at, log[2].at);
    assert_eq!(
        rig.failures(),
        vec![
            (Stage::Watch, ErrorClass::Expired, Some(Then::Relist)),
            (
                Stage::List,
                ErrorClass::ResourceVersionTooLarge,
                Some(Then::List)
            ),
        ]
    );
    rig.stop().await;
}

#[tokio::test(start_paused = true)]
async fn backoff_delays_stay_in_their_jitter_bounds_and_reset_after_two_healthy_minutes() {
    let server = seeded(&["a"]);
    server
        .faults()
        .fail_lists(RESOURCE, 7, status::internal_error("etcd is sad"));
    let rig = Rig::start(server, list_watch());
    rig.synced().await;
    let log = rig.lw.log();
    let bounds = BackoffConfig::default();
    for attempt in 0..7u32 {
        let n = attempt as usize;
        let gap = log[n + 1].at - log[n].at;
        let (low, high) = bounds.delay_bounds(attempt);
        // tokio's timer rounds sleeps up to the next millisecond.
        assert!(
            low <= gap && gap <= high + millis(1),
            "attempt {attempt}: {gap:?} not in [{low:?}, {high:?}]"
        );
    }
    assert_eq!(bounds.delay_bounds(0), (Duration::ZERO, millis(800)));
    assert_eq!(bounds.delay_bounds(6), (Duration::ZERO, secs(30)));
    // Two and a half healthy minutes, then a failed re-watch: back to the first step.
    tokio::time::sleep(secs(150)).await;
    rig.server
        .faults()
        .fail_watches(RESOURCE, 1, status::internal_error("apiserver restarting"));
    rig.server.faults().drop_watches(RESOURCE);
    until("watching again", || rig.lw.log().len() == 11).await;
    let log = rig.lw.log();
    let gap = log[10].at - log[9].at;
    assert!(gap <= millis(801), "{gap:?}");
    assert_eq!(rig.reflector.stats().counters.list_failures, 7);
    rig.stop().await;
}

#[tokio::test(start_paused = true)]
async fn resync_redelivers_the_cache_every_period_without_requests() {
    let config = ReflectorConfig {
        resync_period: Some(secs(30)),
        ..list_watch()
    };
    let rig = Rig::start(seeded(&["a", "b"]), config);
    rig.synced().await;
    tokio::time::sleep(secs(100)).await;
    let syncs: Vec<_> = rig
        .consumer
        .processed()
        .into_iter()
        .filter(|p| p.kind == DeltaType::Sync)
        .map(|p| (p.at, p.key))
        .collect();
    let mut syncs = syncs;
    syncs.sort();
    let expected: Vec<_> = [30, 60, 90]
        .into_iter()
        .flat_map(|t| [(secs(t), "ns/a".to_owned()), (secs(t), "ns/b".to_owned())])
        .collect();
    assert_eq!(syncs, expected);
    assert_eq!(rig.requests().len(), 2, "resync never talks to the server");
    assert_eq!(rig.reflector.stats().resyncs, 3);
    rig.stop().await;
}
