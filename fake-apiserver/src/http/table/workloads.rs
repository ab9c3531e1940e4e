//! The printers of the workload groups' kinds (`pkg/printers/internalversion`): apps,
//! batch, autoscaling and policy.

use std::time::SystemTime;

use serde_json::Value;

use super::cells::{
    AGE, Column, NAME, bool_text, col, containers, count, elapsed, format_labels, int_at, items,
    or_else, parse_rfc3339, quantity_text, replica_counts, selector_at, selector_column, since,
    str_at, template_columns, text,
};
use crate::http::scale::spec_replicas;

/// The columns of the workload kind `group`/`plural`, `None` for another.
pub(super) fn columns(group: &str, plural: &str) -> Option<Vec<Column>> {
    Some(match (group, plural) {
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
            col("Up-to-date", "string", 0, |v, _| {
                int_at(v, "/status/updatedReplicas")
            }),
            col("Available", "string", 0, |v, _| {
                int_at(v, "/status/availableReplicas")
            }),
            AGE,
        ]
        .into_iter()
        .chain(template_columns())
        .chain([col("Selector", "string", 1, |v, _| {
            // `printDeployment` prints the selector's text as is: empty for none.
            Value::String(
                match crate::object::label_selector_string(v.pointer("/spec/selector")) {
                    Some(text) => text,
                    None => "<invalid>".into(),
                },
            )
        })])
        .collect(),
        ("apps", "replicasets") => [NAME]
            .into_iter()
            .chain(replica_counts())
            .chain([AGE])
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
        ("apps", "controllerrevisions") => vec![
            NAME,
            col("Controller", "string", 0, |v, _| {
                Value::String(controller_of(v))
            }),
            col("Revision", "string", 0, |v, _| int_at(v, "/revision")),
            AGE,
        ],
        ("batch", "jobs") => vec![
            NAME,
            col("Status", "string", 0, |v, _| Value::String(job_status(v))),
            col("Completions", "string", 0, |v, _| {
                Value::String(job_completions(v))
            }),
            col("Duration", "string", 0, |v, now| {
                Value::String(job_duration(v, now))
            }),
            AGE,
        ]
        .into_iter()
        .chain(template_columns())
        .chain([selector_column()])
        .collect(),
        ("batch", "cronjobs") => vec![
            NAME,
            col("Schedule", "string", 0, |v, _| str_at(v, "/spec/schedule")),
            col("Timezone", "string", 0, |v, _| {
                or_else(v, "/spec/timeZone", "<none>")
            }),
            col("Suspend", "boolean", 0, |v, _| {
                bool_text(v, "/spec/suspend")
            }),
            col("Active", "integer", 0, |v, _| {
                Value::from(count(v, "/status/active"))
            }),
            col("Last Schedule", "string", 0, |v, now| {
                Value::String(
                    since(v, "/status/lastScheduleTime", now).unwrap_or_else(|| "<none>".into()),
                )
            }),
            AGE,
            col("Containers", "string", 1, |v, _| {
                containers(v, "/spec/jobTemplate/spec/template/spec/containers", "name")
            }),
            col("Images", "string", 1, |v, _| {
                containers(
                    v,
                    "/spec/jobTemplate/spec/template/spec/containers",
                    "image",
                )
            }),
            col("Selector", "string", 1, |v, _| {
                selector_at(v, "/spec/jobTemplate/spec/selector")
            }),
        ],
        ("autoscaling", "horizontalpodautoscalers") => vec![
            NAME,
            col("Reference", "string", 0, |v, _| {
                Value::String(format!(
                    "{}/{}",
                    text(v, "/spec/scaleTargetRef/kind"),
                    text(v, "/spec/scaleTargetRef/name")
                ))
            }),
            col("Targets", "string", 0, |v, _| Value::String(hpa_metrics(v))),
            col("MinPods", "string", 0, |v, _| {
                Value::String(
                    v.pointer("/spec/minReplicas")
                        .and_then(Value::as_i64)
                        .map_or_else(|| "<unset>".into(), |n| n.to_string()),
                )
            }),
            col("MaxPods", "string", 0, |v, _| {
                int_at(v, "/spec/maxReplicas")
            }),
            col("Replicas", "string", 0, |v, _| {
                int_at(v, "/status/currentReplicas")
            }),
            AGE,
        ],
        ("policy", "poddisruptionbudgets") => vec![
            NAME,
            col("Min Available", "string", 0, |v, _| {
                int_or_string(v, "/spec/minAvailable")
            }),
            col("Max Unavailable", "string", 0, |v, _| {
                int_or_string(v, "/spec/maxUnavailable")
            }),
            col("Allowed Disruptions", "integer", 0, |v, _| {
                int_at(v, "/status/disruptionsAllowed")
            }),
            AGE,
        ],
        _ => return None,
    })
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

/// A controller revision's CONTROLLER: its controlling owner as `kind.group/name`,
/// lower case (`daemonset.apps/fluentd`), or `<none>`.
fn controller_of(v: &Value) -> String {
    let Some(owner) = items(v, "/metadata/ownerReferences")
        .iter()
        .find(|o| o.get("controller").and_then(Value::as_bool) == Some(true))
    else {
        return "<none>".into();
    };
    let group = text(owner, "/apiVersion")
        .split_once('/')
        .map_or("", |(group, _)| group);
    let (kind, name) = (text(owner, "/kind"), text(owner, "/name"));
    match (kind, group) {
        ("", "") => name.to_owned(),
        (kind, "") => format!("{}/{name}", kind.to_lowercase()),
        (kind, group) => format!("{}.{}/{name}", kind.to_lowercase(), group.to_lowercase()),
    }
}

