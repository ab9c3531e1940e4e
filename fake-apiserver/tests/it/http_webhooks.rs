//! HTTP front end: admission webhooks called on writes as upstream's webhook admission
//! plugins call them, against a real HTTPS webhook server (a certificate signed by a CA made
//! for the test, named by the configuration's `caBundle`): mutating webhooks' JSON patches
//! stored, validating webhooks' refusals answered with their message and code, the review
//! each is sent, the failure policy of a webhook that cannot be called or answers too late,
//! selectors and match conditions, dry runs and side effects, reinvocation, and a write
//! admitted again when its object changed while its webhooks were called.
#![cfg(feature = "http")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::http::{get, namespaces, patch, pod, post, send, start};
use crate::support::webhook::{WebhookServer, allow, deny, respond};

const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
const PODS: &str = "/api/v1/namespaces/prod/pods";

/// A webhook of `server` at `path` for `operations` on pods.
fn webhook(name: &str, server: &WebhookServer, path: &str, operations: &[&str]) -> Value {
    json!({
        "name": name,
        "clientConfig": {"url": server.url(path), "caBundle": server.ca_bundle()},
        "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": operations,
                   "resources": ["pods"], "scope": "Namespaced"}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    })
}

/// Stores the configuration `name` (`collection`: mutating or validating) of `webhooks`.
async fn configure(
    http: &fake_apiserver::http::FakeHttpServer,
    collection: &str,
    name: &str,
    webhooks: Vec<Value>,
) {
    let kind = if collection == MUTATING {
        "MutatingWebhookConfiguration"
    } else {
        "ValidatingWebhookConfiguration"
    };
    let answer = post(
        http,
        collection,
        &json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                "metadata": {"name": name}, "webhooks": webhooks}),
    )
    .await;
    assert_eq!(answer.status, 201, "{}", answer.body);
}

/// Stores the configuration `name` of one webhook, `<name>.example.com`, at `path` of
/// `server`, for `operations` on pods.
async fn configure_one(
    http: &fake_apiserver::http::FakeHttpServer,
    collection: &str,
    name: &str,
    (server, path): (&WebhookServer, &str),
    operations: &[&str],
) {
    let hook = webhook(&format!("{name}.example.com"), server, path, operations);
    configure(http, collection, name, vec![hook]).await;
}

fn labels(object: &Value) -> Value {
    object["metadata"]["labels"].clone()
}

#[tokio::test]
async fn a_mutating_webhook_s_patch_is_stored_and_the_validating_webhooks_see_the_result() {
    let (server, http) = start().await;
    namespaces(&server, &["prod"]);
    let hooks = WebhookServer::start(|path, request| match path {
        "/mutate" => crate::support::webhook::patch(
            request,
            json!([{"op": "add", "path": "/metadata/labels/injected", "value": "yes"}]),
        ),
        "/validate" if request["object"]["metadata"]["labels"]["injected"] == "yes" => {
            allow(request)
        }
        _ => deny(request, "not injected", 400),
    })
    .await;
    configure_one(&http, MUTATING, "inject", (&hooks, "/mutate"), &["CREATE"]).await;
    configure_one(
        &http,
        VALIDATING,
        "check",
        (&hooks, "/validate"),
        &["CREATE", "UPDATE"],
    )
    .await;
    server.clear_requests();
    let created = post(&http, PODS, &pod("prod", "web", json!({"app": "web"}))).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(
        labels(&created.body),
        json!({"app": "web", "injected": "yes"})
    );
    let stored = get(&http, &format!("{PODS}/web")).await;
    assert_eq!(
        labels(&stored.body),
        json!({"app": "web", "injected": "yes"})
    );
    // The passes before the webhooks are not requests of their own.
    let writes: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.method != "GET")
        .map(|r| (r.method, r.path))
        .collect();
    assert_eq!(writes, [("POST".to_owned(), PODS.to_owned())]);

    let reviews = hooks.reviews();
    assert_eq!(reviews.len(), 2, "{reviews:?}");
    let (path, mutating) = &reviews[0];
    assert_eq!(path, "/mutate");
    assert_eq!(mutating["query"], "timeout=10s");
    assert_eq!(mutating["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(mutating["kind"], "AdmissionReview");
    let request = &mutating["request"];
    assert_eq!(
        request["kind"],
        json!({"group": "", "version": "v1", "kind": "Pod"})
    );
    assert_eq!(
        request["resource"],
        json!({"group": "", "version": "v1", "resource": "pods"})
    );
    assert_eq!(request["requestKind"], request["kind"]);
    assert_eq!(request["operation"], "CREATE");
    assert_eq!(
        (&request["namespace"], &request["name"]),
        (&json!("prod"), &json!("web"))
    );
    assert_eq!(request["dryRun"], false);
    assert_eq!(request["userInfo"]["username"], "system:admin");
    assert_eq!(request["options"]["kind"], "CreateOptions");
    assert_eq!(request["oldObject"], Value::Null);
    assert_eq!(labels(&request["object"]), json!({"app": "web"}));
    assert!(request["uid"].as_str().is_some_and(|u| u.len() == 36));
    let (path, validating) = &reviews[1];
    assert_eq!(path, "/validate");
    assert_eq!(
        labels(&validating["request"]["object"]),
        json!({"app": "web", "injected": "yes"})
    );
    assert_ne!(validating["request"]["uid"], request["uid"]);

    // An update the validating webhook refuses: its message, nothing stored.
    let refused = patch(
        &http,
        &format!("{PODS}/web"),
        "application/json-patch+json",
        &json!([{"op": "remove", "path": "/metadata/labels/injected"}]),
    )
    .await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "admission webhook \"check.example.com\" denied the request: not injected"
    );
    let update = &hooks.reviews()[2].1["request"];
    assert_eq!(update["operation"], "UPDATE");
    assert_eq!(update["options"]["kind"], "UpdateOptions");
    assert_eq!(
        labels(&update["oldObject"]),
        json!({"app": "web", "injected": "yes"})
    );
    assert_eq!(labels(&update["object"]), json!({"app": "web"}));
    let stored = get(&http, &format!("{PODS}/web")).await;
    assert_eq!(labels(&stored.body)["injected"], "yes");
}

