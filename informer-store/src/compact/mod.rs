//! `CompactStore`: an `Indexer` that keeps every object encoded (JSON or MessagePack, by
//! default JSON compressed with a trained zstd dictionary) and decodes it on access. See the crate docs for its
//! invariants and costs.

mod cache;
mod codec;
mod error;
mod packed;

use std::fmt;
use std::mem;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use informer_core::{
    IndexFunc, Indexer, Indexers, KeyFunc, KnownObjects, Object, ObjectKey, RawObject, Store,
    StoreError, key_of, namespace_indexers,
};
use parking_lot::{Mutex, RwLock};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::index::{Index, SlotId, normalize};
use crate::slots::{
    Content, FreshValues, Funcs, NamedIndexFunc, Slot, file_new, fresh_values, refile,
    sorted_funcs, unfile,
};
use cache::{Access, DecodedCache, Evicted};
use codec::{Dictionary, Encoded, Format};
use packed::PackedJson;

pub use codec::{Codec, RoundTripCheck, ZstdDictionary};
pub use error::{CompactError, DecodeError};

/// The default number of decoded objects a [`CompactStore`] keeps.
pub const DEFAULT_CACHE_CAPACITY: usize = 1_024;

/// A scan splits its decoding over threads only when each thread gets at least this many
/// objects to decode: below that, starting a thread (and its decompression context) costs
/// more than it saves.
const PARALLEL_DECODE_MIN: usize = 64;

/// The most threads a scan decodes on, by default.
const DEFAULT_DECODE_THREADS_MAX: usize = 4;

/// How many times a write that must return the previous object decodes it outside the lock
/// and finds it overwritten meanwhile before it decodes under the lock instead.
const OPTIMISTIC_ATTEMPTS: usize = 4;

/// How long [`CompactStore::stats`] waits for the trainer's lock before it reports a training
/// under way: longer than any short holder (a sample taken, a dictionary applied to a few
/// megabytes), far shorter than a training.
const TRAINER_PATIENCE: Duration = Duration::from_millis(20);

/// A thread-safe, indexed map from key to object that keeps objects encoded: an [`Indexer`]
/// whose memory follows the objects' encoded size rather than their decoded size.
///
/// See the [crate documentation](crate#compactstore) for what it keeps, what each operation
/// costs, and the invariants.
pub struct CompactStore<K> {
    key_func: KeyFunc<K>,
    state: RwLock<State<K>>,
    cache: DecodedCache<K>,
    codec: Codec,
    round_trip: RoundTripCheck,
    /// The most threads a scan decodes on.
    decode_threads: usize,
    /// Whether lists reach the store's queue as text ([`KnownObjects::decodes_raw`]).
    lists_as_text: bool,
    /// Objects encoded so far: numbers the writes for [`RoundTripCheck`].
    encoded: AtomicU64,
    /// The next stamp. Writes take theirs under the write lock, so a key's stamps grow in
    /// the order its versions were stored.
    next_stamp: AtomicU64,
    dictionary: OnceLock<Arc<Dictionary>>,
    trainer: Mutex<Trainer>,
    /// This store's number: it takes as its own only the texts it packed itself.
    number: u64,
    /// Bytes of the objects stored uncompressed because the dictionary did not exist yet
    /// (counted only for a codec that trains one).
    plain_bytes: AtomicU64,
    /// While a training runs: the `plain_bytes` beyond which writers wait for it (the bytes
    /// stored before it started plus as many again as its samples); `u64::MAX` otherwise.
    plain_limit: AtomicU64,
}

/// Builds a [`CompactStore`].
///
/// Starts with **no** index, [`key_of`] as key function, [`Codec::default`] (JSON, zstd with a
/// trained dictionary), a cache of [`DEFAULT_CACHE_CAPACITY`] decoded objects and the default
/// [`RoundTripCheck`].
///
/// ```
/// use informer_core::{label_index_func, namespace_index_func, NAMESPACE_INDEX};
/// use informer_store::{Codec, CompactStore};
/// # use informer_testing::JsonObject;
///
/// let store: CompactStore<JsonObject> = CompactStore::builder()
///     .indexer(NAMESPACE_INDEX, namespace_index_func())
///     .indexer("app", label_index_func("app"))
///     .codec(Codec::Json)
///     .cache_capacity(0)
///     .build();
/// # use informer_core::Indexer;
/// # assert_eq!(store.index_names().len(), 2);
/// ```
pub struct CompactStoreBuilder<K> {
    key_func: KeyFunc<K>,
    indexers: Indexers<K>,
    codec: Codec,
    cache_capacity: usize,
    round_trip: RoundTripCheck,
    decode_threads: usize,
    lists_as_text: bool,
}

/// What a [`CompactStore`] holds, from [`CompactStore::stats`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompactStats {
    /// Objects stored.
    pub objects: usize,
    /// Bytes of encoded objects held (compressed or not).
    pub encoded_bytes: u64,
    /// Bytes of the serialized form (JSON or MessagePack, as the codec says) those objects
    /// stand for, before compression.
    pub serialized_bytes: u64,
    /// An estimate of the heap the store holds for its content: encoded objects, keys,
    /// resourceVersions, the slot table, the key map, the indices and the dictionary. It leaves
    /// out the decoded objects in the cache (their size depends on `K`) and the allocator's own
    /// overhead.
    pub memory_bytes: u64,
    /// Where dictionary training stands.
    pub dictionary: DictionaryState,
    /// Decoded objects in the cache.
    pub cached_objects: usize,
    /// Decoded objects waiting outside the cache: the objects written lately without being
    /// cached (a write is cached only if its key is cached or was read lately) and, once the
    /// cache is full, the last object each shard's reads decoded without caching it (served
    /// to reads like cached ones; at most a quarter of the capacity plus one per shard).
    pub waiting_objects: usize,
    /// The most decoded objects the cache holds.
    pub cache_capacity: usize,
}

/// Where a store's dictionary training stands.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DictionaryState {
    /// The codec uses no dictionary.
    Unused,
    /// Collecting the JSON of the first objects to train on.
    Collecting {
        /// Objects collected.
        objects: usize,
        /// Bytes collected.
        bytes: usize,
    },
    /// Being trained now.
    Training,
    /// Trained: every object is compressed with it.
    Trained {
        /// The dictionary's size.
        bytes: usize,
    },
    /// Training failed (for example too few or too similar samples): objects stay
    /// uncompressed.
    Failed {
        /// zstd's reason.
        reason: String,
    },
}

/// One stored object.
struct Entry {
    encoded: Encoded,
    /// Tells versions of a key apart (see [`cache`]).
    stamp: u64,
    resource_version: Option<Box<str>>,
}

/// Running sums over the stored entries.
#[derive(Debug, Default, Clone, Copy)]
struct Totals {
    encoded: u64,
    serialized: u64,
    /// Key and resourceVersion bytes.
    strings: u64,
}

impl Totals {
    fn add(&mut self, key: &ObjectKey, entry: &Entry) {
        self.encoded += entry.encoded.len() as u64;
        self.serialized += entry.encoded.raw_len() as u64;
        self.strings +=
            (key.as_str().len() + entry.resource_version.as_ref().map_or(0, |r| r.len())) as u64;
    }

    fn remove(&mut self, key: &ObjectKey, entry: &Entry) {
        self.encoded -= entry.encoded.len() as u64;
        self.serialized -= entry.encoded.raw_len() as u64;
        self.strings -=
            (key.as_str().len() + entry.resource_version.as_ref().map_or(0, |r| r.len())) as u64;
    }

    fn of(content: &Content<Entry>) -> Self {
        let mut totals = Self::default();
        for (_, slot) in content.occupied() {
            totals.add(&slot.key, &slot.item);
        }
        totals
    }
}

