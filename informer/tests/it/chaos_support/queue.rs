//! [`ChaosQueue`]: the informer's real queue (a `DeltaFifo` or an `InOrderFifo`), wrapped to
//! make backlogs, relists with a batch in flight, and the moment of sync observable.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use informer::{
    Delta, DeltaType, KnownObjects, Listed, Object, Queue, QueueError, RawObject, key_of,
};
use informer_core::{ItemPeek, ProcessFn};
use informer_testing::JsonObject;
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::Notify;

use super::plan::{Dawdle, Plan};

/// What the queue saw, for the seed's statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Pauses taken before a pop.
    pub pauses: u64,
    /// Stalls of the processing loop until the next relist.
    pub stalls: u64,
    /// Replaces (relists) handed over while the processing loop had a batch in flight, before
    /// it was applied to the cache.
    pub replaces_before_apply: u64,
    /// ... after it was applied, before the queue was told it was done.
    pub replaces_after_apply: u64,
    /// Of those, relists that lack a key of the batch in flight.
    pub replaces_missing_in_flight: u64,
    /// Replaces that found add/update deltas still queued.
    pub replaces_with_backlog: u64,
    /// Replaces that found queued keys missing from the list (they need tombstones).
    pub replaces_missing_queued: u64,
    /// Updates (`MODIFIED` events) of a key neither cached nor queued.
    pub updates_of_unseen_keys: u64,
}

/// One queue operation the reflector asked for, held back (see [`ChaosQueue`]).
enum Op {
    Add(Arc<JsonObject>, Option<RawObject>),
    Update(Arc<JsonObject>, Option<RawObject>),
    Delete(Arc<JsonObject>),
    /// A list: `replace` (no unchanged keys) or `replace_listed`.
    Replace(Vec<Listed<JsonObject>>, String, bool),
    Resync,
}

/// When the held-back operations are handed over, relative to the batch in flight.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flush {
    No,
    BeforeApply,
    AfterApply,
}

/// The first list, as the queue was given it: key → resourceVersion.
pub type FirstList = Vec<(String, u64)>;

struct State {
    rng: StdRng,
    dawdle: Option<Dawdle>,
    stall_rate: f64,
    in_flight_rate: f64,
    /// Operations held back, in order; handed over during a later pop.
    held: VecDeque<Op>,
    /// The keys of the first held-back list, and how many pops it has been held for.
    held_list: Option<(HashSet<String>, usize)>,
    /// Keys with add/update deltas queued and not yet popped, with how many.
    pending: HashMap<String, usize>,
    first_list: Option<FirstList>,
    /// Keys of the first list that a later delete, or a later list without them, may have
    /// removed from the cache.
    removable: HashSet<String>,
    synced: bool,
    stats: QueueStats,
}

/// The informer's queue, wrapped:
///
/// - **pauses between pops** (virtual time): the processing loop waits now and then before
///   popping, so deltas pile up and relists meet queued keys, some of them missing from the
///   new list;
/// - **relists with a batch in flight**: a replace that arrives while deltas are queued is
///   sometimes held back (with every operation after it, in order) and handed to the real
///   queue *during* a later pop (preferably one whose batch holds a key the list lacks, at
///   most 8 pops later), before or after the popped batch is applied to the cache;
///   a valid interleaving on any runtime (the reflector just ran a bit later), and one that a
///   single-threaded runtime otherwise never produces, since the process function never
///   awaits;
/// - **the moment of sync**: the first list is recorded, and when the real queue first
///   reports `has_synced` after a pop (the informer announces sync right after), the cache is
///   checked at once to hold every object of that list (see [`check_first_list`]).
///
/// Once told to [`hurry`](Self::hurry) (quiescence) it neither pauses nor holds back.
pub struct ChaosQueue {
    inner: Arc<dyn Queue<JsonObject>>,
    cache: Arc<dyn KnownObjects<JsonObject>>,
    clock: super::plan::Clock,
    state: Mutex<State>,
    hurry: AtomicBool,
    /// Notified on every replace (and on hurry): ends a stall.
    relisted: Notify,
    /// Problems found at the moment of sync.
    pub problems: Mutex<Vec<String>>,
}

