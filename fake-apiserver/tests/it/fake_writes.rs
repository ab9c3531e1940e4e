//! Fake API server: writes, resourceVersions, finalizers, registration.
// The engine answers with `Status` values by design (the wire's error type).
#![allow(clippy::result_large_err)]

use fake_apiserver::{DeleteOutcome, FakeApiServer, Preconditions, ResourceDef, ServerConfig};
use informer_core::{ErrorClass, ListOptions, ListerWatcher};
use informer_testing::JsonObject;
use serde_json::json;

fn cm(ns: &str, name: &str) -> JsonObject {
    JsonObject::new(Some(ns), name).with_field("data", json!({"k": "v"}))
}

#[tokio::test(start_paused = true)]
async fn create_sets_server_fields_and_one_rv_per_write() {
    let server = FakeApiServer::new();
    assert_eq!(server.resource_version(), 0);
    let a = server.create("configmaps", &cm("ns", "a")).unwrap();
    let b = server.create("configmaps", &cm("ns", "b")).unwrap();
    assert_eq!((a.resource_version(), b.resource_version()), (1, 2));
    assert_eq!(server.resource_version(), 2);
    let v = a.to_value();
    assert_eq!(v["kind"], "ConfigMap");
    assert_eq!(v["apiVersion"], "v1");
    assert_eq!(v["metadata"]["resourceVersion"], "1");
    assert_eq!(v["metadata"]["uid"].as_str().unwrap().len(), 36);
    assert_ne!(a.uid(), b.uid());
    assert!(
        v["metadata"]["creationTimestamp"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    // The stored bytes are what clients decode.
    let decoded: JsonObject = a.decode().unwrap();
    assert_eq!(decoded.metadata.resource_version.as_deref(), Some("1"));
}

#[tokio::test(start_paused = true)]
async fn duplicate_create_is_already_exists() {
    let server = FakeApiServer::new();
    server.create("configmaps", &cm("ns", "a")).unwrap();
    let err = server.create("configmaps", &cm("ns", "a")).unwrap_err();
    assert_eq!((err.code, err.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(err.message, "configmaps \"a\" already exists");
    // The same name in another namespace is another object.
    server.create("configmaps", &cm("other", "a")).unwrap();
    assert_eq!(server.resource_version(), 2);
}

#[tokio::test(start_paused = true)]
async fn generate_name_appends_five_random_characters() {
    let server = FakeApiServer::new();
    let body = json!({"metadata": {"generateName": "web-", "namespace": "ns"}});
    let a = server.create("pods", &body).unwrap();
    let b = server.create("pods", &body).unwrap();
    for o in [&a, &b] {
        let suffix = o.name().strip_prefix("web-").unwrap();
        assert_eq!(suffix.len(), 5);
        assert!(
            suffix
                .bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        );
    }
    assert_ne!(a.name(), b.name());
    let err = server.create("pods", &json!({"metadata": {}})).unwrap_err();
    assert_eq!(err.code, 422);
}

#[tokio::test(start_paused = true)]
async fn create_rejects_bad_bodies() {
    let server = FakeApiServer::new();
    let with_rv = cm("ns", "a").with_resource_version("5");
    assert_eq!(server.create("configmaps", &with_rv).unwrap_err().code, 400);
    let wrong_kind = cm("ns", "a").with_field("kind", json!("Secret"));
    assert_eq!(
        server.create("configmaps", &wrong_kind).unwrap_err().code,
        400
    );
    let bad_name = cm("ns", "Not_Valid");
    assert_eq!(
        server.create("configmaps", &bad_name).unwrap_err().code,
        422
    );
    assert_eq!(
        server.create("widgets", &cm("ns", "a")).unwrap_err().code,
        404
    );
    assert_eq!(
        server.resource_version(),
        0,
        "failed writes use no resourceVersion"
    );
}

#[tokio::test(start_paused = true)]
async fn stale_update_is_a_conflict_and_unconditional_update_wins() {
    let server = FakeApiServer::new();
    let v1 = server.create("configmaps", &cm("ns", "a")).unwrap();
    let mut obj: JsonObject = v1.decode().unwrap();
    obj.fields.insert("data".into(), json!({"k": "v2"}));
    let v2 = server.update("configmaps", &obj).unwrap();
    assert_eq!(v2.resource_version(), 2);
    assert_eq!(v2.uid(), v1.uid(), "uid survives updates");

    // Same stale resourceVersion again: 409 Conflict.
    obj.fields.insert("data".into(), json!({"k": "v3"}));
    let err = server.update("configmaps", &obj).unwrap_err();
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(
        err.message.contains("the object has been modified"),
        "{}",
        err.message
    );
    assert_eq!(err.class(), ErrorClass::Conflict);

    // Without a resourceVersion the update is unconditional.
    obj.metadata.resource_version = None;
    let v3 = server.update("configmaps", &obj).unwrap();
    assert_eq!(v3.resource_version(), 3);
    assert_eq!(v3.to_value()["data"]["k"], "v3");

    // An update that changes nothing is skipped, as on the real server.
    let same = server.update("configmaps", &obj).unwrap();
    assert_eq!(same.resource_version(), 3);
    assert_eq!(server.resource_version(), 3);

    let missing = server.update("configmaps", &cm("ns", "nope")).unwrap_err();
    assert_eq!(missing.code, 404);
    assert_eq!(missing.message, "configmaps \"nope\" not found");
}

#[tokio::test(start_paused = true)]
async fn merge_patch_merges_and_honours_a_resource_version_precondition() {
    let server = FakeApiServer::new();
    server
        .create(
            "configmaps",
            &cm("ns", "a")
                .with_label("keep", "1")
                .with_label("drop", "1"),
        )
        .unwrap();
    let patched = server
        .patch(
            "configmaps",
            Some("ns"),
            "a",
            &json!({"metadata": {"labels": {"drop": null, "new": "2"}}, "data": {"x": "y"}}),
        )
        .unwrap();
    let v = patched.to_value();
    assert_eq!(v["metadata"]["labels"], json!({"keep": "1", "new": "2"}));
    assert_eq!(v["data"], json!({"k": "v", "x": "y"}));
    assert_eq!(patched.resource_version(), 2);
    let stale = server
        .patch(
            "configmaps",
            Some("ns"),
            "a",
            &json!({"metadata": {"resourceVersion": "1"}, "data": null}),
        )
        .unwrap_err();
    assert_eq!(stale.code, 409);
}

#[tokio::test(start_paused = true)]
async fn delete_without_finalizers_removes_the_object_at_a_new_rv() {
    let server = FakeApiServer::new();
    server.create("configmaps", &cm("ns", "a")).unwrap();
    let out = server.delete("configmaps", Some("ns"), "a").unwrap();
    let DeleteOutcome::Deleted(last) = out else {
        panic!("expected a delete, got {out:?}")
    };
    assert_eq!(
        last.resource_version(),
        2,
        "the last state carries the deletion's rv"
    );
    assert_eq!(
        server.get("configmaps", Some("ns"), "a").unwrap_err().code,
        404
    );
    assert_eq!(
        server
            .delete("configmaps", Some("ns"), "a")
            .unwrap_err()
            .code,
        404
    );
}

#[tokio::test(start_paused = true)]
async fn delete_with_finalizers_sets_deletion_timestamp_then_update_completes_it() {
    let server = FakeApiServer::new();
    let body = json!({"metadata": {"name": "a", "namespace": "ns", "finalizers": ["example.com/cleanup"]}});
    server.create("configmaps", &body).unwrap();
    let out = server.delete("configmaps", Some("ns"), "a").unwrap();
    let DeleteOutcome::Finalizing(obj) = out else {
        panic!("expected finalizing, got {out:?}")
    };
    assert!(obj.is_deleting());
    assert_eq!(obj.resource_version(), 2);
    // Deleting again changes nothing.
    let again = server.delete("configmaps", Some("ns"), "a").unwrap();
    assert_eq!(again.object().resource_version(), 2);
    assert_eq!(server.resource_version(), 2);

    // An update cannot clear deletionTimestamp; removing the last finalizer completes the delete.
    let gone = server
        .patch(
            "configmaps",
            Some("ns"),
            "a",
            &json!({"metadata": {"finalizers": null}}),
        )
        .unwrap();
    assert_eq!(gone.resource_version(), 3);
    assert_eq!(
        server.get("configmaps", Some("ns"), "a").unwrap_err().code,
        404
    );
}

#[tokio::test(start_paused = true)]
async fn delete_preconditions() {
    let server = FakeApiServer::new();
    let a = server.create("configmaps", &cm("ns", "a")).unwrap();
    let target = server.target("configmaps", Some("ns")).unwrap();
    let wrong = Preconditions {
        uid: Some("not-the-uid".into()),
        ..Preconditions::default()
    };
    // Refused as upstream's `rest.BeforeDelete` refuses: on the kind, saying why.
    let refused = server.delete_at(&target, "a", &wrong).unwrap_err();
    assert_eq!(
        (refused.code, refused.message),
        (
            409,
            format!(
                "Operation cannot be fulfilled on ConfigMap \"a\": the UID in the precondition \
                 (not-the-uid) does not match the UID in record ({}). The object might have \
                 been deleted and then recreated",
                a.uid()
            )
        )
    );
    let stale = Preconditions {
        resource_version: Some("7".into()),
        ..Preconditions::default()
    };
    assert_eq!(
        server.delete_at(&target, "a", &stale).unwrap_err().message,
        "Operation cannot be fulfilled on ConfigMap \"a\": the ResourceVersion in the \
         precondition (7) does not match the ResourceVersion in record (1). The object might \
         have been modified"
    );
    let right = Preconditions {
        uid: Some(a.uid().to_owned()),
        resource_version: Some("1".into()),
    };
    assert!(matches!(
        server.delete_at(&target, "a", &right).unwrap(),
        DeleteOutcome::Deleted(_)
    ));
    let log: Vec<String> = server.requests().iter().map(ToString::to_string).collect();
    assert_eq!(
        log,
        [
            "DELETE /api/v1/namespaces/ns/configmaps/a",
            "DELETE /api/v1/namespaces/ns/configmaps/a",
            "DELETE /api/v1/namespaces/ns/configmaps/a"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn requests_need_existing_namespaces_unless_configured_otherwise() {
    // The request layer runs namespace lifecycle admission, as the real server does.
    let strict = FakeApiServer::new();
    let target = strict.target("configmaps", Some("ghost")).unwrap();
    let err = strict
        .create_at(&target, serde_json::to_value(cm("ghost", "a")).unwrap())
        .unwrap_err();
    assert_eq!(
        (err.code, err.message.as_str()),
        (404, "namespaces \"ghost\" not found")
    );
    let err = strict
        .apply_at(&target, "a", |_| {
            Ok(serde_json::to_value(cm("ghost", "a")).unwrap())
        })
        .unwrap_err();
    assert_eq!(err.code, 404, "a create by apply is admitted the same way");
    // The test's direct writes are its hand on the store: no admission.
    strict.create("configmaps", &cm("ghost", "direct")).unwrap();
    strict
        .create("namespaces", &json!({"metadata": {"name": "ghost"}}))
        .unwrap();
    strict
        .create_at(&target, serde_json::to_value(cm("ghost", "a")).unwrap())
        .unwrap();

    let relaxed = FakeApiServer::with_config(ServerConfig {
        require_namespaces: false,
        ..ServerConfig::default()
    });
    let target = relaxed.target("configmaps", Some("ghost")).unwrap();
    relaxed
        .create_at(&target, serde_json::to_value(cm("ghost", "a")).unwrap())
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_status_subresource_splits_writes() {
    let server = FakeApiServer::new();
    server
        .create("namespaces", &json!({"metadata": {"name": "a"}}))
        .unwrap();
    let deploys = server.target("deployments", Some("a")).unwrap();
    let deploy = |replicas: i64, ready: i64| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "a"},
            "spec": {"replicas": replicas}, "status": {"readyReplicas": ready}})
    };
    // A create ignores the status; pods start Pending.
    let created = server.create_at(&deploys, deploy(2, 9)).unwrap().to_value();
    assert_eq!(created["spec"]["replicas"], 2);
    assert_eq!(created.get("status"), None);
    let pods = server.target("pods", Some("a")).unwrap();
    let pod = json!({"metadata": {"name": "p"}, "status": {"phase": "Running"}});
    let pod = server.create_at(&pods, pod).unwrap().to_value();
    // With its QoS class, from its (absent) resources, as upstream's pod strategy sets it.
    assert_eq!(
        pod["status"],
        json!({"phase": "Pending", "qosClass": "BestEffort"})
    );
    // An update of the resource keeps the stored status; one of `status` keeps the rest.
    server
        .update_status_at(&deploys, "web", deploy(7, 2))
        .unwrap();
    let updated = server
        .update_at(&deploys, "web", deploy(3, 5))
        .unwrap()
        .to_value();
    assert_eq!(updated["spec"]["replicas"], 3);
    assert_eq!(updated["status"]["readyReplicas"], 2);
    let status = server
        .update_status_at(&deploys, "web", deploy(8, 3))
        .unwrap()
        .to_value();
    assert_eq!(
        (
            status["spec"]["replicas"].clone(),
            status["status"]["readyReplicas"].clone()
        ),
        (json!(3), json!(3))
    );
    let patched = server
        .patch_status_with_at(&deploys, "web", |v| {
            v["status"]["readyReplicas"] = json!(4);
            v["spec"]["replicas"] = json!(100);
            Ok(())
        })
        .unwrap()
        .to_value();
    assert_eq!(
        (
            patched["spec"]["replicas"].clone(),
            patched["status"]["readyReplicas"].clone()
        ),
        (json!(3), json!(4))
    );
    let patched = server
        .patch_at(
            &deploys,
            "web",
            &json!({"spec": {"replicas": 5}, "status": {"readyReplicas": 0}}),
        )
        .unwrap()
        .to_value();
    assert_eq!(
        (
            patched["spec"]["replicas"].clone(),
            patched["status"]["readyReplicas"].clone()
        ),
        (json!(5), json!(4))
    );
    // Resources without a status subresource store what their type has: a config map has
    // no `status`, which is dropped as the real server's decoding drops it.
    let cms = server.target("configmaps", Some("a")).unwrap();
    let cm = server
        .create_at(
            &cms,
            json!({"metadata": {"name": "c"}, "data": {"x": "1"}, "status": {"x": 1}}),
        )
        .unwrap();
    assert_eq!(cm.to_value()["data"]["x"], "1");
    assert_eq!(cm.to_value().get("status"), None);
    assert_eq!(
        server
            .update_status_at(&cms, "c", json!({}))
            .unwrap_err()
            .code,
        404
    );
}

#[tokio::test(start_paused = true)]
async fn metadata_is_validated_like_the_real_server() {
    let server = FakeApiServer::new();
    let bad = |body: serde_json::Value| server.create("configmaps", &body).unwrap_err();
    let err = bad(json!({"metadata": {"name": 5}}));
    assert_eq!(err.code, 400, "{err}");
    assert!(err.message.contains("metadata.name"), "{err}");
    // Worded as the API server words Go's decoding error.
    assert_eq!(
        err.message,
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal \
         number into Go struct field ObjectMeta.metadata.name of type string"
    );
    assert_eq!(
        bad(json!({"metadata": {"name": "a", "labels": ["x"]}})).code,
        400
    );
    assert!(
        bad(json!({"metadata": {"name": "a", "labels": {"k": 1}}}))
            .message
            .ends_with("Go struct field ObjectMeta.metadata.labels of type string")
    );
    assert_eq!(bad(json!({"metadata": "x"})).code, 400);
    assert!(bad(json!({"metadata": "x"})).message.ends_with(
        "cannot unmarshal string into Go struct field ConfigMap.metadata of type v1.ObjectMeta"
    ));
    let err = bad(json!({"metadata": {"name": "a", "labels": {"bad key!": "v", "ok": "-bad-"}}}));
    assert_eq!(err.code, 422, "{err}");
    let causes = &err.details.as_ref().unwrap().causes;
    assert_eq!(causes.len(), 2, "{causes:?}");
    assert!(causes.iter().all(|c| c.field == "metadata.labels"));
    let long = "x".repeat(64);
    assert_eq!(
        bad(json!({"metadata": {"name": "a", "labels": {"k": long}}})).code,
        422
    );
    assert_eq!(
        bad(json!({"metadata": {"name": "a", "labels": {"Example.com/k": "v"}}})).code,
        422
    );
    let huge = "x".repeat(300 * 1024);
    let err = bad(json!({"metadata": {"name": "a", "annotations": {"big": huge}}}));
    assert_eq!(err.code, 422);
    assert_eq!(
        err.details.as_ref().unwrap().causes[0].field,
        "metadata.annotations"
    );
    // Annotation keys are checked without case, as upstream does.
    server
        .create(
            "configmaps",
            &json!({"metadata": {"name": "a", "namespace": "n",
                "labels": {"app.kubernetes.io/name": "web", "tier": "", "v": "1.2_3"},
                "annotations": {"Example.com/Thing": "any value at all !"}}}),
        )
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn cluster_scoped_objects_have_no_namespace() {
    let server = FakeApiServer::new();
    let node = server
        .create(
            "nodes",
            &json!({"metadata": {"name": "node-1", "namespace": "ignored"}}),
        )
        .unwrap();
    assert_eq!(node.namespace(), None);
    assert_eq!(node.key(), "node-1");
    let target = server.target("nodes", Some("ignored")).unwrap();
    assert_eq!(target.collection_path(), "/api/v1/nodes");
    assert_eq!(
        server
            .target_for("", "v1", "nodes", Some("x"))
            .unwrap_err()
            .code,
        404
    );
}

#[tokio::test(start_paused = true)]
async fn custom_resources_can_be_registered_at_run_time() {
    let server = FakeApiServer::new();
    let widgets = ResourceDef::namespaced("example.com", "v1alpha1", "widgets", "Widget");
    server.register(widgets.clone()).unwrap();
    server.register(widgets).unwrap();
    let clash = ResourceDef::cluster_scoped("example.com", "v1alpha1", "widgets", "Widget");
    assert_eq!(server.register(clash).unwrap_err().code, 409);

    let w = server
        .create(
            "widgets.example.com",
            &json!({"metadata": {"name": "w", "namespace": "a"}, "spec": {"size": 3}}),
        )
        .unwrap();
    assert_eq!(w.to_value()["apiVersion"], "example.com/v1alpha1");
    assert_eq!(w.to_value()["kind"], "Widget");
    let lw = server
        .lister_watcher::<JsonObject>("widgets", Some("a"))
        .unwrap();
    let page = lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(
        server.requests()[0].to_string(),
        "GET /apis/example.com/v1alpha1/namespaces/a/widgets"
    );
}

#[tokio::test(start_paused = true)]
async fn next_resource_version_can_be_set() {
    let server = FakeApiServer::new();
    server.set_next_resource_version(1000).unwrap();
    assert_eq!(server.resource_version(), 999);
    let a = server.create("configmaps", &cm("ns", "a")).unwrap();
    assert_eq!(a.resource_version(), 1000);
    assert_eq!(server.set_next_resource_version(10).unwrap_err().code, 400);
}

#[tokio::test(start_paused = true)]
async fn timestamps_follow_tokio_time() {
    let start = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_767_323_045);
    let server = FakeApiServer::with_config(ServerConfig {
        wall_clock_start: Some(start),
        ..ServerConfig::default()
    });
    let a = server.create("configmaps", &cm("ns", "a")).unwrap();
    assert_eq!(
        a.to_value()["metadata"]["creationTimestamp"],
        "2026-01-02T03:04:05Z"
    );
    tokio::time::advance(std::time::Duration::from_secs(61)).await;
    let b = server.create("configmaps", &cm("ns", "b")).unwrap();
    assert_eq!(
        b.to_value()["metadata"]["creationTimestamp"],
        "2026-01-02T03:05:06Z"
    );
}

#[tokio::test(start_paused = true)]
async fn a_schema_prunes_defaults_and_validates_every_write() {
    let server = FakeApiServer::new();
    let schema = |default: i64| {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "replicas": {"type": "integer", "minimum": 0, "default": default}}}}})
    };
    let widgets = ResourceDef::namespaced("example.com", "v1", "widgets", "Widget");
    server
        .register(widgets.clone().with_schema(schema(1)))
        .unwrap();
    // The test's direct writes too: the schema is the resource's, not admission.
    let w = server
        .create(
            "widgets",
            &json!({"metadata": {"name": "a", "namespace": "ns"}, "spec": {"colour": "red"}}),
        )
        .unwrap();
    assert_eq!(w.to_value()["spec"], json!({"replicas": 1}));
    let refused = server
        .patch(
            "widgets",
            Some("ns"),
            "a",
            &json!({"spec": {"replicas": -1}}),
        )
        .unwrap_err();
    assert_eq!(refused.code, 422);
    assert_eq!(
        refused.message,
        "Widget.example.com \"a\" is invalid: spec.replicas: Invalid value: -1: spec.replicas \
         in body should be greater than or equal to 0"
    );
    // Redefined: later writes follow the new schema; the stored objects stay.
    assert!(
        server
            .redefine(widgets.clone().with_schema(schema(3)))
            .unwrap()
    );
    let b = server
        .create(
            "widgets",
            &json!({"metadata": {"name": "b", "namespace": "ns"}}),
        )
        .unwrap();
    assert_eq!(
        b.to_value().get("spec"),
        None,
        "no spec object, nothing to default in"
    );
    let c = server
        .create(
            "widgets",
            &json!({"metadata": {"name": "c", "namespace": "ns"}, "spec": {}}),
        )
        .unwrap();
    assert_eq!(c.to_value()["spec"]["replicas"], 3);
    assert_eq!(
        server.get("widgets", Some("ns"), "a").unwrap().to_value()["spec"]["replicas"],
        1
    );
    let other_kind = ResourceDef::namespaced("example.com", "v1", "widgets", "Gizmo");
    assert_eq!(server.redefine(other_kind).unwrap_err().code, 409);
    let unknown = ResourceDef::namespaced("example.com", "v1", "sprockets", "Sprocket");
    assert!(!server.redefine(unknown).unwrap());
}

