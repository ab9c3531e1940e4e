//! What a `CustomResourceDefinition` (`apiextensions.k8s.io/v1`) defines, and what upstream
//! refuses in one: the HTTP front end serves the definition of every CRD written (so
//! `kubectl apply -f crd.yaml` then `kubectl get <plural>` works), and the store checks every
//! CRD write against it before it is stored.

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
    /// The API group.
    pub group: String,
    /// The plural name.
    pub plural: String,
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
    let mut refused = version_violations(&versions);
    let Some(stored_index) = versions.iter().position(|v| flag(v, "storage")) else {
        return Err(status::invalid(
            "CustomResourceDefinition",
            "apiextensions.k8s.io",
            name,
            &refused,
        ));
    };
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
    Ok(Definition {
        group: group.to_owned(),
        plural: plural.to_owned(),
        served,
        storage,
    })
}

/// What upstream's `validateCustomResourceDefinitionSpec` refuses in `spec.versions` as a
/// list and in each version's name, schema presence and deprecation warning: names that are
/// not DNS-1035 labels, a version without `schema.openAPIV3Schema` (required in
/// `apiextensions.k8s.io/v1`), a `deprecationWarning` on a version not deprecated or not
/// printable, repeated names, and anything but exactly one storage version. (A list's value
/// is not printed: upstream prints Go's dump of its internal type.)
fn version_violations(versions: &[Value]) -> Vec<Violation> {
    let mut refused = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut unique = true;
    for (i, version) in versions.iter().enumerate() {
        let name = version.get("name").and_then(Value::as_str).unwrap_or("");
        unique &= seen.insert(name);
        if let Some(problem) = crate::names::dns1035_label_problem(name) {
            refused.push((
                format!("spec.versions[{i}].name"),
                "FieldValueInvalid",
                format!("{name:?}: {problem}"),
            ));
        }
        let deprecated = version.get("deprecated").and_then(Value::as_bool) == Some(true);
        if let Some(warning) = version.get("deprecationWarning").and_then(Value::as_str) {
            for problem in deprecation_warning_problems(deprecated, warning) {
                refused.push((
                    format!("spec.versions[{i}].deprecationWarning"),
                    "FieldValueInvalid",
                    format!("{warning:?}: {problem}"),
                ));
            }
        }
        if !version
            .pointer("/schema/openAPIV3Schema")
            .is_some_and(Value::is_object)
        {
            refused.push((
                format!("spec.versions[{i}].schema.openAPIV3Schema"),
                "FieldValueRequired",
                String::new(),
            ));
        }
    }
    if !unique {
        refused.push((
            "spec.versions".into(),
            "FieldValueInvalid",
            "must contain unique version names".into(),
        ));
    }
    let storage = versions
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .count();
    if storage != 1 {
        refused.push((
            "spec.versions".into(),
            "FieldValueInvalid",
            "must have exactly one version marked as storage version".into(),
        ));
    }
    refused
}

/// Upstream's `validateDeprecationWarning`: only on deprecated versions, at most 256 bytes,
/// not empty, printable (a control character, or whitespace other than a space, counts as
/// not printable here; Go's `unicode.IsPrint` also refuses unassigned and format
/// characters).
fn deprecation_warning_problems(deprecated: bool, warning: &str) -> Vec<String> {
    if !deprecated {
        return vec!["can only be set for deprecated versions".into()];
    }
    let mut problems = Vec::new();
    if warning.len() > 256 {
        problems.push("must be <= 256 characters long".into());
    }
    if warning.is_empty() {
        problems.push("must not be an empty string".into());
    }
    if let Some((i, _)) = warning
        .char_indices()
        .find(|&(_, c)| c.is_control() || (c.is_whitespace() && c != ' '))
    {
        problems.push(format!(
            "must only contain printable UTF-8 characters; non-printable character found at \
             index {i}"
        ));
    }
    problems
}

