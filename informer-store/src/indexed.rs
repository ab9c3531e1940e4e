//! `IndexedStore`: the default `Indexer`.

use std::fmt;
use std::mem;
use std::sync::Arc;

use informer_core::{
    IndexFunc, Indexer, Indexers, KeyFunc, KnownObjects, Object, ObjectKey, Store, StoreError,
    key_of, namespace_indexers,
};
use parking_lot::RwLock;

use crate::index::{Index, SlotId, normalize};
use crate::slots::{
    Content, FreshValues, Funcs, NamedIndexFunc, Slot, file_new, fresh_values, refile,
    sorted_funcs, unfile,
};

/// A thread-safe, indexed map from key to object: the default [`Indexer`].
///
/// See the [crate documentation](crate) for the invariants it keeps and how it keeps write locks
/// short.
pub struct IndexedStore<K> {
    key_func: KeyFunc<K>,
    state: RwLock<State<K>>,
}

/// Builds an [`IndexedStore`] with a custom key function or a set of indices.
///
/// Starts with **no** index and [`key_of`] as key function; [`IndexedStore::new`] is the
/// shortcut for "namespace index, default keys".
///
/// ```
/// use informer_core::{label_index_func, namespace_index_func, NAMESPACE_INDEX};
/// use informer_store::IndexedStore;
/// # use informer_testing::JsonObject;
///
/// let store: IndexedStore<JsonObject> = IndexedStore::builder()
///     .indexer(NAMESPACE_INDEX, namespace_index_func())
///     .indexer("app", label_index_func("app"))
///     .build();
/// # use informer_core::Indexer;
/// # assert_eq!(store.index_names().len(), 2);
/// ```
pub struct IndexedStoreBuilder<K> {
    key_func: KeyFunc<K>,
    indexers: Indexers<K>,
}

/// Everything behind the lock.
struct State<K> {
    content: Content<Arc<K>>,
    /// Append-only (indices are never removed), so its length tells work prepared outside the
    /// lock which index functions it has not seen yet.
    funcs: Funcs<K>,
    /// One index per entry of `funcs`, same order.
    indices: Vec<Index>,
    /// Counts mutations of `content`, so `add_indexers` can tell whether the snapshot it indexed
    /// outside the lock is still current.
    writes: u64,
}

/// Files every object in new indices for `funcs`: appends one index per function to `indices`
/// and the matching value slot to every object. Runs user code: callers call it before they
/// change anything else, so a panicking index function leaves the store as it was.
fn index_with<K>(
    content: &mut Content<Arc<K>>,
    funcs: &[NamedIndexFunc<K>],
    indices: &mut Vec<Index>,
) {
    let prepared: Vec<(SlotId, FreshValues)> = content
        .occupied()
        .map(|(id, slot)| (id, fresh_values(funcs, &slot.item)))
        .collect();
    content.file(prepared, funcs.len(), indices);
}

impl<K: Object> IndexedStore<K> {
    /// An empty store with the built-in namespace index and the default key function.
    pub fn new() -> Self {
        Self::with_indexers(namespace_indexers())
    }

    /// An empty store with exactly these indices and the default key function.
    pub fn with_indexers(indexers: Indexers<K>) -> Self {
        Self::builder().indexers(indexers).build()
    }

    /// A builder starting with no index and the default key function.
    pub fn builder() -> IndexedStoreBuilder<K> {
        IndexedStoreBuilder {
            key_func: Arc::new(|obj: &K| key_of(obj)),
            indexers: Indexers::new(),
        }
    }

    /// The key this store files `obj` under.
    pub fn key_of(&self, obj: &K) -> Result<ObjectKey, StoreError> {
        Ok((self.key_func)(obj)?)
    }

