//! Admission webhooks called for the writes the HTTP front end serves: creates, updates and
//! patches of objects and their `status`, and deletes (one object or a collection's). What
//! is called and what its answer means is [`crate::webhooks`]'s; here are the calls (HTTPS
//! through rustls, bounded in time and size) and the order of a write around them.
//!
//! A write that a webhook may see is made in passes. A dry run of the request (left out of
//! the request log) gives the object as the write would store it, which the mutating
//! webhooks are shown, in order, their JSON patches applied one after the other, with one
//! more round for those with `reinvocationPolicy: IfNeeded` when a later one changed the
//! object. If they changed it, a dry run of the changed object gives what the validating
//! webhooks are shown (all called at once); otherwise the first dry run's, run again with
//! the validating admission policies if any are bound (upstream runs them after the mutating
//! webhooks, before the validating ones). The write is then
//! made (the request as sent, or the changed object as a whole) only while the stored
//! object is still the one the webhooks saw; if it changed meanwhile, the passes start
//! again (three times at most), as upstream's storage retries an update with its admission.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_util::rt::TokioIo;
use informer_core::Status;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};

use super::app::App;
use crate::admission::{Attributes, Equivalent};
use crate::server::unrecorded;
use crate::store::Warnings;
use crate::store::webhooks::Scene;
use crate::webhooks::{self, Endpoint, Hook, Verdict};
use crate::{DeleteOutcome, FakeApiServer, Preconditions, StoredObject, Target, status, twins};

/// The largest answer read from a webhook.
pub(crate) const MAX_WEBHOOK_ANSWER_BYTES: usize = 16 << 20;

/// How often a write is admitted again after the stored object changed under it.
const ATTEMPTS: usize = 3;

/// A write the webhooks may see.
pub(super) struct Write<'w> {
    pub app: &'w App,
    pub target: &'w Target,
    /// The object's name (none: a create through the collection).
    pub name: Option<&'w str>,
    /// `status`, or empty.
    pub subresource: &'static str,
    /// The kind of the write's options (`CreateOptions`, `UpdateOptions`, `DeleteOptions`)
    /// and what they say, as the review's `options`.
    pub options: Value,
    /// Where the webhooks' warnings go.
    pub warnings: &'w Warnings,
    /// The group, version and kind of the object sent, when it is not the resource's own
    /// (see [`admit_other_kind`]).
    pub kind: Option<(&'static str, &'static str, &'static str)>,
}

/// A write's result: the object, and whether it was created.
type Written = (Arc<StoredObject>, bool);

/// The options of a create or update through `target` (`kind`: `CreateOptions` or
/// `UpdateOptions`), as a review shows them.
pub(super) fn write_options(kind: &str, target: &Target) -> Value {
    let mut options = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
    if let Some(manager) = target.manager() {
        options["fieldManager"] = json!(manager);
    }
    if target.is_dry_run() {
        options["dryRun"] = json!(["All"]);
    }
    options
}

/// Makes the create or update `original` (the request as sent, through the target it is
/// given) with the webhooks that match it; `whole` writes a changed object as a whole
/// (`true`: a create).
pub(super) async fn admit_write(
    w: &Write<'_>,
    original: impl Fn(&Target) -> Result<Written, Status>,
    whole: impl Fn(&Target, Value, bool) -> Result<Written, Status>,
) -> Result<Written, Status> {
    let Some(scene) = scene(w) else {
        return original(w.target);
    };
    let mut conflict = None;
    for _ in 0..ATTEMPTS {
        let old = w
            .name
            .and_then(|n| unrecorded(|| w.app.server.get_at(w.target, n)).ok());
        let probe = w.target.clone().dry_run().without_warnings();
        let (prepared, created) = unrecorded(|| original(&probe.clone().before_mutation()))?;
        let old = old.filter(|_| !created);
        if let Some(o) = &old
            && prepared.resource_version() != o.resource_version()
        {
            // Changed between the read and the dry run.
            continue;
        }
        let operation = if created { "CREATE" } else { "UPDATE" };
        let old_value = old.as_ref().map(|o| o.to_value());
        let prepared_value = prepared.to_value();
        let (mut object, changed) = mutate(
            w,
            &scene,
            operation,
            prepared_value.clone(),
            old_value.as_ref(),
        )
        .await?;
        if changed
            && created
            && w.target.resource().status_subresource
            && let Some(o) = object.as_object_mut()
        {
            // The status the first pass made is the strategy's, from the object before
            // the webhooks changed it; a create makes it again from what they left (a pod's
            // QoS class from its containers as they are now).
            o.remove("status");
        }
        // What the validating webhooks see, checked by the policies first, as upstream
        // runs them before the webhooks.
        let shown = if changed {
            let quiet = probe.clone().without_field_manager();
            unrecorded(|| whole(&quiet, object.clone(), created))?.0
        } else if w.app.server.policies_bound() {
            unrecorded(|| original(&probe))?.0
        } else {
            prepared
        };
        validate(
            w,
            &scene,
            operation,
            Some(&shown.to_value()),
            old_value.as_ref(),
        )
        .await?;
        // The request's own write (a dry run if it is one), with the policies.
        let real = match &old {
            Some(o) => w.target.clone().expecting(o.resource_version()),
            None => w.target.clone(),
        };
        let result = if changed {
            whole(&real.without_field_manager(), object, created)
        } else {
            original(&real)
        };
        match result {
            // The stored object moved on (or one was created meanwhile): admit again.
            Err(s) if s.code == 409 => conflict = Some(s),
            other => return other,
        }
    }
    Err(conflict.unwrap_or_else(|| {
        status::internal_error("the object kept changing while its webhooks were called")
    }))
}

