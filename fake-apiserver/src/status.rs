//! `Status` values the fake server answers with, worded like the real API server's.
//!
//! Use these to script faults (`fail_lists("pods", 1, status::too_many_requests(3))`) and to
//! compare answers in tests. [`to_json`] renders the wire form (`kind: Status`, ...).

use bytes::Bytes;
use informer_core::{CAUSE_RESOURCE_VERSION_TOO_LARGE, Status, StatusCause, StatusDetails};

use super::ResourceDef;

/// The message of a 410 for a continue token older than the retained history (the real
/// server's wording when it cannot offer an inconsistent continuation).
pub const CONTINUE_EXPIRED_MESSAGE: &str = "The provided continue parameter is too old to \
display a consistent list result. You can start a new list without the continue parameter.";

/// The message of a 410 for a list at an exact resourceVersion older than the retained history.
pub const LIST_EXPIRED_MESSAGE: &str = "The resourceVersion for the provided list is too old.";

/// 500 InternalError: `Internal error occurred: <message>`.
pub fn internal_error(message: &str) -> Status {
    Status::failure(
        500,
        "InternalError",
        format!("Internal error occurred: {message}"),
    )
}

/// 429 TooManyRequests with `retryAfterSeconds` (the HTTP front end also sends it as the
/// `Retry-After` header; the in-process front end reports it as `Error::Api { retry_after }`).
pub fn too_many_requests(retry_after_seconds: u32) -> Status {
    let mut s = Status::failure(
        429,
        "TooManyRequests",
        "Too many requests: the server is throttling this client, please try again later",
    );
    s.details = Some(StatusDetails {
        retry_after_seconds: Some(retry_after_seconds),
        ..StatusDetails::default()
    });
    s
}

/// 410 Expired with the given message.
pub fn expired(message: impl Into<String>) -> Status {
    Status::failure(410, "Expired", message)
}

/// 410 Gone, the legacy spelling of [`expired`] that old servers used.
pub fn gone(message: impl Into<String>) -> Status {
    Status::failure(410, "Gone", message)
}

/// 410 Expired `too old resource version: <requested> (<oldest retained>)`, as a watch from a
/// compacted resourceVersion gets.
pub fn too_old_resource_version(requested: u64, oldest: u64) -> Status {
    expired(format!("too old resource version: {requested} ({oldest})"))
}

/// 410 Expired for a continue token outlived by compaction.
pub fn continue_expired() -> Status {
    expired(CONTINUE_EXPIRED_MESSAGE)
}

/// 504 Timeout with cause `ResourceVersionTooLarge`: the server has not reached `requested`.
pub fn resource_version_too_large(requested: u64, current: u64) -> Status {
    let mut s = Status::failure(
        504,
        "Timeout",
        format!("Timeout: Too large resource version: {requested}, current: {current}"),
    );
    s.details = Some(StatusDetails {
        causes: vec![StatusCause {
            reason: CAUSE_RESOURCE_VERSION_TOO_LARGE.into(),
            message: "Too large resource version".into(),
            field: String::new(),
        }],
        retry_after_seconds: Some(1),
        ..StatusDetails::default()
    });
    s
}

/// 400 BadRequest with the given message.
pub fn bad_request(message: impl Into<String>) -> Status {
    Status::failure(400, "BadRequest", message)
}

/// 404 NotFound for a named object: `pods "x" not found`.
pub fn not_found(resource: &ResourceDef, name: &str) -> Status {
    with_details(
        Status::failure(
            404,
            "NotFound",
            format!("{} {name:?} not found", resource.qualified_name()),
        ),
        resource,
        name,
    )
}

