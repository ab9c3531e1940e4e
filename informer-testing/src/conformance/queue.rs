//! Conformance suite for [`Queue`] backends, and model-based property tests.
//!
//! [`run`] checks every rule of the `Queue` trait contract that all backends share, against
//! fresh queues built by the function you pass. It is the one call a backend needs:
//!
//! ```
//! use informer_testing::conformance::queue;
//! # use informer_core::Queue;
//! # use informer_testing::JsonObject;
//! # fn conformance<Q: Queue<JsonObject> + 'static>(my_queue: impl Fn(queue::KnownStore) -> Q) {
//! // In a `#[test]` of your crate:
//! queue::run(|known_objects| my_queue(known_objects));
//! # }
//! ```
//!
//! The function receives the known-objects store the queue must consult (`None`: the queue has
//! none) and must build the queue with the default key function
//! ([`key_of`](informer_core::key_of)). The suite uses [`JsonObject`] as the object type, panics
//! with the name of the first rule a queue breaks, and never sleeps for real: it runs on its own
//! tokio runtime with paused time, except for one rule that feeds a queue from several OS
//! threads at once. [`run_async`] does the same from inside an async test.
//!
//! Where backends may legitimately differ (how deltas are grouped into batches), the suite
//! checks what every backend shares: for each key, the deltas handed to the process function,
//! concatenated over all pops, in order.
//!
//! The model-based property tests ([`check_delta_fifo_model`], [`check_in_order_model`]) go
//! further for the two queue semantics `informer-fifo` ships: they run random sequences of
//! writes, pops, requeues and closes against a queue and against a plain reference model of
//! those semantics, and compare every popped batch, `len` and `has_synced`.

mod known;
mod model;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::FutureExt;
use informer_core::{Delta, DeltaType, KnownObjects, ProcessError, ProcessFn, Queue, QueueError};
use tokio::time::timeout;

use crate::JsonObject;

pub use known::KnownObjectsMap;
pub use model::{ModelCheck, check_delta_fifo_model, check_in_order_model};

/// The known-objects store handed to the queue factory (`None`: the queue has none).
pub type KnownStore = Option<Arc<dyn KnownObjects<JsonObject>>>;

/// Runs every rule of the suite against queues built by `make`; panics on the first broken
/// rule, naming it.
///
/// Blocking: call it from a plain `#[test]`, not from inside an async runtime (use
/// [`run_async`] there).
pub fn run<Q, F>(make: F)
where
    F: Fn(KnownStore) -> Q,
    Q: Queue<JsonObject> + 'static,
{
    let paused = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap_or_else(|err| panic!("queue conformance: cannot build a tokio runtime: {err}"));
    paused.block_on(async {
        per_key_order(&make).await;
        // Early: the rules below park pops and let paused time advance, which a spinning pop
        // would prevent (the runtime never idles), hanging instead of failing.
        pop_waits_without_spinning(&make).await;
        keyless_objects_are_rejected(&make).await;
        producers_do_not_wait_for_processing(&make).await;
        delete_of_unknown_key_is_dropped(&make).await;
        replace_queues_replaced_and_tombstones(&make).await;
        resync_skips_keys_with_pending_deltas(&make).await;
        requeue_and_drop(&make).await;
        has_synced_follows_the_first_population(&make).await;
        close_wakes_every_waiter(&make).await;
        close_drains_then_reports_closed(&make).await;
        cancelled_pops_lose_nothing(&make).await;
    });
    drop(paused);
    // Real threads need real time: this runtime is not paused.
    let real = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap_or_else(|err| panic!("queue conformance: cannot build a tokio runtime: {err}"));
    real.block_on(many_producers_one_consumer(&make));
}

/// [`run`] for async tests: runs the suite on a blocking thread (with its own runtimes) and
/// waits for it. Panics (re-raised from that thread) name the first broken rule.
pub async fn run_async<Q, F>(make: F)
where
    F: Fn(KnownStore) -> Q + Send + 'static,
    Q: Queue<JsonObject> + 'static,
{
    if let Err(err) = tokio::task::spawn_blocking(move || run(make)).await {
        match err.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(err) => panic!("queue conformance: the suite's thread was cancelled: {err}"),
        }
    }
}

/// How long (virtual time) a rule waits for a pop that should return.
const PATIENCE: Duration = Duration::from_secs(3600);

/// The namespace of every object the suite makes.
const NS: &str = "conformance";

