//! Both backends against the shared `Queue` conformance suite and their reference models.

use informer_testing::conformance::queue;

use crate::support::{delta_fifo, in_order};

#[test]
fn delta_fifo_conforms() {
    queue::run(delta_fifo);
}

#[test]
fn in_order_fifo_conforms() {
    queue::run(|known| in_order(known, 1000));
}

#[test]
fn in_order_fifo_with_single_delta_batches_conforms() {
    queue::run(|known| in_order(known, 1));
}

#[tokio::test]
async fn the_suite_runs_from_async_tests() {
    queue::run_async(delta_fifo).await;
}

#[test]
fn delta_fifo_matches_its_model() {
    queue::check_delta_fifo_model(delta_fifo);
}

#[test]
fn in_order_fifo_matches_its_model() {
    for max_batch_size in [1, 2, 1000] {
        queue::check_in_order_model(max_batch_size, |known| in_order(known, max_batch_size));
    }
}
