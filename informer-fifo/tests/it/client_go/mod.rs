//! client-go's own queue tests, ported scenario by scenario to our queues: one module per
//! upstream file of `tools/cache` (`delta_fifo_test.go` → [`delta_fifo`] on `DeltaFifo`,
//! `the_real_fifo_test.go` → [`the_real_fifo`] on `InOrderFifo`, `fifo_test.go` → [`fifo`] on
//! `DeltaFifo`, whose per-key grouping is the old `FIFO`'s).
//!
//! Each test is named after the upstream test it ports (its name without the `Test` prefix, in
//! snake_case; table cases are tests of a module named after the table's test) and says which one
//! in its first doc line. Where we differ on purpose the test asserts our behaviour and says
//! "deviation"; `docs/parity/cache-workqueue.md` lists every case and every deviation.
//!
//! Upstream's test object is `{name, val}` keyed by name; ours is a cluster-scoped
//! [`JsonObject`] (its key is its name) with `val` as its resourceVersion. Upstream's
//! `DeltaFIFO` emits `Sync` for listed objects unless `EmitDeltaTypeReplaced` is set, which every
//! informer sets; ours always emits `Replaced`, so expectations read `Replaced` where upstream's
//! default would say `Sync`.

mod delta_fifo;
mod fifo;
mod the_real_fifo;

use std::fmt::Display;
use std::sync::Arc;
use std::time::Duration;

use informer_core::{Delta, KnownObjects, ObjectOrTombstone, Queue, QueueError};
use informer_testing::JsonObject;

pub use crate::support::{delta_fifo, in_order};
use crate::support::{store, try_pop_with};

/// Upstream's `mkFifoObj(name, val)`: keyed by `name`, `val` kept as the resourceVersion.
pub fn mk(name: &str, val: impl Display) -> Arc<JsonObject> {
    Arc::new(JsonObject::new(None, name).with_resource_version(val.to_string()))
}

/// Upstream's `literalListerGetter`: the store the queue is told about.
pub fn known(objects: &[&Arc<JsonObject>]) -> Arc<dyn KnownObjects<JsonObject>> {
    store(objects)
}

/// `Kind name@val`, or `Deleted(tombstone key) name@val` for a tombstone.
pub fn label(delta: &Delta<JsonObject>) -> String {
    let obj = delta.object.object();
    let name = obj.metadata.name.as_deref().unwrap_or("");
    let val = obj.metadata.resource_version.as_deref().unwrap_or("");
    match &delta.object {
        ObjectOrTombstone::Tombstone(t) => {
            format!("{:?}(tombstone {}) {name}@{val}", delta.kind, t.key)
        }
        ObjectOrTombstone::Object(_) => format!("{:?} {name}@{val}", delta.kind),
    }
}

/// Labels of a list of deltas.
pub fn labels(deltas: &[Delta<JsonObject>]) -> Vec<String> {
    deltas.iter().map(label).collect()
}

/// Pops one batch if one is ready now (`None` if the pop would wait).
pub fn try_pop(q: &dyn Queue<JsonObject>) -> Option<Vec<String>> {
    try_pop_with(q, labels)
}

/// Pops one batch that must be ready now.
pub fn pop(q: &dyn Queue<JsonObject>) -> Vec<String> {
    try_pop(q).expect("a batch ready to pop")
}

/// Upstream's `testPop`: the newest delta of the next batch.
pub fn pop_newest(q: &dyn Queue<JsonObject>) -> String {
    pop(q).pop().expect("a non-empty batch")
}

/// Pops every batch ready now.
pub fn drain(q: &dyn Queue<JsonObject>) -> Vec<Vec<String>> {
    std::iter::from_fn(|| try_pop(q)).collect()
}

/// Everything ready now, as one flat sequence of deltas (upstream's `collapseDeltas`).
pub fn drain_flat(q: &dyn Queue<JsonObject>) -> Vec<String> {
    drain(q).into_iter().flatten().collect()
}

/// Waits (at most `limit`) for one batch; the labels of its deltas.
pub async fn pop_within(
    q: &dyn Queue<JsonObject>,
    limit: Duration,
) -> Result<Vec<String>, QueueError> {
    let mut got = Vec::new();
    tokio::time::timeout(
        limit,
        q.pop(&mut |deltas| {
            got = labels(deltas);
            Ok(())
        }),
    )
    .await
    .expect("pop returned in time")?;
    Ok(got)
}

/// Upstream's `TestXxx_basic`: two producers on their own threads add 500 objects each, in
/// increasing order of `val`; one consumer pops all 1000, one object per pop, and sees each
/// producer's objects in the order they were added.
pub async fn two_producers_keep_their_order(q: Arc<dyn Queue<JsonObject>>) {
    const AMOUNT: u64 = 500;
    let producers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|producer| {
            let q = Arc::clone(&q);
            std::thread::spawn(move || {
                for i in 0..AMOUNT {
                    q.add(mk(&format!("{producer}-{i}"), i + 1)).unwrap();
                }
            })
        })
        .collect();
    let mut last = [0u64; 2];
    for _ in 0..2 * AMOUNT {
        let batch = pop_within(q.as_ref(), Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!(batch.len(), 1, "one object per pop: {batch:?}");
        // "Added a-12@13"
        let (_, rest) = batch[0].split_once(' ').unwrap();
        let (name, val) = rest.split_once('@').unwrap();
        let producer = usize::from(!name.starts_with("a-"));
        let val: u64 = val.parse().unwrap();
        assert!(
            val > last[producer],
            "{name} with {val} out of order, last was {}",
            last[producer]
        );
        last[producer] = val;
    }
    for p in producers {
        p.join().unwrap();
    }
    assert_eq!(last, [AMOUNT, AMOUNT]);
}

/// Upstream's `TestXxx_PopShouldUnblockWhenClosed`: ten pops waiting on an empty queue all
/// return (closed) soon after `close`.
pub async fn pops_unblock_when_closed(q: Arc<dyn Queue<JsonObject>>) {
    let waiting: Vec<_> = (0..10)
        .map(|_| {
            let q = Arc::clone(&q);
            tokio::spawn(async move { q.pop(&mut |_| Ok(())).await })
        })
        .collect();
    tokio::task::yield_now().await;
    q.close();
    for pop in waiting {
        let result = tokio::time::timeout(Duration::from_millis(500), pop)
            .await
            .expect("pop returned after close")
            .unwrap();
        assert!(matches!(result, Err(QueueError::Closed)), "{result:?}");
    }
}

/// The key of an object, of a tombstone, and of a popped batch (its newest delta), as
/// upstream's `KeyOf` table checks them.
pub fn keys_of_objects_tombstones_and_batches() {
    let a = mk("A", 1);
    assert_eq!(ObjectOrTombstone::Object(a).key().unwrap().as_str(), "A");
    // A tombstone answers its own key, whatever object it carries.
    let b = Delta::tombstone(informer_core::ObjectKey::from_raw("B"), mk("other", 1));
    assert_eq!(b.object.key().unwrap().as_str(), "B");
    let c = [Delta::new(informer_core::DeltaType::Added, mk("C", 1))];
    assert_eq!(c.last().unwrap().object.key().unwrap().as_str(), "C");
    let d = [Delta::tombstone(
        informer_core::ObjectKey::from_raw("D"),
        mk("other", 1),
    )];
    assert_eq!(d.last().unwrap().object.key().unwrap().as_str(), "D");
}
