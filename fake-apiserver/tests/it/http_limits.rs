//! HTTP front end: what keeps the server safe from its clients. Connection limits (header-read
//! and idle timeouts, the connection cap, a bounded shutdown), requests from web pages
//! (foreign `Origin`, DNS-rebinding `Host`), bearer tokens in any case, and inputs that
//! used to panic or wrap (huge `timeoutSeconds`, the last resourceVersion, resource names).
//!
//! Timeouts are real time here (sockets): the settings are short (hundreds of
//! milliseconds), assertions allow generous slack, and every wait is bounded.
#![cfg(feature = "http")]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use fake_apiserver::http::{FakeHttpServer, HttpConfig};
use fake_apiserver::{FakeApiServer, MAX_RESOURCE_VERSION};
use reqwest::Method;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::GUARD;
use crate::support::http::{
    Line, WatchLines, client, get, namespaces, pod, post, send, stalled_watch, start,
};

/// A server with these connection limits.
async fn start_limited(config: HttpConfig) -> (FakeApiServer, FakeHttpServer) {
    let server = FakeApiServer::new();
    let http = FakeHttpServer::start(server.clone(), config).await.unwrap();
    (server, http)
}

/// Reads until the server closes the connection (end of stream or reset); returns when that
/// was, failing the test if it takes longer than `within`.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> Instant {
    let mut buf = [0u8; 4096];
    tokio::time::timeout(within, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .expect("the server did not close the connection in time");
    Instant::now()
}

/// Reads one complete response with a `Content-Length` body; returns its head.
async fn read_response(stream: &mut TcpStream) -> String {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    tokio::time::timeout(GUARD, async {
        loop {
            if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map_or(0, |v| v.trim().parse().unwrap());
                if data.len() >= end + 4 + length {
                    return head;
                }
            }
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed inside a response");
            data.extend_from_slice(&buf[..n]);
        }
    })
    .await
    .expect("no complete response in time")
}

/// A raw request for `path` with these extra header lines, answered by its status line.
async fn raw_status(addr: SocketAddr, path: &str, headers: &str) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\n{headers}Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let head = read_response(&mut stream).await;
    head.lines().next().unwrap_or_default().to_owned()
}

