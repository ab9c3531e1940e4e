//! The integration tests of `informer-core`, in one test binary (`cargo test -p informer-core
//! --test it`), with a module per suite, as every crate of the workspace has: each
//! integration-test binary links the dependencies again. Test names carry their module path
//! (`selector_proptest::...`).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod selector_proptest;
