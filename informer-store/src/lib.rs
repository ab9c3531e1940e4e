//! The [`Indexer`](informer_core::Indexer)s of informer-rs: thread-safe maps from key to object
//! with named secondary indices.
//!
//! - [`IndexedStore`], the default, holds every object once as `Arc<K>`: lookups hand out the
//!   very `Arc` that was stored, in about 100 ns.
//! - [`CompactStore`] (feature `compact`) keeps every object encoded, by default as JSON
//!   compressed one object at a time with a zstd dictionary trained on the first objects, and
//!   decodes it on access: memory follows the size of the objects on the wire rather than
//!   their decoded size (see [its section](#compactstore)).
//!
//! Both implement the whole [`Store`](informer_core::Store) and
//! [`Indexer`](informer_core::Indexer) API and pass the conformance suite of
//! `informer-testing` (`tests/it/conformance.rs`, `tests/it/compact_conformance.rs`).
//!
//! # Features
//!
//! - `compact` (off by default): [`CompactStore`] and its types. Pulls in the zstd C library
//!   (built by the `zstd` crate with `cc`), `serde_json` and `thiserror`. It adds types and
//!   changes nothing else.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//!
//! use informer_core::{label_index_func, Indexer, KnownObjects, Store, NAMESPACE_INDEX};
//! use informer_store::IndexedStore;
//! use informer_testing::JsonObject;
//!
//! # fn main() -> Result<(), informer_core::StoreError> {
//! // The namespace index is built in; add a label index.
//! let store = IndexedStore::<JsonObject>::new();
//! store.add_indexers([("app".to_owned(), label_index_func("app"))].into())?;
//!
//! let web = Arc::new(JsonObject::new(Some("prod"), "web-0").with_label("app", "web"));
//! store.add(web.clone())?;
//! store.add(Arc::new(JsonObject::new(Some("dev"), "db-0").with_label("app", "db")))?;
//!
//! // Lookups hand out the very Arc that was stored: no copy.
//! let found = store.get_by_key("prod/web-0").expect("stored");
//! assert!(Arc::ptr_eq(&found, &web));
//! assert_eq!(store.by_index(NAMESPACE_INDEX, "dev")?.len(), 1);
//! assert_eq!(store.index_keys("app", "web")?[0].as_str(), "prod/web-0");
//!
//! // Relabelling moves the object between index values; nothing else is touched.
//! store.update(Arc::new(JsonObject::new(Some("prod"), "web-0").with_label("app", "db")))?;
//! assert!(store.by_index("app", "web")?.is_empty());
//! assert_eq!(store.by_index("app", "db")?.len(), 2);
//!
//! // A relist swaps the whole content atomically.
//! store.replace(vec![Arc::new(JsonObject::new(Some("prod"), "api-0"))], "42")?;
//! assert_eq!(store.list_keys().len(), 1);
//! assert_eq!(store.list_index_func_values(NAMESPACE_INDEX)?, vec!["prod".to_owned()]);
//! # Ok(())
//! # }
//! ```
//!
//! # Invariants
//!
//! After every public method returns, and as seen by every reader:
//!
//! 1. **One key function.** Every object is filed under the key its store's key function
//!    ([`informer_core::key_of`] unless set with [`IndexedStoreBuilder::key_func`]) gives; keys
//!    are unique.
//! 2. **Exact indices.** For every registered index and value `v`, the index holds exactly the
//!    keys of the stored objects whose index function yielded `v` when they were stored. No key
//!    is filed under a value its object does not yield, and no value has an empty key set, so
//!    `list_index_func_values` reports only values that `by_index` finds objects for.
//! 3. **Recorded values.** Each stored object carries the values it is filed under, per index.
//!    Removing or updating an object unfiles exactly those values, so even an index function that
//!    is not deterministic cannot leave a stale entry behind (the trait still asks for
//!    deterministic functions: otherwise `index(name, obj)` answers for the values `obj` yields
//!    now). The recorded values share their allocation with the index: a namespace string is
//!    stored once, not once per object.
//! 4. **Minimal index maintenance.** An update compares the old object's recorded values with the
//!    new object's values and touches only the (value, key) entries that differ: none at all when
//!    they are equal, which is the common case (a status change moves no label or namespace).
//! 5. **No copies.** Objects are stored as the `Arc` given and handed out as clones of it.
//! 6. **Atomic writes, short write locks.** A reader sees every write entirely or not at all.
//!    Index functions and key functions (user code) run before the write lock is taken:
//!    `replace` builds the new map and all its indices outside the lock and swaps them in, then
//!    frees the old content after releasing it; `add_indexers` indexes a snapshot of the content
//!    outside the lock and installs it if no write happened meanwhile (otherwise it indexes under
//!    the lock). Readers share a read lock and never block each other.
//! 7. **Panic safety.** Every index function runs before the store changes, so one that panics
//!    (user code) leaves the store exactly as it was, and usable (the lock does not poison).
//! 8. **Append-only indices.** Indices can be added ([`Indexer::add_indexers`], also over
//!    existing data) but not removed or redefined, so the function behind an index name never
//!    changes. `add_indexers` with a taken name fails with
//!    [`StoreError::IndexExists`](informer_core::StoreError::IndexExists) and adds none.
//!
//! # Layout
//!
//! Objects live in a slot table; a map from key to slot finds them by key, and the indices file
//! slot numbers, not keys, so `by_index` goes from a value straight to the objects without
//! hashing their keys again. A deleted object's slot is reused by the next insertion; the table
//! is rebuilt densely by `replace`.
//!
//! `replace` with an object that has no key fails with
//! [`StoreError::Key`](informer_core::StoreError::Key) and leaves the store unchanged; if
//! `replace` is given two objects with the same key, the later one wins.
//!
//! [`Indexer::add_indexers`]: informer_core::Indexer::add_indexers
//!
//! # CompactStore
//!
//! A decoded k8s-openapi `Pod` costs about 44 KB of heap for about 6.8 KB of JSON; a cache of
//! 100k pods held as `Arc<Pod>` takes about 4.7 GiB. `CompactStore` keeps, per object, its key,
//! its resourceVersion, the index values it is filed under (shared with the indices, as in
//! `IndexedStore`) and its encoding, and decodes the object when it is asked for. Handlers and
//! streams are unaffected: the informer hands them the `Arc<K>` it decoded from the wire.
//!
//! What each object costs, measured on realistic pods (`benches/encoding.rs`,
//! `benches/compact.rs`): about 290 bytes of compressed JSON where the JSON is 6.7 KB, and under
//! 600 bytes per pod with its key, slot, index entries and its share of the dictionary, against
//! about 48 KB for the decoded pod. The seed pods resemble each other more than a real cluster's
//! do, so expect a lower ratio on real objects. The price is time: every lookup that misses the
//! cache decodes into `K` (decompression adds about a microsecond). For a k8s-openapi `Pod`
//! with `managedFields` that is about 25 µs of CPU in a fresh process, of which about 18 µs is
//! the floor of building any `Pod` (its clone and drop take as long): the object's hundreds of
//! allocations, not the parsing, so no stored form decodes much faster (MessagePack does not:
//! [`Codec`]). In a process whose heap has churned through many objects the same decode takes
//! two to three times as long (54–77 µs measured after filling a store with 100k pods). Every
//! write encodes the object (a `serde_json` serialization and a compression), unless it is
//! handed the JSON it was decoded from ([`CompactStore::add_encoded`]), which leaves the
//! compression, about 10 µs. Scans that decode many objects spread them over a few threads
//! ([`CompactStoreBuilder::decode_threads`]).
//!
//! An informer hands a compact store with a JSON codec its lists as text, and the store packs
//! each listed text as it arrives ([`KnownObjects::pack_text`](informer_core::KnownObjects::pack_text):
//! compressed with the dictionary once it is trained, the first texts being its training
//! samples), so a list of 100k pods waits in the informer's queue at about the size the store
//! will keep (about 29 MB instead of 670 MB of text), and the store takes each packed text as
//! it is when the queue hands it over. Measured at 100k realistic pods (`informer-bench`,
//! same-hour pairs): RSS after the first sync 186-193 MiB against 802-806 MiB when the list
//! waited as text, and the sync itself 6.59 s against 7.53 s (127-145 MiB since written
//! objects no longer fill the cache of decoded objects: invariant 2).
//!
//! ```
//! # #[cfg(feature = "compact")] {
//! use std::sync::Arc;
//!
//! use informer_core::{Indexer, KnownObjects, Object, Store, NAMESPACE_INDEX};
//! use informer_store::{CompactStore, DictionaryState};
//! use informer_testing::JsonObject;
//!
//! # fn main() -> Result<(), informer_core::StoreError> {
//! // Namespace index, JSON with a zstd dictionary, cache 1,024.
//! let store = CompactStore::<JsonObject>::new();
//! for i in 0..1_000 {
//!     let pod = JsonObject::new(Some("prod"), &format!("web-{i}"))
//!         .with_label("app", "web")
//!         .with_field("spec", serde_json::json!({"image": "registry.example.com/web:1.4"}));
//!     store.add(Arc::new(pod))?;
//! }
//! // The 512th object started training a dictionary (on a thread of its own); once it is
//! // applied every object is compressed. Wait for it here:
//! store.finish_training();
//! let stats = store.stats();
//! assert!(matches!(stats.dictionary, DictionaryState::Trained { .. }));
//! assert!(stats.encoded_bytes * 4 < stats.serialized_bytes);
//!
//! // The object just written waits on probation (it is cached only once its key is read):
//! // the same Arc comes back.
//! let last = Arc::new(JsonObject::new(Some("prod"), "web-1000"));
//! store.add(last.clone())?;
//! assert!(Arc::ptr_eq(&store.get_by_key("prod/web-1000").expect("stored"), &last));
//!
//! // Others are decoded on access: equal to what was stored.
//! let web_7 = store.get_by_key("prod/web-7").expect("stored");
//! assert_eq!(web_7.object_labels()["app"], "web");
//! assert_eq!(store.by_index(NAMESPACE_INDEX, "prod")?.len(), 1_001);
//!
//! // Without the previous object, a write decodes nothing.
//! assert!(store.remove("prod/web-7"));
//! # Ok(())
//! # }
//! # main().unwrap();
//! # }
//! ```
//!
//! ## Invariants
//!
//! Invariants 1 to 4, 6 and 8 of `IndexedStore` hold as written above (readers share the read
//! lock; the only other lock a reader takes is one cache shard's mutex, for a map lookup); in
//! addition:
//!
//! 1. **Equal, and identical while cached.** Every lookup returns an object equal to the one
//!    stored (its encoding decoded). The object is the very `Arc` that was stored while it is in the
//!    cache of decoded objects or waits beside it (a write leaves the object written on
//!    probation unless its key was read lately; while the cache has room, `get_by_key`
//!    caches what it decodes; see 2); otherwise it is a
//!    freshly decoded `Arc`. This is where `CompactStore` differs
//!    from the `Store` contract's "`get` returns a clone of that `Arc`": the conformance suites
//!    pass with the default cache because their stores hold fewer keys than one probation
//!    queue of it, and
//!    `tests/it/compact_conformance.rs` shows that without a cache exactly the identity checks fail.
//! 2. **The cache never changes what is returned.** Each write gives the entry a new stamp,
//!    under the write lock, in the order writes are applied; the cache answers only for the
//!    stamp the store holds now, and writers replace or drop the key's cached object under the
//!    same lock. A reader that decoded an older version cannot displace a newer one. Its size
//!    is a setting ([`CompactStoreBuilder::cache_capacity`], default
//!    [`DEFAULT_CACHE_CAPACITY`], 0 disables it); eviction is CLOCK over 16 shards at most.
//!    Scans (`list`, `by_index`, `index`, `add_indexers`) use cached objects but do not fill
//!    the cache, so one listing does not evict the hot keys. Nor does a lookup of a cold key,
//!    nor a write of a key nobody read lately: an object written (by `replace` too), and once
//!    the cache is full an object read, is cached only if its key is cached already or missed
//!    a read within the recent past (a doorkeeper of recently missed keys per shard);
//!    otherwise it waits, a read's object in the shard's one read slot and a written one in
//!    its probation queue (a quarter of the shard's capacity; neither counted in it; the
//!    oldest is pushed out), from which a read of the same version is served. An informer's
//!    update reads the old object, then writes the new one, so updates of any key are cached;
//!    adds and the items of a first list wait on probation and are freed at most a few
//!    hundred writes later, still warm. Freeing objects decoded long ago is what made the
//!    alternative slow: measured at 100k realistic pods (`informer-bench`, same-hour pairs),
//!    a cold `get` took 72-82 µs at the median (p99 175-222 µs) when it evicted one, 27-30 µs
//!    (p99 66-71 µs) when it did not; a compact informer's cold sync took 8.2-9.7 s when it
//!    cached every listed pod (evicting one cached a thousand pods before), 6.3-7.6 s when
//!    they waited on probation. Writes alone never fill the cache, even while it has room: a
//!    compact informer's RSS after its first sync was 105-108 MiB at 10k pods (185-197 MiB at
//!    100k) when the first 1,024 listed pods stayed cached, 51-54 MiB (127-145 MiB) when they
//!    waited on probation like the rest, with the same sync time and cold `get`s. A scan with
//!    at least 64 objects to decode per thread splits them over scoped threads
//!    ([`CompactStoreBuilder::decode_threads`]); it returns the same objects in the same order.
//! 3. **Encoding and decoding outside the lock.** `Serialize`, compression, the round-trip
//!    check and index functions run before the write lock is taken. Reads copy the entry's
//!    handle (a reference-counted byte slice) under the read lock and decompress and decode
//!    after releasing it. A write that returns the previous object (`add`, `update`, `delete`)
//!    decodes it (or finds it in the cache) before taking the write lock and goes ahead only if
//!    it is still the stored version; after four lost races it decodes under the lock.
//! 4. **At most one decode per informer event.** The processing loop reads the old object and
//!    then writes the new one: the read decodes and caches it or leaves it on probation (or
//!    finds it there, which it is when the key was written or read recently), and the write
//!    takes it from there.
//!    [`CompactStore::insert`] and [`CompactStore::remove`] never decode.
//! 5. **Objects that do not survive their encoding are refused.** A sample of writes (the first
//!    64, then one in 1,024: [`RoundTripCheck`]) decodes the bytes about to be stored (JSON or
//!    MessagePack) and checks that the result encodes to the object's JSON; a type whose
//!    `Serialize` and `Deserialize` disagree is refused with [`CompactError::NotRoundTripping`]
//!    and nothing is stored.
//! 6. **A stored object that does not decode is a bug, and it is loud.** Methods that return a
//!    `Result` report it as [`StoreError::Backend`](informer_core::StoreError::Backend) with
//!    [`CompactError::Decode`] naming the key; `get_by_key`, `list` and `delete_by_key`, which
//!    cannot, panic with the key and the cause (a panic in the informer's processing loop skips
//!    that delta and logs it). None answers "absent" for an object it holds.
//!    [`CompactStore::try_get_by_key`] reports instead of panicking.
//! 7. **One dictionary per store, trained once.** Until it exists objects are stored
//!    uncompressed and their serialized bytes are kept as training samples (at most 512
//!    objects or 8 MiB); the write that completes the samples starts training the dictionary
//!    on a thread of its own (0.1-0.2 s for 512 realistic pods) and returns without waiting,
//!    and so do later writes until they have stored as many bytes again as the samples
//!    uncompressed; past that a write waits for the training (a bound on the uncompressed
//!    objects, whose memory the process would keep after they are compressed). The first write
//!    (or [`CompactStore::stats`]) after the training has finished applies the dictionary and
//!    compresses the objects stored uncompressed so far;
//!    [`CompactStore::finish_training`] waits for it. If training fails the store keeps them
//!    uncompressed. (An object encoded by a concurrent writer while the dictionary is applied
//!    may stay uncompressed until it is next written: memory, never content.)
//!
//! `list` decodes every object at once: on a large store it costs the decoded size of the
//! whole store, for the lifetime of the returned `Vec`. Prefer `by_index`, or `list_keys` and
//! `get_by_key`.