    /// Whether an object is stored under `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        self.state.read().content.positions.contains_key(key)
    }

    /// The current index functions (cheap: one reference-count increment).
    fn funcs(&self) -> Arc<[NamedIndexFunc<K>]> {
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

    /// Looks up index `name` under the read lock and runs `f` on it.
    fn with_index<T>(
        &self,
        name: &str,
        f: impl FnOnce(&Content<Arc<K>>, &Index) -> T,
    ) -> Result<T, StoreError> {
        let state = self.state.read();
        let position = state.position(name).ok_or_else(|| not_found(name))?;
        Ok(f(&state.content, &state.indices[position]))
    }

    /// Inserts or overwrites; returns the previous object.
    fn upsert(&self, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        let key = self.key_of(&obj)?;
        // Index functions are user code: run them before taking the write lock.
        let funcs = self.funcs();
        let mut fresh = fresh_values(&funcs, &obj);
        let mut state = self.state.write();
        // Indices registered since the snapshot (rare): compute their values now, still before
        // changing anything.
        for f in &state.funcs[funcs.len()..] {
            fresh.push(normalize((f.func)(&obj)));
        }
        state.writes += 1;
        let State {
            content, indices, ..
        } = &mut *state;
        let existing = content.positions.get(key.as_str()).copied();
        if let Some(id) = existing
            && let Some(Some(slot)) = content.slots.get_mut(id)
        {
            let recorded = mem::take(&mut slot.values);
            slot.values = refile(indices, id, recorded, fresh);
            return Ok(Some(mem::replace(&mut slot.item, obj)));
        }
        let id = content.vacant();
        let values = file_new(indices, id, fresh);
        content.occupy(
            id,
            Slot {
                key,
                item: obj,
                values,
            },
        );
        Ok(None)
    }

    /// Builds the content and indices of `objects` for `funcs`, without touching the store.
    fn build(
        &self,
        funcs: &[NamedIndexFunc<K>],
        objects: Vec<Arc<K>>,
    ) -> Result<(Content<Arc<K>>, Vec<Index>), StoreError> {
        let mut content = Content::with_capacity(objects.len());
        let mut indices: Vec<Index> = funcs.iter().map(|_| Index::default()).collect();
        for obj in objects {
            let key = self.key_of(&obj)?;
            let fresh = fresh_values(funcs, &obj);
            content.build_insert(&mut indices, key, obj, fresh);
        }
        Ok((content, indices))
    }
}

impl<K> State<K> {
    fn position(&self, name: &str) -> Option<usize> {
        self.funcs.iter().position(|f| f.name == name)
    }
}

/// The objects in `ids` (every slot an index files is occupied, by invariant).
fn objects<'a, K>(
    content: &Content<Arc<K>>,
    ids: impl IntoIterator<Item = &'a SlotId>,
) -> Vec<Arc<K>> {
    ids.into_iter()
        .filter_map(|&id| content.slot(id).map(|s| s.item.clone()))
        .collect()
}

fn not_found(name: &str) -> StoreError {
    StoreError::IndexNotFound {
        name: name.to_owned(),
    }
}

impl<K> IndexedStoreBuilder<K> {
    key_and_index_setters!();

    /// The empty store.
    pub fn build(self) -> IndexedStore<K> {
        let funcs = sorted_funcs(self.indexers);
        let indices = funcs.iter().map(|_| Index::default()).collect();
        IndexedStore {
            key_func: self.key_func,
            state: RwLock::new(State {
                content: Content::with_capacity(0),
                funcs: funcs.into(),
                indices,
                writes: 0,
            }),
        }
    }
}

impl<K: Object> Default for IndexedStore<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K> fmt::Debug for IndexedStore<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.read();
        f.debug_struct("IndexedStore")
            .field("len", &state.content.len())
            .field(
                "indices",
                &state.funcs.iter().map(|f| &f.name).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl<K> fmt::Debug for IndexedStoreBuilder<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<_> = self.indexers.keys().collect();
        names.sort_unstable();
        f.debug_struct("IndexedStoreBuilder")
            .field("indices", &names)
            .finish_non_exhaustive()
    }
}

impl<K: Object> KnownObjects<K> for IndexedStore<K> {
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.state
            .read()
            .content
            .positions
            .keys()
            .cloned()
            .collect()
    }

    fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.state
            .read()
            .content
            .by_key(key)
            .map(|s| s.item.clone())
    }

    fn contains_key(&self, key: &str) -> bool {
        IndexedStore::contains_key(self, key)
    }

    fn resource_version_of(&self, key: &str) -> Option<String> {
        let state = self.state.read();
        let slot = state.content.by_key(key)?;
        slot.item.object_resource_version().map(str::to_owned)
    }
}