#[tokio::test]
async fn a_refusal_keeps_its_code_and_deletes_are_reviewed_with_the_stored_object() {
    let (server, http) = start().await;
    namespaces(&server, &["prod"]);
    let hooks = WebhookServer::start(|_, request| {
        if request["operation"] == "DELETE"
            && request["oldObject"]["metadata"]["labels"]["keep"] == "yes"
        {
            deny(request, "this pod is kept", 403)
        } else {
            allow(request)
        }
    })
    .await;
    configure_one(&http, VALIDATING, "keeper", (&hooks, "/"), &["DELETE"]).await;
    for (name, keep) in [("kept", "yes"), ("gone", "no"), ("also-kept", "yes")] {
        let created = post(&http, PODS, &pod("prod", name, json!({"keep": keep}))).await;
        assert_eq!(created.status, 201);
    }
    // Creates match no rule: no review.
    assert!(hooks.reviews().is_empty());
    let refused = send(&http, Method::DELETE, &format!("{PODS}/kept"), None).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "admission webhook \"keeper.example.com\" denied the request: this pod is kept"
    );
    let review = &hooks.reviews()[0].1["request"];
    assert_eq!(review["operation"], "DELETE");
    assert_eq!(review["object"], Value::Null);
    assert_eq!(review["oldObject"]["metadata"]["name"], "kept");
    assert_eq!(review["options"]["kind"], "DeleteOptions");
    let deleted = send(&http, Method::DELETE, &format!("{PODS}/gone"), None).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    // A collection's delete reviews each object; the first refusal is the answer.
    let refused = send(&http, Method::DELETE, PODS, None).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    let left = get(&http, PODS).await;
    let mut names: Vec<_> = left.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["also-kept", "kept"]);
}

