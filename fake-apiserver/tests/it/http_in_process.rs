//! The HTTP front end without a socket: `http::kube_client` (a kube-client `Client` over
//! `http::in_process_router`) reads, writes and watches in virtual time, and the engine's
//! faults apply to its calls as they do over TCP.
#![cfg(feature = "kube-client")]

use std::time::Duration;

use axum::body::Body;
use fake_apiserver::http::{in_process_router, kube_client};
use fake_apiserver::{FakeApiServer, status};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{DeleteParams, PostParams, WatchEvent, WatchParams};
use kube_client::{Api, Error};
use serde_json::json;
use tokio::time::Instant;
use tower::ServiceExt;

fn config_map(name: &str, data: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": data}})).unwrap()
}

/// The HTTP status code of a kube-client API error.
fn code(error: &Error) -> u16 {
    match error {
        Error::Api(status) => status.code,
        other => panic!("not an API error: {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn writes_reads_and_faults_through_the_in_process_client() {
    let server = FakeApiServer::new();
    // Namespace admission applies to the request layer, as on a real server.
    server
        .create("namespaces", &json!({"metadata": {"name": "default"}}))
        .unwrap();
    let client = kube_client(&server);
    assert_eq!(client.default_namespace(), "default");
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let started = Instant::now();

    let created = api
        .create(&PostParams::default(), &config_map("a", "1"))
        .await
        .unwrap();
    let stored = server.get("configmaps", Some("default"), "a").unwrap();
    assert_eq!(created.metadata.uid.as_deref(), Some(stored.uid()));
    assert_eq!(api.get("a").await.unwrap().data, config_map("a", "1").data);

    // A replace at a stale resourceVersion is a 409, as over TCP.
    let mut stale = created.clone();
    server
        .patch(
            "configmaps",
            Some("default"),
            "a",
            &json!({"data": {"k": "2"}}),
        )
        .unwrap();
    stale.data = config_map("a", "3").data;
    let conflict = api
        .replace("a", &PostParams::default(), &stale)
        .await
        .unwrap_err();
    assert_eq!(code(&conflict), 409);

    // Injected write failures fail the client's calls, then writes go through again.
    server
        .faults()
        .fail_writes("configmaps", 2, status::internal_error("etcd is down"));
    for _ in 0..2 {
        let failed = api
            .create(&PostParams::default(), &config_map("b", "1"))
            .await
            .unwrap_err();
        assert_eq!(code(&failed), 500);
    }
    server.faults().assert_all_used();
    api.create(&PostParams::default(), &config_map("b", "1"))
        .await
        .unwrap();
    api.delete("b", &DeleteParams::default()).await.unwrap();
    assert!(server.get("configmaps", Some("default"), "b").is_err());

    // The requests are in the engine's log, and no time passed: nothing waited on a socket.
    let posts = server
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path == "/api/v1/namespaces/default/configmaps")
        .count();
    assert_eq!(posts, 4);
    assert_eq!(started.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn a_watch_streams_events_and_ends_at_its_timeout_in_virtual_time() {
    let server = FakeApiServer::new();
    let api: Api<ConfigMap> = Api::default_namespaced(kube_client(&server));
    let rv = server.resource_version().to_string();
    let started = Instant::now();
    let mut events = api
        .watch(&WatchParams::default().timeout(300), &rv)
        .await
        .unwrap()
        .boxed();
    server
        .create(
            "configmaps",
            &json!({"metadata": {"namespace": "default", "name": "w"}}),
        )
        .unwrap();
    match events.try_next().await.unwrap() {
        Some(WatchEvent::Added(cm)) => assert_eq!(cm.metadata.name.as_deref(), Some("w")),
        other => panic!("unexpected {other:?}"),
    }
    // Nothing more but bookmarks: the stream ends when the server's timeout passes, in
    // virtual time.
    while let Some(event) = events.try_next().await.unwrap() {
        assert!(matches!(event, WatchEvent::Bookmark(_)), "{event:?}");
    }
    assert_eq!(started.elapsed(), Duration::from_secs(300));
}

#[tokio::test(start_paused = true)]
async fn the_router_keeps_the_front_ends_policies() {
    let server = FakeApiServer::new();
    let get = |uri: &str| http::Request::get(uri).body(Body::empty()).unwrap();
    let discovery = in_process_router(&server)
        .oneshot(get("/api"))
        .await
        .unwrap();
    assert_eq!(discovery.status(), 200);
    // A web page's cross-site request is refused, as on a loopback listener.
    let mut from_a_page = get("/api/v1/namespaces");
    from_a_page
        .headers_mut()
        .insert("origin", "http://evil.example".parse().unwrap());
    let refused = in_process_router(&server)
        .oneshot(from_a_page)
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
}

/// The same timeout on the real clock (a multi-thread runtime), so that lateness or drift of
/// the server's watch deadline shows: a 1 s watch ends after 1 s, not much later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_time_a_watch_ends_at_its_timeout() {
    let server = FakeApiServer::new();
    let api: Api<ConfigMap> = Api::default_namespaced(kube_client(&server));
    let rv = server.resource_version().to_string();
    let started = Instant::now();
    let ended = tokio::time::timeout(Duration::from_secs(30), async {
        let mut events = api
            .watch(&WatchParams::default().timeout(1), &rv)
            .await
            .unwrap()
            .boxed();
        while let Some(event) = events.try_next().await.unwrap() {
            assert!(matches!(event, WatchEvent::Bookmark(_)), "{event:?}");
        }
    })
    .await;
    assert!(ended.is_ok(), "the watch outlived its timeout by far");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(950) && took <= Duration::from_secs(5),
        "{took:?}"
    );
}
