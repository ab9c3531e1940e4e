//! `DeltaFifo`: per-key delta lists, keys popped in first-queued order (client-go's semantics).

use std::collections::hash_map::Entry as MapEntry;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use informer_core::{
    Delta, DeltaType, KeyFunc, KnownObjects, Listed, Object, ObjectKey, ProcessFn, Queue,
    QueueError, RawObject, decode_listed, key_of,
};
use parking_lot::Mutex;
use tokio::sync::Notify;

use smallvec::{SmallVec, smallvec};

use crate::wait::{Outcome, Parked, Population, RandomState, verdict, wait_until};

/// How to build a [`DeltaFifo`].
pub struct DeltaFifoConfig<K> {
    /// Computes each object's key; must be the key function of the store the informer feeds.
    /// Default: [`key_of`] (`namespace/name`).
    pub key_func: KeyFunc<K>,
    /// The store the popped deltas end up in (usually the informer's indexer). `replace` queues
    /// tombstones for its keys missing from a relist, `resync` re-queues its objects, and
    /// `delete` of a key it holds is kept. Default: none (then only queued keys count as known).
    pub known_objects: Option<Arc<dyn KnownObjects<K>>>,
}

impl<K: Object> Default for DeltaFifoConfig<K> {
    fn default() -> Self {
        Self {
            key_func: Arc::new(|obj: &K| key_of(obj)),
            known_objects: None,
        }
    }
}

impl<K> fmt::Debug for DeltaFifoConfig<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeltaFifoConfig")
            .field("known_objects", &self.known_objects.is_some())
            .finish_non_exhaustive()
    }
}

/// A queue of per-key delta lists with client-go's `DeltaFIFO` semantics.
///
/// - Each key has an ordered list of pending deltas; keys are popped in the order they were
///   first queued, each with all of its pending deltas at once.
/// - The only merging: when the last two deltas of a key are both `Deleted`, they become one:
///   the newer if the older is a tombstone, else the older (so a real deletion is never
///   displaced, and of two real deletions the first stays), as client-go's `dedupDeltas`.
/// - `replace` queues `Replaced` for every listed object, then a `Deleted` tombstone for every
///   known key missing from the list: queued keys carry their newest queued object, keys of the
///   known-objects store carry the store's object.
/// - `replace_listed` is `replace`, except for [`Listed::Unchanged`] keys (objects the store
///   holds at the listed resourceVersion, which the reflector did not decode): they count as
///   listed (no tombstone), and get a `Replaced` delta with the store's object only when the
///   key has pending deltas; otherwise nothing is queued for them, since applying the store's
///   own version would change nothing. JSON texts given with objects (`add_raw`,
///   `update_raw`, [`Listed::Object`]) are kept in their deltas ([`Delta::raw`]).
/// - `resync` queues `Sync` for every object of the known-objects store whose key has no pending
///   delta; `delete` of a key that is neither known nor queued is dropped.
/// - The batch being processed counts as pending: `resync` skips its key, and `delete` and
///   `replace` treat it as known, exactly as if processing had already finished.
/// - Pops are serialized: one batch is processed at a time, so deltas of one key are never
///   processed concurrently or out of order.
/// - On [`ProcessError::Requeue`](informer_core::ProcessError::Requeue) the deltas go back to the
///   front of the queue, unless the key was queued again while they were processed (then they
///   are dropped: the newer deltas supersede them). A process function that panics is treated
///   the same way; the panic propagates.
///
/// Objects are shared as `Arc<K>`: the queue never copies an object.
///
/// ```
/// use std::sync::Arc;
/// use informer_core::{DeltaType, Queue};
/// use informer_fifo::{DeltaFifo, DeltaFifoConfig};
/// use informer_testing::JsonObject;
///
/// let fifo = DeltaFifo::new(DeltaFifoConfig::default());
/// fifo.add(Arc::new(JsonObject::new(Some("ns"), "a").with_resource_version("1")))?;
/// fifo.update(Arc::new(JsonObject::new(Some("ns"), "a").with_resource_version("2")))?;
/// let mut kinds = Vec::new();
/// futures::executor::block_on(fifo.pop(&mut |deltas| {
///     kinds.extend(deltas.iter().map(|d| d.kind));
///     Ok(())
/// }))?;
/// assert_eq!(kinds, [DeltaType::Added, DeltaType::Updated]);
/// # Ok::<(), informer_core::QueueError>(())
/// ```
pub struct DeltaFifo<K> {
    state: Mutex<State<K>>,
    notify: Notify,
    key_func: KeyFunc<K>,
    known_objects: Option<Arc<dyn KnownObjects<K>>>,
}

