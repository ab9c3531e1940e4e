//! HTTP front end: discovery, version and OpenAPI documents as kubectl and client-go read them.
#![cfg(feature = "http")]

use fake_apiserver::ResourceDef;
use serde_json::{Value, json};

use crate::support::http::{client, get, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_discovery() {
    let (server, http) = start().await;
    let api = get(&http, "/api").await;
    assert_eq!(api.body["kind"], "APIVersions");
    assert_eq!(api.body["versions"][0], "v1");
    let apis = get(&http, "/apis").await;
    assert_eq!(apis.body["kind"], "APIGroupList");
    let groups: Vec<&str> = apis.body["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    // Every stable group of the built-in API, apps first as on a real server.
    assert_eq!(groups[0], "apps");
    for group in [
        "batch",
        "apiextensions.k8s.io",
        "coordination.k8s.io",
        "networking.k8s.io",
        "rbac.authorization.k8s.io",
        "policy",
        "storage.k8s.io",
        "events.k8s.io",
        "autoscaling",
    ] {
        assert!(groups.contains(&group), "{group} missing from {groups:?}");
    }
    let core = get(&http, "/api/v1").await;
    assert_eq!(core.body["kind"], "APIResourceList");
    assert_eq!(core.body["groupVersion"], "v1");
    let pods = core.body["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "pods")
        .unwrap();
    assert_eq!(pods["namespaced"], true);
    assert_eq!(pods["kind"], "Pod");
    assert_eq!(pods["shortNames"][0], "po");
    assert!(
        pods["verbs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v == "watch")
    );
    let nodes = core.body["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "nodes")
        .unwrap();
    assert_eq!(nodes["namespaced"], false);
    let apps = get(&http, "/apis/apps/v1").await;
    assert_eq!(apps.body["groupVersion"], "apps/v1");
    assert_eq!(apps.body["resources"][0]["name"], "deployments");
    let group = get(&http, "/apis/apps").await;
    assert_eq!(group.body["preferredVersion"]["version"], "v1");
    assert_eq!(get(&http, "/apis/example.com").await.status, 404);
    assert_eq!(get(&http, "/apis/batch/v2").await.status, 404);
    let batch = get(&http, "/apis/batch/v1").await;
    let names: Vec<&str> = batch.body["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["cronjobs", "cronjobs/status", "jobs", "jobs/status"]
    );
    let apps_resources = apps.body["resources"].as_array().unwrap();
    let scale = apps_resources
        .iter()
        .find(|r| r["name"] == "deployments/scale")
        .expect("deployments/scale is served");
    assert_eq!(
        (&scale["group"], &scale["version"], &scale["kind"]),
        (&json!("autoscaling"), &json!("v1"), &json!("Scale"))
    );
    // A resource registered at run time shows up at once.
    server
        .register(ResourceDef::cluster_scoped(
            "example.com",
            "v1alpha1",
            "gizmos",
            "Gizmo",
        ))
        .unwrap();
    let gizmos = get(&http, "/apis/example.com/v1alpha1").await;
    assert_eq!(gizmos.body["resources"][0]["namespaced"], false);
    let logged: Vec<String> = server.requests().iter().map(ToString::to_string).collect();
    assert_eq!(logged[0], "GET /api");
    assert!(logged.contains(&"GET /apis/apps/v1".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregated_discovery_for_kubectl() {
    let (_server, http) = start().await;
    let accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
    for (path, first_group) in [("/api", ""), ("/apis", "apps")] {
        let resp = client()
            .get(format!("{}{path}", http.url()))
            .header("Accept", accept)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(
            resp.headers()["content-type"],
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        );
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["kind"], "APIGroupDiscoveryList");
        assert_eq!(body["apiVersion"], "apidiscovery.k8s.io/v2");
        let item = &body["items"][0];
        assert_eq!(item["metadata"]["name"].as_str().unwrap_or(""), first_group);
        let resource = &item["versions"][0]["resources"][0];
        assert!(resource["responseKind"]["kind"].is_string());
        assert!(resource["scope"] == "Namespaced" || resource["scope"] == "Cluster");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_and_openapi() {
    let (_server, http) = start().await;
    let version = get(&http, "/version").await;
    assert_eq!(
        (
            version.body["major"].as_str(),
            version.body["minor"].as_str()
        ),
        (Some("1"), Some("37"))
    );
    let index = get(&http, "/openapi/v3").await;
    let url = index.body["paths"]["apis/apps/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_owned();
    let doc = get(&http, &url).await;
    assert_eq!(doc.status, 200);
    assert_eq!(doc.body["openapi"], "3.0.0");
    let patch =
        &doc.body["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"]["kind"],
        "Deployment"
    );
    assert!(
        patch["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "fieldValidation")
    );
    assert_eq!(
        get(&http, "/openapi/v3/apis/example.com/v1").await.status,
        404
    );
    let batch = get(&http, "/openapi/v3/apis/batch/v1").await;
    assert!(
        batch.body["components"]["schemas"]["io.k8s.api.batch.v1.Job"].is_object(),
        "{}",
        batch.body
    );
    let v2 = get(&http, "/openapi/v2").await;
    assert_eq!(v2.body["swagger"], "2.0");
    assert!(v2.body["paths"]["/api/v1/namespaces/{namespace}/pods"]["get"].is_object());
    assert_eq!(get(&http, "/healthz").await.status, 200);
}
