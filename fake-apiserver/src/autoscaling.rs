//! HorizontalPodAutoscalers in `autoscaling/v1` and `autoscaling/v2`: one storage (v2's
//! form) read and written through both versions, converted as upstream converts them
//! (`pkg/apis/autoscaling/v1/conversion.go` and `v2/conversion.go` of kubernetes/kubernetes,
//! with the round-trip helpers of `pkg/apis/autoscaling/helpers.go` and `annotations.go`).
//!
//! `autoscaling/v1` knows one metric, a CPU utilization target
//! (`spec.targetCPUUtilizationPercentage`, `status.currentCPUUtilizationPercentage`). What else
//! a v2 object holds travels in annotations of its v1 form, so that a v1 client that reads an
//! object and writes it back loses nothing: the other metrics
//! (`autoscaling.alpha.kubernetes.io/metrics`, in v1's own metric types), the current metrics
//! (`.../current-metrics`), the conditions (`.../conditions`) and the behavior
//! (`.../behavior`; upstream marshals its internal Go type there, which has no JSON tags, so
//! the keys are Go's field names, `ScaleUp`, `StabilizationWindowSeconds`, and are read back
//! case-insensitively, as Go's decoder reads them). A v1 object without a metric gets the CPU
//! target of 80% that v1 always implied. The v2 form never keeps those annotations (both
//! directions drop them), and the v1 form keeps only the ones it was just given.
//!
//! The annotations' JSON is written as Go's `encoding/json` writes it: fields in the Go
//! structs' order, empty optional fields left out, `<`, `>` and `&` escaped.

use serde_json::{Map, Value, json};

use crate::typed::go_kind;

/// The v2 type's OpenAPI definition, which the storage form decodes and defaults as.
pub(crate) const V2_DEFINITION: &str = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler";

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

/// `DropRoundTripHorizontalPodAutoscalerAnnotations`'s keys (the two tolerance annotations
/// carry `autoscaling/v2beta2`'s missing field, a version this server does not serve).
const ROUND_TRIP: [&str; 6] = [
    METRICS,
    BEHAVIOR,
    "autoscaling.alpha.kubernetes.io/scale-down-tolerance",
    "autoscaling.alpha.kubernetes.io/scale-up-tolerance",
    CURRENT_METRICS,
    CONDITIONS,
];

/// The target v1 implies when no metric is given (`autoscaling.DefaultCPUUtilization`).
const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// Removes the round-trip annotations from `object` (an annotation map left empty goes too,
/// as Go leaves out an empty map). What both conversions do first.
pub(crate) fn drop_round_trip(object: &mut Value) {
    let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) else {
        return;
    };
    if !ROUND_TRIP.iter().any(|k| annotations.contains_key(*k)) {
        return;
    }
    for key in ROUND_TRIP {
        annotations.remove(key);
    }
    if annotations.is_empty() {
        meta.remove("annotations");
    }
}

/// A field that Go would see as set: present and not `null`.
fn set<'v>(object: &'v Value, key: &str) -> Option<&'v Value> {
    object.get(key).filter(|v| !v.is_null())
}

/// Copies the fields `keys` of `from` that are set into `to`, under the same names.
fn copy(to: &mut Map<String, Value>, from: &Value, keys: &[&str]) {
    for key in keys {
        if let Some(v) = set(from, key) {
            to.insert((*key).into(), v.clone());
        }
    }
}

fn is_cpu_resource(metric: &Value) -> Option<&Value> {
    let resource = set(metric, "resource")?;
    (metric.get("type").and_then(Value::as_str) == Some("Resource")
        && resource.get("name").and_then(Value::as_str) == Some("cpu"))
    .then_some(resource)
}

// ----- v2 to v1 -------------------------------------------------------------------------

