//! HTTP front end: field management and server-side apply, through kube-client as a
//! controller makes them (`Patch::Apply` with `PatchParams::apply`), checked against what
//! upstream's field manager does: ownership, conflicts, forced takeovers, fields an applier
//! stops applying, updates taking ownership, and the status subresource.
#![cfg(feature = "http")]

use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::Api;
use kube_client::api::{Patch, PatchParams, PostParams};
use reqwest::Method;
use serde_json::{Value, json};

use crate::http_kube_client::kube;
use crate::support::http::{apply as server_side_apply, namespaces, send, start};

fn config_map(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": data})
}

/// `(manager, operation, fieldsV1)` of every entry.
fn managers(cm: &ConfigMap) -> Vec<(String, String, Value)> {
    cm.metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|e| {
            (
                e.manager.clone().unwrap_or_default(),
                e.operation.clone().unwrap_or_default(),
                e.fields_v1.as_ref().map_or(Value::Null, |f| f.0.clone()),
            )
        })
        .collect()
}

fn api_error(e: kube_client::Error) -> kube_client::core::Status {
    match e {
        kube_client::Error::Api(s) => *s,
        other => panic!("not an API error: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controllers_share_an_object_through_server_side_apply() {
    let (server, http) = start().await;
    namespaces(&server, &["ns-0"]);
    let client = kube(&http).await;
    let cms = Api::<ConfigMap>::namespaced(client, "ns-0");
    let a = PatchParams::apply("controller-a");
    let b = PatchParams::apply("controller-b");

    // A creates it: it owns what it applied.
    let created = cms
        .patch(
            "settings",
            &a,
            &Patch::Apply(config_map(json!({"mode": "fast", "size": "3"}))),
        )
        .await
        .unwrap();
    assert_eq!(
        managers(&created),
        [(
            "controller-a".into(),
            "Apply".into(),
            // An applied configuration owns its leaves, not the map holding them.
            json!({"f:data": {"f:mode": {}, "f:size": {}}})
        )]
    );
    let entry = &created.metadata.managed_fields.as_ref().unwrap()[0];
    assert_eq!(entry.api_version.as_deref(), Some("v1"));
    assert_eq!(entry.fields_type.as_deref(), Some("FieldsV1"));
    assert!(entry.time.is_some());

    // B applies another value of A's field: a conflict, worded and detailed as upstream's.
    let err = api_error(
        cms.patch(
            "settings",
            &b,
            &Patch::Apply(config_map(json!({"mode": "safe"}))),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, "Conflict");
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"controller-a\": .data.mode"
    );
    let raw = send(
        &http,
        Method::PATCH,
        "/api/v1/namespaces/ns-0/configmaps/settings?fieldManager=controller-b",
        Some((
            "application/apply-patch+yaml",
            &config_map(json!({"mode": "safe"})),
        )),
    )
    .await;
    assert_eq!(
        raw.body["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"controller-a\"",
                "field": ".data.mode"}])
    );
    // The same value is no conflict: both own it.
    let shared = cms
        .patch(
            "settings",
            &b,
            &Patch::Apply(config_map(json!({"size": "3"}))),
        )
        .await
        .unwrap();
    assert_eq!(managers(&shared).len(), 2);

    // Forced, B takes the field from A.
    let forced = cms
        .patch(
            "settings",
            &b.clone().force(),
            &Patch::Apply(config_map(json!({"mode": "safe", "size": "3"}))),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.as_ref().unwrap()["mode"], "safe");
    let owners = managers(&forced);
    let of = |m: &str| owners.iter().find(|o| o.0 == m).unwrap().2.clone();
    assert_eq!(of("controller-a"), json!({"f:data": {"f:size": {}}}));
    assert_eq!(
        of("controller-b"),
        json!({"f:data": {"f:mode": {}, "f:size": {}}})
    );

    // A stops applying `size`: B still owns it, so it stays; then B stops too, and it goes.
    let kept = cms
        .patch("settings", &a, &Patch::Apply(config_map(json!({}))))
        .await
        .unwrap();
    assert_eq!(kept.data.as_ref().unwrap()["size"], "3");
    let gone = cms
        .patch(
            "settings",
            &b,
            &Patch::Apply(config_map(json!({"mode": "safe"}))),
        )
        .await
        .unwrap();
    assert_eq!(
        gone.data.unwrap(),
        [("mode".to_owned(), "safe".to_owned())].into()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_take_the_fields_they_change() {
    let (server, http) = start().await;
    namespaces(&server, &["ns-0"]);
    let client = kube(&http).await;
    let cms = Api::<ConfigMap>::namespaced(client, "ns-0");
    let a = PatchParams::apply("controller-a");
    cms.patch(
        "settings",
        &a,
        &Patch::Apply(config_map(json!({"mode": "fast"}))),
    )
    .await
    .unwrap();
    // A merge patch by another manager takes `mode` (updates never conflict)...
    let patched = cms
        .patch(
            "settings",
            &PatchParams {
                field_manager: Some("editor".into()),
                ..PatchParams::default()
            },
            &Patch::Merge(json!({"data": {"mode": "slow"}})),
        )
        .await
        .unwrap();
    let owners = managers(&patched);
    assert_eq!(
        owners,
        [(
            "editor".into(),
            "Update".into(),
            json!({"f:data": {"f:mode": {}}})
        )],
        "A owned nothing else, so its entry went"
    );
    // ...so A's next apply of `mode` conflicts with it, named with its version.
    let err = api_error(
        cms.patch(
            "settings",
            &a,
            &Patch::Apply(config_map(json!({"mode": "fast"}))),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"editor\" using v1: .data.mode"
    );
    // A write without `fieldManager` is its user agent's (up to the first `/`).
    let created = cms
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "other"}, "data": {"k": "v"}}))
                .unwrap(),
        )
        .await
        .unwrap();
    let owners = managers(&created);
    assert_eq!(owners.len(), 1);
    assert!(!owners[0].0.contains('/'), "{owners:?}");
    assert_eq!(owners[0].2, json!({"f:data": {".": {}, "f:k": {}}}));
    // Sending `managedFields: [{}]` resets them; the writer then owns what it changed.
    let reset = send(
        &http,
        Method::PATCH,
        "/api/v1/namespaces/ns-0/configmaps/settings?fieldManager=janitor",
        Some((
            "application/merge-patch+json",
            &json!({"metadata": {"managedFields": [{}], "labels": {"l": "1"}}}),
        )),
    )
    .await;
    assert_eq!(reset.status, 200, "{}", reset.body);
    let entries = reset.body["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["manager"], "janitor");
    assert_eq!(
        entries[0]["fieldsV1"],
        json!({"f:metadata": {"f:labels": {".": {}, "f:l": {}}}})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_requests_are_checked_as_upstream_checks_them() {
    let (server, http) = start().await;
    namespaces(&server, &["ns-0"]);
    let url = "/api/v1/namespaces/ns-0/configmaps/settings";
    let apply = |query: &'static str, body: Value| {
        let http = &http;
        async move { server_side_apply(http, &format!("{url}{query}"), &body).await }
    };
    let message = |a: &crate::support::http::Answer| a.body["message"].as_str().unwrap().to_owned();
    let missing = apply("", config_map(json!({}))).await;
    assert_eq!(missing.status, 422);
    assert_eq!(
        message(&missing),
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required \
         for apply patch"
    );
    let long = apply(
        "?fieldManager=mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm\
         mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm",
        config_map(json!({})),
    )
    .await;
    assert_eq!(long.status, 422, "{}", long.body);
    let mut wrong = config_map(json!({}));
    wrong["apiVersion"] = json!("v2");
    let version = apply("?fieldManager=m", wrong).await;
    assert_eq!(version.status, 400);
    assert_eq!(
        message(&version),
        "Incorrect version specified in apply patch. Specified patch version: v2, expected: v1"
    );
    let mut managed = config_map(json!({}));
    managed["metadata"]["managedFields"] = json!([{"manager": "x"}]);
    let with_fields = apply("?fieldManager=m", managed).await;
    assert_eq!(with_fields.status, 400);
    assert_eq!(message(&with_fields), "metadata.managedFields must be nil");
    // `force` is for applies only.
    let forced_merge = send(
        &http,
        Method::PATCH,
        &format!("{url}?force=true"),
        Some(("application/merge-patch+json", &json!({"data": {"a": "b"}}))),
    )
    .await;
    assert_eq!(forced_merge.status, 422);
    assert_eq!(
        message(&forced_merge),
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for \
         non-apply patch"
    );
    assert!(server.get("configmaps", Some("ns-0"), "settings").is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_follow_their_schema_s_list_types_and_status_is_its_own() {
    let (server, http) = start().await;
    namespaces(&server, &["ns-0"]);
    let schema = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "properties": {
                          "name": {"type": "string"}, "port": {"type": "integer"}}}},
            "tags": {"type": "array", "items": {"type": "string"}}}},
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}});
    let mut def = fake_apiserver::ResourceDef::namespaced("example.com", "v1", "gizmos", "Gizmo")
        .with_schema(schema);
    def.status_subresource = true;
    server.register(def).unwrap();
    let url = "/apis/example.com/v1/namespaces/ns-0/gizmos/g";
    let gizmo = |spec: Value| {
        json!({"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": "g"},
               "spec": spec})
    };
    let apply = |manager: &'static str, path: &'static str, body: Value| {
        let http = &http;
        async move {
            server_side_apply(http, &format!("{url}{path}?fieldManager={manager}"), &body).await
        }
    };
    let first = apply(
        "a",
        "",
        gizmo(json!({"ports": [{"name": "http", "port": 80}], "tags": ["x"]})),
    )
    .await;
    assert_eq!(first.status, 201, "{}", first.body);
    assert_eq!(
        first.body["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:spec": {"f:ports": {"k:{\"name\":\"http\"}": {".": {}, "f:name": {}, "f:port": {}}},
                          "f:tags": {}}})
    );
    // Another manager adds an item of the keyed list: no conflict, both items kept; the
    // atomic list is replaced whole, which is a conflict.
    let second = apply(
        "b",
        "",
        gizmo(json!({"ports": [{"name": "metrics", "port": 9090}]})),
    )
    .await;
    assert_eq!(second.status, 200, "{}", second.body);
    assert_eq!(second.body["spec"]["ports"].as_array().unwrap().len(), 2);
    let tags = apply("b", "", gizmo(json!({"tags": ["y"]}))).await;
    assert_eq!(tags.status, 409);
    assert_eq!(
        tags.body["message"],
        "Apply failed with 1 conflict: conflict with \"a\": .spec.tags"
    );
    // The status is applied through its subresource, with an entry of its own.
    let status = apply(
        "a",
        "/status",
        json!({"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": "g"},
               "status": {"phase": "Ready"}}),
    )
    .await;
    assert_eq!(status.status, 200, "{}", status.body);
    assert_eq!(status.body["status"]["phase"], "Ready");
    let entries = status.body["metadata"]["managedFields"].as_array().unwrap();
    let status_entry = entries
        .iter()
        .find(|e| e["subresource"] == "status")
        .unwrap();
    assert_eq!(status_entry["manager"], "a");
    assert_eq!(
        status_entry["fieldsV1"],
        json!({"f:status": {"f:phase": {}}})
    );
    // An apply of the main resource neither owns nor changes the status.
    let main = apply(
        "a",
        "",
        json!({"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": "g"},
               "spec": {"ports": [{"name": "http", "port": 80}], "tags": ["x"]},
               "status": {"phase": "Gone"}}),
    )
    .await;
    assert_eq!(main.status, 200, "{}", main.body);
    assert_eq!(main.body["status"]["phase"], "Ready");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_through_scale_is_the_scale_subresource_s() {
    let (server, http) = start().await;
    namespaces(&server, &["ns-0"]);
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "w"}]}}}});
    let url = "/apis/apps/v1/namespaces/ns-0/deployments/web";
    let applied = send(
        &http,
        Method::PATCH,
        &format!("{url}?fieldManager=ctl"),
        Some(("application/apply-patch+yaml", &deployment)),
    )
    .await;
    assert_eq!(applied.status, 201, "{}", applied.body);
    // An autoscaler scales through `/scale`: it takes `.spec.replicas`, as that subresource.
    let scaled = send(
        &http,
        Method::PATCH,
        &format!("{url}/scale?fieldManager=hpa"),
        Some((
            "application/merge-patch+json",
            &json!({"spec": {"replicas": 5}}),
        )),
    )
    .await;
    assert_eq!(scaled.status, 200, "{}", scaled.body);
    let stored = server
        .get("deployments", Some("ns-0"), "web")
        .unwrap()
        .to_value();
    let entries = stored["metadata"]["managedFields"].as_array().unwrap();
    let hpa = entries.iter().find(|e| e["manager"] == "hpa").unwrap();
    assert_eq!(hpa["subresource"], "scale");
    assert_eq!(hpa["operation"], "Update");
    assert_eq!(hpa["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    let again = send(
        &http,
        Method::PATCH,
        &format!("{url}?fieldManager=ctl"),
        Some(("application/apply-patch+yaml", &deployment)),
    )
    .await;
    assert_eq!(again.status, 409);
    assert_eq!(
        again.body["message"],
        "Apply failed with 1 conflict: conflict with \"hpa\" with subresource \"scale\" using \
         apps/v1: .spec.replicas"
    );
}
