//! kubectl 1.32 against the fake API server (the in-process HTTP front end, and the
//! `fake-apiserver` binary): `get` across namespaces, label selectors, `get -w` printing live
//! changes, `create`, `apply` (create then modify), `delete`, CRDs.
//!
//! Each test uses a fresh kubeconfig and `--cache-dir`. Without kubectl the tests print a
//! notice and pass, except under `CI=true` where they fail (see `support::kubectl`).
#![cfg(feature = "http")]

use std::io::Write as _;

use fake_apiserver::FakeApiServer;
use fake_apiserver::http::FakeHttpServer;
use fake_apiserver::seed::{SeedConfig, seed};
use serde_json::json;

use crate::support::GUARD;
use crate::support::http::{Binary, client, namespaces, pod, start};
use crate::support::kubectl::Kubectl;

/// The in-process server with `namespace` created, and kubectl for it in that namespace
/// (`None`: no kubectl here, and the test passes with a notice).
async fn kubectl_in(
    test: &str,
    namespace: &str,
) -> Option<(FakeApiServer, FakeHttpServer, Kubectl)> {
    let (server, http) = start().await;
    let kubectl = Kubectl::for_server(test, &http, Some(namespace))?;
    namespaces(&server, &[namespace]);
    Some((server, http, kubectl))
}

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
        .patch("pods", Some("w"), "live-1", &json!({"status": {"phase": "Running", "containerStatuses": [{"name": "app", "ready": true, "restartCount": 4, "state": {"running": {}}}]}}))
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
        .create("namespaces", &fake_apiserver::seed::namespace("apps"))
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
    let Some((server, _http, kubectl)) =
        kubectl_in("apply_a_crd_then_its_custom_resources", "prod").await
    else {
        return;
    };
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
    // Without printer columns: NAME and AGE.
    assert_eq!(
        table_of(&out)[0].keys().collect::<Vec<_>>(),
        ["AGE", "NAME"],
        "{out}"
    );
    let out = kubectl.ok(&["get", "crd", "-o", "name"]).await;
    assert_eq!(
        out.trim(),
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com"
    );
    // The CRD convertor of 1.37: scope, served versions, creation time; more in -o wide.
    let out = kubectl.ok(&["get", "crd", "-o", "wide"]).await;
    let crd = server
        .get("customresourcedefinitions", None, "widgets.example.com")
        .unwrap()
        .to_value();
    assert_eq!(
        cells(
            &row_named(&out, "widgets.example.com"),
            &[
                "SCOPE",
                "VERSIONS",
                "CREATED AT",
                "GROUP",
                "KIND",
                "SHORTNAMES",
                "ESTABLISHED"
            ]
        ),
        [
            "Namespaced",
            "v1(storage)",
            crd["metadata"]["creationTimestamp"].as_str().unwrap(),
            "example.com",
            "Widget",
            "wd",
            "true"
        ]
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
    let created = client()
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

/// GET `path` from the binary as JSON.
async fn get_json(bin: &Binary, path: &str) -> serde_json::Value {
    let resp = tokio::time::timeout(GUARD, client().get(format!("{}{path}", bin.url())).send())
        .await
        .expect("request hung")
        .unwrap();
    assert!(resp.status().is_success(), "GET {path}: {}", resp.status());
    resp.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_generators_send_protobuf_to_the_binary() {
    // kubectl 1.32's generator commands send protobuf bodies for built-in kinds.
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let Some(kubectl) = Kubectl::for_kubeconfig(
        "kubectl_generators_send_protobuf_to_the_binary",
        &kubeconfig,
    ) else {
        return;
    };
    let bin = Binary::start(&["--kubeconfig-out", kubeconfig.to_str().unwrap()]).await;

    // `-v=8` shows the wire: a protobuf body, protobuf asked for first, protobuf answered.
    let created = kubectl
        .run(&[
            "create",
            "configmap",
            "settings",
            "--from-literal=mode=fast",
            "-v=8",
        ])
        .await;
    assert!(created.status.success());
    assert_eq!(
        String::from_utf8_lossy(&created.stdout).trim(),
        "configmap/settings created"
    );
    let trace = String::from_utf8_lossy(&created.stderr);
    let headers: Vec<&str> = trace
        .lines()
        .filter_map(|l| l.split_once(']').map(|(_, h)| h.trim()))
        .filter(|h| h.starts_with("Content-Type:") || h.starts_with("Accept:"))
        .collect();
    assert!(
        headers.contains(&"Accept: application/vnd.kubernetes.protobuf,application/json"),
        "{headers:?}"
    );
    assert_eq!(
        headers
            .iter()
            .filter(|h| **h == "Content-Type: application/vnd.kubernetes.protobuf")
            .count(),
        2,
        "the request body and the answer: {headers:?}"
    );
    let cm = get_json(&bin, "/api/v1/namespaces/default/configmaps/settings").await;
    assert_eq!(cm["data"], json!({"mode": "fast"}));

    let out = kubectl
        .ok(&[
            "create",
            "secret",
            "generic",
            "creds",
            "--from-literal=password=s3cret",
        ])
        .await;
    assert_eq!(out.trim(), "secret/creds created");
    let secret = get_json(&bin, "/api/v1/namespaces/default/secrets/creds").await;
    assert_eq!(secret["data"]["password"], "czNjcmV0", "base64 of s3cret");

    let out = kubectl.ok(&["create", "namespace", "team-a"]).await;
    assert_eq!(out.trim(), "namespace/team-a created");
    let out = kubectl
        .ok(&["create", "configmap", "in-team", "-n", "team-a"])
        .await;
    assert_eq!(out.trim(), "configmap/in-team created");
    // A namespace that does not exist is refused, as by a real server.
    let missing = kubectl
        .run(&["create", "configmap", "lost", "-n", "ghost"])
        .await;
    assert!(!missing.status.success());
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        stderr.contains("namespaces \"ghost\" not found"),
        "{stderr}"
    );

    let out = kubectl
        .ok(&[
            "create",
            "deployment",
            "web",
            "--image=nginx:1.27",
            "--replicas=2",
            "--port=80",
        ])
        .await;
    assert_eq!(out.trim(), "deployment.apps/web created");
    let deploy = get_json(&bin, "/apis/apps/v1/namespaces/default/deployments/web").await;
    assert_eq!(deploy["spec"]["replicas"], 2);
    assert_eq!(
        deploy["spec"]["selector"]["matchLabels"],
        json!({"app": "web"})
    );
    let container = &deploy["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "nginx:1.27");
    assert_eq!(container["ports"][0]["containerPort"], 80);

    let out = kubectl
        .ok(&[
            "create",
            "job",
            "once",
            "--image=busybox:1",
            "--",
            "echo",
            "hi",
        ])
        .await;
    assert_eq!(out.trim(), "job.batch/once created");
    let job = get_json(&bin, "/apis/batch/v1/namespaces/default/jobs/once").await;
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["command"], json!(["echo", "hi"]));
    assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never");

    let out = kubectl
        .ok(&["create", "service", "clusterip", "front", "--tcp=80:8080"])
        .await;
    assert_eq!(out.trim(), "service/front created");
    let svc = get_json(&bin, "/api/v1/namespaces/default/services/front").await;
    assert_eq!(svc["spec"]["type"], "ClusterIP");
    assert_eq!(svc["spec"]["ports"][0]["port"], 80);
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 8080);
    assert_eq!(svc["spec"]["selector"], json!({"app": "front"}));

    // `kubectl scale` goes through the scale subresource.
    let out = kubectl
        .ok(&["scale", "deployment", "web", "--replicas=5"])
        .await;
    assert_eq!(out.trim(), "deployment.apps/web scaled");
    let deploy = get_json(&bin, "/apis/apps/v1/namespaces/default/deployments/web").await;
    assert_eq!(deploy["spec"]["replicas"], 5);
    let scale = get_json(
        &bin,
        "/apis/apps/v1/namespaces/default/deployments/web/scale",
    )
    .await;
    assert_eq!(
        (scale["kind"].as_str(), scale["spec"]["replicas"].as_i64()),
        (Some("Scale"), Some(5))
    );
    // A write of a Scale with a stale resourceVersion is a conflict.
    let stale = client()
        .put(format!(
            "{}/apis/apps/v1/namespaces/default/deployments/web/scale",
            bin.url()
        ))
        .json(&json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
            "metadata": {"name": "web", "namespace": "default", "resourceVersion": "1"},
            "spec": {"replicas": 1}}))
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), 409);
    assert!(bin.terminate().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_gets_workloads_scales_them_and_selects_pods_by_node() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let Some(kubectl) = Kubectl::for_kubeconfig(
        "kubectl_gets_workloads_scales_them_and_selects_pods_by_node",
        &kubeconfig,
    ) else {
        return;
    };
    let bin = Binary::start(&[
        "--seed",
        "pods=30",
        "--namespaces",
        "3",
        "--kubeconfig-out",
        kubeconfig.to_str().unwrap(),
    ])
    .await;
    let pod_template = "    metadata:\n      labels:\n        app: a\n    spec:\n      containers:\n      - name: c\n        image: busybox:1\n";
    let manifests = format!(
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: rs-1\n  namespace: ns-0\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: a\n  template:\n{pod_template}\
         ---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: sts-1\n  namespace: ns-0\nspec:\n  serviceName: sts\n  selector:\n    matchLabels:\n      app: a\n  template:\n{pod_template}\
         ---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: ds-1\n  namespace: ns-1\nspec:\n  selector:\n    matchLabels:\n      app: a\n  template:\n{pod_template}\
         ---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: job-1\n  namespace: ns-2\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: c\n        image: busybox:1\n\
         ---\napiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: leader\n  namespace: ns-2\nspec:\n  holderIdentity: me\n  leaseDurationSeconds: 15\n"
    );
    let file = kubectl.manifest("workloads.yaml", &manifests);
    let out = kubectl.ok(&["apply", "-f", file.to_str().unwrap()]).await;
    assert_eq!(out.lines().count(), 5, "{out}");
    let out = kubectl
        .ok(&["get", "rs,sts,ds,jobs,leases", "-A", "-o", "name"])
        .await;
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "replicaset.apps/rs-1",
            "statefulset.apps/sts-1",
            "daemonset.apps/ds-1",
            "job.batch/job-1",
            "lease.coordination.k8s.io/leader",
        ],
        "{out}"
    );
    let out = kubectl.ok(&["get", "rs,sts,ds,jobs,leases", "-A"]).await;
    assert!(
        out.contains("replicaset.apps/rs-1") && out.contains("lease.coordination.k8s.io/leader"),
        "{out}"
    );

    // Scale a replica set and a stateful set (statefulsets have no replicas set: 1).
    let out = kubectl
        .ok(&[
            "scale",
            "rs/rs-1",
            "sts/sts-1",
            "-n",
            "ns-0",
            "--replicas=3",
        ])
        .await;
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "replicaset.apps/rs-1 scaled",
            "statefulset.apps/sts-1 scaled"
        ]
    );
    let rs = get_json(&bin, "/apis/apps/v1/namespaces/ns-0/replicasets/rs-1").await;
    assert_eq!(rs["spec"]["replicas"], 3);
    let out = kubectl
        .ok(&[
            "get",
            "sts",
            "sts-1",
            "-n",
            "ns-0",
            "-o",
            "jsonpath={.spec.replicas}",
        ])
        .await;
    assert_eq!(out, "3");

    // Pods by node: the field selector node-local controllers use.
    let pods = get_json(&bin, "/api/v1/pods").await;
    let items = pods["items"].as_array().unwrap();
    let node = items[0]["spec"]["nodeName"].as_str().unwrap().to_owned();
    let mut expected: Vec<String> = items
        .iter()
        .filter(|p| p["spec"]["nodeName"] == node.as_str())
        .map(|p| format!("pod/{}", p["metadata"]["name"].as_str().unwrap()))
        .collect();
    expected.sort();
    assert!(
        expected.len() < items.len(),
        "the seed spreads pods over nodes"
    );
    let selector = format!("spec.nodeName={node}");
    let out = kubectl
        .ok(&[
            "get",
            "pods",
            "-A",
            "--field-selector",
            &selector,
            "-o",
            "name",
        ])
        .await;
    let mut got: Vec<&str> = out.lines().collect();
    got.sort_unstable();
    assert_eq!(got, expected);
    let out = kubectl
        .ok(&[
            "get",
            "pods",
            "-A",
            "--field-selector",
            &format!("{selector},status.phase=Running"),
            "--no-headers",
        ])
        .await;
    assert_eq!(
        out.lines().count(),
        expected.len(),
        "seeded pods are Running: {out}"
    );
    let unsupported = kubectl
        .run(&[
            "get",
            "configmaps",
            "-A",
            "--field-selector",
            "spec.nodeName=x",
        ])
        .await;
    assert!(!unsupported.status.success());
    assert!(
        String::from_utf8_lossy(&unsupported.stderr).contains("field label not supported"),
        "{}",
        String::from_utf8_lossy(&unsupported.stderr)
    );
    assert!(bin.terminate().await.success());
}

