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
//!
//! Writes always cache the object written (the likeliest next read). A read that misses is
//! admitted into a full shard only on its key's second miss within the recent past (a
//! doorkeeper of the hashes of recently missed keys); until then its object waits in the
//! shard's one probation slot, replacing the one there, so that a read followed by a write of
//! the same key (what an informer does per event) still decodes once. A lookup of a cold key
//! then neither displaces a hot object nor pays for freeing one decoded long ago, which is
//! what made such a lookup slow: measured at 100k realistic pods with a full cache
//! (`informer-bench`, two pairs in the same hour), a cold `get` took 72-82 µs at the median
//! when it evicted an object decoded long before, against 27-30 µs when it did not.

use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::sync::Arc;

use informer_core::ObjectKey;
use parking_lot::Mutex;

use crate::index::{Map, RandomState};

/// Up to this many objects per shard before another shard is added (up to [`MAX_SHARDS`]).
const SHARD_SIZE: usize = 64;
const MAX_SHARDS: usize = 16;

/// Each shard's doorkeeper remembers this many missed keys per object it can hold.
const DOORKEEPER_PER_OBJECT: usize = 4;

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
    /// Hashes of the keys reads missed lately, oldest first, at most
    /// [`DOORKEEPER_PER_OBJECT`] per object the shard holds (exact: a key is forgotten only
    /// when that many other misses came after it).
    doorkeeper: VecDeque<u64>,
    /// The object the last read that was not admitted decoded.
    probation: Option<(ObjectKey, Cached<K>)>,
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
        let per_shard = capacity.div_ceil(count);
        let shards = (0..count)
            .map(|_| {
                Mutex::new(Shard {
                    map: Map::default(),
                    ring: VecDeque::new(),
                    doorkeeper: VecDeque::new(),
                    probation: None,
                })
            })
            .collect();
        Self {
            shards,
            per_shard,
            hasher: RandomState::default(),
        }
    }

    /// The most objects it holds, probation slots left out (one per shard).
    pub(crate) fn capacity(&self) -> usize {
        self.per_shard * self.shards.len()
    }

    /// How many objects it holds now, probation slots left out.
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().map.len()).sum()
    }

    fn shard(&self, key: &str) -> &Mutex<Shard<K>> {
        self.shard_of(self.hasher.hash_one(key))
    }

    fn shard_of(&self, hash: u64) -> &Mutex<Shard<K>> {
        &self.shards[(hash as usize) % self.shards.len()]
    }

    /// The cached object of `key` if it is the version with `stamp`.
    pub(crate) fn get(&self, key: &str, stamp: u64) -> Option<Arc<K>> {
        if self.per_shard == 0 {
            return None;
        }
        let mut shard = self.shard(key).lock();
        if let Some(cached) = shard.map.get_mut(key) {
            if cached.stamp != stamp {
                return None;
            }
            cached.referenced = true;
            return Some(cached.obj.clone());
        }
        match &shard.probation {
            Some((k, cached)) if k.as_str() == key && cached.stamp == stamp => {
                Some(cached.obj.clone())
            }
            _ => None,
        }
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
        shard.insert(self.per_shard, key, stamp, obj, evicted);
    }

    /// Caches `obj`, which a read that missed decoded, as [`insert`](Self::insert) does, unless
    /// its shard is full and `key` is not cached (in any version) nor was missed lately: the key
    /// is then remembered, so that its next miss caches it, and `obj` takes the shard's
    /// probation slot (unless a newer version of `key` holds it). Returns whether it was
    /// cached.
    pub(crate) fn insert_read(
        &self,
        key: &ObjectKey,
        stamp: u64,
        obj: Arc<K>,
        evicted: &mut Evicted<K>,
    ) -> bool {
        if self.per_shard == 0 {
            return false;
        }
        let hash = self.hasher.hash_one(key.as_str());
        let mut shard = self.shard_of(hash).lock();
        if matches!(&shard.probation, Some((k, waiting)) if k == key && waiting.stamp > stamp) {
            return false;
        }
        if shard.map.len() >= self.per_shard
            && !shard.map.contains_key(key.as_str())
            && !shard.missed_before(hash, self.per_shard)
        {
            let waiting = Cached {
                stamp,
                obj,
                referenced: false,
            };
            if let Some((_, out)) = shard.probation.replace((key.clone(), waiting)) {
                evicted.push(out.obj);
            }
            return false;
        }
        shard.insert(self.per_shard, key, stamp, obj, evicted);
        true
    }

    /// Drops the cached object of `key`, returning it if it was the version with `stamp`.
    pub(crate) fn remove(&self, key: &str, stamp: u64, evicted: &mut Evicted<K>) -> Option<Arc<K>> {
        if self.per_shard == 0 {
            return None;
        }
        let mut shard = self.shard(key).lock();
        let cached = match shard.map.remove(key) {
            Some(cached) => {
                shard.compact_ring();
                cached
            }
            None => shard.take_probation(key)?,
        };
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
            evicted.extend(shard.probation.take().map(|(_, c)| c.obj));
            shard.ring.clear();
            shard.doorkeeper.clear();
        }
    }
}

