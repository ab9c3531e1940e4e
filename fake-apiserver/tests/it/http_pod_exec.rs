//! HTTP front end: `pods/<name>/exec` through kube-client's WebSocket client (the `v5`
//! stream protocol): the command, its container and its standard input reach the test's
//! handler; its output comes back on the channels asked for and its exit code as the
//! kubelet's status; the registry's and the kubelet's refusals come before the upgrade.
#![cfg(feature = "http")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use fake_apiserver::{ExecOutput, ExecRequest};
use k8s_openapi::api::core::v1::Pod;
use kube_client::api::{Api, AttachParams};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::http_kube_client::kube;
use crate::support::http::{get, namespaces, send, start};

/// Bounds every wait on a session.
const GUARD: Duration = Duration::from_secs(10);

fn pod(node: Option<&str>) -> Value {
    let mut pod = json!({
        "metadata": {"name": "db", "namespace": "ns-0"},
        "spec": {"containers": [{"name": "db", "image": "postgres"},
                                {"name": "side", "image": "busybox"}]},
        "status": {"containerStatuses": [
            {"name": "db", "ready": true, "restartCount": 0, "image": "postgres", "imageID": "",
             "state": {"running": {}}},
            {"name": "side", "ready": false, "restartCount": 0, "image": "busybox",
             "imageID": "", "state": {"waiting": {"reason": "ContainerCreating"}}}]},
    });
    if let Some(node) = node {
        pod["spec"]["nodeName"] = json!(node);
    }
    pod
}

/// An exec session opened within the guard.
async fn open<const N: usize>(
    pods: &Api<Pod>,
    command: [&str; N],
    params: &AttachParams,
) -> kube_client::api::AttachedProcess {
    tokio::time::timeout(GUARD, pods.exec("db", command, params))
        .await
        .expect("the session opens within the guard")
        .unwrap()
}

