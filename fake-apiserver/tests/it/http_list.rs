//! HTTP front end: list semantics on the wire (paging, continue tokens, validation,
//! selectors, errors, renderings) through a real HTTP client.
#![cfg(feature = "http")]

use fake_apiserver::status;
use serde_json::json;

use crate::support::http::{WatchLines, client, get, names, pod, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paging_with_continue_and_remaining_item_count() {
    let (server, http) = start().await;
    for i in 0..25 {
        server
            .create(
                "pods",
                &pod(&format!("ns-{}", i % 3), &format!("p{i:02}"), json!({})),
            )
            .unwrap();
    }
    let first = get(&http, "/api/v1/pods?limit=10").await;
    assert_eq!(first.status, 200);
    assert_eq!(first.header("content-type"), Some("application/json"));
    assert_eq!(first.body["kind"], "PodList");
    assert_eq!(first.body["apiVersion"], "v1");
    assert_eq!(first.body["metadata"]["remainingItemCount"], 15);
    let rv = first.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(rv, server.resource_version().to_string());
    let mut seen = names(&first.body);
    let mut token = first.body["metadata"]["continue"]
        .as_str()
        .unwrap()
        .to_owned();
    // A write between pages does not show: the pages are a consistent snapshot.
    server
        .create("pods", &pod("ns-0", "zz-late", json!({})))
        .unwrap();
    let mut remaining = Vec::new();
    loop {
        let page = get(&http, &format!("/api/v1/pods?limit=10&continue={token}")).await;
        assert_eq!(page.status, 200, "{}", page.body);
        assert_eq!(page.body["metadata"]["resourceVersion"], rv.as_str());
        seen.extend(names(&page.body));
        remaining.push(page.body["metadata"]["remainingItemCount"].clone());
        match page.body["metadata"]["continue"].as_str() {
            Some(t) => token = t.to_owned(),
            None => break,
        }
    }
    assert_eq!(remaining, vec![json!(5), json!(null)]);
    assert_eq!(seen.len(), 25);
    assert!(!seen.contains(&"zz-late".to_owned()));
    // Key order: namespace, then name.
    assert_eq!(seen[0], "p00");
    let log: Vec<String> = server.requests().iter().map(ToString::to_string).collect();
    assert_eq!(log[0], "GET /api/v1/pods?limit=10");
    assert!(
        log[1].starts_with("GET /api/v1/pods?limit=10&continue="),
        "{log:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continue_token_outlived_by_compaction_is_410() {
    let (server, http) = start().await;
    for i in 0..5 {
        server
            .create("pods", &pod("a", &format!("p{i}"), json!({})))
            .unwrap();
    }
    let first = get(&http, "/api/v1/namespaces/a/pods?limit=2").await;
    let token = first.body["metadata"]["continue"]
        .as_str()
        .unwrap()
        .to_owned();
    server
        .create(
            "configmaps",
            &json!({"metadata": {"name": "c", "namespace": "a"}}),
        )
        .unwrap();
    server.compact_all();
    let expired = get(
        &http,
        &format!("/api/v1/namespaces/a/pods?limit=2&continue={token}"),
    )
    .await;
    assert_eq!(expired.status, 410);
    assert_eq!(expired.body["kind"], "Status");
    assert_eq!(expired.body["reason"], "Expired");
    assert_eq!(expired.body["code"], 410);
    assert_eq!(expired.body["message"], status::CONTINUE_EXPIRED_MESSAGE);
    // An exact list older than the history is 410 too.
    let exact = get(
        &http,
        "/api/v1/namespaces/a/pods?resourceVersion=2&resourceVersionMatch=Exact",
    )
    .await;
    assert_eq!(exact.status, 410);
    assert_eq!(exact.body["message"], status::LIST_EXPIRED_MESSAGE);
    // A garbled token is a 400.
    let bad = get(&http, "/api/v1/namespaces/a/pods?continue=garbage").await;
    assert_eq!(bad.status, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_list_options_are_422() {
    let (_server, http) = start().await;
    for (query, field) in [
        ("resourceVersionMatch=NotOlderThan", "resourceVersionMatch"),
        (
            "resourceVersion=0&resourceVersionMatch=Exact",
            "resourceVersionMatch",
        ),
        ("sendInitialEvents=true", "sendInitialEvents"),
        ("watch=1&sendInitialEvents=true", "resourceVersionMatch"),
        (
            "watch=1&resourceVersionMatch=NotOlderThan",
            "resourceVersionMatch",
        ),
    ] {
        let a = get(&http, &format!("/api/v1/pods?{query}")).await;
        assert_eq!(a.status, 422, "{query}: {}", a.body);
        assert_eq!(a.body["reason"], "Invalid", "{query}");
        assert_eq!(a.body["details"]["causes"][0]["field"], field, "{query}");
        assert!(
            a.body["message"]
                .as_str()
                .unwrap()
                .starts_with("ListOptions.meta.k8s.io \"\" is invalid"),
            "{query}: {}",
            a.body
        );
    }
    let bad_number = get(&http, "/api/v1/pods?limit=ten").await;
    assert_eq!(bad_number.status, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn label_and_field_selectors() {
    let (server, http) = start().await;
    server
        .create(
            "pods",
            &pod("a", "web-1", json!({"app": "web", "tier": "front"})),
        )
        .unwrap();
    server
        .create("pods", &pod("a", "api-1", json!({"app": "api"})))
        .unwrap();
    server
        .create(
            "pods",
            &pod("a", "db-1", json!({"app": "db", "tier": "back"})),
        )
        .unwrap();
    server
        .create("pods", &pod("b", "web-2", json!({"app": "web"})))
        .unwrap();
    let q = |s: &str| {
        s.replace(' ', "%20")
            .replace('(', "%28")
            .replace(')', "%29")
            .replace(',', "%2C")
            .replace('!', "%21")
            .replace('=', "%3D")
    };
    let cases = [
        ("app=web", vec!["web-1", "web-2"]),
        ("app in (web,api)", vec!["api-1", "web-1", "web-2"]),
        ("app notin (web)", vec!["api-1", "db-1"]),
        ("tier", vec!["db-1", "web-1"]),
        ("!tier", vec!["api-1", "web-2"]),
        ("app!=web,tier", vec!["db-1"]),
    ];
    for (selector, want) in cases {
        let a = get(
            &http,
            &format!("/api/v1/pods?labelSelector={}", q(selector)),
        )
        .await;
        assert_eq!(a.status, 200, "{selector}");
        assert_eq!(names(&a.body), want, "{selector}");
        // Selected lists carry no remainingItemCount.
        assert!(a.body["metadata"].get("remainingItemCount").is_none());
    }
    let by_name = get(
        &http,
        &format!("/api/v1/pods?fieldSelector={}", q("metadata.name=web-2")),
    )
    .await;
    assert_eq!(names(&by_name.body), vec!["web-2"]);
    let by_ns = get(
        &http,
        &format!("/api/v1/pods?fieldSelector={}", q("metadata.namespace!=a")),
    )
    .await;
    assert_eq!(names(&by_ns.body), vec!["web-2"]);
    let unsupported = get(
        &http,
        &format!("/api/v1/configmaps?fieldSelector={}", q("spec.nodeName=n1")),
    )
    .await;
    assert_eq!(unsupported.status, 400);
    assert!(
        unsupported.body["message"]
            .as_str()
            .unwrap()
            .contains("field label not supported"),
        "{}",
        unsupported.body
    );
    let garbled = get(
        &http,
        &format!("/api/v1/pods?labelSelector={}", q("app in (web")),
    )
    .await;
    assert_eq!(garbled.status, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_versions_on_lists() {
    let (server, http) = start().await;
    server.create("pods", &pod("a", "p1", json!({}))).unwrap();
    let rv = server.resource_version();
    server.create("pods", &pod("a", "p2", json!({}))).unwrap();
    // Exact at an older resourceVersion: the state then.
    let then = get(
        &http,
        &format!("/api/v1/pods?resourceVersion={rv}&resourceVersionMatch=Exact"),
    )
    .await;
    assert_eq!(names(&then.body), vec!["p1"]);
    assert_eq!(then.body["metadata"]["resourceVersion"], rv.to_string());
    // Not older than: the current state.
    let now = get(&http, &format!("/api/v1/pods?resourceVersion={rv}")).await;
    assert_eq!(names(&now.body), vec!["p1", "p2"]);
    // "0" ignores the limit (served from the watch cache).
    let any = get(&http, "/api/v1/pods?resourceVersion=0&limit=1").await;
    assert_eq!(names(&any.body).len(), 2);
    // A resourceVersion the server has not reached: 504 with the cause clients look for.
    let future = get(&http, &format!("/api/v1/pods?resourceVersion={}", rv + 100)).await;
    assert_eq!(future.status, 504);
    assert_eq!(
        future.body["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttled_lists_get_retry_after() {
    let (server, http) = start().await;
    server
        .faults()
        .fail_lists("pods", 1, status::too_many_requests(7));
    let a = get(&http, "/api/v1/pods").await;
    assert_eq!(a.status, 429);
    assert_eq!(a.header("retry-after"), Some("7"));
    assert_eq!(a.body["reason"], "TooManyRequests");
    assert_eq!(a.body["details"]["retryAfterSeconds"], 7);
    let b = get(&http, "/api/v1/pods").await;
    assert_eq!(b.status, 200);
    server
        .faults()
        .fail_lists("*", 1, status::internal_error("etcd is down"));
    let c = get(&http, "/api/v1/configmaps").await;
    assert_eq!(c.status, 500);
    assert!(c.header("retry-after").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_resources_and_objects_are_404() {
    let (server, http) = start().await;
    server.create("pods", &pod("a", "p1", json!({}))).unwrap();
    let missing = get(&http, "/api/v1/namespaces/a/pods/nope").await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.body["reason"], "NotFound");
    assert_eq!(missing.body["message"], "pods \"nope\" not found");
    assert_eq!(missing.body["details"]["name"], "nope");
    assert_eq!(get(&http, "/api/v1/widgets").await.status, 404);
    assert_eq!(get(&http, "/apis/example.com/v1/jobs").await.status, 404);
    assert_eq!(get(&http, "/apis/batch/v2/jobs").await.status, 404);
    // Namespaced objects have no cluster-wide URL; cluster-scoped ones no namespaced URL.
    assert_eq!(get(&http, "/api/v1/pods/p1").await.status, 404);
    assert_eq!(get(&http, "/api/v1/namespaces/a/nodes").await.status, 404);
    let found = get(&http, "/api/v1/namespaces/a/pods/p1").await;
    assert_eq!(found.status, 200);
    assert_eq!(found.body["metadata"]["name"], "p1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_and_metadata_renderings() {
    let (server, http) = start().await;
    server
        .create("pods", &pod("a", "p1", json!({"app": "web"})))
        .unwrap();
    server.create("pods", &pod("b", "p2", json!({}))).unwrap();
    let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    let resp = client()
        .get(format!("{}/api/v1/pods?limit=500", http.url()))
        .header("Accept", kubectl)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let table: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["apiVersion"], "meta.k8s.io/v1");
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        columns,
        [
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
            "IP",
            "Node",
            "Nominated Node",
            "Readiness Gates"
        ]
    );
    assert_eq!(table["rows"][0]["cells"][0], "p1");
    assert_eq!(table["rows"][0]["cells"][1], "0/1");
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(table["rows"][0]["object"]["metadata"]["namespace"], "a");
    assert_eq!(
        table["metadata"]["resourceVersion"],
        server.resource_version().to_string()
    );
    let full = client()
        .get(format!(
            "{}/api/v1/namespaces/a/pods/p1?includeObject=Object",
            http.url()
        ))
        .header("Accept", kubectl)
        .send()
        .await
        .unwrap()
        .json::<serde_json::Value>()
        .await
        .unwrap();
    assert_eq!(full["rows"][0]["object"]["kind"], "Pod");
    let meta = client()
        .get(format!("{}/api/v1/pods", http.url()))
        .header(
            "Accept",
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        )
        .send()
        .await
        .unwrap()
        .json::<serde_json::Value>()
        .await
        .unwrap();
    assert_eq!(meta["kind"], "PartialObjectMetadataList");
    assert_eq!(meta["items"][1]["metadata"]["name"], "p2");
    assert!(meta["items"][0].get("spec").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_field_selectors_over_http_lists_and_watches() {
    let (server, http) = start().await;
    let q = |s: &str| {
        fake_apiserver::Query {
            field_selector: Some(s.to_owned()),
            ..Default::default()
        }
        .to_query_string()
        .trim_start_matches("fieldSelector=")
        .to_owned()
    };
    for (name, node) in [("a1", "n1"), ("a2", "n2"), ("a3", "n1")] {
        let mut p = pod("a", name, json!({}));
        p["spec"]["nodeName"] = json!(node);
        server.create("pods", &p).unwrap();
    }
    let selector = q("spec.nodeName=n1");
    let listed = get(&http, &format!("/api/v1/pods?fieldSelector={selector}")).await;
    assert_eq!(names(&listed.body), ["a1", "a3"]);
    let mut watch = WatchLines::open(
        &http,
        &format!("/api/v1/namespaces/a/pods?watch=1&fieldSelector={selector}"),
    )
    .await;
    assert_eq!(watch.show_next().await, "ADDED a1");
    assert_eq!(watch.show_next().await, "ADDED a3");
    server
        .patch(
            "pods",
            Some("a"),
            "a2",
            &json!({"spec": {"nodeName": "n1"}}),
        )
        .unwrap();
    server
        .patch(
            "pods",
            Some("a"),
            "a1",
            &json!({"status": {"phase": "Running"}}),
        )
        .unwrap();
    assert_eq!(watch.show_next().await, "ADDED a2");
    assert_eq!(watch.show_next().await, "MODIFIED a1");
    let running = get(
        &http,
        &format!(
            "/api/v1/pods?fieldSelector={}",
            q("spec.nodeName=n1,status.phase=Running")
        ),
    )
    .await;
    assert_eq!(names(&running.body), ["a1"]);
    http.shutdown().await.unwrap();
}
