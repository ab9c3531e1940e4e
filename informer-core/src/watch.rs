//! What a `ListerWatcher` returns: list pages and watch events.

use std::fmt;

use crate::{Object, Status};

/// The annotation that marks the bookmark ending a streaming initial list.
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

/// One event of a watch stream.
pub enum WatchEvent<K> {
    /// `ADDED`: the object was created (or, during a streaming initial list, is part of it).
    Added(K),
    /// `MODIFIED`.
    Modified(K),
    /// `DELETED`: the object's last state, at the deletion's resourceVersion.
    Deleted(K),
    /// `BOOKMARK`: progress of the resourceVersion with no object change.
    Bookmark(Bookmark),
    /// `ERROR`: the server ends the watch with this status (for example 410 Expired).
    Error(Status),
}

impl<K> WatchEvent<K> {
    /// The wire name of the event type (`ADDED`, `MODIFIED`, ...).
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Added(_) => "ADDED",
            Self::Modified(_) => "MODIFIED",
            Self::Deleted(_) => "DELETED",
            Self::Bookmark(_) => "BOOKMARK",
            Self::Error(_) => "ERROR",
        }
    }

    /// Applies `f` to the object, keeping the event type.
    pub fn map<U>(self, f: impl FnOnce(K) -> U) -> WatchEvent<U> {
        match self {
            Self::Added(k) => WatchEvent::Added(f(k)),
            Self::Modified(k) => WatchEvent::Modified(f(k)),
            Self::Deleted(k) => WatchEvent::Deleted(f(k)),
            Self::Bookmark(b) => WatchEvent::Bookmark(b),
            Self::Error(s) => WatchEvent::Error(s),
        }
    }
}

impl<K: Object> WatchEvent<K> {
    /// The resourceVersion this event moves the watcher to (`None` for `ERROR` events and for
    /// objects that lack one).
    pub fn resource_version(&self) -> Option<&str> {
        match self {
            Self::Added(k) | Self::Modified(k) | Self::Deleted(k) => k.object_resource_version(),
            Self::Bookmark(b) => Some(&b.resource_version),
            Self::Error(_) => None,
        }
    }
}

impl<K: Object> fmt::Debug for WatchEvent<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Added(k) | Self::Modified(k) | Self::Deleted(k) => {
                write!(f, "{}({})", self.type_name(), crate::ObjectSummary(k))
            }
            Self::Bookmark(b) => write!(f, "BOOKMARK({b:?})"),
            Self::Error(s) => write!(f, "ERROR({s})"),
        }
    }
}

/// A `BOOKMARK` event's content: only a resourceVersion, plus whether it ends a streaming list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bookmark {
    /// The resourceVersion the watch has reached.
    pub resource_version: String,
    /// True when the bookmark carries `k8s.io/initial-events-end: "true"`: every object of the
    /// streaming initial list has been sent.
    pub initial_events_end: bool,
}

/// One page of a list response.
pub struct ListPage<K> {
    /// The objects on this page.
    pub items: Vec<K>,
    /// The list's resourceVersion (the same on every page of one paginated list).
    pub resource_version: String,
    /// The token for the next page, `None` on the last page.
    pub continue_token: Option<String>,
    /// How many items remain after this page, when the server says.
    pub remaining_item_count: Option<i64>,
}

impl<K> fmt::Debug for ListPage<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListPage")
            .field("items", &self.items.len())
            .field("resource_version", &self.resource_version)
            .field("continue_token", &self.continue_token)
            .field("remaining_item_count", &self.remaining_item_count)
            .finish()
    }
}
