//! Certificate signing requests (`certificates.k8s.io/v1`): what upstream's CSR strategies
//! (`pkg/registry/certificates/certificates/strategy.go`) and update validation
//! (`pkg/apis/certificates/validation`) do to a request's writes, so that an approver or a
//! signer written against the fake meets a cluster's rules.
//!
//! On create the requester is the caller (`spec.username`, `uid`, `groups` and `extra`
//! replaced; every caller of the fake is [`caller::USER`]) and the status is emptied (no
//! pre-approved requests). An update of the object keeps the stored spec and status. A
//! status write (`/status`, what a signer does) keeps the spec and the `Approved` and
//! `Denied` conditions as stored (unless it adds or removes some, which validation then
//! refuses) and may set the certificate once. An approval write (`/approval`, what an
//! approver and `kubectl certificate approve` do) changes the conditions only. Conditions
//! without times get them (`lastUpdateTime` now; `lastTransitionTime` the stored one of the
//! same type and status, else now). Validation, for every update: a condition needs a type
//! (no repeats) and a status (`True` only for `Approved`, `Denied` and `Failed`), `Approved`
//! and `Denied` exclude each other, and none of those three may be removed; the
//! compatibility exceptions upstream keeps for stored objects that already break a rule
//! are kept too.

use serde_json::{Value, json};

use crate::caller;

/// A violation: field path, upstream's cause type, message.
pub(super) type Violation = (String, &'static str, String);

/// Which write of a request is checked.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Write {
    /// The object itself (`PUT`/`PATCH` of the request).
    Main,
    /// `/status`: conditions other than approval, and the certificate.
    Status,
    /// `/approval`: the conditions.
    Approval,
}

/// A created request: the caller as its requester, an empty status
/// (`csrStrategy.PrepareForCreate`).
pub(super) fn on_create(body: &mut Value) {
    let Some(object) = body.as_object_mut() else {
        return;
    };
    let spec = object.entry("spec").or_insert_with(|| json!({}));
    if let Some(spec) = spec.as_object_mut() {
        for field in ["uid", "extra"] {
            spec.remove(field);
        }
        spec.insert("username".into(), Value::String(caller::USER.into()));
        spec.insert("groups".into(), json!(caller::GROUPS));
    }
    object.insert("status".into(), json!({}));
}

/// Prepares an update of a request (`old` is the stored one) as the strategy of `write`
/// does, then checks it (`now` for the conditions' times). The violations, if any, are
/// upstream's 422.
pub(super) fn on_update(
    write: Write,
    body: &mut Value,
    old: &Value,
    now: &str,
) -> Result<(), Vec<Violation>> {
    let old_status = old.get("status").cloned().unwrap_or_else(|| json!({}));
    let Some(object) = body.as_object_mut() else {
        return Ok(());
    };
    match old.get("spec") {
        Some(spec) => object.insert("spec".into(), spec.clone()),
        None => object.remove("spec"),
    };
    match write {
        Write::Main => {
            object.insert("status".into(), old_status);
        }
        Write::Status => {
            let status = object.entry("status").or_insert_with(|| json!({}));
            for kind in ["Approved", "Denied"] {
                preserve_instances(status, &old_status, kind);
            }
            stamp_conditions(status, &old_status, now);
        }
        Write::Approval => {
            let status = object.entry("status").or_insert_with(|| json!({}));
            stamp_conditions(status, &old_status, now);
            let conditions = status.get("conditions").cloned();
            let mut kept = old_status;
            if let Some(kept) = kept.as_object_mut() {
                match conditions {
                    Some(c) => kept.insert("conditions".into(), c),
                    None => kept.remove("conditions"),
                };
            }
            object.insert("status".into(), kept);
        }
    }
    let violations = check_update(write, body, old);
    if violations.is_empty() {
        Ok(())
    } else {
        Err(violations)
    }
}

fn conditions(object: &Value) -> &[Value] {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn condition_field<'v>(condition: &'v Value, field: &str) -> &'v str {
    condition.get(field).and_then(Value::as_str).unwrap_or("")
}

/// The conditions of type `kind`.
fn of_kind<'v>(conditions: &'v [Value], kind: &str) -> Vec<&'v Value> {
    conditions
        .iter()
        .filter(|c| condition_field(c, "type") == kind)
        .collect()
}

/// `preserveConditionInstances`: the stored conditions of `kind` replace the written ones,
/// when the write has as many of them.
fn preserve_instances(status: &mut Value, old_status: &Value, kind: &str) {
    let old: Vec<Value> = old_status
        .get("conditions")
        .and_then(Value::as_array)
        .map(|c| of_kind(c, kind).into_iter().cloned().collect())
        .unwrap_or_default();
    let Some(new) = status.get_mut("conditions").and_then(Value::as_array_mut) else {
        return;
    };
    let positions: Vec<usize> = new
        .iter()
        .enumerate()
        .filter(|(_, c)| condition_field(c, "type") == kind)
        .map(|(i, _)| i)
        .collect();
    if positions.len() != old.len() {
        return;
    }
    for (i, stored) in positions.into_iter().zip(old) {
        new[i] = stored;
    }
}

