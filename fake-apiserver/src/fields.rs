//! Field selectors per resource: which field labels the real API server accepts for each kind
//! and where their values come from.
//!
//! The table follows the field label conversion functions upstream registers per kind (the
//! `AddFieldLabelConversionFunc` calls of kubernetes/kubernetes `pkg/apis/<group>/<version>`)
//! and the values its registries' `GetAttrs` functions compute. Every other kind accepts only
//! `metadata.name` and `metadata.namespace`. A field missing from an object reads as the value
//! the real server's defaulting would have stored (`spec.restartPolicy` `Always`, `type`
//! `Opaque`, booleans `false`, counts `0`), since the fake server does not default objects;
//! so does an empty string, which is how a Go client's protobuf body spells an unset field.
//!
//! Values are computed once per stored object version (see `StoredObject`), so selection
//! costs a lookup, not a parse.

use std::borrow::Cow;

use serde_json::Value;

use super::ResourceDef;

/// One selectable field: its label, the JSON path of its value, and the value when the field
/// is absent.
pub(crate) struct FieldLabel {
    pub label: &'static str,
    path: &'static [&'static str],
    default: &'static str,
    how: How,
}

#[derive(Clone, Copy)]
enum How {
    /// A string, number or boolean as text.
    Scalar,
    /// The pod's first IP (`status.podIP`, else the first of `status.podIPs`).
    PodIp,
    /// Every IP of `status.podIPs`, joined by commas.
    PodIps,
}

const fn field(
    label: &'static str,
    path: &'static [&'static str],
    default: &'static str,
) -> FieldLabel {
    FieldLabel {
        label,
        path,
        default,
        how: How::Scalar,
    }
}

const NAME: FieldLabel = field("metadata.name", &[], "");
const NAMESPACE: FieldLabel = field("metadata.namespace", &[], "");

const POD: &[FieldLabel] = &[
    NAME,
    NAMESPACE,
    field("spec.nodeName", &["spec", "nodeName"], ""),
    field("spec.restartPolicy", &["spec", "restartPolicy"], "Always"),
    field(
        "spec.schedulerName",
        &["spec", "schedulerName"],
        "default-scheduler",
    ),
    field(
        "spec.serviceAccountName",
        &["spec", "serviceAccountName"],
        "",
    ),
    field("spec.hostNetwork", &["spec", "hostNetwork"], "false"),
    field("status.phase", &["status", "phase"], "Pending"),
    FieldLabel {
        label: "status.podIP",
        path: &["status"],
        default: "",
        how: How::PodIp,
    },
    FieldLabel {
        label: "status.podIPs",
        path: &["status"],
        default: "",
        how: How::PodIps,
    },
    field(
        "status.nominatedNodeName",
        &["status", "nominatedNodeName"],
        "",
    ),
];

const NODE: &[FieldLabel] = &[
    NAME,
    field("spec.unschedulable", &["spec", "unschedulable"], "false"),
];

const NAMESPACE_KIND: &[FieldLabel] =
    &[NAME, field("status.phase", &["status", "phase"], "Active")];

const SECRET: &[FieldLabel] = &[NAME, NAMESPACE, field("type", &["type"], "Opaque")];

const SERVICE: &[FieldLabel] = &[
    NAME,
    NAMESPACE,
    field("spec.clusterIP", &["spec", "clusterIP"], ""),
    field("spec.type", &["spec", "type"], "ClusterIP"),
];

const REPLICATION_CONTROLLER: &[FieldLabel] = &[
    NAME,
    NAMESPACE,
    field("status.replicas", &["status", "replicas"], "0"),
];

const REPLICA_SET: &[FieldLabel] = &[
    NAME,
    NAMESPACE,
    field("status.replicas", &["status", "replicas"], "0"),
];

const JOB: &[FieldLabel] = &[
    NAME,
    NAMESPACE,
    field("status.successful", &["status", "succeeded"], "0"),
];