impl<K: Object> DeltaFifo<K> {
    /// An empty queue.
    pub fn new(config: DeltaFifoConfig<K>) -> Self {
        Self {
            state: Mutex::new(State {
                decoder: config
                    .known_objects
                    .clone()
                    .filter(|known| known.decodes_raw()),
                items: HashMap::default(),
                order: VecDeque::new(),
                in_flight: None,
                population: Population::default(),
                closed: false,
                parked: 0,
            }),
            notify: Notify::new(),
            key_func: config.key_func,
            known_objects: config.known_objects,
        }
    }

    /// The keys with pending deltas, oldest first (the batch being processed is not included).
    pub fn keys(&self) -> Vec<ObjectKey> {
        self.state.lock().order.iter().cloned().collect()
    }

    /// The pending deltas of `key` (empty if none are queued). A listed entry kept as text
    /// ([`Listed::Encoded`]) is decoded for the answer and stays encoded in the queue.
    pub fn pending(&self, key: &str) -> Vec<Delta<K>> {
        let st = self.state.lock();
        let Some(entry) = st.items.get(key) else {
            return Vec::new();
        };
        let mut deltas = entry.deltas.to_vec();
        if let Some(raw) = &entry.encoded
            && let Some(decoder) = &st.decoder
            && let Ok(obj) = decoder.decode_raw(raw)
        {
            deltas.insert(
                0,
                Delta::with_raw(DeltaType::Replaced, obj, Some(raw.clone())),
            );
        }
        deltas
    }

    fn key(&self, obj: &K) -> Result<ObjectKey, QueueError> {
        Ok((self.key_func)(obj)?)
    }

