//! Test tools for informer-rs, small enough for any backend crate's dev-dependencies:
//!
//! - [`conformance`]: the `Indexer` and `Queue` conformance suites (and model-based property
//!   tests) every backend of the workspace runs, and yours can with one call;
//! - [`convergence`]: the chaos test's checker: a cache and every handler's notifications
//!   against the server's truth (identity, versions, deletions exactly once, content);
//! - [`JsonObject`]: a schemaless Kubernetes object for tests;
//! - [`metrics`] (feature `metrics`): a prometheus-client registry scraped into series and
//!   values for assertions.
//!
//! The fake Kubernetes API server is its own crate, `fake-apiserver`; nothing here depends on
//! it (nor on a runtime beyond tokio's sync and time, nor on an HTTP stack).
//!
//! # Features
//!
//! - `metrics`: [`metrics`].

pub mod conformance;
pub mod convergence;
#[cfg(feature = "metrics")]
pub mod metrics;
mod object;

pub use object::{JsonMeta, JsonObject};

/// What [`delegate_object!`] names; not part of the API.
#[doc(hidden)]
pub use informer_core as __core;