impl ChaosQueue {
    /// Wraps `inner`, whose popped deltas end up in `cache`.
    pub fn new(
        inner: Arc<dyn Queue<JsonObject>>,
        cache: Arc<dyn KnownObjects<JsonObject>>,
        plan: &Plan,
    ) -> Self {
        Self {
            inner,
            cache,
            clock: plan.clock,
            state: Mutex::new(State {
                rng: StdRng::seed_from_u64(plan.seed ^ 0x0051_ee70),
                dawdle: plan.dawdle,
                stall_rate: plan.stall_rate,
                in_flight_rate: plan.in_flight_replaces,
                held: VecDeque::new(),
                held_list: None,
                pending: HashMap::new(),
                first_list: None,
                removable: HashSet::new(),
                synced: false,
                stats: QueueStats::default(),
            }),
            hurry: AtomicBool::new(false),
            relisted: Notify::new(),
            problems: Mutex::new(Vec::new()),
        }
    }

    /// No more pauses or held-back operations from now on.
    pub fn hurry(&self) {
        self.hurry.store(true, Ordering::Relaxed);
        self.relisted.notify_waiters();
    }

    /// What the queue saw.
    pub fn stats(&self) -> QueueStats {
        self.state.lock().stats
    }

    /// The first list and the keys of it that may have left the cache since.
    pub fn first_list(&self) -> Option<(FirstList, HashSet<String>)> {
        let st = self.state.lock();
        st.first_list
            .clone()
            .map(|first| (first, st.removable.clone()))
    }

    fn key(obj: &JsonObject) -> String {
        key_of(obj).map(|k| k.to_string()).unwrap_or_default()
    }

    /// The key of a listed entry.
    fn listed_key(entry: &Listed<JsonObject>) -> String {
        match entry {
            Listed::Object { object, .. } => Self::key(object),
            Listed::Unchanged(key) | Listed::Encoded { key, .. } => key.to_string(),
        }
    }

    /// The listed resourceVersion of an entry (an unchanged key's is the cache's).
    fn listed_rv(&self, entry: &Listed<JsonObject>) -> u64 {
        match entry {
            Listed::Object { object, .. } => rv_of(object),
            Listed::Unchanged(key) => self
                .cache
                .resource_version_of(key.as_str())
                .and_then(|rv| rv.parse().ok())
                .unwrap_or(0),
            Listed::Encoded { raw, .. } => ItemPeek::of(raw.as_str())
                .ok()
                .and_then(|peek| peek.resource_version?.parse().ok())
                .unwrap_or(0),
        }
    }

    /// Hands an operation to the real queue, or holds it back: held back when something
    /// already is (to keep the order), or when it is a replace that meets a backlog and the
    /// dice say so.
    fn submit(&self, op: Op) -> Result<(), QueueError> {
        if matches!(op, Op::Replace(..)) {
            self.relisted.notify_waiters();
        }
        let mut st = self.state.lock();
        if let Op::Update(obj, _) = &op {
            let key = Self::key(obj);
            if !st.pending.contains_key(&key) && !self.cache.contains_key(&key) {
                st.stats.updates_of_unseen_keys += 1;
            }
        }
        if let Op::Add(obj, _) | Op::Update(obj, _) = &op {
            *st.pending.entry(Self::key(obj)).or_default() += 1;
        }
        if let Op::Delete(obj) = &op {
            st.removable.insert(Self::key(obj));
        }
        if let Op::Replace(list, _, _) = &op {
            let listed: HashSet<String> = list.iter().map(Self::listed_key).collect();
            if st.first_list.is_none() {
                st.first_list = Some(
                    list.iter()
                        .map(|e| (Self::listed_key(e), self.listed_rv(e)))
                        .collect(),
                );
            } else {
                let gone: Vec<String> = st
                    .first_list
                    .iter()
                    .flatten()
                    .filter(|(k, _)| !listed.contains(k))
                    .map(|(k, _)| k.clone())
                    .collect();
                st.removable.extend(gone);
            }
            if !st.pending.is_empty() {
                st.stats.replaces_with_backlog += 1;
                if st.pending.keys().any(|k| !listed.contains(k)) {
                    st.stats.replaces_missing_queued += 1;
                }
            }
        }
        let hold = !st.held.is_empty()
            || (matches!(op, Op::Replace(..))
                && !self.hurry.load(Ordering::Relaxed)
                && !self.inner.is_empty()
                && st.in_flight_rate > 0.0
                && {
                    let rate = st.in_flight_rate;
                    st.rng.random_bool(rate.min(1.0))
                });
        if hold {
            if let (Op::Replace(list, _, _), None) = (&op, &st.held_list) {
                st.held_list = Some((list.iter().map(Self::listed_key).collect(), 0));
            }
            st.held.push_back(op);
            return Ok(());
        }
        // Under the lock: a concurrent hand-over of held operations cannot overtake this one.
        self.apply(op)
    }

