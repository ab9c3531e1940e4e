//! `InOrderFifo`: every delta in arrival order, popped in batches (client-go's `RealFIFO`).

use std::collections::hash_map::Entry as MapEntry;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::num::NonZeroUsize;
use std::sync::Arc;

use async_trait::async_trait;
use informer_core::{
    Delta, DeltaType, KeyFunc, KnownObjects, Listed, Object, ObjectKey, ProcessFn, Queue,
    QueueError, RawObject, decode_listed, key_of,
};
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::wait::{Outcome, Parked, Population, RandomState, verdict, wait_until};

/// The default [`InOrderFifoConfig::max_batch_size`].
// 1000 is not zero, and the constant is evaluated at compile time.
#[allow(clippy::unwrap_used)]
pub const DEFAULT_MAX_BATCH_SIZE: NonZeroUsize = NonZeroUsize::new(1000).unwrap();

/// How to build an [`InOrderFifo`].
pub struct InOrderFifoConfig<K> {
    /// Computes each object's key; must be the key function of the store the informer feeds.
    /// Default: [`key_of`] (`namespace/name`).
    pub key_func: KeyFunc<K>,
    /// The store the popped deltas end up in (usually the informer's indexer). `replace` queues
    /// tombstones for its keys missing from a relist, `resync` re-queues its objects, and
    /// `delete` of a key it holds is kept. Default: none (then only queued keys count as known).
    pub known_objects: Option<Arc<dyn KnownObjects<K>>>,
    /// At most this many single deltas (from `add`, `update`, `delete`) are handed to one process
    /// call. A `replace` or `resync` is always handed over whole, whatever its size.
    /// Default: [`DEFAULT_MAX_BATCH_SIZE`].
    pub max_batch_size: NonZeroUsize,
}

impl<K: Object> Default for InOrderFifoConfig<K> {
    fn default() -> Self {
        Self {
            key_func: Arc::new(|obj: &K| key_of(obj)),
            known_objects: None,
            max_batch_size: DEFAULT_MAX_BATCH_SIZE,
        }
    }
}

impl<K> fmt::Debug for InOrderFifoConfig<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InOrderFifoConfig")
            .field("known_objects", &self.known_objects.is_some())
            .field("max_batch_size", &self.max_batch_size)
            .finish_non_exhaustive()
    }
}

/// A queue that keeps every delta in arrival order and pops them in batches.
///
/// Upstream calls this `RealFIFO`. Unlike [`DeltaFifo`](crate::DeltaFifo) nothing is merged or
/// regrouped by key: a consumer sees exactly the sequence of events the producer queued.
///
/// - `add`, `update` and `delete` each queue one delta; `delete` of a key that is neither known
///   nor queued is dropped.
/// - `replace` queues one atomic entry. Deletions come first, as in client-go's `RealFIFO`: a
///   `Deleted` tombstone for every key missing from the list that is queued (with its newest
///   queued object; keys whose newest queued delta already is a deletion get none), in the
///   order the keys were first queued, then one for every key of the known-objects store that
///   is neither listed nor queued (with the store's object), in the store's order; then
///   `Replaced` for every listed object, in list order.
/// - `replace_listed` is `replace`, except for [`Listed::Unchanged`] keys (objects the store
///   holds at the listed resourceVersion, which the reflector did not decode): they count as
///   listed (no tombstone), and get their `Replaced` delta, with the store's object, only when
///   the key has pending deltas; otherwise nothing is queued for them (applying the store's
///   own version would change nothing). JSON texts given with objects are kept in their
///   deltas ([`Delta::raw`]).
/// - `resync` queues one atomic entry: `Sync` for every object of the known-objects store whose
///   key has no pending delta.
/// - [`pop`](Queue::pop) hands over either one atomic entry whole, or a run of up to
///   [`max_batch_size`](InOrderFifoConfig::max_batch_size) consecutive single deltas.
/// - The batch being processed counts as pending (as in `DeltaFifo`), pops are serialized, and
///   on [`ProcessError::Requeue`](informer_core::ProcessError::Requeue) (or a panic in the process
///   function) the batch goes back to the front of the queue, unchanged.
///
/// [`len`](Queue::len) counts deltas, not keys.
///
/// ```
/// use std::sync::Arc;
/// use informer_core::{DeltaType, Queue};
/// use informer_fifo::{InOrderFifo, InOrderFifoConfig};
/// use informer_testing::JsonObject;
///
/// let fifo = InOrderFifo::new(InOrderFifoConfig::default());
/// fifo.add(Arc::new(JsonObject::new(Some("ns"), "a")))?;
/// fifo.add(Arc::new(JsonObject::new(Some("ns"), "b")))?;
/// fifo.update(Arc::new(JsonObject::new(Some("ns"), "a")))?;
/// let mut seen = Vec::new();
/// futures::executor::block_on(fifo.pop(&mut |deltas| {
///     seen.extend(deltas.iter().map(|d| (d.kind, d.object.key().unwrap().to_string())));
///     Ok(())
/// }))?;
/// assert_eq!(seen, [
///     (DeltaType::Added, "ns/a".to_string()),
///     (DeltaType::Added, "ns/b".to_string()),
///     (DeltaType::Updated, "ns/a".to_string()),
/// ]);
/// # Ok::<(), informer_core::QueueError>(())
/// ```
pub struct InOrderFifo<K> {
    state: Mutex<State<K>>,
    notify: Notify,
    key_func: KeyFunc<K>,
    known_objects: Option<Arc<dyn KnownObjects<K>>>,
    max_batch_size: usize,
}

