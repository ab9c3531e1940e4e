//! The work queue: deduplicating FIFO with processing tracking and delayed adds.

use std::cmp::Ordering;
use std::collections::hash_map::Entry;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::fmt;
use std::future::{Future, poll_fn};
use std::hash::Hash;
use std::pin::pin;
use std::sync::{Arc, Weak};
use std::task::Poll;
use std::time::Duration;

use foldhash::fast::RandomState;
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::metrics::{UnfinishedWork, WorkQueueMetrics};

/// The longest delay [`WorkQueue::add_after`] honours (about 30 years, like tokio's "far
/// future"); longer delays are shortened to it. Also bounds a token bucket's time per token.
pub const MAX_DELAY: Duration = Duration::from_secs(86_400 * 365 * 30);

/// Settings of a [`WorkQueue`].
#[derive(Debug, Clone, Default)]
pub struct WorkQueueConfig {
    /// The queue's name: the `name` label of its metrics. May be empty.
    pub name: String,
    /// Where to record metrics; `None` records none. Values exist only with the `metrics`
    /// feature (see [`WorkQueueMetrics`]).
    pub metrics: Option<WorkQueueMetrics>,
}

/// A deduplicating, delaying FIFO work queue for many concurrent workers.
///
/// An item is in at most one of these states: *queued* (waiting for a worker), *processing*
/// (handed out by [`get`](Self::get), not yet [`done`](Self::done)), *processing and dirty*
/// (added again while processing: it is queued once more when done), or *waiting* (added with
/// [`add_after`](Self::add_after), not yet due; a waiting item may also be in one of the other
/// states). See the crate documentation for the full rules.
///
/// Cloning is cheap: clones are handles to the same queue.
pub struct WorkQueue<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for WorkQueue<T> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T> fmt::Debug for WorkQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.state.lock();
        f.debug_struct("WorkQueue")
            .field("name", &self.shared.name)
            .field("queued", &state.queue.len())
            .field("processing", &state.processing)
            .field("waiting", &state.waiting_index.len())
            .field("shutting_down", &state.shutting_down)
            .finish()
    }
}

