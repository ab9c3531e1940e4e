//! End to end for the kinds of objects the factory serves: a custom resource registered at run
//! time (watched as a discovered `DynamicObject`, as a typed kube-derive resource and through
//! a field selector on one of its CRD's selectable fields; informers on two versions of one,
//! and on both versions of HorizontalPodAutoscalers),
//! metadata-only informers, and namespace/selector views. Real HTTP through kube-client to
//! the fake API server; event-driven waits with guards, no timing assertions.

use crate::support::{Env, GUARD, State, cache_state, converge, seed_pods, synced, wait_until};
use informer::LabelSelector;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::Api;
use kube_client::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube_client::core::{GroupVersionKind, PartialObjectMeta};
use kube_derive::CustomResource;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A custom resource, typed with kube-derive (schema generation off: the fake server does
/// not validate, and schemars would be one more dependency for nothing here).
#[derive(CustomResource, Clone, Debug, Serialize, Deserialize)]
#[kube(
    group = "example.com",
    version = "v1",
    kind = "Widget",
    namespaced,
    schema = "disabled",
    crates(
        kube_core = "::kube_client::core",
        k8s_openapi = "::k8s_openapi",
        serde = "::serde",
        serde_json = "::serde_json"
    )
)]
pub struct WidgetSpec {
    size: u32,
    color: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crd_registered_at_run_time_is_watched_dynamic_and_typed() {
    let env = Env::start().await;
    // The server refuses creates in namespaces that do not exist, as a real one does.
    for ns in ["a", "b"] {
        env.engine
            .create("namespaces", &fake_apiserver::seed::namespace(ns))
            .unwrap();
    }
    // Register the CRD the way kubectl apply does: POST the definition.
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          // Field selectors on `spec.color` (GA in Kubernetes 1.32).
                          "selectableFields": [{"jsonPath": ".spec.color"}],
                          "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                              "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                                  "properties": {"color": {"type": "string"}}}}}}}]
        }
    }))
    .unwrap();
    Api::<CustomResourceDefinition>::all(env.client.clone())
        .create(&PostParams::default(), &crd)
        .await
        .unwrap();
    for (ns, count) in [("a", 5), ("b", 3)] {
        let api = Api::<Widget>::namespaced(env.client.clone(), ns);
        for i in 0..count {
            let widget = Widget::new(
                &format!("w-{i}"),
                WidgetSpec {
                    size: i,
                    color: "blue".into(),
                },
            );
            api.create(&PostParams::default(), &widget).await.unwrap();
        }
    }

    let factory = env.factory();
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let dynamic = factory.discovered_informer(&gvk).await.unwrap();
    let typed = factory.informer::<Widget>().unwrap();
    let in_a = factory.namespace("a").informer::<Widget>().unwrap();
    let red = factory
        .field_selector("spec.color=red")
        .informer::<Widget>()
        .unwrap();
    factory.start();
    factory.wait_for_cache_sync(GUARD).await.unwrap();
    let server = env.server_state("widgets", None);
    assert_eq!(server.len(), 8);
    assert_eq!(cache_state(&dynamic), server);
    assert_eq!(cache_state(&typed), server);
    assert_eq!(cache_state(&in_a), env.server_state("widgets", Some("a")));
    assert!(cache_state(&red).is_empty(), "no widget is red yet");

    let typed_w = typed.lister().get(Some("a"), "w-3").unwrap();
    assert_eq!(typed_w.spec.size, 3);
    let dynamic_w = dynamic.lister().get(Some("a"), "w-3").unwrap();
    assert_eq!(dynamic_w.data["spec"]["size"], 3);
    assert_eq!(
        dynamic_w.types.as_ref().map(|t| t.kind.as_str()),
        Some("Widget")
    );

    // Changes reach both.
    let api = Api::<Widget>::namespaced(env.client.clone(), "a");
    api.patch(
        "w-1",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"color": "red"}})),
    )
    .await
    .unwrap();
    api.delete("w-2", &DeleteParams::default()).await.unwrap();
    converge(&env, &dynamic, "widgets", None, None).await;
    converge(&env, &typed, "widgets", None, None).await;
    converge(&env, &in_a, "widgets", Some("a"), None).await;
    assert_eq!(
        typed.lister().get(Some("a"), "w-1").unwrap().spec.color,
        "red"
    );
    assert!(typed.lister().get(Some("a"), "w-2").is_none());
    // The field-selected view: the one red widget, and none once it is green again.
    wait_until(
        "the red view to hold w-1",
        None,
        || red.lister().list_all().len() == 1,
        || format!("{:?}", cache_state(&red)),
    )
    .await;
    assert_eq!(
        red.lister().get(Some("a"), "w-1").unwrap().spec.color,
        "red"
    );
    api.patch(
        "w-1",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"color": "green"}})),
    )
    .await
    .unwrap();
    wait_until(
        "the red view to be empty",
        None,
        || red.lister().list_all().is_empty(),
        || format!("{:?}", cache_state(&red)),
    )
    .await;
    let report = factory.shutdown().await;
    assert!(report.failures.is_empty(), "{:?}", report.failures);
}