/// Makes the delete of `w.name` (`delete`, through the target and preconditions it is
/// given) with the webhooks that match it.
pub(super) async fn admit_delete(
    w: &Write<'_>,
    preconditions: &Preconditions,
    delete: impl Fn(&Target, &Preconditions) -> Result<DeleteOutcome, Status>,
) -> Result<DeleteOutcome, Status> {
    let (Some(scene), Some(name)) = (scene(w), w.name) else {
        return delete(w.target, preconditions);
    };
    let chosen = preconditions.uid.is_some() || preconditions.resource_version.is_some();
    let mut conflict = None;
    for _ in 0..ATTEMPTS {
        let old = unrecorded(|| w.app.server.get_at(w.target, name))?;
        let old_value = old.to_value();
        mutate(w, &scene, "DELETE", Value::Null, Some(&old_value)).await?;
        validate(w, &scene, "DELETE", None, Some(&old_value)).await?;
        if w.target.is_dry_run() || chosen {
            return delete(w.target, preconditions);
        }
        let seen = Preconditions {
            uid: Some(old.uid().to_owned()),
            resource_version: Some(old.resource_version().to_string()),
        };
        match delete(w.target, &seen) {
            Err(s) if s.code == 409 => conflict = Some(s),
            other => return other,
        }
    }
    Err(conflict.unwrap_or_else(|| {
        status::internal_error("the object kept changing while its webhooks were called")
    }))
}

/// What the webhooks of `w` are decided with, if a webhook's rules name the resource and
/// subresource it writes through (else nothing needs preparing for them).
pub(super) fn scene(w: &Write<'_>) -> Option<Scene> {
    w.app
        .server
        .webhook_scene(w.target, w.target.namespace(), w.subresource)
}

/// Calls the webhooks of a write through a subresource whose object is another kind
/// (`w.kind`: a `Scale`, an `Eviction`, a `Binding`, a `TokenRequest`, `PodExecOptions`),
/// `operation` (`CREATE`, `UPDATE`, `CONNECT`) with `object` and `old`: the object as the
/// mutating webhooks left it, for the caller to act on. Nothing is stored here; the
/// caller's write follows (upstream admits these before their registry acts, too).
/// `scene`: [`scene`]'s (none: the object as it is).
pub(super) async fn admit_other_kind(
    w: &Write<'_>,
    scene: Option<&Scene>,
    operation: &'static str,
    object: Value,
    old: Option<Value>,
) -> Result<Value, Status> {
    let Some(scene) = scene else {
        return Ok(object);
    };
    let (object, _) = mutate(w, scene, operation, object, old.as_ref()).await?;
    validate(w, scene, operation, Some(&object), old.as_ref()).await?;
    Ok(object)
}

/// The write as `hook`s see it: `object` (null for a delete) and `old`, with the same write
/// through the resource's other form when it is served in two.
struct Seen {
    object: Option<Value>,
    old: Option<Value>,
    twin_object: Option<Value>,
    twin_old: Option<Value>,
}

