//! What upstream's pod strategy (`pkg/registry/core/pod/strategy.go`) fills in that a
//! controller reads: a created pod's status is `Pending` with its QoS class
//! (`pkg/apis/core/helper/qos`), and a `PodScheduled=False` condition (reason
//! `SchedulingGated`) when it has scheduling gates; a status write that leaves out the QoS
//! class or an `observedGeneration` keeps the stored one; a write through
//! `pods/<name>/ephemeralcontainers` changes the ephemeral containers only, adding some and
//! changing or removing none.

use serde_json::{Map, Value, json};

use crate::quantity::{self, Quantity};

/// The status of a pod created through a request: `Pending`, its QoS class (the one the
/// request sent, as upstream's `GetPodQOS` prefers a status's own, else computed from the
/// decoded and defaulted `spec`), and the scheduling-gated condition; `sent` is the
/// request's status.
pub(super) fn status_on_create(spec: &Value, sent: Option<&Value>, now: &str) -> Value {
    let qos = sent
        .and_then(|s| s.get("qosClass"))
        .and_then(Value::as_str)
        .filter(|q| !q.is_empty())
        .map_or_else(|| qos_class(spec).to_owned(), str::to_owned);
    let mut status = json!({"phase": "Pending", "qosClass": qos});
    let gated = spec
        .get("schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|g| !g.is_empty());
    if gated {
        // `podutil.UpdatePodCondition`: a new condition gets the time; `lastProbeTime` is
        // a zero `metav1.Time`, which Go writes as `null`.
        status["conditions"] = json!([{
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": null,
            "lastTransitionTime": now,
            "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates",
        }]);
    }
    status
}

/// Upstream's pod status strategy on a status write: the QoS class is immutable (a status
/// without one keeps the stored one), and so are observed generations a write leaves out
/// (the status's, and each condition's, matched to the stored conditions by type in order).
pub(super) fn keep_on_status_update(body: &mut Value, old: &Value) {
    let Some(old_status) = old.get("status").and_then(Value::as_object) else {
        return;
    };
    let Some(status) = body.get_mut("status").and_then(Value::as_object_mut) else {
        return;
    };
    let unset = |v: Option<&Value>| match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(v) => v.as_i64() == Some(0),
    };
    for field in ["qosClass", "observedGeneration"] {
        if unset(status.get(field))
            && let Some(kept) = old_status.get(field).filter(|v| !unset(Some(v)))
        {
            status.insert(field.into(), kept.clone());
        }
    }
    let mut old_generations: Map<String, Value> = Map::new();
    for condition in old_status
        .get("conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let kind = condition.get("type").and_then(Value::as_str).unwrap_or("");
        let generation = condition
            .get("observedGeneration")
            .cloned()
            .unwrap_or(json!(0));
        if let Value::Array(list) = old_generations
            .entry(kind.to_owned())
            .or_insert_with(|| Value::Array(Vec::new()))
        {
            list.push(generation);
        }
    }
    let Some(conditions) = status.get_mut("conditions").and_then(Value::as_array_mut) else {
        return;
    };
    for condition in conditions {
        let kind = condition.get("type").and_then(Value::as_str).unwrap_or("");
        let old_generation = match old_generations.get_mut(kind) {
            Some(Value::Array(list)) if !list.is_empty() => list.remove(0),
            _ => json!(0),
        };
        if let Some(condition) = condition.as_object_mut()
            && unset(condition.get("observedGeneration"))
            && !unset(Some(&old_generation))
        {
            condition.insert("observedGeneration".into(), old_generation);
        }
    }
}