/// `metadata.generation` as kubectl sees it: 1 on create, one more per change of the desired
/// state (a deployment's spec or annotations, a custom resource's fields outside metadata and
/// status), unchanged by labels, status writes and bodies that carry their own, one more when
/// a deletion waits for finalizers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generation_follows_the_desired_state() {
    let Some((server, _http, kubectl)) =
        kubectl_in("generation_follows_the_desired_state", "prod").await
    else {
        return;
    };
    let generation = async |what: &str| -> String {
        kubectl
            .ok(&["get", what, "-o", "jsonpath={.metadata.generation}"])
            .await
    };
    // A merge patch (of the status subresource if `status`), then the generation.
    let patched = async |what: &str, status: bool, patch: &str| -> String {
        let mut args = vec!["patch", what, "--type=merge", "-p", patch];
        if status {
            args.push("--subresource=status");
        }
        kubectl.ok(&args).await;
        generation(what).await
    };
    let deployment = kubectl.manifest(
        "web.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: web\n\
         \x20 template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - name: c\n        image: nginx:1\n",
    );
    kubectl
        .ok(&["apply", "-f", deployment.to_str().unwrap()])
        .await;
    assert_eq!(generation("deploy/web").await, "1");
    kubectl.ok(&["label", "deploy/web", "tier=front"]).await;
    assert_eq!(
        generation("deploy/web").await,
        "1",
        "labels are not desired state"
    );
    kubectl.ok(&["annotate", "deploy/web", "note=x"]).await;
    assert_eq!(
        generation("deploy/web").await,
        "2",
        "a deployment's annotations are"
    );
    kubectl.ok(&["scale", "deploy/web", "--replicas=3"]).await;
    assert_eq!(
        generation("deploy/web").await,
        "3",
        "through the scale subresource"
    );
    assert_eq!(
        patched(
            "deploy/web",
            true,
            r#"{"status":{"observedGeneration":3,"replicas":3}}"#
        )
        .await,
        "3",
        "status writes"
    );
    assert_eq!(
        patched("deploy/web", false, r#"{"metadata":{"generation":40}}"#).await,
        "3",
        "clients cannot set it"
    );
    kubectl
        .ok(&["set", "image", "deploy/web", "c=nginx:2"])
        .await;
    assert_eq!(generation("deploy/web").await, "4");
    // A kind without a generation has none.
    kubectl
        .ok(&["create", "configmap", "c", "--from-literal=a=b"])
        .await;
    assert_eq!(generation("cm/c").await, "");

    // A custom resource with the status subresource.
    let crd = kubectl.manifest(
        "crd.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n\
         spec:\n  group: example.com\n  scope: Namespaced\n  names:\n    plural: widgets\n    singular: widget\n    kind: Widget\n\
         \x20 versions:\n  - name: v1\n    served: true\n    storage: true\n    subresources:\n      status: {}\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n",
    );
    kubectl.ok(&["apply", "-f", crd.to_str().unwrap()]).await;
    assert_eq!(
        generation("crd/widgets.example.com").await,
        "1",
        "CRDs count their spec too"
    );
    let widget = kubectl.manifest(
        "w.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\n  generation: 9\nspec:\n  size: 3\n",
    );
    kubectl.ok(&["apply", "-f", widget.to_str().unwrap()]).await;
    assert_eq!(generation("widget/w1").await, "1");
    assert_eq!(
        patched("widget/w1", false, r#"{"spec":{"size":4}}"#).await,
        "2"
    );
    assert_eq!(
        patched("widget/w1", true, r#"{"status":{"ready":true}}"#).await,
        "2"
    );
    assert_eq!(
        patched(
            "widget/w1",
            false,
            r#"{"metadata":{"finalizers":["example.com/keep"]}}"#
        )
        .await,
        "2",
        "finalizers are metadata"
    );
    kubectl.ok(&["delete", "widget/w1", "--wait=false"]).await;
    assert_eq!(
        generation("widget/w1").await,
        "3",
        "marked for deletion: controllers see it change meaning"
    );
    let stored = server
        .get("widgets.example.com", Some("prod"), "w1")
        .unwrap();
    assert_eq!(stored.to_value()["metadata"]["generation"], 3);
}

/// kubectl's server-side dry runs (`diff`, `apply`, `create`, `delete` with
/// `--dry-run=server`) get the real server's answers and change nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_dry_runs_answer_and_change_nothing() {
    let Some((server, _http, kubectl)) =
        kubectl_in("server_side_dry_runs_answer_and_change_nothing", "prod").await
    else {
        return;
    };
    let deployment = |replicas: u32| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels:\n      app: web\n\
             \x20 template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - name: c\n        image: nginx:1\n"
        )
    };
    let one = kubectl.manifest("one.yaml", &deployment(1));
    let two = kubectl.manifest("two.yaml", &deployment(2));
    kubectl.ok(&["apply", "-f", one.to_str().unwrap()]).await;
    let rv = server.resource_version();

    let diff = kubectl.run(&["diff", "-f", two.to_str().unwrap()]).await;
    let shown = String::from_utf8_lossy(&diff.stdout);
    assert_eq!(
        diff.status.code(),
        Some(1),
        "kubectl diff exits 1 when there are differences: {shown}\n{}",
        String::from_utf8_lossy(&diff.stderr)
    );
    assert!(
        shown.contains("-  replicas: 1") && shown.contains("+  replicas: 2"),
        "{shown}"
    );
    let applied = kubectl
        .ok(&["apply", "-f", two.to_str().unwrap(), "--dry-run=server"])
        .await;
    assert_eq!(
        applied.trim(),
        "deployment.apps/web configured (server dry run)"
    );
    let created = kubectl
        .ok(&[
            "create",
            "configmap",
            "c",
            "--from-literal=a=b",
            "--dry-run=server",
        ])
        .await;
    assert_eq!(created.trim(), "configmap/c created (server dry run)");
    let deleted = kubectl
        .ok(&["delete", "deploy/web", "--dry-run=server"])
        .await;
    assert_eq!(
        deleted.trim(),
        "deployment.apps \"web\" deleted (server dry run)"
    );

    assert_eq!(server.resource_version(), rv, "nothing was written");
    let replicas = kubectl
        .ok(&["get", "deploy/web", "-o", "jsonpath={.spec.replicas}"])
        .await;
    assert_eq!(replicas, "1");
    assert!(server.get("configmaps", Some("prod"), "c").is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_and_events_show_what_either_event_group_wrote() {
    // kubectl reads core v1 Events; controllers publish events.k8s.io/v1 ones: the real
    // server keeps both in one storage, and so does the fake.
    let Some((server, _http, kubectl)) = kubectl_in(
        "describe_and_events_show_what_either_event_group_wrote",
        "prod",
    )
    .await
    else {
        return;
    };
    let p = server.create("pods", &pod("prod", "p", json!({}))).unwrap();
    let regarding = json!({"apiVersion": "v1", "kind": "Pod", "namespace": "prod", "name": "p", "uid": p.uid()});
    server
        .create(
            "events.events.k8s.io",
            &json!({
                "metadata": {"name": "p.synced", "namespace": "prod"},
                "regarding": regarding,
                "reason": "Synced", "note": "reconciled by the controller", "type": "Normal",
                "action": "Reconcile", "reportingController": "example.com/ctl",
                "reportingInstance": "ctl-0", "eventTime": "2026-01-01T00:00:01.000000Z",
            }),
        )
        .unwrap();
    server
        .create(
            "events",
            &json!({
                "metadata": {"name": "p.pulled", "namespace": "prod"},
                "involvedObject": regarding,
                "reason": "Pulled", "message": "image pulled", "type": "Normal",
                "source": {"component": "kubelet"}, "count": 1,
                "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
            }),
        )
        .unwrap();

    let described = kubectl.ok(&["describe", "pod", "p"]).await;
    let events = described
        .split("Events:")
        .nth(1)
        .unwrap_or_else(|| panic!("no Events section:\n{described}"));
    for shown in [
        "Synced",
        "example.com/ctl",
        "reconciled by the controller",
        "Pulled",
        "kubelet",
        "image pulled",
    ] {
        assert!(events.contains(shown), "{shown} missing from:\n{described}");
    }
    let listed = kubectl.ok(&["events", "--for", "pod/p"]).await;
    assert!(
        listed.contains("Synced") && listed.contains("Pulled"),
        "{listed}"
    );
    // `kubectl get events`: the server's Table, as upstream's event printer makes it, for
    // both groups.
    for resource in ["events", "events.v1.events.k8s.io"] {
        let table = kubectl.ok(&["get", resource]).await;
        let mut lines = table.lines();
        let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        assert_eq!(
            header,
            ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
            "{table}"
        );
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split_whitespace().collect()).collect();
        assert!(
            rows.iter().any(|r| r[1..]
                == [
                    "Normal",
                    "Synced",
                    "pod/p",
                    "reconciled",
                    "by",
                    "the",
                    "controller"
                ]),
            "{table}"
        );
        assert!(
            rows.iter()
                .any(|r| r[1..] == ["Normal", "Pulled", "pod/p", "image", "pulled"]),
            "{table}"
        );
        let wide = kubectl.ok(&["get", resource, "-o", "wide"]).await;
        assert!(
            wide.contains("example.com/ctl, ctl-0") && wide.contains("kubelet"),
            "{wide}"
        );
        assert!(
            wide.lines().next().unwrap().contains("FIRST SEEN"),
            "{wide}"
        );
    }
    let both = kubectl
        .ok(&["get", "events.v1.events.k8s.io", "-o", "name"])
        .await;
    let mut names: Vec<&str> = both.lines().collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "event.events.k8s.io/p.pulled",
            "event.events.k8s.io/p.synced"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_can_i_and_whoami_are_answered() {
    let Some((server, _http, kubectl)) =
        kubectl_in("auth_can_i_and_whoami_are_answered", "prod").await
    else {
        return;
    };
    for question in [
        &["auth", "can-i", "list", "pods"][..],
        &["auth", "can-i", "delete", "deployments.apps", "-A"],
        &["auth", "can-i", "get", "/healthz"],
        &[
            "auth",
            "can-i",
            "create",
            "widgets.example.com",
            "--subresource",
            "status",
        ],
    ] {
        assert_eq!(kubectl.ok(question).await.trim(), "yes", "{question:?}");
    }
    let rules = kubectl.ok(&["auth", "can-i", "--list"]).await;
    let rows: Vec<Vec<&str>> = rules
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(rows.contains(&vec!["*.*", "[]", "[]", "[*]"]), "{rules}");
    assert!(rows.contains(&vec!["[*]", "[]", "[*]"]), "{rules}");
    let whoami = kubectl.ok(&["auth", "whoami", "-o", "json"]).await;
    let review: serde_json::Value = serde_json::from_str(&whoami).unwrap();
    assert_eq!(review["kind"], "SelfSubjectReview");
    assert_eq!(review["status"]["userInfo"]["username"], "system:admin");
    assert_eq!(
        review["status"]["userInfo"]["groups"],
        json!(["system:masters", "system:authenticated"])
    );
    // Discovery lists the review resources, create only, as `kubectl api-resources` shows.
    let listed = kubectl
        .ok(&[
            "api-resources",
            "--api-group=authorization.k8s.io",
            "-o",
            "wide",
            "--no-headers",
        ])
        .await;
    let rows: Vec<Vec<&str>> = listed
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 4, "{listed}");
    assert!(rows.iter().all(|r| r.last() == Some(&"create")), "{listed}");
    assert!(
        rows.iter()
            .any(|r| r[0] == "localsubjectaccessreviews" && r.contains(&"true")),
        "{listed}"
    );
    let authn = kubectl
        .ok(&[
            "api-resources",
            "--api-group=authentication.k8s.io",
            "--no-headers",
        ])
        .await;
    assert!(authn.contains("selfsubjectreviews"), "{authn}");
    // Nothing is stored: the reviews are answered, not kept.
    let asked: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.to_string().contains("review"))
        .map(|r| r.to_string())
        .collect();
    assert!(
        asked
            .iter()
            .any(|r| r.starts_with("POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews"))
            && asked
                .iter()
                .any(|r| r.starts_with("POST /apis/authentication.k8s.io/v1/selfsubjectreviews")),
        "{asked:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_delete_cascades_as_the_garbage_collector_does() {
    let Some((server, _http, kubectl)) = kubectl_in(
        "kubectl_delete_cascades_as_the_garbage_collector_does",
        "prod",
    )
    .await
    else {
        return;
    };
    // Three replica sets, each owning two pods (what the controllers would have made).
    for rs in ["keep", "drop", "wait"] {
        let owner = server
            .create(
                "replicasets",
                &json!({"metadata": {"name": rs, "namespace": "prod"},
                        "spec": {"selector": {"matchLabels": {"rs": rs}}, "template": {}}}),
            )
            .unwrap();
        for i in 0..2 {
            let mut p = pod("prod", &format!("{rs}-{i}"), json!({"rs": rs}));
            p["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1",
                "kind": "ReplicaSet", "name": rs, "uid": owner.uid(), "controller": true,
                "blockOwnerDeletion": true}]);
            server.create("pods", &p).unwrap();
        }
    }
    let pods = || async {
        let out = kubectl
            .ok(&["get", "pods", "-o", "jsonpath={.items[*].metadata.name}"])
            .await;
        out.split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let orphaned = kubectl
        .ok(&["delete", "replicaset", "keep", "--cascade=orphan"])
        .await;
    assert_eq!(orphaned.trim(), "replicaset.apps \"keep\" deleted");
    let deleted = kubectl.ok(&["delete", "replicaset", "drop"]).await;
    assert_eq!(deleted.trim(), "replicaset.apps \"drop\" deleted");
    let waited = kubectl
        .ok(&["delete", "replicaset", "wait", "--cascade=foreground"])
        .await;
    assert_eq!(waited.trim(), "replicaset.apps \"wait\" deleted");
    assert_eq!(pods().await, ["keep-0", "keep-1"]);
    let owners = kubectl
        .ok(&[
            "get",
            "pod",
            "keep-0",
            "-o",
            "jsonpath={.metadata.ownerReferences}",
        ])
        .await;
    assert_eq!(owners.trim(), "", "orphans name no owner");
    let asked: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.to_string().starts_with("DELETE"))
        .map(|r| r.to_string())
        .collect();
    assert_eq!(asked.len(), 3, "{asked:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_delete_namespace_terminates_it_and_removes_its_content() {
    let (server, http) = start().await;
    let Some(kubectl) = Kubectl::for_server(
        "kubectl_delete_namespace_terminates_it_and_removes_its_content",
        &http,
        Some("team"),
    ) else {
        return;
    };
    kubectl.ok(&["create", "namespace", "team"]).await;
    let labels = kubectl
        .ok(&[
            "get",
            "namespace",
            "team",
            "-o",
            "jsonpath={.metadata.labels}",
        ])
        .await;
    assert_eq!(labels.trim(), r#"{"kubernetes.io/metadata.name":"team"}"#);
    kubectl.ok(&["create", "configmap", "free"]).await;
    kubectl.ok(&["create", "configmap", "held"]).await;
    kubectl
        .ok(&[
            "patch",
            "configmap",
            "held",
            "--type=merge",
            "-p",
            r#"{"metadata":{"finalizers":["example.com/hold"]}}"#,
        ])
        .await;
    let deleted = kubectl
        .ok(&["delete", "namespace", "team", "--wait=false"])
        .await;
    assert_eq!(deleted.trim(), "namespace \"team\" deleted");
    let shown = kubectl.ok(&["get", "namespace", "team"]).await;
    assert!(shown.contains("Terminating"), "{shown}");
    let left = kubectl
        .ok(&[
            "get",
            "configmaps",
            "-o",
            "jsonpath={.items[*].metadata.name}",
        ])
        .await;
    assert_eq!(left.trim(), "held");
    let late = kubectl.run(&["create", "configmap", "late"]).await;
    assert!(!late.status.success());
    let said = String::from_utf8_lossy(&late.stderr);
    assert!(
        said.contains(
            "unable to create new content in namespace team because it is being terminated"
        ),
        "{said}"
    );
    kubectl
        .ok(&[
            "patch",
            "configmap",
            "held",
            "--type=merge",
            "-p",
            r#"{"metadata":{"finalizers":null}}"#,
        ])
        .await;
    let gone = kubectl.run(&["get", "namespace", "team"]).await;
    assert!(
        String::from_utf8_lossy(&gone.stderr).contains("namespaces \"team\" not found"),
        "{}",
        String::from_utf8_lossy(&gone.stderr)
    );
    assert!(
        server
            .objects("configmaps", Some("team"))
            .unwrap()
            .is_empty()
    );
}

/// A CRD's structural schema, as the real server applies it: unknown fields pruned, defaults
/// filled in, violations refused with the server's wording; a changed CRD serves its new
/// schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_follow_their_crd_schema() {
    let Some((server, _http, kubectl)) =
        kubectl_in("custom_resources_follow_their_crd_schema", "prod").await
    else {
        return;
    };
    let crd = |replicas_max: u32| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: gadgets.example.com\n\
             spec:\n  group: example.com\n  scope: Namespaced\n  names:\n    plural: gadgets\n    kind: Gadget\n\
             \x20 versions:\n  - name: v1\n    served: true\n    storage: true\n    subresources:\n      status: {{}}\n    schema:\n      openAPIV3Schema:\n\
             \x20       type: object\n        properties:\n          spec:\n            type: object\n            required: [size]\n            properties:\n\
             \x20             size:\n                type: string\n                enum: [small, large]\n\
             \x20             replicas:\n                type: integer\n                minimum: 0\n                maximum: {replicas_max}\n                default: 1\n\
             \x20             extra:\n                type: object\n                x-kubernetes-preserve-unknown-fields: true\n\
             \x20         status:\n            type: object\n            properties:\n              ready:\n                type: boolean\n"
        )
    };
    let file = kubectl.manifest("crd.yaml", &crd(5));
    kubectl.ok(&["apply", "-f", file.to_str().unwrap()]).await;

    let gadget = |spec: &str| {
        format!("apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g1\nspec:\n{spec}")
    };
    let good = kubectl.manifest(
        "g.yaml",
        &gadget("  size: small\n  colour: red\n  extra:\n    anything: [1, 2]\n"),
    );
    // kubectl asks for strict field validation by default: an undeclared field is refused.
    let strict = kubectl.run(&["apply", "-f", good.to_str().unwrap()]).await;
    assert!(!strict.status.success());
    let said = String::from_utf8_lossy(&strict.stderr);
    assert!(
        said.contains(
            "Gadget in version \"v1\" cannot be handled as a Gadget: strict decoding error: \
             unknown field \"spec.colour\""
        ),
        "{said}"
    );
    // Without it, unknown fields are pruned.
    kubectl
        .ok(&["apply", "-f", good.to_str().unwrap(), "--validate=false"])
        .await;
    let stored = server
        .get("gadgets.example.com", Some("prod"), "g1")
        .unwrap()
        .to_value();
    assert_eq!(
        stored["spec"],
        json!({"size": "small", "replicas": 1, "extra": {"anything": [1, 2]}}),
        "pruned and defaulted"
    );
    // With --validate=warn they are pruned with a warning, which kubectl prints.
    let warned = kubectl
        .run(&["apply", "-f", good.to_str().unwrap(), "--validate=warn"])
        .await;
    assert!(warned.status.success());
    let said = String::from_utf8_lossy(&warned.stderr);
    assert!(
        said.contains("Warning: unknown field \"spec.colour\""),
        "{said}"
    );

    let bad = kubectl.manifest("bad.yaml", &gadget("  size: medium\n  replicas: 9\n"));
    let refused = kubectl
        .run(&["apply", "-f", bad.to_str().unwrap(), "--validate=false"])
        .await;
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    for expected in [
        "The Gadget \"g1\" is invalid",
        "spec.replicas: Invalid value: 9: spec.replicas in body should be less than or equal to 5",
        "spec.size: Unsupported value: \"medium\": supported values: \"small\", \"large\"",
    ] {
        assert!(said.contains(expected), "{expected} missing from: {said}");
    }
    let missing = kubectl.manifest("missing.yaml", &gadget("  replicas: 2\n"));
    let refused = kubectl
        .run(&["apply", "-f", missing.to_str().unwrap(), "--validate=false"])
        .await;
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("spec.size: Required value"), "{said}");

    // The status subresource is validated too.
    let status = kubectl
        .run(&[
            "patch",
            "gadget",
            "g1",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"ready":"yes"}}"#,
        ])
        .await;
    let said = String::from_utf8_lossy(&status.stderr);
    assert!(
        said.contains(
            "status.ready: Invalid value: \"string\": status.ready in body must be of type boolean: \"string\""
        ),
        "{said}"
    );

    // The CRD changed (a larger maximum): the new schema applies at once.
    std::fs::write(&file, crd(10)).unwrap();
    kubectl.ok(&["apply", "-f", file.to_str().unwrap()]).await;
    let allowed = kubectl.manifest("nine.yaml", &gadget("  size: large\n  replicas: 9\n"));
    kubectl
        .ok(&["apply", "-f", allowed.to_str().unwrap(), "--validate=false"])
        .await;
    let stored = server
        .get("gadgets.example.com", Some("prod"), "g1")
        .unwrap()
        .to_value();
    assert_eq!(stored["spec"]["replicas"], 9);
}

