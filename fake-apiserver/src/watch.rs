//! Watch subscriptions: each watcher reads the resource's history with its own cursor.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use informer_core::{INITIAL_EVENTS_END_ANNOTATION, Status};
use tokio::sync::watch;
use tokio::time::Instant;

use super::fault_state::UnseenAnnouncement;
use super::mailbox::{Injection, WatcherHandle};
use super::shared::Shared;
use super::status;
use super::store::{EventKind, Fetch, Filter, HistoryEvent, Store};
use super::time::{later, sleep_until_opt};
use super::{ResourceDef, StoredObject};

/// One frame of a watch stream, before serialization.
///
/// Object frames share the stored bytes; [`WatchFrame::to_json_line`] renders the wire line
/// (`{"type":"ADDED","object":{...}}\n`) and [`WatchFrame::to_json_chunks`] the same as three
/// chunks without copying the object.
#[derive(Clone)]
#[non_exhaustive]
pub enum WatchFrame {
    /// `ADDED`.
    Added(Arc<StoredObject>),
    /// `MODIFIED`.
    Modified(Arc<StoredObject>),
    /// `DELETED`: the last state, at the deletion's resourceVersion.
    Deleted(Arc<StoredObject>),
    /// `BOOKMARK`.
    Bookmark {
        /// The resourceVersion the watch has reached.
        resource_version: u64,
        /// Whether the bookmark ends a streaming initial list (annotated
        /// `k8s.io/initial-events-end: "true"`).
        initial_events_end: bool,
    },
    /// `ERROR`: the watch ends with this status.
    Error(Status),
    /// An injected line, written as is (a newline is added).
    Raw(Bytes),
    /// An injected broken connection: the front end aborts the stream (HTTP) or reports a
    /// transport error (in-process). Always the last frame.
    Broken,
}

impl WatchFrame {
    /// The wire event type (`ADDED`, ...), `None` for raw lines and broken connections.
    pub fn type_name(&self) -> Option<&'static str> {
        match self {
            Self::Added(_) => Some("ADDED"),
            Self::Modified(_) => Some("MODIFIED"),
            Self::Deleted(_) => Some("DELETED"),
            Self::Bookmark { .. } => Some("BOOKMARK"),
            Self::Error(_) => Some("ERROR"),
            Self::Raw(_) | Self::Broken => None,
        }
    }

    /// The wire line, newline-terminated; `None` for [`WatchFrame::Broken`].
    pub fn to_json_line(&self, resource: &ResourceDef) -> Option<Bytes> {
        let chunks = self.to_json_chunks(resource)?;
        let mut line = Vec::with_capacity(chunks.iter().map(Bytes::len).sum());
        for c in &chunks {
            line.extend_from_slice(c);
        }
        Some(Bytes::from(line))
    }

    /// The wire line as chunks to write in order, sharing the object's bytes; `None` for
    /// [`WatchFrame::Broken`].
    pub fn to_json_chunks(&self, resource: &ResourceDef) -> Option<[Bytes; 3]> {
        let suffix = Bytes::from_static(b"}\n");
        let (prefix, object): (&'static [u8], Bytes) = match self {
            Self::Added(o) => (b"{\"type\":\"ADDED\",\"object\":", o.bytes().clone()),
            Self::Modified(o) => (b"{\"type\":\"MODIFIED\",\"object\":", o.bytes().clone()),
            Self::Deleted(o) => (b"{\"type\":\"DELETED\",\"object\":", o.bytes().clone()),
            Self::Bookmark {
                resource_version,
                initial_events_end,
            } => (
                b"{\"type\":\"BOOKMARK\",\"object\":",
                bookmark_object(resource, *resource_version, *initial_events_end),
            ),
            Self::Error(s) => (b"{\"type\":\"ERROR\",\"object\":", status::to_json(s)),
            Self::Raw(b) => return Some([Bytes::new(), b.clone(), Bytes::from_static(b"\n")]),
            Self::Broken => return None,
        };
        Some([Bytes::from_static(prefix), object, suffix])
    }
}

impl fmt::Debug for WatchFrame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Added(o) => write!(f, "ADDED({} @{})", o.key(), o.resource_version()),
            Self::Modified(o) => write!(f, "MODIFIED({} @{})", o.key(), o.resource_version()),
            Self::Deleted(o) => write!(f, "DELETED({} @{})", o.key(), o.resource_version()),
            Self::Bookmark {
                resource_version,
                initial_events_end,
            } => write!(f, "BOOKMARK({resource_version}, end={initial_events_end})"),
            Self::Error(s) => write!(f, "ERROR({s})"),
            Self::Raw(b) => write!(f, "RAW({:?})", String::from_utf8_lossy(b)),
            Self::Broken => f.write_str("BROKEN"),
        }
    }
}

