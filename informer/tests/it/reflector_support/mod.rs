//! Test tools for the reflector: a scripted `ListerWatcher` that answers from a script,
//! records every request, and checks in `Drop` that the script was used up; and a recording
//! `Queue`.

use std::collections::{BTreeMap, VecDeque};
use std::future::pending;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use informer_core::{
    Bookmark, Delta, DeltaType, Error, KnownObjects, ListOptions, ListPage, ListerWatcher,
    ObjectKey, ProcessFn, Queue, QueueError, Status, WatchEvent, WatchOptions, WatchStream, key_of,
};
use informer_testing::JsonObject;
use parking_lot::Mutex;
use tokio::time::Instant;

/// An object named `name` in namespace `ns` at resourceVersion `rv`.
pub fn obj(name: &str, rv: &str) -> JsonObject {
    JsonObject::new(Some("ns"), name).with_resource_version(rv)
}

/// A list page.
pub fn page(
    items: Vec<JsonObject>,
    rv: &str,
    continue_token: Option<&str>,
) -> ListPage<JsonObject> {
    ListPage {
        items,
        resource_version: rv.into(),
        continue_token: continue_token.map(str::to_owned),
        remaining_item_count: None,
    }
}

/// A plain bookmark event.
pub fn bookmark(rv: &str) -> WatchEvent<JsonObject> {
    WatchEvent::Bookmark(Bookmark {
        resource_version: rv.into(),
        initial_events_end: false,
    })
}

/// The bookmark ending a streaming list.
pub fn end_bookmark(rv: &str) -> WatchEvent<JsonObject> {
    WatchEvent::Bookmark(Bookmark {
        resource_version: rv.into(),
        initial_events_end: true,
    })
}

/// An API error.
pub fn api_error(code: u16, reason: &str) -> Error {
    Error::api(
        "scripted",
        Status::failure(code, reason, "scripted failure"),
    )
}

/// 429 with a `Retry-After` header.
pub fn throttled(retry_after: Duration) -> Error {
    Error::Api {
        context: "scripted".into(),
        status: Status::failure(429, "TooManyRequests", "slow down"),
        retry_after: Some(retry_after),
    }
}

/// A refused connection.
pub fn refused() -> Error {
    Error::transport("scripted", "connection refused")
}

/// One step of a scripted watch stream.
#[allow(clippy::large_enum_variant, reason = "test scripts are small")]
pub enum Step {
    /// Yield this item.
    Item(Result<WatchEvent<JsonObject>, Error>),
    /// Wait this long (virtual time) before the next step.
    Sleep(Duration),
    /// Never yield again (the stream stays open).
    Hang,
}

impl Step {
    pub fn event(event: WatchEvent<JsonObject>) -> Self {
        Self::Item(Ok(event))
    }
    pub fn added(o: JsonObject) -> Self {
        Self::event(WatchEvent::Added(o))
    }
    pub fn modified(o: JsonObject) -> Self {
        Self::event(WatchEvent::Modified(o))
    }
    pub fn deleted(o: JsonObject) -> Self {
        Self::event(WatchEvent::Deleted(o))
    }
    pub fn error(e: Error) -> Self {
        Self::Item(Err(e))
    }
}

/// One scripted answer.
pub enum Answer {
    List(Result<ListPage<JsonObject>, Error>),
    Watch(Result<Vec<Step>, Error>),
}

/// A request the reflector sent, with the virtual time it was sent at (from the script's
/// creation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    List(ListOptions),
    Watch(WatchOptions),
}

#[derive(Debug, Clone)]
pub struct Logged {
    pub at: Duration,
    pub request: Request,
}

struct ScriptState {
    answers: VecDeque<Answer>,
    log: Vec<Logged>,
    mismatch: Option<String>,
}

/// A `ListerWatcher` answering from a script. When the script is used up, requests wait
/// forever (so a test can look at the state); a request of the wrong kind is recorded as a
/// mismatch and fails the test in `Drop`, as does an answer left unused.
pub struct ScriptedListerWatcher {
    state: Mutex<ScriptState>,
    start: Instant,
}

impl ScriptedListerWatcher {
    pub fn new(answers: Vec<Answer>) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(ScriptState {
                answers: answers.into(),
                log: Vec::new(),
                mismatch: None,
            }),
            start: Instant::now(),
        })
    }

    /// Every request so far.
    pub fn log(&self) -> Vec<Logged> {
        self.state.lock().log.clone()
    }

    /// The requests so far, without times.
    pub fn requests(&self) -> Vec<Request> {
        self.log().into_iter().map(|l| l.request).collect()
    }

    /// How many answers are left.
    pub fn remaining(&self) -> usize {
        self.state.lock().answers.len()
    }

    fn next(&self, request: Request) -> Option<Answer> {
        let mut state = self.state.lock();
        state.log.push(Logged {
            at: self.start.elapsed(),
            request: request.clone(),
        });
        let kind_matches = match (state.answers.front(), &request) {
            (Some(Answer::List(_)), Request::List(_)) => true,
            (Some(Answer::Watch(_)), Request::Watch(_)) => true,
            (None, _) => return None,
            _ => false,
        };
        if !kind_matches {
            if state.mismatch.is_none() {
                state.mismatch = Some(format!("unexpected request {request:?}"));
            }
            return None;
        }
        state.answers.pop_front()
    }
}

