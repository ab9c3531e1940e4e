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
//! Admission: an object a write stored enters the cache only if its key is cached already (the
//! new version replaces the old) or missed lately (a doorkeeper of the hashes of recently
//! missed keys; only a read's miss is remembered), whether or not there is room; an object a
//! read decoded enters at once while its shard has room, and a full shard on the same terms as
//! a write. Otherwise the object waits: a read's in the shard's one read slot, pushing out the
//! previous read's; a write's in the shard's probation queue (a quarter of the shard's
//! capacity, at least one object), pushing out the oldest there. Both are served to reads of
//! the same version. So a read followed by a write of the same key (what an informer does per
//! update) still decodes once, and the write is cached (the read's miss admits it); a lookup
//! of a cold key neither displaces a hot object nor pays for freeing one decoded long ago (the
//! read it pushes out was the previous one, still warm); and a write of a key nobody read
//! lately (an add, an item of the first list) neither evicts nor fills the cache: the object
//! it pushes out was written a few hundred writes before at most, and is freed by the writer's
//! thread while still warm, its handlers (on other threads) most likely done with it (a single
//! slot was too short: a handler's last reference, dropped on another thread, made the sync
//! slower than caching).
//! Freeing objects decoded long ago is what made both slow: measured at 100k realistic pods
//! (`informer-bench`, same-hour pairs), a cold `get` took 72-82 µs at the median when it
//! evicted such an object, against 27-30 µs when it did not; a compact informer's cold sync
//! took 8.2-9.7 s when every listed pod was cached (each evicting one cached about a thousand
//! pods before), 6.3-7.6 s with written objects on probation (12.0-12.3 s with a single
//! slot). Filling an empty cache with written objects held their decoded size for nobody:
//! a compact informer's RSS after its first sync was 105-108 MiB at 10k pods (185-197 MiB at
//! 100k) when the first 1,024 listed pods stayed cached, 51-54 MiB (127-145 MiB) when they
//! waited on probation like the rest, with the same sync time and cold `get`s.

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

/// Each shard's probation holds one object per this many it can cache (at least one): deep
/// enough that an object's last reference is usually the store's, not a handler's still at
/// work on another thread, when it leaves.
const PROBATION_SHARE: usize = 4;

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
    /// The objects last written without being admitted, oldest first, at most
    /// `DecodedCache::probation` of them.
    probation: VecDeque<(ObjectKey, Cached<K>)>,
    /// The object the last read that was not admitted decoded. A key is at most once in
    /// `probation` and `last_read` together, and never there while cached.
    last_read: Option<(ObjectKey, Cached<K>)>,
}

/// What asks [`DecodedCache::admit`] to cache an object: a key becomes hot by being read,
/// so only a read's miss is remembered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write,
}

/// What a cache operation took out: dropped by the caller after it released its locks (a
/// decoded object can be large to free).
pub(crate) type Evicted<K> = Vec<Arc<K>>;

pub(crate) struct DecodedCache<K> {
    shards: Box<[Mutex<Shard<K>>]>,
    per_shard: usize,
    /// Objects on probation per shard, at most.
    probation: usize,
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
                    probation: VecDeque::new(),
                    last_read: None,
                })
            })
            .collect();
        Self {
            shards,
            per_shard,
            probation: (per_shard / PROBATION_SHARE).max(1),
            hasher: RandomState::default(),
        }
    }

    /// The most objects it holds, probation left out (a quarter more at most).
    pub(crate) fn capacity(&self) -> usize {
        self.per_shard * self.shards.len()
    }

    /// How many objects it holds now, probation left out.
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().map.len()).sum()
    }

    /// How many objects wait outside it now (in the shards' read slots and probation queues):
    /// at most a quarter of the capacity plus one per shard.
    pub(crate) fn waiting(&self) -> usize {
        self.shards.iter().map(|s| s.lock().waiting().count()).sum()
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
        shard
            .waiting()
            .find(|(k, cached)| k.as_str() == key && cached.stamp == stamp)
            .map(|(_, cached)| cached.obj.clone())
    }

    /// Caches `obj` (decoded by a read that missed, or just written: `by`) as the version of
    /// `key` with `stamp` (unless a newer version is cached or waits), unless `key` is not cached (in any version) nor was
    /// missed lately and either `obj` was written or its shard is full: `obj` then waits (a
    /// read's in the shard's read slot, a write's in its probation queue) unless a newer
    /// version of `key` waits already, and a read's key is remembered, so that its next miss
    /// caches it. Returns whether it was cached.
    pub(crate) fn admit(
        &self,
        key: &ObjectKey,
        stamp: u64,
        obj: Arc<K>,
        by: Access,
        evicted: &mut Evicted<K>,
    ) -> bool {
        if self.per_shard == 0 {
            return false;
        }
        let hash = self.hasher.hash_one(key.as_str());
        let mut shard = self.shard_of(hash).lock();
        if shard.newer_waits(key, stamp) {
            return false;
        }
        // A read is cached at once while the shard has room; a write only if its key is
        // cached or missed a read lately, room or not (see the module docs).
        if (by == Access::Write || shard.map.len() >= self.per_shard)
            && !shard.map.contains_key(key.as_str())
            && !shard.missed_before(hash, by, self.per_shard)
        {
            let waiting = Cached {
                stamp,
                obj,
                referenced: false,
            };
            if let Some(older) = shard.take_waiting(key.as_str()) {
                evicted.push(older.obj);
            }
            match by {
                // A read's object is freed by the next read's, while still warm: a lookup
                // should not pay for freeing an object decoded many lookups before.
                Access::Read => {
                    if let Some((_, out)) = shard.last_read.replace((key.clone(), waiting)) {
                        evicted.push(out.obj);
                    }
                }
                // A written object may still be in a handler's hands on another thread: it
                // waits longer, so that the store's reference is usually the last.
                Access::Write => {
                    if shard.probation.len() >= self.probation {
                        evicted.extend(shard.probation.pop_front().map(|(_, c)| c.obj));
                    }
                    shard.probation.push_back((key.clone(), waiting));
                }
            }
            return false;
        }
        shard.place(self.per_shard, key, stamp, obj, evicted);
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
            None => shard.take_waiting(key)?,
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
            evicted.extend(shard.probation.drain(..).map(|(_, c)| c.obj));
            evicted.extend(shard.last_read.take().map(|(_, c)| c.obj));
            shard.ring.clear();
            shard.doorkeeper.clear();
        }
    }
}

