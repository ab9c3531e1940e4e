//! HTTP front end: writes on the wire (create, update with optimistic concurrency, the patch
//! formats, delete, delete-collection, CRDs) through a real HTTP client.
#![cfg(feature = "http")]

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::GUARD;
use crate::support::http::{
    client, get, names, namespaces, pod, post, put, register_widgets, send, start,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_and_duplicates() {
    let (server, http) = start().await;
    namespaces(&server, &["a", "b"]);
    let created = post(
        &http,
        "/api/v1/namespaces/a/pods",
        &pod("ignored", "p1", json!({})),
    )
    .await;
    // The namespace of the URL wins over an absent one; a mismatching one is refused by the
    // engine's rules (here the body says "ignored", so the create is refused).
    assert_eq!(created.status, 400, "{}", created.body);
    let created = post(
        &http,
        "/api/v1/namespaces/a/pods",
        &pod("a", "p1", json!({})),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["metadata"]["namespace"], "a");
    assert!(
        created.body["metadata"]["uid"]
            .as_str()
            .is_some_and(|u| !u.is_empty())
    );
    assert!(created.body["metadata"]["creationTimestamp"].is_string());
    assert_eq!(
        created.body["metadata"]["resourceVersion"],
        server.resource_version().to_string()
    );
    let again = post(
        &http,
        "/api/v1/namespaces/a/pods",
        &pod("a", "p1", json!({})),
    )
    .await;
    assert_eq!(again.status, 409);
    assert_eq!(again.body["reason"], "AlreadyExists");
    let generated = post(
        &http,
        "/api/v1/namespaces/a/configmaps",
        &json!({"metadata": {"generateName": "cfg-"}}),
    )
    .await;
    assert_eq!(generated.status, 201);
    let name = generated.body["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("cfg-") && name.len() == 9, "{name}");
    let nameless = post(
        &http,
        "/api/v1/namespaces/a/configmaps",
        &json!({"metadata": {}}),
    )
    .await;
    assert_eq!(nameless.status, 422);
    assert_eq!(nameless.body["reason"], "Invalid");
    let not_json = send(
        &http,
        Method::POST,
        "/api/v1/namespaces/a/configmaps",
        Some(("application/yaml", &json!("kind: ConfigMap"))),
    )
    .await;
    assert_eq!(not_json.status, 400);
    assert_eq!(
        server
            .requests()
            .iter()
            .filter(|r| r.method == "POST")
            .count(),
        6
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_with_a_stale_resource_version_is_409() {
    let (server, http) = start().await;
    let v1 = server
        .create(
            "configmaps",
            &json!({"metadata": {"name": "c", "namespace": "a"}, "data": {"k": "1"}}),
        )
        .unwrap();
    let mut body = v1.to_value();
    body["data"]["k"] = json!("2");
    let ok = put(&http, "/api/v1/namespaces/a/configmaps/c", &body).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.body["data"]["k"], "2");
    body["data"]["k"] = json!("3");
    let stale = put(&http, "/api/v1/namespaces/a/configmaps/c", &body).await;
    assert_eq!(stale.status, 409);
    assert_eq!(stale.body["reason"], "Conflict");
    assert!(
        stale.body["message"]
            .as_str()
            .unwrap()
            .contains("the object has been modified")
    );
    // Without a resourceVersion the update is unconditional.
    body["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    assert_eq!(
        put(&http, "/api/v1/namespaces/a/configmaps/c", &body)
            .await
            .status,
        200
    );
    let missing = put(
        &http,
        "/api/v1/namespaces/a/configmaps/nope",
        &json!({"metadata": {"name": "nope"}}),
    )
    .await;
    assert_eq!(missing.status, 404);
    // The status subresource of a pod is served like the pod.
    server.create("pods", &pod("a", "p", json!({}))).unwrap();
    let status = send(
        &http,
        Method::PATCH,
        "/api/v1/namespaces/a/pods/p/status",
        Some((
            "application/merge-patch+json",
            &json!({"status": {"phase": "Running"}}),
        )),
    )
    .await;
    assert_eq!(status.status, 200);
    assert_eq!(status.body["status"]["phase"], "Running");
    assert_eq!(
        get(&http, "/api/v1/namespaces/a/configmaps/c/status")
            .await
            .status,
        404
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_formats() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    server.create("pods", &json!({
        "metadata": {"name": "p", "namespace": "a", "labels": {"app": "web", "tier": "front"}},
        "spec": {"containers": [
            {"name": "app", "image": "app:1", "ports": [{"containerPort": 80}]},
            {"name": "side", "image": "side:1"},
        ]},
    })).unwrap();
    let url = "/api/v1/namespaces/a/pods/p";
    let merge = send(
        &http,
        Method::PATCH,
        url,
        Some((
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"tier": null, "new": "x"}}}),
        )),
    )
    .await;
    assert_eq!(merge.status, 200);
    assert_eq!(
        merge.body["metadata"]["labels"],
        json!({"app": "web", "new": "x"})
    );
    // Strategic merge patch as kubectl apply sends it: containers merge by name.
    let smp = send(
        &http,
        Method::PATCH,
        url,
        Some((
            "application/strategic-merge-patch+json",
            &json!({
                "spec": {"$setElementOrder/containers": [{"name": "app"}, {"name": "side"}],
                         "containers": [{"name": "app", "image": "app:2"}]},
            }),
        )),
    )
    .await;
    assert_eq!(smp.status, 200, "{}", smp.body);
    let containers = &smp.body["spec"]["containers"];
    assert_eq!(containers[0]["image"], "app:2");
    assert_eq!(containers[0]["ports"][0]["containerPort"], 80);
    assert_eq!(containers[1]["image"], "side:1");
    let jp = send(
        &http,
        Method::PATCH,
        url,
        Some((
            "application/json-patch+json",
            &json!([{"op": "replace", "path": "/spec/containers/1/image", "value": "side:2"}]),
        )),
    )
    .await;
    assert_eq!(jp.body["spec"]["containers"][1]["image"], "side:2");
    let failed_test = send(
        &http,
        Method::PATCH,
        url,
        Some((
            "application/json-patch+json",
            &json!([{"op": "test", "path": "/metadata/name", "value": "other"}]),
        )),
    )
    .await;
    assert_eq!(failed_test.status, 422);
    // A resourceVersion in a patch is a precondition.
    let stale = send(
        &http,
        Method::PATCH,
        url,
        Some((
            "application/merge-patch+json",
            &json!({"metadata": {"resourceVersion": "1", "labels": {"z": "z"}}}),
        )),
    )
    .await;
    assert_eq!(stale.status, 409);
    let unknown = send(&http, Method::PATCH, url, Some(("text/plain", &json!({})))).await;
    assert_eq!(unknown.status, 415);
    // Server-side apply: creates when absent (201), merges when present (200), and drops
    // what its manager applied before and no longer applies (`a`: see http_apply for the
    // rest of field management).
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied", "namespace": "a"}, "data": {"a": "1"}});
    let apply_url = "/api/v1/namespaces/a/configmaps/applied?fieldManager=test&force=true";
    let first = send(
        &http,
        Method::PATCH,
        apply_url,
        Some(("application/apply-patch+yaml", &cm)),
    )
    .await;
    assert_eq!(first.status, 201, "{}", first.body);
    let second = send(&http, Method::PATCH, apply_url, Some(("application/apply-patch+yaml",
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"b": "2"}})))).await;
    assert_eq!(second.status, 200);
    assert_eq!(second.body["data"], json!({"b": "2"}));
    // Every patch that reached the engine is logged (the 415 was refused before).
    assert_eq!(
        server
            .requests()
            .iter()
            .filter(|r| r.method == "PATCH")
            .count(),
        7
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_answer_like_the_server() {
    let (server, http) = start().await;
    server.create("pods", &pod("a", "p", json!({}))).unwrap();
    let cm = server
        .create(
            "configmaps",
            &json!({"metadata": {"name": "c", "namespace": "a"}}),
        )
        .unwrap();
    server.create("configmaps", &json!({"metadata": {"name": "held", "namespace": "a", "finalizers": ["example.com/hold"]}})).unwrap();
    // Pods come back as the object, at the deletion's resourceVersion.
    let p = send(&http, Method::DELETE, "/api/v1/namespaces/a/pods/p", None).await;
    assert_eq!(p.status, 200);
    assert_eq!(p.body["kind"], "Pod");
    assert_eq!(
        p.body["metadata"]["resourceVersion"],
        server.resource_version().to_string()
    );
    // A stale precondition is a conflict.
    let stale = send(&http, Method::DELETE, "/api/v1/namespaces/a/configmaps/c",
        Some(("application/json", &json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"resourceVersion": "999"}})))).await;
    assert_eq!(stale.status, 409);
    // Others come back as a Success Status naming the object.
    let c = send(
        &http,
        Method::DELETE,
        "/api/v1/namespaces/a/configmaps/c",
        None,
    )
    .await;
    assert_eq!(c.status, 200);
    assert_eq!(c.body["kind"], "Status");
    assert_eq!(c.body["status"], "Success");
    assert_eq!(c.body["details"]["name"], "c");
    assert_eq!(c.body["details"]["uid"], cm.uid());
    // With finalizers only deletionTimestamp is set, and the object comes back.
    let held = send(
        &http,
        Method::DELETE,
        "/api/v1/namespaces/a/configmaps/held",
        None,
    )
    .await;
    assert_eq!(held.status, 200);
    assert!(held.body["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(server.objects("configmaps", Some("a")).unwrap().len(), 1);
    assert_eq!(
        send(&http, Method::DELETE, "/api/v1/namespaces/a/pods/p", None)
            .await
            .status,
        404
    );
    // A dry run checks as a delete does: nothing to delete is a 404.
    assert_eq!(
        send(
            &http,
            Method::DELETE,
            "/api/v1/namespaces/a/pods/p?dryRun=All",
            None
        )
        .await
        .status,
        404
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_collection_with_a_selector() {
    let (server, http) = start().await;
    for (ns, name, app) in [("a", "w1", "web"), ("a", "d1", "db"), ("b", "w2", "web")] {
        server
            .create("pods", &pod(ns, name, json!({"app": app})))
            .unwrap();
    }
    let gone = send(
        &http,
        Method::DELETE,
        "/api/v1/pods?labelSelector=app%3Dweb",
        None,
    )
    .await;
    assert_eq!(gone.status, 200, "{}", gone.body);
    assert_eq!(gone.body["kind"], "PodList");
    assert_eq!(names(&gone.body), vec!["w1", "w2"]);
    let left = get(&http, "/api/v1/pods").await;
    assert_eq!(names(&left.body), vec!["d1"]);
    let in_ns = send(&http, Method::DELETE, "/api/v1/namespaces/a/pods", None).await;
    assert_eq!(names(&in_ns.body), vec!["d1"]);
    assert_eq!(
        send(
            &http,
            Method::PUT,
            "/api/v1/namespaces/a/pods",
            Some(("application/json", &json!({})))
        )
        .await
        .status,
        405
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_posted_crd_registers_its_resource() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": {"type": "object"}}}],
        },
    });
    // A dry run registers nothing.
    let dry = post(
        &http,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All",
        &crd,
    )
    .await;
    assert_eq!(dry.status, 201, "{}", dry.body);
    assert!(server.target("widgets.example.com", None).is_err());
    let created = post(
        &http,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(
        created.body["status"]["conditions"][1]["type"],
        "Established"
    );
    let discovery = get(&http, "/apis/example.com/v1").await;
    assert_eq!(discovery.body["resources"][0]["name"], "widgets");
    assert_eq!(discovery.body["resources"][0]["shortNames"], json!(["wd"]));
    let widget = post(&http, "/apis/example.com/v1/namespaces/a/widgets",
        &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 3}})).await;
    assert_eq!(widget.status, 201, "{}", widget.body);
    let list = get(&http, "/apis/example.com/v1/widgets").await;
    assert_eq!(list.body["kind"], "WidgetList");
    assert_eq!(list.body["apiVersion"], "example.com/v1");
    assert_eq!(names(&list.body), vec!["w"]);
    assert!(server.target("widgets.example.com", None).is_ok());
    let bad = post(
        &http,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &json!({"metadata": {"name": "x.example.com"}, "spec": {"group": "example.com"}}),
    )
    .await;
    assert_eq!(bad.status, 422);
    let crds = get(
        &http,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    )
    .await;
    assert_eq!(names(&crds.body), vec!["widgets.example.com"]);
}

