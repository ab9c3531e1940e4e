//! What the controller's handlers, workers and handles share: [`Common`] (the queue, the
//! counts, the keys in flight; not generic, so that handles are not) and [`Shared`] (adds the
//! primary cache and the record of deleted objects).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use informer::{Lister, Object, ObjectKey, key_of};
use informer_workqueue::RateLimitingQueue;
use parking_lot::Mutex;
use tokio::sync::watch;

use crate::deleted::DeletedObjects;
use crate::metrics::Recorder;
use crate::stats::ControllerStats;

/// Builds the stand-in object of a key that has none
/// ([`Controller::reconcile_missing_as`](crate::Controller::reconcile_missing_as)).
pub(crate) type Stub<K> = Arc<dyn Fn(&ObjectKey) -> K + Send + Sync>;

/// The part of the state that does not depend on the object type.
pub(crate) struct Common {
    pub(crate) name: Arc<str>,
    pub(crate) queue: RateLimitingQueue<ObjectKey>,
    pub(crate) stats: watch::Sender<ControllerStats>,
    /// Worker number → the key it is reconciling.
    pub(crate) in_flight: Mutex<BTreeMap<usize, ObjectKey>>,
    pub(crate) recorder: Recorder,
    /// Every key of the primary cache (for `enqueue_all`).
    pub(crate) all_keys: Box<dyn Fn() -> Vec<ObjectKey> + Send + Sync>,
}

impl Common {
    /// Updates the counts (and wakes whoever waits on them).
    pub(crate) fn count(&self, f: impl FnOnce(&mut ControllerStats)) {
        self.stats.send_modify(f);
    }
}

impl fmt::Debug for Common {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field("queue", &self.queue)
            .field("stats", &*self.stats.borrow())
            .field("in_flight", &*self.in_flight.lock())
            .finish()
    }
}

/// Everything the handlers and workers of one controller share.
pub(crate) struct Shared<K> {
    pub(crate) common: Arc<Common>,
    pub(crate) primary: Lister<K>,
    pub(crate) deleted: Mutex<DeletedObjects<K>>,
    pub(crate) stub: Option<Stub<K>>,
}

impl<K: Object> Shared<K> {
    /// Queues the key of a primary object (one without a key is logged and dropped).
    pub(crate) fn enqueue_object(&self, object: &K) {
        match key_of(object) {
            Ok(key) => self.common.queue.add(key),
            Err(error) => {
                tracing::warn!(controller = %self.common.name, %error, "an object without a key; not queued");
            }
        }
    }

    /// Records a deleted primary object and queues its key.
    pub(crate) fn enqueue_deleted(&self, object: &Arc<K>, tombstone: bool) {
        let key = match key_of(object.as_ref()) {
            Ok(key) => key,
            Err(error) => {
                tracing::warn!(controller = %self.common.name, %error, "a deleted object without a key; not queued");
                return;
            }
        };
        let evicted = self
            .deleted
            .lock()
            .insert(key.clone(), Arc::clone(object), tombstone);
        if let Some(evicted) = evicted {
            tracing::warn!(
                controller = %self.common.name,
                %evicted,
                "too many deleted objects waiting for their reconcile: the oldest one's last known state is dropped"
            );
            self.common.count(|s| s.deleted_evicted += 1);
        }
        self.common.queue.add(key);
    }

    /// The key of the primary object owning `child` through `owner` references: a cached
    /// primary named as the reference names it, in the child's namespace or cluster-scoped,
    /// whose UID is the reference's (when both have one).
    pub(crate) fn owner_keys<O: Object>(&self, child: &O) -> Vec<ObjectKey> {
        let namespace = child.object_namespace();
        let mut keys = Vec::new();
        for owner in child.object_owners() {
            for scope in [namespace, None] {
                let Ok(key) = ObjectKey::new(scope, owner.name) else {
                    continue;
                };
                let Some(primary) = self.primary.get_by_key(key.as_str()) else {
                    continue;
                };
                let same = match (primary.object_uid(), owner.uid) {
                    (Some(uid), owner_uid) if !owner_uid.is_empty() => uid == owner_uid,
                    _ => true,
                };
                if same {
                    keys.push(key);
                    break;
                }
            }
        }
        keys
    }
}