/// An object in the suite's namespace.
fn obj(name: &str, rv: &str) -> Arc<JsonObject> {
    Arc::new(JsonObject::new(Some(NS), name).with_resource_version(rv))
}

/// The key of [`obj`]`(name, _)`.
fn key(name: &str) -> String {
    format!("{NS}/{name}")
}

fn store(objects: &[&Arc<JsonObject>]) -> Arc<KnownObjectsMap<JsonObject>> {
    let store = KnownObjectsMap::new();
    for o in objects {
        let inserted = store.insert(Arc::clone(o));
        assert!(
            inserted.is_ok(),
            "queue conformance: the suite's own objects have keys"
        );
    }
    Arc::new(store)
}

fn known(store: &Arc<KnownObjectsMap<JsonObject>>) -> KnownStore {
    let store: Arc<dyn KnownObjects<JsonObject>> = Arc::clone(store) as _;
    Some(store)
}

/// A write that must succeed.
fn must(rule: &str, what: &str, result: Result<(), QueueError>) {
    if let Err(err) = result {
        panic!("queue conformance [{rule}]: {what} failed: {err}");
    }
}

/// One popped delta, in a form that compares and prints well.
#[derive(Clone)]
struct Seen {
    kind: DeltaType,
    key: String,
    tombstone: bool,
    object: Arc<JsonObject>,
}

impl Seen {
    /// `Kind@rv`, or `Deleted(tombstone)@rv` for tombstones (the rv of the last known state).
    fn label(&self) -> String {
        let rv = self
            .object
            .metadata
            .resource_version
            .as_deref()
            .unwrap_or("");
        if self.tombstone {
            format!("{:?}(tombstone)@{rv}", self.kind)
        } else {
            format!("{:?}@{rv}", self.kind)
        }
    }
}

fn record(deltas: &[Delta<JsonObject>]) -> Vec<Seen> {
    deltas
        .iter()
        .map(|d| Seen {
            kind: d.kind,
            key: d.object.key().map(|k| k.to_string()).unwrap_or_default(),
            tombstone: d.object.is_tombstone(),
            object: Arc::clone(d.object.object()),
        })
        .collect()
}

/// Pops once; panics if the pop does not return within [`PATIENCE`] of virtual time.
async fn pop_within<Q: Queue<JsonObject> + ?Sized>(
    rule: &str,
    q: &Q,
    process: &mut ProcessFn<'_, JsonObject>,
) -> Result<(), QueueError> {
    match timeout(PATIENCE, q.pop(process)).await {
        Ok(result) => result,
        Err(_) => panic!(
            "queue conformance [{rule}]: pop did not return although the queue had something \
             to pop or was closed"
        ),
    }
}

/// Pops until the queue reports empty; returns the batches.
async fn drain<Q: Queue<JsonObject> + ?Sized>(rule: &str, q: &Q) -> Vec<Vec<Seen>> {
    let mut batches = Vec::new();
    while !q.is_empty() {
        assert!(
            batches.len() < 100_000,
            "queue conformance [{rule}]: the queue never reports empty"
        );
        let mut batch = Vec::new();
        let popped = pop_within(rule, q, &mut |d| {
            batch = record(d);
            Ok(())
        })
        .await;
        if let Err(err) = popped {
            panic!("queue conformance [{rule}]: pop failed: {err}");
        }
        assert!(
            !batch.is_empty(),
            "queue conformance [{rule}]: process got an empty batch"
        );
        batches.push(batch);
    }
    assert_eq!(
        q.len(),
        0,
        "queue conformance [{rule}]: is_empty() but len() != 0"
    );
    batches
}

/// For each key, its deltas concatenated over all batches.
fn per_key(batches: &[Vec<Seen>]) -> BTreeMap<String, Vec<String>> {
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for seen in batches.iter().flatten() {
        map.entry(seen.key.clone()).or_default().push(seen.label());
    }
    map
}

fn expect_per_key(rule: &str, batches: &[Vec<Seen>], expected: &[(&str, &[&str])]) {
    let expected: BTreeMap<String, Vec<String>> = expected
        .iter()
        .map(|(name, labels)| (key(name), labels.iter().map(|l| (*l).to_owned()).collect()))
        .collect();
    let actual = per_key(batches);
    assert_eq!(
        actual, expected,
        "queue conformance [{rule}]: deltas per key (left: popped, right: expected)"
    );
}

