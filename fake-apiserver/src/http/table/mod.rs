//! Alternative renderings clients ask for with `Accept`: server-side `Table`s (kubectl's
//! printing: NAME, READY, STATUS, ... computed by the server) and `PartialObjectMetadata`
//! (metadata-only clients).

use std::borrow::Cow;
use std::time::SystemTime;

use serde_json::{Value, json};

use super::jsonpath::JsonPath;
use crate::{ResourceDef, StoredObject};
use cells::{AGE, CREATED_AT, Cell, Column, NAME, text};

mod cells;
mod core;
mod groups;
mod workloads;

/// `includeObject` of a Table request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IncludeObject {
    /// No object in rows.
    None,
    /// `PartialObjectMetadata` in rows (the default).
    Metadata,
    /// The full object in rows.
    Object,
}

impl IncludeObject {
    pub(crate) fn from_query(value: Option<&str>) -> Self {
        match value {
            Some("None") => Self::None,
            Some("Object") => Self::Object,
            _ => Self::Metadata,
        }
    }
}

/// List metadata (`resourceVersion`, `continue`, `remainingItemCount`).
pub(crate) fn list_meta(rv: u64, continue_token: Option<&str>, remaining: Option<i64>) -> Value {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if let Some(c) = continue_token {
        meta["continue"] = Value::String(c.to_owned());
    }
    if let Some(n) = remaining {
        meta["remainingItemCount"] = Value::from(n);
    }
    meta
}

