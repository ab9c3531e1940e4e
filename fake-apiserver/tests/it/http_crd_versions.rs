//! HTTP front end: a CRD served in several versions (the `None` conversion strategy), as
//! upstream's `apiextensions-apiserver` serves it: every served version reads, lists and
//! watches the same objects at the same resourceVersions; a write through any version is
//! pruned, defaulted and validated with that version's schema, then stored in the storage
//! version (pruned with its schema, its defaults applied); discovery lists the versions by
//! priority; a deprecated version warns on every request; a version no longer served is a
//! 404 and its watches end; `status.storedVersions` records every storage version.
#![cfg(feature = "http")]

use futures::{StreamExt, TryStreamExt};
use kube_client::api::{Api, DynamicObject, ListParams, PostParams, WatchEvent, WatchParams};
use kube_client::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use crate::http_kube_client::kube;
use crate::support::GUARD;
use crate::support::http::{Line, WatchLines, get, namespaces, post, put, start};

const CRD: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

fn widgets(version: &str) -> String {
    format!("/apis/example.com/{version}/namespaces/a/widgets")
}

fn schema(properties: Value) -> Value {
    json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": properties}}}})
}

/// `v1beta1` (deprecated, knows `size` and `legacy`), `v1` (storage: `size`, `color` with a
/// default) and `v2` (`size`, `color`, `shape`, `size` at most 10).
fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {"name": "v1beta1", "served": true, "storage": false, "deprecated": true,
                 "schema": schema(json!({"size": {"type": "integer"},
                                         "legacy": {"type": "string"}}))},
                {"name": "v1", "served": true, "storage": true,
                 "schema": schema(json!({"size": {"type": "integer"},
                                         "color": {"type": "string", "default": "blue"}}))},
                {"name": "v2", "served": true, "storage": false,
                 "schema": schema(json!({"size": {"type": "integer", "maximum": 10},
                                         "color": {"type": "string"},
                                         "shape": {"type": "string"}}))},
            ],
        },
    })
}

fn widget(version: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("example.com/{version}"), "kind": "Widget",
           "metadata": {"name": name}, "spec": spec})
}

