//! The HTTP front end of the fake API server: Kubernetes REST + JSON over a real socket, for
//! kubectl, kube-client and clients in any language (feature `http`, on by default).
//!
//! [`FakeHttpServer::start`] serves a [`FakeApiServer`] (the engine: its semantics and faults
//! are described in [the crate docs](crate)) on a TCP address:
//!
//! - **Discovery**: `/api`, `/apis`, `/api/v1`, `/apis/<group>[/<version>]` as legacy JSON, and
//!   `/api` and `/apis` in the aggregated form (`apidiscovery.k8s.io/v2` or `v2beta1`) when the
//!   `Accept` header asks for it first, as kubectl 1.32 does, with every resource and its
//!   `status` and `scale` subresources; `/version` (reports 1.37, the API served).
//! - **Resources**: every built-in resource of Kubernetes 1.37 (see
//!   [the crate docs](crate#built-in-resources)) and registered ones:
//!   `/api/v1/<plural>`, `/api/v1/namespaces/<ns>/<plural>[/<name>[/status|/scale]]`,
//!   and the same under `/apis/<group>/<version>`. `GET` lists (typed `PodList`... with
//!   `metadata.resourceVersion`, `continue`, `remainingItemCount`; the objects' stored bytes are
//!   written as they are) or watches (`watch=1`/`true`, or a `/watch/` path): HTTP 200, chunked,
//!   `Content-Type: application/json`, one event per line, flushed per event, `ERROR` events
//!   as the engine yields them, the stream ending at `timeoutSeconds`. `POST` creates (201),
//!   `PUT` updates (409 on a stale resourceVersion), `PATCH` takes
//!   `application/merge-patch+json`, `application/json-patch+json`,
//!   `application/strategic-merge-patch+json` (approximated: merge patch plus merge keys for
//!   well-known lists and the `$patch`/`$setElementOrder`/`$retainKeys`/
//!   `$deleteFromPrimitiveList` directives) and `application/apply-patch+yaml` (server-side
//!   apply with field ownership: `fieldManager` required, conflicts as 409s unless
//!   `force=true`, fields the manager no longer applies removed; also on `/status`). Every
//!   write keeps `metadata.managedFields` as the real server keeps them: its manager
//!   (`fieldManager`, else the user agent up to its first `/`) owns what it changed. `DELETE` answers with the object (pods, and objects waiting for finalizers) or a
//!   `Success` Status; `DELETE` on a collection deletes what the selectors match. Dry runs
//!   (`dryRun=All` in the query, or in a `DELETE`'s `DeleteOptions` body) are answered as the
//!   real server answers them (a created object without a resourceVersion, an updated one at
//!   its stored resourceVersion) and write nothing ([`Target::dry_run`](crate::Target::dry_run));
//!   other modes are a 422. A `DELETE` takes `propagationPolicy` (or the deprecated
//!   `orphanDependents`) in its query or `DeleteOptions` body and cascades as the garbage
//!   collector does ([the model](crate#the-model)); both set, or an unknown policy, is a 422.
//!   A `POST` to the cluster-wide URL of a namespaced resource is a 405.
//! - **Subresources**: `status` (`GET`, `PUT`, `PATCH`: only `.status` changes) and `scale`
//!   (`autoscaling/v1` `Scale` of deployments, replica sets, stateful sets and replication
//!   controllers: `GET`, `PUT`, `PATCH`; `kubectl scale`); pods' `log` (`GET`, `text/plain`,
//!   streamed with `follow`; `kubectl logs`), what the test wrote as a container's output
//!   (`POST /_fake/pod-logs`, [`FakeApiServer::append_pod_log`](crate::FakeApiServer::append_pod_log));
//!   pods' `exec` (`GET` or `POST` upgraded to a WebSocket, `v5.channel.k8s.io` or
//!   `v4.channel.k8s.io`; `kubectl exec`, kube-client's `exec`), the command run by the test's
//!   handler ([`FakeApiServer::set_exec_handler`](crate::FakeApiServer::set_exec_handler),
//!   `PUT /_fake/exec`).
//! - **Reviews** (`POST` only, answered without storage, in JSON, YAML or protobuf):
//!   `authorization.k8s.io/v1` `selfsubjectaccessreviews`, `selfsubjectrulesreviews`,
//!   `subjectaccessreviews` and namespaced `localsubjectaccessreviews` (`kubectl auth can-i`,
//!   a controller's permission checks: the server has no authorizer, so every review is
//!   allowed and the rules review lists everything), and `authentication.k8s.io/v1`
//!   `selfsubjectreviews` (`kubectl auth whoami`: every caller is `system:admin` in
//!   `system:masters`). Requests are checked as upstream checks them (422: both or neither of
//!   the resource and non-resource attributes, a subject review without user or groups,
//!   metadata besides a local review's namespace). They are not listed in discovery.
//! - **Content types**: request bodies in `application/json` (also without a
//!   `Content-Type`), `application/yaml` and `application/vnd.kubernetes.protobuf` (the
//!   `k8s\0` + `runtime.Unknown` envelope, for every built-in kind: kubectl's generator
//!   commands send it); any other type is a 415 and writes nothing. Bodies over 3 MiB are a
//!   413 `RequestEntityTooLarge` (the rest of the body is read and discarded, up to 256 MiB,
//!   so the client gets the Status). Answers follow `Accept`, first producible type wins:
//!   JSON, YAML (not for watches), protobuf (built-in kinds: objects, lists, and watches as
//!   length-delimited `WatchEvent` frames, `application/vnd.kubernetes.protobuf;stream=watch`),
//!   Tables; a header naming nothing producible is a 406 `NotAcceptable`. Errors are always
//!   JSON Status. Protobuf is converted to and from the stored JSON with a schema generated
//!   from k8s-pb and k8s-openapi; zero values a Go client writes for non-pointer fields
//!   (`stdin: false`, `imagePullPolicy: ""`) are kept, because the wire does not say which
//!   fields are pointers whose zero matters (`replicas: 0`), except in `metadata`.
//! - **Renderings**: when `Accept` asks for `as=Table` (kubectl's `get`), lists, objects and
//!   watch events come as `meta.k8s.io` Tables with the columns and cells the real server
//!   gives: built-in kinds as upstream's printers print them (`table/`; pods with their init
//!   containers, sidecars and restarts, Jobs with status and duration, HPAs with their
//!   targets, ...), kinds without a printer (Roles, LimitRanges) NAME and CREATED AT, CRDs as
//!   the 1.37 CRD convertor, custom resources NAME and their CRD's
//!   `additionalPrinterColumns`, evaluated as upstream's table convertor does (client-go's
//!   JSONPath, typed cells, `date` as an age; none given: AGE);
//!   `as=PartialObjectMetadata[List]` gives metadata only.
//! - **Admission webhooks**: creates, updates, patches and applies of objects and their
//!   `status`, and deletes, call the mutating and validating webhooks their stored
//!   configurations match, over HTTPS (rustls; the `caBundle` as the trusted roots), as
//!   described in [the crate docs](crate); a write a webhook may see is made as a dry run
//!   first, for the object the webhooks are shown, and stored only while the object it
//!   replaces is unchanged (`webhooks.rs` has the passes).
//! - **Errors** are `Status` JSON with the Status's code as the HTTP status and, for 429 (any
//!   Status with `retryAfterSeconds`), a `Retry-After` header.
//! - **OpenAPI**: `/openapi/v3` (index and one document per group version) and `/openapi/v2`
//!   (JSON, or protobuf as gnostic's `Document` when asked for, as client-go's discovery
//!   asks: kubectl validates `kind: List` files with it),
//!   with every path and operation of every resource, named as the real server names its
//!   definitions (`io.k8s.api.apps.v1.Deployment`), but open schemas. That is what kubectl 1.32 needs for
//!   `create -f` and `apply -f` with its default validation: the `PATCH` operations list the
//!   `fieldValidation` parameter, so kubectl leaves validation to the server (which decodes
//!   built-in kinds into their Go types and refuses unknown fields under `Strict`, and
//!   checks custom resources against their CRD's schema) instead of validating against
//!   schemas.
//! - **CRDs**: `POST`ing an `apiextensions.k8s.io/v1` `CustomResourceDefinition` registers its
//!   resource with the engine in every served version, so `kubectl apply -f crd.yaml`
//!   followed by `kubectl get <plural>` works. The versions share one storage, as under
//!   upstream's `None` conversion strategy: each reads, lists and watches the same objects at
//!   the same resourceVersions in its own `apiVersion`; a write through a version is checked
//!   with its schema and stored as the storage version's schema prunes and defaults it (see
//!   [`FakeApiServer::register_versions`](crate::FakeApiServer::register_versions)); discovery
//!   lists the versions by priority, and a `deprecated` one warns on every request. Under
//!   the `Webhook` strategy only the storage version is served (no webhook is called). A
//!   version's `openAPIV3Schema` prunes, defaults
//!   and validates its objects (`fieldValidation=Strict`, kubectl's default, refuses
//!   undeclared fields with a 400 instead of pruning them; `Warn`, the default, prunes them
//!   with a `Warning: 299` header each),
//!   and a changed CRD serves its new versions, schemas, subresources and names (a version
//!   no longer served ends its watches). Deleting the CRD deletes its custom resources
//!   first, as upstream's CRD finalizer does: the CRD waits behind
//!   `customresourcecleanup.apiextensions.k8s.io` with a `Terminating` condition, creates of
//!   its resource are a 405 (`create not allowed while custom resource definition is
//!   terminating`), every instance is deleted (one with finalizers of its own waits for
//!   them), then the CRD goes and its versions are no longer served.
//!   [`FakeApiServer::register`] registers a resource without a CRD object.
//! - **Slow watchers**: each watch reads the engine's history with its own cursor and is only
//!   advanced when the connection can take more bytes, so a reader that stops reading never
//!   makes the server buffer more than the socket's and hyper's write buffers, never blocks
//!   writers or other watchers, and, once the history has moved past its cursor, gets
//!   `ERROR` 410 and the end of the stream when it reads again (as a real server drops it).
//! - **Authentication**: a server listening on a non-loopback address requires
//!   `Authorization: Bearer <token>` ([`HttpConfig::token`], or a generated one, see
//!   [`FakeHttpServer::token`]; the scheme in any case, `bearer` too, the token compared in
//!   constant time); requests without it get a 401 Status. On loopback no token is needed
//!   unless one is configured. [`FakeHttpServer::write_kubeconfig`] writes the file with mode
//!   0600 (also over an existing file), as it may hold the token.
//! - **Web pages**: a request whose `Origin` is not the server's own (`http://` + the
//!   listener's IP, a loopback IP or `localhost` + its port) gets a 403 `Forbidden` Status, so
//!   that a page the developer visits cannot create objects or start churn with a
//!   cross-site request; so does a `Host` naming anything but the listener's IP, a loopback
//!   IP or `localhost` (DNS rebinding). A listener on `0.0.0.0` or `::` that requires a token
//!   takes any host. kubectl and the client libraries send no `Origin` and the kubeconfig's
//!   host.
//! - **Request log**: resource requests are recorded by the engine
//!   ([`FakeApiServer::requests`]); discovery and OpenAPI requests are recorded too; admin
//!   requests are not.
//!
//! ```no_run
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use fake_apiserver::FakeApiServer;
//! use fake_apiserver::http::{FakeHttpServer, HttpConfig};
//!
//! let engine = FakeApiServer::new();
//! let http = FakeHttpServer::start(engine.clone(), HttpConfig::default()).await?;
//! println!("serving at {}", http.url());
//! let dir = tempfile::tempdir()?;
//! let kubeconfig = dir.path().join("kubeconfig");
//! http.write_kubeconfig(&kubeconfig, Some("default"))?;
//! // kubectl --kubeconfig <kubeconfig> get pods -A
//! http.shutdown().await?;
//! # Ok(()) }
//! ```
//!
//! The `fake-apiserver` binary (`cargo run -p fake-apiserver --
//! --help`) runs the same server with seeding, churn and a kubeconfig file.
//!
//! # Without a socket
//!
//! [`in_process_router`] is the same front end as a tower `Service` called in process, and
//! [`kube_client()`] (feature `kube-client`) a kube-client `Client` over it: code under test
//! makes its real `Api<K>` calls, in virtual time, with the engine's faults applying.
//!
//! # Limits
//!
//! What keeps a client from hanging or exhausting the server, with its default (the real
//! API server's where it has one) and the `fake-apiserver` flag:
//!
//! | limit | default | setting | flag |
//! | --- | --- | --- | --- |
//! | request body (413 beyond; the rest is read and discarded up to 256 MiB) | 3 MiB | fixed | |
//! | time to send a request head, from the accept or the first byte of a later request (then the connection is closed) | 32 s | [`HttpConfig::header_read_timeout`] | `--header-read-timeout` |
//! | time a keep-alive connection waits for its next request (never applies to an open watch: it is a request in flight) | 90 s | [`HttpConfig::idle_timeout`] | `--idle-timeout` |
//! | connections open at once (one beyond is closed as soon as it is accepted) | 512 | [`HttpConfig::max_connections`] | `--max-connections` |
//! | time an exec session lasts once upgraded (then its socket is closed; it also ends at shutdown) | 300 s | [`HttpConfig::exec_timeout`] | `--exec-timeout` |
//! | an exec command's standard input (more fails the command: 413 on the error channel) | 16 MiB | fixed | |
//! | exec sessions open at once (one more is a 429 before its upgrade) | 64 | [`MAX_EXEC_SESSIONS`] | |
//! | time one admission webhook call may take (its `timeoutSeconds`; then the call fails and its `failurePolicy` decides) | 10 s, at most 30 s | the webhook's | |
//! | an admission webhook's answer (more fails the call) | 16 MiB | fixed | |
//! | times a write is admitted again when its object changed while its webhooks were called (then a 409) | 3 | fixed | |
//! | time requests in flight get to finish at shutdown (watches end at once; then every connection is closed, also those of clients that stopped reading) | 0.5 s | fixed | |
//! | history bytes over all resources | 256 MiB | [`ServerConfig::history_max_bytes`](crate::ServerConfig::history_max_bytes) | `--history-max-bytes` |
//! | churn backlog (writes owed beyond it are skipped and counted) | 100 ms of writes, at most 10,000 per tick | [`MAX_CHURN_BACKLOG`](crate::seed::MAX_CHURN_BACKLOG) | |
//!
//! `timeoutSeconds` of any value is served (a huge one saturates, a negative one ends the
//! watch at once), and resourceVersions stop at `i64::MAX` instead of wrapping (see
//! [the crate docs](crate)). The binary stops within a second of SIGTERM or SIGINT in every state.
//!
#![doc = include_str!("admin_api.md")]
// Handlers answer with `Status` values by design, like the engine's request layer: they are
// the wire's error type, rendered as they are, and occur only on error paths.
#![allow(clippy::result_large_err)]

