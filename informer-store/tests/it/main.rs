//! The integration tests of `informer-store`, in one test binary (`cargo test -p
//! informer-store --test it`): every integration-test binary links the dependencies (the fake
//! API server's seed generator, k8s-openapi, proptest, zstd) again, so the crate has one, with
//! a module per suite. Test names carry their module path: `conformance::...`,
//! `client_go::index::get_index_func_values`; filter on it, e.g. `cargo test -p informer-store
//! --test it -- client_go::`. The `compact` modules need the feature `compact`.
//!
//! `client_go` holds client-go's own cache tests, ported (its helpers are in
//! `client_go/mod.rs`). `pods` is the realistic-pod generator the benches share, included by
//! path once for the compact suites; `support` holds what the other suites share.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod support;

#[cfg(feature = "compact")]
#[path = "../../benches/support/pods.rs"]
mod pods;

mod client_go;
mod compact;
mod compact_conformance;
mod compact_equivalence;
mod conformance;