/// A JSON value written as Go writes a struct: fields in order, each already decided
/// (present or left out).
enum Go {
    Struct(Vec<(&'static str, Go)>),
    List(Vec<Go>),
    Json(Value),
}

impl Go {
    fn write(&self, out: &mut String) {
        match self {
            Go::Struct(fields) => {
                out.push('{');
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String((*name).into()).to_string());
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
            Go::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Go::Json(value) => out.push_str(&value.to_string()),
        }
    }

    /// The text `encoding/json` marshals: HTML characters escaped.
    fn text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out.replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026")
            .replace('\u{2028}', "\\u2028")
            .replace('\u{2029}', "\\u2029")
    }
}

/// Builds a Go struct: `always` fields are written even when unset (their zero value),
/// the others only when set.
struct Fields(Vec<(&'static str, Go)>);

impl Fields {
    fn new() -> Self {
        Fields(Vec::new())
    }

    /// A field Go always writes; `zero` stands in when the value is unset.
    fn always(mut self, name: &'static str, value: Option<&Value>, zero: Value) -> Self {
        self.0
            .push((name, Go::Json(value.cloned().unwrap_or(zero))));
        self
    }

    /// An `omitempty` field: written only when set.
    fn optional(mut self, name: &'static str, value: Option<&Value>) -> Self {
        if let Some(v) = value {
            self.0.push((name, Go::Json(v.clone())));
        }
        self
    }

    fn go(mut self, name: &'static str, value: Go) -> Self {
        self.0.push((name, value));
        self
    }

    fn optional_go(mut self, name: &'static str, value: Option<Go>) -> Self {
        if let Some(v) = value {
            self.0.push((name, v));
        }
        self
    }

    fn done(self) -> Go {
        Go::Struct(self.0)
    }
}

/// A `metav1.LabelSelector` (`matchLabels`, then `matchExpressions`).
fn selector(value: Option<&Value>) -> Option<Go> {
    let value = value?;
    Some(
        Fields::new()
            .optional("matchLabels", set(value, "matchLabels"))
            .optional("matchExpressions", set(value, "matchExpressions"))
            .done(),
    )
}

/// A v1 `CrossVersionObjectReference` from v2's.
fn reference(value: Option<&Value>) -> Go {
    let empty = Value::Null;
    let value = value.unwrap_or(&empty);
    Fields::new()
        .always("kind", set(value, "kind"), json!(""))
        .always("name", set(value, "name"), json!(""))
        .optional("apiVersion", set(value, "apiVersion"))
        .done()
}

fn name_of(source: &Value) -> Option<&Value> {
    source.get("metric").and_then(|m| set(m, "name"))
}

fn selector_of(source: &Value) -> Option<Go> {
    selector(source.get("metric").and_then(|m| set(m, "selector")))
}

/// Go's zero `resource.Quantity`, as it marshals.
fn zero() -> Value {
    json!("0")
}

/// Field `key` of a v2 metric source's `target`.
fn target<'v>(source: &'v Value, key: &str) -> Option<&'v Value> {
    source.get("target").and_then(|t| set(t, key))
}

/// Field `key` of a v2 metric status's `current`.
fn current<'v>(source: &'v Value, key: &str) -> Option<&'v Value> {
    source.get("current").and_then(|c| set(c, key))
}

/// A v1 `MetricSpec` or `MetricStatus`: its `type`, then each source it has, converted
/// (`resource_like` takes a `resource` or, with `true`, a `containerResource`).
fn v1_metric(
    metric: &Value,
    object: Option<Go>,
    pods: Option<Go>,
    resource_like: &dyn Fn(&Value, bool) -> Go,
    external: Option<Go>,
) -> Go {
    Fields::new()
        .always("type", set(metric, "type"), json!(""))
        .optional_go("object", object)
        .optional_go("pods", pods)
        .optional_go(
            "resource",
            set(metric, "resource").map(|r| resource_like(r, false)),
        )
        .optional_go(
            "containerResource",
            set(metric, "containerResource").map(|r| resource_like(r, true)),
        )
        .optional_go("external", external)
        .done()
}

/// `Convert_autoscaling_MetricSpec_To_v1_MetricSpec`.
fn metric_spec_to_v1(metric: &Value) -> Go {
    let object = set(metric, "object").map(|o| {
        Fields::new()
            .go("target", reference(set(o, "describedObject")))
            .always("metricName", name_of(o), json!(""))
            .always("targetValue", target(o, "value"), zero())
            .optional_go("selector", selector_of(o))
            .optional("averageValue", target(o, "averageValue"))
            .done()
    });
    let pods = set(metric, "pods").map(|p| {
        Fields::new()
            .always("metricName", name_of(p), json!(""))
            .always("targetAverageValue", target(p, "averageValue"), zero())
            .optional_go("selector", selector_of(p))
            .done()
    });
    let resource_like = |r: &Value, container: bool| {
        let fields = Fields::new()
            .always("name", set(r, "name"), json!(""))
            .optional("targetAverageUtilization", target(r, "averageUtilization"))
            .optional("targetAverageValue", target(r, "averageValue"));
        if container {
            fields.always("container", set(r, "container"), json!(""))
        } else {
            fields
        }
        .done()
    };
    let external = set(metric, "external").map(|e| {
        Fields::new()
            .always("metricName", name_of(e), json!(""))
            .optional_go("metricSelector", selector_of(e))
            .optional("targetValue", target(e, "value"))
            .optional("targetAverageValue", target(e, "averageValue"))
            .done()
    });
    v1_metric(metric, object, pods, &resource_like, external)
}

