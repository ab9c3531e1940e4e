//! HTTP front end: HorizontalPodAutoscalers are one storage served in `autoscaling/v2` and
//! `autoscaling/v1`, as the real server serves them: a write through either version is
//! read, listed and watched through both at the same resourceVersion; v1 carries what it
//! has no field for in round-trip annotations (Go's JSON of v1's metric types, of the
//! conditions, of the internal behavior), so that a v1 client that writes back what it read
//! loses nothing; v2 never keeps those annotations.
#![cfg(feature = "http")]

use k8s_openapi::api::autoscaling::{v1 as autoscaling_v1, v2 as autoscaling_v2};
use kube_client::api::{Api, ListParams, PostParams};
use reqwest::Method;
use serde_json::{Value, json};

use crate::http_kube_client::kube;
use crate::support::http::{WatchLines, get, namespaces, post, put, send, start};

const V1: &str = "/apis/autoscaling/v1/namespaces/a/horizontalpodautoscalers";
const V2: &str = "/apis/autoscaling/v2/namespaces/a/horizontalpodautoscalers";

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

fn target() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"})
}

async fn event(watch: &mut WatchLines) -> Value {
    let got = watch.event().await;
    assert_ne!(got["type"], "ERROR", "{got}");
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1_autoscaler_is_stored_as_v2_and_read_through_both() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let from = server.resource_version();
    let mut v1_watch =
        WatchLines::open(&http, &format!("{V1}?watch=true&resourceVersion={from}")).await;
    let mut v2_watch =
        WatchLines::open(&http, &format!("{V2}?watch=true&resourceVersion={from}")).await;

    // What `kubectl autoscale` sends.
    let made = post(
        &http,
        V1,
        &json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": "web"},
                "spec": {"scaleTargetRef": target(), "maxReplicas": 5,
                         "targetCPUUtilizationPercentage": 60}}),
    )
    .await;
    assert_eq!(made.status, 201, "{}", made.body);
    assert_eq!(made.body["apiVersion"], "autoscaling/v1");
    assert_eq!(made.body["spec"]["minReplicas"], 1, "v1's default");
    assert_eq!(made.body["spec"]["targetCPUUtilizationPercentage"], 60);
    let rv = made.body["metadata"]["resourceVersion"].clone();

    let stored = get(&http, &format!("{V2}/web")).await;
    assert_eq!(stored.status, 200, "{}", stored.body);
    assert_eq!(stored.body["apiVersion"], "autoscaling/v2");
    assert_eq!(
        stored.body["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 60}}}])
    );
    assert!(
        stored.body["spec"]
            .get("targetCPUUtilizationPercentage")
            .is_none()
    );
    for field in ["uid", "resourceVersion", "creationTimestamp"] {
        assert_eq!(
            stored.body["metadata"][field], made.body["metadata"][field],
            "{field}"
        );
    }
    for (watch, version) in [
        (&mut v1_watch, "autoscaling/v1"),
        (&mut v2_watch, "autoscaling/v2"),
    ] {
        let added = event(watch).await;
        assert_eq!(added["type"], "ADDED");
        assert_eq!(added["object"]["apiVersion"], version);
        assert_eq!(added["object"]["metadata"]["resourceVersion"], rv);
    }

    // Without a metric, v1 always meant 80% CPU; upstream's conversion says so.
    let bare = post(
        &http,
        V1,
        &json!({"metadata": {"name": "bare"},
                "spec": {"scaleTargetRef": target(), "maxReplicas": 3}}),
    )
    .await;
    assert_eq!(bare.status, 201, "{}", bare.body);
    assert_eq!(bare.body["spec"]["targetCPUUtilizationPercentage"], 80);
    let bare_v2 = get(&http, &format!("{V2}/bare")).await;
    assert_eq!(
        bare_v2.body["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        80
    );

    // A status written through v1 (an old autoscaler) reaches v2 as what it said: a current
    // utilization, no average value (the v1 form's annotation says "0", Go's zero quantity).
    let mut status = made.body.clone();
    status["status"] = json!({"currentReplicas": 2, "desiredReplicas": 3,
                              "currentCPUUtilizationPercentage": 45});
    let written = put(&http, &format!("{V1}/web/status"), &status).await;
    assert_eq!(written.status, 200, "{}", written.body);
    assert_eq!(
        written.body["status"]["currentCPUUtilizationPercentage"],
        45
    );
    assert_eq!(
        written.body["metadata"]["annotations"][CURRENT_METRICS],
        "[{\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\",\
         \"currentAverageUtilization\":45,\"currentAverageValue\":\"0\"}}]"
    );
    let v2 = get(&http, &format!("{V2}/web")).await;
    assert_eq!(
        v2.body["status"],
        json!({"currentReplicas": 2, "desiredReplicas": 3, "currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu",
             "current": {"averageUtilization": 45}}}]})
    );
    assert!(
        v2.body["metadata"].get("annotations").is_none(),
        "{}",
        v2.body
    );
    for watch in [&mut v1_watch, &mut v2_watch] {
        assert_eq!(event(watch).await["object"]["metadata"]["name"], "bare");
        let modified = event(watch).await;
        assert_eq!(modified["type"], "MODIFIED");
        assert_eq!(
            modified["object"]["metadata"]["resourceVersion"],
            written.body["metadata"]["resourceVersion"]
        );
    }

    // Deleted through v1: gone from both, each watch told.
    let deleted = send(&http, Method::DELETE, &format!("{V1}/web"), None).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert_eq!(get(&http, &format!("{V2}/web")).await.status, 404);
    for (watch, version) in [
        (&mut v1_watch, "autoscaling/v1"),
        (&mut v2_watch, "autoscaling/v2"),
    ] {
        let gone = event(watch).await;
        assert_eq!(gone["type"], "DELETED");
        assert_eq!(gone["object"]["apiVersion"], version);
    }
    let v2_gone = get(
        &http,
        &format!("{V2}?resourceVersion={}", server.resource_version()),
    )
    .await;
    assert_eq!(v2_gone.body["items"].as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_v1_cannot_say_travels_in_annotations_and_comes_back() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let made = post(
        &http,
        V2,
        &json!({"metadata": {"name": "api", "annotations": {METRICS: "[]", "team": "x"}},
                "spec": {"scaleTargetRef": target(), "minReplicas": 2, "maxReplicas": 8,
                         "metrics": [
                             {"type": "Pods", "pods": {"metric": {"name": "rps"},
                              "target": {"type": "AverageValue", "averageValue": "1k"}}},
                             {"type": "Resource", "resource": {"name": "cpu",
                              "target": {"type": "Utilization", "averageUtilization": 70}}},
                             {"type": "Object", "object": {
                              "describedObject": {"apiVersion": "networking.k8s.io/v1",
                                                  "kind": "Ingress", "name": "main"},
                              "metric": {"name": "hits", "selector": {"matchLabels": {"q": "a&b"}}},
                              "target": {"type": "AverageValue", "averageValue": "50"}}},
                         ],
                         "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}}),
    )
    .await;
    assert_eq!(made.status, 201, "{}", made.body);
    // v2 drops round-trip annotations it is sent, as upstream's conversion does.
    assert_eq!(made.body["metadata"]["annotations"], json!({"team": "x"}));
    let mut status = made.body.clone();
    status["status"] = json!({"desiredReplicas": 2, "currentMetrics": [
        {"type": "Resource", "resource": {"name": "cpu",
         "current": {"averageUtilization": 40, "averageValue": "200m"}}}],
        "conditions": [{"type": "AbleToScale", "status": "True",
                        "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "ReadyForNewScale"}]});
    let with_status = put(&http, &format!("{V2}/api/status"), &status).await;
    assert_eq!(with_status.status, 200, "{}", with_status.body);

    let v1 = get(&http, &format!("{V1}/api")).await;
    assert_eq!(v1.status, 200, "{}", v1.body);
    assert_eq!(v1.body["spec"]["targetCPUUtilizationPercentage"], 70);
    assert_eq!(v1.body["status"]["currentCPUUtilizationPercentage"], 40);
    let annotations = &v1.body["metadata"]["annotations"];
    assert_eq!(annotations["team"], "x");
    // Go's JSON of v1's metric types: fields in Go's order, `&` escaped, the quantity a
    // value target leaves unset written as zero.
    assert_eq!(
        annotations[METRICS],
        "[{\"type\":\"Pods\",\"pods\":{\"metricName\":\"rps\",\"targetAverageValue\":\"1k\"}},\
         {\"type\":\"Object\",\"object\":{\"target\":{\"kind\":\"Ingress\",\"name\":\"main\",\
         \"apiVersion\":\"networking.k8s.io/v1\"},\"metricName\":\"hits\",\"targetValue\":\"0\",\
         \"selector\":{\"matchLabels\":{\"q\":\"a\\u0026b\"}},\"averageValue\":\"50\"}}]"
    );
    assert_eq!(
        annotations[CURRENT_METRICS],
        "[{\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\",\
         \"currentAverageUtilization\":40,\"currentAverageValue\":\"200m\"}}]"
    );
    assert_eq!(
        annotations[CONDITIONS],
        "[{\"type\":\"AbleToScale\",\"status\":\"True\",\
         \"lastTransitionTime\":\"2026-01-01T00:00:00Z\",\"reason\":\"ReadyForNewScale\"}]"
    );
    // The internal Go type, without JSON tags: Go's field names, v2's defaults filled in.
    assert_eq!(
        annotations[BEHAVIOR],
        "{\"ScaleUp\":{\"StabilizationWindowSeconds\":0,\"SelectPolicy\":\"Max\",\
         \"Policies\":[{\"Type\":\"Pods\",\"Value\":4,\"PeriodSeconds\":15},\
         {\"Type\":\"Percent\",\"Value\":100,\"PeriodSeconds\":15}],\"Tolerance\":null},\
         \"ScaleDown\":{\"StabilizationWindowSeconds\":60,\"SelectPolicy\":\"Max\",\
         \"Policies\":[{\"Type\":\"Percent\",\"Value\":100,\"PeriodSeconds\":15}],\
         \"Tolerance\":null}}"
    );

    // A v1 client writes back what it read, with one change: v2 keeps everything else.
    let before = get(&http, &format!("{V2}/api")).await.body;
    let mut edited = v1.body.clone();
    edited["spec"]["maxReplicas"] = json!(9);
    let replaced = put(&http, &format!("{V1}/api"), &edited).await;
    assert_eq!(replaced.status, 200, "{}", replaced.body);
    let after = get(&http, &format!("{V2}/api")).await.body;
    assert_eq!(after["spec"]["maxReplicas"], 9);
    let metrics = after["spec"]["metrics"].as_array().unwrap();
    // The CPU target comes last: upstream's conversion appends it to the annotation's.
    assert_eq!(metrics.len(), 3);
    assert_eq!(metrics[0], before["spec"]["metrics"][0]);
    assert_eq!(metrics[2], before["spec"]["metrics"][1]);
    assert_eq!(metrics[1]["object"]["target"]["averageValue"], "50");
    assert_eq!(after["spec"]["behavior"], before["spec"]["behavior"]);
    assert_eq!(after["status"], before["status"]);
    assert_eq!(after["metadata"]["annotations"], json!({"team": "x"}));

    // A round-trip annotation that does not decode is the request's 400, nothing stored.
    for (key, text, said) in [
        (
            BEHAVIOR,
            "{\"ScaleUp\": 3}",
            "cannot unmarshal number into Go struct field",
        ),
        (
            METRICS,
            "{}",
            "cannot unmarshal object into Go value of type []v1.MetricSpec",
        ),
        (
            METRICS,
            "[{\"type\":\"Pods\",\"pods\":{\"metricName\":7}}]",
            "json: cannot unmarshal",
        ),
    ] {
        let mut broken = replaced.body.clone();
        broken["metadata"]["annotations"][key] = json!(text);
        let refused = put(&http, &format!("{V1}/api"), &broken).await;
        assert_eq!(refused.status, 400, "{key}: {}", refused.body);
        let message = refused.body["message"].as_str().unwrap();
        assert!(
            message.starts_with(
                "HorizontalPodAutoscaler in version \"v1\" cannot be handled as a \
                 HorizontalPodAutoscaler: "
            ) && message.contains(said),
            "{message}"
        );
    }
    assert_eq!(get(&http, &format!("{V2}/api")).await.body, after);
}

/// kube-client's typed APIs of both versions (k8s-openapi's `autoscaling::v1` and `v2`) on
/// the same objects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_client_uses_both_versions() {
    let (server, http) = start().await;
    namespaces(&server, &["ns-0"]);
    let client = kube(&http).await;
    let v1: Api<autoscaling_v1::HorizontalPodAutoscaler> = Api::default_namespaced(client.clone());
    let v2: Api<autoscaling_v2::HorizontalPodAutoscaler> = Api::default_namespaced(client);
    let hpa: autoscaling_v1::HorizontalPodAutoscaler = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": target(), "maxReplicas": 4,
                 "targetCPUUtilizationPercentage": 75},
    }))
    .unwrap();
    let made = v1.create(&PostParams::default(), &hpa).await.unwrap();
    let spec = made.spec;
    assert_eq!(spec.min_replicas, Some(1));
    assert_eq!(spec.target_cpu_utilization_percentage, Some(75));
    let listed = v2.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    let metrics = listed.items[0].spec.metrics.clone().unwrap();
    let cpu = metrics[0].resource.as_ref().unwrap();
    assert_eq!(cpu.name, "cpu");
    assert_eq!(cpu.target.average_utilization, Some(75));
    assert_eq!(
        listed.items[0].metadata.resource_version,
        made.metadata.resource_version
    );
    let again = v1.get("web").await.unwrap();
    assert_eq!(again.spec.target_cpu_utilization_percentage, Some(75));
}

/// A validating admission policy whose rules name `autoscaling/v2` only sees a write through
/// v1 as well, converted to v2 (upstream's `matchPolicy: Equivalent`, the default): the
/// request's kind and resource are v2's, its `requestKind` v1's; under `matchPolicy: Exact`
/// the v1 write passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_on_v2_sees_writes_through_v1_converted() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let policy = |match_policy: &str| {
        json!({
            "metadata": {"name": "cpu-floor"},
            "spec": {
                "matchConstraints": {"matchPolicy": match_policy, "resourceRules": [{
                    "apiGroups": ["autoscaling"], "apiVersions": ["v2"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["horizontalpodautoscalers"]}]},
                "validations": [{
                    "expression": "object.spec.metrics.all(m, m.type != 'Resource' || \
                                   m.resource.target.averageUtilization >= 50)",
                    "messageExpression": "'cpu target below 50% (' + request.kind.version + \
                                          ' seen, ' + request.requestKind.version + ' sent)'"}],
            },
        })
    };
    let policies = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
    let made = post(&http, policies, &policy("Equivalent")).await;
    assert_eq!(made.status, 201, "{}", made.body);
    let bound = post(
        &http,
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
        &json!({"metadata": {"name": "cpu-floor"},
                "spec": {"policyName": "cpu-floor", "validationActions": ["Deny"]}}),
    )
    .await;
    assert_eq!(bound.status, 201, "{}", bound.body);
    let low = |name: &str| {
        json!({"metadata": {"name": name},
               "spec": {"scaleTargetRef": target(), "maxReplicas": 3,
                        "targetCPUUtilizationPercentage": 20}})
    };
    let refused = post(&http, V1, &low("low")).await;
    // No `reason` in the validation: upstream's default, `Invalid`.
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "horizontalpodautoscalers.autoscaling \"low\" is forbidden: ValidatingAdmissionPolicy \
         'cpu-floor' with binding 'cpu-floor' denied request: cpu target below 50% (v2 seen, \
         v1 sent)"
    );
    let fine = post(
        &http,
        V1,
        &json!({"metadata": {"name": "fine"},
                "spec": {"scaleTargetRef": target(), "maxReplicas": 3,
                         "targetCPUUtilizationPercentage": 60}}),
    )
    .await;
    assert_eq!(fine.status, 201, "{}", fine.body);

    // Exact: the v1 write is not the policy's business.
    let mut exact = get(&http, &format!("{policies}/cpu-floor")).await.body;
    exact["spec"]["matchConstraints"]["matchPolicy"] = json!("Exact");
    let changed = put(&http, &format!("{policies}/cpu-floor"), &exact).await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    let passed = post(&http, V1, &low("low")).await;
    assert_eq!(passed.status, 201, "{}", passed.body);
    let through_v2 = post(
        &http,
        V2,
        &json!({"metadata": {"name": "low-2"},
                "spec": {"scaleTargetRef": target(), "maxReplicas": 3, "metrics": [
                    {"type": "Resource", "resource": {"name": "cpu",
                     "target": {"type": "Utilization", "averageUtilization": 20}}}]}}),
    )
    .await;
    assert_eq!(through_v2.status, 422, "{}", through_v2.body);
}