/// Everything behind the lock.
struct State<K> {
    content: Content<Entry>,
    /// Append-only, as in `IndexedStore`.
    funcs: Funcs<K>,
    indices: Vec<Index>,
    /// Counts mutations of `content` (see `add_indexers`).
    writes: u64,
    totals: Totals,
}

impl<K> State<K> {
    fn position(&self, name: &str) -> Option<usize> {
        self.funcs.iter().position(|f| f.name == name)
    }
}

/// Dictionary training.
enum Trainer {
    /// The codec needs none.
    Unused,
    Collecting {
        samples: Vec<u8>,
        sizes: Vec<usize>,
    },
    /// Training on its own thread.
    Training(std::thread::JoinHandle<std::io::Result<Dictionary>>),
    Trained,
    Failed(String),
}

/// What a write is given besides the object.
enum Given<'a> {
    Nothing,
    /// The object's JSON text as received.
    Json(&'a [u8]),
    /// A listed text this store packed ([`KnownObjects::pack_text`]).
    Packed(&'a PackedJson),
}

/// An object a read picked under the lock: the cached `Arc`, or what to decode.
enum Pick<K> {
    Cached(Arc<K>),
    Encoded(ObjectKey, Encoded),
}

impl<K: Object + Serialize + DeserializeOwned> CompactStore<K> {
    /// An empty store with the built-in namespace index and every default.
    pub fn new() -> Self {
        Self::with_indexers(namespace_indexers())
    }

    /// An empty store with exactly these indices and every other default.
    pub fn with_indexers(indexers: Indexers<K>) -> Self {
        Self::builder().indexers(indexers).build()
    }

    /// A builder starting with no index and every default.
    pub fn builder() -> CompactStoreBuilder<K> {
        CompactStoreBuilder {
            key_func: Arc::new(|obj: &K| key_of(obj)),
            indexers: Indexers::new(),
            codec: Codec::default(),
            cache_capacity: DEFAULT_CACHE_CAPACITY,
            round_trip: RoundTripCheck::default(),
            decode_threads: default_decode_threads(),
            lists_as_text: true,
        }
    }

    /// The key this store files `obj` under.
    pub fn key_of(&self, obj: &K) -> Result<ObjectKey, StoreError> {
        Ok((self.key_func)(obj)?)
    }

    /// [`KnownObjects::get_by_key`], reporting a stored object that does not decode as an
    /// error instead of panicking.
    pub fn try_get_by_key(&self, key: &str) -> Result<Option<Arc<K>>, CompactError> {
        Ok(self.current(key, true)?.map(|(_, obj)| obj))
    }

    /// [`Store::add`] with the JSON `obj` was decoded from: with a JSON codec
    /// ([`Codec::Json`], [`Codec::ZstdDictionary`]) it is stored as it is instead of encoding
    /// `obj` again, the entry point for an informer that still has the bytes it received
    /// (writing costs a compression, about 10 µs for a pod, instead of a serialization too).
    /// With a MessagePack codec `obj` is encoded and `json` is only checked to be UTF-8
    /// ([`KnownObjects::wants_raw`] says no, so an informer does not keep the text for it).
    ///
    /// # Contract
    ///
    /// - `json` is UTF-8 JSON text that decodes (with `K`'s `Deserialize`) to an object equal
    ///   to `obj`: the item exactly as received, when `obj` was decoded from it. Fields `K`
    ///   does not know are fine: they are kept in the bytes (and cost their size) and ignored on
    ///   decoding.
    /// - If anything changed the object after decoding (an informer's transform hook, such as
    ///   dropping `managedFields`), the received bytes are no longer its JSON: call
    ///   [`Store::add`] instead.
    /// - Non-UTF-8 bytes are refused on every call. Whether the bytes decode to `obj` is checked
    ///   on the writes [`RoundTripCheck`] samples, and refused with
    ///   [`CompactError::EncodedMismatch`] (nothing stored); outside the sample, bytes that break
    ///   the contract are stored, and lookups that miss the cache return what they decode to.
    pub fn add_encoded(&self, obj: Arc<K>, json: &[u8]) -> Result<Option<Arc<K>>, StoreError> {
        self.write(obj, Given::Json(json), true)
    }

    /// [`Store::add`] without returning the previous object, so it is never decoded.
    pub fn insert(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.write(obj, Given::Nothing, false).map(drop)
    }

    /// [`CompactStore::add_encoded`] without returning the previous object.
    pub fn insert_encoded(&self, obj: Arc<K>, json: &[u8]) -> Result<(), StoreError> {
        self.write(obj, Given::Json(json), false).map(drop)
    }

    /// [`Store::delete_by_key`] without returning the object, so it is never decoded. Returns
    /// whether one was stored.
    pub fn remove(&self, key: &str) -> bool {
        // Without the previous object nothing is decoded, so nothing can fail.
        matches!(self.delete_inner(key, false), Ok(Some(_)))
    }

    /// What the store holds now. Applies a dictionary whose training has finished first (see
    /// [`CompactStore::finish_training`]). Never waits for a training: while a writer waits
    /// for one, the dictionary is reported as [`DictionaryState::Training`].
    pub fn stats(&self) -> CompactStats {
        self.advance_training(false);
        let dictionary = self.dictionary_state();
        let dictionary_bytes = self.dictionary.get().map_or(0, |d| d.size());
        let state = self.state.read();
        let content = &state.content;
        let totals = state.totals;
        let entries = content.len() as u64;
        // Per entry: the `Arc<[u8]>` header of the encoded bytes, and the key's `Arc<str>`
        // header; the strings themselves are in `totals.strings`.
        const ARC_HEADER: u64 = 16;
        let table = (content.slots.capacity() * mem::size_of::<Option<Slot<Entry>>>()
            + content.free.capacity() * mem::size_of::<SlotId>()
            + content.positions.capacity() * (mem::size_of::<(ObjectKey, SlotId)>() + 1))
            as u64;
        let indices: u64 = state.indices.iter().map(|i| i.heap_estimate() as u64).sum();
        // A prepared dictionary holds its content once per direction, plus tables.
        let dictionary_memory = 3 * dictionary_bytes as u64;
        CompactStats {
            objects: content.len(),
            encoded_bytes: totals.encoded,
            serialized_bytes: totals.serialized,
            memory_bytes: totals.encoded
                + totals.strings
                + entries * 2 * ARC_HEADER
                + table
                + indices
                + dictionary_memory,
            dictionary,
            cached_objects: self.cache.len(),
            waiting_objects: self.cache.waiting(),
            cache_capacity: self.cache.capacity(),
        }
    }

    /// [`CompactStats::memory_bytes`]: the estimated heap held for the content.
    pub fn memory_bytes(&self) -> u64 {
        self.stats().memory_bytes
    }

    fn dictionary_state(&self) -> DictionaryState {
        // The trainer's lock is held for long only while a training is under way: by a writer
        // waiting for it, or by `finish_training`. Stats do not wait for it.
        let Some(trainer) = self.trainer.try_lock_for(TRAINER_PATIENCE) else {
            return match self.dictionary.get() {
                Some(dictionary) => DictionaryState::Trained {
                    bytes: dictionary.size(),
                },
                None => DictionaryState::Training,
            };
        };
        match &*trainer {
            Trainer::Unused => DictionaryState::Unused,
            Trainer::Collecting { samples, sizes } => DictionaryState::Collecting {
                objects: sizes.len(),
                bytes: samples.len(),
            },
            Trainer::Training(_) => DictionaryState::Training,
            Trainer::Trained => DictionaryState::Trained {
                bytes: self.dictionary.get().map_or(0, |d| d.size()),
            },
            Trainer::Failed(reason) => DictionaryState::Failed {
                reason: reason.clone(),
            },
        }
    }

    /// The current index functions (cheap: one reference-count increment).
    fn funcs(&self) -> Funcs<K> {
        self.state.read().funcs.clone()
    }

    /// The function of index `name`.
    fn func(&self, name: &str) -> Result<IndexFunc<K>, StoreError> {
        let state = self.state.read();
        state
            .funcs
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.func.clone())
            .ok_or_else(|| not_found(name))
    }

    // --- Encoding -------------------------------------------------------------------------

    /// `raw` as this store packed it, if it did.
    fn own_packed<'r>(&self, raw: &'r RawObject) -> Option<&'r PackedJson> {
        raw.packed_as::<PackedJson>()
            .filter(|packed| packed.store == self.number)
    }

    /// What a write of `raw` is given: this store's own packed form, else the text.
    fn given<'r>(&self, raw: &'r RawObject) -> Given<'r> {
        match self.own_packed(raw) {
            Some(packed) => Given::Packed(packed),
            None => Given::Json(raw.as_bytes()),
        }
    }

    /// The encoding of `obj` (from `given` JSON if any and the codec keeps JSON), after the
    /// sampled round-trip check.
    fn encode(&self, key: &ObjectKey, obj: &K, given: Given<'_>) -> Result<Encoded, CompactError> {
        let given = match given {
            Given::Nothing => None,
            Given::Json(json) => Some(json),
            Given::Packed(packed) => return self.encode_packed(key, obj, packed),
        };
        if let Some(json) = given {
            codec::check_utf8(key, json)?;
        }
        let format = self.codec.format();
        let given = given.filter(|_| format == Format::Json);
        let owned;
        let raw: &[u8] = match given {
            Some(json) => json,
            None => {
                owned = codec::serialize(key, obj, format)?;
                &owned
            }
        };
        let n = self.encoded.fetch_add(1, Ordering::Relaxed);
        if self.round_trip.due(n) {
            codec::check_round_trip(key, obj, raw, format, given.is_some())?;
        }
        match self.dictionary.get() {
            Some(dictionary) => codec::compress(key, raw, dictionary),
            None => self.plain(key, raw),
        }
    }

    /// `raw` kept uncompressed because the dictionary does not exist yet: counted among the
    /// bytes that may wait for it (with a codec that trains one) and offered as a sample.
    fn plain(&self, key: &ObjectKey, raw: &[u8]) -> Result<Encoded, CompactError> {
        let encoded = codec::plain(key, raw)?;
        if self.codec.dictionary().is_some() {
            self.plain_bytes
                .fetch_add(raw.len() as u64, Ordering::Relaxed);
        }
        self.offer_sample(raw);
        Ok(encoded)
    }

    /// The encoding of `obj` from a text this store packed when it was listed
    /// ([`KnownObjects::pack_text`]): kept as it is if compressed, else compressed now if the
    /// dictionary exists (it was offered as a sample when packed, so it is not offered again).
    fn encode_packed(
        &self,
        key: &ObjectKey,
        obj: &K,
        packed: &PackedJson,
    ) -> Result<Encoded, CompactError> {
        let n = self.encoded.fetch_add(1, Ordering::Relaxed);
        if self.round_trip.due(n) {
            let text = informer_core::PackedText::unpack(packed);
            codec::check_round_trip(key, obj, text.as_bytes(), packed::FORMAT, true)?;
        }
        match (packed.encoded.plain(), self.dictionary.get()) {
            (Some(raw), Some(dictionary)) => codec::compress(key, raw, dictionary),
            _ => Ok(packed.encoded.clone()),
        }
    }

    /// Keeps a copy of `raw` (serialized) to train the dictionary on, while collecting.
    fn offer_sample(&self, raw: &[u8]) {
        let Some(settings) = self.codec.dictionary() else {
            return;
        };
        let mut trainer = self.trainer.lock();
        if let Trainer::Collecting { samples, sizes } = &mut *trainer
            && sizes.len() < settings.training_objects
            && samples.len() < settings.training_bytes
        {
            samples.extend_from_slice(raw);
            sizes.push(raw.len());
        }
    }

    /// Starts training the dictionary, on a thread of its own, once enough samples are in;
    /// applies its outcome once the training has finished. Called after every write (`write`)
    /// and by [`CompactStore::stats`]. Training a 64 KiB dictionary on 512 realistic pods
    /// takes 0.1-0.2 s: the writer that completed the samples does not wait for it, and the
    /// objects written meanwhile stay uncompressed until it is applied, but only up to as many
    /// bytes again as the samples: past that a writer waits for the training (so a fast writer,
    /// such as an informer's first list, cannot pile up uncompressed objects whose freed
    /// memory the process would keep).
    fn advance_training(&self, write: bool) {
        if self.dictionary.get().is_some() || self.codec.dictionary().is_none() {
            return;
        }
        let over = write
            && self.plain_bytes.load(Ordering::Relaxed) > self.plain_limit.load(Ordering::Relaxed);
        let mut trainer = match self.trainer.try_lock() {
            Some(trainer) => trainer,
            // Over the limit: wait for the holder (who may be waiting for the training).
            None if over => self.trainer.lock(),
            // Whoever holds the trainer is collecting a sample or applying a dictionary:
            // nothing for this call to do (the next one will see where it stands).
            None => return,
        };
        self.step_training(&mut trainer, over);
    }

    /// Waits until a dictionary training in progress has finished and applies its outcome
    /// (the objects stored uncompressed meanwhile are compressed before this returns). Returns
    /// at once when no training is in progress: the codec needs no dictionary, the samples are
    /// not all in yet, or the dictionary is trained (or failed) already.
    ///
    /// Training runs on a thread of its own and its outcome is applied by the first write (or
    /// [`CompactStore::stats`]) after it finishes; this is for callers that want the store
    /// settled now, for example before reading its memory.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use informer_core::Store;
    /// use informer_store::{CompactStore, DictionaryState};
    /// use informer_testing::JsonObject;
    ///
    /// let store = CompactStore::<JsonObject>::new();
    /// for i in 0..600 {
    ///     let name = format!("web-{i}");
    ///     store.add(Arc::new(JsonObject::new(Some("prod"), &name).with_label("app", "web")))?;
    /// }
    /// // The 512th object started the training; wait for it.
    /// store.finish_training();
    /// assert!(matches!(store.stats().dictionary, DictionaryState::Trained { .. }));
    /// # Ok::<(), informer_core::StoreError>(())
    /// ```
    pub fn finish_training(&self) {
        // Held while waiting: a write meanwhile neither waits for nor applies the outcome.
        let mut trainer = self.trainer.lock();
        self.step_training(&mut trainer, true);
    }

    /// One step of training, under the trainer's lock: starts it when the samples are in,
    /// applies its outcome when it has finished (or, with `wait`, once it has).
    fn step_training(&self, trainer: &mut Trainer, wait: bool) {
        let Some(settings) = self.codec.dictionary() else {
            return;
        };
        if let Trainer::Collecting { samples, sizes } = &*trainer {
            if sizes.len() < settings.training_objects && samples.len() < settings.training_bytes {
                return;
            }
            let Trainer::Collecting { samples, sizes } = mem::replace(trainer, Trainer::Unused)
            else {
                // Matched just above.
                return;
            };
            // Writers may store as many bytes again uncompressed before they wait for it.
            self.plain_limit.store(
                self.plain_bytes.load(Ordering::Relaxed) + samples.len() as u64,
                Ordering::Relaxed,
            );
            let samples = Arc::new((samples, sizes));
            let given = Arc::clone(&samples);
            let owned = settings.clone();
            let spawned = std::thread::Builder::new()
                .name("compact-dictionary".into())
                .spawn(move || {
                    #[cfg(test)]
                    let _held = tests::TRAINING_GATE.lock();
                    Dictionary::train(&given.0, &given.1, &owned)
                });
            *trainer = match spawned {
                Ok(handle) => Trainer::Training(handle),
                // No thread to be had: train on this one.
                Err(_) => {
                    let outcome = Dictionary::train(&samples.0, &samples.1, settings);
                    self.apply_training(trainer, Ok(outcome));
                    return;
                }
            };
        }
        let Trainer::Training(handle) = &*trainer else {
            return;
        };
        if !wait && !handle.is_finished() {
            return;
        }
        let Trainer::Training(handle) = mem::replace(trainer, Trainer::Unused) else {
            // Matched just above.
            return;
        };
        let outcome = handle.join();
        self.apply_training(trainer, outcome);
    }

    /// Applies a training's outcome (`Err` if the training thread panicked).
    fn apply_training(
        &self,
        trainer: &mut Trainer,
        outcome: std::thread::Result<std::io::Result<Dictionary>>,
    ) {
        self.plain_limit.store(u64::MAX, Ordering::Relaxed);
        match outcome {
            Ok(Ok(dictionary)) => {
                // Only the holder of the trainer's lock applies an outcome, once: the cell is
                // empty.
                let _ = self.dictionary.set(Arc::new(dictionary));
                *trainer = Trainer::Trained;
                self.compress_stored_plain();
            }
            Ok(Err(error)) => *trainer = Trainer::Failed(error.to_string()),
            Err(_) => *trainer = Trainer::Failed("the training thread panicked".into()),
        }
    }

    /// Compresses the objects stored uncompressed before the dictionary existed: prepared
    /// outside the lock, swapped in under it for every entry not overwritten meanwhile.
    fn compress_stored_plain(&self) {
        let Some(dictionary) = self.dictionary.get() else {
            return;
        };
        let plain: Vec<(SlotId, u64, ObjectKey, Encoded)> = {
            let state = self.state.read();
            state
                .content
                .occupied()
                .filter(|(_, s)| !s.item.encoded.is_compressed())
                .map(|(id, s)| (id, s.item.stamp, s.key.clone(), s.item.encoded.clone()))
                .collect()
        };
        let compressed: Vec<(SlotId, u64, Encoded)> = plain
            .into_iter()
            .filter_map(|(id, stamp, key, encoded)| {
                // An object that does not compress (it cannot happen short of memory
                // exhaustion) just stays uncompressed.
                let raw = encoded.plain()?;
                Some((id, stamp, codec::compress(&key, raw, dictionary).ok()?))
            })
            .collect();
        let mut state = self.state.write();
        let State {
            content, totals, ..
        } = &mut *state;
        for (id, stamp, encoded) in compressed {
            if let Some(Some(slot)) = content.slots.get_mut(id)
                && slot.item.stamp == stamp
            {
                totals.remove(&slot.key, &slot.item);
                slot.item.encoded = encoded;
                totals.add(&slot.key, &slot.item);
            }
        }
    }

    fn decode(&self, key: &ObjectKey, encoded: &Encoded) -> Result<K, CompactError> {
        codec::decode(
            encoded,
            self.codec.format(),
            self.dictionary.get().map(|d| &**d),
        )
        .map_err(|source| CompactError::Decode {
            key: key.clone(),
            source,
        })
    }

    // --- Reads ----------------------------------------------------------------------------

    /// The stamp and object stored under `key`: from the cache, or decoded outside the lock
    /// (and, if `fill`, cached when the cache admits a read: see `cache`).
    fn current(&self, key: &str, fill: bool) -> Result<Option<(u64, Arc<K>)>, CompactError> {
        let (stored_key, stamp, encoded) = {
            let state = self.state.read();
            let Some(slot) = state.content.by_key(key) else {
                return Ok(None);
            };
            let stamp = slot.item.stamp;
            if let Some(hit) = self.cache.get(key, stamp) {
                return Ok(Some((stamp, hit)));
            }
            (slot.key.clone(), stamp, slot.item.encoded.clone())
        };
        let obj = Arc::new(self.decode(&stored_key, &encoded)?);
        if fill {
            let mut evicted = Evicted::new();
            self.cache
                .admit(&stored_key, stamp, obj.clone(), Access::Read, &mut evicted);
        }
        Ok(Some((stamp, obj)))
    }

    /// What to hand out for one stored entry (under the read lock).
    fn pick(&self, slot: &Slot<Entry>) -> Pick<K> {
        match self.cache.get(slot.key.as_str(), slot.item.stamp) {
            Some(hit) => Pick::Cached(hit),
            None => Pick::Encoded(slot.key.clone(), slot.item.encoded.clone()),
        }
    }

    /// Decodes picked objects (outside the lock), in order. Scans do not fill the cache: one
    /// listing would evict every hot object. A scan with many objects to decode splits them
    /// over up to [`CompactStoreBuilder::decode_threads`] scoped threads, each decoding a
    /// contiguous part; the caller's thread decodes the first part and waits for the others.
    fn materialize(&self, picks: Vec<Pick<K>>) -> Result<Vec<Arc<K>>, CompactError> {
        let to_decode = picks
            .iter()
            .filter(|p| matches!(p, Pick::Encoded(..)))
            .count();
        let threads = self.decode_threads.min(to_decode / PARALLEL_DECODE_MIN);
        if threads <= 1 {
            return self.decode_picks(&picks);
        }
        let part = picks.len().div_ceil(threads);
        let mut parts = picks.chunks(part);
        let first = parts.next().unwrap_or_default();
        std::thread::scope(|scope| {
            let others: Vec<_> = parts
                .map(|rest| scope.spawn(move || self.decode_picks(rest)))
                .collect();
            let mut all = self.decode_picks(first)?;
            all.reserve(picks.len() - all.len());
            for handle in others {
                match handle.join() {
                    Ok(decoded) => all.extend(decoded?),
                    // A `Deserialize` impl (user code) panicked: panic here as a sequential
                    // decode would have.
                    Err(payload) => std::panic::resume_unwind(payload),
                }
            }
            Ok(all)
        })
    }

    fn decode_picks(&self, picks: &[Pick<K>]) -> Result<Vec<Arc<K>>, CompactError> {
        picks
            .iter()
            .map(|pick| match pick {
                Pick::Cached(obj) => Ok(Arc::clone(obj)),
                Pick::Encoded(key, encoded) => Ok(Arc::new(self.decode(key, encoded)?)),
            })
            .collect()
    }

    /// Picks the objects of the slots in `ids` (every slot an index files is occupied).
    fn pick_slots<'a>(
        &self,
        content: &Content<Entry>,
        ids: impl IntoIterator<Item = &'a SlotId>,
    ) -> Vec<Pick<K>> {
        ids.into_iter()
            .filter_map(|&id| content.slot(id).map(|s| self.pick(s)))
            .collect()
    }

    // --- Writes ---------------------------------------------------------------------------

    /// Inserts or overwrites; returns the previous object if `want_previous`.
    fn write(
        &self,
        obj: Arc<K>,
        given: Given<'_>,
        want_previous: bool,
    ) -> Result<Option<Arc<K>>, StoreError> {
        let key = self.key_of(&obj)?;
        // User code (index functions, Serialize) and encoding run before the write lock.
        let funcs = self.funcs();
        let mut fresh = fresh_values(&funcs, &obj);
        let encoded = self
            .encode(&key, &obj, given)
            .map_err(|e| e.into_store_error(&format!("storing {key}")))?;
        let resource_version = obj.object_resource_version().map(Box::from);
        let decoding_previous = |e: CompactError| {
            e.into_store_error(&format!("decoding the object stored under {key}"))
        };
        let mut evicted = Evicted::new();
        let mut attempts = 0;
        let previous = loop {
            attempts += 1;
            // The previous object is decoded outside the lock (or found in the cache), then
            // the write goes ahead only if it is still the stored one.
            let optimistic = want_previous && attempts <= OPTIMISTIC_ATTEMPTS;
            let before = if optimistic {
                Some(
                    self.current(key.as_str(), false)
                        .map_err(decoding_previous)?,
                )
            } else {
                None
            };
            let mut state = self.state.write();
            let stored_stamp = state.content.by_key(key.as_str()).map(|s| s.item.stamp);
            let previous = match before {
                Some(before) => {
                    if before.as_ref().map(|(stamp, _)| *stamp) != stored_stamp {
                        continue;
                    }
                    before.map(|(_, obj)| obj)
                }
                // Overwritten under our feet too often: decode under the lock.
                None if want_previous => match state.content.by_key(key.as_str()) {
                    Some(slot) => Some(match self.cache.get(key.as_str(), slot.item.stamp) {
                        Some(hit) => hit,
                        None => Arc::new(
                            self.decode(&slot.key, &slot.item.encoded)
                                .map_err(decoding_previous)?,
                        ),
                    }),
                    None => None,
                },
                None => None,
            };
            // Indices registered since the snapshot (rare): their values now, still before
            // changing anything.
            for f in &state.funcs[funcs.len()..] {
                fresh.push(normalize((f.func)(&obj)));
            }
            let stamp = self.next_stamp.fetch_add(1, Ordering::Relaxed);
            state.writes += 1;
            let State {
                content,
                indices,
                totals,
                ..
            } = &mut *state;
            let entry = Entry {
                encoded,
                stamp,
                resource_version,
            };
            totals.add(&key, &entry);
            let existing = content.positions.get(key.as_str()).copied();
            if let Some(id) = existing
                && let Some(Some(slot)) = content.slots.get_mut(id)
            {
                let recorded = mem::take(&mut slot.values);
                slot.values = refile(indices, id, recorded, fresh);
                let old = mem::replace(&mut slot.item, entry);
                totals.remove(&key, &old);
            } else {
                let id = content.vacant();
                let values = file_new(indices, id, fresh);
                content.occupy(
                    id,
                    Slot {
                        key: key.clone(),
                        item: entry,
                        values,
                    },
                );
            }
            // The object just written is a likely next read: cached if the key is (the new
            // version replaces the old) or was read lately (an informer reads the old object
            // before each update), else left on probation rather than evicting a hot object.
            self.cache
                .admit(&key, stamp, obj, Access::Write, &mut evicted);
            break previous;
        };
        drop(evicted);
        self.advance_training(true);
        Ok(previous)
    }

    /// Removes `key`: `Ok(None)` when nothing was stored under it, else `Ok(Some(previous))`
    /// where `previous` is the removed object if `want_previous`.
    fn delete_inner(
        &self,
        key: &str,
        want_previous: bool,
    ) -> Result<Option<Option<Arc<K>>>, CompactError> {
        let mut evicted = Evicted::new();
        let mut attempts = 0;
        let removed = loop {
            attempts += 1;
            let optimistic = want_previous && attempts <= OPTIMISTIC_ATTEMPTS;
            let before = if optimistic {
                match self.current(key, false)? {
                    Some(before) => Some(before),
                    None => return Ok(None),
                }
            } else {
                None
            };
            let mut state = self.state.write();
            let State {
                content,
                indices,
                writes,
                totals,
                ..
            } = &mut *state;
            let Some(slot) = content.by_key(key) else {
                return Ok(None);
            };
            let stamp = slot.item.stamp;
            let previous = match before {
                Some((before_stamp, obj)) => {
                    if before_stamp != stamp {
                        continue;
                    }
                    Some(obj)
                }
                None if want_previous => Some(match self.cache.get(key, stamp) {
                    Some(hit) => hit,
                    None => Arc::new(self.decode(&slot.key, &slot.item.encoded)?),
                }),
                None => None,
            };
            let Some((id, slot)) = content.vacate(key) else {
                return Ok(None);
            };
            *writes += 1;
            unfile(indices, id, &slot.values);
            totals.remove(&slot.key, &slot.item);
            if let Some(cached) = self.cache.remove(key, stamp, &mut evicted) {
                evicted.push(cached);
            }
            break previous;
        };
        drop(evicted);
        Ok(Some(removed))
    }
}

