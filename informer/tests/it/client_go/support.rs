//! Helpers shared by the ported suites (on top of `reflector_support` and `informer_support`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use informer::reflector::{FailureContext, Reflector, ReflectorConfig, Stage, Then, WatchListMode};
use informer_core::{Error, ErrorClass, KeyError, ProcessFn, Queue, QueueError};
use informer_testing::JsonObject;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::reflector_support::{RecordingQueue, ScriptedListerWatcher};
pub use crate::support::{list_watch_config, millis, secs, with_resync};

/// An informer's share of [`list_watch_config`]: paginated list then watch, the fixed seed.
pub fn list_then_watch(config: &mut informer::InformerConfig<JsonObject>) {
    let reflector = list_watch_config();
    config.list_watch = reflector.list_watch;
    config.seed = reflector.seed;
}

/// The same with the streaming initial list (client-go with the gate on).
pub fn streaming_config() -> ReflectorConfig<JsonObject> {
    ReflectorConfig {
        list_watch: informer::reflector::ListWatchConfig {
            watch_list: WatchListMode::On,
            ..list_watch_config().list_watch
        },
        ..list_watch_config()
    }
}

/// One failure as the watch-error handler saw it.
#[derive(Debug, Clone)]
pub struct Failure {
    pub stage: Stage,
    pub class: ErrorClass,
    pub then: Option<Then>,
    pub delay: Duration,
    pub message: String,
}

/// Failures seen by the watch-error handler.
pub type Failures = Arc<Mutex<Vec<Failure>>>;

/// Installs a watch-error handler recording every failure.
pub fn record_failures(handler: &mut Option<informer::reflector::WatchErrorHandler>) -> Failures {
    let seen: Failures = Arc::default();
    let sink = Arc::clone(&seen);
    *handler = Some(Arc::new(move |error: &Error, cx: &FailureContext<'_>| {
        sink.lock().push(Failure {
            stage: cx.stage,
            class: error.class(),
            then: cx.then,
            delay: cx.delay,
            message: informer_core::ErrorChain(error).to_string(),
        });
    }));
    seen
}

/// A reflector over a scripted lister-watcher into `queue`.
pub fn scripted_reflector(
    lw: &Arc<ScriptedListerWatcher>,
    queue: Arc<dyn Queue<JsonObject>>,
    config: ReflectorConfig<JsonObject>,
) -> Arc<Reflector<JsonObject>> {
    Arc::new(Reflector::new(lw.clone(), queue, None, config))
}

/// A running reflector, stopped by [`Running::stop`].
pub struct RunningReflector {
    pub reflector: Arc<Reflector<JsonObject>>,
    pub cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl RunningReflector {
    pub fn start(reflector: &Arc<Reflector<JsonObject>>) -> Self {
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let reflector = Arc::clone(reflector);
            let cancel = cancel.clone();
            async move { reflector.run(cancel).await }
        });
        Self {
            reflector: Arc::clone(reflector),
            cancel,
            task,
        }
    }

    /// Cancels and waits for `run` to return (bounded: a reflector that does not stop fails
    /// the test).
    pub async fn stop(self) {
        self.cancel.cancel();
        tokio::time::timeout(secs(30), self.task)
            .await
            .expect("run returns once cancelled")
            .unwrap();
        assert!(!self.reflector.is_running());
    }
}

/// Runs the reflector for `duration` (virtual time in paused tests), then stops it.
pub async fn run_for(reflector: &Arc<Reflector<JsonObject>>, duration: Duration) {
    let running = RunningReflector::start(reflector);
    tokio::time::sleep(duration).await;
    running.stop().await;
}

/// A queue that refuses its first `failures` replaces (as a queue with its own key function
/// refuses a list holding an object it cannot key), then behaves like the recording queue it
/// wraps.
pub struct RefusingQueue {
    pub inner: Arc<RecordingQueue>,
    failures: AtomicUsize,
    /// The resync (counted from 1) that fails; 0: none.
    failing_resync: usize,
    resyncs: AtomicUsize,
}

impl RefusingQueue {
    pub fn new(failures: usize) -> Arc<Self> {
        Arc::new(Self {
            inner: RecordingQueue::new(),
            failures: AtomicUsize::new(failures),
            failing_resync: 0,
            resyncs: AtomicUsize::new(0),
        })
    }

    /// A queue accepting every replace whose `n`-th resync fails.
    pub fn failing_resync_at(n: usize) -> Arc<Self> {
        Arc::new(Self {
            inner: RecordingQueue::new(),
            failures: AtomicUsize::new(0),
            failing_resync: n,
            resyncs: AtomicUsize::new(0),
        })
    }

