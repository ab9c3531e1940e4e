//! The printers of the core group's kinds (`pkg/printers/internalversion`): pods, nodes,
//! events, services, volumes and claims, and the rest.

use std::time::SystemTime;

use serde_json::Value;

use super::cells::{
    AGE, Column, NAME, col, containers, count, elapsed, format_labels, items, joined_or_none,
    or_else, or_none, parse_rfc3339, quantity_text, replica_counts, str_at, template_columns, text,
};
use crate::twins::event_field;

/// The columns of the core kind `plural`, `None` for another group or a kind without a
/// printer (limit ranges).
pub(super) fn columns(group: &str, plural: &str) -> Option<Vec<Column>> {
    if group == "events.k8s.io" && plural == "events" {
        return Some(event_columns());
    }
    if !group.is_empty() {
        return None;
    }
    Some(match plural {
        "pods" => vec![
            NAME,
            col("Ready", "string", 0, |v, now| pod_row(v, now).ready),
            col("Status", "string", 0, |v, now| pod_row(v, now).status),
            col("Restarts", "string", 0, |v, now| pod_row(v, now).restarts),
            AGE,
            col("IP", "string", 1, |v, _| or_none(v, "/status/podIPs/0/ip")),
            col("Node", "string", 1, |v, _| or_none(v, "/spec/nodeName")),
            col("Nominated Node", "string", 1, |v, _| {
                or_none(v, "/status/nominatedNodeName")
            }),
            col("Readiness Gates", "string", 1, |v, _| readiness_gates(v)),
        ],
        "podtemplates" => vec![
            NAME,
            col("Containers", "string", 0, |v, _| {
                containers(v, "/template/spec/containers", "name")
            }),
            col("Images", "string", 0, |v, _| {
                containers(v, "/template/spec/containers", "image")
            }),
            col("Pod Labels", "string", 0, |v, _| {
                Value::String(format_labels(v.pointer("/template/metadata/labels")))
            }),
        ],
        "replicationcontrollers" => [NAME]
            .into_iter()
            .chain(replica_counts())
            .chain([AGE])
            .chain(template_columns())
            .chain([col("Selector", "string", 1, |v, _| {
                Value::String(format_labels(v.pointer("/spec/selector")))
            })])
            .collect(),
        "configmaps" => vec![
            NAME,
            col("Data", "string", 0, |v, _| {
                Value::from(count(v, "/data") + count(v, "/binaryData"))
            }),
            AGE,
        ],
        "secrets" => vec![
            NAME,
            col("Type", "string", 0, |v, _| str_at(v, "/type")),
            col("Data", "string", 0, |v, _| Value::from(count(v, "/data"))),
            AGE,
        ],
        "serviceaccounts" => vec![
            NAME,
            col("Secrets", "string", 0, |v, _| {
                Value::from(count(v, "/secrets"))
            }),
            AGE,
        ],
        "namespaces" => vec![
            NAME,
            col("Status", "string", 0, |v, _| str_at(v, "/status/phase")),
            AGE,
        ],
        "services" => vec![
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
        "endpoints" => vec![
            NAME,
            col("Endpoints", "string", 0, |v, _| Value::String(endpoints(v))),
            AGE,
        ],
        "nodes" => vec![
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
            col("OS-Image", "string", 1, |v, _| {
                or_else(v, "/status/nodeInfo/osImage", "<unknown>")
            }),
            col("Kernel-Version", "string", 1, |v, _| {
                or_else(v, "/status/nodeInfo/kernelVersion", "<unknown>")
            }),
            col("Container-Runtime", "string", 1, |v, _| {
                or_else(v, "/status/nodeInfo/containerRuntimeVersion", "<unknown>")
            }),
        ],
        "events" => event_columns(),
        "persistentvolumes" => vec![
            NAME,
            col("Capacity", "string", 0, |v, _| {
                Value::String(quantity_text(v.pointer("/spec/capacity/storage")))
            }),
            col("Access Modes", "string", 0, |v, _| {
                access_modes(v, "/spec/accessModes")
            }),
            col("Reclaim Policy", "string", 0, |v, _| {
                str_at(v, "/spec/persistentVolumeReclaimPolicy")
            }),
            col("Status", "string", 0, |v, _| volume_phase(v)),
            col("Claim", "string", 0, |v, _| {
                Value::String(match v.pointer("/spec/claimRef") {
                    Some(r) if r.is_object() => {
                        format!("{}/{}", text(r, "/namespace"), text(r, "/name"))
                    }
                    _ => String::new(),
                })
            }),
            col("StorageClass", "string", 0, |v, _| {
                Value::String(storage_class(v).unwrap_or_default())
            }),
            col("VolumeAttributesClass", "string", 0, |v, _| {
                or_else(v, "/spec/volumeAttributesClassName", "<unset>")
            }),
            col("Reason", "string", 0, |v, _| str_at(v, "/status/reason")),
            AGE,
            col("VolumeMode", "string", 1, |v, _| {
                or_else(v, "/spec/volumeMode", "<unset>")
            }),
        ],
        "persistentvolumeclaims" => vec![
            NAME,
            col("Status", "string", 0, |v, _| volume_phase(v)),
            col("Volume", "string", 0, |v, _| str_at(v, "/spec/volumeName")),
            col("Capacity", "string", 0, |v, _| {
                Value::String(if text(v, "/spec/volumeName").is_empty() {
                    String::new()
                } else {
                    quantity_text(v.pointer("/status/capacity/storage"))
                })
            }),
            col("Access Modes", "string", 0, |v, _| {
                if text(v, "/spec/volumeName").is_empty() {
                    Value::String(String::new())
                } else {
                    access_modes(v, "/status/accessModes")
                }
            }),
            col("StorageClass", "string", 0, |v, _| {
                Value::String(storage_class(v).unwrap_or_default())
            }),
            col("VolumeAttributesClass", "string", 0, |v, _| {
                or_else(v, "/spec/volumeAttributesClassName", "<unset>")
            }),
            AGE,
            col("VolumeMode", "string", 1, |v, _| {
                or_else(v, "/spec/volumeMode", "<unset>")
            }),
        ],
        "resourcequotas" => vec![
            NAME,
            col("Request", "string", 0, |v, _| {
                Value::String(quota(v, false))
            }),
            col("Limit", "string", 0, |v, _| Value::String(quota(v, true))),
            AGE,
        ],
        "componentstatuses" => vec![
            NAME,
            col("Status", "string", 0, |v, _| {
                Value::String(match healthy_condition(v) {
                    Some(c) if text(c, "/status") == "True" => "Healthy".into(),
                    Some(_) => "Unhealthy".into(),
                    None => "Unknown".into(),
                })
            }),
            col("Message", "string", 0, |v, _| {
                Value::String(
                    healthy_condition(v)
                        .map_or("", |c| text(c, "/message"))
                        .into(),
                )
            }),
            col("Error", "string", 0, |v, _| {
                Value::String(
                    healthy_condition(v)
                        .map_or("", |c| text(c, "/error"))
                        .into(),
                )
            }),
        ],
        _ => return None,
    })
}

/// The pod printer's READY, STATUS and RESTARTS, reckoned together as upstream does.
struct PodRow {
    ready: Value,
    status: Value,
    restarts: Value,
}

/// Whether an init container restarts with the pod (a sidecar: `restartPolicy: Always`).
fn restartable(pod: &Value, name: &str) -> bool {
    items(pod, "/spec/initContainers")
        .iter()
        .find(|c| text(c, "/name") == name)
        .is_some_and(|c| text(c, "/restartPolicy") == "Always")
}

fn condition_true(pod: &Value, kind: &str) -> bool {
    items(pod, "/status/conditions")
        .iter()
        .find(|c| text(c, "/type") == kind)
        .is_some_and(|c| text(c, "/status") == "True")
}

/// A terminated container's reason, else its signal or exit code (`prefix` before them).
fn terminated_reason(state: &Value, prefix: &str) -> String {
    match text(state, "/reason") {
        "" => match state.get("signal").and_then(Value::as_i64).unwrap_or(0) {
            0 => format!(
                "{prefix}ExitCode:{}",
                state.get("exitCode").and_then(Value::as_i64).unwrap_or(0)
            ),
            signal => format!("{prefix}Signal:{signal}"),
        },
        reason => format!("{prefix}{reason}"),
    }
}

/// One container status's restarts and the time its last run ended.
struct Restarts {
    count: i64,
    last: Option<SystemTime>,
}

impl Restarts {
    const NONE: Self = Self {
        count: 0,
        last: None,
    };

    fn add(&mut self, status: &Value) {
        self.count += status
            .get("restartCount")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let finished = status
            .pointer("/lastState/terminated/finishedAt")
            .and_then(Value::as_str)
            .and_then(parse_rfc3339);
        self.last = self.last.max(finished);
    }
}

/// A container status's state `kind` (`waiting`, `running`, `terminated`), when set.
fn state<'v>(status: &'v Value, kind: &str) -> Option<&'v Value> {
    status
        .get("state")
        .and_then(|s| s.get(kind))
        .filter(|s| s.is_object())
}