async fn event(watch: &mut WatchLines) -> Value {
    let got = watch.event().await;
    assert_ne!(got["type"], "ERROR", "{got}");
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_served_version_reads_and_writes_one_storage() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let made = post(&http, CRD, &crd()).await;
    assert_eq!(made.status, 201, "{}", made.body);

    // Discovery: the versions by priority, the preferred one first.
    let group = get(&http, "/apis/example.com").await;
    let versions: Vec<&str> = group.body["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["v2", "v1", "v1beta1"]);
    assert_eq!(group.body["preferredVersion"]["version"], "v2");
    for version in ["v1beta1", "v1", "v2"] {
        let listed = get(&http, &format!("/apis/example.com/{version}")).await;
        assert_eq!(listed.status, 200, "{version}");
        assert_eq!(listed.body["resources"][0]["name"], "widgets", "{version}");
    }

    let mut v2_watch = WatchLines::open(&http, &format!("{}?watch=true", widgets("v2"))).await;
    let mut beta_watch =
        WatchLines::open(&http, &format!("{}?watch=true", widgets("v1beta1"))).await;
    assert_eq!(beta_watch.status, 200);
    assert_eq!(
        beta_watch.header("warning"),
        Some("299 - \"example.com/v1beta1 Widget is deprecated; use example.com/v2 Widget\"")
    );

    // Written through the storage version: read through each with its own apiVersion and
    // pruned by its own schema, at one resourceVersion and uid.
    let w1 = post(
        &http,
        &widgets("v1"),
        &widget("v1", "w1", json!({"size": 3, "color": "red"})),
    )
    .await;
    assert_eq!(w1.status, 201, "{}", w1.body);
    assert!(w1.warnings().is_empty(), "{:?}", w1.warnings());
    let (uid, rv) = (
        w1.body["metadata"]["uid"].clone(),
        w1.body["metadata"]["resourceVersion"].clone(),
    );
    let v2 = get(&http, &format!("{}/w1", widgets("v2"))).await;
    assert_eq!(v2.body["apiVersion"], "example.com/v2");
    assert_eq!(v2.body["spec"], json!({"size": 3, "color": "red"}));
    assert_eq!(
        (
            &v2.body["metadata"]["uid"],
            &v2.body["metadata"]["resourceVersion"]
        ),
        (&uid, &rv)
    );
    let beta = get(&http, &format!("{}/w1", widgets("v1beta1"))).await;
    assert_eq!(beta.body["apiVersion"], "example.com/v1beta1");
    assert_eq!(beta.body["spec"], json!({"size": 3}));
    assert_eq!(
        beta.warnings(),
        ["299 - \"example.com/v1beta1 Widget is deprecated; use example.com/v2 Widget\""]
    );
    for watch in [&mut v2_watch, &mut beta_watch] {
        let added = event(watch).await;
        assert_eq!(added["type"], "ADDED");
        assert_eq!(added["object"]["metadata"]["resourceVersion"], rv);
    }

    // Written through v2: checked with v2's schema; what the storage version does not know
    // (`shape`) is lost, its default (`color`) is set, and the answer shows both.
    let too_big = post(
        &http,
        &widgets("v2"),
        &widget("v2", "w2", json!({"size": 11})),
    )
    .await;
    assert_eq!(too_big.status, 422, "{}", too_big.body);
    let w2 = post(
        &http,
        &widgets("v2"),
        &widget("v2", "w2", json!({"size": 4, "shape": "round"})),
    )
    .await;
    assert_eq!(w2.status, 201, "{}", w2.body);
    assert_eq!(w2.body["apiVersion"], "example.com/v2");
    assert_eq!(w2.body["spec"], json!({"size": 4, "color": "blue"}));
    let v1 = get(&http, &format!("{}/w2", widgets("v1"))).await;
    assert_eq!(v1.body["spec"], json!({"size": 4, "color": "blue"}));
    let added = event(&mut v2_watch).await;
    assert_eq!(added["object"]["spec"], json!({"size": 4, "color": "blue"}));
    assert_eq!(
        event(&mut beta_watch).await["object"]["apiVersion"],
        "example.com/v1beta1"
    );

    // Updated through v1beta1, which does not know `color`: the stored color is lost with
    // the rest of what that version cannot say, and the storage default comes back (the
    // `None` strategy keeps nothing a version drops).
    let mut body = beta.body.clone();
    body["spec"]["size"] = json!(5);
    let updated = put(&http, &format!("{}/w1", widgets("v1beta1")), &body).await;
    assert_eq!(updated.status, 200, "{}", updated.body);
    let v1 = get(&http, &format!("{}/w1", widgets("v1"))).await;
    assert_eq!(v1.body["spec"], json!({"size": 5, "color": "blue"}));
    let modified = event(&mut v2_watch).await;
    assert_eq!(modified["type"], "MODIFIED");
    assert_eq!(
        modified["object"]["metadata"]["resourceVersion"],
        v1.body["metadata"]["resourceVersion"]
    );

    // Lists answer each version's own objects.
    for (version, sizes) in [("v1beta1", [5, 4]), ("v2", [5, 4])] {
        let list = get(&http, &widgets(version)).await;
        assert_eq!(list.body["apiVersion"], format!("example.com/{version}"));
        let got: Vec<(String, i64)> = list.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| {
                (
                    w["apiVersion"].as_str().unwrap().to_owned(),
                    w["spec"]["size"].as_i64().unwrap(),
                )
            })
            .collect();
        let want: Vec<(String, i64)> = sizes
            .iter()
            .map(|s| (format!("example.com/{version}"), *s))
            .collect();
        assert_eq!(got, want);
    }

    // Deleted through v2: every version's watch sees its own last state go.
    let gone = crate::support::http::send(
        &http,
        reqwest::Method::DELETE,
        &format!("{}/w2", widgets("v2")),
        None,
    )
    .await;
    assert_eq!(gone.status, 200, "{}", gone.body);
    let deleted = event(&mut beta_watch).await;
    assert_eq!(
        deleted["type"], "MODIFIED",
        "w1's update came first: {deleted}"
    );
    let deleted = event(&mut beta_watch).await;
    assert_eq!(deleted["type"], "DELETED");
    assert_eq!(deleted["object"]["apiVersion"], "example.com/v1beta1");
    assert_eq!(deleted["object"]["spec"], json!({"size": 4}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changing_the_served_versions_ends_watches_and_starts_new_versions_full() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let made = post(&http, CRD, &crd()).await;
    assert_eq!(made.status, 201, "{}", made.body);
    assert_eq!(made.body["status"]["storedVersions"], json!(["v1"]));
    let w1 = post(
        &http,
        &widgets("v1"),
        &widget("v1", "w1", json!({"size": 3, "color": "red"})),
    )
    .await;
    assert_eq!(w1.status, 201, "{}", w1.body);
    let mut beta_watch =
        WatchLines::open(&http, &format!("{}?watch=true", widgets("v1beta1"))).await;

    // v1beta1 no longer served, v3 served, v2 the storage version.
    let mut crd = get(&http, &format!("{CRD}/widgets.example.com")).await.body;
    crd["spec"]["versions"][0]["served"] = json!(false);
    crd["spec"]["versions"][1]["storage"] = json!(false);
    crd["spec"]["versions"][2]["storage"] = json!(true);
    let mut v3 = crd["spec"]["versions"][2].clone();
    v3["name"] = json!("v3");
    v3["storage"] = json!(false);
    crd["spec"]["versions"].as_array_mut().unwrap().push(v3);
    let changed = put(&http, &format!("{CRD}/widgets.example.com"), &crd).await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    assert_eq!(
        changed.body["status"]["storedVersions"],
        json!(["v1", "v2"])
    );

    // A watch without a resourceVersion starts with the objects there are.
    assert_eq!(event(&mut beta_watch).await["type"], "ADDED");
    match tokio::time::timeout(GUARD, beta_watch.next()).await {
        Ok(Line::End) => {}
        other => panic!("the watch of a version no longer served should end: {other:?}"),
    }
    assert_eq!(get(&http, &widgets("v1beta1")).await.status, 404);
    let group = get(&http, "/apis/example.com").await;
    assert_eq!(group.body["preferredVersion"]["version"], "v3");
    let v3 = get(&http, &format!("{}/w1", widgets("v3"))).await;
    assert_eq!(v3.status, 200, "{}", v3.body);
    assert_eq!(v3.body["apiVersion"], "example.com/v3");
    assert_eq!(v3.body["spec"], json!({"size": 3, "color": "red"}));

    // Through kube-client: v3 lists, watches and creates like any version.
    let client = kube(&http).await;
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v3", "Widget"));
    let api: Api<DynamicObject> = Api::namespaced_with(client, "a", &resource);
    let list = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
    let rv = list.metadata.resource_version.unwrap();
    let mut events = api
        .watch(&WatchParams::default().timeout(10), &rv)
        .await
        .unwrap()
        .boxed();
    let w4: DynamicObject =
        serde_json::from_value(widget("v3", "w4", json!({"size": 7, "shape": "square"}))).unwrap();
    let created = api.create(&PostParams::default(), &w4).await.unwrap();
    // v2 stores now: it knows `shape`; `color` has no default any more.
    assert_eq!(created.data["spec"], json!({"size": 7, "shape": "square"}));
    let seen = tokio::time::timeout(GUARD, events.try_next())
        .await
        .expect("watch event")
        .unwrap()
        .expect("an event");
    match seen {
        WatchEvent::Added(w) => {
            assert_eq!(w.metadata.name.as_deref(), Some("w4"));
            assert_eq!(w.types.unwrap().api_version, "example.com/v3");
        }
        other => panic!("expected ADDED: {other:?}"),
    }
}

/// A CRD update upstream refuses is refused before it is stored (422, the CRD as it was):
/// a second storage version, or dropping a version still in `status.storedVersions`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crd_updates_are_checked_before_they_are_stored() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let made = post(&http, CRD, &crd()).await;
    assert_eq!(made.status, 201, "{}", made.body);
    let path = format!("{CRD}/widgets.example.com");
    let stored = get(&http, &path).await.body;

    let mut two_storages = stored.clone();
    two_storages["spec"]["versions"][2]["storage"] = json!(true);
    let refused = put(&http, &path, &two_storages).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "CustomResourceDefinition.apiextensions.k8s.io \"widgets.example.com\" is invalid: \
         spec.versions: Invalid value: must have exactly one version marked as storage version"
    );

    // v2 becomes the storage version (v1 stays listed): accepted, both stored versions kept.
    let mut moved = stored.clone();
    moved["spec"]["versions"][1]["storage"] = json!(false);
    moved["spec"]["versions"][2]["storage"] = json!(true);
    let accepted = put(&http, &path, &moved).await;
    assert_eq!(accepted.status, 200, "{}", accepted.body);
    assert_eq!(
        accepted.body["status"]["storedVersions"],
        json!(["v1", "v2"])
    );
    // Dropping v1, still stored: refused, and nothing changed.
    let mut dropped = accepted.body.clone();
    dropped["spec"]["versions"]
        .as_array_mut()
        .unwrap()
        .remove(1);
    let refused = put(&http, &path, &dropped).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert_eq!(
        refused.body["details"]["causes"][0]["field"],
        "status.storedVersions[0]"
    );
    let now = get(&http, &path).await.body;
    assert_eq!(
        now["metadata"]["resourceVersion"],
        accepted.body["metadata"]["resourceVersion"]
    );
    assert_eq!(get(&http, &widgets("v1")).await.status, 200);
}
