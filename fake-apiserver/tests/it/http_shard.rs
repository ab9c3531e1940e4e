//! Fake API server over HTTP: `shardSelector` on lists and watches (the selector as a
//! client sends it, percent-encoded in the URL), the `metadata.shardInfo.selector` echo in
//! JSON and Table answers, the 400 for a malformed selector, and the switch that makes the
//! server behave like one without the feature: the admin API and the binary's flag.

use std::collections::BTreeSet;

use fake_apiserver::http::FakeHttpServer;
use fake_apiserver::{FakeApiServer, ServerConfig};
use informer_core::shard::{ShardField, ShardSelector};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::http::{Binary, Line, WatchLines, get, names, namespaces, put, start};

/// The query string of a shard selector.
fn param(selector: &str) -> String {
    let mut q = String::from("shardSelector=");
    for b in selector.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            q.push(char::from(b));
        } else {
            q.push_str(&format!("%{b:02X}"));
        }
    }
    q
}

/// 40 pods in `a`, by name; their uids.
fn seed(server: &FakeApiServer) -> Vec<(String, String)> {
    namespaces(server, &["a"]);
    (0..40)
        .map(|i| {
            let o = server
                .create("pods", &crate::support::pod("a", &format!("p{i:02}")))
                .unwrap();
            (o.name().to_owned(), o.uid().to_owned())
        })
        .collect()
}

async fn list(http: &FakeHttpServer, query: &str) -> (StatusCode, Value) {
    let answer = get(http, &format!("/api/v1/namespaces/a/pods?{query}")).await;
    (answer.status, answer.body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_are_filtered_and_echo_the_canonical_selector() {
    let (server, http) = start().await;
    let pods = seed(&server);
    let selector = ShardSelector::even_split(ShardField::Uid, 0, 2).unwrap();
    // Written with double quotes and extra spaces: the echo is canonical.
    let sent = "shardRange( object.metadata.uid , \"0x0000000000000000\", \"0x8000000000000000\" )";
    let (status, body) = list(&http, &param(sent)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["metadata"]["shardInfo"]["selector"],
        json!(selector.to_string())
    );
    let got: BTreeSet<String> = names(&body).into_iter().collect();
    let expected: BTreeSet<String> = pods
        .iter()
        .filter(|(_, uid)| selector.matches_value(uid))
        .map(|(name, _)| name.clone())
        .collect();
    assert_eq!(got, expected);
    assert!(!got.is_empty() && got.len() < 40);
    // Paged: the echo on every page.
    let (_, first) = list(&http, &format!("limit=5&{}", param(&selector.to_string()))).await;
    assert_eq!(
        first["metadata"]["shardInfo"]["selector"],
        json!(selector.to_string())
    );
    assert!(first["metadata"].get("remainingItemCount").is_none());
    // As a Table (kubectl get): the same metadata.
    let table = crate::support::http::client()
        .get(format!(
            "{}/api/v1/namespaces/a/pods?{}",
            http.url(),
            param(&selector.to_string())
        ))
        .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(table["kind"], "Table");
    assert_eq!(
        table["metadata"]["shardInfo"]["selector"],
        json!(selector.to_string())
    );
    assert_eq!(table["rows"].as_array().unwrap().len(), expected.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_selector_is_a_400_on_lists_and_watches() {
    let (server, http) = start().await;
    seed(&server);
    let bad = "shardRange(object.metadata.uid, '0xFF', '0x8000000000000000')";
    let (status, body) = list(&http, &param(bad)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["reason"], "BadRequest");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid shardSelector"),
        "{body}"
    );
    let (status, _) = list(&http, &format!("watch=1&{}", param(bad))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_carry_only_the_shards_events() {
    let (server, http) = start().await;
    seed(&server);
    let selector = ShardSelector::even_split(ShardField::Uid, 1, 2).unwrap();
    let rv = server.resource_version();
    let mut watch = WatchLines::open(
        &http,
        &format!(
            "/api/v1/namespaces/a/pods?watch=1&resourceVersion={rv}&{}",
            param(&selector.to_string())
        ),
    )
    .await;
    assert_eq!(watch.status, StatusCode::OK);
    let mut expected = Vec::new();
    for i in 0..20 {
        let o = server
            .create("pods", &crate::support::pod("a", &format!("n{i:02}")))
            .unwrap();
        if selector.matches_value(o.uid()) {
            expected.push(o.name().to_owned());
        }
    }
    assert!(!expected.is_empty());
    let mut got = Vec::new();
    while got.len() < expected.len() {
        match watch.next().await {
            Line::Event(e) => {
                assert_eq!(e["type"], "ADDED", "{e}");
                let uid = e["object"]["metadata"]["uid"].as_str().unwrap();
                assert!(
                    selector.matches_value(uid),
                    "an event outside the shard: {e}"
                );
                got.push(e["object"]["metadata"]["name"].as_str().unwrap().to_owned());
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(got, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_switch_turns_the_feature_off_and_on() {
    let (server, http) = start().await;
    seed(&server);
    let state = get(&http, "/_fake/state").await;
    assert_eq!(state.body["shardedListAndWatch"], true);
    let selector = ShardSelector::even_split(ShardField::Uid, 0, 4).unwrap();
    let off = put(
        &http,
        "/_fake/sharded-list-and-watch",
        &json!({"enabled": false}),
    )
    .await;
    assert_eq!(off.status, StatusCode::OK, "{}", off.body);
    assert_eq!(off.body, json!({"enabled": false}));
    assert!(!server.sharded_list_and_watch());
    let (status, body) = list(&http, &param(&selector.to_string())).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(names(&body).len(), 40);
    assert!(body["metadata"].get("shardInfo").is_none(), "{body}");
    // Malformed, and ignored.
    let (status, _) = list(&http, &param("nonsense")).await;
    assert_eq!(status, StatusCode::OK);
    let on = put(
        &http,
        "/_fake/sharded-list-and-watch",
        &json!({"enabled": true}),
    )
    .await;
    assert_eq!(on.status, StatusCode::OK);
    let (_, body) = list(&http, &param(&selector.to_string())).await;
    assert!(names(&body).len() < 40);
    // A body without the field is refused.
    let bad = put(&http, "/_fake/sharded-list-and-watch", &json!({"on": true})).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_can_start_without_the_feature() {
    let binary = Binary::start(&["--disable-sharded-list-and-watch", "--seed", "pods=12"]).await;
    let client = crate::support::http::client();
    let state: Value = client
        .get(format!("{}/_fake/state", binary.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(state["shardedListAndWatch"], false);
    let selector = ShardSelector::even_split(ShardField::Uid, 0, 4).unwrap();
    let body: Value = client
        .get(format!(
            "{}/api/v1/pods?{}",
            binary.url(),
            param(&selector.to_string())
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(body["items"].as_array().unwrap().len(), 12);
    assert!(body["metadata"].get("shardInfo").is_none());
    assert!(binary.terminate().await.success());
    // The default binary honours it (ServerConfig's default).
    assert!(ServerConfig::default().sharded_list_and_watch);
}