impl<K: Object> InOrderFifo<K> {
    /// An empty queue.
    pub fn new(config: InOrderFifoConfig<K>) -> Self {
        Self {
            state: Mutex::new(State {
                entries: VecDeque::new(),
                queued_deltas: 0,
                pending: HashMap::default(),
                in_flight_keys: Vec::new(),
                busy: false,
                population: Population::default(),
                closed: false,
                parked: 0,
            }),
            notify: Notify::new(),
            key_func: config.key_func,
            known_objects: config.known_objects,
            max_batch_size: config.max_batch_size.get(),
        }
    }

    /// The largest number of single deltas one pop hands over.
    pub fn max_batch_size(&self) -> usize {
        self.max_batch_size
    }

    fn key(&self, obj: &K) -> Result<ObjectKey, QueueError> {
        Ok((self.key_func)(obj)?)
    }

    fn write(
        &self,
        kind: DeltaType,
        obj: Arc<K>,
        raw: Option<RawObject>,
    ) -> Result<(), QueueError> {
        let key = self.key(&obj)?;
        let wake = {
            let mut st = self.state.lock();
            if st.closed {
                return Ok(());
            }
            st.population.on_write();
            if kind == DeltaType::Deleted && !self.is_known(&st, &key) {
                return Ok(());
            }
            let delta = Delta::with_raw(kind, obj, raw);
            st.note_pending(&key, &delta);
            st.entries.push_back(Entry::Single { key, delta });
            st.queued_deltas += 1;
            st.parked > 0
        };
        self.wake(wake);
        Ok(())
    }

