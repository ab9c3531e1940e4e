//! informer-kube's integration tests, in one test binary: every integration-test binary links
//! kube-client, hyper, rustls, tokio and the fake API server again, so one binary with one
//! module per area keeps CI's build time down. Shared fixtures live in [`support`] (the HTTP
//! fake API server with a kube client, models of what handlers heard, waits with hang guards;
//! `support::controller` for the sample controller, `support::hostile` for the misbehaving
//! server); `chaos_support` is the `informer` crate's chaos engine, included by path.
//!
//! All the tests share one process: none may install a global tracing subscriber, replace a
//! panic hook without chaining to the previous one, set environment variables or rely on the
//! working directory; metrics registries are per test.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "../../../informer/tests/it/chaos_support/mod.rs"]
mod chaos_support;
mod support;

mod controller_metrics;
mod controller_mirror;
mod demo;
mod e2e;
mod hostile;
mod http_chaos;
mod leader_election;
mod leader_processes;
mod relist;
mod resource_ext;
mod resources;
mod shard;
mod shard_manager;
mod shard_processes;
