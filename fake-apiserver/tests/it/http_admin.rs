//! HTTP front end: the `/_fake/` admin API (controls and faults as JSON) and the bearer-token
//! rule, through a real HTTP client.
#![cfg(feature = "http")]

use fake_apiserver::FakeApiServer;
use fake_apiserver::http::{FakeHttpServer, HttpConfig};
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::GUARD;
use crate::support::http::{
    Answer, Line, WatchLines, client, get, namespaces, pod, post, send, start,
};

async fn admin(http: &FakeHttpServer, method: Method, path: &str, body: Value) -> Answer {
    send(
        http,
        method,
        &format!("/_fake/{path}"),
        Some(("application/json", &body)),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_seed_resource_versions_and_compaction() {
    let (server, http) = start().await;
    let table = client()
        .get(format!("{}/_fake/", http.url()))
        .send()
        .await
        .unwrap();
    assert!(
        table.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/markdown")
    );
    assert!(
        table
            .text()
            .await
            .unwrap()
            .contains("/_fake/faults/fail-lists")
    );
    let seeded = admin(
        &http,
        Method::POST,
        "seed",
        json!({"namespaces": 2, "pods": 6, "configmaps": 2}),
    )
    .await;
    assert_eq!(seeded.status, 200, "{}", seeded.body);
    assert_eq!(seeded.body["pods"], 6);
    assert_eq!(seeded.body["namespaces"], json!(["ns-0", "ns-1"]));
    assert_eq!(server.objects("pods", Some("ns-1")).unwrap().len(), 3);
    let rv = server.resource_version();
    let jumped = admin(
        &http,
        Method::POST,
        "resource-version",
        json!({"next": rv + 100}),
    )
    .await;
    assert_eq!(jumped.body["next"], rv + 100);
    let created = server.create("pods", &pod("a", "p", json!({}))).unwrap();
    assert_eq!(created.resource_version(), rv + 100);
    let advanced = admin(
        &http,
        Method::POST,
        "resource-version",
        json!({"advanceBy": 9}),
    )
    .await;
    assert_eq!(advanced.body["next"], rv + 110);
    assert_eq!(
        admin(&http, Method::POST, "resource-version", json!({}))
            .await
            .status,
        400
    );
    let compacted = admin(
        &http,
        Method::POST,
        "compact",
        json!({"resourceVersion": rv}),
    )
    .await;
    assert_eq!(compacted.body["compactedTo"], rv);
    assert_eq!(server.compacted_resource_version(), rv);
    let all = admin(&http, Method::POST, "compact", Value::Null).await;
    assert_eq!(all.body["compactedTo"], server.resource_version());
    let state = get(&http, "/_fake/state").await;
    assert_eq!(state.body["resourceVersion"], server.resource_version());
    let pods = state.body["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["plural"] == "pods")
        .unwrap();
    assert_eq!(pods["objects"], 7);
    assert_eq!(pods["oldestResourceVersion"], server.resource_version());
    let bad = admin(
        &http,
        Method::POST,
        "compact",
        json!({"resourceVersion": "x"}),
    )
    .await;
    assert_eq!(bad.status, 400);
    assert_eq!(bad.body["kind"], "Status");
    let typo = admin(&http, Method::POST, "seed", json!({"podz": 1})).await;
    assert_eq!(typo.status, 400);
    assert_eq!(get(&http, "/_fake/nope").await.status, 404);
    // Admin requests are not in the request log; the log can be read and cleared.
    get(&http, "/api/v1/pods?limit=5").await;
    let log = get(&http, "/_fake/requests").await;
    assert_eq!(log.body["requests"].as_array().unwrap().len(), 1);
    assert_eq!(log.body["requests"][0]["url"], "/api/v1/pods?limit=5");
    assert_eq!(log.body["requests"][0]["query"], json!([["limit", "5"]]));
    let taken = get(&http, "/_fake/requests?clear=true").await;
    assert_eq!(taken.body["requests"].as_array().unwrap().len(), 1);
    assert!(server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_and_watch_faults() {
    let (server, http) = start().await;
    let r = admin(
        &http,
        Method::POST,
        "faults/fail-lists",
        json!({"resource": "pods", "count": 2, "status": {"code": 429, "retryAfterSeconds": 5}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let pending = get(&http, "/_fake/faults").await;
    assert_eq!(pending.body["pending"].as_array().unwrap().len(), 1);
    for _ in 0..2 {
        let a = get(&http, "/api/v1/pods").await;
        assert_eq!(a.status, 429);
        assert_eq!(a.header("retry-after"), Some("5"));
    }
    assert_eq!(get(&http, "/api/v1/pods").await.status, 200);
    admin(&http, Method::POST, "faults/fail-watches", json!({"status": {"kind": "Status", "status": "Failure", "code": 504, "reason": "Timeout", "message": "slow etcd"}})).await;
    let w = get(&http, "/api/v1/configmaps?watch=1").await;
    assert_eq!(
        (w.status.as_u16(), w.body["message"].as_str()),
        (504, Some("slow etcd"))
    );
    // Continue tokens: expire the next continue, and every token issued so far.
    for i in 0..4 {
        server
            .create("pods", &pod("a", &format!("p{i}"), json!({})))
            .unwrap();
    }
    let page = get(&http, "/api/v1/pods?limit=1").await;
    let token = page.body["metadata"]["continue"]
        .as_str()
        .unwrap()
        .to_owned();
    admin(
        &http,
        Method::POST,
        "faults/expire-next-continues",
        json!({"resource": "pods"}),
    )
    .await;
    assert_eq!(
        get(&http, &format!("/api/v1/pods?limit=1&continue={token}"))
            .await
            .status,
        410
    );
    assert_eq!(
        get(&http, &format!("/api/v1/pods?limit=1&continue={token}"))
            .await
            .status,
        200
    );
    admin(
        &http,
        Method::POST,
        "faults/expire-continue-tokens",
        Value::Null,
    )
    .await;
    assert_eq!(
        get(&http, &format!("/api/v1/pods?limit=1&continue={token}"))
            .await
            .status,
        410
    );
    // An old server ignores sendInitialEvents: a plain watch from "now" instead of 422/stream.
    admin(
        &http,
        Method::PUT,
        "faults/ignore-send-initial-events",
        json!({"resource": "pods", "ignore": true}),
    )
    .await;
    let rv = server.resource_version();
    let mut old = WatchLines::open(
        &http,
        &format!("/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersion={rv}"),
    )
    .await;
    assert_eq!(old.status, 200);
    server.create("pods", &pod("a", "late", json!({}))).unwrap();
    assert_eq!(old.show_next().await, "ADDED late");
    // drop-next-watch-after, then clear everything.
    admin(
        &http,
        Method::POST,
        "faults/drop-next-watch-after",
        json!({"resource": "pods", "events": 1}),
    )
    .await;
    let mut short =
        WatchLines::open(&http, &format!("/api/v1/pods?watch=1&resourceVersion={rv}")).await;
    assert_eq!(short.show_next().await, "ADDED late");
    assert!(matches!(short.next().await, Line::End));
    admin(
        &http,
        Method::PUT,
        "faults/delay-lists",
        json!({"resource": "pods", "millis": 10}),
    )
    .await;
    admin(
        &http,
        Method::PUT,
        "faults/delay-watch-events",
        json!({"millis": 10}),
    )
    .await;
    assert_eq!(get(&http, "/api/v1/pods").await.status, 200);
    admin(
        &http,
        Method::POST,
        "faults/fail-lists",
        json!({"count": 3, "status": {"code": 500}}),
    )
    .await;
    assert_eq!(
        send(&http, Method::DELETE, "/_fake/faults", None)
            .await
            .status,
        200
    );
    assert!(server.faults().pending().is_empty());
    assert_eq!(get(&http, "/api/v1/pods").await.status, 200);
    let bad = admin(
        &http,
        Method::POST,
        "faults/fail-lists",
        json!({"status": {"code": 200}}),
    )
    .await;
    assert_eq!(bad.status, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_into_open_watches() {
    let (server, http) = start().await;
    let rv = server.resource_version();
    let url = format!("/api/v1/pods?watch=1&resourceVersion={rv}&allowWatchBookmarks=true");
    let mut w = WatchLines::open(&http, &url).await;
    tokio::time::timeout(GUARD, server.wait_for_open_watches("pods", 1))
        .await
        .unwrap();
    let state = get(&http, "/_fake/state").await;
    assert_eq!(state.body["openWatches"], 1, "{}", state.body);
    assert_eq!(
        admin(
            &http,
            Method::POST,
            "bookmarks",
            json!({"resource": "pods"})
        )
        .await
        .body["watchers"],
        1
    );
    assert_eq!(w.show_next().await, format!("BOOKMARK @{rv}"));
    assert_eq!(
        admin(
            &http,
            Method::PUT,
            "bookmark-interval",
            json!({"seconds": 30})
        )
        .await
        .status,
        200
    );
    let raw = admin(
        &http,
        Method::POST,
        "faults/inject-raw-line",
        json!({"preset": "unknown-event-type"}),
    )
    .await;
    assert_eq!(raw.body["watches"], 1);
    assert!(matches!(w.next().await, Line::Event(e) if e["type"] == "SURPRISE"));
    admin(
        &http,
        Method::POST,
        "faults/inject-raw-line",
        json!({"line": "garbage{"}),
    )
    .await;
    assert!(matches!(w.next().await, Line::Raw(l) if l == "garbage{"));
    let expired = admin(
        &http,
        Method::POST,
        "faults/expire-watches",
        json!({"resource": "pods"}),
    )
    .await;
    assert_eq!(expired.body["watches"], 1);
    assert_eq!(w.show_next().await, "ERROR 410");
    assert!(matches!(w.next().await, Line::End));
    let mut w = WatchLines::open(&http, &url).await;
    tokio::time::timeout(GUARD, server.wait_for_open_watches("pods", 1))
        .await
        .unwrap();
    let injected = admin(
        &http,
        Method::POST,
        "faults/inject-error",
        json!({"status": {"code": 500, "message": "boom"}}),
    )
    .await;
    assert_eq!(injected.body["watches"], 1);
    let err = w.event().await;
    assert_eq!(
        (
            err["object"]["code"].as_u64(),
            err["object"]["message"].as_str()
        ),
        (Some(500), Some("boom"))
    );
    let mut w = WatchLines::open(&http, &url).await;
    tokio::time::timeout(GUARD, server.wait_for_open_watches("pods", 1))
        .await
        .unwrap();
    assert_eq!(
        admin(&http, Method::POST, "faults/drop-watches", Value::Null)
            .await
            .body["watches"],
        1
    );
    assert!(matches!(w.next().await, Line::End));
    let mut w = WatchLines::open(&http, &url).await;
    tokio::time::timeout(GUARD, server.wait_for_open_watches("pods", 1))
        .await
        .unwrap();
    assert_eq!(
        admin(&http, Method::POST, "faults/break-watches", Value::Null)
            .await
            .body["watches"],
        1
    );
    assert!(matches!(w.next().await, Line::Broken(_)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_churn_and_resource_registration() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let h = admin(
        &http,
        Method::PUT,
        "history",
        json!({"minEvents": 0, "maxEvents": 2, "minAgeSeconds": 0}),
    )
    .await;
    assert_eq!(h.status, 200);
    let rv = server
        .create("pods", &pod("a", "first", json!({})))
        .unwrap()
        .resource_version();
    for i in 0..5 {
        server
            .create("pods", &pod("a", &format!("p{i}"), json!({})))
            .unwrap();
    }
    let mut w =
        WatchLines::open(&http, &format!("/api/v1/pods?watch=1&resourceVersion={rv}")).await;
    assert_eq!(w.show_next().await, "ERROR 410");
    let started = admin(
        &http,
        Method::POST,
        "churn",
        json!({"ratePerSecond": 200, "namespaces": ["ns-0"], "resources": ["configmaps"]}),
    )
    .await;
    assert_eq!(started.status, 200, "{}", started.body);
    let before = server.resource_version();
    tokio::time::timeout(GUARD, async {
        while server.resource_version() < before + 5 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
    let running = get(&http, "/_fake/churn").await;
    assert_eq!(running.body["running"], true);
    let stopped = send(&http, Method::DELETE, "/_fake/churn", None).await;
    assert_eq!(stopped.body["running"], false);
    // Random creates, updates and deletes (the created objects may all be gone again): the
    // counts cover at least the writes waited for.
    let count = |k: &str| stopped.body[k].as_u64().unwrap();
    assert!(count("creates") >= 1, "{}", stopped.body);
    assert!(
        count("creates") + count("updates") + count("deletes") >= 5,
        "{}",
        stopped.body
    );
    assert_eq!(get(&http, "/_fake/churn").await.body["running"], false);
    let reg = admin(&http, Method::POST, "resources", json!({"group": "example.com", "version": "v1", "plural": "gadgets", "kind": "Gadget", "shortNames": ["gd"]})).await;
    assert_eq!(reg.status, 201, "{}", reg.body);
    let created = post(
        &http,
        "/apis/example.com/v1/namespaces/a/gadgets",
        &json!({"metadata": {"name": "g"}}),
    )
    .await;
    assert_eq!(created.status, 201);
    assert!(server.target("gd", None).is_ok());
    let conflict = admin(
        &http,
        Method::POST,
        "resources",
        json!({"group": "example.com", "version": "v2", "plural": "gadgets", "kind": "Gadget"}),
    )
    .await;
    assert_eq!(conflict.status, 409);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_token_is_required() {
    let server = FakeApiServer::new();
    let http = FakeHttpServer::start(
        server,
        HttpConfig {
            token: Some("s3cret".into()),
            ..HttpConfig::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(http.token(), Some("s3cret"));
    for path in ["/api/v1/pods", "/api", "/_fake/state"] {
        let denied = get(&http, path).await;
        assert_eq!(denied.status, 401, "{path}");
        assert_eq!(denied.body["kind"], "Status");
        assert_eq!(denied.body["reason"], "Unauthorized");
    }
    let url = format!("{}/api/v1/pods", http.url());
    let wrong = client().get(&url).bearer_auth("nope").send().await.unwrap();
    assert_eq!(wrong.status(), 401);
    let ok = client()
        .get(&url)
        .bearer_auth("s3cret")
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    assert!(http.kubeconfig(None).contains("token: \"s3cret\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_loopback_listener_generates_a_token() {
    let server = FakeApiServer::new();
    let config = HttpConfig {
        listen: "0.0.0.0:0".parse().unwrap(),
        token: None,
        ..HttpConfig::default()
    };
    let http = FakeHttpServer::start(server, config).await.unwrap();
    let token = http.token().expect("a generated token").to_owned();
    assert_eq!(token.len(), 32);
    assert!(http.url().starts_with("http://127.0.0.1:"));
    let url = format!("{}/api/v1/pods", http.url());
    assert_eq!(client().get(&url).send().await.unwrap().status(), 401);
    assert_eq!(
        client()
            .get(&url)
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    http.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_open_watches() {
    let (server, http) = start().await;
    let mut w = WatchLines::open(&http, "/api/v1/pods?watch=1").await;
    tokio::time::timeout(GUARD, server.wait_for_open_watches("pods", 1))
        .await
        .unwrap();
    let url = http.url();
    tokio::time::timeout(GUARD, http.shutdown())
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(w.next().await, Line::End | Line::Broken(_)));
    assert!(client().get(format!("{url}/api")).send().await.is_err());
}
