//! The read-only view of an informer's cache: [`Lister`] (and its namespace view,
//! [`NamespacedLister`]). Only the informer's processing loop writes the cache; a lister has
//! no method that could, and nothing hands out the indexer behind it.

use std::fmt;
use std::sync::Arc;

use informer_core::selector::LabelSelector;
use informer_core::{Indexer, NAMESPACE_INDEX, Object, ObjectKey, StoreError};

/// Queries over an informer's cache, the way controllers ask them: by label selector, by
/// namespace and name, by index. Results are the cached `Arc`s.
///
/// # Keys
///
/// [`get`](Self::get) and [`NamespacedLister::get`] look the object up under its default key
/// (`namespace/name`, [`informer_core::key_of`]) in O(1), as client-go's listers do, and answer
/// an object only if it has that namespace and name. With a custom key function (for example
/// keys by UID) objects are not stored under that key, so `get` finds nothing: use
/// [`find`](Self::find), which looks by namespace and name whatever the keys (through the
/// namespace index, or a scan without one), or [`get_by_key`](Self::get_by_key) with your own key.
/// The namespace views ([`namespaced`](Self::namespaced)`.list`) never depend on keys.
///
/// ```
/// use std::sync::Arc;
/// use informer::{LabelSelector, Lister, Store};
/// use informer_store::IndexedStore;
/// use informer_testing::JsonObject;
///
/// let store = IndexedStore::<JsonObject>::new();
/// store.add(Arc::new(JsonObject::new(Some("prod"), "web-0").with_label("app", "web"))).unwrap();
/// store.add(Arc::new(JsonObject::new(Some("dev"), "web-0").with_label("app", "web"))).unwrap();
/// store.add(Arc::new(JsonObject::new(Some("prod"), "db-0").with_label("app", "db"))).unwrap();
///
/// let lister = Lister::new(store); // the lister takes the store: it is read-only now
/// let web = LabelSelector::parse("app=web").unwrap();
/// assert_eq!(lister.list(&web).len(), 2);
/// assert_eq!(lister.namespaced("prod").list(&web).len(), 1);
/// assert!(lister.get(Some("dev"), "web-0").is_some());
/// assert!(lister.namespaced("dev").get("db-0").is_none());
/// ```
///
/// # Read-only by type
///
/// A lister has no method that writes, and nothing hands out the indexer behind it: the
/// informer's processing loop is the only writer of its cache. (ARCHITECTURE.md's "one writer
/// per cache" invariant; these examples are its check.)
///
/// ```compile_fail
/// use std::sync::Arc;
/// use informer::{Lister, Store};
/// use informer_store::IndexedStore;
/// use informer_testing::JsonObject;
///
/// let lister = Lister::new(IndexedStore::<JsonObject>::new());
/// lister.add(Arc::new(JsonObject::new(Some("prod"), "web-0"))); // no such method
/// ```
///
/// ```compile_fail
/// use std::sync::Arc;
/// use informer::Lister;
/// use informer_store::IndexedStore;
/// use informer_testing::JsonObject;
///
/// let store = IndexedStore::<JsonObject>::new();
/// let lister = Lister::new(store);
/// drop(store); // the lister took the store: no handle is left to write through
/// ```
pub struct Lister<K> {
    indexer: Arc<dyn Indexer<K>>,
}

impl<K> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Self {
            indexer: Arc::clone(&self.indexer),
        }
    }
}

impl<K: Object> Lister<K> {
    /// A lister over `indexer`, which it takes: nobody else can write it any more. (An
    /// informer makes its own; this is for caches you fill yourself, then only read.)
    pub fn new(indexer: impl Indexer<K> + 'static) -> Self {
        Self {
            indexer: Arc::new(indexer),
        }
    }

    /// A lister over the informer's indexer (the informer keeps the only writer).
    pub(crate) fn over(indexer: Arc<dyn Indexer<K>>) -> Self {
        Self { indexer }
    }

    /// Every object whose labels match `selector` (all of them for an empty selector).
    pub fn list(&self, selector: &LabelSelector) -> Vec<Arc<K>> {
        let mut all = self.indexer.list();
        if !selector.is_empty() {
            all.retain(|o| selector.matches_object(o.as_ref()));
        }
        all
    }

    /// Every cached object, in no particular order.
    pub fn list_all(&self) -> Vec<Arc<K>> {
        self.indexer.list()
    }

