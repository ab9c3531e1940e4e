//! The stable heart of informer-rs: plain data types, errors, traits and pure decision logic for
//! Kubernetes informers. No IO, no async runtime.
//!
//! Every other crate of the workspace, and every user backend, builds on these definitions:
//!
//! - [`Object`]: what we need to know about a Kubernetes object (its metadata, owners included:
//!   [`OwnerRef`]), implemented for all `kube_core::Resource` types with the `kube` feature;
//! - [`ObjectKey`] and [`key_of`]: `namespace/name` cache keys;
//! - [`Delta`], [`DeltaType`], [`Tombstone`], [`ObjectOrTombstone`]: what queues carry;
//! - [`WatchEvent`], [`ListPage`], [`ListOptions`], [`WatchOptions`]: what the server speaks;
//! - [`RawObject`], [`Listed`], [`ItemPeek`]: objects as received, for stores that keep them
//!   encoded, and list items the store already holds (no decode, no re-encode);
//! - [`Status`], [`Error`], [`ErrorClass`]: failures, classified the way retry decisions need;
//! - the traits [`ListerWatcher`], [`Queue`], [`Store`], [`Indexer`], [`ResourceEventHandler`];
//! - index functions without casts: [`index_fn`], [`indexers`], and the owner indices
//!   [`owner_uid_index_func`] and [`controller_uid_index_func`];
//! - [`selector`]: label and field selector parsing and matching;
//! - [`leader_election`]: leader election on a Lease as a pure state machine (client-go's
//!   rules; the IO is `informer-kube`'s `LeaderElector`);
//! - [`shard`]: shard selectors (server-side sharded list and watch): parse, render, FNV-1a,
//!   matching, even splits of the hash space, and the client-side filter of a sharded
//!   list and watch;
//! - [`membership`]: which replicas of a sharded controller are live, from the Leases they
//!   renew, and which slice each takes, as a pure view (the IO is `informer-kube`'s
//!   `ShardManager`).
//!
//! # Why this crate is small and dependency-free
//!
//! Backends (stores, queues, API clients) and the runtime depend on this crate, and users
//! implement its traits. Changing it breaks all of them, so it holds only definitions that are
//! settled, and it must stay free of IO: no tokio, hyper, reqwest or axum appears in its normal
//! dependency tree (`cargo xtask ci` checks this). Decisions that need a clock take `now` as an
//! argument.
//!
//! # Features
//!
//! - `kube` (off by default): implements [`Object`] for every `kube_core::Resource`. It adds
//!   `kube-core` and `k8s-openapi` to the tree (both IO-free); it does not choose a Kubernetes
//!   version for k8s-openapi, which stays the final binary's choice.

mod delta;
mod error;
mod handler;
mod indexing;
mod key;
pub mod leader_election;
mod lister_watcher;
pub mod membership;
mod object;
mod options;
mod queue;
mod raw;
pub mod reflector;
pub mod selector;
pub mod shard;
mod store;
mod watch;

pub use delta::{Delta, DeltaType, ObjectOrTombstone, ObjectSummary, Tombstone};
pub use error::{
    CAUSE_RESOURCE_VERSION_TOO_LARGE, EXCERPT_LIMIT, Error, ErrorChain, ErrorClass, Limit, Result,
    Status, StatusCause, StatusDetails, cut_at_char_boundary,
};
pub use handler::{Notification, ResourceEventHandler, UidChange};
pub use indexing::{controller_uid_index_func, index_fn, indexers, owner_uid_index_func};
pub use key::{KeyError, KeyFunc, ObjectKey, key_of};
pub use lister_watcher::{
    ListPageInfo, ListSink, ListerWatcher, RawWatchEvent, RawWatchStream, WatchStream,
};
pub use object::{Object, OwnerRef, map_or_empty, non_empty};
pub use options::{ListOptions, ResourceVersionMatch, WatchOptions};
pub use queue::{ProcessError, ProcessFn, Queue, QueueError, decode_listed};
pub use raw::{ItemPeek, Listed, PackedText, RawObject};
pub use store::{
    IndexFunc, Indexer, Indexers, KnownObjects, NAMESPACE_INDEX, Store, StoreError,
    label_index_func, labels_index_func, namespace_index_func, namespace_indexers,
};
pub use watch::{Bookmark, INITIAL_EVENTS_END_ANNOTATION, ListPage, WatchEvent};