/// HorizontalPodAutoscalers, which the server stores once and serves in `autoscaling/v2`
/// and `autoscaling/v1`: a typed informer on each (k8s-openapi's two types) holds the same
/// objects at the same resourceVersions, whichever version a write goes through, each object
/// in its informer's version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informers_on_both_autoscaling_versions_share_one_storage() {
    use k8s_openapi::api::autoscaling::{v1 as autoscaling_v1, v2 as autoscaling_v2};
    let env = Env::start().await;
    env.engine
        .create("namespaces", &fake_apiserver::seed::namespace("a"))
        .unwrap();
    let hpa = |name: &str, cpu: i32| -> autoscaling_v1::HorizontalPodAutoscaler {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                        "name": name},
                     "maxReplicas": 5, "targetCPUUtilizationPercentage": cpu},
        }))
        .unwrap()
    };
    let v1 = Api::<autoscaling_v1::HorizontalPodAutoscaler>::namespaced(env.client.clone(), "a");
    let v2 = Api::<autoscaling_v2::HorizontalPodAutoscaler>::namespaced(env.client.clone(), "a");
    for i in 0..3 {
        v1.create(&PostParams::default(), &hpa(&format!("h-{i}"), 50 + i))
            .await
            .unwrap();
    }
    let factory = env.factory();
    let v1_informer = factory
        .informer::<autoscaling_v1::HorizontalPodAutoscaler>()
        .unwrap();
    let v2_informer = factory
        .informer::<autoscaling_v2::HorizontalPodAutoscaler>()
        .unwrap();
    factory.start();
    factory.wait_for_cache_sync(GUARD).await.unwrap();
    assert_eq!(cache_state(&v1_informer), cache_state(&v2_informer));
    assert_eq!(
        cache_state(&v2_informer),
        env.server_state("horizontalpodautoscalers", None)
    );

    // Changed through v2 (a memory metric v1 has no field for), deleted through v1.
    v2.patch(
        "h-1",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"metrics": [
            {"type": "Resource", "resource": {"name": "memory",
             "target": {"type": "AverageValue", "averageValue": "500Mi"}}}]}})),
    )
    .await
    .unwrap();
    v1.delete("h-2", &DeleteParams::default()).await.unwrap();
    for resource in [
        "horizontalpodautoscalers.v1.autoscaling",
        "horizontalpodautoscalers.v2.autoscaling",
    ] {
        assert_eq!(env.server_state(resource, None).len(), 2, "{resource}");
    }
    converge(
        &env,
        &v1_informer,
        "horizontalpodautoscalers.v1.autoscaling",
        None,
        None,
    )
    .await;
    converge(
        &env,
        &v2_informer,
        "horizontalpodautoscalers.v2.autoscaling",
        None,
        None,
    )
    .await;
    let through_v1 = v1_informer.lister().get(Some("a"), "h-1").unwrap();
    assert_eq!(through_v1.spec.target_cpu_utilization_percentage, None);
    assert!(
        through_v1
            .metadata
            .annotations
            .as_ref()
            .unwrap()
            .get("autoscaling.alpha.kubernetes.io/metrics")
            .unwrap()
            .contains("500Mi")
    );
    let through_v2 = v2_informer.lister().get(Some("a"), "h-0").unwrap();
    let metrics = through_v2.spec.metrics.clone().unwrap();
    assert_eq!(
        metrics[0]
            .resource
            .as_ref()
            .unwrap()
            .target
            .average_utilization,
        Some(50)
    );
}

