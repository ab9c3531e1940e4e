//! Both queues with what a relist hands over when the store keeps objects encoded
//! (`replace_listed`: unchanged keys instead of objects) and the JSON texts carried to the store
//! (`add_raw`, `update_raw`, `Listed::Object { raw }`).

use std::sync::Arc;

use informer_core::{Delta, Listed, ObjectKey, Queue, RawObject};
use informer_testing::JsonObject;

use crate::support::{delta_fifo, in_order, labels, obj, pop, store, try_pop_with};

type Known = Arc<informer_testing::conformance::queue::KnownObjectsMap<JsonObject>>;

fn queues(known: &Known) -> Vec<(&'static str, Box<dyn Queue<JsonObject>>)> {
    vec![
        (
            "delta-fifo",
            Box::new(delta_fifo(Some(Arc::clone(known) as _))),
        ),
        (
            "in-order",
            Box::new(in_order(Some(Arc::clone(known) as _), 100)),
        ),
    ]
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new(Some("ns"), name).unwrap()
}

/// Every pop until the queue is empty, in the [`labels`] form.
fn drain(q: &dyn Queue<JsonObject>) -> Vec<String> {
    let mut all = Vec::new();
    while let Some(popped) = try_pop_with(q, labels) {
        all.extend(popped);
        if q.is_empty() {
            break;
        }
    }
    all
}

/// An unchanged key counts as listed (no tombstone) and queues nothing when nothing is
/// pending for it; keys missing from the list are tombstoned as by `replace`.
#[test]
fn unchanged_keys_are_listed_and_queue_nothing_when_nothing_is_pending() {
    let (a, b, c) = (obj("a", "1"), obj("b", "2"), obj("c", "3"));
    let known = store(&[&a, &b, &c]);
    for (name, q) in queues(&known) {
        q.replace_listed(
            vec![
                Listed::Unchanged(key("a")),
                Listed::object(obj("b", "5")),
                Listed::object(obj("n", "6")),
            ],
            "9",
            known.as_ref(),
        )
        .unwrap();
        let mut seen = drain(q.as_ref());
        seen.sort();
        assert_eq!(
            seen,
            ["b:Replaced@5", "c:Deleted(tombstone)@3", "n:Replaced@6"],
            "{name}"
        );
    }
}

/// With deltas pending for the key, an unchanged key queues `Replaced` with the store's
/// object behind them, exactly where `replace` would have put the listed object.
#[test]
fn an_unchanged_key_with_pending_deltas_queues_the_stored_object() {
    let a = obj("a", "1");
    let known = store(&[&a]);
    for (name, q) in queues(&known) {
        q.update(obj("a", "1")).unwrap();
        q.replace_listed(vec![Listed::Unchanged(key("a"))], "9", known.as_ref())
            .unwrap();
        assert_eq!(drain(q.as_ref()), ["a:Updated@1", "a:Replaced@1"], "{name}");
    }
}

/// The default (`Queue::replace_listed` of a queue that does not override it) resolves
/// unchanged keys through the store and calls `replace`.
#[test]
fn the_default_resolves_unchanged_keys_through_the_store() {
    struct Plain(informer_fifo::DeltaFifo<JsonObject>);
    #[async_trait::async_trait]
    impl Queue<JsonObject> for Plain {
        fn add(&self, o: Arc<JsonObject>) -> Result<(), informer_core::QueueError> {
            self.0.add(o)
        }
        fn update(&self, o: Arc<JsonObject>) -> Result<(), informer_core::QueueError> {
            self.0.update(o)
        }
        fn delete(&self, o: Arc<JsonObject>) -> Result<(), informer_core::QueueError> {
            self.0.delete(o)
        }
        fn replace(
            &self,
            l: Vec<Arc<JsonObject>>,
            rv: &str,
        ) -> Result<(), informer_core::QueueError> {
            self.0.replace(l, rv)
        }
        fn resync(&self) -> Result<(), informer_core::QueueError> {
            self.0.resync()
        }
        async fn pop(
            &self,
            p: &mut informer_core::ProcessFn<'_, JsonObject>,
        ) -> Result<(), informer_core::QueueError> {
            self.0.pop(p).await
        }
        fn has_synced(&self) -> bool {
            self.0.has_synced()
        }
        fn len(&self) -> usize {
            self.0.len()
        }
        fn close(&self) {
            self.0.close()
        }
        fn is_closed(&self) -> bool {
            self.0.is_closed()
        }
    }
    let a = obj("a", "1");
    let known = store(&[&a]);
    let q = Plain(delta_fifo(Some(Arc::clone(&known) as _)));
    q.replace_listed(
        vec![Listed::Unchanged(key("a")), Listed::Unchanged(key("gone"))],
        "9",
        known.as_ref(),
    )
    .unwrap();
    assert_eq!(pop(&q), ["a:Replaced@1"]);
    assert!(q.is_empty());
    // The text given with an object is dropped by the defaults, never an error.
    q.add_raw(obj("b", "2"), RawObject::new("{}")).unwrap();
    let raw = try_pop_with(&q, texts).unwrap();
    assert_eq!(raw, ["-"]);
}

/// `d.raw` of each delta, `-` for none.
fn texts(deltas: &[Delta<JsonObject>]) -> Vec<String> {
    deltas
        .iter()
        .map(|d| {
            d.raw
                .as_ref()
                .map_or("-".to_owned(), |r| r.as_str().to_owned())
        })
        .collect()
}

/// Texts given with objects stay in their deltas; deletions and tombstones carry none.
#[test]
fn texts_travel_in_their_deltas() {
    let gone = obj("gone", "1");
    let known = store(&[&gone]);
    for (name, q) in queues(&known) {
        q.add_raw(obj("a", "1"), RawObject::new(r#"{"a":1}"#))
            .unwrap();
        q.update_raw(obj("a", "2"), RawObject::new(r#"{"a":2}"#))
            .unwrap();
        q.update(obj("a", "3")).unwrap();
        q.delete(obj("a", "4")).unwrap();
        let mut got = Vec::new();
        while let Some(popped) = try_pop_with(q.as_ref(), texts) {
            got.extend(popped);
            if q.is_empty() {
                break;
            }
        }
        assert_eq!(got, [r#"{"a":1}"#, r#"{"a":2}"#, "-", "-"], "{name}");
        q.replace_listed(
            vec![Listed::Object {
                object: obj("b", "5"),
                raw: Some(RawObject::new(r#"{"b":5}"#)),
            }],
            "9",
            known.as_ref(),
        )
        .unwrap();
        let mut got = Vec::new();
        while let Some(popped) = try_pop_with(q.as_ref(), texts) {
            got.extend(popped);
            if q.is_empty() {
                break;
            }
        }
        got.sort();
        assert_eq!(
            got,
            ["-", r#"{"b":5}"#],
            "{name}: the tombstone of `gone` has none"
        );
    }
}
