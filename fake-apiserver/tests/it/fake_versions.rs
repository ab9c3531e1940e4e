//! Fake API server: one custom resource served in several versions
//! ([`FakeApiServer::register_versions`], what a CRD with several served versions does),
//! through the engine alone: writes through one version are read, listed and watched
//! through the others at the same resourceVersion, each in its own form.
// The engine answers with `Status` values by design (the wire's error type).
#![allow(clippy::result_large_err)]

use fake_apiserver::{FakeApiServer, ResourceDef};
use informer_core::{ListOptions, ListerWatcher, WatchEvent};
use informer_testing::JsonObject;
use serde_json::json;

use crate::support::{from, next_event};

fn versions() -> (ResourceDef, ResourceDef) {
    let spec = |properties| {
        json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": properties}}})
    };
    (
        ResourceDef::namespaced("example.com", "v1", "widgets", "Widget").with_schema(spec(
            json!({"size": {"type": "integer"}, "color": {"type": "string", "default": "blue"}}),
        )),
        ResourceDef::namespaced("example.com", "v2", "widgets", "Widget").with_schema(spec(
            json!({"size": {"type": "integer"}, "shape": {"type": "string"}}),
        )),
    )
}

fn namespace(server: &FakeApiServer) {
    server
        .create("namespaces", &fake_apiserver::seed::namespace("a"))
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn writes_through_one_version_are_watched_through_another() {
    let server = FakeApiServer::new();
    namespace(&server);
    let (v1, v2) = versions();
    server
        .register_versions(vec![v1.clone(), v2.clone()], &v1)
        .unwrap();
    let v2_lw = server
        .lister_watcher::<JsonObject>("widgets.v2.example.com", Some("a"))
        .unwrap();
    let rv = server.resource_version();
    let mut watch = v2_lw.watch(&from(rv)).await.unwrap();

    let v2_target = server
        .target_for("example.com", "v2", "widgets", Some("a"))
        .unwrap();
    let written = server
        .create_at(
            &v2_target,
            json!({"apiVersion": "example.com/v2", "kind": "Widget",
                   "metadata": {"name": "w"}, "spec": {"size": 2, "shape": "round"}}),
        )
        .unwrap();
    // Stored in v1: `shape` lost, v1's default set but not shown by v2's schema.
    assert_eq!(written.to_value()["spec"], json!({"size": 2}));
    let stored = server
        .get("widgets.v1.example.com", Some("a"), "w")
        .unwrap();
    assert_eq!(stored.to_value()["apiVersion"], "example.com/v1");
    assert_eq!(
        stored.to_value()["spec"],
        json!({"size": 2, "color": "blue"})
    );
    assert_eq!(stored.resource_version(), written.resource_version());

    let WatchEvent::Added(seen) = next_event(&mut watch).await else {
        panic!("expected ADDED");
    };
    assert_eq!(seen.fields["apiVersion"], "example.com/v2");
    assert_eq!(
        seen.metadata.resource_version,
        Some(written.resource_version().to_string())
    );

    // A dry run through v2 answers the stored form and stores nothing.
    let dry = server
        .create_at(
            &v2_target.clone().dry_run(),
            json!({"apiVersion": "example.com/v2", "kind": "Widget",
                   "metadata": {"name": "x"}, "spec": {"shape": "square"}}),
        )
        .unwrap();
    assert_eq!(dry.to_value()["spec"], json!({}));
    let listed = v2_lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);

    // Served again without v2: it is gone (404), its watch ends; v1 keeps the objects.
    server.register_versions(vec![v1.clone()], &v1).unwrap();
    assert_eq!(
        server
            .target_for("example.com", "v2", "widgets", None)
            .unwrap_err()
            .code,
        404
    );
    assert!(crate::support::next(&mut watch).await.is_none());
    // A lister resolved before answers 404 too, as its URL would.
    assert_eq!(
        v2_lw
            .list(&ListOptions::default())
            .await
            .unwrap_err()
            .status()
            .map(|s| s.code),
        Some(404)
    );
    assert_eq!(
        server
            .lister_watcher::<JsonObject>("widgets", Some("a"))
            .unwrap()
            .list(&ListOptions::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    // Back again: v2 starts with every object, its history from now.
    server.register_versions(vec![v1.clone(), v2], &v1).unwrap();
    assert_eq!(
        v2_lw.list(&ListOptions::default()).await.unwrap().items[0].fields["spec"],
        json!({"size": 2})
    );
}

#[tokio::test(start_paused = true)]
async fn a_version_replacing_the_only_one_starts_with_its_objects() {
    let server = FakeApiServer::new();
    namespace(&server);
    let (v1, v2) = versions();
    server.register_versions(vec![v1.clone()], &v1).unwrap();
    server
        .create(
            "widgets.example.com",
            &json!({"metadata": {"name": "w", "namespace": "a"}, "spec": {"size": 1}}),
        )
        .unwrap();
    // v1 no longer served, v2 served and stored.
    server.register_versions(vec![v2.clone()], &v2).unwrap();
    let read = server.get("widgets", Some("a"), "w").unwrap().to_value();
    assert_eq!(read["apiVersion"], "example.com/v2");
    assert_eq!(read["spec"], json!({"size": 1}));
    assert_eq!(
        server
            .get("widgets.v1.example.com", Some("a"), "w")
            .unwrap_err()
            .code,
        404
    );
}

#[tokio::test(start_paused = true)]
async fn versions_must_be_of_one_resource() {
    let server = FakeApiServer::new();
    let (v1, _) = versions();
    let gadgets = ResourceDef::namespaced("example.com", "v2", "gadgets", "Gadget");
    let refused = server.register_versions(vec![v1.clone(), gadgets], &v1);
    assert_eq!(refused.unwrap_err().code, 422);
    let cluster = ResourceDef::cluster_scoped("example.com", "v2", "widgets", "Widget");
    assert_eq!(
        server
            .register_versions(vec![v1.clone(), cluster], &v1)
            .unwrap_err()
            .code,
        422
    );
    server.register_versions(vec![v1.clone()], &v1).unwrap();
    // Another kind for the registered resource: a 409.
    let renamed = ResourceDef::namespaced("example.com", "v1", "widgets", "Gizmo");
    assert_eq!(
        server
            .register_versions(vec![renamed.clone()], &renamed)
            .unwrap_err()
            .code,
        409
    );
}
