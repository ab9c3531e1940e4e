//! `IndexedStore` against the shared `Indexer` conformance suites of `informer-testing`, and
//! proof that those suites catch broken backends.

use std::sync::Arc;

use informer_core::{Indexer, Indexers, KnownObjects, ObjectKey, Store, StoreError};
use informer_store::IndexedStore;
use informer_testing::JsonObject;
use informer_testing::conformance::indexer;

use crate::support::panic_message;

#[test]
fn named_checks() {
    indexer::run(IndexedStore::with_indexers);
}

#[test]
fn matches_the_reference_model() {
    indexer::check_against_model(IndexedStore::with_indexers, 256);
}

#[test]
fn concurrent_readers_and_writers() {
    indexer::check_concurrency(IndexedStore::with_indexers);
}

/// One deliberate contract violation.
#[derive(Clone, Copy, PartialEq)]
enum Fault {
    /// None: the wrapper only delegates.
    Sound,
    /// `add` stores a deep copy instead of the given `Arc`.
    CopiesOnAdd,
    /// `replace` merges into the old content instead of swapping it out.
    ReplaceMerges,
    /// `add_indexers` with a taken name still adds the other names.
    PartialAddIndexers,
}

/// `IndexedStore` with one fault injected.
struct Faulty {
    inner: IndexedStore<JsonObject>,
    fault: Fault,
}

impl KnownObjects<JsonObject> for Faulty {
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.inner.list_keys()
    }
    fn get_by_key(&self, key: &str) -> Option<Arc<JsonObject>> {
        self.inner.get_by_key(key)
    }
}

impl Store<JsonObject> for Faulty {
    fn add(&self, obj: Arc<JsonObject>) -> Result<Option<Arc<JsonObject>>, StoreError> {
        if self.fault == Fault::CopiesOnAdd {
            return self.inner.add(Arc::new((*obj).clone()));
        }
        self.inner.add(obj)
    }
    fn delete(&self, obj: &JsonObject) -> Result<Option<Arc<JsonObject>>, StoreError> {
        self.inner.delete(obj)
    }
    fn delete_by_key(&self, key: &str) -> Option<Arc<JsonObject>> {
        self.inner.delete_by_key(key)
    }
    fn get(&self, obj: &JsonObject) -> Result<Option<Arc<JsonObject>>, StoreError> {
        self.inner.get(obj)
    }
    fn list(&self) -> Vec<Arc<JsonObject>> {
        self.inner.list()
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn replace(&self, objects: Vec<Arc<JsonObject>>, rv: &str) -> Result<(), StoreError> {
        if self.fault == Fault::ReplaceMerges {
            for o in objects {
                self.inner.add(o)?;
            }
            return Ok(());
        }
        self.inner.replace(objects, rv)
    }
}

impl Indexer<JsonObject> for Faulty {
    fn index(&self, name: &str, obj: &JsonObject) -> Result<Vec<Arc<JsonObject>>, StoreError> {
        self.inner.index(name, obj)
    }
    fn index_keys(&self, name: &str, value: &str) -> Result<Vec<ObjectKey>, StoreError> {
        self.inner.index_keys(name, value)
    }
    fn list_index_func_values(&self, name: &str) -> Result<Vec<String>, StoreError> {
        self.inner.list_index_func_values(name)
    }
    fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<JsonObject>>, StoreError> {
        self.inner.by_index(name, value)
    }
    fn index_names(&self) -> Vec<String> {
        self.inner.index_names()
    }
    fn add_indexers(&self, indexers: Indexers<JsonObject>) -> Result<(), StoreError> {
        if self.fault == Fault::PartialAddIndexers {
            let mut first_error = None;
            for (name, func) in indexers {
                if let Err(e) = self.inner.add_indexers([(name, func)].into()) {
                    first_error.get_or_insert(e);
                }
            }
            return first_error.map_or(Ok(()), Err);
        }
        self.inner.add_indexers(indexers)
    }
}

fn faulty(fault: Fault) -> impl Fn(Indexers<JsonObject>) -> Faulty {
    move |indexers| Faulty {
        inner: IndexedStore::with_indexers(indexers),
        fault,
    }
}

/// The panic message of `f`, which must panic.
fn panic_of(f: impl FnOnce()) -> String {
    panic_message(f, "the suite passed a broken backend")
}

#[test]
fn the_faultless_wrapper_passes() {
    // The wrapper itself is sound: only the injected faults make the suites fail below.
    indexer::run(faulty(Fault::Sound));
    indexer::check_against_model(faulty(Fault::Sound), 64);
}

#[test]
fn named_checks_catch_broken_backends() {
    let message = panic_of(|| indexer::run(faulty(Fault::CopiesOnAdd)));
    assert!(
        message.contains("check `add_then_get_returns_the_same_arc` failed"),
        "{message}"
    );

    let message = panic_of(|| indexer::run(faulty(Fault::ReplaceMerges)));
    assert!(
        message.contains("check `replace_swaps_content_and_indices` failed"),
        "{message}"
    );

    let message = panic_of(|| indexer::run(faulty(Fault::PartialAddIndexers)));
    assert!(
        message.contains("check `add_indexers_rejects_taken_name_and_adds_none` failed"),
        "{message}"
    );
}

#[test]
fn model_check_catches_broken_backends() {
    for fault in [
        Fault::CopiesOnAdd,
        Fault::ReplaceMerges,
        Fault::PartialAddIndexers,
    ] {
        let message = panic_of(|| indexer::check_against_model(faulty(fault), 512));
        assert!(message.contains("indexer model check failed"), "{message}");
    }
}
