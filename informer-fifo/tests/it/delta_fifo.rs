//! What is specific to `DeltaFifo`: grouping by key, the deletion merge, requeue rules, the
//! batch in flight counting as pending, serialized pops.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use futures::FutureExt;
use informer_core::{ObjectKey, ProcessError, Queue, QueueError};
use informer_fifo::{DeltaFifo, DeltaFifoConfig};
use informer_testing::JsonObject;
use informer_testing::conformance::queue::KnownObjectsMap;

use crate::support::{delta_fifo, labels, obj, pop, store};

fn fifo() -> DeltaFifo<JsonObject> {
    delta_fifo(None)
}

fn fifo_with(store: &Arc<KnownObjectsMap<JsonObject>>) -> DeltaFifo<JsonObject> {
    delta_fifo(Some(Arc::clone(store) as _))
}

#[test]
fn pops_one_key_with_all_its_deltas_in_first_queued_order() {
    let q = fifo();
    q.add(obj("a", "1")).unwrap();
    q.add(obj("b", "1")).unwrap();
    q.update(obj("a", "2")).unwrap();
    q.add(obj("c", "1")).unwrap();
    q.update(obj("b", "2")).unwrap();
    assert_eq!(q.len(), 3);
    assert_eq!(
        q.keys().iter().map(ObjectKey::name).collect::<Vec<_>>(),
        ["a", "b", "c"]
    );
    assert_eq!(labels(&q.pending("ns/a")), ["a:Added@1", "a:Updated@2"]);
    assert_eq!(pop(&q), ["a:Added@1", "a:Updated@2"]);
    assert_eq!(pop(&q), ["b:Added@1", "b:Updated@2"]);
    assert_eq!(pop(&q), ["c:Added@1"]);
    assert!(q.is_empty());
}

#[test]
fn a_deletion_after_a_deletion_is_merged() {
    // A real deletion, then a relist that no longer lists the key: one deletion, the real one.
    let q = fifo();
    q.add(obj("a", "1")).unwrap();
    q.delete(obj("a", "2")).unwrap();
    q.replace(Vec::new(), "5").unwrap();
    assert_eq!(labels(&q.pending("ns/a")), ["a:Added@1", "a:Deleted@2"]);

    // A tombstone, then the real deletion arrives: the real one replaces it.
    let x1 = obj("x", "1");
    let store = store(&[&x1]);
    let q = fifo_with(&store);
    q.replace(Vec::new(), "5").unwrap();
    assert_eq!(labels(&q.pending("ns/x")), ["x:Deleted(tombstone)@1"]);
    q.delete(obj("x", "2")).unwrap();
    assert_eq!(labels(&q.pending("ns/x")), ["x:Deleted@2"]);
    // ...and a later tombstone does not displace it.
    q.replace(Vec::new(), "6").unwrap();
    assert_eq!(labels(&q.pending("ns/x")), ["x:Deleted@2"]);
}

#[test]
fn replace_orders_new_keys_after_queued_ones_and_store_tombstones_last() {
    let (s1, t1) = (obj("s", "1"), obj("t", "1"));
    let store = store(&[&s1, &t1]);
    let q = fifo_with(&store);
    q.add(obj("q", "1")).unwrap();
    q.replace(vec![obj("n", "1"), obj("s", "2")], "9").unwrap();
    assert_eq!(
        q.keys().iter().map(ObjectKey::name).collect::<Vec<_>>(),
        ["q", "n", "s", "t"]
    );
    assert_eq!(pop(&q), ["q:Added@1", "q:Deleted(tombstone)@1"]);
    assert_eq!(pop(&q), ["n:Replaced@1"]);
    assert_eq!(pop(&q), ["s:Replaced@2"]);
    assert_eq!(pop(&q), ["t:Deleted(tombstone)@1"]);
}

#[test]
fn replace_with_an_unkeyable_object_changes_nothing() {
    let q = fifo();
    let err = q.replace(vec![obj("b", "1"), Arc::new(JsonObject::default())], "3");
    assert!(matches!(err, Err(QueueError::Key(_))));
    assert!(q.is_empty());
    assert!(
        !q.has_synced(),
        "a failed replace is not the first population"
    );
    q.replace(vec![obj("b", "1")], "4").unwrap();
    assert!(!q.has_synced());
    assert_eq!(pop(&q), ["b:Replaced@1"]);
    assert!(q.has_synced());
}

#[test]
fn requeue_goes_to_the_front() {
    let q = fifo();
    q.add(obj("a", "1")).unwrap();
    q.add(obj("b", "1")).unwrap();
    let r = q
        .pop(&mut |_| Err(ProcessError::Requeue("later".into())))
        .now_or_never()
        .unwrap();
    assert!(matches!(
        r,
        Err(QueueError::Process(ProcessError::Requeue(_)))
    ));
    assert_eq!(pop(&q), ["a:Added@1"]);
    assert_eq!(pop(&q), ["b:Added@1"]);
}