/// Whether the Job's first condition of type `kind` is true (`hasJobCondition`).
fn job_condition(v: &Value, kind: &str) -> bool {
    items(v, "/status/conditions")
        .iter()
        .find(|c| text(c, "/type") == kind)
        .is_some_and(|c| text(c, "/status") == "True")
}

/// The Job printer's STATUS.
fn job_status(v: &Value) -> String {
    let deleted = v
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|d| !d.is_null());
    if job_condition(v, "Complete") {
        "Complete"
    } else if job_condition(v, "Failed") {
        "Failed"
    } else if deleted {
        "Terminating"
    } else if job_condition(v, "Suspended") {
        "Suspended"
    } else if job_condition(v, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    }
    .into()
}

/// The Job printer's COMPLETIONS: `succeeded/completions`, or `succeeded/1` (`of N`
/// with a parallelism above one) for a Job without completions.
fn job_completions(v: &Value) -> String {
    let succeeded = v
        .pointer("/status/succeeded")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let int = |ptr: &str| v.pointer(ptr).and_then(Value::as_i64);
    match (
        int("/spec/completions"),
        int("/spec/parallelism").unwrap_or(0),
    ) {
        (Some(completions), _) => format!("{succeeded}/{completions}"),
        (None, parallelism) if parallelism > 1 => format!("{succeeded}/1 of {parallelism}"),
        (None, _) => format!("{succeeded}/1"),
    }
}

/// The Job printer's DURATION: from its start to its completion, or to now while it runs.
fn job_duration(v: &Value, now: SystemTime) -> String {
    let time = |ptr: &str| parse_rfc3339(text(v, ptr));
    match (time("/status/startTime"), time("/status/completionTime")) {
        (None, _) => String::new(),
        (Some(start), None) => elapsed(start, now),
        (Some(start), Some(end)) => elapsed(start, end),
    }
}

/// A quantity at `ptr` of `v` as `(*Quantity).String()` prints it: `<nil>` when missing.
fn quantity_or_nil(v: Option<&Value>, ptr: &str) -> String {
    match v.and_then(|v| v.pointer(ptr)).filter(|q| !q.is_null()) {
        Some(q) => quantity_text(Some(q)),
        None => "<nil>".into(),
    }
}

/// The HPA printer's TARGETS (`formatHPAMetrics`): each metric's current value (from the
/// status metric at the same index) over its target, two at most, then `+ N more...`.
fn hpa_metrics(v: &Value) -> String {
    let specs = items(v, "/spec/metrics");
    if specs.is_empty() {
        return "<none>".into();
    }
    let statuses = items(v, "/status/currentMetrics");
    let list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let source = |field: &str| spec.get(field).filter(|s| s.is_object());
            let status = |field: &str| {
                statuses
                    .get(i)
                    .and_then(|s| s.get(field))
                    .filter(|s| s.is_object())
            };
            let averaged = |field: &str| {
                source(field)
                    .and_then(|s| s.pointer("/target/averageValue"))
                    .is_some_and(|a| !a.is_null())
            };
            let current = |field: &str, ptr: &str| {
                status(field).map_or_else(|| "<unknown>".into(), |s| quantity_or_nil(Some(s), ptr))
            };
            let target = |field: &str, ptr: &str| quantity_or_nil(source(field), ptr);
            let utilization =
                |value: Option<&Value>| value.and_then(Value::as_i64).map(|n| format!("{n}%"));
            match text(spec, "/type") {
                field @ ("External" | "Object") => {
                    let key = if field == "External" {
                        "external"
                    } else {
                        "object"
                    };
                    if averaged(key) {
                        let now = status(key)
                            .and_then(|s| s.pointer("/current/averageValue"))
                            .filter(|a| !a.is_null())
                            .map_or_else(|| "<unknown>".into(), |q| quantity_text(Some(q)));
                        format!("{now}/{} (avg)", target(key, "/target/averageValue"))
                    } else {
                        format!(
                            "{}/{}",
                            current(key, "/current/value"),
                            target(key, "/target/value")
                        )
                    }
                }
                "Pods" => format!(
                    "{}/{}",
                    current("pods", "/current/averageValue"),
                    target("pods", "/target/averageValue")
                ),
                field @ ("Resource" | "ContainerResource") => {
                    let key = if field == "Resource" {
                        "resource"
                    } else {
                        "containerResource"
                    };
                    let name = source(key).map_or("", |s| text(s, "/name"));
                    if averaged(key) {
                        format!(
                            "{name}: {}/{}",
                            current(key, "/current/averageValue"),
                            target(key, "/target/averageValue")
                        )
                    } else {
                        let now = utilization(
                            status(key).and_then(|s| s.pointer("/current/averageUtilization")),
                        )
                        .unwrap_or_else(|| "<unknown>".into());
                        let goal = utilization(
                            source(key).and_then(|s| s.pointer("/target/averageUtilization")),
                        )
                        .unwrap_or_else(|| "<auto>".into());
                        format!("{name}: {now}/{goal}")
                    }
                }
                _ => "<unknown type>".into(),
            }
        })
        .collect();
    const MAX: usize = 2;
    if list.len() > MAX {
        format!("{} + {} more...", list[..MAX].join(", "), list.len() - MAX)
    } else {
        list.join(", ")
    }
}

/// An `IntOrString` as its `String()` prints it, `N/A` when missing.
fn int_or_string(v: &Value, ptr: &str) -> Value {
    Value::String(match v.pointer(ptr) {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.clone(),
        _ => "N/A".into(),
    })
}
