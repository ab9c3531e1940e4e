//! The benchmark harness of informer-rs: informer-rs, kube-runtime 5 and a no-cache floor,
//! measured side by side against the same HTTP fake API server, and BENCHMARKS.md written from
//! the results. Run it with `cargo xtask bench` (or `cargo xtask bench --quick`).
//!
//! Two binaries:
//!
//! - `informer-bench`, the orchestrator ([`suite`]): starts the `fake-apiserver` binary of
//!   `fake-apiserver` as its own process, seeds it through the `/_fake/` admin API, then for
//!   each size and each contender runs fresh contender processes one after another, drives them
//!   through the phases ([`protocol`]), reads their memory and CPU time from `/proc`
//!   ([`procfs`]), writes stamped pod updates ([`writer`]) and renders the report ([`report`]).
//! - `bench-contender`, one contender per process ([`contender`]), chosen by `--contender`.
//! - `shard-bench` ([`sharding`], `cargo xtask bench --sharding`): sharded informers with
//!   server-side and client-side filtering against one unsharded informer, each replica a
//!   `shard-bench replica` process.
//!
//! Linux only (`/proc`, `kill -STOP`). Not part of the published crates.
//!
//! Every contender allocates with the system allocator (glibc malloc), unless the feature
//! `mimalloc` is on (`cargo xtask bench --allocator mimalloc`): then this crate's programs (the
//! orchestrator, every contender, the sharding replicas) use mimalloc, the same for all
//! contenders, and the report says so ([`machine::allocator`]); the `fake-apiserver` binary
//! keeps the system allocator. The allocator is the application's choice, not the library's;
//! the feature measures how much of a figure is the allocator's.

/// The `mimalloc` feature's global allocator, for every program linking this library.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod contender;
pub mod error;
pub mod machine;
pub mod process;
pub mod procfs;
pub mod protocol;
pub mod report;
pub mod server;
pub mod sharding;
pub mod stats;
pub mod suite;
pub mod writer;

pub use error::HarnessError;