impl<K: Object> Store<K> for IndexedStore<K> {
    fn add(&self, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        self.upsert(obj)
    }

    fn update(&self, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        self.upsert(obj)
    }

    fn delete(&self, obj: &K) -> Result<Option<Arc<K>>, StoreError> {
        let key = self.key_of(obj)?;
        Ok(self.delete_by_key(key.as_str()))
    }

    fn delete_by_key(&self, key: &str) -> Option<Arc<K>> {
        let mut state = self.state.write();
        let State {
            content,
            indices,
            writes,
            ..
        } = &mut *state;
        let (id, slot) = content.vacate(key)?;
        *writes += 1;
        unfile(indices, id, &slot.values);
        Some(slot.item)
    }

    fn get(&self, obj: &K) -> Result<Option<Arc<K>>, StoreError> {
        let key = self.key_of(obj)?;
        Ok(self.get_by_key(key.as_str()))
    }

    fn list(&self) -> Vec<Arc<K>> {
        let state = self.state.read();
        let content = &state.content;
        let mut objects = Vec::with_capacity(content.len());
        objects.extend(content.occupied().map(|(_, s)| s.item.clone()));
        objects
    }

    fn len(&self) -> usize {
        self.state.read().content.len()
    }

    fn replace(&self, objects: Vec<Arc<K>>, _resource_version: &str) -> Result<(), StoreError> {
        // Build the new content and every index outside the lock; swap under it.
        let funcs = self.funcs();
        let (mut content, mut indices) = self.build(&funcs, objects)?;
        let old = {
            let mut state = self.state.write();
            // Indices registered while we built (rare): index the new content for them too,
            // before changing anything.
            let registered = state.funcs.clone();
            index_with(&mut content, &registered[funcs.len()..], &mut indices);
            state.writes += 1;
            (
                mem::replace(&mut state.content, content),
                mem::replace(&mut state.indices, indices),
            )
        };
        // The old content is freed after the lock is released.
        drop(old);
        Ok(())
    }
}

impl<K: Object> Indexer<K> for IndexedStore<K> {
    fn index(&self, index_name: &str, obj: &K) -> Result<Vec<Arc<K>>, StoreError> {
        let func = self.func(index_name)?;
        let values = normalize(func(obj));
        self.with_index(index_name, |content, index| {
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
            objects(content, ids)
        })
    }

    fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<ObjectKey>, StoreError> {
        self.with_index(index_name, |content, index| {
            index
                .slots(value)
                .map(|ids| {
                    ids.iter()
                        .filter_map(|&id| content.slot(id).map(|s| s.key.clone()))
                        .collect()
                })
                .unwrap_or_default()
        })
    }

    fn list_index_func_values(&self, index_name: &str) -> Result<Vec<String>, StoreError> {
        self.with_index(index_name, |_, index| {
            index.values().map(str::to_owned).collect()
        })
    }

    fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<K>>, StoreError> {
        self.with_index(index_name, |content, index| {
            index
                .slots(value)
                .map(|ids| objects(content, ids))
                .unwrap_or_default()
        })
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

        // Index a snapshot of the content outside the lock...
        let (snapshot, writes) = {
            let state = self.state.read();
            if let Some(err) = taken(&state) {
                return Err(err);
            }
            let snapshot: Vec<(SlotId, Arc<K>)> = state
                .content
                .occupied()
                .map(|(id, s)| (id, s.item.clone()))
                .collect();
            (snapshot, state.writes)
        };
        let prepared: Vec<(SlotId, FreshValues)> = snapshot
            .iter()
            .map(|(id, obj)| (*id, fresh_values(&added, obj)))
            .collect();
        drop(snapshot);

        let mut state = self.state.write();
        if let Some(err) = taken(&state) {
            return Err(err);
        }
        let State {
            content,
            funcs,
            indices,
            writes: now,
        } = &mut *state;
        if *now == writes {
            // ...and file it if nothing was written since (the usual case)...
            content.file(prepared, added.len(), indices);
        } else {
            // ...or index the current content under the lock.
            index_with(content, &added, indices);
        }
        let mut all = funcs.to_vec();
        all.extend(added);
        *funcs = all.into();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Mutex, Weak};

