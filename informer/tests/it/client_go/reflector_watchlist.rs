//! client-go `tools/cache/reflector_watchlist_test.go`, ported: the streaming initial list
//! ("WatchList") against a hand-driven source, in paused time. client-go's feature gate
//! `WatchListClient` is our `WatchListMode`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use fake_apiserver::FakeApiServer;
use informer::reflector::{Reflector, ReflectorConfig, RestartReason};
use informer_core::{
    Error, KnownObjects, ListOptions, Queue, ResourceVersionMatch, Status, WatchOptions,
};
use informer_fifo::{DeltaFifo, DeltaFifoConfig};
use informer_store::IndexedStore;
use informer_testing::JsonObject;

use super::support::*;
use crate::reflector_support::{Consumer, RecordingQueue, Request};

/// A reflector streaming from `source` into a `DeltaFifo` popped into a store.
struct Rig {
    source: Arc<FakeSource>,
    reflector: Arc<Reflector<JsonObject>>,
    consumer: Consumer,
}

impl Rig {
    fn new(source: Arc<FakeSource>, config: ReflectorConfig<JsonObject>) -> Self {
        let store = Arc::new(IndexedStore::<JsonObject>::new());
        let known: Arc<dyn KnownObjects<JsonObject>> = store.clone();
        let queue: Arc<dyn Queue<JsonObject>> = Arc::new(DeltaFifo::new(DeltaFifoConfig {
            known_objects: Some(Arc::clone(&known)),
            ..DeltaFifoConfig::default()
        }));
        let reflector = Arc::new(Reflector::new(
            source.clone(),
            Arc::clone(&queue),
            Some(known),
            config,
        ));
        let consumer = Consumer::spawn(queue, store);
        Self {
            source,
            reflector,
            consumer,
        }
    }

    fn streaming(source: Arc<FakeSource>) -> Self {
        Self::new(source, streaming_config())
    }

    /// The store's keys with their resourceVersions, `name@rv`, sorted.
    fn store(&self) -> Vec<String> {
        self.consumer
            .state()
            .into_iter()
            .map(|(k, rv)| format!("{}@{rv}", k.trim_start_matches("ns/")))
            .collect()
    }
}

/// What client-go's test expects of a streaming request (timeout values aside).
fn assert_streaming(w: &WatchOptions, rv: Option<&str>) {
    assert_eq!(w.send_initial_events, Some(true), "{w:?}");
    assert!(w.allow_watch_bookmarks, "{w:?}");
    assert_eq!(
        w.resource_version_match,
        Some(ResourceVersionMatch::NotOlderThan),
        "{w:?}"
    );
    assert_eq!(w.resource_version.as_deref(), rv, "{w:?}");
    assert!(w.timeout_seconds.is_some(), "{w:?}");
}

/// What client-go's test expects of a plain watch.
fn assert_plain_watch(w: &WatchOptions, rv: &str) {
    assert_eq!(w.send_initial_events, None, "{w:?}");
    assert!(w.allow_watch_bookmarks, "{w:?}");
    assert_eq!(w.resource_version_match, None, "{w:?}");
    assert_eq!(w.resource_version.as_deref(), Some(rv), "{w:?}");
    assert!(w.timeout_seconds.is_some(), "{w:?}");
}

/// The first list client-go sends: any state, paginated.
fn assert_first_list(l: &ListOptions) {
    assert_eq!(l.resource_version.as_deref(), Some("0"), "{l:?}");
    assert_eq!(l.limit, Some(500), "{l:?}");
    assert_eq!(l.continue_token, None, "{l:?}");
}

/// client-go tools/cache/reflector_watchlist_test.go: TestNewReflectorWithDisablementWatchList/WatchListClient feature gate off, client supports WatchList semantics
#[tokio::test(start_paused = true)]
async fn new_reflector_with_disablement_watch_list_gate_off_client_supports() {
    let source = FakeSource::new(|_| Ok(list_of(vec![], "1")));
    let rig = Rig::new(source.clone(), list_watch_config());
    let running = RunningReflector::start(&rig.reflector);
    let _watch = source.next_watch().await;
    assert!(matches!(&source.requests()[0], Request::List(_)));
    assert!(!rig.reflector.stats().streaming);
    running.stop().await;
}

