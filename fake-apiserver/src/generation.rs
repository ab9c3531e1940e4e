//! `metadata.generation`: the sequence number of an object's desired state, kept by the server
//! as the real one's registry strategies keep it.
//!
//! - Clients never set it: an update keeps the stored value whatever the body says.
//! - Kinds that track it start at 1 on create and add one whenever a write changes what they
//!   track: custom resources everything outside `metadata` (and outside `status` when the
//!   status subresource is on, where main writes cannot change it), and the built-in kinds
//!   listed in [`tracked`] their `spec` (deployments their annotations too, webhook
//!   configurations their `webhooks`). Status writes never change it.
//! - Setting `metadata.deletionTimestamp` (a deletion that waits for finalizers) adds one to a
//!   positive generation, so that controllers see the object change meaning.
//!
//! Other built-in kinds keep whatever the creating request sent (upstream's create path does
//! not reset it either). Built-in kinds not in the table that track a generation upstream
//! (admission policies, flow-control objects, dynamic resource allocation) are not modelled.

use serde_json::Value;

use crate::ResourceDef;

/// What of an object counts as its desired state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tracked {
    /// `.spec`.
    Spec,
    /// `.spec` and `.metadata.annotations` (deployments copy annotations to replica sets).
    SpecAndAnnotations,
    /// `.webhooks` (admission webhook configurations).
    Webhooks,
    /// Everything outside `metadata`, and outside `status` if `skip_status` (custom resources).
    AllButMetadata { skip_status: bool },
}

/// What `def`'s objects track, if they track a generation.
fn tracked(def: &ResourceDef) -> Option<Tracked> {
    // Resources registered without an OpenAPI definition are custom resources (CRDs, or
    // registered by a test): upstream's custom resource strategy.
    if def.definition.is_none() {
        return Some(Tracked::AllButMetadata {
            skip_status: def.status_subresource,
        });
    }
    let tracked = match (def.group.as_str(), def.kind.as_str()) {
        ("", "Pod" | "ReplicationController")
        | ("apps", "ReplicaSet" | "StatefulSet" | "DaemonSet")
        | ("batch", "Job" | "CronJob")
        | ("policy", "PodDisruptionBudget")
        | ("networking.k8s.io", "Ingress" | "IngressClass" | "NetworkPolicy")
        | ("apiextensions.k8s.io", "CustomResourceDefinition") => Tracked::Spec,
        ("apps", "Deployment") => Tracked::SpecAndAnnotations,
        (
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration",
        ) => Tracked::Webhooks,
        _ => return None,
    };
    Some(tracked)
}

/// Whether `def`'s objects start at generation 1 and count changes.
pub(crate) fn is_tracked(def: &ResourceDef) -> bool {
    tracked(def).is_some()
}

/// The generation `new` (an update of `old`, its other server-set fields already fixed) is
/// stored with, or `None` to store none (the old object had none, and the kind does not track
/// one).
pub(crate) fn on_update(def: &ResourceDef, old: &Value, new: &Value) -> Option<i64> {
    let stored = of(old);
    let Some(tracked) = tracked(def) else {
        return stored;
    };
    let stored = stored.unwrap_or(0);
    let changed = match tracked {
        Tracked::Spec => part(old, "spec") != part(new, "spec"),
        Tracked::SpecAndAnnotations => {
            part(old, "spec") != part(new, "spec") || annotations(old) != annotations(new)
        }
        Tracked::Webhooks => part(old, "webhooks") != part(new, "webhooks"),
        Tracked::AllButMetadata { skip_status } => {
            outside_metadata(old, skip_status) != outside_metadata(new, skip_status)
        }
    };
    Some(if changed { stored + 1 } else { stored })
}

/// The generation of an object whose `deletionTimestamp` is being set for the first time.
pub(crate) fn on_deletion_marked(current: &Value) -> Option<i64> {
    of(current).map(|g| if g > 0 { g + 1 } else { g })
}

/// The fields outside `metadata` (and `status` if `skip_status`), compared as they are
/// (custom resources are unstructured upstream: an absent field and an empty one differ).
fn outside_metadata(obj: &Value, skip_status: bool) -> Vec<(&String, &Value)> {
    obj.as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.as_str() != "metadata" && !(skip_status && k.as_str() == "status"))
        .collect()
}

fn of(obj: &Value) -> Option<i64> {
    obj.get("metadata")?.get("generation")?.as_i64()
}