mod admin;
mod app;
mod auth;
mod discovery;
mod exec;
mod in_process;
mod jsonpath;
mod kubeconfig;
mod negotiate;
mod openapi;
mod origin;
mod patch;
mod protobuf;
mod resources;
mod response;
mod reviews;
mod scale;
mod serve;
mod served;
mod table;
mod webhooks;

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::middleware;
use parking_lot::Mutex;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::FakeApiServer;
use app::App;
use auth::AuthPolicy;
use origin::SitePolicy;

/// The admin API's endpoint table (Markdown), as documented above; the binary prints it in
/// its `--help`.
pub const ADMIN_API_TABLE: &str = admin::TABLE;

pub use in_process::in_process_router;
#[cfg(feature = "kube-client")]
pub use in_process::kube_client;
pub use served::served_summary;

/// Settings of a [`FakeHttpServer`]. `Default` listens on `127.0.0.1:0` (a free port) with no
/// token, and the connection limits of a real API server (see each field).
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The address to listen on (port 0: any free port).
    pub listen: SocketAddr,
    /// The bearer token clients must send. `None`: none on a loopback address, a generated one
    /// elsewhere. A token set here is required even on loopback.
    pub token: Option<String>,
    /// How long a client may take to send a complete request head, counted from the
    /// connection's accept or from the first byte of a later request; then the connection
    /// is closed (against slowloris clients). Default 32 s, the real API server's
    /// `ReadHeaderTimeout`.
    pub header_read_timeout: Duration,
    /// How long a keep-alive connection may wait for its next request before it is closed.
    /// It applies between requests only: an open watch, however quiet, is a request in
    /// flight. Default 90 s, the real API server's `IdleTimeout`.
    pub idle_timeout: Duration,
    /// The most connections open at once; a connection beyond it is closed as soon as it is
    /// accepted. Default 512 (below the common limit of 1,024 open files, so that a flood of
    /// connections meets this cap, not a server that can no longer accept).
    pub max_connections: usize,
    /// The longest a `pods/<name>/exec` session lasts once upgraded to a WebSocket (a client
    /// that never closes its input included); then the socket is closed. Default 5 minutes.
    pub exec_timeout: Duration,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            token: None,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            exec_timeout: DEFAULT_EXEC_TIMEOUT,
        }
    }
}

