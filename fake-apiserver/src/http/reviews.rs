//! The review APIs: create-only resources the real server answers without storing anything.
//!
//! - `authorization.k8s.io/v1`: `selfsubjectaccessreviews` (`kubectl auth can-i`, and the
//!   permission checks controllers make at start), `selfsubjectrulesreviews`
//!   (`kubectl auth can-i --list`), `subjectaccessreviews` and namespaced
//!   `localsubjectaccessreviews`.
//! - `authentication.k8s.io/v1`: `selfsubjectreviews` (`kubectl auth whoami`) and
//!   `tokenreviews`, which authenticate the service account tokens the server issued
//!   (`FakeApiServer::review_token`).
//!
//! Discovery lists them with the `create` verb only, as the real server does.
//!
//! The fake server has no authorizer (every request it serves is allowed), so every access
//! review is allowed and the rules review lists everything; every caller is the same user,
//! `system:admin` in `system:masters`. The requests are checked as upstream's registry checks
//! them (`pkg/apis/authorization/validation`): a spec with both or neither of
//! `resourceAttributes` and `nonResourceAttributes`, a subject review without user or groups,
//! metadata other than a namespace, are 422s; a local review's namespace must be the URL's.

use axum::http::StatusCode;
use axum::response::Response;
use informer_core::Status;
use serde_json::{Map, Value, json};

use super::negotiate::{self, Answer};
use crate::caller::{GROUPS, USER};
use crate::{FakeApiServer, ResourceDef, status};

/// The reason an access review gives.
const ALLOWED: &str = "the fake API server allows every request (it has no authorizer)";

/// A review resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Review {
    SelfSubjectAccess,
    SelfSubjectRules,
    SubjectAccess,
    LocalSubjectAccess,
    SelfSubject,
    Token,
}

impl Review {
    /// Every review resource served.
    pub(crate) const ALL: [Review; 6] = [
        Self::SelfSubjectAccess,
        Self::SelfSubjectRules,
        Self::SubjectAccess,
        Self::LocalSubjectAccess,
        Self::SelfSubject,
        Self::Token,
    ];

    /// The review served at `group`/`version`/`plural`, if any; `namespaced` says whether the
    /// URL named a namespace (only local access reviews live in one).
    pub(crate) fn at(group: &str, version: &str, plural: &str, namespaced: bool) -> Option<Self> {
        let review = match (group, version, plural) {
            ("authorization.k8s.io", "v1", "selfsubjectaccessreviews") => Self::SelfSubjectAccess,
            ("authorization.k8s.io", "v1", "selfsubjectrulesreviews") => Self::SelfSubjectRules,
            ("authorization.k8s.io", "v1", "subjectaccessreviews") => Self::SubjectAccess,
            ("authorization.k8s.io", "v1", "localsubjectaccessreviews") => Self::LocalSubjectAccess,
            ("authentication.k8s.io", "v1", "selfsubjectreviews") => Self::SelfSubject,
            ("authentication.k8s.io", "v1", "tokenreviews") => Self::Token,
            _ => return None,
        };
        (namespaced == (review == Self::LocalSubjectAccess)).then_some(review)
    }

    /// The resource, as content negotiation needs it (no protobuf message here: JSON or YAML).
    pub(crate) fn def(self) -> ResourceDef {
        let plural = format!("{}s", self.kind().to_ascii_lowercase());
        if self == Self::LocalSubjectAccess {
            ResourceDef::namespaced(self.group(), "v1", &plural, self.kind())
        } else {
            ResourceDef::cluster_scoped(self.group(), "v1", &plural, self.kind())
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Self::SelfSubjectAccess => "SelfSubjectAccessReview",
            Self::SelfSubjectRules => "SelfSubjectRulesReview",
            Self::SubjectAccess => "SubjectAccessReview",
            Self::LocalSubjectAccess => "LocalSubjectAccessReview",
            Self::SelfSubject => "SelfSubjectReview",
            Self::Token => "TokenReview",
        }
    }