impl Seen {
    fn of(w: &Write<'_>, scene: &Scene, object: Option<&Value>, old: Option<&Value>) -> Self {
        let def = w.target.resource();
        let converted = |o: Option<&Value>| {
            scene
                .twin
                .as_ref()
                .zip(o)
                .and_then(|(to, o)| twins::converted(def, to, o))
        };
        Self {
            object: object.cloned(),
            old: old.cloned(),
            twin_object: converted(object),
            twin_old: converted(old),
        }
    }

    fn attributes<'a>(
        &'a self,
        w: &'a Write<'_>,
        scene: &'a Scene,
        operation: &'static str,
    ) -> Attributes<'a> {
        let def = w.target.resource();
        let name = w
            .name
            .or_else(|| self.object.as_ref().and_then(name_of))
            .unwrap_or_default();
        Attributes {
            operation,
            def,
            subresource: w.subresource,
            name,
            namespace: w.target.namespace().filter(|_| def.namespaced),
            object: self.object.as_ref(),
            old: self.old.as_ref(),
            dry_run: w.target.is_dry_run(),
            namespace_object: scene.namespace_object.as_ref(),
            requested: def,
            equivalent: scene.twin.as_deref().map(|def| Equivalent {
                def,
                object: self.twin_object.as_ref(),
                old: self.twin_old.as_ref(),
            }),
            object_kind: w.kind,
        }
    }
}

fn name_of(object: &Value) -> Option<&str> {
    object.pointer("/metadata/name").and_then(Value::as_str)
}

/// Calls the mutating webhooks on `object` (null for a delete): the object as they left it,
/// and whether they changed it.
async fn mutate(
    w: &Write<'_>,
    scene: &Scene,
    operation: &'static str,
    mut object: Value,
    old: Option<&Value>,
) -> Result<(Value, bool), Status> {
    let mut changed = false;
    // Upstream's reinvocation: a change marks the webhooks called before it that asked to
    // be called again; they are, once, after the first round.
    let mut reinvocable = Vec::new();
    let mut again = BTreeSet::new();
    for (i, hook) in scene.mutating.iter().enumerate() {
        if let Some(this) = mutate_once(w, scene, hook, operation, &mut object, old).await? {
            if this {
                changed = true;
                again.extend(reinvocable.drain(..));
            }
            if hook.reinvoke {
                reinvocable.push(i);
            }
        }
    }
    for i in again {
        if mutate_once(w, scene, &scene.mutating[i], operation, &mut object, old).await?
            == Some(true)
        {
            changed = true;
        }
    }
    Ok((object, changed))
}

/// Calls one mutating webhook if it matches: whether it changed `object` (none: not
/// called, or failed open).
async fn mutate_once(
    w: &Write<'_>,
    scene: &Scene,
    hook: &Hook,
    operation: &'static str,
    object: &mut Value,
    old: Option<&Value>,
) -> Result<Option<bool>, Status> {
    let current = Some(&*object).filter(|o| !o.is_null());
    let seen = Seen::of(w, scene, current, old);
    let a = seen.attributes(w, scene, operation);
    let equivalent = a.equivalent();
    let Some(shown) = webhooks::invocation(hook, &a, equivalent.as_ref())? else {
        return Ok(None);
    };
    let Some(verdict) = call(w, hook, shown, true).await? else {
        return Ok(None);
    };
    let Some(patch) = verdict.patch else {
        return Ok(Some(false));
    };
    if current.is_none() {
        return Err(status::internal_error(&format!(
            "admission webhook \"{}\" attempted to modify the object, which is not supported \
             for this operation",
            hook.name
        )));
    }
    // The patch applies to the form the webhook was shown; a twin's goes back.
    let through_twin = !std::ptr::eq(shown.def, a.def);
    let mut patched = shown.object.cloned().unwrap_or(Value::Null);
    super::patch::json_patch(&mut patched, &patch)
        .map_err(|s| status::internal_error(&s.message))?;
    if through_twin {
        patched = twins::converted(shown.def, a.def, &patched).ok_or_else(|| {
            status::internal_error(&format!(
                "admission webhook \"{}\" answered a patch that does not convert back",
                hook.name
            ))
        })?;
    }
    let changed = patched != *object;
    *object = patched;
    Ok(Some(changed))
}