#[test]
fn requeue_after_the_key_was_queued_again_keeps_only_the_newer_deltas() {
    let q = fifo();
    q.add(obj("a", "1")).unwrap();
    q.add(obj("b", "1")).unwrap();
    let r = q
        .pop(&mut |_| {
            q.update(obj("a", "2")).unwrap();
            Err(ProcessError::Requeue("later".into()))
        })
        .now_or_never()
        .unwrap();
    assert!(r.is_err());
    // `a` was queued again behind `b`; the failed `Added@1` is superseded.
    assert_eq!(pop(&q), ["b:Added@1"]);
    assert_eq!(pop(&q), ["a:Updated@2"]);
    assert!(q.is_empty());
}

#[test]
fn a_superseded_initial_batch_hands_its_place_in_the_initial_list_on() {
    let q = fifo();
    q.replace(vec![obj("a", "1")], "1").unwrap();
    let _ = q
        .pop(&mut |_| {
            q.update(obj("a", "2")).unwrap();
            Err(ProcessError::Requeue("later".into()))
        })
        .now_or_never()
        .unwrap();
    assert!(
        !q.has_synced(),
        "the initial state of `a` has not been processed yet"
    );
    assert_eq!(pop(&q), ["a:Updated@2"]);
    assert!(q.has_synced());
}

#[test]
fn the_batch_being_processed_counts_as_pending() {
    let x1 = obj("x", "1");
    let store = store(&[&x1]);
    let q = fifo_with(&store);
    q.update(obj("x", "2")).unwrap();
    let mut during = Vec::new();
    q.pop(&mut |_| {
        // Resync must not queue a Sync with the store's stale `x@1`.
        q.resync().unwrap();
        during.push(q.len());
        Ok(())
    })
    .now_or_never()
    .unwrap()
    .unwrap();
    assert_eq!(during, [0]);

    // Without a store: deleting the key being processed is kept, and a relist that misses it
    // queues a tombstone with its newest object.
    let q = fifo();
    q.add(obj("y", "1")).unwrap();
    q.pop(&mut |_| {
        q.replace(Vec::new(), "2").unwrap();
        Ok(())
    })
    .now_or_never()
    .unwrap()
    .unwrap();
    assert_eq!(pop(&q), ["y:Deleted(tombstone)@1"]);

    let q = fifo();
    q.add(obj("z", "1")).unwrap();
    q.pop(&mut |_| {
        q.delete(obj("z", "2")).unwrap();
        Ok(())
    })
    .now_or_never()
    .unwrap()
    .unwrap();
    assert_eq!(pop(&q), ["z:Deleted@2"]);
}

#[test]
fn pops_are_serialized() {
    let q = fifo();
    q.add(obj("a", "1")).unwrap();
    q.add(obj("b", "1")).unwrap();
    let mut nested = None;
    q.pop(&mut |_| {
        // `b` is queued, but another pop is processing: a second pop waits.
        nested = Some(q.pop(&mut |_| Ok(())).now_or_never().is_none());
        Ok(())
    })
    .now_or_never()
    .unwrap()
    .unwrap();
    assert_eq!(nested, Some(true));
    assert_eq!(pop(&q), ["b:Added@1"]);
}

#[test]
fn a_panicking_process_function_loses_nothing() {
    let q = fifo();
    q.replace(vec![obj("a", "1")], "1").unwrap();
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        q.pop(&mut |_| panic!("handler bug")).now_or_never()
    }));
    assert!(panicked.is_err());
    assert!(!q.has_synced());
    assert_eq!(pop(&q), ["a:Replaced@1"]);
    assert!(q.has_synced());
}

#[test]
fn a_custom_key_function_is_used_everywhere() {
    // Key by name only, ignoring the namespace.
    let q = DeltaFifo::new(DeltaFifoConfig {
        key_func: Arc::new(|o: &JsonObject| {
            ObjectKey::new(None, o.metadata.name.as_deref().unwrap_or(""))
        }),
        ..DeltaFifoConfig::default()
    });
    q.add(Arc::new(JsonObject::new(Some("one"), "a"))).unwrap();
    q.update(Arc::new(JsonObject::new(Some("two"), "a")))
        .unwrap();
    assert_eq!(q.keys(), [ObjectKey::from_raw("a")]);
    assert_eq!(q.pending("a").len(), 2);
}

#[tokio::test(start_paused = true)]
async fn close_while_processing_lets_the_batch_come_back_before_closed() {
    let q = fifo();
    q.add(obj("a", "1")).unwrap();
    let r = q
        .pop(&mut |_| {
            q.close();
            Err(ProcessError::Requeue("later".into()))
        })
        .await;
    assert!(r.is_err());
    assert_eq!(pop(&q), ["a:Added@1"]);
    assert!(matches!(
        q.pop(&mut |_| Ok(())).await,
        Err(QueueError::Closed)
    ));
    assert!(format!("{q:?}").contains("closed: true"));
}
