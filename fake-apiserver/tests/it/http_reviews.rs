//! HTTP front end: the review APIs (access reviews, rules review, who am I), answered without
//! storage and checked as upstream's registry checks them.
#![cfg(feature = "http")]

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube_client::Api;
use kube_client::api::PostParams;
use reqwest::Method;
use serde_json::json;

use crate::http_kube_client::kube;
use crate::support::http::{post, send, start};

const SSAR: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_checks_its_permissions_through_kube_client() {
    let (server, http) = start().await;
    let client = kube(&http).await;
    let rv = server.resource_version();
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some("watch".into()),
                resource: Some("pods".into()),
                namespace: Some("ns-0".into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answered = Api::<SelfSubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
        .unwrap();
    let status = answered.status.unwrap();
    assert!(status.allowed, "{status:?}");
    assert!(status.reason.unwrap().contains("allows every request"));
    assert_eq!(
        answered.spec.resource_attributes.unwrap().verb.as_deref(),
        Some("watch")
    );
    let me = Api::<SelfSubjectReview>::all(client)
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .unwrap();
    let user = me.status.unwrap().user_info.unwrap();
    assert_eq!(user.username.as_deref(), Some("system:admin"));
    assert_eq!(server.resource_version(), rv, "reviews are not stored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviews_are_checked_as_upstream_checks_them() {
    let (_server, http) = start().await;
    let message = |body: &serde_json::Value| body["message"].as_str().unwrap_or("").to_owned();

    let empty = post(&http, SSAR, &json!({"spec": {}})).await;
    assert_eq!(empty.status, 422, "{}", empty.body);
    assert_eq!(
        message(&empty.body),
        "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes: \
         Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must \
         be specified"
    );
    let both = post(
        &http,
        SSAR,
        &json!({"spec": {"resourceAttributes": {"verb": "get"}, "nonResourceAttributes": {"path": "/x", "verb": "get"}}}),
    )
    .await;
    assert_eq!(both.status, 422, "{}", both.body);
    assert!(
        message(&both.body).contains("cannot be specified in combination with resourceAttributes")
    );
    let named = post(
        &http,
        SSAR,
        &json!({"metadata": {"name": "x"}, "spec": {"nonResourceAttributes": {"path": "/x", "verb": "get"}}}),
    )
    .await;
    assert_eq!(named.status, 422, "{}", named.body);
    assert!(message(&named.body).contains("metadata: Invalid value"));
    assert!(message(&named.body).ends_with("must be empty"));

    let sar = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    let nobody = post(
        &http,
        sar,
        &json!({"spec": {"resourceAttributes": {"verb": "get"}}}),
    )
    .await;
    assert_eq!(nobody.status, 422, "{}", nobody.body);
    assert!(message(&nobody.body).contains(
        "spec.user: Invalid value: \"\": at least one of user or group must be specified"
    ));
    let someone = post(
        &http,
        sar,
        &json!({"spec": {"user": "jane", "resourceAttributes": {"verb": "get", "resource": "pods"}}}),
    )
    .await;
    assert_eq!(someone.status, 201, "{}", someone.body);
    assert_eq!(someone.body["status"]["allowed"], true);

    let local = "/apis/authorization.k8s.io/v1/namespaces/a/localsubjectaccessreviews";
    let elsewhere = post(
        &http,
        local,
        &json!({"spec": {"groups": ["g"], "resourceAttributes": {"verb": "get", "namespace": "b"}}}),
    )
    .await;
    assert_eq!(elsewhere.status, 422, "{}", elsewhere.body);
    assert!(message(&elsewhere.body).contains(
        "spec.resourceAttributes.namespace: Invalid value: \"b\": must match metadata.namespace"
    ));
    let mismatch = post(
        &http,
        local,
        &json!({"metadata": {"namespace": "b"}, "spec": {"groups": ["g"], "resourceAttributes": {"verb": "get", "namespace": "b"}}}),
    )
    .await;
    assert_eq!(mismatch.status, 400, "{}", mismatch.body);
    let here = post(
        &http,
        local,
        &json!({"spec": {"groups": ["g"], "resourceAttributes": {"verb": "get", "namespace": "a"}}}),
    )
    .await;
    assert_eq!(here.status, 201, "{}", here.body);
    assert_eq!(here.body["metadata"]["namespace"], "a");

    let rules = post(
        &http,
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        &json!({"spec": {"namespace": "a"}}),
    )
    .await;
    assert_eq!(rules.status, 201, "{}", rules.body);
    assert_eq!(rules.body["status"]["incomplete"], false);
    assert_eq!(
        rules.body["status"]["resourceRules"][0]["verbs"],
        json!(["*"])
    );

    // Create-only, cluster-scoped except the local review, and of their own kind.
    assert_eq!(send(&http, Method::GET, SSAR, None).await.status, 405);
    let namespaced = post(
        &http,
        "/apis/authorization.k8s.io/v1/namespaces/a/selfsubjectaccessreviews",
        &json!({"spec": {"resourceAttributes": {"verb": "get"}}}),
    )
    .await;
    assert_eq!(namespaced.status, 404, "{}", namespaced.body);
    let other_kind = post(
        &http,
        SSAR,
        &json!({"kind": "SubjectAccessReview", "spec": {"resourceAttributes": {"verb": "get"}}}),
    )
    .await;
    assert_eq!(other_kind.status, 400, "{}", other_kind.body);
}
