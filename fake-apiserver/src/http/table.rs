//! Alternative renderings clients ask for with `Accept`: server-side `Table`s (kubectl's
//! printing: NAME, READY, STATUS, ... computed by the server) and `PartialObjectMetadata`
//! (metadata-only clients).

use std::borrow::Cow;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use super::jsonpath::JsonPath;
use super::scale::spec_replicas;
use crate::object::days_from_civil;
use crate::twins::event_field;
use crate::{ResourceDef, StoredObject};

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
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let v = o.to_value();
            let cells: Vec<Value> = columns.iter().map(|c| c.cell(&v, now)).collect();
            let mut row = json!({"cells": cells});
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
    }
}

fn columns(def: &ResourceDef) -> Vec<Column> {
    if !def.printer_columns.is_empty() {
        return custom_columns(def);
    }
    match (def.group.as_str(), def.plural.as_str()) {
        ("", "pods") => vec![
            NAME,
            col("Ready", "string", 0, |v, _| Value::String(pod_ready(v))),
            col("Status", "string", 0, |v, _| Value::String(pod_status(v))),
            col("Restarts", "integer", 0, |v, _| {
                Value::from(pod_restarts(v))
            }),
            AGE,
            col("IP", "string", 1, |v, _| or_none(v, "/status/podIP")),
            col("Node", "string", 1, |v, _| or_none(v, "/spec/nodeName")),
        ],
        ("", "configmaps") => vec![
            NAME,
            col("Data", "integer", 0, |v, _| {
                Value::from(len_at(v, "/data") + len_at(v, "/binaryData"))
            }),
            AGE,
        ],
        ("", "secrets") => vec![
            NAME,
            col("Type", "string", 0, |v, _| str_at(v, "/type")),
            col("Data", "integer", 0, |v, _| Value::from(len_at(v, "/data"))),
            AGE,
        ],
        ("", "namespaces") => vec![
            NAME,
            col("Status", "string", 0, |v, _| {
                v.pointer("/status/phase")
                    .cloned()
                    .unwrap_or_else(|| Value::String("Active".into()))
            }),
            AGE,
        ],
        ("", "services") => vec![
            NAME,
            col("Type", "string", 0, |v, _| str_at(v, "/spec/type")),
            col("Cluster-IP", "string", 0, |v, _| {
                or_none(v, "/spec/clusterIPs/0")
            }),
            col("External-IP", "string", 0, |v, _| {
                Value::String(service_external_ip(v))
            }),
            col("Port(s)", "string", 0, |v, _| {
                Value::String(service_ports(v))
            }),
            AGE,
            col("Selector", "string", 1, |v, _| {
                Value::String(format_labels(v.pointer("/spec/selector")))
            }),
        ],
        ("apps", "daemonsets") => vec![
            NAME,
            col("Desired", "integer", 0, |v, _| {
                int_at(v, "/status/desiredNumberScheduled")
            }),
            col("Current", "integer", 0, |v, _| {
                int_at(v, "/status/currentNumberScheduled")
            }),
            col("Ready", "integer", 0, |v, _| {
                int_at(v, "/status/numberReady")
            }),
            col("Up-to-date", "integer", 0, |v, _| {
                int_at(v, "/status/updatedNumberScheduled")
            }),
            col("Available", "integer", 0, |v, _| {
                int_at(v, "/status/numberAvailable")
            }),
            col("Node Selector", "string", 0, |v, _| {
                Value::String(format_labels(v.pointer("/spec/template/spec/nodeSelector")))
            }),
            AGE,
        ]
        .into_iter()
        .chain(template_columns())
        .chain([selector_column()])
        .collect(),
        ("apps", "deployments") => vec![
            NAME,
            col("Ready", "string", 0, |v, _| ready_of_wanted(v)),
            col("Up-to-date", "integer", 0, |v, _| {
                int_at(v, "/status/updatedReplicas")
            }),
            col("Available", "integer", 0, |v, _| {
                int_at(v, "/status/availableReplicas")
            }),
            AGE,
        ]
        .into_iter()
        .chain(template_columns())
        .chain([selector_column()])
        .collect(),
        ("apps", "replicasets") => vec![
            NAME,
            col("Desired", "integer", 0, |v, _| {
                Value::from(spec_replicas(v))
            }),
            col("Current", "integer", 0, |v, _| {
                int_at(v, "/status/replicas")
            }),
            col("Ready", "integer", 0, |v, _| {
                int_at(v, "/status/readyReplicas")
            }),
            AGE,
        ]
        .into_iter()
        .chain(template_columns())
        .chain([selector_column()])
        .collect(),
        ("apps", "statefulsets") => vec![
            NAME,
            col("Ready", "string", 0, |v, _| ready_of_wanted(v)),
            AGE,
        ]
        .into_iter()
        .chain(template_columns())
        .collect(),
        ("", "nodes") => vec![
            NAME,
            col("Status", "string", 0, |v, _| Value::String(node_status(v))),
            col("Roles", "string", 0, |v, _| Value::String(node_roles(v))),
            AGE,
            col("Version", "string", 0, |v, _| {
                str_at(v, "/status/nodeInfo/kubeletVersion")
            }),
            col("Internal-IP", "string", 1, |v, _| {
                Value::String(node_address(v, "InternalIP"))
            }),
            col("External-IP", "string", 1, |v, _| {
                Value::String(node_address(v, "ExternalIP"))
            }),
        ],
        ("" | "events.k8s.io", "events") => vec![
            col("Last Seen", "string", 0, |v, now| {
                Value::String(event_times(v, now).1)
            }),
            col("Type", "string", 0, |v, _| event_text(v, "type")),
            col("Reason", "string", 0, |v, _| event_text(v, "reason")),
            col("Object", "string", 0, |v, _| {
                let kind = event_object(v, "kind").to_lowercase();
                Value::String(match event_object(v, "name") {
                    "" => kind,
                    name => format!("{kind}/{name}"),
                })
            }),
            col("Subobject", "string", 1, |v, _| {
                Value::String(event_object(v, "fieldPath").to_owned())
            }),
            col("Source", "string", 1, |v, _| {
                let source = |field: &str| {
                    event_field(v, "source")
                        .and_then(|s| s.get(field))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                };
                let text =
                    |field: &str| event_field(v, field).and_then(Value::as_str).unwrap_or("");
                let or = |a: &'static str, b: &'static str| match source(a) {
                    "" => text(b).to_owned(),
                    s => s.to_owned(),
                };
                let (component, instance) = (
                    or("component", "reportingComponent"),
                    or("host", "reportingInstance"),
                );
                Value::String(if instance.is_empty() {
                    component
                } else {
                    format!("{component}, {instance}")
                })
            }),
            col("Message", "string", 0, |v, _| {
                Value::String(
                    event_field(v, "message")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .trim()
                        .to_owned(),
                )
            }),
            col("First Seen", "string", 1, |v, now| {
                Value::String(event_times(v, now).0)
            }),
            col("Count", "string", 1, |v, now| {
                Value::from(event_times(v, now).2)
            }),
            Column {
                priority: 1,
                ..NAME
            },
        ],
        _ => vec![NAME, AGE],
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

/// The service printer's `Port(s)`: `port/protocol`, or `port:nodePort/protocol`.
fn service_ports(v: &Value) -> String {
    let ports: Vec<String> = v
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            let protocol = p.get("protocol").and_then(Value::as_str).unwrap_or("");
            match p.get("nodePort").and_then(Value::as_i64) {
                Some(node) if node > 0 => format!("{port}:{node}/{protocol}"),
                _ => format!("{port}/{protocol}"),
            }
        })
        .collect();
    joined_or_none(&ports)
}

