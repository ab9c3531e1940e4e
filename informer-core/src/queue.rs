//! The `Queue` trait: what sits between the reflector (producer) and the informer's processing
//! loop (consumer).

use std::sync::Arc;

use async_trait::async_trait;

use crate::{Delta, KeyError, KnownObjects, Listed, Object, ObjectKey, RawObject, StoreError};

/// What a pop's process function reports when it could not handle the deltas it was given.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProcessError {
    /// Put the deltas back (unless newer deltas for the same key were queued meanwhile) and
    /// report the error.
    #[error("processing failed; requeued")]
    Requeue(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Drop the deltas and report the error.
    #[error("processing failed; dropped")]
    Drop(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Why a queue operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    /// The queue is closed (and, for `pop`, drained).
    #[error("queue is closed")]
    Closed,
    /// An object given to the queue has no key.
    #[error("cannot key object")]
    Key(#[from] KeyError),
    /// The process function failed; see [`ProcessError`] for what happened to the deltas.
    #[error("processing popped deltas failed")]
    Process(#[from] ProcessError),
    /// A list entry kept as text ([`Listed::Encoded`]) could not be decoded by the store that
    /// asked for it (which breaks [`KnownObjects::decode_raw`]'s contract: the producer decoded
    /// the same text). A queue refuses the whole list rather than leave the object out.
    #[error("cannot decode the listed object {key}")]
    Decode {
        /// The entry's key.
        key: ObjectKey,
        /// What the store reported.
        #[source]
        source: StoreError,
    },
}

/// Decodes a listed object kept as text ([`Listed::Encoded`]) through the store that asked for
/// it: what a queue that does not keep the text does with such an entry. A failure names the
/// key ([`QueueError::Decode`]).
pub fn decode_listed<K>(
    known: &dyn KnownObjects<K>,
    key: &ObjectKey,
    raw: &RawObject,
) -> Result<Arc<K>, QueueError> {
    known.decode_raw(raw).map_err(|source| QueueError::Decode {
        key: key.clone(),
        source,
    })
}

/// The process function given to [`Queue::pop`].
pub type ProcessFn<'a, K> = dyn FnMut(&[Delta<K>]) -> Result<(), ProcessError> + Send + 'a;

/// A queue of deltas between a reflector and an informer.
///
/// Two backends ship in `informer-fifo`: `DeltaFifo` (per-key delta lists, client-go's
/// semantics) and an in-order FIFO (every event in arrival order). Both pass the conformance suite
/// in `informer-testing`, which a custom backend can run with one call.
///
/// # Contract
///
/// Implementers guarantee that:
/// - every method may be called from many threads; producers never block on a slow consumer
///   (queues are unbounded);
/// - [`pop`](Queue::pop) waits without busy-waiting or polling until there is something to pop,
///   hands one batch to `process` and returns its verdict. For `DeltaFifo` a batch is all pending
///   deltas of one key, oldest key first; for the in-order FIFO it is a run of deltas in arrival
///   order (a `replace` or `resync` is never split across batches);
/// - while `process` runs, that batch counts as not yet popped for [`has_synced`](Queue::has_synced);
/// - on [`ProcessError::Requeue`] the batch is put back (DeltaFifo: only if the key has not been
///   queued again meanwhile); on [`ProcessError::Drop`] it is discarded; either way `pop` returns
///   `Err(QueueError::Process(..))`;
/// - `replace(list, rv)` queues `Replaced` for every listed object and a `Deleted` tombstone for
///   every key known (to the queue's known-objects store, or still queued) but absent from the
///   list;
/// - `replace_listed(entries, rv, known)` is `replace` of the objects the entries stand for:
///   a [`Listed::Unchanged`] key stands for the object `known` holds under it (its
///   resourceVersion is the listed one). Its default resolves those keys with
///   [`KnownObjects::get_by_key`] and calls `replace`; a queue that overrides it may instead
///   treat an unchanged key as listed without queuing anything for it when nothing is
///   pending for the key (applying it would change nothing in the store); when something
///   is, it must queue `Replaced` with the known object, as `replace` would. A
///   [`Listed::Encoded`] entry stands for the object its text decodes to
///   ([`KnownObjects::decode_raw`]); a queue may keep it as text while it waits and decode it
///   when popped, handing the process function the decoded object with its text;
/// - `add_raw`, `update_raw` and the text of [`Listed::Object`] queue the same as `add`,
///   `update` and `replace`; a queue that overrides them keeps the text in the delta
///   ([`Delta::raw`]) for the store. The defaults drop it;
/// - `resync` queues `Sync` for every known object that has no pending delta;
/// - `has_synced` is true once the first `replace` has been called (or any other write came
///   first) and every item it queued has been popped and processed;
/// - after [`close`](Queue::close) every waiting and future `pop` returns
///   `Err(QueueError::Closed)` once the queue is drained; writes after close are ignored.
///
/// Callers may assume deltas of one key are handed out in the order they were queued.
#[async_trait]
pub trait Queue<K: Object>: Send + Sync {
    /// Queues an `Added` delta.
    fn add(&self, obj: Arc<K>) -> Result<(), QueueError>;
    /// Queues an `Updated` delta.
    fn update(&self, obj: Arc<K>) -> Result<(), QueueError>;
    /// Queues a `Deleted` delta (dropped if the key is neither known nor queued).
    fn delete(&self, obj: Arc<K>) -> Result<(), QueueError>;
    /// Queues the result of a full list: `Replaced` for each object, tombstones for the missing.
    fn replace(&self, objects: Vec<Arc<K>>, resource_version: &str) -> Result<(), QueueError>;
    /// Queues an `Added` delta carrying the object's JSON text as received. The default
    /// drops the text and calls [`add`](Queue::add).
    fn add_raw(&self, obj: Arc<K>, raw: RawObject) -> Result<(), QueueError> {
        let _ = raw;
        self.add(obj)
    }
    /// Queues an `Updated` delta carrying the object's JSON text as received. The default
    /// drops the text and calls [`update`](Queue::update).
    fn update_raw(&self, obj: Arc<K>, raw: RawObject) -> Result<(), QueueError> {
        let _ = raw;
        self.update(obj)
    }
    /// [`replace`](Queue::replace) with entries that may carry their JSON text, or only the
    /// key of an object `known` holds unchanged, or objects kept as text (see the contract).
    /// The default resolves unchanged keys through `known`, decodes entries kept as text with
    /// [`KnownObjects::decode_raw`] (one that fails refuses the list: [`QueueError::Decode`]),
    /// drops the texts and calls `replace`; a key `known` no longer holds is left out, as if
    /// the list had not had it.
    fn replace_listed(
        &self,
        entries: Vec<Listed<K>>,
        resource_version: &str,
        known: &dyn KnownObjects<K>,
    ) -> Result<(), QueueError> {
        let mut objects = Vec::with_capacity(entries.len());
        for entry in entries {
            match entry {
                Listed::Object { object, .. } => objects.push(object),
                Listed::Unchanged(key) => objects.extend(known.get_by_key(key.as_str())),
                Listed::Encoded { key, raw } => objects.push(decode_listed(known, &key, &raw)?),
            }
        }
        self.replace(objects, resource_version)
    }
    /// Queues `Sync` for every known object with no pending delta.
    fn resync(&self) -> Result<(), QueueError>;
    /// Waits for a batch and hands it to `process`.
    async fn pop(&self, process: &mut ProcessFn<'_, K>) -> Result<(), QueueError>;
    /// Whether the first full list has been completely popped and processed.
    fn has_synced(&self) -> bool;
    /// How many entries are waiting (keys for `DeltaFifo`, deltas for the in-order FIFO).
    fn len(&self) -> usize;
    /// Whether nothing is waiting.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Closes the queue: waiters wake up, writes are ignored, `pop` drains then reports closed.
    fn close(&self);
    /// Whether [`close`](Queue::close) was called.
    fn is_closed(&self) -> bool;
}
