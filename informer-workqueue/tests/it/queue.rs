//! The work queue's rules: dedup, FIFO, processing/dirty, done, shutdown and drain.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use informer_workqueue::WorkQueue;
use parking_lot::Mutex;
use tokio::time::{Instant, sleep};

/// Whether `task` finishes once every other task has had its turn (virtual time moves only when
/// all tasks are idle, so a short sleep lets everything runnable run first).
async fn settles<F: std::future::Future>(task: &mut std::pin::Pin<&mut F>) -> Option<F::Output> {
    tokio::select! {
        out = task.as_mut() => Some(out),
        () = sleep(Duration::from_millis(1)) => None,
    }
}

#[tokio::test(start_paused = true)]
async fn items_come_out_in_fifo_order() {
    let queue = WorkQueue::new();
    for item in ["a", "b", "c"] {
        queue.add(item);
    }
    assert_eq!(queue.len(), 3);
    assert_eq!(queue.get().await, Some("a"));
    assert_eq!(queue.get().await, Some("b"));
    assert_eq!(queue.get().await, Some("c"));
    assert_eq!(queue.len(), 0);
    assert!(queue.is_empty());
}

#[tokio::test(start_paused = true)]
async fn an_item_added_while_queued_is_queued_once_and_keeps_its_place() {
    let queue = WorkQueue::new();
    queue.add("a");
    queue.add("b");
    queue.add("a");
    queue.add("a");
    assert_eq!(queue.len(), 2);
    assert_eq!(queue.get().await, Some("a"));
    assert_eq!(queue.get().await, Some("b"));
    assert!(queue.is_empty());
}