const CORE_EVENT: &[FieldLabel] = &[
    NAME,
    NAMESPACE,
    field("involvedObject.kind", &["involvedObject", "kind"], ""),
    field(
        "involvedObject.namespace",
        &["involvedObject", "namespace"],
        "",
    ),
    field("involvedObject.name", &["involvedObject", "name"], ""),
    field("involvedObject.uid", &["involvedObject", "uid"], ""),
    field(
        "involvedObject.apiVersion",
        &["involvedObject", "apiVersion"],
        "",
    ),
    field(
        "involvedObject.resourceVersion",
        &["involvedObject", "resourceVersion"],
        "",
    ),
    field(
        "involvedObject.fieldPath",
        &["involvedObject", "fieldPath"],
        "",
    ),
    field("reason", &["reason"], ""),
    field("reportingComponent", &["reportingComponent"], ""),
    field("source", &["source", "component"], ""),
    field("type", &["type"], ""),
];

const EVENTS_V1_EVENT: &[FieldLabel] = &[
    NAME,
    NAMESPACE,
    field("regarding.kind", &["regarding", "kind"], ""),
    field("regarding.namespace", &["regarding", "namespace"], ""),
    field("regarding.name", &["regarding", "name"], ""),
    field("regarding.uid", &["regarding", "uid"], ""),
    field("regarding.apiVersion", &["regarding", "apiVersion"], ""),
    field(
        "regarding.resourceVersion",
        &["regarding", "resourceVersion"],
        "",
    ),
    field("regarding.fieldPath", &["regarding", "fieldPath"], ""),
    field("reason", &["reason"], ""),
    field("reportingController", &["reportingController"], ""),
    field("type", &["type"], ""),
];

const CSR: &[FieldLabel] = &[
    NAME,
    NAMESPACE,
    field("spec.signerName", &["spec", "signerName"], ""),
];

const RESOURCE_SLICE: &[FieldLabel] = &[
    NAME,
    field("spec.nodeName", &["spec", "nodeName"], ""),
    field("spec.driver", &["spec", "driver"], ""),
];

const GENERIC: &[FieldLabel] = &[NAME, NAMESPACE];

/// The selectable fields of a resource (always including `metadata.name`).
pub(crate) fn labels_of(def: &ResourceDef) -> &'static [FieldLabel] {
    match (def.group.as_str(), def.kind.as_str()) {
        ("", "Pod") => POD,
        ("", "Node") => NODE,
        ("", "Namespace") => NAMESPACE_KIND,
        ("", "Secret") => SECRET,
        ("", "Service") => SERVICE,
        ("", "ReplicationController") => REPLICATION_CONTROLLER,
        ("", "Event") => CORE_EVENT,
        ("apps", "ReplicaSet") => REPLICA_SET,
        ("batch", "Job") => JOB,
        ("events.k8s.io", "Event") => EVENTS_V1_EVENT,
        ("certificates.k8s.io", "CertificateSigningRequest") => CSR,
        ("resource.k8s.io", "ResourceSlice") => RESOURCE_SLICE,
        _ => GENERIC,
    }
}

impl ResourceDef {
    /// The field labels field selectors may use on this resource (`metadata.name`, and for
    /// pods `spec.nodeName`, `status.phase`, ..., for a custom resource its CRD's
    /// selectable fields); see the [module docs](super#field-selectors).
    pub fn field_labels(&self) -> Vec<&str> {
        label_names(self)
    }
}

/// The names of the selectable fields of a resource.
pub(crate) fn label_names(def: &ResourceDef) -> Vec<&str> {
    labels_of(def)
        .iter()
        .map(|f| f.label)
        .chain(def.selectable_fields.iter().map(String::as_str))
        .collect()
}