/// CEL validation rules (`x-kubernetes-validations`) as a cluster runs them: a CRD whose rule
/// does not compile is refused, a rule that is false refuses the write with its message, a
/// transition rule compares with the stored object, and a rule the fake cannot evaluate is
/// reported as a warning kubectl prints.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_custom_resources_follow_their_crd_validation_rules() {
    let Some((server, _http, kubectl)) = kubectl_in(
        "kubectl_custom_resources_follow_their_crd_validation_rules",
        "prod",
    )
    .await
    else {
        return;
    };
    let crd = |rule: &str| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n\
             spec:\n  group: example.com\n  scope: Namespaced\n  names:\n    plural: widgets\n    kind: Widget\n\
             \x20 versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n\
             \x20       type: object\n        properties:\n          spec:\n            type: object\n\
             \x20           x-kubernetes-validations:\n\
             \x20           - rule: {rule:?}\n              message: minReplicas must not exceed maxReplicas\n\
             \x20           - rule: \"self.mode == oldSelf.mode\"\n              messageExpression: \"'mode is immutable, was ' + oldSelf.mode\"\n\
             \x20           - rule: \"quantity(self.memory).isGreaterThan(quantity('1Mi'))\"\n\
             \x20           properties:\n              minReplicas:\n                type: integer\n\
             \x20             maxReplicas:\n                type: integer\n              mode:\n                type: string\n\
             \x20             memory:\n                type: string\n              since:\n                type: string\n                format: date-time\n"
        )
    };
    let file = kubectl.manifest("crd.yaml", &crd("self.minReplicas <="));
    let refused = kubectl.run(&["apply", "-f", file.to_str().unwrap()]).await;
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains(
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: \
             Invalid value:"
        ) && said.contains("compilation failed: ERROR: <input>:1:20: Syntax error"),
        "{said}"
    );
    std::fs::write(&file, crd("self.minReplicas <= self.maxReplicas")).unwrap();
    kubectl.ok(&["apply", "-f", file.to_str().unwrap()]).await;

    let widget = |min: u32, mode: &str| {
        format!(
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  \
             minReplicas: {min}\n  maxReplicas: 3\n  mode: {mode}\n  memory: 2Gi\n"
        )
    };
    let bad = kubectl.manifest("bad.yaml", &widget(5, "fast"));
    let refused = kubectl.run(&["apply", "-f", bad.to_str().unwrap()]).await;
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains(
            "The Widget \"w1\" is invalid: spec: Invalid value: minReplicas must not exceed \
             maxReplicas"
        ),
        "{said}"
    );
    assert!(
        server
            .get("widgets.example.com", Some("prod"), "w1")
            .is_err()
    );

    // A string that breaks its format is a blocking error: the rules are not run.
    let soon = kubectl.manifest(
        "soon.yaml",
        &format!("{}  since: soon\n", widget(5, "fast")),
    );
    let refused = kubectl.run(&["apply", "-f", soon.to_str().unwrap()]).await;
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains(
            "spec.since: Invalid value: \"soon\": spec.since in body must be of type \
             date-time: \"soon\""
        ) && said.contains(
            "<nil>: Invalid value: null: some validation rules were not checked because the \
             object was invalid; correct the existing errors to complete validation"
        ) && !said.contains("minReplicas must not exceed"),
        "{said}"
    );

    let good = kubectl.manifest("good.yaml", &widget(1, "fast"));
    let created = kubectl.run(&["apply", "-f", good.to_str().unwrap()]).await;
    assert!(created.status.success());
    let said = String::from_utf8_lossy(&created.stderr);
    assert!(
        said.contains(
            "Warning: spec: rule \"quantity(self.memory).isGreaterThan(quantity('1Mi'))\" was \
             not checked: the fake API server does not implement the CEL function quantity()"
        ),
        "{said}"
    );

    // The transition rule: the mode may not change.
    let changed = kubectl.manifest("changed.yaml", &widget(1, "slow"));
    let refused = kubectl
        .run(&["apply", "-f", changed.to_str().unwrap()])
        .await;
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("spec: Invalid value: mode is immutable, was fast"),
        "{said}"
    );
    let stored = server
        .get("widgets.example.com", Some("prod"), "w1")
        .unwrap()
        .to_value();
    assert_eq!(stored["spec"]["mode"], "fast");
}