/// The default [`HttpConfig::header_read_timeout`]: 32 s.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(32);
/// The default [`HttpConfig::idle_timeout`]: 90 s.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// The default [`HttpConfig::max_connections`]: 512.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// The default [`HttpConfig::exec_timeout`]: 5 minutes.
pub const DEFAULT_EXEC_TIMEOUT: Duration = Duration::from_secs(300);
pub use exec::MAX_EXEC_SESSIONS;

/// What can go wrong starting, running or stopping the HTTP front end.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The listener could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A kubeconfig could not be written.
    #[error("cannot write the kubeconfig {}", path.display())]
    WriteKubeconfig {
        /// Where it was to be written.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The server task failed.
    #[error("the HTTP server on {addr} failed")]
    Serve {
        /// The address it listened on.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

/// A running HTTP front end over a [`FakeApiServer`]. Dropping it stops the server (without
/// waiting); [`FakeHttpServer::shutdown`] stops it and waits.
pub struct FakeHttpServer {
    addr: SocketAddr,
    policy: AuthPolicy,
    server: FakeApiServer,
    shutdown: CancellationToken,
    task: Option<JoinHandle<io::Result<()>>>,
}

impl std::fmt::Debug for FakeHttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeHttpServer")
            .field("addr", &self.addr)
            .field("token", &self.policy.token().map(|_| "<set>"))
            .finish_non_exhaustive()
    }
}

