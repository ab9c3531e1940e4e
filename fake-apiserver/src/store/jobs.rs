//! What upstream's Job strategy (`pkg/registry/batch/job/strategy.go`) fills in on create:
//! unless the Job asks for a manual selector, a selector on a label only its pods carry, and
//! that label with the Job's name on its pod template.

use serde_json::{Map, Value, json};

/// The labels `generateSelector` adds to the pod template: the Job's name under its two
/// keys, its uid under two more; the selector names the prefixed uid key.
const NAME_LABELS: [&str; 2] = ["job-name", "batch.kubernetes.io/job-name"];
const UID_LABELS: [&str; 2] = ["controller-uid", "batch.kubernetes.io/controller-uid"];
const SELECTED: &str = "batch.kubernetes.io/controller-uid";

/// `generateSelectorIfNeeded` on a decoded and defaulted Job named `name` with `uid`: a
/// label the template already has is left as it is (validation would refuse a conflict).
pub(super) fn generate_selector(body: &mut Value, name: &str, uid: &str) {
    let Some(spec) = body.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec.get("manualSelector") == Some(&json!(true)) {
        return;
    }
    let labels = object_at(spec, "template")
        .and_then(|t| object_at(t, "metadata"))
        .and_then(|m| object_at(m, "labels"));
    if let Some(labels) = labels {
        for (keys, value) in [(NAME_LABELS, name), (UID_LABELS, uid)] {
            for key in keys {
                labels.entry(key).or_insert_with(|| json!(value));
            }
        }
    }
    let selected = object_at(spec, "selector").and_then(|s| object_at(s, "matchLabels"));
    if let Some(selected) = selected {
        selected.entry(SELECTED).or_insert_with(|| json!(uid));
    }
}

/// The object at `key` of `map`, made one if absent or not an object.
fn object_at<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    let slot = map.entry(key).or_insert_with(|| json!({}));
    if !slot.is_object() {
        *slot = json!({});
    }
    slot.as_object_mut()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_s_selector_and_template_labels_name_its_uid() {
        let mut job = json!({"spec": {"manualSelector": false, "template": {"metadata": {
            "labels": {"app": "pi", "job-name": "kept"}}}}});
        generate_selector(&mut job, "pi", "u-1");
        assert_eq!(
            job["spec"]["template"]["metadata"]["labels"],
            json!({"app": "pi", "job-name": "kept", "batch.kubernetes.io/job-name": "pi",
                   "controller-uid": "u-1", "batch.kubernetes.io/controller-uid": "u-1"})
        );
        assert_eq!(
            job["spec"]["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}})
        );
        // A manual selector is the Job's own.
        let mut manual = json!({"spec": {"manualSelector": true,
            "selector": {"matchLabels": {"app": "pi"}}}});
        let before = manual.clone();
        generate_selector(&mut manual, "pi", "u-1");
        assert_eq!(manual, before);
    }
}
