//! Both backends against the shared `Queue` conformance suite and their reference models.

use std::num::NonZeroUsize;

use informer_fifo::{DeltaFifo, DeltaFifoConfig, InOrderFifo, InOrderFifoConfig};
use informer_testing::JsonObject;
use informer_testing::conformance::queue::{self, KnownStore};

fn delta_fifo(known_objects: KnownStore) -> DeltaFifo<JsonObject> {
    DeltaFifo::new(DeltaFifoConfig {
        known_objects,
        ..DeltaFifoConfig::default()
    })
}

fn in_order(max_batch_size: usize) -> impl Fn(KnownStore) -> InOrderFifo<JsonObject> {
    move |known_objects| {
        InOrderFifo::new(InOrderFifoConfig {
            known_objects,
            max_batch_size: NonZeroUsize::new(max_batch_size).unwrap(),
            ..InOrderFifoConfig::default()
        })
    }
}

#[test]
fn delta_fifo_conforms() {
    queue::run(delta_fifo);
}

#[test]
fn in_order_fifo_conforms() {
    queue::run(in_order(1000));
}

#[test]
fn in_order_fifo_with_single_delta_batches_conforms() {
    queue::run(in_order(1));
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
        queue::check_in_order_model(max_batch_size, in_order(max_batch_size));
    }
}
