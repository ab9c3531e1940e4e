//! HTTP front end: validating admission policies run on writes as upstream's admission
//! plugin runs them: matched by the policy's constraints and the binding's resources (here a
//! namespace selector), parameters from a ConfigMap, match conditions, variables, messages,
//! reasons and codes, `Deny` and `Warn` actions, missing parameters and evaluation errors
//! under the failure policy.
#![cfg(feature = "http")]

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::http::{Answer, get, post, put, send, start};

const POLICIES: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";

fn deployments(ns: &str) -> String {
    format!("/apis/apps/v1/namespaces/{ns}/deployments")
}

fn deployment(name: &str, replicas: i64, labels: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
    })
}

fn policy() -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "replica-limit"},
        "spec": {
            "failurePolicy": "Fail",
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
            "matchConditions": [{"name": "not-exempt", "expression":
                "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"}],
            "variables": [{"name": "max", "expression": "int(params.data.max)"}],
            "validations": [{
                "expression": "object.spec.replicas <= variables.max",
                "messageExpression": "'replicas must be at most ' + string(variables.max)",
                "reason": "Forbidden"}],
        },
    })
}

fn binding(name: &str, env: &str, action: &str) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": "replica-limit",
            "validationActions": [action],
            "paramRef": {"name": "limits", "parameterNotFoundAction": "Deny"},
            "matchResources": {"namespaceSelector": {"matchLabels": {"env": env}}},
        },
    })
}