#[tokio::test]
async fn the_failure_policy_decides_a_webhook_that_cannot_be_called_or_answers_wrongly() {
    let (server, http) = start().await;
    namespaces(&server, &["prod"]);
    let hooks = WebhookServer::start(|path, request| match path {
        "/wrong-uid" => Some((
            200,
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                   "response": {"uid": "someone-else", "allowed": true}}),
        )),
        "/error" => Some((500, json!({"oops": true}))),
        _ => allow(request),
    })
    .await;
    let other = WebhookServer::start(|_, request| allow(request)).await;
    // A port nothing listens on.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut refused = webhook("refused.example.com", &hooks, "/", &["CREATE"]);
    refused["clientConfig"]["url"] = json!(format!("https://127.0.0.1:{closed}/validate"));
    // The other server's certificate is not signed by this bundle's CA.
    let mut untrusted = webhook("untrusted.example.com", &hooks, "/", &["CREATE"]);
    untrusted["clientConfig"]["url"] = json!(other.url("/"));
    let cases = [
        (
            refused,
            format!(
                "failed calling webhook \"refused.example.com\": failed to call webhook: Post \
                 \"https://127.0.0.1:{closed}/validate?timeout=10s\": dial tcp 127.0.0.1:{closed}: \
                 connect: connection refused"
            ),
        ),
        (untrusted, "\": tls: ".to_owned()),
        (
            webhook("uid.example.com", &hooks, "/wrong-uid", &["CREATE"]),
            "received invalid webhook response: expected response.uid=".to_owned(),
        ),
        (
            webhook("error.example.com", &hooks, "/error", &["CREATE"]),
            "an error on the server (\"{\\\"oops\\\":true}\") has prevented the request from \
             succeeding"
                .to_owned(),
        ),
    ];
    for (i, (hook, expected)) in cases.into_iter().enumerate() {
        let name = format!("case-{i}");
        configure(&http, VALIDATING, &name, vec![hook.clone()]).await;
        let failed = post(&http, PODS, &pod("prod", &format!("p{i}"), json!({}))).await;
        assert_eq!(failed.status, 500, "{}", failed.body);
        assert_eq!(failed.body["reason"], "InternalError");
        let message = failed.body["message"].as_str().unwrap();
        assert!(
            message.starts_with("Internal error occurred: failed calling webhook")
                && message.contains(&expected),
            "{message}\nwanted: {expected}"
        );
        // Failing open: the write goes through.
        let mut open = hook;
        open["failurePolicy"] = json!("Ignore");
        let replaced = send(&http, Method::DELETE, &format!("{VALIDATING}/{name}"), None).await;
        assert_eq!(replaced.status, 200);
        configure(&http, VALIDATING, &name, vec![open]).await;
        let through = post(&http, PODS, &pod("prod", &format!("p{i}"), json!({}))).await;
        assert_eq!(through.status, 201, "{}", through.body);
    }
    // Neither server saw the untrusted call's review.
    assert!(other.reviews().is_empty());
}

#[tokio::test]
async fn a_webhook_that_does_not_answer_in_its_timeout_fails_the_write() {
    let (server, http) = start().await;
    namespaces(&server, &["prod"]);
    let hooks = WebhookServer::start(|_, _| None).await;
    let mut slow = webhook("slow.example.com", &hooks, "/", &["CREATE"]);
    slow["timeoutSeconds"] = json!(1);
    configure(&http, VALIDATING, "slow", vec![slow]).await;
    let failed = post(&http, PODS, &pod("prod", "p", json!({}))).await;
    assert_eq!(failed.status, 500, "{}", failed.body);
    let message = failed.body["message"].as_str().unwrap();
    assert!(
        message.ends_with("?timeout=1s\": context deadline exceeded"),
        "{message}"
    );
    assert_eq!(hooks.reviews()[0].1["query"], "timeout=1s");
    assert_eq!(get(&http, &format!("{PODS}/p")).await.status, 404);
}