fn bookmark_object(resource: &ResourceDef, rv: u64, end: bool) -> Bytes {
    let mut meta = serde_json::json!({ "resourceVersion": rv.to_string() });
    if end {
        meta["annotations"] = serde_json::json!({ INITIAL_EVENTS_END_ANNOTATION: "true" });
    }
    let obj = serde_json::json!({
        "kind": resource.kind,
        "apiVersion": resource.api_version(),
        "metadata": meta,
    });
    Bytes::from(obj.to_string())
}

/// An open watch: a stream of [`WatchFrame`]s that ends when the watch ends.
///
/// Dropping it closes the watch.
pub struct WatchSubscription {
    resource: Arc<ResourceDef>,
    stream: Pin<Box<dyn Stream<Item = WatchFrame> + Send>>,
}

impl WatchSubscription {
    pub(crate) fn new(watcher: Watcher) -> Self {
        let resource = Arc::clone(&watcher.handle.def);
        let stream = futures::stream::unfold(watcher, |mut w| async move {
            let frame = w.next_frame().await?;
            Some((frame, w))
        });
        Self {
            resource,
            stream: Box::pin(stream),
        }
    }

    /// The resource watched.
    pub fn resource(&self) -> &Arc<ResourceDef> {
        &self.resource
    }

    /// The next frame, `None` when the watch has ended.
    pub async fn next(&mut self) -> Option<WatchFrame> {
        futures::StreamExt::next(&mut self.stream).await
    }
}

impl Stream for WatchSubscription {
    type Item = WatchFrame;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<WatchFrame>> {
        self.stream.as_mut().poll_next(cx)
    }
}

impl fmt::Debug for WatchSubscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchSubscription")
            .field("resource", &self.resource.qualified_name())
            .finish_non_exhaustive()
    }
}

/// How a watch starts once the store has reached the requested resourceVersion.
#[derive(Debug, Clone, Copy)]
pub(crate) enum StartMode {
    /// Every current object as `ADDED`, optionally then the end bookmark, then changes.
    Snapshot { end_bookmark: bool },
    /// Changes after this resourceVersion.
    After(u64),
    /// Changes from now on.
    Now,
}

enum Phase {
    WaitFresh {
        rv: u64,
        until: Instant,
        then: StartMode,
    },
    Initial {
        items: VecDeque<Arc<StoredObject>>,
        end_bookmark: Option<u64>,
    },
    Live,
    Fail(Status),
}

/// How many history events a watcher copies out of the store per lock.
const FETCH_BATCH: usize = 256;

/// One open watch: its cursor into the history and everything it still has to deliver.
pub(crate) struct Watcher {
    shared: Arc<Shared>,
    res: usize,
    pub(crate) handle: Arc<WatcherHandle>,
    filter: Filter,
    phase: Phase,
    cursor: u64,
    last_rv: u64,
    buffer: VecDeque<Arc<HistoryEvent>>,
    changed: watch::Receiver<u64>,
    rv_rx: watch::Receiver<u64>,
    deadline: Option<Instant>,
    next_bookmark: Option<Instant>,
    bookmark_pending: bool,
    drop_after: Option<usize>,
    /// The fault settings in effect, and the fault generation they were read at.
    settings: (u64, Settings),
    done: bool,
}

/// The fault settings a watcher applies to each event.
#[derive(Clone, Copy, Default)]
struct Settings {
    delay: Duration,
    unseen: UnseenAnnouncement,
}

/// Everything a watcher needs to start.
pub(crate) struct WatcherSpec {
    pub res: usize,
    pub filter: Filter,
    pub allow_bookmarks: bool,
    pub timeout: Option<Duration>,
    pub drop_after: Option<usize>,
    /// Wait for the store to reach this resourceVersion first (at most `until`).
    pub wait_for: Option<(u64, Instant)>,
    pub mode: StartMode,
}

impl Watcher {
    /// Builds a watcher and, unless it must wait for the store, positions it now (under the
    /// store lock, so that no event falls between the snapshot and the cursor).
    pub(crate) fn new(shared: Arc<Shared>, store: &Store, spec: WatcherSpec) -> Self {
        let state = &store.resources[spec.res];
        let def = Arc::clone(&state.def);
        let now = Instant::now();
        let deadline = spec.timeout.map(|t| later(now, t));
        let mut w = Self {
            res: spec.res,
            handle: Arc::new(WatcherHandle::new(def, spec.allow_bookmarks)),
            filter: spec.filter,
            phase: Phase::Live,
            cursor: state.log_end(),
            last_rv: store.rv,
            buffer: VecDeque::new(),
            changed: state.changed.subscribe(),
            rv_rx: store.rv_tx.subscribe(),
            deadline,
            next_bookmark: None,
            bookmark_pending: false,
            drop_after: spec.drop_after,
            settings: (u64::MAX, Settings::default()),
            done: false,
            shared,
        };
        if spec.allow_bookmarks {
            w.next_bookmark = Some(w.bookmark_after(now));
        }
        match spec.wait_for {
            Some((rv, until)) if rv > store.rv => {
                w.phase = Phase::WaitFresh {
                    rv,
                    until,
                    then: spec.mode,
                };
            }
            _ => w.start(store, spec.mode),
        }
        w
    }

