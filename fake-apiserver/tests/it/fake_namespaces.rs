//! Fake API server: the namespace lifecycle. A namespace carries the strategy's defaults; a
//! deleted one terminates, refuses new content, has its content deleted and is removed once
//! nothing is left, as the real server and its namespace controller do.
#![allow(clippy::result_large_err)]

use fake_apiserver::{DeleteOutcome, FakeApiServer, Preconditions, ServerConfig};
use serde_json::json;

fn make(server: &FakeApiServer, resource: &str, ns: &str, name: &str, finalizers: &[&str]) {
    server
        .create(
            resource,
            &json!({"metadata": {"name": name, "namespace": ns, "finalizers": finalizers}}),
        )
        .unwrap();
}

fn count(server: &FakeApiServer, resource: &str, ns: &str) -> usize {
    server.objects(resource, Some(ns)).unwrap().len()
}

#[tokio::test(start_paused = true)]
async fn namespaces_carry_the_strategys_defaults() {
    let server = FakeApiServer::new();
    let target = server.target("namespaces", None).unwrap();
    let created = server
        .create_at(
            &target,
            json!({"metadata": {"name": "a"}, "status": {"phase": "Terminating"}}),
        )
        .unwrap()
        .to_value();
    assert_eq!(
        created["metadata"]["labels"],
        json!({"kubernetes.io/metadata.name": "a"})
    );
    assert_eq!(created["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(created["status"], json!({"phase": "Active"}));
    // The label stays on updates; other labels come and go.
    let updated = server
        .update_at(
            &target,
            "a",
            json!({"metadata": {"name": "a", "labels": {"team": "x"}}, "spec": created["spec"]}),
        )
        .unwrap()
        .to_value();
    assert_eq!(
        updated["metadata"]["labels"],
        json!({"kubernetes.io/metadata.name": "a", "team": "x"})
    );
    // The test's direct writes get the strategy's defaults too (status as written).
    let direct = server
        .create("namespaces", &json!({"metadata": {"name": "b"}}))
        .unwrap()
        .to_value();
    assert_eq!(direct["spec"]["finalizers"], json!(["kubernetes"]));
    assert!(direct.get("status").is_none());
}

#[tokio::test(start_paused = true)]
async fn deleting_a_namespace_deletes_its_content_then_the_namespace() {
    let server = FakeApiServer::new();
    for ns in ["a", "b"] {
        server
            .create("namespaces", &json!({"metadata": {"name": ns}}))
            .unwrap();
        make(&server, "configmaps", ns, "c1", &[]);
        make(&server, "configmaps", ns, "c2", &[]);
        make(&server, "pods", ns, "p", &[]);
        make(&server, "events.events.k8s.io", ns, "e", &[]);
    }
    let before = server.resource_version();
    let outcome = server
        .delete_at(
            &server.target("namespaces", None).unwrap(),
            "a",
            &Preconditions::default(),
        )
        .unwrap();
    let DeleteOutcome::Finalizing(marked) = outcome else {
        panic!("a namespace is answered terminating");
    };
    assert_eq!(marked.to_value()["status"]["phase"], "Terminating");
    for resource in ["configmaps", "pods", "events", "events.events.k8s.io"] {
        assert_eq!(count(&server, resource, "a"), 0, "{resource} left in a");
        assert!(
            count(&server, resource, "b") > 0,
            "{resource} in b untouched"
        );
    }
    assert!(server.get("namespaces", None, "a").is_err());
    // Terminating, four objects (the event is one write in two views), and the update that
    // takes the `kubernetes` finalizer away, which removes the namespace (upstream's
    // namespace store deletes during that update).
    assert_eq!(server.resource_version(), before + 1 + 4 + 1);
}

#[tokio::test(start_paused = true)]
async fn a_held_object_keeps_its_namespace_terminating_and_new_content_is_refused() {
    let server = FakeApiServer::new();
    server
        .create("namespaces", &json!({"metadata": {"name": "a"}}))
        .unwrap();
    make(&server, "configmaps", "a", "held", &["a.io/hold"]);
    make(&server, "configmaps", "a", "free", &[]);
    server.delete("namespaces", None, "a").unwrap();
    let namespace = server.get("namespaces", None, "a").unwrap();
    assert!(namespace.is_deleting());
    assert_eq!(namespace.to_value()["status"]["phase"], "Terminating");
    assert_eq!(count(&server, "configmaps", "a"), 1);
    assert!(
        server
            .get("configmaps", Some("a"), "held")
            .unwrap()
            .is_deleting()
    );

    // The NamespaceLifecycle admission: no new content through the request layer.
    let target = server.target("configmaps", Some("a")).unwrap();
    let refused = server
        .create_at(&target, json!({"metadata": {"name": "late"}}))
        .unwrap_err();
    assert_eq!((refused.code, refused.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        refused.message,
        "configmaps \"late\" is forbidden: unable to create new content in namespace a because \
         it is being terminated"
    );
    let cause = &refused.details.as_ref().unwrap().causes[0];
    assert_eq!(cause.reason, "NamespaceTerminating");
    // A request cannot take the namespace controller's finalizer away (only `/finalize`
    // could upstream).
    let ns_target = server.target("namespaces", None).unwrap();
    let mut unfinalized = server.get("namespaces", None, "a").unwrap().to_value();
    unfinalized["spec"] = json!({});
    let kept = server
        .update_at(&ns_target, "a", unfinalized)
        .unwrap()
        .to_value();
    assert_eq!(kept["spec"]["finalizers"], json!(["kubernetes"]));
    assert!(server.get("namespaces", None, "a").is_ok());
    // Deleting it again changes nothing.
    let rv = server.resource_version();
    server.delete("namespaces", None, "a").unwrap();
    assert_eq!(server.resource_version(), rv);

    // The last finalizer released: the object goes, then the namespace.
    server
        .patch(
            "configmaps",
            Some("a"),
            "held",
            &json!({"metadata": {"finalizers": null}}),
        )
        .unwrap();
    assert_eq!(count(&server, "configmaps", "a"), 0);
    assert!(server.get("namespaces", None, "a").is_err());
}

#[tokio::test(start_paused = true)]
async fn dry_runs_and_a_server_without_collectors_leave_the_content() {
    let server = FakeApiServer::new();
    server
        .create("namespaces", &json!({"metadata": {"name": "a"}}))
        .unwrap();
    make(&server, "configmaps", "a", "c", &[]);
    let rv = server.resource_version();
    server
        .delete_at(
            &server.target("namespaces", None).unwrap().dry_run(),
            "a",
            &Preconditions::default(),
        )
        .unwrap();
    assert_eq!(server.resource_version(), rv);
    assert!(!server.get("namespaces", None, "a").unwrap().is_deleting());

    let off = FakeApiServer::with_config(ServerConfig {
        garbage_collection: false,
        ..ServerConfig::default()
    });
    off.create("namespaces", &json!({"metadata": {"name": "a"}}))
        .unwrap();
    make(&off, "configmaps", "a", "c", &[]);
    assert!(matches!(
        off.delete("namespaces", None, "a").unwrap(),
        DeleteOutcome::Deleted(_)
    ));
    assert_eq!(count(&off, "configmaps", "a"), 1);
}

#[tokio::test(start_paused = true)]
async fn finalize_sets_spec_finalizers_which_hold_a_terminating_namespace() {
    let server = FakeApiServer::new();
    let namespaces = server.target("namespaces", None).unwrap();
    // A finalizer of its own (created with it, as on a cluster, beside `kubernetes`).
    server
        .create_at(
            &namespaces,
            json!({"metadata": {"name": "a"}, "spec": {"finalizers": ["example.com/archive"]}}),
        )
        .unwrap();
    make(&server, "configmaps", "a", "c", &[]);
    server.delete("namespaces", None, "a").unwrap();
    // The controller emptied it and released `kubernetes`; the other finalizer holds it.
    assert_eq!(count(&server, "configmaps", "a"), 0);
    let held = server.get("namespaces", None, "a").unwrap().to_value();
    assert_eq!(held["spec"]["finalizers"], json!(["example.com/archive"]));
    assert_eq!(held["status"]["phase"], "Terminating");

    // `/finalize` refuses a name that is neither standard nor qualified.
    let mut bad = held.clone();
    bad["spec"]["finalizers"] = json!(["archive"]);
    let refused = server.finalize_at(&namespaces, "a", bad).unwrap_err();
    assert_eq!(
        (refused.code, refused.message.as_str()),
        (
            422,
            "Namespace \"a\" is invalid: spec.finalizers[0]: Invalid value: \"archive\": name is \
             neither a standard finalizer name nor is it fully qualified"
        )
    );
    // Its owner releases it: the namespace goes in that write (its status as stored).
    let mut released = held.clone();
    released["spec"]["finalizers"] = json!([]);
    released["status"] = json!({"phase": "Active"});
    let gone = server.finalize_at(&namespaces, "a", released).unwrap();
    assert_eq!(gone.to_value()["status"]["phase"], "Terminating");
    assert!(server.get("namespaces", None, "a").is_err());

    // Finalizing a namespace whose content is held (the cluster admin's way out): the
    // namespace goes, its content stays.
    server
        .create("namespaces", &json!({"metadata": {"name": "b"}}))
        .unwrap();
    make(&server, "configmaps", "b", "held", &["b.io/hold"]);
    server.delete("namespaces", None, "b").unwrap();
    let mut stuck = server.get("namespaces", None, "b").unwrap().to_value();
    assert_eq!(stuck["spec"]["finalizers"], json!(["kubernetes"]));
    stuck["spec"]["finalizers"] = json!([]);
    server.finalize_at(&namespaces, "b", stuck).unwrap();
    assert!(server.get("namespaces", None, "b").is_err());
    assert_eq!(count(&server, "configmaps", "b"), 1);

    // Only namespaces have it.
    let configmaps = server.target("configmaps", Some("b")).unwrap();
    assert_eq!(
        server
            .finalize_at(&configmaps, "held", json!({}))
            .unwrap_err()
            .code,
        404
    );
}