impl<K> Shard<K> {
    /// Whether a newer version of `key` than `stamp` waits (in the read slot or probation).
    fn newer_waits(&self, key: &ObjectKey, stamp: u64) -> bool {
        self.waiting()
            .any(|(k, waiting)| k == key && waiting.stamp > stamp)
    }

    /// Caches `obj` as the version of `key` with `stamp` unless a newer version is cached;
    /// an older version waiting leaves (the caller checked that no newer one waits).
    fn place(
        &mut self,
        capacity: usize,
        key: &ObjectKey,
        stamp: u64,
        obj: Arc<K>,
        evicted: &mut Evicted<K>,
    ) {
        if let Some(waiting) = self.take_waiting(key.as_str()) {
            evicted.push(waiting.obj);
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

    /// The objects waiting to be admitted: the last read's, then the written ones.
    fn waiting(&self) -> impl Iterator<Item = &(ObjectKey, Cached<K>)> {
        self.last_read.iter().chain(self.probation.iter())
    }

    /// Takes `key`'s waiting object (from the read slot or probation), if there is one.
    fn take_waiting(&mut self, key: &str) -> Option<Cached<K>> {
        if matches!(&self.last_read, Some((k, _)) if k.as_str() == key) {
            return self.last_read.take().map(|(_, c)| c);
        }
        let at = self.probation.iter().position(|(k, _)| k.as_str() == key)?;
        self.probation.remove(at).map(|(_, c)| c)
    }

    /// Whether the key with `hash` missed lately (forgetting it if so); else, for a read,
    /// remembers it, forgetting the oldest miss once `capacity` objects' worth are remembered.
    fn missed_before(&mut self, hash: u64, by: Access, capacity: usize) -> bool {
        if let Some(at) = self.doorkeeper.iter().position(|&seen| seen == hash) {
            self.doorkeeper.remove(at);
            return true;
        }
        if by == Access::Write {
            return false;
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

    impl<K> DecodedCache<K> {
        /// Caches `obj` as the version of `key` with `stamp` whatever the admission rule,
        /// unless a newer version is cached or waits.
        fn insert(&self, key: &ObjectKey, stamp: u64, obj: Arc<K>, evicted: &mut Evicted<K>) {
            if self.per_shard == 0 {
                return;
            }
            let mut shard = self.shard(key.as_str()).lock();
            if !shard.newer_waits(key, stamp) {
                shard.place(self.per_shard, key, stamp, obj, evicted);
            }
        }
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
    fn a_cold_read_waits_in_the_read_slot_until_its_keys_second_miss() {
        let (cache, mut evicted) = full_cache();
        let x = Arc::new(10);
        assert!(!cache.admit(&key("x"), 1, x.clone(), Access::Read, &mut evicted));
        assert!(evicted.is_empty(), "nothing evicted for a cold read");
        assert_eq!(cache.len(), 4);
        assert!(
            Arc::ptr_eq(&cache.get("x", 1).unwrap(), &x),
            "read back from the read slot"
        );
        assert!(cache.get("x", 2).is_none(), "only its own version");
        // Another cold read takes the slot.
        assert!(!cache.admit(&key("y"), 1, Arc::new(11), Access::Read, &mut evicted));
        assert_eq!(evicted.len(), 1);
        assert!(Arc::ptr_eq(&evicted[0], &x));
        assert!(cache.get("x", 1).is_none());
        // x's second miss admits it, evicting one written object.
        evicted.clear();
        let x2 = Arc::new(10);
        assert!(cache.admit(&key("x"), 1, x2.clone(), Access::Read, &mut evicted));
        assert_eq!(evicted.len(), 1);
        assert!(Arc::ptr_eq(&cache.get("x", 1).unwrap(), &x2));
        assert_eq!(cache.len(), 4);
        // Reads are admitted at once while there is room.
        let roomy = DecodedCache::new(4);
        assert!(roomy.admit(&key("z"), 1, Arc::new(1), Access::Read, &mut evicted));
    }

    #[test]
    fn a_write_is_cached_only_if_its_key_is_or_was_read_lately() {
        let (cache, mut evicted) = full_cache();
        // Nobody read "a": it waits on probation, and is not remembered.
        let a = Arc::new(10);
        assert!(!cache.admit(&key("a"), 1, a.clone(), Access::Write, &mut evicted));
        assert!(evicted.is_empty());
        assert!(Arc::ptr_eq(&cache.get("a", 1).unwrap(), &a));
        assert!(!cache.admit(&key("a"), 2, Arc::new(11), Access::Write, &mut evicted));
        assert!(
            !cache.admit(&key("a"), 2, Arc::new(11), Access::Read, &mut evicted),
            "a first miss"
        );
        // Read (and missed), then written: cached, as an informer's update is.
        evicted.clear();
        assert!(!cache.admit(&key("b"), 1, Arc::new(20), Access::Read, &mut evicted));
        let b = Arc::new(21);
        assert!(cache.admit(&key("b"), 2, b.clone(), Access::Write, &mut evicted));
        assert!(Arc::ptr_eq(&cache.get("b", 2).unwrap(), &b));
        // A cached key's new version replaces the old (b's admission evicted k0, the first
        // unreferenced one).
        let k3 = Arc::new(100);
        assert!(cache.admit(&key("k3"), 2, k3.clone(), Access::Write, &mut evicted));
        assert!(Arc::ptr_eq(&cache.get("k3", 2).unwrap(), &k3));
        assert_eq!(cache.len(), 4);
        // Room or not: an empty cache stays empty.
        let roomy = DecodedCache::new(4);
        let c = Arc::new(30);
        assert!(!roomy.admit(&key("c"), 1, c.clone(), Access::Write, &mut evicted));
        assert_eq!(roomy.len(), 0);
        assert!(
            Arc::ptr_eq(&roomy.get("c", 1).unwrap(), &c),
            "served from probation"
        );
    }

    #[test]
    fn written_objects_wait_a_quarter_of_a_shards_capacity_deep_reads_one() {
        let cache = DecodedCache::new(64);
        let mut evicted = Vec::new();
        for i in 0..64 {
            cache.insert(&key(&format!("k{i}")), 1, Arc::new(i), &mut evicted);
        }
        let waiting: Vec<Arc<usize>> = (0..16).map(|i| Arc::new(100 + i)).collect();
        for (i, w) in waiting.iter().enumerate() {
            let k = key(&format!("w{i}"));
            assert!(!cache.admit(&k, 1, w.clone(), Access::Write, &mut evicted));
        }
        assert!(evicted.is_empty(), "sixteen wait without evicting");
        // A read's object waits apart, alone: two cold reads push out only the first of them.
        assert!(!cache.admit(&key("r0"), 1, Arc::new(200), Access::Read, &mut evicted));
        assert!(!cache.admit(&key("r1"), 1, Arc::new(201), Access::Read, &mut evicted));
        assert_eq!(evicted.len(), 1);
        assert_eq!(*evicted[0], 200);
        evicted.clear();
        for (i, w) in waiting.iter().enumerate() {
            assert!(Arc::ptr_eq(&cache.get(&format!("w{i}"), 1).unwrap(), w));
        }
        assert!(!cache.admit(&key("w16"), 1, Arc::new(116), Access::Write, &mut evicted));
        assert_eq!(evicted.len(), 1);
        assert!(
            Arc::ptr_eq(&evicted[0], &waiting[0]),
            "the oldest leaves first"
        );
        assert!(cache.get("w0", 1).is_none());
        assert_eq!(cache.len(), 64);
    }

    #[test]
    fn a_write_or_remove_takes_the_keys_probation_object() {
        let (cache, mut evicted) = full_cache();
        assert!(!cache.admit(&key("x"), 1, Arc::new(10), Access::Read, &mut evicted));
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
        assert!(!cache.admit(&key("y"), 3, y.clone(), Access::Read, &mut evicted));
        // A reader that decoded an older version does not displace it.
        assert!(!cache.admit(&key("y"), 2, Arc::new(9), Access::Read, &mut evicted));
        assert!(Arc::ptr_eq(&cache.get("y", 3).unwrap(), &y));
        assert!(Arc::ptr_eq(
            &cache.remove("y", 3, &mut evicted).unwrap(),
            &y
        ));
        assert!(cache.get("y", 3).is_none());
        assert!(!cache.admit(&key("w"), 1, Arc::new(12), Access::Read, &mut evicted));
        cache.clear(&mut evicted);
        assert!(
            cache.get("w", 1).is_none(),
            "clear empties the probation queue"
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
