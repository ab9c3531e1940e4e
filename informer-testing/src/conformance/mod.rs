//! Conformance suites: run them against any `Indexer` or `Queue` backend with one call.

pub mod indexer;
pub mod queue;