#[tokio::test]
async fn selectors_and_match_conditions_choose_the_writes_a_webhook_sees() {
    let (server, http) = start().await;
    namespaces(&server, &["prod", "dev"]);
    let labelled = post(
        &http,
        "/api/v1/namespaces",
        &json!({"metadata": {"name": "team", "labels": {"env": "prod"}}}),
    )
    .await;
    assert_eq!(labelled.status, 201);
    let hooks = WebhookServer::start(|_, request| deny(request, "seen", 400)).await;
    let mut hook = webhook("picky.example.com", &hooks, "/", &["CREATE"]);
    hook["namespaceSelector"] = json!({"matchLabels": {"env": "prod"}});
    hook["objectSelector"] = json!({"matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["web"]}]});
    hook["matchConditions"] = json!([
        {"name": "not-skipped", "expression": "object.metadata.name != 'skip'"}]);
    configure(&http, VALIDATING, "picky", vec![hook]).await;
    let create = |ns: &str, name: &str, tier: &str| {
        let body = pod(ns, name, json!({"tier": tier}));
        let path = format!("/api/v1/namespaces/{ns}/pods");
        let http = &http;
        async move { post(http, &path, &body).await.status }
    };
    // Not in a namespace labelled env=prod, not of tier web, or skipped by the condition.
    assert_eq!(create("dev", "a", "web").await, 201);
    assert_eq!(create("team", "b", "db").await, 201);
    assert_eq!(create("team", "skip", "web").await, 201);
    assert!(hooks.reviews().is_empty());
    assert_eq!(create("team", "c", "web").await, 400);
    assert_eq!(hooks.reviews().len(), 1);
}

#[tokio::test]
async fn dry_runs_call_only_webhooks_without_side_effects_and_store_nothing() {
    let (server, http) = start().await;
    namespaces(&server, &["prod"]);
    let hooks = WebhookServer::start(|_, request| {
        crate::support::webhook::patch(
            request,
            json!([{"op": "add", "path": "/metadata/annotations", "value": {"seen": "dry"}}]),
        )
    })
    .await;
    configure_one(&http, MUTATING, "annotate", (&hooks, "/"), &["CREATE"]).await;
    let dry = post(
        &http,
        &format!("{PODS}?dryRun=All"),
        &pod("prod", "p", json!({})),
    )
    .await;
    assert_eq!(dry.status, 201, "{}", dry.body);
    assert_eq!(dry.body["metadata"]["annotations"]["seen"], "dry");
    let review = &hooks.reviews()[0].1["request"];
    assert_eq!(review["dryRun"], true);
    assert_eq!(review["options"]["dryRun"], json!(["All"]));
    assert_eq!(get(&http, &format!("{PODS}/p")).await.status, 404);

    let mut effects = webhook("effects.example.com", &hooks, "/", &["CREATE"]);
    effects["sideEffects"] = json!("Some");
    configure(&http, MUTATING, "effects", vec![effects]).await;
    let refused = post(
        &http,
        &format!("{PODS}?dryRun=All"),
        &pod("prod", "p", json!({})),
    )
    .await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "admission webhook \"effects.example.com\" does not support dry run"
    );
    // Not a dry run: both are called.
    let created = post(&http, PODS, &pod("prod", "p", json!({}))).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(
        get(&http, &format!("{PODS}/p")).await.body["metadata"]["annotations"]["seen"],
        "dry"
    );
}

#[tokio::test]
async fn a_webhook_asking_to_be_reinvoked_sees_what_later_webhooks_changed() {
    let (server, http) = start().await;
    namespaces(&server, &["prod"]);
    let first_calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&first_calls);
    let hooks = WebhookServer::start(move |path, request| {
        let labels = &request["object"]["metadata"]["labels"];
        match path {
            // Counts the labels it sees, once more when it is called again.
            "/first" => {
                counted.fetch_add(1, Ordering::SeqCst);
                let seen = labels.as_object().map_or(0, |l| l.len());
                crate::support::webhook::patch(
                    request,
                    json!([{"op": "add", "path": "/metadata/annotations",
                            "value": {"labels-seen": seen.to_string()}}]),
                )
            }
            "/second" if labels["second"].is_null() => crate::support::webhook::patch(
                request,
                json!([{"op": "add", "path": "/metadata/labels/second", "value": "x"}]),
            ),
            _ => allow(request),
        }
    })
    .await;
    let mut first = webhook("first.example.com", &hooks, "/first", &["CREATE"]);
    first["reinvocationPolicy"] = json!("IfNeeded");
    // Configurations are called in name order: "a-first" before "b-second".
    configure(
        &http,
        MUTATING,
        "b-second",
        vec![webhook(
            "second.example.com",
            &hooks,
            "/second",
            &["CREATE"],
        )],
    )
    .await;
    configure(&http, MUTATING, "a-first", vec![first]).await;
    let created = post(&http, PODS, &pod("prod", "p", json!({"app": "p"}))).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(first_calls.load(Ordering::SeqCst), 2);
    assert_eq!(created.body["metadata"]["annotations"]["labels-seen"], "2");
    assert_eq!(labels(&created.body), json!({"app": "p", "second": "x"}));
    let paths: Vec<_> = hooks.reviews().into_iter().map(|(p, _)| p).collect();
    assert_eq!(paths, ["/first", "/second", "/first"]);
}

#[tokio::test]
async fn a_write_whose_object_changed_while_its_webhook_was_called_is_admitted_again() {
    let (server, http) = start().await;
    namespaces(&server, &["prod"]);
    let created = post(&http, PODS, &pod("prod", "p", json!({"app": "p"}))).await;
    assert_eq!(created.status, 201);
    let writer = server.clone();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let hooks = WebhookServer::start(move |_, request| {
        // The first call: someone else changes the pod meanwhile.
        if counted.fetch_add(1, Ordering::SeqCst) == 0 {
            let target = writer.target("pods", Some("prod")).unwrap();
            writer
                .patch_at(
                    &target,
                    "p",
                    &json!({"metadata": {"labels": {"other": "writer"}}}),
                )
                .unwrap();
        }
        respond(request, json!({"allowed": true}))
    })
    .await;
    configure_one(&http, VALIDATING, "slowpoke", (&hooks, "/"), &["UPDATE"]).await;
    let patched = patch(
        &http,
        &format!("{PODS}/p"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"mine": "yes"}}}),
    )
    .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(
        labels(&patched.body),
        json!({"app": "p", "other": "writer", "mine": "yes"})
    );
    // The second review showed the other writer's change as stored.
    let second = &hooks.reviews()[1].1["request"];
    assert_eq!(labels(&second["oldObject"])["other"], "writer");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_client_gets_the_mutated_object_and_the_webhook_s_refusal() {
    use k8s_openapi::api::core::v1::Pod;
    use kube_client::Api;
    use kube_client::api::{DeleteParams, PostParams};

    let (server, http) = start().await;
    namespaces(&server, &["ns-0"]);
    let hooks = WebhookServer::start(|path, request| match path {
        "/mutate" => crate::support::webhook::patch(
            request,
            json!([{"op": "add", "path": "/metadata/labels", "value": {"injected": "yes"}}]),
        ),
        _ => deny(request, "pods here are not deleted", 403),
    })
    .await;
    let mut mutate = webhook("inject.example.com", &hooks, "/mutate", &["CREATE"]);
    mutate["rules"][0]["resources"] = json!(["*"]);
    configure(&http, MUTATING, "inject", vec![mutate]).await;
    configure_one(&http, VALIDATING, "keep", (&hooks, "/keep"), &["DELETE"]).await;
    let pods: Api<Pod> = Api::default_namespaced(crate::http_kube_client::kube(&http).await);
    let sent: Pod = serde_json::from_value(pod("ns-0", "web", json!(null))).unwrap();
    let created = pods.create(&PostParams::default(), &sent).await.unwrap();
    assert_eq!(created.metadata.labels.unwrap()["injected"], "yes");
    let err = pods
        .delete("web", &DeleteParams::default())
        .await
        .unwrap_err();
    let kube_client::Error::Api(status) = err else {
        panic!("{err:?}");
    };
    assert_eq!(status.code, 403);
    assert_eq!(
        status.message,
        "admission webhook \"keep.example.com\" denied the request: pods here are not deleted"
    );
    assert!(pods.get("web").await.is_ok());
}