/// `Convert_autoscaling_MetricStatus_To_v1_MetricStatus`.
fn metric_status_to_v1(metric: &Value) -> Go {
    let object = set(metric, "object").map(|o| {
        Fields::new()
            .go("target", reference(set(o, "describedObject")))
            .always("metricName", name_of(o), json!(""))
            .always("currentValue", current(o, "value"), zero())
            .optional_go("selector", selector_of(o))
            .optional("averageValue", current(o, "averageValue"))
            .done()
    });
    let pods = set(metric, "pods").map(|p| {
        Fields::new()
            .always("metricName", name_of(p), json!(""))
            .always("currentAverageValue", current(p, "averageValue"), zero())
            .optional_go("selector", selector_of(p))
            .done()
    });
    let resource_like = |r: &Value, container: bool| {
        let fields = Fields::new()
            .always("name", set(r, "name"), json!(""))
            .optional(
                "currentAverageUtilization",
                current(r, "averageUtilization"),
            )
            .always("currentAverageValue", current(r, "averageValue"), zero());
        if container {
            fields.always("container", set(r, "container"), json!(""))
        } else {
            fields
        }
        .done()
    };
    let external = set(metric, "external").map(|e| {
        Fields::new()
            .always("metricName", name_of(e), json!(""))
            .optional_go("metricSelector", selector_of(e))
            .always("currentValue", current(e, "value"), zero())
            .optional("currentAverageValue", current(e, "averageValue"))
            .done()
    });
    v1_metric(metric, object, pods, &resource_like, external)
}

/// A v1 `HorizontalPodAutoscalerCondition` (the same fields as v2's).
fn condition_to_v1(condition: &Value) -> Go {
    Fields::new()
        .always("type", set(condition, "type"), json!(""))
        .always("status", set(condition, "status"), json!(""))
        // `metav1.Time`, a struct: never left out, `null` when zero.
        .always(
            "lastTransitionTime",
            set(condition, "lastTransitionTime"),
            Value::Null,
        )
        .optional("reason", set(condition, "reason"))
        .optional("message", set(condition, "message"))
        .optional("observedGeneration", set(condition, "observedGeneration"))
        .done()
}

/// The internal `HorizontalPodAutoscalerBehavior` as Go marshals a struct without JSON tags:
/// every field under its Go name, unset pointers and lists as `null`.
fn behavior_to_internal(behavior: &Value) -> Go {
    let rules = |key: &str| match set(behavior, key) {
        None => Go::Json(Value::Null),
        Some(r) => {
            let policies = match set(r, "policies").and_then(Value::as_array) {
                None => Go::Json(Value::Null),
                Some(list) => Go::List(
                    list.iter()
                        .map(|p| {
                            Fields::new()
                                .always("Type", set(p, "type"), json!(""))
                                .always("Value", set(p, "value"), json!(0))
                                .always("PeriodSeconds", set(p, "periodSeconds"), json!(0))
                                .done()
                        })
                        .collect(),
                ),
            };
            Fields::new()
                .always(
                    "StabilizationWindowSeconds",
                    set(r, "stabilizationWindowSeconds"),
                    Value::Null,
                )
                .always("SelectPolicy", set(r, "selectPolicy"), Value::Null)
                .go("Policies", policies)
                .always("Tolerance", set(r, "tolerance"), Value::Null)
                .done()
        }
    };
    Fields::new()
        .go("ScaleUp", rules("scaleUp"))
        .go("ScaleDown", rules("scaleDown"))
        .done()
}