/// The pod printer's rules (`printPod`): init containers first (`Init:1/2`,
/// `Init:CrashLoopBackOff`), sidecars counted as containers, the last container's waiting
/// or terminated reason, `Completed` pods with a running container shown `Running` or
/// `NotReady`, `Terminating` and `Unknown` for deleted pods, `SchedulingGated`; restarts
/// with the time since the last one (`3 (5m ago)`).
fn pod_row(pod: &Value, now: SystemTime) -> PodRow {
    let phase = text(pod, "/status/phase");
    let mut reason = match text(pod, "/status/reason") {
        "" => phase.to_owned(),
        r => r.to_owned(),
    };
    if items(pod, "/status/conditions")
        .iter()
        .any(|c| text(c, "/type") == "PodScheduled" && text(c, "/reason") == "SchedulingGated")
    {
        reason = "SchedulingGated".into();
    }
    let init_containers = items(pod, "/spec/initContainers");
    let total = items(pod, "/spec/containers").len()
        + init_containers
            .iter()
            .filter(|c| text(c, "/restartPolicy") == "Always")
            .count();
    let mut ready = 0;
    let mut restarts = Restarts::NONE;
    let mut sidecar_restarts = Restarts::NONE;
    let mut initializing = false;
    for (i, status) in items(pod, "/status/initContainerStatuses")
        .iter()
        .enumerate()
    {
        restarts.add(status);
        let sidecar = restartable(pod, text(status, "/name"));
        if sidecar {
            sidecar_restarts.add(status);
        }
        let terminated = state(status, "terminated");
        if terminated.is_some_and(|t| t.get("exitCode").and_then(Value::as_i64).unwrap_or(0) == 0) {
            continue;
        }
        if sidecar && status.get("started").and_then(Value::as_bool) == Some(true) {
            if status.get("ready").and_then(Value::as_bool) == Some(true) {
                ready += 1;
            }
            continue;
        }
        initializing = true;
        reason = if let Some(terminated) = terminated {
            terminated_reason(terminated, "Init:")
        } else {
            match state(status, "waiting").map_or("", |w| text(w, "/reason")) {
                "" | "PodInitializing" => format!("Init:{i}/{}", init_containers.len()),
                waiting => format!("Init:{waiting}"),
            }
        };
        break;
    }
    if !initializing || condition_true(pod, "Initialized") {
        restarts = sidecar_restarts;
        let mut running = false;
        for status in items(pod, "/status/containerStatuses").iter().rev() {
            restarts.add(status);
            let waiting = state(status, "waiting").map_or("", |w| text(w, "/reason"));
            if !waiting.is_empty() {
                waiting.clone_into(&mut reason);
            } else if let Some(terminated) = state(status, "terminated") {
                reason = terminated_reason(terminated, "");
            } else if status.get("ready").and_then(Value::as_bool) == Some(true)
                && state(status, "running").is_some()
            {
                running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && running {
            reason = if condition_true(pod, "Ready") {
                "Running".into()
            } else {
                "NotReady".into()
            };
        }
    }
    let deleted = pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|d| !d.is_null());
    if deleted && text(pod, "/status/reason") == "NodeLost" {
        reason = "Unknown".into();
    } else if deleted && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".into();
    }
    let count = restarts.count;
    PodRow {
        ready: Value::String(format!("{ready}/{total}")),
        status: Value::String(reason),
        restarts: Value::String(match restarts.last {
            Some(at) if count != 0 => {
                format!("{count} ({} ago)", elapsed(at, now))
            }
            _ => count.to_string(),
        }),
    }
}

