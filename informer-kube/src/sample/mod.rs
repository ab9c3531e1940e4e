//! **Example code**: a small but complete controller built from this workspace's parts, the
//! library side of the `configmap-mirror` example (`cargo run -p informer-kube --example
//! configmap-mirror -- --help`). It lives in the library so that tests (and readers) can run
//! it in process; it is not a stable API.
//!
//! [`ConfigMapMirror`] keeps a copy of one source ConfigMap (by default `default/mirror-source`)
//! in every namespace whose labels match a selector (by default `informer-rs/mirror=true`),
//! under one name (by default `mirror`):
//!
//! - a matching namespace without the mirror gets one; a mirror whose data differs from the
//!   source's is replaced; when the source changes, every mirror follows;
//! - a namespace that stops matching (or is being deleted) loses its mirror; with no source,
//!   no namespace has one;
//! - only ConfigMaps this controller made are ever replaced or deleted: they carry the label
//!   [`MANAGED_BY_LABEL`]`=`[`MANAGER`] and the annotation [`SOURCE_ANNOTATION`]. A foreign
//!   ConfigMap already using the mirror's name is left alone (the create fails with 409, is
//!   retried, and is eventually given up with an error in the log).
//!
//! # How it is built
//!
//! The classic shape of a Kubernetes controller:
//!
//! ```text
//!  namespaces informer ──┐ handlers enqueue            ┌─► worker 1 ─┐  read listers only,
//!  source informer ──────┼─► namespace names ─► queue ─┼─► worker 2 ─┼─► write with Api<ConfigMap>
//!  mirrors informer ─────┘  (deduplicated)             └─► worker N ─┘  (create / replace / delete)
//! ```
//!
//! - Three informers of two resource types from one [`KubeInformerFactory`](crate::KubeInformerFactory): all namespaces,
//!   the source (its namespace, field selector `metadata.name=<source>`), and the mirrors
//!   (all namespaces, label selector `app.kubernetes.io/managed-by=<manager>`).
//! - Event handlers only enqueue keys, here namespace names: a namespace event enqueues that
//!   namespace, a mirror event the mirror's namespace, a source event every namespace.
//! - A [`RateLimitingQueue`](informer_workqueue::RateLimitingQueue) deduplicates the keys; N workers take them, reconcile one
//!   namespace from the listers (never reading from the API), and write through
//!   kube-client's `Api<ConfigMap>` (creates; replaces carrying the cached
//!   resourceVersion, so a stale cache gets 409 and a retry; deletes with UID and
//!   resourceVersion preconditions). Failures are retried with
//!   [`add_rate_limited`](informer_workqueue::RateLimitingQueue::add_rate_limited) (at most
//!   [`MirrorConfig::max_retries`] times in a row); success [`forget`s](informer_workqueue::RateLimitingQueue::forget)
//!   the key's backoff.
//! - Clean shutdown when the cancellation token fires: the informers stop (their handlers
//!   drain), the queue shuts down with drain (workers finish what they hold and what is
//!   queued, retries are no longer accepted), the workers end, and a [`MirrorReport`] says what
//!   was done.
//!
//! # Observability
//!
//! `tracing`: a `reconcile` span (field `namespace`) around each reconcile, `INFO` events for
//! each write (`mirror created`, `mirror updated`, `mirror deleted`), `WARN` for a failed one
//! (with the retry count), `ERROR` when a key is given up. Metrics (with the `metrics`
//! features of `informer` and `informer-workqueue`): give [`MirrorConfig::informer_metrics`]
//! and [`MirrorConfig::workqueue_metrics`]; the queue is named `configmap-mirror`.
//!
//! # Example
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use informer_kube::sample::{ConfigMapMirror, MirrorConfig};
//! use tokio_util::sync::CancellationToken;
//!
//! let client = kube_client::Client::try_default().await?;
//! let controller = ConfigMapMirror::new(client, MirrorConfig { workers: 4, ..MirrorConfig::default() })?;
//! let stop = CancellationToken::new();
//! let run = tokio::spawn(controller.run(stop.clone()));
//! tokio::signal::ctrl_c().await?;
//! stop.cancel();
//! let report = run.await??;
//! println!("{report:?}");
//! # Ok(()) }
//! ```

mod configmap_mirror;
mod reconcile;

pub use configmap_mirror::{
    ConfigMapMirror, MANAGED_BY_LABEL, MANAGER, MirrorConfig, MirrorError, MirrorReport,
    MirrorStats, QUEUE_NAME, SOURCE_ANNOTATION, divergences,
};
