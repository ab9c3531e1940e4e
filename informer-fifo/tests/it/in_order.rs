//! What is specific to `InOrderFifo`: arrival order across keys, batching, atomic replace and
//! resync, requeue of whole batches.

use std::sync::Arc;

use futures::FutureExt;
use informer_core::{KnownObjects, ProcessError, Queue, QueueError};
use informer_fifo::InOrderFifo;
use informer_testing::JsonObject;
use informer_testing::conformance::queue::KnownObjectsMap;

use crate::support::{in_order, obj, pop, store};

fn fifo(
    max_batch_size: usize,
    store: Option<&Arc<KnownObjectsMap<JsonObject>>>,
) -> InOrderFifo<JsonObject> {
    in_order(
        store.map(|s| Arc::clone(s) as Arc<dyn KnownObjects<JsonObject>>),
        max_batch_size,
    )
}

#[test]
fn keeps_arrival_order_across_keys_in_batches_of_at_most_max() {
    let q = fifo(2, None);
    q.add(obj("a", "1")).unwrap();
    q.add(obj("b", "1")).unwrap();
    q.update(obj("a", "2")).unwrap();
    assert_eq!(q.len(), 3, "len counts deltas");
    assert_eq!(q.max_batch_size(), 2);
    assert_eq!(pop(&q), ["a:Added@1", "b:Added@1"]);
    assert_eq!(pop(&q), ["a:Updated@2"]);
    assert!(q.is_empty());
}

#[test]
fn replace_is_one_batch_whatever_the_batch_size() {
    let (s1, t1) = (obj("s", "1"), obj("t", "1"));
    let store = store(&[&s1, &t1]);
    let q = fifo(2, Some(&store));
    q.add(obj("x", "1")).unwrap();
    q.add(obj("q", "1")).unwrap();
    q.replace(vec![obj("n", "1"), obj("s", "2"), obj("m", "1")], "9")
        .unwrap();
    q.add(obj("y", "1")).unwrap();
    assert_eq!(q.len(), 2 + 3 + 3 + 1);
    assert_eq!(pop(&q), ["x:Added@1", "q:Added@1"]);
    // Deletions first (queued keys' tombstones in first-queued order, then the store's), then
    // Replaced in list order: client-go's RealFIFO order.
    assert_eq!(
        pop(&q),
        [
            "x:Deleted(tombstone)@1",
            "q:Deleted(tombstone)@1",
            "t:Deleted(tombstone)@1",
            "n:Replaced@1",
            "s:Replaced@2",
            "m:Replaced@1",
        ]
    );
    assert_eq!(pop(&q), ["y:Added@1"]);
}

#[test]
fn replace_adds_no_tombstone_after_a_queued_deletion() {
    let q = fifo(10, None);
    q.add(obj("a", "1")).unwrap();
    q.delete(obj("a", "2")).unwrap();
    q.replace(Vec::new(), "3").unwrap();
    assert_eq!(pop(&q), ["a:Added@1", "a:Deleted@2"]);
    assert!(q.is_empty());
}

#[test]
fn resync_is_one_batch_of_the_keys_without_pending_deltas() {
    let (a, b, c) = (obj("a", "1"), obj("b", "1"), obj("c", "1"));
    let store = store(&[&a, &b, &c]);
    let q = fifo(1, Some(&store));
    q.update(obj("b", "2")).unwrap();
    q.resync().unwrap();
    assert_eq!(pop(&q), ["b:Updated@2"]);
    assert_eq!(pop(&q), ["a:Sync@1", "c:Sync@1"]);
}

#[test]
fn requeue_puts_the_whole_batch_back_first_even_if_its_keys_were_queued_again() {
    let q = fifo(10, None);
    q.add(obj("a", "1")).unwrap();
    q.add(obj("b", "1")).unwrap();
    let r = q
        .pop(&mut |_| {
            q.update(obj("a", "2")).unwrap();
            Err(ProcessError::Requeue("later".into()))
        })
        .now_or_never()
        .unwrap();
    assert!(matches!(
        r,
        Err(QueueError::Process(ProcessError::Requeue(_)))
    ));
    assert_eq!(pop(&q), ["a:Added@1", "b:Added@1", "a:Updated@2"]);
}

#[test]
fn a_requeued_replace_stays_atomic_and_initial() {
    let q = fifo(1, None);
    q.replace(vec![obj("a", "1"), obj("b", "1")], "1").unwrap();
    q.add(obj("c", "1")).unwrap();
    let _ = q
        .pop(&mut |_| Err(ProcessError::Requeue("later".into())))
        .now_or_never()
        .unwrap();
    assert!(!q.has_synced());
    assert_eq!(pop(&q), ["a:Replaced@1", "b:Replaced@1"]);
    assert!(q.has_synced());
    assert_eq!(pop(&q), ["c:Added@1"]);
}

#[test]
fn the_batch_being_processed_counts_as_pending() {
    let x1 = obj("x", "1");
    let store = store(&[&x1]);
    let q = fifo(10, Some(&store));
    q.update(obj("x", "2")).unwrap();
    q.pop(&mut |_| {
        q.resync().unwrap();
        Ok(())
    })
    .now_or_never()
    .unwrap()
    .unwrap();
    assert!(
        q.is_empty(),
        "no Sync with the store's stale x@1 while x@2 is being processed"
    );
}

#[test]
fn a_panicking_process_function_loses_nothing() {
    let q = fifo(10, None);
    q.add(obj("a", "1")).unwrap();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        q.pop(&mut |_| panic!("handler bug")).now_or_never()
    }));
    assert!(panicked.is_err());
    assert_eq!(pop(&q), ["a:Added@1"]);
}
