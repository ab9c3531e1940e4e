//! Admission webhooks (`admissionregistration.k8s.io/v1` `MutatingWebhookConfiguration` and
//! `ValidatingWebhookConfiguration`): which webhooks a write calls, the `AdmissionReview` each
//! is sent, what its answer means, and the errors the request then gets, as upstream's
//! webhook admission plugins decide them (read in `k8s.io/apiserver/pkg/admission/plugin/
//! webhook`: `generic/webhook.go`'s `ShouldCallHook`, `predicates/namespace` and `object`,
//! `matchconditions/matcher.go`, `request/admissionreview.go`, `mutating/dispatcher.go`,
//! `validating/dispatcher.go`, `errors/statuserror.go`). No IO here: the HTTP front end
//! makes the calls (`http::webhooks`).

use base64::Engine as _;
use informer_core::Status;
use serde_json::{Value, json};

use crate::admission::{self, Attributes, text};
use crate::rules::Activation;
use crate::{ResourceDef, status};

/// The longest a webhook may take (`timeoutSeconds`: 1 to 30, 10 when unset).
pub(crate) const MAX_TIMEOUT_SECONDS: u64 = 30;
const DEFAULT_TIMEOUT_SECONDS: u64 = 10;

/// Where a webhook is called.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Endpoint {
    /// `clientConfig.url`.
    Url(String),
    /// `clientConfig.service`: namespace, name, path and port.
    Service {
        namespace: String,
        name: String,
        path: String,
        port: u16,
    },
}

/// One webhook of a configuration.
#[derive(Clone, Debug)]
pub(crate) struct Hook {
    /// The configuration's name.
    pub configuration: String,
    /// The webhook's name.
    pub name: String,
    /// Where it is called.
    pub endpoint: Option<Endpoint>,
    /// The PEM certificates that sign its serving certificate (`clientConfig.caBundle`);
    /// none: the system's trust roots.
    pub ca_bundle: Option<Vec<u8>>,
    /// `timeoutSeconds`, bounded.
    pub timeout_seconds: u64,
    /// `failurePolicy: Ignore`: a call that fails lets the write through.
    pub fail_open: bool,
    /// `sideEffects`, if set.
    pub side_effects: Option<String>,
    /// The first `admissionReviewVersions` this server speaks (`v1`, `v1beta1`).
    pub review_version: Option<&'static str>,
    /// `reinvocationPolicy: IfNeeded` (mutating webhooks).
    pub reinvoke: bool,
    /// The matching criteria in a policy's shape (selectors, `matchPolicy`, the `rules` as
    /// `resourceRules`), for [`admission::matching`].
    criteria: Value,
    /// Whether the webhook has rules at all (none: it matches nothing).
    has_rules: bool,
    /// `matchConditions`: their expressions.
    conditions: Vec<String>,
}

/// The webhooks of `configurations` (stored objects, in name order), in the order upstream
/// calls mutating ones: configuration by configuration, each's webhooks as listed.
pub(crate) fn hooks(configurations: &[Value]) -> Vec<Hook> {
    let mut out = Vec::new();
    for configuration in configurations {
        let configuration_name = text(configuration, "/metadata/name");
        for webhook in configuration
            .get("webhooks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            out.push(hook(configuration_name, webhook));
        }
    }
    out
}

