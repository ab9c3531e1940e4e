//! informer-kube's integration tests, in one test binary: every integration-test binary links
//! kube-client, hyper, rustls, tokio and the fake API server again, so one binary with one
//! module per area keeps CI's build time down. Shared fixtures live in [`support`] (the HTTP
//! fake API server with a kube client, models of what handlers heard, waits with hang guards;
//! `support::controller` for the configmap-mirror example, `support::hostile` for the
//! misbehaving server); `chaos_support` is the `informer` crate's chaos engine, included by
//! path, and the examples' controllers (`examples/*/controller.rs`) are included by path too,
//! so that their tests are tests of the example's own code.
//!
//! All the tests share one process: none may install a global tracing subscriber, replace a
//! panic hook without chaining to the previous one, set environment variables or rely on the
//! working directory; metrics registries are per test.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "../../../informer/tests/it/chaos_support/mod.rs"]
mod chaos_support;
#[allow(
    dead_code,
    reason = "the example's items are not all used by its tests"
)]
#[path = "../../examples/configmap-mirror/controller.rs"]
mod configmap_mirror;
#[allow(
    dead_code,
    reason = "the example's items are not all used by its tests"
)]
#[path = "../../examples/replica-summary/controller.rs"]
mod replica_summary_controller;
mod support;

mod controller_metrics;
mod controller_mirror;
mod controller_mirror_decide;
mod demo;
mod e2e;
mod events;
mod finalizer;
mod hostile;
mod http_chaos;
mod kube_config;
mod leader_election;
mod leader_processes;
mod relist;
mod replica_summary;
mod resource_ext;
mod resources;
mod shard;
mod shard_manager;
mod shard_processes;