/// 403 Forbidden from the NamespaceLifecycle admission: `pods "x" is forbidden: unable to
/// create new content in namespace a because it is being terminated`, with the
/// `NamespaceTerminating` cause clients match on.
pub fn namespace_terminating(resource: &ResourceDef, name: &str, namespace: &str) -> Status {
    let reason = format!(
        "unable to create new content in namespace {namespace} because it is being terminated"
    );
    let mut s = with_details(
        Status::failure(
            403,
            "Forbidden",
            format!(
                "{} {name:?} is forbidden: {reason}",
                resource.qualified_name()
            ),
        ),
        resource,
        name,
    );
    if let Some(details) = s.details.as_mut() {
        details.causes.push(StatusCause {
            reason: "NamespaceTerminating".into(),
            message: reason,
            field: "metadata.namespace".into(),
        });
    }
    s
}

/// 403 Forbidden from the NamespaceLifecycle admission for a delete of `default`,
/// `kube-system` or `kube-public`: `namespaces "default" is forbidden: this namespace may not
/// be deleted`.
pub fn immortal_namespace(resource: &ResourceDef, name: &str) -> Status {
    with_details(
        Status::failure(
            403,
            "Forbidden",
            format!(
                "{} {name:?} is forbidden: this namespace may not be deleted",
                resource.qualified_name()
            ),
        ),
        resource,
        name,
    )
}

/// 405 MethodNotAllowed for a create of a custom resource whose CRD is being deleted, as
/// upstream's CRD handler answers it: `create not allowed while custom resource definition
/// is terminating`.
pub fn crd_terminating(resource: &ResourceDef) -> Status {
    with_details(
        Status::failure(
            405,
            "MethodNotAllowed",
            "create not allowed while custom resource definition is terminating",
        ),
        resource,
        "",
    )
}

/// A validating admission policy's refusal, as upstream's dispatcher builds it: the
/// admission forbidden error (`deployments.apps "web" is forbidden: <detail>`) with the
/// failure's reason and code, the detail as its one cause.
pub(crate) fn policy_denied(
    resource: &ResourceDef,
    name: &str,
    detail: &str,
    reason: &str,
    code: u16,
) -> Status {
    let qualified = resource.qualified_name();
    let message = if name.is_empty() {
        format!("{qualified} is forbidden: {detail}")
    } else {
        format!("{qualified} {name:?} is forbidden: {detail}")
    };
    let mut s = with_details(Status::failure(code, reason, message), resource, name);
    if let Some(details) = s.details.as_mut() {
        details.causes.push(StatusCause {
            message: detail.to_owned(),
            ..StatusCause::default()
        });
    }
    s
}

/// 404 NotFound for an unknown resource or URL.
pub fn resource_not_found() -> Status {
    Status::failure(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
}

/// 409 AlreadyExists: `pods "x" already exists`.
pub fn already_exists(resource: &ResourceDef, name: &str) -> Status {
    with_details(
        Status::failure(
            409,
            "AlreadyExists",
            format!("{} {name:?} already exists", resource.qualified_name()),
        ),
        resource,
        name,
    )
}

/// 409 Conflict for a stale resourceVersion on update.
pub fn conflict(resource: &ResourceDef, name: &str) -> Status {
    with_details(
        Status::failure(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} {name:?}: the object has been modified; \
                 please apply your changes to the latest version and try again",
                resource.qualified_name()
            ),
        ),
        resource,
        name,
    )
}

/// 422 Invalid for `<kind>.<group> "<name>"` with one cause per `(field, type, message)`, worded
/// like the real server (`ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch:
/// Forbidden: ...`).
pub fn invalid(kind: &str, group: &str, name: &str, errors: &[(String, &str, String)]) -> Status {
    let qualified = if group.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}.{group}")
    };
    // Upstream's `ErrorList.ToAggregate`: an error the message already shows is not
    // repeated (the causes keep every one).
    let mut rendered: Vec<String> = Vec::new();
    for (field, ty, msg) in errors {
        let text = field_error(field, ty, msg);
        if !rendered.contains(&text) {
            rendered.push(text);
        }
    }
    let message = match rendered.len() {
        0 => format!("{qualified} {name:?} is invalid"),
        1 => format!("{qualified} {name:?} is invalid: {}", rendered[0]),
        _ => format!("{qualified} {name:?} is invalid: [{}]", rendered.join(", ")),
    };
    let mut s = Status::failure(422, "Invalid", message);
    s.details = Some(StatusDetails {
        name: name.to_owned(),
        group: group.to_owned(),
        kind: kind.to_owned(),
        causes: errors
            .iter()
            .map(|(field, ty, msg)| StatusCause {
                reason: (*ty).to_owned(),
                message: match msg.as_str() {
                    "" => type_label(ty).to_owned(),
                    msg => format!("{}: {msg}", type_label(ty)),
                },
                field: field.clone(),
            })
            .collect(),
        ..StatusDetails::default()
    });
    s
}

