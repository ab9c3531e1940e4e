//! The default [`Indexer`](informer_core::Indexer) of informer-rs: a thread-safe map from key to
//! object with named secondary indices, holding every object once as `Arc<K>`.
//!
//! [`IndexedStore`] implements the whole [`Store`](informer_core::Store) and
//! [`Indexer`](informer_core::Indexer) API and passes the conformance suite of
//! `informer-testing` (`tests/conformance.rs`).
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
