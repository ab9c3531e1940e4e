//! Registration handles: what `add_handler` returns, to watch a handler's progress and lag and
//! to remove it.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Identifies one handler registration of one informer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RegistrationId(pub(crate) u64);

impl RegistrationId {
    /// The number behind the id (unique within its informer, in registration order).
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for RegistrationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Where a registration is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RegistrationStatus {
    /// Receiving notifications.
    Active,
    /// Removed with [`remove_handler`](crate::SharedIndexInformer::remove_handler) (or its
    /// stream was dropped); undelivered notifications were dropped.
    Removed,
    /// Its buffer hit its bound ([`HandlerOptions::buffer_limit`](crate::HandlerOptions)); it
    /// was disconnected and its undelivered notifications dropped.
    Disconnected,
    /// The informer stopped; what was buffered was delivered (or abandoned at shutdown's
    /// bound).
    Stopped,
}

/// Counters of one registration.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RegistrationStats {
    /// The registration's status.
    pub status: RegistrationStatus,
    /// Notifications queued for the handler and not yet handled: its lag.
    pub pending: usize,
    /// The largest `pending` seen.
    pub max_pending: usize,
    /// Notifications handled (including those whose handling panicked).
    pub delivered: u64,
    /// Notifications whose handling panicked.
    pub panics: u64,
    /// Initial-list notifications not yet handled (including those dropped unhandled when the
    /// registration was removed, disconnected or abandoned at shutdown).
    pub initial_pending: usize,
    /// The resync period in effect for this handler (zero: never).
    pub resync_period: Duration,
}

/// The informer's progress, shared with every registration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Phase {
    /// The informer's first list has been completely processed.
    pub(crate) synced: bool,
    /// The informer has stopped.
    pub(crate) stopped: bool,
}

/// A registration's own state, observable by sync waiters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RegState {
    pub(crate) status: RegistrationStatus,
    pub(crate) initial_pending: usize,
}

/// What the informer and a registration handle share (not generic: erased inside).
pub(crate) struct RegistrationShared {
    pub(crate) id: RegistrationId,
    pub(crate) name: String,
    pub(crate) informer: String,
    pub(crate) state: watch::Sender<RegState>,
    pub(crate) phase: watch::Receiver<Phase>,
    pub(crate) pending: AtomicUsize,
    pub(crate) max_pending: AtomicUsize,
    pub(crate) delivered: AtomicU64,
    pub(crate) panics: AtomicU64,
    pub(crate) resync_period_nanos: AtomicU64,
    /// Cancelled when the delivery loop has exited (handlers) or the stream was dropped.
    pub(crate) finished: CancellationToken,
}

impl RegistrationShared {
    pub(crate) fn new(
        id: RegistrationId,
        name: String,
        informer: String,
        phase: watch::Receiver<Phase>,
    ) -> Self {
        Self {
            id,
            name,
            informer,
            state: watch::Sender::new(RegState {
                status: RegistrationStatus::Active,
                initial_pending: 0,
            }),
            phase,
            pending: AtomicUsize::new(0),
            max_pending: AtomicUsize::new(0),
            delivered: AtomicU64::new(0),
            panics: AtomicU64::new(0),
            resync_period_nanos: AtomicU64::new(0),
            finished: CancellationToken::new(),
        }
    }

    pub(crate) fn status(&self) -> RegistrationStatus {
        self.state.borrow().status
    }

    /// Sets the status unless the registration already left `Active` (the first reason wins).
    pub(crate) fn leave(&self, status: RegistrationStatus) -> bool {
        self.state.send_if_modified(|s| {
            if s.status == RegistrationStatus::Active {
                s.status = status;
                true
            } else {
                false
            }
        })
    }

    pub(crate) fn set_resync_period(&self, period: Duration) {
        let nanos = u64::try_from(period.as_nanos()).unwrap_or(u64::MAX);
        self.resync_period_nanos.store(nanos, Ordering::Relaxed);
    }

    fn has_synced(&self) -> bool {
        let state = *self.state.borrow();
        let usable = matches!(
            state.status,
            RegistrationStatus::Active | RegistrationStatus::Stopped
        );
        usable && state.initial_pending == 0 && self.phase.borrow().synced
    }
}