    fn apply(&self, op: Op) -> Result<(), QueueError> {
        match op {
            Op::Add(o, None) => self.inner.add(o),
            Op::Add(o, Some(raw)) => self.inner.add_raw(o, raw),
            Op::Update(o, None) => self.inner.update(o),
            Op::Update(o, Some(raw)) => self.inner.update_raw(o, raw),
            Op::Delete(o) => self.inner.delete(o),
            Op::Replace(list, rv, false) => {
                let objects = list
                    .into_iter()
                    .filter_map(|e| match e {
                        Listed::Object { object, .. } => Some(object),
                        Listed::Unchanged(_) | Listed::Encoded { .. } => None,
                    })
                    .collect();
                self.inner.replace(objects, &rv)
            }
            // A held list is handed over later: its unchanged keys are resolved against the
            // cache as it is then, as they would have been had the reflector run later.
            Op::Replace(list, rv, true) => {
                self.inner.replace_listed(list, &rv, self.cache.as_ref())
            }
            Op::Resync => self.inner.resync(),
        }
    }

    /// Hands every held-back operation to the real queue, in order.
    fn flush(&self, when: Flush) {
        let mut st = self.state.lock();
        st.held_list = None;
        while let Some(op) = st.held.pop_front() {
            if matches!(op, Op::Replace(..)) {
                match when {
                    Flush::BeforeApply => st.stats.replaces_before_apply += 1,
                    Flush::AfterApply => st.stats.replaces_after_apply += 1,
                    Flush::No => {}
                }
            }
            // A closed queue ignores writes; other errors were the reflector's to see, and
            // it is gone on by now: the informer logs nothing more for them either.
            let _ = self.apply(op);
        }
    }

    /// Whether to stall before this pop until the next relist (at most how long).
    fn stall(&self) -> Option<Duration> {
        if self.hurry.load(Ordering::Relaxed) {
            return None;
        }
        let mut st = self.state.lock();
        let rate = st.stall_rate.min(1.0);
        if rate <= 0.0 || !st.rng.random_bool(rate) {
            return None;
        }
        st.stats.stalls += 1;
        Some(self.clock.scaled(Duration::from_secs(120)))
    }

    /// Whether to pause before this pop, and how long.
    fn pause(&self) -> Option<Duration> {
        if self.hurry.load(Ordering::Relaxed) {
            return None;
        }
        let mut st = self.state.lock();
        let dawdle = st.dawdle?;
        if !st.rng.random_bool(dawdle.rate) {
            return None;
        }
        let max = u64::try_from(dawdle.max.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        let pause = Duration::from_millis(st.rng.random_range(1..=max));
        st.stats.pauses += 1;
        Some(self.clock.scaled(pause))
    }

    /// Before a popped batch is processed: forget its keys' pending counts, and decide when
    /// held-back operations are handed over.
    fn popped(&self, deltas: &[Delta<JsonObject>]) -> Flush {
        let mut st = self.state.lock();
        for d in deltas {
            if matches!(d.kind, DeltaType::Added | DeltaType::Updated) {
                let key = d.object.key().map(|k| k.to_string()).unwrap_or_default();
                if let Some(n) = st.pending.get_mut(&key) {
                    *n -= 1;
                    if *n == 0 {
                        st.pending.remove(&key);
                    }
                }
            }
        }
        if st.held.is_empty() {
            return Flush::No;
        }
        // Hand the held list over while the batch in flight holds a key missing from it (the
        // case where the queue must remember the batch), or at the latest after a few pops,
        // or with the last batch queued (no later pop would come).
        let missing = st.held_list.as_ref().is_some_and(|(listed, _)| {
            deltas
                .iter()
                .any(|d| d.object.key().is_ok_and(|k| !listed.contains(k.as_str())))
        });
        let overdue = st.held_list.as_mut().is_none_or(|(_, pops)| {
            *pops += 1;
            *pops > 8
        });
        if !(missing || overdue || self.inner.is_empty()) {
            return Flush::No;
        }
        if missing {
            st.stats.replaces_missing_in_flight += 1;
        }
        if st.rng.random_bool(0.5) {
            Flush::BeforeApply
        } else {
            Flush::AfterApply
        }
    }

    /// After a pop: when the real queue reports sync for the first time, check the cache.
    fn after_pop(&self) {
        let first = {
            let mut st = self.state.lock();
            if st.synced || !self.inner.has_synced() {
                return;
            }
            st.synced = true;
            st.first_list.clone().map(|f| (f, st.removable.clone()))
        };
        let Some((first, removable)) = first else {
            return;
        };
        if let Err(problem) = check_first_list(&first, &removable, self.cache.as_ref()) {
            self.problems.lock().push(format!(
                "when the queue first reported has_synced (the informer's sync): {problem}"
            ));
        }
    }
}

/// The resourceVersion of an object as a number (0 when it has none or it is not a number).
pub fn rv_of(obj: &JsonObject) -> u64 {
    obj.object_resource_version()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

/// The cache holds every object of the first list, at its listed resourceVersion or a later
/// one, except the keys a later delete or a later list may have removed.
pub fn check_first_list(
    first: &FirstList,
    removable: &HashSet<String>,
    cache: &dyn KnownObjects<JsonObject>,
) -> Result<(), String> {
    let mut wrong = Vec::new();
    for (key, rv) in first {
        match cache.get_by_key(key) {
            Some(obj) if rv_of(obj.as_ref()) >= *rv => {}
            _ if removable.contains(key) => {}
            Some(obj) => wrong.push(format!(
                "{key} is at resourceVersion {} (listed at {rv})",
                rv_of(obj.as_ref())
            )),
            None => wrong.push(format!("{key}@{rv} is missing")),
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} of the {} objects of the first list are not in the cache: {}",
            wrong.len(),
            first.len(),
            wrong.join(", ")
        ))
    }
}