    /// Queues one delta unless the queue is closed.
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
            if kind == DeltaType::Deleted && !st.is_known(&key, self.known_objects.as_deref()) {
                return Ok(());
            }
            st.push(key, Delta::with_raw(kind, obj, raw));
            st.parked > 0
        };
        self.wake(wake);
        Ok(())
    }

    /// `replace` of keyed entries: objects (with their text), or keys `known` holds unchanged.
    fn replace_keyed(
        &self,
        listed: Vec<(ObjectKey, Keyed<K>)>,
        known: Option<&dyn KnownObjects<K>>,
    ) -> Result<(), QueueError> {
        let wake = {
            let mut guard = self.state.lock();
            let st = &mut *guard;
            if st.closed {
                return Ok(());
            }
            let mut listed_keys: HashSet<ObjectKey, RandomState> =
                HashSet::with_capacity_and_hasher(listed.len(), RandomState::default());
            for (key, entry) in listed {
                listed_keys.insert(key.clone());
                match entry {
                    Keyed::Object(obj, raw) => {
                        st.push(key, Delta::with_raw(DeltaType::Replaced, obj, raw));
                    }
                    Keyed::Encoded(raw) => st.push_encoded(key, raw),
                    // The store's own version: queued only behind pending deltas, where
                    // `replace` would have queued it (nothing to apply otherwise).
                    Keyed::Unchanged => {
                        if st.is_pending(&key)
                            && let Some(obj) = known.and_then(|k| k.get_by_key(key.as_str()))
                        {
                            st.push(key, Delta::new(DeltaType::Replaced, obj));
                        }
                    }
                }
            }
            // Queued keys missing from the list: a tombstone with the newest queued object.
            // Appending to an already queued key leaves the key order unchanged.
            let mut undecodable = Vec::new();
            for key in &st.order {
                if listed_keys.contains(key) {
                    continue;
                }
                if let Some(entry) = st.items.get_mut(key) {
                    // A text that cannot be decoded (JSON that is not the object type) leaves
                    // no object for the tombstone (it never reached the cache): the key is
                    // dropped below, as if never queued.
                    if decode_entry(entry, st.decoder.as_deref()).is_err() {
                        undecodable.push(key.clone());
                        continue;
                    }
                    let newest = entry.deltas.last().map(|d| Arc::clone(d.object.object()));
                    if let Some(obj) = newest {
                        push_deduped(&mut entry.deltas, Delta::tombstone(key.clone(), obj));
                    }
                }
            }
            for key in undecodable {
                st.forget(&key);
            }
            // The key being processed, if it is not queued again: as if processing had ended.
            if let Some(in_flight) = &st.in_flight
                && !listed_keys.contains(&in_flight.key)
                && !st.items.contains_key(&in_flight.key)
                && let Some(obj) = in_flight.newest_live.clone()
            {
                let key = in_flight.key.clone();
                st.push(key.clone(), Delta::tombstone(key, obj));
            }
            // Keys of the known-objects store with nothing pending.
            if let Some(known) = &self.known_objects {
                for key in known.list_keys() {
                    if listed_keys.contains(&key) || st.is_pending(&key) {
                        continue;
                    }
                    if let Some(obj) = known.get_by_key(key.as_str()) {
                        st.push(key.clone(), Delta::tombstone(key, obj));
                    }
                }
            }
            if st.population.is_first_write() {
                // Nothing was queued before the first write, so every entry is initial.
                for entry in st.items.values_mut() {
                    entry.initial = true;
                }
                st.population.start(st.items.len());
            }
            st.parked > 0
        };
        self.wake(wake);
        Ok(())
    }

    fn wake(&self, wake: bool) {
        if wake {
            self.notify.notify_waiters();
        }
    }

    /// Hands a finished batch back: counts it processed, or requeues it.
    fn finish(&self, batch: Batch<K>, outcome: Outcome) {
        let wake = {
            let mut st = self.state.lock();
            st.in_flight = None;
            match outcome {
                Outcome::Done => {
                    if batch.initial {
                        st.population.processed_initial();
                    }
                }
                Outcome::Requeue => st.requeue(batch),
            }
            st.parked > 0
        };
        self.wake(wake);
    }
}

impl<K> fmt::Debug for DeltaFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.lock();
        f.debug_struct("DeltaFifo")
            .field("queued_keys", &st.order.len())
            .field("processing", &st.in_flight.is_some())
            .field("has_synced", &st.population.synced())
            .field("closed", &st.closed)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl<K: Object> Queue<K> for DeltaFifo<K> {
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
        let listed = objects
            .into_iter()
            .map(|obj| Ok((self.key(&obj)?, Keyed::Object(obj, None))))
            .collect::<Result<Vec<_>, QueueError>>()?;
        self.replace_keyed(listed, None)
    }

    fn replace_listed(
        &self,
        entries: Vec<Listed<K>>,
        _resource_version: &str,
        known: &dyn KnownObjects<K>,
    ) -> Result<(), QueueError> {
        // Key everything first: a list with an unkeyable object changes nothing.
        let keeps_text = self.state.lock().decoder.is_some();
        let listed = entries
            .into_iter()
            .map(|entry| match entry {
                Listed::Object { object, raw } => {
                    Ok((self.key(&object)?, Keyed::Object(object, raw)))
                }
                Listed::Unchanged(key) => Ok((key, Keyed::Unchanged)),
                // Kept as text only if this queue's own store decodes it at pop; otherwise
                // decoded now through `known`.
                Listed::Encoded { key, raw } => {
                    if keeps_text {
                        Ok((key, Keyed::Encoded(raw)))
                    } else {
                        let obj = decode_listed(known, &key, &raw)?;
                        Ok((key, Keyed::Object(obj, Some(raw))))
                    }
                }
            })
            .collect::<Result<Vec<_>, QueueError>>()?;
        self.replace_keyed(listed, Some(known))
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
            for key in known.list_keys() {
                if st.is_pending(&key) {
                    continue;
                }
                if let Some(obj) = known.get_by_key(key.as_str()) {
                    st.push(key, Delta::new(DeltaType::Sync, obj));
                }
            }
            st.parked > 0
        };
        self.wake(wake);
        Ok(())
    }

    async fn pop(&self, process: &mut ProcessFn<'_, K>) -> Result<(), QueueError> {
        let batch = wait_until(&self.state, &self.notify, State::take_next).await?;
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
        self.state.lock().items.len()
    }

    fn close(&self) {
        self.state.lock().closed = true;
        self.notify.notify_waiters();
    }

    fn is_closed(&self) -> bool {
        self.state.lock().closed
    }
}

