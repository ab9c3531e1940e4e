//! A misbehaving API server for the hostile-server tests: a small HTTP/1.1 server on a
//! loopback port, written here for the tests, that answers list and watch requests the way a
//! broken proxy, an overloaded API server or a malicious aggregated API would: endless
//! `Retry-After`, lists that never end, silence, stalls after the headers, lying
//! `Content-Length`s, watch lines without end. Told to behave, it passes requests through to
//! the real fake API server (the `fake-apiserver` crate's HTTP front end), so that a test can check that
//! the informer recovers and ends up equal to the server's state.
//!
//! Every response says `Connection: close` and every connection carries one request, so that
//! each request the client makes is seen (and logged) here.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// How the server answers one kind of request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Behaviour {
    /// Pass the request to the real fake API server.
    Pass,
    /// 429 Too Many Requests with this `Retry-After` header (and a `Status` body).
    Throttle { retry_after: String },
    /// Accept the connection, read the request, never answer.
    Silent,
    /// Send a 200's headers (with this `Content-Length`, or chunked when `None`), then these
    /// bytes of body, then nothing, holding the connection open.
    Stall {
        content_length: Option<u64>,
        body: Vec<u8>,
    },
    /// Send a 200 with a `Content-Length` much larger than the body, the body, then close.
    LyingLength { content_length: u64, body: Vec<u8> },
    /// Answer every list page with `items` pods of about `item_bytes` bytes each and a
    /// continue token: a new one each page, or always the same.
    EndlessPages {
        items: usize,
        item_bytes: usize,
        same_token: bool,
    },
    /// Send a watch's headers, then one endless line (no newline), 64 KiB at a time, until
    /// the client hangs up (or 256 MiB, a safety stop).
    EndlessLine,
    /// 422 for a streaming list (`sendInitialEvents=true`), as an API server without the
    /// WatchList feature answers: the informer falls back to a paginated list at once, so
    /// that the list behaviour under test applies.
    RefuseStreaming,
}

/// Which kind of request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    List,
    Watch,
    /// A watch with `sendInitialEvents=true`: always refused (see
    /// [`Behaviour::RefuseStreaming`]), so the scenarios exercise paginated lists.
    StreamingList,
    Other,
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub at: Instant,
    pub kind: Kind,
    #[allow(dead_code, reason = "no test asserts on it; failure messages show it")]
    pub path: String,
    pub query: Vec<(String, String)>,
    /// How it was answered.
    pub behaviour: Behaviour,
    /// Body bytes written for it (known once the answer is complete; 0 before).
    pub body_bytes: Arc<Mutex<u64>>,
    /// When the client hung up, for answers that wait for that.
    pub closed_at: Arc<Mutex<Option<Instant>>>,
}

impl Seen {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

struct Shared {
    upstream: SocketAddr,
    list: Mutex<Behaviour>,
    watch: Mutex<Behaviour>,
    log: Mutex<Vec<Seen>>,
    pages: Mutex<u64>,
}

/// The misbehaving server. Dropping it stops accepting connections.
pub struct Hostile {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Hostile {
    /// Starts on a free loopback port, passing everything to `upstream` until told otherwise.
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let shared = Arc::new(Shared {
            upstream,
            list: Mutex::new(Behaviour::Pass),
            watch: Mutex::new(Behaviour::Pass),
            log: Mutex::new(Vec::new()),
            pages: Mutex::new(0),
        });
        let serving = Arc::clone(&shared);
        let task = tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let shared = Arc::clone(&serving);
                tokio::spawn(async move {
                    let _ = serve(socket, shared).await;
                });
            }
        });
        Self { addr, shared, task }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn set_list(&self, behaviour: Behaviour) {
        *self.shared.list.lock() = behaviour;
    }

    pub fn set_watch(&self, behaviour: Behaviour) {
        *self.shared.watch.lock() = behaviour;
    }

    /// Both kinds pass through from now on.
    pub fn behave(&self) {
        self.set_list(Behaviour::Pass);
        self.set_watch(Behaviour::Pass);
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.shared.log.lock().clone()
    }

    /// Requests of `kind` received in `[from, to)`.
    pub fn count(&self, kind: Kind, from: Instant, to: Instant) -> usize {
        self.seen()
            .iter()
            .filter(|s| s.kind == kind && s.at >= from && s.at < to)
            .count()
    }
}

