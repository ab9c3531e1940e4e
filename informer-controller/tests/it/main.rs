//! informer-controller's integration tests, in one test binary: controllers over informers of
//! the in-process fake API server (`JsonObject`s, or k8s-openapi types in `recipes`), in
//! virtual time unless a test says it runs on the real clock. Shared fixtures live in
//! [`support`].
//!
//! All the tests share one process: none may install a global tracing subscriber or rely on
//! the working directory; metrics registries are per test.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod support;

mod concurrency;
mod deletes;
mod errors;
mod filters;
#[cfg(feature = "metrics")]
mod metrics;
mod recipes;
mod shutdown;
mod timers;
mod triggers;
