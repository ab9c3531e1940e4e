//! A minimal known-objects store for the queue suites.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use informer_core::{Delta, DeltaType, KeyError, KnownObjects, Object, ObjectKey, key_of};
use parking_lot::Mutex;

/// The simplest [`KnownObjects`]: a sorted map from key to object, keyed with [`key_of`].
///
/// It stands in for the informer's cache in the queue suites: seed it with objects the client
/// already knows, and [`apply`](KnownObjectsMap::apply) popped deltas to it the way an informer
/// applies them to its cache. [`list_keys`](KnownObjects::list_keys) returns keys in sorted order,
/// so tombstones and `Sync` deltas queued from it come in a predictable order.
pub struct KnownObjectsMap<K> {
    objects: Mutex<BTreeMap<ObjectKey, Arc<K>>>,
}

impl<K: Object> KnownObjectsMap<K> {
    /// An empty store.
    pub fn new() -> Self {
        Self {
            objects: Mutex::new(BTreeMap::new()),
        }
    }

    /// A store holding `objects`.
    pub fn with_objects(objects: impl IntoIterator<Item = Arc<K>>) -> Result<Self, KeyError> {
        let store = Self::new();
        for obj in objects {
            store.insert(obj)?;
        }
        Ok(store)
    }

    /// Inserts or overwrites an object; returns the previous one.
    pub fn insert(&self, obj: Arc<K>) -> Result<Option<Arc<K>>, KeyError> {
        let key = key_of(obj.as_ref())?;
        Ok(self.objects.lock().insert(key, obj))
    }

    /// Removes the object under `key`.
    pub fn remove(&self, key: &str) -> Option<Arc<K>> {
        self.objects.lock().remove(key)
    }

    /// Applies popped deltas as an informer does: `Deleted` removes the key (of the object or
    /// the tombstone), every other delta inserts or overwrites the object.
    pub fn apply(&self, deltas: &[Delta<K>]) -> Result<(), KeyError> {
        let mut objects = self.objects.lock();
        for delta in deltas {
            let key = delta.object.key()?;
            if delta.kind == DeltaType::Deleted {
                objects.remove(&key);
            } else {
                objects.insert(key, Arc::clone(delta.object.object()));
            }
        }
        Ok(())
    }

    /// A snapshot of the content, in key order.
    pub fn snapshot(&self) -> Vec<(ObjectKey, Arc<K>)> {
        let objects = self.objects.lock();
        objects
            .iter()
            .map(|(k, v)| (k.clone(), Arc::clone(v)))
            .collect()
    }

    /// How many objects are held.
    pub fn len(&self) -> usize {
        self.objects.lock().len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<K: Object> Default for KnownObjectsMap<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K> fmt::Debug for KnownObjectsMap<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.objects.lock().keys()).finish()
    }
}

impl<K: Object> KnownObjects<K> for KnownObjectsMap<K> {
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.objects.lock().keys().cloned().collect()
    }

    fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.objects.lock().get(key).cloned()
    }
}
