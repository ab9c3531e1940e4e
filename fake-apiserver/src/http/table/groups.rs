//! The printers of the other built-in groups' kinds (`pkg/printers/internalversion`, the
//! CRD convertor of apiextensions-apiserver, the APIService convertor of kube-aggregator):
//! admission, networking, RBAC, storage and the rest.

use serde_json::Value;

use super::cells::{
    AGE, Column, NAME, col, count, human_duration, int_at, items, list_with_more, or_else, or_none,
    quantity_text, selector_at, str_at, text,
};
use super::core::load_balancer_addresses;

/// The columns of the kind `group`/`plural`, `None` for a kind without a printer here.
pub(super) fn columns(group: &str, plural: &str) -> Option<Vec<Column>> {
    Some(match (group, plural) {
        (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations" | "validatingwebhookconfigurations",
        ) => vec![
            NAME,
            col("Webhooks", "integer", 0, |v, _| {
                Value::from(count(v, "/webhooks"))
            }),
            AGE,
        ],
        ("admissionregistration.k8s.io", "validatingadmissionpolicies") => vec![
            NAME,
            col("Validations", "integer", 0, |v, _| {
                Value::from(count(v, "/spec/validations"))
            }),
            col("ParamKind", "string", 0, |v, _| param_kind(v)),
            AGE,
        ],
        ("admissionregistration.k8s.io", "mutatingadmissionpolicies") => vec![
            NAME,
            col("Mutations", "integer", 0, |v, _| {
                Value::from(count(v, "/spec/mutations"))
            }),
            col("ParamKind", "string", 0, |v, _| param_kind(v)),
            AGE,
        ],
        (
            "admissionregistration.k8s.io",
            "validatingadmissionpolicybindings" | "mutatingadmissionpolicybindings",
        ) => vec![
            NAME,
            col("PolicyName", "string", 0, |v, _| {
                str_at(v, "/spec/policyName")
            }),
            col("ParamRef", "string", 0, |v, _| Value::String(param_ref(v))),
            AGE,
        ],
        ("apiextensions.k8s.io", "customresourcedefinitions") => vec![
            NAME,
            col("Scope", "string", 0, |v, _| str_at(v, "/spec/scope")),
            col("Versions", "string", 0, |v, _| {
                let mut served: Vec<String> = items(v, "/spec/versions")
                    .iter()
                    .filter(|x| x.get("served").and_then(Value::as_bool) == Some(true))
                    .map(|x| {
                        let name = text(x, "/name");
                        if x.get("storage").and_then(Value::as_bool) == Some(true) {
                            format!("{name}(storage)")
                        } else {
                            name.to_owned()
                        }
                    })
                    .collect();
                served.sort();
                Value::String(served.join(","))
            }),
            super::cells::CREATED_AT,
            col("Group", "string", 1, |v, _| str_at(v, "/spec/group")),
            col("Kind", "string", 1, |v, _| str_at(v, "/spec/names/kind")),
            col("ShortNames", "string", 1, |v, _| {
                Value::String(strings(v, "/spec/names/shortNames").join(","))
            }),
            col("Established", "boolean", 1, |v, _| {
                Value::Bool(
                    condition(v, "Established").is_some_and(|c| text(c, "/status") == "True"),
                )
            }),
        ],
        ("apiregistration.k8s.io", "apiservices") => vec![
            NAME,
            col("Service", "string", 0, |v, _| {
                Value::String(match v.pointer("/spec/service") {
                    Some(s) if s.is_object() => {
                        format!("{}/{}", text(s, "/namespace"), text(s, "/name"))
                    }
                    _ => "Local".into(),
                })
            }),
            col("Available", "string", 0, |v, _| {
                Value::String(match condition(v, "Available") {
                    None => "Unknown".into(),
                    Some(c) => match (text(c, "/status"), text(c, "/reason")) {
                        (status @ "True", _) | (status, "") => status.to_owned(),
                        (status, reason) => format!("{status} ({reason})"),
                    },
                })
            }),
            Column {
                kind: std::borrow::Cow::Borrowed("string"),
                ..AGE
            },
        ],
        ("certificates.k8s.io", "certificatesigningrequests") => vec![
            NAME,
            AGE,
            col("SignerName", "string", 0, |v, _| {
                or_none(v, "/spec/signerName")
            }),
            col("Requestor", "string", 0, |v, _| str_at(v, "/spec/username")),
            col("RequestedDuration", "string", 0, |v, _| {
                Value::String(
                    v.pointer("/spec/expirationSeconds")
                        .and_then(Value::as_i64)
                        .and_then(|s| u64::try_from(s).ok())
                        .map_or_else(
                            || "<none>".into(),
                            |s| human_duration(std::time::Duration::from_secs(s)),
                        ),
                )
            }),
            col("Condition", "string", 0, |v, _| {
                Value::String(csr_status(v))
            }),
        ],
        ("certificates.k8s.io", "clustertrustbundles") => vec![
            NAME,
            col("SignerName", "string", 0, |v, _| {
                or_none(v, "/spec/signerName")
            }),
        ],
        ("coordination.k8s.io", "leases") => vec![
            NAME,
            col("Holder", "string", 0, |v, _| {
                str_at(v, "/spec/holderIdentity")
            }),
            AGE,
        ],
        ("discovery.k8s.io", "endpointslices") => vec![
            NAME,
            col("AddressType", "string", 0, |v, _| str_at(v, "/addressType")),
            col("Ports", "string", 0, |v, _| {
                let ports: Vec<String> = items(v, "/ports")
                    .iter()
                    .map(
                        |p| match (p.get("port").and_then(Value::as_i64), p.get("name")) {
                            (Some(n), _) => n.to_string(),
                            (None, Some(Value::String(name))) => name.clone(),
                            _ => "*".into(),
                        },
                    )
                    .collect();
                Value::String(list_with_more(&ports, 3))
            }),
            col("Endpoints", "string", 0, |v, _| {
                let addresses: Vec<String> = items(v, "/endpoints")
                    .iter()
                    .flat_map(|e| strings(e, "/addresses"))
                    .collect();
                Value::String(list_with_more(&addresses, 3))
            }),
            AGE,
        ],
        ("flowcontrol.apiserver.k8s.io", "flowschemas") => vec![
            NAME,
            col("PriorityLevel", "string", 0, |v, _| {
                str_at(v, "/spec/priorityLevelConfiguration/name")
            }),
            col("MatchingPrecedence", "string", 0, |v, _| {
                int_at(v, "/spec/matchingPrecedence")
            }),
            col("DistinguisherMethod", "string", 0, |v, _| {
                or_none(v, "/spec/distinguisherMethod/type")
            }),
            AGE,
            col("MissingPL", "string", 0, |v, _| {
                Value::String(
                    condition(v, "Dangling")
                        .map_or("?", |c| text(c, "/status"))
                        .into(),
                )
            }),
        ],
        ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations") => vec![
            NAME,
            col("Type", "string", 0, |v, _| str_at(v, "/spec/type")),
            col("NominalConcurrencyShares", "string", 0, |v, _| {
                limited(v, "/nominalConcurrencyShares")
            }),
            col("Queues", "string", 0, |v, _| {
                limited(v, "/limitResponse/queuing/queues")
            }),
            col("HandSize", "string", 0, |v, _| {
                limited(v, "/limitResponse/queuing/handSize")
            }),
            col("QueueLengthLimit", "string", 0, |v, _| {
                limited(v, "/limitResponse/queuing/queueLengthLimit")
            }),
            AGE,
        ],
        ("networking.k8s.io", "ingresses") => vec![
            NAME,
            col("Class", "string", 0, |v, _| {
                or_else(v, "/spec/ingressClassName", "<none>")
            }),
            col("Hosts", "string", 0, |v, _| Value::String(ingress_hosts(v))),
            col("Address", "string", 0, |v, _| {
                Value::String(load_balancer_addresses(v).join(","))
            }),
            col("Ports", "string", 0, |v, _| {
                Value::String(if items(v, "/spec/tls").is_empty() {
                    "80".into()
                } else {
                    "80, 443".into()
                })
            }),
            AGE,
        ],
        ("networking.k8s.io", "ingressclasses") => vec![
            NAME,
            col("Controller", "string", 0, |v, _| {
                str_at(v, "/spec/controller")
            }),
            col("Parameters", "string", 0, |v, _| {
                Value::String(match v.pointer("/spec/parameters") {
                    Some(p) if p.is_object() => {
                        let kind = match p.get("apiGroup").and_then(Value::as_str) {
                            Some(group) => format!("{}.{group}", text(p, "/kind")),
                            None => text(p, "/kind").to_owned(),
                        };
                        format!("{kind}/{}", text(p, "/name"))
                    }
                    _ => "<none>".into(),
                })
            }),
            AGE,
        ],
        ("networking.k8s.io", "ipaddresses") => vec![
            NAME,
            col("ParentRef", "string", 0, |v, _| {
                Value::String(match v.pointer("/spec/parentRef") {
                    Some(r) if r.is_object() => {
                        let resource = match text(r, "/group") {
                            "" => text(r, "/resource").to_lowercase(),
                            group => format!("{}.{group}", text(r, "/resource")).to_lowercase(),
                        };
                        match text(r, "/namespace") {
                            "" => format!("{resource}/{}", text(r, "/name")),
                            ns => format!("{resource}/{ns}/{}", text(r, "/name")),
                        }
                    }
                    _ => "<none>".into(),
                })
            }),
            // `printIPAddress` prints the age past the two columns it declares.
            Column {
                declared: false,
                ..AGE
            },
        ],
        ("networking.k8s.io", "networkpolicies") => vec![
            NAME,
            col("Pod-Selector", "string", 0, |v, _| {
                selector_at(v, "/spec/podSelector")
            }),
            AGE,
        ],
        ("networking.k8s.io", "servicecidrs") => vec![
            NAME,
            col("CIDRs", "string", 0, |v, _| {
                Value::String(strings(v, "/spec/cidrs").join(","))
            }),
            AGE,
        ],
        ("node.k8s.io", "runtimeclasses") => vec![
            NAME,
            col("Handler", "string", 0, |v, _| str_at(v, "/handler")),
            AGE,
        ],
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings") => vec![
            NAME,
            col("Role", "string", 0, |v, _| {
                Value::String(format!(
                    "{}/{}",
                    text(v, "/roleRef/kind"),
                    text(v, "/roleRef/name")
                ))
            }),
            AGE,
            col("Users", "string", 1, |v, _| subjects(v, "User")),
            col("Groups", "string", 1, |v, _| subjects(v, "Group")),
            col("ServiceAccounts", "string", 1, |v, _| {
                subjects(v, "ServiceAccount")
            }),
        ],
        ("resource.k8s.io", "deviceclasses" | "resourceclaimtemplates") => vec![NAME, AGE],
        ("resource.k8s.io", "resourceclaims") => vec![
            NAME,
            col("State", "string", 0, |v, _| {
                let deleted = v
                    .pointer("/metadata/deletionTimestamp")
                    .is_some_and(|d| !d.is_null());
                let allocated = v
                    .pointer("/status/allocation")
                    .is_some_and(|a| !a.is_null());
                let mut states = Vec::new();
                if deleted {
                    states.push("deleted");
                }
                if allocated {
                    states.push("allocated");
                    if !items(v, "/status/reservedFor").is_empty() {
                        states.push("reserved");
                    }
                } else if !deleted {
                    states.push("pending");
                }
                Value::String(states.join(","))
            }),
            AGE,
        ],
        ("resource.k8s.io", "resourceslices") => vec![
            NAME,
            col("Node", "string", 0, |v, _| str_at(v, "/spec/nodeName")),
            col("Driver", "string", 0, |v, _| str_at(v, "/spec/driver")),
            col("Pool", "string", 0, |v, _| str_at(v, "/spec/pool/name")),
            AGE,
        ],
        ("scheduling.k8s.io", "priorityclasses") => vec![
            NAME,
            col("Value", "integer", 0, |v, _| int_at(v, "/value")),
            col("Global-Default", "boolean", 0, |v, _| {
                Value::Bool(v.get("globalDefault").and_then(Value::as_bool) == Some(true))
            }),
            AGE,
            col("PreemptionPolicy", "string", 0, |v, _| {
                str_at(v, "/preemptionPolicy")
            }),
        ],
        ("storage.k8s.io", "storageclasses") => vec![
            Column {
                cell: super::cells::Cell::Printer(|v, _| {
                    let annotation = |key: &str| {
                        v.pointer("/metadata/annotations")
                            .and_then(|a| a.get(key))
                            .and_then(Value::as_str)
                            == Some("true")
                    };
                    let name = text(v, "/metadata/name");
                    Value::String(
                        if annotation("storageclass.kubernetes.io/is-default-class")
                            || annotation("storageclass.beta.kubernetes.io/is-default-class")
                        {
                            format!("{name} (default)")
                        } else {
                            name.to_owned()
                        },
                    )
                }),
                ..NAME
            },
            col("Provisioner", "string", 0, |v, _| str_at(v, "/provisioner")),
            col("ReclaimPolicy", "string", 0, |v, _| {
                or_else(v, "/reclaimPolicy", "Delete")
            }),
            col("VolumeBindingMode", "string", 0, |v, _| {
                or_else(v, "/volumeBindingMode", "Immediate")
            }),
            col("AllowVolumeExpansion", "string", 0, |v, _| {
                flag(v, "/allowVolumeExpansion", false)
            }),
            AGE,
        ],
        ("storage.k8s.io", "csidrivers") => vec![
            NAME,
            col("AttachRequired", "boolean", 0, |v, _| {
                flag(v, "/spec/attachRequired", true)
            }),
            col("PodInfoOnMount", "boolean", 0, |v, _| {
                flag(v, "/spec/podInfoOnMount", false)
            }),
            col("StorageCapacity", "boolean", 0, |v, _| {
                flag(v, "/spec/storageCapacity", false)
            }),
            col("TokenRequests", "string", 0, |v, _| {
                Value::String(match v.pointer("/spec/tokenRequests") {
                    Some(Value::Array(requests)) => requests
                        .iter()
                        .map(|r| text(r, "/audience"))
                        .collect::<Vec<_>>()
                        .join(","),
                    _ => "<unset>".into(),
                })
            }),
            col("RequiresRepublish", "boolean", 0, |v, _| {
                flag(v, "/spec/requiresRepublish", false)
            }),
            col("Modes", "string", 0, |v, _| {
                Value::String(match strings(v, "/spec/volumeLifecycleModes").join(",") {
                    modes if modes.is_empty() => "<none>".into(),
                    modes => modes,
                })
            }),
            AGE,
        ],
        ("storage.k8s.io", "csinodes") => vec![
            NAME,
            col("Drivers", "integer", 0, |v, _| {
                Value::from(count(v, "/spec/drivers"))
            }),
            AGE,
        ],
        ("storage.k8s.io", "csistoragecapacities") => vec![
            NAME,
            col("StorageClassName", "string", 0, |v, _| {
                str_at(v, "/storageClassName")
            }),
            col("Capacity", "string", 0, |v, _| {
                Value::String(match v.get("capacity").filter(|c| !c.is_null()) {
                    Some(q) => quantity_text(Some(q)),
                    None => "<unset>".into(),
                })
            }),
        ],
        ("storage.k8s.io", "volumeattachments") => vec![
            NAME,
            col("Attacher", "string", 0, |v, _| str_at(v, "/spec/attacher")),
            col("PV", "string", 0, |v, _| {
                str_at(v, "/spec/source/persistentVolumeName")
            }),
            col("Node", "string", 0, |v, _| str_at(v, "/spec/nodeName")),
            col("Attached", "boolean", 0, |v, _| {
                flag(v, "/status/attached", false)
            }),
            AGE,
        ],
        ("storage.k8s.io", "volumeattributesclasses") => vec![
            Column {
                cell: super::cells::Cell::Printer(|v, _| {
                    // `printVolumeAttributesClass` (`IsDefaultAnnotationForVolumeAttributesClass`).
                    let name = text(v, "/metadata/name");
                    Value::String(
                        if text(
                            v,
                            "/metadata/annotations/volumeattributesclass.alpha.kubernetes.io~1is-default-class",
                        ) == "true"
                        {
                            format!("{name} (default)")
                        } else {
                            name.to_owned()
                        },
                    )
                }),
                ..NAME
            },
            col("DriverName", "string", 0, |v, _| str_at(v, "/driverName")),
            AGE,
        ],
        _ => return None,
    })
}