// ----- Connections ------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_head_sent_too_slowly_is_cut_off_after_the_header_read_timeout() {
    let timeout = Duration::from_millis(300);
    let (_server, http) = start_limited(HttpConfig {
        header_read_timeout: timeout,
        idle_timeout: Duration::from_secs(60),
        ..HttpConfig::default()
    })
    .await;
    // Before any connection exists: no timeout can have started earlier.
    let started = Instant::now();
    // Half a request line, then nothing (slowloris).
    let mut half = TcpStream::connect(http.addr()).await.unwrap();
    half.write_all(b"GET /api/v1/pods HT").await.unwrap();
    // Nothing at all after connecting.
    let mut silent = TcpStream::connect(http.addr()).await.unwrap();
    // A complete request, then half of the next one: the timeout counts from its first byte
    // (not the 60 s idle timeout).
    let mut second = TcpStream::connect(http.addr()).await.unwrap();
    let full = format!("GET /version HTTP/1.1\r\nHost: {}\r\n\r\n", http.addr());
    second.write_all(full.as_bytes()).await.unwrap();
    assert!(read_response(&mut second).await.starts_with("http/1.1 200"));
    second
        .write_all(b"GET /version HTTP/1.1\r\nHo")
        .await
        .unwrap();
    for (name, stream) in [
        ("half a request line", &mut half),
        ("nothing", &mut silent),
        ("half of a second request", &mut second),
    ] {
        let took = closed_within(stream, GUARD).await - started;
        eprintln!("{name}: closed after {took:?}");
        assert!(took >= timeout / 2, "{name}: closed after {took:?}");
        assert!(
            took < Duration::from_secs(20),
            "{name}: closed after {took:?}"
        );
    }
    // The server still serves.
    assert_eq!(get(&http, "/version").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_is_closed_but_a_quiet_watch_is_not() {
    let timeout = Duration::from_millis(300);
    let (server, http) = start_limited(HttpConfig {
        header_read_timeout: Duration::from_secs(60),
        idle_timeout: timeout,
        ..HttpConfig::default()
    })
    .await;
    let mut idle = TcpStream::connect(http.addr()).await.unwrap();
    let full = format!("GET /version HTTP/1.1\r\nHost: {}\r\n\r\n", http.addr());
    // Before the request: the idle time cannot have started earlier.
    let sent = Instant::now();
    idle.write_all(full.as_bytes()).await.unwrap();
    assert!(read_response(&mut idle).await.starts_with("http/1.1 200"));
    let took = closed_within(&mut idle, GUARD).await - sent;
    assert!(took >= timeout / 2, "closed after {took:?}");
    assert!(took < Duration::from_secs(20), "closed after {took:?}");
    // A watch is a request in flight for as long as it streams: quiet for well over the
    // idle timeout, it still delivers.
    let rv = server.resource_version();
    let mut watch =
        WatchLines::open(&http, &format!("/api/v1/pods?watch=1&resourceVersion={rv}")).await;
    tokio::time::timeout(GUARD, server.wait_for_open_watches("pods", 1))
        .await
        .unwrap();
    tokio::time::sleep(timeout * 4).await;
    server.create("pods", &pod("a", "late", json!({}))).unwrap();
    assert_eq!(watch.show_next().await, "ADDED late");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_are_closed_at_once_until_others_end() {
    let (_server, http) = start_limited(HttpConfig {
        max_connections: 3,
        header_read_timeout: Duration::from_secs(60),
        idle_timeout: Duration::from_secs(60),
        ..HttpConfig::default()
    })
    .await;
    let mut idle = Vec::new();
    for _ in 0..3 {
        idle.push(TcpStream::connect(http.addr()).await.unwrap());
    }
    // Let the server accept all three before the fourth arrives.
    let mut first = TcpStream::connect(http.addr()).await.unwrap();
    let full = format!("GET /version HTTP/1.1\r\nHost: {}\r\n\r\n", http.addr());
    let _ = first.write_all(full.as_bytes()).await;
    let sent = Instant::now();
    let took = closed_within(&mut first, Duration::from_secs(10)).await - sent;
    eprintln!("the connection over the cap was closed after {took:?}");
    // Requests over the cap fail fast instead of hanging.
    let refused = tokio::time::timeout(
        GUARD,
        client().get(format!("{}/version", http.url())).send(),
    )
    .await
    .expect("a request over the cap hung");
    assert!(refused.is_err(), "{refused:?}");
    // Once the idle connections are gone, requests are served again.
    drop(idle);
    tokio::time::timeout(GUARD, async {
        loop {
            match client().get(format!("{}/version", http.url())).send().await {
                Ok(r) if r.status() == 200 => return,
                _ => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    })
    .await
    .expect("requests were not served again after the idle connections closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_is_bounded_with_stalled_readers_and_half_sent_requests() {
    let (server, http) = start().await;
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(3);
    for i in 0..2000 {
        server
            .create(
                "pods",
                &fake_apiserver::seed::pod("a", &format!("p{i:04}"), &mut rng),
            )
            .unwrap();
    }
    // A watch (12 MB of initial events) whose reader never reads: the server's writes block.
    let mut stalled = stalled_watch(http.addr()).await;
    tokio::time::timeout(GUARD, server.wait_for_open_watches("pods", 1))
        .await
        .unwrap();
    let mut half = TcpStream::connect(http.addr()).await.unwrap();
    half.write_all(b"POST /api/v1/namespaces/a/pods HTTP/1.1\r\nContent-Le")
        .await
        .unwrap();
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(10), http.shutdown())
        .await
        .expect("shutdown hung")
        .unwrap();
    eprintln!("shutdown took {:?}", started.elapsed());
    closed_within(&mut half, GUARD).await;
    closed_within(&mut stalled, GUARD).await;
}

// ----- Requests from web pages ------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_from_other_origins_and_hosts_are_refused() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let url = http.url();
    // A page's cross-site "simple" request: text/plain, no preflight, foreign Origin.
    let churn = client()
        .post(format!("{url}/_fake/churn"))
        .header("Origin", "http://evil.example")
        .header("Content-Type", "text/plain")
        .body(r#"{"ratePerSecond": 1000}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(churn.status(), 403);
    let body: Value = churn.json().await.unwrap();
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["reason"], "Forbidden");
    assert!(
        body["message"].as_str().unwrap().contains("cross-origin"),
        "{body}"
    );
    assert_eq!(get(&http, "/_fake/churn").await.body["running"], false);
    let create = |origin: &str, name: &str| {
        client()
            .post(format!("{url}/api/v1/namespaces/a/configmaps"))
            .header("Origin", origin)
            .json(&json!({"metadata": {"name": name}}))
            .send()
    };
    for origin in [
        "http://evil.example",
        "null",
        "https://127.0.0.1",
        "http://localhost:1",
    ] {
        assert_eq!(
            create(origin, "evil").await.unwrap().status(),
            403,
            "{origin}"
        );
    }
    assert!(server.objects("configmaps", Some("a")).unwrap().is_empty());
    // The server's own origin, in each loopback spelling, is served.
    let port = http.addr().port();
    for (i, origin) in [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
    ]
    .iter()
    .enumerate()
    {
        let answer = create(origin, &format!("own-{i}")).await.unwrap();
        assert_eq!(answer.status(), 201, "{origin}");
    }
    // DNS rebinding: a page's own name resolved to 127.0.0.1 carries that name as Host.
    let addr = http.addr();
    let refused = raw_status(
        addr,
        "/api/v1/pods",
        &format!("Host: evil.example:{port}\r\n"),
    )
    .await;
    assert!(refused.starts_with("http/1.1 403"), "{refused}");
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("LOCALHOST:{port}"),
    ] {
        let ok = raw_status(addr, "/api/v1/pods", &format!("Host: {host}\r\n")).await;
        assert!(ok.starts_with("http/1.1 200"), "{host}: {ok}");
    }
    // Clients send no Origin and the kubeconfig's host: served, as every other test shows.
    assert_eq!(get(&http, "/api/v1/pods").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bearer_scheme_is_case_insensitive() {
    let server = FakeApiServer::new();
    let http = FakeHttpServer::start(
        server,
        HttpConfig {
            token: Some("t0ken".into()),
            ..HttpConfig::default()
        },
    )
    .await
    .unwrap();
    let url = format!("{}/api/v1/pods", http.url());
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        let answer = client()
            .get(&url)
            .header("Authorization", format!("{scheme} t0ken"))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "{scheme}");
    }
    for value in ["bearer t0ke", "Basic t0ken", "bearert0ken"] {
        let answer = client()
            .get(&url)
            .header("Authorization", value)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 401, "{value}");
    }
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubeconfig_with_a_token_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt as _;
    let server = FakeApiServer::new();
    let http = FakeHttpServer::start(
        server,
        HttpConfig {
            token: Some("s3cret".into()),
            ..HttpConfig::default()
        },
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    http.write_kubeconfig(&path, None).unwrap();
    assert_eq!(mode(&path), 0o600);
    // Overwriting a world-readable file makes it private too.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    http.write_kubeconfig(&path, Some("prod")).unwrap();
    assert_eq!(mode(&path), 0o600);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("token: \"s3cret\""), "{text}");
    assert!(text.contains("namespace: \"prod\""), "{text}");
}

// ----- Inputs that used to panic or wrap ---------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_timeout_seconds_gets_an_answer() {
    let (server, http) = start().await;
    // A huge bookmark interval does not overflow either.
    let interval = send(
        &http,
        Method::PUT,
        "/_fake/bookmark-interval",
        Some(("application/json", &json!({"seconds": 1e15}))),
    )
    .await;
    assert_eq!(interval.status, 200, "{}", interval.body);
    for seconds in [i64::MAX, i64::MAX - 1, 4_000_000_000_000_000_000] {
        let rv = server.resource_version();
        let mut w = WatchLines::open(
            &http,
            &format!(
                "/api/v1/pods?watch=1&resourceVersion={rv}&allowWatchBookmarks=true&\
                 timeoutSeconds={seconds}"
            ),
        )
        .await;
        assert_eq!(w.status, 200, "{seconds}");
        let name = format!("p{}", seconds % 1000);
        server.create("pods", &pod("a", &name, json!({}))).unwrap();
        assert_eq!(w.show_next().await, format!("ADDED {name}"), "{seconds}");
    }
    // Negative: like the real server, whose deadline is then already past, the watch ends
    // at once.
    for seconds in ["-1", "-9223372036854775808"] {
        let mut w = WatchLines::open(
            &http,
            &format!("/api/v1/pods?watch=1&timeoutSeconds={seconds}"),
        )
        .await;
        assert_eq!(w.status, 200, "{seconds}");
        assert!(matches!(w.next().await, Line::End), "{seconds}");
    }
    // Not a 64-bit integer: the server's 400 for a malformed parameter.
    let too_big = get(
        &http,
        "/api/v1/pods?watch=1&timeoutSeconds=9223372036854775808",
    )
    .await;
    assert_eq!(too_big.status, 400, "{}", too_big.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_versions_refuse_to_wrap() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let path = "/_fake/resource-version";
    let beyond = post(&http, path, &json!({"next": MAX_RESOURCE_VERSION + 1})).await;
    assert_eq!(beyond.status, 400, "{}", beyond.body);
    let overflow = post(&http, path, &json!({"advanceBy": u64::MAX})).await;
    assert_eq!(overflow.status, 400, "{}", overflow.body);
    assert!(
        overflow.body["message"]
            .as_str()
            .unwrap()
            .contains("no room"),
        "{}",
        overflow.body
    );
    let last = post(&http, path, &json!({"next": MAX_RESOURCE_VERSION})).await;
    assert_eq!(last.status, 200, "{}", last.body);
    let cm = |name: &str| json!({"metadata": {"name": name}});
    let last = post(&http, "/api/v1/namespaces/a/configmaps", &cm("last")).await;
    assert_eq!(last.status, 201, "{}", last.body);
    assert_eq!(
        last.body["metadata"]["resourceVersion"],
        MAX_RESOURCE_VERSION.to_string()
    );
    let next = post(&http, "/api/v1/namespaces/a/configmaps", &cm("next")).await;
    assert_eq!(next.status, 500, "{}", next.body);
    assert_eq!(next.body["reason"], "InternalError");
    assert!(
        next.body["message"]
            .as_str()
            .unwrap()
            .contains("resourceVersion exhausted"),
        "{}",
        next.body
    );
    let list = get(&http, "/api/v1/namespaces/a/configmaps").await;
    assert_eq!(list.body["items"].as_array().unwrap().len(), 1);
    assert_eq!(
        list.body["metadata"]["resourceVersion"],
        MAX_RESOURCE_VERSION.to_string()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registered_resource_names_follow_the_real_grammars() {
    let (server, http) = start().await;
    let before = server.resources().len();
    for (body, field) in [
        (
            json!({"group": "../x", "version": "v1", "plural": "widgets", "kind": "Widget"}),
            "spec.group",
        ),
        (
            json!({"group": "example.com", "version": "v1", "plural": "a/b", "kind": "Widget"}),
            "spec.names.plural",
        ),
        (
            json!({"group": "example.com", "version": "V1", "plural": "widgets", "kind": "Widget"}),
            "spec.version",
        ),
        (
            json!({"group": "example.com", "version": "v1", "plural": "widgets", "kind": "Wid/get"}),
            "spec.names.kind",
        ),
        (
            json!({"group": "example.com", "version": "v1", "plural": "widgets", "kind": "Widget",
                   "shortNames": ["w w"]}),
            "spec.names.shortNames",
        ),
    ] {
        let answer = post(&http, "/_fake/resources", &body).await;
        assert_eq!(answer.status, 422, "{body}: {}", answer.body);
        assert_eq!(answer.body["reason"], "Invalid");
        let causes = answer.body["details"]["causes"].as_array().unwrap();
        assert!(
            causes.iter().any(|c| c["field"] == field),
            "{field}: {}",
            answer.body
        );
    }
    // A CRD with a bad version name is refused the same way.
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "gizmos", "kind": "Gizmo"},
            "scope": "Namespaced",
            "versions": [{"name": "V1!", "served": true, "storage": true}],
        },
    });
    let answer = post(
        &http,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    )
    .await;
    assert_eq!(answer.status, 422, "{}", answer.body);
    assert_eq!(server.resources().len(), before);
    let ok = post(
        &http,
        "/_fake/resources",
        &json!({"group": "example.com", "version": "v1alpha1", "plural": "widgets", "kind": "Widget"}),
    )
    .await;
    assert_eq!(ok.status, 201, "{}", ok.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_history_byte_bound_over_the_admin_api() {
    let (server, http) = start().await;
    let put = send(
        &http,
        Method::PUT,
        "/_fake/history",
        Some(("application/json", &json!({"maxBytes": 10_000}))),
    )
    .await;
    assert_eq!(put.status, 200, "{}", put.body);
    let mut last = 0;
    for i in 0..5 {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": format!("c{i}"), "namespace": "a"},
                        "data": {"blob": "x".repeat(4_000)}});
        last = server.create("configmaps", &cm).unwrap().bytes().len();
    }
    let state = get(&http, "/_fake/state").await;
    let bytes = state.body["historyBytes"].as_u64().unwrap();
    assert!(bytes <= 10_000, "{bytes}");
    assert!(bytes >= last as u64, "{bytes}");
    assert_eq!(bytes, server.history_bytes() as u64);
}

