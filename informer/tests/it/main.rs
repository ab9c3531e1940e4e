//! The integration tests of `informer`, in one test binary (`cargo test -p informer --test it`):
//! every integration-test binary links the heavy dependencies (the fake API server, tokio,
//! proptest, criterion's tree) again, so the crate has one, with a module per suite. Test
//! names carry their module path: `chaos::chaos_convergence`,
//! `client_go::reflector::reflector_resync`, `informer_handlers::...`; filter on it, e.g.
//! `cargo test -p informer --test it -- client_go::`.
//!
//! The support modules are declared here, once, and used by path (`crate::informer_support`):
//! - `support`: the fixtures every suite shares (durations, the hang guard, the namespace
//!   and resource of the scenarios, ...);
//! - `informer_support`: a recording handler and a rig over the in-process fake API server;
//! - `reflector_support`: a scripted `ListerWatcher` and a recording queue;
//! - `chaos_support`: the chaos scenario engine, also included by path by `informer-kube`'s
//!   HTTP chaos test (so it uses nothing else of this crate).
//!
//! All the tests share one process, and libtest runs them side by side:
//! - none installs a global tracing subscriber: `metrics_tracing` captures with a scoped one,
//!   through `support::set_scoped_subscriber` (which says why); the chaos test's `CHAOS_LOG`
//!   output uses `try_init`, for runs of that test alone;
//! - none sets environment variables or uses a global metrics registry;
//! - the chaos test's panic hook silences only its own deliberate panics and passes every
//!   other to the hook before it;
//! - the tests that bound real elapsed time do not run while the chaos test takes every CPU
//!   (`support::every_cpu`).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod chaos_support;
mod informer_support;
mod reflector_support;
mod support;

mod chaos;
mod client_go;
mod client_go_listers;
mod informer_factory;
mod informer_gaps;
mod informer_handlers;
mod informer_resync;
mod informer_shard;
mod informer_store;
mod metrics_scrape;
mod metrics_tracing;
mod reflector_list_limits;
mod reflector_scenarios;
mod reflector_scripted;