/// The values of the selectable fields beyond `metadata.name` and `metadata.namespace`
/// (which the stored object's metadata answers).
pub(crate) fn extract(def: &ResourceDef, object: &Value) -> Box<[(Cow<'static, str>, String)]> {
    labels_of(def)
        .iter()
        .filter(|f| !f.path.is_empty())
        .map(|f| (Cow::Borrowed(f.label), value_of(f, object)))
        .chain(
            def.selectable_fields
                .iter()
                .map(|label| (Cow::Owned(label.clone()), custom_value(label, object))),
        )
        .collect()
}

/// The value at a dot path (`spec.replicas`), if every step is there.
pub(crate) fn at_dot_path<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(value, |v, key| v.get(key))
}

/// A custom resource's selectable field's value, as upstream's `GetAttrs` prints it
/// (`fmt.Sprint`: strings as they are, booleans and integers as text; absent or null: empty).
fn custom_value(label: &str, object: &Value) -> String {
    match at_dot_path(object, label) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn value_of(f: &FieldLabel, object: &Value) -> String {
    let mut v = Some(object);
    for key in f.path {
        v = v.and_then(|x| x.get(key));
    }
    let text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    let ips = |status: Option<&Value>| -> Vec<String> {
        status
            .and_then(|s| s.get("podIPs"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|ip| ip.get("ip").and_then(Value::as_str).map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let found = match f.how {
        How::Scalar => v.and_then(text),
        How::PodIp => v
            .and_then(|s| s.get("podIP"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .or_else(|| ips(v).into_iter().next()),
        How::PodIps => Some(ips(v).join(",")).filter(|s| !s.is_empty()),
    };
    // An empty string is an unset field (a protobuf client writes Go's zero values).
    found
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| f.default.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn def(group: &str, kind: &str) -> ResourceDef {
        ResourceDef::namespaced(group, "v1", "x", kind)
    }

    #[test]
    fn pod_fields_with_defaults() {
        let pod = json!({"spec": {"nodeName": "n1", "hostNetwork": true, "restartPolicy": ""},
            "status": {"podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}]}});
        let values = extract(&def("", "Pod"), &pod);
        let get = |l: &str| {
            values
                .iter()
                .find(|(k, _)| *k == l)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("spec.nodeName"), Some("n1"));
        assert_eq!(get("spec.hostNetwork"), Some("true"));
        assert_eq!(get("spec.restartPolicy"), Some("Always"));
        assert_eq!(get("status.phase"), Some("Pending"));
        assert_eq!(get("status.podIP"), Some("10.0.0.1"));
        assert_eq!(get("status.podIPs"), Some("10.0.0.1,fd00::1"));
        assert_eq!(get("metadata.name"), None, "answered by the metadata");
    }

    #[test]
    fn kinds_without_special_fields_get_the_generic_ones() {
        assert_eq!(
            label_names(&def("", "ConfigMap")),
            ["metadata.name", "metadata.namespace"]
        );
        assert_eq!(
            label_names(&def("", "Node")),
            ["metadata.name", "spec.unschedulable"]
        );
        let job = extract(&def("batch", "Job"), &json!({"status": {"succeeded": 3}}));
        assert_eq!(&*job, [("status.successful".into(), "3".to_owned())]);
    }

    #[test]
    fn custom_resources_add_their_selectable_fields() {
        let widgets = ResourceDef::namespaced("example.com", "v1", "widgets", "Widget")
            .with_selectable_fields(&[".spec.color", ".spec.replicas", ".spec.on", ".spec.gone"]);
        assert_eq!(
            label_names(&widgets),
            [
                "metadata.name",
                "metadata.namespace",
                "spec.color",
                "spec.replicas",
                "spec.on",
                "spec.gone"
            ]
        );
        let values = extract(
            &widgets,
            &json!({"spec": {"color": "red", "replicas": 3, "on": true}}),
        );
        let shown: Vec<(&str, &str)> = values.iter().map(|(l, v)| (&**l, v.as_str())).collect();
        assert_eq!(
            shown,
            [
                ("spec.color", "red"),
                ("spec.replicas", "3"),
                ("spec.on", "true"),
                ("spec.gone", "")
            ]
        );
    }
}