impl Drop for ScriptedListerWatcher {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let state = self.state.lock();
        if let Some(mismatch) = &state.mismatch {
            panic!("{mismatch}; requests: {:#?}", state.log);
        }
        assert!(
            state.answers.is_empty(),
            "{} scripted answers left unused; requests: {:#?}",
            state.answers.len(),
            state.log
        );
    }
}

#[async_trait]
impl ListerWatcher<JsonObject> for ScriptedListerWatcher {
    async fn list(&self, options: &ListOptions) -> Result<ListPage<JsonObject>, Error> {
        match self.next(Request::List(options.clone())) {
            Some(Answer::List(answer)) => answer,
            _ => pending().await,
        }
    }

    async fn watch(&self, options: &WatchOptions) -> Result<WatchStream<JsonObject>, Error> {
        let steps = match self.next(Request::Watch(options.clone())) {
            Some(Answer::Watch(answer)) => answer?,
            _ => pending().await,
        };
        let stream = futures::stream::iter(steps)
            .then(|step| async move {
                match step {
                    Step::Item(item) => Some(item),
                    Step::Sleep(d) => {
                        tokio::time::sleep(d).await;
                        None
                    }
                    Step::Hang => pending().await,
                }
            })
            .filter_map(|item| async move { item });
        Ok(Box::pin(stream))
    }
}

/// What a [`RecordingQueue`] was told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Add(String, String),
    Update(String, String),
    Delete(String, String),
    /// The sorted `key@rv` of every object, and the list's resourceVersion.
    Replace(Vec<String>, String),
    Resync,
}

fn key_rv(o: &JsonObject) -> (String, String) {
    (
        key_of(o).map(|k| k.to_string()).unwrap_or_default(),
        o.metadata.resource_version.clone().unwrap_or_default(),
    )
}

/// A queue that records every call (with its virtual time), keeps the objects it was given,
/// and pops them back as deltas in arrival order.
#[derive(Default)]
pub struct RecordingQueue {
    state: Mutex<RecordingState>,
    notify: tokio::sync::Notify,
}

#[derive(Default)]
struct RecordingState {
    ops: Vec<(Duration, Op)>,
    replaced: Vec<Vec<Arc<JsonObject>>>,
    pending: VecDeque<Delta<JsonObject>>,
    closed: bool,
    start: Option<Instant>,
}

impl RecordingQueue {
    pub fn new() -> Arc<Self> {
        let queue = Self::default();
        queue.state.lock().start = Some(Instant::now());
        Arc::new(queue)
    }

    /// The calls so far.
    pub fn ops(&self) -> Vec<Op> {
        self.state
            .lock()
            .ops
            .iter()
            .map(|(_, op)| op.clone())
            .collect()
    }

    /// The calls so far with their virtual times.
    pub fn timed_ops(&self) -> Vec<(Duration, Op)> {
        self.state.lock().ops.clone()
    }

    /// The objects of every `replace`, in order.
    pub fn replaced(&self) -> Vec<Vec<Arc<JsonObject>>> {
        self.state.lock().replaced.clone()
    }

    fn record(&self, op: Op, deltas: Vec<Delta<JsonObject>>) -> Result<(), QueueError> {
        let mut state = self.state.lock();
        if state.closed {
            return Err(QueueError::Closed);
        }
        let at = state.start.map(|s| s.elapsed()).unwrap_or_default();
        state.ops.push((at, op));
        state.pending.extend(deltas);
        drop(state);
        self.notify.notify_waiters();
        Ok(())
    }
}

#[async_trait]
impl Queue<JsonObject> for RecordingQueue {
    fn add(&self, obj: Arc<JsonObject>) -> Result<(), QueueError> {
        let (k, rv) = key_rv(&obj);
        self.record(Op::Add(k, rv), vec![Delta::new(DeltaType::Added, obj)])
    }
    fn update(&self, obj: Arc<JsonObject>) -> Result<(), QueueError> {
        let (k, rv) = key_rv(&obj);
        self.record(Op::Update(k, rv), vec![Delta::new(DeltaType::Updated, obj)])
    }
    fn delete(&self, obj: Arc<JsonObject>) -> Result<(), QueueError> {
        let (k, rv) = key_rv(&obj);
        self.record(Op::Delete(k, rv), vec![Delta::new(DeltaType::Deleted, obj)])
    }
    fn replace(
        &self,
        objects: Vec<Arc<JsonObject>>,
        resource_version: &str,
    ) -> Result<(), QueueError> {
        let mut keys: Vec<String> = objects
            .iter()
            .map(|o| {
                let (k, rv) = key_rv(o);
                format!("{k}@{rv}")
            })
            .collect();
        keys.sort();
        let deltas = objects
            .iter()
            .map(|o| Delta::new(DeltaType::Replaced, Arc::clone(o)))
            .collect();
        self.state.lock().replaced.push(objects);
        self.record(Op::Replace(keys, resource_version.into()), deltas)
    }
    fn resync(&self) -> Result<(), QueueError> {
        self.record(Op::Resync, Vec::new())
    }
    async fn pop(&self, process: &mut ProcessFn<'_, JsonObject>) -> Result<(), QueueError> {
        loop {
            let notified = self.notify.notified();
            {
                let mut state = self.state.lock();
                if let Some(delta) = state.pending.pop_front() {
                    drop(state);
                    return process(std::slice::from_ref(&delta)).map_err(QueueError::from);
                }
                if state.closed {
                    return Err(QueueError::Closed);
                }
            }
            notified.await;
        }
    }
    fn has_synced(&self) -> bool {
        !self.state.lock().replaced.is_empty()
    }
    fn len(&self) -> usize {
        self.state.lock().pending.len()
    }
    fn close(&self) {
        self.state.lock().closed = true;
        self.notify.notify_waiters();
    }
    fn is_closed(&self) -> bool {
        self.state.lock().closed
    }
}

