//! HTTP front end: the eviction subresource (`POST pods/<name>/eviction`), through
//! kube-client as a controller evicts, decided by the pods' disruption budgets as upstream's
//! eviction subresource decides.
#![cfg(feature = "http")]

use k8s_openapi::api::core::v1::Pod;
use kube_client::Api;
use kube_client::api::EvictParams;
use reqwest::Method;
use serde_json::{Value, json};

use crate::http_kube_client::kube;
use crate::support::http::{get, namespaces, send, start};

fn pod(name: &str, app: &str, phase: &str, ready: bool) -> Value {
    json!({"metadata": {"name": name, "namespace": "ns-0", "labels": {"app": app}},
           "spec": {"containers": [{"name": "c", "image": "i"}]},
           "status": {"phase": phase, "conditions": [
               {"type": "Ready", "status": if ready { "True" } else { "False" }}]}})
}

fn budget(name: &str, app: &str, allowed: i64) -> Value {
    json!({"metadata": {"name": name, "namespace": "ns-0"},
           "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}},
           "status": {"observedGeneration": 1, "disruptionsAllowed": allowed,
                      "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2}})
}

/// `POST pods/<name>/eviction` in ns-0 (`query` appended), the Eviction naming `body_name`.
/// Raw: kube-client's default retry policy would retry a 429 for minutes, as it would
/// against a cluster.
async fn evict(
    http: &fake_apiserver::http::FakeHttpServer,
    name: &str,
    query: &str,
    body_name: &str,
) -> crate::support::http::Answer {
    send(
        http,
        Method::POST,
        &format!("/api/v1/namespaces/ns-0/pods/{name}/eviction{query}"),
        Some((
            "application/json",
            &json!({"apiVersion": "policy/v1", "kind": "Eviction",
                    "metadata": {"name": body_name, "namespace": "ns-0"}}),
        )),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evictions_respect_disruption_budgets() {
    let (server, http) = start().await;
    namespaces(&server, &["ns-0"]);
    for p in [
        pod("web-1", "web", "Running", true),
        pod("web-2", "web", "Running", true),
        pod("web-3", "web", "Pending", false),
        pod("lone", "lone", "Running", true),
    ] {
        server.create("pods", &p).unwrap();
    }
    server
        .create("poddisruptionbudgets", &budget("web", "web", 1))
        .unwrap();
    let pods = Api::<Pod>::namespaced(kube(&http).await, "ns-0");
    let params = EvictParams::default();
    let gone = |name: &'static str| {
        let server = server.clone();
        move || server.get("pods", Some("ns-0"), name).is_err()
    };

    // A pod no budget selects is deleted.
    pods.evict("lone", &params).await.unwrap();
    assert!(gone("lone")());
    // The budget allows one disruption: the first goes and the budget records it.
    pods.evict("web-1", &params).await.unwrap();
    assert!(gone("web-1")());
    let pdb = server
        .get("poddisruptionbudgets", Some("ns-0"), "web")
        .unwrap()
        .to_value();
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
    assert!(pdb["status"]["disruptedPods"]["web-1"].is_string(), "{pdb}");
    assert_eq!(pdb["status"]["conditions"][0]["type"], "DisruptionAllowed");
    assert_eq!(pdb["status"]["conditions"][0]["status"], "False");
    // The second is refused, as upstream refuses it.
    let raw = evict(&http, "web-2", "", "web-2").await;
    assert_eq!(raw.status, 429);
    assert_eq!(raw.body["reason"], "TooManyRequests");
    assert_eq!(
        raw.body["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert_eq!(raw.header("retry-after"), None);
    assert_eq!(
        raw.body["details"]["causes"],
        json!([{"reason": "DisruptionBudget",
                "message": "The disruption budget web needs 1 healthy pods and has 2 currently"}])
    );
    assert!(!gone("web-2")());
    // A pending pod disrupts nothing: it goes whatever the budget says.
    pods.evict("web-3", &params).await.unwrap();
    assert!(gone("web-3")());

    // A budget changed since its controller last looked is still being processed.
    let mut changed = budget("web", "web", 5);
    changed["spec"]["minAvailable"] = json!(0);
    let stale = server
        .get("poddisruptionbudgets", Some("ns-0"), "web")
        .unwrap();
    changed["metadata"]["resourceVersion"] = json!(stale.resource_version().to_string());
    server.update("poddisruptionbudgets", &changed).unwrap();
    let processing = evict(&http, "web-2", "", "web-2").await;
    assert_eq!(processing.status, 429, "{}", processing.body);
    assert_eq!(processing.header("retry-after"), Some("10"));
    assert_eq!(
        processing.body["details"]["causes"][0]["message"],
        "The disruption budget web is still being processed by the server."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evictions_are_checked_dry_run_and_listed_in_discovery() {
    let (server, http) = start().await;
    namespaces(&server, &["ns-0"]);
    for p in [
        pod("web-1", "web", "Running", true),
        pod("sick", "web", "Running", false),
        pod("both", "both", "Running", true),
    ] {
        server.create("pods", &p).unwrap();
    }
    server
        .create("poddisruptionbudgets", &budget("web", "web", 0))
        .unwrap();
    let mut second = budget("other", "both", 1);
    second["spec"]["selector"] = json!({"matchExpressions": [
        {"key": "app", "operator": "In", "values": ["both"]}]});
    server.create("poddisruptionbudgets", &second).unwrap();
    server
        .create("poddisruptionbudgets", &budget("third", "both", 1))
        .unwrap();
    let mismatch = evict(&http, "web-1", "", "other").await;
    assert_eq!(mismatch.status, 400);
    assert_eq!(
        mismatch.body["message"],
        "name in URL does not match name in Eviction object"
    );
    // Two budgets select the pod: upstream does not support it.
    let two = evict(&http, "both", "", "both").await;
    assert_eq!(two.status, 500);
    assert_eq!(
        two.body["message"],
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does \
         not support."
    );
    // A pod that is not ready while the budget has its healthy pods goes without using the
    // budget's allowance (none is left here).
    let sick = evict(&http, "sick", "", "sick").await;
    assert_eq!(sick.status, 201, "{}", sick.body);
    assert_eq!(sick.body["status"], "Success");
    assert!(server.get("pods", Some("ns-0"), "sick").is_err());
    // A dry run answers as the eviction would and changes nothing.
    server
        .delete("poddisruptionbudgets", Some("ns-0"), "third")
        .unwrap();
    let before = server
        .get("poddisruptionbudgets", Some("ns-0"), "other")
        .unwrap();
    let dry = evict(&http, "both", "?dryRun=All", "both").await;
    assert_eq!(dry.status, 201, "{}", dry.body);
    assert!(server.get("pods", Some("ns-0"), "both").is_ok());
    let after = server
        .get("poddisruptionbudgets", Some("ns-0"), "other")
        .unwrap();
    assert_eq!(before.resource_version(), after.resource_version());
    // Only POST; and the subresource is in discovery as kubectl drain looks for it.
    let got = get(&http, "/api/v1/namespaces/ns-0/pods/both/eviction").await;
    assert_eq!(got.status, 405);
    let core = get(&http, "/api/v1").await;
    let eviction = core.body["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "pods/eviction")
        .cloned()
        .unwrap();
    assert_eq!(
        (
            &eviction["group"],
            &eviction["version"],
            &eviction["kind"],
            &eviction["verbs"]
        ),
        (
            &json!("policy"),
            &json!("v1"),
            &json!("Eviction"),
            &json!(["create"])
        )
    );
}