/// `object` (an `autoscaling/v2` HorizontalPodAutoscaler) as `autoscaling/v1` serves it.
pub(crate) fn to_v1(object: &Value) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!("autoscaling/v1"));
    out.insert("kind".into(), json!("HorizontalPodAutoscaler"));
    let mut annotations: Vec<(&str, String)> = Vec::new();
    let empty = Value::Null;
    let spec = set(object, "spec").unwrap_or(&empty);
    let metrics = set(spec, "metrics")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if let Some(spec) = set(object, "spec") {
        let mut v1 = Map::new();
        copy(
            &mut v1,
            spec,
            &["scaleTargetRef", "minReplicas", "maxReplicas"],
        );
        // The first CPU resource metric gives the target, if it is a utilization.
        if let Some(utilization) = metrics
            .iter()
            .find_map(is_cpu_resource)
            .and_then(|r| r.get("target"))
            .and_then(|t| set(t, "averageUtilization"))
        {
            v1.insert("targetCPUUtilizationPercentage".into(), utilization.clone());
        }
        out.insert("spec".into(), Value::Object(v1));
    }
    let others: Vec<Go> = metrics
        .iter()
        .filter(|m| {
            is_cpu_resource(m)
                .and_then(|r| r.get("target"))
                .is_none_or(|t| set(t, "averageUtilization").is_none())
        })
        .map(metric_spec_to_v1)
        .collect();
    if !others.is_empty() {
        annotations.push((METRICS, Go::List(others).text()));
    }
    let status = set(object, "status").unwrap_or(&empty);
    let current = set(status, "currentMetrics")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if let Some(status) = set(object, "status") {
        let mut v1 = Map::new();
        copy(
            &mut v1,
            status,
            &[
                "observedGeneration",
                "lastScaleTime",
                "currentReplicas",
                "desiredReplicas",
            ],
        );
        // Every CPU resource metric with a utilization sets it: the last one wins.
        if let Some(utilization) = current
            .iter()
            .filter_map(is_cpu_resource)
            .filter_map(|r| r.get("current").and_then(|c| set(c, "averageUtilization")))
            .next_back()
        {
            v1.insert(
                "currentCPUUtilizationPercentage".into(),
                utilization.clone(),
            );
        }
        out.insert("status".into(), Value::Object(v1));
    }
    if !current.is_empty() {
        let list = Go::List(current.iter().map(metric_status_to_v1).collect());
        annotations.push((CURRENT_METRICS, list.text()));
    }
    if let Some(conditions) = set(status, "conditions")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
    {
        let list = Go::List(conditions.iter().map(condition_to_v1).collect());
        annotations.push((CONDITIONS, list.text()));
    }
    if let Some(behavior) = set(spec, "behavior") {
        annotations.push((BEHAVIOR, behavior_to_internal(behavior).text()));
    }
    let mut metadata = set(object, "metadata").cloned();
    if let Some(meta) = &mut metadata {
        let mut holder = json!({"metadata": std::mem::take(meta)});
        drop_round_trip(&mut holder);
        *meta = holder["metadata"].take();
    }
    if !annotations.is_empty() {
        let meta = metadata.get_or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            let map = meta
                .entry("annotations")
                .or_insert_with(|| Value::Object(Map::new()));
            if !map.is_object() {
                *map = Value::Object(Map::new());
            }
            if let Some(map) = map.as_object_mut() {
                for (key, text) in annotations {
                    map.insert(key.into(), Value::String(text));
                }
            }
        }
    }
    if let Some(meta) = metadata {
        out.insert("metadata".into(), meta);
    }
    Value::Object(out)
}

// ----- v1 to v2 -------------------------------------------------------------------------

/// The annotation `key` of `object`'s metadata, decoded as JSON; `Ok(None)` if absent.
fn annotation(object: &Value, key: &str) -> Result<Option<Value>, String> {
    let Some(text) = object
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
    else {
        return Ok(None);
    };
    serde_json::from_str(text)
        .map(Some)
        .map_err(|e| format!("annotation {key:?}: {e}"))
}

/// The annotation `key` as a JSON list of `go_type` (`null` is an empty list, as for Go).
fn annotation_list(object: &Value, key: &str, go_type: &str) -> Result<Option<Vec<Value>>, String> {
    match annotation(object, key)? {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(Vec::new())),
        Some(Value::Array(items)) => Ok(Some(items)),
        Some(other) => Err(format!(
            "json: cannot unmarshal {} into Go value of type {go_type}",
            go_kind(&other)
        )),
    }
}