fn find<'a>(rule: &str, batches: &'a [Vec<Seen>], name: &str, label: &str) -> &'a Seen {
    let key = key(name);
    batches
        .iter()
        .flatten()
        .find(|s| s.key == key && s.label() == label)
        .unwrap_or_else(|| panic!("queue conformance [{rule}]: no {label} popped for {key}"))
}

fn expect_shared(rule: &str, seen: &Seen, original: &Arc<JsonObject>) {
    assert!(
        Arc::ptr_eq(&seen.object, original),
        "queue conformance [{rule}]: {} {} carries a copy of the object, not the Arc it was given",
        seen.key,
        seen.label()
    );
}

async fn per_key_order<Q: Queue<JsonObject>>(make: &impl Fn(KnownStore) -> Q) {
    const RULE: &str = "deltas of a key are popped in the order they were queued";
    let q = make(None);
    assert!(
        q.is_empty(),
        "queue conformance [{RULE}]: a new queue is not empty"
    );
    assert!(
        !q.is_closed(),
        "queue conformance [{RULE}]: a new queue is closed"
    );
    let (a1, a2, a3) = (obj("a", "1"), obj("a", "2"), obj("a", "3"));
    let (b1, b2, c1) = (obj("b", "1"), obj("b", "2"), obj("c", "1"));
    must(RULE, "add", q.add(Arc::clone(&a1)));
    must(RULE, "add", q.add(Arc::clone(&b1)));
    must(RULE, "update", q.update(Arc::clone(&a2)));
    must(RULE, "update", q.update(Arc::clone(&b2)));
    must(RULE, "delete", q.delete(Arc::clone(&a3)));
    must(RULE, "add", q.add(Arc::clone(&c1)));
    assert!(
        !q.is_empty() && q.len() > 0,
        "queue conformance [{RULE}]: len after writes"
    );
    let batches = drain(RULE, &q).await;
    expect_per_key(
        RULE,
        &batches,
        &[
            ("a", &["Added@1", "Updated@2", "Deleted@3"]),
            ("b", &["Added@1", "Updated@2"]),
            ("c", &["Added@1"]),
        ],
    );
    let mut first_seen: Vec<&str> = Vec::new();
    for seen in batches.iter().flatten() {
        if !first_seen.contains(&seen.key.as_str()) {
            first_seen.push(&seen.key);
        }
    }
    assert_eq!(
        first_seen,
        [key("a"), key("b"), key("c")],
        "queue conformance [{RULE}]: a key queued earlier must first be popped no later"
    );
    for (name, label, original) in [
        ("a", "Added@1", &a1),
        ("a", "Updated@2", &a2),
        ("a", "Deleted@3", &a3),
        ("b", "Updated@2", &b2),
        ("c", "Added@1", &c1),
    ] {
        expect_shared(RULE, find(RULE, &batches, name, label), original);
    }
}

async fn keyless_objects_are_rejected<Q: Queue<JsonObject>>(make: &impl Fn(KnownStore) -> Q) {
    const RULE: &str = "objects without a key are rejected with QueueError::Key";
    let nameless = Arc::new(JsonObject::default());
    let q = make(None);
    for (what, result) in [
        ("add", q.add(Arc::clone(&nameless))),
        ("update", q.update(Arc::clone(&nameless))),
        ("delete", q.delete(Arc::clone(&nameless))),
        (
            "replace",
            q.replace(vec![obj("fine", "1"), Arc::clone(&nameless)], "1"),
        ),
    ] {
        assert!(
            matches!(result, Err(QueueError::Key(_))),
            "queue conformance [{RULE}]: {what} of a nameless object returned {result:?}"
        );
    }
    let q = make(None);
    must(RULE, "add", q.add(obj("after", "1")));
    let batches = drain(RULE, &q).await;
    expect_per_key(RULE, &batches, &[("after", &["Added@1"])]);
}