    /// `replace` of keyed entries: objects (with their text), or keys `known` holds unchanged.
    fn replace_keyed(
        &self,
        listed_keys: Vec<ObjectKey>,
        entries: Vec<Keyed<K>>,
        known: Option<&dyn KnownObjects<K>>,
    ) -> Result<(), QueueError> {
        let wake = {
            let mut st = self.state.lock();
            if st.closed {
                return Ok(());
            }
            let listed: HashSet<&ObjectKey, RandomState> = listed_keys.iter().collect();
            // Pending keys missing from the list, unless their newest delta is a deletion, in
            // the order of their first pending delta (the batch being processed counts as the
            // front of the queue).
            let mut tombstones: Vec<(ObjectKey, Arc<K>)> = Vec::new();
            let mut seen: HashSet<&ObjectKey, RandomState> = HashSet::default();
            for key in st.pending_keys_in_order() {
                if listed.contains(key) || !seen.insert(key) {
                    continue;
                }
                if let Some(obj) = st.pending.get(key).and_then(|p| p.newest_live.as_ref()) {
                    tombstones.push((key.clone(), Arc::clone(obj)));
                }
            }
            drop(seen);
            // Keys of the known-objects store with nothing pending, in the store's order.
            if let Some(known) = &self.known_objects {
                for key in known.list_keys() {
                    if listed.contains(&key) || st.pending.contains_key(&key) {
                        continue;
                    }
                    if let Some(obj) = known.get_by_key(key.as_str()) {
                        tombstones.push((key, obj));
                    }
                }
            }
            drop(listed);
            // Deletions first, then the listed objects (client-go's RealFIFO order).
            let len = tombstones.len() + entries.len();
            let mut keys = Vec::with_capacity(len);
            let mut deltas = Vec::with_capacity(len);
            for (key, obj) in tombstones {
                deltas.push(Delta::tombstone(key.clone(), obj));
                keys.push(key);
            }
            for (key, entry) in listed_keys.into_iter().zip(entries) {
                let delta = match entry {
                    Keyed::Object(obj, raw) => Delta::with_raw(DeltaType::Replaced, obj, raw),
                    // The store's own version: queued only behind pending deltas, where
                    // `replace` would have queued it (nothing to apply otherwise).
                    Keyed::Unchanged => {
                        let pending = st.pending.contains_key(&key);
                        match known
                            .filter(|_| pending)
                            .and_then(|k| k.get_by_key(key.as_str()))
                        {
                            Some(obj) => Delta::new(DeltaType::Replaced, obj),
                            None => continue,
                        }
                    }
                };
                keys.push(key);
                deltas.push(delta);
            }
            let first = st.population.is_first_write();
            let queued_any = !deltas.is_empty();
            Self::push_atomic(&mut st, keys, deltas, first);
            if first {
                st.population.start(usize::from(queued_any));
            }
            st.parked > 0
        };
        self.wake(wake);
        Ok(())
    }

    /// Pending, or held by the known-objects store: a deletion of it means something.
    fn is_known(&self, st: &State<K>, key: &ObjectKey) -> bool {
        st.pending.contains_key(key)
            || (self.known_objects.as_ref()).is_some_and(|k| k.contains_key(key.as_str()))
    }

    fn wake(&self, wake: bool) {
        if wake {
            self.notify.notify_waiters();
        }
    }

    /// Queues an atomic entry (if it holds anything).
    fn push_atomic(st: &mut State<K>, keys: Vec<ObjectKey>, deltas: Vec<Delta<K>>, initial: bool) {
        if deltas.is_empty() {
            return;
        }
        for (key, delta) in keys.iter().zip(&deltas) {
            st.note_pending(key, delta);
        }
        st.queued_deltas += deltas.len();
        st.entries.push_back(Entry::Atomic(Batch {
            keys,
            deltas,
            atomic: true,
            initial,
        }));
    }

    fn finish(&self, batch: Batch<K>, outcome: Outcome) {
        let wake = {
            let mut st = self.state.lock();
            st.busy = false;
            let mut batch = batch;
            batch.keys = std::mem::take(&mut st.in_flight_keys);
            match outcome {
                Outcome::Done => st.done(&batch),
                Outcome::Requeue => st.requeue(batch),
            }
            st.parked > 0
        };
        // A processed batch is dropped here, outside the lock.
        self.wake(wake);
    }
}

/// A listed entry, keyed: an object (with its text), or a key the store holds unchanged.
enum Keyed<K> {
    Object(Arc<K>, Option<RawObject>),
    Unchanged,
}