/// The service printer's `External-IP` (`getServiceExternalIP`, wide): the external IPs,
/// a load balancer's ingress addresses (`<pending>` without any), an external name.
fn service_external_ip(v: &Value) -> String {
    let strings = |ptr: &str| -> Vec<String> {
        v.pointer(ptr)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    };
    let external = strings("/spec/externalIPs");
    match v.pointer("/spec/type").and_then(Value::as_str) {
        Some("ClusterIP" | "NodePort") => joined_or_none(&external),
        Some("LoadBalancer") => {
            let mut all: Vec<String> = v
                .pointer("/status/loadBalancer/ingress")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|i| {
                    let text = |k: &str| i.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
                    text("ip").or_else(|| text("hostname")).map(str::to_owned)
                })
                .collect();
            // A string set's sorted list, as upstream's stringer builds it.
            all.sort();
            all.dedup();
            all.extend(external);
            if all.is_empty() {
                "<pending>".into()
            } else {
                all.join(",")
            }
        }
        Some("ExternalName") => v
            .pointer("/spec/externalName")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        _ => "<unknown>".into(),
    }
}

fn int_at(v: &Value, ptr: &str) -> Value {
    Value::from(v.pointer(ptr).and_then(Value::as_i64).unwrap_or(0))
}

/// `ready/wanted` replicas, as the deployment and stateful set printers show them.
fn ready_of_wanted(v: &Value) -> Value {
    let ready = v
        .pointer("/status/readyReplicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let want = spec_replicas(v);
    Value::String(format!("{ready}/{want}"))
}

/// `-o wide`'s CONTAINERS and IMAGES of a workload's pod template.
fn template_columns() -> [Column; 2] {
    [
        col("Containers", "string", 1, |v, _| {
            template_containers(v, "name")
        }),
        col("Images", "string", 1, |v, _| {
            template_containers(v, "image")
        }),
    ]
}

/// `-o wide`'s SELECTOR of a workload (`metav1.FormatLabelSelector`; `<none>` when empty).
fn selector_column() -> Column {
    col("Selector", "string", 1, |v, _| {
        let text = v
            .pointer("/spec/selector")
            .map(crate::object::label_selector_text)
            .unwrap_or_default();
        Value::String(if text.is_empty() {
            "<none>".into()
        } else {
            text
        })
    })
}

/// The pod template's containers' `field`, comma-separated (`-o wide`).
fn template_containers(v: &Value, field: &str) -> Value {
    let listed: Vec<&str> = v
        .pointer("/spec/template/spec/containers")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c.get(field).and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    Value::String(listed.join(","))
}

/// `Ready`, `NotReady` or `Unknown` from the node's Ready condition, with
/// `,SchedulingDisabled` when it is cordoned (the node printer's rule).
fn node_status(v: &Value) -> String {
    let ready = v
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| {
            cs.iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
        })
        .map(|c| c.get("status").and_then(Value::as_str) == Some("True"));
    let mut status = match ready {
        Some(true) => "Ready".to_owned(),
        Some(false) => "NotReady".to_owned(),
        None => "Unknown".to_owned(),
    };
    if v.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    status
}

