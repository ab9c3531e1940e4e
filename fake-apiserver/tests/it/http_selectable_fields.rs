//! HTTP front end: a CRD's `selectableFields` (field selectors on custom resources, GA in
//! Kubernetes 1.32): lists and watches select by them, other labels are a 400, and a CRD
//! whose selectable fields upstream would refuse is a 422.
#![cfg(feature = "http")]

use kube_client::api::{Api, DynamicObject, ListParams, WatchEvent, WatchParams};
use kube_client::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use crate::http_kube_client::kube;
use crate::support::http::{WatchLines, get, names, namespaces, post, put, start};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/a/widgets";

fn crd(selectable: &[&str]) -> Value {
    let fields: Vec<Value> = selectable.iter().map(|p| json!({"jsonPath": p})).collect();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "selectableFields": fields,
                          "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                              "spec": {"type": "object", "properties": {
                                  "color": {"type": "string"},
                                  "replicas": {"type": "integer"},
                                  "enabled": {"type": "boolean"},
                                  "size": {"type": "string"},
                                  "tags": {"type": "array", "items": {"type": "string"}}}}}}}}],
        },
    })
}

fn widget(name: &str, color: &str, replicas: i64, enabled: bool) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name},
           "spec": {"color": color, "replicas": replicas, "enabled": enabled}})
}

fn select(selector: &str) -> String {
    format!("{WIDGETS}?fieldSelector={}", selector.replace('=', "%3D"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_are_selected_by_their_selectable_fields() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let created = post(
        &http,
        CRDS,
        &crd(&[".spec.color", ".spec.replicas", ".spec.enabled"]),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    for (name, color, replicas, enabled) in [
        ("w1", "red", 3, true),
        ("w2", "blue", 3, false),
        ("w3", "red", 1, false),
    ] {
        let made = post(&http, WIDGETS, &widget(name, color, replicas, enabled)).await;
        assert_eq!(made.status, 201, "{}", made.body);
    }
    let client = kube(&http).await;
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let widgets: Api<DynamicObject> =
        Api::namespaced_with(client, "a", &ApiResource::from_gvk(&gvk));
    let listed = |selector: &'static str| {
        let widgets = widgets.clone();
        async move {
            let list = widgets
                .list(&ListParams::default().fields(selector))
                .await
                .unwrap();
            list.items
                .into_iter()
                .map(|w| w.metadata.name.unwrap())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(listed("spec.color=red").await, ["w1", "w3"]);
    assert_eq!(listed("spec.color!=red").await, ["w2"]);
    assert_eq!(listed("spec.replicas=3,spec.enabled=true").await, ["w1"]);
    assert_eq!(listed("spec.enabled=false").await, ["w2", "w3"]);
    assert_eq!(listed("metadata.name=w2").await, ["w2"]);

    let unsupported = get(&http, &select("spec.size=x")).await;
    assert_eq!(unsupported.status, 400, "{}", unsupported.body);
    assert_eq!(
        unsupported.body["message"],
        "field label not supported: spec.size"
    );

    // A watch sees objects enter and leave the selection.
    let rv = widgets
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut watch = WatchLines::open(
        &http,
        &format!(
            "{}&watch=true&resourceVersion={rv}",
            select("spec.color=red")
        ),
    )
    .await;
    let repaint = |name: &str, color: &str, replicas: i64, enabled: bool| {
        let http = &http;
        let body = widget(name, color, replicas, enabled);
        let path = format!("{WIDGETS}/{name}");
        async move {
            let answer = put(http, &path, &body).await;
            assert_eq!(answer.status, 200, "{}", answer.body);
        }
    };
    repaint("w2", "red", 3, false).await;
    repaint("w1", "green", 3, true).await;
    assert_eq!(watch.show_next().await, "ADDED w2");
    assert_eq!(watch.show_next().await, "DELETED w1");

    // kube-client's watch with the same selector.
    let events = widgets
        .watch(&WatchParams::default().fields("spec.color=green"), &rv)
        .await
        .unwrap();
    use futures::StreamExt as _;
    let first = tokio::time::timeout(std::time::Duration::from_secs(10), events.boxed().next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    match first {
        WatchEvent::Added(w) => assert_eq!(w.metadata.name.as_deref(), Some("w1")),
        other => panic!("expected w1 added, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selectable_fields_are_checked_and_follow_the_crd() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let refused = post(
        &http,
        CRDS,
        &crd(&[
            ".spec.nope",
            ".metadata.name",
            ".spec.tags",
            ".spec.color",
            "spec.color",
        ]),
    )
    .await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    let message = refused.body["message"].as_str().unwrap();
    for expected in [
        "spec.versions[0].selectableFields[0].jsonPath: Invalid value: \".spec.nope\": is an \
         invalid path: does not refer to a valid field",
        "spec.versions[0].selectableFields[1].jsonPath: Invalid value: \".metadata.name\": \
         must not point to fields in metadata",
        "spec.versions[0].selectableFields[2].jsonPath: Invalid value: \".spec.tags\": must \
         point to a field of type string, boolean or integer. Enum string fields and strings \
         with formats are allowed.",
        "spec.versions[0].selectableFields[4].jsonPath: Duplicate value: \"spec.color\"",
    ] {
        assert!(
            message.contains(expected),
            "{expected}\nmissing from {message}"
        );
    }

    // Without selectable fields, then with one: objects already stored become selectable.
    let created = post(&http, CRDS, &crd(&[])).await;
    assert_eq!(created.status, 201, "{}", created.body);
    post(&http, WIDGETS, &widget("w1", "red", 1, true)).await;
    post(&http, WIDGETS, &widget("w2", "blue", 1, true)).await;
    let before = get(&http, &select("spec.color=red")).await;
    assert_eq!(before.status, 400, "{}", before.body);
    let mut changed = crd(&[".spec.color"]);
    let stored = get(&http, &format!("{CRDS}/widgets.example.com")).await;
    changed["metadata"]["resourceVersion"] = stored.body["metadata"]["resourceVersion"].clone();
    let updated = put(&http, &format!("{CRDS}/widgets.example.com"), &changed).await;
    assert_eq!(updated.status, 200, "{}", updated.body);
    let after = get(&http, &select("spec.color=red")).await;
    assert_eq!(after.status, 200, "{}", after.body);
    assert_eq!(names(&after.body), ["w1"]);
}