/// A listed entry, keyed: an object (with its text), a key the store holds unchanged, or an
/// object kept as its text until popped.
enum Keyed<K> {
    Object(Arc<K>, Option<RawObject>),
    Unchanged,
    Encoded(RawObject),
}

/// The deltas of one key. Most keys have one pending delta: keep it inline.
type Deltas<K> = SmallVec<[Delta<K>; 1]>;

/// The pending deltas of one key.
struct Entry<K> {
    deltas: Deltas<K>,
    /// A listed object kept as its text ([`Listed::Encoded`]): the key's one pending delta, a
    /// `Replaced` not yet decoded (`deltas` is then empty). Decoded when popped, or as soon as
    /// anything else touches the key.
    encoded: Option<RawObject>,
    /// Part of the initial population (the first `replace`).
    initial: bool,
}

/// A popped key with its deltas.
struct Batch<K> {
    key: ObjectKey,
    deltas: Deltas<K>,
    initial: bool,
}

/// What the queue remembers about the batch being processed.
struct InFlightKey<K> {
    key: ObjectKey,
    /// The newest object of the batch, unless its newest delta is a deletion.
    newest_live: Option<Arc<K>>,
}

struct State<K> {
    /// The known-objects store when it decodes text: listed entries are then kept as text.
    decoder: Option<Arc<dyn KnownObjects<K>>>,
    items: HashMap<ObjectKey, Entry<K>, RandomState>,
    /// Keys in first-queued order; exactly the keys of `items`.
    order: VecDeque<ObjectKey>,
    in_flight: Option<InFlightKey<K>>,
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
    fn push(&mut self, key: ObjectKey, delta: Delta<K>) {
        match self.items.entry(key) {
            MapEntry::Occupied(mut entry) => {
                let entry = entry.get_mut();
                // The listed text first, so that the order of deltas stays; one that cannot be
                // decoded (JSON that is not the object type) is superseded by this newer delta.
                if decode_entry(entry, self.decoder.as_deref()).is_err() {
                    entry.encoded = None;
                }
                push_deduped(&mut entry.deltas, delta);
            }
            MapEntry::Vacant(slot) => {
                self.order.push_back(slot.key().clone());
                slot.insert(Entry {
                    deltas: smallvec![delta],
                    encoded: None,
                    initial: false,
                });
            }
        }
    }

    /// Queues a listed object as its text: a lone `Replaced`, or decoded and appended when the
    /// key has deltas pending already.
    fn push_encoded(&mut self, key: ObjectKey, raw: RawObject) {
        if let Some(entry) = self.items.get_mut(&key) {
            if let Some(decoder) = self.decoder.as_deref()
                && decode_entry(entry, Some(decoder)).is_ok()
                && let Ok(obj) = decoder.decode_raw(&raw)
            {
                push_deduped(
                    &mut entry.deltas,
                    Delta::with_raw(DeltaType::Replaced, obj, Some(raw)),
                );
            }
            return;
        }
        self.order.push_back(key.clone());
        self.items.insert(
            key,
            Entry {
                deltas: SmallVec::new(),
                encoded: Some(raw),
                initial: false,
            },
        );
    }

    /// Drops a queued key (its deltas could not be decoded).
    fn forget(&mut self, key: &ObjectKey) {
        if let Some(entry) = self.items.remove(key) {
            self.order.retain(|k| k != key);
            if entry.initial {
                self.population.processed_initial();
            }
        }
    }