impl<K> fmt::Debug for InOrderFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.lock();
        f.debug_struct("InOrderFifo")
            .field("queued_deltas", &st.queued_deltas)
            .field("processing", &st.busy)
            .field("has_synced", &st.population.synced())
            .field("closed", &st.closed)
            .field("max_batch_size", &self.max_batch_size)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl<K: Object> Queue<K> for InOrderFifo<K> {
    fn add(&self, obj: Arc<K>) -> Result<(), QueueError> {
        self.write(DeltaType::Added, obj, None)
    }

    fn update(&self, obj: Arc<K>) -> Result<(), QueueError> {
        self.write(DeltaType::Updated, obj, None)
    }

    fn delete(&self, obj: Arc<K>) -> Result<(), QueueError> {
        self.write(DeltaType::Deleted, obj, None)
    }

    fn add_raw(&self, obj: Arc<K>, raw: RawObject) -> Result<(), QueueError> {
        self.write(DeltaType::Added, obj, Some(raw))
    }

    fn update_raw(&self, obj: Arc<K>, raw: RawObject) -> Result<(), QueueError> {
        self.write(DeltaType::Updated, obj, Some(raw))
    }

    fn replace(&self, objects: Vec<Arc<K>>, _resource_version: &str) -> Result<(), QueueError> {
        // Key everything first: a list with an unkeyable object changes nothing.
        let listed_keys = objects
            .iter()
            .map(|obj| self.key(obj))
            .collect::<Result<Vec<_>, _>>()?;
        let entries = objects
            .into_iter()
            .map(|obj| Keyed::Object(obj, None))
            .collect();
        self.replace_keyed(listed_keys, entries, None)
    }

    fn replace_listed(
        &self,
        entries: Vec<Listed<K>>,
        _resource_version: &str,
        known: &dyn KnownObjects<K>,
    ) -> Result<(), QueueError> {
        // Key everything first: a list with an unkeyable object changes nothing.
        let mut listed_keys = Vec::with_capacity(entries.len());
        let mut keyed = Vec::with_capacity(entries.len());
        for entry in entries {
            match entry {
                Listed::Object { object, raw } => {
                    listed_keys.push(self.key(&object)?);
                    keyed.push(Keyed::Object(object, raw));
                }
                Listed::Unchanged(key) => {
                    listed_keys.push(key);
                    keyed.push(Keyed::Unchanged);
                }
                // A relist is one atomic batch here: decoded now (kept as text, the whole
                // list would be decoded at its one pop anyway).
                Listed::Encoded { key, raw } => {
                    let object = decode_listed(known, &key, &raw)?;
                    listed_keys.push(key);
                    keyed.push(Keyed::Object(object, Some(raw)));
                }
            }
        }
        self.replace_keyed(listed_keys, keyed, Some(known))
    }

    fn resync(&self) -> Result<(), QueueError> {
        let Some(known) = &self.known_objects else {
            return Ok(());
        };
        let wake = {
            let mut st = self.state.lock();
            if st.closed {
                return Ok(());
            }
            let mut keys = Vec::new();
            let mut deltas = Vec::new();
            for key in known.list_keys() {
                if st.pending.contains_key(&key) {
                    continue;
                }
                if let Some(obj) = known.get_by_key(key.as_str()) {
                    keys.push(key);
                    deltas.push(Delta::new(DeltaType::Sync, obj));
                }
            }
            Self::push_atomic(&mut st, keys, deltas, false);
            st.parked > 0
        };
        self.wake(wake);
        Ok(())
    }

    async fn pop(&self, process: &mut ProcessFn<'_, K>) -> Result<(), QueueError> {
        let max = self.max_batch_size;
        let batch = wait_until(&self.state, &self.notify, |st| st.take_next(max)).await?;
        // From here on nothing awaits: the batch cannot be lost to cancellation, and the guard
        // puts it back if `process` panics.
        let mut in_flight = InFlight {
            fifo: self,
            batch: Some(batch),
        };
        let result = match &in_flight.batch {
            Some(batch) => process(&batch.deltas),
            None => Ok(()),
        };
        let (outcome, ret) = verdict(result);
        if let Some(batch) = in_flight.batch.take() {
            self.finish(batch, outcome);
        }
        ret
    }

    fn has_synced(&self) -> bool {
        self.state.lock().population.synced()
    }

    fn len(&self) -> usize {
        self.state.lock().queued_deltas
    }

    fn close(&self) {
        self.state.lock().closed = true;
        self.notify.notify_waiters();
    }

    fn is_closed(&self) -> bool {
        self.state.lock().closed
    }
}

/// A run of deltas handed to one process call, with their keys.
struct Batch<K> {
    keys: Vec<ObjectKey>,
    deltas: Vec<Delta<K>>,
    /// One atomic entry (a `replace` or `resync`), as opposed to a run of single deltas.
    atomic: bool,
    /// The initial population (the first `replace`).
    initial: bool,
}

enum Entry<K> {
    /// From `add`, `update` or `delete`.
    Single { key: ObjectKey, delta: Delta<K> },
    /// From `replace` or `resync`: never split.
    Atomic(Batch<K>),
}

/// What the queue knows about a key with pending deltas (queued or being processed).
struct Pending<K> {
    /// How many of its deltas are queued or being processed.
    count: usize,
    /// Its newest object, unless its newest delta is a deletion.
    newest_live: Option<Arc<K>>,
}