fn hook(configuration: &str, webhook: &Value) -> Hook {
    let client = webhook.get("clientConfig").unwrap_or(&Value::Null);
    let endpoint = if let Some(url) = client.get("url").and_then(Value::as_str) {
        Some(Endpoint::Url(url.to_owned()))
    } else {
        client.get("service").filter(|s| s.is_object()).map(|s| {
            let port = s
                .get("port")
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or(443);
            Endpoint::Service {
                namespace: text(s, "/namespace").to_owned(),
                name: text(s, "/name").to_owned(),
                path: text(s, "/path").to_owned(),
                port,
            }
        })
    };
    // A `[]byte` in Go's JSON: base64 of the PEM text.
    let ca_bundle = client
        .get("caBundle")
        .and_then(Value::as_str)
        .filter(|b| !b.is_empty())
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok());
    let timeout_seconds = webhook
        .get("timeoutSeconds")
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
        .clamp(1, MAX_TIMEOUT_SECONDS);
    let review_version = admission::strings(webhook.get("admissionReviewVersions"))
        .into_iter()
        .find_map(|v| match v {
            "v1" => Some("v1"),
            "v1beta1" => Some("v1beta1"),
            _ => None,
        });
    let rules = webhook.get("rules").cloned().unwrap_or(Value::Null);
    let has_rules = rules.as_array().is_some_and(|r| !r.is_empty());
    let mut criteria = json!({"resourceRules": rules});
    for field in ["namespaceSelector", "objectSelector", "matchPolicy"] {
        if let Some(v) = webhook.get(field) {
            criteria[field] = v.clone();
        }
    }
    let conditions = webhook
        .get("matchConditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| text(c, "/expression").to_owned())
        .collect();
    Hook {
        configuration: configuration.to_owned(),
        name: text(webhook, "/name").to_owned(),
        endpoint,
        ca_bundle,
        timeout_seconds,
        fail_open: text(webhook, "/failurePolicy") == "Ignore",
        side_effects: webhook
            .get("sideEffects")
            .and_then(Value::as_str)
            .map(str::to_owned),
        review_version,
        reinvoke: text(webhook, "/reinvocationPolicy") == "IfNeeded",
        criteria,
        has_rules,
        conditions,
    }
}

