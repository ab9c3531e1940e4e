//! client-go `tools/cache/the_real_fifo_test.go`, ported to [`InOrderFifo`] (upstream's
//! `RealFIFO`).
//!
//! Two differences shape the expectations (see the deviations in
//! `docs/parity/cache-workqueue.md`): a `replace` or `resync` is one atomic batch here, carrying
//! its `Replaced`/`Sync` deltas and the relist's tombstones (upstream's non-atomic mode queues
//! them one by one, its atomic mode queues one `ReplacedAll`/`SyncAll` marker and leaves the
//! tombstones to the consumer); and a pop hands out a run of single deltas, so tests that mirror
//! upstream's one-delta `Pop` use a batch size of 1 and compare the flat sequence of deltas
//! (upstream's own `collapseDeltas`).

use std::sync::Arc;
use std::time::Duration;

use informer_core::{KnownObjects, Queue, QueueError};
use informer_fifo::{InOrderFifo, InOrderFifoConfig};
use informer_testing::JsonObject;

use super::{
    drain, drain_flat, in_order, keys_of_objects_tombstones_and_batches, known, labels, mk, pop,
    pops_unblock_when_closed, try_pop, two_producers_keep_their_order,
};

/// Upstream's `emptyKnownObjects()`.
fn empty_known() -> Option<Arc<dyn KnownObjects<JsonObject>>> {
    Some(known(&[]))
}