/// A v2 `MetricIdentifier` from a v1 source's name and selector fields.
fn identifier(source: &Value, name: &str, selector: &str) -> Value {
    let mut id = Map::new();
    id.insert(
        "name".into(),
        set(source, name).cloned().unwrap_or_else(|| json!("")),
    );
    copy_as(&mut id, source, selector, "selector");
    Value::Object(id)
}

fn copy_as(to: &mut Map<String, Value>, from: &Value, key: &str, as_key: &str) {
    if let Some(v) = set(from, key) {
        to.insert(as_key.into(), v.clone());
    }
}

fn v1_reference(value: Option<&Value>) -> Value {
    let mut out = Map::new();
    if let Some(value) = value {
        copy(&mut out, value, &["kind", "name", "apiVersion"]);
    }
    Value::Object(out)
}

/// A v2 resource (or, `container`, container resource) metric source or status from v1's
/// `r`: its name (and container) and `values` under `key` (`target` or `current`).
fn resource_source(r: &Value, container: bool, key: &str, values: Map<String, Value>) -> Value {
    let mut source = Map::new();
    let names: &[&str] = if container {
        &["name", "container"]
    } else {
        &["name"]
    };
    for name in names {
        source.insert(
            (*name).into(),
            set(r, name).cloned().unwrap_or_else(|| json!("")),
        );
    }
    source.insert(key.into(), Value::Object(values));
    Value::Object(source)
}

/// `Convert_v1_MetricSpec_To_autoscaling_MetricSpec`.
fn metric_spec_to_v2(metric: &Value) -> Value {
    let mut out = Map::new();
    copy(&mut out, metric, &["type"]);
    if let Some(o) = set(metric, "object") {
        let mut target = Map::new();
        let kind = if set(o, "averageValue").is_some() {
            "AverageValue"
        } else {
            "Value"
        };
        target.insert("type".into(), json!(kind));
        target.insert(
            "value".into(),
            set(o, "targetValue").cloned().unwrap_or_else(zero),
        );
        copy(&mut target, o, &["averageValue"]);
        out.insert(
            "object".into(),
            json!({
                "describedObject": v1_reference(set(o, "target")),
                "metric": identifier(o, "metricName", "selector"),
                "target": target,
            }),
        );
    }
    if let Some(p) = set(metric, "pods") {
        out.insert(
            "pods".into(),
            json!({
                "metric": identifier(p, "metricName", "selector"),
                "target": {
                    "type": "AverageValue",
                    "averageValue": set(p, "targetAverageValue").cloned().unwrap_or_else(zero),
                },
            }),
        );
    }
    for (key, container) in [("resource", false), ("containerResource", true)] {
        let Some(r) = set(metric, key) else { continue };
        let mut target = Map::new();
        let kind = if set(r, "targetAverageUtilization").is_some() {
            "Utilization"
        } else {
            "AverageValue"
        };
        target.insert("type".into(), json!(kind));
        copy_as(&mut target, r, "targetAverageValue", "averageValue");
        copy_as(
            &mut target,
            r,
            "targetAverageUtilization",
            "averageUtilization",
        );
        out.insert(key.into(), resource_source(r, container, "target", target));
    }
    if let Some(e) = set(metric, "external") {
        let mut target = Map::new();
        let kind = if set(e, "targetValue").is_some() {
            "Value"
        } else {
            "AverageValue"
        };
        target.insert("type".into(), json!(kind));
        copy_as(&mut target, e, "targetValue", "value");
        copy_as(&mut target, e, "targetAverageValue", "averageValue");
        out.insert(
            "external".into(),
            json!({
                "metric": identifier(e, "metricName", "metricSelector"),
                "target": target,
            }),
        );
    }
    Value::Object(out)
}