fn created(answer: &Answer) {
    assert_eq!(answer.status, 201, "{}", answer.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_deny_and_warn_as_their_bindings_say() {
    let (_server, http) = start().await;
    for (ns, env) in [
        ("prod", Some("prod")),
        ("dev", Some("dev")),
        ("other", None),
    ] {
        let labels = env.map_or(json!({}), |e| json!({"env": e}));
        created(
            &post(
                &http,
                "/api/v1/namespaces",
                &json!({"apiVersion": "v1", "kind": "Namespace",
                        "metadata": {"name": ns, "labels": labels}}),
            )
            .await,
        );
    }
    for (ns, max) in [("prod", "3"), ("dev", "5")] {
        created(
            &post(
                &http,
                &format!("/api/v1/namespaces/{ns}/configmaps"),
                &json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "limits"}, "data": {"max": max}}),
            )
            .await,
        );
    }
    created(&post(&http, POLICIES, &policy()).await);
    created(
        &post(
            &http,
            BINDINGS,
            &binding("replica-limit-prod", "prod", "Deny"),
        )
        .await,
    );
    created(
        &post(
            &http,
            BINDINGS,
            &binding("replica-limit-dev", "dev", "Warn"),
        )
        .await,
    );

    // Denied in prod, with the validation's reason and message.
    let refused = post(
        &http,
        &deployments("prod"),
        &deployment("web", 4, json!({})),
    )
    .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(refused.body["reason"], "Forbidden");
    assert_eq!(
        refused.body["message"],
        "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'replica-limit' with \
         binding 'replica-limit-prod' denied request: replicas must be at most 3"
    );
    assert_eq!(refused.body["details"]["kind"], "deployments");
    created(
        &post(
            &http,
            &deployments("prod"),
            &deployment("web", 3, json!({})),
        )
        .await,
    );
    // An update is checked too.
    let mut stored = get(&http, &format!("{}/web", deployments("prod")))
        .await
        .body;
    stored["spec"]["replicas"] = json!(9);
    let refused = put(&http, &format!("{}/web", deployments("prod")), &stored).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    // The match condition exempts a labelled deployment.
    created(
        &post(
            &http,
            &deployments("prod"),
            &deployment("batch", 10, json!({"exempt": "yes"})),
        )
        .await,
    );
    // Warned in dev; nothing in a namespace no binding selects.
    let warned = post(&http, &deployments("dev"), &deployment("web", 6, json!({}))).await;
    created(&warned);
    assert_eq!(
        warned.warnings(),
        [
            "299 - \"Validation failed for ValidatingAdmissionPolicy 'replica-limit' with binding \
          'replica-limit-dev': replicas must be at most 5\""
        ]
    );
    let free = post(
        &http,
        &deployments("other"),
        &deployment("web", 10, json!({})),
    )
    .await;
    created(&free);
    assert!(free.warnings().is_empty());

    // Without its parameter, a binding with `parameterNotFoundAction: Deny` refuses (422).
    let gone = send(
        &http,
        Method::DELETE,
        "/api/v1/namespaces/prod/configmaps/limits",
        None,
    )
    .await;
    assert_eq!(gone.status, 200, "{}", gone.body);
    let refused = post(
        &http,
        &deployments("prod"),
        &deployment("api", 1, json!({})),
    )
    .await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "deployments.apps \"api\" is forbidden: ValidatingAdmissionPolicy 'replica-limit' with \
         binding 'replica-limit-prod' denied request: failed to configure binding: no params \
         found for policy binding with `Deny` parameterNotFoundAction"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evaluation_errors_follow_the_failure_policy() {
    let (_server, http) = start().await;
    created(
        &post(
            &http,
            "/api/v1/namespaces",
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}),
        )
        .await,
    );
    let policy = |name: &str, failure: &str| {
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": failure,
                "matchConstraints": {"resourceRules": [{
                    "apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["*"], "resources": ["configmaps"]}]},
                "validations": [{"expression": "object.data.size == '1'"}],
            },
        })
    };
    let bind = |name: &str| {
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": format!("{name}-binding")},
            "spec": {"policyName": name, "validationActions": ["Deny"]},
        })
    };
    // A policy whose expression does not compile is refused when written, as upstream's
    // validation refuses it.
    let mut broken = policy("broken", "Fail");
    broken["spec"]["validations"][0]["expression"] = json!("object.data.size ==");
    let refused = post(&http, POLICIES, &broken).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    let message = refused.body["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "ValidatingAdmissionPolicy.admissionregistration.k8s.io \"broken\" is invalid: \
             spec.validations[0].expression: Invalid value: \"object.data.size ==\": \
             compilation failed: "
        ),
        "{message}"
    );
    let mut unbound = bind("broken");
    unbound["spec"]["validationActions"] = json!([]);
    let refused = post(&http, BINDINGS, &unbound).await;
    assert_eq!(
        refused.body["message"],
        "ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io \"broken-binding\" is \
         invalid: spec.validationActions: Required value: at least one validation action is \
         required"
    );
    created(&post(&http, POLICIES, &policy("lenient", "Ignore")).await);
    created(&post(&http, BINDINGS, &bind("lenient")).await);
    let cm = |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data});
    // `object.data` has no `size`: an error, ignored.
    created(
        &post(
            &http,
            "/api/v1/namespaces/a/configmaps",
            &cm(json!({"x": "y"})),
        )
        .await,
    );
    // A false expression without a message: `failed expression: ...`, reason Invalid (422).
    let refused = post(
        &http,
        "/api/v1/namespaces/a/configmaps",
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"},
                "data": {"size": "2"}}),
    )
    .await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "configmaps \"d\" is forbidden: ValidatingAdmissionPolicy 'lenient' with binding \
         'lenient-binding' denied request: failed expression: object.data.size == '1'"
    );
    // Under `Fail` the error refuses, worded as upstream's filter words it.
    created(&post(&http, POLICIES, &policy("strict", "Fail")).await);
    created(&post(&http, BINDINGS, &bind("strict")).await);
    let refused = post(
        &http,
        "/api/v1/namespaces/a/configmaps",
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "e"},
                "data": {"x": "y"}}),
    )
    .await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    let message = refused.body["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "configmaps \"e\" is forbidden: ValidatingAdmissionPolicy 'strict' with binding \
             'strict-binding' denied request: expression 'object.data.size == '1'' resulted in \
             error: "
        ),
        "{message}"
    );
    // A delete is admitted too (DELETE matches `*`; `object` is null there, so the
    // expression errs and the strict policy refuses).
    let refused = send(
        &http,
        Method::DELETE,
        "/api/v1/namespaces/a/configmaps/c",
        None,
    )
    .await;
    assert_eq!(refused.status, 422, "{}", refused.body);
}
