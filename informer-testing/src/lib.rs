//! Test tools for informer-rs: a fake Kubernetes API server with real list/watch semantics,
//! conformance suites for `Indexer` and `Queue` backends, and a schemaless object type.

pub mod conformance;
pub mod fake;
mod object;

pub use object::{JsonMeta, JsonObject};