/// `kubectl get` of workloads and nodes prints the real printers' columns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workload_and_node_tables_print_the_real_columns() {
    let Some((server, _http, kubectl)) =
        kubectl_in("workload_and_node_tables_print_the_real_columns", "prod").await
    else {
        return;
    };
    let template = json!({"spec": {"containers": [{"name": "web", "image": "nginx:1"},
                                                   {"name": "log", "image": "busybox:1"}]}});
    server
        .create(
            "deployments",
            &json!({"metadata": {"name": "web", "namespace": "prod"},
                    "spec": {"replicas": 3, "template": template,
                             "selector": {"matchLabels": {"app": "web"}}},
                    "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}}),
        )
        .unwrap();
    server
        .create(
            "replicasets",
            &json!({"metadata": {"name": "web-1", "namespace": "prod"},
                    "spec": {"replicas": 3, "template": template},
                    "status": {"replicas": 3, "readyReplicas": 2}}),
        )
        .unwrap();
    server
        .create(
            "nodes",
            &json!({"metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/control-plane": ""}},
                    "status": {"conditions": [{"type": "Ready", "status": "True"}],
                               "nodeInfo": {"kubeletVersion": "v1.32.0"},
                               "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}}),
        )
        .unwrap();
    let rows = |out: &str| -> Vec<Vec<String>> {
        out.lines()
            .map(|l| l.split_whitespace().map(str::to_owned).collect())
            .collect()
    };
    let deployments = rows(&kubectl.ok(&["get", "deployments", "-o", "wide"]).await);
    assert_eq!(
        deployments[0][..6],
        [
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
            "CONTAINERS"
        ]
    );
    assert_eq!(deployments[1][..4], ["web", "2/3", "3", "2"]);
    assert_eq!(
        deployments[1][5..],
        ["web,log", "nginx:1,busybox:1", "app=web"]
    );
    let sets = rows(&kubectl.ok(&["get", "replicasets"]).await);
    assert_eq!(sets[0], ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]);
    let wide = rows(&kubectl.ok(&["get", "replicasets", "-o", "wide"]).await);
    assert_eq!(wide[0][5..], ["CONTAINERS", "IMAGES", "SELECTOR"]);
    assert_eq!(sets[1][..4], ["web-1", "3", "3", "2"]);
    kubectl.ok(&["cordon", "n1"]).await;
    let nodes = rows(&kubectl.ok(&["get", "nodes", "-o", "wide"]).await);
    assert_eq!(
        nodes[0][..7],
        [
            "NAME",
            "STATUS",
            "ROLES",
            "AGE",
            "VERSION",
            "INTERNAL-IP",
            "EXTERNAL-IP"
        ]
    );
    assert_eq!(
        nodes[1][..3],
        ["n1", "Ready,SchedulingDisabled", "control-plane"]
    );
    // The node printer's OS image, kernel and runtime: `<unknown>` when the kubelet did not
    // report them.
    assert_eq!(
        nodes[1][4..],
        [
            "v1.32.0",
            "10.0.0.1",
            "<none>",
            "<unknown>",
            "<unknown>",
            "<unknown>"
        ]
    );

    // Services as the service printer shows them (their addresses allocated by the server).
    kubectl
        .ok(&["create", "service", "nodeport", "edge", "--tcp=80:8080"])
        .await;
    kubectl
        .ok(&[
            "create",
            "service",
            "externalname",
            "ext",
            "--external-name=example.com",
        ])
        .await;
    let edge = server
        .get("services", Some("prod"), "edge")
        .unwrap()
        .to_value();
    let services = rows(&kubectl.ok(&["get", "services", "-o", "wide"]).await);
    assert_eq!(
        services[0],
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE",
            "SELECTOR"
        ]
    );
    let by_name = |name: &str| services.iter().find(|r| r[0] == name).unwrap().clone();
    let edge_row = by_name("edge");
    assert_eq!(
        [&edge_row[1..5], &edge_row[6..]].concat(),
        [
            "NodePort".to_owned(),
            edge["spec"]["clusterIP"].as_str().unwrap().to_owned(),
            "<none>".to_owned(),
            format!("80:{}/TCP", edge["spec"]["ports"][0]["nodePort"]),
            "app=edge".to_owned(),
        ]
    );
    let ext_row = by_name("ext");
    assert_eq!(ext_row[1..4], ["ExternalName", "<none>", "example.com"]);
    // DaemonSets, with their node selector.
    server
        .create(
            "daemonsets",
            &json!({"metadata": {"name": "agent", "namespace": "prod"},
                    "spec": {"selector": {"matchLabels": {"app": "agent"}},
                             "template": {"spec": {"nodeSelector": {"disk": "ssd"},
                                                   "containers": [{"name": "a", "image": "busybox:1"}]}}},
                    "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3,
                               "numberReady": 2, "updatedNumberScheduled": 3,
                               "numberAvailable": 2}}),
        )
        .unwrap();
    let sets = rows(&kubectl.ok(&["get", "daemonsets", "-o", "wide"]).await);
    assert_eq!(
        sets[0][..9],
        [
            "NAME",
            "DESIRED",
            "CURRENT",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "NODE",
            "SELECTOR",
            "AGE"
        ]
    );
    assert_eq!(sets[1][..7], ["agent", "3", "3", "2", "3", "2", "disk=ssd"]);
    assert_eq!(sets[1][8..], ["a", "busybox:1", "app=agent"]);
}

/// kubectl's table output as rows of header → cell. Columns are found on the header line
/// (kubectl pads them at least two spaces apart; a header may hold one space), so cells
/// with spaces (`0 3 * * *`, `80, 443`) and empty cells are read whole.
fn table_of(out: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut lines = out.lines();
    let header = lines.next().unwrap_or_default();
    let starts: Vec<usize> = header
        .char_indices()
        .filter(|&(i, c)| c != ' ' && (i == 0 || header[..i].ends_with("  ")))
        .map(|(i, _)| i)
        .collect();
    let cell = |line: &str, k: usize| {
        let end = starts
            .get(k + 1)
            .copied()
            .unwrap_or(usize::MAX)
            .min(line.len());
        line.get(starts[k].min(end)..end)
            .unwrap_or_default()
            .trim()
            .to_owned()
    };
    lines
        .map(|line| {
            (0..starts.len())
                .map(|k| (cell(header, k), cell(line, k)))
                .collect()
        })
        .collect()
}