#[tokio::test(start_paused = true)]
async fn an_item_added_while_processing_waits_for_done() {
    let queue = WorkQueue::new();
    queue.add("a");
    let item = queue.get().await.unwrap();
    queue.add("a");
    queue.add("a");
    // Dirty, but not queued: no second worker may get it.
    assert_eq!(queue.len(), 0);
    let mut second = std::pin::pin!(queue.get());
    assert_eq!(settles(&mut second).await, None);
    queue.done(&item);
    // Done re-queued it exactly once.
    assert_eq!(second.await, Some("a"));
    assert_eq!(queue.len(), 0);
    queue.done(&"a");
    assert_eq!(queue.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn done_without_re_add_forgets_the_item() {
    let queue = WorkQueue::new();
    queue.add(1);
    let item = queue.get().await.unwrap();
    queue.done(&item);
    assert!(queue.is_empty());
    // It can be added again afterwards like a new item.
    queue.add(1);
    assert_eq!(queue.get().await, Some(1));
}

#[tokio::test(start_paused = true)]
async fn done_for_an_item_not_processing_changes_nothing() {
    let queue = WorkQueue::new();
    queue.add(1);
    // Queued but not handed out: done must not queue it a second time.
    queue.done(&1);
    queue.done(&2);
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.get().await, Some(1));
    assert!(queue.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_re_added_item_goes_to_the_back() {
    let queue = WorkQueue::new();
    queue.add("a");
    let a = queue.get().await.unwrap();
    queue.add("b");
    queue.add("a");
    queue.add("c");
    queue.done(&a);
    // "a" became queued again at done, after "b" and "c".
    assert_eq!(queue.get().await, Some("b"));
    assert_eq!(queue.get().await, Some("c"));
    assert_eq!(queue.get().await, Some("a"));
}

#[tokio::test(start_paused = true)]
async fn get_waits_for_an_add() {
    let queue = WorkQueue::new();
    let waiter = tokio::spawn({
        let queue = queue.clone();
        async move { queue.get().await }
    });
    sleep(Duration::from_secs(5)).await;
    assert!(!waiter.is_finished());
    queue.add(7);
    assert_eq!(waiter.await.unwrap(), Some(7));
}

#[tokio::test(start_paused = true)]
async fn each_add_wakes_one_of_many_waiters() {
    let queue = WorkQueue::new();
    let waiters: Vec<_> = (0..4)
        .map(|_| {
            let queue = queue.clone();
            tokio::spawn(async move { queue.get().await })
        })
        .collect();
    tokio::task::yield_now().await;
    for item in 0..4 {
        queue.add(item);
    }
    let mut got = Vec::new();
    for waiter in waiters {
        got.push(waiter.await.unwrap().unwrap());
    }
    got.sort_unstable();
    assert_eq!(got, vec![0, 1, 2, 3]);
}

#[tokio::test(start_paused = true)]
async fn shut_down_wakes_all_waiters_with_none() {
    let queue: WorkQueue<u32> = WorkQueue::new();
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let queue = queue.clone();
            tokio::spawn(async move { queue.get().await })
        })
        .collect();
    sleep(Duration::from_secs(1)).await;
    assert!(waiters.iter().all(|w| !w.is_finished()));
    queue.shut_down();
    assert!(queue.is_shutting_down());
    for waiter in waiters {
        assert_eq!(waiter.await.unwrap(), None);
    }
}

#[tokio::test(start_paused = true)]
async fn after_shut_down_queued_items_are_handed_out_then_none() {
    let queue = WorkQueue::new();
    queue.add(1);
    queue.add(2);
    queue.shut_down();
    queue.add(3);
    assert_eq!(queue.len(), 2);
    assert_eq!(queue.get().await, Some(1));
    assert_eq!(queue.get().await, Some(2));
    assert_eq!(queue.get().await, None);
    assert_eq!(queue.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn a_dirty_item_is_requeued_at_done_even_after_shut_down() {
    // As upstream: the add happened before shutdown, so it is not lost.
    let queue = WorkQueue::new();
    queue.add(1);
    let item = queue.get().await.unwrap();
    queue.add(1);
    queue.shut_down();
    queue.done(&item);
    assert_eq!(queue.get().await, Some(1));
    queue.done(&1);
    assert_eq!(queue.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn drain_waits_for_items_in_flight() {
    let queue = WorkQueue::new();
    queue.add("a");
    queue.add("b");
    let a = queue.get().await.unwrap();
    let b = queue.get().await.unwrap();

    let mut drain = std::pin::pin!(queue.shut_down_with_drain());
    assert_eq!(settles(&mut drain).await, None);
    assert!(queue.is_shutting_down());
    queue.done(&a);
    assert_eq!(settles(&mut drain).await, None);
    queue.done(&b);
    assert_eq!(settles(&mut drain).await, Some(()));
}

#[tokio::test(start_paused = true)]
async fn drain_returns_at_once_when_nothing_is_processing() {
    let queue: WorkQueue<u8> = WorkQueue::new();
    queue.add(1);
    // A queued (not processing) item does not hold the drain.
    queue.shut_down_with_drain().await;
    assert_eq!(queue.get().await, Some(1));
}

#[tokio::test(start_paused = true)]
async fn shut_down_ends_a_waiting_drain() {
    let queue = WorkQueue::new();
    queue.add(1);
    let _held = queue.get().await.unwrap();
    let drain = tokio::spawn({
        let queue = queue.clone();
        async move { queue.shut_down_with_drain().await }
    });
    sleep(Duration::from_secs(60)).await;
    assert!(!drain.is_finished());
    queue.shut_down();
    drain.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn drain_with_workers_processes_everything() {
    let queue = WorkQueue::new();
    let processed = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let queue = queue.clone();
            let processed = Arc::clone(&processed);
            tokio::spawn(async move {
                while let Some(item) = queue.get().await {
                    sleep(Duration::from_millis(10)).await;
                    processed.lock().push(item);
                    queue.done(&item);
                }
            })
        })
        .collect();
    for item in 0..20 {
        queue.add(item);
    }
    let start = Instant::now();
    queue.shut_down_with_drain().await;
    // Drain returned only once nothing was processing; the workers then empty the queue.
    for worker in workers {
        worker.await.unwrap();
    }
    let mut processed = processed.lock().clone();
    processed.sort_unstable();
    assert_eq!(processed, (0..20).collect::<Vec<_>>());
    assert!(Instant::now() > start);
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_get_loses_no_item() {
    let queue = WorkQueue::new();
    {
        let mut get = std::pin::pin!(queue.get());
        assert_eq!(settles(&mut get).await, None);
        // Dropped here while waiting.
    }
    queue.add(1);
    assert_eq!(queue.get().await, Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_workers_never_share_an_item() {
    let queue = WorkQueue::new();
    let in_flight = Arc::new(Mutex::new(HashSet::new()));
    let count = Arc::new(Mutex::new(0usize));
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let queue = queue.clone();
            let in_flight = Arc::clone(&in_flight);
            let count = Arc::clone(&count);
            tokio::spawn(async move {
                while let Some(item) = queue.get().await {
                    assert!(in_flight.lock().insert(item));
                    tokio::task::yield_now().await;
                    // Re-adding while processing must never create a second holder.
                    if item % 3 == 0 {
                        queue.add(item);
                    }
                    in_flight.lock().remove(&item);
                    *count.lock() += 1;
                    queue.done(&item);
                }
            })
        })
        .collect();
    for round in 0..50 {
        for item in 0..20u32 {
            queue.add(item);
        }
        if round % 10 == 0 {
            tokio::task::yield_now().await;
        }
    }
    queue.shut_down_with_drain().await;
    for worker in workers {
        worker.await.unwrap();
    }
    assert!(*count.lock() >= 20);
    assert!(in_flight.lock().is_empty());
    assert!(queue.is_empty());
}
