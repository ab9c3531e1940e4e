//! Model-based property tests: a queue against a plain reference model of its semantics.
//!
//! The models are deliberately naive (vectors and linear scans, no indices, no locking) so that
//! they can be checked by reading them against SEMANTICS.md §2.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use futures::FutureExt;
use informer_core::{Delta, DeltaType, KnownObjects, ProcessError, Queue, QueueError};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use super::{KnownObjectsMap, KnownStore};
use crate::JsonObject;

/// Settings of a model-based check: how many random operation sequences, and how long.
#[derive(Debug, Clone)]
pub struct ModelCheck {
    /// How many random sequences to run (default 256).
    pub cases: u32,
    /// The longest sequence (default 60 operations).
    pub max_ops: usize,
}

impl Default for ModelCheck {
    fn default() -> Self {
        Self {
            cases: 256,
            max_ops: 60,
        }
    }
}

impl ModelCheck {
    /// Checks queues built by `make` against the `DeltaFifo` model: per-key delta lists, keys
    /// popped in first-queued order, consecutive deletions merged, the batch being processed
    /// counting as pending, requeue to the front unless the key was queued again meanwhile.
    ///
    /// Panics with the shortest failing operation sequence proptest finds.
    pub fn delta_fifo<Q, F>(&self, make: F)
    where
        F: Fn(KnownStore) -> Q,
        Q: Queue<JsonObject>,
    {
        self.check("DeltaFifo", &make, DeltaModel::new);
    }

    /// Checks queues built by `make` against the in-order model: every delta in arrival order,
    /// `replace` and `resync` as atomic entries, pops of one atomic entry or of up to
    /// `max_batch_size` consecutive single deltas, requeue to the front. `make` must build its
    /// queue with that same `max_batch_size`.
    ///
    /// Panics with the shortest failing operation sequence proptest finds.
    pub fn in_order<Q, F>(&self, max_batch_size: usize, make: F)
    where
        F: Fn(KnownStore) -> Q,
        Q: Queue<JsonObject>,
    {
        let max_batch_size = max_batch_size.max(1);
        self.check("in-order FIFO", &make, |store| {
            InOrderModel::new(store, max_batch_size)
        });
    }

    fn check<Q, M>(
        &self,
        name: &str,
        make: &dyn Fn(KnownStore) -> Q,
        model: impl Fn(Option<BTreeMap<String, Arc<JsonObject>>>) -> M,
    ) where
        Q: Queue<JsonObject>,
        M: Model,
    {
        let mut runner = TestRunner::new(Config {
            cases: self.cases,
            failure_persistence: None,
            ..Config::default()
        });
        let result = runner.run(&scenario(self.max_ops), |scenario| {
            execute(&scenario, make, &model).map_err(TestCaseError::fail)
        });
        if let Err(err) = result {
            panic!("queue model check ({name}): {err}");
        }
    }
}

/// [`ModelCheck::delta_fifo`] with the default settings.
pub fn check_delta_fifo_model<Q, F>(make: F)
where
    F: Fn(KnownStore) -> Q,
    Q: Queue<JsonObject>,
{
    ModelCheck::default().delta_fifo(make);
}

/// [`ModelCheck::in_order`] with the default settings.
pub fn check_in_order_model<Q, F>(max_batch_size: usize, make: F)
where
    F: Fn(KnownStore) -> Q,
    Q: Queue<JsonObject>,
{
    ModelCheck::default().in_order(max_batch_size, make);
}

/// One random test case.
#[derive(Debug, Clone)]
struct Scenario {
    /// `Some(keys)`: the queue has a known-objects store holding these keys at the start.
    store: Option<Vec<u8>>,
    ops: Vec<Op>,
}

#[derive(Debug, Clone)]
enum Op {
    Write(Write),
    /// A pop; `during` runs from inside the process function, before it answers `verdict`.
    Pop {
        verdict: Verdict,
        during: Option<Write>,
    },
    Close,
}

#[derive(Debug, Clone)]
enum Write {
    Add(u8),
    Update(u8),
    Delete(u8),
    Replace(Vec<u8>),
    Resync,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Ok,
    Requeue,
    Drop,
}

const KEYS: u8 = 5;