impl<T> Default for WorkQueue<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<T> WorkQueue<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    /// An unnamed queue without metrics.
    pub fn new() -> Self {
        Self::with_config(WorkQueueConfig::default())
    }

    /// A queue with the given settings.
    pub fn with_config(config: WorkQueueConfig) -> Self {
        let WorkQueueConfig { name, metrics } = config;
        let state = State::new(metrics.as_ref().map(|m| m.recorder(&name)));
        let shared = Arc::new(Shared {
            name,
            state: Mutex::new(state),
            ready: Notify::new(),
            drained: Notify::new(),
        });
        if let Some(metrics) = metrics {
            let weak: Weak<Shared<T>> = Arc::downgrade(&shared);
            metrics.track(&shared.name, weak);
        }
        Self { shared }
    }

    /// The queue's name (the `name` label of its metrics).
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Marks `item` as needing processing.
    ///
    /// If it is already queued, nothing changes (it keeps its place). If it is being processed,
    /// it is marked dirty and queued again when its worker calls [`done`](Self::done), so one
    /// item is never processed by two workers at once. After shutdown, adds are ignored.
    pub fn add(&self, item: T) {
        let mut state = self.shared.state.lock();
        let mut pushed = state.promote_due();
        if state.add(item, None) == AddOutcome::Queued {
            pushed += 1;
        }
        drop(state);
        self.shared.wake(pushed);
    }

    /// Adds `item` once `delay` has passed (at once if `delay` is zero).
    ///
    /// If the item is already waiting, the earlier of the two deadlines wins. Waiting does not
    /// keep the item from being added directly meanwhile; it is then added again when due, as
    /// upstream. Delays use tokio's clock (virtual under `tokio::time::pause`) and need no
    /// background task: due items are moved to the queue by the next call that touches it, and
    /// idle [`get`](Self::get) calls sleep until the earliest deadline. Delays above
    /// [`MAX_DELAY`] are shortened to it. After shutdown this is ignored; waiting items are
    /// dropped at shutdown.
    pub fn add_after(&self, item: T, delay: Duration) {
        let mut state = self.shared.state.lock();
        if state.shutting_down {
            return;
        }
        state.record_retry();
        let mut pushed = state.promote_due();
        let deadline_moved_earlier = if delay.is_zero() {
            if state.add(item, None) == AddOutcome::Queued {
                pushed += 1;
            }
            false
        } else {
            state.add_waiting(item, delay)
        };
        drop(state);
        self.shared.wake(pushed);
        if deadline_moved_earlier {
            // Idle workers sleep until the earliest deadline; it just moved earlier.
            self.shared.ready.notify_waiters();
        }
    }

    /// Waits for the next item and hands it to the caller, who must call [`done`](Self::done)
    /// with it when finished.
    ///
    /// Returns `None` once the queue is shutting down and no item is queued (items queued before
    /// shutdown are still handed out). The wait is a `tokio::sync::Notify` or a timer for the
    /// earliest delayed item, never a poll loop. Cancel-safe: if the future is dropped, no item
    /// is lost.
    ///
    /// Like a tokio channel's `recv`, each call spends one unit of the task's cooperative
    /// budget, so a worker that always finds an item ready still lets other tasks on its thread
    /// run.
    pub async fn get(&self) -> Option<T> {
        tokio::task::coop::consume_budget().await;
        let shared = &*self.shared;
        loop {
            // Fast path: an item is ready, no need to touch the Notify.
            match shared.take() {
                Take::Item(item) => return Some(item),
                Take::ShutDown => return None,
                Take::Empty { .. } => {}
            }
            // Register for wake-ups, then look again, so an add between the first look and the
            // wait is not missed.
            let mut notified = pin!(shared.ready.notified());
            notified.as_mut().enable();
            let deadline = match shared.take() {
                Take::Item(item) => return Some(item),
                Take::ShutDown => return None,
                Take::Empty { next_deadline } => next_deadline,
            };
            match deadline {
                None => notified.await,
                Some(deadline) => {
                    let mut sleep = pin!(tokio::time::sleep_until(deadline));
                    poll_fn(|cx| {
                        if notified.as_mut().poll(cx).is_ready()
                            || sleep.as_mut().poll(cx).is_ready()
                        {
                            Poll::Ready(())
                        } else {
                            Poll::Pending
                        }
                    })
                    .await;
                }
            }
        }
    }

    /// Marks `item` as processed. If it was added again while being processed, it is queued
    /// again now.
    ///
    /// Calling `done` for an item that is not being processed does nothing (upstream would queue
    /// a dirty item a second time).
    pub fn done(&self, item: &T) {
        let mut state = self.shared.state.lock();
        let mut pushed = state.promote_due();
        let outcome = state.done(item);
        if outcome == DoneOutcome::Requeued {
            pushed += 1;
        }
        let drained =
            outcome != DoneOutcome::NotProcessing && state.draining && state.processing == 0;
        drop(state);
        self.shared.wake(pushed);
        if drained {
            self.shared.drained.notify_waiters();
        }
    }

    /// How many items are queued, ready for a worker (not counting items being processed or
    /// waiting for their delay). For information only: do not gate `add` or `get` on it.
    pub fn len(&self) -> usize {
        let mut state = self.shared.state.lock();
        let pushed = state.promote_due();
        let len = state.queue.len();
        drop(state);
        self.shared.wake(pushed);
        len
    }

    /// Whether no item is ready for a worker (see [`len`](Self::len)).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Shuts the queue down: later adds are ignored, waiting (delayed) items are dropped, idle
    /// workers wake. Items already queued are still handed out by [`get`](Self::get), which
    /// returns `None` once none is left.
    ///
    /// Also ends a [`shut_down_with_drain`](Self::shut_down_with_drain) that is still waiting.
    pub fn shut_down(&self) {
        {
            let mut state = self.shared.state.lock();
            state.log_shut_down(self.name(), false);
            state.shut_down();
            state.draining = false;
        }
        self.shared.ready.notify_waiters();
        self.shared.drained.notify_waiters();
    }

    /// Shuts the queue down like [`shut_down`](Self::shut_down), then waits until no item is
    /// being processed: every item handed out has been [`done`](Self::done).
    ///
    /// Workers must call `done` for every item they got, or this waits forever (a later
    /// [`shut_down`](Self::shut_down) ends the wait).
    pub async fn shut_down_with_drain(&self) {
        {
            let mut state = self.shared.state.lock();
            state.log_shut_down(self.name(), true);
            state.shut_down();
            state.draining = true;
        }
        self.shared.ready.notify_waiters();
        loop {
            let mut notified = pin!(self.shared.drained.notified());
            notified.as_mut().enable();
            {
                let state = self.shared.state.lock();
                if state.processing == 0 || !state.draining {
                    tracing::debug!(
                        queue = self.name(),
                        drained = state.processing == 0,
                        "work queue shut down"
                    );
                    return;
                }
            }
            notified.await;
        }
    }

    /// Whether [`shut_down`](Self::shut_down) or
    /// [`shut_down_with_drain`](Self::shut_down_with_drain) was called.
    pub fn is_shutting_down(&self) -> bool {
        self.shared.state.lock().shutting_down
    }

    /// Checks the internal invariants (tests only).
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        self.shared.state.lock().check_invariants();
    }

    /// Takes the linearized log of operations recorded so far (tests only).
    #[cfg(test)]
    pub(crate) fn take_trace(&self) -> Vec<TraceEvent<T>> {
        std::mem::take(&mut self.shared.state.lock().trace)
    }
}