/// Whether a rule of `hook` names resource `def` (or, unless `matchPolicy: Exact`, `twin`,
/// its other served form) through `subresource`, whatever the operation and scope: else no
/// write to it calls the webhook, and it is left out before anything is prepared.
pub(crate) fn may_match(
    hook: &Hook,
    def: &ResourceDef,
    twin: Option<&ResourceDef>,
    subresource: &str,
) -> bool {
    let fuzzy = hook.criteria.get("matchPolicy").and_then(Value::as_str) != Some("Exact");
    let names = |rule: &Value, def: &ResourceDef| admission::rule_names(rule, def, subresource);
    hook.criteria
        .get("resourceRules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|rule| names(rule, def) || (fuzzy && twin.is_some_and(|twin| names(rule, twin))))
}

/// Whether `hook` is called for the write `a` (`equivalent`: the same write through the
/// other form of a resource served in two), and the form it is shown: upstream's
/// `ShouldCallHook` (namespace and object selectors, the rules as the request is, then
/// through the equivalent form unless `matchPolicy: Exact`, then the `matchConditions`; a
/// condition that fails to evaluate is a 403 unless the webhook fails open).
pub(crate) fn invocation<'x, 'a>(
    hook: &Hook,
    a: &'x Attributes<'a>,
    equivalent: Option<&'x Attributes<'a>>,
) -> Result<Option<&'x Attributes<'a>>, Status> {
    if !hook.has_rules {
        return Ok(None);
    }
    let Some(seen) = admission::matching(&hook.criteria, a, equivalent) else {
        return Ok(None);
    };
    if hook.conditions.is_empty() {
        return Ok(Some(seen));
    }
    let mut activation = Activation::default();
    activation.bind("object", seen.object);
    activation.bind("oldObject", seen.old);
    activation.bind("request", Some(&admission::request(seen)));
    let mut errors = Vec::new();
    for expression in &hook.conditions {
        match activation.is_false(expression) {
            Ok(true) => return Ok(None),
            Ok(false) => {}
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        return Ok(Some(seen));
    }
    if hook.fail_open {
        return Ok(None);
    }
    let resource = if a.def.group.is_empty() {
        a.def.plural.clone()
    } else {
        format!("{}.{}", a.def.plural, a.def.group)
    };
    let message = match errors.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    Err(Status::failure(
        403,
        "Forbidden",
        format!("{resource} \"{}\" is forbidden: {message}", a.name),
    ))
}

/// The `AdmissionReview` `hook` is sent for the write `seen` (`uid`: the request's; `options`:
/// the write's `CreateOptions`, `UpdateOptions` or `DeleteOptions`), in the version it takes.
pub(crate) fn review(hook: &Hook, seen: &Attributes<'_>, uid: &str, options: &Value) -> Value {
    let mut request = admission::request(seen);
    request["uid"] = json!(uid);
    request["object"] = seen.object.cloned().unwrap_or(Value::Null);
    request["oldObject"] = seen.old.cloned().unwrap_or(Value::Null);
    request["options"] = options.clone();
    json!({
        "apiVersion": format!("admission.k8s.io/{}", hook.review_version.unwrap_or("v1")),
        "kind": "AdmissionReview",
        "request": request,
    })
}

/// A webhook's answer, once verified.
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    /// `response.allowed`.
    pub allowed: bool,
    /// `response.patch`, decoded (a JSON patch), if there is one.
    pub patch: Option<Value>,
    /// `response.warnings`.
    pub warnings: Vec<String>,
    /// `response.status`, if given.
    pub result: Option<Status>,
}

/// Why a call to a webhook failed: what upstream's `ErrCallingWebhook` says after
/// `failed calling webhook "<name>": ` (the failure policy decides what comes of it).
pub(crate) type CallFailure = String;

/// Reads `body`, `hook`'s answer to the review `uid` (`mutating`: from a mutating webhook),
/// as upstream's `VerifyAdmissionResponse` and the mutating dispatcher check it.
pub(crate) fn verdict(
    hook: &Hook,
    uid: &str,
    mutating: bool,
    body: &[u8],
) -> Result<Verdict, CallFailure> {
    let review: Value = serde_json::from_slice(body)
        .map_err(|e| format!("failed to call webhook: the answer is not JSON: {e}"))?;
    let invalid = |why: String| format!("received invalid webhook response: {why}");
    let Some(response) = review.get("response").filter(|r| r.is_object()) else {
        return Err(invalid("webhook response was absent".into()));
    };
    let v1 = hook.review_version != Some("v1beta1");
    if v1 {
        let got = text(response, "/uid");
        if got != uid {
            return Err(invalid(format!(
                "expected response.uid={uid:?}, got {got:?}"
            )));
        }
        let (api_version, kind) = (text(&review, "/apiVersion"), text(&review, "/kind"));
        if api_version != "admission.k8s.io/v1" || kind != "AdmissionReview" {
            let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
            return Err(invalid(format!(
                "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got \
                 {group}/{version}, Kind={kind}"
            )));
        }
    }
    let patch_bytes = patch_bytes(response.get("patch"))?;
    let patch_type = response.get("patchType").and_then(Value::as_str);
    if !mutating {
        if !patch_bytes.is_empty() {
            return Err(invalid(
                "validating webhook may not return response.patch".into(),
            ));
        }
        if patch_type.is_some() {
            return Err(invalid(
                "validating webhook may not return response.patchType".into(),
            ));
        }
    } else if v1 {
        match (patch_bytes.is_empty(), patch_type) {
            (false, None) => {
                return Err(invalid(
                    "webhook returned response.patch but not response.patchType".into(),
                ));
            }
            (true, Some(_)) => {
                return Err(invalid(
                    "webhook returned response.patchType but not response.patch".into(),
                ));
            }
            (_, Some("")) => {
                return Err(invalid(
                    "webhook returned invalid response.patchType of \"\"".into(),
                ));
            }
            _ => {}
        }
    }
    let result = match response.get("status") {
        Some(s) if !s.is_null() => Some(
            serde_json::from_value::<Status>(s.clone())
                .map_err(|e| format!("failed to call webhook: response.status: {e}"))?,
        ),
        _ => None,
    };
    let patch = if mutating && !patch_bytes.is_empty() {
        let bytes = patch_bytes;
        // v1beta1 answers are taken as JSON patches, as upstream pins them.
        if let Some(t) = patch_type.filter(|t| *t != "JSONPatch") {
            return Err(format!("unsupported patch type {t:?}"));
        }
        let patch: Value = serde_json::from_slice(&bytes)
            .map_err(|e| format!("received undecodable patch in webhook response: {e}"))?;
        if !patch.is_array() {
            return Err(
                "received undecodable patch in webhook response: a JSON patch is an array \
                 of operations"
                    .into(),
            );
        }
        Some(patch).filter(|p| p.as_array().is_some_and(|ops| !ops.is_empty()))
    } else {
        None
    };
    Ok(Verdict {
        allowed: response.get("allowed").and_then(Value::as_bool) == Some(true),
        patch,
        warnings: admission::strings(response.get("warnings"))
            .into_iter()
            .map(str::to_owned)
            .collect(),
        result,
    })
}

/// `response.patch`, a Go `[]byte`: a base64 string, or, as Go's decoder also takes it, an
/// array of numbers (what kube-rs's `AdmissionResponse` sends); none when absent.
fn patch_bytes(patch: Option<&Value>) -> Result<Vec<u8>, CallFailure> {
    let wrong = |what: &str| {
        format!(
            "failed to call webhook: json: cannot unmarshal {what} into Go struct field \
             AdmissionResponse.response.patch of type []uint8"
        )
    };
    match patch {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(text)) => base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| format!("failed to call webhook: response.patch: {e}")),
        Some(Value::Array(items)) => items
            .iter()
            .map(|n| {
                n.as_u64()
                    .and_then(|n| u8::try_from(n).ok())
                    .ok_or_else(|| wrong(&format!("{n}")))
            })
            .collect(),
        Some(Value::Bool(_)) => Err(wrong("bool")),
        Some(Value::Number(_)) => Err(wrong("number")),
        Some(Value::Object(_)) => Err(wrong("object")),
    }
}