#[tokio::test]
async fn admission_policies_run_after_the_mutating_webhooks_and_before_the_validating_ones() {
    let (server, http) = start().await;
    namespaces(&server, &["prod"]);
    let hooks = WebhookServer::start(|path, request| {
        let named = request["name"].as_str().unwrap_or_default();
        match path {
            "/mutate" if named.starts_with("m-") => crate::support::webhook::patch(
                request,
                json!([{"op": "add", "path": "/metadata/labels/injected", "value": "yes"}]),
            ),
            _ => allow(request),
        }
    })
    .await;
    let policy = post(
        &http,
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
        &json!({"metadata": {"name": "injected"}, "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["pods"]}]},
            "validations": [{"expression": "'injected' in object.metadata.labels",
                             "message": "not injected"}]}}),
    )
    .await;
    assert_eq!(policy.status, 201, "{}", policy.body);
    let binding = post(
        &http,
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
        &json!({"metadata": {"name": "injected"},
                "spec": {"policyName": "injected", "validationActions": ["Deny"]}}),
    )
    .await;
    assert_eq!(binding.status, 201, "{}", binding.body);
    configure_one(&http, MUTATING, "inject", (&hooks, "/mutate"), &["CREATE"]).await;
    configure_one(
        &http,
        VALIDATING,
        "watch",
        (&hooks, "/validate"),
        &["CREATE"],
    )
    .await;
    // The policy sees the label the mutating webhook added.
    for path in [format!("{PODS}?dryRun=All"), PODS.to_owned()] {
        let created = post(&http, &path, &pod("prod", "m-1", json!({"app": "m"}))).await;
        assert_eq!(created.status, 201, "{}", created.body);
    }
    let validated =
        |reviews: Vec<(String, Value)>| reviews.iter().filter(|(p, _)| p == "/validate").count();
    assert_eq!(validated(hooks.reviews()), 2);
    // Refused by the policy: the validating webhook is not called.
    let refused = post(&http, PODS, &pod("prod", "plain", json!({"app": "p"}))).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "pods \"plain\" is forbidden: ValidatingAdmissionPolicy 'injected' with binding \
         'injected' denied request: not injected"
    );
    assert_eq!(validated(hooks.reviews()), 2);
}

