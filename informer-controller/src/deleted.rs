//! The last known state of deleted primary objects, kept until the reconcile of their deletion
//! succeeds (or is given up), at most `capacity` of them: beyond it the oldest is dropped.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use informer::ObjectKey;

/// One deleted object.
struct Entry<K> {
    object: Arc<K>,
    tombstone: bool,
    /// Insertion number: which entry of `order` is this one's.
    seq: u64,
}

/// Deleted objects by key, oldest first. The queue of keys in insertion order is cleaned
/// lazily: a removed or replaced entry leaves a stale `(seq, key)` behind, skipped at eviction
/// and dropped when the queue grows past twice the live entries.
pub(crate) struct DeletedObjects<K> {
    entries: HashMap<ObjectKey, Entry<K>>,
    order: VecDeque<(u64, ObjectKey)>,
    next_seq: u64,
    capacity: usize,
}

impl<K> DeletedObjects<K> {
    /// An empty record keeping at most `capacity` objects (at least one).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            entries: HashMap::new(),
            order: VecDeque::new(),
            next_seq: 0,
            capacity: capacity.max(1),
        }
    }

    /// Records `object` as the last known state of `key` (replacing an older record of the
    /// key). Returns the key whose record was dropped to stay within the capacity, if any.
    pub(crate) fn insert(
        &mut self,
        key: ObjectKey,
        object: Arc<K>,
        tombstone: bool,
    ) -> Option<ObjectKey> {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.order.push_back((seq, key.clone()));
        let replaced = self.entries.insert(
            key,
            Entry {
                object,
                tombstone,
                seq,
            },
        );
        let mut evicted = None;
        if replaced.is_none() && self.entries.len() > self.capacity {
            while let Some((seq, key)) = self.order.pop_front() {
                if self.entries.get(&key).is_some_and(|e| e.seq == seq) {
                    self.entries.remove(&key);
                    evicted = Some(key);
                    break;
                }
            }
        }
        if self.order.len() > 2 * self.entries.len() + 16 {
            let entries = &self.entries;
            self.order
                .retain(|(seq, key)| entries.get(key).is_some_and(|e| e.seq == *seq));
        }
        evicted
    }

    /// The recorded object of `key` and whether it came from a tombstone.
    pub(crate) fn get(&self, key: &ObjectKey) -> Option<(Arc<K>, bool)> {
        self.entries
            .get(key)
            .map(|e| (Arc::clone(&e.object), e.tombstone))
    }

    /// Forgets `key`'s record if it still is `object` (a newer deletion of the key, recorded
    /// meanwhile, stays).
    pub(crate) fn remove_if_same(&mut self, key: &ObjectKey, object: &Arc<K>) {
        if self
            .entries
            .get(key)
            .is_some_and(|e| Arc::ptr_eq(&e.object, object))
        {
            self.entries.remove(key);
        }
    }

    /// Forgets `key`'s record.
    #[cfg(test)]
    pub(crate) fn remove(&mut self, key: &ObjectKey) {
        self.entries.remove(key);
    }

    /// How many objects are recorded.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::from_raw(format!("ns/{name}"))
    }

    #[test]
    fn the_oldest_record_goes_first_and_replacing_does_not_evict() {
        let mut deleted = DeletedObjects::new(2);
        assert_eq!(deleted.insert(key("a"), Arc::new(1), false), None);
        assert_eq!(deleted.insert(key("b"), Arc::new(2), true), None);
        // A newer deletion of `a` replaces its record (and makes it the newest).
        assert_eq!(deleted.insert(key("a"), Arc::new(3), false), None);
        assert_eq!(deleted.insert(key("c"), Arc::new(4), false), Some(key("b")));
        assert_eq!(
            deleted.get(&key("a")).map(|(o, t)| (*o, t)),
            Some((3, false))
        );
        assert!(deleted.get(&key("b")).is_none());
        assert_eq!(deleted.len(), 2);
    }

    #[test]
    fn remove_if_same_keeps_a_newer_deletion() {
        let mut deleted = DeletedObjects::new(10);
        let first = Arc::new(1);
        deleted.insert(key("a"), Arc::clone(&first), false);
        let second = Arc::new(2);
        deleted.insert(key("a"), Arc::clone(&second), false);
        deleted.remove_if_same(&key("a"), &first);
        assert_eq!(deleted.len(), 1);
        deleted.remove_if_same(&key("a"), &second);
        assert_eq!(deleted.len(), 0);
    }

    #[test]
    fn stale_order_entries_are_compacted() {
        let mut deleted = DeletedObjects::new(4);
        for i in 0..1_000 {
            deleted.insert(key("a"), Arc::new(i), false);
            deleted.remove(&key("a"));
        }
        assert!(deleted.order.len() <= 16 + 1, "{}", deleted.order.len());
        assert_eq!(deleted.len(), 0);
    }
}