impl<K: Object + Serialize + DeserializeOwned> Default for CompactStore<K> {
    fn default() -> Self {
        Self::new()
    }
}

/// The default of [`CompactStoreBuilder::decode_threads`].
fn default_decode_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(DEFAULT_DECODE_THREADS_MAX)
}

fn not_found(name: &str) -> StoreError {
    StoreError::IndexNotFound {
        name: name.to_owned(),
    }
}

/// A stored object failed to decode where the trait gives no way to report it. See the crate
/// docs: answering "absent" would be a lie, so the failure is loud.
#[track_caller]
fn undecodable(error: CompactError) -> ! {
    panic!("{}", informer_core::ErrorChain(&error))
}

impl<K> CompactStoreBuilder<K> {
    key_and_index_setters!();

    /// How objects are kept (default: [`Codec::ZstdDictionary`] with its defaults).
    pub fn codec(mut self, codec: Codec) -> Self {
        self.codec = codec;
        self
    }

    /// How many decoded objects to keep for hot keys (default [`DEFAULT_CACHE_CAPACITY`]; 0
    /// disables the cache). The cache changes what a lookup costs, never what it returns.
    /// An object written is cached only if its key is cached already or missed a read lately,
    /// and, once the cache is full, so is an object read (until then it waits, in a probation
    /// queue or a read slot per shard: a quarter more objects than this capacity at most, plus
    /// one per shard), so lookups of cold keys and writes of keys nobody reads neither evict
    /// hot objects nor fill the cache with objects nobody asked for; an informer's updates (a
    /// read, then a write) are cached.
    pub fn cache_capacity(mut self, objects: usize) -> Self {
        self.cache_capacity = objects;
        self
    }

