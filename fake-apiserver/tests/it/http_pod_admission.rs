//! HTTP front end: what the API server's default admission plugins add to a pod created
//! through a request (`ServiceAccount`, `Priority`, `DefaultTolerationSeconds`), as a
//! cluster's pods carry it.
#![cfg(feature = "http")]

use serde_json::{Value, json};

use crate::support::http::{namespaces, pod, post, start};

const PODS: &str = "/api/v1/namespaces/prod/pods";

fn spec(answer: &Value) -> &Value {
    &answer["spec"]
}

#[tokio::test]
async fn a_created_pod_gets_its_service_account_token_priority_and_tolerations() {
    let (server, http) = start().await;
    namespaces(&server, &["prod"]);
    let created = post(&http, PODS, &pod("prod", "web", json!({}))).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let s = spec(&created.body);
    assert_eq!(
        (&s["serviceAccountName"], &s["serviceAccount"]),
        (&json!("default"), &json!("default"))
    );
    let volume = &s["volumes"][0];
    let name = volume["name"].as_str().unwrap();
    assert!(name.starts_with("kube-api-access-") && name.len() == "kube-api-access-".len() + 5);
    assert_eq!(volume["projected"]["defaultMode"], 420);
    assert_eq!(
        volume["projected"]["sources"][0]["serviceAccountToken"],
        json!({"expirationSeconds": 3607, "path": "token"})
    );
    assert_eq!(
        s["containers"][0]["volumeMounts"],
        json!([{"name": name, "readOnly": true,
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}])
    );
    assert_eq!(
        (&s["priority"], &s["preemptionPolicy"]),
        (&json!(0), &json!("PreemptLowerPriority"))
    );
    assert_eq!(
        s["tolerations"],
        json!([
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300},
        ])
    );
    // The direct writes of a test store what they are given.
    let direct = server
        .create("pods", &pod("prod", "direct", json!({})))
        .unwrap();
    assert!(
        direct.to_value()["spec"]
            .get("serviceAccountName")
            .is_none()
    );
}

#[tokio::test]
async fn the_plugins_follow_what_the_pod_and_its_account_say() {
    let (server, http) = start().await;
    namespaces(&server, &["prod"]);
    let account = post(
        &http,
        "/api/v1/namespaces/prod/serviceaccounts",
        &json!({"metadata": {"name": "quiet"}, "automountServiceAccountToken": false,
                "imagePullSecrets": [{"name": "registry"}]}),
    )
    .await;
    assert_eq!(account.status, 201);
    let mut quiet = pod("prod", "quiet", json!({}));
    quiet["spec"]["serviceAccountName"] = json!("quiet");
    // A toleration of every NoExecute taint already covers both.
    quiet["spec"]["tolerations"] = json!([{"operator": "Exists", "effect": "NoExecute"}]);
    let created = post(&http, PODS, &quiet).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let s = spec(&created.body);
    assert!(s.get("volumes").is_none(), "{s}");
    assert_eq!(s["imagePullSecrets"], json!([{"name": "registry"}]));
    assert_eq!(s["tolerations"].as_array().unwrap().len(), 1);
    // The pod's own choice wins over its account's; its own mount at the path is kept.
    let mut own = pod("prod", "own", json!({}));
    own["spec"]["serviceAccountName"] = json!("quiet");
    own["spec"]["automountServiceAccountToken"] = json!(true);
    own["spec"]["initContainers"] = json!([{"name": "init", "image": "busybox"}]);
    own["spec"]["containers"][0]["volumeMounts"] =
        json!([{"name": "mine", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]);
    own["spec"]["volumes"] = json!([{"name": "mine", "emptyDir": {}}]);
    let created = post(&http, PODS, &own).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let s = spec(&created.body);
    assert_eq!(
        s["containers"][0]["volumeMounts"].as_array().unwrap().len(),
        1
    );
    let token = s["volumes"][1]["name"].as_str().unwrap();
    assert_eq!(s["initContainers"][0]["volumeMounts"][0]["name"], token);
}

#[tokio::test]
async fn priority_classes_give_their_value_and_a_missing_one_is_refused() {
    let (server, http) = start().await;
    namespaces(&server, &["prod"]);
    let classes = "/apis/scheduling.k8s.io/v1/priorityclasses";
    for (name, value, default) in [("low", 10, true), ("lower", 5, true), ("high", 1000, false)] {
        let made = post(
            &http,
            classes,
            &json!({"metadata": {"name": name}, "value": value, "globalDefault": default,
                    "preemptionPolicy": if name == "high" { "Never" } else { "PreemptLowerPriority" }}),
        )
        .await;
        assert_eq!(made.status, 201, "{}", made.body);
    }
    // No class named: the global default with the highest value.
    let created = post(&http, PODS, &pod("prod", "a", json!({}))).await;
    let s = spec(&created.body);
    assert_eq!(
        (&s["priorityClassName"], &s["priority"]),
        (&json!("low"), &json!(10))
    );
    let mut high = pod("prod", "b", json!({}));
    high["spec"]["priorityClassName"] = json!("high");
    let created = post(&http, PODS, &high).await;
    let s = spec(&created.body);
    assert_eq!(
        (&s["priority"], &s["preemptionPolicy"]),
        (&json!(1000), &json!("Never"))
    );
    let mut system = pod("prod", "c", json!({}));
    system["spec"]["priorityClassName"] = json!("system-cluster-critical");
    assert_eq!(
        spec(&post(&http, PODS, &system).await.body)["priority"],
        2_000_000_000
    );
    let mut missing = pod("prod", "d", json!({}));
    missing["spec"]["priorityClassName"] = json!("nope");
    let refused = post(&http, PODS, &missing).await;
    assert_eq!(refused.status, 403);
    assert_eq!(
        refused.body["message"],
        "pods \"d\" is forbidden: no PriorityClass with name nope was found"
    );
    let mut wrong = pod("prod", "e", json!({}));
    wrong["spec"]["priorityClassName"] = json!("high");
    wrong["spec"]["priority"] = json!(7);
    let refused = post(&http, PODS, &wrong).await;
    assert_eq!(refused.status, 403);
    assert_eq!(
        refused.body["message"],
        "pods \"e\" is forbidden: the integer value of priority (7) must not be provided in pod \
         spec; priority admission controller computed 1000 from the given PriorityClass name"
    );
}
