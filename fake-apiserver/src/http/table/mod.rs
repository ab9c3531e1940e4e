//! Alternative renderings clients ask for with `Accept`: server-side `Table`s (kubectl's
//! printing: NAME, READY, STATUS, ... computed by the server) and `PartialObjectMetadata`
//! (metadata-only clients).

use std::borrow::Cow;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::jsonpath::JsonPath;
use crate::object::days_from_civil;
use crate::{ResourceDef, StoredObject};

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
            let cells: Vec<Value> = columns.iter().map(|c| c.cell(&v, now)).collect();
            let mut row = json!({"cells": cells});
            if let Some(conditions) = row_conditions(def, &v) {
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

struct Column {
    name: Cow<'static, str>,
    kind: Cow<'static, str>,
    format: Cow<'static, str>,
    description: Cow<'static, str>,
    priority: i32,
    cell: Cell,
    /// Whether the table declares the column; a printer may print a cell past its
    /// declared columns (upstream's IPAddress printer prints its age with no AGE column).
    declared: bool,
}

/// How a column's cell is computed.
enum Cell {
    /// A built-in printer's function.
    Printer(fn(&Value, SystemTime) -> Value),
    /// A custom resource's printer column: its JSONPath and type.
    Path(JsonPath, Cow<'static, str>),
}

impl Column {
    fn cell(&self, object: &Value, now: SystemTime) -> Value {
        match &self.cell {
            Cell::Printer(f) => f(object, now),
            Cell::Path(path, kind) => path
                .find(object)
                .first()
                .map_or(Value::Null, |found| path_cell(kind, found, now)),
        }
    }
}

/// A printer column's cell from the first value its path found, as upstream's table
/// convertor makes it (`cellForJSONValue`; `string` columns print any value as Go's
/// `fmt.Sprint` does).
fn path_cell(kind: &str, value: &Value, now: SystemTime) -> Value {
    match (kind, value) {
        (_, Value::Null) => Value::Null,
        ("string", v) => Value::String(go_sprint(v)),
        ("integer", Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map_or(Value::Null, Value::from),
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
        ("boolean", Value::Bool(b)) => Value::Bool(*b),
        ("date", Value::String(s)) => Value::String(match parse_rfc3339(s) {
            Some(at) => now
                .duration_since(at)
                .map_or_else(|_| "0s".to_owned(), human_duration),
            None => "<invalid>".to_owned(),
        }),
        _ => Value::Null,
    }
}

/// Go's `fmt.Sprint` of a decoded JSON value: maps as `map[k:v]` (sorted keys), lists as
/// `[a b]`.
fn go_sprint(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".to_owned(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(f)) if f.fract() == 0.0 && f.abs() < 1e21 => format!("{f:.0}"),
            (None, Some(f)) => f.to_string(),
            (None, None) => n.to_string(),
        },
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(go_sprint).collect();
            format!("[{}]", parts.join(" "))
        }
        Value::Object(fields) => {
            let mut keys: Vec<&String> = fields.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{k}:{}", go_sprint(&fields[k])))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
    }
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

const NAME: Column = Column {
    name: Cow::Borrowed("Name"),
    kind: Cow::Borrowed("string"),
    format: Cow::Borrowed("name"),
    description: Cow::Borrowed("Name must be unique within a namespace."),
    priority: 0,
    cell: Cell::Printer(|v, _| str_at(v, "/metadata/name")),
    declared: true,
};

const AGE: Column = Column {
    name: Cow::Borrowed("Age"),
    kind: Cow::Borrowed("string"),
    format: Cow::Borrowed(""),
    description: Cow::Borrowed(
        "CreationTimestamp is a timestamp representing the server time when this object was created.",
    ),
    priority: 0,
    cell: Cell::Printer(|v, now| Value::String(age(v, now))),
    declared: true,
};

/// The default convertor's CREATED AT: the creation time in RFC 3339.
const CREATED_AT: Column = Column {
    name: Cow::Borrowed("Created At"),
    kind: Cow::Borrowed("date"),
    format: Cow::Borrowed(""),
    description: AGE.description,
    priority: 0,
    cell: Cell::Printer(|v, _| or_else(v, "/metadata/creationTimestamp", "0001-01-01T00:00:00Z")),
    declared: true,
};

fn col(
    name: &'static str,
    kind: &'static str,
    priority: i32,
    cell: fn(&Value, SystemTime) -> Value,
) -> Column {
    Column {
        name: Cow::Borrowed(name),
        kind: Cow::Borrowed(kind),
        format: Cow::Borrowed(""),
        description: Cow::Borrowed(name),
        priority,
        cell: Cell::Printer(cell),
        declared: true,
    }
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

/// The string at `ptr`, or `""`.
fn text<'v>(v: &'v Value, ptr: &str) -> &'v str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// The array at `ptr`, or none.
fn items<'v>(v: &'v Value, ptr: &str) -> &'v [Value] {
    v.pointer(ptr)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn str_at(v: &Value, ptr: &str) -> Value {
    Value::String(text(v, ptr).to_owned())
}

/// The string at `ptr`, or `default` when it is missing or empty.
fn or_else(v: &Value, ptr: &str, default: &str) -> Value {
    Value::String(match text(v, ptr) {
        "" => default.to_owned(),
        s => s.to_owned(),
    })
}

fn or_none(v: &Value, ptr: &str) -> Value {
    or_else(v, ptr, "<none>")
}

fn int_at(v: &Value, ptr: &str) -> Value {
    Value::from(v.pointer(ptr).and_then(Value::as_i64).unwrap_or(0))
}

/// How many entries the array or map at `ptr` holds.
fn count(v: &Value, ptr: &str) -> usize {
    match v.pointer(ptr) {
        Some(Value::Array(a)) => a.len(),
        Some(Value::Object(m)) => m.len(),
        _ => 0,
    }
}

/// A `*bool` as the printers show it: `True`, `False` or `<unset>`.
fn bool_text(v: &Value, ptr: &str) -> Value {
    Value::String(
        match v.pointer(ptr).and_then(Value::as_bool) {
            Some(true) => "True",
            Some(false) => "False",
            None => "<unset>",
        }
        .to_owned(),
    )
}

/// The time since the timestamp at `ptr` (`translateTimestampSince`), `None` without one.
fn since(v: &Value, ptr: &str, now: SystemTime) -> Option<String> {
    parse_rfc3339(text(v, ptr)).map(|at| elapsed(at, now))
}

/// The time from `from` to `to` as `duration.HumanDuration` prints it: `0s` for up to two
/// seconds back (clocks disagree), `<invalid>` for more.
fn elapsed(from: SystemTime, to: SystemTime) -> String {
    match to.duration_since(from) {
        Ok(d) => human_duration(d),
        Err(e) if e.duration().as_secs() < 2 => "0s".into(),
        Err(_) => "<invalid>".into(),
    }
}

/// A quantity as its `String()` prints it (the canonical form), `"0"` when missing.
fn quantity_text(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => crate::quantity::parse(s)
            .map(|q| q.text().into_owned())
            .unwrap_or_else(|_| s.clone()),
        Some(Value::Number(n)) => crate::quantity::parse(&n.to_string())
            .map_or_else(|_| n.to_string(), |q| q.text().into_owned()),
        _ => "0".into(),
    }
}

