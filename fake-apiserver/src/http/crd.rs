//! `CustomResourceDefinition`s posted to `apiextensions.k8s.io/v1`: each registers its
//! resource with the engine, so `kubectl apply -f crd.yaml` then `kubectl get <plural>` works.

use std::cmp::Ordering;

use informer_core::Status;
use serde_json::{Value, json};

use crate::schema::Violation;
use crate::versions::{StorageVersion, by_priority};
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

/// What a CRD defines: one resource per version it serves, each with that version's
/// schema, printer columns, selectable fields, subresources and deprecation warning, all
/// stored in one version.
#[derive(Debug)]
pub(crate) struct Definition {
    /// The served versions, in the CRD's order.
    pub served: Vec<ResourceDef>,
    /// The storage version (served or not) and its schema.
    pub storage: StorageVersion,
}

/// The resources a CRD defines: its group, names and scope, and every served version
/// (one served version, the storage version, under the `Webhook` conversion strategy: this
/// server calls no conversion webhook). Every version is checked, served or not, as upstream
/// validates them all.
pub(crate) fn definition(crd: &Value) -> Result<Definition, Status> {
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
    let version_name = |v: &Value| {
        v.get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let stored_index = versions
        .iter()
        .position(|v| flag(v, "storage"))
        .or_else(|| versions.iter().position(|v| flag(v, "served")))
        .filter(|&i| !version_name(&versions[i]).is_empty())
        .ok_or_else(|| {
            invalid(
                name,
                "spec.versions",
                "must have exactly one version marked as storage version",
            )
        })?;
    let names = Names {
        group,
        plural,
        kind,
        namespaced: text("/spec/scope") != Some("Cluster"),
        singular: text("/spec/names/singular"),
        list_kind: text("/spec/names/listKind"),
        short_names: crate::object::string_list(crd.pointer("/spec/names/shortNames")),
        categories: crate::object::string_list(crd.pointer("/spec/names/categories")),
    };
    let webhook = text("/spec/conversion/strategy") == Some("Webhook");
    let mut refused = Vec::new();
    let mut served = Vec::new();
    let mut storage = None;
    for (i, version) in versions.iter().enumerate() {
        let def = version_def(&names, &versions, i, &mut refused);
        if i == stored_index {
            storage = Some(StorageVersion {
                api_version: def.api_version(),
                schema: def.schema.clone(),
            });
        }
        let serves = if webhook {
            i == stored_index
        } else {
            flag(version, "served")
        };
        if serves {
            served.push(def);
        }
    }
    if !refused.is_empty() {
        return Err(status::invalid(
            "CustomResourceDefinition",
            "apiextensions.k8s.io",
            name,
            &refused,
        ));
    }
    let storage = storage.ok_or_else(|| {
        invalid(
            name,
            "spec.versions",
            "must have exactly one version marked as storage version",
        )
    })?;
    Ok(Definition { served, storage })
}

/// The names and scope every version of a CRD shares.
struct Names<'a> {
    group: &'a str,
    plural: &'a str,
    kind: &'a str,
    namespaced: bool,
    singular: Option<&'a str>,
    list_kind: Option<&'a str>,
    short_names: Vec<String>,
    categories: Vec<String>,
}

