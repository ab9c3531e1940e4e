//! The connection layer: accepting TCP connections and serving HTTP/1.1 on them with hyper,
//! under the limits a real API server's Go `http.Server` keeps (a header-read timeout, an
//! idle timeout between requests) plus a cap on open connections, and a shutdown that ends
//! in bounded time whatever the clients do.
//!
//! `axum::serve` exposes none of these knobs, so the accept loop is here. hyper's own
//! `header_read_timeout` is not used: its timer also runs while a keep-alive connection
//! waits for its next request, which would make the idle timeout and the header-read timeout
//! one setting. Instead each connection has a watchdog reading its [`Activity`]: which
//! requests are in flight (counted by the service, until hyper drops the response body) and
//! when the first byte of the next request arrived (seen by the IO wrapper).

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use bytes::Bytes;
use http::{Request, Response};
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

/// How long requests in flight get to finish once the server shuts down; then their
/// connections are closed. Watches end at once on shutdown; this bounds the rest (a client
/// that stopped reading, a request mid-header).
pub(crate) const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);

/// How long the accept loop pauses after an accept error (such as running out of file
/// descriptors) before it tries again, instead of spinning.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(50);

/// The connection limits of a server (from [`super::HttpConfig`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
}

/// Serves `router` on `listener` until `shutdown` is cancelled, then stops accepting, lets
/// requests in flight finish for up to [`SHUTDOWN_GRACE`] (hyper closes idle connections at
/// once) and closes whatever connection is left.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: CancellationToken,
) -> io::Result<()> {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            biased;
            () = shutdown.cancelled() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => match Arc::clone(&permits).try_acquire_owned() {
                    Ok(permit) => {
                        connections.spawn(serve_connection(
                            stream,
                            router.clone(),
                            limits,
                            shutdown.clone(),
                            permit,
                        ));
                    }
                    Err(_) => {
                        // Closed at once: the client sees the end of the connection rather
                        // than a request that never gets an answer.
                        tracing::warn!(
                            %peer,
                            max = limits.max_connections,
                            "fake-apiserver: connection limit reached, closing a new connection"
                        );
                        drop(stream);
                    }
                },
                Err(e) => {
                    tracing::debug!(error = %e, "fake-apiserver: accept failed");
                    tokio::select! {
                        () = shutdown.cancelled() => break,
                        () = tokio::time::sleep(ACCEPT_ERROR_PAUSE) => {}
                    }
                }
            },
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        connections.shutdown().await;
    }
    Ok(())
}

/// One connection: HTTP/1.1 by hyper, closed by its watchdog when a timeout expires, shut
/// down gracefully with the server. Holds its permit of the connection cap until it ends.
async fn serve_connection(
    stream: TcpStream,
    router: Router,
    limits: Limits,
    shutdown: CancellationToken,
    _permit: OwnedSemaphorePermit,
) {
    let activity = Arc::new(Activity::new(Instant::now()));
    let io = TokioIo::new(ActivityIo {
        inner: stream,
        activity: Arc::clone(&activity),
    });
    let service = ConnectionService {
        router,
        activity: Arc::clone(&activity),
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    // The watchdog below keeps the header-read timeout (see the module docs).
    builder.header_read_timeout(None);
    // Upgrades: `pods/<name>/exec` switches to a WebSocket, which then runs on its own task.
    let conn = builder.serve_connection(io, service).with_upgrades();
    tokio::pin!(conn);
    let mut draining = false;
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(error = %e, "fake-apiserver: connection ended with an error");
                }
                break;
            }
            expired = watchdog(&activity, limits) => {
                tracing::debug!(timeout = expired, "fake-apiserver: closing a connection");
                break;
            }
            () = shutdown.cancelled(), if !draining => {
                conn.as_mut().graceful_shutdown();
                draining = true;
            }
        }
    }
}

/// Where a connection is between requests.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Requests are in flight (a watch for as long as it streams): no timeout applies.
    Busy,
    /// No request in flight and no byte of the next one yet, since then.
    Idle(Instant),
    /// Reading a request head since then (the connection was accepted, or the first byte
    /// of the next request arrived).
    Head(Instant),
}

/// A connection's activity, written by its IO wrapper and its service, read by its
/// watchdog.
struct Activity {
    state: Mutex<(usize, Phase)>,
    changed: Notify,
}

impl Activity {
    fn new(accepted: Instant) -> Self {
        Self {
            state: Mutex::new((0, Phase::Head(accepted))),
            changed: Notify::new(),
        }
    }

    /// Bytes arrived: an idle connection starts reading a request head.
    fn bytes_read(&self) {
        let mut state = self.state.lock();
        if let Phase::Idle(_) = state.1 {
            state.1 = Phase::Head(Instant::now());
            drop(state);
            self.changed.notify_waiters();
        }
    }

    fn request_started(&self) {
        let mut state = self.state.lock();
        state.0 += 1;
        state.1 = Phase::Busy;
        drop(state);
        self.changed.notify_waiters();
    }

    fn request_ended(&self) {
        let mut state = self.state.lock();
        state.0 = state.0.saturating_sub(1);
        if state.0 == 0 {
            state.1 = Phase::Idle(Instant::now());
        }
        drop(state);
        self.changed.notify_waiters();
    }

    fn phase(&self) -> Phase {
        self.state.lock().1
    }
}

/// Returns (naming the timeout) once the connection has been idle for the idle timeout, or
/// reading one request head for the header-read timeout; never while a request is in
/// flight.
async fn watchdog(activity: &Activity, limits: Limits) -> &'static str {
    loop {
        let changed = activity.changed.notified();
        tokio::pin!(changed);
        // Registered before the phase is read, so that no change is missed.
        changed.as_mut().enable();
        let (deadline, name) = match activity.phase() {
            Phase::Busy => {
                changed.await;
                continue;
            }
            Phase::Idle(since) => (crate::later(since, limits.idle_timeout), "idle"),
            Phase::Head(since) => (
                crate::later(since, limits.header_read_timeout),
                "header read",
            ),
        };
        if Instant::now() >= deadline {
            return name;
        }
        tokio::select! {
            () = changed => {}
            () = tokio::time::sleep_until(deadline) => {}
        }
    }
}

/// A TCP stream that tells the connection's [`Activity`] when bytes arrive.
struct ActivityIo {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for ActivityIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.bytes_read();
        }
        result
    }
}

impl AsyncWrite for ActivityIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// The router, as hyper calls it on one connection: each request counts as in flight from
/// its call until hyper drops its response body (all of it written, or the connection
/// gone).
#[derive(Clone)]
struct ConnectionService {
    router: Router,
    activity: Arc<Activity>,
}

type ServiceFuture =
    Pin<Box<dyn Future<Output = Result<Response<TrackedBody>, Infallible>> + Send>>;

impl hyper::service::Service<Request<Incoming>> for ConnectionService {
    type Response = Response<TrackedBody>;
    type Error = Infallible;
    type Future = ServiceFuture;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let in_flight = InFlight::start(Arc::clone(&self.activity));
        let router = self.router.clone();
        Box::pin(async move {
            let response = match router.oneshot(request.map(Body::new)).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            Ok(response.map(|body| TrackedBody {
                body,
                _in_flight: in_flight,
            }))
        })
    }
}

/// One request in flight on a connection, until dropped.
struct InFlight(Arc<Activity>);

impl InFlight {
    fn start(activity: Arc<Activity>) -> Self {
        activity.request_started();
        Self(activity)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.request_ended();
    }
}

/// A response body that keeps its request in flight until hyper drops it.
struct TrackedBody {
    body: Body,
    _in_flight: InFlight,
}

impl http_body::Body for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
