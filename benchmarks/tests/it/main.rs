//! The integration tests of `informer-benchmarks`, in one test binary (`cargo test -p
//! informer-benchmarks --test it`), with a module per suite, as every crate of the workspace
//! has: each integration-test binary links the dependencies (informer, kube, the fake API
//! server) again. Test names carry their module path (`harness::...`).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod harness;
