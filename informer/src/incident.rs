//! What can go wrong with one handler registration, reported without stopping anything:
//! [`Incident`], [`IncidentKind`], and the [`IncidentHook`] that hears of them. A leaf module:
//! the configuration, the listeners and the metrics all name these.

use std::sync::Arc;

use crate::registration::RegistrationId;

/// Called with every [`Incident`]: a handler panicked, overflowed its buffer, or was still busy
/// when shutdown's bound ran out. Incidents are logged with `tracing` either way.
pub type IncidentHook = Arc<dyn Fn(&Incident) + Send + Sync>;

/// Something went wrong with one handler registration; the informer and the other handlers
/// are unaffected.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Incident {
    /// The informer's name.
    pub informer: String,
    /// The registration.
    pub registration: RegistrationId,
    /// The registration's name.
    pub handler: String,
    /// What happened.
    pub kind: IncidentKind,
}

/// What happened to a handler.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IncidentKind {
    /// The handler panicked while handling a notification. The panic was caught; the handler
    /// keeps receiving later notifications.
    Panicked {
        /// The panic message, when it was a string.
        message: String,
        /// The notification being handled, as `Add(ns/name@rv, ...)`.
        notification: String,
    },
    /// The handler's buffer hit its bound; the registration was disconnected.
    Overflowed {
        /// The bound.
        limit: usize,
        /// Notifications dropped with the buffer.
        dropped: usize,
    },
    /// The handler was still busy when shutdown's bound ran out; it was abandoned with
    /// notifications undelivered.
    StuckAtShutdown {
        /// Notifications not delivered.
        pending: usize,
    },
}