/// The resource of version `index` of a CRD; what upstream refuses in it goes to `refused`.
fn version_def(
    names: &Names<'_>,
    versions: &[Value],
    index: usize,
    refused: &mut Vec<Violation>,
) -> ResourceDef {
    let version = &versions[index];
    let name = version.get("name").and_then(Value::as_str).unwrap_or("");
    let mut def = if names.namespaced {
        ResourceDef::namespaced(names.group, name, names.plural, names.kind)
    } else {
        ResourceDef::cluster_scoped(names.group, name, names.plural, names.kind)
    };
    def.status_subresource = version.pointer("/subresources/status").is_some();
    def.schema = version
        .pointer("/schema/openAPIV3Schema")
        .filter(|s| s.is_object())
        .cloned()
        .map(std::sync::Arc::new);
    let (selectable, errors) = selectable_fields(
        version.get("selectableFields"),
        def.schema.as_deref(),
        &format!("spec.versions[{index}].selectableFields"),
    );
    def.selectable_fields = selectable;
    refused.extend(errors);
    let (columns, errors) = printer_columns(
        version.get("additionalPrinterColumns"),
        &format!("spec.versions[{index}].additionalPrinterColumns"),
    );
    def.printer_columns = columns;
    refused.extend(errors);
    if let Some(scale) = version.pointer("/subresources/scale") {
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
    if let Some(s) = names.singular {
        s.clone_into(&mut def.singular);
    }
    if let Some(l) = names.list_kind {
        l.clone_into(&mut def.list_kind);
    }
    def.short_names.clone_from(&names.short_names);
    def.categories.clone_from(&names.categories);
    if version.get("deprecated").and_then(Value::as_bool) == Some(true) {
        def.deprecation_warning = Some(
            version
                .get("deprecationWarning")
                .and_then(Value::as_str)
                .map_or_else(
                    || default_deprecation_warning(names, versions, name),
                    str::to_owned,
                ),
        );
    }
    def
}

/// Upstream's `defaultDeprecationWarning`: `<group>/<version> <Kind> is deprecated`, and the
/// served version that is not deprecated and ranks highest above it, if any, to use instead.
fn default_deprecation_warning(names: &Names<'_>, versions: &[Value], deprecated: &str) -> String {
    let (group, kind) = (names.group, names.kind);
    let mut message = format!("{group}/{deprecated} {kind} is deprecated");
    let better = versions
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .filter(|v| v.get("deprecated").and_then(Value::as_bool) != Some(true))
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .filter(|v| by_priority(v, deprecated) == Ordering::Less)
        .min_by(|a, b| by_priority(a, b));
    if let Some(better) = better {
        message.push_str(&format!("; use {group}/{better} {kind}"));
    }
    message
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
    fn defines_every_served_version_stored_in_one() {
        let d = definition(&crd()).unwrap();
        let served: Vec<String> = d.served.iter().map(ResourceDef::api_version).collect();
        assert_eq!(served, ["example.com/v1alpha1", "example.com/v1"]);
        assert_eq!(d.storage.api_version, "example.com/v1");
        let def = &d.served[1];
        assert!(def.namespaced);
        assert_eq!(def.short_names, vec!["wd".to_owned()]);
        assert_eq!(def.list_kind, "WidgetList");
        assert_eq!(def.deprecation_warning, None);
        // Under the `Webhook` strategy only the storage version is served (no webhook is
        // called); a version not served is not.
        let mut webhook = crd();
        webhook["spec"]["conversion"] = json!({"strategy": "Webhook"});
        let d = definition(&webhook).unwrap();
        assert_eq!(d.served.len(), 1);
        assert_eq!(d.served[0].version, "v1");
        let mut unserved = crd();
        unserved["spec"]["versions"][0]["served"] = json!(false);
        assert_eq!(definition(&unserved).unwrap().served.len(), 1);
    }

    #[test]
    fn deprecated_versions_carry_upstream_s_warning() {
        let mut c = crd();
        c["spec"]["versions"] = json!([
            {"name": "v1alpha1", "served": true, "storage": false, "deprecated": true},
            {"name": "v1beta1", "served": true, "storage": false, "deprecated": true,
             "deprecationWarning": "use v1, really"},
            {"name": "v1", "served": true, "storage": true},
            {"name": "v2alpha1", "served": true, "storage": false},
            {"name": "v3", "served": false, "storage": false},
        ]);
        let d = definition(&c).unwrap();
        let warning = |v: &str| {
            d.served
                .iter()
                .find(|d| d.version == v)
                .unwrap()
                .deprecation_warning
                .clone()
        };
        // Upstream's `defaultDeprecationWarning`: the best served version that is not
        // deprecated and ranks above (GA before alpha: v1, not v2alpha1; v3 is not served).
        assert_eq!(
            warning("v1alpha1").as_deref(),
            Some("example.com/v1alpha1 Widget is deprecated; use example.com/v1 Widget")
        );
        assert_eq!(warning("v1beta1").as_deref(), Some("use v1, really"));
        assert_eq!(warning("v1"), None);
        c["spec"]["versions"] = json!([
            {"name": "v1", "served": true, "storage": true, "deprecated": true},
        ]);
        assert_eq!(
            definition(&c).unwrap().served[0]
                .deprecation_warning
                .as_deref(),
            Some("example.com/v1 Widget is deprecated")
        );
    }

    #[test]
    fn rejects_incomplete_or_misnamed_definitions() {
        let mut bad = crd();
        bad["spec"]["names"]
            .as_object_mut()
            .unwrap()
            .remove("plural");
        assert_eq!(definition(&bad).unwrap_err().code, 422);
        let mut misnamed = crd();
        misnamed["metadata"]["name"] = json!("gadgets.example.com");
        assert_eq!(definition(&misnamed).unwrap_err().code, 422);
        let mut unversioned = crd();
        unversioned["spec"]["versions"] = json!([]);
        assert_eq!(definition(&unversioned).unwrap_err().code, 422);
        // A version not served is checked too.
        let mut bad_column = crd();
        bad_column["spec"]["versions"][0]["served"] = json!(false);
        bad_column["spec"]["versions"][0]["additionalPrinterColumns"] =
            json!([{"name": "Size", "type": "size", "jsonPath": ".spec.size"}]);
        let refused = definition(&bad_column).unwrap_err();
        let causes = &refused.details.as_ref().unwrap().causes;
        assert_eq!(
            causes[0].field,
            "spec.versions[0].additionalPrinterColumns[0].type"
        );
    }

    #[test]
    fn established_status() {
        let mut c = crd();
        mark_established(&mut c);
        assert_eq!(c["status"]["conditions"][1]["type"], "Established");
        assert_eq!(c["status"]["storedVersions"], json!(["v1"]));
    }
}