fn write_strategy() -> impl Strategy<Value = Write> {
    prop_oneof![
        4 => (0..KEYS).prop_map(Write::Add),
        4 => (0..KEYS).prop_map(Write::Update),
        3 => (0..KEYS).prop_map(Write::Delete),
        1 => proptest::collection::vec(0..KEYS, 0..=4).prop_map(Write::Replace),
        1 => Just(Write::Resync),
    ]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let verdict = prop_oneof![
        6 => Just(Verdict::Ok),
        2 => Just(Verdict::Requeue),
        1 => Just(Verdict::Drop),
    ];
    prop_oneof![
        10 => write_strategy().prop_map(Op::Write),
        7 => (verdict, proptest::option::weighted(0.25, write_strategy()))
            .prop_map(|(verdict, during)| Op::Pop { verdict, during }),
        1 => Just(Op::Close),
    ]
}

fn scenario(max_ops: usize) -> impl Strategy<Value = Scenario> {
    (
        proptest::option::of(proptest::collection::vec(0..KEYS, 0..=3)),
        proptest::collection::vec(op_strategy(), 0..=max_ops),
    )
        .prop_map(|(store, ops)| Scenario { store, ops })
}

/// A write with its objects already made, so queue and model get the same `Arc`s.
enum Prepared {
    One(DeltaType, Arc<JsonObject>),
    Replace(Vec<Arc<JsonObject>>),
    Resync,
}

/// Makes objects with unique resource versions.
struct Objects {
    next_rv: u64,
}

impl Objects {
    fn make(&mut self, key: u8) -> Arc<JsonObject> {
        self.next_rv += 1;
        Arc::new(
            JsonObject::new(Some("model"), &format!("k{key}"))
                .with_resource_version(self.next_rv.to_string()),
        )
    }

    fn prepare(&mut self, write: &Write) -> Prepared {
        match write {
            Write::Add(k) => Prepared::One(DeltaType::Added, self.make(*k)),
            Write::Update(k) => Prepared::One(DeltaType::Updated, self.make(*k)),
            Write::Delete(k) => Prepared::One(DeltaType::Deleted, self.make(*k)),
            Write::Replace(keys) => Prepared::Replace(keys.iter().map(|k| self.make(*k)).collect()),
            Write::Resync => Prepared::Resync,
        }
    }
}

fn key_of_obj(obj: &JsonObject) -> String {
    format!(
        "{}/{}",
        obj.metadata.namespace.as_deref().unwrap_or(""),
        obj.metadata.name.as_deref().unwrap_or("")
    )
}

fn apply_to_queue<Q: Queue<JsonObject> + ?Sized>(q: &Q, write: &Prepared) -> Result<(), String> {
    let result = match write {
        Prepared::One(DeltaType::Added, obj) => q.add(Arc::clone(obj)),
        Prepared::One(DeltaType::Updated, obj) => q.update(Arc::clone(obj)),
        Prepared::One(_, obj) => q.delete(Arc::clone(obj)),
        Prepared::Replace(list) => q.replace(list.clone(), "1"),
        Prepared::Resync => q.resync(),
    };
    result.map_err(|err| format!("a write failed: {err}"))
}

fn apply_to_model<M: Model>(model: &mut M, write: &Prepared) {
    match write {
        Prepared::One(kind, obj) => model.write(*kind, obj),
        Prepared::Replace(list) => model.replace(list),
        Prepared::Resync => model.resync(),
    }
}

/// `key:Kind@rv`, `key:Deleted(tombstone)@rv`.
fn label(kind: DeltaType, key: &str, tombstone: bool, obj: &JsonObject) -> String {
    let rv = obj.metadata.resource_version.as_deref().unwrap_or("");
    let t = if tombstone { "(tombstone)" } else { "" };
    format!("{key}:{kind:?}{t}@{rv}")
}

fn labels(deltas: &[Delta<JsonObject>]) -> Vec<String> {
    deltas
        .iter()
        .map(|d| {
            let key = d.object.key().map(|k| k.to_string()).unwrap_or_default();
            label(d.kind, &key, d.object.is_tombstone(), d.object.object())
        })
        .collect()
}

/// What a pop did, as far as a caller can see.
#[derive(Debug, PartialEq, Eq)]
struct Popped {
    batch: Vec<String>,
    /// `has_synced` as seen from inside the process function (after the `during` write).
    synced_during: bool,
    result: &'static str,
}

