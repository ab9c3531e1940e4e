//! Kubernetes informers for Rust: reflector, shared index informer, handlers, factory, listers.

pub mod reflector;
