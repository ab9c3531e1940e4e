//! `pods/<name>/resize`: a pod's containers resized in place, as upstream's resize strategy
//! (`pkg/registry/core/pod/strategy.go`: `dropNonResizeUpdates`, `updatePodGeneration`) and
//! `ValidatePodResize` (`pkg/apis/core/validation/validation.go`) keep and check them, in
//! their 1.35 form (in-place resize GA): only the containers' `resources` and
//! `resizePolicy` are taken from the request, and only CPU and memory may change.

use serde_json::{Value, json};

use super::pods::{keep_stored_status_and_meta, qos_class};
use crate::schema::Violation;

/// The container lists a resize may touch, with their paths.
const LISTS: [&str; 2] = ["containers", "initContainers"];

fn list(pod: &Value, field: &str) -> Vec<Value> {
    pod.pointer(&format!("/spec/{field}"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn name(container: &Value) -> &str {
    container.get("name").and_then(Value::as_str).unwrap_or("")
}

/// A sidecar: an init container with `restartPolicy: Always`.
fn is_sidecar(container: &Value) -> bool {
    container.get("restartPolicy").and_then(Value::as_str) == Some("Always")
}

fn forbidden(field: &str, message: &str) -> Violation {
    (field.to_owned(), "FieldValueForbidden", message.to_owned())
}

/// Upstream's `dropNonResizeUpdates`: when both container lists keep their length and
/// their names in order, the stored pod with each container's `resources` and
/// `resizePolicy` from `body` (spec, status, and the labels, annotations, finalizers,
/// owners, deletion time and generation of `ResetObjectMetaForStatus` as stored); else
/// `body` as sent, for the validation to refuse.
fn keep_resize_fields(body: &mut Value, old: &Value) {
    let aligned = LISTS.iter().all(|field| {
        let (new, stored) = (list(body, field), list(old, field));
        new.len() == stored.len() && new.iter().zip(&stored).all(|(a, b)| name(a) == name(b))
    });
    if !aligned {
        return;
    }
    let mut spec = old.get("spec").cloned().unwrap_or_else(|| json!({}));
    for field in LISTS {
        let sent = list(body, field);
        let Some(stored) = spec.get_mut(field).and_then(Value::as_array_mut) else {
            continue;
        };
        for (container, sent) in stored.iter_mut().zip(&sent) {
            let Some(container) = container.as_object_mut() else {
                continue;
            };
            for key in ["resources", "resizePolicy"] {
                match sent.get(key) {
                    Some(v) => container.insert(key.into(), v.clone()),
                    None => container.remove(key),
                };
            }
        }
    }
    let Some(object) = body.as_object_mut() else {
        return;
    };
    object.insert("spec".into(), spec);
    keep_stored_status_and_meta(object, old);
}

/// Upstream's `resourcesRemoved`: a resource of `old` that `new` no longer names.
fn removed(new: Option<&Value>, old: Option<&Value>) -> bool {
    let keys = |v: Option<&Value>| {
        v.and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect::<Vec<_>>())
            .unwrap_or_default()
    };
    let (new, old) = (keys(new), keys(old));
    old.len() > new.len() || old.iter().any(|k| !new.contains(k))
}

/// A container with its CPU and memory requests and limits as `old` has them (upstream's
/// `dropCPUMemoryResourcesFromContainer`): what is left differs from `old` only if something
/// else changed.
fn without_cpu_memory_changes(container: &Value, old: &Value) -> Value {
    let mut out = container.clone();
    let mut resources = serde_json::Map::new();
    for kind in ["limits", "requests"] {
        let Some(old_list) = old
            .pointer(&format!("/resources/{kind}"))
            .and_then(Value::as_object)
        else {
            continue;
        };
        let mut munged = container
            .pointer(&format!("/resources/{kind}"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for resource in ["cpu", "memory"] {
            munged.remove(resource);
            if let Some(v) = old_list.get(resource) {
                munged.insert(resource.into(), v.clone());
            }
        }
        resources.insert(kind.into(), Value::Object(munged));
    }
    if let Some(c) = out.as_object_mut() {
        if resources.is_empty() && old.get("resources").is_none() {
            c.remove("resources");
        } else {
            c.insert("resources".into(), Value::Object(resources));
        }
    }
    out
}

/// Whether two containers are equal but for empty resource lists (Go's `Semantic.DeepEqual`
/// treats an absent `resources` and an empty one alike).
fn same_container(a: &Value, b: &Value) -> bool {
    let normal = |c: &Value| {
        let mut c = c.clone();
        if let Some(obj) = c.as_object_mut() {
            let empty = obj.get("resources").is_some_and(|r| {
                r.as_object().is_some_and(|m| {
                    m.values()
                        .all(|v| v.as_object().is_some_and(|l| l.is_empty()))
                })
            });
            if empty {
                obj.remove("resources");
            }
        }
        c
    };
    normal(a) == normal(b)
}

/// A resize of `old` to `body` (the whole pod, as sent): `body` becomes what upstream's
/// resize strategy stores, then `ValidatePodResize`'s rules are checked on it; the
/// violations are upstream's 422.
pub(super) fn resize_update(body: &mut Value, old: &Value) -> Result<(), Vec<Violation>> {
    keep_resize_fields(body, old);
    let pod_level = |pod: &Value| {
        ["requests", "limits"].iter().any(|k| {
            pod.pointer(&format!("/spec/resources/{k}"))
                .and_then(Value::as_object)
                .is_some_and(|m| !m.is_empty())
        })
    };
    if pod_level(old) || pod_level(body) {
        return Err(vec![forbidden(
            "",
            "pods with pod-level resources cannot be resized",
        )]);
    }
    if old
        .pointer("/metadata/annotations/kubernetes.io~1config.mirror")
        .is_some()
    {
        return Err(vec![forbidden("", "static pods cannot be resized")]);
    }
    if old.pointer("/spec/os/name").and_then(Value::as_str) == Some("windows") {
        return Err(vec![forbidden("", "windows pods cannot be resized")]);
    }
    let mut violations = Vec::new();
    let stored_class = old
        .pointer("/status/qosClass")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| qos_class(old.get("spec").unwrap_or(&Value::Null)));
    if stored_class != qos_class(body.get("spec").unwrap_or(&Value::Null)) {
        let shown = body
            .pointer("/status/qosClass")
            .and_then(Value::as_str)
            .unwrap_or("");
        violations.push((
            "spec".to_owned(),
            "FieldValueInvalid",
            format!("{shown:?}: Pod QOS Class may not change as a result of resizing"),
        ));
    }
    let unsupported = old
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .and_then(|s| s.iter().find(|c| c.pointer("/state/running").is_some()))
        .is_some_and(|c| c.get("resources").is_none_or(Value::is_null));
    if unsupported {
        violations.push(forbidden(
            "spec",
            "Pod running on node without support for resize",
        ));
    }
    // Containers may be neither added, removed, renamed nor reordered (1.35).
    let mut ordering = Vec::new();
    for field in LISTS {
        let (new, stored) = (list(body, field), list(old, field));
        if new.len() != stored.len() {
            ordering.push(forbidden(
                &format!("spec.{field}"),
                "containers may not be added or removed on resize",
            ));
            continue;
        }
        for (i, (a, b)) in new.iter().zip(&stored).enumerate() {
            if name(a) != name(b) {
                ordering.push(forbidden(
                    &format!("spec.{field}[{i}].name"),
                    "containers may not be renamed or reordered on resize",
                ));
            }
        }
    }
    if !ordering.is_empty() {
        violations.extend(ordering);
        return Err(violations);
    }
    for field in LISTS {
        let (new, stored) = (list(body, field), list(old, field));
        for (i, (container, before)) in new.iter().zip(&stored).enumerate() {
            let sidecar = field == "initContainers" && is_sidecar(before);
            if field == "containers" || sidecar {
                let at = format!("spec.{field}[{i}].resources");
                for kind in ["requests", "limits"] {
                    let path = format!("/resources/{kind}");
                    if removed(container.pointer(&path), before.pointer(&path)) {
                        violations.push(forbidden(
                            &format!("{at}.{kind}"),
                            &format!("resource {kind} cannot be removed"),
                        ));
                    }
                }
            }
        }
    }
    for field in LISTS {
        let (new, stored) = (list(body, field), list(old, field));
        for (container, before) in new.iter().zip(&stored) {
            let message = if field == "containers" {
                "only cpu and memory resources are mutable"
            } else if is_sidecar(container) {
                "only cpu and memory resources for sidecar containers are mutable"
            } else {
                if !same_container(container, before) {
                    violations.push(forbidden(
                        "spec",
                        "resources for non-sidecar init containers are immutable",
                    ));
                }
                continue;
            };
            if !same_container(&without_cpu_memory_changes(container, before), before) {
                violations.push(forbidden("spec", message));
            }
        }
    }
    if !violations.is_empty() {
        return Err(violations);
    }
    // Anything else that changed (only possible when the strategy kept the request whole).
    let mut munged = body.get("spec").cloned().unwrap_or(Value::Null);
    for field in LISTS {
        let stored = list(old, field);
        if let Some(list) = munged.get_mut(field).and_then(Value::as_array_mut) {
            for (container, before) in list.iter_mut().zip(&stored) {
                *container = without_cpu_memory_changes(container, before);
            }
        }
    }
    if munged != old.get("spec").cloned().unwrap_or(Value::Null) {
        return Err(vec![forbidden(
            "spec",
            "only cpu and memory resources are mutable",
        )]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(resources: Value) -> Value {
        json!({
            "metadata": {"name": "p", "labels": {"app": "a"}, "generation": 1},
            "spec": {"containers": [{"name": "c", "image": "i", "resources": resources}],
                     "initContainers": [
                         {"name": "s", "image": "i", "restartPolicy": "Always",
                          "resources": {"requests": {"cpu": "100m"}}},
                         {"name": "once", "image": "i"}]},
            "status": {"qosClass": "Burstable"},
        })
    }

    fn refused(old: &Value, mut body: Value) -> Vec<String> {
        resize_update(&mut body, old)
            .unwrap_err()
            .into_iter()
            .map(|(f, t, m)| format!("{f} {t} {m}"))
            .collect()
    }

    #[test]
    fn only_container_resources_are_taken_and_only_cpu_and_memory_change() {
        let old = pod(json!({"requests": {"cpu": "100m", "memory": "64Mi"}}));
        let mut body = pod(json!({"requests": {"cpu": "200m", "memory": "64Mi"}}));
        body["metadata"]["labels"] = json!({"app": "changed"});
        body["spec"]["containers"][0]["image"] = json!("other");
        body["status"] = json!({"qosClass": "BestEffort", "phase": "Running"});
        resize_update(&mut body, &old).unwrap();
        assert_eq!(
            body["spec"]["containers"][0],
            json!({"name": "c", "image": "i",
                   "resources": {"requests": {"cpu": "200m", "memory": "64Mi"}}})
        );
        assert_eq!(body["metadata"]["labels"], json!({"app": "a"}));
        assert_eq!(body["status"], old["status"]);
        // A sidecar's CPU changes too; another resource, or a plain init container, not.
        let mut body = old.clone();
        body["spec"]["initContainers"][0]["resources"]["requests"]["cpu"] = json!("300m");
        resize_update(&mut body, &old).unwrap();
        let mut body = old.clone();
        body["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] = json!("1Gi");
        assert_eq!(
            refused(&old, body),
            ["spec FieldValueForbidden only cpu and memory resources are mutable"]
        );
        let mut body = old.clone();
        body["spec"]["initContainers"][1]["resources"] = json!({"requests": {"cpu": "1"}});
        assert_eq!(
            refused(&old, body),
            ["spec FieldValueForbidden resources for non-sidecar init containers are immutable"]
        );
        let mut body = old.clone();
        body["spec"]["containers"][0]["resizePolicy"] =
            json!([{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]);
        assert_eq!(
            refused(&old, body),
            ["spec FieldValueForbidden only cpu and memory resources are mutable"]
        );
        // Two containers changed alike: two causes, one message.
        let mut two = old.clone();
        let mut second = two["spec"]["containers"][0].clone();
        second["name"] = json!("d");
        two["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(second);
        let mut body = two.clone();
        for i in 0..2 {
            body["spec"]["containers"][i]["resources"]["requests"]["ephemeral-storage"] =
                json!("1Gi");
        }
        let violations = resize_update(&mut body, &two).unwrap_err();
        assert_eq!(violations.len(), 2);
        let status = crate::status::invalid("Pod", "", "p", &violations);
        assert_eq!(
            status.message,
            "Pod \"p\" is invalid: spec: Forbidden: only cpu and memory resources are mutable"
        );
        assert_eq!(status.details.unwrap().causes.len(), 2);
    }

    #[test]
    fn upstream_s_refusals() {
        let old = pod(json!({"requests": {"cpu": "100m"}, "limits": {"memory": "64Mi"}}));
        // Requests or limits removed; the QoS class changed.
        let mut body = old.clone();
        body["spec"]["containers"][0]["resources"] = json!({"limits": {"memory": "64Mi"}});
        assert_eq!(
            refused(&old, body),
            [
                "spec.containers[0].resources.requests FieldValueForbidden resource requests cannot be removed"
            ]
        );
        let mut body = old.clone();
        body["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "100m"}});
        assert_eq!(
            refused(&old, body),
            [
                "spec.containers[0].resources.limits FieldValueForbidden resource limits cannot be removed"
            ]
        );
        // A Guaranteed pod whose CPU request drops below its limit would become Burstable.
        let both = json!({"cpu": "1", "memory": "64Mi"});
        let mut guaranteed = pod(json!({"requests": both, "limits": both}));
        guaranteed["spec"]["initContainers"] = json!([]);
        guaranteed["status"]["qosClass"] = json!("Guaranteed");
        let mut body = guaranteed.clone();
        body["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("500m");
        assert_eq!(
            refused(&guaranteed, body),
            [
                "spec FieldValueInvalid \"Guaranteed\": Pod QOS Class may not change as a result of resizing"
            ]
        );
        // Renamed or removed containers; static, Windows and pod-level-resource pods.
        let mut body = old.clone();
        body["spec"]["containers"][0]["name"] = json!("d");
        assert_eq!(
            refused(&old, body),
            [
                "spec.containers[0].name FieldValueForbidden containers may not be renamed or reordered on resize"
            ]
        );
        let mut body = old.clone();
        body["spec"]["initContainers"] = json!([]);
        assert_eq!(
            refused(&old, body),
            [
                "spec.initContainers FieldValueForbidden containers may not be added or removed on resize"
            ]
        );
        let mut mirror = old.clone();
        mirror["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "x"});
        assert_eq!(
            refused(&mirror, mirror.clone()),
            [" FieldValueForbidden static pods cannot be resized"]
        );
        let mut windows = old.clone();
        windows["spec"]["os"] = json!({"name": "windows"});
        assert_eq!(
            refused(&windows, windows.clone()),
            [" FieldValueForbidden windows pods cannot be resized"]
        );
        let mut pod_level = old.clone();
        pod_level["spec"]["resources"] = json!({"requests": {"cpu": "1"}});
        assert_eq!(
            refused(&pod_level, pod_level.clone()),
            [" FieldValueForbidden pods with pod-level resources cannot be resized"]
        );
        // A running container whose status has no resources: a node without resize.
        let mut running = old.clone();
        running["status"]["containerStatuses"] = json!([{"name": "c", "state": {"running": {}}}]);
        assert_eq!(
            refused(&running, running.clone()),
            ["spec FieldValueForbidden Pod running on node without support for resize"]
        );
    }
}
