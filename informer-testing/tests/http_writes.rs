//! HTTP front end: writes on the wire (create, update with optimistic concurrency, the patch
//! formats, delete, delete-collection, CRDs) through a real HTTP client.
#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests: a failed unwrap is a failed test.

mod http_support;

use http_support::{get, names, pod, post, put, send, start};
use reqwest::Method;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_and_duplicates() {
    let (server, http) = start().await;
    http_support::namespaces(&server, &["a", "b"]);
    let created = post(
        &http,
        "/api/v1/namespaces/a/pods",
        &pod("ignored", "p1", json!({})),
    )
    .await;
    // The namespace of the URL wins over an absent one; a mismatching one is refused by the
    // engine's rules (here the body says "ignored", so the create is refused).
    assert_eq!(created.status, 400, "{}", created.body);
    let created = post(
        &http,
        "/api/v1/namespaces/a/pods",
        &pod("a", "p1", json!({})),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["metadata"]["namespace"], "a");
    assert!(
        created.body["metadata"]["uid"]
            .as_str()
            .is_some_and(|u| !u.is_empty())
    );
    assert!(created.body["metadata"]["creationTimestamp"].is_string());
    assert_eq!(
        created.body["metadata"]["resourceVersion"],
        server.resource_version().to_string()
    );
    let again = post(
        &http,
        "/api/v1/namespaces/a/pods",
        &pod("a", "p1", json!({})),
    )
    .await;
    assert_eq!(again.status, 409);
    assert_eq!(again.body["reason"], "AlreadyExists");
    let generated = post(
        &http,
        "/api/v1/namespaces/a/configmaps",
        &json!({"metadata": {"generateName": "cfg-"}}),
    )
    .await;
    assert_eq!(generated.status, 201);
    let name = generated.body["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("cfg-") && name.len() == 9, "{name}");
    let nameless = post(
        &http,
        "/api/v1/namespaces/a/configmaps",
        &json!({"metadata": {}}),
    )
    .await;
    assert_eq!(nameless.status, 422);
    assert_eq!(nameless.body["reason"], "Invalid");
    let not_json = send(
        &http,
        Method::POST,
        "/api/v1/namespaces/a/configmaps",
        Some(("application/yaml", &json!("kind: ConfigMap"))),
    )
    .await;
    assert_eq!(not_json.status, 400);
    assert_eq!(
        server
            .requests()
            .iter()
            .filter(|r| r.method == "POST")
            .count(),
        6
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_with_a_stale_resource_version_is_409() {
    let (server, http) = start().await;
    let v1 = server
        .create(
            "configmaps",
            &json!({"metadata": {"name": "c", "namespace": "a"}, "data": {"k": "1"}}),
        )
        .unwrap();
    let mut body = v1.to_value();
    body["data"]["k"] = json!("2");
    let ok = put(&http, "/api/v1/namespaces/a/configmaps/c", &body).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.body["data"]["k"], "2");
    body["data"]["k"] = json!("3");
    let stale = put(&http, "/api/v1/namespaces/a/configmaps/c", &body).await;
    assert_eq!(stale.status, 409);
    assert_eq!(stale.body["reason"], "Conflict");
    assert!(
        stale.body["message"]
            .as_str()
            .unwrap()
            .contains("the object has been modified")
    );
    // Without a resourceVersion the update is unconditional.
    body["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    assert_eq!(
        put(&http, "/api/v1/namespaces/a/configmaps/c", &body)
            .await
            .status,
        200
    );
    let missing = put(
        &http,
        "/api/v1/namespaces/a/configmaps/nope",
        &json!({"metadata": {"name": "nope"}}),
    )
    .await;
    assert_eq!(missing.status, 404);
    // The status subresource of a pod is served like the pod.
    server.create("pods", &pod("a", "p", json!({}))).unwrap();
    let status = send(
        &http,
        Method::PATCH,
        "/api/v1/namespaces/a/pods/p/status",
        Some((
            "application/merge-patch+json",
            &json!({"status": {"phase": "Running"}}),
        )),
    )
    .await;
    assert_eq!(status.status, 200);
    assert_eq!(status.body["status"]["phase"], "Running");
    assert_eq!(
        get(&http, "/api/v1/namespaces/a/configmaps/c/status")
            .await
            .status,
        404
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_formats() {
    let (server, http) = start().await;
    http_support::namespaces(&server, &["a"]);
    server.create("pods", &json!({
        "metadata": {"name": "p", "namespace": "a", "labels": {"app": "web", "tier": "front"}},
        "spec": {"containers": [
            {"name": "app", "image": "app:1", "ports": [{"containerPort": 80}]},
            {"name": "side", "image": "side:1"},
        ]},
    })).unwrap();
    let url = "/api/v1/namespaces/a/pods/p";
    let merge = send(
        &http,
        Method::PATCH,
        url,
        Some((
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"tier": null, "new": "x"}}}),
        )),
    )
    .await;
    assert_eq!(merge.status, 200);
    assert_eq!(
        merge.body["metadata"]["labels"],
        json!({"app": "web", "new": "x"})
    );
    // Strategic merge patch as kubectl apply sends it: containers merge by name.
    let smp = send(
        &http,
        Method::PATCH,
        url,
        Some((
            "application/strategic-merge-patch+json",
            &json!({
                "spec": {"$setElementOrder/containers": [{"name": "app"}, {"name": "side"}],
                         "containers": [{"name": "app", "image": "app:2"}]},
            }),
        )),
    )
    .await;
    assert_eq!(smp.status, 200, "{}", smp.body);
    let containers = &smp.body["spec"]["containers"];
    assert_eq!(containers[0]["image"], "app:2");
    assert_eq!(containers[0]["ports"][0]["containerPort"], 80);
    assert_eq!(containers[1]["image"], "side:1");
    let jp = send(
        &http,
        Method::PATCH,
        url,
        Some((
            "application/json-patch+json",
            &json!([{"op": "replace", "path": "/spec/containers/1/image", "value": "side:2"}]),
        )),
    )
    .await;
    assert_eq!(jp.body["spec"]["containers"][1]["image"], "side:2");
    let failed_test = send(
        &http,
        Method::PATCH,
        url,
        Some((
            "application/json-patch+json",
            &json!([{"op": "test", "path": "/metadata/name", "value": "other"}]),
        )),
    )
    .await;
    assert_eq!(failed_test.status, 422);
    // A resourceVersion in a patch is a precondition.
    let stale = send(
        &http,
        Method::PATCH,
        url,
        Some((
            "application/merge-patch+json",
            &json!({"metadata": {"resourceVersion": "1", "labels": {"z": "z"}}}),
        )),
    )
    .await;
    assert_eq!(stale.status, 409);
    let unknown = send(&http, Method::PATCH, url, Some(("text/plain", &json!({})))).await;
    assert_eq!(unknown.status, 415);
    // Server-side apply: creates when absent (201), merges when present (200).
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied", "namespace": "a"}, "data": {"a": "1"}});
    let apply_url = "/api/v1/namespaces/a/configmaps/applied?fieldManager=test&force=true";
    let first = send(
        &http,
        Method::PATCH,
        apply_url,
        Some(("application/apply-patch+yaml", &cm)),
    )
    .await;
    assert_eq!(first.status, 201, "{}", first.body);
    let second = send(&http, Method::PATCH, apply_url, Some(("application/apply-patch+yaml",
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"b": "2"}})))).await;
    assert_eq!(second.status, 200);
    assert_eq!(second.body["data"], json!({"a": "1", "b": "2"}));
    // Every patch that reached the engine is logged (the 415 was refused before).
    assert_eq!(
        server
            .requests()
            .iter()
            .filter(|r| r.method == "PATCH")
            .count(),
        7
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_answer_like_the_server() {
    let (server, http) = start().await;
    server.create("pods", &pod("a", "p", json!({}))).unwrap();
    let cm = server
        .create(
            "configmaps",
            &json!({"metadata": {"name": "c", "namespace": "a"}}),
        )
        .unwrap();
    server.create("configmaps", &json!({"metadata": {"name": "held", "namespace": "a", "finalizers": ["example.com/hold"]}})).unwrap();
    // Pods come back as the object, at the deletion's resourceVersion.
    let p = send(&http, Method::DELETE, "/api/v1/namespaces/a/pods/p", None).await;
    assert_eq!(p.status, 200);
    assert_eq!(p.body["kind"], "Pod");
    assert_eq!(
        p.body["metadata"]["resourceVersion"],
        server.resource_version().to_string()
    );
    // A stale precondition is a conflict.
    let stale = send(&http, Method::DELETE, "/api/v1/namespaces/a/configmaps/c",
        Some(("application/json", &json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"resourceVersion": "999"}})))).await;
    assert_eq!(stale.status, 409);
    // Others come back as a Success Status naming the object.
    let c = send(
        &http,
        Method::DELETE,
        "/api/v1/namespaces/a/configmaps/c",
        None,
    )
    .await;
    assert_eq!(c.status, 200);
    assert_eq!(c.body["kind"], "Status");
    assert_eq!(c.body["status"], "Success");
    assert_eq!(c.body["details"]["name"], "c");
    assert_eq!(c.body["details"]["uid"], cm.uid());
    // With finalizers only deletionTimestamp is set, and the object comes back.
    let held = send(
        &http,
        Method::DELETE,
        "/api/v1/namespaces/a/configmaps/held",
        None,
    )
    .await;
    assert_eq!(held.status, 200);
    assert!(held.body["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(server.objects("configmaps", Some("a")).unwrap().len(), 1);
    assert_eq!(
        send(&http, Method::DELETE, "/api/v1/namespaces/a/pods/p", None)
            .await
            .status,
        404
    );
    assert_eq!(
        send(
            &http,
            Method::DELETE,
            "/api/v1/namespaces/a/pods/p?dryRun=All",
            None
        )
        .await
        .status,
        400
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_collection_with_a_selector() {
    let (server, http) = start().await;
    for (ns, name, app) in [("a", "w1", "web"), ("a", "d1", "db"), ("b", "w2", "web")] {
        server
            .create("pods", &pod(ns, name, json!({"app": app})))
            .unwrap();
    }
    let gone = send(
        &http,
        Method::DELETE,
        "/api/v1/pods?labelSelector=app%3Dweb",
        None,
    )
    .await;
    assert_eq!(gone.status, 200, "{}", gone.body);
    assert_eq!(gone.body["kind"], "PodList");
    assert_eq!(names(&gone.body), vec!["w1", "w2"]);
    let left = get(&http, "/api/v1/pods").await;
    assert_eq!(names(&left.body), vec!["d1"]);
    let in_ns = send(&http, Method::DELETE, "/api/v1/namespaces/a/pods", None).await;
    assert_eq!(names(&in_ns.body), vec!["d1"]);
    assert_eq!(
        send(
            &http,
            Method::PUT,
            "/api/v1/namespaces/a/pods",
            Some(("application/json", &json!({})))
        )
        .await
        .status,
        405
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_posted_crd_registers_its_resource() {
    let (server, http) = start().await;
    http_support::namespaces(&server, &["a"]);
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": {"type": "object"}}}],
        },
    });
    let created = post(
        &http,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(
        created.body["status"]["conditions"][1]["type"],
        "Established"
    );
    let discovery = get(&http, "/apis/example.com/v1").await;
    assert_eq!(discovery.body["resources"][0]["name"], "widgets");
    assert_eq!(discovery.body["resources"][0]["shortNames"], json!(["wd"]));
    let widget = post(&http, "/apis/example.com/v1/namespaces/a/widgets",
        &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 3}})).await;
    assert_eq!(widget.status, 201, "{}", widget.body);
    let list = get(&http, "/apis/example.com/v1/widgets").await;
    assert_eq!(list.body["kind"], "WidgetList");
    assert_eq!(list.body["apiVersion"], "example.com/v1");
    assert_eq!(names(&list.body), vec!["w"]);
    assert!(server.target("widgets.example.com", None).is_ok());
    let bad = post(
        &http,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &json!({"metadata": {"name": "x.example.com"}, "spec": {"group": "example.com"}}),
    )
    .await;
    assert_eq!(bad.status, 422);
    let crds = get(
        &http,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    )
    .await;
    assert_eq!(names(&crds.body), vec!["widgets.example.com"]);
}