    /// Resyncs asked for so far (the failed one included).
    pub fn resyncs(&self) -> usize {
        self.resyncs.load(Ordering::Acquire)
    }
}

#[async_trait]
impl Queue<JsonObject> for RefusingQueue {
    fn add(&self, obj: Arc<JsonObject>) -> Result<(), QueueError> {
        self.inner.add(obj)
    }
    fn update(&self, obj: Arc<JsonObject>) -> Result<(), QueueError> {
        self.inner.update(obj)
    }
    fn delete(&self, obj: Arc<JsonObject>) -> Result<(), QueueError> {
        self.inner.delete(obj)
    }
    fn replace(&self, objects: Vec<Arc<JsonObject>>, rv: &str) -> Result<(), QueueError> {
        let refused = self
            .failures
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();
        if refused {
            return Err(QueueError::Key(KeyError::InvalidName {
                name: "refused/by-the-queue".into(),
            }));
        }
        self.inner.replace(objects, rv)
    }
    fn resync(&self) -> Result<(), QueueError> {
        let n = self.resyncs.fetch_add(1, Ordering::AcqRel) + 1;
        if n == self.failing_resync {
            return Err(QueueError::Key(KeyError::InvalidName {
                name: "resync/refused".into(),
            }));
        }
        self.inner.resync()
    }
    async fn pop(&self, process: &mut ProcessFn<'_, JsonObject>) -> Result<(), QueueError> {
        self.inner.pop(process).await
    }
    fn has_synced(&self) -> bool {
        self.inner.has_synced()
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn close(&self) {
        self.inner.close();
    }
    fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }
}

// ---------------------------------------------------------------------------------------------
// A hand-driven watch and a lister-watcher handing them out (client-go's `watch.FakeWatcher`
// and `ListWatch` with functions, in our terms).
// ---------------------------------------------------------------------------------------------

use std::sync::atomic::AtomicBool;

use futures::channel::mpsc;
use informer_core::{
    Bookmark, ListOptions, ListPage, ListerWatcher, Status, WatchEvent, WatchOptions, WatchStream,
};

use crate::reflector_support::Request;

type Item = Result<WatchEvent<JsonObject>, Error>;

/// One watch the test drives by hand: what it sends, the reflector reads. Knows whether the
/// reflector has dropped (stopped) the stream.
#[derive(Clone)]
pub struct FakeWatch {
    tx: mpsc::UnboundedSender<Item>,
    stopped: Arc<AtomicBool>,
}

struct GuardedStream {
    rx: mpsc::UnboundedReceiver<Item>,
    stopped: Arc<AtomicBool>,
}

impl futures::Stream for GuardedStream {
    type Item = Item;
    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Item>> {
        std::pin::Pin::new(&mut self.rx).poll_next(cx)
    }
}

impl Drop for GuardedStream {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::Release);
    }
}

impl FakeWatch {
    /// A watch and the stream the reflector reads.
    pub fn new() -> (Self, WatchStream<JsonObject>) {
        let (tx, rx) = mpsc::unbounded();
        let stopped = Arc::new(AtomicBool::new(false));
        let stream = GuardedStream {
            rx,
            stopped: Arc::clone(&stopped),
        };
        (Self { tx, stopped }, Box::pin(stream))
    }

    /// Sends an item; ignored once the reflector dropped the stream.
    pub fn send(&self, item: Item) {
        let _ = self.tx.unbounded_send(item);
    }

    pub fn added(&self, obj: JsonObject) {
        self.send(Ok(WatchEvent::Added(obj)));
    }

    pub fn modified(&self, obj: JsonObject) {
        self.send(Ok(WatchEvent::Modified(obj)));
    }

    pub fn deleted(&self, obj: JsonObject) {
        self.send(Ok(WatchEvent::Deleted(obj)));
    }

    pub fn bookmark(&self, rv: &str) {
        self.send(Ok(WatchEvent::Bookmark(Bookmark {
            resource_version: rv.into(),
            initial_events_end: false,
        })));
    }

    /// The bookmark that ends a streaming list's initial events.
    pub fn end_bookmark(&self, rv: &str) {
        self.send(Ok(WatchEvent::Bookmark(Bookmark {
            resource_version: rv.into(),
            initial_events_end: true,
        })));
    }

    /// An `ERROR` event.
    pub fn error(&self, status: Status) {
        self.send(Ok(WatchEvent::Error(status)));
    }

    /// Ends the stream from the server's side.
    pub fn close(&self) {
        self.tx.close_channel();
    }

    /// Whether the reflector dropped the stream.
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }
}