/// `populateConditionTimestamps`: a condition without `lastUpdateTime` gets now; without
/// `lastTransitionTime`, the stored one of a condition of the same type and status, else
/// now.
fn stamp_conditions(status: &mut Value, old_status: &Value, now: &str) {
    let old = old_status
        .get("conditions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let Some(new) = status.get_mut("conditions").and_then(Value::as_array_mut) else {
        return;
    };
    let set = |time: Option<&Value>| time.is_some_and(|t| !t.is_null() && t != "");
    for condition in new.iter_mut() {
        let Some(fields) = condition.as_object_mut() else {
            continue;
        };
        if !set(fields.get("lastUpdateTime")) {
            fields.insert("lastUpdateTime".into(), Value::String(now.to_owned()));
        }
        if !set(fields.get("lastTransitionTime")) {
            let kind = fields.get("type").and_then(Value::as_str).unwrap_or("");
            let status = fields.get("status").and_then(Value::as_str).unwrap_or("");
            let kept = old
                .iter()
                .find(|o| {
                    condition_field(o, "type") == kind
                        && condition_field(o, "status") == status
                        && set(o.get("lastTransitionTime"))
                })
                .and_then(|o| o.get("lastTransitionTime"))
                .cloned();
            fields.insert(
                "lastTransitionTime".into(),
                kept.unwrap_or_else(|| Value::String(now.to_owned())),
            );
        }
    }
}

