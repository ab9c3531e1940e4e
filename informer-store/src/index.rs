//! One secondary index (value → keys) and the per-object record of the values it was indexed
//! under, with the diffing that lets an update touch only the values that changed.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use informer_core::ObjectKey;
use smallvec::SmallVec;

/// The hash builder of every map in this crate. Keys come from the API server, not from an
/// attacker choosing collisions offline, and foldhash is still randomly seeded per process.
pub(crate) type RandomState = foldhash::fast::RandomState;

/// A `HashMap` with this crate's hasher.
pub(crate) type Map<K, V> = HashMap<K, V, RandomState>;

/// A `HashSet` with this crate's hasher.
pub(crate) type Set<T> = HashSet<T, RandomState>;

/// The values one object is indexed under in one index: sorted, without duplicates, each
/// sharing its allocation with the index's own copy of the value. Almost every index function
/// yields zero or one value, which stays inline.
pub(crate) type Values = SmallVec<[Arc<str>; 1]>;

/// Sorts and deduplicates what an index function returned, so that two value lists can be
/// compared and diffed in one linear walk.
pub(crate) fn normalize(mut values: Vec<String>) -> Vec<String> {
    if values.len() > 1 {
        values.sort_unstable();
        values.dedup();
    }
    values
}

/// Whether a recorded value list equals a freshly computed, normalized one.
pub(crate) fn same_values(recorded: &[Arc<str>], fresh: &[String]) -> bool {
    recorded.len() == fresh.len() && recorded.iter().zip(fresh).all(|(a, b)| **a == **b)
}

/// The keys filed under one value, plus the shared copy of the value itself (handed to every
/// object record that carries it, so a namespace string is stored once, not once per object).
#[derive(Debug)]
struct Bucket {
    value: Arc<str>,
    keys: Set<ObjectKey>,
}

/// One secondary index: value → the keys of the objects whose index function yields it.
///
/// Invariant: no bucket is empty (a bucket is removed with its last key).
#[derive(Debug, Default)]
pub(crate) struct Index {
    buckets: Map<Arc<str>, Bucket>,
    /// How many (value, key) entries were inserted or removed over the index's life: lets the
    /// tests prove that an unchanged update leaves the index alone.
    #[cfg(test)]
    pub(crate) touches: u64,
}

impl Index {
    /// Files `key` under `value` and returns the shared copy of `value`.
    pub(crate) fn insert(&mut self, value: String, key: &ObjectKey) -> Arc<str> {
        #[cfg(test)]
        {
            self.touches += 1;
        }
        if let Some(bucket) = self.buckets.get_mut(value.as_str()) {
            bucket.keys.insert(key.clone());
            return bucket.value.clone();
        }
        let value: Arc<str> = value.into();
        let mut keys = Set::default();
        keys.insert(key.clone());
        self.buckets.insert(
            value.clone(),
            Bucket {
                value: value.clone(),
                keys,
            },
        );
        value
    }

    /// Files `key` under every value of a normalized list; returns the shared copies.
    pub(crate) fn insert_all(&mut self, values: Vec<String>, key: &ObjectKey) -> Values {
        values.into_iter().map(|v| self.insert(v, key)).collect()
    }

    /// Removes `key` from `value`'s bucket, dropping the bucket when it becomes empty.
    pub(crate) fn remove(&mut self, value: &str, key: &str) {
        #[cfg(test)]
        {
            self.touches += 1;
        }
        if let Some(bucket) = self.buckets.get_mut(value) {
            bucket.keys.remove(key);
            if bucket.keys.is_empty() {
                self.buckets.remove(value);
            }
        }
    }

    /// Removes `key` from every value of a recorded list.
    pub(crate) fn remove_all(&mut self, values: &[Arc<str>], key: &str) {
        for value in values {
            self.remove(value, key);
        }
    }

    /// Moves `key` from its recorded values to `fresh` (normalized), touching only the values
    /// present in one list but not the other. Returns the new record.
    pub(crate) fn update(
        &mut self,
        recorded: Values,
        fresh: Vec<String>,
        key: &ObjectKey,
    ) -> Values {
        if same_values(&recorded, &fresh) {
            return recorded;
        }
        let mut next = Values::with_capacity(fresh.len());
        let mut old = recorded.into_iter().peekable();
        for value in fresh {
            // Values only in the old list, ordered before `value`: gone.
            while let Some(gone) = old.next_if(|o| **o < *value) {
                self.remove(&gone, key.as_str());
            }
            match old.next_if(|o| **o == *value) {
                // In both lists: keep the record, leave the index alone.
                Some(kept) => next.push(kept),
                None => next.push(self.insert(value, key)),
            }
        }
        for gone in old {
            self.remove(&gone, key.as_str());
        }
        next
    }

    /// The keys filed under `value`, if any.
    pub(crate) fn keys(&self, value: &str) -> Option<&Set<ObjectKey>> {
        self.buckets.get(value).map(|b| &b.keys)
    }

    /// Every value with at least one key.
    pub(crate) fn values(&self) -> impl Iterator<Item = &str> {
        self.buckets.keys().map(|v| &**v)
    }

    /// How many (value, key) entries the index holds.
    #[cfg(test)]
    pub(crate) fn entry_count(&self) -> usize {
        self.buckets.values().map(|b| b.keys.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> ObjectKey {
        ObjectKey::from_raw(s)
    }

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| (*v).to_owned()).collect()
    }

    #[test]
    fn normalize_sorts_and_dedups() {
        assert_eq!(normalize(strings(&["b", "a", "b"])), strings(&["a", "b"]));
        assert_eq!(normalize(strings(&["x"])), strings(&["x"]));
        assert!(normalize(Vec::new()).is_empty());
    }

    #[test]
    fn update_touches_only_the_difference() {
        let mut index = Index::default();
        let k = key("ns/a");
        let recorded = index.insert_all(strings(&["a", "b", "c"]), &k);
        assert_eq!(index.touches, 3);

        // Same values: nothing touched, same shared copies kept.
        let again = index.update(recorded.clone(), strings(&["a", "b", "c"]), &k);
        assert_eq!(index.touches, 3);
        assert!(Arc::ptr_eq(&again[0], &recorded[0]));

        // Drop "a", keep "b" and "c", add "d": two touches.
        let next = index.update(again, strings(&["b", "c", "d"]), &k);
        assert_eq!(index.touches, 5);
        assert_eq!(
            next.iter().map(|v| &**v).collect::<Vec<_>>(),
            ["b", "c", "d"]
        );
        let mut values: Vec<_> = index.values().collect();
        values.sort_unstable();
        assert_eq!(values, ["b", "c", "d"]);
        assert!(index.keys("a").is_none(), "an emptied bucket is removed");
    }

    #[test]
    fn shared_values_are_stored_once() {
        let mut index = Index::default();
        let a = index.insert("ns".to_owned(), &key("ns/a"));
        let b = index.insert("ns".to_owned(), &key("ns/b"));
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(index.keys("ns").map(Set::len), Some(2));
        index.remove("ns", "ns/a");
        assert_eq!(index.keys("ns").map(Set::len), Some(1));
        index.remove("ns", "ns/b");
        assert!(index.keys("ns").is_none());
        assert_eq!(index.entry_count(), 0);
    }

    #[test]
    fn update_from_and_to_nothing() {
        let mut index = Index::default();
        let k = key("a");
        let none = index.update(Values::new(), strings(&["x"]), &k);
        assert_eq!(index.entry_count(), 1);
        let back = index.update(none, Vec::new(), &k);
        assert!(back.is_empty());
        assert_eq!(index.entry_count(), 0);
    }
}
