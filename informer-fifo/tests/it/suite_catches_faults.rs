//! The queue suite and model checks are only worth something if they fail on broken queues:
//! each wrapper here breaks one rule of a correct `DeltaFifo`, and the suite must notice.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use informer_core::{ProcessFn, Queue, QueueError};
use informer_fifo::DeltaFifo;
use informer_testing::JsonObject;
use informer_testing::conformance::queue::{self, KnownStore};

use crate::support::delta_fifo;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fault {
    /// `update` is silently dropped.
    LosesUpdates,
    /// `has_synced` answers true from the start.
    AlwaysSynced,
    /// `close` only flips the flag: waiting pops are not woken.
    CloseWakesNobody,
    /// `pop` spins (yielding) until something is queued.
    Spins,
    /// `len` is off by one once something is queued.
    MiscountsLen,
}

struct Faulty {
    inner: DeltaFifo<JsonObject>,
    fault: Fault,
    closed: AtomicBool,
}

#[async_trait]
impl Queue<JsonObject> for Faulty {
    fn add(&self, obj: Arc<JsonObject>) -> Result<(), QueueError> {
        self.inner.add(obj)
    }
    fn update(&self, obj: Arc<JsonObject>) -> Result<(), QueueError> {
        if self.fault == Fault::LosesUpdates {
            return Ok(());
        }
        self.inner.update(obj)
    }
    fn delete(&self, obj: Arc<JsonObject>) -> Result<(), QueueError> {
        self.inner.delete(obj)
    }
    fn replace(&self, objects: Vec<Arc<JsonObject>>, rv: &str) -> Result<(), QueueError> {
        self.inner.replace(objects, rv)
    }
    fn resync(&self) -> Result<(), QueueError> {
        self.inner.resync()
    }
    async fn pop(&self, process: &mut ProcessFn<'_, JsonObject>) -> Result<(), QueueError> {
        if self.fault == Fault::Spins {
            while self.inner.is_empty() && !self.is_closed() {
                tokio::task::yield_now().await;
            }
        }
        self.inner.pop(process).await
    }
    fn has_synced(&self) -> bool {
        self.fault == Fault::AlwaysSynced || self.inner.has_synced()
    }
    fn len(&self) -> usize {
        let len = self.inner.len();
        if self.fault == Fault::MiscountsLen && len > 0 {
            len + 1
        } else {
            len
        }
    }
    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        if self.fault != Fault::CloseWakesNobody {
            self.inner.close();
        }
    }
    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}

fn faulty(fault: Fault) -> impl Fn(KnownStore) -> Faulty {
    move |known_objects| Faulty {
        inner: delta_fifo(known_objects),
        fault,
        closed: AtomicBool::new(false),
    }
}

fn panic_message(result: std::thread::Result<()>) -> String {
    let payload = result.expect_err("the suite accepted a broken queue");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_default()
}

#[test]
fn the_suite_rejects_each_broken_queue_naming_the_rule() {
    for (fault, rule) in [
        (
            Fault::LosesUpdates,
            "deltas of a key are popped in the order they were queued",
        ),
        (
            Fault::AlwaysSynced,
            "has_synced once everything the first replace queued",
        ),
        (Fault::CloseWakesNobody, "close wakes every waiting pop"),
        (
            Fault::Spins,
            "a waiting pop sleeps until there is something to pop",
        ),
    ] {
        let message = panic_message(catch_unwind(AssertUnwindSafe(|| queue::run(faulty(fault)))));
        assert!(
            message.contains(rule),
            "{fault:?}: unexpected failure {message:?}"
        );
    }
}

#[test]
fn the_model_check_rejects_a_queue_that_miscounts() {
    let message = panic_message(catch_unwind(AssertUnwindSafe(|| {
        queue::check_delta_fifo_model(faulty(Fault::MiscountsLen));
    })));
    assert!(
        message.contains("queue model check (DeltaFifo)"),
        "{message:?}"
    );
    assert!(message.contains("len"), "{message:?}");
}