type ListFn = Box<dyn FnMut(&ListOptions) -> Result<ListPage<JsonObject>, Error> + Send>;
type WatchFn = Box<dyn FnMut(&WatchOptions) -> Result<(), Error> + Send>;

/// A lister-watcher built from a list function and a watch predicate; every accepted watch is
/// a new [`FakeWatch`], handed to the test through [`FakeSource::next_watch`].
pub struct FakeSource {
    list: Mutex<ListFn>,
    watch: Mutex<WatchFn>,
    requests: Mutex<Vec<Request>>,
    watches_tx: tokio::sync::mpsc::UnboundedSender<FakeWatch>,
    watches_rx: tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<FakeWatch>>,
    all_watches: Mutex<Vec<FakeWatch>>,
}

impl FakeSource {
    /// Lists with `list`; accepts every watch.
    pub fn new(
        list: impl FnMut(&ListOptions) -> Result<ListPage<JsonObject>, Error> + Send + 'static,
    ) -> Arc<Self> {
        Self::with_watch(list, |_| Ok(()))
    }

    /// Lists with `list`; a watch `watch` refuses fails with its error.
    pub fn with_watch(
        list: impl FnMut(&ListOptions) -> Result<ListPage<JsonObject>, Error> + Send + 'static,
        watch: impl FnMut(&WatchOptions) -> Result<(), Error> + Send + 'static,
    ) -> Arc<Self> {
        let (watches_tx, watches_rx) = tokio::sync::mpsc::unbounded_channel();
        Arc::new(Self {
            list: Mutex::new(Box::new(list)),
            watch: Mutex::new(Box::new(watch)),
            requests: Mutex::new(Vec::new()),
            watches_tx,
            watches_rx: tokio::sync::Mutex::new(watches_rx),
            all_watches: Mutex::new(Vec::new()),
        })
    }

    /// A source whose list fails: for tests that only stream.
    pub fn streaming_only() -> Arc<Self> {
        Self::new(|_| {
            Err(Error::api(
                "listing",
                Status::failure(500, "InternalError", "list not expected"),
            ))
        })
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().clone()
    }

    /// The list requests so far.
    pub fn lists(&self) -> Vec<ListOptions> {
        self.requests()
            .into_iter()
            .filter_map(|r| match r {
                Request::List(l) => Some(l),
                Request::Watch(_) => None,
            })
            .collect()
    }

    /// The watch requests so far.
    pub fn watches(&self) -> Vec<WatchOptions> {
        self.requests()
            .into_iter()
            .filter_map(|r| match r {
                Request::Watch(w) => Some(w),
                Request::List(_) => None,
            })
            .collect()
    }

    /// The next watch the reflector started (waits at most a virtual minute).
    pub async fn next_watch(&self) -> FakeWatch {
        let mut rx = self.watches_rx.lock().await;
        tokio::time::timeout(secs(60), rx.recv())
            .await
            .expect("a watch within a minute")
            .expect("the source lives")
    }

    /// Every watch handed out so far.
    pub fn all_watches(&self) -> Vec<FakeWatch> {
        self.all_watches.lock().clone()
    }
}

#[async_trait]
impl ListerWatcher<JsonObject> for FakeSource {
    async fn list(&self, options: &ListOptions) -> Result<ListPage<JsonObject>, Error> {
        self.requests.lock().push(Request::List(options.clone()));
        (self.list.lock())(options)
    }

    async fn watch(&self, options: &WatchOptions) -> Result<WatchStream<JsonObject>, Error> {
        self.requests.lock().push(Request::Watch(options.clone()));
        (self.watch.lock())(options)?;
        let (watch, stream) = FakeWatch::new();
        self.all_watches.lock().push(watch.clone());
        let _ = self.watches_tx.send(watch);
        Ok(stream)
    }
}

/// A list page of `items` at `rv` (no continue).
pub fn list_of(items: Vec<JsonObject>, rv: &str) -> ListPage<JsonObject> {
    crate::reflector_support::page(items, rv, None)
}

/// A pod-like object `name` in namespace "ns" at `rv`.
pub fn pod(name: &str, rv: &str) -> JsonObject {
    crate::reflector_support::obj(name, rv)
}

/// An API error with `status`.
pub fn api(status: Status) -> Error {
    Error::api("fake source", status)
}

/// Waits (virtual time, 10 ms steps, at most a virtual hour) until `condition` holds.
pub async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    for _ in 0..360_000 {
        if condition() {
            return;
        }
        tokio::time::sleep(millis(10)).await;
    }
    panic!("never happened: {what}");
}