#[tokio::test]
async fn a_webhook_named_by_service_is_called_at_the_address_the_service_is_routed_to() {
    let (server, http) = start().await;
    namespaces(&server, &["prod"]);
    let hooks =
        WebhookServer::start(|_, request| deny(request, "seen through the service", 400)).await;
    let mut hook = webhook("service.example.com", &hooks, "/", &["CREATE"]);
    hook["clientConfig"] = json!({
        "service": {"namespace": "system", "name": "webhook", "path": "/validate", "port": 8443},
        "caBundle": hooks.ca_bundle(),
    });
    configure(&http, VALIDATING, "by-service", vec![hook]).await;
    // No cluster network: unrouted, the service is not found.
    let unrouted = post(&http, PODS, &pod("prod", "a", json!({}))).await;
    assert_eq!(unrouted.status, 500, "{}", unrouted.body);
    let message = unrouted.body["message"].as_str().unwrap();
    assert!(
        message.contains(
            "failed to call webhook: Post \"https://webhook.system.svc:8443/validate?timeout=10s\": \
             dial tcp: lookup webhook.system.svc: no such host"
        ),
        "{message}"
    );
    // Routed through the admin API: called, its certificate checked for the service's name.
    let routed = send(
        &http,
        Method::PUT,
        "/_fake/service-routes",
        Some((
            "application/json",
            &json!({"namespace": "system", "name": "webhook", "port": 8443,
                    "address": hooks.address()}),
        )),
    )
    .await;
    assert_eq!(routed.status, 200, "{}", routed.body);
    assert_eq!(
        server.service_route("system", "webhook", 8443).as_deref(),
        Some(hooks.address())
    );
    let refused = post(&http, PODS, &pod("prod", "a", json!({}))).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "admission webhook \"service.example.com\" denied the request: seen through the service"
    );
    let (path, review) = &hooks.reviews()[0];
    assert_eq!(
        (path.as_str(), review["query"].as_str()),
        ("/validate", Some("timeout=10s"))
    );
    let bad = send(
        &http,
        Method::PUT,
        "/_fake/service-routes",
        Some(("application/json", &json!({"namespace": "system"}))),
    )
    .await;
    assert_eq!(bad.status, 400);
}