async fn producers_do_not_wait_for_processing<Q: Queue<JsonObject> + 'static>(
    make: &impl Fn(KnownStore) -> Q,
) {
    const RULE: &str = "writes and queries do not wait for a running process function";
    let q = Arc::new(make(None));
    must(RULE, "add", q.add(obj("a", "1")));
    let (tx, rx) = std::sync::mpsc::channel();
    let rx = std::sync::Mutex::new(rx);
    let mut first = Vec::new();
    let popped = pop_within(RULE, q.as_ref(), &mut |d| {
        first = record(d);
        let writer = Arc::clone(&q);
        let tx = tx.clone();
        // Another thread writes while this batch is being processed. A queue that holds its
        // lock during processing blocks it until we give up (a real-time guard against a
        // deadlock, not a timing assertion).
        std::thread::spawn(move || {
            let ok = writer.update(obj("a", "2")).is_ok() && writer.add(obj("b", "1")).is_ok();
            let _ = (
                writer.has_synced(),
                writer.len(),
                writer.is_empty(),
                writer.is_closed(),
            );
            let _ = tx.send(ok);
        });
        let answer = match rx.lock() {
            Ok(rx) => rx.recv_timeout(Duration::from_secs(60)),
            Err(_) => panic!("queue conformance [{RULE}]: receiver lock poisoned"),
        };
        match answer {
            Ok(true) => Ok(()),
            Ok(false) => panic!("queue conformance [{RULE}]: a write during processing failed"),
            Err(_) => panic!(
                "queue conformance [{RULE}]: a write from another thread did not complete \
                 while process was running"
            ),
        }
    })
    .await;
    if let Err(err) = popped {
        panic!("queue conformance [{RULE}]: pop failed: {err}");
    }
    let mut batches = vec![first];
    batches.extend(drain(RULE, q.as_ref()).await);
    expect_per_key(
        RULE,
        &batches,
        &[("a", &["Added@1", "Updated@2"]), ("b", &["Added@1"])],
    );
}

async fn delete_of_unknown_key_is_dropped<Q: Queue<JsonObject>>(make: &impl Fn(KnownStore) -> Q) {
    const RULE: &str = "delete of a key neither known nor queued is dropped";
    let q = make(None);
    must(RULE, "delete", q.delete(obj("ghost", "1")));
    assert!(
        q.is_empty(),
        "queue conformance [{RULE}]: deleting an unknown key queued something"
    );
    let pending = q.pop(&mut |_| Ok(())).now_or_never();
    assert!(
        pending.is_none(),
        "queue conformance [{RULE}]: pop returned {pending:?} on a queue where only an unknown \
         key was deleted"
    );

    let k1 = obj("k", "1");
    let store = store(&[&k1]);
    let q = make(known(&store));
    must(RULE, "delete", q.delete(obj("k", "2")));
    must(RULE, "delete", q.delete(obj("ghost", "1")));
    let batches = drain(RULE, &q).await;
    expect_per_key(RULE, &batches, &[("k", &["Deleted@2"])]);

    let q = make(None);
    must(RULE, "add", q.add(obj("n", "1")));
    must(RULE, "delete", q.delete(obj("n", "2")));
    let batches = drain(RULE, &q).await;
    expect_per_key(RULE, &batches, &[("n", &["Added@1", "Deleted@2"])]);
}

async fn replace_queues_replaced_and_tombstones<Q: Queue<JsonObject>>(
    make: &impl Fn(KnownStore) -> Q,
) {
    const RULE: &str =
        "replace queues Replaced for the list and tombstones for known keys missing from it";
    let (x1, y1) = (obj("x", "1"), obj("y", "1"));
    let store = store(&[&x1, &y1]);
    let q = make(known(&store));
    let z1 = obj("z", "1");
    must(RULE, "add", q.add(Arc::clone(&z1)));
    must(RULE, "add", q.add(obj("w", "1")));
    must(RULE, "delete", q.delete(obj("w", "2")));
    let (x2, v1) = (obj("x", "2"), obj("v", "1"));
    must(
        RULE,
        "replace",
        q.replace(vec![Arc::clone(&x2), Arc::clone(&v1)], "10"),
    );
    let batches = drain(RULE, &q).await;
    expect_per_key(
        RULE,
        &batches,
        &[
            ("x", &["Replaced@2"]),
            ("v", &["Replaced@1"]),
            // In the store, not listed: the store's object.
            ("y", &["Deleted(tombstone)@1"]),
            // Queued, not listed: the newest queued object.
            ("z", &["Added@1", "Deleted(tombstone)@1"]),
            // Already deleted in the queue: no second deletion.
            ("w", &["Added@1", "Deleted@2"]),
        ],
    );
    expect_shared(RULE, find(RULE, &batches, "x", "Replaced@2"), &x2);
    expect_shared(RULE, find(RULE, &batches, "y", "Deleted(tombstone)@1"), &y1);
    expect_shared(RULE, find(RULE, &batches, "z", "Deleted(tombstone)@1"), &z1);

    // Without a store, queued keys are the only known ones.
    let q = make(None);
    let a1 = obj("a", "1");
    must(RULE, "add", q.add(Arc::clone(&a1)));
    must(RULE, "replace", q.replace(Vec::new(), "11"));
    let batches = drain(RULE, &q).await;
    expect_per_key(
        RULE,
        &batches,
        &[("a", &["Added@1", "Deleted(tombstone)@1"])],
    );
    expect_shared(RULE, find(RULE, &batches, "a", "Deleted(tombstone)@1"), &a1);
}