/// The state shared by all handles of one queue.
pub(crate) struct Shared<T> {
    name: String,
    state: Mutex<State<T>>,
    /// Signalled once per item queued, and for all waiters at shutdown and when the earliest
    /// deadline moves earlier.
    ready: Notify,
    /// Signalled when the last item being processed is done while draining, or at shutdown.
    drained: Notify,
}

impl<T: Send + Sync> UnfinishedWork for Shared<T> {
    #[cfg(feature = "metrics")]
    fn unfinished_work(&self, now: Instant) -> (f64, f64) {
        self.state
            .lock()
            .recorder
            .as_ref()
            .map_or((0.0, 0.0), |r| r.unfinished_work(now))
    }

    /// Without metrics nothing is tracked (and nothing asks).
    #[cfg(not(feature = "metrics"))]
    fn unfinished_work(&self, _now: Instant) -> (f64, f64) {
        (0.0, 0.0)
    }
}

/// What [`Shared::take`] found.
enum Take<T> {
    /// An item, now processing.
    Item(T),
    /// Nothing queued, and the queue is shutting down.
    ShutDown,
    /// Nothing queued yet; the earliest delayed item is due at `next_deadline`.
    Empty { next_deadline: Option<Instant> },
}

impl<T: Clone + Eq + Hash> Shared<T> {
    /// Takes the next item if one is queued (after moving due delayed items to the queue).
    fn take(&self) -> Take<T> {
        let mut state = self.state.lock();
        let pushed = state.promote_due();
        if let Some(item) = state.pop() {
            drop(state);
            // Our own pop consumed one of the pushed items.
            self.wake(pushed.saturating_sub(1));
            return Take::Item(item);
        }
        if state.shutting_down {
            Take::ShutDown
        } else {
            Take::Empty {
                next_deadline: state.next_deadline(),
            }
        }
    }
}

impl<T> Shared<T> {
    /// Wakes one idle worker per newly queued item.
    fn wake(&self, pushed: usize) {
        for _ in 0..pushed {
            self.ready.notify_one();
        }
    }
}

/// Where an item stands, for items that are queued or being processed.
#[derive(Debug, Clone, Copy)]
struct ItemState {
    /// Needs processing: queued, or added again while processing.
    dirty: bool,
    /// Handed out by `get`, `done` not yet called.
    processing: bool,
}

/// A delayed item in the waiting heap, ordered by deadline then insertion.
struct Waiting<T> {
    at: Instant,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Waiting<T> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.seq == other.seq
    }
}

impl<T> Eq for Waiting<T> {}

impl<T> PartialOrd for Waiting<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Waiting<T> {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest deadline first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// What [`State::add`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AddOutcome {
    /// Put at the back of the queue.
    Queued,
    /// Already queued, or already dirty while processing: nothing to do.
    AlreadyDirty,
    /// Being processed: marked dirty, to be queued at `done`.
    MarkedDirty,
    /// The queue is shutting down.
    Ignored,
}

