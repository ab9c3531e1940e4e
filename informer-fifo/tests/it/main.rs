//! The integration tests of `informer-fifo`, in one test binary (`cargo test -p informer-fifo
//! --test it`): every integration-test binary links the dependencies (tokio,
//! `informer-testing`) again, so the crate has one, with a module per suite.
//! Test names carry their module path: `delta_fifo::...`,
//! `client_go::the_real_fifo::real_fifo_basic`; filter on it, e.g. `cargo test -p
//! informer-fifo --test it -- client_go::`.
//!
//! `client_go` holds client-go's own queue tests, ported (its upstream-shaped helpers are in
//! `client_go/mod.rs`); the other modules are this crate's own rules and the conformance suite.
//! `support` holds the fixtures they share (the queues built the same way, objects, known
//! stores, a pop read as labels).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod support;

mod client_go;
mod conformance;
mod delta_fifo;
mod in_order;
mod listed;
mod suite_catches_faults;