/// The row named `name` of kubectl's table `out`, its cells by header (the NAME column
/// may be preceded by NAMESPACE).
fn row_named(out: &str, name: &str) -> std::collections::BTreeMap<String, String> {
    table_of(out)
        .into_iter()
        .find(|r| r.get("NAME").map(String::as_str) == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in:\n{out}"))
}

/// The cells of `row` under `headers`, in that order.
fn cells(row: &std::collections::BTreeMap<String, String>, headers: &[&str]) -> Vec<String> {
    headers
        .iter()
        .map(|h| {
            row.get(*h)
                .cloned()
                .unwrap_or_else(|| panic!("no column {h} in {row:?}"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_built_in_kinds_print_upstream_s_columns() {
    let Some((server, _http, kubectl)) =
        kubectl_in("more_built_in_kinds_print_upstream_s_columns", "prod").await
    else {
        return;
    };
    let header = |out: &str| -> Vec<String> {
        out.lines()
            .next()
            .unwrap_or_default()
            .split("  ")
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .map(str::to_owned)
            .collect()
    };

    // Jobs: one kubectl created (nothing runs it here), one finished in 65 seconds.
    kubectl
        .ok(&["create", "job", "once", "--image=busybox:1"])
        .await;
    server
        .create(
            "jobs",
            &json!({"metadata": {"name": "done", "namespace": "prod"},
                    "spec": {"completions": 1, "template": {"spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox:1"}]}}},
                    "status": {"succeeded": 1, "startTime": "2026-01-01T00:00:00Z",
                               "completionTime": "2026-01-01T00:01:05Z",
                               "conditions": [{"type": "Complete", "status": "True"}]}}),
        )
        .unwrap();
    let out = kubectl.ok(&["get", "jobs", "-o", "wide"]).await;
    assert_eq!(
        header(&out),
        [
            "NAME",
            "STATUS",
            "COMPLETIONS",
            "DURATION",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ]
    );
    let once = row_named(&out, "once");
    assert_eq!(
        cells(
            &once,
            &["STATUS", "COMPLETIONS", "DURATION", "CONTAINERS", "IMAGES"]
        ),
        ["Running", "0/1", "", "once", "busybox:1"]
    );
    assert!(
        once["SELECTOR"].starts_with("batch.kubernetes.io/controller-uid="),
        "{out}"
    );
    assert_eq!(
        cells(
            &row_named(&out, "done"),
            &["STATUS", "COMPLETIONS", "DURATION"]
        ),
        ["Complete", "1/1", "65s"]
    );

    // CronJobs: the schedule whole, suspend and the last schedule.
    kubectl
        .ok(&[
            "create",
            "cronjob",
            "nightly",
            "--image=busybox:1",
            "--schedule=0 3 * * *",
        ])
        .await;
    let out = kubectl.ok(&["get", "cronjobs"]).await;
    assert_eq!(
        header(&out),
        [
            "NAME",
            "SCHEDULE",
            "TIMEZONE",
            "SUSPEND",
            "ACTIVE",
            "LAST SCHEDULE",
            "AGE"
        ]
    );
    assert_eq!(
        cells(
            &row_named(&out, "nightly"),
            &["SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE"]
        ),
        ["0 3 * * *", "<none>", "False", "0", "<none>"]
    );

    // Ingresses: class, hosts and the TLS ports.
    kubectl
        .ok(&[
            "create",
            "ingress",
            "web",
            "--rule=example.com/=web:80",
            "--rule=other.com/*=web:80,tls",
        ])
        .await;
    let out = kubectl.ok(&["get", "ingresses"]).await;
    assert_eq!(
        header(&out),
        ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    );
    assert_eq!(
        cells(
            &row_named(&out, "web"),
            &["CLASS", "HOSTS", "ADDRESS", "PORTS"]
        ),
        ["<none>", "example.com,other.com", "", "80, 443"]
    );

    // Service accounts, role bindings (subjects in -o wide), cluster roles (no printer:
    // the default convertor's CREATED AT).
    kubectl.ok(&["create", "serviceaccount", "robot"]).await;
    let out = kubectl.ok(&["get", "serviceaccounts"]).await;
    assert_eq!(header(&out), ["NAME", "SECRETS", "AGE"]);
    assert_eq!(row_named(&out, "robot")["SECRETS"], "0");
    kubectl
        .ok(&[
            "create",
            "rolebinding",
            "readers",
            "--clusterrole=view",
            "--user=alice",
            "--group=devs",
            "--serviceaccount=prod:robot",
        ])
        .await;
    let out = kubectl.ok(&["get", "rolebindings", "-o", "wide"]).await;
    assert_eq!(
        header(&out),
        ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    );
    assert_eq!(
        cells(
            &row_named(&out, "readers"),
            &["ROLE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
        ),
        ["ClusterRole/view", "alice", "devs", "prod/robot"]
    );
    kubectl
        .ok(&[
            "create",
            "clusterrole",
            "reader",
            "--verb=get",
            "--resource=pods",
        ])
        .await;
    let out = kubectl.ok(&["get", "clusterroles"]).await;
    assert_eq!(header(&out), ["NAME", "CREATED AT"]);
    let created = server
        .get("clusterroles", None, "reader")
        .unwrap()
        .to_value()["metadata"]["creationTimestamp"]
        .clone();
    assert_eq!(
        row_named(&out, "reader")["CREATED AT"],
        created.as_str().unwrap()
    );

    // Disruption budgets, priority classes, autoscalers.
    kubectl
        .ok(&[
            "create",
            "pdb",
            "web",
            "--selector=app=web",
            "--min-available=2",
        ])
        .await;
    let out = kubectl.ok(&["get", "pdb"]).await;
    assert_eq!(
        header(&out),
        [
            "NAME",
            "MIN AVAILABLE",
            "MAX UNAVAILABLE",
            "ALLOWED DISRUPTIONS",
            "AGE"
        ]
    );
    assert_eq!(
        cells(
            &row_named(&out, "web"),
            &["MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS"]
        ),
        ["2", "N/A", "0"]
    );
    kubectl
        .ok(&["create", "priorityclass", "high", "--value=1000"])
        .await;
    let out = kubectl.ok(&["get", "priorityclasses"]).await;
    assert_eq!(
        header(&out),
        ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    );
    assert_eq!(
        cells(
            &row_named(&out, "high"),
            &["VALUE", "GLOBAL-DEFAULT", "PREEMPTIONPOLICY"]
        ),
        ["1000", "false", "PreemptLowerPriority"]
    );
    kubectl
        .ok(&["create", "deployment", "web", "--image=nginx:1"])
        .await;
    let hpa = kubectl.manifest(
        "hpa.yaml",
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: web\n\
         spec:\n  scaleTargetRef:\n    apiVersion: apps/v1\n    kind: Deployment\n    name: web\n\
         \x20 minReplicas: 2\n  maxReplicas: 5\n  metrics:\n  - type: Resource\n    resource:\n\
         \x20     name: cpu\n      target:\n        type: Utilization\n        averageUtilization: 80\n",
    );
    kubectl.ok(&["apply", "-f", hpa.to_str().unwrap()]).await;
    let out = kubectl.ok(&["get", "hpa"]).await;
    assert_eq!(
        header(&out),
        [
            "NAME",
            "REFERENCE",
            "TARGETS",
            "MINPODS",
            "MAXPODS",
            "REPLICAS",
            "AGE"
        ]
    );
    assert_eq!(
        cells(
            &row_named(&out, "web"),
            &["REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS"]
        ),
        ["Deployment/web", "cpu: <unknown>/80%", "2", "5", "0"]
    );

    // Volumes, claims and storage classes.
    server
        .create(
            "storageclasses",
            &json!({"metadata": {"name": "standard", "annotations":
                        {"storageclass.kubernetes.io/is-default-class": "true"}},
                    "provisioner": "example.com/disk"}),
        )
        .unwrap();
    server
        .create(
            "persistentvolumes",
            &json!({"metadata": {"name": "pv-1"},
                    "spec": {"capacity": {"storage": "10Gi"},
                             "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
                             "persistentVolumeReclaimPolicy": "Retain",
                             "storageClassName": "standard",
                             "claimRef": {"namespace": "prod", "name": "data"},
                             "hostPath": {"path": "/data"}},
                    "status": {"phase": "Bound"}}),
        )
        .unwrap();
    // The claim through kubectl (so defaulted: VOLUMEMODE), bound through its status.
    let claim = kubectl.manifest(
        "claim.yaml",
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\nspec:\n\
         \x20 accessModes: [ReadWriteOnce]\n  volumeName: pv-1\n  storageClassName: standard\n\
         \x20 resources:\n    requests:\n      storage: 5Gi\n",
    );
    kubectl.ok(&["apply", "-f", claim.to_str().unwrap()]).await;
    kubectl
        .ok(&[
            "patch",
            "pvc",
            "data",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status": {"phase": "Bound", "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"]}}"#,
        ])
        .await;
    let out = kubectl.ok(&["get", "storageclasses"]).await;
    assert_eq!(
        cells(
            &row_named(&out, "standard (default)"),
            &[
                "PROVISIONER",
                "RECLAIMPOLICY",
                "VOLUMEBINDINGMODE",
                "ALLOWVOLUMEEXPANSION"
            ]
        ),
        ["example.com/disk", "Delete", "Immediate", "false"]
    );
    let out = kubectl.ok(&["get", "persistentvolumes"]).await;
    assert_eq!(
        cells(
            &row_named(&out, "pv-1"),
            &[
                "CAPACITY",
                "ACCESS MODES",
                "RECLAIM POLICY",
                "STATUS",
                "CLAIM",
                "STORAGECLASS",
                "VOLUMEATTRIBUTESCLASS",
                "REASON"
            ]
        ),
        [
            "10Gi",
            "RWO,ROX",
            "Retain",
            "Bound",
            "prod/data",
            "standard",
            "<unset>",
            ""
        ]
    );
    let out = kubectl.ok(&["get", "pvc", "-o", "wide"]).await;
    assert_eq!(
        cells(
            &row_named(&out, "data"),
            &[
                "STATUS",
                "VOLUME",
                "CAPACITY",
                "ACCESS MODES",
                "STORAGECLASS",
                "VOLUMEMODE"
            ]
        ),
        ["Bound", "pv-1", "10Gi", "RWO", "standard", "Filesystem"]
    );

    // Pods: a gated pod (its status written by the server), one initializing, endpoints.
    let gated = kubectl.manifest(
        "gated.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: gated\nspec:\n  schedulingGates:\n  - name: example.com/quota\n  containers:\n  - name: c\n    image: busybox:1\n",
    );
    kubectl.ok(&["apply", "-f", gated.to_str().unwrap()]).await;
    server
        .create(
            "pods",
            &json!({"metadata": {"name": "starting", "namespace": "prod"},
                    "spec": {"initContainers": [{"name": "setup", "image": "busybox:1"}],
                             "containers": [{"name": "c", "image": "busybox:1"}]},
                    "status": {"phase": "Pending", "initContainerStatuses": [
                        {"name": "setup", "ready": false, "restartCount": 0,
                         "state": {"running": {}}}]}}),
        )
        .unwrap();
    let out = kubectl.ok(&["get", "pods", "-o", "wide"]).await;
    assert_eq!(
        header(&out),
        [
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED NODE",
            "READINESS GATES"
        ]
    );
    assert_eq!(
        cells(
            &row_named(&out, "gated"),
            &[
                "READY",
                "STATUS",
                "RESTARTS",
                "IP",
                "NODE",
                "NOMINATED NODE",
                "READINESS GATES"
            ]
        ),
        [
            "0/1",
            "SchedulingGated",
            "0",
            "<none>",
            "<none>",
            "<none>",
            "<none>"
        ]
    );
    assert_eq!(
        cells(&row_named(&out, "starting"), &["READY", "STATUS"]),
        ["0/1", "Init:0/1"]
    );
    server
        .create(
            "endpoints",
            &json!({"metadata": {"name": "web", "namespace": "prod"},
                    "subsets": [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"},
                                               {"ip": "10.0.0.3"}, {"ip": "10.0.0.4"}],
                                 "ports": [{"port": 80}]}]}),
        )
        .unwrap();
    let out = kubectl.ok(&["get", "endpoints"]).await;
    assert_eq!(
        row_named(&out, "web")["ENDPOINTS"],
        "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 1 more..."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_approves_a_certificate_signing_request() {
    let Some((server, _http, kubectl)) =
        kubectl_in("kubectl_approves_a_certificate_signing_request", "prod").await
    else {
        return;
    };
    let csr = kubectl.manifest(
        "csr.yaml",
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  \
         name: web\nspec:\n  request: cmVxdWVzdA==\n  signerName: example.com/serving\n  \
         usages: [digital signature, server auth]\n",
    );
    kubectl.ok(&["apply", "-f", csr.to_str().unwrap()]).await;
    let pending = kubectl.ok(&["get", "csr"]).await;
    assert_eq!(
        cells(
            &row_named(&pending, "web"),
            &["SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"]
        ),
        ["example.com/serving", "system:admin", "<none>", "Pending"]
    );
    // `kubectl certificate approve` writes through `/approval`.
    let out = kubectl.ok(&["certificate", "approve", "web"]).await;
    assert_eq!(
        out.trim(),
        "certificatesigningrequest.certificates.k8s.io/web approved"
    );
    assert!(
        server.requests().iter().any(|r| r.to_string()
            == "PUT /apis/certificates.k8s.io/v1/certificatesigningrequests/web/approval"),
        "{:?}",
        server.requests()
    );
    let stored = server
        .get("certificatesigningrequests", None, "web")
        .unwrap()
        .to_value();
    let approved = &stored["status"]["conditions"][0];
    assert_eq!(
        (&approved["type"], &approved["reason"]),
        (&json!("Approved"), &json!("KubectlApprove"))
    );
    assert!(approved["lastTransitionTime"].is_string());
    // kubectl refuses to deny it; the signer's certificate shows as issued.
    let denied = kubectl.run(&["certificate", "deny", "web"]).await;
    assert!(!denied.status.success());
    kubectl
        .ok(&[
            "patch",
            "csr",
            "web",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status": {"certificate": "Y2VydA=="}}"#,
        ])
        .await;
    let issued = kubectl.ok(&["get", "csr"]).await;
    assert_eq!(row_named(&issued, "web")["CONDITION"], "Approved,Issued");
}

/// `kubectl debug` adds an ephemeral container through `pods/<name>/ephemeralcontainers`;
/// once added, it is neither removed nor changed, and nothing else changes through there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_debug_adds_an_ephemeral_container() {
    let Some((server, _http, kubectl)) =
        kubectl_in("kubectl_debug_adds_an_ephemeral_container", "prod").await
    else {
        return;
    };
    kubectl.ok(&["run", "web", "--image=nginx:1"]).await;
    kubectl
        .ok(&[
            "debug",
            "web",
            "--image=busybox:1",
            "--container=dbg",
            "--target=web",
            "--profile=general",
        ])
        .await;
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.to_string() == "PATCH /api/v1/namespaces/prod/pods/web/ephemeralcontainers"),
        "{:?}",
        server.requests()
    );
    let pod = server.get("pods", Some("prod"), "web").unwrap().to_value();
    let added = &pod["spec"]["ephemeralContainers"][0];
    assert_eq!(
        (
            &added["name"],
            &added["image"],
            &added["targetContainerName"]
        ),
        (&json!("dbg"), &json!("busybox:1"), &json!("web"))
    );
    let pods = server.target("pods", Some("prod")).unwrap();
    // Removing or changing it is refused; other changes through the subresource are dropped.
    let mut removed = pod.clone();
    removed["spec"]["ephemeralContainers"] = json!([]);
    let refused = server
        .update_ephemeral_containers_at(&pods, "web", removed)
        .unwrap_err();
    assert_eq!(
        (refused.code, refused.message.as_str()),
        (
            422,
            "Pod \"web\" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral \
             containers \"dbg\" may not be removed\n"
        )
    );
    let mut changed = pod.clone();
    changed["spec"]["ephemeralContainers"][0]["image"] = json!("busybox:2");
    assert_eq!(
        server
            .update_ephemeral_containers_at(&pods, "web", changed)
            .unwrap_err()
            .code,
        422
    );
    let mut clash = pod.clone();
    clash["spec"]["ephemeralContainers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "web", "image": "busybox:1"}));
    assert_eq!(
        server
            .update_ephemeral_containers_at(&pods, "web", clash)
            .unwrap_err()
            .message,
        "Pod \"web\" is invalid: spec.ephemeralContainers[1].name: Duplicate value: \"web\""
    );
    let mut sneaky = pod.clone();
    sneaky["spec"]["containers"][0]["image"] = json!("nginx:2");
    sneaky["metadata"]["labels"]["extra"] = json!("x");
    let kept = server
        .update_ephemeral_containers_at(&pods, "web", sneaky)
        .unwrap()
        .to_value();
    assert_eq!(kept["spec"]["containers"][0]["image"], "nginx:1");
    assert!(kept["metadata"]["labels"].get("extra").is_none());
}

/// A namespace held by its own finalizer, released the way cluster admins release stuck
/// ones: `kubectl replace --raw .../finalize`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_finalizes_a_terminating_namespace() {
    let Some((server, _http, kubectl)) =
        kubectl_in("kubectl_finalizes_a_terminating_namespace", "prod").await
    else {
        return;
    };
    let ns = kubectl.manifest(
        "ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: archive\nspec:\n  finalizers: [example.com/archive]\n",
    );
    kubectl.ok(&["apply", "-f", ns.to_str().unwrap()]).await;
    kubectl
        .ok(&["delete", "namespace", "archive", "--wait=false"])
        .await;
    let listed = kubectl.ok(&["get", "namespaces"]).await;
    assert_eq!(row_named(&listed, "archive")["STATUS"], "Terminating");
    let mut stuck = server
        .get("namespaces", None, "archive")
        .unwrap()
        .to_value();
    stuck["spec"]["finalizers"] = json!([]);
    let body = kubectl.manifest("finalize.json", &stuck.to_string());
    let out = kubectl
        .ok(&[
            "replace",
            "--raw",
            "/api/v1/namespaces/archive/finalize",
            "-f",
            body.to_str().unwrap(),
        ])
        .await;
    let answered: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(answered["metadata"]["name"], "archive");
    assert!(server.get("namespaces", None, "archive").is_err());
}

/// A ConfigMap manifest named `name` with `data` (YAML lines under `data:`).
fn config_map_yaml(name: &str, data: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n{data}")
}

/// The ConfigMap's field managers as `manager:operation`, sorted (upstream orders entries
/// by operation, then time, and the times of one test may straddle a second).
async fn managers_of(kubectl: &Kubectl, configmap: &str) -> Vec<String> {
    let out = kubectl
        .ok(&[
            "get",
            "configmap",
            configmap,
            "--show-managed-fields",
            "-o",
            "jsonpath={range .metadata.managedFields[*]}{.manager}:{.operation} {end}",
        ])
        .await;
    let mut listed: Vec<String> = out.split_whitespace().map(str::to_owned).collect();
    listed.sort();
    listed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_server_side_apply_tracks_managers_and_reports_conflicts() {
    let Some((_server, _http, kubectl)) = kubectl_in(
        "kubectl_server_side_apply_tracks_managers_and_reports_conflicts",
        "prod",
    )
    .await
    else {
        return;
    };
    let cm = |data: &str| config_map_yaml("settings", data);
    let first = kubectl.manifest("first.yaml", &cm("  mode: fast\n  size: \"3\"\n"));
    let out = kubectl
        .ok(&["apply", "--server-side", "-f", first.to_str().unwrap()])
        .await;
    assert_eq!(out.trim(), "configmap/settings serverside-applied");
    // Another manager changing `mode` conflicts, as kubectl prints it.
    let other = kubectl.manifest("other.yaml", &cm("  mode: safe\n"));
    let path = other.to_str().unwrap();
    let conflict = kubectl
        .run(&[
            "apply",
            "--server-side",
            "--field-manager=tuner",
            "-f",
            path,
        ])
        .await;
    assert!(!conflict.status.success());
    let stderr = String::from_utf8_lossy(&conflict.stderr);
    assert!(
        stderr.contains("Apply failed with 1 conflict: conflict with \"kubectl\": .data.mode"),
        "{stderr}"
    );
    kubectl
        .ok(&[
            "apply",
            "--server-side",
            "--field-manager=tuner",
            "--force-conflicts",
            "-f",
            path,
        ])
        .await;
    assert_eq!(
        managers_of(&kubectl, "settings").await,
        ["kubectl:Apply", "tuner:Apply"]
    );
    // kubectl stops applying `size`; nobody else owns it, so it goes.
    let last = kubectl.manifest("last.yaml", &cm("  other: \"1\"\n"));
    kubectl
        .ok(&["apply", "--server-side", "-f", last.to_str().unwrap()])
        .await;
    let data = kubectl
        .ok(&["get", "configmap", "settings", "-o", "jsonpath={.data}"])
        .await;
    assert_eq!(data.trim(), r#"{"mode":"safe","other":"1"}"#);
    // An edit by label is an update: its manager is kubectl's own name for the command.
    kubectl
        .ok(&["label", "configmap", "settings", "team=core"])
        .await;
    assert_eq!(
        managers_of(&kubectl, "settings").await,
        ["kubectl-label:Update", "kubectl:Apply", "tuner:Apply"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_drain_evicts_through_disruption_budgets() {
    let Some((server, _http, kubectl)) =
        kubectl_in("kubectl_drain_evicts_through_disruption_budgets", "prod").await
    else {
        return;
    };
    server
        .create(
            "nodes",
            &json!({"metadata": {"name": "n1"},
                    "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
        )
        .unwrap();
    for name in ["a", "b"] {
        let mut p = pod("prod", name, json!({"app": "web"}));
        p["spec"]["nodeName"] = json!("n1");
        p["status"] = json!({"phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}]});
        server.create("pods", &p).unwrap();
    }
    // The disruption controller's view: two healthy pods, one may go.
    let budget = |allowed: i64| {
        json!({"metadata": {"name": "web", "namespace": "prod"},
               "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
               "status": {"observedGeneration": 1, "disruptionsAllowed": allowed,
                          "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2}})
    };
    server.create("poddisruptionbudgets", &budget(1)).unwrap();
    let blocked = kubectl
        .run(&["drain", "n1", "--force", "--timeout=3s"])
        .await;
    assert!(!blocked.status.success());
    let stderr = String::from_utf8_lossy(&blocked.stderr);
    assert!(
        stderr.contains("Cannot evict pod as it would violate the pod's disruption budget."),
        "{stderr}"
    );
    let left = kubectl
        .ok(&["get", "pods", "-o", "jsonpath={.items[*].metadata.name}"])
        .await;
    assert_eq!(
        left.split_whitespace().count(),
        1,
        "one pod was evicted: {left}"
    );
    let cordoned = kubectl
        .ok(&["get", "node", "n1", "-o", "jsonpath={.spec.unschedulable}"])
        .await;
    assert_eq!(cordoned.trim(), "true");
    // The controller allows another disruption: the drain completes.
    let mut allowed = budget(1);
    let stored = server
        .get("poddisruptionbudgets", Some("prod"), "web")
        .unwrap();
    allowed["metadata"]["resourceVersion"] = json!(stored.resource_version().to_string());
    server.update("poddisruptionbudgets", &allowed).unwrap();
    let drained = kubectl
        .ok(&["drain", "n1", "--force", "--timeout=20s"])
        .await;
    assert!(drained.contains("evicted"), "{drained}");
    assert!(drained.contains("node/n1 drained"), "{drained}");
    let left = kubectl
        .ok(&["get", "pods", "-o", "jsonpath={.items[*].metadata.name}"])
        .await;
    assert_eq!(left.trim(), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_moves_a_client_side_applied_object_to_server_side_apply() {
    let Some((_server, _http, kubectl)) = kubectl_in(
        "kubectl_moves_a_client_side_applied_object_to_server_side_apply",
        "prod",
    )
    .await
    else {
        return;
    };
    let cm = |data: &str| config_map_yaml("moved", data);
    let both = kubectl.manifest("both.yaml", &cm("  a: \"1\"\n  b: \"2\"\n"));
    let out = kubectl.ok(&["apply", "-f", both.to_str().unwrap()]).await;
    assert_eq!(out.trim(), "configmap/moved created");
    assert_eq!(
        managers_of(&kubectl, "moved").await,
        ["kubectl-client-side-apply:Update"]
    );
    // kubectl hands the client-side applier's fields to its server-side manager (a patch of
    // managedFields), so the first server-side apply conflicts with nothing, and a field
    // the manifest no longer has is removed.
    let one = kubectl.manifest("one.yaml", &cm("  a: \"1\"\n"));
    let out = kubectl
        .ok(&["apply", "--server-side", "-f", one.to_str().unwrap()])
        .await;
    assert_eq!(out.trim(), "configmap/moved serverside-applied");
    let data = kubectl
        .ok(&["get", "configmap", "moved", "-o", "jsonpath={.data}"])
        .await;
    assert_eq!(data.trim(), r#"{"a":"1"}"#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_explain_walks_a_custom_resource_s_schema() {
    let Some((_server, _http, kubectl)) =
        kubectl_in("kubectl_explain_walks_a_custom_resource_s_schema", "prod").await
    else {
        return;
    };
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
               metadata:\n  name: gizmos.example.com\n\
               spec:\n  group: example.com\n  scope: Namespaced\n  names:\n    plural: gizmos\n    kind: Gizmo\n\
               \x20 versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n\
               \x20       type: object\n        description: A gizmo does one thing well.\n        properties:\n\
               \x20         spec:\n            type: object\n            description: What the gizmo should do.\n            properties:\n\
               \x20             speed:\n                type: integer\n                description: Turns per second.\n";
    let file = kubectl.manifest("crd.yaml", crd);
    kubectl.ok(&["apply", "-f", file.to_str().unwrap()]).await;
    let top = kubectl.ok(&["explain", "gizmos"]).await;
    assert!(top.contains("A gizmo does one thing well."), "{top}");
    let speed = kubectl.ok(&["explain", "gizmos.spec.speed"]).await;
    assert!(speed.contains("FIELD: speed <integer>"), "{speed}");
    assert!(speed.contains("Turns per second."), "{speed}");
    let spec = kubectl.ok(&["explain", "gizmos.spec"]).await;
    assert!(spec.contains("What the gizmo should do."), "{spec}");
    assert!(spec.contains("speed\t<integer>"), "{spec}");
}

/// `kubectl create token` (the token subresource) and a `TokenReview` created with
/// `kubectl create -f` that authenticates it, as on a cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_creates_a_service_account_token_a_review_authenticates() {
    let Some((server, _http, kubectl)) = kubectl_in(
        "kubectl_creates_a_service_account_token_a_review_authenticates",
        "prod",
    )
    .await
    else {
        return;
    };
    kubectl.ok(&["create", "serviceaccount", "robot"]).await;
    let rv = server.resource_version();
    let token = kubectl
        .ok(&[
            "create",
            "token",
            "robot",
            "--duration",
            "20m",
            "--audience",
            "vault",
        ])
        .await;
    let token = token.trim();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");
    let missing = kubectl.run(&["create", "token", "nobody"]).await;
    assert!(!missing.status.success());
    let said = String::from_utf8_lossy(&missing.stderr);
    assert!(
        said.contains("serviceaccounts \"nobody\" not found"),
        "{said}"
    );

    let review = kubectl.manifest(
        "review.yaml",
        &format!(
            "apiVersion: authentication.k8s.io/v1\nkind: TokenReview\nspec:\n  token: {token}\n  \
             audiences: [vault]\n"
        ),
    );
    // A review kind has no PATCH operation to say the server validates fields, so kubectl
    // validates it client-side from OpenAPI v2, which it asks for in protobuf.
    let user = kubectl
        .ok(&[
            "create",
            "-f",
            review.to_str().unwrap(),
            "-o",
            "jsonpath={.status.authenticated} {.status.user.username}",
        ])
        .await;
    assert_eq!(user, "true system:serviceaccount:prod:robot");
    assert_eq!(
        server.resource_version(),
        rv,
        "token requests and reviews store nothing"
    );
}

/// A CRD's `additionalPrinterColumns` are what `kubectl get` prints for its resource (the
/// server's Table), `-o wide` adding the columns of priority 1; a CRD with a bad column is
/// refused as upstream refuses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_prints_a_custom_resource_s_printer_columns() {
    let Some((_server, _http, kubectl)) = kubectl_in(
        "kubectl_get_prints_a_custom_resource_s_printer_columns",
        "prod",
    )
    .await
    else {
        return;
    };
    let crd = |column_type: &str| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: gizmos.example.com\n\
             spec:\n  group: example.com\n  scope: Namespaced\n  names:\n    plural: gizmos\n    kind: Gizmo\n\
             \x20 versions:\n  - name: v1\n    served: true\n    storage: true\n\
             \x20   additionalPrinterColumns:\n\
             \x20   - name: Replicas\n      type: {column_type}\n      jsonPath: .spec.replicas\n\
             \x20   - name: Colors\n      type: string\n      jsonPath: .spec.colors\n\
             \x20   - name: Ready\n      type: string\n      jsonPath: .status.conditions[?(@.type==\"Ready\")].status\n\
             \x20   - name: Mode\n      type: string\n      priority: 1\n      jsonPath: .spec.mode\n\
             \x20   - name: Age\n      type: date\n      jsonPath: .metadata.creationTimestamp\n\
             \x20   schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n"
        )
    };
    let file = kubectl.manifest("crd.yaml", &crd("count"));
    let refused = kubectl.run(&["apply", "-f", file.to_str().unwrap()]).await;
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains(
            "spec.versions[0].additionalPrinterColumns[0].type: Invalid value: \"count\": must \
             be one of boolean,date,integer,number,string"
        ),
        "{said}"
    );
    std::fs::write(&file, crd("integer")).unwrap();
    kubectl.ok(&["apply", "-f", file.to_str().unwrap()]).await;
    let gizmo = kubectl.manifest(
        "gizmo.yaml",
        "apiVersion: example.com/v1\nkind: Gizmo\nmetadata:\n  name: g1\nspec:\n  replicas: 3\n  \
         colors: [red, blue]\n  mode: fast\nstatus:\n  conditions:\n  - type: Synced\n    status: \
         \"False\"\n  - type: Ready\n    status: \"True\"\n",
    );
    kubectl.ok(&["apply", "-f", gizmo.to_str().unwrap()]).await;
    let printed = kubectl.ok(&["get", "gizmos"]).await;
    let lines: Vec<Vec<&str>> = printed
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[0],
        ["NAME", "REPLICAS", "COLORS", "READY", "AGE"],
        "{printed}"
    );
    assert_eq!(lines[1][..4], ["g1", "3", "[red", "blue]"], "{printed}");
    assert_eq!(lines[1][4], "True", "{printed}");
    let wide = kubectl.ok(&["get", "gizmos", "-o", "wide"]).await;
    let header: Vec<&str> = wide.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "REPLICAS", "COLORS", "READY", "MODE", "AGE"],
        "{wide}"
    );
    assert!(wide.lines().nth(1).unwrap().contains("fast"), "{wide}");
}

/// A CRD's `subresources.scale`: `kubectl scale` writes the replicas where the CRD says, and
/// the `Scale` reads replicas and selector from its paths; a CRD whose scale paths upstream
/// would refuse is a 422.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_scales_a_custom_resource_through_its_crd_s_scale_paths() {
    let Some((server, _http, kubectl)) = kubectl_in(
        "kubectl_scales_a_custom_resource_through_its_crd_s_scale_paths",
        "prod",
    )
    .await
    else {
        return;
    };
    let crd = |spec_path: &str| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: pools.example.com\n\
             spec:\n  group: example.com\n  scope: Namespaced\n  names:\n    plural: pools\n    kind: Pool\n\
             \x20 versions:\n  - name: v1\n    served: true\n    storage: true\n\
             \x20   subresources:\n      status: {{}}\n      scale:\n        specReplicasPath: {spec_path}\n\
             \x20       statusReplicasPath: .status.ready\n        labelSelectorPath: .status.selector\n\
             \x20   schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n"
        )
    };
    let file = kubectl.manifest("crd.yaml", &crd(".size"));
    let refused = kubectl.run(&["apply", "-f", file.to_str().unwrap()]).await;
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains(
            "spec.subresources.scale.specReplicasPath: Invalid value: \".size\": should be a \
             json path under .spec"
        ),
        "{said}"
    );
    std::fs::write(&file, crd(".spec.size")).unwrap();
    kubectl.ok(&["apply", "-f", file.to_str().unwrap()]).await;
    let pool = kubectl.manifest(
        "pool.yaml",
        "apiVersion: example.com/v1\nkind: Pool\nmetadata:\n  name: p\nspec:\n  size: 2\n",
    );
    kubectl.ok(&["apply", "-f", pool.to_str().unwrap()]).await;
    kubectl
        .ok(&[
            "patch",
            "pool",
            "p",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"ready":2,"selector":"app=pool"}}"#,
        ])
        .await;
    kubectl.ok(&["scale", "pool/p", "--replicas=5"]).await;
    let stored = server
        .get("pools.example.com", Some("prod"), "p")
        .unwrap()
        .to_value();
    assert_eq!(stored["spec"], json!({"size": 5}));
    let scale = kubectl
        .ok(&[
            "get",
            "pool",
            "p",
            "--subresource=scale",
            "-o",
            "jsonpath={.spec.replicas} {.status.replicas} {.status.selector}",
        ])
        .await;
    assert_eq!(scale, "5 2 app=pool");
    // A patch of the Scale that sets no replicas, on a pool without them: upstream's 400.
    let empty = kubectl.manifest(
        "empty.yaml",
        "apiVersion: example.com/v1\nkind: Pool\nmetadata:\n  name: e\nspec: {}\n",
    );
    kubectl.ok(&["apply", "-f", empty.to_str().unwrap()]).await;
    let refused = kubectl
        .run(&[
            "patch",
            "pool",
            "e",
            "--subresource=scale",
            "--type=merge",
            "-p",
            r#"{"spec":{}}"#,
        ])
        .await;
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("the spec replicas field \".spec.size\" cannot be empty"),
        "{said}"
    );
}

/// A misspelt field in a built-in kind's manifest: kubectl's default validation (`strict`,
/// sent as `fieldValidation=Strict`) refuses it, `--validate=warn` prints upstream's warning
/// and creates the object without it, server-side apply refuses it whatever the validation,
/// and a value of the wrong type is refused with Go's decoding error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_refuses_a_misspelt_field_of_a_built_in_kind() {
    let Some((server, _http, kubectl)) = kubectl_in(
        "kubectl_refuses_a_misspelt_field_of_a_built_in_kind",
        "prod",
    )
    .await
    else {
        return;
    };
    let manifest = |replicas: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  {replicas}\n  \
             selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        \
             app: web\n    spec:\n      containers:\n      - name: web\n        image: nginx\n"
        )
    };
    let file = kubectl.manifest("web.yaml", &manifest("replicass: 3"));
    let path = file.to_str().unwrap();
    let refused = kubectl.run(&["apply", "-f", path]).await;
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains(
            "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding \
             error: unknown field \"spec.replicass\""
        ),
        "{said}"
    );
    let refused = kubectl.run(&["apply", "--server-side", "-f", path]).await;
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains(
            "failed to create typed patch object (prod/web; apps/v1, Kind=Deployment): \
             .spec.replicass: field not declared in schema"
        ),
        "{said}"
    );
    assert!(server.get("deployments", Some("prod"), "web").is_err());

    let warned = kubectl.run(&["apply", "--validate=warn", "-f", path]).await;
    assert!(warned.status.success(), "{warned:?}");
    let said = String::from_utf8_lossy(&warned.stderr);
    assert!(
        said.contains("Warning: unknown field \"spec.replicass\""),
        "{said}"
    );
    let stored = server
        .get("deployments", Some("prod"), "web")
        .unwrap()
        .to_value();
    assert!(stored["spec"].get("replicass").is_none(), "{stored}");

    std::fs::write(&file, manifest("replicas: \"3\"")).unwrap();
    let refused = kubectl.run(&["apply", "-f", path]).await;
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains(
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of \
             type int32"
        ),
        "{said}"
    );
}