/// The strings of the array at `ptr`.
fn strings(v: &Value, ptr: &str) -> Vec<String> {
    items(v, ptr)
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// The boolean at `ptr`, `default` when it is missing.
fn flag(v: &Value, ptr: &str, default: bool) -> Value {
    Value::Bool(v.pointer(ptr).and_then(Value::as_bool).unwrap_or(default))
}

/// The first status condition of type `kind`.
fn condition<'v>(v: &'v Value, kind: &str) -> Option<&'v Value> {
    items(v, "/status/conditions")
        .iter()
        .find(|c| text(c, "/type") == kind)
}

/// An admission policy's PARAMKIND: `apiVersion/kind`, or `<unset>`.
fn param_kind(v: &Value) -> Value {
    Value::String(match v.pointer("/spec/paramKind") {
        Some(p) if p.is_object() => {
            format!("{}/{}", text(p, "/apiVersion"), text(p, "/kind"))
        }
        _ => "<unset>".into(),
    })
}

/// A policy binding's PARAMREF: `namespace/name` (`*/name` without a namespace), the
/// selector as Go prints a `LabelSelector`, or `<unset>`.
fn param_ref(v: &Value) -> String {
    let Some(reference) = v.pointer("/spec/paramRef").filter(|r| r.is_object()) else {
        return "<unset>".into();
    };
    match (text(reference, "/name"), text(reference, "/namespace")) {
        ("", _) => match reference.get("selector").filter(|s| s.is_object()) {
            Some(selector) => go_label_selector(selector),
            None => "<unset>".into(),
        },
        (name, "") => format!("*/{name}"),
        (name, namespace) => format!("{namespace}/{name}"),
    }
}