/// client-go tools/cache/reflector_watchlist_test.go: TestNewReflectorWithDisablementWatchList/WatchListClient feature gate on, client supports WatchList semantics
#[tokio::test(start_paused = true)]
async fn new_reflector_with_disablement_watch_list_gate_on_client_supports() {
    let source = FakeSource::streaming_only();
    // Our default (`WatchListMode::Auto`, which streams here: this reflector feeds no store
    // that reads text), as client-go's gate is on by default since 1.35.
    let rig = Rig::new(
        source.clone(),
        ReflectorConfig {
            seed: Some(7),
            ..ReflectorConfig::default()
        },
    );
    let running = RunningReflector::start(&rig.reflector);
    let watch = source.next_watch().await;
    assert_streaming(&source.watches()[0], None);
    watch.end_bookmark("1");
    eventually("streamed", || rig.reflector.stats().streaming).await;
    running.stop().await;
}

/// client-go tools/cache/reflector_watchlist_test.go: TestNewReflectorWithDisablementWatchList/WatchListClient feature gate on, client doesn't expose the IsWatchListSemanticsUnSupported method
///
/// Every one of our lister-watchers is that case; here the in-process fake server's.
#[tokio::test(start_paused = true)]
async fn new_reflector_with_disablement_watch_list_gate_on_client_does_not_expose_the_method() {
    let server = FakeApiServer::new();
    server
        .create("pods", &JsonObject::new(Some("ns"), "a"))
        .unwrap();
    let lw = Arc::new(server.lister_watcher::<JsonObject>("pods", None).unwrap());
    let reflector = Arc::new(Reflector::new(
        lw,
        RecordingQueue::new(),
        None,
        ReflectorConfig::default(),
    ));
    let running = RunningReflector::start(&reflector);
    eventually("synced", || reflector.has_synced()).await;
    let requests = server.requests();
    assert!(
        requests.iter().all(|r| !r.is_list_of("pods")),
        "{requests:?}"
    );
    assert_eq!(requests[0].param("sendInitialEvents"), Some("true"));
    assert!(reflector.stats().streaming);
    running.stop().await;
}

/// Streams `send` into one watch, then cancels; returns the reflector's last resourceVersion.
async fn streamed_resource_version(send: impl FnOnce(&FakeWatch)) -> Option<String> {
    let rig = Rig::streaming(FakeSource::streaming_only());
    let running = RunningReflector::start(&rig.reflector);
    let watch = rig.source.next_watch().await;
    send(&watch);
    tokio::time::sleep(millis(10)).await;
    running.stop().await;
    rig.reflector.last_synced_resource_version()
}

/// client-go tools/cache/reflector_watchlist_test.go: TestWatchListResourceVersion/empty resource version
#[tokio::test(start_paused = true)]
async fn watch_list_resource_version_empty_resource_version() {
    assert_eq!(streamed_resource_version(|_| {}).await, None);
}

/// client-go tools/cache/reflector_watchlist_test.go: TestWatchListResourceVersion/empty resource version without bookmark event
#[tokio::test(start_paused = true)]
async fn watch_list_resource_version_empty_resource_version_without_bookmark_event() {
    let rv = streamed_resource_version(|w| w.added(pod("p1", "1"))).await;
    assert_eq!(rv, None);
}

/// client-go tools/cache/reflector_watchlist_test.go: TestWatchListResourceVersion/non empty resource version with bookmark event and initial events annotation
#[tokio::test(start_paused = true)]
async fn watch_list_resource_version_non_empty_with_bookmark_event_and_initial_events_annotation() {
    let rv = streamed_resource_version(|w| {
        w.added(pod("p1", "1"));
        w.end_bookmark("2");
    })
    .await;
    assert_eq!(rv.as_deref(), Some("2"));
}

