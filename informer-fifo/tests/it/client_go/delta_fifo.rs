//! client-go `tools/cache/delta_fifo_test.go`, ported to [`DeltaFifo`].

use std::sync::Arc;
use std::time::Duration;

use informer_core::{DeltaType, Queue};
use informer_fifo::DeltaFifo;
use informer_testing::JsonObject;

use super::{
    delta_fifo as fifo, drain, keys_of_objects_tombstones_and_batches, known, labels, mk, pop,
    pop_newest, pops_unblock_when_closed, try_pop, two_producers_keep_their_order,
};

/// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_basic
#[tokio::test]
async fn delta_fifo_basic() {
    two_producers_keep_their_order(Arc::new(fifo(None))).await;
}

/// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_replaceWithDeleteDeltaIn
///
/// A relist that lists a key whose newest queued delta is a deletion still queues the listed
/// object (kubernetes#83810: otherwise the informer misses the re-creation).
#[test]
fn delta_fifo_replace_with_delete_delta_in() {
    let (old, new) = (mk("foo", 1), mk("foo", 2));
    let q = fifo(Some(known(&[&old])));
    q.delete(old).unwrap();
    q.replace(vec![new], "").unwrap();
    assert_eq!(pop(&q), ["Deleted foo@1", "Replaced foo@2"]);
}

/// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue
///
/// Every case runs with an empty known-objects store and without one, as upstream does, and
/// expects one pop with all of the key's deltas and nothing left after it.
mod delta_fifow_replace_makes_deletions_for_objects_only_in_queue {
    use super::*;

    fn check(operations: impl Fn(&DeltaFifo<JsonObject>), expected: &[&str]) {
        for q in [fifo(Some(known(&[]))), fifo(None)] {
            operations(&q);
            assert_eq!(pop(&q), expected);
            assert!(q.is_empty(), "no extra deltas");
        }
    }

    /// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue/Added object should be deleted on Replace
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

    /// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue/Replaced object should have only a single Delete
    #[test]
    fn replaced_object_should_have_only_a_single_delete() {
        check(
            |q| {
                q.add(mk("foo", 2)).unwrap();
                q.replace(vec![mk("foo", 2)], "0").unwrap();
                q.replace(vec![], "0").unwrap();
            },
            &[
                "Added foo@2",
                "Replaced foo@2",
                "Deleted(tombstone foo) foo@2",
            ],
        );
    }

    /// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue/Deleted object should have only a single Delete
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

    /// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue/Synced objects should have a single delete
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

    /// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue/Added objects should have a single delete on multiple Replaces
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

    /// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue/Added and deleted and added object should be deleted
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
}

/// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_addUpdate
#[tokio::test]
async fn delta_fifo_add_update() {
    let q = fifo(None);
    q.add(mk("foo", 10)).unwrap();
    q.update(mk("foo", 12)).unwrap();
    q.delete(mk("foo", 15)).unwrap();
    // Upstream's list() (the newest object of every key) and listKeys().
    assert_eq!(labels(&q.pending("foo")).last().unwrap(), "Deleted foo@15");
    assert_eq!(
        q.keys().iter().map(|k| k.as_str()).collect::<Vec<_>>(),
        ["foo"]
    );
    assert_eq!(pop_newest(&q), "Deleted foo@15");
    // No second value within 50 ms, and the key is gone.
    let second = tokio::time::timeout(Duration::from_millis(50), q.pop(&mut |_| Ok(()))).await;
    assert!(second.is_err(), "got a second value");
    assert!(q.pending("foo").is_empty(), "item did not get removed");
}

/// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_transformer
///
/// Ours has no transformer in the queue: the informer transforms each object once, before it
/// reaches the queue (`ReflectorConfig::transform`). What the upstream test pins, that every
/// object goes through once and that tombstones carry the already-transformed object, holds
/// here as: the queue hands out the very `Arc`s it was given and a tombstone carries the newest
/// queued `Arc` (pointer-equal, never a copy).
#[test]
fn delta_fifo_transformer() {
    let q = fifo(None);
    let foo15 = mk("foo", 15);
    let bar16 = mk("bar", 16);
    q.add(mk("foo", 10)).unwrap();
    q.add(mk("bar", 11)).unwrap();
    q.update(mk("foo", 12)).unwrap();
    q.delete(Arc::clone(&foo15)).unwrap();
    q.replace(vec![], "").unwrap();
    q.add(Arc::clone(&bar16)).unwrap();
    q.replace(vec![], "").unwrap();
    assert_eq!(
        q.keys().iter().map(|k| k.as_str()).collect::<Vec<_>>(),
        ["foo", "bar"]
    );

    let mut newest = Vec::new();
    for _ in 0..2 {
        futures::executor::block_on(q.pop(&mut |deltas| {
            let d = deltas.last().unwrap();
            newest.push((
                d.kind,
                d.object.is_tombstone(),
                Arc::clone(d.object.object()),
            ));
            Ok(())
        }))
        .unwrap();
    }
    // foo: its real deletion (the relist's tombstone merged into it).
    assert_eq!((newest[0].0, newest[0].1), (DeltaType::Deleted, false));
    assert!(Arc::ptr_eq(&newest[0].2, &foo15));
    // bar: a tombstone carrying the newest queued object, not a copy.
    assert_eq!((newest[1].0, newest[1].1), (DeltaType::Deleted, true));
    assert!(Arc::ptr_eq(&newest[1].2, &bar16));
}

/// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_enqueueingNoLister
#[test]
fn delta_fifo_enqueueing_no_lister() {
    let q = fifo(None);
    q.add(mk("foo", 10)).unwrap();
    q.update(mk("bar", 15)).unwrap();
    q.add(mk("qux", 17)).unwrap();
    q.delete(mk("qux", 18)).unwrap();
    // Not queued: baz is neither queued nor known.
    q.delete(mk("baz", 20)).unwrap();
    let newest: Vec<String> = drain(&q)
        .into_iter()
        .map(|b| b.last().unwrap().clone())
        .collect();
    assert_eq!(newest, ["Added foo@10", "Updated bar@15", "Deleted qux@18"]);
    assert!(q.is_empty());
}

/// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_enqueueingWithLister
#[test]
fn delta_fifo_enqueueing_with_lister() {
    let q = fifo(Some(known(&[&mk("foo", 5), &mk("bar", 6), &mk("baz", 7)])));
    q.add(mk("foo", 10)).unwrap();
    q.update(mk("bar", 15)).unwrap();
    // Queued: baz is known.
    q.delete(mk("baz", 20)).unwrap();
    let newest: Vec<String> = drain(&q)
        .into_iter()
        .map(|b| b.last().unwrap().clone())
        .collect();
    assert_eq!(newest, ["Added foo@10", "Updated bar@15", "Deleted baz@20"]);
    assert!(q.is_empty());
}

/// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_addReplace
#[tokio::test]
async fn delta_fifo_add_replace() {
    let q = fifo(None);
    q.add(mk("foo", 10)).unwrap();
    q.replace(vec![mk("foo", 15)], "0").unwrap();
    assert_eq!(pop_newest(&q), "Replaced foo@15");
    let second = tokio::time::timeout(Duration::from_millis(50), q.pop(&mut |_| Ok(()))).await;
    assert!(second.is_err(), "got a second value");
    assert!(q.pending("foo").is_empty(), "item did not get removed");
}

/// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_ResyncNonExisting
#[test]
fn delta_fifo_resync_non_existing() {
    let q = fifo(Some(known(&[&mk("foo", 5)])));
    q.delete(mk("foo", 10)).unwrap();
    q.resync().unwrap();
    assert_eq!(labels(&q.pending("foo")), ["Deleted foo@10"]);
}

/// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_Resync
#[test]
fn delta_fifo_resync() {
    let q = fifo(Some(known(&[&mk("foo", 5)])));
    q.resync().unwrap();
    assert_eq!(labels(&q.pending("foo")), ["Sync foo@5"]);
}

/// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_DeleteExistingNonPropagated
#[test]
fn delta_fifo_delete_existing_non_propagated() {
    let q = fifo(Some(known(&[])));
    q.add(mk("foo", 5)).unwrap();
    q.delete(mk("foo", 6)).unwrap();
    assert_eq!(labels(&q.pending("foo")), ["Added foo@5", "Deleted foo@6"]);
}

/// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_ReplaceMakesDeletions, one test per
/// scenario of the upstream test.
mod delta_fifo_replace_makes_deletions {
    use super::*;

    fn fifo_knowing_foo_bar_baz() -> DeltaFifo<JsonObject> {
        fifo(Some(known(&[&mk("foo", 5), &mk("bar", 6), &mk("baz", 7)])))
    }

    /// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_ReplaceMakesDeletions (a pre-existing Delete)
    #[test]
    fn with_a_pre_existing_delete() {
        let q = fifo_knowing_foo_bar_baz();
        q.delete(mk("baz", 10)).unwrap();
        q.replace(vec![mk("foo", 5)], "0").unwrap();
        assert_eq!(
            drain(&q),
            [
                vec!["Deleted baz@10"],
                vec!["Replaced foo@5"],
                // Neither deleted nor listed: a tombstone with the store's object.
                vec!["Deleted(tombstone bar) bar@6"],
            ]
        );
    }