/// Upstream's `ComputePodQOS` on a pod's `spec`: `BestEffort` without any CPU or memory
/// request or limit above zero, `Guaranteed` when every container (init containers too)
/// limits both and the sums of requests equal those of limits, else `Burstable`. Pod-level
/// resources, when they name a resource a pod may set there, decide alone (without
/// upstream's defaults of pod-level requests, which the fake does not fill in).
pub(super) fn qos_class(spec: &Value) -> &'static str {
    let mut requests = Totals::default();
    let mut limits = Totals::default();
    let mut guaranteed = true;
    let pod_level = spec.get("resources").filter(|r| pod_level_set(r));
    let resources: Vec<&Value> = match pod_level {
        Some(r) => vec![r],
        None => ["containers", "initContainers"]
            .iter()
            .filter_map(|k| spec.get(*k).and_then(Value::as_array))
            .flatten()
            .filter_map(|c| c.get("resources"))
            .collect(),
    };
    for r in resources {
        requests.add(r.get("requests"));
        let limited = limits.add(r.get("limits"));
        // Pod-level resources with no limits leave the class to the requests.
        let checked = pod_level.is_none() || r.get("limits").is_some_and(non_empty);
        if checked && !(limited.0 && limited.1) {
            guaranteed = false;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed && requests.equal(&limits) {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

fn non_empty(list: &Value) -> bool {
    list.as_object().is_some_and(|m| !m.is_empty())
}

/// Whether pod-level resources name a resource a pod may set there (CPU, memory, huge
/// pages): upstream's `isPodLevelResourcesSet`.
fn pod_level_set(resources: &Value) -> bool {
    ["requests", "limits"].iter().any(|k| {
        resources
            .get(*k)
            .and_then(Value::as_object)
            .is_some_and(|m| {
                m.keys()
                    .any(|n| n == "cpu" || n == "memory" || n.starts_with("hugepages-"))
            })
    })
}

/// Sums of CPU and memory quantities above zero.
#[derive(Default)]
struct Totals {
    cpu: Option<Quantity>,
    memory: Option<Quantity>,
}

impl Totals {
    /// Adds a resource list's CPU and memory above zero; answers which it had.
    fn add(&mut self, list: Option<&Value>) -> (bool, bool) {
        let mut found = (false, false);
        let Some(list) = list.and_then(Value::as_object) else {
            return found;
        };
        for (name, value) in list {
            let (total, seen) = match name.as_str() {
                "cpu" => (&mut self.cpu, &mut found.0),
                "memory" => (&mut self.memory, &mut found.1),
                _ => continue,
            };
            // Stored quantities were parsed on their way in; one that no longer parses
            // (a test's direct write) counts as absent.
            let Some(q) = value
                .as_str()
                .and_then(|s| quantity::parse(s).ok())
                .filter(Quantity::is_positive)
            else {
                continue;
            };
            *seen = true;
            *total = Some(match total.take() {
                Some(sum) => sum.sum(&q),
                None => q,
            });
        }
        found
    }

    fn is_empty(&self) -> bool {
        self.cpu.is_none() && self.memory.is_none()
    }

    /// Whether each resource requested has an equal limit and the same resources are set.
    fn equal(&self, limits: &Totals) -> bool {
        let same = |a: &Option<Quantity>, b: &Option<Quantity>| match (a, b) {
            (Some(a), Some(b)) => a.cmp_value(b).is_eq(),
            (None, None) => true,
            _ => false,
        };
        same(&self.cpu, &limits.cpu) && same(&self.memory, &limits.memory)
    }
}

/// A pod subresource's write (ephemeral containers, resize): the status as stored, and the
/// labels, annotations, finalizers, owners, deletion time and generation, as upstream's
/// `ResetObjectMetaForStatus` keeps them.
pub(super) fn keep_stored_status_and_meta(
    object: &mut serde_json::Map<String, Value>,
    old: &Value,
) {
    match old.get("status") {
        Some(s) => object.insert("status".into(), s.clone()),
        None => object.remove("status"),
    };
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in [
            "labels",
            "annotations",
            "finalizers",
            "ownerReferences",
            "deletionTimestamp",
            "generation",
        ] {
            match old.pointer(&format!("/metadata/{field}")) {
                Some(v) => meta.insert(field.into(), v.clone()),
                None => meta.remove(field),
            };
        }
    }
}

/// A write through `pods/<name>/ephemeralcontainers` as `podEphemeralContainersStrategy`
/// prepares it (`dropNonEphemeralContainerUpdates`): everything but
/// `spec.ephemeralContainers` as stored (the spec, the status, and the labels,
/// annotations, finalizers and owners of `ResetObjectMetaForStatus`); then
/// `ValidatePodEphemeralContainersUpdate`'s rule: an ephemeral container, once added, is
/// neither removed nor changed; names are unique among all the pod's containers; a static
/// pod has none. The violations are upstream's 422.
pub(super) fn ephemeral_containers_update(
    body: &mut Value,
    old: &Value,
) -> Result<(), Vec<(String, &'static str, String)>> {
    let added = body
        .pointer("/spec/ephemeralContainers")
        .cloned()
        .filter(|e| !e.is_null());
    let Some(object) = body.as_object_mut() else {
        return Ok(());
    };
    let mut spec = old.get("spec").cloned().unwrap_or_else(|| json!({}));
    if let Some(spec) = spec.as_object_mut() {
        match added {
            Some(list) => spec.insert("ephemeralContainers".into(), list),
            None => spec.remove("ephemeralContainers"),
        };
    }
    object.insert("spec".into(), spec);
    keep_stored_status_and_meta(object, old);
    let path = "spec.ephemeralContainers".to_owned();
    if old
        .pointer("/metadata/annotations/kubernetes.io~1config.mirror")
        .is_some()
    {
        return Err(vec![(
            String::new(),
            "FieldValueForbidden",
            "static pods do not support ephemeral containers".into(),
        )]);
    }
    let containers = |v: &Value, field: &str| -> Vec<Value> {
        v.pointer(&format!("/spec/{field}"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let name = |c: &Value| {
        c.get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let new = containers(body, "ephemeralContainers");
    let mut violations = Vec::new();
    for stored in containers(old, "ephemeralContainers") {
        let stored_name = name(&stored);
        match new.iter().find(|c| name(c) == stored_name) {
            None => violations.push((
                path.clone(),
                "FieldValueForbidden",
                format!("existing ephemeral containers {stored_name:?} may not be removed\n"),
            )),
            Some(current) if *current != stored => violations.push((
                path.clone(),
                "FieldValueForbidden",
                format!("existing ephemeral containers {stored_name:?} may not be changed\n"),
            )),
            Some(_) => {}
        }
    }
    let mut seen: Vec<String> = containers(body, "initContainers")
        .iter()
        .chain(&containers(body, "containers"))
        .map(name)
        .collect();
    for (i, container) in new.iter().enumerate() {
        let this = name(container);
        if this.is_empty() {
            violations.push((
                format!("{path}[{i}].name"),
                "FieldValueRequired",
                String::new(),
            ));
        } else if seen.contains(&this) {
            violations.push((
                format!("{path}[{i}].name"),
                "FieldValueDuplicate",
                format!("{this:?}"),
            ));
        }
        seen.push(this);
    }
    if violations.is_empty() {
        Ok(())
    } else {
        Err(violations)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn containers(resources: &[Value]) -> Value {
        let list: Vec<Value> = resources
            .iter()
            .enumerate()
            .map(|(i, r)| json!({"name": format!("c{i}"), "resources": r}))
            .collect();
        json!({ "containers": list })
    }

    #[test]
    fn qos_classes_are_upstream_s() {
        let both = json!({"cpu": "1", "memory": "1Gi"});
        for (spec, class) in [
            (containers(&[json!({})]), "BestEffort"),
            // Zero quantities and other resources do not count.
            (
                containers(&[json!({"requests": {"cpu": "0", "nvidia.com/gpu": "1"}})]),
                "BestEffort",
            ),
            (
                containers(&[json!({"requests": both, "limits": both})]),
                "Guaranteed",
            ),
            // Equal by value, whatever the text.
            (
                containers(&[json!({"requests": {"cpu": "1000m", "memory": "1024Mi"},
                                    "limits": both})]),
                "Guaranteed",
            ),
            (
                containers(&[json!({"requests": {"cpu": "500m", "memory": "1Gi"},
                                    "limits": both})]),
                "Burstable",
            ),
            // Limits without memory: not guaranteed.
            (
                containers(&[json!({"requests": {"cpu": "1"}, "limits": {"cpu": "1"}})]),
                "Burstable",
            ),
            // Every container must limit both; sums are compared.
            (
                containers(&[
                    json!({"requests": both, "limits": both}),
                    json!({"requests": {"cpu": "100m"}}),
                ]),
                "Burstable",
            ),
            (
                containers(&[
                    json!({"requests": {"cpu": "250m", "memory": "1Gi"},
                           "limits": {"cpu": "750m", "memory": "1Gi"}}),
                    json!({"requests": {"cpu": "750m", "memory": "1Gi"},
                           "limits": {"cpu": "250m", "memory": "1Gi"}}),
                ]),
                "Guaranteed",
            ),
            // Pod-level resources decide alone.
            (
                json!({"resources": {"requests": both, "limits": both},
                       "containers": [{"name": "a"}]}),
                "Guaranteed",
            ),
            (
                json!({"resources": {"requests": {"cpu": "1"}},
                       "containers": [{"name": "a", "resources": {"requests": both, "limits": both}}]}),
                "Burstable",
            ),
        ] {
            assert_eq!(qos_class(&spec), class, "{spec}");
        }
    }

    #[test]
    fn a_status_write_keeps_the_qos_class_and_observed_generations() {
        let old = json!({"status": {
            "qosClass": "Burstable",
            "observedGeneration": 3,
            "conditions": [
                {"type": "Ready", "status": "True", "observedGeneration": 2},
                {"type": "Ready", "status": "True", "observedGeneration": 3},
            ],
        }});
        let mut body = json!({"status": {
            "phase": "Running",
            "conditions": [
                {"type": "Ready", "status": "False"},
                {"type": "Ready", "status": "False", "observedGeneration": 0},
                {"type": "Ready", "status": "False"},
            ],
        }});
        keep_on_status_update(&mut body, &old);
        assert_eq!(
            body["status"],
            json!({
                "phase": "Running",
                "qosClass": "Burstable",
                "observedGeneration": 3,
                "conditions": [
                    {"type": "Ready", "status": "False", "observedGeneration": 2},
                    {"type": "Ready", "status": "False", "observedGeneration": 3},
                    {"type": "Ready", "status": "False"},
                ],
            })
        );
    }
}
