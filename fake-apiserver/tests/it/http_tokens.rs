//! HTTP front end: service account tokens (`POST serviceaccounts/<name>/token`, a
//! `TokenRequest`) and their review (`tokenreviews`), as upstream's `TokenREST` and token
//! authenticator answer them; expiry on the in-process server's paused clock.
#![cfg(feature = "http")]

use std::time::Duration;

use fake_apiserver::FakeApiServer;
use k8s_openapi::api::authentication::v1::{
    BoundObjectReference, TokenRequest, TokenRequestSpec, TokenReview, TokenReviewSpec,
};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube_client::Api;
use kube_client::api::{DeleteParams, PostParams};
use serde_json::{Value, json};

use crate::http_kube_client::kube;
use crate::support::http::{get, namespaces, post, start};

fn seed(server: &FakeApiServer) -> String {
    namespaces(server, &["ns-0"]);
    server
        .create(
            "serviceaccounts",
            &json!({"metadata": {"name": "robot", "namespace": "ns-0"}}),
        )
        .unwrap();
    server
        .create(
            "pods",
            &json!({"metadata": {"name": "worker", "namespace": "ns-0"},
                    "spec": {"serviceAccountName": "robot",
                             "containers": [{"name": "c", "image": "i"}]}}),
        )
        .unwrap()
        .uid()
        .to_owned()
}

