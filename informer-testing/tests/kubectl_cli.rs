//! kubectl 1.32 against the fake API server (the in-process HTTP front end, and the
//! `fake-apiserver` binary): `get` across namespaces, label selectors, `get -w` printing live
//! changes, `create`, `apply` (create then modify), `delete`, CRDs.
//!
//! Each test uses a fresh kubeconfig and `--cache-dir`. Without kubectl the tests print a
//! notice and pass, except under `CI=true` where they fail (see `kubectl_support`).
#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests: a failed unwrap is a failed test.

mod http_support;
mod kubectl_support;

use std::io::Write as _;

use http_support::{Binary, GUARD, pod, start};
use informer_testing::fake::seed::{SeedConfig, seed};
use kubectl_support::Kubectl;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_pods_across_namespaces() {
    let (server, http) = start().await;
    let Some(kubectl) = Kubectl::for_server("get_pods_across_namespaces", &http, None) else {
        return;
    };
    match kubectl.client_minor_version().await {
        Some(32) => {}
        other => {
            let _ = writeln!(
                std::io::stderr(),
                "NOTICE: these tests target kubectl 1.32; found minor version {other:?}"
            );
        }
    }
    seed(
        &server,
        &SeedConfig {
            namespaces: 2,
            pods: 6,
            configmaps: 0,
            seed: 3,
        },
    )
    .unwrap();
    let out = kubectl.ok(&["get", "pods", "-A"]).await;
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"],
        "{out}"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows.len(), 6, "{out}");
    for pod in server.objects("pods", None).unwrap() {
        assert!(
            rows.iter().any(|r| r[0] == pod.namespace().unwrap()
                && r[1] == pod.name()
                && r[2] == "2/2"
                && r[3] == "Running"),
            "{} missing from:\n{out}",
            pod.key()
        );
    }
    // kubectl pages with limit=500 and asked for Tables.
    let list = server
        .requests()
        .into_iter()
        .find(|r| r.is_list_of("pods"))
        .unwrap();
    assert_eq!(list.to_string(), "GET /api/v1/pods?limit=500");
    // Cluster-scoped resources and `-o wide`.
    let ns = kubectl.ok(&["get", "namespaces"]).await;
    assert!(ns.contains("ns-0") && ns.contains("Active"), "{ns}");
    let wide = kubectl
        .ok(&["get", "pods", "-n", "ns-1", "-o", "wide"])
        .await;
    assert!(wide.lines().next().unwrap().contains("NODE"), "{wide}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_with_label_selectors() {
    let (server, http) = start().await;
    let Some(kubectl) = Kubectl::for_server("get_with_label_selectors", &http, Some("x")) else {
        return;
    };
    for (ns, name, labels) in [
        ("x", "web-a", json!({"app": "web", "tier": "front"})),
        ("x", "web-b", json!({"app": "web", "tier": "back"})),
        ("x", "db-a", json!({"app": "db", "tier": "back"})),
        ("y", "web-c", json!({"app": "web"})),
    ] {
        server.create("pods", &pod(ns, name, labels)).unwrap();
    }
    let out = kubectl
        .ok(&["get", "pods", "-n", "x", "-l", "app=web", "-o", "name"])
        .await;
    assert_eq!(out.lines().collect::<Vec<_>>(), ["pod/web-a", "pod/web-b"]);
    let out = kubectl
        .ok(&["get", "pods", "-l", "tier in (back),app!=web", "-o", "name"])
        .await;
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["pod/db-a"],
        "the kubeconfig's namespace x is the default"
    );
    let out = kubectl
        .ok(&["get", "pods", "-A", "-l", "app=web", "--no-headers"])
        .await;
    assert_eq!(out.lines().count(), 3, "{out}");
    let selectors: Vec<String> = server
        .requests()
        .iter()
        .filter_map(|r| r.param("labelSelector").map(str::to_owned))
        .collect();
    assert_eq!(selectors, ["app=web", "tier in (back),app!=web", "app=web"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_watch_prints_live_changes() {
    let (server, http) = start().await;
    let Some(kubectl) = Kubectl::for_server("get_watch_prints_live_changes", &http, None) else {
        return;
    };
    server
        .create("pods", &pod("w", "before", json!({})))
        .unwrap();
    let mut watch = kubectl.spawn(&["get", "pods", "-n", "w", "-w"]);
    watch.line_with(&["before"]).await;
    tokio::time::timeout(GUARD, server.wait_for_request(|r| r.is_watch_of("pods")))
        .await
        .expect("kubectl did not start watching");
    server
        .create("pods", &pod("w", "live-1", json!({})))
        .unwrap();
    let line = watch.line_with(&["live-1"]).await;
    assert!(line.contains("0/1"), "{line}");
    server
        .create("pods", &pod("other", "elsewhere", json!({})))
        .unwrap();
    server
        .patch("pods", Some("w"), "live-1", &json!({"status": {"phase": "Running", "containerStatuses": [{"name": "app", "ready": true, "restartCount": 4}]}}))
        .unwrap();
    let line = watch.line_with(&["live-1", "Running"]).await;
    assert!(line.contains("1/1") && line.contains(" 4 "), "{line}");
    assert!(
        !watch.seen.iter().any(|l| l.contains("elsewhere")),
        "{:?}",
        watch.seen
    );
    watch.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_apply_and_delete() {
    let (server, http) = start().await;
    let Some(kubectl) = Kubectl::for_server("create_apply_and_delete", &http, None) else {
        return;
    };
    // kubectl reports a missing object of a missing namespace as the namespace's absence.
    server
        .create(
            "namespaces",
            &informer_testing::fake::seed::namespace("apps"),
        )
        .unwrap();
    let pod_yaml = |image: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: demo\n  namespace: apps\n  labels:\n    app: demo\n\
             spec:\n  containers:\n  - name: app\n    image: {image}\n    ports:\n    - containerPort: 80\n  - name: sidecar\n    image: side:1\n"
        )
    };
    let file = kubectl.manifest("pod.yaml", &pod_yaml("nginx:1"));
    let out = kubectl.ok(&["create", "-f", file.to_str().unwrap()]).await;
    assert_eq!(out.trim(), "pod/demo created");
    assert_eq!(
        server.get("pods", Some("apps"), "demo").unwrap().to_value()["spec"]["containers"][0]["image"],
        "nginx:1"
    );
    let create = server
        .requests()
        .into_iter()
        .find(|r| r.method == "POST")
        .unwrap();
    assert_eq!(create.path, "/api/v1/namespaces/apps/pods");
    // Creating it again is a conflict, reported by kubectl.
    let again = kubectl.run(&["create", "-f", file.to_str().unwrap()]).await;
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("AlreadyExists"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );

    // apply: create, then modify (a removed key disappears, a new one appears).
    let cm = kubectl.manifest("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: apps\ndata:\n  a: \"1\"\n  b: \"2\"\n");
    assert_eq!(
        kubectl
            .ok(&["apply", "-f", cm.to_str().unwrap()])
            .await
            .trim(),
        "configmap/settings created"
    );
    std::fs::write(&cm, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: apps\ndata:\n  a: \"10\"\n  c: \"3\"\n").unwrap();
    assert_eq!(
        kubectl
            .ok(&["apply", "-f", cm.to_str().unwrap()])
            .await
            .trim(),
        "configmap/settings configured"
    );
    let data = server
        .get("configmaps", Some("apps"), "settings")
        .unwrap()
        .to_value()["data"]
        .clone();
    assert_eq!(data, json!({"a": "10", "c": "3"}));
    assert_eq!(
        kubectl
            .ok(&["apply", "-f", cm.to_str().unwrap()])
            .await
            .trim(),
        "configmap/settings unchanged"
    );

    // apply on an object made by create: containers merge by name, ports are kept.
    std::fs::write(&file, pod_yaml("nginx:2")).unwrap();
    let out = kubectl.ok(&["apply", "-f", file.to_str().unwrap()]).await;
    assert!(out.trim().ends_with("pod/demo configured"), "{out}");
    let spec = server.get("pods", Some("apps"), "demo").unwrap().to_value()["spec"].clone();
    assert_eq!(spec["containers"][0]["image"], "nginx:2");
    assert_eq!(spec["containers"][0]["ports"][0]["containerPort"], 80);
    assert_eq!(spec["containers"][1]["name"], "sidecar");

    // delete, by file and by name.
    let out = kubectl.ok(&["delete", "-f", cm.to_str().unwrap()]).await;
    assert_eq!(out.trim(), "configmap \"settings\" deleted");
    let out = kubectl.ok(&["delete", "pod", "demo", "-n", "apps"]).await;
    assert_eq!(out.trim(), "pod \"demo\" deleted");
    assert_eq!(
        server.get("pods", Some("apps"), "demo").unwrap_err().code,
        404
    );
    let missing = kubectl.run(&["get", "pod", "demo", "-n", "apps"]).await;
    assert!(!missing.status.success());
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(stderr.contains("pods \"demo\" not found"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_a_crd_then_its_custom_resources() {
    let (server, http) = start().await;
    let Some(kubectl) =
        Kubectl::for_server("apply_a_crd_then_its_custom_resources", &http, Some("prod"))
    else {
        return;
    };
    http_support::namespaces(&server, &["prod"]);
    let crd = kubectl.manifest(
        "crd.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n\
         spec:\n  group: example.com\n  scope: Namespaced\n  names:\n    plural: widgets\n    singular: widget\n    kind: Widget\n    shortNames: [wd]\n\
         \x20 versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n",
    );
    let out = kubectl.ok(&["apply", "-f", crd.to_str().unwrap()]).await;
    assert_eq!(
        out.trim(),
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created"
    );
    let widget = kubectl.manifest(
        "w.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 3\n",
    );
    assert_eq!(
        kubectl
            .ok(&["apply", "-f", widget.to_str().unwrap()])
            .await
            .trim(),
        "widget.example.com/w1 created"
    );
    std::fs::write(
        &widget,
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 4\n",
    )
    .unwrap();
    assert_eq!(
        kubectl
            .ok(&["apply", "-f", widget.to_str().unwrap()])
            .await
            .trim(),
        "widget.example.com/w1 configured"
    );
    assert_eq!(
        server
            .get("widgets.example.com", Some("prod"), "w1")
            .unwrap()
            .to_value()["spec"]["size"],
        4
    );
    let out = kubectl.ok(&["get", "wd"]).await;
    assert!(out.lines().nth(1).unwrap().starts_with("w1 "), "{out}");
    let out = kubectl.ok(&["get", "crd", "-o", "name"]).await;
    assert_eq!(
        out.trim(),
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_against_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let Some(kubectl) = Kubectl::for_kubeconfig("kubectl_against_the_binary", &kubeconfig) else {
        return;
    };
    let bin = Binary::start(&[
        "--seed",
        "pods=9,configmaps=3",
        "--namespaces",
        "3",
        "--kubeconfig-out",
        kubeconfig.to_str().unwrap(),
    ])
    .await;
    let out = kubectl.ok(&["get", "pods", "-A", "--no-headers"]).await;
    assert_eq!(out.lines().count(), 9, "{out}");
    let out = kubectl
        .ok(&["get", "configmaps", "-n", "ns-2", "-o", "name"])
        .await;
    assert_eq!(out.lines().count(), 1, "{out}");
    let mut watch = kubectl.spawn(&["get", "configmaps", "-n", "ns-0", "-w", "--no-headers"]);
    watch.line_with(&["config"]).await;
    let cm = json!({"metadata": {"name": "from-http"}, "data": {"k": "v"}});
    let created = http_support::client()
        .post(format!("{}/api/v1/namespaces/ns-0/configmaps", bin.url()))
        .json(&cm)
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    watch.line_with(&["from-http"]).await;
    watch.stop().await;

    // Label selectors: every seeded pod carries `app`; none carries `absent`.
    let out = kubectl
        .ok(&["get", "pods", "-A", "-l", "app", "-o", "name"])
        .await;
    assert_eq!(out.lines().count(), 9, "{out}");
    let out = kubectl
        .ok(&["get", "pods", "-A", "-l", "absent", "-o", "name"])
        .await;
    assert_eq!(out.trim(), "", "{out}");

    // create, apply (create then modify), delete: all through the binary.
    let cm = |data: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: via-kubectl\n  namespace: ns-1\n  labels:\n    made-by: kubectl\ndata:\n{data}"
        )
    };
    let file = kubectl.manifest("cm.yaml", &cm("  a: \"1\"\n"));
    let out = kubectl.ok(&["create", "-f", file.to_str().unwrap()]).await;
    assert_eq!(out.trim(), "configmap/via-kubectl created");
    let out = kubectl
        .ok(&[
            "get",
            "configmaps",
            "-A",
            "-l",
            "made-by=kubectl",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(out.trim(), "configmap/via-kubectl");
    std::fs::write(&file, cm("  a: \"2\"\n  b: \"3\"\n")).unwrap();
    let out = kubectl.ok(&["apply", "-f", file.to_str().unwrap()]).await;
    assert!(
        out.trim().ends_with("configmap/via-kubectl configured"),
        "{out}"
    );
    let out = kubectl
        .ok(&[
            "get",
            "configmap",
            "via-kubectl",
            "-n",
            "ns-1",
            "-o",
            "jsonpath={.data.a},{.data.b}",
        ])
        .await;
    assert_eq!(out.trim(), "2,3");
    let out = kubectl.ok(&["delete", "-f", file.to_str().unwrap()]).await;
    assert_eq!(out.trim(), "configmap \"via-kubectl\" deleted");
    let out = kubectl
        .ok(&[
            "get",
            "configmaps",
            "-A",
            "-l",
            "made-by=kubectl",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(out.trim(), "", "{out}");
    assert!(bin.terminate().await.success());
}
