//! The replica-summary controller, on `informer_controller::Controller`: every Deployment gets
//! a ConfigMap `<deployment>-replicas` in its namespace saying how many of its pods exist and
//! how many are ready; when the Deployment is deleted, its summary goes too (reconcile sees the
//! deletion with the Deployment's last known state: no finalizer needed).
//!
//! - Primary: Deployments (keys `namespace/name`).
//! - Pods, indexed by their Deployment with `informer-controller`'s documented one-hop recipe
//!   ([`deployment_of`]: a pod's controller is a ReplicaSet named `<deployment>-<hash>`, and
//!   the pod carries `pod-template-hash=<hash>`); the same function maps a pod event to the
//!   Deployment to reconcile (`watches`).
//! - Summaries: the ConfigMaps labelled [`MANAGED_BY_LABEL`]`=`[`MANAGER`], each with an owner
//!   reference to its Deployment, so `owns` reconciles the Deployment when its summary is
//!   edited or deleted by someone else (and a cluster's garbage collector would remove it
//!   with the Deployment).
//!
//! Reconcile reads the listers, never the API: the pods under the Deployment's key in the pod
//! index, the summary from the summaries' cache. It writes through `Api<ConfigMap>`: a create,
//! or a replace at the cached resourceVersion (a stale cache gets 409, retried), or, for a
//! deleted Deployment, a delete with UID and resourceVersion preconditions. Failures are
//! retried by the `Controller` with per-key backoff, up to its retry cap.
//!
//! `main.rs` is the program around it; informer-kube's tests include this file
//! (`tests/it/replica_summary.rs` drives it through the socket-free `kube::Client` over the
//! in-process fake API server, in virtual time).

use std::sync::Arc;

use informer::{Lister, Object, ObjectKey, index_fn, indexers};
use informer_controller::{Action, Context, Controller, ControllerConfig};
use informer_kube::{KubeError, KubeInformerFactory};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube_client::api::{Api, DeleteParams, PostParams, Preconditions};
use kube_client::{Client, Error};

/// The label every summary carries, with the value [`MANAGER`].
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// The value of [`MANAGED_BY_LABEL`] on summaries.
pub const MANAGER: &str = "informer-rs-replica-summary";
/// The controller's name: its metrics' `controller` label and its queue's `name`.
pub const NAME: &str = "replica-summary";
/// The pod informer's index: pods by the key (`namespace/name`) of their Deployment.
pub const BY_DEPLOYMENT: &str = "deployment";

/// The key of the Deployment `pod` belongs to: its controller is a ReplicaSet (`apps`) named
/// `<deployment>-<hash>` and it carries the label `pod-template-hash=<hash>`, as the
/// Deployment controller names and labels them. It depends on the pod alone, as an index
/// function must.
pub fn deployment_of(pod: &Pod) -> Option<ObjectKey> {
    let owner = pod
        .object_controller()
        .filter(|o| o.kind == "ReplicaSet" && o.group() == "apps")?;
    let hash = pod.object_labels().get("pod-template-hash")?;
    let deployment = owner.name.strip_suffix(hash.as_str())?.strip_suffix('-')?;
    ObjectKey::new(pod.object_namespace(), deployment).ok()
}

/// Whether `pod` has the condition `Ready=True`.
pub fn is_ready(pod: &Pod) -> bool {
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// The name of the summary of Deployment `deployment`.
pub fn summary_name(deployment: &str) -> String {
    format!("{deployment}-replicas")
}

/// What the reconcile reads: the client, the pods' lister (with the [`BY_DEPLOYMENT`] index)
/// and the summaries' lister.
pub struct Summaries {
    /// Writes go through it.
    pub client: Client,
    /// Every pod, indexed by Deployment.
    pub pods: Lister<Pod>,
    /// The summaries this controller made.
    pub summaries: Lister<ConfigMap>,
}

/// The controller (with `settings`: workers, retries, time limits, metrics), owning `factory`
/// (whose client it writes with), and what its reconcile reads: run it with
/// `controller.run(reconcile, summaries, stop)`.
pub fn controller(
    factory: &KubeInformerFactory,
    settings: ControllerConfig,
) -> Result<(Controller<Deployment>, Summaries), Box<KubeError>> {
    let deployments = factory.informer::<Deployment>()?;
    let by_deployment = index_fn(|pod: &Pod| deployment_of(pod).map(|key| key.to_string()));
    let pods = factory
        .informer_with::<Pod>(|c| c.indexers = indexers([(BY_DEPLOYMENT, by_deployment)]))?;
    let managed = factory.label_selector(format!("{MANAGED_BY_LABEL}={MANAGER}"));
    let summaries = managed.informer::<ConfigMap>()?;
    let data = Summaries {
        client: factory.client().clone(),
        pods: pods.lister(),
        summaries: summaries.lister(),
    };
    let controller = Controller::new(deployments, settings)
        .watches(pods, deployment_of)
        .owns(summaries)
        .manage_factory(factory.clone());
    Ok((controller, data))
}

/// Makes one Deployment's summary right: counts its pods in the index, then writes.
pub async fn reconcile(
    deployment: Arc<Deployment>,
    ctx: Context<Summaries>,
) -> Result<Action, Error> {
    let key = ctx.key();
    let (ns, name) = (
        key.namespace().unwrap_or_default(),
        summary_name(key.name()),
    );
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), ns);
    let current = ctx.summaries.get(Some(ns), &name);
    if ctx.deleted() {
        let Some(current) = current else {
            return Ok(Action::Done);
        };
        let only_if = Preconditions {
            uid: current.metadata.uid.clone(),
            resource_version: current.metadata.resource_version.clone(),
        };
        match api
            .delete(&name, &DeleteParams::default().preconditions(only_if))
            .await
        {
            Err(Error::Api(status)) if status.code == 404 => {}
            deleted => drop(deleted?),
        }
        tracing::info!(summary = %name, "summary of a deleted Deployment deleted");
        return Ok(Action::Done);
    }
    // The index holds exactly this Deployment's pods (an unknown index cannot happen: the
    // informer was built with it; answer none rather than fail if it ever did).
    let pods = ctx
        .pods
        .by_index(BY_DEPLOYMENT, key.as_str())
        .unwrap_or_default();
    let ready = pods.iter().filter(|pod| is_ready(pod)).count();
    let mut wanted = summary(&deployment, &name, pods.len(), ready);
    match current {
        Some(current) if current.data == wanted.data => return Ok(Action::Done),
        Some(current) => {
            wanted.metadata.resource_version = current.metadata.resource_version.clone();
            api.replace(&name, &PostParams::default(), &wanted).await?;
        }
        None => drop(api.create(&PostParams::default(), &wanted).await?),
    }
    tracing::info!(summary = %name, pods = pods.len(), ready, "summary written");
    Ok(Action::Done)
}

/// The summary of `deployment`: its pods and ready pods, labelled as ours, owned by it.
pub fn summary(deployment: &Deployment, name: &str, pods: usize, ready: usize) -> ConfigMap {
    let owner = OwnerReference {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        name: deployment.metadata.name.clone().unwrap_or_default(),
        uid: deployment.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        ..OwnerReference::default()
    };
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: deployment.metadata.namespace.clone(),
            labels: Some([(MANAGED_BY_LABEL.to_owned(), MANAGER.to_owned())].into()),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        data: Some(
            [
                ("pods".to_owned(), pods.to_string()),
                ("ready".to_owned(), ready.to_string()),
            ]
            .into(),
        ),
        ..ConfigMap::default()
    }
}
