//! The bounded cache of decoded objects: key → (stamp of the stored version, `Arc<K>`).
//!
//! Every write gives the stored entry a new stamp, larger than every earlier one, under the
//! store's write lock; the cache answers a lookup only for the stamp the store holds now, so it
//! can never hand out an older version, whatever the order in which readers fill it. Writers
//! also replace or drop the key's cached object under the write lock, so a stale object does not
//! stay in memory.
//!
//! Eviction is CLOCK (second chance) per shard; shards keep readers of different keys off each
//! other's mutex.

use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::sync::Arc;

use informer_core::ObjectKey;
use parking_lot::Mutex;

use crate::index::{Map, RandomState};

/// Up to this many objects per shard before another shard is added (up to [`MAX_SHARDS`]).
const SHARD_SIZE: usize = 64;
const MAX_SHARDS: usize = 16;

struct Cached<K> {
    stamp: u64,
    obj: Arc<K>,
    referenced: bool,
}

struct Shard<K> {
    map: Map<ObjectKey, Cached<K>>,
    /// The CLOCK ring: every cached key once, possibly also keys since removed (skipped and
    /// dropped when the hand reaches them; the ring is compacted when they pile up).
    ring: VecDeque<ObjectKey>,
}

/// What a cache operation took out: dropped by the caller after it released its locks (a
/// decoded object can be large to free).
pub(crate) type Evicted<K> = Vec<Arc<K>>;

pub(crate) struct DecodedCache<K> {
    shards: Box<[Mutex<Shard<K>>]>,
    per_shard: usize,
    hasher: RandomState,
}

impl<K> DecodedCache<K> {
    /// A cache holding at most `capacity` objects (about: each shard holds
    /// `capacity / shards`, rounded up); 0 disables it.
    pub(crate) fn new(capacity: usize) -> Self {
        let count = capacity.div_ceil(SHARD_SIZE).clamp(1, MAX_SHARDS);
        let shards = (0..count)
            .map(|_| {
                Mutex::new(Shard {
                    map: Map::default(),
                    ring: VecDeque::new(),
                })
            })
            .collect();
        Self {
            shards,
            per_shard: capacity.div_ceil(count),
            hasher: RandomState::default(),
        }
    }

    /// The most objects it holds.
    pub(crate) fn capacity(&self) -> usize {
        self.per_shard * self.shards.len()
    }

    /// How many objects it holds now.
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().map.len()).sum()
    }

    fn shard(&self, key: &str) -> &Mutex<Shard<K>> {
        let index = (self.hasher.hash_one(key) as usize) % self.shards.len();
        &self.shards[index]
    }

    /// The cached object of `key` if it is the version with `stamp`.
    pub(crate) fn get(&self, key: &str, stamp: u64) -> Option<Arc<K>> {
        if self.per_shard == 0 {
            return None;
        }
        let mut shard = self.shard(key).lock();
        let cached = shard.map.get_mut(key)?;
        if cached.stamp != stamp {
            return None;
        }
        cached.referenced = true;
        Some(cached.obj.clone())
    }

    /// Caches `obj` as the version of `key` with `stamp`, unless a newer version is cached.
    pub(crate) fn insert(
        &self,
        key: &ObjectKey,
        stamp: u64,
        obj: Arc<K>,
        evicted: &mut Evicted<K>,
    ) {
        if self.per_shard == 0 {
            return;
        }
        let mut shard = self.shard(key.as_str()).lock();
        if let Some(cached) = shard.map.get_mut(key.as_str()) {
            if cached.stamp <= stamp {
                cached.stamp = stamp;
                cached.referenced = true;
                evicted.push(std::mem::replace(&mut cached.obj, obj));
            }
            return;
        }
        shard.make_room(self.per_shard, evicted);
        shard.ring.push_back(key.clone());
        shard.map.insert(
            key.clone(),
            Cached {
                stamp,
                obj,
                referenced: false,
            },
        );
    }

    /// Drops the cached object of `key`, returning it if it was the version with `stamp`.
    pub(crate) fn remove(&self, key: &str, stamp: u64, evicted: &mut Evicted<K>) -> Option<Arc<K>> {
        if self.per_shard == 0 {
            return None;
        }
        let mut shard = self.shard(key).lock();
        let cached = shard.map.remove(key)?;
        shard.compact_ring();
        if cached.stamp == stamp {
            Some(cached.obj)
        } else {
            evicted.push(cached.obj);
            None
        }
    }

    /// Drops everything.
    pub(crate) fn clear(&self, evicted: &mut Evicted<K>) {
        for shard in self.shards.iter() {
            let mut shard = shard.lock();
            evicted.extend(shard.map.drain().map(|(_, c)| c.obj));
            shard.ring.clear();
        }
    }
}