#[tokio::test(start_paused = true)]
async fn in_process_writes_keep_managed_fields_when_their_target_names_a_manager() {
    let server = FakeApiServer::new();
    server
        .create("namespaces", &json!({"metadata": {"name": "ns"}}))
        .unwrap();
    let target = server
        .target("configmaps", Some("ns"))
        .unwrap()
        .field_manager("tester");
    let created = server
        .create_at(
            &target,
            json!({"metadata": {"name": "a", "namespace": "ns", "finalizers": ["x/y"]},
                   "data": {"k": "v"}}),
        )
        .unwrap()
        .to_value();
    let owned = json!([{"manager": "tester", "operation": "Update", "apiVersion": "v1",
        "time": created["metadata"]["creationTimestamp"], "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {".": {}, "f:k": {}},
                     "f:metadata": {"f:finalizers": {".": {}, "v:\"x/y\"": {}}}}}]);
    assert_eq!(created["metadata"]["managedFields"], owned);
    // A delete waiting for the finalizer is the server's write: nobody's fields change; nor
    // do the collector's writes it causes (orphaning a dependent drops its owner reference).
    let dependent = server
        .create(
            "configmaps",
            &json!({"metadata": {"name": "dep", "namespace": "ns", "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "a",
                 "uid": created["metadata"]["uid"]}]}}),
        )
        .unwrap()
        .to_value();
    assert!(dependent["metadata"]["managedFields"].is_null());
    let orphaning = target
        .clone()
        .propagation(fake_apiserver::PropagationPolicy::Orphan);
    server
        .delete_at(&orphaning, "a", &Preconditions::default())
        .unwrap();
    let marked = server
        .get("configmaps", Some("ns"), "a")
        .unwrap()
        .to_value();
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(marked["metadata"]["managedFields"], owned);
    let orphaned = server
        .get("configmaps", Some("ns"), "dep")
        .unwrap()
        .to_value();
    assert!(
        orphaned["metadata"]["ownerReferences"].is_null(),
        "{orphaned}"
    );
    assert!(
        orphaned["metadata"]["managedFields"].is_null(),
        "{orphaned}"
    );
    // Without a manager, in-process writes store managedFields as given.
    let plain = server
        .create(
            "configmaps",
            &json!({"metadata": {"name": "b", "namespace": "ns",
                    "managedFields": [{"manager": "m", "operation": "Apply",
                        "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]}}),
        )
        .unwrap()
        .to_value();
    assert_eq!(plain["metadata"]["managedFields"][0]["manager"], "m");
}