/// What [`State::done`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DoneOutcome {
    /// Finished and forgotten.
    Finished,
    /// Finished and queued again (it was dirty).
    Requeued,
    /// The item was not being processed: nothing changed.
    NotProcessing,
}

/// One operation as the queue applied it, in lock order (tests only).
#[cfg(test)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TraceEvent<T> {
    Add(T, AddOutcome),
    Get(T),
    Done(T, DoneOutcome),
    ShutDown,
}

/// Everything behind the queue's lock.
///
/// Invariants (checked by `check_invariants` in tests):
/// - every item in `queue` appears there once, and its `items` entry is dirty and not
///   processing;
/// - every `items` entry is dirty or processing (or both); a dirty entry that is not processing
///   is in `queue`;
/// - `processing` counts the entries that are processing;
/// - `waiting_index` holds, for every waiting item, the deadline and sequence number of its live
///   heap entry; heap entries that do not match it are stale and skipped.
struct State<T> {
    queue: VecDeque<T>,
    items: HashMap<T, ItemState, RandomState>,
    processing: usize,
    waiting: BinaryHeap<Waiting<T>>,
    waiting_index: HashMap<T, (Instant, u64), RandomState>,
    next_seq: u64,
    shutting_down: bool,
    draining: bool,
    #[cfg(feature = "metrics")]
    recorder: Option<crate::metrics::Recorder<T>>,
    #[cfg(test)]
    trace: Vec<TraceEvent<T>>,
}

