//! HTTP front end: a built-in kind's request body is decoded into its Go type, as the real
//! server decodes it: unknown fields dropped (a strict decoding error under
//! `fieldValidation=Strict`, a `Warning` under `Warn`, the default), values of the wrong type
//! refused with Go's unmarshal error, undeclared fields refused by server-side apply.
#![cfg(feature = "http")]

use serde_json::{Value, json};

use crate::support::http::{apply, get, namespaces, patch, post, start};

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/a/deployments";

fn deployment(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": name, "namespace": "a"}, "spec": spec})
}

/// A spec with two fields a Deployment does not have, one of them in a container.
fn misspelt_spec() -> Value {
    json!({
        "replicas": 2,
        "replicass": 3,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx", "imagee": "nginx:1"}]}
        }
    })
}

const UNKNOWN_WARNINGS: [&str; 2] = [
    "299 - \"unknown field \\\"spec.replicass\\\"\"",
    "299 - \"unknown field \\\"spec.template.spec.containers[0].imagee\\\"\"",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_fields_of_a_built_in_kind_are_dropped_or_refused() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);

    let strict = post(
        &http,
        &format!("{DEPLOYMENTS}?fieldValidation=Strict"),
        &deployment("web", misspelt_spec()),
    )
    .await;
    assert_eq!(strict.status, 400, "{}", strict.body);
    assert_eq!(
        strict.body["message"],
        "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: \
         unknown field \"spec.replicass\", unknown field \"spec.template.spec.containers[0].imagee\""
    );
    assert!(server.get("deployments", Some("a"), "web").is_err());

    // Warn (also the default) drops them with a warning each; Ignore drops them silently.
    for (mode, warned) in [("Warn", true), ("", true), ("Ignore", false)] {
        let name = format!("web-{}", if mode.is_empty() { "default" } else { mode }).to_lowercase();
        let created = post(
            &http,
            &format!("{DEPLOYMENTS}?fieldValidation={mode}"),
            &deployment(&name, misspelt_spec()),
        )
        .await;
        assert_eq!(created.status, 201, "{}", created.body);
        let expected: &[&str] = if warned { &UNKNOWN_WARNINGS } else { &[] };
        assert_eq!(created.warnings(), expected, "{mode:?}");
        let stored = get(&http, &format!("{DEPLOYMENTS}/{name}")).await.body;
        assert_eq!(stored["spec"]["replicas"], 2);
        assert!(stored["spec"].get("replicass").is_none(), "{stored}");
        // The container as sent, without the unknown field, with upstream's defaults.
        assert_eq!(
            stored["spec"]["template"]["spec"]["containers"],
            json!([{"name": "web", "image": "nginx", "imagePullPolicy": "Always",
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File"}])
        );
        assert_eq!(stored["spec"]["revisionHistoryLimit"], 10);
    }

    // A patch's result is decoded the same way; what does not decode is upstream's patch
    // handler's 422 on the field `patch`, whose value is the patched object.
    let at = |mode: &str| format!("{DEPLOYMENTS}/web-warn?fieldValidation={mode}");
    let merge = "application/merge-patch+json";
    let misspelt = json!({"spec": {"paused": true, "pausd": true}});
    let refused = patch(&http, &at("Strict"), merge, &misspelt).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert_eq!(refused.body["reason"], "Invalid");
    let message = refused.body["message"].as_str().unwrap();
    assert!(
        message.starts_with(" \"\" is invalid: patch: Invalid value: \"{")
            && message.contains("\\\"pausd\\\":true")
            && message.ends_with("}\": strict decoding error: unknown field \"spec.pausd\""),
        "{message}"
    );
    let cause = &refused.body["details"]["causes"][0];
    assert_eq!(
        (&cause["field"], &cause["reason"]),
        (&json!("patch"), &json!("FieldValueInvalid"))
    );
    let wrong = json!([{"op": "replace", "path": "/spec/replicas", "value": "two"}]);
    let refused = patch(&http, &at(""), "application/json-patch+json", &wrong).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(
        refused.body["message"].as_str().unwrap().ends_with(
            "\": json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas \
             of type int32"
        ),
        "{}",
        refused.body
    );
    let patched = patch(&http, &at("Warn"), merge, &misspelt).await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(
        patched.warnings(),
        ["299 - \"unknown field \\\"spec.pausd\\\"\""]
    );
    assert_eq!(patched.body["spec"]["paused"], true);
    assert!(patched.body["spec"].get("pausd").is_none());

    // Kinds without a status field drop one; the status subresource's kinds keep theirs.
    let cm = post(
        &http,
        "/api/v1/namespaces/a/configmaps",
        &json!({"metadata": {"name": "c"}, "data": {"k": "v"}, "status": {"x": 1}}),
    )
    .await;
    assert_eq!(cm.status, 201, "{}", cm.body);
    assert_eq!(cm.warnings(), ["299 - \"unknown field \\\"status\\\"\""]);
    assert!(cm.body.get("status").is_none());

    // The test's direct writes store what they are given (a state no real server would
    // hold, for clients that must survive one).
    let direct = server
        .create(
            "configmaps",
            &json!({"metadata": {"name": "raw", "namespace": "a"}, "data": {"n": 1}}),
        )
        .unwrap();
    assert_eq!(direct.to_value()["data"]["n"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_of_the_wrong_type_are_go_s_decoding_errors() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let cases = [
        (
            json!({"replicas": "3"}),
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            json!({"template": {"spec": {"containers": [{"name": "web", "ports": [{"containerPort": 8.5}]}]}}}),
            "json: cannot unmarshal number 8.5 into Go struct field ContainerPort.spec.template.spec.containers.ports.containerPort of type int32",
        ),
        (
            json!({"template": {"spec": {"containers": [{"name": "web", "resources": {"limits": {"memory": "lots"}}}]}}}),
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
    ];
    for (spec, error) in cases {
        let refused = post(&http, DEPLOYMENTS, &deployment("web", spec)).await;
        assert_eq!(refused.status, 400, "{}", refused.body);
        assert_eq!(refused.body["reason"], "BadRequest");
        assert_eq!(
            refused.body["message"],
            format!("Deployment in version \"v1\" cannot be handled as a Deployment: {error}")
        );
    }
    let secret = post(
        &http,
        "/api/v1/namespaces/a/secrets",
        &json!({"metadata": {"name": "s"}, "data": {"password": "hunter2"}}),
    )
    .await;
    assert_eq!(secret.status, 400, "{}", secret.body);
    assert_eq!(
        secret.body["message"],
        "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 4"
    );
    let secret = post(
        &http,
        "/api/v1/namespaces/a/secrets",
        &json!({"metadata": {"name": "s"}, "data": {"password": "aHVudGVyMg=="}, "stringData": {"user": "me"}}),
    )
    .await;
    assert_eq!(secret.status, 201, "{}", secret.body);
    // `stringData` is write-only: it lands in `data`, base64-encoded, as upstream converts it.
    let stored = server.get("secrets", Some("a"), "s").unwrap().to_value();
    assert_eq!(
        stored["data"],
        json!({"password": "aHVudGVyMg==", "user": "bWU="})
    );
    assert!(stored.get("stringData").is_none(), "{stored}");
    assert_eq!(secret.body["data"], stored["data"]);
    assert!(server.get("deployments", Some("a"), "web").is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_refuses_fields_a_built_in_kind_does_not_declare() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let at = format!("{DEPLOYMENTS}/web?fieldManager=me&fieldValidation=Ignore");
    // Upstream's walk stops at an object's first undeclared field (the fields after it are
    // not looked at), and names list items by their keys.
    let mut spec = misspelt_spec();
    let refused = apply(&http, &at, &deployment("web", spec.clone())).await;
    assert_eq!(refused.status, 500, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "failed to create typed patch object (a/web; apps/v1, Kind=Deployment): \
         .spec.replicass: field not declared in schema"
    );
    spec.as_object_mut().unwrap().remove("replicass");
    spec["template"]["spec"]["containers"][0]["zz"] = json!(1);
    let refused = apply(&http, &at, &deployment("web", spec.clone())).await;
    assert_eq!(
        refused.body["message"],
        "failed to create typed patch object (a/web; apps/v1, Kind=Deployment): \
         .spec.template.spec.containers[name=\"web\"].imagee: field not declared in schema"
    );
    let mut config = deployment("web", spec.clone());
    config["zone"] = json!("eu");
    let refused = apply(&http, &at, &config).await;
    assert_eq!(
        refused.body["message"],
        "failed to create typed patch object (a/web; apps/v1, Kind=Deployment): errors:\n  \
         .spec.template.spec.containers[name=\"web\"].imagee: field not declared in schema\n  \
         .zone: field not declared in schema"
    );
    assert!(server.get("deployments", Some("a"), "web").is_err());
    spec["template"]["spec"]["containers"][0] = json!({"name": "web", "image": "nginx"});
    let applied = apply(&http, &at, &deployment("web", spec)).await;
    assert_eq!(applied.status, 201, "{}", applied.body);
    assert_eq!(applied.body["spec"]["replicas"], 2);
}

/// A Deployment whose one container has `resources`.
fn sized(resources: Value) -> Value {
    deployment(
        "sized",
        json!({
            "selector": {"matchLabels": {"app": "sized"}},
            "template": {
                "metadata": {"labels": {"app": "sized"}},
                "spec": {"containers": [{"name": "app", "image": "nginx", "resources": resources}]}
            }
        }),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quantities_are_written_back_canonically_and_a_re_apply_changes_nothing() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let at = format!("{DEPLOYMENTS}/sized?fieldManager=ops");
    let resources = json!({"limits": {"cpu": "1000m", "memory": 1073741824},
                           "requests": {"cpu": 0.25, "memory": "1024Mi"}});
    let applied = apply(&http, &at, &sized(resources.clone())).await;
    assert_eq!(applied.status, 201, "{}", applied.body);
    let container = &applied.body["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["resources"],
        // A number's digits look canonical: kept, as a string.
        json!({"limits": {"cpu": "1", "memory": "1073741824"},
               "requests": {"cpu": "250m", "memory": "1Gi"}})
    );
    let stamp = |body: &Value| {
        (
            body["metadata"]["resourceVersion"].clone(),
            body["metadata"]["managedFields"][0]["time"].clone(),
        )
    };
    let first = stamp(&applied.body);
    // A second later (managed fields carry whole seconds), the same configuration differs
    // from what is stored only in its quantities' texts, which the server writes back as
    // stored: upstream keeps the managed fields' times and makes no write.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let again = apply(&http, &at, &sized(resources)).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(stamp(&again.body), first);
    let stored = server
        .get("deployments", Some("a"), "sized")
        .unwrap()
        .to_value();
    assert_eq!(stamp(&stored), first);
    // A real change is written, with a new time.
    let changed = apply(&http, &at, &sized(json!({"limits": {"cpu": "2"}}))).await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    let (rv, time) = stamp(&changed.body);
    assert_ne!(rv, first.0);
    assert_ne!(time, first.1);
    assert_eq!(
        changed.body["spec"]["template"]["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "2"}})
    );
}

const PODS: &str = "/api/v1/namespaces/a/pods";

fn pod(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_created_pod_is_pending_with_its_qos_class() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    // Limits alone: the requests default to them, so the pod is Guaranteed.
    let limited = json!({"containers": [{"name": "app", "image": "nginx",
        "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}}}]});
    let created = post(&http, PODS, &pod("limited", limited)).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(
        created.body["status"],
        json!({"phase": "Pending", "qosClass": "Guaranteed"})
    );
    let plain = json!({"containers": [{"name": "app", "image": "nginx"}]});
    let created = post(&http, PODS, &pod("plain", plain.clone())).await;
    assert_eq!(created.body["status"]["qosClass"], "BestEffort");
    // A request's own QoS class is kept (upstream's `GetPodQOS` prefers it); the rest of
    // its status is not.
    let mut sent = pod("claimed", plain.clone());
    sent["status"] = json!({"qosClass": "Burstable", "phase": "Running"});
    let created = post(&http, PODS, &sent).await;
    assert_eq!(
        created.body["status"],
        json!({"phase": "Pending", "qosClass": "Burstable"})
    );
    // Scheduling gates: the PodScheduled condition says so.
    let mut gated = plain.clone();
    gated["schedulingGates"] = json!([{"name": "example.com/quota"}]);
    let created = post(&http, PODS, &pod("gated", gated)).await;
    let condition = &created.body["status"]["conditions"][0];
    assert_eq!(
        (
            &condition["type"],
            &condition["status"],
            &condition["reason"],
            &condition["lastProbeTime"]
        ),
        (
            &json!("PodScheduled"),
            &json!("False"),
            &json!("SchedulingGated"),
            &Value::Null
        )
    );
    assert!(condition["lastTransitionTime"].is_string(), "{condition}");
    // A status write without the QoS class keeps it: it is immutable.
    let written = patch(
        &http,
        &format!("{PODS}/limited/status"),
        "application/merge-patch+json",
        &json!({"status": {"qosClass": null, "phase": "Running"}}),
    )
    .await;
    assert_eq!(written.status, 200, "{}", written.body);
    assert_eq!(
        written.body["status"],
        json!({"phase": "Running", "qosClass": "Guaranteed"})
    );
}
