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
    // Open schemas published as upstream publishes a schema that preserves unknown fields
    // in v2: no type and no properties (kubectl's validation would refuse other fields).
    let pod = &v2.body["definitions"]["io.k8s.api.core.v1.Pod"];
    assert_eq!(pod["x-kubernetes-group-version-kind"][0]["kind"], "Pod");
    assert!(
        pod.get("properties").is_none() && pod.get("type").is_none(),
        "{pod}"
    );
    // client-go's discovery asks for protobuf; a form neither JSON nor protobuf is a 406.
    let pb = crate::support::http::client()
        .get(format!("{}/openapi/v2", http.url()))
        .header(
            "Accept",
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(pb.status(), 200);
    assert_eq!(
        pb.headers()["content-type"],
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    );
    assert_eq!(&pb.bytes().await.unwrap()[..5], b"\x0a\x032.0");
    let xml = crate::support::http::client()
        .get(format!("{}/openapi/v2", http.url()))
        .header("Accept", "application/xml")
        .send()
        .await
        .unwrap();
    assert_eq!(xml.status(), 406);
    assert_eq!(get(&http, "/healthz").await.status, 200);
}
