//! Faults: scripted failures, delays and injections, per resource and per request kind.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use informer_core::Status;

use super::ResourceDef;
use super::server::Shared;
use super::watch::Injection;

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

/// A scripted fault that has not been used up yet. See [`Faults::pending`].
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
/// [`Faults::announce_unseen`].
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

/// Ready-made lines for [`Faults::inject_raw_line`].
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

#[derive(Default)]
pub(crate) struct FaultState {
    fail_lists: Vec<(Scope, usize, Status)>,
    fail_watches: Vec<(Scope, usize, Status)>,
    fail_writes: Vec<(Scope, usize, Status)>,
    drop_after: Vec<(Scope, usize)>,
    expire_continues: Vec<(Scope, usize)>,
    list_delay: Vec<(Scope, Duration)>,
    event_delay: Vec<(Scope, Duration)>,
    ignore_send_initial_events: Vec<Scope>,
    unseen: Vec<(Scope, UnseenAnnouncement)>,
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

fn set_scoped<T>(list: &mut Vec<(Scope, T)>, scope: Scope, value: Option<T>) {
    list.retain(|(s, _)| *s != scope);
    if let Some(v) = value {
        list.push((scope, v));
    }
}

/// The fault-injection handle of a [`FakeApiServer`](super::FakeApiServer): script failures,
/// delays and injections, and check that everything scripted was used.
///
/// Obtained with [`FakeApiServer::faults`](super::FakeApiServer::faults); cheap to clone.
/// Faults apply to requests of both front ends alike.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use fake_apiserver::{FakeApiServer, status};
///
/// let server = FakeApiServer::new();
/// let faults = server.faults();
/// faults.fail_lists("pods", 2, status::internal_error("etcd is down"));
/// faults.fail_watches("pods", 1, status::too_many_requests(3));
/// assert_eq!(faults.pending().len(), 2);
/// // ... run the client; then:
/// // assert!(faults.pending().is_empty(), "unused faults: {:?}", faults.pending());
/// # }
/// ```
#[derive(Clone)]
pub struct Faults {
    pub(crate) shared: Arc<Shared>,
}

impl Faults {
    fn changed(&self) {
        self.shared.fault_generation.fetch_add(1, Ordering::Release);
    }

    /// The next `count` list requests in `scope` fail with `status` (500, 429 with
    /// retryAfterSeconds, 410, 504 too-large...). The failure counts as a received request in
    /// the request log.
    pub fn fail_lists(&self, scope: impl Into<Scope>, count: usize, status: Status) {
        if count > 0 {
            self.shared
                .faults
                .lock()
                .fail_lists
                .push((scope.into(), count, status));
        }
    }

    /// The next `count` watch requests in `scope` fail to start with `status` (an HTTP error,
    /// not an `ERROR` event).
    pub fn fail_watches(&self, scope: impl Into<Scope>, count: usize, status: Status) {
        if count > 0 {
            self.shared
                .faults
                .lock()
                .fail_watches
                .push((scope.into(), count, status));
        }
    }

    /// The next `count` write requests in `scope` (create, update, patch, apply and delete
    /// through the request layer: the `*_at` methods, so every HTTP write) fail with `status`
    /// (500, 429 with retryAfterSeconds, 409...) and change nothing. The failure counts as a
    /// received request in the request log. The test's own direct writes
    /// ([`FakeApiServer::create`](super::FakeApiServer::create) and the like) never fail.
    pub fn fail_writes(&self, scope: impl Into<Scope>, count: usize, status: Status) {
        if count > 0 {
            self.shared
                .faults
                .lock()
                .fail_writes
                .push((scope.into(), count, status));
        }
    }

    /// The next watch started in `scope` ends (cleanly, like a closed connection) after
    /// delivering `events` object events (`ADDED`/`MODIFIED`/`DELETED`, initial ones included).
    pub fn drop_next_watch_after(&self, scope: impl Into<Scope>, events: usize) {
        self.shared
            .faults
            .lock()
            .drop_after
            .push((scope.into(), events));
    }

    /// Every watch open now in `scope` ends at once (clean end of stream). Returns how many.
    pub fn drop_watches(&self, scope: impl Into<Scope>) -> usize {
        self.shared
            .inject(&scope.into(), |_| Some(Injection::Close))
    }

