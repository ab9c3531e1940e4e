//! The cache traits: `Store` (key → object) and `Indexer` (a store with secondary indices), plus
//! index functions.

use std::collections::HashMap;
use std::sync::Arc;

use crate::{KeyError, Object, ObjectKey, RawObject};

/// The name of the built-in namespace index.
pub const NAMESPACE_INDEX: &str = "namespace";

/// An index function: the index values of an object (zero or more).
///
/// It must be deterministic and depend only on the object: the store calls it when the object
/// is added, and again on the old and new versions when it is updated, to touch only the
/// index entries whose values changed.
pub type IndexFunc<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// Named index functions.
pub type Indexers<K> = HashMap<String, IndexFunc<K>>;

/// The built-in namespace index function: one value for every object, its namespace, and `""`
/// for cluster-scoped objects (as client-go's `MetaNamespaceIndexFunc`), so that
/// `by_index(NAMESPACE_INDEX, "")` finds the cluster-scoped objects.
pub fn namespace_index_func<K: Object>() -> IndexFunc<K> {
    Arc::new(|obj: &K| vec![obj.object_namespace().unwrap_or_default().to_owned()])
}

/// An index function over the value of one label: objects without the label are not indexed.
pub fn label_index_func<K: Object>(label_key: impl Into<String>) -> IndexFunc<K> {
    let label_key = label_key.into();
    Arc::new(move |obj: &K| {
        obj.object_labels()
            .get(&label_key)
            .cloned()
            .into_iter()
            .collect()
    })
}

/// An index function over every label, with values of the form `key=value`: `by_index` on it
/// answers "all objects carrying this label pair".
pub fn labels_index_func<K: Object>() -> IndexFunc<K> {
    Arc::new(|obj: &K| {
        obj.object_labels()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect()
    })
}

/// Indexers holding only the namespace index.
pub fn namespace_indexers<K: Object>() -> Indexers<K> {
    let mut indexers = Indexers::new();
    indexers.insert(NAMESPACE_INDEX.to_owned(), namespace_index_func());
    indexers
}

