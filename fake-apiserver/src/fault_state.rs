//! What faults are scripted: failures of the next requests, delays, announcements (per
//! resource and per request kind), the data behind [`Faults`](crate::Faults). A leaf.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use informer_core::Status;

use super::ResourceDef;

/// Which resources a fault applies to.
///
/// `&str` converts into a scope naming one resource the way [`ResourceDef::is_named`] accepts
/// (`"pods"`, `"po"`, `"deployments.apps"`); `"*"` and [`Scope::All`] mean every resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every resource.
    All,
    /// One resource, by name.
    Resource(String),
}

impl Scope {
    /// Whether the scope covers `def`.
    pub fn covers(&self, def: &ResourceDef) -> bool {
        match self {
            Self::All => true,
            Self::Resource(name) => def.is_named(name),
        }
    }
}

impl From<&str> for Scope {
    fn from(name: &str) -> Self {
        if name == "*" {
            Self::All
        } else {
            Self::Resource(name.to_owned())
        }
    }
}

impl From<String> for Scope {
    fn from(name: String) -> Self {
        Self::from(name.as_str())
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::All => f.write_str("*"),
            Self::Resource(r) => f.write_str(r),
        }
    }
}

/// A scripted fault that has not been used up yet. See [`Faults::pending`](crate::Faults::pending).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PendingFault {
    /// The next `remaining` lists in `scope` will fail with `status`.
    FailLists {
        /// Where.
        scope: Scope,
        /// How many failures are left.
        remaining: usize,
        /// The answer.
        status: Status,
    },
    /// The next `remaining` watch starts in `scope` will fail with `status`.
    FailWatches {
        /// Where.
        scope: Scope,
        /// How many failures are left.
        remaining: usize,
        /// The answer.
        status: Status,
    },
    /// The next `remaining` continue requests (lists with a continue token) in `scope` will
    /// get 410 Expired.
    ExpireContinues {
        /// Where.
        scope: Scope,
        /// How many are left.
        remaining: usize,
    },
    /// The next `remaining` writes (create, update, patch, apply, delete) in `scope` will
    /// fail with `status`.
    FailWrites {
        /// Where.
        scope: Scope,
        /// How many failures are left.
        remaining: usize,
        /// The answer.
        status: Status,
    },
    /// The next watch started in `scope` will be closed after `events` events.
    DropWatchAfter {
        /// Where.
        scope: Scope,
        /// Events delivered before the close.
        events: usize,
    },
}

impl fmt::Display for PendingFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::FailLists {
                scope,
                remaining,
                status,
            } => write!(
                f,
                "fail the next {remaining} list(s) of {scope} with {status}"
            ),
            Self::FailWatches {
                scope,
                remaining,
                status,
            } => write!(
                f,
                "fail the next {remaining} watch start(s) of {scope} with {status}"
            ),
            Self::FailWrites {
                scope,
                remaining,
                status,
            } => write!(
                f,
                "fail the next {remaining} write(s) of {scope} with {status}"
            ),
            Self::ExpireContinues { scope, remaining } => write!(
                f,
                "expire the continue token of the next {remaining} list page(s) of {scope}"
            ),
            Self::DropWatchAfter { scope, events } => {
                write!(f, "drop the next watch of {scope} after {events} event(s)")
            }
        }
    }
}

/// How a watch announces an object it has not shown before, outside its initial events. See
/// [`Faults::announce_unseen`](crate::Faults::announce_unseen).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum UnseenAnnouncement {
    /// `ADDED`, as the API server's watch cache does, both for a created object and for one
    /// entering the watch's selection. The default.
    #[default]
    Added,
    /// `MODIFIED` for an object entering the watch's selection (an update made its labels or
    /// fields match), as other servers and aggregated APIs do; `ADDED` for a created object.
    ModifiedOnEntering,
    /// `MODIFIED` for both: a server that never tells a creation from an update.
    Modified,
}

/// Ready-made lines for [`Faults::inject_raw_line`](crate::Faults::inject_raw_line).
pub struct RawLine;

impl RawLine {
    /// A line that is not JSON.
    pub fn garbage() -> Bytes {
        Bytes::from_static(b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":")
    }

    /// A well-formed event of a type no client knows.
    pub fn unknown_event_type() -> Bytes {
        Bytes::from_static(
            b"{\"type\":\"SURPRISE\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"1\"}}}",
        )
    }

    /// An `ADDED` event whose object has no metadata.
    pub fn object_without_metadata() -> Bytes {
        Bytes::from_static(
            b"{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\"}}",
        )
    }
}