impl<K> Shard<K> {
    /// Evicts until one more object fits.
    fn make_room(&mut self, capacity: usize, evicted: &mut Evicted<K>) {
        while self.map.len() >= capacity {
            let Some(key) = self.ring.pop_front() else {
                return;
            };
            match self.map.get_mut(key.as_str()) {
                // Gone already: the ring entry was stale.
                None => {}
                Some(cached) if cached.referenced => {
                    cached.referenced = false;
                    self.ring.push_back(key);
                }
                Some(_) => {
                    if let Some(cached) = self.map.remove(key.as_str()) {
                        evicted.push(cached.obj);
                    }
                }
            }
        }
    }

    /// Drops ring entries of removed keys once they outnumber the live ones.
    fn compact_ring(&mut self) {
        if self.ring.len() > 2 * self.map.len() + SHARD_SIZE {
            let map = &self.map;
            let mut seen = crate::index::Set::default();
            self.ring
                .retain(|k| map.contains_key(k.as_str()) && seen.insert(k.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::from_raw(name)
    }

    #[test]
    fn answers_only_for_the_current_stamp() {
        let cache = DecodedCache::new(8);
        let mut evicted = Vec::new();
        let v1 = Arc::new(1);
        cache.insert(&key("a"), 1, v1.clone(), &mut evicted);
        assert!(Arc::ptr_eq(&cache.get("a", 1).unwrap(), &v1));
        assert!(
            cache.get("a", 2).is_none(),
            "another version is never answered"
        );
        // A reader that decoded an older version does not displace a newer one.
        let v2 = Arc::new(2);
        cache.insert(&key("a"), 2, v2.clone(), &mut evicted);
        cache.insert(&key("a"), 1, Arc::new(1), &mut evicted);
        assert!(Arc::ptr_eq(&cache.get("a", 2).unwrap(), &v2));
        assert!(cache.remove("a", 1, &mut evicted).is_none());
        assert!(cache.get("a", 2).is_none(), "removed whatever its stamp");
        assert_eq!(cache.len(), 0);
    }

    #[test]
    fn stays_within_capacity_and_keeps_referenced_objects() {
        let cache = DecodedCache::new(4);
        assert_eq!(cache.capacity(), 4);
        let mut evicted = Vec::new();
        for i in 0..4 {
            cache.insert(&key(&format!("k{i}")), 1, Arc::new(i), &mut evicted);
        }
        // k0 is read: it gets a second chance, k1 goes first.
        assert!(cache.get("k0", 1).is_some());
        cache.insert(&key("k4"), 1, Arc::new(4), &mut evicted);
        assert_eq!(cache.len(), 4);
        assert!(cache.get("k0", 1).is_some());
        assert!(cache.get("k1", 1).is_none());
        assert_eq!(evicted.len(), 1);
        for i in 5..100 {
            cache.insert(&key(&format!("k{i}")), 1, Arc::new(i), &mut evicted);
            cache.remove(&format!("k{}", i - 1), 1, &mut evicted);
        }
        assert!(cache.len() <= 4);
        let ring: usize = cache.shards.iter().map(|s| s.lock().ring.len()).sum();
        assert!(ring <= 2 * 4 + SHARD_SIZE, "ring compacted: {ring}");
    }

    #[test]
    fn zero_capacity_holds_nothing() {
        let cache = DecodedCache::new(0);
        let mut evicted = Vec::new();
        cache.insert(&key("a"), 1, Arc::new(1), &mut evicted);
        assert!(cache.get("a", 1).is_none());
        assert_eq!(cache.len(), 0);
        assert_eq!(cache.capacity(), 0);
    }

    #[test]
    fn large_caches_are_sharded() {
        let cache = DecodedCache::<u8>::new(1_024);
        assert_eq!(cache.shards.len(), MAX_SHARDS);
        assert_eq!(cache.capacity(), 1_024);
        let mut evicted = Vec::new();
        for i in 0..5_000 {
            cache.insert(&key(&format!("k{i}")), 1, Arc::new(0), &mut evicted);
        }
        assert!(cache.len() <= 1_024);
    }
}
