//! One registration's buffer and the loop that delivers it to a handler.
//!
//! The processing loop pushes notifications into every listener's buffer without waiting
//! (the buffer is a queue behind a short lock); each handler drains its own buffer on its own
//! task or thread, so a slow handler delays only itself.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use futures::task::AtomicWaker;
use informer_core::{Notification, Object, ResourceEventHandler};
use parking_lot::Mutex;

use crate::incident::{Incident, IncidentHook, IncidentKind};
use crate::metrics::InformerRecorder;
use crate::observability::{lag_warning_due, warn_slow_handler};
use crate::registration::{RegistrationShared, RegistrationStatus};

/// A handler as the informer keeps it: erased.
pub(crate) type BoxedHandler<K> = Box<dyn ResourceEventHandler<K>>;

/// What became of a pushed notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pushed {
    Queued,
    /// The buffer is closed: the notification was dropped.
    Closed,
    /// The bound was hit: the buffer was dropped and closed; the registration is disconnected.
    Overflowed {
        limit: usize,
        dropped: usize,
    },
}

struct Buffer<K> {
    items: VecDeque<Notification<K>>,
    /// Queued notifications that are not initial-list adds: what the bound counts.
    live: usize,
    open: bool,
}

/// One registration's buffer.
pub(crate) struct Listener<K> {
    pub(crate) shared: Arc<RegistrationShared>,
    buffer: Mutex<Buffer<K>>,
    waker: AtomicWaker,
    limit: Option<usize>,
}

fn is_initial<K>(n: &Notification<K>) -> bool {
    matches!(
        n,
        Notification::Add {
            is_in_initial_list: true,
            ..
        }
    )
}

impl<K: Object> Listener<K> {
    pub(crate) fn new(shared: Arc<RegistrationShared>, limit: Option<usize>) -> Self {
        Self {
            shared,
            buffer: Mutex::new(Buffer {
                items: VecDeque::new(),
                live: 0,
                open: true,
            }),
            waker: AtomicWaker::new(),
            limit,
        }
    }

    /// Queues a notification for the handler. Never waits.
    pub(crate) fn push(&self, n: Notification<K>) -> Pushed {
        let initial = is_initial(&n);
        let lag = {
            let mut buf = self.buffer.lock();
            if !buf.open {
                return Pushed::Closed;
            }
            if !initial
                && let Some(limit) = self.limit
                && buf.live >= limit
            {
                let dropped = self.clear_locked(&mut buf);
                buf.open = false;
                drop(buf);
                self.shared.leave(RegistrationStatus::Disconnected);
                self.waker.wake();
                return Pushed::Overflowed { limit, dropped };
            }
            if !initial {
                buf.live += 1;
            }
            buf.items.push_back(n);
            let pending = self.shared.pending.fetch_add(1, Ordering::AcqRel) + 1;
            self.shared
                .max_pending
                .fetch_max(pending, Ordering::Relaxed);
            if initial {
                self.shared.state.send_if_modified(|s| {
                    s.initial_pending += 1;
                    false
                });
            }
            buf.live
        };
        if !initial && lag_warning_due(lag) {
            warn_slow_handler(&self.shared, lag);
        }
        self.waker.wake();
        Pushed::Queued
    }

    /// The next notification; `None` once the buffer is closed and empty.
    pub(crate) fn poll_next(&self, cx: &mut Context<'_>) -> Poll<Option<Notification<K>>> {
        self.waker.register(cx.waker());
        let mut buf = self.buffer.lock();
        match buf.items.pop_front() {
            Some(n) => {
                if !is_initial(&n) {
                    buf.live -= 1;
                }
                Poll::Ready(Some(n))
            }
            None if !buf.open => Poll::Ready(None),
            None => Poll::Pending,
        }
    }

    /// Records that `n` (taken with `poll_next`) has been handled.
    pub(crate) fn finish(&self, n: &Notification<K>) {
        self.shared.delivered.fetch_add(1, Ordering::AcqRel);
        self.shared.pending.fetch_sub(1, Ordering::AcqRel);
        if is_initial(n) {
            self.shared.state.send_if_modified(|s| {
                s.initial_pending = s.initial_pending.saturating_sub(1);
                s.initial_pending == 0
            });
        }
    }

    /// Stops accepting notifications. `drop_pending` also drops what is buffered (removal,
    /// abandonment); otherwise the handler drains it (shutdown). Returns how many were dropped.
    pub(crate) fn close(&self, status: RegistrationStatus, drop_pending: bool) -> usize {
        let dropped = {
            let mut buf = self.buffer.lock();
            buf.open = false;
            if drop_pending {
                self.clear_locked(&mut buf)
            } else {
                0
            }
        };
        self.shared.leave(status);
        self.waker.wake();
        dropped
    }