    use informer_core::{
        KeyError, NAMESPACE_INDEX, label_index_func, labels_index_func, namespace_index_func,
    };
    use informer_testing::JsonObject;

    use super::*;

    fn obj(ns: &str, name: &str, app: &str) -> Arc<JsonObject> {
        Arc::new(JsonObject::new(Some(ns), name).with_label("app", app))
    }

    fn sorted(mut v: Vec<String>) -> Vec<String> {
        v.sort_unstable();
        v
    }

    fn keys_of(objs: &[Arc<JsonObject>]) -> Vec<String> {
        sorted(
            objs.iter()
                .map(|o| key_of(&**o).unwrap().to_string())
                .collect(),
        )
    }

    /// Touch counters of every index, by name.
    fn touches(store: &IndexedStore<JsonObject>) -> Vec<(String, u64)> {
        let state = store.state.read();
        state
            .funcs
            .iter()
            .zip(&state.indices)
            .map(|(f, i)| (f.name.clone(), i.touches))
            .collect()
    }

    fn entry_counts(store: &IndexedStore<JsonObject>) -> Vec<usize> {
        store
            .state
            .read()
            .indices
            .iter()
            .map(Index::entry_count)
            .collect()
    }

    fn counting_label_index(calls: &Arc<AtomicUsize>) -> IndexFunc<JsonObject> {
        let calls = calls.clone();
        let inner = label_index_func::<JsonObject>("app");
        Arc::new(move |o: &JsonObject| {
            calls.fetch_add(1, Ordering::SeqCst);
            inner(o)
        })
    }

    #[test]
    fn unchanged_update_touches_no_index() {
        let calls = Arc::new(AtomicUsize::new(0));
        let store = IndexedStore::builder()
            .indexer(NAMESPACE_INDEX, namespace_index_func())
            .indexer("app", counting_label_index(&calls))
            .build();
        store.add(obj("ns", "a", "web")).unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        let before = touches(&store);

        // Same namespace and label, new content: the indices are not touched at all, and the
        // index function runs once (on the new object; the old values are recorded).
        let newer = Arc::new(
            JsonObject::new(Some("ns"), "a")
                .with_label("app", "web")
                .with_resource_version("2"),
        );
        let previous = store.update(newer.clone()).unwrap().unwrap();
        assert_eq!(previous.object_resource_version(), None);
        assert_eq!(touches(&store), before);
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        assert!(Arc::ptr_eq(&store.get_by_key("ns/a").unwrap(), &newer));
    }

    #[test]
    fn changed_label_touches_only_that_index() {
        let store = IndexedStore::builder()
            .indexer(NAMESPACE_INDEX, namespace_index_func())
            .indexer("app", label_index_func("app"))
            .build();
        store.add(obj("ns", "a", "web")).unwrap();
        store.add(obj("ns", "b", "web")).unwrap();
        let before = touches(&store);
        store.update(obj("ns", "a", "db")).unwrap();
        let after = touches(&store);
        // "app" sorts before "namespace": index 0 is "app".
        assert_eq!(after[0].0, "app");
        assert_eq!(after[0].1, before[0].1 + 2, "one removal, one insertion");
        assert_eq!(after[1], before[1], "namespace index untouched");
        assert_eq!(keys_of(&store.by_index("app", "db").unwrap()), ["ns/a"]);
        assert_eq!(keys_of(&store.by_index("app", "web").unwrap()), ["ns/b"]);
    }