    /// When to check that objects survive their encoding (default: a sample).
    pub fn round_trip_check(mut self, check: RoundTripCheck) -> Self {
        self.round_trip = check;
        self
    }

    /// The most threads a scan (`by_index`, `index`, `list`, `add_indexers`) decodes on
    /// (default: the machine's parallelism, at most 4; 1 decodes on the caller's thread only).
    /// A scan starts extra threads only when each gets at least 64 objects to decode, so
    /// lookups of one object and small scans never do. The result is the same either way.
    pub fn decode_threads(mut self, threads: usize) -> Self {
        self.decode_threads = threads.max(1);
        self
    }

    /// Whether an informer's lists wait in its queue as JSON text, each object decoded when
    /// popped (default: true; only with a JSON codec). A list of 100k Kubernetes pods then
    /// peaks at about its text (0.7 GB) instead of its decoded pods (4.7 GB); see
    /// `BENCHMARKS.md` for what it does to the sync time. `false` keeps decoded objects in the
    /// queue, with a memory peak like the default store's.
    pub fn lists_as_text(mut self, yes: bool) -> Self {
        self.lists_as_text = yes;
        self
    }

    /// The empty store.
    pub fn build(self) -> CompactStore<K> {
        let funcs = sorted_funcs(self.indexers);
        let indices = funcs.iter().map(|_| Index::default()).collect();
        let trainer = match self.codec.dictionary() {
            None => Trainer::Unused,
            Some(_) => Trainer::Collecting {
                samples: Vec::new(),
                sizes: Vec::new(),
            },
        };
        CompactStore {
            key_func: self.key_func,
            state: RwLock::new(State {
                content: Content::with_capacity(0),
                funcs: funcs.into(),
                indices,
                writes: 0,
                totals: Totals::default(),
            }),
            cache: DecodedCache::new(self.cache_capacity),
            codec: self.codec,
            round_trip: self.round_trip,
            decode_threads: self.decode_threads,
            lists_as_text: self.lists_as_text,
            encoded: AtomicU64::new(0),
            next_stamp: AtomicU64::new(1),
            dictionary: OnceLock::new(),
            trainer: Mutex::new(trainer),
            number: packed::store_number(),
            plain_bytes: AtomicU64::new(0),
            plain_limit: AtomicU64::new(u64::MAX),
        }
    }
}