/// `Convert_v1_MetricStatus_To_autoscaling_MetricStatus`.
fn metric_status_to_v2(metric: &Value) -> Value {
    let mut out = Map::new();
    copy(&mut out, metric, &["type"]);
    if let Some(o) = set(metric, "object") {
        let mut current = Map::new();
        current.insert(
            "value".into(),
            set(o, "currentValue").cloned().unwrap_or_else(zero),
        );
        copy(&mut current, o, &["averageValue"]);
        out.insert(
            "object".into(),
            json!({
                "describedObject": v1_reference(set(o, "target")),
                "metric": identifier(o, "metricName", "selector"),
                "current": current,
            }),
        );
    }
    if let Some(p) = set(metric, "pods") {
        out.insert(
            "pods".into(),
            json!({
                "metric": identifier(p, "metricName", "selector"),
                "current": {
                    "averageValue": set(p, "currentAverageValue").cloned().unwrap_or_else(zero),
                },
            }),
        );
    }
    for (key, container) in [("resource", false), ("containerResource", true)] {
        let Some(r) = set(metric, key) else { continue };
        let mut current = Map::new();
        current.insert(
            "averageValue".into(),
            set(r, "currentAverageValue").cloned().unwrap_or_else(zero),
        );
        copy_as(
            &mut current,
            r,
            "currentAverageUtilization",
            "averageUtilization",
        );
        out.insert(
            key.into(),
            resource_source(r, container, "current", current),
        );
    }
    if let Some(e) = set(metric, "external") {
        let mut current = Map::new();
        current.insert(
            "value".into(),
            set(e, "currentValue").cloned().unwrap_or_else(zero),
        );
        copy_as(&mut current, e, "currentAverageValue", "averageValue");
        out.insert(
            "external".into(),
            json!({
                "metric": identifier(e, "metricName", "metricSelector"),
                "current": current,
            }),
        );
    }
    Value::Object(out)
}

/// A field of a struct Go decodes from JSON: its exact name first, then any other spelling
/// of it (Go's decoder matches field names case-insensitively).
fn go_field<'v>(object: &'v Map<String, Value>, name: &str) -> Option<&'v Value> {
    object
        .get(name)
        .or_else(|| {
            object
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v)
        })
        .filter(|v| !v.is_null())
}

/// The behavior annotation (the internal Go type's JSON) as v2's `behavior`.
fn behavior_to_v2(internal: &Value) -> Result<Option<Value>, String> {
    let object = match internal {
        Value::Null => return Ok(None),
        Value::Object(o) => o,
        other => {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type autoscaling.HorizontalPodAutoscalerBehavior",
                go_kind(other)
            ));
        }
    };
    let mut out = Map::new();
    for (go, key) in [("ScaleUp", "scaleUp"), ("ScaleDown", "scaleDown")] {
        let Some(rules) = go_field(object, go) else {
            continue;
        };
        let Some(rules) = rules.as_object() else {
            return Err(format!(
                "json: cannot unmarshal {} into Go struct field HorizontalPodAutoscalerBehavior.{go} of type autoscaling.HPAScalingRules",
                go_kind(rules)
            ));
        };
        let mut v2 = Map::new();
        for (go, key) in [
            ("StabilizationWindowSeconds", "stabilizationWindowSeconds"),
            ("SelectPolicy", "selectPolicy"),
            ("Tolerance", "tolerance"),
        ] {
            if let Some(v) = go_field(rules, go) {
                v2.insert(key.into(), v.clone());
            }
        }
        if let Some(policies) = go_field(rules, "Policies") {
            let Some(list) = policies.as_array() else {
                return Err(format!(
                    "json: cannot unmarshal {} into Go struct field HPAScalingRules.{go}.Policies of type []autoscaling.HPAScalingPolicy",
                    go_kind(policies)
                ));
            };
            let mut converted = Vec::with_capacity(list.len());
            for policy in list {
                let mut p = Map::new();
                if let Some(policy) = policy.as_object() {
                    for (go, key) in [
                        ("Type", "type"),
                        ("Value", "value"),
                        ("PeriodSeconds", "periodSeconds"),
                    ] {
                        if let Some(v) = go_field(policy, go) {
                            p.insert(key.into(), v.clone());
                        }
                    }
                }
                converted.push(Value::Object(p));
            }
            v2.insert("policies".into(), Value::Array(converted));
        }
        out.insert(key.into(), Value::Object(v2));
    }
    Ok(Some(Value::Object(out)))
}

