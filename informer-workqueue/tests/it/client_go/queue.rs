//! client-go `util/workqueue/queue_test.go`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use informer_workqueue::WorkQueue;

use crate::support::GUARD;

/// How a test shuts its queue down: upstream runs the concurrent tests once with `ShutDown` and
/// once with `ShutDownWithDrain`.
#[derive(Clone, Copy, Debug)]
enum Shutdown {
    Plain,
    Drain,
}

async fn shut_down(queue: &WorkQueue<String>, how: Shutdown) {
    match how {
        Shutdown::Plain => queue.shut_down(),
        Shutdown::Drain => queue.shut_down_with_drain().await,
    }
}

const AFTER_SHUTDOWN: &str = "added after shutdown!";

/// Upstream's `TestBasic`: 50 producers add their number 50 times, 1 ms apart; 10 consumers
/// take 3 ms per item; after the producers, shutdown, and an add after shutdown is never
/// handed out; the queue ends empty.
async fn basic(how: Shutdown) {
    let queue: WorkQueue<String> = WorkQueue::new();
    let producers: Vec<_> = (0..50)
        .map(|i| {
            let queue = queue.clone();
            tokio::spawn(async move {
                for _ in 0..50 {
                    queue.add(i.to_string());
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            })
        })
        .collect();
    let consumers: Vec<_> = (0..10)
        .map(|_| {
            let queue = queue.clone();
            tokio::spawn(async move {
                while let Some(item) = queue.get().await {
                    assert_ne!(item, AFTER_SHUTDOWN, "got an item added after shutdown");
                    tokio::time::sleep(Duration::from_millis(3)).await;
                    queue.done(&item);
                }
            })
        })
        .collect();
    for p in producers {
        p.await.unwrap();
    }
    shut_down(&queue, how).await;
    queue.add(AFTER_SHUTDOWN.to_owned());
    for c in consumers {
        tokio::time::timeout(Duration::from_secs(30), c)
            .await
            .expect("consumers finish")
            .unwrap();
    }
    assert_eq!(queue.len(), 0);
}

/// client-go util/workqueue/queue_test.go: TestBasic (with ShutDown)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic_shut_down() {
    basic(Shutdown::Plain).await;
}

/// client-go util/workqueue/queue_test.go: TestBasic (with ShutDownWithDrain)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic_shut_down_with_drain() {
    basic(Shutdown::Drain).await;
}

/// Upstream's `TestAddWhileProcessing`: every consumer re-adds each item it gets until it has
/// seen it twice (the dirty-while-processing path); after shutdown the queue ends empty.
async fn add_while_processing(how: Shutdown) {
    let queue: WorkQueue<String> = WorkQueue::new();
    let producers: Vec<_> = (0..50)
        .map(|i| {
            let queue = queue.clone();
            tokio::spawn(async move { queue.add(i.to_string()) })
        })
        .collect();
    let consumers: Vec<_> = (0..10)
        .map(|_| {
            let queue = queue.clone();
            tokio::spawn(async move {
                let mut counters: HashMap<String, u32> = HashMap::new();
                while let Some(item) = queue.get().await {
                    let seen = counters.entry(item.clone()).or_default();
                    *seen += 1;
                    if *seen < 2 {
                        queue.add(item.clone());
                    }
                    queue.done(&item);
                }
            })
        })
        .collect();
    for p in producers {
        p.await.unwrap();
    }
    shut_down(&queue, how).await;
    for c in consumers {
        tokio::time::timeout(Duration::from_secs(30), c)
            .await
            .expect("consumers finish")
            .unwrap();
    }
    assert_eq!(queue.len(), 0);
}

/// client-go util/workqueue/queue_test.go: TestAddWhileProcessing (with ShutDown)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_while_processing_shut_down() {
    add_while_processing(Shutdown::Plain).await;
}

/// client-go util/workqueue/queue_test.go: TestAddWhileProcessing (with ShutDownWithDrain)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_while_processing_shut_down_with_drain() {
    add_while_processing(Shutdown::Drain).await;
}

/// client-go util/workqueue/queue_test.go: TestLen
#[test]
fn len() {
    let q: WorkQueue<&str> = WorkQueue::new();
    q.add("foo");
    assert_eq!(q.len(), 1);
    q.add("bar");
    assert_eq!(q.len(), 2);
    q.add("foo"); // already queued: the length stays
    assert_eq!(q.len(), 2);
}

/// client-go util/workqueue/queue_test.go: TestReinsert
#[tokio::test(start_paused = true)]
async fn reinsert() {
    let q: WorkQueue<&str> = WorkQueue::new();
    q.add("foo");
    let i = q.get().await.unwrap();
    assert_eq!(i, "foo");
    // Added back while processing...
    q.add(i);
    q.done(&i);
    // ...it is queued again.
    let i = q.get().await.unwrap();
    assert_eq!(i, "foo");
    q.done(&i);
    assert_eq!(q.len(), 0);
}