    /// Every watch open now in `scope` breaks: the stream reports a broken connection (the
    /// in-process front end yields `Error::Transport`; HTTP aborts the response). Returns how
    /// many.
    pub fn break_watches(&self, scope: impl Into<Scope>) -> usize {
        self.shared
            .inject(&scope.into(), |_| Some(Injection::Break))
    }

    /// Delivers an `ERROR` event with `status` into every watch open now in `scope`; the watch
    /// then ends, as on the real server. Returns how many watches got it.
    pub fn inject_error(&self, scope: impl Into<Scope>, status: Status) -> usize {
        self.shared
            .inject(&scope.into(), |_| Some(Injection::Error(status.clone())))
    }

    /// Delivers `ERROR` 410 Expired (`too old resource version: N (M)` with the watcher's
    /// position and the current resourceVersion) into every watch open now in `scope`.
    pub fn expire_watches(&self, scope: impl Into<Scope>) -> usize {
        self.shared
            .inject(&scope.into(), |_| Some(Injection::Expire))
    }

    /// Writes `line` as is (it gets a trailing newline) into every watch open now in `scope`:
    /// garbage JSON, an unknown event type, an object without metadata. See [`RawLine`].
    pub fn inject_raw_line(&self, scope: impl Into<Scope>, line: impl Into<Bytes>) -> usize {
        let line = line.into();
        self.shared
            .inject(&scope.into(), |_| Some(Injection::Raw(line.clone())))
    }

    /// The next `count` list requests in `scope` that carry a continue token get 410 Expired
    /// (`The provided continue parameter is too old...`), as when compaction overtakes a
    /// paginated list between two pages.
    pub fn expire_next_continues(&self, scope: impl Into<Scope>, count: usize) {
        if count > 0 {
            self.shared
                .faults
                .lock()
                .expire_continues
                .push((scope.into(), count));
        }
    }

    /// Every continue token issued so far is expired: its next use gets 410.
    pub fn expire_continue_tokens(&self) {
        self.shared.store.lock().continue_epoch += 1;
    }

    /// Delays every list response in `scope` by `delay` (tokio time); `None` removes the delay.
    pub fn delay_lists(&self, scope: impl Into<Scope>, delay: Option<Duration>) {
        set_scoped(
            &mut self.shared.faults.lock().list_delay,
            scope.into(),
            delay,
        );
        self.changed();
    }

    /// Delays every watch event in `scope` by `delay` before delivery (tokio time); `None`
    /// removes the delay. Applies to open watches from their next event on.
    pub fn delay_watch_events(&self, scope: impl Into<Scope>, delay: Option<Duration>) {
        set_scoped(
            &mut self.shared.faults.lock().event_delay,
            scope.into(),
            delay,
        );
        self.changed();
    }

    /// Makes `scope` behave like an old server that does not know `sendInitialEvents`: the
    /// parameter (and `resourceVersionMatch` on watches) is ignored, so a streaming list gets
    /// a plain watch and never the end bookmark.
    pub fn ignore_send_initial_events(&self, scope: impl Into<Scope>, ignore: bool) {
        let scope = scope.into();
        let mut f = self.shared.faults.lock();
        f.ignore_send_initial_events.retain(|s| *s != scope);
        if ignore {
            f.ignore_send_initial_events.push(scope);
        }
    }

    /// Changes how watches in `scope` announce objects they have not shown before (created, or
    /// entering the watch's selection): [`UnseenAnnouncement::Added`] (the default) is the
    /// API server's watch cache; the others send `MODIFIED` for an object the client has
    /// never seen, which a client must take as an addition. Applies to open watches from their
    /// next event on; the initial events of a watch (its snapshot) stay `ADDED`.
    pub fn announce_unseen(&self, scope: impl Into<Scope>, how: UnseenAnnouncement) {
        let value = (how != UnseenAnnouncement::Added).then_some(how);
        set_scoped(&mut self.shared.faults.lock().unseen, scope.into(), value);
        self.changed();
    }

    /// The scripted one-shot faults not used up yet (settings like delays are not listed).
    pub fn pending(&self) -> Vec<PendingFault> {
        self.shared.faults.lock().pending()
    }

    /// Panics, listing them, if scripted faults were left unused. For the end of a test.
    #[track_caller]
    pub fn assert_all_used(&self) {
        let pending = self.pending();
        assert!(
            pending.is_empty(),
            "scripted faults left unused: {}",
            pending
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        );
    }

    /// Removes every scripted fault and setting.
    pub fn clear(&self) {
        *self.shared.faults.lock() = FaultState::default();
        self.changed();
    }
}