/// The builder methods both stores share, for a builder with fields `key_func: KeyFunc<K>` and
/// `indexers: Indexers<K>` (the expanding module imports `KeyFunc`, `IndexFunc`, `Indexers`
/// and `key_of`).
macro_rules! key_and_index_setters {
    () => {
        /// Uses `key_func` instead of [`key_of`]. Queues feeding this store must use the same one.
        pub fn key_func(mut self, key_func: KeyFunc<K>) -> Self {
            self.key_func = key_func;
            self
        }

        /// Adds one index (replacing an earlier one of the same name given to this builder).
        pub fn indexer(mut self, name: impl Into<String>, func: IndexFunc<K>) -> Self {
            self.indexers.insert(name.into(), func);
            self
        }

        /// Adds several indices (replacing earlier ones of the same names given to this builder).
        pub fn indexers(mut self, indexers: Indexers<K>) -> Self {
            self.indexers.extend(indexers);
            self
        }
    };
}

#[cfg(feature = "compact")]
mod compact;
mod index;
mod indexed;
mod slots;

#[cfg(feature = "compact")]
pub use compact::{
    Codec, CompactError, CompactStats, CompactStore, CompactStoreBuilder, DEFAULT_CACHE_CAPACITY,
    DecodeError, DictionaryState, RoundTripCheck, ZstdDictionary,
};
pub use indexed::{IndexedStore, IndexedStoreBuilder};