struct State<K> {
    entries: VecDeque<Entry<K>>,
    /// Deltas in `entries` (not counting the batch being processed).
    queued_deltas: usize,
    /// Every key with a delta in `entries` or in the batch being processed.
    pending: HashMap<ObjectKey, Pending<K>, RandomState>,
    /// The keys of the batch being processed (moved here from the batch while it is processed,
    /// and back when it finishes), so that a relist can order its tombstones.
    in_flight_keys: Vec<ObjectKey>,
    /// A pop is processing a batch.
    busy: bool,
    population: Population,
    closed: bool,
    parked: usize,
}

impl<K> Parked for State<K> {
    fn parked(&mut self) -> &mut usize {
        &mut self.parked
    }
}

impl<K: Object> State<K> {
    /// Records a newly queued delta of `key`.
    fn note_pending(&mut self, key: &ObjectKey, delta: &Delta<K>) {
        let newest_live =
            (delta.kind != DeltaType::Deleted).then(|| Arc::clone(delta.object.object()));
        match self.pending.entry(key.clone()) {
            MapEntry::Occupied(mut slot) => {
                let p = slot.get_mut();
                p.count += 1;
                p.newest_live = newest_live;
            }
            MapEntry::Vacant(slot) => {
                slot.insert(Pending {
                    count: 1,
                    newest_live,
                });
            }
        }
    }

    /// The key of every pending delta, oldest first: the batch being processed, then the queue.
    fn pending_keys_in_order(&self) -> impl Iterator<Item = &ObjectKey> {
        self.in_flight_keys
            .iter()
            .chain(self.entries.iter().flat_map(|entry| match entry {
                Entry::Single { key, .. } => std::slice::from_ref(key),
                Entry::Atomic(batch) => batch.keys.as_slice(),
            }))
    }

    /// The next batch, `Err(Closed)` once closed and drained, `None` to wait.
    fn take_next(&mut self, max: usize) -> Option<Result<Batch<K>, QueueError>> {
        if self.busy {
            // Another pop is processing; its batch may come back to the front.
            return None;
        }
        let batch = match self.entries.pop_front() {
            None => return self.closed.then_some(Err(QueueError::Closed)),
            Some(Entry::Atomic(batch)) => batch,
            Some(Entry::Single { key, delta }) => {
                let run = 1 + self
                    .entries
                    .iter()
                    .take(max.saturating_sub(1))
                    .take_while(|e| matches!(e, Entry::Single { .. }))
                    .count();
                let mut keys = Vec::with_capacity(run);
                let mut deltas = Vec::with_capacity(run);
                keys.push(key);
                deltas.push(delta);
                for entry in self.entries.drain(..run - 1) {
                    if let Entry::Single { key, delta } = entry {
                        keys.push(key);
                        deltas.push(delta);
                    }
                }
                Batch {
                    keys,
                    deltas,
                    atomic: false,
                    initial: false,
                }
            }
        };
        self.queued_deltas -= batch.deltas.len();
        self.busy = true;
        let mut batch = batch;
        self.in_flight_keys = std::mem::take(&mut batch.keys);
        Some(Ok(batch))
    }

    /// The batch is gone: its keys have that much less pending.
    fn done(&mut self, batch: &Batch<K>) {
        for key in &batch.keys {
            if let Some(p) = self.pending.get_mut(key) {
                p.count -= 1;
                if p.count == 0 {
                    self.pending.remove(key);
                }
            }
        }
        if batch.initial {
            self.population.processed_initial();
        }
    }

    /// The batch goes back to the front as it was; it stayed pending all along.
    fn requeue(&mut self, batch: Batch<K>) {
        self.queued_deltas += batch.deltas.len();
        if batch.atomic {
            self.entries.push_front(Entry::Atomic(batch));
            return;
        }
        for (key, delta) in batch.keys.into_iter().zip(batch.deltas).rev() {
            self.entries.push_front(Entry::Single { key, delta });
        }
    }
}

/// The batch being processed; puts it back if dropped unfinished (a panicking process function).
struct InFlight<'a, K: Object> {
    fifo: &'a InOrderFifo<K>,
    batch: Option<Batch<K>>,
}

impl<K: Object> Drop for InFlight<'_, K> {
    fn drop(&mut self) {
        if let Some(batch) = self.batch.take() {
            self.fifo.finish(batch, Outcome::Requeue);
        }
    }
}
