//! client-go `tools/cache/reflector_test.go`, ported: the reflector against a hand-driven
//! source ([`FakeSource`]) or a script, in paused time unless said otherwise. Where client-go
//! calls internals (`handleWatch`, `ListAndWatch` once), we run the reflector and look at what
//! it asked for and what reached the queue. Differences are in the parity doc.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use informer::reflector::{BackoffConfig, Jitter, Reflector, ReflectorConfig, RestartReason};
use informer_core::{
    Error, ErrorClass, KnownObjects, ListOptions, Queue, ResourceVersionMatch, Status, StatusCause,
    StatusDetails, Store, WatchEvent,
};
use informer_fifo::{DeltaFifo, DeltaFifoConfig, InOrderFifo, InOrderFifoConfig};
use informer_store::IndexedStore;
use informer_testing::JsonObject;
use tokio_util::sync::CancellationToken;

use super::support::*;
use crate::reflector_support::{
    Answer, Consumer, Op, RecordingQueue, Request, ScriptedListerWatcher, Step, page,
};

/// A reflector over `source` into `queue`.
fn reflector(
    source: &Arc<FakeSource>,
    queue: Arc<dyn Queue<JsonObject>>,
    config: ReflectorConfig<JsonObject>,
) -> Arc<Reflector<JsonObject>> {
    Arc::new(Reflector::new(source.clone(), queue, None, config))
}

/// A store fed by a `DeltaFifo` that knows it, as an informer has.
struct Pipeline {
    queue: Arc<dyn Queue<JsonObject>>,
    known: Arc<dyn KnownObjects<JsonObject>>,
    consumer: Consumer,
}

impl Pipeline {
    fn delta_fifo() -> Self {
        let store = Arc::new(IndexedStore::<JsonObject>::new());
        let known: Arc<dyn KnownObjects<JsonObject>> = store.clone();
        let queue: Arc<dyn Queue<JsonObject>> = Arc::new(DeltaFifo::new(DeltaFifoConfig {
            known_objects: Some(Arc::clone(&known)),
            ..DeltaFifoConfig::default()
        }));
        let consumer = Consumer::spawn(Arc::clone(&queue), store);
        Self {
            queue,
            known,
            consumer,
        }
    }

    fn in_order() -> Self {
        let store = Arc::new(IndexedStore::<JsonObject>::new());
        let known: Arc<dyn KnownObjects<JsonObject>> = store.clone();
        let queue: Arc<dyn Queue<JsonObject>> = Arc::new(InOrderFifo::new(InOrderFifoConfig {
            known_objects: Some(Arc::clone(&known)),
            ..InOrderFifoConfig::default()
        }));
        let consumer = Consumer::spawn(Arc::clone(&queue), store);
        Self {
            queue,
            known,
            consumer,
        }
    }

    fn reflector(
        &self,
        lw: Arc<dyn informer_core::ListerWatcher<JsonObject>>,
        config: ReflectorConfig<JsonObject>,
    ) -> Arc<Reflector<JsonObject>> {
        Arc::new(Reflector::new(
            lw,
            Arc::clone(&self.queue),
            Some(Arc::clone(&self.known)),
            config,
        ))
    }

    /// The store as `key → resourceVersion`.
    fn state(&self) -> BTreeMap<String, String> {
        self.consumer.state()
    }
}