/// What kubectl creates is stored with upstream's defaults, as a cluster stores it: a
/// Deployment's strategy and limits, its pod template's policies, a container's pull policy
/// by its image's tag, a Service's session affinity and target ports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_s_objects_are_stored_with_upstream_s_defaults() {
    let Some((server, _http, kubectl)) = kubectl_in(
        "kubectl_s_objects_are_stored_with_upstream_s_defaults",
        "prod",
    )
    .await
    else {
        return;
    };
    kubectl
        .ok(&[
            "create",
            "deployment",
            "web",
            "--image=nginx:1.27",
            "--port=80",
        ])
        .await;
    let printed = kubectl
        .ok(&[
            "get",
            "deployment",
            "web",
            "-o",
            "jsonpath={.spec.replicas} {.spec.strategy.type} {.spec.strategy.rollingUpdate.maxSurge} \
             {.spec.revisionHistoryLimit} {.spec.progressDeadlineSeconds} \
             {.spec.template.spec.restartPolicy} {.spec.template.spec.dnsPolicy} \
             {.spec.template.spec.schedulerName} {.spec.template.spec.terminationGracePeriodSeconds} \
             {.spec.template.spec.containers[0].imagePullPolicy} \
             {.spec.template.spec.containers[0].ports[0].protocol}",
        ])
        .await;
    assert_eq!(
        printed,
        "1 RollingUpdate 25% 10 600 Always ClusterFirst default-scheduler 30 IfNotPresent TCP"
    );
    let manifest = kubectl.manifest(
        "svc.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector:\n    app: web\n  \
         ports:\n  - port: 8080\n",
    );
    kubectl
        .ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    let service = server
        .get("services", Some("prod"), "web")
        .unwrap()
        .to_value();
    assert_eq!(
        (
            &service["spec"]["type"],
            &service["spec"]["sessionAffinity"],
            &service["spec"]["ports"][0]["targetPort"],
            &service["spec"]["ports"][0]["protocol"],
        ),
        (
            &json!("ClusterIP"),
            &json!("None"),
            &json!(8080),
            &json!("TCP")
        )
    );
    // Its cluster IP allocated, as a cluster's API server allocates one.
    let ip = service["spec"]["clusterIP"].as_str().unwrap_or_default();
    assert!(ip.starts_with("10."), "{service}");
    assert_eq!(service["spec"]["clusterIPs"], json!([ip]));
    // Applying the same manifest again changes nothing: the defaults and the address are
    // not a difference.
    let rv = service["metadata"]["resourceVersion"].clone();
    kubectl
        .ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    let again = server
        .get("services", Some("prod"), "web")
        .unwrap()
        .to_value();
    assert_eq!(again["metadata"]["resourceVersion"], rv);
    // A DaemonSet: its template generation in apps/v1's annotation, 1 at first, one more
    // per change of its pod template, none for a re-apply.
    let agent = kubectl.manifest(
        "ds.yaml",
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: agent\nspec:\n  selector:\n    \
         matchLabels:\n      app: agent\n  template:\n    metadata:\n      labels:\n        \
         app: agent\n    spec:\n      containers:\n      - name: agent\n        image: \
         busybox:1.36\n",
    );
    let generations = |server: &FakeApiServer| {
        let ds = server
            .get("daemonsets", Some("prod"), "agent")
            .unwrap()
            .to_value();
        (
            ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"].clone(),
            ds["metadata"]["generation"].clone(),
            ds["metadata"]["resourceVersion"].clone(),
        )
    };
    kubectl.ok(&["apply", "-f", agent.to_str().unwrap()]).await;
    let first = generations(&server);
    assert_eq!((&first.0, &first.1), (&json!("1"), &json!(1)));
    kubectl.ok(&["apply", "-f", agent.to_str().unwrap()]).await;
    assert_eq!(generations(&server), first);
    kubectl
        .ok(&["set", "image", "daemonset/agent", "agent=busybox:1.37"])
        .await;
    let second = generations(&server);
    assert_eq!((&second.0, &second.1), (&json!("2"), &json!(2)));
    // A Job: its defaults, and the selector on its own uid its template's labels carry.
    kubectl
        .ok(&["create", "job", "pi", "--image=busybox:1.36"])
        .await;
    let job = server.get("jobs", Some("prod"), "pi").unwrap().to_value();
    let uid = job["metadata"]["uid"].as_str().unwrap_or_default();
    assert_eq!(
        (
            &job["spec"]["backoffLimit"],
            &job["spec"]["manualSelector"],
            &job["spec"]["podReplacementPolicy"],
            &job["spec"]["selector"],
        ),
        (
            &json!(6),
            &json!(false),
            &json!("TerminatingOrFailed"),
            &json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
        )
    );
    assert_eq!(
        job["spec"]["template"]["metadata"]["labels"],
        json!({"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "pi",
               "controller-uid": uid, "job-name": "pi"})
    );
}

