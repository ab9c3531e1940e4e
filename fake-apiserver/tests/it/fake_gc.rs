//! Fake API server: the garbage collector. Deleting an owner cascades to the objects whose
//! `ownerReferences` name it, following the delete's propagation policy (Background,
//! Foreground, Orphan), as the cluster's collector does.
#![allow(clippy::result_large_err)]

use std::sync::Arc;

use fake_apiserver::{
    DeleteOutcome, FakeApiServer, Preconditions, PropagationPolicy, ServerConfig, StoredObject,
    Target,
};
use serde_json::{Value, json};

/// `kind` `name` in namespace `a`, owned by `owners` (`(kind, apiVersion, object, blocks)`).
fn make(
    server: &FakeApiServer,
    resource: &str,
    kind: &str,
    name: &str,
    owners: &[(&str, &str, &Arc<StoredObject>, bool)],
    finalizers: &[&str],
) -> Arc<StoredObject> {
    let refs: Vec<Value> = owners
        .iter()
        .map(|(kind, api_version, o, blocks)| {
            json!({"apiVersion": api_version, "kind": kind, "name": o.name(), "uid": o.uid(),
                   "controller": true, "blockOwnerDeletion": blocks})
        })
        .collect();
    server
        .create(
            resource,
            &json!({"kind": kind, "metadata": {"name": name, "namespace": "a",
                    "ownerReferences": refs, "finalizers": finalizers}}),
        )
        .unwrap()
}

struct Tree {
    server: FakeApiServer,
    replica_set: Arc<StoredObject>,
}

/// A deployment owning a replica set owning pods `p1` (blocking), `p2` (blocking) and
/// `p3` (not blocking); `shared` is owned by the replica set and by a config map.
fn tree(server: FakeApiServer, p1_finalizers: &[&str], p3_finalizers: &[&str]) -> Tree {
    let deployment = make(&server, "deployments", "Deployment", "web", &[], &[]);
    let replica_set = make(
        &server,
        "replicasets",
        "ReplicaSet",
        "web-1",
        &[("Deployment", "apps/v1", &deployment, true)],
        &[],
    );
    let rs = ("ReplicaSet", "apps/v1", &replica_set, true);
    make(&server, "pods", "Pod", "p1", &[rs], p1_finalizers);
    make(&server, "pods", "Pod", "p2", &[rs], &[]);
    let loose = ("ReplicaSet", "apps/v1", &replica_set, false);
    make(&server, "pods", "Pod", "p3", &[loose], p3_finalizers);
    let keeper = make(&server, "configmaps", "ConfigMap", "keeper", &[], &[]);
    make(
        &server,
        "pods",
        "Pod",
        "shared",
        &[rs, ("ConfigMap", "v1", &keeper, false)],
        &[],
    );
    Tree {
        server,
        replica_set,
    }
}

fn names(server: &FakeApiServer, resource: &str) -> Vec<String> {
    server
        .objects(resource, Some("a"))
        .unwrap()
        .iter()
        .map(|o| o.name().to_owned())
        .collect()
}

fn target(server: &FakeApiServer, resource: &str, policy: PropagationPolicy) -> Target {
    server
        .target(resource, Some("a"))
        .unwrap()
        .propagation(policy)
}