/// The refusal of a webhook that answered `allowed: false` (upstream's `ToStatusErr`): its
/// status, at least a 400, its message prefixed with who denied it.
pub(crate) fn denied(hook: &Hook, result: Option<Status>) -> Status {
    let denied_by = format!("admission webhook \"{}\" denied the request", hook.name);
    let mut s = result.unwrap_or_else(|| Status::failure(400, "", ""));
    if s.code < 400 {
        s.code = 400;
    }
    if s.status.is_empty() || s.status == "Success" {
        s.status = "Failure".into();
    }
    s.message = if !s.message.is_empty() {
        format!("{denied_by}: {}", s.message)
    } else if !s.reason.is_empty() {
        format!("{denied_by}: {}", s.reason)
    } else {
        format!("{denied_by} without explanation")
    };
    s
}

/// The error of a call that failed (`why`), for a webhook that does not fail open:
/// upstream's internal error `failed calling webhook "<name>": <why>`.
pub(crate) fn call_failed(hook: &Hook, why: &str) -> Status {
    status::internal_error(&format!("failed calling webhook \"{}\": {why}", hook.name))
}

/// Whether `hook` may be called for a dry run: `Ok(false)` when its `sideEffects` is unset
/// (a call failure: `Webhook SideEffects is nil`), the 400 a dry run gets from a webhook with
/// side effects.
pub(crate) fn check_dry_run(hook: &Hook) -> Result<bool, Status> {
    match hook.side_effects.as_deref() {
        None => Ok(false),
        Some("None" | "NoneOnDryRun") => Ok(true),
        Some(_) => Err(status::bad_request(format!(
            "admission webhook \"{}\" does not support dry run",
            hook.name
        ))),
    }
}