async fn resync_skips_keys_with_pending_deltas<Q: Queue<JsonObject>>(
    make: &impl Fn(KnownStore) -> Q,
) {
    const RULE: &str = "resync queues Sync for known objects without pending deltas";
    let (x1, y1) = (obj("x", "1"), obj("y", "1"));
    let store = store(&[&x1, &y1]);
    let q = make(known(&store));
    must(RULE, "update", q.update(obj("x", "2")));
    must(RULE, "resync", q.resync());
    let batches = drain(RULE, &q).await;
    expect_per_key(RULE, &batches, &[("x", &["Updated@2"]), ("y", &["Sync@1"])]);
    expect_shared(RULE, find(RULE, &batches, "y", "Sync@1"), &y1);

    must(RULE, "resync", q.resync());
    let batches = drain(RULE, &q).await;
    expect_per_key(RULE, &batches, &[("x", &["Sync@1"]), ("y", &["Sync@1"])]);

    // Without a store there is nothing to resync.
    let q = make(None);
    must(RULE, "add", q.add(obj("a", "1")));
    must(RULE, "resync", q.resync());
    let batches = drain(RULE, &q).await;
    expect_per_key(RULE, &batches, &[("a", &["Added@1"])]);
    must(RULE, "resync", q.resync());
    assert!(
        q.is_empty(),
        "queue conformance [{RULE}]: resync without a store queued something"
    );
}

async fn requeue_and_drop<Q: Queue<JsonObject>>(make: &impl Fn(KnownStore) -> Q) {
    const RULE: &str = "ProcessError::Requeue puts the batch back, ProcessError::Drop discards it";
    let q = make(None);
    must(RULE, "add", q.add(obj("a", "1")));
    must(RULE, "add", q.add(obj("b", "1")));
    must(RULE, "update", q.update(obj("a", "2")));
    let mut failed = Vec::new();
    let result = pop_within(RULE, &q, &mut |d| {
        failed = record(d);
        Err(ProcessError::Requeue("try again".into()))
    })
    .await;
    assert!(
        matches!(result, Err(QueueError::Process(ProcessError::Requeue(_)))),
        "queue conformance [{RULE}]: pop returned {result:?} after the process function asked \
         for a requeue"
    );
    assert!(
        !failed.is_empty(),
        "queue conformance [{RULE}]: process got an empty batch"
    );
    assert!(
        !q.is_empty(),
        "queue conformance [{RULE}]: the requeued batch is not queued"
    );
    let batches = drain(RULE, &q).await;
    expect_per_key(
        RULE,
        &batches,
        &[("a", &["Added@1", "Updated@2"]), ("b", &["Added@1"])],
    );

    let q = make(None);
    must(RULE, "add", q.add(obj("c", "1")));
    let result = pop_within(RULE, &q, &mut |_| Err(ProcessError::Drop("no".into()))).await;
    assert!(
        matches!(result, Err(QueueError::Process(ProcessError::Drop(_)))),
        "queue conformance [{RULE}]: pop returned {result:?} after the process function asked \
         to drop the batch"
    );
    assert!(
        q.is_empty(),
        "queue conformance [{RULE}]: a dropped batch is still queued"
    );
}

