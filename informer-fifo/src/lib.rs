//! The queue backends of informer-rs: [`DeltaFifo`] and [`InOrderFifo`].
//!
//! A queue sits between the reflector, which writes what the API server reports (`add`,
//! `update`, `delete`, `replace` after a full list, `resync`), and the informer's processing
//! loop, which pops deltas and applies them to the cache and the event handlers. Both backends
//! implement [`informer_core::Queue`] and pass the conformance suite in
//! `informer_testing::conformance::queue`.
//!
//! # Which one
//!
//! - [`DeltaFifo`] groups deltas by key: one pop hands over everything pending for the key that
//!   was queued first. A key updated many times while the consumer is busy is popped once, with
//!   all its deltas. This is client-go's `DeltaFIFO`.
//! - [`InOrderFifo`] keeps every delta in arrival order and pops runs of them, so a consumer sees
//!   events in exactly the order they happened across keys; a relist or resync arrives as one
//!   atomic batch. This is client-go's `RealFIFO`.
//!
//! # Shared behaviour
//!
//! Both are unbounded (a producer never waits for the consumer), hold objects as `Arc<K>` without
//! copying them, wait for work with [`tokio::sync::Notify`] (no spinning, no polling timer, and no
//! runtime needed: any executor can drive [`pop`](informer_core::Queue::pop)), process one batch
//! at a time, and have cancel-safe pops: dropping a pop future never loses a delta.

mod delta_fifo;
mod in_order;
mod wait;

pub use delta_fifo::{DeltaFifo, DeltaFifoConfig};
pub use in_order::{DEFAULT_MAX_BATCH_SIZE, InOrderFifo, InOrderFifoConfig};