    #[test]
    fn delete_unfiles_every_value() {
        let store = IndexedStore::builder()
            .indexer(NAMESPACE_INDEX, namespace_index_func())
            .indexer("labels", labels_index_func())
            .build();
        let a = Arc::new(
            JsonObject::new(Some("ns"), "a")
                .with_label("x", "1")
                .with_label("y", "2"),
        );
        store.add(a.clone()).unwrap();
        assert_eq!(entry_counts(&store), [2, 1]);
        let removed = store.delete(&a).unwrap().unwrap();
        assert!(Arc::ptr_eq(&removed, &a));
        assert_eq!(entry_counts(&store), [0, 0]);
        assert!(store.list_index_func_values("labels").unwrap().is_empty());
        assert!(
            store.delete(&a).unwrap().is_none(),
            "deleting an absent key is fine"
        );
        assert!(store.delete_by_key("ns/zzz").is_none());
    }

    #[test]
    fn index_reports_each_object_once() {
        let store =
            IndexedStore::with_indexers([("labels".to_owned(), labels_index_func())].into());
        let both = Arc::new(
            JsonObject::new(None, "both")
                .with_label("x", "1")
                .with_label("y", "2"),
        );
        store.add(both).unwrap();
        store
            .add(Arc::new(
                JsonObject::new(None, "other").with_label("y", "2"),
            ))
            .unwrap();
        store.add(Arc::new(JsonObject::new(None, "none"))).unwrap();
        let probe = JsonObject::new(None, "probe")
            .with_label("x", "1")
            .with_label("y", "2");
        assert_eq!(
            keys_of(&store.index("labels", &probe).unwrap()),
            ["both", "other"]
        );
        assert!(matches!(
            store.index("nope", &probe),
            Err(StoreError::IndexNotFound { name }) if name == "nope"
        ));
    }

    #[test]
    fn add_indexers_over_existing_data_and_conflicts() {
        let store = IndexedStore::<JsonObject>::new();
        store.add(obj("a", "x", "web")).unwrap();
        store.add(obj("b", "y", "db")).unwrap();
        store
            .add_indexers([("app".to_owned(), label_index_func("app"))].into())
            .unwrap();
        assert_eq!(keys_of(&store.by_index("app", "web").unwrap()), ["a/x"]);
        assert_eq!(
            sorted(store.list_index_func_values("app").unwrap()),
            ["db", "web"]
        );

        // One taken name: error, and the other one is not added either.
        let err = store
            .add_indexers(
                [
                    ("app".to_owned(), label_index_func("app")),
                    ("tier".to_owned(), label_index_func("tier")),
                ]
                .into(),
            )
            .unwrap_err();
        assert!(matches!(err, StoreError::IndexExists { name } if name == "app"));
        assert_eq!(sorted(store.index_names()), ["app", "namespace"]);

        // Later writes maintain the added index.
        store.update(obj("a", "x", "db")).unwrap();
        assert_eq!(
            keys_of(&store.by_index("app", "db").unwrap()),
            ["a/x", "b/y"]
        );
    }

    #[test]
    fn replace_is_all_or_nothing_and_later_duplicates_win() {
        let store = IndexedStore::with_indexers(
            [
                (NAMESPACE_INDEX.to_owned(), namespace_index_func()),
                ("app".to_owned(), label_index_func("app")),
            ]
            .into(),
        );
        store.add(obj("old", "a", "web")).unwrap();
        let nameless = Arc::new(JsonObject::default());
        let err = store
            .replace(vec![obj("new", "b", "web"), nameless], "1")
            .unwrap_err();
        assert!(matches!(err, StoreError::Key(KeyError::MissingName { .. })));
        assert_eq!(store.list_keys(), [ObjectKey::from_raw("old/a")]);

        let later = obj("new", "b", "db");
        store
            .replace(vec![obj("new", "b", "web"), later.clone()], "2")
            .unwrap();
        assert!(Arc::ptr_eq(&store.get_by_key("new/b").unwrap(), &later));
        assert!(store.by_index("app", "web").unwrap().is_empty());
        assert_eq!(
            store.list_index_func_values(NAMESPACE_INDEX).unwrap(),
            ["new"]
        );
        assert_eq!(entry_counts(&store), [1, 1]);
    }