fn claims(token: &str) -> Value {
    use base64::Engine as _;
    let payload = token.split('.').nth(1).unwrap();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bound_token_is_issued_and_reviewed_through_kube_client() {
    let (server, http) = start().await;
    let pod_uid = seed(&server);
    let client = kube(&http).await;
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "ns-0");
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            audiences: Some(vec!["vault".into()]),
            expiration_seconds: Some(1200),
            bound_object_ref: Some(BoundObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                name: Some("worker".into()),
                uid: Some(pod_uid.clone()),
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let issued: TokenRequest = accounts
        .create_subresource("token", "robot", &PostParams::default(), &request)
        .await
        .unwrap();
    let status = issued.status.unwrap();
    assert_eq!(issued.spec.unwrap().expiration_seconds, Some(1200));
    let token = status.token.unwrap();
    let claims = claims(&token);
    assert_eq!(claims["sub"], "system:serviceaccount:ns-0:robot");
    assert_eq!(claims["aud"], json!(["vault"]));
    assert_eq!(claims["kubernetes.io"]["pod"]["uid"], pod_uid.as_str());
    assert_eq!(
        claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
        1200
    );

    let reviews: Api<TokenReview> = Api::all(client.clone());
    let review = |audiences: Vec<String>| TokenReview {
        spec: TokenReviewSpec {
            token: token.clone(),
            audiences: Some(audiences),
        },
        ..Default::default()
    };
    let answered = reviews
        .create(&PostParams::default(), &review(vec!["vault".into()]))
        .await
        .unwrap()
        .status
        .unwrap();
    assert_eq!(answered.authenticated, Some(true), "{answered:?}");
    let user = answered.user.unwrap();
    assert_eq!(
        user.username.as_deref(),
        Some("system:serviceaccount:ns-0:robot")
    );
    assert_eq!(
        user.groups.unwrap(),
        [
            "system:serviceaccounts",
            "system:serviceaccounts:ns-0",
            "system:authenticated"
        ]
    );
    assert_eq!(
        user.extra.unwrap()["authentication.kubernetes.io/pod-name"],
        ["worker"]
    );
    // Another audience: not for it.
    let other = reviews
        .create(&PostParams::default(), &review(vec!["api".into()]))
        .await
        .unwrap()
        .status
        .unwrap();
    assert_eq!(other.authenticated, None);
    assert!(
        other
            .error
            .unwrap()
            .contains("is invalid for the target audiences"),
        "audience"
    );
    // The pod it is bound to is gone: the token is no longer good.
    Api::<k8s_openapi::api::core::v1::Pod>::namespaced(client, "ns-0")
        .delete("worker", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    let gone = reviews
        .create(&PostParams::default(), &review(vec!["vault".into()]))
        .await
        .unwrap()
        .status
        .unwrap();
    assert_eq!(gone.authenticated, None);
    assert_eq!(
        gone.error.as_deref(),
        Some("[invalid bearer token, service account token has been invalidated]")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_requests_and_reviews_are_checked_as_upstream_checks_them() {
    let (server, http) = start().await;
    let pod_uid = seed(&server);
    let token_url =
        |account: &str| format!("/api/v1/namespaces/ns-0/serviceaccounts/{account}/token");
    let message = |body: &Value| body["message"].as_str().unwrap_or("").to_owned();

    let short = post(
        &http,
        &token_url("robot"),
        &json!({"spec": {"expirationSeconds": 60}}),
    )
    .await;
    assert_eq!(short.status, 422, "{}", short.body);
    assert_eq!(
        message(&short.body),
        "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid \
         value: 60: may not specify a duration less than 10 minutes"
    );
    let typed = post(
        &http,
        &token_url("robot"),
        &json!({"spec": {"expirationSeconds": "3600"}}),
    )
    .await;
    assert_eq!(typed.status, 400, "{}", typed.body);
    assert_eq!(
        message(&typed.body),
        "TokenRequest in version \"v1\" cannot be handled as a TokenRequest: json: cannot \
         unmarshal string into Go struct field TokenRequestSpec.spec.expirationSeconds of type \
         int64"
    );
    let nobody = post(&http, &token_url("nobody"), &json!({})).await;
    assert_eq!(nobody.status, 404);
    assert_eq!(
        message(&nobody.body),
        "serviceaccounts \"nobody\" not found"
    );
    let config_map = post(
        &http,
        &token_url("robot"),
        &json!({"spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "ConfigMap", "name": "x"}}}),
    )
    .await;
    assert_eq!(config_map.status, 400);
    assert_eq!(
        message(&config_map.body),
        "cannot bind token to object of type /v1, Kind=ConfigMap"
    );
    let stale = post(
        &http,
        &token_url("robot"),
        &json!({"spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "worker",
                                            "uid": "not-the-uid"}}}),
    )
    .await;
    assert_eq!(stale.status, 409, "{}", stale.body);
    assert!(message(&stale.body).contains("does not match the UID in record"));
    server
        .create(
            "serviceaccounts",
            &json!({"metadata": {"name": "other", "namespace": "ns-0"}}),
        )
        .unwrap();
    let borrowed = post(
        &http,
        &token_url("other"),
        &json!({"spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "worker",
                                            "uid": pod_uid}}}),
    )
    .await;
    assert_eq!(borrowed.status, 400);
    assert!(message(&borrowed.body).contains("to pod running with different serviceaccount"));

    // The defaults: an hour, the server's audience; the answer is a 201.
    let issued = post(&http, &token_url("robot"), &json!({})).await;
    assert_eq!(issued.status, 201, "{}", issued.body);
    assert_eq!(issued.body["kind"], "TokenRequest");
    assert_eq!(issued.body["spec"]["expirationSeconds"], 3600);
    assert_eq!(
        issued.body["spec"]["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    let token = issued.body["status"]["token"].as_str().unwrap().to_owned();

    const REVIEWS: &str = "/apis/authentication.k8s.io/v1/tokenreviews";
    // OpenAPI documents the review with its one operation, as upstream's does.
    let document = get(&http, "/openapi/v3/apis/authentication.k8s.io/v1").await;
    let operations = document.body["paths"][REVIEWS].as_object().unwrap();
    assert_eq!(operations.keys().collect::<Vec<_>>(), ["post"]);
    let empty = post(&http, REVIEWS, &json!({"spec": {}})).await;
    assert_eq!(empty.status, 400);
    assert_eq!(
        message(&empty.body),
        "token is required for TokenReview in authentication"
    );
    let forged = post(
        &http,
        REVIEWS,
        &json!({"spec": {"token": format!("{token}x")}}),
    )
    .await;
    assert_eq!(forged.status, 201);
    assert_eq!(
        forged.body["status"],
        json!({"user": {}, "error": "[invalid bearer token, token lookup failed]"})
    );
    let good = post(&http, REVIEWS, &json!({"spec": {"token": token}})).await;
    assert_eq!(good.body["status"]["authenticated"], true, "{}", good.body);
    assert_eq!(good.body["kind"], "TokenReview");
    // The service account deleted and created again: a new uid, so the token is stale.
    server
        .delete("serviceaccounts", Some("ns-0"), "robot")
        .unwrap();
    server
        .create(
            "serviceaccounts",
            &json!({"metadata": {"name": "robot", "namespace": "ns-0"}}),
        )
        .unwrap();
    let stale = post(&http, REVIEWS, &json!({"spec": {"token": token}})).await;
    assert_eq!(
        stale.body["status"]["error"],
        "[invalid bearer token, service account token has been invalidated]"
    );
}

#[tokio::test(start_paused = true)]
async fn tokens_expire_on_the_server_s_clock() {
    let server = FakeApiServer::new();
    seed(&server);
    let accounts = server
        .target_for("", "v1", "serviceaccounts", Some("ns-0"))
        .unwrap();
    let issued = server
        .request_token_at(
            &accounts,
            "robot",
            &json!({"spec": {"expirationSeconds": 600}}),
        )
        .unwrap();
    let token = issued["status"]["token"].as_str().unwrap().to_owned();
    tokio::time::advance(Duration::from_secs(599)).await;
    let review = server.review_token(&json!({"token": token})).unwrap();
    assert_eq!(review["authenticated"], true, "{review}");
    tokio::time::advance(Duration::from_secs(1)).await;
    let review = server.review_token(&json!({"token": token})).unwrap();
    assert_eq!(
        review["error"],
        "[invalid bearer token, service account token has expired]"
    );
}