/// Up to `max` items comma-separated, then ` + N more...`; `<unset>` for none (the
/// printers' `listWithMoreString`).
fn list_with_more(items: &[String], max: usize) -> String {
    match items.len() {
        0 => "<unset>".into(),
        n if n > max => format!("{} + {} more...", items[..max].join(","), n - max),
        _ => items.join(","),
    }
}

/// A label map as `labels.FormatLabels` prints it: `k=v` pairs sorted by key, or `<none>`.
fn format_labels(map: Option<&Value>) -> String {
    let pairs: Vec<String> = map
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    joined_or_none(&pairs)
}

/// Items comma-separated, or `<none>` when there are none (the printers' habit).
fn joined_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "<none>".into()
    } else {
        items.join(",")
    }
}

/// A label selector as `metav1.FormatLabelSelector` prints it: `<none>` when empty,
/// `<error>` when it is not a valid selector.
fn selector_at(v: &Value, ptr: &str) -> Value {
    Value::String(match label_selector(v.pointer(ptr)) {
        Some(text) if text.is_empty() => "<none>".into(),
        Some(text) => text,
        None => "<error>".into(),
    })
}

/// A `LabelSelector` as `metav1.LabelSelectorAsSelector(...).String()` writes it (`None`
/// for an invalid one).
fn label_selector(selector: Option<&Value>) -> Option<String> {
    crate::object::label_selector_string(selector)
}

/// `-o wide`'s CONTAINERS and IMAGES of a workload's pod template.
fn template_columns() -> [Column; 2] {
    [
        col("Containers", "string", 1, |v, _| {
            containers(v, "/spec/template/spec/containers", "name")
        }),
        col("Images", "string", 1, |v, _| {
            containers(v, "/spec/template/spec/containers", "image")
        }),
    ]
}

/// `-o wide`'s SELECTOR of a workload (`metav1.FormatLabelSelector`).
fn selector_column() -> Column {
    col("Selector", "string", 1, |v, _| {
        selector_at(v, "/spec/selector")
    })
}

/// The containers' `field` at `ptr`, comma-separated (`layoutContainerCells`).
fn containers(v: &Value, ptr: &str, field: &str) -> Value {
    let listed: Vec<&str> = items(v, ptr)
        .iter()
        .map(|c| c.get(field).and_then(Value::as_str).unwrap_or(""))
        .collect();
    Value::String(listed.join(","))
}

fn age(v: &Value, now: SystemTime) -> String {
    since(v, "/metadata/creationTimestamp", now).unwrap_or_else(|| "<unknown>".into())
}

/// A short age like kubectl prints: `45s`, `5m30s`, `3h`, `2d5h`, `400d`, `3y20d`.
pub(crate) fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    let (m, h, days) = (s / 60, s / 3600, s / 86_400);
    if s < 120 {
        format!("{s}s")
    } else if m < 10 {
        match s % 60 {
            0 => format!("{m}m"),
            r => format!("{m}m{r}s"),
        }
    } else if h < 3 {
        format!("{m}m")
    } else if h < 8 {
        match m % 60 {
            0 => format!("{h}h"),
            r => format!("{h}h{r}m"),
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 24 * 8 {
        match h % 24 {
            0 => format!("{days}d"),
            r => format!("{days}d{r}h"),
        }
    } else if days < 365 * 2 {
        format!("{days}d")
    } else if days < 365 * 8 {
        match days % 365 {
            0 => format!("{}y", days / 365),
            r => format!("{}y{r}d", days / 365),
        }
    } else {
        format!("{}y", days / 365)
    }
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.frac]Z` (UTC, as the server writes timestamps).
pub(crate) fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || !s.ends_with('Z') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + se;
    u64::try_from(secs)
        .ok()
        .map(|s| UNIX_EPOCH + Duration::from_secs(s))
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
    use super::*;

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
