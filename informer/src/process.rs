//! The processing rules: how one batch of deltas changes the cache and what handlers hear.
//!
//! | delta                                  | cache holds the key?          | cache       | handlers hear                      |
//! |----------------------------------------|-------------------------------|-------------|------------------------------------|
//! | `Added` `Updated` `Replaced` `Sync`    | no                            | add         | `on_add(new, initial)`             |
//! |                                        | yes, same UID (or either none)| update      | `on_update(old, new)` (¹)          |
//! |                                        | yes, other UID, `DeleteAndAdd`| update      | `on_delete(tombstone(old))`, `on_add(new, initial)` |
//! |                                        | yes, other UID, `Update`      | update      | `on_update(old, new)` (¹)          |
//! | `Deleted` (object or tombstone)        | yes                           | delete      | `on_delete(final object or tombstone)` |
//! |                                        | no                            | —           | nothing (²)                        |
//!
//! (¹) When `old` and `new` have the same resourceVersion (a resync, or a relist that saw no
//! change) the update is a *sync*: it goes only to handlers whose resync period is due. When
//! the queue hands back the very `Arc` the cache holds, the cache is not written; when the
//! cache holds that resourceVersion and no handler is due a resync, nothing is done at all
//! (the versions are compared without reading the cached object, which a store that keeps
//! objects encoded would have to decode).
//!
//! (²) Upstream notifies handlers of a deletion the cache never held; here handlers only hear
//! about objects they were told exist, so folding a handler's notifications always gives the
//! cache. (The queues already drop deletions of keys they do not know.)
//!
//! `initial` is whether the queue had not yet synced when the batch was popped: true for the
//! objects of the first full list.
//!
//! A delta that carries its object's JSON text as received ([`Delta::raw`]) is written with
//! [`Store::add_raw`](informer_core::Store::add_raw) / `update_raw`, so a store that keeps
//! objects encoded stores the text instead of encoding the object again.
//!
//! A delta the cache refuses (a backend error, an object without a key, a panicking key or
//! index function) is reported and skipped; the rest of the batch is applied. Nothing here
//! waits.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use informer_core::{
    Delta, DeltaType, ErrorChain, Indexer, KeyFunc, Notification, Object, ObjectOrTombstone,
    ObjectSummary, StoreError, Tombstone,
};

use crate::listener::panic_message;
use informer_core::UidChange;

/// Where the rules send notifications. `is_sync` marks equal-resourceVersion updates.
pub(crate) trait Sink<K> {
    fn notify(&mut self, notification: Notification<K>, is_sync: bool);
    /// Whether a sync notification would reach anyone now (a handler's resync is due).
    fn wants_syncs(&self) -> bool;
    /// Whether any notification would reach anyone (a handler or a stream is registered).
    fn listens(&self) -> bool;
}

/// The parameters of the rules.
pub(crate) struct Rules<'a, K> {
    pub(crate) indexer: &'a dyn Indexer<K>,
    pub(crate) key_func: &'a KeyFunc<K>,
    pub(crate) uid_change: UidChange,
    pub(crate) informer: &'a str,
}

/// What one batch did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchOutcome {
    pub(crate) applied: usize,
    pub(crate) errors: usize,
}

