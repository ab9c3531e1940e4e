//! One secondary index (value → slots of the objects filed under it) and the per-object record
//! of the values it was indexed under, with the diffing that lets an update touch only the values
//! that changed.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

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

/// The position of an object in the store's slot table. Indices file positions rather than
/// keys: a lookup goes straight to the object, without hashing its key again.
pub(crate) type SlotId = usize;

/// The objects filed under one value, plus the shared copy of the value itself (handed to every
/// object record that carries it, so a namespace string is stored once, not once per object).
#[derive(Debug)]
struct Bucket {
    value: Arc<str>,
    slots: Set<SlotId>,
}

/// One secondary index: value → the slots of the objects whose index function yields it.
///
/// Invariant: no bucket is empty (a bucket is removed with its last slot).
#[derive(Debug, Default)]
pub(crate) struct Index {
    buckets: Map<Arc<str>, Bucket>,
    /// How many (value, slot) entries were inserted or removed over the index's life: lets the
    /// tests prove that an unchanged update leaves the index alone.
    #[cfg(test)]
    pub(crate) touches: u64,
}

impl Index {
    /// Files `slot` under `value` and returns the shared copy of `value`.
    pub(crate) fn insert(&mut self, value: String, slot: SlotId) -> Arc<str> {
        #[cfg(test)]
        {
            self.touches += 1;
        }
        if let Some(bucket) = self.buckets.get_mut(value.as_str()) {
            bucket.slots.insert(slot);
            return bucket.value.clone();
        }
        let value: Arc<str> = value.into();
        let mut slots = Set::default();
        slots.insert(slot);
        self.buckets.insert(
            value.clone(),
            Bucket {
                value: value.clone(),
                slots,
            },
        );
        value
    }

    /// Files `slot` under every value of a normalized list; returns the shared copies.
    pub(crate) fn insert_all(&mut self, values: Vec<String>, slot: SlotId) -> Values {
        values.into_iter().map(|v| self.insert(v, slot)).collect()
    }

    /// Removes `slot` from `value`'s bucket, dropping the bucket when it becomes empty.
    pub(crate) fn remove(&mut self, value: &str, slot: SlotId) {
        #[cfg(test)]
        {
            self.touches += 1;
        }
        if let Some(bucket) = self.buckets.get_mut(value) {
            bucket.slots.remove(&slot);
            if bucket.slots.is_empty() {
                self.buckets.remove(value);
            }
        }
    }

    /// Removes `slot` from every value of a recorded list.
    pub(crate) fn remove_all(&mut self, values: &[Arc<str>], slot: SlotId) {
        for value in values {
            self.remove(value, slot);
        }
    }

    /// Moves `slot` from its recorded values to `fresh` (normalized), touching only the values
    /// present in one list but not the other. Returns the new record.
    pub(crate) fn update(&mut self, recorded: Values, fresh: Vec<String>, slot: SlotId) -> Values {
        if same_values(&recorded, &fresh) {
            return recorded;
        }
        let mut next = Values::with_capacity(fresh.len());
        let mut old = recorded.into_iter().peekable();
        for value in fresh {
            // Values only in the old list, ordered before `value`: gone.
            while let Some(gone) = old.next_if(|o| **o < *value) {
                self.remove(&gone, slot);
            }
            match old.next_if(|o| **o == *value) {
                // In both lists: keep the record, leave the index alone.
                Some(kept) => next.push(kept),
                None => next.push(self.insert(value, slot)),
            }
        }
        for gone in old {
            self.remove(&gone, slot);
        }
        next
    }

    /// The slots filed under `value`, if any.
    pub(crate) fn slots(&self, value: &str) -> Option<&Set<SlotId>> {
        self.buckets.get(value).map(|b| &b.slots)
    }

    /// Every value with at least one slot.
    pub(crate) fn values(&self) -> impl Iterator<Item = &str> {
        self.buckets.keys().map(|v| &**v)
    }

    /// An estimate of the heap the index holds: its map, values and slot sets.
    #[cfg(feature = "compact")]
    pub(crate) fn heap_estimate(&self) -> usize {
        let bucket = std::mem::size_of::<(Arc<str>, Bucket)>() + 1;
        let slot = std::mem::size_of::<SlotId>() + 1;
        self.buckets.capacity() * bucket
            + self
                .buckets
                .values()
                .map(|b| 16 + b.value.len() + b.slots.capacity() * slot)
                .sum::<usize>()
    }

    /// How many (value, slot) entries the index holds.
    #[cfg(test)]
    pub(crate) fn entry_count(&self) -> usize {
        self.buckets.values().map(|b| b.slots.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let k = 7;
        let recorded = index.insert_all(strings(&["a", "b", "c"]), k);
        assert_eq!(index.touches, 3);

        // Same values: nothing touched, same shared copies kept.
        let again = index.update(recorded.clone(), strings(&["a", "b", "c"]), k);
        assert_eq!(index.touches, 3);
        assert!(Arc::ptr_eq(&again[0], &recorded[0]));

        // Drop "a", keep "b" and "c", add "d": two touches.
        let next = index.update(again, strings(&["b", "c", "d"]), k);
        assert_eq!(index.touches, 5);
        assert_eq!(
            next.iter().map(|v| &**v).collect::<Vec<_>>(),
            ["b", "c", "d"]
        );
        let mut values: Vec<_> = index.values().collect();
        values.sort_unstable();
        assert_eq!(values, ["b", "c", "d"]);
        assert!(index.slots("a").is_none(), "an emptied bucket is removed");
    }

    #[test]
    fn shared_values_are_stored_once() {
        let mut index = Index::default();
        let a = index.insert("ns".to_owned(), 1);
        let b = index.insert("ns".to_owned(), 2);
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(index.slots("ns").map(Set::len), Some(2));
        index.remove("ns", 1);
        assert_eq!(index.slots("ns").map(Set::len), Some(1));
        index.remove("ns", 2);
        assert!(index.slots("ns").is_none());
        assert_eq!(index.entry_count(), 0);
    }

    #[test]
    fn update_from_and_to_nothing() {
        let mut index = Index::default();
        let k = 3;
        let none = index.update(Values::new(), strings(&["x"]), k);
        assert_eq!(index.entry_count(), 1);
        let back = index.update(none, Vec::new(), k);
        assert!(back.is_empty());
        assert_eq!(index.entry_count(), 0);
    }
}