async fn has_synced_follows_the_first_population<Q: Queue<JsonObject>>(
    make: &impl Fn(KnownStore) -> Q,
) {
    const RULE: &str = "has_synced once everything the first replace queued is processed";
    let t1 = obj("t", "1");
    let store = store(&[&t1]);
    let q = make(known(&store));
    assert!(
        !q.has_synced(),
        "queue conformance [{RULE}]: synced before any write"
    );
    must(
        RULE,
        "replace",
        q.replace(vec![obj("a", "1"), obj("b", "1")], "5"),
    );
    assert!(
        !q.has_synced(),
        "queue conformance [{RULE}]: synced before anything was popped"
    );
    let mut during = Vec::new();
    let requeued = pop_within(RULE, &q, &mut |_| {
        during.push(q.has_synced());
        Err(ProcessError::Requeue("not yet".into()))
    })
    .await;
    assert!(
        requeued.is_err(),
        "queue conformance [{RULE}]: requeue was not reported"
    );
    assert!(
        !q.has_synced(),
        "queue conformance [{RULE}]: synced although a batch was requeued"
    );
    let mut batches = Vec::new();
    while !q.is_empty() {
        assert!(
            batches.len() < 100,
            "queue conformance [{RULE}]: the queue never drains"
        );
        let mut batch = Vec::new();
        let popped = pop_within(RULE, &q, &mut |d| {
            during.push(q.has_synced());
            batch = record(d);
            Ok(())
        })
        .await;
        if let Err(err) = popped {
            panic!("queue conformance [{RULE}]: pop failed: {err}");
        }
        batches.push(batch);
        if !q.is_empty() {
            assert!(
                !q.has_synced(),
                "queue conformance [{RULE}]: synced while part of the first list is queued"
            );
        }
    }
    assert!(
        during.iter().all(|synced| !synced),
        "queue conformance [{RULE}]: has_synced was true while the last batch of the first \
         list was being processed"
    );
    assert!(
        q.has_synced(),
        "queue conformance [{RULE}]: not synced after the first list"
    );
    expect_per_key(
        RULE,
        &batches,
        &[
            ("a", &["Replaced@1"]),
            ("b", &["Replaced@1"]),
            ("t", &["Deleted(tombstone)@1"]),
        ],
    );
    must(RULE, "add", q.add(obj("c", "1")));
    assert!(
        q.has_synced(),
        "queue conformance [{RULE}]: a later write un-synced the queue"
    );

    let q = make(None);
    must(RULE, "add", q.add(obj("early", "1")));
    assert!(
        q.has_synced(),
        "queue conformance [{RULE}]: a write before any replace leaves no initial list to wait for"
    );
    must(RULE, "replace", q.replace(vec![obj("late", "1")], "6"));
    assert!(
        q.has_synced(),
        "queue conformance [{RULE}]: a replace after a write un-synced"
    );

    let q = make(None);
    must(RULE, "replace", q.replace(Vec::new(), "7"));
    assert!(
        q.has_synced(),
        "queue conformance [{RULE}]: an empty first list is synced at once"
    );
}

async fn close_wakes_every_waiter<Q: Queue<JsonObject> + 'static>(make: &impl Fn(KnownStore) -> Q) {
    const RULE: &str = "close wakes every waiting pop";
    let q = Arc::new(make(None));
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let q = Arc::clone(&q);
            tokio::spawn(async move { q.pop(&mut |_| Ok(())).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        waiters.iter().all(|w| !w.is_finished()),
        "queue conformance [{RULE}]: pop returned on an empty, open queue"
    );
    q.close();
    assert!(
        q.is_closed(),
        "queue conformance [{RULE}]: is_closed after close"
    );
    for waiter in waiters {
        match timeout(PATIENCE, waiter).await {
            Ok(Ok(Err(QueueError::Closed))) => {}
            Ok(Ok(other)) => panic!("queue conformance [{RULE}]: a woken pop returned {other:?}"),
            Ok(Err(err)) => panic!("queue conformance [{RULE}]: a waiting pop panicked: {err}"),
            Err(_) => panic!("queue conformance [{RULE}]: close did not wake a waiting pop"),
        }
    }
}

async fn close_drains_then_reports_closed<Q: Queue<JsonObject>>(make: &impl Fn(KnownStore) -> Q) {
    const RULE: &str =
        "after close, pop drains what is queued, then reports Closed; writes are ignored";
    let q = make(None);
    must(RULE, "add", q.add(obj("a", "1")));
    must(RULE, "add", q.add(obj("b", "1")));
    q.close();
    assert!(
        q.is_closed(),
        "queue conformance [{RULE}]: is_closed after close"
    );
    must(RULE, "add after close", q.add(obj("c", "1")));
    must(RULE, "update after close", q.update(obj("a", "2")));
    must(RULE, "delete after close", q.delete(obj("b", "2")));
    must(
        RULE,
        "replace after close",
        q.replace(vec![obj("d", "1")], "9"),
    );
    must(RULE, "resync after close", q.resync());
    let mut batches = Vec::new();
    loop {
        assert!(
            batches.len() < 100,
            "queue conformance [{RULE}]: pop never reports Closed"
        );
        let mut batch = Vec::new();
        let popped = pop_within(RULE, &q, &mut |d| {
            batch = record(d);
            Ok(())
        })
        .await;
        match popped {
            Ok(()) => batches.push(batch),
            Err(QueueError::Closed) => break,
            Err(err) => panic!("queue conformance [{RULE}]: pop failed: {err}"),
        }
    }
    expect_per_key(RULE, &batches, &[("a", &["Added@1"]), ("b", &["Added@1"])]);
    let again = q.pop(&mut |_| Ok(())).now_or_never();
    assert!(
        matches!(again, Some(Err(QueueError::Closed))),
        "queue conformance [{RULE}]: pop on a closed, drained queue returned {again:?}"
    );
}

