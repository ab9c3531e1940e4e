//! HTTP front end: deleting a CRD deletes its custom resources first, as upstream's CRD
//! finalizer does: the CRD waits behind `customresourcecleanup.apiextensions.k8s.io` with a
//! `Terminating` condition, creates of its resource are refused (405), every instance is
//! deleted (those with finalizers of their own wait for them), then the CRD goes and its
//! versions stop being served (their watches end).
#![cfg(feature = "http")]

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::GUARD;
use crate::support::http::{Line, WatchLines, get, namespaces, patch, post, send, start};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const CRD: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com";

fn widgets(version: &str) -> String {
    format!("/apis/example.com/{version}/namespaces/a/widgets")
}

fn crd() -> Value {
    let version = |name: &str, storage: bool| {
        json!({"name": name, "served": true, "storage": storage,
               "schema": {"openAPIV3Schema": {"type": "object",
                   "x-kubernetes-preserve-unknown-fields": true}}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [version("v1", true), version("v2", false)],
        },
    })
}

fn widget(name: &str, finalizers: &[&str]) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget",
           "metadata": {"name": name, "finalizers": finalizers}, "spec": {"size": 1}})
}

fn terminating(crd: &Value) -> (String, String) {
    let condition = crd["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Terminating"))
        .cloned()
        .unwrap_or(Value::Null);
    (
        condition["status"].as_str().unwrap_or("").to_owned(),
        condition["reason"].as_str().unwrap_or("").to_owned(),
    )
}

async fn delete(http: &fake_apiserver::http::FakeHttpServer, path: &str) -> Value {
    let answer = send(http, Method::DELETE, path, None).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_crd_deletes_its_instances_then_stops_serving_it() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    assert_eq!(post(&http, CRDS, &crd()).await.status, 201);
    for w in [widget("w1", &[]), widget("w2", &["example.com/hold"])] {
        let made = post(&http, &widgets("v1"), &w).await;
        assert_eq!(made.status, 201, "{}", made.body);
    }
    let listed = get(&http, &widgets("v2")).await;
    let rv = listed.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut v2_watch = WatchLines::open(
        &http,
        &format!("{}?watch=true&resourceVersion={rv}", widgets("v2")),
    )
    .await;

    // The first delete marks the CRD and answers it, behind the cleanup finalizer.
    let marked = delete(&http, CRD).await;
    assert!(
        marked["metadata"]["deletionTimestamp"].is_string(),
        "{marked}"
    );
    assert_eq!(
        marked["metadata"]["finalizers"],
        json!(["customresourcecleanup.apiextensions.k8s.io"])
    );
    assert_eq!(
        terminating(&marked),
        ("True".into(), "InstanceDeletionPending".into())
    );
    // The finalizer controller deleted w1 and marked w2, which waits for its own finalizer;
    // the CRD stays, its deletion in progress.
    let crd_now = get(&http, CRD).await;
    assert_eq!(crd_now.status, 200);
    assert_eq!(
        terminating(&crd_now.body),
        ("True".into(), "InstanceDeletionInProgress".into())
    );
    assert_eq!(
        get(&http, &format!("{}/w1", widgets("v1"))).await.status,
        404
    );
    let w2 = get(&http, &format!("{}/w2", widgets("v2"))).await;
    assert!(
        w2.body["metadata"]["deletionTimestamp"].is_string(),
        "{}",
        w2.body
    );
    let refused = post(&http, &widgets("v2"), &widget("w3", &[])).await;
    assert_eq!(refused.status, 405, "{}", refused.body);
    assert_eq!(refused.body["reason"], "MethodNotAllowed");
    assert_eq!(
        refused.body["message"],
        "create not allowed while custom resource definition is terminating"
    );
    // A second delete changes nothing.
    let again = delete(&http, CRD).await;
    assert_eq!(
        again["metadata"]["resourceVersion"],
        crd_now.body["metadata"]["resourceVersion"]
    );

    // Released, w2 goes, and the CRD with it: its versions are no longer served.
    let released = patch(
        &http,
        &format!("{}/w2", widgets("v1")),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": null}}),
    )
    .await;
    assert_eq!(released.status, 200, "{}", released.body);
    assert_eq!(get(&http, CRD).await.status, 404);
    assert_eq!(get(&http, &widgets("v1")).await.status, 404);
    assert_eq!(get(&http, "/apis/example.com").await.status, 404);
    let mut seen = Vec::new();
    loop {
        match tokio::time::timeout(GUARD, v2_watch.next()).await {
            Ok(Line::Event(e)) => seen.push(format!(
                "{} {}",
                e["type"].as_str().unwrap_or(""),
                e["object"]["metadata"]["name"].as_str().unwrap_or("")
            )),
            Ok(Line::End) => break,
            other => panic!("the watch should end: {other:?}"),
        }
    }
    // w2's release deletes it in that write (one `DELETED`, as upstream's update removing
    // the last finalizer of an object being deleted); the watch read it all before it ended.
    assert_eq!(seen, ["DELETED w1", "MODIFIED w2", "DELETED w2"]);

    // Created again, it is served again, empty.
    assert_eq!(post(&http, CRDS, &crd()).await.status, 201);
    let fresh = get(&http, &widgets("v2")).await;
    assert_eq!(fresh.status, 200, "{}", fresh.body);
    assert_eq!(fresh.body["items"], json!([]));
}
