//! HTTP front end: `pods/<name>/log`, read through kube-client as a cluster answers it: what
//! the test wrote as the container's output, by container, with the options upstream's
//! kubelet reads (tail, timestamps, since, limit, stream, previous), `follow` streaming lines
//! as they are written until the container's run ends, and the registry's and kubelet's
//! refusals (options, containers, a container with no log yet).
#![cfg(feature = "http")]

use std::time::Duration;

use fake_apiserver::LogStream;
use futures::{AsyncBufReadExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube_client::api::{Api, LogParams};
use serde_json::{Value, json};

use crate::http_kube_client::kube;
use crate::support::http::{get, namespaces, post, start};

/// Bounds every wait on the follow stream.
const GUARD: Duration = Duration::from_secs(10);

fn running(name: &str) -> Value {
    json!({"name": name, "ready": true, "restartCount": 0, "image": "nginx", "imageID": "",
           "containerID": format!("containerd://{name}"), "state": {"running": {}}})
}

fn pod(node: Option<&str>, statuses: Value) -> Value {
    let mut pod = json!({
        "metadata": {"name": "web", "namespace": "ns-0"},
        "spec": {"containers": [{"name": "web", "image": "nginx"},
                                {"name": "side", "image": "busybox"}]},
        "status": {"containerStatuses": statuses},
    });
    if let Some(node) = node {
        pod["spec"]["nodeName"] = json!(node);
    }
    pod
}

fn params(container: &str) -> LogParams {
    LogParams {
        container: Some(container.into()),
        ..LogParams::default()
    }
}

fn api_error(e: kube_client::Error) -> (u16, String) {
    match e {
        kube_client::Error::Api(s) => (s.code, s.message),
        other => panic!("not an API error: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_read_as_the_kubelet_serves_them() {
    let (server, http) = start().await;
    namespaces(&server, &["ns-0"]);
    let waiting = json!({"name": "side", "ready": false, "restartCount": 0, "image": "busybox",
                         "imageID": "", "state": {"waiting": {"reason": "ContainerCreating"}}});
    server
        .create(
            "pods",
            &pod(Some("node-1"), json!([running("web"), waiting])),
        )
        .unwrap();
    server
        .append_pod_log("ns-0", "web", "web", LogStream::Stdout, "starting\nready\n")
        .unwrap();
    server
        .append_pod_log("ns-0", "web", "web", LogStream::Stderr, "warning: slow\n")
        .unwrap();
    let pods: Api<Pod> = Api::default_namespaced(kube(&http).await);

    assert_eq!(
        pods.logs("web", &params("web")).await.unwrap(),
        "starting\nready\nwarning: slow\n"
    );
    let tail = LogParams {
        tail_lines: Some(1),
        timestamps: true,
        ..params("web")
    };
    let last = pods.logs("web", &tail).await.unwrap();
    let (time, line) = last.split_once(' ').unwrap();
    assert_eq!(line, "warning: slow\n");
    // RFC 3339 with nine fractional digits, as the kubelet writes it.
    assert_eq!(time.len(), "2026-01-01T00:00:00.000000000Z".len(), "{time}");
    let limited = LogParams {
        limit_bytes: Some(5),
        since_seconds: Some(3600),
        ..params("web")
    };
    assert_eq!(pods.logs("web", &limited).await.unwrap(), "start");
    let stderr = get(
        &http,
        "/api/v1/namespaces/ns-0/pods/web/log?container=web&stream=Stderr",
    )
    .await;
    assert_eq!(stderr.status, 200);
    assert_eq!(stderr.header("content-type"), Some("text/plain"));

    // The registry's and the kubelet's refusals, as the API server relays them.
    for (lp, code, message) in [
        (
            LogParams::default(),
            400,
            "a container name must be specified for pod web, choose one of: [web side]",
        ),
        (params("db"), 400, "container db is not valid for pod web"),
        (
            params("side"),
            400,
            "container \"side\" in pod \"web\" is waiting to start: ContainerCreating",
        ),
        (
            LogParams {
                previous: true,
                ..params("web")
            },
            400,
            "previous terminated container \"web\" in pod \"web\" not found",
        ),
        (
            LogParams {
                tail_lines: Some(-1),
                ..params("web")
            },
            422,
            "PodLogOptions \"web\" is invalid: tailLines: Invalid value: -1: must be greater \
             than or equal to 0",
        ),
    ] {
        let e = api_error(pods.logs("web", &lp).await.unwrap_err());
        assert_eq!(e, (code, message.to_owned()));
    }
    assert_eq!(
        api_error(pods.logs("db", &params("web")).await.unwrap_err()).0,
        404
    );
    let bad = get(&http, "/api/v1/namespaces/ns-0/pods/web/log?tailLines=ten").await;
    assert_eq!(bad.status, 400, "{}", bad.body);

    // A restart: the old run is `previous` once the status reports it.
    server.restart_pod_log("ns-0", "web", "web").unwrap();
    server
        .append_pod_log("ns-0", "web", "web", LogStream::Stdout, "again\n")
        .unwrap();
    let mut restarted = running("web");
    restarted["restartCount"] = json!(1);
    restarted["lastState"] =
        json!({"terminated": {"exitCode": 1, "containerID": "containerd://old"}});
    let mut stored = server.get("pods", Some("ns-0"), "web").unwrap().to_value();
    stored["status"]["containerStatuses"][0] = restarted;
    server.update("pods", &stored).unwrap();
    assert_eq!(pods.logs("web", &params("web")).await.unwrap(), "again\n");
    let previous = LogParams {
        previous: true,
        ..params("web")
    };
    assert_eq!(
        pods.logs("web", &previous).await.unwrap(),
        "starting\nready\nwarning: slow\n"
    );

    // Discovery lists the subresource.
    let core = get(&http, "/api/v1").await;
    assert!(
        core.body["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "pods/log" && r["verbs"] == json!(["get"])),
        "{}",
        core.body
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_on_no_node_has_an_empty_log_and_the_admin_api_writes_logs() {
    let (server, http) = start().await;
    namespaces(&server, &["ns-0"]);
    server
        .create("pods", &pod(None, json!([running("web"), running("side")])))
        .unwrap();
    let written = post(
        &http,
        "/_fake/pod-logs",
        &json!({"namespace": "ns-0", "pod": "web", "container": "side", "stream": "stderr",
                "text": "hello\n"}),
    )
    .await;
    assert_eq!(written.status, 200, "{}", written.body);
    let pods: Api<Pod> = Api::default_namespaced(kube(&http).await);
    // Upstream's `LogLocation`: no node, no kubelet to ask, an empty answer.
    assert_eq!(pods.logs("web", &params("side")).await.unwrap(), "");
    let mut on_node = server.get("pods", Some("ns-0"), "web").unwrap().to_value();
    on_node["spec"]["nodeName"] = json!("node-1");
    server.update("pods", &on_node).unwrap();
    assert_eq!(pods.logs("web", &params("side")).await.unwrap(), "hello\n");
    let refused = post(
        &http,
        "/_fake/pod-logs",
        &json!({"namespace": "ns-0", "pod": "web", "container": "db", "text": "x"}),
    )
    .await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    let missing = post(
        &http,
        "/_fake/pod-logs",
        &json!({"namespace": "ns-0", "pod": "gone", "container": "web", "text": "x"}),
    )
    .await;
    assert_eq!(missing.status, 404, "{}", missing.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_streams_lines_until_the_container_ends() {
    let (server, http) = start().await;
    namespaces(&server, &["ns-0"]);
    server
        .create("pods", &pod(Some("node-1"), json!([running("web")])))
        .unwrap();
    server
        .append_pod_log("ns-0", "web", "web", LogStream::Stdout, "one\n")
        .unwrap();
    let pods: Api<Pod> = Api::default_namespaced(kube(&http).await);
    let follow = LogParams {
        follow: true,
        ..params("web")
    };
    let mut lines = pods.log_stream("web", &follow).await.unwrap().lines();
    let mut next = async || {
        tokio::time::timeout(GUARD, lines.next())
            .await
            .expect("a line within the guard")
    };
    assert_eq!(next().await.unwrap().unwrap(), "one");
    // A line is sent once finished.
    server
        .append_pod_log("ns-0", "web", "web", LogStream::Stdout, "tw")
        .unwrap();
    server
        .append_pod_log("ns-0", "web", "web", LogStream::Stdout, "o\nthree\n")
        .unwrap();
    assert_eq!(next().await.unwrap().unwrap(), "two");
    assert_eq!(next().await.unwrap().unwrap(), "three");
    // The container exits: what it wrote last is sent, then the stream ends.
    server
        .append_pod_log("ns-0", "web", "web", LogStream::Stderr, "bye\n")
        .unwrap();
    let mut ended = server.get("pods", Some("ns-0"), "web").unwrap().to_value();
    ended["status"]["containerStatuses"][0]["state"] =
        json!({"terminated": {"exitCode": 0, "containerID": "containerd://web"}});
    server.update("pods", &ended).unwrap();
    assert_eq!(next().await.unwrap().unwrap(), "bye");
    assert!(next().await.is_none(), "the stream ends with the container");
}