/// Namespace `ns-0` with pod `db` on a node, its one container `db` running: ready to exec.
fn running_db_pod(server: &FakeApiServer) {
    namespaces(server, &["ns-0"]);
    server
        .create(
            "pods",
            &json!({"metadata": {"name": "db", "namespace": "ns-0"},
                    "spec": {"nodeName": "n", "containers": [{"name": "db", "image": "x"}]},
                    "status": {"containerStatuses": [{"name": "db", "ready": true,
                        "restartCount": 0, "image": "x", "imageID": "",
                        "state": {"running": {}}}]}}),
        )
        .unwrap();
}

/// An exec session whose client never closes its input ends with `exec_timeout` (real time):
/// the server closes the socket, the command never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_session_that_never_ends_its_input_is_closed_after_the_exec_timeout() {
    use k8s_openapi::api::core::v1::Pod;
    use kube_client::api::{Api, AttachParams};
    let timeout = Duration::from_millis(300);
    let (server, http) = start_limited(HttpConfig {
        exec_timeout: timeout,
        ..HttpConfig::default()
    })
    .await;
    running_db_pod(&server);
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = std::sync::Arc::clone(&ran);
    server.set_exec_handler(move |_| {
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
        fake_apiserver::ExecOutput::default()
    });
    let pods: Api<Pod> = Api::default_namespaced(crate::http_kube_client::kube(&http).await);
    let started = Instant::now();
    let mut attached = tokio::time::timeout(
        GUARD,
        pods.exec("db", ["cat"], &AttachParams::default().stdin(true)),
    )
    .await
    .unwrap()
    .unwrap();
    let _stdin = attached.stdin().unwrap();
    let status = tokio::time::timeout(GUARD, attached.take_status().unwrap())
        .await
        .expect("the server closes the session");
    assert!(status.is_none(), "no result: {status:?}");
    assert!(started.elapsed() >= timeout, "{:?}", started.elapsed());
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
}