/// Counts how often the wrapped future is polled.
struct CountPolls<F> {
    inner: Pin<Box<F>>,
    polls: Arc<AtomicUsize>,
}

impl<F: Future> Future for CountPolls<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.polls.fetch_add(1, Ordering::SeqCst);
        self.inner.as_mut().poll(cx)
    }
}

async fn pop_waits_without_spinning<Q: Queue<JsonObject> + 'static>(
    make: &impl Fn(KnownStore) -> Q,
) {
    const RULE: &str = "a waiting pop sleeps until there is something to pop";
    let q = Arc::new(make(None));
    let polls = Arc::new(AtomicUsize::new(0));
    let waiter = {
        let q = Arc::clone(&q);
        tokio::spawn(CountPolls {
            inner: Box::pin(async move {
                let mut got = Vec::new();
                let result = q
                    .pop(&mut |d| {
                        got = record(d);
                        Ok(())
                    })
                    .await;
                (result, got)
            }),
            polls: Arc::clone(&polls),
        })
    };
    for _ in 0..1000 {
        tokio::task::yield_now().await;
    }
    let n = polls.load(Ordering::SeqCst);
    assert!(
        n <= 2,
        "queue conformance [{RULE}]: a waiting pop was polled {n} times while nothing happened \
         (it spins)"
    );
    tokio::time::sleep(Duration::from_secs(3600)).await;
    let n = polls.load(Ordering::SeqCst);
    assert!(
        !waiter.is_finished(),
        "queue conformance [{RULE}]: pop returned on an empty queue"
    );
    assert!(
        n <= 2,
        "queue conformance [{RULE}]: a waiting pop was polled {n} times in an hour of virtual \
         time with nothing queued (it polls on a timer)"
    );
    let a1 = obj("a", "1");
    must(RULE, "add", q.add(Arc::clone(&a1)));
    let (result, got) = match timeout(PATIENCE, waiter).await {
        Ok(Ok(done)) => done,
        Ok(Err(err)) => panic!("queue conformance [{RULE}]: the waiting pop panicked: {err}"),
        Err(_) => panic!("queue conformance [{RULE}]: add did not wake the waiting pop"),
    };
    if let Err(err) = result {
        panic!("queue conformance [{RULE}]: the woken pop failed: {err}");
    }
    expect_per_key(RULE, std::slice::from_ref(&got), &[("a", &["Added@1"])]);
    expect_shared(RULE, &got[0], &a1);
    let n = polls.load(Ordering::SeqCst);
    assert!(
        n <= 4,
        "queue conformance [{RULE}]: one wake-up took {n} polls"
    );
}