/// A handle on one handler registration (or the registration behind an
/// [`EventStream`](crate::EventStream)). Cheap to clone; dropping it does not remove the
/// handler (use [`remove_handler`](crate::SharedIndexInformer::remove_handler)).
#[derive(Clone)]
pub struct Registration {
    pub(crate) shared: Arc<RegistrationShared>,
}

impl Registration {
    /// The registration's id.
    pub fn id(&self) -> RegistrationId {
        self.shared.id
    }

    /// The registration's name ([`HandlerOptions::name`](crate::HandlerOptions), or
    /// `handler-<id>`).
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// True once the informer has synced **and** this handler has handled every initial-list
    /// notification it was given (false again if it is removed or disconnected; never true
    /// if shutdown abandoned it before it had handled them).
    pub fn has_synced(&self) -> bool {
        self.shared.has_synced()
    }

    /// Waits until [`has_synced`](Self::has_synced); returns `false` instead when it can no
    /// longer happen (the informer stopped first, or the registration was removed or
    /// disconnected).
    pub async fn wait_for_sync(&self) -> bool {
        let mut phase = self.shared.phase.clone();
        let mut state = self.shared.state.subscribe();
        loop {
            let p = *phase.borrow_and_update();
            let s = *state.borrow_and_update();
            match s.status {
                RegistrationStatus::Removed | RegistrationStatus::Disconnected => return false,
                RegistrationStatus::Active | RegistrationStatus::Stopped => {}
            }
            if p.synced && s.initial_pending == 0 {
                return true;
            }
            if p.stopped {
                // Shutdown has drained (or abandoned) every handler: nothing changes now.
                return false;
            }
            tokio::select! {
                changed = phase.changed() => {
                    if changed.is_err() {
                        return self.has_synced();
                    }
                }
                // The sender lives in `self.shared`: this never fails while we wait.
                _ = state.changed() => {}
            }
        }
    }

    /// Waits until the handler has stopped for good: its delivery loop has exited (after
    /// [`remove_handler`](crate::SharedIndexInformer::remove_handler), a disconnection, or the
    /// informer's shutdown), so its code will not be called again; for a stream, until it was
    /// removed or dropped. Returns at once for a handler removed before the informer started.
    ///
    /// `remove_handler` returns at once, while the handler may still be inside a call; await
    /// this after it before tearing down what the handler uses (client-go's
    /// `ShutDownEventHandler`). A handler stuck in a call never stops: bound the wait with a
    /// timeout.
    pub async fn wait_for_stop(&self) {
        self.shared.finished.cancelled().await;
    }

    /// Notifications queued for this handler and not yet handled: its lag.
    pub fn pending(&self) -> usize {
        self.shared.pending.load(Ordering::Acquire)
    }

    /// The registration's status.
    pub fn status(&self) -> RegistrationStatus {
        self.shared.status()
    }

    /// Whether the registration still receives notifications.
    pub fn is_active(&self) -> bool {
        self.status() == RegistrationStatus::Active
    }

    /// Its counters.
    pub fn stats(&self) -> RegistrationStats {
        let state = *self.shared.state.borrow();
        RegistrationStats {
            status: state.status,
            pending: self.pending(),
            max_pending: self.shared.max_pending.load(Ordering::Relaxed),
            delivered: self.shared.delivered.load(Ordering::Acquire),
            panics: self.shared.panics.load(Ordering::Relaxed),
            initial_pending: state.initial_pending,
            resync_period: Duration::from_nanos(
                self.shared.resync_period_nanos.load(Ordering::Relaxed),
            ),
        }
    }

    /// A name for sync reports: `informer/handler`.
    pub(crate) fn qualified_name(&self) -> String {
        format!("{}/{}", self.shared.informer, self.shared.name)
    }
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("id", &self.shared.id)
            .field("name", &self.shared.name)
            .field("informer", &self.shared.informer)
            .field("status", &self.status())
            .field("pending", &self.pending())
            .finish()
    }
}
