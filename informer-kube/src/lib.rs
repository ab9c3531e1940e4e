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
//! - [`sample`]: example code, the library side of the `configmap-mirror` example: a complete
//!   controller (informers, handlers, rate-limited work queue, workers, clean shutdown).
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
//! The same code runs against `informer-testing`'s fake API server over HTTP (a real socket
//! and a real kube-client):
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use informer_kube::{KubeInformerFactory, client_for_informers};
//! use informer_testing::fake::FakeApiServer;
//! use informer_testing::fake::seed::{SeedConfig, seed};
//! use informer_testing::http::{FakeHttpServer, HttpConfig};
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
//! # Features
//!
//! - `rustls-tls` (default): kube-client's rustls TLS stack with the ring provider, needed
//!   for HTTPS API servers, that is every real cluster. Without it (or another TLS feature
//!   of kube-client enabled by the application) only plain-HTTP servers can be reached.
//!
//! The crate never chooses a Kubernetes version for k8s-openapi: the final binary does, as
//! with kube itself.

// Errors here carry the server's `Status` inline (`informer_core::Error`, the
// `ListerWatcher` contract's error type, and kube-client's error inside `KubeError`): they are
// built only on failure paths, where their size costs nothing that matters.
#![allow(clippy::result_large_err)]

mod buffer;
mod decode;
mod error;
mod exact;
mod factory;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
mod limits;
mod list_stream;
mod lister_watcher;
#[cfg(test)]
mod proptests;
pub mod sample;
mod transform;

pub use buffer::DecoderMemory;
pub use error::{KubeError, Result, map_kube_error};
pub(crate) use factory::discover;
pub use factory::{
    KubeInformerFactory, KubeProvider, StaticResource, client_for_informers, resource_name,
};
pub use limits::ClientLimits;
pub use lister_watcher::KubeListerWatcher;
pub use transform::drop_managed_fields;
