//! Event handlers: how consumers hear about changes to the cache.

use std::fmt;
use std::sync::Arc;

use crate::{Object, ObjectOrTombstone};

/// Receives the changes an informer applies to its cache.
///
/// Each registration runs on its own task with its own buffer, so methods take `&mut self` and
/// a slow handler delays only itself. Every method has an empty default: implement the ones you
/// need. Closures work too, through `informer`'s handler builders.
///
/// # Contract
///
/// The informer guarantees to a handler that:
/// - calls for one registration are sequential, in the order the cache changed;
/// - for each key the calls follow the object's life: `on_add`, any number of `on_update`,
///   then `on_delete`; when an object was deleted and re-created under the same name while the
///   watch was down (its UID changed), it sees `on_delete(old)` then `on_add(new)` (unless the
///   informer is configured for client-go compatible updates);
/// - a handler added to a running informer first gets `on_add(obj, true)` for every cached
///   object, then live changes, with no gap and no duplicate;
/// - `on_update` with equal resourceVersions is a resync, sent only when this handler's resync
///   period is due.
///
/// Implementers should return quickly (hand heavy work to a work queue); a panic is caught,
/// reported, and the handler keeps receiving events.
pub trait ResourceEventHandler<K: Object>: Send + 'static {
    /// An object appeared. `is_in_initial_list` is true for objects of the first full list (and
    /// for the cache replay a late handler receives).
    fn on_add(&mut self, obj: &Arc<K>, is_in_initial_list: bool) {
        let _ = (obj, is_in_initial_list);
    }
    /// An object changed (or, with equal resourceVersions, is being resynced).
    fn on_update(&mut self, old: &Arc<K>, new: &Arc<K>) {
        let _ = (old, new);
    }
    /// An object was deleted: its final state, or a tombstone when the deletion was noticed only
    /// by a relist.
    fn on_delete(&mut self, obj: &ObjectOrTombstone<K>) {
        let _ = obj;
    }
}

/// One notification to a handler; the item type of informer event streams.
pub enum Notification<K> {
    /// See [`ResourceEventHandler::on_add`].
    Add {
        /// The new object.
        object: Arc<K>,
        /// Whether it is part of the initial list.
        is_in_initial_list: bool,
    },
    /// See [`ResourceEventHandler::on_update`].
    Update {
        /// The previous state.
        old: Arc<K>,
        /// The new state.
        new: Arc<K>,
    },
    /// See [`ResourceEventHandler::on_delete`].
    Delete(ObjectOrTombstone<K>),
}

impl<K: Object> Notification<K> {
    /// Calls the matching method of `handler`.
    pub fn dispatch<H: ResourceEventHandler<K> + ?Sized>(&self, handler: &mut H) {
        match self {
            Self::Add {
                object,
                is_in_initial_list,
            } => handler.on_add(object, *is_in_initial_list),
            Self::Update { old, new } => handler.on_update(old, new),
            Self::Delete(obj) => handler.on_delete(obj),
        }
    }

    /// The object this notification is about (the new state for updates, the final or last
    /// known state for deletions).
    pub fn object(&self) -> &Arc<K> {
        match self {
            Self::Add { object, .. } => object,
            Self::Update { new, .. } => new,
            Self::Delete(obj) => obj.object(),
        }
    }
}

impl<K> Clone for Notification<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Add {
                object,
                is_in_initial_list,
            } => Self::Add {
                object: Arc::clone(object),
                is_in_initial_list: *is_in_initial_list,
            },
            Self::Update { old, new } => Self::Update {
                old: Arc::clone(old),
                new: Arc::clone(new),
            },
            Self::Delete(obj) => Self::Delete(obj.clone()),
        }
    }
}

impl<K: Object> fmt::Debug for Notification<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Add {
                object,
                is_in_initial_list,
            } => write!(
                f,
                "Add({}, initial: {is_in_initial_list})",
                crate::ObjectSummary(object.as_ref())
            ),
            Self::Update { old, new } => write!(
                f,
                "Update({} -> {})",
                crate::ObjectSummary(old.as_ref()),
                crate::ObjectSummary(new.as_ref())
            ),
            Self::Delete(obj) => write!(f, "Delete({obj:?})"),
        }
    }
}

/// What handlers hear when the cache holds an object and the queue brings one with the same
/// key but another UID: the object was deleted and re-created under the same name while the
/// watch was down, and a relist found the newcomer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum UidChange {
    /// `on_delete` with a tombstone of the old object (its final state is unknown), then
    /// `on_add` of the new one. The default: handlers that track objects by UID (owner
    /// references, finalizers, external resources) see two different objects.
    #[default]
    DeleteAndAdd,
    /// `on_update(old, new)`, as client-go does.
    Update,
}
