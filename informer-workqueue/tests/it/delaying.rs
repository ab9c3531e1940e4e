//! Delayed adds (`add_after`) on tokio's paused clock.

use std::time::Duration;

use informer_workqueue::{MAX_DELAY, WorkQueue};
use tokio::time::{Instant, advance, sleep};

use crate::support::MS;

#[tokio::test(start_paused = true)]
async fn an_item_is_queued_when_its_delay_has_passed() {
    let queue = WorkQueue::new();
    queue.add_after("a", 50 * MS);
    assert_eq!(queue.len(), 0);
    advance(49 * MS).await;
    assert_eq!(queue.len(), 0);
    advance(MS).await;
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.get().await, Some("a"));
}

#[tokio::test(start_paused = true)]
async fn zero_delay_adds_at_once() {
    let queue = WorkQueue::new();
    queue.add_after("a", Duration::ZERO);
    assert_eq!(queue.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_idle_get_wakes_exactly_at_the_deadline() {
    let queue = WorkQueue::new();
    let start = Instant::now();
    queue.add_after("a", 250 * MS);
    // Nothing else is runnable: the paused clock jumps to the get's timer.
    assert_eq!(queue.get().await, Some("a"));
    assert_eq!(start.elapsed(), 250 * MS);
}

#[tokio::test(start_paused = true)]
async fn items_come_out_in_deadline_order() {
    let queue = WorkQueue::new();
    queue.add_after("c", 30 * MS);
    queue.add_after("a", 10 * MS);
    queue.add_after("b", 20 * MS);
    let start = Instant::now();
    for (item, at) in [("a", 10), ("b", 20), ("c", 30)] {
        assert_eq!(queue.get().await, Some(item));
        assert_eq!(start.elapsed(), at * MS);
    }
}

#[tokio::test(start_paused = true)]
async fn due_items_are_queued_in_deadline_order_behind_earlier_adds() {
    let queue = WorkQueue::new();
    queue.add_after("late", 20 * MS);
    queue.add_after("early", 10 * MS);
    queue.add("now");
    advance(25 * MS).await;
    queue.add("after");
    assert_eq!(queue.get().await, Some("now"));
    assert_eq!(queue.get().await, Some("early"));
    assert_eq!(queue.get().await, Some("late"));
    assert_eq!(queue.get().await, Some("after"));
}

#[tokio::test(start_paused = true)]
async fn an_earlier_deadline_for_a_waiting_item_wins() {
    let queue = WorkQueue::new();
    let start = Instant::now();
    queue.add_after("a", 100 * MS);
    queue.add_after("a", 10 * MS);
    assert_eq!(queue.get().await, Some("a"));
    assert_eq!(start.elapsed(), 10 * MS);
    queue.done(&"a");
    // The superseded deadline does not add it a second time.
    advance(200 * MS).await;
    assert_eq!(queue.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_later_deadline_for_a_waiting_item_is_ignored() {
    let queue = WorkQueue::new();
    let start = Instant::now();
    queue.add_after("a", 10 * MS);
    queue.add_after("a", 100 * MS);
    assert_eq!(queue.get().await, Some("a"));
    assert_eq!(start.elapsed(), 10 * MS);
    queue.done(&"a");
    advance(200 * MS).await;
    assert_eq!(queue.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_sleeping_get_re_arms_for_an_earlier_item() {
    let queue = WorkQueue::new();
    let start = Instant::now();
    queue.add_after("late", 1000 * MS);
    let waiter = tokio::spawn({
        let queue = queue.clone();
        async move { (queue.get().await, Instant::now()) }
    });
    sleep(10 * MS).await;
    queue.add_after("early", 40 * MS);
    let (item, at) = waiter.await.unwrap();
    assert_eq!(item, Some("early"));
    assert_eq!(at - start, 50 * MS);
}

#[tokio::test(start_paused = true)]
async fn many_idle_workers_share_due_items() {
    let queue = WorkQueue::new();
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let queue = queue.clone();
            tokio::spawn(async move { queue.get().await })
        })
        .collect();
    for item in 0..4 {
        queue.add_after(item, (10 + item) * MS);
    }
    let mut got: Vec<u32> = Vec::new();
    for worker in workers {
        got.push(worker.await.unwrap().unwrap());
    }
    got.sort_unstable();
    assert_eq!(got, vec![0, 1, 2, 3]);
}

#[tokio::test(start_paused = true)]
async fn a_delayed_add_of_a_processing_item_marks_it_dirty_when_due() {
    let queue = WorkQueue::new();
    queue.add("a");
    let a = queue.get().await.unwrap();
    queue.add_after("a", 10 * MS);
    advance(20 * MS).await;
    // Due while processing: dirty, not queued.
    assert_eq!(queue.len(), 0);
    queue.done(&a);
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.get().await, Some("a"));
}

#[tokio::test(start_paused = true)]
async fn a_waiting_item_can_still_be_added_directly() {
    // As upstream: the direct add does not cancel the wait, so the item comes twice.
    let queue = WorkQueue::new();
    queue.add_after("a", 10 * MS);
    queue.add("a");
    assert_eq!(queue.get().await, Some("a"));
    queue.done(&"a");
    assert_eq!(queue.get().await, Some("a"));
}

#[tokio::test(start_paused = true)]
async fn shut_down_drops_waiting_items_and_ignores_new_ones() {
    let queue = WorkQueue::new();
    queue.add_after("a", 10 * MS);
    queue.shut_down();
    queue.add_after("b", Duration::ZERO);
    queue.add_after("c", 10 * MS);
    advance(Duration::from_secs(1)).await;
    assert_eq!(queue.len(), 0);
    assert_eq!(queue.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn shut_down_wakes_a_get_sleeping_on_a_deadline() {
    let queue: WorkQueue<&str> = WorkQueue::new();
    queue.add_after("a", Duration::from_secs(3600));
    let waiter = tokio::spawn({
        let queue = queue.clone();
        async move { queue.get().await }
    });
    sleep(MS).await;
    let start = Instant::now();
    queue.shut_down();
    assert_eq!(waiter.await.unwrap(), None);
    assert_eq!(start.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn huge_delays_are_capped_not_overflowed() {
    let queue = WorkQueue::new();
    queue.add_after("a", Duration::MAX);
    advance(MAX_DELAY - MS).await;
    assert_eq!(queue.len(), 0);
    advance(MS).await;
    assert_eq!(queue.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn get_wakes_up_for_a_due_item_while_other_items_keep_waiting() {
    let queue = WorkQueue::new();
    queue.add_after(1, 10 * MS);
    queue.add_after(2, 10_000 * MS);
    let start = Instant::now();
    assert_eq!(queue.get().await, Some(1));
    assert_eq!(start.elapsed(), 10 * MS);
    assert_eq!(queue.len(), 0);
    assert_eq!(queue.get().await, Some(2));
    assert_eq!(start.elapsed(), 10_000 * MS);
}