/// The roles in the node's `node-role.kubernetes.io/<role>` and `kubernetes.io/role` labels.
fn node_roles(v: &Value) -> String {
    let mut roles: Vec<&str> = v
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .filter_map(
                    |(k, val)| match k.strip_prefix("node-role.kubernetes.io/") {
                        Some(role) if !role.is_empty() => Some(role),
                        _ if k == "kubernetes.io/role" => val.as_str(),
                        _ => None,
                    },
                )
                .collect()
        })
        .unwrap_or_default();
    roles.sort_unstable();
    roles.dedup();
    if roles.is_empty() {
        "<none>".to_owned()
    } else {
        roles.join(",")
    }
}

fn node_address(v: &Value, kind: &str) -> String {
    v.pointer("/status/addresses")
        .and_then(Value::as_array)
        .and_then(|a| {
            a.iter()
                .find(|x| x.get("type").and_then(Value::as_str) == Some(kind))
        })
        .and_then(|x| x.get("address").and_then(Value::as_str))
        .unwrap_or("<none>")
        .to_owned()
}

fn event_text(v: &Value, core: &str) -> Value {
    Value::String(
        event_field(v, core)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
    )
}

fn event_object<'v>(v: &'v Value, field: &str) -> &'v str {
    event_field(v, "involvedObject")
        .and_then(|o| o.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// First seen, last seen and count, as kubectl's event printer reckons them: the legacy
/// timestamps, else the event time; a series' last observation and count win.
fn event_times(v: &Value, now: SystemTime) -> (String, String, i64) {
    let since = |value: Option<&Value>| {
        let at = value.and_then(Value::as_str).and_then(parse_rfc3339)?;
        Some(match now.duration_since(at) {
            Ok(d) => human_duration(d),
            Err(_) => "0s".into(),
        })
    };
    let first = since(event_field(v, "firstTimestamp"))
        .or_else(|| since(event_field(v, "eventTime")))
        .unwrap_or_else(|| "<unknown>".into());
    let mut last = since(event_field(v, "lastTimestamp")).unwrap_or_else(|| first.clone());
    let mut count = event_field(v, "count").and_then(Value::as_i64).unwrap_or(0);
    if let Some(series) = event_field(v, "series") {
        last = since(series.get("lastObservedTime")).unwrap_or_else(|| "<unknown>".into());
        count = series.get("count").and_then(Value::as_i64).unwrap_or(0);
    } else if count == 0 {
        count = 1;
    }
    (first, last, count)
}

fn str_at(v: &Value, ptr: &str) -> Value {
    Value::String(
        v.pointer(ptr)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
    )
}

fn or_none(v: &Value, ptr: &str) -> Value {
    Value::String(
        v.pointer(ptr)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .unwrap_or("<none>")
            .to_owned(),
    )
}

fn len_at(v: &Value, ptr: &str) -> usize {
    v.pointer(ptr)
        .and_then(Value::as_object)
        .map_or(0, Map::len)
}

fn pod_ready(v: &Value) -> String {
    let total = v
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let ready = v
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .map_or(0, |s| {
            s.iter()
                .filter(|c| c.get("ready").and_then(Value::as_bool) == Some(true))
                .count()
        });
    format!("{ready}/{total}")
}

fn pod_status(v: &Value) -> String {
    if v.pointer("/metadata/deletionTimestamp")
        .is_some_and(|d| !d.is_null())
    {
        return "Terminating".into();
    }
    let waiting = v
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .and_then(|s| {
            s.iter()
                .find_map(|c| c.pointer("/state/waiting/reason").and_then(Value::as_str))
        });
    waiting
        .or_else(|| v.pointer("/status/reason").and_then(Value::as_str))
        .or_else(|| v.pointer("/status/phase").and_then(Value::as_str))
        .unwrap_or("Pending")
        .to_owned()
}

fn pod_restarts(v: &Value) -> i64 {
    v.pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .map_or(0, |s| {
            s.iter()
                .filter_map(|c| c.get("restartCount").and_then(Value::as_i64))
                .sum()
        })
}

fn age(v: &Value, now: SystemTime) -> String {
    let Some(created) = v
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(parse_rfc3339)
    else {
        return "<unknown>".into();
    };
    match now.duration_since(created) {
        Ok(d) => human_duration(d),
        Err(_) => "0s".into(),
    }
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
            "status": {"phase": "Running", "podIP": "10.0.0.1", "containerStatuses": [
                {"ready": true, "restartCount": 2}, {"ready": false, "restartCount": 1,
                 "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]},
        });
        assert_eq!(pod_ready(&pod), "1/2");
        assert_eq!(pod_status(&pod), "CrashLoopBackOff");
        assert_eq!(pod_restarts(&pod), 3);
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
        assert_eq!(t["rows"][0]["cells"][2], "CrashLoopBackOff");
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(t["metadata"]["resourceVersion"], "5");
    }
}