/// client-go tools/cache/reflector_watchlist_test.go: TestWatchList/the reflector won't be synced if the bookmark event has been received
///
/// Sic: has not been received.
#[tokio::test(start_paused = true)]
async fn watch_list_the_reflector_wont_be_synced_without_the_bookmark_event() {
    let rig = Rig::streaming(FakeSource::streaming_only());
    let running = RunningReflector::start(&rig.reflector);
    let watch = rig.source.next_watch().await;
    watch.added(pod("p1", "1"));
    tokio::time::sleep(millis(10)).await;
    running.stop().await;
    assert!(!rig.reflector.has_synced());
    assert!(rig.store().is_empty());
    let requests = rig.source.requests();
    assert_eq!(requests.len(), 1);
    assert_streaming(&rig.source.watches()[0], None);
}

/// client-go tools/cache/reflector_watchlist_test.go: TestWatchList/the reflector uses the old LIST/WATCH semantics if the UseWatchList is turned off
#[tokio::test(start_paused = true)]
async fn watch_list_uses_the_old_list_watch_semantics_if_turned_off() {
    let source = FakeSource::new(|_| Ok(list_of(vec![pod("p1", "1")], "1")));
    let rig = Rig::new(source.clone(), list_watch_config());
    let running = RunningReflector::start(&rig.reflector);
    let _watch = source.next_watch().await;
    eventually("p1", || rig.store() == ["p1@1"]).await;
    running.stop().await;
    let requests = source.requests();
    assert_eq!(requests.len(), 2);
    assert_first_list(&source.lists()[0]);
    assert_plain_watch(&source.watches()[0], "1");
}

/// A source refusing streaming watches with `refusal`, listing p1@1.
fn refusing_streaming(refusal: fn() -> Error) -> Arc<FakeSource> {
    FakeSource::with_watch(
        |_| Ok(list_of(vec![pod("p1", "1")], "1")),
        move |w| {
            if w.send_initial_events == Some(true) {
                Err(refusal())
            } else {
                Ok(())
            }
        },
    )
}

/// The fallback scenario shared by the two refusal cases.
async fn falls_back_when_refused(refusal: fn() -> Error) {
    let source = refusing_streaming(refusal);
    let rig = Rig::streaming(source.clone());
    let running = RunningReflector::start(&rig.reflector);
    let watch = source.next_watch().await;
    watch.added(pod("p2", "2"));
    eventually("p1 and p2", || rig.store() == ["p1@1", "p2@2"]).await;
    running.stop().await;
    let requests = source.requests();
    assert_eq!(requests.len(), 3, "{requests:?}");
    let Request::Watch(first) = &requests[0] else {
        panic!("{requests:?}")
    };
    assert_streaming(first, None);
    let Request::List(list) = &requests[1] else {
        panic!("{requests:?}")
    };
    assert_first_list(list);
    let Request::Watch(watch) = &requests[2] else {
        panic!("{requests:?}")
    };
    assert_plain_watch(watch, "1");
    assert_eq!(rig.reflector.stats().counters.streaming_fallbacks, 1);
}

/// client-go tools/cache/reflector_watchlist_test.go: TestWatchList/returning any other error than apierrors.NewInvalid forces fallback
///
/// Ours: an error of no known class.
#[tokio::test(start_paused = true)]
async fn watch_list_returning_any_other_error_than_invalid_forces_fallback() {
    falls_back_when_refused(|| api(Status::failure(0, "", "dummy error"))).await;
}

/// client-go tools/cache/reflector_watchlist_test.go: TestWatchList/the reflector can fall back to old LIST/WATCH semantics when a server doesn't support streaming
#[tokio::test(start_paused = true)]
async fn watch_list_can_fall_back_when_a_server_does_not_support_streaming() {
    falls_back_when_refused(|| api(Status::failure(422, "Invalid", "streaming is not allowed")))
        .await;
}

