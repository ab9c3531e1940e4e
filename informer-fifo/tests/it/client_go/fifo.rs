//! client-go `tools/cache/fifo_test.go`, ported to [`DeltaFifo`](informer_fifo::DeltaFifo).
//!
//! Upstream's `FIFO` keeps only the newest object of each key; we have no such queue, and
//! `DeltaFifo` groups by key the same way (a pop hands out all of a key's deltas, whose newest
//! is the `FIFO`'s item), so these scenarios check `DeltaFifo` through the newest delta of
//! each pop.

use std::sync::Arc;
use std::time::Duration;

use informer_core::Queue;

use super::{
    delta_fifo as fifo, mk, pop_newest, pops_unblock_when_closed, try_pop,
    two_producers_keep_their_order,
};

/// client-go tools/cache/fifo_test.go: TestFIFO_basic
#[tokio::test]
async fn fifo_basic() {
    two_producers_keep_their_order(Arc::new(fifo(None))).await;
}

/// client-go tools/cache/fifo_test.go: TestFIFO_addUpdate
#[tokio::test]
async fn fifo_add_update() {
    let q = fifo(None);
    q.add(mk("foo", 10)).unwrap();
    q.update(mk("foo", 15)).unwrap();
    assert_eq!(
        q.keys().iter().map(|k| k.as_str()).collect::<Vec<_>>(),
        ["foo"]
    );
    assert_eq!(pop_newest(&q), "Updated foo@15");
    let second = tokio::time::timeout(Duration::from_millis(50), q.pop(&mut |_| Ok(()))).await;
    assert!(second.is_err(), "got a second value");
    assert!(q.pending("foo").is_empty(), "item did not get removed");
}

/// client-go tools/cache/fifo_test.go: TestFIFO_addReplace
#[tokio::test]
async fn fifo_add_replace() {
    let q = fifo(None);
    q.add(mk("foo", 10)).unwrap();
    q.replace(vec![mk("foo", 15)], "15").unwrap();
    assert_eq!(pop_newest(&q), "Replaced foo@15");
    let second = tokio::time::timeout(Duration::from_millis(50), q.pop(&mut |_| Ok(()))).await;
    assert!(second.is_err(), "got a second value");
    assert!(q.pending("foo").is_empty(), "item did not get removed");
}

/// client-go tools/cache/fifo_test.go: TestFIFO_detectLineJumpers
#[test]
fn fifo_detect_line_jumpers() {
    let q = fifo(None);
    q.add(mk("foo", 10)).unwrap();
    q.add(mk("bar", 1)).unwrap();
    q.add(mk("foo", 11)).unwrap();
    q.add(mk("foo", 13)).unwrap();
    q.add(mk("zab", 30)).unwrap();
    assert_eq!(pop_newest(&q), "Added foo@13");
    q.add(mk("foo", 14)).unwrap();
    assert_eq!(pop_newest(&q), "Added bar@1");
    assert_eq!(pop_newest(&q), "Added zab@30");
    assert_eq!(pop_newest(&q), "Added foo@14");
}

/// client-go tools/cache/fifo_test.go: TestFIFO_HasSynced, one test per table case (upstream's
/// cases are numbered, not named).
mod fifo_has_synced {
    use super::*;

    /// client-go tools/cache/fifo_test.go: TestFIFO_HasSynced/0 (nothing done)
    #[test]
    fn case_0_nothing_done() {
        assert!(!fifo(None).has_synced());
    }

    /// client-go tools/cache/fifo_test.go: TestFIFO_HasSynced/1 (an Add first)
    #[test]
    fn case_1_add_first() {
        let q = fifo(None);
        q.add(mk("a", 1)).unwrap();
        assert!(q.has_synced());
    }

    /// client-go tools/cache/fifo_test.go: TestFIFO_HasSynced/2 (an empty Replace)
    #[test]
    fn case_2_empty_replace() {
        let q = fifo(None);
        q.replace(vec![], "0").unwrap();
        assert!(q.has_synced());
    }

    /// client-go tools/cache/fifo_test.go: TestFIFO_HasSynced/3 (Replace of two, nothing popped)
    #[test]
    fn case_3_replace_of_two() {
        let q = fifo(None);
        q.replace(vec![mk("a", 1), mk("b", 2)], "0").unwrap();
        assert!(!q.has_synced());
    }

    /// client-go tools/cache/fifo_test.go: TestFIFO_HasSynced/4 (Replace of two, one popped)
    #[test]
    fn case_4_replace_of_two_one_popped() {
        let q = fifo(None);
        q.replace(vec![mk("a", 1), mk("b", 2)], "0").unwrap();
        assert!(try_pop(&q).is_some());
        assert!(!q.has_synced());
    }

    /// client-go tools/cache/fifo_test.go: TestFIFO_HasSynced/5 (Replace of two, both popped)
    #[test]
    fn case_5_replace_of_two_both_popped() {
        let q = fifo(None);
        q.replace(vec![mk("a", 1), mk("b", 2)], "0").unwrap();
        assert!(try_pop(&q).is_some());
        assert!(try_pop(&q).is_some());
        assert!(q.has_synced());
    }
}

/// client-go tools/cache/fifo_test.go: TestFIFO_PopShouldUnblockWhenClosed
#[tokio::test]
async fn fifo_pop_should_unblock_when_closed() {
    pops_unblock_when_closed(Arc::new(fifo(None))).await;
}