/// A fixed set of known objects, for the relist memory tests.
#[derive(Default)]
pub struct Known(pub BTreeMap<String, Arc<JsonObject>>);

impl KnownObjects<JsonObject> for Known {
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.0
            .keys()
            .map(|k| ObjectKey::from_raw(k.as_str()))
            .collect()
    }
    fn get_by_key(&self, key: &str) -> Option<Arc<JsonObject>> {
        self.0.get(key).cloned()
    }
}

/// Wraps a `ListerWatcher`, logging every call with its virtual time (the fake server's own
/// request log has no times).
pub struct TimedListerWatcher<L> {
    inner: L,
    log: Mutex<Vec<Logged>>,
    start: Instant,
}

impl<L> TimedListerWatcher<L> {
    pub fn new(inner: L) -> Arc<Self> {
        Arc::new(Self {
            inner,
            log: Mutex::new(Vec::new()),
            start: Instant::now(),
        })
    }

    /// Every call so far.
    pub fn log(&self) -> Vec<Logged> {
        self.log.lock().clone()
    }

    fn record(&self, request: Request) {
        self.log.lock().push(Logged {
            at: self.start.elapsed(),
            request,
        });
    }
}

#[async_trait]
impl<L: ListerWatcher<JsonObject>> ListerWatcher<JsonObject> for TimedListerWatcher<L> {
    async fn list(&self, options: &ListOptions) -> Result<ListPage<JsonObject>, Error> {
        self.record(Request::List(options.clone()));
        self.inner.list(options).await
    }

    async fn watch(&self, options: &WatchOptions) -> Result<WatchStream<JsonObject>, Error> {
        self.record(Request::Watch(options.clone()));
        self.inner.watch(options).await
    }
}

/// One delta a [`Consumer`] processed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Processed {
    pub at: Duration,
    pub kind: DeltaType,
    pub key: String,
    pub rv: String,
    pub tombstone: bool,
}

/// Pops a queue into a store, the way an informer's processing loop does, recording every
/// delta.
pub struct Consumer {
    pub store: Arc<informer_store::IndexedStore<JsonObject>>,
    processed: Arc<Mutex<Vec<Processed>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Consumer {
    pub fn spawn(
        queue: Arc<dyn Queue<JsonObject>>,
        store: Arc<informer_store::IndexedStore<JsonObject>>,
    ) -> Self {
        use informer_core::Store;
        let processed: Arc<Mutex<Vec<Processed>>> = Arc::default();
        let start = Instant::now();
        let task = tokio::spawn({
            let store = Arc::clone(&store);
            let processed = Arc::clone(&processed);
            async move {
                loop {
                    let result = queue
                        .pop(&mut |deltas: &[Delta<JsonObject>]| {
                            for delta in deltas {
                                let obj = delta.object.object();
                                let (key, rv) = key_rv(obj);
                                processed.lock().push(Processed {
                                    at: start.elapsed(),
                                    kind: delta.kind,
                                    key,
                                    rv,
                                    tombstone: delta.object.is_tombstone(),
                                });
                                let applied = match delta.kind {
                                    DeltaType::Deleted => store.delete(obj).map(|_| ()),
                                    _ => store.update(Arc::clone(obj)).map(|_| ()),
                                };
                                applied.expect("the store accepts what the queue holds");
                            }
                            Ok(())
                        })
                        .await;
                    if matches!(result, Err(QueueError::Closed)) {
                        return;
                    }
                }
            }
        });
        Self {
            store,
            processed,
            task,
        }
    }

    /// Every delta processed so far.
    pub fn processed(&self) -> Vec<Processed> {
        self.processed.lock().clone()
    }

    /// The store as `key → resourceVersion`.
    pub fn state(&self) -> BTreeMap<String, String> {
        use informer_core::Store;
        self.store.list().iter().map(|o| key_rv(o)).collect()
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Waits (virtual time, 100 ms steps, at most 1000 s) until `condition` holds.
pub async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    for _ in 0..10_000 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("never happened: {what}");
}
