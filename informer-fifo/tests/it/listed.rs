//! Both queues with what a relist hands over when the store keeps objects encoded
//! (`replace_listed`: unchanged keys instead of objects, objects kept as text until popped) and
//! the JSON texts carried to the store (`add_raw`, `update_raw`, `Listed::Object { raw }`).

use std::sync::Arc;

use futures::FutureExt;
use informer_core::{
    Delta, KnownObjects, Listed, ObjectKey, Queue, QueueError, RawObject, StoreError,
};
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

/// A known-objects store that decodes text ([`Listed::Encoded`]) and counts its decodes;
/// `garbage` is a text it refuses.
struct Decoding {
    inner: Known,
    decoded: std::sync::atomic::AtomicUsize,
}

impl Decoding {
    fn new(inner: Known) -> Arc<Self> {
        Arc::new(Self {
            inner,
            decoded: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    fn decoded(&self) -> usize {
        self.decoded.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl KnownObjects<JsonObject> for Decoding {
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.inner.list_keys()
    }

    fn get_by_key(&self, key: &str) -> Option<Arc<JsonObject>> {
        self.inner.get_by_key(key)
    }

    fn decodes_raw(&self) -> bool {
        true
    }

    fn decode_raw(&self, raw: &RawObject) -> Result<Arc<JsonObject>, StoreError> {
        self.decoded
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        serde_json::from_str(raw.as_str())
            .map(Arc::new)
            .map_err(|e| StoreError::Backend {
                context: "decoding".to_owned(),
                source: Box::new(e),
            })
    }
}

fn decoding_queues(known: &Arc<Decoding>) -> Vec<(&'static str, Box<dyn Queue<JsonObject>>)> {
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

/// The listed object as text, the way the reflector hands it over.
fn encoded(name: &str, rv: &str) -> Listed<JsonObject> {
    Listed::Encoded {
        key: key(name),
        raw: RawObject::from(serde_json::to_string(&*obj(name, rv)).unwrap()),
    }
}

/// Texts stand for the objects they decode to: popped as `Replaced` with their text, in list
/// order, beside objects and tombstones. `DeltaFifo` keeps them as text until each is popped
/// (nothing decoded by the replace, one decode per pop); the in-order queue, whose relist is
/// one batch, decodes them at once.
#[test]
fn listed_texts_pop_decoded_with_their_text_and_delta_fifo_decodes_only_at_pop() {
    let gone = obj("gone", "1");
    for name in ["delta-fifo", "in-order"] {
        // A store (and its count of decodes) per queue.
        let known = Decoding::new(store(&[&gone]));
        let q: Box<dyn Queue<JsonObject>> = if name == "delta-fifo" {
            Box::new(delta_fifo(Some(Arc::clone(&known) as _)))
        } else {
            Box::new(in_order(Some(Arc::clone(&known) as _), 100))
        };
        q.replace_listed(
            vec![
                encoded("a", "5"),
                Listed::object(obj("b", "6")),
                encoded("c", "7"),
            ],
            "9",
            known.as_ref(),
        )
        .unwrap();
        let after_replace = known.decoded();
        let mut seen = Vec::new();
        let mut with_text = 0;
        while let Some(popped) = try_pop_with(q.as_ref(), |deltas| {
            let mut out = labels(deltas);
            out.extend(
                texts(deltas)
                    .into_iter()
                    .filter(|t| t != "-")
                    .map(|_| "text".to_owned()),
            );
            out
        }) {
            with_text += popped.iter().filter(|l| *l == "text").count();
            seen.extend(popped.into_iter().filter(|l| l != "text"));
            if q.is_empty() {
                break;
            }
        }
        seen.sort();
        assert_eq!(
            seen,
            [
                "a:Replaced@5",
                "b:Replaced@6",
                "c:Replaced@7",
                "gone:Deleted(tombstone)@1"
            ],
            "{name}"
        );
        assert_eq!(with_text, 2, "{name}: both decoded objects keep their text");
        assert_eq!(known.decoded(), 2, "{name}: one decode per text");
        if name == "delta-fifo" {
            assert_eq!(after_replace, 0, "the replace decoded nothing");
        }
        assert!(q.has_synced(), "{name}");
    }
}

/// A key waiting as text keeps its place and its order: a later event queues behind the listed
/// object, and a relist without the key tombstones it with the listed object.
#[test]
fn a_key_waiting_as_text_keeps_its_order_behind_later_deltas() {
    let known = Decoding::new(store(&[]));
    for (name, q) in decoding_queues(&known) {
        q.replace_listed(vec![encoded("a", "5")], "9", known.as_ref())
            .unwrap();
        q.update(obj("a", "6")).unwrap();
        assert_eq!(drain(q.as_ref()), ["a:Replaced@5", "a:Updated@6"], "{name}");
    }
    let known = Decoding::new(store(&[]));
    for (name, q) in decoding_queues(&known) {
        q.replace_listed(vec![encoded("a", "5")], "9", known.as_ref())
            .unwrap();
        q.replace_listed(vec![], "10", known.as_ref()).unwrap();
        assert_eq!(
            drain(q.as_ref()),
            ["a:Replaced@5", "a:Deleted(tombstone)@5"],
            "{name}"
        );
    }
}

/// `DeltaFifo::pending` shows a key waiting as text decoded, and leaves it waiting as text.
#[test]
fn pending_shows_a_key_waiting_as_text_without_decoding_it_in_the_queue() {
    let known = Decoding::new(store(&[]));
    let q = delta_fifo(Some(Arc::clone(&known) as _));
    q.replace_listed(vec![encoded("a", "5")], "9", known.as_ref())
        .unwrap();
    assert_eq!(labels(&q.pending("ns/a")), ["a:Replaced@5"]);
    assert_eq!(known.decoded(), 1);
    assert_eq!(pop(&q), ["a:Replaced@5"]);
    assert_eq!(known.decoded(), 2, "still text until popped");
}

/// A queue whose own store does not decode text (or that has none) decodes listed texts
/// through the store it is given, at once.
#[test]
fn without_a_decoding_store_of_its_own_the_queue_decodes_texts_at_once() {
    let known = Decoding::new(store(&[]));
    let q = delta_fifo(None);
    q.replace_listed(vec![encoded("a", "5")], "9", known.as_ref())
        .unwrap();
    assert_eq!(known.decoded(), 1);
    assert_eq!(pop(&q), ["a:Replaced@5"]);
    assert_eq!(known.decoded(), 1);
}

/// A text the store cannot decode (a broken store contract) never becomes a wrong answer: the
/// in-order queue refuses the list (nothing queued), `DeltaFifo` reports it when it would pop
/// it, and counts it done so that the rest of the list syncs.
#[test]
fn a_text_the_store_cannot_decode_is_refused_with_its_key() {
    let garbage = Listed::Encoded {
        key: key("bad"),
        raw: RawObject::new("{not json"),
    };
    let known = Decoding::new(store(&[]));
    let q = in_order(Some(Arc::clone(&known) as _), 100);
    let err = q
        .replace_listed(vec![encoded("a", "5"), garbage], "9", known.as_ref())
        .unwrap_err();
    assert!(
        matches!(&err, QueueError::Decode { key, .. } if key.as_str() == "ns/bad"),
        "{err:?}"
    );
    assert!(q.is_empty());

    let garbage = Listed::Encoded {
        key: key("bad"),
        raw: RawObject::new("{not json"),
    };
    let q = delta_fifo(Some(Arc::clone(&known) as _));
    q.replace_listed(vec![garbage, encoded("a", "5")], "9", known.as_ref())
        .unwrap();
    let popped = q.pop(&mut |_| Ok(())).now_or_never().expect("ready");
    assert!(
        matches!(&popped, Err(QueueError::Decode { key, .. }) if key.as_str() == "ns/bad"),
        "{popped:?}"
    );
    assert!(!q.has_synced());
    assert_eq!(pop(&q), ["a:Replaced@5"]);
    assert!(q.has_synced());
}