/// A CRD served in two versions: an informer on each (the typed `v1`, the storage version,
/// and a discovered `v2`) holds the same objects at the same resourceVersions, whichever
/// version a write goes through, each object in its informer's version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informers_on_two_versions_of_a_crd_share_one_storage() {
    let env = Env::start().await;
    env.engine
        .create("namespaces", &fake_apiserver::seed::namespace("a"))
        .unwrap();
    let version = |name: &str, storage: bool| {
        json!({"name": name, "served": true, "storage": storage,
               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                   "spec": {"type": "object", "properties": {
                       "size": {"type": "integer"}, "color": {"type": "string"}}}}}}})
    };
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [version("v1", true), version("v2", false)],
        }
    }))
    .unwrap();
    Api::<CustomResourceDefinition>::all(env.client.clone())
        .create(&PostParams::default(), &crd)
        .await
        .unwrap();
    let v1 = Api::<Widget>::namespaced(env.client.clone(), "a");
    for i in 0..3 {
        let widget = Widget::new(
            &format!("w-{i}"),
            WidgetSpec {
                size: i,
                color: "blue".into(),
            },
        );
        v1.create(&PostParams::default(), &widget).await.unwrap();
    }
    let factory = env.factory();
    let v2_gvk = GroupVersionKind::gvk("example.com", "v2", "Widget");
    let v2_informer = factory.discovered_informer(&v2_gvk).await.unwrap();
    let v1_informer = factory.informer::<Widget>().unwrap();
    factory.start();
    factory.wait_for_cache_sync(GUARD).await.unwrap();
    assert_eq!(cache_state(&v1_informer), cache_state(&v2_informer));
    assert_eq!(cache_state(&v2_informer), env.server_state("widgets", None));

    // Written through v2, deleted through v1: both informers follow.
    let (resource, _) = kube_client::discovery::pinned_kind(&env.client, &v2_gvk)
        .await
        .unwrap();
    let v2 = Api::<kube_client::core::DynamicObject>::namespaced_with(
        env.client.clone(),
        "a",
        &resource,
    );
    v2.patch(
        "w-1",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"color": "red"}})),
    )
    .await
    .unwrap();
    v1.delete("w-2", &DeleteParams::default()).await.unwrap();
    converge(&env, &v1_informer, "widgets.v1.example.com", None, None).await;
    converge(&env, &v2_informer, "widgets.v2.example.com", None, None).await;
    assert_eq!(
        v1_informer
            .lister()
            .get(Some("a"), "w-1")
            .unwrap()
            .spec
            .color,
        "red"
    );
    let through_v2 = v2_informer.lister().get(Some("a"), "w-1").unwrap();
    assert_eq!(through_v2.data["spec"]["color"], "red");
    assert_eq!(
        through_v2.types.as_ref().map(|t| t.api_version.as_str()),
        Some("example.com/v2")
    );
    assert!(v2_informer.lister().get(Some("a"), "w-2").is_none());
    let report = factory.shutdown().await;
    assert!(report.failures.is_empty(), "{:?}", report.failures);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_only_and_selector_views() {
    let env = Env::start().await;
    seed_pods(&env.engine, 4, 400);
    let factory = env.factory();
    let meta = factory.informer::<PartialObjectMeta<Pod>>().unwrap();
    let web_in_ns1 = factory
        .namespace("ns-1")
        .label_selector("app in (web,api),tier=frontend")
        .informer::<Pod>()
        .unwrap();
    let one_by_name = factory
        .field_selector("metadata.namespace=ns-2")
        .informer::<Pod>()
        .unwrap();
    factory.start();
    factory.wait_for_cache_sync(GUARD).await.unwrap();
    synced(&meta).await;

    // Metadata-only: every pod, metadata identical to the server's.
    assert_eq!(cache_state(&meta), env.server_state("pods", None));
    let one = meta.lister().list_all().pop().unwrap();
    assert!(!one.metadata.labels.clone().unwrap_or_default().is_empty());

    // Selector views: exactly the server's matching objects.
    let selector = LabelSelector::parse("app in (web,api),tier=frontend").unwrap();
    let expected = |ns: &str, selector: Option<&LabelSelector>| -> State {
        env.engine
            .objects("pods", Some(ns))
            .unwrap()
            .iter()
            .filter(|o| selector.is_none_or(|s| s.matches(o.labels())))
            .map(|o| {
                (
                    o.key().to_owned(),
                    (o.resource_version().to_string(), o.uid().to_owned()),
                )
            })
            .collect()
    };
    let want = expected("ns-1", Some(&selector));
    assert!(!want.is_empty());
    assert_eq!(cache_state(&web_in_ns1), want);
    assert_eq!(cache_state(&one_by_name), expected("ns-2", None));

    // A pod leaving the selection is deleted from the view.
    let (key, _) = want.iter().next().unwrap();
    let name = key.split('/').nth(1).unwrap();
    env.engine
        .patch(
            "pods",
            Some("ns-1"),
            name,
            &json!({"metadata": {"labels": {"tier": "backend"}}}),
        )
        .unwrap();
    wait_until(
        "the pod to leave the view",
        None,
        || cache_state(&web_in_ns1) == expected("ns-1", Some(&selector)),
        || format!("{:?}", cache_state(&web_in_ns1).len()),
    )
    .await;
    factory.shutdown().await;
}
