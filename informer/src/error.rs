//! Errors of the informer runtime: starting, registering, indexing, waiting for sync, and the
//! factory.

use std::time::Duration;

use informer_core::StoreError;

/// Why an informer operation was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InformerError {
    /// [`run`](crate::SharedIndexInformer::run) was called on an informer that is running or
    /// has run: an informer runs once.
    #[error("informer {name:?} has already been started; an informer runs only once")]
    AlreadyStarted {
        /// The informer's name.
        name: String,
    },
    /// The informer has stopped: it accepts no new handlers or indexers.
    #[error("informer {name:?} has stopped; {doing} was refused")]
    Stopped {
        /// The informer's name.
        name: String,
        /// What was refused (for example `adding handler "audit"`).
        doing: String,
    },
    /// [`InformerConfig::indexer`](crate::InformerConfig::indexer) hands the informer a
    /// cache and [`InformerConfig::store`](crate::InformerConfig::store) asks it to build
    /// another: set one of them.
    #[error(
        "informer {name:?}: both `indexer` (a cache built by the caller) and `store` ({store}) \
         are set; set one"
    )]
    StoreConflict {
        /// The informer's name.
        name: String,
        /// The store asked for.
        store: String,
    },
    /// The indexer refused new indices (a name already taken, or a backend failure).
    #[error("informer {name:?}: adding indexers failed")]
    Indexers {
        /// The informer's name.
        name: String,
        /// The indexer's error.
        #[source]
        source: StoreError,
    },
}

/// Some caches did not sync in time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("caches not synced after {timeout:?}: {}", not_synced.join(", "))]
#[non_exhaustive]
pub struct CacheSyncError {
    /// How long was waited.
    pub timeout: Duration,
    /// The names of the informers or registrations that had not synced (or had stopped or
    /// been disconnected before syncing).
    pub not_synced: Vec<String>,
}

/// Why the factory could not hand out an informer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FactoryError {
    /// The provider could not build a `ListerWatcher` for the spec.
    #[error("cannot build a lister-watcher for {spec}")]
    Provider {
        /// The spec, as text.
        spec: String,
        /// The provider's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The informer could not be built (its configuration was refused).
    #[error("cannot build the informer for {spec}")]
    Informer {
        /// The spec, as text.
        spec: String,
        /// Why.
        #[source]
        source: InformerError,
    },
    /// [`InformerFactory::informer_with`](crate::InformerFactory::informer_with) was asked
    /// to configure an informer the factory already holds: the configuration cannot apply.
    #[error(
        "the informer for {spec} already exists, so its configuration cannot change: call \
         informer_with before anything (informer, lister, another informer_with) asks for it"
    )]
    AlreadyCreated {
        /// The spec, as text.
        spec: String,
    },
    /// The factory has been shut down.
    #[error("the informer factory has been shut down; cannot create an informer for {spec}")]
    ShutDown {
        /// The spec, as text.
        spec: String,
    },
}
