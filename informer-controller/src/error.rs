//! [`ControllerError`]: why a controller could not run.

use informer::{CacheSyncError, InformerError};

/// Why [`Controller::run`](crate::Controller::run) could not run the controller. Failed
/// reconciles are not errors of the controller: they are retried, counted and logged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControllerError {
    /// A setting is unusable.
    #[error("controller {controller:?}: invalid configuration: {reason}")]
    Config {
        /// The controller's name.
        controller: String,
        /// What is wrong.
        reason: String,
    },
    /// An informer refused the controller's handler (it had stopped).
    #[error("controller {controller:?}: adding its handler to informer {informer:?}")]
    Handler {
        /// The controller's name.
        controller: String,
        /// The informer's name.
        informer: String,
        /// Why.
        #[source]
        source: InformerError,
    },
    /// The informers or the controller's handlers did not sync within
    /// [`ControllerConfig::sync_timeout`](crate::ControllerConfig::sync_timeout) (or one
    /// stopped first). Everything the controller started was stopped before it returned.
    #[error("controller {controller:?}: waiting for the caches to sync")]
    Sync {
        /// The controller's name.
        controller: String,
        /// Which sources did not sync.
        #[source]
        source: CacheSyncError,
    },
}
