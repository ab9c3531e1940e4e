//! The slot table both stores keep their entries in, and the index functions as registered:
//! what `IndexedStore` and `CompactStore` share.
//! A store's item is what it keeps per object: the `Arc<K>` itself, or the object's encoding.

use std::sync::Arc;

use informer_core::{IndexFunc, ObjectKey};
use smallvec::SmallVec;

use crate::index::{Index, Map, SlotId, Values, normalize};

/// A registered index function and its name.
pub(crate) struct NamedIndexFunc<K> {
    pub(crate) name: String,
    pub(crate) func: IndexFunc<K>,
}

impl<K> Clone for NamedIndexFunc<K> {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            func: self.func.clone(),
        }
    }
}

/// Registered index functions sorted by name, as a store's builder hands them over.
pub(crate) fn sorted_funcs<K>(
    indexers: impl IntoIterator<Item = (String, IndexFunc<K>)>,
) -> Vec<NamedIndexFunc<K>> {
    let mut funcs: Vec<_> = indexers
        .into_iter()
        .map(|(name, func)| NamedIndexFunc { name, func })
        .collect();
    funcs.sort_by(|a, b| a.name.cmp(&b.name));
    funcs
}

/// The index values of one object, one slot per registered index in registration order.
pub(crate) type ValueSlots = SmallVec<[Values; 2]>;

/// Freshly computed, normalized values of one object for the index functions it was given.
pub(crate) type FreshValues = SmallVec<[Vec<String>; 2]>;

/// Runs every function of `funcs` on `obj` (user code).
pub(crate) fn fresh_values<K>(funcs: &[NamedIndexFunc<K>], obj: &K) -> FreshValues {
    funcs.iter().map(|f| normalize((f.func)(obj))).collect()
}

/// A stored item, its key, and the values it is currently filed under in each index.
pub(crate) struct Slot<T> {
    pub(crate) key: ObjectKey,
    pub(crate) item: T,
    pub(crate) values: ValueSlots,
}

/// The stored items: a slot table (indices file slot numbers) and key → slot.
///
/// Invariants: `positions` maps each stored key to an occupied slot holding that key; every
/// occupied slot is mapped; `free` lists exactly the unoccupied slots.
pub(crate) struct Content<T> {
    pub(crate) positions: Map<ObjectKey, SlotId>,
    pub(crate) slots: Vec<Option<Slot<T>>>,
    pub(crate) free: Vec<SlotId>,
}

impl<T> Content<T> {
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self {
            positions: Map::with_capacity_and_hasher(capacity, Default::default()),
            slots: Vec::with_capacity(capacity),
            free: Vec::new(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.positions.len()
    }

    pub(crate) fn slot(&self, id: SlotId) -> Option<&Slot<T>> {
        self.slots.get(id).and_then(Option::as_ref)
    }

    pub(crate) fn by_key(&self, key: &str) -> Option<&Slot<T>> {
        self.positions.get(key).and_then(|&id| self.slot(id))
    }

    pub(crate) fn occupied(&self) -> impl Iterator<Item = (SlotId, &Slot<T>)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(id, s)| Some((id, s.as_ref()?)))
    }

    /// The slot a new item goes to.
    pub(crate) fn vacant(&mut self) -> SlotId {
        self.free.pop().unwrap_or(self.slots.len())
    }

    /// Occupies `id` (as returned by [`Content::vacant`]).
    pub(crate) fn occupy(&mut self, id: SlotId, slot: Slot<T>) {
        self.positions.insert(slot.key.clone(), id);
        match self.slots.get_mut(id) {
            Some(vacant) => *vacant = Some(slot),
            None => self.slots.push(Some(slot)),
        }
    }

    /// Empties the slot of `key`.
    pub(crate) fn vacate(&mut self, key: &str) -> Option<(SlotId, Slot<T>)> {
        let id = self.positions.remove(key)?;
        let slot = self.slots.get_mut(id)?.take()?;
        self.free.push(id);
        Some((id, slot))
    }

    /// Inserts `item` under `key` into content that is being built (not yet shared), filing it
    /// under `fresh` values; a later duplicate of a key replaces the earlier one, as in any map
    /// insertion.
    pub(crate) fn build_insert(
        &mut self,
        indices: &mut [Index],
        key: ObjectKey,
        item: T,
        fresh: FreshValues,
    ) -> SlotId {
        if let Some((id, earlier)) = self.vacate(key.as_str()) {
            for (index, recorded) in indices.iter_mut().zip(&earlier.values) {
                index.remove_all(recorded, id);
            }
        }
        let id = self.vacant();
        let values = fresh
            .into_iter()
            .zip(indices.iter_mut())
            .map(|(fresh, index)| index.insert_all(fresh, id))
            .collect();
        self.occupy(id, Slot { key, item, values });
        id
    }

    /// Appends `count` indices built from `prepared` values (no user code runs here).
    pub(crate) fn file(
        &mut self,
        prepared: Vec<(SlotId, FreshValues)>,
        count: usize,
        indices: &mut Vec<Index>,
    ) {
        let mut added: Vec<Index> = (0..count).map(|_| Index::default()).collect();
        for (id, fresh) in prepared {
            if let Some(Some(slot)) = self.slots.get_mut(id) {
                for (index, values) in added.iter_mut().zip(fresh) {
                    slot.values.push(index.insert_all(values, id));
                }
            }
        }
        indices.extend(added);
    }
}

/// Unfiles a removed slot's recorded values from every index.
pub(crate) fn unfile(indices: &mut [Index], id: SlotId, values: &ValueSlots) {
    for (index, recorded) in indices.iter_mut().zip(values) {
        index.remove_all(recorded, id);
    }
}

/// Moves slot `id` from its recorded values to `fresh`, index by index, touching only the
/// values that differ; returns the new record.
pub(crate) fn refile(
    indices: &mut [Index],
    id: SlotId,
    recorded: ValueSlots,
    fresh: FreshValues,
) -> ValueSlots {
    recorded
        .into_iter()
        .zip(fresh)
        .zip(indices.iter_mut())
        .map(|((recorded, fresh), index)| index.update(recorded, fresh, id))
        .collect()
}

/// Files a new slot `id` under `fresh`; returns the record.
pub(crate) fn file_new(indices: &mut [Index], id: SlotId, fresh: FreshValues) -> ValueSlots {
    fresh
        .into_iter()
        .zip(indices.iter_mut())
        .map(|(fresh, index)| index.insert_all(fresh, id))
        .collect()
}

/// A shared handle on registered functions.
pub(crate) type Funcs<K> = Arc<[NamedIndexFunc<K>]>;