/// The status line of an exec WebSocket handshake sent by hand (`v5.channel.k8s.io`).
async fn exec_handshake(http: &FakeHttpServer) -> String {
    let mut raw = TcpStream::connect(http.addr()).await.unwrap();
    raw.write_all(
        b"GET /api/v1/namespaces/ns-0/pods/db/exec?command=cat&stdin=1&container=db HTTP/1.1\r\n\
          Host: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
          Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
          Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n",
    )
    .await
    .unwrap();
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(GUARD, raw.read(&mut buf))
        .await
        .expect("an answer to the handshake")
        .unwrap();
    let head = String::from_utf8_lossy(&buf[..n]).into_owned();
    head.lines().next().unwrap_or_default().to_owned()
}

/// Upgraded exec sessions leave the connection cap, so they have their own: beyond
/// `MAX_EXEC_SESSIONS` open at once an exec is a 429 before its upgrade (the handshake is
/// sent by hand: kube-client retries a 429); once one ends, another opens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_sessions_beyond_the_cap_are_refused_until_one_ends() {
    use fake_apiserver::http::MAX_EXEC_SESSIONS;
    use k8s_openapi::api::core::v1::Pod;
    use kube_client::api::{Api, AttachParams};
    let (server, http) = start().await;
    running_db_pod(&server);
    server.set_exec_handler(|_| fake_apiserver::ExecOutput::stdout("ok\n"));
    let pods: Api<Pod> = Api::default_namespaced(crate::http_kube_client::kube(&http).await);
    // Sessions that wait for input that never comes.
    let waiting = AttachParams::default().container("db").stdin(true);
    let mut open = Vec::new();
    for i in 0..MAX_EXEC_SESSIONS {
        let session = tokio::time::timeout(GUARD, pods.exec("db", ["cat"], &waiting))
            .await
            .unwrap_or_else(|_| panic!("session {i} did not open"))
            .unwrap();
        open.push(session);
    }
    assert_eq!(
        exec_handshake(&http).await,
        "HTTP/1.1 429 Too Many Requests"
    );
    // One ends (its client goes away): another session opens.
    let ended = open.pop().unwrap();
    ended.abort();
    drop(ended);
    let deadline = Instant::now() + GUARD;
    loop {
        let answer = exec_handshake(&http).await;
        if answer == "HTTP/1.1 101 Switching Protocols" {
            break;
        }
        assert_eq!(answer, "HTTP/1.1 429 Too Many Requests");
        assert!(Instant::now() < deadline, "no session opened again");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