fn owner_uids(server: &FakeApiServer, pod: &str) -> Vec<String> {
    let v = server.get("pods", Some("a"), pod).unwrap().to_value();
    v["metadata"]["ownerReferences"]
        .as_array()
        .map(|refs| {
            refs.iter()
                .map(|r| r["uid"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn finalizers(object: &StoredObject) -> Value {
    object.to_value()["metadata"]["finalizers"].clone()
}

#[tokio::test(start_paused = true)]
async fn background_deletes_dependents_after_their_owner() {
    let t = tree(FakeApiServer::new(), &[], &[]);
    let server = &t.server;
    let keeper = server.get("configmaps", Some("a"), "keeper").unwrap();
    let before = server.resource_version();
    let outcome = server
        .delete_at(
            &target(server, "deployments", PropagationPolicy::Background),
            "web",
            &Preconditions::default(),
        )
        .unwrap();
    assert!(matches!(outcome, DeleteOutcome::Deleted(_)));
    assert_eq!(names(server, "deployments"), Vec::<String>::new());
    assert_eq!(names(server, "replicasets"), Vec::<String>::new());
    // The pod with another live owner stays, without the reference to the removed one.
    assert_eq!(names(server, "pods"), ["shared"]);
    assert_eq!(owner_uids(server, "shared"), [keeper.uid()]);
    // One write each, owner first: deployment, replica set, p1, p2, p3, shared's update.
    assert_eq!(server.resource_version(), before + 6);
    // The direct delete (the test's hand) cascades too: the collector is not admission.
    server.delete("configmaps", Some("a"), "keeper").unwrap();
    assert_eq!(names(server, "pods"), Vec::<String>::new());
}

#[tokio::test(start_paused = true)]
async fn foreground_waits_for_blocking_dependents_then_removes_the_owner() {
    let t = tree(FakeApiServer::new(), &["a.io/hold"], &["a.io/hold"]);
    let server = &t.server;
    let outcome = server
        .delete_at(
            &target(server, "deployments", PropagationPolicy::Foreground),
            "web",
            &Preconditions::default(),
        )
        .unwrap();
    // Answered marked, waiting behind `foregroundDeletion`.
    let DeleteOutcome::Finalizing(marked) = outcome else {
        panic!("a foreground delete answers the marked object");
    };
    assert!(marked.is_deleting());
    assert_eq!(finalizers(&marked), json!(["foregroundDeletion"]));
    // The replica set is deleted in the foreground too, and waits for p1 (blocking, held
    // by its own finalizer); p2 is gone; p3 (held, not blocking) is being deleted.
    let deployment = server.get("deployments", Some("a"), "web").unwrap();
    let replica_set = server.get("replicasets", Some("a"), "web-1").unwrap();
    assert!(deployment.is_deleting() && replica_set.is_deleting());
    assert_eq!(finalizers(&replica_set), json!(["foregroundDeletion"]));
    assert_eq!(names(server, "pods"), ["p1", "p3", "shared"]);
    assert!(server.get("pods", Some("a"), "p1").unwrap().is_deleting());
    assert!(server.get("pods", Some("a"), "p3").unwrap().is_deleting());
    assert_eq!(
        owner_uids(server, "shared").len(),
        1,
        "shared keeps its live owner only"
    );

    // p3 does not block: releasing p1 releases the replica set, then the deployment.
    server
        .patch(
            "pods",
            Some("a"),
            "p1",
            &json!({"metadata": {"finalizers": null}}),
        )
        .unwrap();
    assert_eq!(names(server, "replicasets"), Vec::<String>::new());
    assert_eq!(names(server, "deployments"), Vec::<String>::new());
    assert_eq!(names(server, "pods"), ["p3", "shared"]);
}

#[tokio::test(start_paused = true)]
async fn orphan_keeps_dependents_and_drops_their_references() {
    let t = tree(FakeApiServer::new(), &[], &[]);
    let server = &t.server;
    let rs_uid = t.replica_set.uid().to_owned();
    let outcome = server
        .delete_at(
            &target(server, "replicasets", PropagationPolicy::Orphan),
            "web-1",
            &Preconditions::default(),
        )
        .unwrap();
    let DeleteOutcome::Finalizing(marked) = outcome else {
        panic!("an orphan delete answers the marked object");
    };
    assert_eq!(finalizers(&marked), json!(["orphan"]));
    assert_eq!(names(server, "replicasets"), Vec::<String>::new());
    assert_eq!(names(server, "pods"), ["p1", "p2", "p3", "shared"]);
    for pod in ["p1", "p2", "p3", "shared"] {
        assert!(
            !owner_uids(server, pod).contains(&rs_uid),
            "{pod} still names the replica set"
        );
    }
    // An emptied list is not stored (ObjectMeta is omitempty).
    let p1 = server.get("pods", Some("a"), "p1").unwrap().to_value();
    assert!(p1["metadata"].get("ownerReferences").is_none(), "{p1}");
    assert_eq!(names(server, "deployments"), ["web"]);
}

#[tokio::test(start_paused = true)]
async fn dry_runs_and_a_server_without_collector_cascade_nothing() {
    let t = tree(FakeApiServer::new(), &[], &[]);
    let server = &t.server;
    let before = server.resource_version();
    for policy in [
        PropagationPolicy::Background,
        PropagationPolicy::Foreground,
        PropagationPolicy::Orphan,
    ] {
        server
            .delete_at(
                &target(server, "deployments", policy).dry_run(),
                "web",
                &Preconditions::default(),
            )
            .unwrap();
    }
    assert_eq!(server.resource_version(), before);
    assert_eq!(names(server, "pods").len(), 4);

    let off = tree(
        FakeApiServer::with_config(ServerConfig {
            garbage_collection: false,
            ..ServerConfig::default()
        }),
        &[],
        &[],
    );
    let outcome = off
        .server
        .delete_at(
            &target(&off.server, "deployments", PropagationPolicy::Foreground),
            "web",
            &Preconditions::default(),
        )
        .unwrap();
    assert!(matches!(outcome, DeleteOutcome::Deleted(_)));
    assert_eq!(names(&off.server, "replicasets"), ["web-1"]);
    assert_eq!(names(&off.server, "pods").len(), 4);
}

/// A chain of owners thousands long (each config map owning the next) is collected without
/// deepening the stack: the collector works from a queue. (Recursing, this overflowed the
/// test thread's stack.)
#[tokio::test(start_paused = true)]
async fn a_long_owner_chain_is_collected_whatever_its_length() {
    const LENGTH: usize = 3_000;
    for policy in [PropagationPolicy::Background, PropagationPolicy::Foreground] {
        let server = FakeApiServer::new();
        let mut previous = make(&server, "configmaps", "ConfigMap", "link-0", &[], &[]);
        for i in 1..LENGTH {
            previous = make(
                &server,
                "configmaps",
                "ConfigMap",
                &format!("link-{i}"),
                &[("ConfigMap", "v1", &previous, true)],
                &[],
            );
        }
        assert_eq!(names(&server, "configmaps").len(), LENGTH);
        server
            .delete_at(
                &target(&server, "configmaps", policy),
                "link-0",
                &Preconditions::default(),
            )
            .unwrap();
        assert_eq!(
            names(&server, "configmaps"),
            Vec::<String>::new(),
            "{policy:?}"
        );
    }
}

/// An object written naming an owner that was removed (a controller acting on a stale cache
/// recreates what the collector just deleted) is collected right after its write, as
/// upstream's collector collects it once it finds the owner absent; a reference to a removed
/// owner next to a live one is dropped; an owner that never existed is left alone.
#[tokio::test(start_paused = true)]
async fn objects_written_after_their_owner_went_are_collected() {
    let server = FakeApiServer::new();
    let keeper = make(&server, "configmaps", "ConfigMap", "keeper", &[], &[]);
    let owner = make(&server, "deployments", "Deployment", "web", &[], &[]);
    server.delete("deployments", Some("a"), "web").unwrap();

    let mut events = server.objects("configmaps", Some("a")).unwrap().len();
    let before = server.resource_version();
    let late = make(
        &server,
        "configmaps",
        "ConfigMap",
        "late",
        &[("Deployment", "apps/v1", &owner, true)],
        &[],
    );
    assert_eq!(late.name(), "late", "the write itself succeeds");
    assert!(server.get("configmaps", Some("a"), "late").is_err());
    // Two writes: the create, then the collector's delete.
    assert_eq!(server.resource_version(), before + 2);
    assert_eq!(
        server.objects("configmaps", Some("a")).unwrap().len(),
        events
    );

    let shared = make(
        &server,
        "configmaps",
        "ConfigMap",
        "shared",
        &[
            ("Deployment", "apps/v1", &owner, true),
            ("ConfigMap", "v1", &keeper, false),
        ],
        &[],
    );
    let stored = server.get("configmaps", Some("a"), "shared").unwrap();
    assert_ne!(stored.resource_version(), shared.resource_version());
    assert_eq!(
        stored.to_value()["metadata"]["ownerReferences"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    assert_eq!(
        stored.to_value()["metadata"]["ownerReferences"][0]["uid"],
        keeper.uid()
    );
    events += 1;

    // An owner this server never held: the object stays (seeded objects name such owners).
    server
        .create(
            "configmaps",
            &json!({"metadata": {"name": "stray", "namespace": "a", "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "ghost",
                 "uid": "00000000-0000-0000-0000-000000000000"}]}}),
        )
        .unwrap();
    assert_eq!(
        server.objects("configmaps", Some("a")).unwrap().len(),
        events + 1
    );
}
