//! What a reconcile is told besides its object: [`Context`] (your data, the key, whether the
//! object was deleted, how often it failed) and [`ObjectState`].

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use informer::ObjectKey;

/// Where the object a reconcile gets comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ObjectState {
    /// The primary informer's cache holds it: the object as it is now.
    Live,
    /// It was deleted; the object is its last known state, as the delete event carried it.
    /// `tombstone` is true when the deletion was noticed by a relist rather than a watch
    /// event (the state may then be older than the object's final one).
    Deleted {
        /// Whether the deletion was noticed by a relist (a tombstone).
        tombstone: bool,
    },
    /// Neither the cache nor the record of deletions knows the key (a `watches` mapper named
    /// an object that does not exist, or its last known state was dropped at the bound of
    /// [`ControllerConfig::max_deleted_objects`](crate::ControllerConfig::max_deleted_objects)):
    /// the object is the stand-in built by
    /// [`Controller::reconcile_missing_as`](crate::Controller::reconcile_missing_as). Without
    /// one, such keys are not reconciled.
    Missing,
}

/// What a reconcile is told besides its object: your data (the `data` given to
/// [`run`](crate::Controller::run), reached through `Deref` or [`data`](Self::data)), the
/// key, whether the object is gone ([`deleted`](Self::deleted), [`state`](Self::state)), and
/// how many times in a row the key has failed ([`retries`](Self::retries)). Cheap to clone.
///
/// Through `Deref`, `ctx.client` reads the field `client` of your data; the methods below
/// come first, so a field of your data named like one of them needs `ctx.data().name`.
pub struct Context<C> {
    pub(crate) data: Arc<C>,
    pub(crate) key: ObjectKey,
    pub(crate) state: ObjectState,
    pub(crate) retries: u32,
    pub(crate) controller: Arc<str>,
}

impl<C> Context<C> {
    /// Your data, as given to [`run`](crate::Controller::run).
    pub fn data(&self) -> &Arc<C> {
        &self.data
    }

    /// The key being reconciled (`namespace/name`, or `name`).
    pub fn key(&self) -> &ObjectKey {
        &self.key
    }

    /// Where the object comes from: live, deleted (last known state) or missing (a stand-in).
    pub fn state(&self) -> ObjectState {
        self.state
    }

    /// Whether the object no longer exists ([`ObjectState::Deleted`] or
    /// [`ObjectState::Missing`]): clean up what it owned.
    pub fn deleted(&self) -> bool {
        self.state != ObjectState::Live
    }

    /// How many times in a row the key failed before this attempt (the rate limiter's count;
    /// zero after a success).
    pub fn retries(&self) -> u32 {
        self.retries
    }

    /// The controller's name ([`ControllerConfig::name`](crate::ControllerConfig::name)).
    pub fn controller(&self) -> &str {
        &self.controller
    }
}

impl<C> Deref for Context<C> {
    type Target = C;

    fn deref(&self) -> &C {
        &self.data
    }
}

impl<C> Clone for Context<C> {
    fn clone(&self) -> Self {
        Self {
            data: Arc::clone(&self.data),
            key: self.key.clone(),
            state: self.state,
            retries: self.retries,
            controller: Arc::clone(&self.controller),
        }
    }
}

impl<C> fmt::Debug for Context<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("controller", &self.controller)
            .field("key", &self.key)
            .field("state", &self.state)
            .field("retries", &self.retries)
            .finish_non_exhaustive()
    }
}