/// Why a store or indexer operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The object has no key (usually: no name).
    #[error("cannot key object")]
    Key(#[from] KeyError),
    /// No index of that name is registered.
    #[error("index {name:?} does not exist")]
    IndexNotFound {
        /// The index asked for.
        name: String,
    },
    /// `add_indexers` was given a name that is already registered.
    #[error("index {name:?} already exists")]
    IndexExists {
        /// The conflicting index name.
        name: String,
    },
    /// A failure inside a user-provided backend.
    #[error("store backend failed while {context}")]
    Backend {
        /// What was being done.
        context: String,
        /// The backend's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Read access by key: what a queue needs from the store it feeds (to find deletions during a
/// relist and to resync), and what the reflector uses to keep unchanged objects shared.
///
/// Every [`Store`] is one (it is a supertrait), so an `Arc<dyn Indexer<K>>` upcasts to
/// `Arc<dyn KnownObjects<K>>`.
///
/// # Contract
///
/// [`list_keys`](KnownObjects::list_keys) and [`get_by_key`](KnownObjects::get_by_key) are
/// required. The other methods answer questions that need less than the object; their
/// defaults ask `get_by_key`, which is right for stores holding `Arc<K>` (it is a map lookup
/// and an `Arc` clone). A store for which `get_by_key` costs more (one that keeps objects
/// encoded and decodes them on access) overrides them so that callers never build an object
/// only to learn whether it exists or which version it is. Overrides must agree with
/// `get_by_key` at every moment: `contains_key(k) == get_by_key(k).is_some()`,
/// `resource_version_of(k)` is the resourceVersion of `get_by_key(k)`, and
/// `shared_by_key(k)`, when `Some`, is an object `get_by_key(k)` could have returned.
///
/// Callers (the queues, the reflector) use `contains_key` to decide whether a deletion means
/// something, `resource_version_of` to compare a listed object with the stored one, and
/// `shared_by_key` to hand a relist the stored object instead of a second copy.
pub trait KnownObjects<K>: Send + Sync {
    /// Every key currently held.
    fn list_keys(&self) -> Vec<ObjectKey>;
    /// The object under `key`, if any.
    fn get_by_key(&self, key: &str) -> Option<Arc<K>>;
    /// Whether an object is held under `key`.
    fn contains_key(&self, key: &str) -> bool {
        self.get_by_key(key).is_some()
    }
    /// The resourceVersion of the object held under `key`: `None` when nothing is held, or
    /// when the object has none.
    fn resource_version_of(&self, key: &str) -> Option<String>
    where
        K: Object,
    {
        self.get_by_key(key)
            .and_then(|obj| obj.object_resource_version().map(str::to_owned))
    }
    /// The object under `key` if the store can hand out an `Arc` it already holds, without
    /// building one (no decode, no copy): what a relist shares instead of keeping the freshly
    /// listed copy. `None` when nothing is held, or when the object would have to be built.
    /// The default is `get_by_key`.
    fn shared_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.get_by_key(key)
    }
    /// Whether the store keeps objects encoded and uses their JSON text as received
    /// ([`Store::add_raw`]): producers keep each object's text for it only then. The default
    /// is `false`.
    fn wants_raw(&self) -> bool {
        false
    }

    /// Whether [`decode_raw`](KnownObjects::decode_raw) decodes: only then do producers hand
    /// queues list entries as text ([`Listed::Encoded`](crate::Listed::Encoded)). The default
    /// is `false`.
    fn decodes_raw(&self) -> bool {
        false
    }

    /// The text of a listed object, bound for this store as a [`Listed::Encoded`] entry, in
    /// the store's own encoded form ([`RawObject::packed`]) if the store can make it now: the
    /// entry then waits in the queue in that form (for example compressed) and the store takes
    /// it as it is ([`Store::add_raw`]). `None` (the default) leaves the text as it is. A store
    /// that packs must take what it packed wherever it takes text:
    /// [`decode_raw`](KnownObjects::decode_raw), [`Store::add_raw`] and [`Store::update_raw`]
    /// (anyone else reads the text, which [`RawObject::as_str`] rebuilds).
    ///
    /// [`Listed::Encoded`]: crate::Listed::Encoded
    fn pack_text(&self, key: &ObjectKey, text: &str) -> Option<RawObject> {
        let _ = (key, text);
        None
    }

    /// Decodes an object's JSON text as received into an object, for a queue that kept a
    /// listed entry encoded until it was popped. Stores that answer `true` to
    /// [`decodes_raw`](KnownObjects::decodes_raw) must decode every text they were given to
    /// store (the producer decoded it already); the default refuses.
    fn decode_raw(&self, raw: &RawObject) -> Result<Arc<K>, StoreError> {
        let _ = raw;
        Err(StoreError::Backend {
            context: "decoding an object's text".to_owned(),
            source: "this store does not decode objects' text".into(),
        })
    }
}

/// A thread-safe map from key to object, holding each object once as `Arc<K>`.
///
/// # Contract
///
/// Implementers guarantee that:
/// - every method is safe to call from many threads at once, and each is atomic: a reader never
///   sees a half-applied `add`, `update`, `delete` or `replace`;
/// - objects are stored as the `Arc` given (no deep copy): `get` returns a clone of that `Arc`;
/// - keys are computed with one key function (by default [`crate::key_of`]) for every method,
///   and queues feeding the store use the same one;
/// - `add` and `update` both insert or overwrite (upsert) and return the previous object;
/// - `replace` swaps the whole content atomically: readers see either the old or the new content.
///
/// Callers may assume `list`, `list_keys` and `len` are a consistent snapshot, but not that two
/// successive calls see the same snapshot.
pub trait Store<K: Object>: KnownObjects<K> {
    /// Inserts or overwrites the object; returns the previous object under its key.
    fn add(&self, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError>;
    /// Same as [`Store::add`]; kept separate to mirror the informer's event types.
    fn update(&self, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        self.add(obj)
    }
    /// [`Store::add`] with the JSON text `obj` was decoded from, exactly as received (it
    /// decodes to `obj`): a store that keeps objects encoded stores it instead of encoding
    /// `obj` again. The default ignores the text and calls `add`.
    fn add_raw(&self, obj: Arc<K>, raw: &RawObject) -> Result<Option<Arc<K>>, StoreError> {
        let _ = raw;
        self.add(obj)
    }
    /// [`Store::update`] with the JSON text `obj` was decoded from (see
    /// [`add_raw`](Store::add_raw)). The default ignores the text and calls `update`.
    fn update_raw(&self, obj: Arc<K>, raw: &RawObject) -> Result<Option<Arc<K>>, StoreError> {
        let _ = raw;
        self.update(obj)
    }
    /// [`Store::update`] (or [`update_raw`](Store::update_raw) with the text, if given) for a
    /// caller that does not want the previous object: a store that keeps objects encoded then
    /// decodes nothing to return it. The informer's processing loop writes this way when it
    /// holds the previous object already or when no handler is registered. The default calls
    /// `update_raw` or `update` and drops what they return.
    fn put(&self, obj: Arc<K>, raw: Option<&RawObject>) -> Result<(), StoreError> {
        match raw {
            Some(raw) => self.update_raw(obj, raw),
            None => self.update(obj),
        }
        .map(drop)
    }
    /// Removes the object with `obj`'s key; returns what was stored. Deleting an absent key is
    /// not an error.
    fn delete(&self, obj: &K) -> Result<Option<Arc<K>>, StoreError>;
    /// Removes the object under `key`; returns what was stored.
    fn delete_by_key(&self, key: &str) -> Option<Arc<K>>;
    /// The stored object with `obj`'s key.
    fn get(&self, obj: &K) -> Result<Option<Arc<K>>, StoreError>;
    /// Every stored object, in no particular order.
    fn list(&self) -> Vec<Arc<K>>;
    /// How many objects are stored.
    fn len(&self) -> usize;
    /// Whether the store is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Replaces the whole content with `objects` atomically. `resource_version` is the list's
    /// resourceVersion, for stores that record it.
    ///
    /// If any object has no key the call fails with [`StoreError::Key`] and changes nothing;
    /// when two objects share a key, the later one wins.
    fn replace(&self, objects: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError>;
    /// A hook called on every informer resync; plain in-memory stores do nothing.
    fn resync(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

/// A [`Store`] with named secondary indices.
///
/// # Contract
///
/// In addition to the [`Store`] contract, implementers guarantee that:
/// - after any write, every index maps each value to exactly the keys of the stored objects whose
///   index function yields that value (no stale entries, no empty value sets reported by
///   [`Indexer::list_index_func_values`]);
/// - an update touches only the index values that changed between the old and new object;
/// - [`Indexer::add_indexers`] works on a non-empty store and indexes the current content before
///   returning; it fails with [`StoreError::IndexExists`] if a name is taken (and then adds none);
/// - lookups on an unknown index name fail with [`StoreError::IndexNotFound`].
pub trait Indexer<K: Object>: Store<K> {
    /// Objects sharing at least one value of index `index_name` with `obj`.
    fn index(&self, index_name: &str, obj: &K) -> Result<Vec<Arc<K>>, StoreError>;
    /// Keys of the objects whose index `index_name` contains `value`.
    fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<ObjectKey>, StoreError>;
    /// Every value currently present in index `index_name`.
    fn list_index_func_values(&self, index_name: &str) -> Result<Vec<String>, StoreError>;
    /// Objects whose index `index_name` contains `value`.
    fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<K>>, StoreError>;
    /// The names of the registered indices.
    fn index_names(&self) -> Vec<String>;
    /// Registers more indices and builds them over the current content.
    fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), StoreError>;
}