impl FakeHttpServer {
    /// Binds `config.listen` and serves `server` on it until shut down (needs a tokio
    /// runtime with IO enabled). Also registers the `customresourcedefinitions` resource
    /// (`apiextensions.k8s.io/v1`) with the engine, so that CRDs can be posted.
    pub async fn start(server: FakeApiServer, config: HttpConfig) -> Result<Self, HttpError> {
        let listener =
            TcpListener::bind(config.listen)
                .await
                .map_err(|source| HttpError::Bind {
                    addr: config.listen,
                    source,
                })?;
        let addr = listener.local_addr().map_err(|source| HttpError::Bind {
            addr: config.listen,
            source,
        })?;
        let policy = AuthPolicy::for_listener(&addr, config.token.as_deref(), auth::generate_token);
        let site = SitePolicy::for_listener(addr, policy.token().is_some());
        // Registering the same definition again is a no-op; a conflicting one (a test that
        // registered its own `customresourcedefinitions`) keeps the test's.
        let _ = server.register(crate::crd::crd_resource());
        let shutdown = CancellationToken::new();
        let app = App {
            server: server.clone(),
            shutdown: shutdown.clone(),
            churn: Arc::new(Mutex::new(None)),
            server_address: addr.to_string(),
            exec_timeout: config.exec_timeout,
            exec_sessions: Arc::new(tokio::sync::Semaphore::new(MAX_EXEC_SESSIONS)),
        };
        let router = router(app, policy.clone(), site);
        let limits = serve::Limits {
            header_read_timeout: config.header_read_timeout,
            idle_timeout: config.idle_timeout,
            max_connections: config.max_connections,
        };
        let task = tokio::spawn(serve::serve(listener, router, limits, shutdown.clone()));
        Ok(Self {
            addr,
            policy,
            server,
            shutdown,
            task: Some(task),
        })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server's base URL, `http://127.0.0.1:<port>` (an unspecified listen address is
    /// reported as loopback, where clients on this machine reach it).
    pub fn url(&self) -> String {
        let mut addr = self.addr;
        if addr.ip().is_unspecified() {
            addr.set_ip(if addr.is_ipv4() {
                std::net::Ipv4Addr::LOCALHOST.into()
            } else {
                std::net::Ipv6Addr::LOCALHOST.into()
            });
        }
        format!("http://{addr}")
    }

    /// The bearer token clients must send, if the server requires one.
    pub fn token(&self) -> Option<&str> {
        self.policy.token()
    }

    /// The engine behind the server.
    pub fn server(&self) -> &FakeApiServer {
        &self.server
    }

    /// A kubeconfig (YAML) for this server that kubectl, kube-client and the official Python
    /// and JavaScript clients accept: one cluster at [`url`](Self::url) (marked
    /// `insecure-skip-tls-verify`, as the JavaScript client requires of a plain `http:`
    /// server), one user with the token (if any), one current context with `namespace` as its
    /// default namespace.
    pub fn kubeconfig(&self, namespace: Option<&str>) -> String {
        kubeconfig::render(&self.url(), self.token(), namespace)
    }

    /// Writes [`kubeconfig`](Self::kubeconfig) to `path`, readable and writable by its owner
    /// only (mode 0600 on Unix, also when the file existed: it may hold the token).
    pub fn write_kubeconfig(&self, path: &Path, namespace: Option<&str>) -> Result<(), HttpError> {
        kubeconfig::write_private(path, self.kubeconfig(namespace).as_bytes()).map_err(|source| {
            HttpError::WriteKubeconfig {
                path: path.to_owned(),
                source,
            }
        })
    }

    /// Stops accepting connections, ends every open watch, gives other requests in flight
    /// half a second to finish, closes every connection left (a client that stopped reading,
    /// a request head half sent), and returns once the server has stopped.
    pub async fn shutdown(mut self) -> Result<(), HttpError> {
        self.shutdown.cancel();
        match self.task.take() {
            Some(task) => match task.await {
                Ok(result) => result.map_err(|source| HttpError::Serve {
                    addr: self.addr,
                    source,
                }),
                Err(join) => Err(HttpError::Serve {
                    addr: self.addr,
                    source: io::Error::other(join.to_string()),
                }),
            },
            None => Ok(()),
        }
    }
}

impl Drop for FakeHttpServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

fn router(app: App, policy: AuthPolicy, site: SitePolicy) -> Router {
    Router::new()
        .route("/_fake/", axum::routing::get(admin::index))
        .nest("/_fake", admin::router())
        .fallback(resources::dispatch)
        .with_state(app)
        .layer(middleware::from_fn_with_state(policy, auth::require_auth))
        // Outermost: web pages are refused before anything else.
        .layer(middleware::from_fn_with_state(
            site,
            origin::require_same_site,
        ))
}