/// Sends raw bytes with a content type; returns the status and the body as JSON.
async fn raw(
    http: &fake_apiserver::http::FakeHttpServer,
    method: reqwest::Method,
    path: &str,
    content_type: &str,
    accept: Option<&str>,
    body: Vec<u8>,
) -> (reqwest::StatusCode, Value) {
    let mut req = client()
        .request(method, format!("{}{path}", http.url()))
        .header("Content-Type", content_type)
        .body(body);
    if let Some(a) = accept {
        req = req.header("Accept", a);
    }
    let resp = tokio::time::timeout(GUARD, req.send())
        .await
        .expect("request hung")
        .expect("request failed");
    let status = resp.status();
    let body = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap_or(Value::Null);
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_codes_as_upstream() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    let path = "/api/v1/namespaces/a/configmaps";

    // An unknown content type is a 415 and creates nothing.
    let (code, body) = raw(
        &http,
        Method::POST,
        path,
        "text/plain",
        None,
        cm.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 415, "{body}");
    assert_eq!(body["reason"], "UnsupportedMediaType");
    assert!(server.objects("configmaps", None).unwrap().is_empty());
    // YAML bodies are read as such.
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  k: v\n";
    let (code, body) = raw(
        &http,
        Method::POST,
        path,
        "application/yaml",
        None,
        yaml.into(),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["data"]["k"], "v");
    // An answer nobody can produce is a 406, before anything is written.
    let (code, body) = raw(
        &http,
        Method::POST,
        path,
        "application/json",
        Some("text/html"),
        cm.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 406, "{body}");
    assert_eq!(body["reason"], "NotAcceptable");
    assert_eq!(get(&http, path).await.status, 200);
    let listed = client()
        .get(format!("{}{path}", http.url()))
        .header("Accept", "image/png")
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status(), 406);
    // YAML answers when asked for.
    let yaml_list = client()
        .get(format!("{}{path}", http.url()))
        .header("Accept", "application/yaml")
        .send()
        .await
        .unwrap();
    assert_eq!(yaml_list.headers()["content-type"], "application/yaml");
    assert!(
        yaml_list
            .text()
            .await
            .unwrap()
            .contains("kind: ConfigMapList")
    );

    // Bodies over 3 MiB are a 413 with a Status, even when far larger.
    for size in [4 << 20, 70 << 20] {
        let mut big = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}})
            .to_string()
            .into_bytes();
        big.truncate(big.len() - 1);
        big.extend(b",\"data\":{\"k\":\"");
        big.resize(size, b'x');
        big.extend(b"\"}}");
        let (code, body) = raw(&http, Method::POST, path, "application/json", None, big).await;
        assert_eq!(code, 413, "{size} bytes: {body}");
        assert_eq!(body["reason"], "RequestEntityTooLarge");
    }
    // A body just under the limit is accepted.
    let fits = json!({"metadata": {"name": "fits"}, "data": {"k": "y".repeat((3 << 20) - 200)}});
    let (code, body) = raw(
        &http,
        Method::POST,
        path,
        "application/json",
        None,
        fits.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 201, "{}", body["message"]);

    // A namespaced resource is created inside a namespace, which must exist.
    let (code, body) = raw(
        &http,
        Method::POST,
        "/api/v1/configmaps",
        "application/json",
        None,
        cm.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 405, "{body}");
    assert_eq!(body["reason"], "MethodNotAllowed");
    let (code, body) = raw(
        &http,
        Method::POST,
        "/api/v1/namespaces/ghost/configmaps",
        "application/json",
        None,
        cm.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 404, "{body}");
    assert_eq!(body["message"], "namespaces \"ghost\" not found");

    // Invalid labels are a 422 with causes; a name of the wrong type a 400.
    let bad_labels =
        json!({"metadata": {"name": "l", "labels": {"-bad": "ok", "good": "not ok!"}}});
    let (code, body) = raw(
        &http,
        Method::POST,
        path,
        "application/json",
        None,
        bad_labels.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["details"]["causes"].as_array().unwrap().len(),
        2,
        "{body}"
    );
    let (code, body) = raw(
        &http,
        Method::POST,
        path,
        "application/json",
        None,
        br#"{"metadata":{"name":5}}"#.to_vec(),
    )
    .await;
    assert_eq!(code, 400, "{body}");
    let (code, _) = raw(
        &http,
        Method::POST,
        path,
        "application/json",
        None,
        b"{not json".to_vec(),
    )
    .await;
    assert_eq!(code, 400);
    let (code, _) = raw(
        &http,
        Method::POST,
        path,
        "application/vnd.kubernetes.protobuf",
        None,
        b"garbage".to_vec(),
    )
    .await;
    assert_eq!(code, 400);
    http.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_and_scale_subresources() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": "a"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}},
        "status": {"replicas": 7}});
    let created = post(&http, "/apis/apps/v1/namespaces/a/replicasets", &rs).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(
        created.body.get("status"),
        None,
        "a create ignores the status"
    );
    let object = "/apis/apps/v1/namespaces/a/replicasets/web";
    let status = put(&http, &format!("{object}/status"), &json!({"metadata": {"name": "web"}, "spec": {"replicas": 99}, "status": {"replicas": 2, "readyReplicas": 1}})).await;
    assert_eq!(status.status, 200, "{}", status.body);
    assert_eq!(
        (
            status.body["spec"]["replicas"].clone(),
            status.body["status"]["readyReplicas"].clone()
        ),
        (json!(2), json!(1))
    );
    let patched = send(
        &http,
        Method::PATCH,
        &format!("{object}/status"),
        Some((
            "application/merge-patch+json",
            &json!({"status": {"readyReplicas": 2}}),
        )),
    )
    .await;
    assert_eq!(
        patched.body["status"]["readyReplicas"], 2,
        "{}",
        patched.body
    );
    let updated = put(&http, object, &json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"}, "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}}})).await;
    assert_eq!(
        updated.body["status"]["readyReplicas"], 2,
        "an update keeps the status"
    );

    let scale = get(&http, &format!("{object}/scale")).await;
    assert_eq!(scale.status, 200, "{}", scale.body);
    assert_eq!(scale.body["apiVersion"], "autoscaling/v1");
    assert_eq!(scale.body["spec"]["replicas"], 3);
    assert_eq!(
        scale.body["status"],
        json!({"replicas": 2, "selector": "app=web"})
    );
    let scaled = send(
        &http,
        Method::PATCH,
        &format!("{object}/scale"),
        Some((
            "application/merge-patch+json",
            &json!({"spec": {"replicas": 6}}),
        )),
    )
    .await;
    assert_eq!(scaled.body["spec"]["replicas"], 6, "{}", scaled.body);
    assert_eq!(
        server
            .get("replicasets", Some("a"), "web")
            .unwrap()
            .to_value()["spec"]["replicas"],
        6
    );
    let put_scale = put(
        &http,
        &format!("{object}/scale"),
        &json!({"kind": "Scale", "spec": {"replicas": 1}}),
    )
    .await;
    assert_eq!(put_scale.body["spec"]["replicas"], 1, "{}", put_scale.body);
    // Resources without those subresources do not serve them.
    assert_eq!(
        get(&http, "/api/v1/namespaces/a/configmaps/x/status")
            .await
            .status,
        404
    );
    assert_eq!(
        get(&http, "/apis/apps/v1/namespaces/a/daemonsets/x/scale")
            .await
            .status,
        404
    );
    http.shutdown().await.unwrap();
}

