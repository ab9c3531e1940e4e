//! An admission webhook server for the webhook tests: HTTPS on a loopback port with a serving
//! certificate signed by a CA made for the test (rcgen), answering each `AdmissionReview` as
//! the test's function says and keeping what it was sent.

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// The service name the serving certificate is also for (`webhook` in namespace `system`),
/// as a webhook reached through `clientConfig.service` is checked.
pub const SERVICE_NAME: &str = "webhook.system.svc";

/// The loopback address the server listens on (`host:port`).
impl WebhookServer {
    pub fn address(&self) -> &str {
        self.base.trim_start_matches("https://")
    }
}

/// What the webhook answers a review: an HTTP status and a body, or nothing (it never
/// answers).
pub type Reply = Option<(u16, Value)>;

/// The answer function: the path posted to and the review's `request`.
type Answerer = dyn Fn(&str, &Value) -> Reply + Send + Sync;

/// A running webhook server; stops when dropped.
pub struct WebhookServer {
    base: String,
    ca_bundle: String,
    reviews: Arc<Mutex<Vec<(String, Value)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl WebhookServer {
    /// Starts a server answering with `answer`.
    pub async fn start(answer: impl Fn(&str, &Value) -> Reply + Send + Sync + 'static) -> Self {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "webhook test CA");
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let names = vec![
            "127.0.0.1".into(),
            "localhost".into(),
            SERVICE_NAME.to_owned(),
        ];
        let leaf = rcgen::CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &ca)
            .unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("https://{}", listener.local_addr().unwrap());
        let reviews = Arc::new(Mutex::new(Vec::new()));
        let answer: Arc<Answerer> = Arc::new(answer);
        let kept = Arc::clone(&reviews);
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let (acceptor, answer, kept) =
                    (acceptor.clone(), Arc::clone(&answer), Arc::clone(&kept));
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service =
                        service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                            let (answer, kept) = (Arc::clone(&answer), Arc::clone(&kept));
                            async move {
                                let path = request.uri().path().to_owned();
                                let query = request.uri().query().unwrap_or_default().to_owned();
                                let body = request.into_body().collect().await?.to_bytes();
                                let review: Value =
                                    serde_json::from_slice(&body).unwrap_or_default();
                                let mut seen = review.clone();
                                seen["query"] = json!(query);
                                kept.lock().unwrap().push((path.clone(), seen));
                                let reply = answer(&path, &review["request"]);
                                let Some((code, body)) = reply else {
                                    std::future::pending::<()>().await;
                                    unreachable!()
                                };
                                Ok::<_, hyper::Error>(
                                    hyper::Response::builder()
                                        .status(code)
                                        .header("content-type", "application/json")
                                        .body(Full::new(Bytes::from(body.to_string())))
                                        .unwrap(),
                                )
                            }
                        });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Self {
            base,
            ca_bundle: base64::engine::general_purpose::STANDARD.encode(ca.pem()),
            reviews,
            task,
        }
    }

    /// The URL of `path` on this server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The CA bundle a webhook configuration names (base64 of the PEM).
    pub fn ca_bundle(&self) -> &str {
        &self.ca_bundle
    }

    /// The reviews received so far: the path and the review (with the URL's query as
    /// `query`).
    pub fn reviews(&self) -> Vec<(String, Value)> {
        self.reviews.lock().unwrap().clone()
    }
}

/// A 200 answer to `request` from its webhook: `response` with the request's uid.
pub fn respond(request: &Value, mut response: Value) -> Reply {
    response["uid"] = request["uid"].clone();
    Some((
        200,
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}),
    ))
}

/// Allows `request`.
pub fn allow(request: &Value) -> Reply {
    respond(request, json!({"allowed": true}))
}

/// Allows `request` with the JSON patch `ops`.
pub fn patch(request: &Value, ops: Value) -> Reply {
    let patch = base64::engine::general_purpose::STANDARD.encode(ops.to_string());
    respond(
        request,
        json!({"allowed": true, "patchType": "JSONPatch", "patch": patch}),
    )
}

/// Refuses `request` with `message` and `code`.
pub fn deny(request: &Value, message: &str, code: u16) -> Reply {
    respond(
        request,
        json!({"allowed": false, "status": {"message": message, "code": code}}),
    )
}