    /// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_ReplaceMakesDeletions (an Add instead of a Delete)
    #[test]
    fn starting_with_an_add_instead_of_a_delete() {
        let q = fifo_knowing_foo_bar_baz();
        q.add(mk("baz", 10)).unwrap();
        q.replace(vec![mk("foo", 5)], "0").unwrap();
        assert_eq!(
            drain(&q),
            [
                vec!["Added baz@10", "Deleted(tombstone baz) baz@10"],
                vec!["Replaced foo@5"],
                vec!["Deleted(tombstone bar) bar@6"],
            ]
        );
    }

    /// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_ReplaceMakesDeletions (deleted and re-created in the queue, then deleted by Replace)
    #[test]
    fn deleting_and_recreating_in_the_queue_then_replace() {
        let q = fifo_knowing_foo_bar_baz();
        q.delete(mk("bar", 6)).unwrap();
        q.add(mk("bar", 100)).unwrap();
        q.replace(vec![mk("foo", 5)], "0").unwrap();
        assert_eq!(
            drain(&q),
            [
                // The tombstone carries the newest queued object, not the store's.
                vec![
                    "Deleted bar@6",
                    "Added bar@100",
                    "Deleted(tombstone bar) bar@100",
                ],
                vec!["Replaced foo@5"],
                vec!["Deleted(tombstone baz) baz@7"],
            ]
        );
    }

    /// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_ReplaceMakesDeletions (synced first, so the delete uses the latest version)
    #[test]
    fn syncing_first_so_the_delete_uses_the_latest_version() {
        let q = fifo_knowing_foo_bar_baz();
        q.replace(vec![mk("bar", 100), mk("foo", 5)], "0").unwrap();
        q.replace(vec![mk("foo", 5)], "0").unwrap();
        assert_eq!(
            drain(&q),
            [
                vec!["Replaced bar@100", "Deleted(tombstone bar) bar@100"],
                vec!["Replaced foo@5", "Replaced foo@5"],
                vec!["Deleted(tombstone baz) baz@7"],
            ]
        );
    }

    /// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_ReplaceMakesDeletions (without a KeyListerGetter)
    #[test]
    fn without_known_objects() {
        let q = fifo(None);
        q.add(mk("baz", 10)).unwrap();
        q.replace(vec![mk("foo", 5)], "0").unwrap();
        assert_eq!(
            drain(&q),
            [
                vec!["Added baz@10", "Deleted(tombstone baz) baz@10"],
                vec!["Replaced foo@5"],
            ]
        );
    }
}

/// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_ReplaceMakesDeletionsReplaced
#[test]
fn delta_fifo_replace_makes_deletions_replaced() {
    let q = fifo(Some(known(&[&mk("foo", 5), &mk("bar", 6), &mk("baz", 7)])));
    q.delete(mk("baz", 10)).unwrap();
    q.replace(vec![mk("foo", 6)], "0").unwrap();
    assert_eq!(
        drain(&q),
        [
            vec!["Deleted baz@10"],
            vec!["Replaced foo@6"],
            vec!["Deleted(tombstone bar) bar@6"],
        ]
    );
}

/// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_ReplaceDeltaType
#[test]
fn delta_fifo_replace_delta_type() {
    let q = fifo(Some(known(&[&mk("foo", 5)])));
    q.replace(vec![mk("foo", 5)], "0").unwrap();
    assert_eq!(drain(&q), [vec!["Replaced foo@5"]]);
}

/// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_UpdateResyncRace
///
/// A resync skips a key with a queued delta: the store's copy is older than the queued one.
#[test]
fn delta_fifo_update_resync_race() {
    let q = fifo(Some(known(&[&mk("foo", 5)])));
    q.update(mk("foo", 6)).unwrap();
    q.resync().unwrap();
    assert_eq!(drain(&q), [vec!["Updated foo@6"]]);
}

/// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_HasSyncedCorrectOnDeletion
///
/// Upstream's pop also reports `isInInitialList`; ours has no such argument, and the informer
/// derives it from `has_synced`, which must stay false while each initial batch is processed.
#[test]
fn delta_fifo_has_synced_correct_on_deletion() {
    let q = fifo(Some(known(&[&mk("foo", 5), &mk("bar", 6), &mk("baz", 7)])));
    q.replace(vec![mk("foo", 5)], "0").unwrap();
    for expected in [
        ["Replaced foo@5"],
        ["Deleted(tombstone bar) bar@6"],
        ["Deleted(tombstone baz) baz@7"],
    ] {
        assert!(!q.has_synced());
        let mut synced_while_processing = None;
        let mut got = Vec::new();
        futures::executor::block_on(q.pop(&mut |deltas| {
            synced_while_processing = Some(q.has_synced());
            got = labels(deltas);
            Ok(())
        }))
        .unwrap();
        assert_eq!(got, expected);
        assert_eq!(synced_while_processing, Some(false), "initial list item");
    }
    assert!(q.has_synced());
}

/// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_detectLineJumpers
#[test]
fn delta_fifo_detect_line_jumpers() {
    let q = fifo(None);
    q.add(mk("foo", 10)).unwrap();
    q.add(mk("bar", 1)).unwrap();
    q.add(mk("foo", 11)).unwrap();
    q.add(mk("foo", 13)).unwrap();
    q.add(mk("zab", 30)).unwrap();
    assert_eq!(pop_newest(&q), "Added foo@13");
    // foo does not jump back to its old place in line.
    q.add(mk("foo", 14)).unwrap();
    assert_eq!(pop_newest(&q), "Added bar@1");
    assert_eq!(pop_newest(&q), "Added zab@30");
    assert_eq!(pop_newest(&q), "Added foo@14");
}

/// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_KeyOf
#[test]
fn delta_fifo_key_of() {
    keys_of_objects_tombstones_and_batches();
}

/// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_HasSynced, one test per table case
/// (upstream's cases are numbered, not named).
mod delta_fifo_has_synced {
    use super::*;

    /// Pops one batch that must be ready.
    fn pop_one(q: &DeltaFifo<JsonObject>) {
        assert!(try_pop(q).is_some());
    }

    /// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_HasSynced/0 (nothing done)
    #[test]
    fn case_0_nothing_done() {
        assert!(!fifo(None).has_synced());
    }

    /// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_HasSynced/1 (an Add first)
    #[test]
    fn case_1_add_first() {
        let q = fifo(None);
        q.add(mk("a", 1)).unwrap();
        assert!(q.has_synced());
    }

    /// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_HasSynced/2 (an empty Replace)
    #[test]
    fn case_2_empty_replace() {
        let q = fifo(None);
        q.replace(vec![], "0").unwrap();
        assert!(q.has_synced());
    }

    /// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_HasSynced/3 (Replace of two, nothing popped)
    #[test]
    fn case_3_replace_of_two() {
        let q = fifo(None);
        q.replace(vec![mk("a", 1), mk("b", 2)], "0").unwrap();
        assert!(!q.has_synced());
    }

    /// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_HasSynced/4 (Replace of two, one popped)
    #[test]
    fn case_4_replace_of_two_one_popped() {
        let q = fifo(None);
        q.replace(vec![mk("a", 1), mk("b", 2)], "0").unwrap();
        pop_one(&q);
        assert!(!q.has_synced());
    }

    /// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_HasSynced/5 (Replace of two, both popped)
    #[test]
    fn case_5_replace_of_two_both_popped() {
        let q = fifo(None);
        q.replace(vec![mk("a", 1), mk("b", 2)], "0").unwrap();
        pop_one(&q);
        pop_one(&q);
        assert!(q.has_synced());
    }

    /// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_HasSynced/6 (Replace listing one key twice, popped once)
    #[test]
    fn case_6_replace_with_a_duplicate_key() {
        let q = fifo(None);
        q.replace(vec![mk("a", 1), mk("a", 2)], "0").unwrap();
        pop_one(&q);
        assert!(q.has_synced());
    }
}

/// client-go tools/cache/delta_fifo_test.go: TestDeltaFIFO_PopShouldUnblockWhenClosed
#[tokio::test]
async fn delta_fifo_pop_should_unblock_when_closed() {
    pops_unblock_when_closed(Arc::new(fifo(Some(known(&[&mk("foo", 5)]))))).await;
}

/// client-go tools/cache/delta_fifo.go: dedupDeltas / isDeletionDup (the source rule; no upstream
/// test pins it). Of two deletions in a row, the newer one is kept only when the older one is a
/// tombstone; otherwise the older one is kept. Two real deletions in a row: the older stays.
///
/// Regression test for issue 10 (item 6): we kept the newer of two real deletions.
#[test]
fn dedup_deltas_keeps_the_older_of_two_real_deletions() {
    let q = fifo(None);
    q.add(mk("foo", 1)).unwrap();
    q.delete(mk("foo", 2)).unwrap();
    q.delete(mk("foo", 3)).unwrap();
    assert_eq!(labels(&q.pending("foo")), ["Added foo@1", "Deleted foo@2"]);

    // Older real, newer tombstone: the real one stays.
    let q = fifo(None);
    q.add(mk("bar", 1)).unwrap();
    q.delete(mk("bar", 2)).unwrap();
    q.replace(vec![], "3").unwrap();
    assert_eq!(labels(&q.pending("bar")), ["Added bar@1", "Deleted bar@2"]);

    // Older tombstone, newer real: the newer (real) one replaces it.
    let q = fifo(Some(known(&[&mk("baz", 1)])));
    q.replace(vec![], "2").unwrap();
    q.delete(mk("baz", 3)).unwrap();
    assert_eq!(labels(&q.pending("baz")), ["Deleted baz@3"]);
}