    /// The object under `key` as the cache's key function made it (`namespace/name`, or
    /// `name` when cluster-scoped, by default).
    pub fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.indexer.get_by_key(key)
    }

    /// Every key.
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        self.indexer.list_keys()
    }

    /// How many objects are cached.
    pub fn len(&self) -> usize {
        self.indexer.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.indexer.is_empty()
    }

    /// The object `name` in `namespace` (`None` or `""` for cluster-scoped objects), looked up
    /// under its default key `namespace/name` (see [Keys](Self#keys)): O(1), and never an
    /// object with another namespace or name.
    pub fn get(&self, namespace: Option<&str>, name: &str) -> Option<Arc<K>> {
        get_by_default_key(self, namespace, name)
    }

    /// The object `name` in `namespace` (`None` or `""` for cluster-scoped objects), whatever
    /// key function the cache uses: among the namespace's objects (the namespace index, or a
    /// scan of every object without one), the one with that name. Costs O(objects in the
    /// namespace); prefer [`get`](Self::get) with the default keys.
    pub fn find(&self, namespace: Option<&str>, name: &str) -> Option<Arc<K>> {
        if let Some(found) = self.get(namespace, name) {
            return Some(found);
        }
        let namespace = namespace.unwrap_or_default();
        let candidates = match self.indexer.index_keys(NAMESPACE_INDEX, namespace) {
            Ok(keys) => keys
                .iter()
                .filter_map(|key| self.indexer.get_by_key(key.as_str()))
                .collect(),
            Err(_) => self.indexer.list(),
        };
        candidates
            .into_iter()
            .find(|o| is_named(o.as_ref(), Some(namespace), name))
    }

    /// A view of one namespace. The empty namespace (client-go's `NamespaceAll`) views every
    /// object, as client-go's namespace listers do.
    pub fn namespaced(&self, namespace: impl Into<String>) -> NamespacedLister<K> {
        NamespacedLister {
            lister: self.clone(),
            namespace: namespace.into(),
        }
    }

    /// Objects whose index `index_name` contains `value`.
    pub fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<K>>, StoreError> {
        self.indexer.by_index(index_name, value)
    }

    /// Keys of the objects whose index `index_name` contains `value`.
    pub fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<ObjectKey>, StoreError> {
        self.indexer.index_keys(index_name, value)
    }

    /// Every value present in index `index_name`.
    pub fn list_index_func_values(&self, index_name: &str) -> Result<Vec<String>, StoreError> {
        self.indexer.list_index_func_values(index_name)
    }

    /// Objects sharing at least one value of index `index_name` with `obj`.
    pub fn index(&self, index_name: &str, obj: &K) -> Result<Vec<Arc<K>>, StoreError> {
        self.indexer.index(index_name, obj)
    }

    /// The names of the indices.
    pub fn index_names(&self) -> Vec<String> {
        self.indexer.index_names()
    }
}

impl<K> fmt::Debug for Lister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lister").finish_non_exhaustive()
    }
}

/// A [`Lister`] limited to one namespace (or, for the empty namespace, client-go's
/// `NamespaceAll`, not limited).
pub struct NamespacedLister<K> {
    lister: Lister<K>,
    namespace: String,
}

impl<K> Clone for NamespacedLister<K> {
    fn clone(&self) -> Self {
        Self {
            lister: self.lister.clone(),
            namespace: self.namespace.clone(),
        }
    }
}

impl<K: Object> NamespacedLister<K> {
    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The namespace's objects whose labels match `selector`; for the empty namespace
    /// (`NamespaceAll`), every object whose labels match. Uses the namespace index when the
    /// cache has one, else scans.
    pub fn list(&self, selector: &LabelSelector) -> Vec<Arc<K>> {
        if self.namespace.is_empty() {
            return self.lister.list(selector);
        }
        let mut found = match self.lister.by_index(NAMESPACE_INDEX, &self.namespace) {
            Ok(found) => found,
            Err(_) => {
                let mut all = self.lister.list_all();
                all.retain(|o| o.object_namespace() == Some(self.namespace.as_str()));
                all
            }
        };
        if !selector.is_empty() {
            found.retain(|o| selector.matches_object(o.as_ref()));
        }
        found
    }

    /// The object `name` in this namespace (for the empty namespace: the cluster-scoped object
    /// `name`), looked up under its default key (see [Keys](Lister#keys)).
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        get_by_default_key(&self.lister, Some(&self.namespace), name)
    }
}

/// The object stored under the default key of `namespace`/`name`, if it has that namespace and
/// name (with a custom key function another object could sit under that string).
fn get_by_default_key<K: Object>(
    lister: &Lister<K>,
    namespace: Option<&str>,
    name: &str,
) -> Option<Arc<K>> {
    ObjectKey::with_str(namespace, name, |key| lister.get_by_key(key))
        .ok()
        .flatten()
        .filter(|o| is_named(o.as_ref(), namespace, name))
}

/// Whether `obj` is `name` in `namespace` (`None` and `""` both mean cluster-scoped).
fn is_named<K: Object>(obj: &K, namespace: Option<&str>, name: &str) -> bool {
    obj.object_name() == Some(name)
        && obj.object_namespace().unwrap_or_default() == namespace.unwrap_or_default()
}

impl<K> fmt::Debug for NamespacedLister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespacedLister")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}
