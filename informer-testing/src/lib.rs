//! Test tools for informer-rs: a fake Kubernetes API server with real list/watch semantics,
//! conformance suites for `Indexer` and `Queue` backends, and a schemaless object type.
//!
//! # Features
//!
//! - `http` (default): the HTTP front end of the fake API server ([`http`]: Kubernetes REST +
//!   JSON, discovery, OpenAPI, the `/_fake/` admin API) and the `fake-apiserver` binary. Off,
//!   only the in-process front end remains, without axum, hyper or clap.
//! - `metrics`: [`metrics`], a prometheus-client registry scraped into series and values for
//!   assertions.

pub mod conformance;
pub mod convergence;
pub mod fake;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "metrics")]
pub mod metrics;
mod object;

pub use object::{JsonMeta, JsonObject};