/// A top-level field, with absent, `null`, `{}` and `[]` alike (Go's semantic equality
/// compares the decoded structs, where all of these are the zero value).
fn part<'a>(obj: &'a Value, field: &str) -> Option<&'a Value> {
    obj.get(field).filter(|v| !is_empty(v))
}

/// Annotations, with none and an empty map alike.
fn annotations(obj: &Value) -> Option<&Value> {
    obj.get("metadata").and_then(|m| part(m, "annotations"))
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;
    use serde_json::json;

    fn builtin(group: &str, kind: &str) -> ResourceDef {
        let mut def = ResourceDef::namespaced(group, "v1", "things", kind);
        def.definition = Some(format!("io.k8s.api.{kind}"));
        def
    }

    #[test]
    fn built_in_kinds_count_what_upstream_strategies_count() {
        let old = json!({"metadata": {"generation": 3, "annotations": {"a": "1"}}, "spec": {"replicas": 1}, "status": {"x": 1}});
        let spec = json!({"metadata": {"generation": 3, "annotations": {"a": "1"}}, "spec": {"replicas": 2}, "status": {"x": 1}});
        let annotated = json!({"metadata": {"generation": 3, "annotations": {"a": "2"}}, "spec": {"replicas": 1}, "status": {"x": 1}});
        let status = json!({"metadata": {"generation": 3, "annotations": {"a": "1"}}, "spec": {"replicas": 1}, "status": {"x": 2}});
        let deployment = builtin("apps", "Deployment");
        let replica_set = builtin("apps", "ReplicaSet");
        assert_eq!(on_update(&deployment, &old, &spec), Some(4));
        assert_eq!(on_update(&deployment, &old, &annotated), Some(4));
        assert_eq!(on_update(&deployment, &old, &status), Some(3));
        assert_eq!(on_update(&replica_set, &old, &spec), Some(4));
        assert_eq!(
            on_update(&replica_set, &old, &annotated),
            Some(3),
            "only deployments count annotations"
        );
        let webhooks = builtin(
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration",
        );
        assert_eq!(
            on_update(
                &webhooks,
                &json!({"metadata": {"generation": 1}, "webhooks": []}),
                &json!({"metadata": {}, "webhooks": [{"name": "w"}]})
            ),
            Some(2)
        );
        // A kind that tracks nothing keeps what it had, or none.
        let config_map = builtin("", "ConfigMap");
        assert!(!is_tracked(&config_map));
        assert_eq!(
            on_update(
                &config_map,
                &json!({"metadata": {"generation": 7}, "data": {"a": "1"}}),
                &json!({"metadata": {"generation": 9}, "data": {"a": "2"}})
            ),
            Some(7)
        );
        assert_eq!(
            on_update(
                &config_map,
                &json!({"data": {}}),
                &json!({"metadata": {"generation": 9}, "data": {"a": "2"}})
            ),
            None
        );
    }

    #[test]
    fn custom_resources_count_everything_outside_metadata_and_the_status_subresource() {
        let mut def = ResourceDef::namespaced("example.com", "v1", "widgets", "Widget");
        assert!(is_tracked(&def));
        let old = json!({"metadata": {"generation": 1, "labels": {"a": "1"}}, "spec": {"size": 1}, "status": {"ready": false}});
        let relabelled = json!({"metadata": {"generation": 1, "labels": {"a": "2"}}, "spec": {"size": 1}, "status": {"ready": false}});
        let status =
            json!({"metadata": {"generation": 1}, "spec": {"size": 1}, "status": {"ready": true}});
        let other = json!({"metadata": {"generation": 1}, "spec": {"size": 1}, "status": {"ready": false}, "data": 1});
        assert_eq!(on_update(&def, &old, &relabelled), Some(1));
        assert_eq!(
            on_update(&def, &old, &status),
            Some(2),
            "status is desired state without the subresource"
        );
        assert_eq!(on_update(&def, &old, &other), Some(2));
        def.status_subresource = true;
        assert_eq!(on_update(&def, &old, &status), Some(1));
        assert_eq!(on_update(&def, &old, &other), Some(2));
    }

    #[test]
    fn marking_for_deletion_counts_only_a_positive_generation() {
        assert_eq!(
            on_deletion_marked(&json!({"metadata": {"generation": 2}})),
            Some(3)
        );
        assert_eq!(
            on_deletion_marked(&json!({"metadata": {"generation": 0}})),
            Some(0)
        );
        assert_eq!(on_deletion_marked(&json!({"metadata": {}})), None);
    }
}