/// client-go util/workqueue/queue_test.go: TestCollapse
///
/// Upstream also checks that its pluggable inner queue was asked to `Touch` the item; ours has
/// no pluggable inner queue, what remains is the collapse itself.
#[tokio::test(start_paused = true)]
async fn collapse() {
    let q: WorkQueue<&str> = WorkQueue::new();
    q.add("bar");
    q.add("bar");
    assert_eq!(q.get().await, Some("bar"));
    q.done(&"bar");
    assert_eq!(q.len(), 0);
}

/// client-go util/workqueue/queue_test.go: TestCollapseWhileProcessing
#[tokio::test(start_paused = true)]
async fn collapse_while_processing() {
    let q: WorkQueue<&str> = WorkQueue::new();
    q.add("foo");
    assert_eq!(q.get().await, Some("foo"));
    // Added twice while processing: one dirty mark.
    q.add("foo");
    q.add("foo");
    let other = {
        let q = q.clone();
        tokio::spawn(async move {
            let i = q.get().await.unwrap();
            assert_eq!(i, "foo");
            q.done(&i);
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !other.is_finished(),
        "the other worker must wait until foo is done"
    );
    q.done(&"foo");
    other.await.unwrap();
    assert_eq!(q.len(), 0);
}

/// Waits (bounded) until `get` reports the shutdown, as upstream's `for !shuttingDown` loops.
async fn until_get_reports_shutdown(q: &WorkQueue<&'static str>) {
    let got = tokio::time::timeout(GUARD, async {
        loop {
            if q.get().await.is_none() {
                return;
            }
        }
    })
    .await;
    assert!(got.is_ok(), "get reported the shutdown");
}

/// client-go util/workqueue/queue_test.go: TestQueueDrainageUsingShutDownWithDrain
#[tokio::test(start_paused = true)]
async fn queue_drainage_using_shut_down_with_drain() {
    let q: WorkQueue<&str> = WorkQueue::new();
    q.add("foo");
    q.add("bar");
    let first = q.get().await.unwrap();
    let second = q.get().await.unwrap();
    let drain = {
        let q = q.clone();
        tokio::spawn(async move { q.shut_down_with_drain().await })
    };
    until_get_reports_shutdown(&q).await;
    tokio::task::yield_now().await;
    assert!(!drain.is_finished(), "drain waits for the items in process");
    q.done(&first);
    q.done(&second);
    tokio::time::timeout(GUARD, drain)
        .await
        .expect("drain returned")
        .unwrap();
}

/// client-go util/workqueue/queue_test.go: TestNoQueueDrainageUsingShutDown
#[tokio::test(start_paused = true)]
async fn no_queue_drainage_using_shut_down() {
    let q: WorkQueue<&str> = WorkQueue::new();
    q.add("foo");
    q.add("bar");
    q.get().await.unwrap();
    q.get().await.unwrap();
    // Returns at once although two items are still being processed.
    q.shut_down();
    assert!(q.is_shutting_down());
}

/// client-go util/workqueue/queue_test.go: TestForceQueueShutdownUsingShutDown
#[tokio::test(start_paused = true)]
async fn force_queue_shutdown_using_shut_down() {
    let q: WorkQueue<&str> = WorkQueue::new();
    q.add("foo");
    q.add("bar");
    q.get().await.unwrap();
    q.get().await.unwrap();
    let drain = {
        let q = q.clone();
        tokio::spawn(async move { q.shut_down_with_drain().await })
    };
    until_get_reports_shutdown(&q).await;
    // A second signal: shut down without waiting for the two items.
    q.shut_down();
    tokio::time::timeout(GUARD, drain)
        .await
        .expect("drain ended by shut_down")
        .unwrap();
}

/// client-go util/workqueue/queue_test.go: TestQueueDrainageUsingShutDownWithDrainWithDirtyItem
#[tokio::test(start_paused = true)]
async fn queue_drainage_using_shut_down_with_drain_with_dirty_item() {
    let q: WorkQueue<&str> = WorkQueue::new();
    q.add("foo");
    let gotten = q.get().await.unwrap();
    q.add("foo");
    let drain = {
        let q = q.clone();
        tokio::spawn(async move { q.shut_down_with_drain().await })
    };
    until_get_reports_shutdown(&q).await;
    // Done puts the dirty item back, shutdown or not...
    q.done(&gotten);
    let again = q.get().await;
    assert_eq!(again, Some("foo"), "should not have been done");
    q.done(&"foo");
    // ...and now it is really over.
    assert_eq!(q.get().await, None, "should have been done");
    tokio::time::timeout(GUARD, drain)
        .await
        .expect("drain returned")
        .unwrap();
}

/// client-go util/workqueue/queue_test.go: TestGarbageCollection
///
/// Upstream checks with a finalizer that an item added, handed out and done can be collected;
/// ours: once done, the queue holds no reference to the item.
#[tokio::test(start_paused = true)]
async fn garbage_collection() {
    let leak_queue: WorkQueue<Arc<String>> = WorkQueue::new();
    let item = Arc::new("hello".to_owned());
    let weak = Arc::downgrade(&item);
    leak_queue.add(item);
    let o = leak_queue.get().await.unwrap();
    leak_queue.done(&o);
    drop(o);
    assert!(weak.upgrade().is_none(), "the queue still holds the item");
    // The queue itself is still alive.
    assert_eq!(leak_queue.len(), 0);
}
