//! A DaemonSet's template generation, which apps/v1 carries in the annotation
//! `deprecated.daemonset.template.generation` (upstream's conversion writes the internal
//! `spec.templateGeneration` there on every read, and its strategy keeps it): 1 on create (or
//! the annotation's value if higher), the stored one on an update, plus one when the update
//! changes the pod template.

use serde_json::{Value, json};

const ANNOTATION: &str = "deprecated.daemonset.template.generation";

/// The template generation `object` names (0 without a readable one).
fn template_generation(object: &Value) -> i64 {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(ANNOTATION))
        .and_then(Value::as_str)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn set(body: &mut Value, generation: i64) {
    let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    if let Some(annotations) = annotations.as_object_mut() {
        annotations.insert(ANNOTATION.into(), json!(generation.to_string()));
    }
}

/// The strategy's `PrepareForCreate`: at least 1.
pub(super) fn on_create(body: &mut Value) {
    let generation = template_generation(body).max(1);
    set(body, generation);
}

/// The strategy's `PrepareForUpdate`: the stored generation, one more if the pod template
/// changed.
pub(super) fn on_update(body: &mut Value, old: &Value) {
    let stored = template_generation(old);
    let changed = body.pointer("/spec/template") != old.pointer("/spec/template");
    set(body, if changed { stored + 1 } else { stored });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_generation_counts_template_changes() {
        let mut created = json!({"metadata": {"name": "agent"},
                                 "spec": {"template": {"spec": {"containers": []}}}});
        on_create(&mut created);
        assert_eq!(created["metadata"]["annotations"][ANNOTATION], "1");
        // An update that sets its own value does not keep it; a template change counts.
        let mut same = created.clone();
        same["metadata"]["annotations"][ANNOTATION] = json!("7");
        same["spec"]["minReadySeconds"] = json!(5);
        on_update(&mut same, &created);
        assert_eq!(same["metadata"]["annotations"][ANNOTATION], "1");
        let mut changed = created.clone();
        changed["spec"]["template"]["metadata"] = json!({"labels": {"v": "2"}});
        on_update(&mut changed, &created);
        assert_eq!(changed["metadata"]["annotations"][ANNOTATION], "2");
    }
}
