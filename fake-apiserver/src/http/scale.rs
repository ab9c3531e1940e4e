//! The `scale` subresource (`autoscaling/v1` `Scale`) of deployments, replica sets, stateful
//! sets and replication controllers: a view of `.spec.replicas`, `.status.replicas` and the
//! label selector, which `kubectl scale` and autoscalers read and write.

use informer_core::Status;
use serde_json::{Value, json};

use crate::{StoredObject, status};

/// `.spec.replicas` of a workload; absent, the real server's default (1: this server does
/// no defaulting).
pub(crate) fn spec_replicas(object: &Value) -> i64 {
    object
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

/// The `Scale` of an object.
pub(crate) fn of(object: &Value) -> Value {
    let meta = object.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let pick = |k: &str| meta.get(k).cloned().unwrap_or(Value::Null);
    let mut scale_meta = json!({
        "name": pick("name"),
        "uid": pick("uid"),
        "resourceVersion": pick("resourceVersion"),
        "creationTimestamp": pick("creationTimestamp"),
    });
    if let Some(ns) = meta.get("namespace") {
        scale_meta["namespace"] = ns.clone();
    }
    let spec_replicas = spec_replicas(object);
    let status_replicas = object
        .pointer("/status/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    json!({
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": scale_meta,
        "spec": {"replicas": spec_replicas},
        "status": {"replicas": status_replicas, "selector": selector(object)},
    })
}

/// The scale of a stored object.
pub(crate) fn of_stored(obj: &StoredObject) -> Value {
    of(&obj.to_value())
}

/// The object's pod selector as a label selector string (`app=web,tier in (a,b)`).
fn selector(object: &Value) -> String {
    object
        .pointer("/spec/selector")
        .map(crate::object::label_selector_text)
        .unwrap_or_default()
}

/// Writes a new `Scale` into `object`: `.spec.replicas` from the scale's spec, with the
/// scale's `metadata.resourceVersion` (if any) as a precondition on the object.
pub(crate) fn apply(object: &mut Value, scale: &Value) -> Result<(), Status> {
    if !scale.is_object() {
        return Err(status::bad_request("a Scale must be a JSON object"));
    }
    if let Some(kind) = scale.get("kind").and_then(Value::as_str)
        && kind != "Scale"
    {
        return Err(status::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind (Scale)"
        )));
    }
    let replicas = scale
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if replicas < 0 {
        return Err(status::invalid(
            "Scale",
            "autoscaling",
            scale
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            &[(
                "spec.replicas".into(),
                "FieldValueInvalid",
                format!("{replicas}: must be greater than or equal to 0"),
            )],
        ));
    }
    if let Some(rv) = scale
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        // Carried into the object, where the store checks it against the stored version.
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_owned()));
        }
    }
    match object.get_mut("spec").and_then(Value::as_object_mut) {
        Some(spec) => {
            spec.insert("replicas".into(), Value::from(replicas));
        }
        None => {
            if let Some(obj) = object.as_object_mut() {
                obj.insert("spec".into(), json!({ "replicas": replicas }));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_view_and_write() {
        let mut deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "a", "resourceVersion": "4", "uid": "u"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]}},
            "status": {"replicas": 2}});
        let scale = of(&deploy);
        assert_eq!(scale["spec"]["replicas"], 2);
        assert_eq!(scale["status"]["selector"], "app=web,tier in (a,b)");
        assert_eq!(scale["metadata"]["resourceVersion"], "4");
        apply(&mut deploy, &json!({"spec": {"replicas": 5}})).unwrap();
        assert_eq!(deploy["spec"]["replicas"], 5);
        let err = apply(&mut deploy, &json!({"spec": {"replicas": -1}})).unwrap_err();
        assert_eq!(err.code, 422);
        let rc = json!({"spec": {"selector": {"app": "x"}}});
        assert_eq!(of(&rc)["status"]["selector"], "app=x");
        assert_eq!(
            of(&rc)["spec"]["replicas"],
            1,
            "absent reads as the default"
        );
    }
}