/// `object` (an `autoscaling/v1` HorizontalPodAutoscaler) in the v2 form it is stored in,
/// before the v2 defaults. An error is Go's decoding error of a round-trip annotation
/// (upstream answers the request 400 with it).
pub(crate) fn to_v2(object: &Value) -> Result<Value, String> {
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!("autoscaling/v2"));
    out.insert("kind".into(), json!("HorizontalPodAutoscaler"));
    let empty = json!({});
    let spec = set(object, "spec").unwrap_or(&empty);
    let mut v2 = Map::new();
    copy(
        &mut v2,
        spec,
        &["scaleTargetRef", "minReplicas", "maxReplicas"],
    );
    let mut metrics: Vec<Value> = annotation_list(object, METRICS, "[]v1.MetricSpec")?
        .unwrap_or_default()
        .iter()
        .map(metric_spec_to_v2)
        .collect();
    if let Some(utilization) = set(spec, "targetCPUUtilizationPercentage") {
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": utilization}}}));
    }
    if metrics.is_empty() {
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}));
    }
    v2.insert("metrics".into(), Value::Array(metrics));
    if let Some(internal) = annotation(object, BEHAVIOR)?
        && let Some(behavior) = behavior_to_v2(&internal)?
    {
        v2.insert("behavior".into(), behavior);
    }
    out.insert("spec".into(), Value::Object(v2));
    let status = set(object, "status");
    let mut v2 = Map::new();
    if let Some(status) = status {
        copy(
            &mut v2,
            status,
            &[
                "observedGeneration",
                "lastScaleTime",
                "currentReplicas",
                "desiredReplicas",
            ],
        );
        if let Some(utilization) = set(status, "currentCPUUtilizationPercentage") {
            v2.insert(
                "currentMetrics".into(),
                json!([{"type": "Resource", "resource": {"name": "cpu",
                    "current": {"averageUtilization": utilization}}}]),
            );
        }
    }
    // The annotation's metrics replace the CPU one: they say more.
    if let Some(current) = annotation_list(object, CURRENT_METRICS, "[]v1.MetricStatus")? {
        let current: Vec<Value> = current.iter().map(metric_status_to_v2).collect();
        v2.insert("currentMetrics".into(), Value::Array(current));
    }
    if let Some(conditions) =
        annotation_list(object, CONDITIONS, "[]v1.HorizontalPodAutoscalerCondition")?
    {
        let conditions: Vec<Value> = conditions
            .iter()
            .map(|c| {
                let mut out = Map::new();
                copy(
                    &mut out,
                    c,
                    &[
                        "type",
                        "status",
                        "lastTransitionTime",
                        "reason",
                        "message",
                        "observedGeneration",
                    ],
                );
                Value::Object(out)
            })
            .collect();
        v2.insert("conditions".into(), Value::Array(conditions));
    }
    if status.is_some() || !v2.is_empty() {
        out.insert("status".into(), Value::Object(v2));
    }
    if let Some(meta) = set(object, "metadata") {
        out.insert("metadata".into(), meta.clone());
    }
    let mut out = Value::Object(out);
    drop_round_trip(&mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v2_full() -> Value {
        json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "a", "annotations": {"team": "x"}},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 2, "maxReplicas": 10,
                "metrics": [
                    {"type": "Pods", "pods": {"metric": {"name": "rps"},
                        "target": {"type": "AverageValue", "averageValue": "1k"}}},
                    {"type": "Resource", "resource": {"name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 60}}},
                    {"type": "External", "external": {
                        "metric": {"name": "queue", "selector": {"matchLabels": {"q": "a<b"}}},
                        "target": {"type": "Value", "value": "30"}}},
                ],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300, "selectPolicy": "Max",
                    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}},
            },
            "status": {
                "currentReplicas": 3, "desiredReplicas": 4,
                "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "current": {"averageUtilization": 70, "averageValue": "350m"}}}],
                "conditions": [{"type": "AbleToScale", "status": "True",
                    "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "ReadyForNewScale"}],
            },
        })
    }

    #[test]
    fn v2_reads_as_v1_with_round_trip_annotations_in_go_form() {
        let v1 = to_v1(&v2_full());
        assert_eq!(v1["apiVersion"], "autoscaling/v1");
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
        assert_eq!(v1["spec"]["minReplicas"], 2);
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 70);
        assert!(v1["spec"].get("metrics").is_none());
        let annotations = &v1["metadata"]["annotations"];
        assert_eq!(annotations["team"], "x");
        assert_eq!(
            annotations[METRICS],
            "[{\"type\":\"Pods\",\"pods\":{\"metricName\":\"rps\",\"targetAverageValue\":\"1k\"}},\
             {\"type\":\"External\",\"external\":{\"metricName\":\"queue\",\
             \"metricSelector\":{\"matchLabels\":{\"q\":\"a\\u003cb\"}},\"targetValue\":\"30\"}}]"
        );
        assert_eq!(
            annotations[CURRENT_METRICS],
            "[{\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\",\
             \"currentAverageUtilization\":70,\"currentAverageValue\":\"350m\"}}]"
        );
        assert_eq!(
            annotations[CONDITIONS],
            "[{\"type\":\"AbleToScale\",\"status\":\"True\",\
             \"lastTransitionTime\":\"2026-01-01T00:00:00Z\",\"reason\":\"ReadyForNewScale\"}]"
        );
        assert_eq!(
            annotations[BEHAVIOR],
            "{\"ScaleUp\":null,\"ScaleDown\":{\"StabilizationWindowSeconds\":300,\
             \"SelectPolicy\":\"Max\",\"Policies\":[{\"Type\":\"Percent\",\"Value\":100,\
             \"PeriodSeconds\":15}],\"Tolerance\":null}}"
        );
    }

    #[test]
    fn v1_round_trips_through_v2_losing_nothing() {
        let v2 = v2_full();
        let back = to_v2(&to_v1(&v2)).unwrap();
        // The CPU target comes last (upstream appends it after the annotation's metrics);
        // the rest is what v2 held.
        let metrics = back["spec"]["metrics"].as_array().unwrap();
        assert_eq!(metrics.len(), 3);
        assert_eq!(metrics[2], v2["spec"]["metrics"][1]);
        assert_eq!(metrics[0], v2["spec"]["metrics"][0]);
        assert_eq!(metrics[1], v2["spec"]["metrics"][2]);
        assert_eq!(back["spec"]["behavior"], v2["spec"]["behavior"]);
        assert_eq!(back["status"]["conditions"], v2["status"]["conditions"]);
        assert_eq!(
            back["status"]["currentMetrics"],
            v2["status"]["currentMetrics"]
        );
        assert_eq!(
            back["metadata"], v2["metadata"],
            "annotations dropped again"
        );
    }

    #[test]
    fn a_v1_object_without_metrics_targets_80_percent_cpu() {
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3}});
        let v2 = to_v2(&v1).unwrap();
        assert_eq!(
            v2["spec"]["metrics"],
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80}}}])
        );
        assert_eq!(to_v1(&v2)["spec"]["targetCPUUtilizationPercentage"], 80);
        assert!(v2.get("status").is_none());
    }

    #[test]
    fn annotations_are_read_as_go_reads_them() {
        // Field names in any case, as Go's decoder matches them; `null` lists are empty.
        let v1 = json!({"metadata": {"name": "w", "annotations": {
            BEHAVIOR: "{\"scaleup\":{\"selectPolicy\":\"Min\",\"policies\":[{\"type\":\"Pods\",\"value\":2,\"periodSeconds\":30}]}}",
            CURRENT_METRICS: "null",
        }}, "spec": {"targetCPUUtilizationPercentage": 50}, "status": {"currentCPUUtilizationPercentage": 10}});
        let v2 = to_v2(&v1).unwrap();
        assert_eq!(
            v2["spec"]["behavior"],
            json!({"scaleUp": {"selectPolicy": "Min",
                "policies": [{"type": "Pods", "value": 2, "periodSeconds": 30}]}})
        );
        assert_eq!(v2["status"]["currentMetrics"], json!([]));
        assert!(v2["metadata"].get("annotations").is_none());
        // A broken annotation fails the conversion, as it fails upstream's decoding.
        for (key, text, wanted) in [
            (
                METRICS,
                "{\"type\":\"Pods\"}",
                "cannot unmarshal object into Go value of type []v1.MetricSpec",
            ),
            (
                METRICS,
                "[{",
                "annotation \"autoscaling.alpha.kubernetes.io/metrics\"",
            ),
            (
                BEHAVIOR,
                "{\"ScaleUp\":[]}",
                "Go struct field HorizontalPodAutoscalerBehavior.ScaleUp",
            ),
        ] {
            let v1 = json!({"metadata": {"annotations": {key: text}}, "spec": {}});
            let e = to_v2(&v1).unwrap_err();
            assert!(e.contains(wanted), "{key} {text}: {e}");
        }
    }

    #[test]
    fn v2_drops_round_trip_annotations_it_is_sent() {
        let mut v2 = json!({"metadata": {"annotations": {METRICS: "[]", BEHAVIOR: "{}"}}});
        drop_round_trip(&mut v2);
        assert_eq!(v2, json!({"metadata": {}}));
        let mut kept = json!({"metadata": {"annotations": {"a": "b"}}});
        drop_round_trip(&mut kept);
        assert_eq!(kept, json!({"metadata": {"annotations": {"a": "b"}}}));
    }
}