    fn bookmark_after(&self, now: Instant) -> Instant {
        let interval = *self.shared.bookmark_interval.lock();
        let periodic = later(now, interval);
        // Like the real server, also one bookmark shortly before the watch times out.
        match self.deadline {
            Some(d) if d > later(now, Duration::from_secs(2)) => {
                periodic.min(d - Duration::from_secs(2))
            }
            _ => periodic,
        }
    }

    fn start(&mut self, store: &Store, mode: StartMode) {
        let state = &store.resources[self.res];
        match mode {
            StartMode::Snapshot { end_bookmark } => {
                let items = store.snapshot(self.res, &self.filter);
                self.cursor = state.log_end();
                self.last_rv = store.rv;
                self.phase = Phase::Initial {
                    items: items.into(),
                    end_bookmark: end_bookmark.then_some(store.rv),
                };
            }
            StartMode::After(rv) => match store.cursor_after(self.res, rv) {
                Ok(cursor) => {
                    self.cursor = cursor;
                    self.last_rv = rv;
                    self.phase = Phase::Live;
                }
                Err(status) => self.phase = Phase::Fail(status),
            },
            StartMode::Now => {
                self.cursor = state.log_end();
                self.last_rv = store.rv;
                self.phase = Phase::Live;
            }
        }
    }

    fn finish(&mut self, frame: Option<WatchFrame>) -> Option<WatchFrame> {
        self.done = true;
        self.handle.close();
        self.shared.activity.send_modify(|n| *n += 1);
        frame
    }

    async fn next_frame(&mut self) -> Option<WatchFrame> {
        loop {
            if self.done {
                return None;
            }
            let injection = self.handle.pop();
            if let Some(injection) = injection {
                match injection {
                    Injection::Raw(line) => return Some(WatchFrame::Raw(line)),
                    Injection::Error(s) => return self.finish(Some(WatchFrame::Error(s))),
                    Injection::Expire => {
                        let current = self.shared.store.lock().rv;
                        let s = status::too_old_resource_version(self.last_rv, current);
                        return self.finish(Some(WatchFrame::Error(s)));
                    }
                    Injection::Close => return self.finish(None),
                    Injection::Break => return self.finish(Some(WatchFrame::Broken)),
                    Injection::Bookmark => {
                        self.bookmark_pending = self.handle.allow_bookmarks;
                        continue;
                    }
                }
            }
            let now = Instant::now();
            if self.deadline.is_some_and(|d| now >= d) {
                return self.finish(None);
            }
            if self.next_bookmark.is_some_and(|b| now >= b) {
                self.bookmark_pending = true;
                self.next_bookmark = Some(self.bookmark_after(now));
            }
            if self.drop_after == Some(0) {
                return self.finish(None);
            }
            match &mut self.phase {
                Phase::Fail(s) => {
                    let s = s.clone();
                    return self.finish(Some(WatchFrame::Error(s)));
                }
                Phase::WaitFresh { rv, until, then } => {
                    let (rv, until, then) = (*rv, *until, *then);
                    let current = *self.rv_rx.borrow_and_update();
                    if current >= rv {
                        let shared = Arc::clone(&self.shared);
                        let store = shared.store.lock();
                        self.start(&store, then);
                        continue;
                    }
                    if now >= until {
                        let s = status::resource_version_too_large(rv, current);
                        return self.finish(Some(WatchFrame::Error(s)));
                    }
                    tokio::select! {
                        r = self.rv_rx.changed() => if r.is_err() { return self.finish(None) },
                        () = self.handle.notified() => {}
                        () = tokio::time::sleep_until(until) => {}
                        () = sleep_until_opt(self.deadline) => {}
                    }
                    continue;
                }
                Phase::Initial {
                    items,
                    end_bookmark,
                } => {
                    if let Some(o) = items.pop_front() {
                        return self.deliver(WatchFrame::Added(o)).await;
                    }
                    if let Some(rv) = end_bookmark.take() {
                        return Some(WatchFrame::Bookmark {
                            resource_version: rv,
                            initial_events_end: true,
                        });
                    }
                    self.phase = Phase::Live;
                    continue;
                }
                Phase::Live => {}
            }
            if let Some(ev) = self.buffer.pop_front() {
                self.cursor += 1;
                self.last_rv = ev.rv;
                self.refresh_settings();
                if let Some(frame) = self.transform(&ev) {
                    return self.deliver(frame).await;
                }
                continue;
            }
            self.changed.borrow_and_update();
            let fetched = {
                let store = self.shared.store.lock();
                store.fetch(self.res, self.cursor, FETCH_BATCH, &mut self.buffer)
            };
            match fetched {
                Fetch::Events => continue,
                Fetch::TooOld(floor) => {
                    let s = status::too_old_resource_version(self.last_rv, floor);
                    return self.finish(Some(WatchFrame::Error(s)));
                }
                Fetch::CaughtUp(rv) => {
                    if self.bookmark_pending {
                        self.bookmark_pending = false;
                        self.last_rv = self.last_rv.max(rv);
                        return Some(WatchFrame::Bookmark {
                            resource_version: self.last_rv,
                            initial_events_end: false,
                        });
                    }
                }
            }
            let bookmark_at = if self.handle.allow_bookmarks {
                self.next_bookmark
            } else {
                None
            };
            tokio::select! {
                r = self.changed.changed() => if r.is_err() { return self.finish(None) },
                () = self.handle.notified() => {}
                () = sleep_until_opt(self.deadline) => {}
                () = sleep_until_opt(bookmark_at) => {}
            }
        }
    }