/// client-go tools/cache/reflector_watchlist_test.go: TestWatchList/prove that the reflector is synced after receiving a bookmark event
#[tokio::test(start_paused = true)]
async fn watch_list_prove_that_the_reflector_is_synced_after_receiving_a_bookmark_event() {
    let rig = Rig::streaming(FakeSource::streaming_only());
    let running = RunningReflector::start(&rig.reflector);
    let watch = rig.source.next_watch().await;
    watch.added(pod("p1", "1"));
    watch.added(pod("p2", "2"));
    assert!(!rig.reflector.has_synced());
    watch.end_bookmark("2");
    eventually("synced", || rig.reflector.has_synced()).await;
    eventually("p1 and p2", || rig.store() == ["p1@1", "p2@2"]).await;
    running.stop().await;
    assert_eq!(rig.source.requests().len(), 1);
}

/// client-go tools/cache/reflector_watchlist_test.go: TestWatchList/check if Updates and Deletes events are propagated during streaming (until the bookmark is received)
#[tokio::test(start_paused = true)]
async fn watch_list_updates_and_deletes_are_propagated_during_streaming() {
    let rig = Rig::streaming(FakeSource::streaming_only());
    let running = RunningReflector::start(&rig.reflector);
    let watch = rig.source.next_watch().await;
    watch.added(pod("p1", "1"));
    watch.added(pod("p2", "2"));
    watch.modified(pod("p1", "3").with_label("active-deadline", "12"));
    watch.added(pod("p3", "4"));
    watch.deleted(pod("p3", "5"));
    watch.end_bookmark("5");
    eventually("the snapshot", || rig.store() == ["p1@3", "p2@2"]).await;
    let p1 = rig.consumer.store.get_by_key("ns/p1").unwrap();
    assert_eq!(p1.metadata.labels["active-deadline"], "12");
    running.stop().await;
    assert_eq!(rig.source.requests().len(), 1);
}

/// client-go tools/cache/reflector_watchlist_test.go: TestWatchList/checks if the reflector retries 429
#[tokio::test(start_paused = true)]
async fn watch_list_checks_if_the_reflector_retries_429() {
    let refused = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&refused);
    let source = FakeSource::with_watch(
        |_| panic!("no list expected"),
        move |_| {
            if count.fetch_add(1, Ordering::AcqRel) < 2 {
                Err(api(Status::failure(
                    429,
                    "TooManyRequests",
                    "busy, check again later",
                )))
            } else {
                Ok(())
            }
        },
    );
    let rig = Rig::streaming(source.clone());
    let running = RunningReflector::start(&rig.reflector);
    let watch = source.next_watch().await;
    watch.added(pod("p1", "1"));
    watch.end_bookmark("2");
    eventually("p1", || rig.store() == ["p1@1"]).await;
    running.stop().await;
    let watches = source.watches();
    assert_eq!(watches.len(), 3);
    for w in &watches {
        assert_streaming(w, None);
    }
}

/// client-go tools/cache/reflector_watchlist_test.go: TestWatchList/check if stopping a watcher before sync results in creating a new watch-list request
///
/// client-go asks again at once; ours after a backoff delay.
#[tokio::test(start_paused = true)]
async fn watch_list_stopping_a_watcher_before_sync_creates_a_new_watch_list_request() {
    let rig = Rig::streaming(FakeSource::streaming_only());
    let running = RunningReflector::start(&rig.reflector);
    let first = rig.source.next_watch().await;
    first.added(pod("p1", "1"));
    first.close();
    let second = rig.source.next_watch().await;
    second.added(pod("p1", "1"));
    second.end_bookmark("1");
    eventually("p1", || rig.store() == ["p1@1"]).await;
    running.stop().await;
    let watches = rig.source.watches();
    assert_eq!(watches.len(), 2);
    assert_streaming(&watches[0], None);
    assert_streaming(&watches[1], None);
    assert_eq!(
        rig.reflector
            .stats()
            .counters
            .watch_restarts
            .get(RestartReason::InitialEventsIncomplete),
        1
    );
}