/// Everything a session's output stream carries, to its end.
async fn read_all(stream: Option<impl tokio::io::AsyncRead + Unpin>) -> String {
    let mut text = String::new();
    stream.unwrap().read_to_string(&mut text).await.unwrap();
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_runs_the_handler_over_a_websocket() {
    let (server, http) = start().await;
    namespaces(&server, &["ns-0"]);
    server.create("pods", &pod(Some("node-1"))).unwrap();
    let seen: Arc<Mutex<Vec<ExecRequest>>> = Arc::default();
    let record = Arc::clone(&seen);
    server.set_exec_handler(move |request| {
        record.lock().unwrap().push(request.clone());
        match request.command.as_slice() {
            [cat] if cat == "cat" => ExecOutput::stdout(request.stdin.clone()),
            [sh, _, script] if sh == "sh" && script == "exit 3" => ExecOutput {
                stderr: b"failing\n".to_vec(),
                exit_code: 3,
                ..ExecOutput::default()
            },
            _ => ExecOutput::stdout(format!("ran {:?}\n", request.command)),
        }
    });
    let pods: Api<Pod> = Api::default_namespaced(kube(&http).await);

    // Output and success.
    let mut attached = open(
        &pods,
        ["psql", "-c", "select 1"],
        &AttachParams::default().container("db").stderr(false),
    )
    .await;
    let stdout = read_all(attached.stdout()).await;
    let status = attached.take_status().unwrap().await.unwrap();
    assert_eq!(stdout, "ran [\"psql\", \"-c\", \"select 1\"]\n");
    assert_eq!(status.status.as_deref(), Some("Success"));
    let request = seen.lock().unwrap().pop().unwrap();
    assert_eq!(
        (
            request.namespace.as_str(),
            request.pod.as_str(),
            request.container.as_str()
        ),
        ("ns-0", "db", "db")
    );

    // Standard input, closed by the client (v5's close signal), reaches the command.
    let mut attached = open(
        &pods,
        ["cat"],
        &AttachParams::default()
            .container("db")
            .stdin(true)
            .stderr(false),
    )
    .await;
    let mut stdin = attached.stdin().unwrap();
    stdin.write_all(b"hello through stdin\n").await.unwrap();
    stdin.shutdown().await.unwrap();
    drop(stdin);
    let echoed = read_all(attached.stdout()).await;
    assert_eq!(echoed, "hello through stdin\n");
    assert_eq!(
        attached
            .take_status()
            .unwrap()
            .await
            .unwrap()
            .status
            .as_deref(),
        Some("Success")
    );

    // A non-zero exit: standard error, and the kubelet's status with the code.
    let mut attached = open(
        &pods,
        ["sh", "-c", "exit 3"],
        &AttachParams::default().container("db"),
    )
    .await;
    let stderr = read_all(attached.stderr()).await;
    let status = attached.take_status().unwrap().await.unwrap();
    assert_eq!(stderr, "failing\n");
    assert_eq!(status.status.as_deref(), Some("Failure"));
    assert_eq!(status.reason.as_deref(), Some("NonZeroExitCode"));
    assert_eq!(
        status.message.as_deref(),
        Some(
            "command terminated with non-zero exit code: error executing command [sh -c \
             exit 3], exit code 3"
        )
    );
    let causes = status.details.unwrap().causes.unwrap();
    assert_eq!(causes[0].reason.as_deref(), Some("ExitCode"));
    assert_eq!(causes[0].message.as_deref(), Some("3"));

    // Discovery lists the subresource.
    let core = get(&http, "/api/v1").await;
    assert!(
        core.body["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "pods/exec" && r["kind"] == "PodExecOptions"),
        "{}",
        core.body
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_is_refused_before_the_upgrade_as_upstream_refuses_it() {
    let (server, http) = start().await;
    namespaces(&server, &["ns-0"]);
    server.create("pods", &pod(None)).unwrap();
    let path = |query: &str| format!("/api/v1/namespaces/ns-0/pods/db/exec?{query}");
    let refused = |answer: crate::support::http::Answer| {
        (
            answer.status.as_u16(),
            answer.body["message"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        )
    };
    // Checked in upstream's order: the container, the node, the options, the container's
    // state, then whether the request is an upgrade at all.
    let cases = [
        (
            "command=ls&stdout=1",
            "a container name must be specified for pod db, choose one of: [db side]",
        ),
        (
            "command=ls&stdout=1&container=db",
            "pod db does not have a host assigned",
        ),
    ];
    for (query, message) in cases {
        let answer = send(&http, reqwest::Method::POST, &path(query), None).await;
        assert_eq!(refused(answer), (400, message.to_owned()), "{query}");
    }
    let mut on_node = server.get("pods", Some("ns-0"), "db").unwrap().to_value();
    on_node["spec"]["nodeName"] = json!("node-1");
    server.update("pods", &on_node).unwrap();
    for (query, message) in [
        (
            "container=db&stdout=1",
            "you must specify at least one command for the container",
        ),
        (
            "container=db&command=ls",
            "you must specify at least 1 of stdin, stdout, stderr",
        ),
        (
            "container=side&command=ls&stdout=1",
            "container not found (\"side\")",
        ),
        (
            "container=db&command=ls&stdout=1",
            "Upgrade request required",
        ),
    ] {
        let answer = send(&http, reqwest::Method::POST, &path(query), None).await;
        assert_eq!(refused(answer), (400, message.to_owned()), "{query}");
    }
    // No handler set: the command cannot run, and the server says why.
    let pods: Api<Pod> = Api::default_namespaced(kube(&http).await);
    let mut attached = open(&pods, ["ls"], &AttachParams::default().container("db")).await;
    let status = attached.take_status().unwrap().await.unwrap();
    assert_eq!(status.reason.as_deref(), Some("InternalError"));
    assert!(
        status
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("no exec handler is set"),
        "{status:?}"
    );
}

/// The `v4.channel.k8s.io` protocol, spoken by hand (tokio-tungstenite): the server picks it
/// when the client offers no v5, sends the output and the result as binary messages on their
/// channels, then closes normally; a client offering neither protocol is a 400 before the
/// upgrade.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_v4_protocol_and_unknown_protocols() {
    use futures::StreamExt;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
    use tokio_tungstenite::tungstenite::{Error, Message};
    let (server, http) = start().await;
    namespaces(&server, &["ns-0"]);
    server.create("pods", &pod(Some("node-1"))).unwrap();
    server.set_exec_handler(|request| ExecOutput {
        stdout: b"listed\n".to_vec(),
        stderr: b"warned\n".to_vec(),
        exit_code: if request.command == ["ls"] { 0 } else { 2 },
    });
    let url = |command: &str| {
        format!(
            "{}/api/v1/namespaces/ns-0/pods/db/exec?container=db&command={command}&stdout=1&stderr=1",
            http.url().replacen("http", "ws", 1)
        )
    };
    let request = |command: &str, protocol: &str| {
        let mut request = url(command).into_client_request().unwrap();
        request
            .headers_mut()
            .insert("Sec-WebSocket-Protocol", protocol.parse().unwrap());
        request
    };
    let (mut socket, answer) = tokio::time::timeout(
        GUARD,
        tokio_tungstenite::connect_async(request("ls", "v4.channel.k8s.io")),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(
        answer.headers()["sec-websocket-protocol"],
        "v4.channel.k8s.io"
    );
    let mut messages = Vec::new();
    while let Some(message) = tokio::time::timeout(GUARD, socket.next()).await.unwrap() {
        messages.push(message.unwrap());
    }
    assert_eq!(
        messages[..3],
        [
            Message::Binary(b"\x01listed\n".to_vec().into()),
            Message::Binary(b"\x02warned\n".to_vec().into()),
            Message::Binary(
                format!("\x03{}", json!({"metadata": {}, "status": "Success"}))
                    .into_bytes()
                    .into()
            ),
        ]
    );
    match &messages[3] {
        Message::Close(Some(frame)) => assert_eq!(frame.code, CloseCode::Normal),
        other => panic!("not a normal close: {other:?}"),
    }

    // Only the old `channel.k8s.io` (text, no status on the error channel): refused.
    let refused = tokio_tungstenite::connect_async(request("ls", "channel.k8s.io")).await;
    match refused {
        Err(Error::Http(response)) => {
            assert_eq!(response.status(), 400);
            let body = String::from_utf8_lossy(response.body().as_deref().unwrap_or_default())
                .into_owned();
            assert!(
                body.contains("none of the requested stream protocols"),
                "{body}"
            );
        }
        other => panic!("not refused: {other:?}"),
    }
}

/// A handler that panics fails the command (a 500 on the error channel), not the server:
/// the next exec runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_handler_fails_the_command_only() {
    let (server, http) = start().await;
    namespaces(&server, &["ns-0"]);
    server.create("pods", &pod(Some("node-1"))).unwrap();
    server.set_exec_handler(|request| {
        assert!(request.command != ["boom"], "the handler gave up");
        ExecOutput::stdout("fine\n")
    });
    let pods: Api<Pod> = Api::default_namespaced(kube(&http).await);
    let params = AttachParams::default().container("db");
    let mut failed = open(&pods, ["boom"], &params).await;
    let status = failed.take_status().unwrap().await.unwrap();
    assert_eq!(status.reason.as_deref(), Some("InternalError"));
    assert!(
        status
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("the exec handler panicked"),
        "{status:?}"
    );
    let mut next = open(&pods, ["ls"], &params).await;
    let out = read_all(next.stdout()).await;
    assert_eq!(out, "fine\n");
}