    /// Queued, or being processed.
    fn is_pending(&self, key: &ObjectKey) -> bool {
        self.items.contains_key(key) || self.in_flight.as_ref().is_some_and(|f| f.key == *key)
    }

    /// Pending, or held by the known-objects store: a deletion of it means something.
    fn is_known(&self, key: &ObjectKey, known: Option<&dyn KnownObjects<K>>) -> bool {
        self.is_pending(key) || known.is_some_and(|k| k.contains_key(key.as_str()))
    }

    /// The next batch, `Err(Closed)` once closed and drained, `None` to wait.
    fn take_next(&mut self) -> Option<Result<Batch<K>, QueueError>> {
        if self.in_flight.is_some() {
            // Another pop is processing; its batch may come back.
            return None;
        }
        // `order` holds exactly the keys of `items`; skipping a stray key keeps pop live even if
        // that invariant were ever broken.
        let (key, mut entry) = loop {
            let Some(key) = self.order.pop_front() else {
                return self.closed.then_some(Err(QueueError::Closed));
            };
            if let Some(entry) = self.items.remove(&key) {
                break (key, entry);
            }
        };
        if let Err(source) = decode_entry(&mut entry, self.decoder.as_deref()) {
            // JSON that is not the object type: it cannot be handed over; the pop reports it.
            if entry.initial {
                self.population.processed_initial();
            }
            return Some(Err(QueueError::Decode { key, source }));
        }
        let newest_live = entry
            .deltas
            .last()
            .filter(|d| d.kind != DeltaType::Deleted)
            .map(|d| Arc::clone(d.object.object()));
        self.in_flight = Some(InFlightKey {
            key: key.clone(),
            newest_live,
        });
        Some(Ok(Batch {
            key,
            deltas: entry.deltas,
            initial: entry.initial,
        }))
    }

    fn requeue(&mut self, batch: Batch<K>) {
        match self.items.get_mut(&batch.key) {
            // Queued again meanwhile: the newer deltas supersede the failed ones, and take over
            // their place in the initial population.
            Some(entry) => {
                if batch.initial {
                    if entry.initial {
                        self.population.processed_initial();
                    } else {
                        entry.initial = true;
                    }
                }
            }
            None => {
                self.order.push_front(batch.key.clone());
                self.items.insert(
                    batch.key,
                    Entry {
                        deltas: batch.deltas,
                        encoded: None,
                        initial: batch.initial,
                    },
                );
            }
        }
    }
}

/// Decodes an entry's listed text into its first delta (`Replaced`, with the text); nothing
/// to do for an entry without one. Without a decoder the text stays and this errs.
fn decode_entry<K>(
    entry: &mut Entry<K>,
    decoder: Option<&dyn KnownObjects<K>>,
) -> Result<(), informer_core::StoreError> {
    let Some(raw) = entry.encoded.take() else {
        return Ok(());
    };
    let decoded = match decoder {
        Some(decoder) => decoder.decode_raw(&raw),
        None => Err(informer_core::StoreError::Backend {
            context: "decoding a listed object".to_owned(),
            source: "the queue has no store that decodes text".into(),
        }),
    };
    match decoded {
        Ok(obj) => {
            entry
                .deltas
                .insert(0, Delta::with_raw(DeltaType::Replaced, obj, Some(raw)));
            Ok(())
        }
        Err(e) => {
            entry.encoded = Some(raw);
            Err(e)
        }
    }
}

/// Appends `delta`, merging two consecutive deletions into one as client-go's `dedupDeltas`
/// does: the newer deletion replaces the older only when the older is a tombstone; otherwise
/// the older (a real deletion, with the final state the server sent) stays.
fn push_deduped<K: Object>(deltas: &mut Deltas<K>, delta: Delta<K>) {
    if delta.kind == DeltaType::Deleted
        && let Some(last) = deltas.last_mut()
        && last.kind == DeltaType::Deleted
    {
        if last.object.is_tombstone() {
            *last = delta;
        }
        return;
    }
    deltas.push(delta);
}

