//! The HTTP front end without a socket: the router as a tower `Service` called in process
//! ([`in_process_router`]), and a kube-client `Client` over it ([`kube_client()`], feature
//! `kube-client`).
//!
//! Every request goes through the same stack as over TCP (the origin and authentication
//! layers, the REST routes, content negotiation, the engine's faults and request log); only
//! the connection layer (`serve.rs`: header and idle timeouts, the connection cap) is absent,
//! since there is no connection. No task, socket or thread of its own: the router runs inside
//! the caller's futures, so tests under `tokio::time::pause` drive it in virtual time.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::app::App;
use super::auth::AuthPolicy;
use super::origin::SitePolicy;
use super::router;
use crate::FakeApiServer;
use crate::crd;

/// The address the in-process front end pretends to listen on: loopback, so that no token
/// is required and the `Host`/`Origin` checks accept what a loopback client sends.
const IN_PROCESS_ADDR: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 80);

/// The HTTP front end's router over `server`, to call as a tower `Service<Request<B>>`
/// (`B`: any `http_body::Body` of `Bytes`) without a socket. It answers as
/// [`FakeHttpServer`](super::FakeHttpServer) does on a loopback listener without a token.
/// Like [`FakeHttpServer::start`](super::FakeHttpServer::start), it registers the
/// `customresourcedefinitions` resource with the engine. Watches end when their response
/// body is dropped, or at their `timeoutSeconds` (on tokio's clock).
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// use fake_apiserver::FakeApiServer;
/// use fake_apiserver::http::in_process_router;
/// use tower::ServiceExt;
///
/// let server = FakeApiServer::new();
/// server.create("namespaces", &serde_json::json!({"metadata": {"name": "prod"}})).unwrap();
/// let request = http::Request::get("/api/v1/namespaces/prod").body(axum::body::Body::empty()).unwrap();
/// let response = in_process_router(&server).oneshot(request).await.unwrap();
/// assert_eq!(response.status(), 200);
/// # }
/// ```
pub fn in_process_router(server: &FakeApiServer) -> Router {
    // Registering it again is a no-op; a conflicting definition keeps the caller's.
    let _ = server.register(crd::crd_resource());
    let app = App {
        server: server.clone(),
        shutdown: CancellationToken::new(),
        churn: Arc::new(Mutex::new(None)),
        server_address: IN_PROCESS_ADDR.to_string(),
        exec_timeout: super::DEFAULT_EXEC_TIMEOUT,
        exec_sessions: Arc::new(tokio::sync::Semaphore::new(super::MAX_EXEC_SESSIONS)),
    };
    let policy = AuthPolicy::for_listener(&IN_PROCESS_ADDR, None, String::new);
    let site = SitePolicy::for_listener(IN_PROCESS_ADDR, false);
    router(app, policy, site)
}

/// A kube-client `Client` whose requests go to `server`'s HTTP front end in process, through
/// [`in_process_router`]: reconcile code under test makes the same `Api<K>` calls as in
/// production, with no socket, in virtual time under `tokio::time::pause`, and the engine's
/// faults ([`Faults`](crate::Faults): failed writes, conflicts, broken watches) apply to
/// them, and so do the request layer's rules (a write into a namespace that does not exist
/// is refused, as on a real server: create the namespaces first). Its default namespace is
/// `default`; for another, build one yourself with
/// `kube_client::Client::new(in_process_router(&server), namespace)`.
///
/// Must be called inside a tokio runtime (the client's request buffer is a task). The client
/// has none of the layers a `kube_client::Config` adds (timeouts, retries, authentication):
/// give bounds to the calls themselves, as production code over `client_for_informers`
/// should.
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// use fake_apiserver::{FakeApiServer, status};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_client::api::{Api, PostParams};
///
/// let server = FakeApiServer::new();
/// server.create("namespaces", &serde_json::json!({"metadata": {"name": "default"}})).unwrap();
/// let client = fake_apiserver::http::kube_client(&server);
/// let api: Api<ConfigMap> = Api::namespaced(client, "default");
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("settings".into());
/// api.create(&PostParams::default(), &cm).await.unwrap();
/// assert!(server.get("configmaps", Some("default"), "settings").is_ok());
///
/// // The engine's faults apply to the client's calls.
/// server.faults().fail_writes("configmaps", 1, status::internal_error("etcd is down"));
/// cm.metadata.name = Some("other".into());
/// assert!(api.create(&PostParams::default(), &cm).await.is_err());
/// # }
/// ```
#[cfg(feature = "kube-client")]
pub fn kube_client(server: &FakeApiServer) -> kube_client::Client {
    kube_client::Client::new(in_process_router(server), "default")
}
