//! The fixtures the suites of this binary share: the two queues built from the same settings,
//! the objects and known-objects stores they are fed, and one pop read as labels. Each was
//! defined again in several test files before they became one binary.

use std::sync::Arc;

use futures::FutureExt;
use informer_core::{Delta, Queue};
use informer_fifo::{DeltaFifo, DeltaFifoConfig, InOrderFifo, InOrderFifoConfig};
use informer_testing::JsonObject;
use informer_testing::conformance::queue::{KnownObjectsMap, KnownStore};

/// A `DeltaFifo`, with or without a known-objects store.
pub fn delta_fifo(known_objects: KnownStore) -> DeltaFifo<JsonObject> {
    DeltaFifo::new(DeltaFifoConfig {
        known_objects,
        ..DeltaFifoConfig::default()
    })
}

/// An `InOrderFifo` handing out at most `max_batch_size` deltas per pop.
pub fn in_order(known_objects: KnownStore, max_batch_size: usize) -> InOrderFifo<JsonObject> {
    InOrderFifo::new(InOrderFifoConfig {
        known_objects,
        max_batch_size: max_batch_size.try_into().unwrap(),
        ..InOrderFifoConfig::default()
    })
}

/// Object `name` in namespace `ns`, at resourceVersion `rv`.
pub fn obj(name: &str, rv: &str) -> Arc<JsonObject> {
    Arc::new(JsonObject::new(Some("ns"), name).with_resource_version(rv))
}

/// A known-objects store holding `objects`.
pub fn store(objects: &[&Arc<JsonObject>]) -> Arc<KnownObjectsMap<JsonObject>> {
    Arc::new(KnownObjectsMap::with_objects(objects.iter().map(|o| Arc::clone(o))).unwrap())
}

/// `name:Kind@rv`, with `(tombstone)` after the kind for tombstones.
pub fn labels(deltas: &[Delta<JsonObject>]) -> Vec<String> {
    deltas
        .iter()
        .map(|d| {
            let o = d.object.object();
            let t = if d.object.is_tombstone() {
                "(tombstone)"
            } else {
                ""
            };
            format!(
                "{}:{:?}{t}@{}",
                d.object.key().unwrap().name(),
                d.kind,
                o.metadata.resource_version.as_deref().unwrap_or("")
            )
        })
        .collect()
}

/// Pops one batch if one is ready now (`None` if the pop would wait): its deltas read by
/// `read`.
pub fn try_pop_with(
    q: &dyn Queue<JsonObject>,
    read: fn(&[Delta<JsonObject>]) -> Vec<String>,
) -> Option<Vec<String>> {
    let mut got = Vec::new();
    let popped = q
        .pop(&mut |deltas| {
            got = read(deltas);
            Ok(())
        })
        .now_or_never()?;
    popped.unwrap();
    Some(got)
}

/// Pops one batch that must be ready: the [`labels`] of its deltas.
pub fn pop(q: &dyn Queue<JsonObject>) -> Vec<String> {
    try_pop_with(q, labels).expect("something to pop")
}
