//! Kubernetes informers over kube-client: a [`ListerWatcher`](informer_core::ListerWatcher)
//! for any kube resource type, and a [`KubeInformerFactory`] that goes from a kube
//! [`Client`](kube_client::Client) to started, synced, shared informers in a few lines.
//!
//! - [`KubeListerWatcher`]: lists and watches one resource through a `Client`: k8s-openapi
//!   types, kube-derive custom resources, [`DynamicObject`](kube_client::core::DynamicObject)s
//!   (with an `ApiResource` you have, or one found by discovery) and metadata-only
//!   `PartialObjectMeta<K>`. Every list and watch option reaches the server, and every
//!   failure maps to the core classification the reflector decides with (see its docs).
//! - [`KubeInformerFactory`]: one shared informer per (type, resource, namespace, selectors)
//!   built on [`informer::InformerFactory`], with namespaced and selector-scoped views,
//!   dynamic and discovered informers, and listers.
//! - [`client_for_informers`]: a `Client` whose own retries are off, so that the reflector sees
//!   429s and 504s first-hand. [`drop_managed_fields`]: a transform that makes cached objects
//!   smaller.
//! - [`leader_election::LeaderElector`]: leader election on a Lease with client-go's
//!   rules, for controllers that must run as a singleton: callbacks when leadership starts and
//!   ends, a [`Leadership`](leader_election::Leadership) handle the guarded work checks, and
//!   release on stop.
//! - [`shard_manager::ShardManager`]: the replicas of a sharded controller hold a Lease each,
//!   see the live set from the group's Leases, and take an even split of the hash space by
//!   rank, driving the shard selectors of their informers (see `examples/sharded-controller.rs`).
//!
//! - [`events::EventRecorder`]: Kubernetes Events (`events.k8s.io/v1`) about the objects a
//!   controller handles, with repeats folded into a series as client-go folds them.
//! - [`finalizer()`]: runs a reconcile's apply or cleanup step with the object's finalizer kept
//!   in step (added before the first apply, removed after a successful cleanup), so that a
//!   cleanup is never missed, even for a deletion made while no controller ran.
//!
//! Controllers are built with the `informer-controller` crate on these informers (its
//! `Controller` takes the informers this factory hands out, and the factory itself to start
//! and stop); the examples `configmap-mirror` and `replica-summary` are two, tested in
//! process.
//!
//! # Against a cluster
//!
//! Configuration comes from kube-client as usual: `KUBECONFIG` or `~/.kube/config` (current
//! context), else the in-cluster service account.
//!
//! ```no_run
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use std::time::Duration;
//! use informer::{NAMESPACE_INDEX, handler};
//! use informer_kube::{KubeInformerFactory, drop_managed_fields};
//! use k8s_openapi::api::core::v1::Pod;
//!
//! let factory = KubeInformerFactory::try_default().await?;
//! let pods = factory.informer_with::<Pod>(|config| config.transform = Some(drop_managed_fields()))?;
//! pods.add_handler(handler().on_add(|pod: &Arc<Pod>, _initial| {
//!     println!("pod {:?}", pod.metadata.name);
//! }))?;
//! factory.start();
//! factory.wait_for_cache_sync(Duration::from_secs(60)).await?;
//! let in_default = pods.lister().by_index(NAMESPACE_INDEX, "default")?;
//! println!("{} pods in default", in_default.len());
//! factory.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! # Against the fake API server
//!
//! The same code runs against the `fake-apiserver` crate's fake API server over HTTP (a real socket
//! and a real kube-client):
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use informer_kube::{KubeInformerFactory, client_for_informers};
//! use fake_apiserver::FakeApiServer;
//! use fake_apiserver::seed::{SeedConfig, seed};
//! use fake_apiserver::http::{FakeHttpServer, HttpConfig};
//! use k8s_openapi::api::core::v1::Pod;
//!
//! let engine = FakeApiServer::new();
//! seed(&engine, &SeedConfig { namespaces: 2, pods: 20, ..SeedConfig::default() }).map_err(|s| s.to_string())?;
//! let server = FakeHttpServer::start(engine.clone(), HttpConfig::default()).await?;
//! let config = kube_client::Config::new(server.url().parse()?);
//!
//! let factory = KubeInformerFactory::new(client_for_informers(config)?);
//! let pods = factory.namespace("ns-1").informer::<Pod>()?;
//! factory.start();
//! factory.wait_for_cache_sync(Duration::from_secs(30)).await?;
//! assert_eq!(pods.lister().list_all().len(), 10);
//! assert!(factory.shutdown().await.failures.is_empty());
//! # Ok(()) }
//! ```
//!
//! # Against broken and hostile servers
//!
//! Every request has a timeout, every buffer a cap, every retry a floor and a cap: a proxy gone
//! wrong, an overloaded API server or a malicious aggregated API can slow an informer down,
//! never hang it, spin it or exhaust its memory. Each limit ends its request with
//! [`Error::LimitExceeded`](informer_core::Error::LimitExceeded) (naming the
//! [`Limit`](informer_core::Limit) and the request), reported to the reflector's watch-error
//! handler and handled like any failure of its class. The informer keeps running and, once the server
//! behaves, ends up equal to it. [`KubeListerWatcher::decoder_memory`] shows what the decoders
//! hold.
//!
//! | setting | where | default | when it is broken | client-go |
//! |---|---|---|---|---|
//! | connect timeout | kube's `Config::connect_timeout` ([`client_for_informers`] sets it when missing) | 30 s | transport error: backoff, then the same request | dialer timeout 30 s, TLS handshake 10 s |
//! | response timeout: request sent → status and headers | [`ClientLimits::response_timeout`] | 70 s (the API server answers a list it cannot finish in its 60 s with a 504) | `ResponseTimeout`, a transport failure: backoff, then the list again, or a new watch without relisting | none; waits for the server's own request timeout, or TCP |
//! | idle timeout: no byte of a list body or an error answer | [`ClientLimits::idle_timeout`] | 60 s | `IdleTimeout`, a transport failure: backoff, then the list again | none; over HTTP/2 a ping after 30 s of silence, the connection dropped 15 s later without an answer |
//! | watch idle timeout: no byte of a watch stream | [`ClientLimits::watch_idle_timeout`] | off (a quiet watch on a server without a watch cache is silent for its whole `timeoutSeconds`) | `IdleTimeout`: backoff, then a new watch from the last resourceVersion | as above |
//! | watch deadline: the watch outlives its `timeoutSeconds` | `timeoutSeconds` + [`ClientLimits::watch_deadline_margin`] | + 30 s (3,600 s + 30 s when no `timeoutSeconds` was sent) | `WatchDeadline`: backoff, then a new watch from the last resourceVersion | none: trusts the server to end the watch |
//! | one watch line, list item or list member | [`ClientLimits::max_frame_bytes`] | 16 MiB | `FrameBytes`, a decode failure: the rest of the stream is dropped unread and the reflector follows its rule for an undecodable event; a list fails and is retried after a backoff | 16 MiB per watch event (`ErrObjectTooLarge`); list bodies unbounded |
//! | an error answer's body | [`ClientLimits::max_error_body_bytes`] | 64 KiB, the rest unread | the `Status` is read from what arrived (a stalled body stops at the idle timeout) | read whole |
//! | memory reserved for a body | none: buffers grow by what arrives | — | a 10 GB `Content-Length` reserves nothing | grows by what arrives |
//! | pages per list | [`ListWatchConfig::list_limits`](informer::reflector::ListWatchConfig::list_limits)`.max_pages` | 10,000 (5 million objects at 500 per page) | `ListPages`: the list's items are dropped; backoff, then list again | no limit |
//! | bytes per list, all pages | [`ListWatchConfig::list_limits`](informer::reflector::ListWatchConfig::list_limits)`.max_bytes` | 4 GiB | `ListBytes`: the same | no limit |
//! | a continue token sent twice in one list | always on | — | `RepeatedContinueToken`: the same | none: pages forever |
//! | `Retry-After` (header, or a `Status`'s `retryAfterSeconds`), lists and watches | [`ListWatchConfig::backoff`](informer::reflector::ListWatchConfig::backoff): `initial`, `max` | clamped into [800 ms, 30 s], never shorter than the backoff's own delay, which keeps growing across repeated 429s | a throttled list is retried, a throttled watch restarted without relisting | the REST client sleeps exactly the header's value (no floor, no cap) for up to 10 retries inside one request, then the reflector backs off (800 ms to 30 s) |
//! | page size of relists | [`ListWatchConfig::page_size`](informer::reflector::ListWatchConfig::page_size) | 500 for the first list (`resourceVersion=0`) and consistent lists; none for a list at a specific resourceVersion, unless the server paged the first list | — | the same |
//!
//! [`KubeInformerFactory::set_client_limits`] sets the [`ClientLimits`] of the informers a
//! factory creates; [`KubeListerWatcher::with_limits`] those of one lister-watcher.
//!
//! # Features
//!
//! - `rustls-tls` (default): kube-client's rustls TLS stack with the ring provider, needed
//!   for HTTPS API servers, that is every real cluster. Without it (or another TLS feature
//!   of kube-client enabled by the application) only plain-HTTP servers can be reached.
//! - `fuzzing`: the module `fuzzing`, entry points into the decoders of untrusted input for
//!   the fuzz targets in the repository's `fuzz/` directory. Not for applications.
//! - `compact` (off by default): informer's `compact` feature, so that
//!   [`KubeInformerFactory::set_store`] can be given `StoreKind::Compact`: informers whose
//!   cache keeps objects encoded. Pulls in the zstd C library.
//!
//! The crate never chooses a Kubernetes version for k8s-openapi: the final binary does, as
//! with kube itself.

// Errors here carry the server's `Status` inline (`informer_core::Error`, the
// `ListerWatcher` contract's error type, and kube-client's error inside `KubeError`): they are
// built only on failure paths, where their size costs nothing that matters.
#![allow(clippy::result_large_err)]

// The README's code blocks are compiled as doctests of this crate, so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

mod buffer;
mod decode;
mod error;
pub mod events;
mod exact;
mod factory;
mod finalizer;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
pub mod leader_election;
mod limits;
mod list_stream;
mod lister_watcher;
#[cfg(test)]
mod proptests;
mod resource;
pub mod shard_manager;
mod transform;

pub use buffer::DecoderMemory;
pub use error::{KubeError, Result, map_kube_error};
pub use factory::{
    KubeInformerFactory, KubeProvider, StaticResource, client_for_informers, kube_config,
};
pub use finalizer::{FinalizerError, FinalizerEvent, finalizer};
pub use limits::ClientLimits;
pub use lister_watcher::KubeListerWatcher;
pub use resource::resource_name;
pub use transform::drop_managed_fields;
