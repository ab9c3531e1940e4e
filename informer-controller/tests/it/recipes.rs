//! The crate docs' recipe for an index from pods to their Deployment, with k8s-openapi's
//! types on the in-process fake server: the one-hop index (pods only, from the
//! `pod-template-hash` naming) finds exactly what the exact two-hop lookup (ReplicaSets and
//! pods indexed by their controller's UID) finds.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use fake_apiserver::FakeApiServer;
use informer::{
    InformerConfig, Object, ObjectKey, SharedIndexInformer, controller_uid_index_func, index_fn,
    indexers, wait_for_cache_sync,
};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The crate docs' recipe, as written there.
fn deployment_of(pod: &Pod) -> Option<ObjectKey> {
    let owner = pod
        .object_controller()
        .filter(|o| o.kind == "ReplicaSet" && o.group() == "apps")?;
    let hash = pod.object_labels().get("pod-template-hash")?;
    let deployment = owner.name.strip_suffix(hash.as_str())?.strip_suffix('-')?;
    ObjectKey::new(pod.object_namespace(), deployment).ok()
}

fn informer<K: Object + DeserializeOwned>(
    server: &FakeApiServer,
    resource: &str,
    config: InformerConfig<K>,
) -> SharedIndexInformer<K> {
    let lister_watcher = Arc::new(server.lister_watcher::<K>(resource, None).unwrap());
    SharedIndexInformer::new(lister_watcher, config).unwrap()
}

/// Creates `kind` `name` in `prod` controlled by `owner` (kind, name, uid), with labels;
/// returns its UID.
fn create(
    server: &FakeApiServer,
    resource: &str,
    name: &str,
    owner: Option<(&str, &str, &str)>,
    labels: serde_json::Value,
) -> String {
    let owners: Vec<serde_json::Value> = owner
        .into_iter()
        .map(|(kind, name, uid)| {
            json!({"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": uid, "controller": true})
        })
        .collect();
    let object = json!({
        "metadata": {"namespace": "prod", "name": name, "labels": labels, "ownerReferences": owners},
    });
    server.create(resource, &object).unwrap().uid().to_owned()
}

#[tokio::test(start_paused = true)]
async fn the_one_hop_pod_index_agrees_with_the_two_hop_lookup() {
    let server = FakeApiServer::new();
    let hash = |h: &str| json!({ "pod-template-hash": h });
    let web = create(&server, "deployments", "web", None, json!({}));
    let api = create(&server, "deployments", "api", None, json!({}));
    // web has a current and an old ReplicaSet, each with pods; api one.
    let web_new = create(
        &server,
        "replicasets",
        "web-5d4f",
        Some(("Deployment", "web", &web)),
        hash("5d4f"),
    );
    let web_old = create(
        &server,
        "replicasets",
        "web-6c7d",
        Some(("Deployment", "web", &web)),
        hash("6c7d"),
    );
    let api_rs = create(
        &server,
        "replicasets",
        "api-9f8e",
        Some(("Deployment", "api", &api)),
        hash("9f8e"),
    );
    create(
        &server,
        "pods",
        "web-5d4f-a",
        Some(("ReplicaSet", "web-5d4f", &web_new)),
        hash("5d4f"),
    );
    create(
        &server,
        "pods",
        "web-5d4f-b",
        Some(("ReplicaSet", "web-5d4f", &web_new)),
        hash("5d4f"),
    );
    create(
        &server,
        "pods",
        "web-6c7d-x",
        Some(("ReplicaSet", "web-6c7d", &web_old)),
        hash("6c7d"),
    );
    create(
        &server,
        "pods",
        "api-9f8e-y",
        Some(("ReplicaSet", "api-9f8e", &api_rs)),
        hash("9f8e"),
    );
    // Pods of no Deployment: a hand-made ReplicaSet's (no hash label), and a bare pod.
    let batch = create(&server, "replicasets", "batch", None, json!({}));
    create(
        &server,
        "pods",
        "batch-1",
        Some(("ReplicaSet", "batch", &batch)),
        json!({}),
    );
    create(&server, "pods", "bare", None, json!({}));

    let deployments = informer::<Deployment>(&server, "deployments", InformerConfig::default());
    let replicasets = informer::<ReplicaSet>(
        &server,
        "replicasets",
        InformerConfig {
            indexers: indexers([("controller", controller_uid_index_func())]),
            ..InformerConfig::default()
        },
    );
    let pods = informer::<Pod>(
        &server,
        "pods",
        InformerConfig {
            indexers: indexers([
                ("controller", controller_uid_index_func()),
                (
                    "deployment",
                    index_fn(|pod: &Pod| deployment_of(pod).map(|k| k.to_string())),
                ),
            ]),
            ..InformerConfig::default()
        },
    );
    let stop = CancellationToken::new();
    let runs = [
        tokio::spawn({
            let i = deployments.clone();
            let s = stop.clone();
            async move { i.run(s).await.map(drop) }
        }),
        tokio::spawn({
            let i = replicasets.clone();
            let s = stop.clone();
            async move { i.run(s).await.map(drop) }
        }),
        tokio::spawn({
            let i = pods.clone();
            let s = stop.clone();
            async move { i.run(s).await.map(drop) }
        }),
    ];
    wait_for_cache_sync(
        Duration::from_secs(10),
        &[&deployments, &replicasets, &pods],
    )
    .await
    .unwrap();

    let names = |found: Vec<Arc<Pod>>| -> BTreeSet<String> {
        found
            .iter()
            .filter_map(|p| p.metadata.name.clone())
            .collect()
    };
    for deployment in deployments.lister().list_all() {
        let key = informer::key_of(deployment.as_ref()).unwrap();
        let uid = deployment.metadata.uid.as_deref().unwrap();
        let mut exact = BTreeSet::new();
        for rs in replicasets.lister().by_index("controller", uid).unwrap() {
            let rs_uid = rs.metadata.uid.as_deref().unwrap();
            exact.extend(names(pods.lister().by_index("controller", rs_uid).unwrap()));
        }
        let one_hop = names(pods.lister().by_index("deployment", key.as_str()).unwrap());
        assert_eq!(one_hop, exact, "{key}");
    }
    let of = |d: &str| names(pods.lister().by_index("deployment", d).unwrap());
    assert_eq!(
        of("prod/web"),
        ["web-5d4f-a", "web-5d4f-b", "web-6c7d-x"]
            .map(String::from)
            .into()
    );
    assert_eq!(of("prod/api"), ["api-9f8e-y"].map(String::from).into());
    // The pods of no Deployment are filed under none.
    let filed: usize = pods
        .lister()
        .list_index_func_values("deployment")
        .unwrap()
        .iter()
        .map(|v| pods.lister().by_index("deployment", v).unwrap().len())
        .sum();
    assert_eq!(filed, 4);
    stop.cancel();
    for run in runs {
        run.await.unwrap().unwrap();
    }
}