/// A `Table` of `objects` (column definitions included when `headers`).
pub(crate) fn table(
    def: &ResourceDef,
    version: &str,
    objects: &[&StoredObject],
    list_meta: Value,
    include: IncludeObject,
    headers: bool,
) -> Value {
    let columns = columns(def);
    let now = SystemTime::now();
    let mut values: Vec<Value> = objects.iter().map(|o| o.to_value()).collect();
    if def.group == "flowcontrol.apiserver.k8s.io" && def.plural == "flowschemas" {
        // The flow schema printer lists them in the order they match requests.
        values.sort_by(|a, b| {
            let precedence = |v: &Value| {
                v.pointer("/spec/matchingPrecedence")
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
            };
            (precedence(a), text(a, "/metadata/name"))
                .cmp(&(precedence(b), text(b, "/metadata/name")))
        });
    }
    let rows: Vec<Value> = values
        .into_iter()
        .map(|v| {
            let printed = crate::twins::printed(def, &v);
            let cells: Vec<Value> = columns.iter().map(|c| c.cell(&printed, now)).collect();
            let mut row = json!({"cells": cells});
            if let Some(conditions) = row_conditions(def, &printed) {
                row["conditions"] = conditions;
            }
            match include {
                IncludeObject::None => {}
                IncludeObject::Metadata => row["object"] = partial(&v, version),
                IncludeObject::Object => row["object"] = v,
            }
            row
        })
        .collect();
    let defs: Vec<Value> = if headers {
        columns
            .iter()
            .filter(|c| c.declared)
            .map(|c| {
                json!({
                    "name": c.name,
                    "type": c.kind,
                    "format": c.format,
                    "description": c.description,
                    "priority": c.priority,
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": list_meta,
        "columnDefinitions": defs,
        "rows": rows,
    })
}

/// `PartialObjectMetadata` of an object.
pub(crate) fn partial(object: &Value, version: &str) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// `PartialObjectMetadataList` of objects.
pub(crate) fn partial_list(objects: &[&StoredObject], list_meta: Value, version: &str) -> Value {
    let items: Vec<Value> = objects
        .iter()
        .map(|o| partial(&o.to_value(), version))
        .collect();
    json!({
        "kind": "PartialObjectMetadataList",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": list_meta,
        "items": items,
    })
}

/// A custom resource's columns: NAME, then its printer columns up to the first whose path
/// does not parse (upstream's table convertor stops there and serves what it has).
fn custom_columns(def: &ResourceDef) -> Vec<Column> {
    let parsed = def
        .printer_columns
        .iter()
        .map_while(|c| JsonPath::parse(&c.json_path).ok().map(|path| (c, path)));
    std::iter::once(NAME)
        .chain(parsed.map(|(c, path)| Column {
            name: Cow::Owned(c.name.clone()),
            kind: Cow::Owned(c.type_name.clone()),
            format: Cow::Owned(c.format.clone()),
            description: Cow::Owned(if c.description.is_empty() {
                format!(
                    "Custom resource definition column (in JSONPath format): {}",
                    c.json_path
                )
            } else {
                c.description.clone()
            }),
            priority: c.priority,
            cell: Cell::Path(path, Cow::Owned(c.type_name.clone())),
            declared: true,
        }))
        .collect()
}

/// The columns of a resource's `Table`, as the real server chooses them: a custom
/// resource's printer columns; a built-in kind's printer (`pkg/printers/internalversion`,
/// the CRD and APIService convertors); a built-in kind without one gets the default
/// convertor's NAME and CREATED AT; a custom resource without printer columns NAME and AGE.
fn columns(def: &ResourceDef) -> Vec<Column> {
    if !def.printer_columns.is_empty() {
        return custom_columns(def);
    }
    let (group, plural) = (def.group.as_str(), def.plural.as_str());
    core::columns(group, plural)
        .or_else(|| workloads::columns(group, plural))
        .or_else(|| groups::columns(group, plural))
        .unwrap_or_else(|| {
            if def.definition.is_some() {
                vec![NAME, CREATED_AT]
            } else {
                vec![
                    NAME,
                    Column {
                        kind: Cow::Borrowed("date"),
                        ..AGE
                    },
                ]
            }
        })
}

/// The conditions of a row (`TableRow.conditions`): a finished pod's `Completed`.
fn row_conditions(def: &ResourceDef, v: &Value) -> Option<Value> {
    if !(def.group.is_empty() && def.plural == "pods") {
        return None;
    }
    let (reason, message) = match text(v, "/status/phase") {
        "Succeeded" => ("Succeeded", "The pod has completed successfully."),
        "Failed" => ("Failed", "The pod failed."),
        _ => return None,
    };
    Some(json!([{"type": "Completed", "status": "True", "reason": reason, "message": message}]))
}

/// The cells of one object's row and the names of its declared columns, for tests of
/// printers.
#[cfg(test)]
fn row_for(
    group: &str,
    plural: &str,
    object: &Value,
    now: SystemTime,
) -> (Vec<String>, Vec<Value>) {
    let mut def = ResourceDef::namespaced(group, "v1", plural, "Test");
    def.definition = Some(String::new());
    let columns = columns(&def);
    (
        columns
            .iter()
            .filter(|c| c.declared)
            .map(|c| c.name.to_string())
            .collect(),
        columns.iter().map(|c| c.cell(object, now)).collect(),
    )
}

#[cfg(test)]
mod upstream_cases;

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::cells::{human_duration, parse_rfc3339, selector_at};
    use super::*;
    use crate::object::label_selector_string as label_selector;

    #[test]
    fn printer_columns_stop_at_a_path_that_does_not_parse() {
        let column = |name: &str, path: &str| crate::PrinterColumn {
            name: name.into(),
            type_name: "string".into(),
            format: String::new(),
            description: String::new(),
            priority: 0,
            json_path: path.into(),
        };
        let mut def = ResourceDef::namespaced("example.com", "v1", "widgets", "Widget");
        def.printer_columns = vec![
            column("Color", ".spec.color"),
            column("Broken", ".spec.a["),
            column("After", ".spec.after"),
        ];
        let names: Vec<String> = columns(&def).iter().map(|c| c.name.to_string()).collect();
        assert_eq!(names, ["Name", "Color"]);
        let row = columns(&def)
            .iter()
            .map(|c| {
                c.cell(
                    &json!({"metadata": {"name": "w"}, "spec": {"color": "red"}}),
                    SystemTime::now(),
                )
            })
            .collect::<Vec<_>>();
        assert_eq!(row, [json!("w"), json!("red")]);
    }

    #[test]
    fn selectors_print_their_requirements_sorted_by_key() {
        let selector = json!({"matchLabels": {"tier": "web"}, "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["prod", "dev"]},
            {"key": "zone", "operator": "DoesNotExist"},
            {"key": "app", "operator": "Exists"}]});
        assert_eq!(
            label_selector(Some(&selector)).as_deref(),
            Some("app,env in (dev,prod),tier=web,!zone")
        );
        assert_eq!(label_selector(Some(&json!({}))).as_deref(), Some(""));
        assert_eq!(label_selector(None).as_deref(), Some(""));
        let bad = json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]});
        assert_eq!(label_selector(Some(&bad)), None);
        let object = json!({"spec": {"selector": bad}});
        assert_eq!(selector_at(&object, "/spec/selector"), json!("<error>"));
        assert_eq!(selector_at(&json!({}), "/spec/selector"), json!("<none>"));
    }

    #[test]
    fn default_volume_attributes_classes_are_marked() {
        let class = json!({"metadata": {"name": "fast", "annotations": {
            "volumeattributesclass.alpha.kubernetes.io/is-default-class": "true"}}});
        let (_, cells) = row_for(
            "storage.k8s.io",
            "volumeattributesclasses",
            &class,
            SystemTime::now(),
        );
        assert_eq!(cells[0], json!("fast (default)"));
    }

    #[test]
    fn ages_and_timestamps() {
        assert_eq!(human_duration(Duration::from_secs(45)), "45s");
        assert_eq!(human_duration(Duration::from_secs(330)), "5m30s");
        assert_eq!(human_duration(Duration::from_secs(3600)), "60m");
        assert_eq!(human_duration(Duration::from_secs(5 * 3600 + 60)), "5h1m");
        assert_eq!(
            human_duration(Duration::from_secs(3 * 86_400 + 7200)),
            "3d2h"
        );
        assert_eq!(human_duration(Duration::from_secs(400 * 86_400)), "400d");
        let t = parse_rfc3339("2026-01-02T03:04:05Z").unwrap();
        assert_eq!(
            t.duration_since(UNIX_EPOCH).unwrap().as_secs(),
            1_767_323_045
        );
        assert!(parse_rfc3339("yesterday").is_none());
    }

    #[test]
    fn pod_columns() {
        let pod = json!({
            "metadata": {"name": "web-0", "creationTimestamp": "2026-01-02T03:04:05Z"},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}], "containerStatuses": [
                {"ready": true, "restartCount": 2, "state": {"running": {}}},
                {"ready": false, "restartCount": 1,
                 "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]},
        });
        let o = crate::StoredObject::from_value(
            &pod,
            1,
            &crate::ResourceDef::namespaced("", "v1", "pods", "Pod"),
        )
        .unwrap();
        let def = ResourceDef::namespaced("", "v1", "pods", "Pod");
        let t = table(
            &def,
            "v1",
            &[&o],
            list_meta(5, None, None),
            IncludeObject::Metadata,
            true,
        );
        assert_eq!(t["columnDefinitions"][0]["name"], "Name");
        assert_eq!(t["rows"][0]["cells"][0], "web-0");
        assert_eq!(
            t["rows"][0]["cells"].as_array().unwrap()[..4],
            [
                json!("web-0"),
                json!("1/2"),
                json!("CrashLoopBackOff"),
                json!("3")
            ]
        );
        assert_eq!(t["rows"][0]["cells"][5], "10.0.0.1");
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(t["metadata"]["resourceVersion"], "5");
    }
}
