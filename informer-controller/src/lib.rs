//! A controller runtime on informer-rs: the reconcile loop, its workers, its triggers and its
//! shutdown, so that a controller is its informers and one reconcile function.
//!
//! ```text
//!  primary informer ──── add / update / delete ────┐
//!  owns::<O>() ───────── owner references ─────────┼─► keys ─► RateLimitingQueue ─► N workers ─► reconcile(Arc<K>, Context)
//!  watches::<O>(mapper)  mapper(&O) → keys ────────┘  (deduplicated; a key is never      │       Ok(Action) → forget (+ requeue after)
//!                                                       held by two workers)           └──── Err(e) → error policy → retry / give up
//! ```
//!
//! # Quick start
//!
//! Deployments and their pods (here `JsonObject`s on the in-process fake API server; with a
//! cluster, the same informers come from `informer-kube`'s `KubeInformerFactory`): every
//! Deployment gets a ConfigMap holding how many pods it owns.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
//! use std::sync::Arc;
//! use std::time::Duration;
//! use fake_apiserver::FakeApiServer;
//! use informer::{
//!     FactoryConfig, InformerFactory, InformerSpec, ListerWatcher, OwnerRef, ProviderError,
//!     controller_uid_index_func, indexers,
//! };
//! use informer_controller::{Action, Context, Controller, ControllerConfig};
//! use informer_testing::JsonObject;
//! use serde_json::json;
//! use tokio_util::sync::CancellationToken;
//!
//! let server = FakeApiServer::new();
//! let provider = {
//!     let server = server.clone();
//!     move |spec: &InformerSpec| -> Result<Arc<dyn ListerWatcher<JsonObject>>, ProviderError> {
//!         let lw = server.lister_watcher(&spec.resource, spec.namespace.as_deref());
//!         Ok(Arc::new(lw.map_err(|status| status.to_string())?))
//!     }
//! };
//! let factory = InformerFactory::new(provider, FactoryConfig::default());
//! let deployments = factory.informer::<JsonObject>(InformerSpec::new("deployments")).unwrap();
//! let pods = factory
//!     .informer_with::<JsonObject>(InformerSpec::new("pods"), |c| {
//!         c.indexers = indexers([("owner", controller_uid_index_func())]);
//!     })
//!     .unwrap();
//!
//! // What reconcile needs: the pods' lister (to count) and the server (to write).
//! struct Data { pods: informer::Lister<JsonObject>, server: FakeApiServer }
//!
//! async fn reconcile(deployment: Arc<JsonObject>, ctx: Context<Data>) -> Result<Action, informer::Error> {
//!     let name = format!("{}-summary", ctx.key().name());
//!     if ctx.deleted() {
//!         // The last known Deployment: clean up without a finalizer.
//!         let _ = ctx.server.delete("configmaps", ctx.key().namespace(), &name);
//!         return Ok(Action::Done);
//!     }
//!     let uid = deployment.metadata.uid.as_deref().unwrap_or_default();
//!     let count = ctx.pods.by_index("owner", uid).map_or(0, |pods| pods.len());
//!     let summary = json!({
//!         "metadata": {"namespace": ctx.key().namespace(), "name": name},
//!         "data": {"pods": count.to_string()},
//!     });
//!     if ctx.server.update("configmaps", &summary).is_err() {
//!         let created = ctx.server.create("configmaps", &summary);
//!         created.map_err(|status| informer::Error::api(format!("creating {name}"), status))?;
//!     }
//!     Ok(Action::RequeueAfter(Duration::from_secs(300)))
//! }
//!
//! let controller = Controller::new(deployments, ControllerConfig { name: "summary".into(), workers: 2, ..Default::default() })
//!     .owns(pods.clone())
//!     .manage_factory(factory);
//! let handle = controller.handle();
//! let data = Data { pods: pods.lister(), server: server.clone() };
//! let stop = CancellationToken::new();
//! let run = tokio::spawn(controller.run(reconcile, data, stop.clone()));
//!
//! let web = server.create("deployments", &JsonObject::new(Some("prod"), "web")).unwrap();
//! let owner = OwnerRef::new("apps/v1", "Deployment", "web", web.uid()).with_controller(true);
//! server.create("pods", &JsonObject::new(Some("prod"), "web-0").with_owner(owner)).unwrap();
//! server.create("pods", &JsonObject::new(Some("prod"), "web-1").with_owner(owner)).unwrap();
//!
//! // Wait (in virtual time) until a reconcile has counted both pods.
//! let mut stats = handle.subscribe();
//! let counted = || server.get("configmaps", Some("prod"), "web-summary")
//!     .is_ok_and(|cm| cm.to_value()["data"]["pods"] == "2");
//! while !counted() {
//!     stats.changed().await.unwrap();
//! }
//!
//! stop.cancel();
//! let report = run.await.unwrap().unwrap();
//! assert!(report.abandoned.is_empty());
//! assert!(report.informers.unwrap().failures.is_empty());
//! # }
//! ```
//!
//! Two complete controllers against a cluster (typed k8s-openapi objects, `kube::Api` writes)
//! are `informer-kube`'s examples: `configmap-mirror` (a ConfigMap copied into labelled
//! namespaces; 120 lines of controller code) and `replica-summary` (the controller above with
//! ready-pod counts, tested through the fake API server's socket-free `kube::Client`).
//!
//! # The parts
//!
//! - [`Controller`]: built from the primary informer ([`Controller::new`]) and a
//!   [`ControllerConfig`]; [`owns`](Controller::owns) and [`watches`](Controller::watches)
//!   add triggers; [`reconcile_updates_if`](Controller::reconcile_updates_if) filters the
//!   primary object's updates (for example [`generation_changed`]: spec changes only, not
//!   the controller's own status writes); [`manage_factory`](Controller::manage_factory) hands it the factory to
//!   start and stop; [`run`](Controller::run) (or
//!   [`run_with_error_policy`](Controller::run_with_error_policy)) runs it until a
//!   cancellation token fires and returns a [`ControllerReport`].
//! - The reconcile function: `async fn(Arc<K>, Context<C>) -> Result<Action, E>` where `C`
//!   is your data (a client, listers...), reached through the [`Context`], which also says
//!   which key this is, whether the object was deleted ([`Context::deleted`],
//!   [`ObjectState`]) and how often it failed ([`Context::retries`]). It answers
//!   [`Action::Done`] or [`Action::RequeueAfter`].
//! - The error policy: `Fn(&Arc<K>, &ReconcileError<E>, &Context<C>) -> OnError`; the
//!   default retries with the rate limiter's backoff up to [`ControllerConfig::max_retries`].
//! - [`ControllerHandle`]: counts ([`ControllerStats`]), keys in flight, manual triggers.
//! - [`ControllerMetrics`] (feature `metrics`).
//!
//! # Rules
//!
//! **Keys.** The queue holds object keys (`namespace/name`, the informer's default key
//! function), deduplicated: a key queued ten times before a worker takes it is reconciled
//! once. The primary informer's adds, updates and deletes queue the object's key; with
//! [`reconcile_updates_if`](Controller::reconcile_updates_if), an update whose
//! resourceVersion changed only if the filter passes it (resyncs, adds and deletes always).
//!
//! **Owners** ([`owns`](Controller::owns)). `informer_core::Object` has
//! [`object_owners`](informer::Object::object_owners) (implemented for every kube resource
//! and for `JsonObject`; provided, answering none, for other types). An event about an
//! owned object queues every cached primary object its owner references name: same name,
//! in the object's namespace or cluster-scoped, same UID. A reference to an owner of
//! another kind cannot match by accident (UIDs are unique), so no kind is needed, and an
//! owner deleted and re-created under the same name does not hear about its predecessor's
//! children. An owner not (yet) in the cache is not queued: its own add event will be.
//!
//! **Related objects** ([`watches`](Controller::watches)). A mapper from the object to the
//! keys to reconcile, run on the old and the new state of an update, and on deletions.
//!
//! **Deletes reach reconcile.** The queue holds keys, so the controller keeps the last
//! known state of every deleted primary object (the delete event's object, or a tombstone's
//! last known state) until the reconcile of its deletion succeeds or is given up, at most
//! [`ControllerConfig::max_deleted_objects`] of them (beyond, the oldest is dropped and
//! counted). A worker taking a key reconciles, in this order: a recorded deletion of an
//! object the cache no longer holds, or holds under another UID (deleted and re-created:
//! the deletion is reconciled first, then the key again for the new object), with
//! [`ObjectState::Deleted`]; else the cached object ([`ObjectState::Live`]); else, if
//! [`reconcile_missing_as`](Controller::reconcile_missing_as) was given, a stand-in built
//! from the key ([`ObjectState::Missing`]); else nothing (the key is skipped and counted).
//! So a reconcile can clean up after a deletion without a finalizer (kube-runtime needs one:
//! it only reconciles objects in its store). A deletion the controller did not see (it was
//! not running) is not reconciled: use finalizers when cleanup must never be missed
//! (`informer_kube::finalizer` keeps one in step for a reconcile over kube-client).
//!
//! **Never two workers on one key.** A key handed to a worker is *processing* until the
//! worker is done with it; an event meanwhile marks it dirty and it is queued again after
//! (`informer_workqueue`'s rule 1). Different keys run in parallel, up to
//! [`ControllerConfig::workers`].
//!
//! **Outcomes.** Success forgets the key's failure history; [`Action::RequeueAfter`] also
//! queues it after the delay. A failure ([`ReconcileError`]: the function's error, a caught
//! panic, or [`ControllerConfig::reconcile_timeout`]) goes to the error policy:
//! [`OnError::Retry`] re-adds the key after the rate limiter's delay (per-key exponential
//! backoff, client-go's default limiter) unless it has now failed more than
//! [`ControllerConfig::max_retries`] times in a row, then it is given up: forgotten until
//! its next event or a resync, logged at `ERROR`, counted as terminal.
//! [`OnError::RetryAfter`] re-adds it after a fixed delay; [`OnError::GiveUp`] gives up at
//! once.
//!
//! **Start.** `run` registers the controller's handlers (nothing is registered before, so a
//! controller never run leaves its informers untouched), starts the managed factory, and
//! waits until every informer it reads has synced and every handler it registered has
//! handled its initial list (at most [`ControllerConfig::sync_timeout`]): the first
//! reconcile sees complete caches, and every object of the initial lists is queued.
//!
//! **Shutdown, in this order**, when the token fires: workers take no more keys (a key
//! handed out at that moment is put back unreconciled); reconciles in flight get
//! [`ControllerConfig::shutdown_timeout`] to finish, then the ones still running are dropped
//! and their keys reported ([`ControllerReport::abandoned`]); the queue shuts down (keys
//! still queued are counted in [`ControllerReport::queued`]); the controller's handlers are
//! removed from the informers; last, the managed factory shuts down (its informers drain
//! their handlers) and its report joins the controller's.
//!
//! **Who owns the factory.** By default the caller: the controller neither starts nor stops
//! informers, so one factory can feed several controllers and other readers; start it
//! (before or after `run` begins: `run` waits for the sync) and shut it down after `run`
//! returns. With [`manage_factory`](Controller::manage_factory) the controller owns it,
//! starting it in `run` and shutting it down last.
//!
//! # Recipe: an index from pods to their Deployment
//!
//! Pods are owned by ReplicaSets, which are owned by Deployments; a pod's owner reference
//! names its ReplicaSet, not its Deployment. Two ways to find a Deployment's pods:
//!
//! - **Exact, with a ReplicaSet informer**: index ReplicaSets and pods by their controller's
//!   UID ([`controller_uid_index_func`](informer::controller_uid_index_func)); a
//!   Deployment's pods are the pods filed under the UIDs of the ReplicaSets filed under the
//!   Deployment's UID. Use `owns(replicasets)` and `watches(pods, ...)` mapping a pod to its
//!   ReplicaSet's owner through the ReplicaSet lister.
//! - **One hop, pods only**: the Deployment controller names a ReplicaSet
//!   `<deployment>-<pod-template-hash>` and labels its pods `pod-template-hash=<hash>`, so a
//!   pod whose controller is a ReplicaSet named `<x>-<hash>`, with that label, belongs to
//!   Deployment `<x>`. The index function depends on the pod alone (index functions must: a
//!   value computed from another cache would go stale when that cache changes), and the
//!   mapper of `watches(pods, ...)` is the same function.
//!
//! ```
//! use informer::{Object, ObjectKey, index_fn, indexers};
//! use k8s_openapi::api::core::v1::Pod;
//!
//! /// The key of the Deployment a pod belongs to, from its controller reference and its
//! /// `pod-template-hash` label (the Deployment controller's naming).
//! fn deployment_of(pod: &Pod) -> Option<ObjectKey> {
//!     let owner = pod.object_controller().filter(|o| o.kind == "ReplicaSet" && o.group() == "apps")?;
//!     let hash = pod.object_labels().get("pod-template-hash")?;
//!     let deployment = owner.name.strip_suffix(hash.as_str())?.strip_suffix('-')?;
//!     ObjectKey::new(pod.object_namespace(), deployment).ok()
//! }
//!
//! // The pod informer's index ("pods of Deployment <namespace/name>") and the controller's
//! // mapper are the same function:
//! let pod_indexers = indexers([("deployment", index_fn(|pod: &Pod| deployment_of(pod).map(|k| k.to_string())))]);
//! # let _ = pod_indexers;
//! // controller.watches(pods, |pod: &Pod| deployment_of(pod))
//! ```
//!
//! The replica-summary example of `informer-kube` uses the one-hop recipe; this crate's
//! `recipes` tests check both against each other.
//!
//! # Tracing
//!
//! A span `reconcile` (level `INFO`; fields `controller`, `object` (the key), `worker`,
//! `retries`, `deleted`) around every reconcile, so that what the reconcile logs says which
//! object it was about. Events, target `informer_controller::…`:
//!
//! | level | message | fields |
//! |---|---|---|
//! | INFO | `caches synced; starting workers`, `shutting down: ...`, `controller stopped` | `controller`, `workers`, `queued`, `in_flight`, `stats`, `abandoned` |
//! | DEBUG | `reconciled` (in the span) | `action`, `took` |
//! | WARN | `reconcile failed; retrying after ...` (in the span) | `error` (with its causes), `failures`, `delay` |
//! | ERROR | `reconcile failed; giving up until the next event` (in the span) | `error`, `failures`, `decision` |
//! | WARN | `reconciles still running at the shutdown bound: abandoned` | `bound`, `abandoned` |
//! | WARN | `too many deleted objects ...: the oldest one's last known state is dropped` | `evicted` |
//! | DEBUG | `no object to reconcile (never seen, or forgotten); skipped` | `object` |
//!
//! The work queue logs its own events (`informer_workqueue`).
//!
//! # Metrics
//!
//! With the `metrics` feature, [`ControllerMetrics::register`] adds controller-runtime's
//! families to a `prometheus_client` registry; give it to [`ControllerConfig::metrics`].
//! Every series is labelled `controller` (the name); series start at zero when the
//! controller is built, as controller-runtime's do. The work queue's `workqueue_*` series
//! (labelled `name`, the controller's name) come from [`ControllerConfig::workqueue_metrics`],
//! and the informers' from `informer`'s `InformerMetrics`.
//!
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `controller_runtime_reconcile_total` | counter | `controller`, `result` | reconciles finished, by result: `success`, `requeue_after` (success asking for a requeue), `error` (error, panic or timeout) |
//! | `controller_runtime_reconcile_errors_total` | counter | `controller` | failed reconciles |
//! | `controller_runtime_terminal_reconcile_errors_total` | counter | `controller` | failed keys given up (the retry cap or [`OnError::GiveUp`]) |
//! | `controller_runtime_reconcile_panics_total` | counter | `controller` | reconciles that panicked |
//! | `controller_runtime_reconcile_timeouts_total` | counter | `controller` | reconciles that hit [`ControllerConfig::reconcile_timeout`] |
//! | `controller_runtime_reconcile_time_seconds` | histogram | `controller` | reconcile durations, controller-runtime's buckets (5 ms to 60 s) |
//! | `controller_runtime_max_concurrent_reconciles` | gauge | `controller` | workers while running (0 before and after) |
//! | `controller_runtime_active_workers` | gauge | `controller` | workers reconciling now |
//!
//! Differences from controller-runtime: no `requeue` result (an [`Action`] has no
//! rate-limited requeue without an error: return an error instead); the terminal counter
//! also counts keys given up at the retry cap (controller-runtime has no cap). Durations use
//! tokio's clock (virtual in paused tests).
//!
//! # Compared with kube-runtime and controller-runtime
//!
//! [From kube-runtime](https://github.com/informer-rs/informer-rs/blob/main/docs/from-kube-runtime.md)
//! (`docs/from-kube-runtime.md` in the repository) maps kube-runtime's `Controller`,
//! `watcher`, `reflector::Store`, `Action` and `error_policy`, and controller-runtime's
//! builder (`For`, `Owns`, `Watches`, `Reconcile`, `Result{RequeueAfter}`), onto this crate
//! and `informer-kube`, with short code beside each and what differs. In short: the triggers and the reconcile signature are kube-runtime's; the work
//! queue, workers, retry accounting, metrics and the caches shared through a factory are
//! controller-runtime's; deletes reaching reconcile with the last known object, the retry
//! cap and the bounded, reported shutdown are ours.
//!
//! # Features
//!
//! - `metrics` (off by default): records the series above through `prometheus-client`, and
//!   turns on `informer-workqueue`'s `metrics`. When off, no metric code is compiled and
//!   [`ControllerMetrics`] cannot be constructed; [`ControllerConfig`] keeps its `metrics`
//!   fields (always `None`), so turning the feature on never breaks a build.

mod action;
mod config;
mod context;
mod controller;
mod deleted;
mod error;
mod filter;
mod handle;
mod metrics;
mod sources;
mod state;
mod stats;
mod worker;

pub use action::{Action, OnError, ReconcileError};
pub use config::{ControllerConfig, DEFAULT_MAX_RETRIES};
pub use context::{Context, ObjectState};
pub use controller::Controller;
pub use error::ControllerError;
pub use filter::generation_changed;
pub use handle::ControllerHandle;
pub use metrics::ControllerMetrics;
pub use stats::{ControllerReport, ControllerStats};