    fn group(self) -> &'static str {
        match self {
            Self::SelfSubject | Self::Token => "authentication.k8s.io",
            _ => "authorization.k8s.io",
        }
    }

    /// Answers a `POST` of `body` (decoded): the review with its status, 201 as upstream.
    pub(crate) fn answer(
        self,
        server: &FakeApiServer,
        namespace: Option<&str>,
        mut body: Value,
        answer: Answer,
    ) -> Result<Response, Status> {
        let api_version = format!("{}/v1", self.group());
        let Some(object) = body.as_object_mut() else {
            return Err(status::bad_request(
                "the request body must be a JSON object",
            ));
        };
        for (field, want) in [("apiVersion", api_version.as_str()), ("kind", self.kind())] {
            match object.get(field).and_then(Value::as_str) {
                Some(got) if got != want => {
                    return Err(status::bad_request(format!(
                        "the {field} in the data ({got}) does not match the expected {field} \
                         ({want})"
                    )));
                }
                _ => {
                    object.insert(field.into(), Value::String(want.to_owned()));
                }
            }
        }
        let mut meta = match object.remove("metadata") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m,
            Some(_) => return Err(status::bad_request("metadata must be an object")),
        };
        meta.retain(|field, v| field != "managedFields" && !is_empty(v));
        if self == Self::LocalSubjectAccess {
            let url = namespace.unwrap_or_default();
            match meta.get("namespace").and_then(Value::as_str) {
                None => {
                    meta.insert("namespace".into(), Value::String(url.to_owned()));
                }
                Some(ns) if ns != url => {
                    return Err(status::bad_request(
                        "the namespace of the provided object does not match the namespace \
                         sent on the request",
                    ));
                }
                Some(_) => {}
            }
        }
        let spec = object.get("spec").cloned().unwrap_or(Value::Null);
        let errors = self.validate(&meta, &spec);
        if !errors.is_empty() {
            return Err(status::invalid(self.kind(), self.group(), "", &errors));
        }
        let mut answered = Map::new();
        answered.insert("creationTimestamp".into(), Value::Null);
        answered.extend(meta);
        object.insert("metadata".into(), Value::Object(answered));
        let status = match self {
            Self::Token => server.review_token(&spec)?,
            _ => self.status(),
        };
        object.insert("status".into(), status);
        Ok(negotiate::value(StatusCode::CREATED, &body, answer))
    }

    fn validate(
        self,
        meta: &Map<String, Value>,
        spec: &Value,
    ) -> Vec<(String, &'static str, String)> {
        let mut errors = Vec::new();
        let mut invalid = |field: &str, value: String, message: &str| {
            errors.push((
                field.to_owned(),
                "FieldValueInvalid",
                format!("{value}: {message}"),
            ));
        };
        let present = |field: &str| spec.get(field).is_some_and(|v| !v.is_null());
        if matches!(
            self,
            Self::SelfSubjectAccess | Self::SubjectAccess | Self::LocalSubjectAccess
        ) {
            let resource = present("resourceAttributes");
            let non_resource = present("nonResourceAttributes");
            if resource && non_resource {
                invalid(
                    "spec.nonResourceAttributes",
                    spec["nonResourceAttributes"].to_string(),
                    "cannot be specified in combination with resourceAttributes",
                );
            }
            if !resource && !non_resource {
                invalid(
                    "spec.resourceAttributes",
                    "\"null\"".to_owned(),
                    "exactly one of nonResourceAttributes or resourceAttributes must be specified",
                );
            }
        }
        if matches!(self, Self::SubjectAccess | Self::LocalSubjectAccess) {
            let user = spec.get("user").and_then(Value::as_str).unwrap_or_default();
            let groups = spec
                .get("groups")
                .and_then(Value::as_array)
                .is_some_and(|g| !g.is_empty());
            if user.is_empty() && !groups {
                invalid(
                    "spec.user",
                    format!("{user:?}"),
                    "at least one of user or group must be specified",
                );
            }
        }
        let beyond_namespace = meta
            .keys()
            .any(|k| !(self == Self::LocalSubjectAccess && k == "namespace"));
        if beyond_namespace
            && !matches!(
                self,
                Self::SelfSubject | Self::SelfSubjectRules | Self::Token
            )
        {
            let message = if self == Self::LocalSubjectAccess {
                "must be empty except for namespace"
            } else {
                "must be empty"
            };
            invalid("metadata", Value::Object(meta.clone()).to_string(), message);
        }
        if self == Self::LocalSubjectAccess {
            let namespace = meta
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if let Some(attributes) = spec.get("resourceAttributes").filter(|v| !v.is_null()) {
                let asked = attributes
                    .get("namespace")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if asked != namespace {
                    invalid(
                        "spec.resourceAttributes.namespace",
                        format!("{asked:?}"),
                        "must match metadata.namespace",
                    );
                }
            }
            if present("nonResourceAttributes") {
                invalid(
                    "spec.nonResourceAttributes",
                    spec["nonResourceAttributes"].to_string(),
                    "disallowed on this kind of request",
                );
            }
        }
        errors
    }

    fn status(self) -> Value {
        match self {
            Self::SelfSubjectAccess | Self::SubjectAccess | Self::LocalSubjectAccess => {
                json!({"allowed": true, "reason": ALLOWED})
            }
            Self::SelfSubjectRules => json!({
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                "incomplete": false,
            }),
            Self::SelfSubject => json!({"userInfo": {"username": USER, "groups": GROUPS}}),
            // Answered by the server (`FakeApiServer::review_token`).
            Self::Token => Value::Null,
        }
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}
