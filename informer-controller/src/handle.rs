//! [`ControllerHandle`]: a cheap, cloneable view of a controller, before, during and after
//! its run: counts, keys in flight, and manual triggers.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use informer::ObjectKey;
use tokio::sync::watch;

use crate::state::Common;
use crate::stats::ControllerStats;

/// A view of one controller (from [`Controller::handle`](crate::Controller::handle)): its
/// counts, its queue and its keys in flight, and triggers to reconcile keys without an event
/// (kube-runtime's `reconcile_on` and `reconcile_all_on`). Cheap to clone; it never keeps the
/// controller running.
#[derive(Clone)]
pub struct ControllerHandle {
    pub(crate) common: Arc<Common>,
}

impl ControllerHandle {
    /// The controller's name.
    pub fn name(&self) -> &str {
        &self.common.name
    }

    /// The counts so far.
    pub fn stats(&self) -> ControllerStats {
        *self.common.stats.borrow()
    }

    /// A receiver of the counts, which change when a reconcile starts and when it ends: wait
    /// on it (`wait_for(|s| s.successes >= 3)`) instead of polling.
    pub fn subscribe(&self) -> watch::Receiver<ControllerStats> {
        self.common.stats.subscribe()
    }

    /// Queues `key` for a reconcile, as an event about it would (deduplicated with what is
    /// queued; ignored once the controller has stopped).
    pub fn enqueue(&self, key: ObjectKey) {
        self.common.queue.add(key);
    }

    /// Queues `key` for a reconcile after `delay` (on tokio's clock).
    pub fn enqueue_after(&self, key: ObjectKey, delay: Duration) {
        self.common.queue.add_after(key, delay);
    }

    /// Queues every object of the primary cache (for example after a change of something the
    /// controller reads outside its informers).
    pub fn enqueue_all(&self) {
        for key in (self.common.all_keys)() {
            self.common.queue.add(key);
        }
    }

    /// How many times in a row `key` has failed (zero after a success or once given up).
    pub fn retries(&self, key: &ObjectKey) -> u32 {
        self.common.queue.num_requeues(key)
    }

    /// How many keys are queued, ready for a worker (not counting keys being reconciled or
    /// waiting for a delay).
    pub fn queued(&self) -> usize {
        self.common.queue.len()
    }

    /// The keys being reconciled now, by worker.
    pub fn in_flight(&self) -> Vec<ObjectKey> {
        self.common.in_flight.lock().values().cloned().collect()
    }
}

impl fmt::Debug for ControllerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.common, f)
    }
}