impl<K> fmt::Debug for CompactStore<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.read();
        f.debug_struct("CompactStore")
            .field("len", &state.content.len())
            .field(
                "indices",
                &state.funcs.iter().map(|f| &f.name).collect::<Vec<_>>(),
            )
            .field("codec", &self.codec)
            .field("encoded_bytes", &state.totals.encoded)
            .finish_non_exhaustive()
    }
}

impl<K> fmt::Debug for CompactStoreBuilder<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<_> = self.indexers.keys().collect();
        names.sort_unstable();
        f.debug_struct("CompactStoreBuilder")
            .field("indices", &names)
            .field("codec", &self.codec)
            .field("cache_capacity", &self.cache_capacity)
            .field("round_trip", &self.round_trip)
            .field("decode_threads", &self.decode_threads)
            .finish_non_exhaustive()
    }
}

impl<K: Object + Serialize + DeserializeOwned> KnownObjects<K> for CompactStore<K> {
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.state
            .read()
            .content
            .positions
            .keys()
            .cloned()
            .collect()
    }

    /// The object under `key`: from the cache, or decoded (and cached).
    ///
    /// # Panics
    ///
    /// If the stored object does not decode (a bug: see [`CompactError::Decode`]);
    /// [`CompactStore::try_get_by_key`] reports it instead.
    fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.try_get_by_key(key).unwrap_or_else(|e| undecodable(e))
    }

    /// Whether an object is stored under `key` (decodes nothing).
    fn contains_key(&self, key: &str) -> bool {
        self.state.read().content.positions.contains_key(key)
    }

    /// The resourceVersion of the object stored under `key`, kept beside its encoding
    /// (decodes nothing).
    fn resource_version_of(&self, key: &str) -> Option<String> {
        let state = self.state.read();
        let slot = state.content.by_key(key)?;
        slot.item.resource_version.as_deref().map(str::to_owned)
    }

    /// The stored object only while it is in the cache of decoded objects (decodes nothing).
    fn shared_by_key(&self, key: &str) -> Option<Arc<K>> {
        let state = self.state.read();
        let slot = state.content.by_key(key)?;
        self.cache.get(key, slot.item.stamp)
    }

    /// With a JSON codec, yes: the text as received saves encoding each object. A MessagePack
    /// codec encodes the object itself, so the text would be carried for nothing.
    fn wants_raw(&self) -> bool {
        self.codec.keeps_json()
    }

    /// With a JSON codec, unless [`CompactStoreBuilder::lists_as_text`] turned it off: a list
    /// then waits in the informer's queue as text, each object decoded when it is popped (and
    /// stored from the same text).
    fn decodes_raw(&self) -> bool {
        self.lists_as_text && self.wants_raw()
    }

    /// Decodes JSON text as received, or a text this store packed (the store's content is not
    /// consulted).
    fn decode_raw(&self, raw: &RawObject) -> Result<Arc<K>, StoreError> {
        if let Some(packed) = self.own_packed(raw) {
            return codec::decode(
                &packed.encoded,
                packed::FORMAT,
                packed.dictionary.as_deref(),
            )
            .map(Arc::new)
            .map_err(|e| StoreError::Backend {
                context: "decoding a listed object's packed text".to_owned(),
                source: Box::new(e),
            });
        }
        serde_json::from_str(raw.as_str())
            .map(Arc::new)
            .map_err(|e| StoreError::Backend {
                context: "decoding a listed object's text".to_owned(),
                source: Box::new(e),
            })
    }

    /// With a JSON codec that trains a dictionary: the text compressed with the dictionary if
    /// it is trained; before that the text as it is, offered as a training sample (and counted
    /// among the bytes that may wait uncompressed: past as many again as the samples, this
    /// waits for the training, as writes do).
    fn pack_text(&self, key: &ObjectKey, text: &str) -> Option<RawObject> {
        if self.codec.format() != packed::FORMAT || self.codec.dictionary().is_none() {
            return None;
        }
        let (encoded, dictionary) = match self.dictionary.get() {
            Some(dictionary) => (
                codec::compress(key, text.as_bytes(), dictionary).ok()?,
                Some(Arc::clone(dictionary)),
            ),
            None => {
                let encoded = self.plain(key, text.as_bytes()).ok()?;
                self.advance_training(true);
                (encoded, None)
            }
        };
        Some(RawObject::packed(PackedJson {
            store: self.number,
            encoded,
            dictionary,
        }))
    }
}

