//! client-go `util/workqueue/delaying_queue_test.go`, on tokio's paused clock (upstream: a fake
//! clock stepped by hand). Our delaying queue needs no background goroutine: due items move to
//! the queue when it is next touched, so `len` after `advance` sees them at once (upstream polls
//! until its goroutine has moved them).

use std::time::Duration;

use informer_workqueue::WorkQueue;
use tokio::time::advance;

use crate::support::MS;

/// client-go util/workqueue/delaying_queue_test.go: TestSimpleQueue
#[tokio::test(start_paused = true)]
async fn simple_queue() {
    let q: WorkQueue<&str> = WorkQueue::new();
    q.add_after("foo", 50 * MS);
    assert_eq!(q.len(), 0, "should not have added");
    advance(60 * MS).await;
    assert_eq!(q.len(), 1, "should have added");
    let item = q.get().await.unwrap();
    q.done(&item);
    // Well past any heartbeat: nothing comes back.
    advance(Duration::from_secs(10)).await;
    assert_eq!(q.len(), 0, "should not have added");
}

/// client-go util/workqueue/delaying_queue_test.go: TestDeduping
#[tokio::test(start_paused = true)]
async fn deduping() {
    let q: WorkQueue<&str> = WorkQueue::new();
    q.add_after("foo", 50 * MS);
    q.add_after("foo", 70 * MS);
    assert_eq!(q.len(), 0, "should not have added");
    // Past the first deadline: one item.
    advance(60 * MS).await;
    assert_eq!(q.len(), 1, "should have added");
    let item = q.get().await.unwrap();
    q.done(&item);
    // Past the second add: it was merged into the first, nothing more.
    advance(20 * MS).await;
    assert_eq!(q.len(), 0, "should not have added");

    // Again, but this time the earlier deadline comes second and wins.
    q.add_after("foo", 50 * MS);
    q.add_after("foo", 30 * MS);
    assert_eq!(q.len(), 0, "should not have added");
    advance(40 * MS).await;
    assert_eq!(q.len(), 1, "should have added");
    let item = q.get().await.unwrap();
    q.done(&item);
    advance(20 * MS).await;
    assert_eq!(q.len(), 0, "should not have added");
}

/// client-go util/workqueue/delaying_queue_test.go: TestAddTwoFireEarly
#[tokio::test(start_paused = true)]
async fn add_two_fire_early() {
    let q: WorkQueue<&str> = WorkQueue::new();
    q.add_after("foo", Duration::from_secs(1));
    q.add_after("bar", 50 * MS);
    assert_eq!(q.len(), 0, "should not have added");
    advance(60 * MS).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("bar"));
    q.add_after("baz", Duration::from_secs(2));
    advance(Duration::from_secs(1)).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("foo"));
    advance(Duration::from_secs(2)).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("baz"));
}

/// client-go util/workqueue/delaying_queue_test.go: TestCopyShifting
#[tokio::test(start_paused = true)]
async fn copy_shifting() {
    let q: WorkQueue<&str> = WorkQueue::new();
    q.add_after("foo", Duration::from_secs(1));
    q.add_after("bar", 500 * MS);
    q.add_after("baz", 250 * MS);
    assert_eq!(q.len(), 0, "should not have added");
    advance(Duration::from_secs(2)).await;
    assert_eq!(q.len(), 3);
    // In deadline order.
    assert_eq!(q.get().await, Some("baz"));
    assert_eq!(q.get().await, Some("bar"));
    assert_eq!(q.get().await, Some("foo"));
}
