//! Fake API server: scripted write failures (`Faults::fail_writes`), in the request layer and
//! over HTTP.
// The engine answers with `Status` values by design (the wire's error type).
#![allow(clippy::result_large_err)]

use fake_apiserver::seed::namespace;
use fake_apiserver::{FakeApiServer, PendingFault, Preconditions, status};
use informer_testing::JsonObject;
use serde_json::json;

fn cm(ns: &str, name: &str) -> serde_json::Value {
    json!({"metadata": {"namespace": ns, "name": name}, "data": {"k": "v"}})
}

/// A secret's data is base64, as the real server decodes it.
fn secret(ns: &str, name: &str) -> serde_json::Value {
    json!({"metadata": {"namespace": ns, "name": name}, "data": {"k": "dg=="}})
}

#[tokio::test(start_paused = true)]
async fn each_write_verb_fails_once_per_scripted_failure_and_changes_nothing() {
    let server = FakeApiServer::new();
    server.create("namespaces", &namespace("ns")).unwrap();
    server.create("configmaps", &cm("ns", "a")).unwrap();
    let rv = server.resource_version();
    let target = server.target("configmaps", Some("ns")).unwrap();
    server
        .faults()
        .fail_writes("configmaps", 6, status::internal_error("etcd is down"));

    let fails = |result: Result<(), informer_core::Status>| {
        let error = result.unwrap_err();
        assert_eq!(
            (error.code, error.message.as_str()),
            (500, "Internal error occurred: etcd is down")
        );
    };
    fails(server.create_at(&target, cm("ns", "b")).map(drop));
    fails(server.update_at(&target, "a", cm("ns", "a")).map(drop));
    fails(
        server
            .patch_at(&target, "a", &json!({"data": {"k": "w"}}))
            .map(drop),
    );
    fails(server.patch_with_at(&target, "a", |_| Ok(())).map(drop));
    fails(
        server
            .apply_at(&target, "c", |_| Ok(cm("ns", "c")))
            .map(drop),
    );
    fails(
        server
            .delete_at(&target, "a", &Preconditions::default())
            .map(drop),
    );

    // Nothing changed, every failure was used, and every request was logged.
    assert_eq!(server.resource_version(), rv);
    assert_eq!(server.objects("configmaps", None).unwrap().len(), 1);
    assert!(server.faults().pending().is_empty());
    let methods: Vec<String> = server.requests().iter().map(|r| r.method.clone()).collect();
    assert_eq!(
        methods,
        ["POST", "PUT", "PATCH", "PATCH", "PATCH", "DELETE"]
    );

    // The next write goes through.
    server.create_at(&target, cm("ns", "b")).unwrap();
    assert_eq!(server.resource_version(), rv + 1);
}

#[tokio::test(start_paused = true)]
async fn failures_are_scoped_counted_and_listed() {
    let server = FakeApiServer::new();
    server.create("namespaces", &namespace("ns")).unwrap();
    let faults = server.faults();
    faults.fail_writes("configmaps", 2, status::too_many_requests(3));
    assert_eq!(
        faults.pending(),
        [PendingFault::FailWrites {
            scope: "configmaps".into(),
            remaining: 2,
            status: status::too_many_requests(3),
        }]
    );
    assert_eq!(
        faults.pending()[0].to_string(),
        format!(
            "fail the next 2 write(s) of configmaps with {}",
            status::too_many_requests(3)
        )
    );

    // Another resource is not in scope; the test's direct writes never fail.
    let secrets = server.target("secrets", Some("ns")).unwrap();
    server.create_at(&secrets, secret("ns", "s")).unwrap();
    server.create("configmaps", &cm("ns", "direct")).unwrap();
    assert!(matches!(
        faults.pending()[..],
        [PendingFault::FailWrites { remaining: 2, .. }]
    ));

    let configmaps = server.target("configmaps", None).unwrap();
    let error = server.create_at(&configmaps, cm("ns", "x")).unwrap_err();
    assert_eq!(error.code, 429);
    assert_eq!(error.retry_after(), Some(std::time::Duration::from_secs(3)));
    assert!(matches!(
        faults.pending()[..],
        [PendingFault::FailWrites { remaining: 1, .. }]
    ));
    server.create_at(&configmaps, cm("ns", "x")).unwrap_err();
    faults.assert_all_used();
    server.create_at(&configmaps, cm("ns", "x")).unwrap();

    // "*" covers every resource; clear() removes what is left.
    faults.fail_writes("*", 5, status::internal_error("x"));
    server.create_at(&secrets, secret("ns", "t")).unwrap_err();
    faults.clear();
    server.create_at(&secrets, secret("ns", "t")).unwrap();
    // Zero failures scripts nothing.
    faults.fail_writes("*", 0, status::internal_error("x"));
    faults.assert_all_used();
    let objects: Vec<JsonObject> = server
        .objects("configmaps", Some("ns"))
        .unwrap()
        .iter()
        .map(|o| o.decode().unwrap())
        .collect();
    assert_eq!(objects.len(), 2);
}

#[cfg(feature = "http")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_writes_answer_the_scripted_status() {
    use reqwest::Method;

    use crate::support::http::{get, post, put, send, start};

    let (server, http) = start().await;
    server.create("namespaces", &namespace("ns")).unwrap();
    server.create("configmaps", &cm("ns", "a")).unwrap();
    server
        .faults()
        .fail_writes("configmaps", 3, status::too_many_requests(2));

    let created = post(&http, "/api/v1/namespaces/ns/configmaps", &cm("ns", "b")).await;
    assert_eq!(created.status, 429, "{}", created.body);
    assert_eq!(created.header("retry-after"), Some("2"));
    assert_eq!(created.body["kind"], "Status");
    let replaced = put(&http, "/api/v1/namespaces/ns/configmaps/a", &cm("ns", "a")).await;
    assert_eq!(replaced.status, 429, "{}", replaced.body);
    let deleted = send(
        &http,
        Method::DELETE,
        "/api/v1/namespaces/ns/configmaps/a",
        None,
    )
    .await;
    assert_eq!(deleted.status, 429, "{}", deleted.body);
    server.faults().assert_all_used();

    let created = post(&http, "/api/v1/namespaces/ns/configmaps", &cm("ns", "b")).await;
    assert_eq!(created.status, 201, "{}", created.body);

    // The admin API scripts the same fault.
    let scripted = post(
        &http,
        "/_fake/faults/fail-writes",
        &json!({"resource": "configmaps", "count": 1, "status": {"code": 500}}),
    )
    .await;
    assert_eq!(scripted.status, 200, "{}", scripted.body);
    let pending = get(&http, "/_fake/faults").await;
    assert_eq!(
        pending.body["pending"][0],
        "fail the next 1 write(s) of configmaps with 500 InternalError: Internal error \
         occurred: injected by the fake API server"
    );
    let created = post(&http, "/api/v1/namespaces/ns/configmaps", &cm("ns", "c")).await;
    assert_eq!(created.status, 500, "{}", created.body);
    server.faults().assert_all_used();
    http.shutdown().await.unwrap();
}