fn result_name(result: &Result<(), QueueError>) -> &'static str {
    match result {
        Ok(()) => "Ok",
        Err(QueueError::Closed) => "Closed",
        Err(QueueError::Process(ProcessError::Requeue(_))) => "Requeue",
        Err(QueueError::Process(ProcessError::Drop(_))) => "Drop",
        Err(_) => "other error",
    }
}

fn execute<Q, M>(
    scenario: &Scenario,
    make: &dyn Fn(KnownStore) -> Q,
    new_model: &impl Fn(Option<BTreeMap<String, Arc<JsonObject>>>) -> M,
) -> Result<(), String>
where
    Q: Queue<JsonObject>,
    M: Model,
{
    let mut objects = Objects { next_rv: 0 };
    let (q, store, mut model) = match &scenario.store {
        None => (make(None), None, new_model(None)),
        Some(keys) => {
            let store = Arc::new(KnownObjectsMap::new());
            let mut seed = BTreeMap::new();
            for k in keys {
                let obj = objects.make(*k);
                store.insert(Arc::clone(&obj)).map_err(|e| e.to_string())?;
                seed.insert(key_of_obj(&obj), obj);
            }
            let known: Arc<dyn KnownObjects<JsonObject>> = Arc::clone(&store) as _;
            (make(Some(known)), Some(store), new_model(Some(seed)))
        }
    };
    for (step, op) in scenario.ops.iter().enumerate() {
        let at = |what: String| format!("step {step} ({op:?}): {what}");
        match op {
            Op::Write(write) => {
                let prepared = objects.prepare(write);
                apply_to_queue(&q, &prepared).map_err(at)?;
                apply_to_model(&mut model, &prepared);
            }
            Op::Close => {
                q.close();
                model.close();
            }
            Op::Pop { verdict, during } => {
                let during = during.as_ref().map(|w| objects.prepare(w));
                let expected = match model.begin_pop() {
                    Some(batch) => {
                        if let Some(w) = &during {
                            apply_to_model(&mut model, w);
                        }
                        let synced_during = model.synced();
                        model.finish_pop(*verdict);
                        Some(Popped {
                            batch,
                            synced_during,
                            result: match verdict {
                                Verdict::Ok => "Ok",
                                Verdict::Requeue => "Requeue",
                                Verdict::Drop => "Drop",
                            },
                        })
                    }
                    None if model.closed() => Some(Popped {
                        batch: Vec::new(),
                        synced_during: false,
                        result: "Closed",
                    }),
                    None => None,
                };
                let mut batch = Vec::new();
                let mut synced_during = false;
                let mut write_error = None;
                let result = q
                    .pop(&mut |deltas| {
                        batch = labels(deltas);
                        if let Some(w) = &during {
                            write_error = apply_to_queue(&q, w).err();
                        }
                        synced_during = q.has_synced();
                        match verdict {
                            Verdict::Ok => {
                                if let Some(store) = &store {
                                    store
                                        .apply(deltas)
                                        .map_err(|e| ProcessError::Drop(e.into()))?;
                                }
                                Ok(())
                            }
                            Verdict::Requeue => Err(ProcessError::Requeue("model says so".into())),
                            Verdict::Drop => Err(ProcessError::Drop("model says so".into())),
                        }
                    })
                    .now_or_never();
                if let Some(err) = write_error {
                    return Err(at(err));
                }
                let actual = result.map(|r| Popped {
                    batch,
                    synced_during,
                    result: result_name(&r),
                });
                if actual != expected {
                    return Err(at(format!(
                        "pop: queue gave {actual:?}, model expects {expected:?} (None: pop waits)"
                    )));
                }
            }
        }
        let (len, synced, closed) = (q.len(), q.has_synced(), q.is_closed());
        if (len, synced, closed) != (model.len(), model.synced(), model.closed()) {
            return Err(at(format!(
                "queue has len {len}, has_synced {synced}, is_closed {closed}; model expects {}, \
                 {}, {}",
                model.len(),
                model.synced(),
                model.closed()
            )));
        }
    }
    Ok(())
}

