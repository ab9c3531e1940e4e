//! Helpers shared by the ported suites (on top of `reflector_support` and `informer_support`).

#![allow(dead_code, reason = "each module uses a different subset")]

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

/// Whole seconds.
pub fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Milliseconds.
pub fn millis(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A reflector configuration with a fixed seed, paginated list then watch (client-go with the
/// `WatchListClient` gate off).
pub fn list_watch_config() -> ReflectorConfig<JsonObject> {
    ReflectorConfig {
        name: "test".into(),
        seed: Some(7),
        watch_list: WatchListMode::Off,
        ..ReflectorConfig::default()
    }
}

/// The same with the streaming initial list (client-go with the gate on).
pub fn streaming_config() -> ReflectorConfig<JsonObject> {
    ReflectorConfig {
        watch_list: WatchListMode::On,
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
pub fn record_failures(config: &mut ReflectorConfig<JsonObject>) -> Failures {
    let seen: Failures = Arc::default();
    let sink = Arc::clone(&seen);
    config.watch_error_handler = Some(Arc::new(move |error: &Error, cx: &FailureContext<'_>| {
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
}

impl RefusingQueue {
    pub fn new(failures: usize) -> Arc<Self> {
        Arc::new(Self {
            inner: RecordingQueue::new(),
            failures: AtomicUsize::new(failures),
        })
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
