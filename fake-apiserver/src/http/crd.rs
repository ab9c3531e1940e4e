//! `CustomResourceDefinition`s posted to `apiextensions.k8s.io/v1`: each registers its
//! resource with the engine, so `kubectl apply -f crd.yaml` then `kubectl get <plural>` works.

use informer_core::Status;
use serde_json::{Value, json};

use crate::schema::Violation;
use crate::{PrinterColumn, ResourceDef, ScalePaths, status};

/// The built-in definition of the CRD resource itself.
pub(crate) fn crd_resource() -> ResourceDef {
    ResourceDef::builtins()
        .into_iter()
        .find(|d| d.group == "apiextensions.k8s.io" && d.plural == "customresourcedefinitions")
        .unwrap_or_else(|| {
            ResourceDef::cluster_scoped(
                "apiextensions.k8s.io",
                "v1",
                "customresourcedefinitions",
                "CustomResourceDefinition",
            )
            .with_short_names(&["crd", "crds"])
        })
}

fn invalid(name: &str, field: &str, message: &str) -> Status {
    status::invalid(
        "CustomResourceDefinition",
        "apiextensions.k8s.io",
        name,
        &[(field.to_owned(), "FieldValueRequired", message.to_owned())],
    )
}

/// The resource a CRD defines: its group, names, scope, and the storage version (else the
/// first served one). Other versions are not served (the engine keeps one version per
/// resource).
pub(crate) fn resource_def(crd: &Value) -> Result<ResourceDef, Status> {
    let name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let text = |ptr: &str| {
        crd.pointer(ptr)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let field = |ptr: &str| {
        text(ptr).ok_or_else(|| {
            let f = ptr.trim_start_matches('/').replace('/', ".");
            invalid(name, &f, "Required value")
        })
    };
    let group = field("/spec/group")?;
    let plural = field("/spec/names/plural")?;
    let kind = field("/spec/names/kind")?;
    if !name.is_empty() && name != format!("{plural}.{group}") {
        return Err(status::invalid(
            "CustomResourceDefinition",
            "apiextensions.k8s.io",
            name,
            &[(
                "metadata.name".into(),
                "FieldValueInvalid",
                format!("must be spec.names.plural+\".\"+spec.group ({plural}.{group})"),
            )],
        ));
    }
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let flag = |v: &Value, k: &str| v.get(k).and_then(Value::as_bool).unwrap_or(false);
    let stored_index = versions
        .iter()
        .position(|v| flag(v, "storage"))
        .or_else(|| versions.iter().position(|v| flag(v, "served")));
    let stored = stored_index.and_then(|i| versions.get(i));
    let stored_index = stored_index.unwrap_or(0);
    let status_subresource = stored.is_some_and(|v| v.pointer("/subresources/status").is_some());
    let version = stored
        .and_then(|v| v.get("name").and_then(Value::as_str))
        .ok_or_else(|| {
            invalid(
                name,
                "spec.versions",
                "must have exactly one version marked as storage version",
            )
        })?;
    let mut def = match text("/spec/scope") {
        Some("Cluster") => ResourceDef::cluster_scoped(group, version, plural, kind),
        _ => ResourceDef::namespaced(group, version, plural, kind),
    };
    def.status_subresource = status_subresource;
    def.schema = stored
        .and_then(|v| v.pointer("/schema/openAPIV3Schema"))
        .filter(|s| s.is_object())
        .cloned()
        .map(std::sync::Arc::new);
    let (selectable, mut refused) = selectable_fields(
        stored.and_then(|v| v.get("selectableFields")),
        def.schema.as_deref(),
        &format!("spec.versions[{stored_index}].selectableFields"),
    );
    def.selectable_fields = selectable;
    let (columns, column_errors) = printer_columns(
        stored.and_then(|v| v.get("additionalPrinterColumns")),
        &format!("spec.versions[{stored_index}].additionalPrinterColumns"),
    );
    def.printer_columns = columns;
    refused.extend(column_errors);
    if let Some(scale) = stored.and_then(|v| v.pointer("/subresources/scale")) {
        match scale_paths(scale) {
            Ok(paths) => {
                def.scale_subresource = true;
                def.scale_paths = Some(paths);
            }
            Err(errors) => refused.extend(errors),
        }
    }
    if let Some(schema) = &def.schema {
        refused.extend(crate::rules::crd_violations(schema));
    }
    if !refused.is_empty() {
        return Err(status::invalid(
            "CustomResourceDefinition",
            "apiextensions.k8s.io",
            name,
            &refused,
        ));
    }
    if let Some(s) = text("/spec/names/singular") {
        s.clone_into(&mut def.singular);
    }
    if let Some(l) = text("/spec/names/listKind") {
        l.clone_into(&mut def.list_kind);
    }
    def.short_names = crate::object::string_list(crd.pointer("/spec/names/shortNames"));
    Ok(def)
}

/// The types and formats a printer column may have (upstream's lists, sorted as its
/// messages print them).
const COLUMN_TYPES: [&str; 5] = ["boolean", "date", "integer", "number", "string"];
const COLUMN_FORMATS: [&str; 8] = [
    "byte",
    "date",
    "date-time",
    "double",
    "float",
    "int32",
    "int64",
    "password",
];

/// A CRD version's `additionalPrinterColumns`, and why they are refused (upstream's
/// `ValidateCustomResourceColumnDefinition`: a name, a known type and format, a JSONPath
/// starting with `.` that parses).
fn printer_columns(columns: Option<&Value>, path: &str) -> (Vec<PrinterColumn>, Vec<Violation>) {
    let mut out = Vec::new();
    let mut refused = Vec::new();
    let Some(columns) = columns.and_then(Value::as_array) else {
        return (out, refused);
    };
    for (i, column) in columns.iter().enumerate() {
        let at = |field: &str| format!("{path}[{i}].{field}");
        let text = |k: &str| {
            column
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let (name, type_name, format, json_path) =
            (text("name"), text("type"), text("format"), text("jsonPath"));
        let types = COLUMN_TYPES.join(",");
        if name.is_empty() {
            refused.push((at("name"), "FieldValueRequired", String::new()));
        }
        if type_name.is_empty() {
            refused.push((
                at("type"),
                "FieldValueRequired",
                format!("must be one of {types}"),
            ));
        } else if !COLUMN_TYPES.contains(&type_name.as_str()) {
            refused.push((
                at("type"),
                "FieldValueInvalid",
                format!("{type_name:?}: must be one of {types}"),
            ));
        }
        if !format.is_empty() && !COLUMN_FORMATS.contains(&format.as_str()) {
            refused.push((
                at("format"),
                "FieldValueInvalid",
                format!("{format:?}: must be one of {}", COLUMN_FORMATS.join(",")),
            ));
        }
        if json_path.is_empty() {
            refused.push((at("JSONPath"), "FieldValueRequired", String::new()));
        } else if !json_path.starts_with('.') {
            refused.push((
                at("JSONPath"),
                "FieldValueInvalid",
                format!("{json_path:?}: must be a simple json path starting with ."),
            ));
        }
        out.push(PrinterColumn {
            name,
            type_name,
            format,
            description: text("description"),
            priority: column
                .get("priority")
                .and_then(Value::as_i64)
                .and_then(|p| i32::try_from(p).ok())
                .unwrap_or(0),
            json_path,
        });
    }
    (out, refused)
}

/// A CRD's `subresources.scale`, or why upstream refuses it
/// (`ValidateCustomResourceDefinitionSubresources`): `specReplicasPath` under `.spec.`,
/// `statusReplicasPath` under `.status.`, `labelSelectorPath` (optional) under either.
fn scale_paths(scale: &Value) -> Result<ScalePaths, Vec<Violation>> {
    let mut refused = Vec::new();
    let mut path = |field: &str, required: bool, under: &[&str], message: &str| {
        let at = format!("spec.subresources.scale.{field}");
        let text = scale.get(field).and_then(Value::as_str).unwrap_or("");
        if text.is_empty() {
            if required {
                refused.push((at, "FieldValueRequired", String::new()));
            }
            return None;
        }
        if !text.starts_with('.') {
            refused.push((
                at,
                "FieldValueInvalid",
                format!("{text:?}: must be a simple json path starting with ."),
            ));
            return None;
        }
        if !under.iter().any(|prefix| text.starts_with(prefix)) {
            refused.push((at, "FieldValueInvalid", format!("{text:?}: {message}")));
            return None;
        }
        Some(text[1..].to_owned())
    };
    let spec = path(
        "specReplicasPath",
        true,
        &[".spec."],
        "should be a json path under .spec",
    );
    let status = path(
        "statusReplicasPath",
        true,
        &[".status."],
        "should be a json path under .status",
    );
    let selector = path(
        "labelSelectorPath",
        false,
        &[".spec.", ".status."],
        "should be a json path under either .spec or .status",
    );
    match (spec, status) {
        (Some(spec_replicas), Some(status_replicas)) if refused.is_empty() => Ok(ScalePaths {
            spec_replicas,
            status_replicas,
            label_selector: selector,
        }),
        _ => Err(refused),
    }
}

/// Upstream's limit on a CRD version's selectable fields.
const MAX_SELECTABLE_FIELDS: usize = 8;

/// A CRD version's `selectableFields` as field labels (`spec.color`), and why they are
/// refused (upstream's `ValidateCustomResourceSelectableFields`): each a path to a string,
/// boolean or integer field of the schema outside `metadata`, no duplicates, at most eight.
fn selectable_fields(
    fields: Option<&Value>,
    schema: Option<&Value>,
    path: &str,
) -> (Vec<String>, Vec<Violation>) {
    let mut labels: Vec<String> = Vec::new();
    let mut refused = Vec::new();
    let Some(fields) = fields.and_then(Value::as_array) else {
        return (labels, refused);
    };
    for (i, field) in fields.iter().enumerate() {
        let at = format!("{path}[{i}].jsonPath");
        let json_path = field.get("jsonPath").and_then(Value::as_str).unwrap_or("");
        if json_path.is_empty() {
            refused.push((at, "FieldValueRequired", String::new()));
            continue;
        }
        let label = json_path.trim_start_matches('.');
        let mut invalid = |message: &str| {
            refused.push((
                at.clone(),
                "FieldValueInvalid",
                format!("{json_path:?}: {message}"),
            ));
        };
        if label == "metadata" || label.starts_with("metadata.") {
            invalid("must not point to fields in metadata");
            continue;
        }
        let mut node = schema;
        for segment in label.split('.') {
            node = node
                .and_then(|n| n.get("properties"))
                .and_then(|p| p.get(segment))
                .filter(|_| !segment.is_empty());
        }
        let Some(node) = node else {
            invalid("is an invalid path: does not refer to a valid field");
            continue;
        };
        let ty = node.get("type").and_then(Value::as_str).unwrap_or("");
        if !matches!(ty, "string" | "boolean" | "integer") {
            invalid(
                "must point to a field of type string, boolean or integer. Enum string fields \
                 and strings with formats are allowed.",
            );
        }
        if labels.iter().any(|l| l == label) {
            refused.push((at, "FieldValueDuplicate", format!("{json_path:?}")));
        } else {
            labels.push(label.to_owned());
        }
    }
    if labels.len() > MAX_SELECTABLE_FIELDS {
        refused.push((
            path.to_owned(),
            "FieldValueTooMany",
            format!(
                "{}: must have at most {MAX_SELECTABLE_FIELDS} items",
                labels.len()
            ),
        ));
    }
    (labels, refused)
}

/// Sets the status a real server reports once the CRD is served (`Established`,
/// `NamesAccepted`), so `kubectl wait --for=condition=Established` returns at once.
pub(crate) fn mark_established(crd: &mut Value) {
    let names = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let stored: Vec<Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    let condition = |ty: &str, reason: &str, message: &str| {
        json!({"type": ty, "status": "True", "reason": reason, "message": message,
               "lastTransitionTime": "2026-01-01T00:00:00Z"})
    };
    if let Some(obj) = crd.as_object_mut() {
        obj.insert(
            "status".into(),
            json!({
                "acceptedNames": names,
                "storedVersions": stored,
                "conditions": [
                    condition("NamesAccepted", "NoConflicts", "no conflicts found"),
                    condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
                ],
            }),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [
                    {"name": "v1alpha1", "served": true, "storage": false},
                    {"name": "v1", "served": true, "storage": true},
                ],
            },
        })
    }

    #[test]
    fn defines_the_storage_version() {
        let def = resource_def(&crd()).unwrap();
        assert_eq!(def.api_version(), "example.com/v1");
        assert!(def.namespaced);
        assert_eq!(def.short_names, vec!["wd".to_owned()]);
        assert_eq!(def.list_kind, "WidgetList");
    }

    #[test]
    fn rejects_incomplete_or_misnamed_definitions() {
        let mut bad = crd();
        bad["spec"]["names"]
            .as_object_mut()
            .unwrap()
            .remove("plural");
        assert_eq!(resource_def(&bad).unwrap_err().code, 422);
        let mut misnamed = crd();
        misnamed["metadata"]["name"] = json!("gadgets.example.com");
        assert_eq!(resource_def(&misnamed).unwrap_err().code, 422);
        let mut unversioned = crd();
        unversioned["spec"]["versions"] = json!([]);
        assert_eq!(resource_def(&unversioned).unwrap_err().code, 422);
    }

    #[test]
    fn established_status() {
        let mut c = crd();
        mark_established(&mut c);
        assert_eq!(c["status"]["conditions"][1]["type"], "Established");
        assert_eq!(c["status"]["storedVersions"], json!(["v1"]));
    }
}
