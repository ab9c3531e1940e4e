//! The integration tests of `informer-workqueue`, in one test binary (`cargo test -p
//! informer-workqueue --test it`): every integration-test binary links the dependencies
//! (tokio, `informer-testing`) again, so the crate has one, with a module per suite.
//! Test names carry their module path: `queue::...`, `client_go::queue::basic_shut_down`;
//! filter on it, e.g. `cargo test -p informer-workqueue --test it -- client_go::`.
//!
//! `client_go` holds client-go's own `util/workqueue` tests, ported (and the real-time timer
//! tests, `client_go::real_time`); the other modules are this crate's own rules. `support`
//! holds the fixtures they share.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod support;

mod client_go;
mod delaying;
mod metrics;
mod queue;
mod rate_limiters;
mod rate_limiting_queue;