/// Reads one request head (bounded), answers it as told, closes.
async fn serve(mut socket: TcpStream, shared: Arc<Shared>) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = socket.read(&mut buf).await?;
        if n == 0 || head.len() > 64 << 10 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let target = text
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("/")
        .to_owned();
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_owned(), q.to_owned()),
        None => (target.clone(), String::new()),
    };
    let query: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let is_watch = query
        .iter()
        .any(|(k, v)| k == "watch" && (v == "1" || v == "true"));
    let streaming = query
        .iter()
        .any(|(k, v)| k == "sendInitialEvents" && v == "true");
    let kind = if is_watch && streaming {
        Kind::StreamingList
    } else if is_watch {
        Kind::Watch
    } else if path.ends_with("/pods") {
        Kind::List
    } else {
        Kind::Other
    };
    let behaviour = match kind {
        Kind::List => shared.list.lock().clone(),
        Kind::Watch => shared.watch.lock().clone(),
        Kind::StreamingList => Behaviour::RefuseStreaming,
        Kind::Other => Behaviour::Pass,
    };
    let seen = Seen {
        at: Instant::now(),
        kind,
        path,
        query,
        behaviour: behaviour.clone(),
        body_bytes: Arc::default(),
        closed_at: Arc::default(),
    };
    let body_bytes = Arc::clone(&seen.body_bytes);
    let closed_at = Arc::clone(&seen.closed_at);
    shared.log.lock().push(seen);
    match behaviour {
        Behaviour::Pass => pass(socket, &text, shared.upstream).await,
        Behaviour::Throttle { retry_after } => {
            let body = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too many requests, slow down","reason":"TooManyRequests","code":429}"#;
            let head = format!(
                "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n\
                 Retry-After: {retry_after}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(body).await?;
            *body_bytes.lock() = body.len() as u64;
            socket.shutdown().await
        }
        Behaviour::RefuseStreaming => {
            let body = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled","reason":"Invalid","code":422}"#;
            let head = format!(
                "HTTP/1.1 422 Unprocessable Entity\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(body).await?;
            *body_bytes.lock() = body.len() as u64;
            socket.shutdown().await
        }
        Behaviour::Silent => {
            hold(&mut socket).await;
            *closed_at.lock() = Some(Instant::now());
            Ok(())
        }
        Behaviour::Stall {
            content_length,
            body,
        } => {
            let framing = match content_length {
                Some(n) => format!("Content-Length: {n}\r\n"),
                None => "Transfer-Encoding: chunked\r\n".to_owned(),
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{framing}\
                 Connection: close\r\n\r\n"
            );
            socket.write_all(head.as_bytes()).await?;
            if !body.is_empty() {
                if content_length.is_some() {
                    socket.write_all(&body).await?;
                } else {
                    socket.write_all(&chunk(&body)).await?;
                }
            }
            *body_bytes.lock() = body.len() as u64;
            hold(&mut socket).await;
            *closed_at.lock() = Some(Instant::now());
            Ok(())
        }
        Behaviour::LyingLength {
            content_length,
            body,
        } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                 Content-Length: {content_length}\r\nConnection: close\r\n\r\n"
            );
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(&body).await?;
            *body_bytes.lock() = body.len() as u64;
            socket.shutdown().await
        }
        Behaviour::EndlessPages {
            items,
            item_bytes,
            same_token,
        } => {
            let page = {
                let mut pages = shared.pages.lock();
                *pages += 1;
                *pages
            };
            let token = if same_token {
                "the-same-token".to_owned()
            } else {
                format!("token-{page}")
            };
            let body = endless_page(page, items, item_bytes, &token);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            socket.write_all(head.as_bytes()).await?;
            *body_bytes.lock() = body.len() as u64;
            socket.write_all(&body).await?;
            socket.shutdown().await
        }
        Behaviour::EndlessLine => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                        Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
            socket.write_all(head.as_bytes()).await?;
            let piece = chunk(&[b'x'; 64 << 10]);
            socket
                .write_all(&chunk(br#"{"type":"ADDED","object":{"metadata":{"name":""#))
                .await?;
            let mut written = 0u64;
            while written < 256 << 20 {
                if socket.write_all(&piece).await.is_err() {
                    break;
                }
                written += 64 << 10;
                *body_bytes.lock() = written;
            }
            *closed_at.lock() = Some(Instant::now());
            Ok(())
        }
    }
}

/// Waits until the client hangs up (or a minute passes: a safety stop).
async fn hold(socket: &mut TcpStream) {
    let mut buf = [0u8; 1024];
    let _ = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
}

/// One chunk of a chunked body.
fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// A page of pods that always asks for another.
fn endless_page(page: u64, items: usize, item_bytes: usize, token: &str) -> Vec<u8> {
    let padding = "p".repeat(item_bytes.saturating_sub(120));
    let pods: Vec<String> = (0..items)
        .map(|i| {
            format!(
                r#"{{"metadata":{{"name":"endless-{page}-{i}","namespace":"ns","resourceVersion":"1","annotations":{{"pad":"{padding}"}}}}}}"#
            )
        })
        .collect();
    format!(
        r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"1","continue":"{token}"}},"items":[{}]}}"#,
        pods.join(",")
    )
    .into_bytes()
}

/// Passes the request to `upstream` with `Connection: close`, and its answer back with
/// `Connection: close`, then closes.
async fn pass(mut socket: TcpStream, head: &str, upstream: SocketAddr) -> std::io::Result<()> {
    let mut up = TcpStream::connect(upstream).await?;
    let mut request = String::new();
    for line in head.split("\r\n") {
        if line.is_empty() {
            break;
        }
        if line.to_ascii_lowercase().starts_with("connection:") {
            continue;
        }
        request.push_str(line);
        request.push_str("\r\n");
    }
    request.push_str("Connection: close\r\n\r\n");
    up.write_all(request.as_bytes()).await?;
    // The answer's head, rewritten with `Connection: close`.
    let mut answer = Vec::new();
    let mut buf = [0u8; 8192];
    let split = loop {
        if let Some(at) = answer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = up.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        answer.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&answer[..split]).into_owned();
    let mut rewritten = String::new();
    for line in head.split("\r\n") {
        if line.to_ascii_lowercase().starts_with("connection:") {
            continue;
        }
        rewritten.push_str(line);
        rewritten.push_str("\r\n");
    }
    rewritten.push_str("connection: close\r\n\r\n");
    socket.write_all(rewritten.as_bytes()).await?;
    socket.write_all(&answer[split + 4..]).await?;
    let (mut from_up, _) = up.split();
    tokio::io::copy(&mut from_up, &mut socket).await?;
    socket.shutdown().await
}