impl<K> Shard<K> {
    /// [`DecodedCache::insert`] within this self.
    fn insert(
        &mut self,
        capacity: usize,
        key: &ObjectKey,
        stamp: u64,
        obj: Arc<K>,
        evicted: &mut Evicted<K>,
    ) {
        // A key is never both cached and on probation: a newer version waiting there wins,
        // an older one leaves.
        if let Some((k, waiting)) = &self.probation
            && k == key
        {
            if waiting.stamp > stamp {
                return;
            }
            if let Some(waiting) = self.take_probation(key.as_str()) {
                evicted.push(waiting.obj);
            }
        }
        if let Some(cached) = self.map.get_mut(key.as_str()) {
            if cached.stamp <= stamp {
                cached.stamp = stamp;
                cached.referenced = true;
                evicted.push(std::mem::replace(&mut cached.obj, obj));
            }
            return;
        }
        self.make_room(capacity, evicted);
        self.ring.push_back(key.clone());
        self.map.insert(
            key.clone(),
            Cached {
                stamp,
                obj,
                referenced: false,
            },
        );
    }

    /// Takes the probation slot's object if it is `key`'s.
    fn take_probation(&mut self, key: &str) -> Option<Cached<K>> {
        match &self.probation {
            Some((k, _)) if k.as_str() == key => self.probation.take().map(|(_, c)| c),
            _ => None,
        }
    }

    /// Whether the key with `hash` missed lately (forgetting it if so); else remembers it,
    /// forgetting the oldest miss once `capacity` objects' worth are remembered.
    fn missed_before(&mut self, hash: u64, capacity: usize) -> bool {
        if let Some(at) = self.doorkeeper.iter().position(|&seen| seen == hash) {
            self.doorkeeper.remove(at);
            return true;
        }
        if self.doorkeeper.len() >= capacity * DOORKEEPER_PER_OBJECT {
            self.doorkeeper.pop_front();
        }
        self.doorkeeper.push_back(hash);
        false
    }

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

    /// A full cache: keys `k0`..`k3` written.
    fn full_cache() -> (DecodedCache<usize>, Vec<Arc<usize>>) {
        let cache = DecodedCache::new(4);
        let mut evicted = Vec::new();
        for i in 0..4 {
            cache.insert(&key(&format!("k{i}")), 1, Arc::new(i), &mut evicted);
        }
        assert!(evicted.is_empty());
        (cache, evicted)
    }

    #[test]
    fn a_cold_read_waits_in_probation_until_its_keys_second_miss() {
        let (cache, mut evicted) = full_cache();
        let x = Arc::new(10);
        assert!(!cache.insert_read(&key("x"), 1, x.clone(), &mut evicted));
        assert!(evicted.is_empty(), "nothing evicted for a cold read");
        assert_eq!(cache.len(), 4);
        assert!(
            Arc::ptr_eq(&cache.get("x", 1).unwrap(), &x),
            "read back from probation"
        );
        assert!(cache.get("x", 2).is_none(), "only its own version");
        // Another cold read takes the slot.
        assert!(!cache.insert_read(&key("y"), 1, Arc::new(11), &mut evicted));
        assert_eq!(evicted.len(), 1);
        assert!(Arc::ptr_eq(&evicted[0], &x));
        assert!(cache.get("x", 1).is_none());
        // x's second miss admits it, evicting one written object.
        evicted.clear();
        let x2 = Arc::new(10);
        assert!(cache.insert_read(&key("x"), 1, x2.clone(), &mut evicted));
        assert_eq!(evicted.len(), 1);
        assert!(Arc::ptr_eq(&cache.get("x", 1).unwrap(), &x2));
        assert_eq!(cache.len(), 4);
        // Reads are admitted at once while there is room.
        let roomy = DecodedCache::new(4);
        assert!(roomy.insert_read(&key("z"), 1, Arc::new(1), &mut evicted));
    }

    #[test]
    fn a_write_or_remove_takes_the_keys_probation_object() {
        let (cache, mut evicted) = full_cache();
        assert!(!cache.insert_read(&key("x"), 1, Arc::new(10), &mut evicted));
        let newer = Arc::new(20);
        cache.insert(&key("x"), 2, newer.clone(), &mut evicted);
        assert!(
            evicted.iter().any(|o| **o == 10),
            "the older version left probation"
        );
        assert!(cache.get("x", 1).is_none());
        assert!(Arc::ptr_eq(&cache.get("x", 2).unwrap(), &newer));

        let (cache, mut evicted) = full_cache();
        let y = Arc::new(11);
        assert!(!cache.insert_read(&key("y"), 3, y.clone(), &mut evicted));
        // A reader that decoded an older version does not displace it.
        assert!(!cache.insert_read(&key("y"), 2, Arc::new(9), &mut evicted));
        assert!(Arc::ptr_eq(&cache.get("y", 3).unwrap(), &y));
        assert!(Arc::ptr_eq(
            &cache.remove("y", 3, &mut evicted).unwrap(),
            &y
        ));
        assert!(cache.get("y", 3).is_none());
        assert!(!cache.insert_read(&key("w"), 1, Arc::new(12), &mut evicted));
        cache.clear(&mut evicted);
        assert!(
            cache.get("w", 1).is_none(),
            "clear empties the probation slot"
        );
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