/// The faults scripted so far (behind the shared state's lock).
#[derive(Default)]
pub(crate) struct FaultState {
    pub(crate) fail_lists: Vec<(Scope, usize, Status)>,
    pub(crate) fail_watches: Vec<(Scope, usize, Status)>,
    pub(crate) fail_writes: Vec<(Scope, usize, Status)>,
    pub(crate) drop_after: Vec<(Scope, usize)>,
    pub(crate) expire_continues: Vec<(Scope, usize)>,
    pub(crate) list_delay: Vec<(Scope, Duration)>,
    pub(crate) event_delay: Vec<(Scope, Duration)>,
    pub(crate) ignore_send_initial_events: Vec<Scope>,
    pub(crate) unseen: Vec<(Scope, UnseenAnnouncement)>,
}

impl FaultState {
    fn take_failure(list: &mut Vec<(Scope, usize, Status)>, def: &ResourceDef) -> Option<Status> {
        let i = list.iter().position(|(s, n, _)| *n > 0 && s.covers(def))?;
        let entry = &mut list[i];
        entry.1 -= 1;
        let status = entry.2.clone();
        if entry.1 == 0 {
            list.remove(i);
        }
        Some(status)
    }

    pub(crate) fn take_list_failure(&mut self, def: &ResourceDef) -> Option<Status> {
        Self::take_failure(&mut self.fail_lists, def)
    }

    pub(crate) fn take_watch_failure(&mut self, def: &ResourceDef) -> Option<Status> {
        Self::take_failure(&mut self.fail_watches, def)
    }

    pub(crate) fn take_write_failure(&mut self, def: &ResourceDef) -> Option<Status> {
        Self::take_failure(&mut self.fail_writes, def)
    }

    pub(crate) fn take_expire_continue(&mut self, def: &ResourceDef) -> bool {
        let Some(i) = self
            .expire_continues
            .iter()
            .position(|(s, n)| *n > 0 && s.covers(def))
        else {
            return false;
        };
        self.expire_continues[i].1 -= 1;
        if self.expire_continues[i].1 == 0 {
            self.expire_continues.remove(i);
        }
        true
    }

    pub(crate) fn take_drop_after(&mut self, def: &ResourceDef) -> Option<usize> {
        let i = self.drop_after.iter().position(|(s, _)| s.covers(def))?;
        Some(self.drop_after.remove(i).1)
    }

    pub(crate) fn list_delay(&self, def: &ResourceDef) -> Duration {
        delay_for(&self.list_delay, def)
    }

    pub(crate) fn event_delay(&self, def: &ResourceDef) -> Duration {
        delay_for(&self.event_delay, def)
    }

    pub(crate) fn unseen_announcement(&self, def: &ResourceDef) -> UnseenAnnouncement {
        self.unseen
            .iter()
            .rev()
            .find(|(s, _)| s.covers(def))
            .map_or(UnseenAnnouncement::Added, |(_, a)| *a)
    }

    pub(crate) fn ignores_send_initial_events(&self, def: &ResourceDef) -> bool {
        self.ignore_send_initial_events
            .iter()
            .any(|s| s.covers(def))
    }
}

impl FaultState {
    pub(crate) fn pending(&self) -> Vec<PendingFault> {
        let mut out = Vec::new();
        for (scope, remaining, status) in &self.fail_lists {
            out.push(PendingFault::FailLists {
                scope: scope.clone(),
                remaining: *remaining,
                status: status.clone(),
            });
        }
        for (scope, remaining, status) in &self.fail_watches {
            out.push(PendingFault::FailWatches {
                scope: scope.clone(),
                remaining: *remaining,
                status: status.clone(),
            });
        }
        for (scope, remaining, status) in &self.fail_writes {
            out.push(PendingFault::FailWrites {
                scope: scope.clone(),
                remaining: *remaining,
                status: status.clone(),
            });
        }
        for (scope, remaining) in &self.expire_continues {
            out.push(PendingFault::ExpireContinues {
                scope: scope.clone(),
                remaining: *remaining,
            });
        }
        for (scope, events) in &self.drop_after {
            out.push(PendingFault::DropWatchAfter {
                scope: scope.clone(),
                events: *events,
            });
        }
        out
    }
}

fn delay_for(list: &[(Scope, Duration)], def: &ResourceDef) -> Duration {
    list.iter()
        .rev()
        .find(|(s, _)| s.covers(def))
        .map_or(Duration::ZERO, |(_, d)| *d)
}

pub(crate) fn set_scoped<T>(list: &mut Vec<(Scope, T)>, scope: Scope, value: Option<T>) {
    list.retain(|(s, _)| *s != scope);
    if let Some(v) = value {
        list.push((scope, v));
    }
}