async fn cancelled_pops_lose_nothing<Q: Queue<JsonObject> + 'static>(
    make: &impl Fn(KnownStore) -> Q,
) {
    const RULE: &str = "dropping a pop future loses nothing and blocks no other pop";
    let q = Arc::new(make(None));
    {
        let mut never = |_: &[Delta<JsonObject>]| -> Result<(), ProcessError> {
            panic!("queue conformance [{RULE}]: a cancelled pop processed something")
        };
        let mut cancelled = pin!(q.pop(&mut never));
        assert!(
            futures::poll!(cancelled.as_mut()).is_pending(),
            "queue conformance [{RULE}]: pop returned on an empty queue"
        );
    }
    // A parked pop that is aborted must not swallow the wake-up meant for the next one.
    let aborted = {
        let q = Arc::clone(&q);
        tokio::spawn(async move { q.pop(&mut |_| Ok(())).await })
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    aborted.abort();
    let _ = aborted.await;
    let next = {
        let q = Arc::clone(&q);
        tokio::spawn(async move {
            let mut got = Vec::new();
            let result = q
                .pop(&mut |d| {
                    got = record(d);
                    Ok(())
                })
                .await;
            (result, got)
        })
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    must(RULE, "add", q.add(obj("a", "1")));
    must(RULE, "add", q.add(obj("b", "1")));
    let (result, got) = match timeout(PATIENCE, next).await {
        Ok(Ok(done)) => done,
        Ok(Err(err)) => panic!("queue conformance [{RULE}]: a pop panicked: {err}"),
        Err(_) => panic!("queue conformance [{RULE}]: add did not wake the remaining pop"),
    };
    if let Err(err) = result {
        panic!("queue conformance [{RULE}]: pop failed: {err}");
    }
    let mut batches = vec![got];
    batches.extend(drain(RULE, q.as_ref()).await);
    expect_per_key(RULE, &batches, &[("a", &["Added@1"]), ("b", &["Added@1"])]);
}

async fn many_producers_one_consumer<Q: Queue<JsonObject> + 'static>(
    make: &impl Fn(KnownStore) -> Q,
) {
    const RULE: &str = "many producer threads, one consumer: nothing lost, per-key order kept";
    const PRODUCERS: usize = 4;
    const PER_PRODUCER: usize = 500;
    let q = Arc::new(make(None));
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let q = Arc::clone(&q);
            std::thread::spawn(move || {
                for i in 0..PER_PRODUCER {
                    let name = format!("p{p}-{i}");
                    let ok = q.add(obj(&name, "1")).is_ok()
                        && q.update(obj(&name, "2")).is_ok()
                        && q.update(obj("hot", &format!("{p}-{i}"))).is_ok();
                    if !ok {
                        return false;
                    }
                }
                true
            })
        })
        .collect();
    let total = PRODUCERS * PER_PRODUCER * 3;
    let mut batches = Vec::new();
    let mut received = 0;
    while received < total {
        let mut batch = Vec::new();
        // A real-time guard against a lost wake-up (the producers are real threads), not a
        // timing assertion.
        let popped = timeout(
            Duration::from_secs(120),
            q.pop(&mut |d| {
                batch = record(d);
                Ok(())
            }),
        )
        .await;
        match popped {
            Ok(Ok(())) => {}
            Ok(Err(err)) => panic!("queue conformance [{RULE}]: pop failed: {err}"),
            Err(_) => panic!(
                "queue conformance [{RULE}]: the consumer was not woken ({received} of {total} \
                 deltas received)"
            ),
        }
        received += batch.len();
        batches.push(batch);
    }
    for producer in producers {
        let ok = producer.join().unwrap_or(false);
        assert!(ok, "queue conformance [{RULE}]: a producer's write failed");
    }
    assert!(
        q.is_empty(),
        "queue conformance [{RULE}]: more deltas than were written"
    );
    let map = per_key(&batches);
    assert_eq!(
        map.len(),
        PRODUCERS * PER_PRODUCER + 1,
        "queue conformance [{RULE}]: keys"
    );
    for p in 0..PRODUCERS {
        for i in 0..PER_PRODUCER {
            let got = map.get(&key(&format!("p{p}-{i}")));
            assert_eq!(
                got.map(Vec::as_slice),
                Some(&["Added@1".to_owned(), "Updated@2".to_owned()][..]),
                "queue conformance [{RULE}]: deltas of p{p}-{i}"
            );
        }
    }
    let hot = map.get(&key("hot")).map(Vec::as_slice).unwrap_or_default();
    assert_eq!(
        hot.len(),
        PRODUCERS * PER_PRODUCER,
        "queue conformance [{RULE}]: hot key"
    );
    let mut next = [0usize; PRODUCERS];
    for label in hot {
        let (p, i) = label
            .strip_prefix("Updated@")
            .and_then(|rv| rv.split_once('-'))
            .and_then(|(p, i)| Some((p.parse::<usize>().ok()?, i.parse::<usize>().ok()?)))
            .unwrap_or_else(|| panic!("queue conformance [{RULE}]: unexpected hot delta {label}"));
        assert!(
            p < PRODUCERS && next[p] == i,
            "queue conformance [{RULE}]: the hot key's updates from producer {p} came out of \
             order (got {i}, expected {})",
            next.get(p).copied().unwrap_or_default()
        );
        next[p] += 1;
    }
}