/// A reference model of one queue semantics.
trait Model {
    fn write(&mut self, kind: DeltaType, obj: &Arc<JsonObject>);
    fn replace(&mut self, list: &[Arc<JsonObject>]);
    fn resync(&mut self);
    /// Takes the next batch (labels) and marks it in flight; `None` if there is none.
    fn begin_pop(&mut self) -> Option<Vec<String>>;
    fn finish_pop(&mut self, verdict: Verdict);
    fn len(&self) -> usize;
    fn synced(&self) -> bool;
    fn close(&mut self);
    fn closed(&self) -> bool;
}

/// One delta in a model.
#[derive(Clone)]
struct MDelta {
    kind: DeltaType,
    key: String,
    tombstone: bool,
    /// The object, or a tombstone's last known object.
    obj: Arc<JsonObject>,
}

impl MDelta {
    fn new(kind: DeltaType, obj: &Arc<JsonObject>) -> Self {
        Self {
            kind,
            key: key_of_obj(obj),
            tombstone: false,
            obj: Arc::clone(obj),
        }
    }

    fn tombstone(key: &str, obj: &Arc<JsonObject>) -> Self {
        Self {
            kind: DeltaType::Deleted,
            key: key.to_owned(),
            tombstone: true,
            obj: Arc::clone(obj),
        }
    }

    fn label(&self) -> String {
        label(self.kind, &self.key, self.tombstone, &self.obj)
    }
}

impl fmt::Debug for MDelta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

/// The known-objects store as the informer keeps it: applied popped batches.
struct ModelStore(Option<BTreeMap<String, Arc<JsonObject>>>);

impl ModelStore {
    fn has(&self, key: &str) -> bool {
        self.0.as_ref().is_some_and(|s| s.contains_key(key))
    }

    fn entries(&self) -> Vec<(String, Arc<JsonObject>)> {
        self.0
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), Arc::clone(v)))
            .collect()
    }

    fn apply(&mut self, deltas: &[MDelta]) {
        if let Some(store) = &mut self.0 {
            for d in deltas {
                if d.kind == DeltaType::Deleted {
                    store.remove(&d.key);
                } else {
                    store.insert(d.key.clone(), Arc::clone(&d.obj));
                }
            }
        }
    }
}

/// `has_synced` bookkeeping, as the contract states it.
#[derive(Default)]
struct SyncState {
    populated: bool,
    /// Initial entries not yet processed.
    outstanding: usize,
}

impl SyncState {
    fn synced(&self) -> bool {
        self.populated && self.outstanding == 0
    }
}

// ---------------------------------------------------------------------------------------------
// DeltaFifo

struct KeyEntry {
    key: String,
    deltas: Vec<MDelta>,
    initial: bool,
}

struct DeltaModel {
    /// Queued keys, oldest first.
    queue: Vec<KeyEntry>,
    in_flight: Option<KeyEntry>,
    store: ModelStore,
    sync: SyncState,
    closed: bool,
}

impl DeltaModel {
    fn new(store: Option<BTreeMap<String, Arc<JsonObject>>>) -> Self {
        Self {
            queue: Vec::new(),
            in_flight: None,
            store: ModelStore(store),
            sync: SyncState::default(),
            closed: false,
        }
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.queue.iter().position(|e| e.key == key)
    }

    fn pending(&self, key: &str) -> bool {
        self.position(key).is_some() || self.in_flight.as_ref().is_some_and(|e| e.key == key)
    }

    /// Appends to the key's list; two deletions in a row become one.
    fn append(&mut self, delta: MDelta) {
        let Some(i) = self.position(&delta.key) else {
            self.queue.push(KeyEntry {
                key: delta.key.clone(),
                deltas: vec![delta],
                initial: false,
            });
            return;
        };
        let deltas = &mut self.queue[i].deltas;
        if let Some(last) = deltas.last_mut()
            && last.kind == DeltaType::Deleted
            && delta.kind == DeltaType::Deleted
        {
            // client-go's dedupDeltas: the newer only replaces an older tombstone.
            if last.tombstone {
                *last = delta;
            }
            return;
        }
        deltas.push(delta);
    }
}

impl Model for DeltaModel {
    fn write(&mut self, kind: DeltaType, obj: &Arc<JsonObject>) {
        if self.closed {
            return;
        }
        self.sync.populated = true;
        let delta = MDelta::new(kind, obj);
        if kind == DeltaType::Deleted && !self.pending(&delta.key) && !self.store.has(&delta.key) {
            return;
        }
        self.append(delta);
    }

