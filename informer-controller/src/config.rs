//! [`ControllerConfig`]: a controller's name, workers, retries, time limits and metrics.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use informer::ObjectKey;
use informer_workqueue::{RateLimiter, WorkQueueMetrics};

use crate::metrics::ControllerMetrics;

/// The default [`ControllerConfig::max_retries`]: 15 failures in a row. With the default rate
/// limiter (5 ms doubling) the last retry comes about 2.7 minutes after the previous one,
/// about 5.5 minutes after the first failure.
pub const DEFAULT_MAX_RETRIES: u32 = 15;

/// The settings of a [`Controller`](crate::Controller). Start from `Default`.
///
/// ```
/// use std::time::Duration;
/// use informer_controller::ControllerConfig;
///
/// let config = ControllerConfig {
///     name: "replica-summary".into(),
///     workers: 2,
///     reconcile_timeout: Some(Duration::from_secs(30)),
///     ..ControllerConfig::default()
/// };
/// assert_eq!(config.max_retries, Some(15));
/// ```
#[derive(Clone)]
pub struct ControllerConfig {
    /// The controller's name: the `controller` field of its tracing spans, the `controller`
    /// label of its metrics, the `name` of its work queue's metrics, and the prefix of its
    /// handlers' names. Default `controller`.
    pub name: String,
    /// How many reconciles may run at once (each on its own worker task); never two of one
    /// key. Default 1 (controller-runtime's `MaxConcurrentReconciles`).
    pub workers: usize,
    /// A key that fails more than this many times in a row under [`OnError::Retry`] is
    /// given up: its failures are forgotten and it waits for its next event (or a resync).
    /// `None`: retry forever (the rate limiter's delay caps at 1,000 s by default). Default
    /// [`DEFAULT_MAX_RETRIES`].
    ///
    /// [`OnError::Retry`]: crate::OnError::Retry
    pub max_retries: Option<u32>,
    /// Decides the delay before each retry of a failed key. `None`: the work queue's
    /// default (client-go's: per-key exponential from 5 ms to 1,000 s, and an overall token
    /// bucket of 10 per second, burst 100).
    pub rate_limiter: Option<Arc<dyn RateLimiter<ObjectKey>>>,
    /// The longest one reconcile may take; then its future is dropped and the reconcile
    /// counts as failed ([`ReconcileError::TimedOut`](crate::ReconcileError::TimedOut)).
    /// `None` (the default): no limit.
    pub reconcile_timeout: Option<Duration>,
    /// How long [`run`](crate::Controller::run) waits for the informers and the
    /// controller's handlers to sync before it gives up with
    /// [`ControllerError::Sync`](crate::ControllerError::Sync). Default 120 s
    /// (controller-runtime's `CacheSyncTimeout`).
    pub sync_timeout: Duration,
    /// How long shutdown waits for reconciles in flight to finish; those still running then
    /// are abandoned (their futures dropped) and reported. Default 30 s.
    pub shutdown_timeout: Duration,
    /// How many deleted objects the controller keeps (their last known state, until the
    /// reconcile of their deletion succeeds). Beyond it the oldest is dropped, reported, and
    /// its key is reconciled as [`ObjectState::Missing`](crate::ObjectState::Missing).
    /// Default 10,000.
    pub max_deleted_objects: usize,
    /// Where to record the `controller_runtime_*` metrics; `None` (the default) records
    /// none. Values exist only with the `metrics` feature.
    pub metrics: Option<ControllerMetrics>,
    /// Where the controller's work queue records the `workqueue_*` metrics (queue name:
    /// [`name`](Self::name)); `None` (the default) records none. Values exist only with the
    /// `metrics` feature of `informer-workqueue` (turned on by this crate's).
    pub workqueue_metrics: Option<WorkQueueMetrics>,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        Self {
            name: "controller".to_owned(),
            workers: 1,
            max_retries: Some(DEFAULT_MAX_RETRIES),
            rate_limiter: None,
            reconcile_timeout: None,
            sync_timeout: Duration::from_secs(120),
            shutdown_timeout: Duration::from_secs(30),
            max_deleted_objects: 10_000,
            metrics: None,
            workqueue_metrics: None,
        }
    }
}

impl fmt::Debug for ControllerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerConfig")
            .field("name", &self.name)
            .field("workers", &self.workers)
            .field("max_retries", &self.max_retries)
            .field("rate_limiter", &self.rate_limiter.is_some())
            .field("reconcile_timeout", &self.reconcile_timeout)
            .field("sync_timeout", &self.sync_timeout)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .field("max_deleted_objects", &self.max_deleted_objects)
            .field("metrics", &self.metrics.is_some())
            .field("workqueue_metrics", &self.workqueue_metrics.is_some())
            .finish()
    }
}