    /// Drops what the buffer holds. Dropped initial-list notifications stay counted in
    /// `initial_pending`: they were never handled, so a registration abandoned this way (at
    /// shutdown's bound, or removed) never reports having synced.
    fn clear_locked(&self, buf: &mut Buffer<K>) -> usize {
        let dropped = buf.items.len();
        buf.items.clear();
        buf.live = 0;
        self.shared.pending.fetch_sub(dropped, Ordering::AcqRel);
        dropped
    }

    /// How many notifications are buffered (not counting one being handled).
    pub(crate) fn buffered(&self) -> usize {
        self.buffer.lock().items.len()
    }
}

/// Counts incidents and tells the hook; shared by the informer and its delivery loops.
pub(crate) struct Reporter {
    pub(crate) informer: String,
    pub(crate) hook: Option<IncidentHook>,
    pub(crate) panics: AtomicU64,
    pub(crate) disconnections: AtomicU64,
    pub(crate) stuck: AtomicU64,
    /// Metrics of the informer and its handlers (nothing without the `metrics` feature).
    pub(crate) metrics: InformerRecorder,
}

impl Reporter {
    pub(crate) fn new(
        informer: String,
        hook: Option<IncidentHook>,
        metrics: InformerRecorder,
    ) -> Self {
        Self {
            informer,
            hook,
            metrics,
            panics: AtomicU64::new(0),
            disconnections: AtomicU64::new(0),
            stuck: AtomicU64::new(0),
        }
    }

    pub(crate) fn report(&self, shared: &RegistrationShared, kind: IncidentKind) {
        self.metrics.incident(&shared.name, &kind);
        match &kind {
            IncidentKind::Panicked {
                message,
                notification,
            } => {
                self.panics.fetch_add(1, Ordering::Relaxed);
                tracing::error!(
                    informer = %self.informer,
                    handler = %shared.name,
                    registration = %shared.id,
                    %notification,
                    "handler panicked: {message}; it keeps receiving notifications"
                );
            }
            IncidentKind::Overflowed { limit, dropped } => {
                self.disconnections.fetch_add(1, Ordering::Relaxed);
                tracing::error!(
                    informer = %self.informer,
                    handler = %shared.name,
                    registration = %shared.id,
                    limit,
                    dropped,
                    "handler buffer overflowed; handler disconnected"
                );
            }
            IncidentKind::StuckAtShutdown { pending } => {
                self.stuck.fetch_add(1, Ordering::Relaxed);
                tracing::error!(
                    informer = %self.informer,
                    handler = %shared.name,
                    registration = %shared.id,
                    pending,
                    "handler still busy at the end of shutdown's bound; abandoned"
                );
            }
        }
        if let Some(hook) = &self.hook {
            let incident = Incident {
                informer: self.informer.clone(),
                registration: shared.id,
                handler: shared.name.clone(),
                kind,
            };
            if catch_unwind(AssertUnwindSafe(|| hook(&incident))).is_err() {
                tracing::error!(informer = %self.informer, "the incident hook panicked");
            }
        }
    }
}

/// Cancels the registration's `finished` token when the delivery loop ends, however it ends.
struct FinishedGuard(Arc<RegistrationShared>);

impl Drop for FinishedGuard {
    fn drop(&mut self) {
        self.0.finished.cancel();
    }
}

/// Delivers a listener's notifications to its handler until the buffer is closed and empty.
pub(crate) async fn deliver<K: Object>(
    listener: Arc<Listener<K>>,
    mut handler: BoxedHandler<K>,
    reporter: Arc<Reporter>,
    cooperative: bool,
) {
    let _finished = FinishedGuard(Arc::clone(&listener.shared));
    while let Some(n) = poll_fn(|cx| listener.poll_next(cx)).await {
        let outcome = catch_unwind(AssertUnwindSafe(|| n.dispatch(handler.as_mut())));
        listener.finish(&n);
        if let Err(payload) = outcome {
            listener.shared.panics.fetch_add(1, Ordering::Relaxed);
            let message = panic_message(payload.as_ref());
            reporter.report(
                &listener.shared,
                IncidentKind::Panicked {
                    message,
                    notification: format!("{n:?}"),
                },
            );
        }
        if cooperative {
            // A handler with a long backlog must not monopolise a runtime thread.
            tokio::task::consume_budget().await;
        }
    }
}

/// The text of a panic payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string panic payload>".to_owned()
    }
}
