//! The `scale` subresource (`autoscaling/v1` `Scale`) of deployments, replica sets, stateful
//! sets and replication controllers (a view of `.spec.replicas`, `.status.replicas` and the
//! label selector) and of custom resources whose CRD declares one (the paths of its
//! `subresources.scale`), which `kubectl scale` and autoscalers read and write.

use informer_core::Status;
use serde_json::{Value, json};

use crate::fields::at_dot_path as at;
use crate::{ResourceDef, StoredObject, status};

/// `.spec.replicas` of a workload; absent, the real server's default (1: this server does
/// no defaulting).
pub(crate) fn spec_replicas(object: &Value) -> i64 {
    object
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

/// The `Scale` of an object of `def`.
pub(crate) fn of(def: &ResourceDef, object: &Value) -> Value {
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
    let (spec_replicas, status_replicas, selector) = match &def.scale_paths {
        // Upstream's `scaleFromCustomResource`: absent replicas read as 0, the selector is
        // the string at its path.
        Some(paths) => (
            at(object, &paths.spec_replicas)
                .and_then(Value::as_i64)
                .unwrap_or(0),
            at(object, &paths.status_replicas)
                .and_then(Value::as_i64)
                .unwrap_or(0),
            paths
                .label_selector
                .as_deref()
                .and_then(|p| at(object, p))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        ),
        None => (
            spec_replicas(object),
            object
                .pointer("/status/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            selector(object),
        ),
    };
    json!({
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": scale_meta,
        "spec": {"replicas": spec_replicas},
        "status": {"replicas": status_replicas, "selector": selector},
    })
}

/// Upstream's marker for "the object has no replicas" in the `Scale` a patch applies to
/// (the smallest int32): still there after the patch, the patch set no replicas.
const NO_REPLICAS: i64 = i32::MIN as i64;

/// The `Scale` a patch of the scale subresource applies to: [`of`], with a custom
/// resource's absent replicas marked (upstream's `scaleUpdatedObjectInfo`).
pub(crate) fn for_patch(def: &ResourceDef, object: &Value) -> Value {
    let mut scale = of(def, object);
    if let Some(paths) = &def.scale_paths
        && at(object, &paths.spec_replicas).is_none()
    {
        scale["spec"]["replicas"] = Value::from(NO_REPLICAS);
    }
    scale
}

/// The scale of a stored object of `def`.
pub(crate) fn of_stored(def: &ResourceDef, obj: &StoredObject) -> Value {
    of(def, &obj.to_value())
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
pub(crate) fn apply(def: &ResourceDef, object: &mut Value, scale: &Value) -> Result<(), Status> {
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
    if let Some(paths) = &def.scale_paths
        && replicas == NO_REPLICAS
    {
        return Err(status::bad_request(format!(
            "the spec replicas field \".{}\" cannot be empty",
            paths.spec_replicas
        )));
    }
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
    let path = def
        .scale_paths
        .as_ref()
        .map_or("spec.replicas", |p| p.spec_replicas.as_str());
    set_at(object, path, Value::from(replicas))
}

/// Sets the value at a dot path, creating the objects on the way (`SetNestedField`); a
/// step through something that is not an object is a 500, as upstream's error is.
fn set_at(object: &mut Value, path: &str, value: Value) -> Result<(), Status> {
    let mut keys = path.split('.').peekable();
    let mut node = object;
    while let Some(key) = keys.next() {
        let Some(fields) = node.as_object_mut() else {
            return Err(Status::failure(
                500,
                "InternalError",
                format!("value cannot be set because {path} is not an object path"),
            ));
        };
        if keys.peek().is_none() {
            fields.insert(key.to_owned(), value);
            return Ok(());
        }
        node = fields
            .entry(key.to_owned())
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if node.is_null() {
            *node = Value::Object(serde_json::Map::new());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ScalePaths;

    fn deployments() -> ResourceDef {
        ResourceDef::namespaced("apps", "v1", "deployments", "Deployment")
    }

    #[test]
    fn scale_view_and_write() {
        let def = deployments();
        let mut deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "a", "resourceVersion": "4", "uid": "u"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]}},
            "status": {"replicas": 2}});
        let scale = of(&def, &deploy);
        assert_eq!(scale["spec"]["replicas"], 2);
        assert_eq!(scale["status"]["selector"], "app=web,tier in (a,b)");
        assert_eq!(scale["metadata"]["resourceVersion"], "4");
        apply(&def, &mut deploy, &json!({"spec": {"replicas": 5}})).unwrap();
        assert_eq!(deploy["spec"]["replicas"], 5);
        let err = apply(&def, &mut deploy, &json!({"spec": {"replicas": -1}})).unwrap_err();
        assert_eq!(err.code, 422);
        let rc = json!({"spec": {"selector": {"app": "x"}}});
        assert_eq!(of(&def, &rc)["status"]["selector"], "app=x");
        assert_eq!(
            of(&def, &rc)["spec"]["replicas"],
            1,
            "absent reads as the default"
        );
    }

    #[test]
    fn a_custom_resource_s_scale_follows_its_crd_paths() {
        let mut def = ResourceDef::namespaced("example.com", "v1", "pools", "Pool");
        def.scale_subresource = true;
        def.scale_paths = Some(ScalePaths {
            spec_replicas: "spec.size".into(),
            status_replicas: "status.ready".into(),
            label_selector: Some("status.selector".into()),
        });
        let mut pool = json!({"metadata": {"name": "p"},
            "spec": {"size": 4}, "status": {"ready": 2, "selector": "app=pool"}});
        let scale = of(&def, &pool);
        assert_eq!(scale["spec"]["replicas"], 4);
        assert_eq!(
            scale["status"],
            json!({"replicas": 2, "selector": "app=pool"})
        );
        apply(&def, &mut pool, &json!({"spec": {"replicas": 6}})).unwrap();
        assert_eq!(pool["spec"]["size"], 6);
        assert!(pool["spec"].get("replicas").is_none());
        // Absent, the replicas read as 0 (upstream's `scaleFromCustomResource`), and a write
        // creates the path.
        let mut empty = json!({"metadata": {"name": "e"}});
        assert_eq!(of(&def, &empty)["spec"]["replicas"], 0);
        // A patch that sets no replicas on an object without them: upstream's 400.
        let unpatched = for_patch(&def, &empty);
        let refused = apply(&def, &mut empty.clone(), &unpatched).unwrap_err();
        assert_eq!(refused.code, 400);
        assert_eq!(
            refused.message,
            "the spec replicas field \".spec.size\" cannot be empty"
        );
        apply(&def, &mut empty, &json!({"spec": {"replicas": 1}})).unwrap();
        assert_eq!(empty["spec"], json!({"size": 1}));
    }
}
