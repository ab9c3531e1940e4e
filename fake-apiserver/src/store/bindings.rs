//! Binding a pod to a node (`POST pods/<name>/binding`, `POST bindings`): what a scheduler
//! does to place a pod.
//!
//! Upstream (read in `pkg/registry/core/pod/storage/storage.go`, `BindingREST` and
//! `setPodNodeAndMetadata`): the `Binding` names its target node (`target.kind` empty or
//! `Node`, `target.name` required: a 500 with the field errors otherwise, as its handler
//! returns them unconverted); its `metadata.uid` and `resourceVersion`, when set, are
//! preconditions on the pod; a pod being deleted, already bound or with scheduling gates is
//! a 409 on `pods/binding`. A bound pod gets `spec.nodeName`, loses its
//! `status.nominatedNodeName` (`ClearingNominatedNodeNameAfterBinding`, on since 1.35), gets
//! the binding's annotations and labels (`PodTopologyLabelsAdmission`, on since 1.35), and a
//! `PodScheduled=True` condition (`podutil.UpdatePodCondition`: a new transition time unless
//! it was already true). The pod is written as the storage writes it, bypassing field
//! management; the answer is a `Success` status.

use std::sync::Arc;

use informer_core::Status;
use serde_json::{Map, Value, json};

use super::{Part, Preconditions, Store};
use crate::object::{StoredObject, meta_str};
use crate::status;

impl Store {
    /// Binds pod `name` of `namespace` (`res` is the pods resource) to the node `binding`
    /// (a `v1` `Binding`) names, as upstream's binding subresource does.
    pub(crate) fn bind(
        &mut self,
        res: usize,
        namespace: &str,
        name: &str,
        binding: &Value,
    ) -> Result<Arc<StoredObject>, Status> {
        self.managing = None;
        let node = binding_target(binding)?;
        let def = Arc::clone(&self.resources[res].def);
        let pod = self.get(res, Some(namespace), name)?;
        let preconditions = Preconditions {
            uid: meta_str(binding, "uid").map(str::to_owned),
            resource_version: meta_str(binding, "resourceVersion").map(str::to_owned),
        };
        let key = format!("/registry/pods/{namespace}/{name}");
        if let Some(uid) = preconditions.uid.as_deref().filter(|u| *u != pod.uid()) {
            return Err(storage_precondition(
                &def,
                name,
                &key,
                &format!(
                    "UID in precondition: {uid}, UID in object meta: {}",
                    pod.uid()
                ),
            ));
        }
        let stored_rv = pod.resource_version().to_string();
        if let Some(rv) = preconditions
            .resource_version
            .as_deref()
            .filter(|rv| *rv != stored_rv)
        {
            return Err(storage_precondition(
                &def,
                name,
                &key,
                &format!(
                    "ResourceVersion in precondition: {rv}, ResourceVersion in object meta: \
                     {stored_rv}"
                ),
            ));
        }
        let mut value = pod.to_value();
        let refuse = |why: String| {
            let mut s = Status::failure(
                409,
                "Conflict",
                format!("Operation cannot be fulfilled on pods/binding {name:?}: {why}"),
            );
            s.details = Some(informer_core::StatusDetails {
                name: name.to_owned(),
                kind: "pods/binding".into(),
                ..informer_core::StatusDetails::default()
            });
            s
        };
        if pod.is_deleting() {
            return Err(refuse(format!(
                "pod {name} is being deleted, cannot be assigned to a host"
            )));
        }
        let bound = value
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !bound.is_empty() {
            return Err(refuse(format!(
                "pod {name} is already assigned to node {bound:?}"
            )));
        }
        let gated = value
            .pointer("/spec/schedulingGates")
            .and_then(Value::as_array)
            .is_some_and(|g| !g.is_empty());
        if gated {
            return Err(refuse(format!(
                "pod {name} has non-empty .spec.schedulingGates"
            )));
        }
        let now = self.clock.now_rfc3339();
        assign(&mut value, binding, &node, &now);
        self.update_with(res, Some(namespace), name, value, Part::Whole)
    }
}