impl<K: Object + Serialize + DeserializeOwned> Store<K> for CompactStore<K> {
    fn add(&self, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        self.write(obj, Given::Nothing, true)
    }

    fn update(&self, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        self.write(obj, Given::Nothing, true)
    }

    /// [`CompactStore::add_encoded`]: with a JSON codec the text is stored (compressed) as it
    /// is.
    fn add_raw(&self, obj: Arc<K>, raw: &RawObject) -> Result<Option<Arc<K>>, StoreError> {
        self.write(obj, self.given(raw), true)
    }

    /// As [`add_raw`](Store::add_raw).
    fn update_raw(&self, obj: Arc<K>, raw: &RawObject) -> Result<Option<Arc<K>>, StoreError> {
        self.write(obj, self.given(raw), true)
    }

    /// Writes without decoding the object it replaces.
    fn put(&self, obj: Arc<K>, raw: Option<&RawObject>) -> Result<(), StoreError> {
        let given = match raw {
            Some(raw) => self.given(raw),
            None => Given::Nothing,
        };
        self.write(obj, given, false).map(drop)
    }

    fn delete(&self, obj: &K) -> Result<Option<Arc<K>>, StoreError> {
        let key = self.key_of(obj)?;
        self.delete_inner(key.as_str(), true)
            .map(Option::flatten)
            .map_err(|e| e.into_store_error(&format!("deleting {key}")))
    }