/// The batch being processed; puts it back if dropped unfinished (a panicking process function).
struct InFlight<'a, K: Object> {
    fifo: &'a DeltaFifo<K>,
    batch: Option<Batch<K>>,
}

impl<K: Object> Drop for InFlight<'_, K> {
    fn drop(&mut self) {
        if let Some(batch) = self.batch.take() {
            self.fifo.finish(batch, Outcome::Requeue);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use informer_testing::JsonObject;

    fn obj(name: &str, rv: &str) -> Arc<JsonObject> {
        Arc::new(JsonObject::new(Some("ns"), name).with_resource_version(rv))
    }

    fn deleted(o: &Arc<JsonObject>) -> Delta<JsonObject> {
        Delta::new(DeltaType::Deleted, Arc::clone(o))
    }

    fn tomb(o: &Arc<JsonObject>) -> Delta<JsonObject> {
        Delta::tombstone(key_of(o.as_ref()).unwrap(), Arc::clone(o))
    }

    fn shape(deltas: &[Delta<JsonObject>]) -> Vec<(DeltaType, bool, String)> {
        deltas
            .iter()
            .map(|d| {
                let rv = d
                    .object
                    .object()
                    .metadata
                    .resource_version
                    .clone()
                    .unwrap_or_default();
                (d.kind, d.object.is_tombstone(), rv)
            })
            .collect()
    }

    #[test]
    fn merge_keeps_the_real_deletion_over_a_tombstone() {
        let (a, b) = (obj("x", "1"), obj("x", "2"));
        let mut d: Deltas<JsonObject> = smallvec![deleted(&a)];
        push_deduped(&mut d, tomb(&b));
        assert_eq!(shape(&d), [(DeltaType::Deleted, false, "1".into())]);

        let mut d: Deltas<JsonObject> = smallvec![tomb(&a)];
        push_deduped(&mut d, deleted(&b));
        assert_eq!(shape(&d), [(DeltaType::Deleted, false, "2".into())]);
    }

    #[test]
    fn merge_keeps_the_newer_tombstone_and_the_older_real_deletion() {
        let (a, b) = (obj("x", "1"), obj("x", "2"));
        let mut d: Deltas<JsonObject> = smallvec![tomb(&a)];
        push_deduped(&mut d, tomb(&b));
        assert_eq!(shape(&d), [(DeltaType::Deleted, true, "2".into())]);

        // client-go's isDeletionDup: the older wins unless it is a tombstone.
        let mut d: Deltas<JsonObject> = smallvec![deleted(&a)];
        push_deduped(&mut d, deleted(&b));
        assert_eq!(shape(&d), [(DeltaType::Deleted, false, "1".into())]);
    }

    #[test]
    fn nothing_else_is_merged() {
        let (a, b) = (obj("x", "1"), obj("x", "2"));
        let mut d: Deltas<JsonObject> = smallvec![Delta::new(DeltaType::Updated, Arc::clone(&a))];
        push_deduped(&mut d, Delta::new(DeltaType::Updated, Arc::clone(&b)));
        push_deduped(&mut d, deleted(&b));
        push_deduped(&mut d, Delta::new(DeltaType::Added, Arc::clone(&b)));
        push_deduped(&mut d, Delta::new(DeltaType::Sync, Arc::clone(&b)));
        assert_eq!(d.len(), 5);
    }

    #[test]
    fn requeue_of_a_key_queued_again_keeps_only_the_newer_deltas() {
        let fifo = DeltaFifo::new(DeltaFifoConfig::default());
        fifo.add(obj("x", "1")).unwrap();
        let mut st = fifo.state.lock();
        let batch = st.take_next().unwrap().unwrap();
        assert_eq!(batch.deltas.len(), 1);
        st.push(
            batch.key.clone(),
            Delta::new(DeltaType::Updated, obj("x", "2")),
        );
        st.in_flight = None;
        st.requeue(batch);
        assert_eq!(
            shape(&st.items["ns/x"].deltas),
            [(DeltaType::Updated, false, "2".into())]
        );
        assert_eq!(st.order.len(), 1);
    }
}