/// Calls every validating webhook that matches, all at once; the first refusal (in their
/// order) is the write's.
async fn validate(
    w: &Write<'_>,
    scene: &Scene,
    operation: &'static str,
    object: Option<&Value>,
    old: Option<&Value>,
) -> Result<(), Status> {
    let seen = Seen::of(w, scene, object, old);
    let a = seen.attributes(w, scene, operation);
    let equivalent = a.equivalent();
    let mut calls = Vec::new();
    for hook in &scene.validating {
        if let Some(shown) = webhooks::invocation(hook, &a, equivalent.as_ref())? {
            calls.push(call(w, hook, shown, false));
        }
    }
    for outcome in futures::future::join_all(calls).await {
        outcome?;
    }
    Ok(())
}

/// Calls `hook` with the write `shown`: its verdict when it allowed the write (none when
/// the call failed and the webhook fails open), the refusal otherwise.
async fn call(
    w: &Write<'_>,
    hook: &Hook,
    shown: &Attributes<'_>,
    mutating: bool,
) -> Result<Option<Verdict>, Status> {
    let outcome = match dry_run_check(w, hook) {
        Err(refusal) => return Err(refusal),
        Ok(Some(why)) => Err(why),
        Ok(None) if hook.review_version.is_none() => Err(
            "could not create admission objects: webhook does not accept known AdmissionReview \
             versions (v1, v1beta1)"
                .to_owned(),
        ),
        Ok(None) => {
            let uid = crate::object::uuid_v4(rand::random());
            let review = webhooks::review(hook, shown, &uid, &w.options);
            match post(&w.app.server, hook, &review).await {
                Ok(body) => webhooks::verdict(hook, &uid, mutating, &body),
                Err(why) => Err(why),
            }
        }
    };
    match outcome {
        Ok(verdict) => {
            if !verdict.warnings.is_empty() {
                w.warnings.lock().extend(verdict.warnings.iter().cloned());
            }
            if verdict.allowed {
                Ok(Some(verdict))
            } else {
                Err(webhooks::denied(hook, verdict.result))
            }
        }
        Err(why) if hook.fail_open => {
            tracing::warn!(
                configuration = %hook.configuration,
                webhook = %hook.name,
                %why,
                "webhook call failed; failing open"
            );
            Ok(None)
        }
        Err(why) => Err(webhooks::call_failed(hook, &why)),
    }
}

/// For a dry run: the refusal of a webhook with side effects, or the call failure of one
/// whose `sideEffects` is unset.
fn dry_run_check(w: &Write<'_>, hook: &Hook) -> Result<Option<String>, Status> {
    if !w.target.is_dry_run() {
        return Ok(None);
    }
    match webhooks::check_dry_run(hook)? {
        true => Ok(None),
        false => Ok(Some("Webhook SideEffects is nil".into())),
    }
}

/// Posts `review` to `hook`: the answer's body, or why the call failed (upstream's
/// `failed to call webhook: Post "<url>?timeout=<n>s": ...`). A service is reached at the
/// address the test routed it to ([`FakeApiServer::route_service`]).
async fn post(server: &FakeApiServer, hook: &Hook, review: &Value) -> Result<Vec<u8>, String> {
    let timeout = Duration::from_secs(hook.timeout_seconds);
    let mut dial = None;
    let url = match &hook.endpoint {
        Some(Endpoint::Url(url)) => url.clone(),
        Some(Endpoint::Service {
            namespace,
            name,
            path,
            port,
        }) => {
            let url = format!("https://{name}.{namespace}.svc:{port}{path}");
            match server.service_route(namespace, name, *port) {
                Some(address) => dial = Some(address),
                None => {
                    // No cluster network here: a service is reachable only if routed.
                    return Err(format!(
                        "failed to call webhook: Post \"{url}?timeout={}s\": dial tcp: lookup \
                         {name}.{namespace}.svc: no such host (the fake API server has no \
                         cluster network: route the service with FakeApiServer::route_service \
                         or PUT /_fake/service-routes, or give the webhook a clientConfig.url)",
                        hook.timeout_seconds
                    ));
                }
            }
            url
        }
        None => {
            return Err(
                "could not get REST client: the webhook has neither clientConfig.url nor \
                 clientConfig.service"
                    .into(),
            );
        }
    };
    let separator = if url.contains('?') { '&' } else { '?' };
    let shown = format!("{url}{separator}timeout={}s", hook.timeout_seconds);
    let body =
        serde_json::to_vec(review).map_err(|e| format!("could not encode the review: {e}"))?;
    match tokio::time::timeout(
        timeout,
        exchange(
            &shown,
            dial.as_deref(),
            hook.ca_bundle.as_deref(),
            body,
            timeout,
        ),
    )
    .await
    {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(why)) => Err(format!("failed to call webhook: Post \"{shown}\": {why}")),
        Err(_) => Err(format!(
            "failed to call webhook: Post \"{shown}\": context deadline exceeded"
        )),
    }
}

