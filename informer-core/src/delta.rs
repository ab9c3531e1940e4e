//! Deltas: what a queue hands to the informer, and tombstones for deletions seen only by relist.

use std::fmt;
use std::sync::Arc;

use crate::{KeyError, Object, ObjectKey, RawObject, key_of};

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeltaType {
    /// Created (a watch `ADDED`).
    Added,
    /// Changed (a watch `MODIFIED`).
    Updated,
    /// Removed (a watch `DELETED`, or missing from a relist: then the object is a tombstone).
    Deleted,
    /// Present in a full list (a relist or the first list).
    Replaced,
    /// Re-delivered by a periodic resync; the object did not change.
    Sync,
}

/// A deletion whose final state is unknown: the object vanished while the watch was down and was
/// noticed missing from a relist. Carries the key and the last state the client knew.
///
/// Upstream calls this `DeletedFinalStateUnknown`.
pub struct Tombstone<K> {
    /// The key of the deleted object.
    pub key: ObjectKey,
    /// The last state of the object known to the client (from its store or its queue).
    pub last_known: Arc<K>,
}

impl<K> Clone for Tombstone<K> {
    fn clone(&self) -> Self {
        Self {
            key: self.key.clone(),
            last_known: Arc::clone(&self.last_known),
        }
    }
}

impl<K> fmt::Debug for Tombstone<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tombstone")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

/// The payload of a delta, and of a delete notification: the object, or a tombstone.
pub enum ObjectOrTombstone<K> {
    /// The object itself (for deletions: its final state as the server sent it).
    Object(Arc<K>),
    /// A deletion noticed only by a relist.
    Tombstone(Tombstone<K>),
}

impl<K> Clone for ObjectOrTombstone<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Object(o) => Self::Object(Arc::clone(o)),
            Self::Tombstone(t) => Self::Tombstone(t.clone()),
        }
    }
}

impl<K: Object> fmt::Debug for ObjectOrTombstone<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Object(o) => write!(f, "Object({})", ObjectSummary(o.as_ref())),
            Self::Tombstone(t) => write!(
                f,
                "Tombstone({}, last_known: {})",
                t.key,
                ObjectSummary(t.last_known.as_ref())
            ),
        }
    }
}

/// Formats an object as `namespace/name@resourceVersion` for debug output.
pub struct ObjectSummary<'a, K: ?Sized>(pub &'a K);

impl<K: Object + ?Sized> fmt::Display for ObjectSummary<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(ns) = self.0.object_namespace() {
            write!(f, "{ns}/")?;
        }
        write!(
            f,
            "{}@{}",
            self.0.object_name().unwrap_or("<no name>"),
            self.0
                .object_resource_version()
                .unwrap_or("<no resourceVersion>")
        )
    }
}

impl<K: Object> ObjectOrTombstone<K> {
    /// The object, or the tombstone's last known state.
    pub fn object(&self) -> &Arc<K> {
        match self {
            Self::Object(o) => o,
            Self::Tombstone(t) => &t.last_known,
        }
    }

    /// The key: the tombstone's, or computed with [`key_of`].
    pub fn key(&self) -> Result<ObjectKey, KeyError> {
        match self {
            Self::Object(o) => key_of(o.as_ref()),
            Self::Tombstone(t) => Ok(t.key.clone()),
        }
    }

    /// Whether this is a tombstone.
    pub fn is_tombstone(&self) -> bool {
        matches!(self, Self::Tombstone(_))
    }
}

/// One change to one object.
pub struct Delta<K> {
    /// What happened.
    pub kind: DeltaType,
    /// The object (or, for `Deleted` only, possibly a tombstone).
    pub object: ObjectOrTombstone<K>,
    /// The object's JSON text as received, kept for a store that keeps objects encoded
    /// (see [`RawObject`]); `None` otherwise.
    pub raw: Option<RawObject>,
}

impl<K> Delta<K> {
    /// A delta carrying an object.
    pub fn new(kind: DeltaType, object: Arc<K>) -> Self {
        Self {
            kind,
            object: ObjectOrTombstone::Object(object),
            raw: None,
        }
    }

    /// A delta carrying an object and, when there is one, its JSON text as received.
    pub fn with_raw(kind: DeltaType, object: Arc<K>, raw: Option<RawObject>) -> Self {
        Self {
            kind,
            object: ObjectOrTombstone::Object(object),
            raw,
        }
    }

    /// A `Deleted` delta carrying a tombstone.
    pub fn tombstone(key: ObjectKey, last_known: Arc<K>) -> Self {
        Self {
            kind: DeltaType::Deleted,
            object: ObjectOrTombstone::Tombstone(Tombstone { key, last_known }),
            raw: None,
        }
    }
}

impl<K> Clone for Delta<K> {
    fn clone(&self) -> Self {
        Self {
            kind: self.kind,
            object: self.object.clone(),
            raw: self.raw.clone(),
        }
    }
}

impl<K: Object> fmt::Debug for Delta<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Delta");
        d.field("kind", &self.kind).field("object", &self.object);
        if let Some(raw) = &self.raw {
            d.field("raw", raw);
        }
        d.finish()
    }
}