    /// What this watcher sees of an event, given its selectors (like the real watch cache:
    /// an object leaving the selection is a `DELETED`, one entering it an `ADDED`, and a
    /// deletion is seen by the watchers that saw the object before it).
    ///
    /// [`Faults::announce_unseen`](super::Faults::announce_unseen) turns the `ADDED` of an
    /// object entering the selection (or of a created one) into a `MODIFIED`.
    fn transform(&self, ev: &HistoryEvent) -> Option<WatchFrame> {
        let now_matches = self.filter.matches(&ev.object);
        let unseen = self.settings.1.unseen;
        match ev.kind {
            EventKind::Added => now_matches.then(|| {
                if unseen == UnseenAnnouncement::Modified {
                    WatchFrame::Modified(Arc::clone(&ev.object))
                } else {
                    WatchFrame::Added(Arc::clone(&ev.object))
                }
            }),
            EventKind::Deleted => {
                // An update that drops the last finalizer of an object being deleted deletes
                // it with new content, which may no longer match: the watcher still saw the
                // object before, so it hears of the deletion (with the content it knew, as
                // the real watch cache sends).
                let before = ev.prev.as_ref().is_none_or(|p| self.filter.matches(p));
                match (before, now_matches) {
                    (false, _) => None,
                    (true, true) => Some(WatchFrame::Deleted(Arc::clone(&ev.object))),
                    (true, false) => Some(WatchFrame::Deleted(
                        ev.prev_at_event_rv()
                            .unwrap_or_else(|| Arc::clone(&ev.object)),
                    )),
                }
            }
            EventKind::Modified => {
                let before = ev.prev.as_ref().is_some_and(|p| self.filter.matches(p));
                match (before, now_matches) {
                    (true, true) => Some(WatchFrame::Modified(Arc::clone(&ev.object))),
                    (false, true) if unseen == UnseenAnnouncement::Added => {
                        Some(WatchFrame::Added(Arc::clone(&ev.object)))
                    }
                    (false, true) => Some(WatchFrame::Modified(Arc::clone(&ev.object))),
                    (true, false) => Some(WatchFrame::Deleted(
                        ev.prev_at_event_rv()
                            .unwrap_or_else(|| Arc::clone(&ev.object)),
                    )),
                    (false, false) => None,
                }
            }
        }
    }

    /// Re-reads the fault settings if they changed since they were last read.
    fn refresh_settings(&mut self) {
        let generation = self.shared.fault_generation.load(Ordering::Acquire);
        if self.settings.0 != generation {
            let faults = self.shared.faults.lock();
            let settings = Settings {
                delay: faults.event_delay(&self.handle.def),
                unseen: faults.unseen_announcement(&self.handle.def),
            };
            drop(faults);
            self.settings = (generation, settings);
        }
    }

    /// Delivers an object frame: applies the scripted delay and the drop-after count.
    async fn deliver(&mut self, frame: WatchFrame) -> Option<WatchFrame> {
        self.refresh_settings();
        if !self.settings.1.delay.is_zero() {
            tokio::time::sleep(self.settings.1.delay).await;
        }
        if let Some(n) = &mut self.drop_after {
            *n = n.saturating_sub(1);
        }
        Some(frame)
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.handle.close();
        self.shared.activity.send_modify(|n| *n += 1);
    }
}
