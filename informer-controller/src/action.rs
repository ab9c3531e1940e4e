//! What a reconcile answers ([`Action`]), how a failure is reported ([`ReconcileError`]) and
//! what the error policy decides ([`OnError`]).

use std::time::Duration;

/// What to do with a key after a successful reconcile. Either way its failure history is
/// forgotten (the rate limiter starts again from its base delay).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Action {
    /// Nothing until the next event about the object (or a resync). kube-runtime's
    /// `Action::await_change()`; controller-runtime's empty `Result{}`.
    Done,
    /// Reconcile the key again after this delay (on tokio's clock), whatever happens
    /// meanwhile; an event before it reconciles the key earlier, and the delay still stands
    /// (the earlier of two delays wins). kube-runtime's `Action::requeue(d)`;
    /// controller-runtime's `Result{RequeueAfter: d}`.
    RequeueAfter(Duration),
}

/// What the error policy decides after a failed reconcile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OnError {
    /// Retry after the rate limiter's delay for the key (per-key exponential backoff by
    /// default), counting one more failure; once the key has failed more than
    /// [`ControllerConfig::max_retries`](crate::ControllerConfig::max_retries) times in a
    /// row, it is given up instead. The default policy.
    Retry,
    /// Retry after exactly this delay. Does not count towards the retry cap (the rate
    /// limiter is not asked).
    RetryAfter(Duration),
    /// Do not retry: forget the key's failures and drop it until its next event (or a
    /// resync). controller-runtime's `TerminalError`. Counted in
    /// `controller_runtime_terminal_reconcile_errors_total`.
    GiveUp,
}

/// Why a reconcile failed: its own error, a panic, or the time limit.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReconcileError<E> {
    /// The reconcile function returned this error.
    #[error(transparent)]
    Reconcile(E),
    /// The reconcile function panicked (caught; the worker goes on).
    #[error("reconcile panicked: {message}")]
    Panicked {
        /// The panic's message, when it was a string.
        message: String,
    },
    /// The reconcile did not finish within
    /// [`ControllerConfig::reconcile_timeout`](crate::ControllerConfig::reconcile_timeout);
    /// its future was dropped.
    #[error("reconcile did not finish within {after:?}")]
    TimedOut {
        /// The limit.
        after: Duration,
    },
}

impl<E> ReconcileError<E> {
    /// The reconcile function's own error, if that is what failed.
    pub fn reconcile_error(&self) -> Option<&E> {
        match self {
            Self::Reconcile(error) => Some(error),
            Self::Panicked { .. } | Self::TimedOut { .. } => None,
        }
    }
}