/// Quantities are stored as upstream writes them: in canonical form unless the text received
/// already looked canonical, a `ResourceList`'s rounded up to milli-units; so applying the
/// same manifest again changes nothing, as on a cluster.
#[tokio::test]
async fn kubectl_s_quantities_are_stored_in_upstream_s_canonical_form() {
    let Some((server, _http, kubectl)) = kubectl_in(
        "kubectl_s_quantities_are_stored_in_upstream_s_canonical_form",
        "prod",
    )
    .await
    else {
        return;
    };
    let manifest = kubectl.manifest(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: sized\nspec:\n  containers:\n  \
         - name: app\n    image: nginx:1.27\n    resources:\n      limits:\n        \
         cpu: 0.5\n        memory: 1024Mi\n      requests:\n        cpu: 100u\n        \
         memory: 100Mi\n        ephemeral-storage: \"2000\"\n  - name: sidecar\n    \
         image: busybox:1.36\n    resources:\n      limits:\n        cpu: 1000m\n  \
         volumes:\n  - name: scratch\n    emptyDir:\n      sizeLimit: 1.5Gi\n",
    );
    kubectl
        .ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    let printed = kubectl
        .ok(&[
            "get",
            "pod",
            "sized",
            "-o",
            "jsonpath={.spec.containers[0].resources.limits.cpu} \
             {.spec.containers[0].resources.limits.memory} \
             {.spec.containers[0].resources.requests.cpu} \
             {.spec.containers[0].resources.requests.memory} \
             {.spec.containers[0].resources.requests.ephemeral-storage} \
             {.spec.containers[1].resources.limits.cpu} \
             {.spec.containers[1].resources.requests.cpu} \
             {.spec.volumes[0].emptyDir.sizeLimit}",
        ])
        .await;
    // The sidecar's requests are its limits (a pod's defaults), written back alike.
    assert_eq!(printed, "500m 1Gi 1m 100Mi 2k 1 1 1536Mi");
    let rv = |server: &FakeApiServer| {
        server
            .get("pods", Some("prod"), "sized")
            .unwrap()
            .to_value()["metadata"]["resourceVersion"]
            .clone()
    };
    // The manifest's `1000m` against the stored `1` is no change once written back.
    let first = rv(&server);
    kubectl
        .ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    assert_eq!(rv(&server), first);
    // Server-side apply: the first takes the fields over (its managed fields change), the
    // second changes nothing.
    let server_side = [
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        manifest.to_str().unwrap(),
    ];
    kubectl.ok(&server_side).await;
    let taken = rv(&server);
    kubectl.ok(&server_side).await;
    assert_eq!(rv(&server), taken);
}

/// A CRD with several served versions, as kubectl meets one: `kubectl get` reads the
/// preferred version (the highest by priority) with its printer columns, a manifest of an
/// older version applies through that version with upstream's deprecation warning, and
/// `-o json` of another version shows the object stored once, defaulted by the storage
/// version's schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_serves_every_version_of_a_crd() {
    let Some((_server, _http, kubectl)) =
        kubectl_in("kubectl_serves_every_version_of_a_crd", "prod").await
    else {
        return;
    };
    let version = |name: &str, storage: bool, extra: &str, columns: &str| {
        format!(
            "  - name: {name}\n    served: true\n    storage: {storage}\n{extra}\
             \x20   additionalPrinterColumns:\n{columns}\
             \x20   schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n\
             \x20         spec:\n            type: object\n            properties:\n\
             \x20             size: {{type: integer}}\n\
             \x20             color: {{type: string, default: blue}}\n"
        )
    };
    let size = "    - {name: Size, type: integer, jsonPath: .spec.size}\n";
    let color = "    - {name: Color, type: string, jsonPath: .spec.color}\n";
    let crd = kubectl.manifest(
        "crd.yaml",
        &format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
             metadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n\
             \x20 scope: Namespaced\n  names: {{plural: widgets, singular: widget, kind: Widget}}\n\
             \x20 versions:\n{}{}",
            version("v1beta1", false, "    deprecated: true\n", size),
            version("v1", true, "", &format!("{size}{color}")),
        ),
    );
    kubectl.ok(&["apply", "-f", crd.to_str().unwrap()]).await;
    kubectl
        .ok(&[
            "wait",
            "--for=condition=Established",
            "crd/widgets.example.com",
        ])
        .await;
    let widget = kubectl.manifest(
        "w.yaml",
        "apiVersion: example.com/v1beta1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 3\n",
    );
    let applied = kubectl
        .run(&["apply", "-f", widget.to_str().unwrap()])
        .await;
    assert!(applied.status.success(), "{applied:?}");
    assert_eq!(
        String::from_utf8_lossy(&applied.stderr).trim(),
        "Warning: example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget"
    );
    // Read through the preferred version, v1, with its two columns.
    let out = kubectl.ok(&["get", "widgets"]).await;
    assert_eq!(
        cells(&row_named(&out, "w1"), &["SIZE", "COLOR"]),
        ["3", "blue"],
        "{out}"
    );
    let out = kubectl
        .ok(&["get", "widgets.v1beta1.example.com", "w1", "-o", "json"])
        .await;
    let read: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(read["apiVersion"], "example.com/v1beta1");
    assert_eq!(
        read["spec"],
        serde_json::json!({"size": 3, "color": "blue"})
    );
    // Applied again through v1beta1: nothing changed.
    assert_eq!(
        kubectl
            .ok(&["apply", "-f", widget.to_str().unwrap()])
            .await
            .trim(),
        "widget.example.com/w1 unchanged"
    );
}

/// `kubectl patch --subresource resize` resizes a pod's container in place through
/// `pods/<name>/resize`: the CPU request changes, the generation moves, and a change to
/// anything but CPU and memory (an image, another resource) is upstream's 422.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_resizes_a_pod_in_place() {
    let Some((server, _http, kubectl)) = kubectl_in("kubectl_resizes_a_pod_in_place", "prod").await
    else {
        return;
    };
    let pod = kubectl.manifest(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: web\n\
         \x20   image: nginx:1\n    resources:\n      requests: {cpu: 100m, memory: 64Mi}\n\
         \x20     limits: {cpu: 200m, memory: 128Mi}\n",
    );
    kubectl.ok(&["apply", "-f", pod.to_str().unwrap()]).await;
    let resize = |patch: &'static str| {
        [
            "patch",
            "pod",
            "web",
            "--subresource",
            "resize",
            "--patch",
            patch,
        ]
    };
    kubectl
        .ok(&resize(
            r#"{"spec":{"containers":[{"name":"web","resources":{"requests":{"cpu":"150m"}}}]}}"#,
        ))
        .await;
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.to_string() == "PATCH /api/v1/namespaces/prod/pods/web/resize"),
        "{:?}",
        server.requests()
    );
    let stored = server.get("pods", Some("prod"), "web").unwrap().to_value();
    assert_eq!(
        stored["spec"]["containers"][0]["resources"],
        json!({"requests": {"cpu": "150m", "memory": "64Mi"},
               "limits": {"cpu": "200m", "memory": "128Mi"}})
    );
    assert_eq!(stored["metadata"]["generation"], 2);
    assert_eq!(stored["status"]["qosClass"], "Burstable");
    let refused = kubectl
        .run(&resize(
            r#"{"spec":{"containers":[{"name":"web","resources":{"requests":{"ephemeral-storage":"1Gi"}}}]}}"#,
        ))
        .await;
    assert!(!refused.status.success());
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr).trim(),
        "The Pod \"web\" is invalid: spec: Forbidden: only cpu and memory resources are mutable"
    );
    // Requests raised to the limits would make the pod Guaranteed: refused too.
    let refused = kubectl
        .run(&resize(
            r#"{"spec":{"containers":[{"name":"web","resources":{"requests":{"cpu":"200m","memory":"128Mi"}}}]}}"#,
        ))
        .await;
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr).trim(),
        "The Pod \"web\" is invalid: spec: Invalid value: \"Burstable\": Pod QOS Class may not \
         change as a result of resizing"
    );
}

