//! Shared helpers of the HTTP front-end tests: start a server, talk to it with reqwest, read
//! watch streams line by line. Time is real here (sockets); every wait has a generous guard
//! against hangs and nothing asserts on timing.

use std::net::SocketAddr;
use std::time::Duration;

use fake_apiserver::http::{FakeHttpServer, HttpConfig};
use fake_apiserver::{FakeApiServer, ServerConfig};
use futures::StreamExt;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::GUARD;

/// An engine with a short too-large-resourceVersion wait, served over HTTP on loopback.
pub async fn start() -> (FakeApiServer, FakeHttpServer) {
    start_with(ServerConfig {
        too_large_wait: Duration::from_millis(200),
        ..ServerConfig::default()
    })
    .await
}

/// An engine with `config`, served over HTTP on loopback.
pub async fn start_with(config: ServerConfig) -> (FakeApiServer, FakeHttpServer) {
    let server = FakeApiServer::with_config(config);
    let http = FakeHttpServer::start(server.clone(), HttpConfig::default())
        .await
        .expect("start the HTTP server");
    (server, http)
}

/// Creates Namespace objects (the server refuses creates in namespaces that do not exist).
pub fn namespaces(server: &FakeApiServer, names: &[&str]) {
    for name in names {
        server
            .create("namespaces", &fake_apiserver::seed::namespace(name))
            .unwrap();
    }
}

/// A client that never goes through a proxy.
/// Registers the custom resource `widgets.example.com/v1` (`Widget`, namespaced) without a
/// CRD object.
pub fn register_widgets(server: &FakeApiServer) {
    server
        .register(fake_apiserver::ResourceDef::namespaced(
            "example.com",
            "v1",
            "widgets",
            "Widget",
        ))
        .unwrap();
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// An HTTP answer: status, headers, body parsed as JSON (Null when empty or not JSON).
pub struct Answer {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Every `Warning` header, in order.
    pub fn warnings(&self) -> Vec<&str> {
        self.headers
            .get_all("warning")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect()
    }
}

/// Sends a request with an optional JSON body and content type.
pub async fn send(
    http: &FakeHttpServer,
    method: Method,
    path: &str,
    body: Option<(&str, &Value)>,
) -> Answer {
    let mut req = client().request(method, format!("{}{path}", http.url()));
    if let Some((content_type, value)) = body {
        req = req
            .header("Content-Type", content_type)
            .body(value.to_string());
    }
    let resp = tokio::time::timeout(GUARD, req.send())
        .await
        .expect("request hung")
        .expect("request failed");
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = resp.bytes().await.unwrap();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Answer {
        status,
        headers,
        body,
    }
}

/// A `PATCH` of `body` as `content_type` (`application/merge-patch+json`...).
pub async fn patch(http: &FakeHttpServer, path: &str, content_type: &str, body: &Value) -> Answer {
    send(http, Method::PATCH, path, Some((content_type, body))).await
}

/// A server-side apply of `body` (`application/apply-patch+yaml`).
pub async fn apply(http: &FakeHttpServer, path: &str, body: &Value) -> Answer {
    patch(http, path, "application/apply-patch+yaml", body).await
}

pub async fn get(http: &FakeHttpServer, path: &str) -> Answer {
    send(http, Method::GET, path, None).await
}

pub async fn post(http: &FakeHttpServer, path: &str, body: &Value) -> Answer {
    send(http, Method::POST, path, Some(("application/json", body))).await
}

pub async fn put(http: &FakeHttpServer, path: &str, body: &Value) -> Answer {
    send(http, Method::PUT, path, Some(("application/json", body))).await
}

/// A watch response read line by line.
pub struct WatchLines {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    stream: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: Vec<u8>,
    /// How many body chunks arrived so far.
    pub chunks: usize,
}

/// What the next read of a watch gave.
#[derive(Debug)]
pub enum Line {
    /// A complete line, parsed.
    Event(Value),
    /// A complete line that is not JSON (an injected raw line).
    Raw(String),
    /// The stream ended cleanly.
    End,
    /// The connection failed (a broken watch).
    Broken(#[allow(dead_code, reason = "read through Debug, in failure messages")] String),
}

impl WatchLines {
    /// Opens `path` (a watch URL) and returns once the response headers arrived.
    pub async fn open(http: &FakeHttpServer, path: &str) -> Self {
        Self::open_with(http, path, None).await
    }

    /// Like [`open`](Self::open) with an `Accept` header.
    pub async fn open_with(http: &FakeHttpServer, path: &str, accept: Option<&str>) -> Self {
        let mut req = client().get(format!("{}{path}", http.url()));
        if let Some(a) = accept {
            req = req.header("Accept", a);
        }
        let resp = tokio::time::timeout(GUARD, req.send())
            .await
            .expect("watch request hung")
            .expect("watch request failed");
        Self {
            status: resp.status(),
            headers: resp.headers().clone(),
            stream: resp.bytes_stream().boxed(),
            buffer: Vec::new(),
            chunks: 0,
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The next line (failing the test if none comes within [`GUARD`]).
    pub async fn next(&mut self) -> Line {
        loop {
            if let Some(i) = self.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=i).collect();
                let text = &line[..line.len() - 1];
                return match serde_json::from_slice(text) {
                    Ok(value) => Line::Event(value),
                    Err(_) => Line::Raw(String::from_utf8_lossy(text).into_owned()),
                };
            }
            match tokio::time::timeout(GUARD, self.stream.next())
                .await
                .expect("no watch line in time")
            {
                Some(Ok(chunk)) => {
                    self.chunks += 1;
                    self.buffer.extend_from_slice(&chunk);
                }
                Some(Err(e)) => return Line::Broken(e.to_string()),
                None => {
                    assert!(
                        self.buffer.is_empty(),
                        "stream ended inside a line: {:?}",
                        String::from_utf8_lossy(&self.buffer)
                    );
                    return Line::End;
                }
            }
        }
    }

    /// The next event (failing the test on the end of the stream).
    pub async fn event(&mut self) -> Value {
        match self.next().await {
            Line::Event(v) => v,
            other => panic!("expected an event, got {other:?}"),
        }
    }

    /// `TYPE name` of the next event (`BOOKMARK @rv`, `ERROR code`).
    pub async fn show_next(&mut self) -> String {
        show(&self.event().await)
    }
}

/// `TYPE name`, `BOOKMARK @rv`, `ERROR code` for compact assertions.
pub fn show(e: &Value) -> String {
    let ty = e["type"].as_str().unwrap_or("?");
    match ty {
        "BOOKMARK" => format!(
            "BOOKMARK @{}",
            e["object"]["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or("?")
        ),
        "ERROR" => format!("ERROR {}", e["object"]["code"]),
        _ => format!(
            "{ty} {}",
            e["object"]["metadata"]["name"].as_str().unwrap_or("?")
        ),
    }
}

/// A small pod.
pub fn pod(ns: &str, name: &str, labels: Value) -> Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"containers": [{"name": "app", "image": "app:1"}]},
    })
}