impl<K: Object> Rules<'_, K> {
    /// Applies `deltas` in order.
    pub(crate) fn apply(
        &self,
        deltas: &[Delta<K>],
        initial: bool,
        sink: &mut impl Sink<K>,
    ) -> BatchOutcome {
        let mut outcome = BatchOutcome::default();
        for delta in deltas {
            // User code runs in here (key and index functions, a custom indexer): a panic
            // skips this delta like an error, and the loop goes on.
            let result = catch_unwind(AssertUnwindSafe(|| self.apply_one(delta, initial, sink)));
            let error = match result {
                Ok(Ok(())) => {
                    outcome.applied += 1;
                    continue;
                }
                Ok(Err(error)) => ErrorChain(&error).to_string(),
                Err(payload) => format!("panicked: {}", panic_message(payload.as_ref())),
            };
            outcome.errors += 1;
            tracing::warn!(
                informer = self.informer,
                kind = ?delta.kind,
                object = ?delta.object,
                %error,
                "cannot apply delta to the cache; skipped"
            );
        }
        outcome
    }

    fn apply_one(
        &self,
        delta: &Delta<K>,
        initial: bool,
        sink: &mut impl Sink<K>,
    ) -> Result<(), StoreError> {
        match delta.kind {
            DeltaType::Added | DeltaType::Updated | DeltaType::Replaced | DeltaType::Sync => {
                // Only deletions carry tombstones; take the last known state if a queue
                // hands one anyway.
                let new = delta.object.object();
                // Keyed once, here: the lookup goes by key.
                let key = (self.key_func)(new)?;
                // The cache holds this very version (a relist or a resync of an unchanged
                // object) and no handler is due a resync: the update would change nothing
                // and reach no one. Compared by resourceVersion, so a store that keeps
                // objects encoded decodes nothing.
                if !sink.wants_syncs()
                    && let Some(version) = new.object_resource_version()
                    && self.indexer.resource_version_of(key.as_str()).as_deref() == Some(version)
                {
                    return Ok(());
                }
                // Nobody to tell: the cached object is not read, and the write returns none
                // (a store that keeps objects encoded would decode it for nothing: a
                // lister-only compact informer).
                if !sink.listens() {
                    return self.indexer.put(Arc::clone(new), delta.raw.as_ref());
                }
                match self.indexer.get_by_key(key.as_str()) {
                    None => {
                        match &delta.raw {
                            Some(raw) => self.indexer.add_raw(Arc::clone(new), raw)?,
                            None => self.indexer.add(Arc::clone(new))?,
                        };
                        sink.notify(
                            Notification::Add {
                                object: Arc::clone(new),
                                is_in_initial_list: initial,
                            },
                            false,
                        );
                    }
                    Some(old) => {
                        let replaced_by_namesake = self.uid_change == UidChange::DeleteAndAdd
                            && matches!((old.object_uid(), new.object_uid()), (Some(a), Some(b)) if a != b);
                        // `old` is in hand: the write need not return it again.
                        if !Arc::ptr_eq(&old, new) {
                            self.indexer.put(Arc::clone(new), delta.raw.as_ref())?;
                        }
                        if replaced_by_namesake {
                            tracing::debug!(
                                informer = self.informer,
                                old = %ObjectSummary(old.as_ref()),
                                new = %ObjectSummary(new.as_ref()),
                                "UID changed: delivering delete then add"
                            );
                            sink.notify(
                                Notification::Delete(ObjectOrTombstone::Tombstone(Tombstone {
                                    key,
                                    last_known: old,
                                })),
                                false,
                            );
                            sink.notify(
                                Notification::Add {
                                    object: Arc::clone(new),
                                    is_in_initial_list: initial,
                                },
                                false,
                            );
                        } else {
                            let is_sync =
                                old.object_resource_version() == new.object_resource_version();
                            sink.notify(
                                Notification::Update {
                                    old,
                                    new: Arc::clone(new),
                                },
                                is_sync,
                            );
                        }
                    }
                }
            }
            DeltaType::Deleted => {
                let removed = match &delta.object {
                    ObjectOrTombstone::Object(obj) => self.indexer.delete(obj)?,
                    ObjectOrTombstone::Tombstone(t) => self.indexer.delete_by_key(t.key.as_str()),
                };
                match removed {
                    Some(cached) => {
                        // Handlers know the cached object, and hear of its deletion in its
                        // terms. If the deletion is of a namesake with another UID (only
                        // possible when events were lost upstream), they get a tombstone of the
                        // object they know. A queued tombstone names the queue's last known
                        // state, which is the cached object unless the cache refused a delta
                        // queued before it (a failing index function): then handlers were never
                        // told that state, and the tombstone is rebuilt around the cached one.
                        let payload = match &delta.object {
                            ObjectOrTombstone::Object(obj) if matches!((cached.object_uid(), obj.object_uid()), (Some(a), Some(b)) if a != b) =>
                            {
                                tracing::debug!(
                                    informer = self.informer,
                                    cached = %ObjectSummary(cached.as_ref()),
                                    deleted = ?delta.object,
                                    "deletion of a namesake: delivering a tombstone of the cached object"
                                );
                                ObjectOrTombstone::Tombstone(Tombstone {
                                    key: (self.key_func)(cached.as_ref())?,
                                    last_known: cached,
                                })
                            }
                            ObjectOrTombstone::Tombstone(t)
                                if !Arc::ptr_eq(&t.last_known, &cached) =>
                            {
                                tracing::debug!(
                                    informer = self.informer,
                                    cached = %ObjectSummary(cached.as_ref()),
                                    queued = %ObjectSummary(t.last_known.as_ref()),
                                    "tombstone of a state the cache does not hold: delivering the cached object"
                                );
                                ObjectOrTombstone::Tombstone(Tombstone {
                                    key: t.key.clone(),
                                    last_known: cached,
                                })
                            }
                            _ => delta.object.clone(),
                        };
                        sink.notify(Notification::Delete(payload), false);
                    }
                    None => tracing::debug!(
                        informer = self.informer,
                        object = ?delta.object,
                        "deletion of an object the cache does not hold; not delivered"
                    ),
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;
    use informer_core::{KeyError, KnownObjects, ObjectKey, Store, key_of};
    use informer_store::IndexedStore;
    use informer_testing::JsonObject;

    /// Records every notification; every handler is due a resync.
    #[derive(Default)]
    struct Recorder(Vec<(String, bool)>);

    impl Sink<JsonObject> for Recorder {
        fn notify(&mut self, n: Notification<JsonObject>, is_sync: bool) {
            self.0.push((format!("{n:?}"), is_sync));
        }

        fn wants_syncs(&self) -> bool {
            true
        }

        fn listens(&self) -> bool {
            true
        }
    }

    fn obj(name: &str, rv: &str, uid: &str) -> Arc<JsonObject> {
        Arc::new(
            JsonObject::new(Some("ns"), name)
                .with_resource_version(rv)
                .with_uid(uid),
        )
    }

    fn run(
        store: &IndexedStore<JsonObject>,
        uid_change: UidChange,
        deltas: &[Delta<JsonObject>],
        initial: bool,
    ) -> (Vec<(String, bool)>, BatchOutcome) {
        let mut rec = Recorder::default();
        let outcome = apply_to(store, uid_change, deltas, initial, &mut rec);
        (rec.0, outcome)
    }

    /// Applies `deltas` to `store` with `namespace/name` keys, telling `sink`.
    fn apply_to(
        store: &IndexedStore<JsonObject>,
        uid_change: UidChange,
        deltas: &[Delta<JsonObject>],
        initial: bool,
        sink: &mut impl Sink<JsonObject>,
    ) -> BatchOutcome {
        let key_func: KeyFunc<JsonObject> = Arc::new(|o: &JsonObject| key_of(o));
        let rules = Rules {
            indexer: store,
            key_func: &key_func,
            uid_change,
            informer: "test",
        };
        rules.apply(deltas, initial, sink)
    }

    fn rv_of(store: &IndexedStore<JsonObject>, key: &str) -> Option<String> {
        store
            .get_by_key(key)
            .and_then(|o| o.object_resource_version().map(str::to_owned))
    }

    #[test]
    fn every_upsert_kind_adds_an_absent_key_with_the_initial_flag() {
        for kind in [
            DeltaType::Added,
            DeltaType::Updated,
            DeltaType::Replaced,
            DeltaType::Sync,
        ] {
            let store = IndexedStore::new();
            let (seen, outcome) = run(
                &store,
                UidChange::DeleteAndAdd,
                &[Delta::new(kind, obj("a", "1", "u1"))],
                true,
            );
            assert_eq!(
                seen,
                [("Add(ns/a@1, initial: true)".to_owned(), false)],
                "{kind:?}"
            );
            assert_eq!(outcome.applied, 1);
            assert_eq!(rv_of(&store, "ns/a").as_deref(), Some("1"));
        }
    }

    #[test]
    fn upsert_of_a_held_key_updates_and_marks_equal_versions_as_sync() {
        let store = IndexedStore::new();
        store.add(obj("a", "1", "u1")).unwrap();
        let (seen, _) = run(
            &store,
            UidChange::DeleteAndAdd,
            &[
                Delta::new(DeltaType::Updated, obj("a", "2", "u1")),
                Delta::new(DeltaType::Replaced, obj("a", "2", "u1")),
                Delta::new(DeltaType::Added, obj("a", "3", "u1")),
            ],
            false,
        );
        assert_eq!(
            seen,
            [
                ("Update(ns/a@1 -> ns/a@2)".to_owned(), false),
                ("Update(ns/a@2 -> ns/a@2)".to_owned(), true),
                ("Update(ns/a@2 -> ns/a@3)".to_owned(), false),
            ]
        );
        assert_eq!(rv_of(&store, "ns/a").as_deref(), Some("3"));
    }

    #[test]
    fn a_sync_of_the_stored_arc_does_not_write_the_cache() {
        let store = IndexedStore::new();
        let stored = obj("a", "1", "u1");
        store.add(Arc::clone(&stored)).unwrap();
        let (seen, _) = run(
            &store,
            UidChange::DeleteAndAdd,
            &[Delta::new(DeltaType::Sync, Arc::clone(&stored))],
            false,
        );
        assert_eq!(seen, [("Update(ns/a@1 -> ns/a@1)".to_owned(), true)]);
        assert!(Arc::ptr_eq(&store.get_by_key("ns/a").unwrap(), &stored));
    }

    /// A sink whose handlers are never due a resync.
    #[derive(Default)]
    struct NotSyncing(Vec<String>);

    impl Sink<JsonObject> for NotSyncing {
        fn notify(&mut self, n: Notification<JsonObject>, _is_sync: bool) {
            self.0.push(format!("{n:?}"));
        }

        fn wants_syncs(&self) -> bool {
            false
        }

        fn listens(&self) -> bool {
            true
        }
    }

    /// A sink nobody listens to: deltas are applied all the same.
    #[derive(Default)]
    struct Deaf(usize);

    impl Sink<JsonObject> for Deaf {
        fn notify(&mut self, _n: Notification<JsonObject>, _is_sync: bool) {
            self.0 += 1;
        }

        fn wants_syncs(&self) -> bool {
            false
        }

        fn listens(&self) -> bool {
            false
        }
    }

    #[test]
    fn without_listeners_every_upsert_is_written_and_nobody_is_told() {
        let store = IndexedStore::new();
        let deltas = [
            Delta::new(DeltaType::Added, obj("a", "1", "u1")),
            Delta::new(DeltaType::Updated, obj("a", "2", "u1")),
            // Another UID under the same name: no one to tell, the object is replaced.
            Delta::new(DeltaType::Updated, obj("a", "3", "u2")),
            Delta::new(DeltaType::Replaced, obj("b", "4", "u3")),
        ];
        let mut sink = Deaf::default();
        let outcome = apply_to(&store, UidChange::DeleteAndAdd, &deltas, false, &mut sink);
        assert_eq!(outcome.applied, 4);
        assert_eq!(sink.0, 0);
        assert_eq!(rv_of(&store, "ns/a").as_deref(), Some("3"));
        assert_eq!(store.get_by_key("ns/a").unwrap().object_uid(), Some("u2"));
        assert_eq!(rv_of(&store, "ns/b").as_deref(), Some("4"));
    }

    #[test]
    fn an_unchanged_version_with_no_handler_due_is_skipped_without_reading_the_cache() {
        let store = IndexedStore::new();
        let stored = obj("a", "1", "u1");
        store.add(Arc::clone(&stored)).unwrap();
        let key_func: KeyFunc<JsonObject> = Arc::new(|o: &JsonObject| key_of(o));
        let rules = Rules {
            indexer: &store,
            key_func: &key_func,
            uid_change: UidChange::DeleteAndAdd,
            informer: "test",
        };
        let mut sink = NotSyncing::default();
        // A relisted copy of the same version, and a resync: no write, nobody told.
        let outcome = rules.apply(
            &[
                Delta::new(DeltaType::Replaced, obj("a", "1", "u1")),
                Delta::new(DeltaType::Sync, Arc::clone(&stored)),
            ],
            false,
            &mut sink,
        );
        assert_eq!(outcome.applied, 2);
        assert!(sink.0.is_empty(), "{:?}", sink.0);
        assert!(Arc::ptr_eq(&store.get_by_key("ns/a").unwrap(), &stored));
        // A new version still goes through.
        rules.apply(
            &[Delta::new(DeltaType::Replaced, obj("a", "2", "u1"))],
            false,
            &mut sink,
        );
        assert_eq!(sink.0, ["Update(ns/a@1 -> ns/a@2)"]);
    }

    #[test]
    fn uid_change_is_delete_then_add_by_default() {
        let store = IndexedStore::new();
        store.add(obj("a", "1", "u1")).unwrap();
        let (seen, _) = run(
            &store,
            UidChange::DeleteAndAdd,
            &[Delta::new(DeltaType::Replaced, obj("a", "7", "u2"))],
            false,
        );
        assert_eq!(
            seen,
            [
                (
                    "Delete(Tombstone(ns/a, last_known: ns/a@1))".to_owned(),
                    false
                ),
                ("Add(ns/a@7, initial: false)".to_owned(), false),
            ]
        );
        assert_eq!(store.get_by_key("ns/a").unwrap().object_uid(), Some("u2"));
    }

    #[test]
    fn uid_change_is_an_update_in_client_go_mode() {
        let store = IndexedStore::new();
        store.add(obj("a", "1", "u1")).unwrap();
        let (seen, _) = run(
            &store,
            UidChange::Update,
            &[Delta::new(DeltaType::Replaced, obj("a", "7", "u2"))],
            false,
        );
        assert_eq!(seen, [("Update(ns/a@1 -> ns/a@7)".to_owned(), false)]);
    }

    #[test]
    fn missing_uids_never_count_as_a_change() {
        let store = IndexedStore::new();
        store
            .add(Arc::new(
                JsonObject::new(Some("ns"), "a").with_resource_version("1"),
            ))
            .unwrap();
        let (seen, _) = run(
            &store,
            UidChange::DeleteAndAdd,
            &[Delta::new(DeltaType::Updated, obj("a", "2", "u2"))],
            false,
        );
        assert_eq!(seen, [("Update(ns/a@1 -> ns/a@2)".to_owned(), false)]);
    }

    #[test]
    fn deletions_carry_the_final_object_or_the_tombstone() {
        let store = IndexedStore::new();
        store.add(obj("a", "1", "u1")).unwrap();
        store.add(obj("b", "2", "u2")).unwrap();
        let (seen, _) = run(
            &store,
            UidChange::DeleteAndAdd,
            &[
                Delta::new(DeltaType::Deleted, obj("a", "3", "u1")),
                Delta::tombstone(ObjectKey::from_raw("ns/b"), obj("b", "2", "u2")),
            ],
            false,
        );
        assert_eq!(
            seen,
            [
                ("Delete(Object(ns/a@3))".to_owned(), false),
                (
                    "Delete(Tombstone(ns/b, last_known: ns/b@2))".to_owned(),
                    false
                ),
            ]
        );
        assert!(store.is_empty());
    }

    #[test]
    fn deletion_of_a_namesake_delivers_the_cached_object_as_a_tombstone() {
        let store = IndexedStore::new();
        store.add(obj("a", "1", "u1")).unwrap();
        let (seen, _) = run(
            &store,
            UidChange::DeleteAndAdd,
            &[Delta::new(DeltaType::Deleted, obj("a", "9", "u2"))],
            false,
        );
        assert_eq!(
            seen,
            [(
                "Delete(Tombstone(ns/a, last_known: ns/a@1))".to_owned(),
                false
            )]
        );
        assert!(store.is_empty());
    }

    /// Regression (the chaos's known defect, seed 206): a delta the cache refused leaves the
    /// queue's tombstone naming a state handlers never heard of; they get the cached one.
    #[test]
    fn a_tombstone_after_a_refused_delta_names_the_cached_object() {
        let store = IndexedStore::new();
        store.add(obj("a", "1", "u1")).unwrap();
        let (seen, _) = run(
            &store,
            UidChange::DeleteAndAdd,
            &[Delta::tombstone(
                ObjectKey::from_raw("ns/a"),
                obj("a", "5", "u9"),
            )],
            false,
        );
        assert_eq!(
            seen,
            [(
                "Delete(Tombstone(ns/a, last_known: ns/a@1))".to_owned(),
                false
            )]
        );
        assert!(store.is_empty());
    }

    #[test]
    fn deletion_of_an_unknown_key_is_not_delivered() {
        let store = IndexedStore::new();
        let (seen, outcome) = run(
            &store,
            UidChange::DeleteAndAdd,
            &[
                Delta::new(DeltaType::Deleted, obj("a", "3", "u1")),
                Delta::tombstone(ObjectKey::from_raw("ns/b"), obj("b", "2", "u2")),
            ],
            false,
        );
        assert!(seen.is_empty());
        assert_eq!(outcome.applied, 2);
    }

    #[test]
    fn one_refused_delta_is_skipped_and_the_batch_goes_on() {
        let store = IndexedStore::new();
        let nameless = Arc::new(JsonObject::default());
        let (seen, outcome) = run(
            &store,
            UidChange::DeleteAndAdd,
            &[
                Delta::new(DeltaType::Added, nameless),
                Delta::new(DeltaType::Added, obj("a", "1", "u1")),
            ],
            false,
        );
        assert_eq!(
            outcome,
            BatchOutcome {
                applied: 1,
                errors: 1
            }
        );
        assert_eq!(seen, [("Add(ns/a@1, initial: false)".to_owned(), false)]);
        assert!(matches!(
            store.get(&JsonObject::default()),
            Err(StoreError::Key(KeyError::MissingName { .. }))
        ));
    }

    #[test]
    fn a_panicking_index_function_skips_the_delta_and_the_batch_goes_on() {
        let store = IndexedStore::builder()
            .indexer(
                "fragile",
                Arc::new(|o: &JsonObject| {
                    assert_ne!(
                        o.metadata.name.as_deref(),
                        Some("boom"),
                        "index refuses boom"
                    );
                    Vec::new()
                }),
            )
            .build();
        let (seen, outcome) = run(
            &store,
            UidChange::DeleteAndAdd,
            &[
                Delta::new(DeltaType::Added, obj("boom", "1", "u1")),
                Delta::new(DeltaType::Added, obj("a", "2", "u2")),
            ],
            false,
        );
        assert_eq!(
            outcome,
            BatchOutcome {
                applied: 1,
                errors: 1
            }
        );
        assert_eq!(seen, [("Add(ns/a@2, initial: false)".to_owned(), false)]);
        assert_eq!(store.list_keys(), [ObjectKey::from_raw("ns/a")]);
    }

    #[test]
    fn add_and_delete_in_one_batch_leave_nothing_and_say_both() {
        let store = IndexedStore::new();
        let (seen, _) = run(
            &store,
            UidChange::DeleteAndAdd,
            &[
                Delta::new(DeltaType::Added, obj("a", "1", "u1")),
                Delta::new(DeltaType::Updated, obj("a", "2", "u1")),
                Delta::new(DeltaType::Deleted, obj("a", "3", "u1")),
            ],
            false,
        );
        assert_eq!(seen.len(), 3);
        assert!(store.list_keys().is_empty());
    }
}
