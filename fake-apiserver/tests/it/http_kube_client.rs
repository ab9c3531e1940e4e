//! Compatibility smoke test: kube-client (with k8s-openapi types) lists and watches pods
//! against the HTTP front end, configured from the server's kubeconfig.
#![cfg(feature = "http")]

use fake_apiserver::seed::{SeedConfig, seed};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube_client::api::{ListParams, PostParams, WatchEvent, WatchParams};
use kube_client::config::{KubeConfigOptions, Kubeconfig};
use kube_client::{Api, Client, Config};
use serde_json::json;

use crate::support::GUARD;
use crate::support::http::{pod, start};

/// A kube-client `Client` configured from the server's kubeconfig (default namespace `ns-0`).
pub(crate) async fn kube(http: &fake_apiserver::http::FakeHttpServer) -> Client {
    let kubeconfig = Kubeconfig::from_yaml(&http.kubeconfig(Some("ns-0"))).unwrap();
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    assert_eq!(config.default_namespace, "ns-0");
    Client::try_from(config).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_client_lists_pages_and_watches_pods() {
    let (server, http) = start().await;
    seed(
        &server,
        &SeedConfig {
            namespaces: 3,
            pods: 30,
            configmaps: 0,
            seed: 1,
        },
    )
    .unwrap();
    let client = kube(&http).await;
    let pods: Api<Pod> = Api::all(client.clone());
    // Paged list, as informers do.
    let mut all = Vec::new();
    let mut lp = ListParams::default().limit(7);
    let first_rv;
    loop {
        let page = pods.list(&lp).await.unwrap();
        all.extend(page.items);
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => lp = lp.continue_token(&token),
            None => {
                first_rv = page.metadata.resource_version.unwrap();
                break;
            }
        }
    }
    assert_eq!(all.len(), 30);
    let one = &all[0];
    assert!(
        one.spec.as_ref().unwrap().containers.len() == 2,
        "realistic pods decode"
    );
    assert!(
        one.metadata
            .managed_fields
            .as_ref()
            .is_some_and(|m| !m.is_empty())
    );
    // Watch from the list's resourceVersion; changes come through typed.
    let mut stream = pods
        .watch(&WatchParams::default().timeout(60), &first_rv)
        .await
        .unwrap()
        .boxed();
    let in_ns: Api<Pod> = Api::default_namespaced(client.clone());
    let created = in_ns
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "from-kube"},
                "spec": {"containers": [{"name": "a", "image": "a:1"}]},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(created.metadata.namespace.as_deref(), Some("ns-0"));
    match tokio::time::timeout(GUARD, stream.try_next())
        .await
        .unwrap()
        .unwrap()
    {
        Some(WatchEvent::Added(p)) => assert_eq!(p.metadata.name.as_deref(), Some("from-kube")),
        other => panic!("unexpected {other:?}"),
    }
    in_ns
        .delete("from-kube", &Default::default())
        .await
        .unwrap();
    match tokio::time::timeout(GUARD, stream.try_next())
        .await
        .unwrap()
        .unwrap()
    {
        Some(WatchEvent::Deleted(p)) => assert_eq!(p.metadata.name.as_deref(), Some("from-kube")),
        other => panic!("unexpected {other:?}"),
    }
    // A watch from a compacted resourceVersion: kube-client sees the ERROR 410 event.
    server.compact_all();
    let mut expired = pods
        .watch(&WatchParams::default(), &first_rv)
        .await
        .unwrap()
        .boxed();
    match tokio::time::timeout(GUARD, expired.try_next())
        .await
        .unwrap()
        .unwrap()
    {
        Some(WatchEvent::Error(e)) => assert_eq!(e.code, 410),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_client_streaming_list() {
    let (server, http) = start().await;
    for i in 0..3 {
        server
            .create(
                "configmaps",
                &json!({"metadata": {"name": format!("c{i}"), "namespace": "ns-0"}}),
            )
            .unwrap();
    }
    let cms: Api<ConfigMap> = Api::default_namespaced(kube(&http).await);
    let mut stream = cms
        .watch(&WatchParams::streaming_lists(), "0")
        .await
        .unwrap()
        .boxed();
    let mut added = Vec::new();
    loop {
        match tokio::time::timeout(GUARD, stream.try_next())
            .await
            .unwrap()
            .unwrap()
        {
            Some(WatchEvent::Added(c)) => added.push(c.metadata.name.unwrap()),
            Some(WatchEvent::Bookmark(b)) => {
                assert_eq!(
                    b.metadata
                        .annotations
                        .get("k8s.io/initial-events-end")
                        .map(String::as_str),
                    Some("true")
                );
                assert_eq!(
                    b.metadata.resource_version,
                    server.resource_version().to_string()
                );
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(added, ["c0", "c1", "c2"]);
    let log = server.requests();
    let watch = log.iter().find(|r| r.is_watch_of("configmaps")).unwrap();
    assert_eq!(watch.param("sendInitialEvents"), Some("true"));
    assert_eq!(watch.param("resourceVersionMatch"), Some("NotOlderThan"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_client_sends_the_kubeconfig_token() {
    let server = fake_apiserver::FakeApiServer::new();
    server.create("pods", &pod("ns-0", "p", json!({}))).unwrap();
    let http = fake_apiserver::http::FakeHttpServer::start(
        server,
        fake_apiserver::http::HttpConfig {
            token: Some("t0ken".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let pods: Api<Pod> = Api::default_namespaced(kube(&http).await);
    let list = pods.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
    // Without the token the same request is refused with the server's 401 Status.
    let anonymous = Client::try_from(Config::new(http.url().parse().unwrap())).unwrap();
    let err = Api::<Pod>::namespaced(anonymous, "ns-0")
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("Unauthorized") || err.to_string().contains("401"),
        "{err}"
    );
}