    /// # Panics
    ///
    /// If the stored object does not decode (a bug: see [`CompactError::Decode`]); the store
    /// is left unchanged. [`CompactStore::remove`] decodes nothing.
    fn delete_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.delete_inner(key, true)
            .unwrap_or_else(|e| undecodable(e))
            .flatten()
    }

    fn get(&self, obj: &K) -> Result<Option<Arc<K>>, StoreError> {
        let key = self.key_of(obj)?;
        self.try_get_by_key(key.as_str())
            .map_err(|e| e.into_store_error(&format!("reading {key}")))
    }

    /// Every object, decoded (cached ones are shared). This decodes the whole store at once:
    /// on a large store prefer `by_index`, or `list_keys` and `get_by_key`.
    ///
    /// # Panics
    ///
    /// If a stored object does not decode (a bug: see [`CompactError::Decode`]).
    fn list(&self) -> Vec<Arc<K>> {
        let picks: Vec<Pick<K>> = {
            let state = self.state.read();
            state
                .content
                .occupied()
                .map(|(_, slot)| self.pick(slot))
                .collect()
        };
        self.materialize(picks).unwrap_or_else(|e| undecodable(e))
    }

    fn len(&self) -> usize {
        self.state.read().content.len()
    }

    fn replace(&self, objects: Vec<Arc<K>>, _resource_version: &str) -> Result<(), StoreError> {
        // Encode, index and file everything outside the lock; swap under it.
        let funcs = self.funcs();
        let mut content: Content<Entry> = Content::with_capacity(objects.len());
        let mut indices: Vec<Index> = funcs.iter().map(|_| Index::default()).collect();
        // The object in each slot of the new content (a later duplicate of a key wins).
        let mut by_slot: Vec<Option<Arc<K>>> = Vec::with_capacity(objects.len());
        for obj in objects {
            let key = self.key_of(&obj)?;
            let fresh = fresh_values(&funcs, &obj);
            let encoded = self.encode(&key, &obj, Given::Nothing).map_err(|e| {
                e.into_store_error(&format!("replacing the content: storing {key}"))
            })?;
            // The samples may be complete: start training (and, if it has finished, apply its
            // dictionary, so that the rest is compressed).
            self.advance_training(true);
            let entry = Entry {
                encoded,
                stamp: self.next_stamp.fetch_add(1, Ordering::Relaxed),
                resource_version: obj.object_resource_version().map(Box::from),
            };
            let id = content.build_insert(&mut indices, key, entry, fresh);
            if by_slot.len() <= id {
                by_slot.resize(id + 1, None);
            }
            by_slot[id] = Some(obj);
        }
        // Objects encoded before the dictionary was trained, compressed now.
        if let Some(dictionary) = self.dictionary.get() {
            for slot in content.slots.iter_mut().flatten() {
                if let Some(raw) = slot.item.encoded.plain()
                    && let Ok(compressed) = codec::compress(&slot.key, raw, dictionary)
                {
                    slot.item.encoded = compressed;
                }
            }
        }
        let totals = Totals::of(&content);
        let mut evicted = Evicted::new();
        let old = {
            let mut state = self.state.write();
            // Indices registered while we built (rare): file the new content in them too.
            let registered = state.funcs.clone();
            let late = &registered[funcs.len()..];
            if !late.is_empty() {
                let prepared: Vec<(SlotId, FreshValues)> = by_slot
                    .iter()
                    .enumerate()
                    .filter_map(|(id, obj)| Some((id, fresh_values(late, obj.as_ref()?))))
                    .collect();
                content.file(prepared, late.len(), &mut indices);
            }
            state.writes += 1;
            // The given objects are written ones: the last of them wait on probation (see
            // `cache`), served to reads until later writes push them out.
            self.cache.clear(&mut evicted);
            let last: Vec<usize> = by_slot
                .iter()
                .enumerate()
                .rev()
                .filter(|(_, obj)| obj.is_some())
                .map(|(id, _)| id)
                .take(self.cache.capacity())
                .collect();
            for id in last.into_iter().rev() {
                if let (Some(obj), Some(slot)) = (&by_slot[id], content.slot(id)) {
                    self.cache.admit(
                        &slot.key,
                        slot.item.stamp,
                        obj.clone(),
                        Access::Write,
                        &mut evicted,
                    );
                }
            }
            state.totals = totals;
            (
                mem::replace(&mut state.content, content),
                mem::replace(&mut state.indices, indices),
            )
        };
        // The old content and evicted objects are freed after the lock is released.
        drop((old, evicted, by_slot));
        Ok(())
    }
}

impl<K: Object + Serialize + DeserializeOwned> Indexer<K> for CompactStore<K> {
    fn index(&self, index_name: &str, obj: &K) -> Result<Vec<Arc<K>>, StoreError> {
        let func = self.func(index_name)?;
        let values = normalize(func(obj));
        let picks = {
            let state = self.state.read();
            let position = state
                .position(index_name)
                .ok_or_else(|| not_found(index_name))?;
            let index = &state.indices[position];
            let mut ids: Vec<&SlotId> = values
                .iter()
                .filter_map(|v| index.slots(v))
                .flatten()
                .collect();
            if values.len() > 1 {
                // An object may be filed under several of the values: report it once.
                ids.sort_unstable();
                ids.dedup();
            }
            self.pick_slots(&state.content, ids)
        };
        self.materialize(picks)
            .map_err(|e| e.into_store_error(&format!("reading index {index_name:?}")))
    }

    fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<ObjectKey>, StoreError> {
        let state = self.state.read();
        let position = state
            .position(index_name)
            .ok_or_else(|| not_found(index_name))?;
        Ok(state.indices[position]
            .slots(value)
            .map(|ids| {
                ids.iter()
                    .filter_map(|&id| state.content.slot(id).map(|s| s.key.clone()))
                    .collect()
            })
            .unwrap_or_default())
    }

    fn list_index_func_values(&self, index_name: &str) -> Result<Vec<String>, StoreError> {
        let state = self.state.read();
        let position = state
            .position(index_name)
            .ok_or_else(|| not_found(index_name))?;
        Ok(state.indices[position]
            .values()
            .map(str::to_owned)
            .collect())
    }

    fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<K>>, StoreError> {
        let picks = {
            let state = self.state.read();
            let position = state
                .position(index_name)
                .ok_or_else(|| not_found(index_name))?;
            match state.indices[position].slots(value) {
                Some(ids) => self.pick_slots(&state.content, ids),
                None => Vec::new(),
            }
        };
        self.materialize(picks)
            .map_err(|e| e.into_store_error(&format!("reading index {index_name:?} = {value:?}")))
    }

    fn index_names(&self) -> Vec<String> {
        self.state
            .read()
            .funcs
            .iter()
            .map(|f| f.name.clone())
            .collect()
    }

    fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), StoreError> {
        let added = sorted_funcs(indexers);
        let taken = |state: &State<K>| {
            added
                .iter()
                .find(|f| state.position(&f.name).is_some())
                .map(|f| StoreError::IndexExists {
                    name: f.name.clone(),
                })
        };
        let decoding = |e: CompactError| e.into_store_error("indexing the stored objects");
        for _ in 0..OPTIMISTIC_ATTEMPTS {
            // Decode and index a snapshot outside the lock...
            let (picks, writes) = {
                let state = self.state.read();
                if let Some(err) = taken(&state) {
                    return Err(err);
                }
                let picks: Vec<(SlotId, Pick<K>)> = state
                    .content
                    .occupied()
                    .map(|(id, slot)| (id, self.pick(slot)))
                    .collect();
                (picks, state.writes)
            };
            let (ids, picks): (Vec<SlotId>, Vec<Pick<K>>) = picks.into_iter().unzip();
            let objects = self.materialize(picks).map_err(decoding)?;
            let prepared: Vec<(SlotId, FreshValues)> = ids
                .into_iter()
                .zip(&objects)
                .map(|(id, obj)| (id, fresh_values(&added, obj)))
                .collect();
            drop(objects);
            // ...and file it if nothing was written since (the usual case).
            let mut state = self.state.write();
            if let Some(err) = taken(&state) {
                return Err(err);
            }
            if state.writes == writes {
                install(&mut state, prepared, added);
                return Ok(());
            }
        }
        // Written meanwhile every time: decode and index under the lock.
        let mut state = self.state.write();
        if let Some(err) = taken(&state) {
            return Err(err);
        }
        let mut prepared = Vec::with_capacity(state.content.len());
        for (id, slot) in state.content.occupied() {
            let obj = match self.cache.get(slot.key.as_str(), slot.item.stamp) {
                Some(hit) => hit,
                None => Arc::new(
                    self.decode(&slot.key, &slot.item.encoded)
                        .map_err(decoding)?,
                ),
            };
            prepared.push((id, fresh_values(&added, &obj)));
        }
        install(&mut state, prepared, added);
        Ok(())
    }
}