/// One field error as upstream renders it (`spec.x: Invalid value: 3: detail`).
pub(crate) fn field_error(field: &str, cause_type: &str, message: &str) -> String {
    match message {
        "" => format!("{field}: {}", type_label(cause_type)),
        msg => format!("{field}: {}: {msg}", type_label(cause_type)),
    }
}

fn type_label(cause_type: &str) -> &str {
    match cause_type {
        "FieldValueDuplicate" => "Duplicate value",
        "FieldValueTypeInvalid" => "Invalid value",
        "FieldValueForbidden" => "Forbidden",
        "FieldValueNotSupported" => "Unsupported value",
        "FieldValueRequired" => "Required value",
        "FieldValueInvalid" => "Invalid value",
        "FieldValueTooLong" => "Too long",
        "FieldValueTooMany" => "Too many",
        other => other,
    }
}

fn with_details(mut s: Status, resource: &ResourceDef, name: &str) -> Status {
    s.details = Some(StatusDetails {
        name: name.to_owned(),
        group: resource.group.clone(),
        kind: resource.plural.clone(),
        ..StatusDetails::default()
    });
    s
}

/// A `Success` status, as DELETE answers for some resources.
pub fn success(resource: &ResourceDef, name: &str) -> Status {
    let mut s = with_details(Status::default(), resource, name);
    s.status = "Success".into();
    s.code = 200;
    s
}

/// The wire form: `{"kind":"Status","apiVersion":"v1","metadata":{},...}`.
pub fn to_json(status: &Status) -> Bytes {
    let mut value = serde_json::to_value(status).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        map.insert("kind".into(), "Status".into());
        map.insert("apiVersion".into(), "v1".into());
        map.insert("metadata".into(), serde_json::json!({}));
    }
    Bytes::from(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use informer_core::ErrorClass;

    #[test]
    fn statuses_classify_as_clients_expect() {
        assert_eq!(too_old_resource_version(3, 9).class(), ErrorClass::Expired);
        assert_eq!(continue_expired().class(), ErrorClass::Expired);
        assert_eq!(
            resource_version_too_large(9, 5).class(),
            ErrorClass::ResourceVersionTooLarge
        );
        let throttled = too_many_requests(4);
        assert_eq!(throttled.class(), ErrorClass::Throttled);
        assert_eq!(
            throttled.retry_after(),
            Some(std::time::Duration::from_secs(4))
        );
        assert_eq!(internal_error("boom").class(), ErrorClass::ServerError);
    }

    #[test]
    fn invalid_is_worded_like_the_server() {
        let s = invalid(
            "ListOptions",
            "meta.k8s.io",
            "",
            &[(
                "resourceVersionMatch".into(),
                "FieldValueForbidden",
                "resourceVersionMatch is forbidden unless resourceVersion is provided".into(),
            )],
        );
        assert_eq!(
            s.message,
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: \
             resourceVersionMatch is forbidden unless resourceVersion is provided"
        );
        let json: serde_json::Value = serde_json::from_slice(&to_json(&s)).unwrap();
        assert_eq!(json["kind"], "Status");
        assert_eq!(json["code"], 422);
        assert_eq!(
            json["details"]["causes"][0]["reason"],
            "FieldValueForbidden"
        );
    }
}