/// client-go tools/cache/reflector_watchlist_test.go: TestWatchList/stopping a watcher after synchronization results in creating a new watch request
#[tokio::test(start_paused = true)]
async fn watch_list_stopping_a_watcher_after_synchronization_creates_a_new_watch_request() {
    let rig = Rig::streaming(FakeSource::streaming_only());
    let running = RunningReflector::start(&rig.reflector);
    let first = rig.source.next_watch().await;
    first.added(pod("p1", "1"));
    first.added(pod("p2", "2"));
    first.end_bookmark("2");
    first.added(pod("p3", "3"));
    first.close();
    let second = rig.source.next_watch().await;
    second.added(pod("p4", "4"));
    eventually("p1 to p4", || {
        rig.store() == ["p1@1", "p2@2", "p3@3", "p4@4"]
    })
    .await;
    running.stop().await;
    let watches = rig.source.watches();
    assert_eq!(watches.len(), 2);
    assert_streaming(&watches[0], None);
    assert_plain_watch(&watches[1], "3");
}

/// client-go tools/cache/reflector_watchlist_test.go: TestWatchList/expiring an established watcher results in returning an error from the reflector
///
/// Ours: the error is reported and the reflector relists, streaming again.
#[tokio::test(start_paused = true)]
async fn watch_list_expiring_an_established_watcher() {
    let requests = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&requests);
    let source = FakeSource::with_watch(
        |_| panic!("no list expected"),
        move |_| {
            if count.fetch_add(1, Ordering::AcqRel) == 1 {
                Err(api(Status::failure(410, "Expired", "rv already expired")))
            } else {
                Ok(())
            }
        },
    );
    let mut config = streaming_config();
    let failures = record_failures(&mut config.watch_error_handler);
    let rig = Rig::new(source.clone(), config);
    let running = RunningReflector::start(&rig.reflector);
    let first = source.next_watch().await;
    first.added(pod("p1", "1"));
    first.end_bookmark("2");
    first.added(pod("p3", "3"));
    eventually("p1 and p3", || rig.store() == ["p1@1", "p3@3"]).await;
    first.close();
    // The re-watch from 3 is refused with 410: a relist follows, streaming from 3.
    let relist = source.next_watch().await;
    let watches = source.watches();
    assert_streaming(&watches[0], None);
    assert_plain_watch(&watches[1], "3");
    assert_streaming(&watches[2], Some("3"));
    relist.added(pod("p1", "1"));
    relist.added(pod("p3", "3"));
    relist.end_bookmark("4");
    eventually("relisted", || rig.reflector.stats().counters.lists == 2).await;
    assert_eq!(rig.store(), ["p1@1", "p3@3"]);
    running.stop().await;
    let failures = failures.lock().clone();
    assert_eq!(failures.len(), 1);
    assert!(failures[0].message.contains("rv already expired"));
}

/// client-go tools/cache/reflector_watchlist_test.go: TestWatchList/prove that the reflector is checking the value of the initialEventsEnd annotation
///
/// Ours: a bookmark not marked as the end, as our decoders report an annotation other than
/// "true".
#[tokio::test(start_paused = true)]
async fn watch_list_prove_that_the_reflector_checks_the_initial_events_end_annotation() {
    let rig = Rig::streaming(FakeSource::streaming_only());
    let running = RunningReflector::start(&rig.reflector);
    let watch = rig.source.next_watch().await;
    watch.added(pod("p1", "1"));
    watch.added(pod("p2", "2"));
    watch.bookmark("2");
    tokio::time::sleep(millis(10)).await;
    running.stop().await;
    assert!(!rig.reflector.has_synced());
    assert!(rig.store().is_empty());
    assert_eq!(rig.source.requests().len(), 1);
}