/// A CRD update's `status.storedVersions` that left `spec.versions` (upstream's
/// `ValidateCustomResourceDefinitionStoredVersions`, on updates of the CRD itself): a version
/// once stored must stay listed until a storage migration removes it from the status.
pub(crate) fn stored_versions_violations(crd: &Value) -> Vec<Violation> {
    let listed: Vec<&str> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter_map(|v| v.get("name").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    let stored = crd
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    stored
        .iter()
        .enumerate()
        .filter_map(|(i, v)| Some((i, v.as_str()?)))
        .filter(|(_, v)| !listed.contains(v))
        .map(|(i, v)| {
            (
                format!("status.storedVersions[{i}]"),
                "FieldValueInvalid",
                format!(
                    "{v:?}: missing from spec.versions; {v} was previously a storage version, \
                     and must remain in spec.versions until a storage migration ensures no \
                     data remains persisted in {v} and removes {v} from status.storedVersions"
                ),
            )
        })
        .collect()
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
                    version("v1alpha1", false),
                    version("v1", true),
                ],
            },
        })
    }

    /// A served version with the smallest schema `apiextensions.k8s.io/v1` takes.
    fn version(name: &str, storage: bool) -> Value {
        json!({"name": name, "served": true, "storage": storage,
               "schema": {"openAPIV3Schema": {"type": "object"}}})
    }

    /// `version` with `extra` fields.
    fn version_with(name: &str, storage: bool, extra: Value) -> Value {
        let mut v = version(name, storage);
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
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
            version_with("v1alpha1", false, json!({"deprecated": true})),
            version_with(
                "v1beta1",
                false,
                json!({"deprecated": true, "deprecationWarning": "use v1, really"})
            ),
            version("v1", true),
            version("v2alpha1", false),
            version_with("v3", false, json!({"served": false})),
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
        c["spec"]["versions"] = json!([version_with("v1", true, json!({"deprecated": true})),]);
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
    fn versions_are_checked_as_upstream_checks_them() {
        let refused = |versions: Value| {
            let mut c = crd();
            c["spec"]["versions"] = versions;
            let status = definition(&c).unwrap_err();
            assert_eq!(status.code, 422);
            status
                .details
                .unwrap()
                .causes
                .into_iter()
                .map(|c| format!("{}: {}", c.field, c.message))
                .collect::<Vec<_>>()
        };
        // No storage version, or two; a repeated name.
        assert_eq!(
            refused(json!([version("v1", false)])),
            [
                "spec.versions: Invalid value: must have exactly one version marked as storage version"
            ]
        );
        assert_eq!(
            refused(json!([version("v1", true), version("v1", true)])),
            [
                "spec.versions: Invalid value: must contain unique version names",
                "spec.versions: Invalid value: must have exactly one version marked as storage version"
            ]
        );
        // A name that is not a DNS-1035 label; a version without a schema.
        let mut schemaless = version("v2", false);
        schemaless.as_object_mut().unwrap().remove("schema");
        assert_eq!(
            refused(json!([version("V1", true), schemaless])),
            [
                "spec.versions[0].name: Invalid value: \"V1\": a DNS-1035 label must consist of \
                 lower case alphanumeric characters or '-', start with an alphabetic character, \
                 and end with an alphanumeric character",
                "spec.versions[1].schema.openAPIV3Schema: Required value"
            ]
        );
        // Deprecation warnings: only on deprecated versions, printable, not empty.
        assert_eq!(
            refused(json!([
                version_with("v1", true, json!({"deprecationWarning": "old"})),
                version_with(
                    "v2",
                    false,
                    json!({"deprecated": true, "deprecationWarning": ""})
                ),
                version_with(
                    "v3",
                    false,
                    json!({"deprecated": true, "deprecationWarning": "tab\there"})
                ),
            ])),
            [
                "spec.versions[0].deprecationWarning: Invalid value: \"old\": can only be set for \
                 deprecated versions",
                "spec.versions[1].deprecationWarning: Invalid value: \"\": must not be an empty \
                 string",
                "spec.versions[2].deprecationWarning: Invalid value: \"tab\\there\": must only \
                 contain printable UTF-8 characters; non-printable character found at index 3"
            ]
        );
    }

    #[test]
    fn stored_versions_must_stay_listed() {
        let mut c = crd();
        c["status"] = json!({"storedVersions": ["v1beta1", "v1"]});
        let violations = stored_versions_violations(&c);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].0, "status.storedVersions[0]");
        assert!(
            violations[0]
                .2
                .starts_with("\"v1beta1\": missing from spec.versions; v1beta1 was previously"),
            "{violations:?}"
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