/// The node a `Binding` targets, or upstream's refusal (`ValidatePodBinding`, answered as a
/// 500 because the binding handler returns the field errors as a plain error).
fn binding_target(binding: &Value) -> Result<String, Status> {
    let target = |field: &str| {
        binding
            .pointer(&format!("/target/{field}"))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let mut errors = Vec::new();
    if !matches!(target("kind"), "" | "Node") {
        errors.push(format!(
            "target.kind: Unsupported value: {:?}: supported values: \"Node\", \"<empty>\"",
            target("kind")
        ));
    }
    if target("name").is_empty() {
        errors.push("target.name: Required value".to_owned());
    }
    match errors.as_slice() {
        [] => Ok(target("name").to_owned()),
        [one] => Err(unconverted(one.clone())),
        many => Err(unconverted(format!("[{}]", many.join(", ")))),
    }
}

/// An error the real server did not convert to a status: a 500 with no reason.
fn unconverted(message: String) -> Status {
    Status::failure(500, "", message)
}

/// A storage precondition's failure as the real server words it: a 409 on the pod whose
/// message carries the storage error (`StorageError: invalid object, Code: 4, ...`).
fn storage_precondition(def: &crate::ResourceDef, name: &str, key: &str, what: &str) -> Status {
    Status {
        message: format!(
            "Operation cannot be fulfilled on {} {name:?}: StorageError: invalid object, \
             Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition \
             failed: {what}",
            def.qualified_name()
        ),
        ..status::conflict(def, name)
    }
}

/// Binds `pod` to `node`: `spec.nodeName`, no nominated node, the binding's annotations and
/// labels, and `PodScheduled=True`.
fn assign(pod: &mut Value, binding: &Value, node: &str, now: &str) {
    let Some(object) = pod.as_object_mut() else {
        return;
    };
    let spec = object.entry("spec").or_insert_with(|| json!({}));
    if let Some(spec) = spec.as_object_mut() {
        spec.insert("nodeName".into(), Value::String(node.to_owned()));
    }
    let metadata = object.entry("metadata").or_insert_with(|| json!({}));
    if let Some(metadata) = metadata.as_object_mut() {
        for field in ["annotations", "labels"] {
            let Some(from) = binding
                .pointer(&format!("/metadata/{field}"))
                .and_then(Value::as_object)
                .filter(|m| !m.is_empty())
            else {
                continue;
            };
            let into = metadata.entry(field).or_insert_with(|| json!({}));
            if !into.is_object() {
                *into = json!({});
            }
            if let Some(into) = into.as_object_mut() {
                into.extend(from.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
    }
    let status = object.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    if let Some(status) = status.as_object_mut() {
        status.remove("nominatedNodeName");
        scheduled(status, now);
    }
}

/// `podutil.UpdatePodCondition` with `PodScheduled=True`: the condition replaced (reason
/// and message gone), its transition time kept when it was already true.
fn scheduled(status: &mut Map<String, Value>, now: &str) {
    let conditions = status
        .entry("conditions")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !conditions.is_array() {
        *conditions = Value::Array(Vec::new());
    }
    let Some(conditions) = conditions.as_array_mut() else {
        return;
    };
    let existing = conditions
        .iter()
        .position(|c| c.get("type").and_then(Value::as_str) == Some("PodScheduled"));
    let mut condition = json!({
        "type": "PodScheduled",
        "status": "True",
        "lastProbeTime": null,
        "lastTransitionTime": now,
    });
    match existing {
        Some(i) => {
            let old = &conditions[i];
            if old.get("status").and_then(Value::as_str) == Some("True")
                && let Some(at) = old.get("lastTransitionTime")
            {
                condition["lastTransitionTime"] = at.clone();
            }
            conditions[i] = condition;
        }
        None => conditions.push(condition),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binding_places_the_pod_and_marks_it_scheduled() {
        let mut pod = json!({
            "metadata": {"name": "p", "annotations": {"keep": "1"}},
            "spec": {"containers": [{"name": "c"}]},
            "status": {"phase": "Pending", "nominatedNodeName": "n0", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": "0/3 nodes", "lastProbeTime": null,
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
        });
        let binding = json!({
            "metadata": {"name": "p", "annotations": {"by": "sched"}, "labels": {"zone": "a"}},
            "target": {"kind": "Node", "name": "n1"},
        });
        assign(&mut pod, &binding, "n1", "2026-01-02T00:00:00Z");
        assert_eq!(pod["spec"]["nodeName"], "n1");
        assert_eq!(
            pod["metadata"]["annotations"],
            json!({"keep": "1", "by": "sched"})
        );
        assert_eq!(pod["metadata"]["labels"], json!({"zone": "a"}));
        assert!(pod["status"].get("nominatedNodeName").is_none());
        assert_eq!(
            pod["status"]["conditions"],
            json!([{"type": "PodScheduled", "status": "True", "lastProbeTime": null,
                    "lastTransitionTime": "2026-01-02T00:00:00Z"}])
        );
        // Already true: the transition time stays.
        let mut again = pod.clone();
        scheduled(
            again["status"].as_object_mut().unwrap(),
            "2026-01-03T00:00:00Z",
        );
        assert_eq!(
            again["status"]["conditions"][0]["lastTransitionTime"],
            "2026-01-02T00:00:00Z"
        );
    }

    #[test]
    fn a_binding_without_a_node_is_refused_as_upstream_refuses_it() {
        let missing = binding_target(&json!({"target": {}})).unwrap_err();
        assert_eq!(
            (missing.code, missing.message.as_str()),
            (500, "target.name: Required value")
        );
        let both = binding_target(&json!({"target": {"kind": "Pod"}})).unwrap_err();
        assert_eq!(
            both.message,
            "[target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\", \
             target.name: Required value]"
        );
        assert_eq!(
            binding_target(&json!({"target": {"name": "n1"}})).unwrap(),
            "n1"
        );
    }
}