#[tokio::test]
async fn a_webhook_naming_one_version_sees_writes_through_the_other_converted() {
    let (server, http) = start().await;
    namespaces(&server, &["prod"]);
    let hooks = WebhookServer::start(|path, request| match path {
        "/mutate" => crate::support::webhook::patch(
            request,
            json!([{"op": "replace", "path": "/spec/maxReplicas", "value": 4},
                   {"op": "add", "path": "/metadata/labels", "value": {"seen": "v1"}}]),
        ),
        _ => allow(request),
    })
    .await;
    let mut mutate = webhook("mutate.example.com", &hooks, "/mutate", &["CREATE"]);
    mutate["rules"] = json!([{"apiGroups": ["autoscaling"], "apiVersions": ["v1"],
        "operations": ["CREATE"], "resources": ["horizontalpodautoscalers"]}]);
    configure(&http, MUTATING, "hpa", vec![mutate]).await;
    let mut v1 = webhook("hpa.example.com", &hooks, "/", &["CREATE"]);
    v1["rules"] = json!([{"apiGroups": ["autoscaling"], "apiVersions": ["v1"],
        "operations": ["CREATE"], "resources": ["horizontalpodautoscalers"]}]);
    let mut exact = v1.clone();
    exact["name"] = json!("exact.example.com");
    exact["matchPolicy"] = json!("Exact");
    configure(&http, VALIDATING, "hpa", vec![v1, exact]).await;
    let created = post(
        &http,
        "/apis/autoscaling/v2/namespaces/prod/horizontalpodautoscalers",
        &json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": "web"},
                "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                            "name": "web"},
                         "minReplicas": 1, "maxReplicas": 5,
                         "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                             "target": {"type": "Utilization", "averageUtilization": 60}}}]}}),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    // The mutating webhook's patch of the v1 form reached the v2 object.
    assert_eq!(created.body["apiVersion"], "autoscaling/v2");
    assert_eq!(created.body["spec"]["maxReplicas"], 4);
    assert_eq!(created.body["metadata"]["labels"]["seen"], "v1");
    assert_eq!(
        created.body["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        60
    );
    // Of the validating ones, only the webhook under `Equivalent` is called, shown v1.
    let reviews = hooks.reviews();
    assert_eq!(reviews.len(), 2, "{reviews:?}");
    let request = &reviews[1].1["request"];
    assert_eq!(
        request["kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "HorizontalPodAutoscaler"})
    );
    assert_eq!(request["requestKind"]["version"], "v2");
    assert_eq!(request["object"]["apiVersion"], "autoscaling/v1");
    assert_eq!(
        request["object"]["spec"]["targetCPUUtilizationPercentage"],
        60
    );
}

#[tokio::test]
async fn subresources_are_reviewed_with_the_objects_they_send() {
    let (server, http) = start().await;
    namespaces(&server, &["prod"]);
    let hooks = WebhookServer::start(|path, request| {
        let object = &request["object"];
        match path {
            // At most 3 replicas through /scale: a mutating webhook caps them.
            "/cap" if object["spec"]["replicas"].as_i64() > Some(3) => {
                crate::support::webhook::patch(
                    request,
                    json!([{"op": "replace", "path": "/spec/replicas", "value": 3}]),
                )
            }
            "/evict" => deny(request, "this pod is not evicted", 429),
            "/exec" if object["command"][0] == "rm" => deny(request, "no rm here", 403),
            "/status" if object["status"]["phase"] == "Failed" => {
                deny(request, "not failed yet", 422)
            }
            _ => allow(request),
        }
    })
    .await;
    let rule = |group: &str, resources: &str, operations: &[&str]| {
        json!([{"apiGroups": [group], "apiVersions": ["v1"], "operations": operations,
                "resources": [resources]}])
    };
    let mut cap = webhook("cap.example.com", &hooks, "/cap", &[]);
    cap["rules"] = rule("apps", "deployments/scale", &["UPDATE"]);
    configure(&http, MUTATING, "cap", vec![cap]).await;
    let mut evict = webhook("evict.example.com", &hooks, "/evict", &[]);
    evict["rules"] = rule("", "pods/eviction", &["CREATE"]);
    let mut exec = webhook("exec.example.com", &hooks, "/exec", &[]);
    exec["rules"] = rule("", "pods/exec", &["CONNECT"]);
    let mut status = webhook("status.example.com", &hooks, "/status", &[]);
    status["rules"] = rule("", "pods/status", &["UPDATE"]);
    configure(&http, VALIDATING, "guards", vec![evict, exec, status]).await;

    let deployments = "/apis/apps/v1/namespaces/prod/deployments";
    let created = post(
        &http,
        deployments,
        &json!({"metadata": {"name": "web"},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                         "template": {"metadata": {"labels": {"app": "web"}},
                                      "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    // PUT and PATCH of /scale: the webhook is shown Scales and its cap is stored.
    let scale = format!("{deployments}/web/scale");
    let put = send(
        &http,
        Method::PUT,
        &scale,
        Some((
            "application/json",
            &json!({"metadata": {"name": "web", "namespace": "prod"}, "spec": {"replicas": 7}}),
        )),
    )
    .await;
    assert_eq!(put.status, 200, "{}", put.body);
    assert_eq!(put.body["spec"]["replicas"], 3);
    let review = &hooks.reviews()[0].1["request"];
    assert_eq!(
        review["kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );
    assert_eq!(
        review["resource"],
        json!({"group": "apps", "version": "v1", "resource": "deployments"})
    );
    assert_eq!(review["subResource"], "scale");
    assert_eq!(review["oldObject"]["spec"]["replicas"], 1);
    let patched = patch(
        &http,
        &scale,
        "application/merge-patch+json",
        &json!({"spec": {"replicas": 9}}),
    )
    .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    let stored = get(&http, &format!("{deployments}/web")).await;
    assert_eq!(stored.body["spec"]["replicas"], 3);

    let pods = PODS;
    let made = post(&http, pods, &pod("prod", "p", json!({}))).await;
    assert_eq!(made.status, 201);
    // An eviction: the webhook's refusal, with its code; the pod stays.
    let evicted = post(
        &http,
        &format!("{pods}/p/eviction"),
        &json!({"metadata": {"name": "p", "namespace": "prod"}}),
    )
    .await;
    assert_eq!(evicted.status, 429, "{}", evicted.body);
    assert_eq!(
        evicted.body["message"],
        "admission webhook \"evict.example.com\" denied the request: this pod is not evicted"
    );
    let review = hooks.reviews().last().unwrap().1["request"].clone();
    assert_eq!(
        (&review["kind"]["kind"], &review["object"]["apiVersion"]),
        (&json!("Eviction"), &json!("policy/v1"))
    );
    assert_eq!(get(&http, &format!("{pods}/p")).await.status, 200);
    // An exec: CONNECT with PodExecOptions, admitted before anything else is checked.
    let refused = get(
        &http,
        &format!("{pods}/p/exec?command=rm&command=-rf&stdout=true"),
    )
    .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    let review = hooks.reviews().last().unwrap().1["request"].clone();
    assert_eq!(review["operation"], "CONNECT");
    assert_eq!(
        review["object"],
        json!({"kind": "PodExecOptions", "apiVersion": "v1", "stdout": true,
               "command": ["rm", "-rf"]})
    );
    assert_eq!(review["options"], Value::Null);
    // Allowed, the exec goes on to its own checks (the pod is on no node).
    let allowed = get(&http, &format!("{pods}/p/exec?command=ls&stdout=true")).await;
    assert_eq!(allowed.status, 400, "{}", allowed.body);
    assert!(
        allowed.body["message"]
            .as_str()
            .unwrap()
            .contains("does not have a host assigned"),
        "{}",
        allowed.body
    );
    // A status write is reviewed as the pods/status subresource.
    let mut failed = get(&http, &format!("{pods}/p")).await.body;
    failed["status"]["phase"] = json!("Failed");
    let refused = send(
        &http,
        Method::PUT,
        &format!("{pods}/p/status"),
        Some(("application/json", &failed)),
    )
    .await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    let review = hooks.reviews().last().unwrap().1["request"].clone();
    assert_eq!(review["subResource"], "status");
    assert_eq!(review["kind"]["kind"], "Pod");
}

#[tokio::test]
async fn a_created_pod_s_status_is_made_from_what_the_mutating_webhooks_left() {
    let (server, http) = start().await;
    namespaces(&server, &["prod"]);
    let hooks = WebhookServer::start(|_, request| {
        crate::support::webhook::patch(
            request,
            json!([{"op": "add", "path": "/spec/containers/0/resources",
                    "value": {"limits": {"cpu": "1", "memory": "1Gi"}}}]),
        )
    })
    .await;
    configure_one(&http, MUTATING, "limits", (&hooks, "/"), &["CREATE"]).await;
    let created = post(&http, PODS, &pod("prod", "p", json!({}))).await;
    assert_eq!(created.status, 201, "{}", created.body);
    // Limits alone default the requests: Guaranteed, not the BestEffort of the pod as sent.
    assert_eq!(created.body["status"]["qosClass"], "Guaranteed");
    assert_eq!(
        created.body["spec"]["containers"][0]["resources"]["requests"]["cpu"],
        "1"
    );
    assert_eq!(
        hooks.reviews()[0].1["request"]["object"]["status"]["qosClass"],
        "BestEffort"
    );
}

#[tokio::test]
async fn an_answer_beyond_the_cap_fails_the_call() {
    let (server, http) = start().await;
    namespaces(&server, &["prod"]);
    // 17 MiB: more than the 16 MiB read from a webhook.
    let hooks = WebhookServer::start(|_, request| {
        let mut reply = allow(request);
        if let Some((_, body)) = reply.as_mut() {
            body["padding"] = json!("x".repeat(17 << 20));
        }
        reply
    })
    .await;
    configure_one(&http, VALIDATING, "huge", (&hooks, "/"), &["CREATE"]).await;
    let failed = post(&http, PODS, &pod("prod", "p", json!({}))).await;
    assert_eq!(failed.status, 500, "{}", failed.body);
    let message = failed.body["message"].as_str().unwrap();
    assert!(message.contains("reading the answer"), "{message}");
    assert_eq!(get(&http, &format!("{PODS}/p")).await.status, 404);
}

#[tokio::test]
async fn a_kube_rs_webhook_reads_the_reviews_and_its_answers_are_taken() {
    use kube_core::DynamicObject;
    use kube_core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};

    let (server, http) = start().await;
    namespaces(&server, &["prod"]);
    // What a webhook written with kube-rs does: its review types read what it is sent,
    // and its answers (a patch as an array of bytes) are sent back as they serialize.
    let hooks = WebhookServer::start(|path, request| {
        let review: AdmissionReview<DynamicObject> = serde_json::from_value(json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request,
        }))
        .expect("kube-core reads the review");
        let request: AdmissionRequest<DynamicObject> =
            review.try_into().expect("a review with a request");
        let response = AdmissionResponse::from(&request);
        let response = match path {
            "/mutate" => {
                let patch: json_patch::Patch = serde_json::from_value(json!([
                    {"op": "add", "path": "/metadata/annotations",
                     "value": {"mutated-by": "kube-rs"}}]))
                .unwrap();
                response.with_patch(patch).unwrap()
            }
            _ if request.name == "refused" => response.deny("kube-rs says no"),
            _ => response,
        };
        Some((200, serde_json::to_value(response.into_review()).unwrap()))
    })
    .await;
    configure_one(
        &http,
        MUTATING,
        "kube-rs-mutate",
        (&hooks, "/mutate"),
        &["CREATE"],
    )
    .await;
    configure_one(
        &http,
        VALIDATING,
        "kube-rs-check",
        (&hooks, "/check"),
        &["CREATE"],
    )
    .await;
    let created = post(&http, PODS, &pod("prod", "p", json!({}))).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(
        created.body["metadata"]["annotations"]["mutated-by"],
        "kube-rs"
    );
    let refused = post(&http, PODS, &pod("prod", "refused", json!({}))).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "admission webhook \"kube-rs-check.example.com\" denied the request: kube-rs says no"
    );
}

#[tokio::test]
async fn the_admission_webhook_example_runs() {
    let (server, http) = start().await;
    namespaces(&server, &["demo"]);
    let outcome = tokio::time::timeout(
        crate::support::GUARD,
        crate::admission_webhook_example::run(&http),
    )
    .await
    .expect("the example hung")
    .unwrap();
    assert_eq!(outcome.labels["admitted-by"], "example");
    assert_eq!(
        outcome.refusal,
        "admission webhook \"label-pods.example.com\" denied the request: forbidden pods are \
         not admitted"
    );
}