/// A `LabelSelector` as its generated Go `String()` prints it.
fn go_label_selector(selector: &Value) -> String {
    let mut labels: Vec<(&String, &str)> = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k, v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    labels.sort();
    let labels: String = labels.iter().map(|(k, v)| format!("{k}: {v},")).collect();
    let expressions: String = items(selector, "/matchExpressions")
        .iter()
        .map(|e| {
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                text(e, "/key"),
                text(e, "/operator"),
                strings(e, "/values").join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
}

/// A binding's subjects of `kind`, `, `-separated (service accounts as `namespace/name`).
fn subjects(v: &Value, kind: &str) -> Value {
    let names: Vec<String> = items(v, "/subjects")
        .iter()
        .filter(|s| text(s, "/kind") == kind)
        .map(|s| match kind {
            "ServiceAccount" => format!("{}/{}", text(s, "/namespace"), text(s, "/name")),
            _ => text(s, "/name").to_owned(),
        })
        .collect();
    Value::String(names.join(", "))
}

/// A CSR's CONDITION: `Denied`, `Approved` or `Pending`, then `,Failed` and `,Issued`.
fn csr_status(v: &Value) -> String {
    let has = |kind: &str| condition(v, kind).is_some();
    let mut status = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_owned();
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !text(v, "/status/certificate").is_empty() {
        status.push_str(",Issued");
    }
    status
}

/// A limited priority level's setting at `ptr` (under `spec.limited`), `<none>` for an
/// exempt one or one without queuing.
fn limited(v: &Value, ptr: &str) -> Value {
    let Some(limited) = v.pointer("/spec/limited").filter(|l| l.is_object()) else {
        return Value::String("<none>".into());
    };
    if ptr.starts_with("/limitResponse/queuing")
        && !limited
            .pointer("/limitResponse/queuing")
            .is_some_and(Value::is_object)
    {
        return Value::String("<none>".into());
    }
    int_at(limited, ptr)
}

/// The ingress printer's HOSTS: up to three rules' hosts, then `+ N more...`; `*`
/// without any.
fn ingress_hosts(v: &Value) -> String {
    const MAX: usize = 3;
    let rules = items(v, "/spec/rules");
    let mut hosts: Vec<&str> = Vec::new();
    let mut more = false;
    for rule in rules {
        more |= hosts.len() == MAX;
        match text(rule, "/host") {
            host if !more && !host.is_empty() => hosts.push(host),
            _ => {}
        }
    }
    match (hosts.is_empty(), more) {
        (true, _) => "*".into(),
        (false, true) => format!("{} + {} more...", hosts.join(","), rules.len() - MAX),
        (false, false) => hosts.join(","),
    }
}
