//! HTTP front end: what keeps the server safe from its clients: inputs that used to panic
//! or wrap (huge `timeoutSeconds`, the last resourceVersion, resource names), and the
//! history's byte bound over the admin API.
#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests: a failed unwrap is a failed test.

mod http_support;

use http_support::{Line, WatchLines, get, namespaces, pod, post, send, start};
use informer_testing::fake::MAX_RESOURCE_VERSION;
use reqwest::Method;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_timeout_seconds_gets_an_answer() {
    let (server, http) = start().await;
    // A huge bookmark interval does not overflow either.
    let interval = send(
        &http,
        Method::PUT,
        "/_fake/bookmark-interval",
        Some(("application/json", &json!({"seconds": 1e15}))),
    )
    .await;
    assert_eq!(interval.status, 200, "{}", interval.body);
    for seconds in [i64::MAX, i64::MAX - 1, 4_000_000_000_000_000_000] {
        let rv = server.resource_version();
        let mut w = WatchLines::open(
            &http,
            &format!(
                "/api/v1/pods?watch=1&resourceVersion={rv}&allowWatchBookmarks=true&\
                 timeoutSeconds={seconds}"
            ),
        )
        .await;
        assert_eq!(w.status, 200, "{seconds}");
        let name = format!("p{}", seconds % 1000);
        server.create("pods", &pod("a", &name, json!({}))).unwrap();
        assert_eq!(w.show_next().await, format!("ADDED {name}"), "{seconds}");
    }
    // Negative: like the real server, whose deadline is then already past, the watch ends
    // at once.
    for seconds in ["-1", "-9223372036854775808"] {
        let mut w = WatchLines::open(
            &http,
            &format!("/api/v1/pods?watch=1&timeoutSeconds={seconds}"),
        )
        .await;
        assert_eq!(w.status, 200, "{seconds}");
        assert!(matches!(w.next().await, Line::End), "{seconds}");
    }
    // Not a 64-bit integer: the server's 400 for a malformed parameter.
    let too_big = get(
        &http,
        "/api/v1/pods?watch=1&timeoutSeconds=9223372036854775808",
    )
    .await;
    assert_eq!(too_big.status, 400, "{}", too_big.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_versions_refuse_to_wrap() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let path = "/_fake/resource-version";
    let beyond = post(&http, path, &json!({"next": MAX_RESOURCE_VERSION + 1})).await;
    assert_eq!(beyond.status, 400, "{}", beyond.body);
    let overflow = post(&http, path, &json!({"advanceBy": u64::MAX})).await;
    assert_eq!(overflow.status, 400, "{}", overflow.body);
    assert!(
        overflow.body["message"]
            .as_str()
            .unwrap()
            .contains("no room"),
        "{}",
        overflow.body
    );
    let last = post(&http, path, &json!({"next": MAX_RESOURCE_VERSION})).await;
    assert_eq!(last.status, 200, "{}", last.body);
    let cm = |name: &str| json!({"metadata": {"name": name}});
    let last = post(&http, "/api/v1/namespaces/a/configmaps", &cm("last")).await;
    assert_eq!(last.status, 201, "{}", last.body);
    assert_eq!(
        last.body["metadata"]["resourceVersion"],
        MAX_RESOURCE_VERSION.to_string()
    );
    let next = post(&http, "/api/v1/namespaces/a/configmaps", &cm("next")).await;
    assert_eq!(next.status, 500, "{}", next.body);
    assert_eq!(next.body["reason"], "InternalError");
    assert!(
        next.body["message"]
            .as_str()
            .unwrap()
            .contains("resourceVersion exhausted"),
        "{}",
        next.body
    );
    let list = get(&http, "/api/v1/namespaces/a/configmaps").await;
    assert_eq!(list.body["items"].as_array().unwrap().len(), 1);
    assert_eq!(
        list.body["metadata"]["resourceVersion"],
        MAX_RESOURCE_VERSION.to_string()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registered_resource_names_follow_the_real_grammars() {
    let (server, http) = start().await;
    let before = server.resources().len();
    for (body, field) in [
        (
            json!({"group": "../x", "version": "v1", "plural": "widgets", "kind": "Widget"}),
            "spec.group",
        ),
        (
            json!({"group": "example.com", "version": "v1", "plural": "a/b", "kind": "Widget"}),
            "spec.names.plural",
        ),
        (
            json!({"group": "example.com", "version": "V1", "plural": "widgets", "kind": "Widget"}),
            "spec.version",
        ),
        (
            json!({"group": "example.com", "version": "v1", "plural": "widgets", "kind": "Wid/get"}),
            "spec.names.kind",
        ),
        (
            json!({"group": "example.com", "version": "v1", "plural": "widgets", "kind": "Widget",
                   "shortNames": ["w w"]}),
            "spec.names.shortNames",
        ),
    ] {
        let answer = post(&http, "/_fake/resources", &body).await;
        assert_eq!(answer.status, 422, "{body}: {}", answer.body);
        assert_eq!(answer.body["reason"], "Invalid");
        let causes = answer.body["details"]["causes"].as_array().unwrap();
        assert!(
            causes.iter().any(|c| c["field"] == field),
            "{field}: {}",
            answer.body
        );
    }
    // A CRD with a bad version name is refused the same way.
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "gizmos", "kind": "Gizmo"},
            "scope": "Namespaced",
            "versions": [{"name": "V1!", "served": true, "storage": true}],
        },
    });
    let answer = post(
        &http,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    )
    .await;
    assert_eq!(answer.status, 422, "{}", answer.body);
    assert_eq!(server.resources().len(), before);
    let ok = post(
        &http,
        "/_fake/resources",
        &json!({"group": "example.com", "version": "v1alpha1", "plural": "widgets", "kind": "Widget"}),
    )
    .await;
    assert_eq!(ok.status, 201, "{}", ok.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_history_byte_bound_over_the_admin_api() {
    let (server, http) = start().await;
    let put = send(
        &http,
        Method::PUT,
        "/_fake/history",
        Some(("application/json", &json!({"maxBytes": 10_000}))),
    )
    .await;
    assert_eq!(put.status, 200, "{}", put.body);
    let mut last = 0;
    for i in 0..5 {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": format!("c{i}"), "namespace": "a"},
                        "data": {"blob": "x".repeat(4_000)}});
        last = server.create("configmaps", &cm).unwrap().bytes().len();
    }
    let state = get(&http, "/_fake/state").await;
    let bytes = state.body["historyBytes"].as_u64().unwrap();
    assert!(bytes <= 10_000, "{bytes}");
    assert!(bytes >= last as u64, "{bytes}");
    assert_eq!(bytes, server.history_bytes() as u64);
}