/// The queue most upstream tests build: known objects, one delta per pop.
fn real_fifo(known: Option<Arc<dyn KnownObjects<JsonObject>>>) -> InOrderFifo<JsonObject> {
    in_order(known, 1)
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_basic
#[tokio::test]
async fn real_fifo_basic() {
    two_producers_keep_their_order(Arc::new(real_fifo(empty_known()))).await;
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_replaceWithDeleteDeltaIn
#[test]
fn real_fifo_replace_with_delete_delta_in() {
    let (old, new) = (mk("foo", 1), mk("foo", 2));
    let q = real_fifo(Some(known(&[&old])));
    q.delete(old).unwrap();
    q.replace(vec![new], "").unwrap();
    assert_eq!(drain_flat(&q), ["Deleted foo@1", "Replaced foo@2"]);
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue
///
/// Upstream runs these with an empty known-objects store only (its non-atomic `RealFIFO` needs
/// one) and comments out the `Replaced object should have only a single Delete` case.
mod real_fifow_replace_makes_deletions_for_objects_only_in_queue {
    use super::*;

    fn check(operations: impl Fn(&InOrderFifo<JsonObject>), expected: &[&str]) {
        let q = real_fifo(empty_known());
        operations(&q);
        assert_eq!(drain_flat(&q), expected);
        assert!(q.is_empty(), "no extra deltas");
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue/Added object should be deleted on Replace
    #[test]
    fn added_object_should_be_deleted_on_replace() {
        check(
            |q| {
                q.add(mk("foo", 2)).unwrap();
                q.replace(vec![], "0").unwrap();
            },
            &["Added foo@2", "Deleted(tombstone foo) foo@2"],
        );
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue/Deleted object should have only a single Delete
    #[test]
    fn deleted_object_should_have_only_a_single_delete() {
        check(
            |q| {
                q.add(mk("foo", 2)).unwrap();
                q.delete(mk("foo", 2)).unwrap();
                q.replace(vec![], "0").unwrap();
            },
            &["Added foo@2", "Deleted foo@2"],
        );
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue/Synced objects should have a single delete
    #[test]
    fn synced_objects_should_have_a_single_delete() {
        check(
            |q| {
                q.add(mk("foo", 2)).unwrap();
                q.replace(vec![mk("foo", 2)], "0").unwrap();
                q.replace(vec![mk("foo", 2)], "0").unwrap();
                q.replace(vec![], "0").unwrap();
            },
            &[
                "Added foo@2",
                "Replaced foo@2",
                "Replaced foo@2",
                "Deleted(tombstone foo) foo@2",
            ],
        );
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue/Added objects should have a single delete on multiple Replaces
    #[test]
    fn added_objects_should_have_a_single_delete_on_multiple_replaces() {
        check(
            |q| {
                q.add(mk("foo", 2)).unwrap();
                q.replace(vec![], "0").unwrap();
                q.replace(vec![], "1").unwrap();
            },
            &["Added foo@2", "Deleted(tombstone foo) foo@2"],
        );
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue/Added and deleted and added object should be deleted
    #[test]
    fn added_and_deleted_and_added_object_should_be_deleted() {
        check(
            |q| {
                q.add(mk("foo", 2)).unwrap();
                q.delete(mk("foo", 2)).unwrap();
                q.add(mk("foo", 3)).unwrap();
                q.replace(vec![], "0").unwrap();
            },
            &[
                "Added foo@2",
                "Deleted foo@2",
                "Added foo@3",
                "Deleted(tombstone foo) foo@3",
            ],
        );
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue/Bookmark object should not be added without atomic
    ///
    /// Adapted: our queues have no bookmark delta (the reflector keeps the resourceVersion), so
    /// what remains of the case is that two empty relists of an empty queue queue nothing.
    #[test]
    fn bookmark_object_should_not_be_added_without_atomic() {
        check(
            |q| {
                q.replace(vec![], "0").unwrap();
                q.replace(vec![], "1").unwrap();
            },
            &[],
        );
    }
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_addUpdate
#[tokio::test]
async fn real_fifo_add_update() {
    let q = real_fifo(empty_known());
    q.add(mk("foo", 10)).unwrap();
    q.update(mk("foo", 12)).unwrap();
    q.delete(mk("foo", 15)).unwrap();
    // Every delta is kept, in order.
    assert_eq!(q.len(), 3);
    assert_eq!(
        drain(&q),
        [
            vec!["Added foo@10"],
            vec!["Updated foo@12"],
            vec!["Deleted foo@15"]
        ]
    );
    let more = tokio::time::timeout(Duration::from_millis(50), q.pop(&mut |_| Ok(()))).await;
    assert!(more.is_err(), "got a fourth value");
    assert!(q.is_empty());
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_transformer
///
/// Adapted as for `DeltaFifo` (no transformer in the queue): every delta is kept, in order,
/// the relist's tombstones carry the newest queued object, and every object handed out is the
/// very `Arc` queued.
#[test]
fn real_fifo_transformer() {
    let q = real_fifo(empty_known());
    let bar11 = mk("bar", 11);
    let bar16 = mk("bar", 16);
    q.add(mk("foo", 10)).unwrap();
    q.add(Arc::clone(&bar11)).unwrap();
    q.update(mk("foo", 12)).unwrap();
    q.delete(mk("foo", 15)).unwrap();
    q.replace(vec![], "").unwrap();
    q.add(Arc::clone(&bar16)).unwrap();
    q.replace(vec![], "").unwrap();

    let mut seen = Vec::new();
    let mut tombstone_objects = Vec::new();
    while let Some(Ok(())) = futures::FutureExt::now_or_never(q.pop(&mut |deltas| {
        for d in deltas {
            if d.object.is_tombstone() {
                tombstone_objects.push(Arc::clone(d.object.object()));
            }
        }
        seen.extend(labels(deltas));
        Ok(())
    })) {}
    assert_eq!(
        seen,
        [
            "Added foo@10",
            "Added bar@11",
            "Updated foo@12",
            "Deleted foo@15",
            "Deleted(tombstone bar) bar@11",
            "Added bar@16",
            "Deleted(tombstone bar) bar@16",
        ]
    );
    assert!(Arc::ptr_eq(&tombstone_objects[0], &bar11));
    assert!(Arc::ptr_eq(&tombstone_objects[1], &bar16));
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_enqueueingNoLister
///
/// Deviation: upstream's `RealFIFO` queues a deletion of a key it has never seen (`baz`); ours
/// drops it, as `DeltaFifo` (both queues) does, because the informer would not deliver it
/// anyway (a deletion of an uncached key reaches no handler).
#[test]
fn real_fifo_enqueueing_no_lister() {
    let q = real_fifo(empty_known());
    q.add(mk("foo", 10)).unwrap();
    q.update(mk("bar", 15)).unwrap();
    q.add(mk("qux", 17)).unwrap();
    q.delete(mk("qux", 18)).unwrap();
    q.delete(mk("baz", 20)).unwrap();
    assert_eq!(
        drain_flat(&q),
        [
            "Added foo@10",
            "Updated bar@15",
            "Added qux@17",
            "Deleted qux@18"
        ]
    );
    assert!(q.is_empty());
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_enqueueingWithLister
#[test]
fn real_fifo_enqueueing_with_lister() {
    let q = real_fifo(Some(known(&[&mk("foo", 5), &mk("bar", 6), &mk("baz", 7)])));
    q.add(mk("foo", 10)).unwrap();
    q.update(mk("bar", 15)).unwrap();
    q.delete(mk("baz", 20)).unwrap();
    assert_eq!(
        drain_flat(&q),
        ["Added foo@10", "Updated bar@15", "Deleted baz@20"]
    );
    assert!(q.is_empty());
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_addReplace
#[tokio::test]
async fn real_fifo_add_replace() {
    let q = real_fifo(empty_known());
    q.add(mk("foo", 10)).unwrap();
    q.replace(vec![mk("foo", 15)], "0").unwrap();
    // Every event, not only the newest.
    assert_eq!(drain(&q), [vec!["Added foo@10"], vec!["Replaced foo@15"]]);
    let more = tokio::time::timeout(Duration::from_millis(50), q.pop(&mut |_| Ok(()))).await;
    assert!(more.is_err(), "got a third value");
    assert!(q.is_empty());
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_ResyncNonExisting
#[test]
fn real_fifo_resync_non_existing() {
    let q = real_fifo(Some(known(&[&mk("foo", 5)])));
    q.delete(mk("foo", 10)).unwrap();
    q.resync().unwrap();
    assert_eq!(q.len(), 1);
    assert_eq!(drain_flat(&q), ["Deleted foo@10"]);
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_Resync
#[test]
fn real_fifo_resync() {
    let q = real_fifo(Some(known(&[&mk("foo", 5)])));
    q.resync().unwrap();
    assert_eq!(q.len(), 1);
    assert_eq!(drain_flat(&q), ["Sync foo@5"]);
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_DeleteExistingNonPropagated
#[test]
fn real_fifo_delete_existing_non_propagated() {
    let q = real_fifo(empty_known());
    q.add(mk("foo", 5)).unwrap();
    q.delete(mk("foo", 6)).unwrap();
    assert_eq!(q.len(), 2);
    assert_eq!(drain_flat(&q), ["Added foo@5", "Deleted foo@6"]);
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_ReplaceMakesDeletions, one test per
/// scenario of the upstream test. A relist queues its deletions before the listed objects.
mod real_fifo_replace_makes_deletions {
    use super::*;

    fn fifo_knowing_foo_bar_baz() -> InOrderFifo<JsonObject> {
        real_fifo(Some(known(&[&mk("foo", 5), &mk("bar", 6), &mk("baz", 7)])))
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_ReplaceMakesDeletions (a pre-existing Delete)
    #[test]
    fn with_a_pre_existing_delete() {
        let q = fifo_knowing_foo_bar_baz();
        q.delete(mk("baz", 10)).unwrap();
        q.replace(vec![mk("foo", 5)], "0").unwrap();
        assert_eq!(
            drain_flat(&q),
            [
                "Deleted baz@10",
                "Deleted(tombstone bar) bar@6",
                "Replaced foo@5"
            ]
        );
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_ReplaceMakesDeletions (an Add instead of a Delete)
    #[test]
    fn starting_with_an_add_instead_of_a_delete() {
        let q = fifo_knowing_foo_bar_baz();
        q.add(mk("baz", 10)).unwrap();
        q.replace(vec![mk("foo", 5)], "0").unwrap();
        assert_eq!(
            drain_flat(&q),
            [
                "Added baz@10",
                "Deleted(tombstone baz) baz@10",
                "Deleted(tombstone bar) bar@6",
                "Replaced foo@5",
            ]
        );
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_ReplaceMakesDeletions (deleted and re-created in the queue, then deleted by Replace)
    #[test]
    fn deleting_and_recreating_in_the_queue_then_replace() {
        let q = fifo_knowing_foo_bar_baz();
        q.delete(mk("bar", 6)).unwrap();
        q.add(mk("bar", 100)).unwrap();
        q.replace(vec![mk("foo", 5)], "0").unwrap();
        assert_eq!(
            drain_flat(&q),
            [
                "Deleted bar@6",
                "Added bar@100",
                "Deleted(tombstone bar) bar@100",
                "Deleted(tombstone baz) baz@7",
                "Replaced foo@5",
            ]
        );
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_ReplaceMakesDeletions (synced first, so the delete uses the latest version)
    #[test]
    fn syncing_first_so_the_delete_uses_the_latest_version() {
        let q = fifo_knowing_foo_bar_baz();
        q.replace(vec![mk("bar", 100), mk("foo", 5)], "0").unwrap();
        q.replace(vec![mk("foo", 5)], "0").unwrap();
        assert_eq!(
            drain_flat(&q),
            [
                "Deleted(tombstone baz) baz@7",
                "Replaced bar@100",
                "Replaced foo@5",
                "Deleted(tombstone bar) bar@100",
                "Replaced foo@5",
            ]
        );
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_ReplaceMakesDeletions (no known objects)
    #[test]
    fn without_known_objects() {
        let q = real_fifo(empty_known());
        q.add(mk("baz", 10)).unwrap();
        q.replace(vec![mk("foo", 5)], "0").unwrap();
        assert_eq!(
            drain_flat(&q),
            [
                "Added baz@10",
                "Deleted(tombstone baz) baz@10",
                "Replaced foo@5"
            ]
        );
    }
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_ReplaceMakesDeletionsReplaced
#[test]
fn real_fifo_replace_makes_deletions_replaced() {
    let q = real_fifo(Some(known(&[&mk("foo", 5), &mk("bar", 6), &mk("baz", 7)])));
    q.delete(mk("baz", 10)).unwrap();
    q.replace(vec![mk("foo", 6)], "0").unwrap();
    assert_eq!(
        drain_flat(&q),
        [
            "Deleted baz@10",
            "Deleted(tombstone bar) bar@6",
            "Replaced foo@6"
        ]
    );
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_UpdateResyncRace
#[test]
fn real_fifo_update_resync_race() {
    let q = real_fifo(Some(known(&[&mk("foo", 5)])));
    q.update(mk("foo", 6)).unwrap();
    q.resync().unwrap();
    assert_eq!(drain(&q), [vec!["Updated foo@6"]]);
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_HasSyncedCorrectOnDeletion
///
/// The initial relist is one batch here (upstream: three pops); `has_synced` is false before
/// and while it is processed, true after.
#[test]
fn real_fifo_has_synced_correct_on_deletion() {
    let q = real_fifo(Some(known(&[&mk("foo", 5), &mk("bar", 6), &mk("baz", 7)])));
    q.replace(vec![mk("foo", 5)], "0").unwrap();
    assert!(!q.has_synced());
    let mut synced_while_processing = None;
    let mut got = Vec::new();
    futures::executor::block_on(q.pop(&mut |deltas| {
        synced_while_processing = Some(q.has_synced());
        got = labels(deltas);
        Ok(())
    }))
    .unwrap();
    assert_eq!(
        got,
        [
            "Deleted(tombstone bar) bar@6",
            "Deleted(tombstone baz) baz@7",
            "Replaced foo@5",
        ]
    );
    assert_eq!(synced_while_processing, Some(false), "initial list items");
    assert!(q.has_synced());
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_detectLineJumpers
#[test]
fn real_fifo_detect_line_jumpers() {
    let q = real_fifo(empty_known());
    q.add(mk("foo", 10)).unwrap();
    q.add(mk("bar", 1)).unwrap();
    q.add(mk("foo", 11)).unwrap();
    q.add(mk("foo", 13)).unwrap();
    q.add(mk("zab", 30)).unwrap();
    // Every event is delivered, in order.
    assert_eq!(pop(&q), ["Added foo@10"]);
    q.add(mk("foo", 14)).unwrap();
    assert_eq!(
        drain_flat(&q),
        [
            "Added bar@1",
            "Added foo@11",
            "Added foo@13",
            "Added zab@30",
            "Added foo@14"
        ]
    );
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_KeyOf
#[test]
fn real_fifo_key_of() {
    keys_of_objects_tombstones_and_batches();
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_HasSynced, one test per table case
/// (upstream's cases are numbered, not named).
mod real_fifo_has_synced {
    use super::*;

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_HasSynced/0 (nothing done)
    #[test]
    fn case_0_nothing_done() {
        assert!(!real_fifo(empty_known()).has_synced());
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_HasSynced/1 (an Add first)
    #[test]
    fn case_1_add_first() {
        let q = real_fifo(empty_known());
        q.add(mk("a", 1)).unwrap();
        assert!(q.has_synced());
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_HasSynced/2 (an empty Replace)
    #[test]
    fn case_2_empty_replace() {
        let q = real_fifo(empty_known());
        q.replace(vec![], "0").unwrap();
        assert!(q.has_synced());
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_HasSynced/3 (Replace of two, nothing popped)
    #[test]
    fn case_3_replace_of_two() {
        let q = real_fifo(empty_known());
        q.replace(vec![mk("a", 1), mk("b", 2)], "0").unwrap();
        assert!(!q.has_synced());
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_HasSynced/4 (Replace of two, one popped)
    ///
    /// Deviation: upstream pops one of the two listed objects and is not yet synced; here the
    /// relist is one atomic batch, so one pop processes both and the queue has synced.
    #[test]
    fn case_4_replace_of_two_one_popped() {
        let q = real_fifo(empty_known());
        q.replace(vec![mk("a", 1), mk("b", 2)], "0").unwrap();
        assert_eq!(pop(&q), ["Replaced a@1", "Replaced b@2"]);
        assert!(q.has_synced());
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_HasSynced/5 (Replace of two, both popped)
    ///
    /// Adapted: "both popped" is one pop here (the relist is one batch).
    #[test]
    fn case_5_replace_of_two_both_popped() {
        let q = real_fifo(empty_known());
        q.replace(vec![mk("a", 1), mk("b", 2)], "0").unwrap();
        assert_eq!(drain_flat(&q), ["Replaced a@1", "Replaced b@2"]);
        assert!(q.has_synced());
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_HasSynced/6 (Replace listing one key twice, both popped)
    #[test]
    fn case_6_replace_with_a_duplicate_key() {
        let q = real_fifo(empty_known());
        q.replace(vec![mk("a", 1), mk("a", 2)], "0").unwrap();
        // Every listed delta is delivered (no merging), all in the one relist batch.
        assert_eq!(drain_flat(&q), ["Replaced a@1", "Replaced a@2"]);
        assert!(q.has_synced());
    }
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_PopShouldUnblockWhenClosed
#[tokio::test]
async fn real_fifo_pop_should_unblock_when_closed() {
    pops_unblock_when_closed(Arc::new(real_fifo(Some(known(&[&mk("foo", 5)]))))).await;
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_PopMultipleDeltaInBatch
///
/// Each case: the known objects and the initial relist are `initial`, then `actions`, then
/// batches are popped. `has_synced` stands in for upstream's `isInInitialList` flag: false while
/// the initial relist is processed, true for later batches.
mod real_fifo_pop_multiple_delta_in_batch {
    use super::*;

    const UNLIMITED: usize = 999_999;

    fn run(
        initial: &[&Arc<JsonObject>],
        actions: &[Arc<JsonObject>],
        batch_size: usize,
    ) -> Vec<Vec<String>> {
        let q = in_order(Some(known(initial)), batch_size);
        q.replace(initial.iter().map(|o| Arc::clone(o)).collect(), "123")
            .unwrap();
        for obj in actions {
            q.update(Arc::clone(obj)).unwrap();
        }
        let mut batches = Vec::new();
        let mut initial_seen = Vec::new();
        loop {
            let mut got = Vec::new();
            let mut in_initial = false;
            let popped = futures::FutureExt::now_or_never(q.pop(&mut |deltas| {
                in_initial = !q.has_synced();
                got = labels(deltas);
                Ok(())
            }));
            match popped {
                Some(result) => result.unwrap(),
                None => break,
            }
            if in_initial {
                initial_seen.extend(got.iter().cloned());
            }
            batches.push(got);
        }
        let initial_labels: Vec<String> = initial
            .iter()
            .map(|o| format!("Replaced {}@5", o.metadata.name.as_deref().unwrap()))
            .collect();
        assert_eq!(initial_seen, initial_labels, "the initial list items");
        batches
    }

    fn objs() -> [Arc<JsonObject>; 4] {
        [mk("foo1", 5), mk("foo2", 5), mk("foo3", 5), mk("foo4", 5)]
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_PopMultipleDeltaInBatch/non-split: pop unique items should work
    #[test]
    fn non_split_pop_unique_items_should_work() {
        let [o1, o2, o3, _] = objs();
        assert_eq!(
            run(&[&o1, &o2, &o3], &[], UNLIMITED),
            [vec![
                "Replaced foo1@5",
                "Replaced foo2@5",
                "Replaced foo3@5"
            ]]
        );
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_PopMultipleDeltaInBatch/split due to initial list: initial 2 items with 2 updates should have 2 batches
    #[test]
    fn split_due_to_initial_list() {
        let [o1, o2, o3, o4] = objs();
        assert_eq!(
            run(&[&o1, &o2], &[o3, o4], 2),
            [
                vec!["Replaced foo1@5", "Replaced foo2@5"],
                vec!["Updated foo3@5", "Updated foo4@5"],
            ]
        );
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_PopMultipleDeltaInBatch/split due to non-unique#1: update single item for multiple items should have separate batch
    ///
    /// Deviation: upstream closes a batch at a key already in it (its batch transaction reads
    /// each key's old object once); ours applies a batch's deltas one after the other, so a
    /// key may appear twice in one batch and the two updates come together.
    #[test]
    fn split_due_to_non_unique_1() {
        let [o1, ..] = objs();
        assert_eq!(
            run(&[&o1], &[Arc::clone(&o1), Arc::clone(&o1)], UNLIMITED),
            [
                vec!["Replaced foo1@5"],
                vec!["Updated foo1@5", "Updated foo1@5"],
            ]
        );
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_PopMultipleDeltaInBatch/split due to non-unique#2: update 3 item for with non-unique item at the end should have separate batch
    #[test]
    fn split_due_to_non_unique_2() {
        let [o1, o2, o3, _] = objs();
        assert_eq!(
            run(&[&o1, &o2], &[Arc::clone(&o2), o3], UNLIMITED),
            [
                vec!["Replaced foo1@5", "Replaced foo2@5"],
                vec!["Updated foo2@5", "Updated foo3@5"],
            ]
        );
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_PopMultipleDeltaInBatch/split due to non-unique#3: update 3 item for with non-unique item in the mid should have separate batch
    #[test]
    fn split_due_to_non_unique_3() {
        let [o1, o2, o3, _] = objs();
        assert_eq!(
            run(&[&o1, &o2, &o3], &[Arc::clone(&o2)], UNLIMITED),
            [
                vec!["Replaced foo1@5", "Replaced foo2@5", "Replaced foo3@5"],
                vec!["Updated foo2@5"],
            ]
        );
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_PopMultipleDeltaInBatch/split due to batch size#1: batching initial list should work
    ///
    /// Deviation: a relist is one atomic batch whatever the batch size (upstream splits the
    /// initial list into batches of `batchSize`): the cache never shows half a relist.
    #[test]
    fn split_due_to_batch_size_1() {
        let [o1, o2, o3, _] = objs();
        assert_eq!(
            run(&[&o1, &o2, &o3], &[], 2),
            [vec![
                "Replaced foo1@5",
                "Replaced foo2@5",
                "Replaced foo3@5"
            ]]
        );
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_PopMultipleDeltaInBatch/split due to batch size#2: batching incoming non-initial deltas should work
    #[test]
    fn split_due_to_batch_size_2() {
        let [o1, o2, o3, _] = objs();
        assert_eq!(
            run(&[], &[o1, o2, o3], 2),
            [
                vec!["Updated foo1@5", "Updated foo2@5"],
                vec!["Updated foo3@5"],
            ]
        );
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_PopMultipleDeltaInBatch/split due to batch size#3: pop 4 mixed initial & non-initial items with 2 batch size should have 3 batch
    ///
    /// Deviation: as in batch size#1, the relist stays one batch (two batches here, not three).
    #[test]
    fn split_due_to_batch_size_3() {
        let [o1, o2, o3, o4] = objs();
        assert_eq!(
            run(&[&o1, &o2, &o3], &[o4], 2),
            [
                vec!["Replaced foo1@5", "Replaced foo2@5", "Replaced foo3@5"],
                vec!["Updated foo4@5"],
            ]
        );
    }
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_PopBrokenItemsInBatch
///
/// Deviation for every case: upstream lets objects its key function cannot key into the queue
/// and closes a batch at them; ours keys every object when it is queued and refuses an
/// unkeyable one there (`QueueError::Key`), so broken objects never reach a batch and the good
/// ones pop together.
mod real_fifo_pop_broken_items_in_batch {
    use super::*;

    fn run(incoming: &[(&str, bool)]) -> Vec<Vec<String>> {
        let q = InOrderFifo::new(InOrderFifoConfig {
            key_func: Arc::new(|o: &JsonObject| {
                if o.metadata.resource_version.as_deref() == Some("broken") {
                    Err(informer_core::KeyError::MissingName { namespace: None })
                } else {
                    informer_core::key_of(o)
                }
            }),
            known_objects: Some(known(&[])),
            max_batch_size: UNLIMITED.try_into().unwrap(),
        });
        for (name, broken) in incoming {
            let obj = if *broken {
                mk(name, "broken")
            } else {
                mk(name, 5)
            };
            let added = q.add(obj);
            assert_eq!(added.is_err(), *broken, "{name}: {added:?}");
            if let Err(e) = added {
                assert!(matches!(e, QueueError::Key(_)));
            }
        }
        drain(&q)
    }

    const UNLIMITED: usize = 999_999;

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_PopBrokenItemsInBatch/1st item is broken
    #[test]
    fn first_item_is_broken() {
        assert!(run(&[("foo3", true)]).is_empty());
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_PopBrokenItemsInBatch/nth item is broken
    #[test]
    fn nth_item_is_broken() {
        assert_eq!(
            run(&[("foo1", false), ("foo2", false), ("foo3", true)]),
            [vec!["Added foo1@5", "Added foo2@5"]]
        );
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_PopBrokenItemsInBatch/multiple nth items are broken
    #[test]
    fn multiple_nth_items_are_broken() {
        assert_eq!(
            run(&[
                ("foo1", false),
                ("foo2", false),
                ("foo3", true),
                ("foo4", true)
            ]),
            [vec!["Added foo1@5", "Added foo2@5"]]
        );
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_PopBrokenItemsInBatch/mixed 1st and nth items are broken
    #[test]
    fn mixed_first_and_nth_items_are_broken() {
        assert_eq!(
            run(&[("foo3", true), ("foo1", false), ("foo4", true)]),
            [vec!["Added foo1@5"]]
        );
    }
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_ReplaceAtomic
///
/// Upstream's atomic mode queues one `ReplacedAll` marker (resourceVersion and objects) and
/// leaves the tombstones to the consumer; ours queues one atomic batch with the relist's
/// tombstones and `Replaced` deltas in it.
mod real_fifo_replace_atomic {
    use super::*;

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_ReplaceAtomic/Base replace
    ///
    /// Deviation: an empty relist of an empty queue and store queues nothing (upstream: an
    /// empty `ReplacedAll` marker); `has_synced` is true at once either way.
    #[test]
    fn base_replace() {
        let q = real_fifo(empty_known());
        q.replace(vec![], "123").unwrap();
        assert!(q.is_empty());
        assert!(q.has_synced());
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_ReplaceAtomic/Added object exists in deltas on Atomic Replace
    #[test]
    fn added_object_exists_in_deltas_on_atomic_replace() {
        let q = real_fifo(empty_known());
        q.add(mk("foo", 2)).unwrap();
        q.replace(vec![], "123").unwrap();
        assert_eq!(
            drain(&q),
            [vec!["Added foo@2"], vec!["Deleted(tombstone foo) foo@2"]]
        );
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_ReplaceAtomic/Multiple replaces run in order
    #[test]
    fn multiple_replaces_run_in_order() {
        let q = real_fifo(empty_known());
        q.add(mk("foo", 2)).unwrap();
        q.replace(vec![mk("foo", 2)], "10").unwrap();
        q.replace(vec![mk("foo", 2)], "20").unwrap();
        q.replace(vec![], "56").unwrap();
        assert_eq!(
            drain(&q),
            [
                vec!["Added foo@2"],
                vec!["Replaced foo@2"],
                vec!["Replaced foo@2"],
                vec!["Deleted(tombstone foo) foo@2"],
            ]
        );
    }
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_ReplaceAtomicPop
#[tokio::test]
async fn real_fifo_replace_atomic_pop() {
    let q = real_fifo(empty_known());
    q.add(mk("foo", 10)).unwrap();
    q.replace(vec![mk("foo", 15)], "20").unwrap();
    assert_eq!(drain(&q), [vec!["Added foo@10"], vec!["Replaced foo@15"]]);
    let more = tokio::time::timeout(Duration::from_millis(50), q.pop(&mut |_| Ok(()))).await;
    assert!(more.is_err(), "got a third value");
    assert!(q.is_empty());
}

/// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_ResyncAtomic
///
/// Upstream's atomic resync queues a `SyncAll` marker for the consumer to expand; ours queues
/// one atomic batch of `Sync` deltas for the known objects without pending deltas.
mod real_fifo_resync_atomic {
    use super::*;

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_ResyncAtomic/Base resync
    ///
    /// Deviation: a resync with nothing to resync queues nothing (upstream: a `SyncAll` marker).
    #[test]
    fn base_resync() {
        let q = real_fifo(empty_known());
        q.resync().unwrap();
        assert!(q.is_empty());
        assert!(try_pop(&q).is_none());
    }

    /// client-go tools/cache/the_real_fifo_test.go: TestRealFIFO_ResyncAtomic/Added object exists in deltas on Atomic Resync
    ///
    /// Deviation: the queued `Added` stays first and the resync after it is one batch; ours
    /// leaves out the key with a pending delta (it is not in a `SyncAll` marker to expand), so
    /// with the object also known only the store's other objects are synced.
    #[test]
    fn added_object_exists_in_deltas_on_atomic_resync() {
        let foo = mk("foo", 2);
        let q = real_fifo(Some(known(&[&foo, &mk("other", 1)])));
        q.add(Arc::clone(&foo)).unwrap();
        q.resync().unwrap();
        assert_eq!(drain(&q), [vec!["Added foo@2"], vec!["Sync other@1"]]);
    }
}