/// Dry runs (`dryRun=All` in the query, `"dryRun": ["All"]` in a DELETE's options, where
/// kubectl and kube-client put it) answer as the real server does and write nothing: a
/// created object without a resourceVersion, an updated one at its stored resourceVersion, a
/// deletion's usual answer; the resourceVersion does not move and the objects stay. Other
/// modes are a 422. (A DELETE's body used to be ignored: it deleted for real.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_runs_answer_and_write_nothing() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let stored = server
        .create("pods", &pod("a", "w1", json!({"app": "web"})))
        .unwrap();
    let stored_rv = stored.resource_version().to_string();
    let rv = server.resource_version();
    let json = "application/json";

    let created = post(
        &http,
        "/api/v1/namespaces/a/pods?dryRun=All",
        &pod("a", "w2", json!({})),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["metadata"]["name"], "w2");
    assert!(created.body["metadata"]["uid"].is_string());
    assert!(
        created.body["metadata"].get("resourceVersion").is_none(),
        "{}",
        created.body
    );
    let taken = post(
        &http,
        "/api/v1/namespaces/a/pods?dryRun=All",
        &pod("a", "w1", json!({})),
    )
    .await;
    assert_eq!(taken.status, 409, "a dry run still checks: {}", taken.body);

    let mut changed = stored.to_value();
    changed["metadata"]["labels"]["app"] = json!("api");
    let replaced = put(&http, "/api/v1/namespaces/a/pods/w1?dryRun=All", &changed).await;
    assert_eq!(replaced.status, 200, "{}", replaced.body);
    assert_eq!(replaced.body["metadata"]["labels"]["app"], "api");
    assert_eq!(
        replaced.body["metadata"]["resourceVersion"],
        stored_rv.as_str()
    );
    let patched = send(
        &http,
        Method::PATCH,
        "/api/v1/namespaces/a/pods/w1?dryRun=All",
        Some((
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"tier": "x"}}}),
        )),
    )
    .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(patched.body["metadata"]["labels"]["tier"], "x");

    let dry = json!({"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]});
    let deleted = send(
        &http,
        Method::DELETE,
        "/api/v1/namespaces/a/pods/w1",
        Some((json, &dry)),
    )
    .await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert_eq!(deleted.body["metadata"]["name"], "w1");
    let collection = send(
        &http,
        Method::DELETE,
        "/api/v1/pods?labelSelector=app%3Dweb",
        Some((json, &dry)),
    )
    .await;
    assert_eq!(collection.status, 200, "{}", collection.body);
    assert_eq!(names(&collection.body), vec!["w1"]);

    assert_eq!(server.resource_version(), rv, "nothing was written");
    let left = get(&http, "/api/v1/pods").await;
    assert_eq!(names(&left.body), vec!["w1"]);
    assert_eq!(
        left.body["items"][0]["metadata"]["labels"],
        json!({"app": "web"})
    );

    let unknown = post(
        &http,
        "/api/v1/namespaces/a/pods?dryRun=Some",
        &pod("a", "w3", json!({})),
    )
    .await;
    assert_eq!(unknown.status, 422, "{}", unknown.body);
    assert!(
        unknown.body["message"].as_str().unwrap().ends_with(
            "is invalid: dryRun: Unsupported value: \"Some\": supported values: \"All\""
        ),
        "{}",
        unknown.body
    );
    // Empty modes are no dry run: the delete goes ahead.
    let plain = json!({"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": []});
    let gone = send(
        &http,
        Method::DELETE,
        "/api/v1/namespaces/a/pods/w1",
        Some((json, &plain)),
    )
    .await;
    assert_eq!(gone.status, 200, "{}", gone.body);
    assert!(names(&get(&http, "/api/v1/pods").await.body).is_empty());
}

/// The real server's ObjectMeta rules for `generation` (an integer, not negative) and for the
/// finalizers of an object being deleted (they may be removed, not added).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generation_and_finalizers_follow_the_object_meta_rules() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let cms = "/api/v1/namespaces/a/configmaps";
    let typed = post(
        &http,
        cms,
        &json!({"metadata": {"name": "t", "generation": "one"}}),
    )
    .await;
    assert_eq!(typed.status, 400, "{}", typed.body);
    assert!(
        typed.body["message"]
            .as_str()
            .unwrap()
            .contains("metadata.generation")
    );
    let negative = post(
        &http,
        cms,
        &json!({"metadata": {"name": "n", "generation": -1}}),
    )
    .await;
    assert_eq!(negative.status, 422, "{}", negative.body);
    assert!(
        negative.body["message"]
            .as_str()
            .unwrap()
            .contains("must be greater than or equal to 0")
    );

    let held = post(
        &http,
        cms,
        &json!({"metadata": {"name": "h", "finalizers": ["a.io/x"]}}),
    )
    .await;
    assert_eq!(held.status, 201, "{}", held.body);
    let deleting = send(&http, Method::DELETE, &format!("{cms}/h"), None).await;
    assert_eq!(deleting.status, 200, "{}", deleting.body);
    let merge = "application/merge-patch+json";
    let added = send(
        &http,
        Method::PATCH,
        &format!("{cms}/h"),
        Some((
            merge,
            &json!({"metadata": {"finalizers": ["a.io/x", "b.io/y"]}}),
        )),
    )
    .await;
    assert_eq!(added.status, 422, "{}", added.body);
    assert!(
        added.body["message"]
            .as_str()
            .unwrap()
            .contains(
                r#"no new finalizers can be added if the object is being deleted, found new finalizers []string{"b.io/y"}"#
            ),
        "{}",
        added.body
    );
    let released = send(
        &http,
        Method::PATCH,
        &format!("{cms}/h"),
        Some((merge, &json!({"metadata": {"finalizers": []}}))),
    )
    .await;
    assert_eq!(released.status, 200, "{}", released.body);
    assert!(
        server.get("configmaps", Some("a"), "h").is_err(),
        "deleted once released"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_metadata_values_are_not_stored() {
    // Every ObjectMeta field is `omitempty`: the real server's typed round trip (built-in
    // kinds) and its metadata coercion (custom resources) store no empty list, map or string.
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    register_widgets(&server);
    let empty = json!({
        "name": "e", "labels": {}, "annotations": {}, "finalizers": [],
        "ownerReferences": [], "generateName": "", "resourceVersion": "",
        "deletionGracePeriodSeconds": null,
    });
    let kept = [
        "labels",
        "annotations",
        "finalizers",
        "ownerReferences",
        "generateName",
    ];
    let absent = |body: &Value| {
        kept.iter()
            .chain(&["deletionGracePeriodSeconds"])
            .filter(|f| body["metadata"].get(**f).is_some())
            .map(|f| f.to_string())
            .collect::<Vec<_>>()
    };
    for collection in [
        "/api/v1/namespaces/a/configmaps",
        "/apis/example.com/v1/namespaces/a/widgets",
    ] {
        let created = post(&http, collection, &json!({ "metadata": empty })).await;
        assert_eq!(created.status, 201, "{collection}: {}", created.body);
        assert_eq!(absent(&created.body), Vec::<String>::new(), "{collection}");
        assert!(created.body["metadata"]["resourceVersion"].is_string());

        // A finalizer held, then released by a merge patch that leaves the list empty.
        let merge = "application/merge-patch+json";
        let object = format!("{collection}/e");
        let held = send(
            &http,
            Method::PATCH,
            &object,
            Some((
                merge,
                &json!({"metadata": {"finalizers": ["a.io/x"], "labels": {"k": "v"}}}),
            )),
        )
        .await;
        assert_eq!(held.status, 200, "{}", held.body);
        assert_eq!(held.body["metadata"]["finalizers"], json!(["a.io/x"]));
        let released = send(
            &http,
            Method::PATCH,
            &object,
            Some((
                merge,
                &json!({"metadata": {"finalizers": [], "labels": {"k": null}}}),
            )),
        )
        .await;
        assert_eq!(released.status, 200, "{}", released.body);
        assert_eq!(absent(&released.body), Vec::<String>::new(), "{collection}");

        // A replace with empty values stores none either, and a stored read agrees.
        let mut replace = json!({ "metadata": empty });
        replace["metadata"]["resourceVersion"] =
            released.body["metadata"]["resourceVersion"].clone();
        let replaced = put(&http, &object, &replace).await;
        assert_eq!(replaced.status, 200, "{}", replaced.body);
        assert_eq!(absent(&replaced.body), Vec::<String>::new(), "{collection}");
        let read = get(&http, &object).await;
        assert_eq!(absent(&read.body), Vec::<String>::new(), "{collection}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_take_a_propagation_policy() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let owner = post(
        &http,
        "/api/v1/namespaces/a/configmaps",
        &json!({"metadata": {"name": "owner"}}),
    )
    .await;
    let reference = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                            "uid": owner.body["metadata"]["uid"], "blockOwnerDeletion": true}]);
    for name in ["d1", "d2"] {
        let made = post(
            &http,
            "/api/v1/namespaces/a/configmaps",
            &json!({"metadata": {"name": name, "ownerReferences": reference}}),
        )
        .await;
        assert_eq!(made.status, 201, "{}", made.body);
    }
    let object = "/api/v1/namespaces/a/configmaps/owner";
    let message = |a: &crate::support::http::Answer| {
        a.body["message"].as_str().unwrap_or_default().to_owned()
    };
    let unknown = send(
        &http,
        Method::DELETE,
        &format!("{object}?propagationPolicy=Sideways"),
        None,
    )
    .await;
    assert_eq!(unknown.status, 422, "{}", unknown.body);
    assert_eq!(
        message(&unknown),
        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \
         \"Sideways\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
    );
    let both = send(
        &http,
        Method::DELETE,
        object,
        Some((
            "application/json",
            &json!({"kind": "DeleteOptions", "apiVersion": "v1", "orphanDependents": true,
                    "propagationPolicy": "Foreground"}),
        )),
    )
    .await;
    assert_eq!(both.status, 422, "{}", both.body);
    assert_eq!(
        message(&both),
        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \
         \"Foreground\": orphanDependents and deletionPropagation cannot be both set"
    );
    assert_eq!(
        get(&http, object).await.status,
        200,
        "refused deletes delete nothing"
    );

    // The deprecated `orphanDependents: true` is Orphan: the answer is the object marked,
    // the dependents stay without the reference.
    let orphaned = send(
        &http,
        Method::DELETE,
        object,
        Some(("application/json", &json!({"orphanDependents": true}))),
    )
    .await;
    assert_eq!(orphaned.status, 200, "{}", orphaned.body);
    assert_eq!(orphaned.body["metadata"]["finalizers"], json!(["orphan"]));
    assert!(orphaned.body["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(get(&http, object).await.status, 404);
    for name in ["d1", "d2"] {
        let left = get(&http, &format!("/api/v1/namespaces/a/configmaps/{name}")).await;
        assert_eq!(left.status, 200, "{}", left.body);
        assert!(left.body["metadata"].get("ownerReferences").is_none());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn field_validation_is_strict_when_asked() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    server
        .register(
            fake_apiserver::ResourceDef::namespaced("example.com", "v1", "widgets", "Widget")
                .with_schema(
                    json!({"type": "object", "properties": {"spec": {"type": "object",
                    "properties": {"items": {"type": "array", "items": {"type": "object",
                        "properties": {"name": {"type": "string"}}}}}}}}),
                ),
        )
        .unwrap();
    let widgets = "/apis/example.com/v1/namespaces/a/widgets";
    let body = json!({"metadata": {"name": "w"}, "spec": {"colour": "red", "items": [{"name": "x", "size": 1}]}});
    let strict = post(&http, &format!("{widgets}?fieldValidation=Strict"), &body).await;
    assert_eq!(strict.status, 400, "{}", strict.body);
    assert_eq!(
        strict.body["message"],
        "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: unknown \
         field \"spec.colour\", unknown field \"spec.items[0].size\""
    );
    let unknown = post(&http, &format!("{widgets}?fieldValidation=Loose"), &body).await;
    assert_eq!(unknown.status, 422, "{}", unknown.body);
    assert!(
        unknown.body["message"].as_str().unwrap().ends_with(
            "fieldValidation: Unsupported value: \"Loose\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
        ),
        "{}",
        unknown.body
    );
    // Warn (also the default) prunes with a `Warning` per dropped field; Ignore silently.
    for (mode, warned) in [("Ignore", false), ("Warn", true), ("", true)] {
        let name = format!("w-{}", if mode.is_empty() { "default" } else { mode }).to_lowercase();
        let mut b = body.clone();
        b["metadata"]["name"] = json!(name);
        let pruned = post(&http, &format!("{widgets}?fieldValidation={mode}"), &b).await;
        assert_eq!(pruned.status, 201, "{}", pruned.body);
        assert_eq!(pruned.body["spec"], json!({"items": [{"name": "x"}]}));
        let warnings = pruned.warnings();
        let expected: &[&str] = if warned {
            &[
                "299 - \"unknown field \\\"spec.colour\\\"\"",
                "299 - \"unknown field \\\"spec.items[0].size\\\"\"",
            ]
        } else {
            &[]
        };
        assert_eq!(warnings, expected, "{mode}");
    }
    // A patch whose result has unknown fields is the patch handler's 422 under Strict.
    let patched = send(
        &http,
        Method::PATCH,
        &format!("{widgets}/w-warn?fieldValidation=Strict"),
        Some((
            "application/merge-patch+json",
            &json!({"spec": {"colour": "blue"}}),
        )),
    )
    .await;
    assert_eq!(patched.status, 422, "{}", patched.body);
    assert!(
        patched.body["message"]
            .as_str()
            .unwrap()
            .ends_with("\": strict decoding error: unknown field \"spec.colour\""),
        "{}",
        patched.body
    );
}