    #[test]
    fn custom_key_func() {
        let by_name: KeyFunc<JsonObject> = Arc::new(|o: &JsonObject| {
            o.object_name()
                .map(ObjectKey::from_raw)
                .ok_or(KeyError::MissingName { namespace: None })
        });
        let store = IndexedStore::builder().key_func(by_name).build();
        store.add(obj("a", "same", "1")).unwrap();
        store.add(obj("b", "same", "2")).unwrap();
        assert_eq!(store.len(), 1);
        assert_eq!(
            store.key_of(&obj("zzz", "same", "")).unwrap().as_str(),
            "same"
        );
        assert!(store.contains_key("same"));
        assert!(store.index_names().is_empty());
    }

    #[test]
    fn known_objects_questions_answer_from_the_stored_arc() {
        let store = IndexedStore::new();
        let stored = Arc::new(JsonObject::new(Some("ns"), "a").with_resource_version("7"));
        store.add(Arc::clone(&stored)).unwrap();
        let known: &dyn KnownObjects<JsonObject> = &store;
        assert!(known.contains_key("ns/a"));
        assert!(!known.contains_key("ns/b"));
        assert_eq!(known.resource_version_of("ns/a").as_deref(), Some("7"));
        assert_eq!(known.resource_version_of("ns/b"), None);
        assert!(Arc::ptr_eq(&known.shared_by_key("ns/a").unwrap(), &stored));
        store
            .add(Arc::new(JsonObject::new(Some("ns"), "c")))
            .unwrap();
        assert_eq!(known.resource_version_of("ns/c"), None);
    }

    /// An index function that runs `hook` the first time it is called with `trigger` set.
    fn hooked(
        trigger: Arc<AtomicBool>,
        hook: impl Fn() + Send + Sync + 'static,
    ) -> IndexFunc<JsonObject> {
        let inner = namespace_index_func::<JsonObject>();
        Arc::new(move |o: &JsonObject| {
            if trigger.swap(false, Ordering::SeqCst) {
                hook();
            }
            inner(o)
        })
    }

    /// A store whose index "hook" runs `hook(store)` once, after `arm` is called.
    fn store_with_hook(
        hook: impl Fn(&IndexedStore<JsonObject>) + Send + Sync + 'static,
    ) -> (Arc<IndexedStore<JsonObject>>, Arc<AtomicBool>) {
        let trigger = Arc::new(AtomicBool::new(false));
        let cell: Arc<Mutex<Weak<IndexedStore<JsonObject>>>> = Arc::new(Mutex::new(Weak::new()));
        let hook_cell = cell.clone();
        let func = hooked(trigger.clone(), move || {
            let store = hook_cell.lock().unwrap().upgrade().unwrap();
            hook(&store);
        });
        let store = Arc::new(IndexedStore::with_indexers(
            [("hook".to_owned(), func)].into(),
        ));
        *cell.lock().unwrap() = Arc::downgrade(&store);
        (store, trigger)
    }

    fn assert_app_index_exact(store: &IndexedStore<JsonObject>) {
        for o in store.list() {
            let app = o.object_labels().get("app").unwrap();
            let keys = store.index_keys("app", app).unwrap();
            assert!(
                keys.contains(&key_of(&*o).unwrap()),
                "{o:?} not filed under {app}"
            );
        }
        let filed: usize = store
            .list_index_func_values("app")
            .unwrap()
            .iter()
            .map(|v| store.index_keys("app", v).unwrap().len())
            .sum();
        assert_eq!(filed, store.len());
    }

    #[test]
    fn add_indexers_falls_back_when_written_meanwhile() {
        // The new index's function writes to the store while add_indexers prepares outside the
        // lock: the prepared snapshot is stale and the store must index under the lock instead.
        let trigger = Arc::new(AtomicBool::new(false));
        let store = Arc::new(IndexedStore::<JsonObject>::new());
        store.add(obj("ns", "a", "web")).unwrap();
        let writer = Arc::downgrade(&store);
        let inner = label_index_func::<JsonObject>("app");
        let armed = trigger.clone();
        let app: IndexFunc<JsonObject> = Arc::new(move |o: &JsonObject| {
            if armed.swap(false, Ordering::SeqCst) {
                let store = writer.upgrade().unwrap();
                store.add(obj("ns", "late", "db")).unwrap();
            }
            inner(o)
        });
        trigger.store(true, Ordering::SeqCst);
        store
            .add_indexers([("app".to_owned(), app)].into())
            .unwrap();
        assert_eq!(store.len(), 2);
        assert_app_index_exact(&store);
        assert_eq!(keys_of(&store.by_index("app", "db").unwrap()), ["ns/late"]);
    }