/// Whether writes to the resource `group`/`plural` call no webhook: upstream's webhooks are
/// not called for their own configurations (nor for admission policies), so that no webhook
/// can lock the cluster out of mending them.
pub(crate) fn exempt(group: &str, plural: &str) -> bool {
    group == "admissionregistration.k8s.io"
        && [
            "mutatingwebhookconfigurations",
            "validatingwebhookconfigurations",
            "validatingadmissionpolicies",
            "validatingadmissionpolicybindings",
            "mutatingadmissionpolicies",
            "mutatingadmissionpolicybindings",
        ]
        .contains(&plural)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configuration(webhook: Value) -> Value {
        json!({"metadata": {"name": "c"}, "webhooks": [webhook]})
    }

    #[test]
    fn a_webhook_is_read_with_upstream_s_defaults_and_bounds() {
        let ca = base64::engine::general_purpose::STANDARD.encode("PEM");
        let hooks = hooks(&[configuration(json!({
            "name": "w.example.com",
            "clientConfig": {"url": "https://127.0.0.1:9443/v", "caBundle": ca},
            "admissionReviewVersions": ["v2", "v1beta1", "v1"],
            "timeoutSeconds": 90,
            "sideEffects": "None",
        }))]);
        let h = &hooks[0];
        assert_eq!(h.configuration, "c");
        assert_eq!(
            h.endpoint,
            Some(Endpoint::Url("https://127.0.0.1:9443/v".into()))
        );
        assert_eq!(h.ca_bundle.as_deref(), Some(&b"PEM"[..]));
        assert_eq!(h.timeout_seconds, MAX_TIMEOUT_SECONDS);
        assert_eq!(h.review_version, Some("v1beta1"));
        assert!(!h.fail_open && !h.reinvoke && !h.has_rules);
        let service =
            hooks_of(json!({"clientConfig": {"service": {"namespace": "n", "name": "s"}}}));
        assert_eq!(
            service.endpoint,
            Some(Endpoint::Service {
                namespace: "n".into(),
                name: "s".into(),
                path: String::new(),
                port: 443
            })
        );
        assert_eq!(service.timeout_seconds, DEFAULT_TIMEOUT_SECONDS);
    }

    fn hooks_of(webhook: Value) -> Hook {
        hooks(&[configuration(webhook)]).remove(0)
    }

    fn answer(response: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response,
        }))
        .unwrap()
    }

    #[test]
    fn answers_are_verified_as_upstream_verifies_them() {
        let h = hooks_of(json!({"admissionReviewVersions": ["v1"]}));
        let err = verdict(
            &h,
            "u1",
            false,
            &answer(json!({"uid": "u2", "allowed": true})),
        );
        assert_eq!(
            err.unwrap_err(),
            "received invalid webhook response: expected response.uid=\"u1\", got \"u2\""
        );
        let err = verdict(&h, "u1", false, br#"{"apiVersion":"v1","kind":"Status"}"#);
        assert_eq!(
            err.unwrap_err(),
            "received invalid webhook response: webhook response was absent"
        );
        let patch = base64::engine::general_purpose::STANDARD
            .encode(r#"[{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]"#);
        let err = verdict(
            &h,
            "u1",
            false,
            &answer(json!({"uid": "u1", "allowed": true, "patch": patch})),
        );
        assert_eq!(
            err.unwrap_err(),
            "received invalid webhook response: validating webhook may not return response.patch"
        );
        let err = verdict(
            &h,
            "u1",
            true,
            &answer(json!({"uid": "u1", "allowed": true, "patch": patch})),
        );
        assert_eq!(
            err.unwrap_err(),
            "received invalid webhook response: webhook returned response.patch but not \
             response.patchType"
        );
        let v = verdict(
            &h,
            "u1",
            true,
            &answer(json!({"uid": "u1", "allowed": true, "patch": patch,
                "patchType": "JSONPatch", "warnings": ["careful"]})),
        )
        .unwrap();
        assert!(v.allowed);
        assert_eq!(v.patch.unwrap()[0]["op"], "add");
        assert_eq!(v.warnings, ["careful"]);
        let v = verdict(&h, "u1", false, &answer(json!({"uid": "u1"}))).unwrap();
        assert!(!v.allowed && v.result.is_none());
        // A patch as an array of bytes (kube-rs sends it so; Go's decoder takes it).
        let bytes: Vec<u8> = br#"[{"op":"remove","path":"/a"}]"#.to_vec();
        let v = verdict(
            &h,
            "u1",
            true,
            &answer(json!({"uid": "u1", "allowed": true, "patch": bytes,
                "patchType": "JSONPatch"})),
        )
        .unwrap();
        assert_eq!(v.patch.unwrap()[0]["op"], "remove");
        let err = verdict(
            &h,
            "u1",
            true,
            &answer(json!({"uid": "u1", "allowed": true, "patch": [300],
                "patchType": "JSONPatch"})),
        );
        assert!(err.unwrap_err().contains("cannot unmarshal 300"));
    }

    #[test]
    fn a_denial_is_worded_as_upstream_s() {
        let h = hooks_of(json!({"name": "deny.example.com"}));
        let s = denied(&h, None);
        assert_eq!(
            (s.code, s.message.as_str()),
            (
                400,
                "admission webhook \"deny.example.com\" denied the request without explanation"
            )
        );
        let s = denied(&h, Some(Status::failure(200, "", "no replicas above 3")));
        assert_eq!(s.code, 400);
        assert_eq!(
            s.message,
            "admission webhook \"deny.example.com\" denied the request: no replicas above 3"
        );
        let mut forbidden = Status::failure(403, "Forbidden", "");
        forbidden.status = "Success".into();
        let s = denied(&h, Some(forbidden));
        assert_eq!((s.code, s.status.as_str()), (403, "Failure"));
        assert!(s.message.ends_with("denied the request: Forbidden"));
        let s = call_failed(&h, "failed to call webhook: boom");
        assert_eq!(s.code, 500);
        assert_eq!(
            s.message,
            "Internal error occurred: failed calling webhook \"deny.example.com\": failed to \
             call webhook: boom"
        );
    }
}
