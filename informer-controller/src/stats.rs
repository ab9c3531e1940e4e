//! What a controller did: [`ControllerStats`] while it runs, [`ControllerReport`] when it
//! returns.

use informer::{FactoryShutdownReport, InformerStats, ObjectKey};

/// Counts since the controller was built. Read them with
/// [`ControllerHandle::stats`](crate::ControllerHandle::stats), or wait for them to change
/// with [`ControllerHandle::subscribe`](crate::ControllerHandle::subscribe): they change
/// when a reconcile starts and when it ends, and when an update is filtered out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ControllerStats {
    /// Reconciles started (those in flight are `started - reconciles`).
    pub started: u64,
    /// Reconciles finished, whatever their outcome.
    pub reconciles: u64,
    /// Reconciles that succeeded.
    pub successes: u64,
    /// Successful reconciles that asked to be requeued after a delay.
    pub requeues_after: u64,
    /// Reconciles that failed (an error, a panic or a timeout).
    pub failures: u64,
    /// Failed reconciles that panicked.
    pub panics: u64,
    /// Failed reconciles that hit the reconcile timeout.
    pub timeouts: u64,
    /// Failed keys queued again (rate-limited or after the policy's delay).
    pub retries: u64,
    /// Failed keys given up (the retry cap, or [`OnError::GiveUp`](crate::OnError::GiveUp)).
    pub given_up: u64,
    /// Reconciles of deleted objects (their last known state, or a stand-in).
    pub deletions: u64,
    /// Keys taken from the queue that had no object to reconcile (no stand-in configured).
    pub skipped: u64,
    /// Updates of primary objects not reconciled because the filter of
    /// [`Controller::reconcile_updates_if`](crate::Controller::reconcile_updates_if) turned
    /// them away.
    pub filtered: u64,
    /// Deleted objects whose last known state was dropped at the
    /// [`max_deleted_objects`](crate::ControllerConfig::max_deleted_objects) bound.
    pub deleted_evicted: u64,
}

/// What [`Controller::run`](crate::Controller::run) found when it returned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ControllerReport {
    /// The final counts.
    pub stats: ControllerStats,
    /// Keys whose reconcile was still running at the shutdown bound: abandoned (their
    /// futures dropped). Empty after a clean shutdown.
    pub abandoned: Vec<ObjectKey>,
    /// Keys that were queued (ready for a worker) when the workers stopped: they were not
    /// reconciled.
    pub queued: usize,
    /// Worker tasks that ended with a panic outside a reconcile (a bug of this crate; a
    /// reconcile's own panic is caught and counted in [`ControllerStats::panics`]).
    pub worker_panics: usize,
    /// Each informer the controller read, by name, with its statistics at the end (lists,
    /// relists, watch restarts, cache size...).
    pub informer_stats: Vec<(String, InformerStats)>,
    /// The factory's shutdown, when the controller managed one
    /// ([`Controller::manage_factory`](crate::Controller::manage_factory)).
    pub informers: Option<FactoryShutdownReport>,
}
