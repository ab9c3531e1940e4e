//! HTTP front end: binding pods to nodes (`POST pods/<name>/binding`, `POST bindings`), as a
//! scheduler written with kube-client binds them, answered as upstream's binding storage
//! answers.
#![cfg(feature = "http")]

use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_client::Api;
use kube_client::api::PostParams;
use reqwest::Method;
use serde_json::{Value, json};

use crate::http_kube_client::kube;
use crate::support::http::{get, namespaces, post, send, start};

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "ns-0"},
           "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}})
}

fn binding(name: &str, node: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Binding",
           "metadata": {"name": name, "namespace": "ns-0", "annotations": {"scheduled-by": "test"}},
           "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduler_binds_pods_to_nodes() {
    let (server, http) = start().await;
    namespaces(&server, &["ns-0"]);
    for name in ["a", "b", "gated", "gone"] {
        let mut body = pod(name);
        if name == "gated" {
            body["spec"]["schedulingGates"] = json!([{"name": "example.com/wait"}]);
        }
        assert_eq!(
            post(&http, "/api/v1/namespaces/ns-0/pods", &body)
                .await
                .status,
            201
        );
    }

    // Through kube-client, as a scheduler binds: the Success status, the pod placed.
    let client = kube(&http).await;
    let pods: Api<Pod> = Api::namespaced(client, "ns-0");
    let request = Binding {
        metadata: ObjectMeta {
            name: Some("a".into()),
            ..ObjectMeta::default()
        },
        target: ObjectReference {
            kind: Some("Node".into()),
            name: Some("node-1".into()),
            ..ObjectReference::default()
        },
    };
    let answered: Value = pods
        .create_subresource("binding", "a", &PostParams::default(), &request)
        .await
        .unwrap();
    assert_eq!(
        answered,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
    );
    let a = pods.get("a").await.unwrap();
    assert_eq!(a.spec.unwrap().node_name.as_deref(), Some("node-1"));
    let conditions = a.status.unwrap().conditions.unwrap();
    let scheduled = conditions
        .iter()
        .find(|c| c.type_ == "PodScheduled")
        .unwrap();
    assert_eq!(
        (scheduled.status.as_str(), scheduled.reason.as_deref()),
        ("True", None)
    );
    assert!(scheduled.last_transition_time.is_some());

    // The collection URL names the pod in the body; the binding's annotations are copied.
    let bound = post(
        &http,
        "/api/v1/namespaces/ns-0/bindings",
        &binding("b", "node-2"),
    )
    .await;
    assert_eq!(
        (bound.status.as_u16(), &bound.body["status"]),
        (201, &json!("Success"))
    );
    let b = server.get("pods", Some("ns-0"), "b").unwrap().to_value();
    assert_eq!(b["spec"]["nodeName"], "node-2");
    assert_eq!(b["metadata"]["annotations"]["scheduled-by"], "test");

    // A bound pod stays where it is; a gated pod cannot be bound; nor one being deleted.
    let again = post(
        &http,
        "/api/v1/namespaces/ns-0/pods/a/binding",
        &binding("a", "node-3"),
    )
    .await;
    assert_eq!(again.status, 409);
    assert_eq!(
        again.body["message"],
        "Operation cannot be fulfilled on pods/binding \"a\": pod a is already assigned to node \"node-1\""
    );
    assert_eq!(
        (&again.body["reason"], &again.body["details"]["kind"]),
        (&json!("Conflict"), &json!("pods/binding"))
    );
    let gated = post(
        &http,
        "/api/v1/namespaces/ns-0/pods/gated/binding",
        &binding("gated", "node-1"),
    )
    .await;
    assert_eq!(
        (
            gated.status.as_u16(),
            gated.body["message"].as_str().unwrap()
        ),
        (
            409,
            "Operation cannot be fulfilled on pods/binding \"gated\": pod gated has non-empty \
             .spec.schedulingGates"
        )
    );
    let mut held = server.get("pods", Some("ns-0"), "gone").unwrap().to_value();
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    server.update("pods", &held).unwrap();
    let deleted = send(
        &http,
        Method::DELETE,
        "/api/v1/namespaces/ns-0/pods/gone",
        None,
    )
    .await;
    assert_eq!(deleted.status, 200);
    let gone = post(
        &http,
        "/api/v1/namespaces/ns-0/pods/gone/binding",
        &binding("gone", "node-1"),
    )
    .await;
    assert_eq!(gone.status, 409);
    assert!(
        gone.body["message"]
            .as_str()
            .unwrap()
            .ends_with("pod gone is being deleted, cannot be assigned to a host"),
        "{}",
        gone.body
    );

    // The binding's uid is a precondition on the pod.
    let mut stale = binding("gated", "node-1");
    stale["metadata"]["uid"] = json!("not-the-pod");
    let refused = post(&http, "/api/v1/namespaces/ns-0/pods/gated/binding", &stale).await;
    assert_eq!(refused.status, 409);
    let uid = server
        .get("pods", Some("ns-0"), "gated")
        .unwrap()
        .uid()
        .to_owned();
    assert_eq!(
        refused.body["message"],
        format!(
            "Operation cannot be fulfilled on pods \"gated\": StorageError: invalid object, \
             Code: 4, Key: /registry/pods/ns-0/gated, ResourceVersion: 0, AdditionalErrorMsg: \
             Precondition failed: UID in precondition: not-the-pod, UID in object meta: {uid}"
        )
    );

    // Malformed bindings: a name that is not the URL's (400), no node (upstream's 500).
    let other = post(
        &http,
        "/api/v1/namespaces/ns-0/pods/gated/binding",
        &binding("a", "node-1"),
    )
    .await;
    assert_eq!(
        (other.status.as_u16(), &other.body["message"]),
        (
            400,
            &json!("name in URL does not match name in Binding object")
        )
    );
    let mut nowhere = binding("gated", "");
    nowhere["target"] = json!({});
    let nowhere = post(
        &http,
        "/api/v1/namespaces/ns-0/pods/gated/binding",
        &nowhere,
    )
    .await;
    assert_eq!(
        (nowhere.status.as_u16(), &nowhere.body["message"]),
        (500, &json!("target.name: Required value"))
    );
    let missing = post(
        &http,
        "/api/v1/namespaces/ns-0/pods/none/binding",
        &binding("none", "node-1"),
    )
    .await;
    assert_eq!(
        (missing.status.as_u16(), &missing.body["reason"]),
        (404, &json!("NotFound"))
    );

    // A dry run answers as the binding would and changes nothing.
    server
        .update("pods", &{
            let mut v = server
                .get("pods", Some("ns-0"), "gated")
                .unwrap()
                .to_value();
            v["spec"]["schedulingGates"] = json!([]);
            v
        })
        .unwrap();
    let before = server.get("pods", Some("ns-0"), "gated").unwrap();
    let dry = post(
        &http,
        "/api/v1/namespaces/ns-0/pods/gated/binding?dryRun=All",
        &binding("gated", "node-1"),
    )
    .await;
    assert_eq!(dry.status, 201);
    let after = server.get("pods", Some("ns-0"), "gated").unwrap();
    assert_eq!(before.resource_version(), after.resource_version());
    assert!(after.to_value()["spec"].get("nodeName").is_none());

    // Only POST; both URLs in discovery, as upstream lists them.
    assert_eq!(
        get(&http, "/api/v1/namespaces/ns-0/pods/a/binding")
            .await
            .status,
        405
    );
    let core = get(&http, "/api/v1").await;
    let listed = |name: &str| {
        core.body["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} not in discovery"))
    };
    assert_eq!(
        (
            &listed("pods/binding")["kind"],
            &listed("pods/binding")["verbs"]
        ),
        (&json!("Binding"), &json!(["create"]))
    );
    assert_eq!(listed("bindings")["verbs"], json!(["create"]));
}