    #[test]
    fn upsert_and_replace_catch_up_with_indices_added_meanwhile() {
        let add_app = |store: &IndexedStore<JsonObject>| {
            store
                .add_indexers([("app".to_owned(), label_index_func("app"))].into())
                .unwrap();
        };

        // An index is registered while `add` computes values outside the lock.
        let (store, trigger) = store_with_hook(add_app);
        trigger.store(true, Ordering::SeqCst);
        store.add(obj("ns", "a", "web")).unwrap();
        assert_app_index_exact(&store);
        assert_eq!(keys_of(&store.by_index("app", "web").unwrap()), ["ns/a"]);

        // An index is registered while `replace` builds outside the lock.
        let (store, trigger) = store_with_hook(add_app);
        trigger.store(true, Ordering::SeqCst);
        store
            .replace(vec![obj("ns", "a", "web"), obj("ns", "b", "db")], "1")
            .unwrap();
        assert_app_index_exact(&store);
        assert_eq!(
            sorted(store.list_index_func_values("app").unwrap()),
            ["db", "web"]
        );
        assert_eq!(
            sorted(store.list_index_func_values("hook").unwrap()),
            ["ns"]
        );
    }

    #[test]
    fn deleted_slots_are_reused() {
        let store = IndexedStore::<JsonObject>::new();
        for name in ["a", "b", "c"] {
            store.add(obj("ns", name, "web")).unwrap();
        }
        store.delete_by_key("ns/b").unwrap();
        let d = obj("other", "d", "web");
        store.add(d.clone()).unwrap();
        {
            let state = store.state.read();
            assert_eq!(state.content.slots.len(), 3, "the freed slot was reused");
            assert!(state.content.free.is_empty());
        }
        assert_eq!(
            keys_of(&store.by_index(NAMESPACE_INDEX, "ns").unwrap()),
            ["ns/a", "ns/c"]
        );
        assert!(Arc::ptr_eq(
            &store.by_index(NAMESPACE_INDEX, "other").unwrap()[0],
            &d
        ));
    }

    #[test]
    fn a_panicking_index_function_leaves_the_store_unchanged() {
        let inner = label_index_func::<JsonObject>("app");
        let fragile: IndexFunc<JsonObject> = Arc::new(move |o: &JsonObject| {
            assert_ne!(o.object_name(), Some("boom"), "index function failure");
            inner(o)
        });
        let store = IndexedStore::with_indexers([("app".to_owned(), fragile)].into());
        let a = obj("ns", "a", "web");
        store.add(a.clone()).unwrap();
        let boom = obj("ns", "boom", "db");
        let attempts: [&dyn Fn(); 2] = [&|| drop(store.add(boom.clone())), &|| {
            drop(store.replace(vec![obj("ns", "z", "web"), boom.clone()], "1"))
        }];
        for attempt in attempts {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(attempt));
            assert!(result.is_err());
            assert_eq!(store.list_keys(), [ObjectKey::from_raw("ns/a")]);
            assert!(Arc::ptr_eq(&store.by_index("app", "web").unwrap()[0], &a));
            assert_eq!(store.list_index_func_values("app").unwrap(), ["web"]);
        }
        // Still usable: the lock is not poisoned.
        store.add(obj("ns", "b", "db")).unwrap();
        assert_eq!(store.len(), 2);
    }

    #[test]
    fn debug_and_default() {
        let store = IndexedStore::<JsonObject>::default();
        store.add(obj("ns", "a", "web")).unwrap();
        let text = format!("{store:?}");
        assert!(
            text.contains("len: 1") && text.contains("namespace"),
            "{text}"
        );
        let builder = IndexedStore::<JsonObject>::builder().indexer("x", namespace_index_func());
        assert!(format!("{builder:?}").contains("\"x\""));
    }
}