/// `-o wide`'s READINESS GATES: how many of the pod's gates have a true condition.
fn readiness_gates(pod: &Value) -> Value {
    let gates = items(pod, "/spec/readinessGates");
    if gates.is_empty() {
        return Value::String("<none>".into());
    }
    let met = gates
        .iter()
        .filter(|g| condition_true(pod, text(g, "/conditionType")))
        .count();
    Value::String(format!("{met}/{}", gates.len()))
}

fn event_columns() -> Vec<Column> {
    vec![
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
            let text = |field: &str| event_field(v, field).and_then(Value::as_str).unwrap_or("");
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
    ]
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
        Some(elapsed(at, now))
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

/// The service printer's `Port(s)`: `port/protocol`, or `port:nodePort/protocol`.
fn service_ports(v: &Value) -> String {
    let ports: Vec<String> = items(v, "/spec/ports")
        .iter()
        .map(|p| {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            let protocol = text(p, "/protocol");
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
    let external: Vec<String> = items(v, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    match text(v, "/spec/type") {
        "ClusterIP" | "NodePort" => joined_or_none(&external),
        "LoadBalancer" => {
            let mut all = load_balancer_addresses(v);
            all.extend(external);
            if all.is_empty() {
                "<pending>".into()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => text(v, "/spec/externalName").to_owned(),
        _ => "<unknown>".into(),
    }
}

/// A load balancer status's addresses (each ingress's IP, else its hostname), sorted and
/// without repeats, as upstream's string set lists them (services and ingresses).
pub(super) fn load_balancer_addresses(v: &Value) -> Vec<String> {
    let mut all: Vec<String> = items(v, "/status/loadBalancer/ingress")
        .iter()
        .filter_map(|i| {
            let field = |k: &str| i.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
            field("ip").or_else(|| field("hostname")).map(str::to_owned)
        })
        .collect();
    all.sort();
    all.dedup();
    all
}

/// The endpoints printer's ENDPOINTS (`formatEndpoints`): `ip:port` for each port of each
/// subset (the bare IP for a subset without ports), three at most, then `+ N more...`.
fn endpoints(v: &Value) -> String {
    let subsets = items(v, "/subsets");
    if subsets.is_empty() {
        return "<none>".into();
    }
    const MAX: usize = 3;
    let mut list: Vec<String> = Vec::new();
    let mut total = 0;
    for subset in subsets {
        let addresses = items(subset, "/addresses");
        let ips = addresses.iter().map(|a| text(a, "/ip"));
        let ports = items(subset, "/ports");
        if ports.is_empty() {
            total += addresses.len();
            list.extend(ips.take(MAX.saturating_sub(list.len())).map(str::to_owned));
            continue;
        }
        for port in ports {
            let number = port.get("port").and_then(Value::as_i64).unwrap_or(0);
            total += addresses.len();
            for ip in ips.clone().take(MAX.saturating_sub(list.len())) {
                // `net.JoinHostPort`: an IPv6 address in brackets.
                list.push(if ip.contains(':') {
                    format!("[{ip}]:{number}")
                } else {
                    format!("{ip}:{number}")
                });
            }
        }
    }
    let joined = list.join(",");
    if total > MAX {
        format!("{joined} + {} more...", total - MAX)
    } else {
        joined
    }
}

/// `Ready`, `NotReady` or `Unknown` from the node's Ready condition, with
/// `,SchedulingDisabled` when it is cordoned (the node printer's rule).
fn node_status(v: &Value) -> String {
    let ready = items(v, "/status/conditions")
        .iter()
        .rev()
        .find(|c| text(c, "/type") == "Ready")
        .map(|c| text(c, "/status") == "True");
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
                        _ if k == "kubernetes.io/role" => val.as_str().filter(|r| !r.is_empty()),
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
    items(v, "/status/addresses")
        .iter()
        .find(|x| text(x, "/type") == kind)
        .map_or("<none>", |x| text(x, "/address"))
        .to_owned()
}

/// A volume's or claim's phase, `Terminating` once it is being deleted.
fn volume_phase(v: &Value) -> Value {
    if v.pointer("/metadata/deletionTimestamp")
        .is_some_and(|d| !d.is_null())
    {
        Value::String("Terminating".into())
    } else {
        str_at(v, "/status/phase")
    }
}

/// Access modes as `GetAccessModesAsString` abbreviates them, in its fixed order.
fn access_modes(v: &Value, ptr: &str) -> Value {
    let modes: Vec<&str> = items(v, ptr).iter().filter_map(Value::as_str).collect();
    let short: Vec<&str> = [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| modes.contains(mode))
    .map(|(_, short)| *short)
    .collect();
    Value::String(short.join(","))
}

/// A volume's or claim's class: the beta annotation first, then `storageClassName`.
fn storage_class(v: &Value) -> Option<String> {
    v.pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
        .or_else(|| v.pointer("/spec/storageClassName"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// A quota's REQUEST or LIMIT column: `resource: used/hard` for each hard limit, sorted
/// by name, the `limits.*` ones in LIMIT.
fn quota(v: &Value, limits: bool) -> String {
    let Some(hard) = v.pointer("/status/hard").and_then(Value::as_object) else {
        return String::new();
    };
    let mut names: Vec<&String> = hard
        .keys()
        .filter(|name| name.starts_with("limits.") == limits)
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let used = v.pointer("/status/used").and_then(|u| u.get(name));
            format!(
                "{name}: {}/{}",
                quantity_text(used),
                quantity_text(hard.get(name))
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn healthy_condition(v: &Value) -> Option<&Value> {
    items(v, "/conditions")
        .iter()
        .find(|c| text(c, "/type") == "Healthy")
}