    fn replace(&mut self, list: &[Arc<JsonObject>]) {
        if self.closed {
            return;
        }
        let mut listed = BTreeSet::new();
        for obj in list {
            let delta = MDelta::new(DeltaType::Replaced, obj);
            listed.insert(delta.key.clone());
            self.append(delta);
        }
        let queued: Vec<(String, Arc<JsonObject>)> = self
            .queue
            .iter()
            .filter(|e| !listed.contains(&e.key))
            .filter_map(|e| e.deltas.last().map(|d| (e.key.clone(), Arc::clone(&d.obj))))
            .collect();
        for (key, obj) in queued {
            self.append(MDelta::tombstone(&key, &obj));
        }
        let in_flight = self.in_flight.as_ref().and_then(|e| {
            let last = e.deltas.last()?;
            let gone = listed.contains(&e.key) || self.position(&e.key).is_some();
            (!gone && last.kind != DeltaType::Deleted)
                .then(|| (e.key.clone(), Arc::clone(&last.obj)))
        });
        if let Some((key, obj)) = in_flight {
            self.append(MDelta::tombstone(&key, &obj));
        }
        for (key, obj) in self.store.entries() {
            if !listed.contains(&key) && !self.pending(&key) {
                self.append(MDelta::tombstone(&key, &obj));
            }
        }
        if !self.sync.populated {
            self.sync.populated = true;
            for e in &mut self.queue {
                e.initial = true;
            }
            self.sync.outstanding = self.queue.len();
        }
    }

    fn resync(&mut self) {
        if self.closed {
            return;
        }
        for (key, obj) in self.store.entries() {
            if !self.pending(&key) {
                self.append(MDelta::new(DeltaType::Sync, &obj));
            }
        }
    }

    fn begin_pop(&mut self) -> Option<Vec<String>> {
        if self.queue.is_empty() {
            return None;
        }
        let entry = self.queue.remove(0);
        let labels = entry.deltas.iter().map(MDelta::label).collect();
        self.in_flight = Some(entry);
        Some(labels)
    }

    fn finish_pop(&mut self, verdict: Verdict) {
        let Some(entry) = self.in_flight.take() else {
            return;
        };
        match verdict {
            Verdict::Ok | Verdict::Drop => {
                if verdict == Verdict::Ok {
                    self.store.apply(&entry.deltas);
                }
                if entry.initial {
                    self.sync.outstanding -= 1;
                }
            }
            Verdict::Requeue => match self.position(&entry.key) {
                Some(i) => {
                    // Queued again meanwhile: the failed deltas are dropped, the newer entry
                    // inherits their place in the initial population.
                    if entry.initial {
                        if self.queue[i].initial {
                            self.sync.outstanding -= 1;
                        } else {
                            self.queue[i].initial = true;
                        }
                    }
                }
                None => self.queue.insert(0, entry),
            },
        }
    }

    fn len(&self) -> usize {
        self.queue.len()
    }

    fn synced(&self) -> bool {
        self.sync.synced()
    }

    fn close(&mut self) {
        self.closed = true;
    }

    fn closed(&self) -> bool {
        self.closed
    }
}

// ---------------------------------------------------------------------------------------------
// In-order FIFO

struct RunEntry {
    deltas: Vec<MDelta>,
    /// From `replace` or `resync`: popped whole, never merged with others.
    atomic: bool,
    initial: bool,
}

struct InOrderModel {
    queue: Vec<RunEntry>,
    in_flight: Option<RunEntry>,
    store: ModelStore,
    sync: SyncState,
    closed: bool,
    max_batch_size: usize,
}

impl InOrderModel {
    fn new(store: Option<BTreeMap<String, Arc<JsonObject>>>, max_batch_size: usize) -> Self {
        Self {
            queue: Vec::new(),
            in_flight: None,
            store: ModelStore(store),
            sync: SyncState::default(),
            closed: false,
            max_batch_size,
        }
    }

    /// Every pending delta, oldest first (the batch in flight is older than the queue).
    fn pending_deltas(&self) -> impl Iterator<Item = &MDelta> {
        self.in_flight
            .iter()
            .chain(&self.queue)
            .flat_map(|e| &e.deltas)
    }