/// Names of a list's items.
pub fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A watch of all pods on a raw connection whose reader never reads (a small receive buffer):
/// the server's writes to it block once the buffers are full.
pub async fn stalled_watch(addr: SocketAddr) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    let request = format!("GET /api/v1/pods?watch=1 HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    stream
}

/// A running `fake-apiserver` binary (killed when dropped).
pub struct Binary {
    pub child: tokio::process::Child,
    /// Its first stdout line, parsed.
    pub ready: Value,
    /// The rest of its stdout.
    #[allow(
        dead_code,
        reason = "held, not read: the pipe stays open while the binary runs"
    )]
    pub stdout: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl Binary {
    /// Starts the binary with `args` and waits for its first line.
    pub async fn start(args: &[&str]) -> Self {
        use tokio::io::AsyncBufReadExt;
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_fake-apiserver"))
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start fake-apiserver");
        let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let first = tokio::time::timeout(GUARD, stdout.next_line())
            .await
            .expect("fake-apiserver printed nothing in time")
            .unwrap();
        let Some(first) = first else {
            let out = child.wait_with_output().await.unwrap();
            panic!(
                "fake-apiserver exited ({}) without a first line: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let ready = serde_json::from_str(&first).expect("the first line is JSON");
        Self {
            child,
            ready,
            stdout,
        }
    }

    pub fn url(&self) -> &str {
        self.ready["url"].as_str().unwrap()
    }

    /// Sends SIGTERM (to this child, by its pid) and waits for it to exit.
    pub async fn terminate(self) -> std::process::ExitStatus {
        self.stop_with("TERM", GUARD).await.0
    }

    /// Sends `signal` (`TERM`, `INT`) to this child, by its pid, and waits for it to exit,
    /// at most `within`; returns its status and how long it took.
    pub async fn stop_with(
        mut self,
        signal: &str,
        within: Duration,
    ) -> (std::process::ExitStatus, Duration) {
        let pid = self.child.id().expect("still running").to_string();
        let started = std::time::Instant::now();
        let sent = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap();
        assert!(sent.success());
        let status = tokio::time::timeout(within, self.child.wait())
            .await
            .unwrap_or_else(|_| {
                panic!("fake-apiserver did not stop within {within:?} of SIG{signal}")
            })
            .unwrap();
        (status, started.elapsed())
    }
}
