//! What makes keys: one handler per informer the controller reads, registered when it starts
//! running and removed when it stops. The primary informer queues its objects' keys (and
//! records deleted objects), `owns` queues the owners' keys, `watches` what the mapper says.

use std::collections::BTreeSet;
use std::sync::Arc;

use informer::{
    HandlerOptions, InformerStats, Object, ObjectKey, ObjectOrTombstone, Registration,
    SharedIndexInformer, SyncSource, handler,
};

use crate::error::ControllerError;
use crate::state::Shared;

/// An informer the controller reads, type-erased.
pub(crate) trait Watched: SyncSource {
    /// Its statistics.
    fn informer_stats(&self) -> InformerStats;
    /// Removes one of its registrations.
    fn remove(&self, registration: &Registration) -> bool;
}

impl<O: Object> Watched for SharedIndexInformer<O> {
    fn informer_stats(&self) -> InformerStats {
        self.stats()
    }

    fn remove(&self, registration: &Registration) -> bool {
        self.remove_handler(registration)
    }
}

/// A handler the controller registered, and its informer.
pub(crate) struct Registered {
    pub(crate) registration: Registration,
    pub(crate) informer: Arc<dyn Watched>,
}

/// Registers the controller's handler on one informer.
pub(crate) type Source<K> =
    Box<dyn FnOnce(&Arc<Shared<K>>) -> Result<Registered, ControllerError> + Send>;

/// The mapper of `watches`: keys of primary objects to reconcile when an object changes.
pub(crate) type Mapper<O> = Arc<dyn Fn(&O) -> Vec<ObjectKey> + Send + Sync>;

/// The filter of `reconcile_updates_if`: whether an update of a primary object (old, new) is
/// reconciled.
pub(crate) type UpdateFilter<K> = Arc<dyn Fn(&K, &K) -> bool + Send + Sync>;

/// Registers `handler` on `informer` under the name `<controller>/<role>`.
fn register<K: Object, O: Object>(
    shared: &Arc<Shared<K>>,
    informer: SharedIndexInformer<O>,
    role: &str,
    handler: impl informer::ResourceEventHandler<O>,
) -> Result<Registered, ControllerError> {
    let name = if role.is_empty() {
        shared.common.name.to_string()
    } else {
        format!("{}/{role}", shared.common.name)
    };
    let registration = informer
        .add_handler_with(handler, HandlerOptions::named(name))
        .map_err(|source| ControllerError::Handler {
            controller: shared.common.name.to_string(),
            informer: informer.name().to_owned(),
            source,
        })?;
    Ok(Registered {
        registration,
        informer: Arc::new(informer),
    })
}

/// The primary informer: adds and updates queue the object's key (an update that changed the
/// resourceVersion only if `filter` passes it; a resync always); a delete records the last
/// known object (a tombstone's too) and queues the key.
pub(crate) fn primary<K: Object>(
    informer: SharedIndexInformer<K>,
    filter: Option<UpdateFilter<K>>,
) -> Source<K> {
    Box::new(move |shared: &Arc<Shared<K>>| {
        let (on_add, on_update, on_delete) = (shared.clone(), shared.clone(), shared.clone());
        let handler = handler()
            .on_add(move |obj: &Arc<K>, _| on_add.enqueue_object(obj.as_ref()))
            .on_update(move |old: &Arc<K>, new: &Arc<K>| {
                // A resync hands the same version twice: the resync period asked for a
                // reconcile, whatever the filter says of the (unchanged) object.
                let resync = old.object_resource_version() == new.object_resource_version();
                if resync || filter.as_ref().is_none_or(|passes| passes(old, new)) {
                    on_update.enqueue_object(new.as_ref());
                } else {
                    on_update.common.stats.send_modify(|s| s.filtered += 1);
                }
            })
            .on_delete(move |gone: &ObjectOrTombstone<K>| {
                on_delete.enqueue_deleted(gone.object(), gone.is_tombstone());
            });
        register(shared, informer, "", handler)
    })
}

/// An informer of objects the primary objects own: every event queues the owners' keys
/// (of the old and the new state of an update: an owner that lost the object hears too).
pub(crate) fn owned<K: Object, O: Object>(informer: SharedIndexInformer<O>) -> Source<K> {
    Box::new(move |shared: &Arc<Shared<K>>| {
        let on_event = shared.clone();
        let enqueue = move |objects: &[&O]| {
            let keys: BTreeSet<ObjectKey> = objects
                .iter()
                .flat_map(|o| on_event.owner_keys(*o))
                .collect();
            for key in keys {
                on_event.common.queue.add(key);
            }
        };
        register(shared, informer, "owns", mapped_handler(enqueue))
    })
}

/// An informer of related objects: every event queues what `mapper` answers (for the old and
/// the new state of an update).
pub(crate) fn watched<K: Object, O: Object>(
    informer: SharedIndexInformer<O>,
    mapper: Mapper<O>,
) -> Source<K> {
    Box::new(move |shared: &Arc<Shared<K>>| {
        let on_event = shared.clone();
        let enqueue = move |objects: &[&O]| {
            let keys: BTreeSet<ObjectKey> = objects.iter().flat_map(|o| mapper(o)).collect();
            for key in keys {
                on_event.common.queue.add(key);
            }
        };
        register(shared, informer, "watches", mapped_handler(enqueue))
    })
}

/// A handler calling `enqueue` with the object of every event (both states of an update).
fn mapped_handler<O: Object>(
    enqueue: impl Fn(&[&O]) + Send + Sync + 'static,
) -> informer::ClosureHandler<O> {
    let enqueue = Arc::new(enqueue);
    let (on_add, on_update, on_delete) = (enqueue.clone(), enqueue.clone(), enqueue);
    handler()
        .on_add(move |obj: &Arc<O>, _| on_add(&[obj.as_ref()]))
        .on_update(move |old: &Arc<O>, new: &Arc<O>| on_update(&[old.as_ref(), new.as_ref()]))
        .on_delete(move |gone: &ObjectOrTombstone<O>| on_delete(&[gone.object().as_ref()]))
}
