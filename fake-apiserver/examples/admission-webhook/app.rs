//! The example's logic (its test runs it too): a webhook served with kube-core's admission
//! types, registered with the fake API server, and two pods created through kube-client.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, WebhookClientConfig,
};
use k8s_openapi::api::core::v1::Pod;
use kube_client::Api;
use kube_client::api::PostParams;
use kube_core::DynamicObject;
use kube_core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

/// Any failure of the run.
pub type Failure = Box<dyn std::error::Error + Send + Sync>;

/// The webhook: labels every pod, refuses those labelled `forbidden: "true"`.
fn admit(
    review: AdmissionReview<DynamicObject>,
) -> Result<AdmissionReview<DynamicObject>, Failure> {
    let request: AdmissionRequest<DynamicObject> = review.try_into()?;
    let response = AdmissionResponse::from(&request);
    let labels = request
        .object
        .as_ref()
        .and_then(|o| o.metadata.labels.as_ref());
    if labels.is_some_and(|l| l.get("forbidden").is_some_and(|v| v == "true")) {
        return Ok(response
            .deny("forbidden pods are not admitted")
            .into_review());
    }
    // A JSON patch adding the label (labels may be absent: add them whole).
    let patch = match labels {
        Some(_) => serde_json::json!([{"op": "add", "path": "/metadata/labels/admitted-by",
                                        "value": "example"}]),
        None => serde_json::json!([{"op": "add", "path": "/metadata/labels",
                                     "value": {"admitted-by": "example"}}]),
    };
    Ok(response
        .with_patch(serde_json::from_value(patch)?)?
        .into_review())
}

/// Answers one review (a 400 with the reason for a body that is not one).
async fn handle(
    request: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<Full<Bytes>>, hyper::Error> {
    let body = request.into_body().collect().await?.to_bytes();
    let answer = serde_json::from_slice(&body)
        .map_err(|e| -> Failure { Box::new(e) })
        .and_then(admit)
        .and_then(|review| serde_json::to_vec(&review).map_err(|e| -> Failure { Box::new(e) }));
    let (code, body) = match answer {
        Ok(body) => (hyper::StatusCode::OK, body),
        Err(e) => (hyper::StatusCode::BAD_REQUEST, e.to_string().into_bytes()),
    };
    let mut response = hyper::Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = code;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    Ok(response)
}

/// Serves the webhook over HTTPS on a loopback port; answers its URL and the CA's PEM.
async fn serve_webhook() -> Result<(String, String), Failure> {
    let ca_key = rcgen::KeyPair::generate()?;
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key)?;
    let key = rcgen::KeyPair::generate()?;
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])?.signed_by(&key, &ca)?;
    let tls = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(
        vec![cert.der().clone()],
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    )?;
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("https://{}/mutate", listener.local_addr()?);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(stream) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(handle);
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    Ok((url, ca.pem()))
}

/// What the run showed: the labels of the pod the webhook mutated, and the refusal of the
/// one it did not admit.
pub struct Outcome {
    pub labels: std::collections::BTreeMap<String, String>,
    pub refusal: String,
}

/// Serves the webhook, registers it with the fake server behind `http` (which has a `demo`
/// namespace), and creates the two pods.
pub async fn run(http: &fake_apiserver::http::FakeHttpServer) -> Result<Outcome, Failure> {
    let kubeconfig = kube_client::config::Kubeconfig::from_yaml(&http.kubeconfig(None))?;
    let config = kube_client::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube_client::config::KubeConfigOptions::default(),
    )
    .await?;
    let client = kube_client::Client::try_from(config)?;
    let (url, ca) = serve_webhook().await?;
    let configuration = MutatingWebhookConfiguration {
        metadata: kube_core::ObjectMeta {
            name: Some("label-pods".into()),
            ..Default::default()
        },
        webhooks: Some(vec![MutatingWebhook {
            name: "label-pods.example.com".into(),
            client_config: WebhookClientConfig {
                url: Some(url),
                ca_bundle: Some(ByteString(ca.into_bytes())),
                ..Default::default()
            },
            rules: Some(vec![RuleWithOperations {
                api_groups: Some(vec![String::new()]),
                api_versions: Some(vec!["v1".into()]),
                operations: Some(vec!["CREATE".into()]),
                resources: Some(vec!["pods".into()]),
                ..Default::default()
            }]),
            side_effects: "None".into(),
            admission_review_versions: vec!["v1".into()],
            ..Default::default()
        }]),
    };
    Api::<MutatingWebhookConfiguration>::all(client.clone())
        .create(&PostParams::default(), &configuration)
        .await?;

    let pods: Api<Pod> = Api::namespaced(client, "demo");
    let pod = |name: &str, forbidden: bool| -> Result<Pod, serde_json::Error> {
        let labels = if forbidden {
            serde_json::json!({"forbidden": "true"})
        } else {
            serde_json::json!({"app": name})
        };
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]},
        }))
    };
    let created = pods
        .create(&PostParams::default(), &pod("web", false)?)
        .await?;
    let refusal = match pods
        .create(&PostParams::default(), &pod("sneaky", true)?)
        .await
    {
        Ok(_) => return Err("the forbidden pod was admitted".into()),
        Err(kube_client::Error::Api(status)) => status.message,
        Err(e) => return Err(e.into()),
    };
    Ok(Outcome {
        labels: created.metadata.labels.unwrap_or_default(),
        refusal,
    })
}
