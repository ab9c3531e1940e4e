//! [`Faults`], the handle a test scripts faults through: failures of the next requests,
//! broken and expired watches, raw lines, delays. What is scripted lives in the shared state
//! (`fault_state.rs`); open watches are reached through their mailboxes.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use informer_core::Status;

use super::fault_state::{FaultState, PendingFault, Scope, UnseenAnnouncement, set_scoped};
use super::mailbox::Injection;
use super::shared::Shared;

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
    /// garbage JSON, an unknown event type, an object without metadata. See [`RawLine`](crate::RawLine).
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