/// `validateCertificateSigningRequestUpdate`'s checks of the conditions and the
/// certificate, with the options of `write` and the exceptions the stored object earns.
fn check_update(write: Write, new: &Value, old: &Value) -> Vec<Violation> {
    let mut violations = check_conditions(new, old);
    let (new_conditions, old_conditions) = (conditions(new), conditions(old));
    for kind in ["Approved", "Denied", "Failed"] {
        if of_kind(new_conditions, kind).len() < of_kind(old_conditions, kind).len() {
            violations.push((
                "status.conditions".into(),
                "FieldValueForbidden",
                format!("updates may not remove a condition of type {kind:?}"),
            ));
        }
    }
    if write != Write::Approval {
        for kind in ["Approved", "Denied"] {
            let (added, stored) = (of_kind(new_conditions, kind), of_kind(old_conditions, kind));
            if added.len() > stored.len() {
                violations.push((
                    "status.conditions".into(),
                    "FieldValueForbidden",
                    format!("updates may not add a condition of type {kind:?}"),
                ));
            } else if added.len() == stored.len() && added != stored {
                violations.push((
                    "status.conditions".into(),
                    "FieldValueForbidden",
                    format!("updates may not modify a condition of type {kind:?}"),
                ));
            }
        }
    }
    let certificate = |o: &Value| {
        o.pointer("/status/certificate")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let (written, stored) = (certificate(new), certificate(old));
    if written != stored {
        if write != Write::Status {
            violations.push((
                "status.certificate".into(),
                "FieldValueForbidden",
                "updates may not set certificate content".into(),
            ));
        } else if !stored.is_empty() {
            violations.push((
                "status.certificate".into(),
                "FieldValueForbidden",
                "updates may not modify existing certificate content".into(),
            ));
        }
    }
    violations
}

/// `validateConditions`: each condition's type (required, once) and status (`True` only
/// for the approval and failure types), and `Approved` and `Denied` not both; a rule the
/// stored request already breaks is not enforced (upstream's compatibility options).
fn check_conditions(new: &Value, old: &Value) -> Vec<Violation> {
    let stored = conditions(old);
    let has = |kind: &str| stored.iter().any(|c| condition_field(c, "type") == kind);
    let allow_both = has("Approved") && has("Denied");
    let allow_empty_type = has("");
    let allow_repeats = {
        let mut seen = std::collections::BTreeSet::new();
        stored
            .iter()
            .any(|c| !seen.insert(condition_field(c, "type")))
    };
    let mut violations = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let (mut approved, mut denied) = (false, false);
    for (i, condition) in conditions(new).iter().enumerate() {
        let at = |field: &str| format!("status.conditions[{i}].{field}");
        let kind = condition_field(condition, "type");
        if kind.is_empty() && !allow_empty_type {
            violations.push((at("type"), "FieldValueRequired", String::new()));
        }
        let status = condition_field(condition, "status");
        let true_only = matches!(kind, "Approved" | "Denied" | "Failed");
        let supported: &[&str] = if true_only {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        if status.is_empty() {
            violations.push((at("status"), "FieldValueRequired", String::new()));
        } else if !supported.contains(&status) {
            let listed: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
            violations.push((
                at("status"),
                "FieldValueNotSupported",
                format!("{status:?}: supported values: {}", listed.join(", ")),
            ));
        }
        if !allow_both {
            let exclusive = match kind {
                "Approved" => {
                    approved = true;
                    denied
                }
                "Denied" => {
                    denied = true;
                    approved
                }
                _ => false,
            };
            if exclusive {
                violations.push((
                    "status.conditions".into(),
                    "FieldValueInvalid",
                    format!("{kind:?}: Approved and Denied conditions are mutually exclusive"),
                ));
            }
        }
        if !allow_repeats && !seen.insert(kind) {
            violations.push((at("type"), "FieldValueDuplicate", format!("{kind:?}")));
        }
    }
    violations
}

/// The approval condition `kubectl certificate approve` appends, for tests.
#[cfg(test)]
fn approved(now: &str) -> Value {
    json!({"type": "Approved", "status": "True", "reason": "KubectlApprove",
           "message": "This CSR was approved by kubectl certificate approve.",
           "lastUpdateTime": now})
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: &str = "2026-01-01T00:00:00Z";
    const T1: &str = "2026-01-02T00:00:00Z";

    fn csr(status: Value) -> Value {
        json!({"metadata": {"name": "c"}, "spec": {"request": "cmVx", "signerName":
               "example.com/s", "usages": ["client auth"], "username": "alice"},
               "status": status})
    }

    #[test]
    fn a_created_request_is_the_caller_s_and_unapproved() {
        let mut body = csr(json!({"conditions": [approved(T0)]}));
        body["spec"]["uid"] = json!("spoofed");
        on_create(&mut body);
        assert_eq!(body["spec"]["username"], caller::USER);
        assert_eq!(body["spec"]["groups"], json!(caller::GROUPS));
        assert!(body["spec"].get("uid").is_none());
        assert_eq!(body["status"], json!({}));
    }

    #[test]
    fn an_approval_changes_the_conditions_only_and_stamps_them() {
        let old = csr(json!({}));
        let mut body = csr(json!({"conditions": [approved(T1)], "certificate": "Y2VydA=="}));
        body["spec"]["username"] = json!("mallory");
        on_update(Write::Approval, &mut body, &old, T1).unwrap();
        assert_eq!(body["spec"]["username"], "alice");
        assert!(body["status"].get("certificate").is_none());
        assert_eq!(body["status"]["conditions"][0]["lastTransitionTime"], T1);
        // Denying an approved request: both together are refused.
        let approved_csr = body.clone();
        let mut deny = approved_csr.clone();
        deny["status"]["conditions"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "Denied", "status": "True"}));
        let refused = on_update(Write::Approval, &mut deny, &approved_csr, T1).unwrap_err();
        assert_eq!(
            refused,
            [(
                "status.conditions".to_owned(),
                "FieldValueInvalid",
                "\"Denied\": Approved and Denied conditions are mutually exclusive".to_owned()
            )]
        );
        // Nor may the approval be taken back.
        let mut undo = csr(json!({"conditions": []}));
        let refused = on_update(Write::Approval, &mut undo, &approved_csr, T1).unwrap_err();
        assert_eq!(
            refused[0].2,
            "updates may not remove a condition of type \"Approved\""
        );
    }

    #[test]
    fn a_status_write_keeps_the_approval_and_sets_the_certificate_once() {
        let old = csr(json!({"conditions": [{"type": "Approved", "status": "True",
            "reason": "ok", "lastUpdateTime": T0, "lastTransitionTime": T0}]}));
        let mut body = csr(json!({"conditions": [{"type": "Approved", "status": "True",
            "reason": "changed"}], "certificate": "Y2VydA=="}));
        on_update(Write::Status, &mut body, &old, T1).unwrap();
        assert_eq!(body["status"]["conditions"][0]["reason"], "ok");
        assert_eq!(body["status"]["certificate"], "Y2VydA==");
        // A second certificate is refused; so is a new approval through /status.
        let issued = body.clone();
        let mut again = issued.clone();
        again["status"]["certificate"] = json!("b3RoZXI=");
        assert_eq!(
            on_update(Write::Status, &mut again, &issued, T1).unwrap_err()[0].2,
            "updates may not modify existing certificate content"
        );
        let pending = csr(json!({}));
        let mut sneaky = csr(json!({"conditions": [approved(T1)]}));
        assert_eq!(
            on_update(Write::Status, &mut sneaky, &pending, T1).unwrap_err()[0].2,
            "updates may not add a condition of type \"Approved\""
        );
        // A failure condition must be true; statuses are required.
        let mut failed = csr(json!({"conditions": [{"type": "Failed", "status": "False"},
                                                  {"type": "Ready"}]}));
        let refused = on_update(Write::Status, &mut failed, &pending, T1).unwrap_err();
        assert_eq!(
            refused,
            [
                (
                    "status.conditions[0].status".to_owned(),
                    "FieldValueNotSupported",
                    "\"False\": supported values: \"True\"".to_owned()
                ),
                (
                    "status.conditions[1].status".to_owned(),
                    "FieldValueRequired",
                    String::new()
                )
            ]
        );
        // An update of the object keeps spec and status.
        let mut main = csr(json!({"conditions": [approved(T1)]}));
        main["spec"]["signerName"] = json!("example.com/other");
        on_update(Write::Main, &mut main, &issued, T1).unwrap();
        assert_eq!(main["status"], issued["status"]);
        assert_eq!(main["spec"]["signerName"], "example.com/s");
    }
}