    fn pending(&self, key: &str) -> bool {
        self.pending_deltas().any(|d| d.key == key)
    }

    fn push_atomic(&mut self, deltas: Vec<MDelta>, initial: bool) {
        if !deltas.is_empty() {
            self.queue.push(RunEntry {
                deltas,
                atomic: true,
                initial,
            });
        }
    }
}

impl Model for InOrderModel {
    fn write(&mut self, kind: DeltaType, obj: &Arc<JsonObject>) {
        if self.closed {
            return;
        }
        self.sync.populated = true;
        let delta = MDelta::new(kind, obj);
        if kind == DeltaType::Deleted && !self.pending(&delta.key) && !self.store.has(&delta.key) {
            return;
        }
        self.queue.push(RunEntry {
            deltas: vec![delta],
            atomic: false,
            initial: false,
        });
    }

    fn replace(&mut self, list: &[Arc<JsonObject>]) {
        if self.closed {
            return;
        }
        let replaced: Vec<MDelta> = list
            .iter()
            .map(|o| MDelta::new(DeltaType::Replaced, o))
            .collect();
        let listed: BTreeSet<String> = replaced.iter().map(|d| d.key.clone()).collect();
        // Pending keys in the order of their first pending delta, with their newest delta.
        let mut order: Vec<String> = Vec::new();
        let mut newest: BTreeMap<String, MDelta> = BTreeMap::new();
        for d in self.pending_deltas() {
            if newest.insert(d.key.clone(), d.clone()).is_none() {
                order.push(d.key.clone());
            }
        }
        // Deletions first (client-go's RealFIFO), then the listed objects.
        let mut deltas = Vec::new();
        for key in &order {
            if let Some(d) = newest.get(key)
                && !listed.contains(key)
                && d.kind != DeltaType::Deleted
            {
                deltas.push(MDelta::tombstone(key, &d.obj));
            }
        }
        for (key, obj) in self.store.entries() {
            if !listed.contains(&key) && !newest.contains_key(&key) {
                deltas.push(MDelta::tombstone(&key, &obj));
            }
        }
        deltas.extend(replaced);
        let first = !self.sync.populated;
        if first {
            self.sync.populated = true;
            self.sync.outstanding = usize::from(!deltas.is_empty());
        }
        self.push_atomic(deltas, first);
    }

    fn resync(&mut self) {
        if self.closed {
            return;
        }
        let deltas = self
            .store
            .entries()
            .into_iter()
            .filter(|(key, _)| !self.pending(key))
            .map(|(_, obj)| MDelta::new(DeltaType::Sync, &obj))
            .collect();
        self.push_atomic(deltas, false);
    }

    fn begin_pop(&mut self) -> Option<Vec<String>> {
        if self.queue.is_empty() {
            return None;
        }
        let batch = if self.queue[0].atomic {
            self.queue.remove(0)
        } else {
            let run = self
                .queue
                .iter()
                .take(self.max_batch_size)
                .take_while(|e| !e.atomic)
                .count();
            let deltas = self.queue.drain(..run).flat_map(|e| e.deltas).collect();
            RunEntry {
                deltas,
                atomic: false,
                initial: false,
            }
        };
        let labels = batch.deltas.iter().map(MDelta::label).collect();
        self.in_flight = Some(batch);
        Some(labels)
    }

    fn finish_pop(&mut self, verdict: Verdict) {
        let Some(batch) = self.in_flight.take() else {
            return;
        };
        match verdict {
            Verdict::Ok | Verdict::Drop => {
                if verdict == Verdict::Ok {
                    self.store.apply(&batch.deltas);
                }
                if batch.initial {
                    self.sync.outstanding -= 1;
                }
            }
            Verdict::Requeue if batch.atomic => self.queue.insert(0, batch),
            Verdict::Requeue => {
                let singles = batch.deltas.into_iter().map(|d| RunEntry {
                    deltas: vec![d],
                    atomic: false,
                    initial: false,
                });
                self.queue.splice(0..0, singles);
            }
        }
    }

    fn len(&self) -> usize {
        self.queue.iter().map(|e| e.deltas.len()).sum()
    }

    fn synced(&self) -> bool {
        self.sync.synced()
    }

    fn close(&mut self) {
        self.closed = true;
    }

    fn closed(&self) -> bool {
        self.closed
    }
}
