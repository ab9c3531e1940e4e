//! The mailbox of an open watch: what the server (faults, bookmarks, shutdown) pushes into a
//! watch from outside ([`Injection`]), and the handle it pushes through ([`WatcherHandle`]).
//! A leaf: the shared state lists the handles, the watchers read them.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use informer_core::Status;
use parking_lot::Mutex;
use tokio::sync::Notify;

use super::ResourceDef;

/// Something pushed into an open watch from outside.
pub(crate) enum Injection {
    Raw(Bytes),
    Error(Status),
    Expire,
    Close,
    Break,
    Bookmark,
}

/// The part of a watcher the server can reach while the watch is open.
pub(crate) struct WatcherHandle {
    pub def: Arc<ResourceDef>,
    pub allow_bookmarks: bool,
    mailbox: Mutex<VecDeque<Injection>>,
    notify: Notify,
    closed: AtomicBool,
}

impl WatcherHandle {
    pub(crate) fn new(def: Arc<ResourceDef>, allow_bookmarks: bool) -> Self {
        Self {
            def,
            allow_bookmarks,
            mailbox: Mutex::new(VecDeque::new()),
            notify: Notify::new(),
            closed: AtomicBool::new(false),
        }
    }

    /// Whether the watch is still open (not ended, not dropped).
    pub(crate) fn is_open(&self) -> bool {
        !self.closed.load(Ordering::Acquire)
    }

    pub(crate) fn push(&self, injection: Injection) {
        self.mailbox.lock().push_back(injection);
        self.notify.notify_one();
    }

    /// The next injection, if any.
    pub(crate) fn pop(&self) -> Option<Injection> {
        self.mailbox.lock().pop_front()
    }

    /// Completes when an injection is pushed (or was pushed since the last wait).
    pub(crate) async fn notified(&self) {
        self.notify.notified().await;
    }

    /// Marks the watch closed: the server pushes nothing more into it.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }
}