/// One HTTPS exchange: `body` posted to `url` (through a connection to `dial` if given,
/// else to the URL's host), the answer read (at most [`MAX_WEBHOOK_ANSWER_BYTES`]); the
/// caller bounds its time.
async fn exchange(
    url: &str,
    dial: Option<&str>,
    ca_bundle: Option<&[u8]>,
    body: Vec<u8>,
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    let uri: http::Uri = url.parse().map_err(|e| format!("parse \"{url}\": {e}"))?;
    match uri.scheme_str() {
        Some("https") => {}
        other => {
            return Err(format!(
                "unsupported protocol scheme \"{}\" (webhooks are called over https)",
                other.unwrap_or_default()
            ));
        }
    }
    let host = uri.host().unwrap_or_default();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let port = uri.port_u16().unwrap_or(443);
    let connected = match dial {
        Some(address) => tokio::net::TcpStream::connect(address).await,
        None => tokio::net::TcpStream::connect((bare, port)).await,
    };
    let tcp = connected.map_err(|e| format!("dial tcp {host}:{port}: {}", go_dial_error(&e)))?;
    let server_name =
        ServerName::try_from(bare.to_owned()).map_err(|e| format!("server name {bare:?}: {e}"))?;
    let connector = tokio_rustls::TlsConnector::from(Arc::new(tls_config(ca_bundle)?));
    let tls = connector
        .connect(server_name, tcp)
        .await
        .map_err(|e| format!("tls: {e}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    // The connection is driven apart from the exchange, no longer than the call may last.
    tokio::spawn(tokio::time::timeout(timeout, connection));
    let authority = uri
        .authority()
        .map(|a| a.as_str().to_owned())
        .unwrap_or_default();
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
    let request = http::Request::post(path)
        .header(http::header::HOST, authority)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, */*")
        .header(http::header::USER_AGENT, "fake-apiserver")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let code = response.status();
    let answer = Limited::new(response.into_body(), MAX_WEBHOOK_ANSWER_BYTES)
        .collect()
        .await
        .map_err(|e| format!("reading the answer: {e}"))?
        .to_bytes();
    if !code.is_success() {
        return Err(unsuccessful(code, &answer));
    }
    Ok(answer.to_vec())
}

/// A connection's failure as Go's dialer words the common ones.
fn go_dial_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connect: connection refused".into(),
        std::io::ErrorKind::TimedOut => "i/o timeout".into(),
        std::io::ErrorKind::HostUnreachable => "connect: no route to host".into(),
        std::io::ErrorKind::NetworkUnreachable => "connect: network is unreachable".into(),
        _ => e.to_string(),
    }
}

/// What client-go says of an answer that is not a success: its Status's message, or the
/// body.
fn unsuccessful(code: http::StatusCode, body: &[u8]) -> String {
    if let Ok(s) = serde_json::from_slice::<Status>(body)
        && !s.message.is_empty()
    {
        return s.message;
    }
    let text = String::from_utf8_lossy(body);
    let text: String = text.chars().take(256).collect();
    if text.trim().is_empty() {
        format!(
            "the server responded with the status code {} but did not return more information",
            code.as_u16()
        )
    } else {
        format!("an error on the server ({text:?}) has prevented the request from succeeding")
    }
}

/// The TLS client configuration of a call: the `caBundle`'s certificates as the roots, or
/// the system's when there is none.
fn tls_config(ca_bundle: Option<&[u8]>) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    match ca_bundle {
        Some(pem) => {
            for cert in CertificateDer::pem_slice_iter(pem) {
                let cert = cert.map_err(|e| format!("unable to load root certificates: {e}"))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("unable to load root certificates: {e}"))?;
            }
            if roots.is_empty() {
                return Err(
                    "unable to load root certificates: no certificate in the caBundle".into(),
                );
            }
        }
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                // A system certificate rustls cannot use is left out, as Go's pool skips it.
                let _ = roots.add(cert);
            }
        }
    }
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())
        .map(|b| b.with_root_certificates(roots).with_no_client_auth())
}