impl<T> State<T>
where
    T: Clone + Eq + Hash,
{
    fn new(recorder: Option<crate::metrics::RecorderSeed>) -> Self {
        #[cfg(not(feature = "metrics"))]
        let _ = recorder;
        Self {
            queue: VecDeque::new(),
            items: HashMap::default(),
            processing: 0,
            waiting: BinaryHeap::new(),
            waiting_index: HashMap::default(),
            next_seq: 0,
            shutting_down: false,
            draining: false,
            #[cfg(feature = "metrics")]
            recorder: recorder.map(crate::metrics::Recorder::new),
            #[cfg(test)]
            trace: Vec::new(),
        }
    }

    /// Adds `item`, timestamped `at` for the queue-duration metric (now if `None`).
    fn add(&mut self, item: T, at: Option<Instant>) -> AddOutcome {
        #[cfg(not(feature = "metrics"))]
        let _ = at;
        if self.shutting_down {
            #[cfg(test)]
            self.trace.push(TraceEvent::Add(item, AddOutcome::Ignored));
            return AddOutcome::Ignored;
        }
        match self.items.entry(item) {
            Entry::Occupied(mut entry) => {
                let outcome = if entry.get().dirty {
                    AddOutcome::AlreadyDirty
                } else {
                    // Tracked but not dirty, so it is being processed.
                    entry.get_mut().dirty = true;
                    #[cfg(feature = "metrics")]
                    if let Some(recorder) = &mut self.recorder {
                        recorder.add(entry.key(), at);
                    }
                    AddOutcome::MarkedDirty
                };
                #[cfg(test)]
                self.trace
                    .push(TraceEvent::Add(entry.key().clone(), outcome));
                outcome
            }
            Entry::Vacant(entry) => {
                self.queue.push_back(entry.key().clone());
                #[cfg(feature = "metrics")]
                if let Some(recorder) = &mut self.recorder {
                    recorder.add(entry.key(), at);
                }
                #[cfg(test)]
                self.trace
                    .push(TraceEvent::Add(entry.key().clone(), AddOutcome::Queued));
                entry.insert(ItemState {
                    dirty: true,
                    processing: false,
                });
                AddOutcome::Queued
            }
        }
    }

    /// Pops the next queued item and marks it processing.
    fn pop(&mut self) -> Option<T> {
        let item = self.queue.pop_front()?;
        if let Some(state) = self.items.get_mut(&item) {
            state.dirty = false;
            state.processing = true;
            self.processing += 1;
        }
        #[cfg(feature = "metrics")]
        if let Some(recorder) = &mut self.recorder {
            recorder.get(&item);
        }
        #[cfg(test)]
        self.trace.push(TraceEvent::Get(item.clone()));
        Some(item)
    }

    /// Ends processing of `item`, queueing it again if it is dirty.
    fn done(&mut self, item: &T) -> DoneOutcome {
        let outcome = match self.items.get_mut(item) {
            Some(state) if state.processing => {
                state.processing = false;
                self.processing -= 1;
                #[cfg(feature = "metrics")]
                if let Some(recorder) = &mut self.recorder {
                    recorder.done(item);
                }
                if state.dirty {
                    self.queue.push_back(item.clone());
                    DoneOutcome::Requeued
                } else {
                    self.items.remove(item);
                    DoneOutcome::Finished
                }
            }
            _ => DoneOutcome::NotProcessing,
        };
        #[cfg(test)]
        self.trace.push(TraceEvent::Done(item.clone(), outcome));
        outcome
    }

    /// Puts `item` in the waiting heap for `delay` (not zero). Returns whether the earliest
    /// deadline moved earlier (idle workers must re-arm their timers).
    fn add_waiting(&mut self, item: T, delay: Duration) -> bool {
        let now = Instant::now();
        // MAX_DELAY from any real instant is representable; were it not, the item is due at once.
        let at = now.checked_add(delay.min(MAX_DELAY)).unwrap_or(now);
        if let Some(&(existing, _)) = self.waiting_index.get(&item)
            && existing <= at
        {
            return false;
        }
        let earliest_before = self.next_deadline();
        let seq = self.next_seq;
        self.next_seq += 1;
        self.waiting_index.insert(item.clone(), (at, seq));
        self.waiting.push(Waiting { at, seq, item });
        earliest_before.is_none_or(|earliest| at < earliest)
    }

    /// The deadline of the earliest waiting item (possibly a stale heap entry, which only causes
    /// an early wake-up).
    fn next_deadline(&self) -> Option<Instant> {
        self.waiting.peek().map(|w| w.at)
    }

    /// Moves every waiting item whose deadline has passed to the queue, earliest first. Returns
    /// how many were queued.
    fn promote_due(&mut self) -> usize {
        if self.waiting.is_empty() {
            return 0;
        }
        let now = Instant::now();
        let mut pushed = 0;
        while self.waiting.peek().is_some_and(|w| w.at <= now) {
            let Some(Waiting { at, seq, item }) = self.waiting.pop() else {
                break;
            };
            if self.waiting_index.get(&item) != Some(&(at, seq)) {
                // Superseded by an earlier deadline for the same item.
                continue;
            }
            self.waiting_index.remove(&item);
            if self.add(item, Some(at)) == AddOutcome::Queued {
                pushed += 1;
            }
        }
        pushed
    }

    /// Logs a shutdown request with what it finds (before the delayed items are dropped).
    fn log_shut_down(&self, name: &str, drain: bool) {
        if !self.shutting_down {
            tracing::debug!(
                queue = name,
                drain,
                queued = self.queue.len(),
                processing = self.processing,
                delayed_dropped = self.waiting.len(),
                "work queue shutting down"
            );
        }
    }

    fn shut_down(&mut self) {
        self.shutting_down = true;
        self.waiting.clear();
        self.waiting_index.clear();
        #[cfg(test)]
        self.trace.push(TraceEvent::ShutDown);
    }

    fn record_retry(&mut self) {
        #[cfg(feature = "metrics")]
        if let Some(recorder) = &self.recorder {
            recorder.retry();
        }
    }

    #[cfg(test)]
    fn check_invariants(&self) {
        let mut seen = std::collections::HashSet::new();
        for item in &self.queue {
            assert!(seen.insert(item), "an item is queued twice");
            let state = self.items.get(item).expect("a queued item has a state");
            assert!(
                state.dirty && !state.processing,
                "a queued item must be dirty, not processing"
            );
        }
        let mut processing = 0;
        for (item, state) in &self.items {
            assert!(
                state.dirty || state.processing,
                "a tracked item is neither dirty nor processing"
            );
            if state.processing {
                processing += 1;
            } else {
                assert!(seen.contains(item), "a dirty idle item is not queued");
            }
        }
        assert_eq!(processing, self.processing, "processing count is off");
        for (item, &(at, seq)) in &self.waiting_index {
            assert!(
                self.waiting
                    .iter()
                    .any(|w| w.item == *item && w.at == at && w.seq == seq),
                "a waiting item has no live heap entry"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    //! Linearizability of the queue under concurrent workers: every run's operation log (taken
    //! under the queue's lock, so in the order the queue applied them) is replayed against a
    //! sequential model of the rules, and the dedup invariants are checked on it.

    use std::collections::{HashMap, HashSet, VecDeque};
    use std::sync::Arc;

    use parking_lot::Mutex;
    use proptest::prelude::*;

    use super::{AddOutcome, DoneOutcome, TraceEvent, WorkQueue};

    /// The rules of the queue, written as plainly as possible.
    #[derive(Default)]
    struct Model {
        queue: VecDeque<u8>,
        dirty: HashSet<u8>,
        processing: HashSet<u8>,
        shutting_down: bool,
    }

    impl Model {
        fn add(&mut self, item: u8) -> AddOutcome {
            if self.shutting_down {
                AddOutcome::Ignored
            } else if self.dirty.contains(&item) {
                AddOutcome::AlreadyDirty
            } else if self.processing.contains(&item) {
                self.dirty.insert(item);
                AddOutcome::MarkedDirty
            } else {
                self.dirty.insert(item);
                self.queue.push_back(item);
                AddOutcome::Queued
            }
        }

        fn get(&mut self) -> Option<u8> {
            let item = self.queue.pop_front()?;
            self.dirty.remove(&item);
            assert!(
                self.processing.insert(item),
                "item {item} handed to two workers at once"
            );
            Some(item)
        }

        fn done(&mut self, item: u8) -> DoneOutcome {
            if !self.processing.remove(&item) {
                DoneOutcome::NotProcessing
            } else if self.dirty.contains(&item) {
                self.queue.push_back(item);
                DoneOutcome::Requeued
            } else {
                DoneOutcome::Finished
            }
        }
    }

    /// Checks a run's log against the model and the dedup invariants.
    fn check_trace(trace: &[TraceEvent<u8>]) {
        let mut model = Model::default();
        // Per item: index of the last accepted add, index of the last get, effective adds, gets.
        let mut last_add: HashMap<u8, usize> = HashMap::new();
        let mut last_get: HashMap<u8, usize> = HashMap::new();
        let mut effective_adds: HashMap<u8, usize> = HashMap::new();
        let mut gets: HashMap<u8, usize> = HashMap::new();
        for (index, event) in trace.iter().enumerate() {
            match event {
                TraceEvent::Add(item, outcome) => {
                    assert_eq!(model.add(*item), *outcome, "add of {item} at step {index}");
                    if *outcome != AddOutcome::Ignored {
                        last_add.insert(*item, index);
                    }
                    if matches!(outcome, AddOutcome::Queued | AddOutcome::MarkedDirty) {
                        *effective_adds.entry(*item).or_default() += 1;
                    }
                }
                TraceEvent::Get(item) => {
                    assert_eq!(
                        model.get(),
                        Some(*item),
                        "get at step {index} broke FIFO order"
                    );
                    last_get.insert(*item, index);
                    let count = gets.entry(*item).or_default();
                    *count += 1;
                    assert!(
                        *count <= effective_adds.get(item).copied().unwrap_or(0),
                        "item {item} processed more often than it was added"
                    );
                }
                TraceEvent::Done(item, outcome) => {
                    assert_eq!(
                        model.done(*item),
                        *outcome,
                        "done of {item} at step {index}"
                    );
                }
                TraceEvent::ShutDown => model.shutting_down = true,
            }
            let mut queued = HashSet::new();
            assert!(
                model.queue.iter().all(|item| queued.insert(*item)),
                "queued twice"
            );
        }
        for (item, added) in &last_add {
            assert!(
                last_get.get(item).is_some_and(|got| got > added),
                "item {item} was added at step {added} but not processed afterwards"
            );
        }
        assert!(
            model.queue.is_empty() && model.processing.is_empty(),
            "work left over"
        );
    }

    /// What a worker does while it holds an item.
    #[derive(Debug, Clone)]
    enum WorkStep {
        /// Adds the item it is processing (marks it dirty).
        AddSelf,
        /// Adds another item.
        AddOther(u8),
        /// Lets other tasks run.
        Yield,
    }

    fn work_step() -> impl Strategy<Value = WorkStep> {
        prop_oneof![
            2 => Just(WorkStep::AddSelf),
            2 => (0u8..6).prop_map(WorkStep::AddOther),
            3 => Just(WorkStep::Yield),
        ]
    }

    /// Producers' adds (`None` = yield) and workers' per-item scripts (cycled).
    type Scenario = (Vec<Vec<Option<u8>>>, Vec<Vec<Vec<WorkStep>>>);

    fn scenario() -> impl Strategy<Value = Scenario> {
        let producers = prop::collection::vec(
            prop::collection::vec(prop::option::weighted(0.8, 0u8..6), 0..30),
            1..4,
        );
        let workers = prop::collection::vec(
            prop::collection::vec(prop::collection::vec(work_step(), 0..4), 1..5),
            1..5,
        );
        (producers, workers)
    }

    fn run(producers: Vec<Vec<Option<u8>>>, workers: Vec<Vec<Vec<WorkStep>>>) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .expect("runtime");
        let queue: WorkQueue<u8> = WorkQueue::new();
        let in_flight = Arc::new(Mutex::new(HashSet::new()));
        runtime.block_on(async {
            let mut worker_tasks = Vec::new();
            for scripts in workers {
                let queue = queue.clone();
                let in_flight = Arc::clone(&in_flight);
                worker_tasks.push(tokio::spawn(async move {
                    let mut scripts = scripts.into_iter().cycle();
                    while let Some(item) = queue.get().await {
                        assert!(
                            in_flight.lock().insert(item),
                            "{item} processed twice at once"
                        );
                        for step in scripts.next().unwrap_or_default() {
                            match step {
                                WorkStep::AddSelf => queue.add(item),
                                WorkStep::AddOther(other) => queue.add(other),
                                WorkStep::Yield => tokio::task::yield_now().await,
                            }
                            queue.check_invariants();
                        }
                        in_flight.lock().remove(&item);
                        queue.done(&item);
                        queue.check_invariants();
                    }
                }));
            }
            let producer_tasks: Vec<_> = producers
                .into_iter()
                .map(|adds| {
                    let queue = queue.clone();
                    tokio::spawn(async move {
                        for add in adds {
                            match add {
                                Some(item) => queue.add(item),
                                None => tokio::task::yield_now().await,
                            }
                            queue.check_invariants();
                        }
                    })
                })
                .collect();
            for task in producer_tasks {
                task.await.expect("producer");
            }
            // Not the draining shutdown: a worker that failed an assertion never calls done, and
            // its panic must fail the case rather than hang the drain.
            queue.shut_down();
            for task in worker_tasks {
                task.await.expect("worker");
            }
        });
        queue.check_invariants();
        check_trace(&queue.take_trace());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

        #[test]
        fn dedup_invariants_hold_under_concurrent_workers((producers, workers) in scenario()) {
            run(producers, workers);
        }
    }

    #[test]
    fn model_rejects_a_double_hand_out() {
        // The checker itself must catch a violation: two gets of one item without a done.
        let trace = vec![
            TraceEvent::Add(1, AddOutcome::Queued),
            TraceEvent::Get(1),
            TraceEvent::Get(1),
        ];
        let result = std::panic::catch_unwind(|| check_trace(&trace));
        assert!(result.is_err());
    }

    #[test]
    fn model_rejects_a_lost_add() {
        let trace = vec![
            TraceEvent::Add(1, AddOutcome::Queued),
            TraceEvent::Get(1),
            TraceEvent::Add(1, AddOutcome::MarkedDirty),
            TraceEvent::Done(1, DoneOutcome::Finished),
        ];
        let result = std::panic::catch_unwind(|| check_trace(&trace));
        assert!(result.is_err());
    }
}
