//! What the table printers are made of: columns and their cells, and the helpers that read
//! an object's fields as upstream's printers print them (ages, quantities, selectors,
//! containers, `<none>` and its kin).

use std::borrow::Cow;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::http::jsonpath::JsonPath;
use crate::object::{days_from_civil, label_selector_string};

/// One column of a table: its definition and how its cells are computed.
pub(super) struct Column {
    pub(super) name: Cow<'static, str>,
    pub(super) kind: Cow<'static, str>,
    pub(super) format: Cow<'static, str>,
    pub(super) description: Cow<'static, str>,
    pub(super) priority: i32,
    pub(super) cell: Cell,
    /// Whether the table declares the column; a printer may print a cell past its
    /// declared columns (upstream's IPAddress printer prints its age with no AGE column).
    pub(super) declared: bool,
}

/// How a column's cell is computed.
pub(super) enum Cell {
    /// A built-in printer's function.
    Printer(fn(&Value, SystemTime) -> Value),
    /// A custom resource's printer column: its JSONPath and type.
    Path(JsonPath, Cow<'static, str>),
}

impl Column {
    pub(super) fn cell(&self, object: &Value, now: SystemTime) -> Value {
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

pub(super) const NAME: Column = Column {
    name: Cow::Borrowed("Name"),
    kind: Cow::Borrowed("string"),
    format: Cow::Borrowed("name"),
    description: Cow::Borrowed("Name must be unique within a namespace."),
    priority: 0,
    cell: Cell::Printer(|v, _| str_at(v, "/metadata/name")),
    declared: true,
};

pub(super) const AGE: Column = Column {
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
pub(super) const CREATED_AT: Column = Column {
    name: Cow::Borrowed("Created At"),
    kind: Cow::Borrowed("date"),
    format: Cow::Borrowed(""),
    description: AGE.description,
    priority: 0,
    cell: Cell::Printer(|v, _| or_else(v, "/metadata/creationTimestamp", "0001-01-01T00:00:00Z")),
    declared: true,
};

pub(super) fn col(
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

/// The string at `ptr`, or `""`.
pub(super) fn text<'v>(v: &'v Value, ptr: &str) -> &'v str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// The array at `ptr`, or none.
pub(super) fn items<'v>(v: &'v Value, ptr: &str) -> &'v [Value] {
    v.pointer(ptr)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

pub(super) fn str_at(v: &Value, ptr: &str) -> Value {
    Value::String(text(v, ptr).to_owned())
}

/// The string at `ptr`, or `default` when it is missing or empty.
pub(super) fn or_else(v: &Value, ptr: &str, default: &str) -> Value {
    Value::String(match text(v, ptr) {
        "" => default.to_owned(),
        s => s.to_owned(),
    })
}

pub(super) fn or_none(v: &Value, ptr: &str) -> Value {
    or_else(v, ptr, "<none>")
}

pub(super) fn int_at(v: &Value, ptr: &str) -> Value {
    Value::from(v.pointer(ptr).and_then(Value::as_i64).unwrap_or(0))
}

/// How many entries the array or map at `ptr` holds.
pub(super) fn count(v: &Value, ptr: &str) -> usize {
    match v.pointer(ptr) {
        Some(Value::Array(a)) => a.len(),
        Some(Value::Object(m)) => m.len(),
        _ => 0,
    }
}

/// A `*bool` as the printers show it: `True`, `False` or `<unset>`.
pub(super) fn bool_text(v: &Value, ptr: &str) -> Value {
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
pub(super) fn since(v: &Value, ptr: &str, now: SystemTime) -> Option<String> {
    parse_rfc3339(text(v, ptr)).map(|at| elapsed(at, now))
}

/// The time from `from` to `to` as `duration.HumanDuration` prints it: `0s` for up to two
/// seconds back (clocks disagree), `<invalid>` for more.
pub(super) fn elapsed(from: SystemTime, to: SystemTime) -> String {
    match to.duration_since(from) {
        Ok(d) => human_duration(d),
        Err(e) if e.duration().as_secs() < 2 => "0s".into(),
        Err(_) => "<invalid>".into(),
    }
}

/// A quantity as its `String()` prints it (the canonical form), `"0"` when missing.
pub(super) fn quantity_text(value: Option<&Value>) -> String {
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
pub(super) fn list_with_more(items: &[String], max: usize) -> String {
    match items.len() {
        0 => "<unset>".into(),
        n if n > max => format!("{} + {} more...", items[..max].join(","), n - max),
        _ => items.join(","),
    }
}

/// A label map as `labels.FormatLabels` prints it: `k=v` pairs sorted by key, or `<none>`.
pub(super) fn format_labels(map: Option<&Value>) -> String {
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
pub(super) fn joined_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "<none>".into()
    } else {
        items.join(",")
    }
}

/// A label selector as `metav1.FormatLabelSelector` prints it: `<none>` when empty,
/// `<error>` when it is not a valid selector.
pub(super) fn selector_at(v: &Value, ptr: &str) -> Value {
    Value::String(match label_selector_string(v.pointer(ptr)) {
        Some(text) if text.is_empty() => "<none>".into(),
        Some(text) => text,
        None => "<error>".into(),
    })
}

/// DESIRED, CURRENT and READY of a replica set or replication controller.
pub(super) fn replica_counts() -> [Column; 3] {
    [
        col("Desired", "integer", 0, |v, _| {
            Value::from(crate::http::scale::spec_replicas(v))
        }),
        col("Current", "integer", 0, |v, _| {
            int_at(v, "/status/replicas")
        }),
        col("Ready", "integer", 0, |v, _| {
            int_at(v, "/status/readyReplicas")
        }),
    ]
}

/// `-o wide`'s CONTAINERS and IMAGES of a workload's pod template.
pub(super) fn template_columns() -> [Column; 2] {
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
pub(super) fn selector_column() -> Column {
    col("Selector", "string", 1, |v, _| {
        selector_at(v, "/spec/selector")
    })
}

/// The containers' `field` at `ptr`, comma-separated (`layoutContainerCells`).
pub(super) fn containers(v: &Value, ptr: &str, field: &str) -> Value {
    let listed: Vec<&str> = items(v, ptr)
        .iter()
        .map(|c| c.get(field).and_then(Value::as_str).unwrap_or(""))
        .collect();
    Value::String(listed.join(","))
}

pub(super) fn age(v: &Value, now: SystemTime) -> String {
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