#[async_trait::async_trait]
impl Queue<JsonObject> for ChaosQueue {
    fn add(&self, obj: Arc<JsonObject>) -> Result<(), QueueError> {
        self.submit(Op::Add(obj, None))
    }

    fn update(&self, obj: Arc<JsonObject>) -> Result<(), QueueError> {
        self.submit(Op::Update(obj, None))
    }

    fn add_raw(&self, obj: Arc<JsonObject>, raw: RawObject) -> Result<(), QueueError> {
        self.submit(Op::Add(obj, Some(raw)))
    }

    fn update_raw(&self, obj: Arc<JsonObject>, raw: RawObject) -> Result<(), QueueError> {
        self.submit(Op::Update(obj, Some(raw)))
    }

    fn replace_listed(
        &self,
        entries: Vec<Listed<JsonObject>>,
        resource_version: &str,
        _known: &dyn KnownObjects<JsonObject>,
    ) -> Result<(), QueueError> {
        // `known` is the informer's cache, which `self.cache` is too.
        self.submit(Op::Replace(entries, resource_version.to_owned(), true))
    }

    fn delete(&self, obj: Arc<JsonObject>) -> Result<(), QueueError> {
        self.submit(Op::Delete(obj))
    }

    fn replace(
        &self,
        objects: Vec<Arc<JsonObject>>,
        resource_version: &str,
    ) -> Result<(), QueueError> {
        let entries = objects.into_iter().map(Listed::object).collect();
        self.submit(Op::Replace(entries, resource_version.to_owned(), false))
    }

    fn resync(&self) -> Result<(), QueueError> {
        self.submit(Op::Resync)
    }

    async fn pop(&self, process: &mut ProcessFn<'_, JsonObject>) -> Result<(), QueueError> {
        if let Some(longest) = self.stall() {
            let relisted = self.relisted.notified();
            tokio::pin!(relisted);
            relisted.as_mut().enable();
            if !self.hurry.load(Ordering::Relaxed) {
                tokio::select! {
                    () = relisted => {}
                    () = tokio::time::sleep(longest) => {}
                }
            }
        }
        if let Some(pause) = self.pause() {
            tokio::time::sleep(pause).await;
        }
        let result = self
            .inner
            .pop(&mut |deltas: &[Delta<JsonObject>]| {
                let when = self.popped(deltas);
                if when == Flush::BeforeApply {
                    self.flush(when);
                }
                let result = process(deltas);
                if when == Flush::AfterApply {
                    self.flush(when);
                }
                result
            })
            .await;
        self.after_pop();
        result
    }

    fn has_synced(&self) -> bool {
        self.inner.has_synced()
    }

    fn len(&self) -> usize {
        self.inner.len() + self.state.lock().held.len()
    }

    fn close(&self) {
        self.inner.close();
    }

    fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }
}