/// The validating admission policy of upstream's documentation (`demo-policy.example.com`,
/// `object.spec.replicas <= 5`) applied with kubectl: a deployment of six replicas is
/// refused with upstream's message, one of two is created. (A scale through `/scale` is not
/// matched by a rule naming `deployments` only, as upstream.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_meets_a_validating_admission_policy() {
    let Some((_server, _http, kubectl)) =
        kubectl_in("kubectl_meets_a_validating_admission_policy", "prod").await
    else {
        return;
    };
    let policy = kubectl.manifest(
        "policy.yaml",
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\n\
         metadata:\n  name: demo-policy.example.com\nspec:\n  failurePolicy: Fail\n\
         \x20 matchConstraints:\n    resourceRules:\n    - apiGroups: [apps]\n\
         \x20     apiVersions: [v1]\n      operations: [CREATE, UPDATE]\n\
         \x20     resources: [deployments]\n  validations:\n\
         \x20 - expression: object.spec.replicas <= 5\n---\n\
         apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\n\
         metadata:\n  name: demo-binding-test.example.com\nspec:\n\
         \x20 policyName: demo-policy.example.com\n  validationActions: [Deny]\n",
    );
    kubectl.ok(&["apply", "-f", policy.to_str().unwrap()]).await;
    let refused = kubectl
        .run(&[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=6",
        ])
        .await;
    assert!(!refused.status.success());
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr).trim(),
        "error: failed to create deployment: deployments.apps \"web\" is forbidden: \
         ValidatingAdmissionPolicy 'demo-policy.example.com' with binding \
         'demo-binding-test.example.com' denied request: failed expression: \
         object.spec.replicas <= 5"
    );
    kubectl
        .ok(&[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=2",
        ])
        .await;
    kubectl
        .ok(&["scale", "deployment", "web", "--replicas=9"])
        .await;
}

/// `kubectl autoscale` writes an `autoscaling/v1` HorizontalPodAutoscaler; `kubectl get hpa`
/// reads it back through `autoscaling/v2` (the preferred version), converted as upstream
/// converts it, and through v1 when asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_autoscales_through_autoscaling_v1() {
    let Some((server, _http, kubectl)) =
        kubectl_in("kubectl_autoscales_through_autoscaling_v1", "prod").await
    else {
        return;
    };
    kubectl
        .ok(&["create", "deployment", "web", "--image=nginx:1"])
        .await;
    kubectl
        .ok(&[
            "autoscale",
            "deployment",
            "web",
            "--min=2",
            "--max=5",
            "--cpu-percent=70",
        ])
        .await;
    assert!(
        server.requests().iter().any(|r| r.to_string()
            == "POST /apis/autoscaling/v1/namespaces/prod/horizontalpodautoscalers"),
        "{:?}",
        server.requests()
    );
    let out = kubectl.ok(&["get", "hpa"]).await;
    assert_eq!(
        cells(
            &row_named(&out, "web"),
            &["REFERENCE", "TARGETS", "MINPODS", "MAXPODS"]
        ),
        ["Deployment/web", "cpu: <unknown>/70%", "2", "5"]
    );
    let v2 = kubectl
        .ok(&[
            "get",
            "hpa",
            "web",
            "-o",
            "jsonpath={.apiVersion} {.spec.metrics[0].resource.target.averageUtilization}",
        ])
        .await;
    assert_eq!(v2, "autoscaling/v2 70");
    let v1 = kubectl
        .ok(&[
            "get",
            "horizontalpodautoscalers.v1.autoscaling",
            "web",
            "-o",
            "jsonpath={.apiVersion} {.spec.targetCPUUtilizationPercentage}",
        ])
        .await;
    assert_eq!(v1, "autoscaling/v1 70");
}

/// `kubectl logs`: the container's output the test wrote, `--tail` and `--timestamps`, the
/// kubelet's refusal for a container still waiting, and `kubectl logs -f` printing lines as
/// they are written until the container exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_reads_and_follows_a_pod_s_logs() {
    use fake_apiserver::LogStream;
    let Some((server, _http, kubectl)) =
        kubectl_in("kubectl_reads_and_follows_a_pod_s_logs", "prod").await
    else {
        return;
    };
    let status = |name: &str, state: serde_json::Value| {
        json!({"name": name, "ready": true, "restartCount": 0, "image": "nginx", "imageID": "",
               "containerID": format!("containerd://{name}"), "state": state})
    };
    server
        .create(
            "pods",
            &json!({
                "metadata": {"name": "web", "namespace": "prod"},
                "spec": {"nodeName": "node-1", "containers": [
                    {"name": "web", "image": "nginx"}, {"name": "init", "image": "busybox"}]},
                "status": {"containerStatuses": [
                    status("web", json!({"running": {}})),
                    status("init", json!({"waiting": {"reason": "PodInitializing"}}))]},
            }),
        )
        .unwrap();
    server
        .append_pod_log(
            "prod",
            "web",
            "web",
            LogStream::Stdout,
            "booting\nlistening\n",
        )
        .unwrap();
    assert_eq!(
        kubectl.ok(&["logs", "web", "-c", "web"]).await,
        "booting\nlistening\n"
    );
    let tail = kubectl
        .ok(&["logs", "web", "-c", "web", "--tail=1", "--timestamps"])
        .await;
    assert!(tail.ends_with("Z listening\n"), "{tail}");
    let waiting = kubectl.run(&["logs", "web", "-c", "init"]).await;
    assert!(!waiting.status.success());
    assert_eq!(
        String::from_utf8_lossy(&waiting.stderr).trim(),
        "Error from server (BadRequest): container \"init\" in pod \"web\" is waiting to \
         start: PodInitializing"
    );

    let follow = kubectl.run(&["logs", "-f", "web", "-c", "web"]);
    let write = async {
        // Once kubectl follows (its fourth log request), the container writes a line and
        // exits. (Were kubectl to ask after that, it would read the same lines at once.)
        let following = || {
            server
                .requests()
                .iter()
                .filter(|r| r.to_string() == "GET /api/v1/namespaces/prod/pods/web/log")
                .count()
                >= 4
        };
        while !following() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        server
            .append_pod_log("prod", "web", "web", LogStream::Stderr, "shutting down\n")
            .unwrap();
        let mut ended = server.get("pods", Some("prod"), "web").unwrap().to_value();
        ended["status"]["containerStatuses"][0]["state"] =
            json!({"terminated": {"exitCode": 0, "containerID": "containerd://web"}});
        server.update("pods", &ended).unwrap();
    };
    let (followed, ()) = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        tokio::join!(follow, write)
    })
    .await
    .expect("kubectl logs -f ends when the container exits");
    assert!(followed.status.success(), "{followed:?}");
    assert_eq!(
        String::from_utf8_lossy(&followed.stdout),
        "booting\nlistening\nshutting down\n"
    );
}

/// `kubectl exec` (client-go's WebSocket executor, `v5.channel.k8s.io`): the command's output,
/// its standard input piped in (`-i`), and its exit code as kubectl's own, from the test's
/// handler.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_execs_a_command_in_a_container() {
    use fake_apiserver::ExecOutput;
    let Some((server, _http, kubectl)) =
        kubectl_in("kubectl_execs_a_command_in_a_container", "prod").await
    else {
        return;
    };
    server
        .create(
            "pods",
            &json!({
                "metadata": {"name": "db", "namespace": "prod"},
                "spec": {"nodeName": "node-1", "containers": [{"name": "db", "image": "postgres"}]},
                "status": {"containerStatuses": [{"name": "db", "ready": true, "restartCount": 0,
                    "image": "postgres", "imageID": "", "state": {"running": {}}}]},
            }),
        )
        .unwrap();
    server.set_exec_handler(|request| match request.command.as_slice() {
        [cmd] if cmd == "cat" => ExecOutput::stdout(request.stdin.clone()),
        [cmd, ..] if cmd == "psql" => ExecOutput::stdout(" ?column? \n----------\n        1\n"),
        _ => ExecOutput {
            stderr: format!("{}: not found\n", request.command[0]).into_bytes(),
            exit_code: 127,
            ..ExecOutput::default()
        },
    });
    assert_eq!(
        kubectl
            .ok(&["exec", "db", "--", "psql", "-c", "select 1"])
            .await,
        " ?column? \n----------\n        1\n"
    );
    let missing = kubectl.run(&["exec", "db", "--", "pg_dump"]).await;
    assert_eq!(missing.status.code(), Some(127));
    assert_eq!(
        String::from_utf8_lossy(&missing.stderr),
        "pg_dump: not found\ncommand terminated with exit code 127\n"
    );
    let piped = kubectl
        .run_with_stdin(&["exec", "-i", "db", "--", "cat"], b"SELECT 1;\n")
        .await;
    assert!(piped.status.success(), "{piped:?}");
    assert_eq!(String::from_utf8_lossy(&piped.stdout), "SELECT 1;\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_meets_admission_webhooks() {
    use crate::support::webhook::{WebhookServer, allow, deny, patch};
    let Some((server, _http, kubectl)) =
        kubectl_in("kubectl_meets_admission_webhooks", "prod").await
    else {
        return;
    };
    let hooks = WebhookServer::start(|path, request| match path {
        "/label" => patch(
            request,
            json!([{"op": "add", "path": "/metadata/labels/team", "value": "core"}]),
        ),
        _ if request["object"]["spec"]["replicas"].as_i64() > Some(3) => {
            deny(request, "at most 3 replicas", 422)
        }
        _ => allow(request),
    })
    .await;
    let rule = |resources: &str| {
        json!([{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                "resources": [resources]}])
    };
    let configuration = |kind: &str, name: &str, path: &str| {
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
               "metadata": {"name": name},
               "webhooks": [{"name": format!("{name}.example.com"),
                   "clientConfig": {"url": hooks.url(path), "caBundle": hooks.ca_bundle()},
                   "rules": rule("deployments"), "sideEffects": "None",
                   "admissionReviewVersions": ["v1"]}]})
    };
    // Two documents in one file (kubectl splits them).
    let manifest = kubectl.manifest(
        "webhooks.json",
        &format!(
            "{}\n{}\n",
            configuration("MutatingWebhookConfiguration", "label", "/label"),
            configuration("ValidatingWebhookConfiguration", "limit", "/limit"),
        ),
    );
    kubectl
        .ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    kubectl
        .ok(&[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=2",
        ])
        .await;
    assert_eq!(
        kubectl
            .ok(&[
                "get",
                "deployment",
                "web",
                "-o",
                "jsonpath={.metadata.labels.team}"
            ])
            .await,
        "core"
    );
    // Through the object (a rule naming `deployments` does not take `deployments/scale`).
    kubectl
        .ok(&["scale", "deployment", "web", "--replicas=5"])
        .await;
    let refused = kubectl
        .run(&[
            "patch",
            "deployment",
            "web",
            "-p",
            r#"{"spec":{"replicas":6}}"#,
        ])
        .await;
    assert!(!refused.status.success());
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr),
        "Error from server: admission webhook \"limit.example.com\" denied the request: at most \
         3 replicas\n"
    );
    let _ = server;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_applies_a_list_with_client_side_validation() {
    let Some((_server, _http, kubectl)) =
        kubectl_in("kubectl_applies_a_list_with_client_side_validation", "prod").await
    else {
        return;
    };
    // A `kind: List` has no OpenAPI v3 document: kubectl validates it with the v2 one, which
    // it asks for as protobuf.
    let list = kubectl.manifest(
        "list.json",
        &json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
             "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                      "template": {"metadata": {"labels": {"app": "web"}},
                                   "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
             "data": {"a": "b"}},
        ]})
        .to_string(),
    );
    assert_eq!(
        kubectl.ok(&["apply", "-f", list.to_str().unwrap()]).await,
        "deployment.apps/web created\nconfigmap/settings created\n"
    );
    // What `kubectl get -o yaml` prints of several objects is a List too.
    let dumped = kubectl
        .ok(&["get", "deployment,configmap", "-o", "yaml"])
        .await;
    let again = kubectl.manifest("again.yaml", &dumped);
    let out = kubectl.ok(&["apply", "-f", again.to_str().unwrap()]).await;
    assert!(out.contains("deployment.apps/web configured"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_cannot_delete_the_immortal_namespaces() {
    let Some((_server, _http, kubectl)) =
        kubectl_in("kubectl_cannot_delete_the_immortal_namespaces", "default").await
    else {
        return;
    };
    for ns in ["default", "kube-system", "kube-public"] {
        let refused = kubectl.run(&["delete", "namespace", ns]).await;
        assert!(!refused.status.success());
        assert_eq!(
            String::from_utf8_lossy(&refused.stderr),
            format!(
                "Error from server (Forbidden): namespaces \"{ns}\" is forbidden: this namespace \
                 may not be deleted\n"
            )
        );
    }
    // Others go as usual.
    kubectl.ok(&["create", "namespace", "scratch"]).await;
    kubectl.ok(&["delete", "namespace", "scratch"]).await;
}