/// Files prepared values in new indices and registers their functions.
fn install<K>(
    state: &mut State<K>,
    prepared: Vec<(SlotId, FreshValues)>,
    added: Vec<NamedIndexFunc<K>>,
) {
    let State {
        content,
        funcs,
        indices,
        ..
    } = state;
    content.file(prepared, added.len(), indices);
    let mut all = funcs.to_vec();
    all.extend(added);
    *funcs = all.into();
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use std::sync::mpsc;
    use std::time::Duration;

    use informer_core::Store;
    use informer_testing::JsonObject;
    use parking_lot::Mutex;

    use super::*;

    /// Held by a test to keep every training thread from starting its work.
    pub(super) static TRAINING_GATE: Mutex<()> = Mutex::new(());

    fn object(i: usize) -> Arc<JsonObject> {
        let name = format!("web-{i}");
        Arc::new(JsonObject::new(Some("prod"), &name).with_label("app", "web"))
    }

    /// Asserts that the dictionary is trained and that the store, `what` included, is
    /// compressed.
    fn assert_trained_and_compressed(stats: &CompactStats, what: &str) {
        assert!(
            matches!(stats.dictionary, DictionaryState::Trained { .. }),
            "{stats:?}"
        );
        assert!(
            stats.encoded_bytes * 2 < stats.serialized_bytes,
            "{what} were compressed too: {stats:?}"
        );
    }

    /// A dictionary trained on 40 objects (4 KiB).
    fn small_codec() -> ZstdDictionary {
        ZstdDictionary::default()
            .training_objects(40)
            .dictionary_size(4 << 10)
    }

    /// A store with [`small_codec`] holding `object(0..39)`: the next write completes the
    /// samples.
    fn one_sample_short() -> Arc<CompactStore<JsonObject>> {
        let store = Arc::new(
            CompactStore::builder()
                .codec(Codec::ZstdDictionary(small_codec()))
                .build(),
        );
        for i in 0..39 {
            store.add(object(i)).unwrap();
        }
        store
    }

    #[test]
    fn the_write_that_completes_the_samples_does_not_wait_for_the_training() {
        let store = one_sample_short();
        // Training cannot finish while the gate is held: the 40th write must return anyway
        // (on a writer that trained in place it would wait for the gate; the guard below
        // turns that into a failure instead of a hang).
        let gate = TRAINING_GATE.lock();
        let (done, returned) = mpsc::channel();
        let writer = Arc::clone(&store);
        std::thread::spawn(move || {
            writer.add(object(39)).unwrap();
            writer.add(object(40)).unwrap();
            let _ = done.send(());
        });
        returned
            .recv_timeout(Duration::from_secs(30))
            .expect("the writes returned while the dictionary was being trained");
        let stats = store.stats();
        assert_eq!(stats.dictionary, DictionaryState::Training, "{stats:?}");
        assert_eq!(stats.encoded_bytes, stats.serialized_bytes, "{stats:?}");
        assert_eq!(store.get_by_key("prod/web-40").unwrap(), object(40));
        drop(gate);
        store.finish_training();
        let stats = store.stats();
        assert_trained_and_compressed(&stats, "the objects written during the training");
        for i in 0..41 {
            let key = format!("prod/web-{i}");
            assert_eq!(store.get_by_key(&key).unwrap(), object(i), "{key}");
        }
    }

    #[test]
    fn writers_wait_for_the_training_once_they_stored_as_much_again_as_the_samples() {
        const WRITES: usize = 400;
        let store = one_sample_short();
        let gate = TRAINING_GATE.lock();
        let written = Arc::new(AtomicU64::new(0));
        let (done, returned) = mpsc::channel();
        let (writer, progress) = (Arc::clone(&store), Arc::clone(&written));
        std::thread::spawn(move || {
            // The first write completes the samples and starts the training.
            for i in 39..39 + WRITES {
                writer.add(object(i)).unwrap();
                progress.fetch_add(1, Ordering::SeqCst);
            }
            let _ = done.send(());
        });
        // While the training cannot finish, the writer stops after about 40 more objects (the
        // samples' bytes again); without the limit all its writes return within milliseconds.
        assert!(
            returned.recv_timeout(Duration::from_secs(2)).is_err(),
            "all {WRITES} writes returned while the dictionary was being trained"
        );
        let stopped_at = written.load(Ordering::SeqCst);
        assert!(
            (30..60).contains(&stopped_at),
            "the writer waits after about as many objects again as the samples, not after {stopped_at}"
        );
        assert!(
            store.plain_bytes.load(Ordering::SeqCst)
                <= store.plain_limit.load(Ordering::SeqCst) + 1_000,
            "uncompressed bytes stay within the limit (one object over at most)"
        );
        // The waiting writer holds the trainer: a reader of the stats is not held up by it.
        let (reply, answered) = mpsc::channel();
        let reader = Arc::clone(&store);
        std::thread::spawn(move || {
            let _ = reply.send(reader.stats());
        });
        let stats = answered
            .recv_timeout(Duration::from_secs(5))
            .expect("stats() answered while a writer waited for the training");
        assert!(
            matches!(stats.dictionary, DictionaryState::Training),
            "{stats:?}"
        );
        drop(gate);
        returned
            .recv_timeout(Duration::from_secs(30))
            .expect("the writes went on once the training finished");
        let stats = store.stats();
        assert_trained_and_compressed(&stats, "the objects written while the writer waited");
        assert_eq!(stats.objects, 39 + WRITES, "{stats:?}");
        assert_eq!(store.get_by_key("prod/web-60").unwrap(), object(60));
    }

    #[test]
    fn listed_texts_are_packed_in_the_stores_form_and_taken_as_they_are() {
        let store: CompactStore<JsonObject> = CompactStore::builder()
            .codec(Codec::ZstdDictionary(small_codec()))
            .build();
        let text = |i: usize| serde_json::to_string(&*object(i)).unwrap();
        let key = |i: usize| ObjectKey::new(Some("prod"), &format!("web-{i}")).unwrap();
        // Before the dictionary: packed as it is (and offered as a sample: the 40th starts
        // the training).
        let early = store.pack_text(&key(0), &text(0)).unwrap();
        let form = early.packed_as::<PackedJson>().unwrap();
        assert!(!form.encoded.is_compressed());
        assert_eq!(early.as_str(), text(0));
        for i in 1..40 {
            store.pack_text(&key(i), &text(i)).unwrap();
        }
        store.finish_training();
        assert!(matches!(
            store.stats().dictionary,
            DictionaryState::Trained { .. }
        ));
        // After: compressed with the dictionary; the text is rebuilt for anyone who asks.
        let packed = store.pack_text(&key(41), &text(41)).unwrap();
        let form = packed.packed_as::<PackedJson>().unwrap();
        assert!(form.encoded.is_compressed());
        assert!(
            form.encoded.len() * 2 < text(41).len(),
            "{:?}",
            form.encoded
        );
        assert_eq!(packed.len(), text(41).len());
        assert_eq!(packed, RawObject::new(&text(41)));
        // The store decodes it and stores it as it is: no second compression.
        let decoded = store.decode_raw(&packed).unwrap();
        assert_eq!(decoded, object(41));
        let before = store.stats().encoded_bytes;
        store.add_raw(decoded, &packed).unwrap();
        assert_eq!(
            store.stats().encoded_bytes - before,
            form.encoded.len() as u64
        );
        assert_eq!(store.get_by_key("prod/web-41").unwrap(), object(41));
        // One packed before the dictionary is compressed when stored after it.
        store.add_raw(object(0), &early).unwrap();
        let stats = store.stats();
        assert!(
            stats.encoded_bytes * 2 < stats.serialized_bytes,
            "{stats:?}"
        );
        assert_eq!(store.get_by_key("prod/web-0").unwrap(), object(0));
        // Another store takes it by its text.
        let other: CompactStore<JsonObject> = CompactStore::builder()
            .codec(Codec::ZstdDictionary(small_codec()))
            .build();
        assert_eq!(other.decode_raw(&packed).unwrap(), object(41));
        other.add_raw(object(41), &packed).unwrap();
        assert_eq!(other.get_by_key("prod/web-41").unwrap(), object(41));
        // Codecs without a dictionary, or that do not keep JSON, pack nothing.
        let plain: CompactStore<JsonObject> = CompactStore::builder().codec(Codec::Json).build();
        assert!(plain.pack_text(&key(1), &text(1)).is_none());
        let message_pack: CompactStore<JsonObject> =
            CompactStore::builder().codec(Codec::MessagePack).build();
        assert!(message_pack.pack_text(&key(1), &text(1)).is_none());
    }
}