fn state(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn expired() -> Status {
    Status::failure(410, "Expired", "too old resource version")
}

fn gone_event() -> Step {
    Step::event(WatchEvent::Error(expired()))
}

fn list_rv(request: &Request) -> Option<String> {
    match request {
        Request::List(l) => l.resource_version.clone(),
        Request::Watch(_) => panic!("expected a list, got {request:?}"),
    }
}

fn lists(requests: &[Request]) -> Vec<ListOptions> {
    requests
        .iter()
        .filter_map(|r| match r {
            Request::List(l) => Some(l.clone()),
            Request::Watch(_) => None,
        })
        .collect()
}

/// client-go tools/cache/reflector_test.go: TestCloseWatchChannelOnError
#[tokio::test(start_paused = true)]
async fn close_watch_channel_on_error() {
    let source = FakeSource::new(|_| Ok(list_of(vec![], "1")));
    let queue = RecordingQueue::new();
    let r = reflector(&source, queue, list_watch_config());
    let running = RunningReflector::start(&r);
    let watch = source.next_watch().await;
    // An ERROR event ends the watch: the reflector drops the stream.
    watch.error(Status::failure(500, "InternalError", "an error object"));
    eventually("the watch is dropped", || watch.is_stopped()).await;
    running.stop().await;
}

/// client-go tools/cache/reflector_test.go: TestRunUntil
#[tokio::test(start_paused = true)]
async fn run_until() {
    let source = FakeSource::new(|_| Ok(list_of(vec![], "1")));
    let queue = RecordingQueue::new();
    let r = reflector(&source, queue.clone(), list_watch_config());
    let running = RunningReflector::start(&r);
    let watch = source.next_watch().await;
    watch.added(pod("bar", "2"));
    eventually("the event is queued", || queue.ops().len() == 2).await;
    // Cancelling stops `run` and drops the watch.
    running.stop().await;
    assert!(watch.is_stopped());
}

/// client-go tools/cache/reflector_test.go: TestReflectorResyncChan
#[tokio::test(start_paused = true)]
async fn reflector_resync_chan() {
    let source = FakeSource::new(|_| Ok(list_of(vec![], "1")));
    let queue = RecordingQueue::new();
    let config = ReflectorConfig {
        resync_period: Some(millis(1)),
        ..list_watch_config()
    };
    let r = reflector(&source, queue.clone(), config);
    let running = RunningReflector::start(&r);
    eventually("a resync", || queue.ops().contains(&Op::Resync)).await;
    let ops = queue.timed_ops();
    let replaced = ops[0].0;
    let first_resync = ops.iter().find(|(_, op)| *op == Op::Resync).unwrap().0;
    assert_eq!(first_resync - replaced, millis(1));
    running.stop().await;
}

/// client-go tools/cache/reflector_test.go: TestReflectorWatchStoppedBefore
#[tokio::test(start_paused = true)]
async fn reflector_watch_stopped_before() {
    let source = FakeSource::new(|_| panic!("list called unexpectedly"));
    let r = reflector(&source, RecordingQueue::new(), list_watch_config());
    let cancel = CancellationToken::new();
    cancel.cancel();
    r.run(cancel).await;
    assert!(source.requests().is_empty());
}

/// client-go tools/cache/reflector_test.go: TestReflectorWatchStoppedAfter
#[tokio::test(start_paused = true)]
async fn reflector_watch_stopped_after() {
    let source = FakeSource::new(|_| Ok(list_of(vec![], "1")));
    let r = reflector(&source, RecordingQueue::new(), list_watch_config());
    let running = RunningReflector::start(&r);
    let watch = source.next_watch().await;
    tokio::time::sleep(millis(10)).await;
    running.stop().await;
    assert_eq!(source.watches().len(), 1);
    assert!(watch.is_stopped());
}

/// client-go tools/cache/reflector_test.go: TestReflectorHandleWatchStoppedBefore
///
/// Ours: the token fires while the watch request has not been answered; `run` returns at once.
#[tokio::test(start_paused = true)]
async fn reflector_handle_watch_stopped_before() {
    // The script has no answer for the watch: the request waits forever.
    let lw = ScriptedListerWatcher::new(vec![Answer::List(Ok(page(vec![], "1", None)))]);
    let queue = RecordingQueue::new();
    let r = scripted_reflector(&lw, queue.clone(), list_watch_config());
    let running = RunningReflector::start(&r);
    eventually("the watch request", || lw.requests().len() == 2).await;
    running.stop().await;
    assert_eq!(queue.ops(), [Op::Replace(vec![], "1".into())]);
}

/// client-go tools/cache/reflector_test.go: TestReflectorHandleWatchStoppedAfter
///
/// Ours: the token fires after events were handled; they stay applied and the stream is
/// dropped.
#[tokio::test(start_paused = true)]
async fn reflector_handle_watch_stopped_after() {
    let source = FakeSource::new(|_| Ok(list_of(vec![], "1")));
    let queue = RecordingQueue::new();
    let r = reflector(&source, queue.clone(), list_watch_config());
    let running = RunningReflector::start(&r);
    let watch = source.next_watch().await;
    watch.added(pod("a", "2"));
    eventually("the event", || queue.ops().len() == 2).await;
    tokio::time::sleep(millis(10)).await;
    running.stop().await;
    assert!(watch.is_stopped());
    assert_eq!(queue.ops()[1], Op::Add("ns/a".into(), "2".into()));
}

/// client-go tools/cache/reflector_test.go: TestReflectorHandleWatchResultChanClosedBefore
///
/// client-go: a `VeryShortWatchError`, then a relist; ours: the same failure, then a re-watch
/// after a backoff delay.
#[tokio::test(start_paused = true)]
async fn reflector_handle_watch_result_chan_closed_before() {
    let source = FakeSource::new(|_| Ok(list_of(vec![], "1")));
    let r = reflector(&source, RecordingQueue::new(), list_watch_config());
    let running = RunningReflector::start(&r);
    let first = source.next_watch().await;
    first.close();
    let started = tokio::time::Instant::now();
    let _second = source.next_watch().await;
    assert!(started.elapsed() > Duration::ZERO, "a backoff delay first");
    let stats = r.stats();
    assert_eq!(
        stats.counters.watch_restarts.get(RestartReason::TooShort),
        1
    );
    assert_eq!(source.lists().len(), 1);
    running.stop().await;
}

/// client-go tools/cache/reflector_test.go: TestReflectorHandleWatchResultChanClosedAfter
#[tokio::test(start_paused = true)]
async fn reflector_handle_watch_result_chan_closed_after() {
    let source = FakeSource::new(|_| Ok(list_of(vec![], "1")));
    let r = reflector(&source, RecordingQueue::new(), list_watch_config());
    let running = RunningReflector::start(&r);
    let first = source.next_watch().await;
    tokio::time::sleep(millis(10)).await;
    first.close();
    let _second = source.next_watch().await;
    let stats = r.stats();
    assert_eq!(
        stats.counters.watch_restarts.get(RestartReason::TooShort),
        1
    );
    assert!(first.is_stopped());
    running.stop().await;
}

/// client-go tools/cache/reflector_test.go: TestReflectorWatchHandler
///
/// Ours: the object of the wrong type becomes one without a name, skipped the same way.
#[tokio::test(start_paused = true)]
async fn reflector_watch_handler() {
    let pipeline = Pipeline::delta_fifo();
    let source = FakeSource::new(|_| Ok(list_of(vec![pod("foo", "1"), pod("bar", "2")], "2")));
    let r = pipeline.reflector(source.clone(), list_watch_config());
    let running = RunningReflector::start(&r);
    let watch = source.next_watch().await;
    watch.added(JsonObject::default().with_resource_version("3"));
    watch.deleted(pod("foo", "4"));
    watch.modified(pod("bar", "55"));
    watch.added(pod("baz", "32"));
    eventually("baz", || pipeline.state().contains_key("ns/baz")).await;
    assert_eq!(
        pipeline.state(),
        state(&[("ns/bar", "55"), ("ns/baz", "32")])
    );
    // The last event's resourceVersion, even though an earlier one was higher.
    assert_eq!(r.last_synced_resource_version().as_deref(), Some("32"));
    running.stop().await;
}

/// client-go tools/cache/reflector_test.go: TestReflectorStopWatch
///
/// Ours: a token cancelled before the reflector runs: nothing is requested or applied.
#[tokio::test(start_paused = true)]
async fn reflector_stop_watch() {
    let source = FakeSource::new(|_| Ok(list_of(vec![pod("a", "1")], "1")));
    let queue = RecordingQueue::new();
    let r = reflector(&source, queue.clone(), list_watch_config());
    let cancel = CancellationToken::new();
    cancel.cancel();
    tokio::time::timeout(secs(1), r.run(cancel)).await.unwrap();
    assert!(queue.ops().is_empty());
    assert!(source.all_watches().is_empty());
}

/// client-go tools/cache/reflector_test.go: TestReflectorListAndWatch/UseWatchList enabled
#[tokio::test(start_paused = true)]
async fn reflector_list_and_watch_use_watch_list_enabled() {
    let source = FakeSource::streaming_only();
    let queue = RecordingQueue::new();
    let r = reflector(&source, queue.clone(), streaming_config());
    let running = RunningReflector::start(&r);
    let watch = source.next_watch().await;
    watch.added(pod("foo", "1"));
    watch.end_bookmark("1");
    watch.modified(pod("foo", "2"));
    for (name, rv) in [("bar", "3"), ("baz", "4"), ("qux", "5"), ("zoo", "6")] {
        watch.added(pod(name, rv));
    }
    eventually("every event", || queue.ops().len() == 6).await;
    assert_eq!(
        queue.ops(),
        [
            Op::Replace(vec!["ns/foo@1".into()], "1".into()),
            Op::Update("ns/foo".into(), "2".into()),
            Op::Add("ns/bar".into(), "3".into()),
            Op::Add("ns/baz".into(), "4".into()),
            Op::Add("ns/qux".into(), "5".into()),
            Op::Add("ns/zoo".into(), "6".into()),
        ]
    );
    assert!(source.lists().is_empty());
    let watches = source.watches();
    assert_eq!(watches.len(), 1);
    assert_eq!(watches[0].resource_version, None);
    assert_eq!(
        watches[0].resource_version_match,
        Some(ResourceVersionMatch::NotOlderThan)
    );
    assert_eq!(watches[0].send_initial_events, Some(true));
    assert!(watches[0].allow_watch_bookmarks);
    running.stop().await;
}

/// client-go tools/cache/reflector_test.go: TestReflectorListAndWatch/UseWatchList disabled
#[tokio::test(start_paused = true)]
async fn reflector_list_and_watch_use_watch_list_disabled() {
    let source = FakeSource::new(|_| Ok(list_of(vec![pod("foo", "1")], "1")));
    let queue = RecordingQueue::new();
    let r = reflector(&source, queue.clone(), list_watch_config());
    let running = RunningReflector::start(&r);
    let watch = source.next_watch().await;
    watch.modified(pod("foo", "2"));
    for (name, rv) in [("bar", "3"), ("baz", "4"), ("qux", "5"), ("zoo", "6")] {
        watch.added(pod(name, rv));
    }
    eventually("every event", || queue.ops().len() == 6).await;
    assert_eq!(
        queue.ops()[0],
        Op::Replace(vec!["ns/foo@1".into()], "1".into())
    );
    assert_eq!(queue.ops()[1], Op::Update("ns/foo".into(), "2".into()));
    let lists = source.lists();
    assert_eq!(lists.len(), 1);
    assert_eq!(lists[0].resource_version.as_deref(), Some("0"));
    assert_eq!(lists[0].limit, Some(500));
    let watches = source.watches();
    assert_eq!(watches.len(), 1);
    assert_eq!(watches[0].resource_version.as_deref(), Some("1"));
    assert_eq!(watches[0].resource_version_match, None);
    assert_eq!(watches[0].send_initial_events, None);
    assert!(watches[0].allow_watch_bookmarks);
    running.stop().await;
}

/// client-go tools/cache/reflector_test.go: TestReflectorListAndWatchWithErrors
///
/// client-go runs `ListAndWatch` once per row; ours runs on, relisting after a 410 where a row
/// ends, and a failed watch request is re-watched rather than relisted.
#[tokio::test(start_paused = true)]
async fn reflector_list_and_watch_with_errors() {
    let pipeline = Pipeline::delta_fifo();
    let lw = ScriptedListerWatcher::new(vec![
        Answer::List(Ok(page(vec![], "1", None))),
        Answer::Watch(Ok(vec![
            Step::added(pod("foo", "2")),
            Step::added(pod("bar", "3")),
            gone_event(),
        ])),
        Answer::List(Ok(page(vec![pod("foo", "2"), pod("bar", "3")], "3", None))),
        Answer::Watch(Ok(vec![
            Step::deleted(pod("foo", "4")),
            Step::added(pod("qux", "5")),
            gone_event(),
        ])),
        Answer::List(Err(api(Status::failure(
            500,
            "InternalError",
            "a list error",
        )))),
        Answer::List(Ok(page(vec![pod("bar", "3"), pod("qux", "5")], "5", None))),
        Answer::Watch(Err(Error::transport("watching", "a watch error"))),
        Answer::Watch(Ok(vec![Step::added(pod("baz", "6")), gone_event()])),
        Answer::List(Ok(page(
            vec![pod("bar", "3"), pod("qux", "5"), pod("baz", "6")],
            "6",
            None,
        ))),
        Answer::Watch(Ok(vec![Step::Hang])),
    ]);
    let r = pipeline.reflector(lw.clone(), list_watch_config());
    run_for(&r, secs(120)).await;
    // Every list matched what the store held: no relist found anything to delete.
    let processed = pipeline.consumer.processed();
    assert!(processed.iter().all(|p| !p.tombstone), "{processed:?}");
    assert_eq!(
        pipeline.state(),
        state(&[("ns/bar", "3"), ("ns/baz", "6"), ("ns/qux", "5")])
    );
    let rvs: Vec<_> = lists(&lw.requests())
        .iter()
        .map(|l| l.resource_version.clone())
        .collect();
    let some = |s: &str| Some(s.to_owned());
    assert_eq!(rvs, [some("0"), some("3"), some("5"), some("5"), some("6")]);
}

/// A source whose first `failures` watch requests are refused (connection refused).
fn refusing_source(failures: usize) -> Arc<FakeSource> {
    let left = AtomicUsize::new(failures);
    FakeSource::with_watch(
        |_| Ok(list_of(vec![], "1")),
        move |_| {
            if left
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                .is_ok()
            {
                Err(Error::transport("watching", "connection refused"))
            } else {
                Ok(())
            }
        },
    )
}

/// How long (virtual) from the first watch request to the first accepted one, with `backoff`.
async fn time_to_watch(failures: usize, backoff: BackoffConfig) -> Duration {
    let source = refusing_source(failures);
    let config = ReflectorConfig {
        list_watch: informer::reflector::ListWatchConfig {
            backoff,
            ..list_watch_config().list_watch
        },
        ..list_watch_config()
    };
    let r = reflector(&source, RecordingQueue::new(), config);
    let started = tokio::time::Instant::now();
    let running = RunningReflector::start(&r);
    let _watch = source.next_watch().await;
    let elapsed = started.elapsed();
    assert_eq!(source.watches().len(), failures + 1);
    assert_eq!(source.lists().len(), 1, "refused watches are not relisted");
    running.stop().await;
    elapsed
}

/// client-go's backoff of this test: 1 ms doubling to 50 ms, delays in `[base, 2 × base]`.
fn init_conn_backoff() -> BackoffConfig {
    BackoffConfig {
        initial: millis(1),
        factor: 2.0,
        max: millis(50),
        jitter: Jitter::Proportional(1.0),
        ..BackoffConfig::default()
    }
}

/// client-go tools/cache/reflector_test.go: TestReflectorListAndWatchInitConnBackoff/5 connection failures takes at least 32 ms
///
/// Bounds from our arithmetic: bases 1+2+4+8+16 ms, each up to doubled.
#[tokio::test(start_paused = true)]
async fn reflector_list_and_watch_init_conn_backoff_5_failures() {
    let took = time_to_watch(5, init_conn_backoff()).await;
    assert!((millis(31)..=millis(62)).contains(&took), "{took:?}");
}

/// client-go tools/cache/reflector_test.go: TestReflectorListAndWatchInitConnBackoff/40 connection failures takes at least 1099511627776 ms
///
/// The cap flattens the growth: bases 63 ms then 34 × 50 ms, each up to doubled.
#[tokio::test(start_paused = true)]
async fn reflector_list_and_watch_init_conn_backoff_40_failures() {
    let took = time_to_watch(40, init_conn_backoff()).await;
    assert!((millis(1_763)..=millis(3_526)).contains(&took), "{took:?}");
}

/// client-go tools/cache/reflector_test.go: TestNewReflectorWithCustomBackoff/default backoff
#[tokio::test(start_paused = true)]
async fn new_reflector_with_custom_backoff_default_backoff() {
    // Full jitter from 800 ms: two delays of at most 0.8 s and 1.6 s.
    let took = time_to_watch(2, BackoffConfig::default()).await;
    assert!(took <= millis(2_400), "{took:?}");
}

/// client-go tools/cache/reflector_test.go: TestNewReflectorWithCustomBackoff/custom backoff
#[tokio::test(start_paused = true)]
async fn new_reflector_with_custom_backoff_custom_backoff() {
    let backoff = BackoffConfig {
        initial: millis(10),
        factor: 2.0,
        max: millis(100),
        jitter: Jitter::None,
        ..BackoffConfig::default()
    };
    // 10 + 20 + 40 + 80 + 100 ms, exactly (virtual time).
    assert_eq!(time_to_watch(5, backoff).await, millis(250));
}

/// client-go tools/cache/reflector_test.go: TestBackoffOnTooManyRequests
#[tokio::test(start_paused = true)]
async fn backoff_on_too_many_requests() {
    let throttled = || Status::failure(429, "TooManyRequests", "too many requests");
    let lw = ScriptedListerWatcher::new(vec![
        Answer::List(Ok(page(vec![], "1", None))),
        Answer::Watch(Err(api(throttled()))),
        Answer::Watch(Ok(vec![Step::event(WatchEvent::Error(throttled()))])),
        Answer::Watch(Ok(vec![Step::Hang])),
    ]);
    let mut config = list_watch_config();
    let failures = record_failures(&mut config.watch_error_handler);
    let r = scripted_reflector(&lw, RecordingQueue::new(), config);
    run_for(&r, secs(60)).await;
    let failures = failures.lock().clone();
    // Two backoffs, each followed by a re-watch, never a relist.
    assert_eq!(failures.len(), 2, "{failures:?}");
    assert!(failures.iter().all(|f| f.class == ErrorClass::Throttled
        && f.then == Some(informer::reflector::Then::Rewatch)
        && f.delay > Duration::ZERO));
    assert_eq!(lists(&lw.requests()).len(), 1);
}

/// client-go tools/cache/reflector_test.go: TestNoRelistOnTooManyRequests
#[tokio::test(start_paused = true)]
async fn no_relist_on_too_many_requests() {
    let mut answers = vec![Answer::List(Ok(page(vec![], "1", None)))];
    for _ in 0..4 {
        answers.push(Answer::Watch(Err(api(Status::failure(
            429,
            "TooManyRequests",
            "too many requests",
        )))));
    }
    answers.push(Answer::Watch(Ok(vec![Step::Hang])));
    let lw = ScriptedListerWatcher::new(answers);
    let r = scripted_reflector(&lw, RecordingQueue::new(), list_watch_config());
    run_for(&r, secs(120)).await;
    let requests = lw.requests();
    assert_eq!(lists(&requests).len(), 1);
    assert_eq!(requests.len() - 1, 5);
}

/// client-go tools/cache/reflector_test.go: TestRetryInternalError/retries off
///
/// client-go's default, and our only behaviour: an internal error in a watch relists.
#[tokio::test(start_paused = true)]
async fn retry_internal_error_retries_off() {
    let internal = Status::failure(500, "InternalError", "etcdserver: no leader");
    let lw = ScriptedListerWatcher::new(vec![
        Answer::List(Ok(page(vec![], "1", None))),
        Answer::Watch(Ok(vec![Step::event(WatchEvent::Error(internal))])),
        Answer::List(Ok(page(vec![], "2", None))),
        Answer::Watch(Ok(vec![Step::Hang])),
    ]);
    let r = scripted_reflector(&lw, RecordingQueue::new(), list_watch_config());
    run_for(&r, secs(60)).await;
    let requests = lw.requests();
    assert_eq!(list_rv(&requests[2]).as_deref(), Some("1"), "{requests:?}");
    assert_eq!(r.stats().counters.relists, 1);
}

/// client-go tools/cache/reflector_test.go: TestReflectorResync
///
/// client-go's resync error ends that `ListAndWatch`; ours is reported and resyncs go on.
#[tokio::test(start_paused = true)]
async fn reflector_resync() {
    let source = FakeSource::new(|_| Ok(list_of(vec![], "0")));
    let queue = RefusingQueue::failing_resync_at(2);
    let config = ReflectorConfig {
        resync_period: Some(millis(1)),
        ..list_watch_config()
    };
    let r = reflector(&source, queue.clone(), config);
    let running = RunningReflector::start(&r);
    eventually("three resyncs", || queue.resyncs() >= 3).await;
    // The second one failed and was not counted; the reflector kept going.
    assert_eq!(r.stats().resyncs, queue.resyncs() as u64 - 1);
    assert!(r.is_running());
    running.stop().await;
}

/// Ten pods, pod-0 … pod-9, at resourceVersions 0 … 9.
fn ten_pods() -> Vec<JsonObject> {
    (0..10)
        .map(|i| pod(&format!("pod-{i}"), &i.to_string()))
        .collect()
}

/// client-go tools/cache/reflector_test.go: TestReflectorWatchListPageSize
///
/// Ours pages the first list; client-go sets the resourceVersion to 10 to page a relist.
#[tokio::test(start_paused = true)]
async fn reflector_watch_list_page_size() {
    let pipeline = Pipeline::delta_fifo();
    let source = FakeSource::new(|options| {
        assert_eq!(options.limit, Some(4));
        let pods = ten_pods();
        let (items, token) = match options.continue_token.as_deref() {
            None => (pods[0..4].to_vec(), Some("C1")),
            Some("C1") => (pods[4..8].to_vec(), Some("C2")),
            Some("C2") => (pods[8..10].to_vec(), None),
            Some(other) => panic!("unexpected continue {other}"),
        };
        Ok(page(items, "10", token))
    });
    let config = ReflectorConfig {
        list_watch: informer::reflector::ListWatchConfig {
            page_size: Some(4),
            ..list_watch_config().list_watch
        },
        ..list_watch_config()
    };
    let r = pipeline.reflector(source.clone(), config);
    let running = RunningReflector::start(&r);
    let _watch = source.next_watch().await;
    eventually("ten pods", || pipeline.state().len() == 10).await;
    assert_eq!(source.lists().len(), 3);
    running.stop().await;
}

/// client-go tools/cache/reflector_test.go: TestReflectorNotPaginatingNotConsistentReads
///
/// A relist at a specific resourceVersion asks for no limit (the API server answers it from
/// its watch cache). client-go sets the last synced resourceVersion to 10 by hand; ours gets
/// there with a first list at "0" whose watch expires.
#[tokio::test(start_paused = true)]
async fn reflector_not_paginating_not_consistent_reads() {
    let pipeline = Pipeline::delta_fifo();
    let source = relisting_source(|options| {
        match options.resource_version.as_deref() {
            Some("0") => assert_eq!(options.limit, Some(500), "the first list is paged"),
            Some("10") => assert_eq!(options.limit, None, "a relist at 10 is not paged"),
            other => panic!("unexpected list at {other:?}"),
        }
        Ok(page(ten_pods(), "10", None))
    });
    let rvs = source
        .relist_rounds(&pipeline, list_watch_config(), 2)
        .await;
    let some = |s: &str| Some(s.to_owned());
    assert_eq!(rvs, [some("0"), some("10")]);
    eventually("ten pods", || pipeline.state().len() == 10).await;
}

/// client-go tools/cache/reflector_test.go: TestReflectorPaginatingNonConsistentReadsIfWatchCacheDisabled
///
/// The first list came back in pages (a server without a watch cache): relists at a specific
/// resourceVersion are paged too, with the default page size.
#[tokio::test(start_paused = true)]
async fn reflector_paginating_non_consistent_reads_if_watch_cache_disabled() {
    let pipeline = Pipeline::delta_fifo();
    let source = relisting_source(|options| {
        assert_eq!(options.limit, Some(500), "{options:?}");
        let pods = ten_pods();
        let (items, token) = match options.continue_token.as_deref() {
            None => (pods[0..4].to_vec(), Some("C1")),
            Some("C1") => (pods[4..8].to_vec(), Some("C2")),
            Some("C2") => (pods[8..10].to_vec(), None),
            Some(other) => panic!("unexpected continue {other}"),
        };
        Ok(page(items, "10", token))
    });
    let rvs = source
        .relist_rounds(&pipeline, list_watch_config(), 2)
        .await;
    let some = |s: &str| Some(s.to_owned());
    // Each list is three requests; continue pages carry no resourceVersion.
    assert_eq!(rvs, [some("0"), None, None, some("10"), None, None]);
    eventually("ten pods", || pipeline.state().len() == 10).await;
}

/// A source answering lists with `answer`, for [`ScriptedSourceLog::relist_rounds`].
fn relisting_source(
    answer: impl Fn(&ListOptions) -> Result<informer_core::ListPage<JsonObject>, Error> + Send + 'static,
) -> Arc<ScriptedSourceLog> {
    ScriptedSourceLog::new(answer)
}

/// A lister-watcher answering lists with a function, whose every watch but the last is
/// expired at once (each forces a relist), the last one staying open.
struct ScriptedSourceLog {
    source: Arc<FakeSource>,
}

impl ScriptedSourceLog {
    fn new(
        answer: impl Fn(&ListOptions) -> Result<informer_core::ListPage<JsonObject>, Error>
        + Send
        + 'static,
    ) -> Arc<Self> {
        Arc::new(Self {
            source: FakeSource::new(answer),
        })
    }

    /// Runs a reflector until it has watched `watches` times, expiring every watch but the
    /// last; returns the list requests' resourceVersions.
    async fn relist_rounds(
        &self,
        pipeline: &Pipeline,
        config: ReflectorConfig<JsonObject>,
        watches: usize,
    ) -> Vec<Option<String>> {
        let r = pipeline.reflector(self.source.clone(), config);
        let running = RunningReflector::start(&r);
        for i in 0..watches {
            let watch = self.source.next_watch().await;
            if i + 1 < watches {
                watch.error(expired());
            }
        }
        running.stop().await;
        self.source
            .lists()
            .into_iter()
            .map(|l| l.resource_version)
            .collect()
    }
}

fn eight_pods() -> Vec<JsonObject> {
    (0..8)
        .map(|i| pod(&format!("pod-{i}"), &i.to_string()))
        .collect()
}

/// client-go tools/cache/reflector_test.go: TestReflectorResyncWithResourceVersion
#[tokio::test(start_paused = true)]
async fn reflector_resync_with_resource_version() {
    let pipeline = Pipeline::delta_fifo();
    let source = relisting_source(|options| match options.resource_version.as_deref() {
        Some("0") => Ok(page(eight_pods()[0..4].to_vec(), "10", None)),
        Some("10") => Ok(page(eight_pods(), "11", None)),
        other => panic!("unexpected resourceVersion {other:?}"),
    });
    let rvs = source
        .relist_rounds(&pipeline, list_watch_config(), 2)
        .await;
    assert_eq!(rvs, [Some("0".to_owned()), Some("10".to_owned())]);
    eventually("eight pods", || pipeline.state().len() == 8).await;
}

/// client-go tools/cache/reflector_test.go: TestReflectorExpiredExactResourceVersion
#[tokio::test(start_paused = true)]
async fn reflector_expired_exact_resource_version() {
    let pipeline = Pipeline::delta_fifo();
    let source = relisting_source(|options| match options.resource_version.as_deref() {
        Some("0") => Ok(page(eight_pods()[0..4].to_vec(), "10", None)),
        Some("10") => Err(api(Status::failure(
            410,
            "Expired",
            "The resourceVersion for the provided watch is too old.",
        ))),
        None => Ok(page(eight_pods(), "11", None)),
        other => panic!("unexpected resourceVersion {other:?}"),
    });
    let rvs = source
        .relist_rounds(&pipeline, list_watch_config(), 2)
        .await;
    assert_eq!(rvs, [Some("0".to_owned()), Some("10".to_owned()), None]);
    eventually("eight pods", || pipeline.state().len() == 8).await;
}

/// client-go tools/cache/reflector_test.go: TestReflectorFullListIfExpired
#[tokio::test(start_paused = true)]
async fn reflector_full_list_if_expired() {
    let pipeline = Pipeline::delta_fifo();
    let source = relisting_source(|options| {
        let pods = eight_pods();
        match (
            options.resource_version.as_deref(),
            options.continue_token.as_deref(),
            options.limit,
        ) {
            (Some("0"), None, Some(4)) => Ok(page(pods[0..4].to_vec(), "10", None)),
            // The relist's first page, then its continue token has expired.
            (Some("10"), None, Some(4)) => Ok(page(pods[0..4].to_vec(), "11", Some("C1"))),
            (None, Some("C1"), _) => Err(api(Status::failure(
                410,
                "Expired",
                "The provided continue parameter is too old",
            ))),
            // One full list at the same resourceVersion.
            (Some("10"), None, None) => Ok(page(pods, "11", None)),
            other => panic!("unexpected list {other:?}"),
        }
    });
    // client-go's `WatchListPageSize = 4`: every list is paged, relists included.
    let config = ReflectorConfig {
        list_watch: informer::reflector::ListWatchConfig {
            page_size: Some(4),
            always_paginate: true,
            ..list_watch_config().list_watch
        },
        ..list_watch_config()
    };
    let rvs = source.relist_rounds(&pipeline, config, 2).await;
    let some = |s: &str| Some(s.to_owned());
    assert_eq!(rvs, [some("0"), some("10"), None, some("10")]);
    eventually("eight pods", || pipeline.state().len() == 8).await;
}

fn too_large(message: &str, cause: Option<StatusCause>) -> Error {
    let mut status = Status::failure(504, "Timeout", message);
    status.details = Some(StatusDetails {
        causes: cause.into_iter().collect(),
        retry_after_seconds: Some(1),
        ..StatusDetails::default()
    });
    api(status)
}

/// client-go tools/cache/reflector_test.go: TestReflectorFullListIfTooLarge
///
/// The three forms the API server has used for "too large resource version"; the second was
/// misclassified before this port (see the parity doc).
#[tokio::test(start_paused = true)]
async fn reflector_full_list_if_too_large() {
    let pipeline = Pipeline::delta_fifo();
    let version = Arc::new(AtomicUsize::new(30));
    let next = Arc::clone(&version);
    let source = relisting_source(move |options| match options.resource_version.as_deref() {
        Some("0") => Ok(page(vec![], "20", None)),
        Some("20") => Err(too_large(
            "Timeout: too large resource version",
            Some(StatusCause {
                reason: informer_core::CAUSE_RESOURCE_VERSION_TOO_LARGE.into(),
                ..StatusCause::default()
            }),
        )),
        Some("30") => Err(too_large(
            "Timeout: too large resource version",
            Some(StatusCause {
                message: "Too large resource version".into(),
                ..StatusCause::default()
            }),
        )),
        Some("40") => Err(too_large("Timeout: Too large resource version", None)),
        None => {
            let rv = next.fetch_add(10, Ordering::AcqRel);
            Ok(page(vec![], &rv.to_string(), None))
        }
        other => panic!("unexpected list at {other:?}"),
    });
    let rvs = source
        .relist_rounds(&pipeline, list_watch_config(), 4)
        .await;
    let some = |s: &str| Some(s.to_owned());
    assert_eq!(
        rvs,
        [
            some("0"),
            some("20"),
            None,
            some("30"),
            None,
            some("40"),
            None
        ]
    );
    assert_eq!(version.load(Ordering::Acquire), 60);
}

/// The `timeoutSeconds` of the first watch with `min_watch_timeout`.
async fn first_watch_timeout(min: Option<Duration>) -> u32 {
    let source = FakeSource::new(|_| Ok(list_of(vec![], "10")));
    let mut config = list_watch_config();
    if let Some(min) = min {
        config.list_watch.min_watch_timeout = min;
    }
    let r = reflector(&source, RecordingQueue::new(), config);
    let running = RunningReflector::start(&r);
    let _watch = source.next_watch().await;
    running.stop().await;
    source.watches()[0].timeout_seconds.unwrap()
}

/// client-go tools/cache/reflector_test.go: TestWatchTimeout/no timeout
#[tokio::test(start_paused = true)]
async fn watch_timeout_no_timeout() {
    let got = first_watch_timeout(None).await;
    assert!((300..600).contains(&got), "{got}");
}

/// client-go tools/cache/reflector_test.go: TestWatchTimeout/30m timeout
#[tokio::test(start_paused = true)]
async fn watch_timeout_30m_timeout() {
    let got = first_watch_timeout(Some(secs(30 * 60))).await;
    assert!((1_800..3_600).contains(&got), "{got}");
}

/// client-go tools/cache/reflector_test.go: TestReflectorResourceVersionUpdate
#[tokio::test(start_paused = true)]
async fn reflector_resource_version_update() {
    let source = FakeSource::new(|_| Ok(list_of(vec![], "10")));
    let r = reflector(&source, RecordingQueue::new(), list_watch_config());
    let running = RunningReflector::start(&r);
    let watch = source.next_watch().await;
    let mut seen = Vec::new();
    type Send = Box<dyn Fn(&FakeWatch)>;
    let steps: [(&str, Send); 4] = [
        ("10", Box::new(|w: &FakeWatch| w.added(pod("a", "10")))),
        ("20", Box::new(|w: &FakeWatch| w.modified(pod("a", "20")))),
        ("30", Box::new(|w: &FakeWatch| w.bookmark("30"))),
        ("40", Box::new(|w: &FakeWatch| w.deleted(pod("a", "40")))),
    ];
    for (rv, send) in steps {
        send(&watch);
        eventually("the resourceVersion moves", || {
            r.last_synced_resource_version().as_deref() == Some(rv)
        })
        .await;
        seen.push(r.last_synced_resource_version().unwrap());
    }
    assert_eq!(seen, ["10", "20", "30", "40"]);
    running.stop().await;
}

/// client-go tools/cache/reflector_test.go: TestReflectorReplacesStoreOnUnsafeDelete
///
/// Before issue 10 the ERROR event with a 500 made the reflector re-watch, and the corrupt
/// object stayed in the cache; it now relists, as client-go does.
#[tokio::test(start_paused = true)]
async fn reflector_replaces_store_on_unsafe_delete() {
    let pipeline = Pipeline::delta_fifo();
    let pods = || vec![pod("foo-1", "1"), pod("foo-2", "2"), pod("foo-3", "3")];
    let unsafe_delete = Status {
        status: "Failure".into(),
        code: 500,
        reason: "StoreReadError".into(),
        message: "failed to prepare current and previous objects: corrupt object has been \
                  deleted"
            .into(),
        details: None,
    };
    let lw = ScriptedListerWatcher::new(vec![
        Answer::List(Ok(page(pods(), "3", None))),
        Answer::Watch(Ok(vec![
            Step::added(pod("foo", "4")),
            Step::event(WatchEvent::Error(unsafe_delete)),
        ])),
        Answer::List(Ok(page(pods(), "5", None))),
        Answer::Watch(Ok(vec![Step::Hang])),
    ]);
    let r = pipeline.reflector(lw.clone(), list_watch_config());
    let running = RunningReflector::start(&r);
    eventually("the relist's resourceVersion", || {
        r.last_synced_resource_version().as_deref() == Some("5")
    })
    .await;
    eventually("foo is gone", || !pipeline.state().contains_key("ns/foo")).await;
    assert_eq!(
        pipeline.state(),
        state(&[("ns/foo-1", "1"), ("ns/foo-2", "2"), ("ns/foo-3", "3")])
    );
    assert_eq!(r.stats().counters.lists, 2);
    running.stop().await;
}

/// Runs client-go's TestReflectorRespectStoreTransformer scenario against `pipeline`.
async fn respect_store_transformer(pipeline: Pipeline) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let config = ReflectorConfig {
        transform: Some(Arc::new(move |obj: JsonObject| {
            counter.fetch_add(1, Ordering::AcqRel);
            obj.with_label("hostname", "transformed")
        })),
        ..streaming_config()
    };
    let source = FakeSource::streaming_only();
    let r = pipeline.reflector(source.clone(), config);
    let running = RunningReflector::start(&r);
    let watch = source.next_watch().await;
    watch.added(pod("foo-1", "1"));
    watch.added(pod("foo-2", "2"));
    watch.end_bookmark("3");
    watch.added(pod("foo-3", "3"));
    eventually("three objects", || pipeline.state().len() == 3).await;
    assert_eq!(r.last_synced_resource_version().as_deref(), Some("3"));
    let store = &pipeline.consumer.store;
    for o in Store::list(store.as_ref()) {
        assert_eq!(
            o.metadata.labels.get("hostname").map(String::as_str),
            Some("transformed")
        );
    }
    // Once per object (client-go transforms the streamed objects again on replace: 5).
    assert_eq!(calls.load(Ordering::Acquire), 3);
    assert!(source.lists().is_empty());
    running.stop().await;
}

/// client-go tools/cache/reflector_test.go: TestReflectorRespectStoreTransformer/real-fifo
#[tokio::test(start_paused = true)]
async fn reflector_respect_store_transformer_real_fifo() {
    respect_store_transformer(Pipeline::in_order()).await;
}

/// client-go tools/cache/reflector_test.go: TestReflectorRespectStoreTransformer/delta-fifo
#[tokio::test(start_paused = true)]
async fn reflector_respect_store_transformer_delta_fifo() {
    respect_store_transformer(Pipeline::delta_fifo()).await;
}
