//! The defaults the API server fills in when it decodes a built-in kind (its generated
//! defaulters calling `SetDefaults_<Type>` on every struct of the object, parents first, and
//! the declarative `+default` markers), read in `pkg/apis/core/v1/defaults.go`,
//! `pkg/apis/apps/v1/defaults.go`, `pkg/apis/batch/v1/defaults.go` and the other stable
//! groups' (`admissionregistration`, `autoscaling/v1` and `v2`, `networking`, `rbac`, `scheduling`,
//! `storage`, `discovery`) of kubernetes/kubernetes: a controller that compares what it asked for with what the server
//! stored sees the same extra fields it sees on a cluster.
//!
//! Go's notion of "not set" is kept: a pointer field is unset when absent or `null`; a string
//! when absent, `null` or empty; a number when absent, `null` or zero. The rounding of
//! `ResourceList`s to milli-units is done with the decoding (`typed.rs`, `quantity.rs`).
//! What is not done: pod-level resources' defaults (a beta feature), an image volume's pull
//! policy (a gated feature), and the defaults of the groups not named above (flow control's,
//! for one).

use serde_json::{Map, Value, json};

use crate::typed;

/// The defaults of every struct in `body`, a decoded object of OpenAPI definition
/// `definition`.
pub(crate) fn apply(definition: &str, body: &mut Value) {
    typed::walk_structs(definition, body, &mut |definition, object| {
        default_struct(definition, object);
    });
}

fn default_struct(definition: &str, o: &mut Map<String, Value>) {
    let Some(name) = definition.strip_prefix("io.k8s.api.") else {
        return;
    };
    match name {
        "apps.v1.Deployment" => deployment(o),
        "apps.v1.DaemonSet" => daemon_set(o),
        "apps.v1.StatefulSet" => stateful_set(o),
        "apps.v1.ReplicaSet" => {
            if let Some(spec) = object(o, "spec") {
                pointer(spec, "replicas", json!(1));
            }
        }
        "batch.v1.Job" => job(o),
        "batch.v1.PodFailurePolicyOnPodConditionsPattern" => string(o, "status", "True"),
        "batch.v1.CronJob" => cron_job(o),
        "core.v1.Pod" => pod(o),
        "core.v1.ReplicationController" => replication_controller(o),
        "core.v1.LimitRangeItem" => limit_range_item(o),
        "core.v1.PodSpec" => pod_spec(o),
        "core.v1.Container" | "core.v1.EphemeralContainer" => container(o),
        "core.v1.ContainerPort" | "core.v1.EndpointPort" => string(o, "protocol", "TCP"),
        "core.v1.Probe" => {
            for (field, value) in [
                ("timeoutSeconds", 1),
                ("periodSeconds", 10),
                ("successThreshold", 1),
                ("failureThreshold", 3),
            ] {
                number(o, field, value);
            }
        }
        "core.v1.HTTPGetAction" => {
            string(o, "path", "/");
            string(o, "scheme", "HTTP");
        }
        // `VolumeSource` is inline: a volume naming no source is an `emptyDir`.
        "core.v1.Volume" if o.iter().all(|(k, v)| k == "name" || v.is_null()) => {
            o.insert("emptyDir".into(), json!({}));
        }
        "core.v1.SecretVolumeSource"
        | "core.v1.ConfigMapVolumeSource"
        | "core.v1.DownwardAPIVolumeSource"
        | "core.v1.ProjectedVolumeSource" => pointer(o, "defaultMode", json!(0o644)),
        "core.v1.ServiceAccountTokenProjection" => {
            pointer(o, "expirationSeconds", json!(3600));
        }
        "core.v1.HostPathVolumeSource" => pointer(o, "type", json!("")),
        "core.v1.ObjectFieldSelector" => string(o, "apiVersion", "v1"),
        "core.v1.Service" => service(o),
        "core.v1.ServicePort" => {
            string(o, "protocol", "TCP");
            let unset = match o.get("targetPort") {
                None | Some(Value::Null) => true,
                Some(Value::Number(n)) => n.as_i64() == Some(0),
                Some(Value::String(s)) => s.is_empty(),
                Some(_) => false,
            };
            if unset && let Some(port) = o.get("port").cloned() {
                o.insert("targetPort".into(), port);
            }
        }
        "core.v1.Secret" => string(o, "type", "Opaque"),
        "core.v1.PersistentVolume" => {
            if let Some(status) = object(o, "status") {
                string(status, "phase", "Pending");
            }
            if let Some(spec) = object(o, "spec") {
                string(spec, "persistentVolumeReclaimPolicy", "Retain");
                pointer(spec, "volumeMode", json!("Filesystem"));
            }
        }
        "core.v1.PersistentVolumeClaim" => {
            if let Some(status) = object(o, "status") {
                string(status, "phase", "Pending");
            }
        }
        "core.v1.PersistentVolumeClaimSpec" => pointer(o, "volumeMode", json!("Filesystem")),
        "core.v1.NodeStatus" => {
            if unset(o, "allocatable")
                && let Some(capacity) = o.get("capacity").filter(|c| !c.is_null()).cloned()
            {
                o.insert("allocatable".into(), capacity);
            }
        }
        _ => other_groups(name, o),
    }
}

/// `SetDefaults_ReplicationController`: the template's labels are the selector and the
/// labels when those are empty; one replica (declarative).
fn replication_controller(o: &mut Map<String, Value>) {
    let labels = template_labels(o);
    if let Some(spec) = object(o, "spec") {
        if let Some(labels) = &labels {
            if_empty(spec, "selector", labels);
        }
        pointer(spec, "replicas", json!(1));
    }
    if let (Some(labels), Some(meta)) = (&labels, object(o, "metadata")) {
        if_empty(meta, "labels", labels);
    }
}

/// The labels of a workload's pod template, when it has some.
fn template_labels(o: &Map<String, Value>) -> Option<Value> {
    o.get("spec")
        .and_then(|s| s.pointer("/template/metadata/labels"))
        .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
        .cloned()
}

/// A map field's default: `value` when the field is absent, `null` or empty.
fn if_empty(o: &mut Map<String, Value>, key: &str, value: &Value) {
    if o.get(key)
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty)
    {
        o.insert(key.into(), value.clone());
    }
}

/// `SetDefaults_LimitRangeItem`: a container limit's default limit from its max, its
/// default request from its default limit, then from its min.
fn limit_range_item(o: &mut Map<String, Value>) {
    if o.get("type").and_then(Value::as_str) != Some("Container") {
        return;
    }
    let list = |o: &Map<String, Value>, key: &str| -> Map<String, Value> {
        o.get(key)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let mut default = list(o, "default");
    for (key, value) in list(o, "max") {
        default.entry(key).or_insert(value);
    }
    let mut request = list(o, "defaultRequest");
    for (key, value) in default.iter().chain(list(o, "min").iter()) {
        request.entry(key.clone()).or_insert_with(|| value.clone());
    }
    // Go's empty maps are not written (`omitempty`).
    for (key, map) in [("default", default), ("defaultRequest", request)] {
        if !map.is_empty() {
            o.insert(key.into(), Value::Object(map));
        }
    }
}

/// The defaults of the stable groups besides core, apps and batch (`pkg/apis/<group>/v1`
/// and `autoscaling/v2`'s `defaults.go`): webhooks and admission policies, autoscalers,
/// network policies and ingress classes, role bindings, priority classes, storage classes
/// and CSI drivers, endpoint slices' ports.
fn other_groups(name: &str, o: &mut Map<String, Value>) {
    match name {
        "admissionregistration.v1.ValidatingWebhook"
        | "admissionregistration.v1.MutatingWebhook" => {
            pointer(o, "failurePolicy", json!("Fail"));
            pointer(o, "matchPolicy", json!("Equivalent"));
            pointer(o, "namespaceSelector", json!({}));
            pointer(o, "objectSelector", json!({}));
            pointer(o, "timeoutSeconds", json!(10));
            if name.ends_with("MutatingWebhook") {
                pointer(o, "reinvocationPolicy", json!("Never"));
            }
        }
        // `SetDefaults_Rule`, on the rule these embed.
        "admissionregistration.v1.RuleWithOperations"
        | "admissionregistration.v1.NamedRuleWithOperations" => {
            pointer(o, "scope", json!("*"));
        }
        "admissionregistration.v1.ServiceReference" => pointer(o, "port", json!(443)),
        "admissionregistration.v1.ValidatingAdmissionPolicySpec" => {
            pointer(o, "failurePolicy", json!("Fail"));
        }
        "admissionregistration.v1.MatchResources" => {
            pointer(o, "matchPolicy", json!("Equivalent"));
            pointer(o, "namespaceSelector", json!({}));
            pointer(o, "objectSelector", json!({}));
        }
        "autoscaling.v2.HorizontalPodAutoscaler" => autoscaler(o),
        // `autoscaling/v1`'s own: the rest comes with the conversion to v2.
        "autoscaling.v1.HorizontalPodAutoscaler" => {
            if let Some(spec) = object(o, "spec") {
                pointer(spec, "minReplicas", json!(1));
            }
        }
        "networking.v1.NetworkPolicy" => {
            if let Some(spec) = object(o, "spec") {
                let none = spec
                    .get("policyTypes")
                    .and_then(Value::as_array)
                    .is_none_or(Vec::is_empty);
                if none {
                    let egress = spec
                        .get("egress")
                        .and_then(Value::as_array)
                        .is_some_and(|e| !e.is_empty());
                    let types = if egress {
                        json!(["Ingress", "Egress"])
                    } else {
                        json!(["Ingress"])
                    };
                    spec.insert("policyTypes".into(), types);
                }
            }
        }
        "networking.v1.NetworkPolicyPort" => pointer(o, "protocol", json!("TCP")),
        "networking.v1.IngressClass" => {
            let parameters = o
                .get_mut("spec")
                .and_then(|s| s.get_mut("parameters"))
                .and_then(Value::as_object_mut);
            if let Some(parameters) = parameters {
                pointer(parameters, "scope", json!("Cluster"));
            }
        }
        "rbac.v1.RoleBinding" | "rbac.v1.ClusterRoleBinding" => {
            if let Some(role) = object(o, "roleRef") {
                string(role, "apiGroup", "rbac.authorization.k8s.io");
            }
        }
        "rbac.v1.Subject" => {
            let kind = o.get("kind").and_then(Value::as_str).unwrap_or("");
            if matches!(kind, "User" | "Group") {
                string(o, "apiGroup", "rbac.authorization.k8s.io");
            }
        }
        "scheduling.v1.PriorityClass" => {
            pointer(o, "preemptionPolicy", json!("PreemptLowerPriority"));
        }
        "storage.v1.StorageClass" => {
            pointer(o, "reclaimPolicy", json!("Delete"));
            pointer(o, "volumeBindingMode", json!("Immediate"));
        }
        "storage.v1.CSIDriverSpec" => {
            pointer(o, "attachRequired", json!(true));
            pointer(o, "podInfoOnMount", json!(false));
            pointer(o, "storageCapacity", json!(false));
            pointer(o, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
            let modes = o
                .get("volumeLifecycleModes")
                .and_then(Value::as_array)
                .is_some_and(|m| !m.is_empty());
            if !modes {
                o.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
            }
            pointer(o, "requiresRepublish", json!(false));
        }
        "discovery.v1.EndpointPort" => {
            pointer(o, "name", json!(""));
            pointer(o, "protocol", json!("TCP"));
        }
        _ => {}
    }
}

/// `SetDefaults_HorizontalPodAutoscaler`: one replica at least, CPU at 80% when no metric
/// is named, and a behavior's unset rules filled with the ones that repeat the controller's
/// older behavior.
fn autoscaler(o: &mut Map<String, Value>) {
    let Some(spec) = object(o, "spec") else {
        return;
    };
    pointer(spec, "minReplicas", json!(1));
    let metrics = spec
        .get("metrics")
        .and_then(Value::as_array)
        .is_some_and(|m| !m.is_empty());
    if !metrics {
        spec.insert(
            "metrics".into(),
            json!([{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80}}}]),
        );
    }
    let Some(behavior) = spec.get_mut("behavior").and_then(Value::as_object_mut) else {
        return;
    };
    let up = json!({"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15}]});
    let down = json!({"selectPolicy": "Max", "policies": [
        {"type": "Percent", "value": 100, "periodSeconds": 15}]});
    for (key, mut rules) in [("scaleUp", up), ("scaleDown", down)] {
        // `copyHPAScalingRules`: the fields the behavior sets win.
        if let (Some(given), Some(filled)) = (
            behavior.get(key).and_then(Value::as_object),
            rules.as_object_mut(),
        ) {
            for (field, value) in given.iter().filter(|(_, v)| !v.is_null()) {
                filled.insert(field.clone(), value.clone());
            }
        }
        behavior.insert(key.into(), rules);
    }
}

/// Whether field `key` of `o` is unset as Go sees a pointer: absent or `null`.
fn unset(o: &Map<String, Value>, key: &str) -> bool {
    o.get(key).is_none_or(Value::is_null)
}

/// A pointer field's default.
fn pointer(o: &mut Map<String, Value>, key: &str, value: Value) {
    if unset(o, key) {
        o.insert(key.into(), value);
    }
}

/// A string field's default (unset: absent, `null` or empty).
fn string(o: &mut Map<String, Value>, key: &str, value: &str) {
    if unset(o, key) || o.get(key).is_some_and(|v| v.as_str() == Some("")) {
        o.insert(key.into(), Value::String(value.into()));
    }
}

/// A number field's default (unset: absent, `null` or zero).
fn number(o: &mut Map<String, Value>, key: &str, value: i64) {
    if unset(o, key) || o.get(key).is_some_and(|v| v.as_i64() == Some(0)) {
        o.insert(key.into(), Value::from(value));
    }
}

/// A struct field, or a pointer to one: made an empty object when absent or `null` (a Go
/// struct is always there; the pointers this is used for are defaulted to a new struct);
/// `None` when it holds something else (the decoding refused that already).
fn object<'a>(o: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    if unset(o, key) {
        o.insert(key.into(), json!({}));
    }
    o.get_mut(key).and_then(Value::as_object_mut)
}

fn deployment(o: &mut Map<String, Value>) {
    let Some(spec) = object(o, "spec") else {
        return;
    };
    pointer(spec, "replicas", json!(1));
    if let Some(strategy) = object(spec, "strategy") {
        string(strategy, "type", "RollingUpdate");
        if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            && let Some(rolling) = object(strategy, "rollingUpdate")
        {
            pointer(rolling, "maxUnavailable", json!("25%"));
            pointer(rolling, "maxSurge", json!("25%"));
        }
    }
    pointer(spec, "revisionHistoryLimit", json!(10));
    pointer(spec, "progressDeadlineSeconds", json!(600));
}

fn daemon_set(o: &mut Map<String, Value>) {
    let Some(spec) = object(o, "spec") else {
        return;
    };
    if let Some(strategy) = object(spec, "updateStrategy") {
        string(strategy, "type", "RollingUpdate");
        if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            && let Some(rolling) = object(strategy, "rollingUpdate")
        {
            pointer(rolling, "maxUnavailable", json!(1));
            pointer(rolling, "maxSurge", json!(0));
        }
    }
    pointer(spec, "revisionHistoryLimit", json!(10));
}

fn stateful_set(o: &mut Map<String, Value>) {
    let Some(spec) = object(o, "spec") else {
        return;
    };
    string(spec, "podManagementPolicy", "OrderedReady");
    if let Some(strategy) = object(spec, "updateStrategy") {
        if unset(strategy, "type") || strategy.get("type").and_then(Value::as_str) == Some("") {
            strategy.insert("type".into(), json!("RollingUpdate"));
            object(strategy, "rollingUpdate");
        }
        if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            && let Some(Value::Object(rolling)) = strategy.get_mut("rollingUpdate")
        {
            pointer(rolling, "partition", json!(0));
        }
    }
    if let Some(retention) = object(spec, "persistentVolumeClaimRetentionPolicy") {
        string(retention, "whenDeleted", "Retain");
        string(retention, "whenScaled", "Retain");
    }
    pointer(spec, "replicas", json!(1));
    pointer(spec, "revisionHistoryLimit", json!(10));
}

fn job(o: &mut Map<String, Value>) {
    let template_labels = template_labels(o);
    let Some(spec) = object(o, "spec") else {
        return;
    };
    if unset(spec, "completions") && unset(spec, "parallelism") {
        spec.insert("completions".into(), json!(1));
    }
    pointer(spec, "parallelism", json!(1));
    // Per-index back-off makes the whole job's limit unbounded.
    let per_index = !unset(spec, "backoffLimitPerIndex");
    pointer(
        spec,
        "backoffLimit",
        json!(if per_index { i32::MAX } else { 6 }),
    );
    pointer(spec, "completionMode", json!("NonIndexed"));
    pointer(spec, "suspend", json!(false));
    // `JobPodReplacementPolicy` (GA): with a pod failure policy only failed pods are
    // replaced.
    let replacement = if unset(spec, "podFailurePolicy") {
        "TerminatingOrFailed"
    } else {
        "Failed"
    };
    pointer(spec, "podReplacementPolicy", json!(replacement));
    pointer(spec, "manualSelector", json!(false));
    if let (Some(labels), Some(meta)) = (&template_labels, object(o, "metadata")) {
        if_empty(meta, "labels", labels);
    }
}

fn cron_job(o: &mut Map<String, Value>) {
    let Some(spec) = object(o, "spec") else {
        return;
    };
    string(spec, "concurrencyPolicy", "Allow");
    pointer(spec, "suspend", json!(false));
    pointer(spec, "successfulJobsHistoryLimit", json!(3));
    pointer(spec, "failedJobsHistoryLimit", json!(1));
}

fn pod(o: &mut Map<String, Value>) {
    let Some(spec) = object(o, "spec") else {
        return;
    };
    // Only a Pod (not a template): requests default to limits, container by container.
    for list in ["containers", "initContainers"] {
        let Some(Value::Array(containers)) = spec.get_mut(list) else {
            continue;
        };
        for container in containers.iter_mut().filter_map(Value::as_object_mut) {
            let Some(resources) = container
                .get_mut("resources")
                .and_then(Value::as_object_mut)
            else {
                continue;
            };
            let Some(Value::Object(limits)) = resources.get("limits").cloned() else {
                continue;
            };
            if let Some(requests) = object(resources, "requests") {
                for (resource, quantity) in limits {
                    requests.entry(resource).or_insert(quantity);
                }
            }
        }
    }
    pointer(spec, "enableServiceLinks", json!(true));
    if spec.get("hostNetwork") == Some(&Value::Bool(true)) {
        for list in ["containers", "initContainers"] {
            let Some(Value::Array(containers)) = spec.get_mut(list) else {
                continue;
            };
            for container in containers.iter_mut().filter_map(Value::as_object_mut) {
                let Some(Value::Array(ports)) = container.get_mut("ports") else {
                    continue;
                };
                for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                    if let Some(container_port) = port.get("containerPort").cloned() {
                        let unset = port.get("hostPort").is_none_or(|h| h.is_null() || h == 0);
                        if unset {
                            port.insert("hostPort".into(), container_port);
                        }
                    }
                }
            }
        }
    }
}

fn pod_spec(o: &mut Map<String, Value>) {
    string(o, "dnsPolicy", "ClusterFirst");
    string(o, "restartPolicy", "Always");
    pointer(o, "securityContext", json!({}));
    pointer(o, "terminationGracePeriodSeconds", json!(30));
    string(o, "schedulerName", "default-scheduler");
}

fn container(o: &mut Map<String, Value>) {
    let unset_policy = o
        .get("imagePullPolicy")
        .is_none_or(|p| p.is_null() || p.as_str() == Some(""));
    if unset_policy {
        let image = o.get("image").and_then(Value::as_str).unwrap_or("");
        let policy = if image_tag(image) == "latest" {
            "Always"
        } else {
            "IfNotPresent"
        };
        o.insert("imagePullPolicy".into(), json!(policy));
    }
    string(o, "terminationMessagePath", "/dev/termination-log");
    string(o, "terminationMessagePolicy", "File");
}

/// The tag of an image reference as upstream's `parsers.ParseImageName` reads it: after the
/// last `:` of the last path segment, `latest` when there is neither tag nor digest, empty
/// when there is only a digest.
fn image_tag(image: &str) -> &str {
    let (name, digest) = match image.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (image, None),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    match last.rsplit_once(':') {
        Some((_, tag)) => tag,
        None if digest.is_some() => "",
        None => "latest",
    }
}

fn service(o: &mut Map<String, Value>) {
    let Some(spec) = object(o, "spec") else {
        return;
    };
    string(spec, "sessionAffinity", "None");
    match spec.get("sessionAffinity").and_then(Value::as_str) {
        Some("None") => {
            spec.remove("sessionAffinityConfig");
        }
        Some("ClientIP") => {
            let timeout = spec
                .get("sessionAffinityConfig")
                .and_then(|c| c.pointer("/clientIP/timeoutSeconds"))
                .filter(|t| !t.is_null());
            if timeout.is_none() {
                spec.insert(
                    "sessionAffinityConfig".into(),
                    json!({"clientIP": {"timeoutSeconds": 10800}}),
                );
            }
        }
        _ => {}
    }
    string(spec, "type", "ClusterIP");
    let kind = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let has_external_ips = spec
        .get("externalIPs")
        .and_then(Value::as_array)
        .is_some_and(|ips| !ips.is_empty());
    let externally_accessible =
        kind == "LoadBalancer" || kind == "NodePort" || (kind == "ClusterIP" && has_external_ips);
    if externally_accessible {
        string(spec, "externalTrafficPolicy", "Cluster");
    }
    if matches!(kind.as_str(), "NodePort" | "LoadBalancer" | "ClusterIP") {
        pointer(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if kind == "LoadBalancer" {
        pointer(spec, "allocateLoadBalancerNodePorts", json!(true));
        if let Some(Value::Array(ingress)) = o
            .get_mut("status")
            .and_then(|s| s.pointer_mut("/loadBalancer/ingress"))
        {
            for entry in ingress.iter_mut().filter_map(Value::as_object_mut) {
                let has_ip = entry
                    .get("ip")
                    .and_then(Value::as_str)
                    .is_some_and(|ip| !ip.is_empty());
                if has_ip {
                    pointer(entry, "ipMode", json!("VIP"));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn defaulted(definition: &str, mut body: Value) -> Value {
        apply(definition, &mut body);
        body
    }

    #[test]
    fn a_deployment_and_its_pod_template_get_upstream_s_defaults() {
        let deployment = defaulted(
            "io.k8s.api.apps.v1.Deployment",
            json!({"spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"spec": {
                "containers": [
                    {"name": "web", "image": "nginx", "ports": [{"containerPort": 80}],
                     "readinessProbe": {"httpGet": {"port": 80}}},
                    {"name": "side", "image": "registry:5000/tools/side:1.2", "imagePullPolicy": "Never"}
                ],
                "volumes": [{"name": "scratch"}, {"name": "conf", "configMap": {"name": "c"}}]
            }}}}),
        );
        let spec = &deployment["spec"];
        assert_eq!(spec["replicas"], 1);
        assert_eq!(
            spec["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        assert_eq!(
            (
                &spec["revisionHistoryLimit"],
                &spec["progressDeadlineSeconds"]
            ),
            (&json!(10), &json!(600))
        );
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["dnsPolicy"], "ClusterFirst");
        assert_eq!(pod["restartPolicy"], "Always");
        assert_eq!(pod["securityContext"], json!({}));
        assert_eq!(pod["terminationGracePeriodSeconds"], 30);
        assert_eq!(pod["schedulerName"], "default-scheduler");
        assert!(
            pod.get("enableServiceLinks").is_none(),
            "only a Pod gets it, not a template"
        );
        let web = &pod["containers"][0];
        assert_eq!(web["imagePullPolicy"], "Always", "no tag is latest");
        assert_eq!(web["terminationMessagePath"], "/dev/termination-log");
        assert_eq!(web["terminationMessagePolicy"], "File");
        assert_eq!(web["ports"][0]["protocol"], "TCP");
        assert_eq!(
            web["readinessProbe"],
            json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                   "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(pod["containers"][1]["imagePullPolicy"], "Never");
        assert_eq!(
            pod["volumes"][0],
            json!({"name": "scratch", "emptyDir": {}})
        );
        assert_eq!(
            pod["volumes"][1]["configMap"],
            json!({"name": "c", "defaultMode": 420})
        );

        // Set values stay; a Recreate strategy gets no rolling update.
        let set = defaulted(
            "io.k8s.api.apps.v1.Deployment",
            json!({"spec": {"replicas": 0, "strategy": {"type": "Recreate"}, "template": {"spec": {"dnsPolicy": "None"}}}}),
        );
        assert_eq!(set["spec"]["replicas"], 0);
        assert_eq!(set["spec"]["strategy"], json!({"type": "Recreate"}));
        assert_eq!(set["spec"]["template"]["spec"]["dnsPolicy"], "None");
    }

    #[test]
    fn pods_services_jobs_and_stateful_sets_get_upstream_s_defaults() {
        let pod = defaulted(
            "io.k8s.api.core.v1.Pod",
            json!({"spec": {"hostNetwork": true, "containers": [{"name": "a", "image": "a@sha256:00",
                "resources": {"limits": {"cpu": "1"}, "requests": {"memory": "1Gi"}},
                "ports": [{"containerPort": 8080}]}]}}),
        );
        let a = &pod["spec"]["containers"][0];
        assert_eq!(a["imagePullPolicy"], "IfNotPresent", "a digest has no tag");
        assert_eq!(
            a["resources"]["requests"],
            json!({"cpu": "1", "memory": "1Gi"})
        );
        assert_eq!(
            a["ports"][0],
            json!({"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"})
        );
        assert_eq!(pod["spec"]["enableServiceLinks"], true);

        let service = defaulted(
            "io.k8s.api.core.v1.Service",
            json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 443}, {"port": 80, "targetPort": "http"}]}}),
        );
        assert_eq!(
            service["spec"],
            json!({"type": "LoadBalancer", "sessionAffinity": "None", "externalTrafficPolicy": "Cluster",
                   "internalTrafficPolicy": "Cluster", "allocateLoadBalancerNodePorts": true,
                   "ports": [{"port": 443, "protocol": "TCP", "targetPort": 443},
                             {"port": 80, "protocol": "TCP", "targetPort": "http"}]})
        );
        let sticky = defaulted(
            "io.k8s.api.core.v1.Service",
            json!({"spec": {"sessionAffinity": "ClientIP"}}),
        );
        assert_eq!(
            sticky["spec"]["sessionAffinityConfig"],
            json!({"clientIP": {"timeoutSeconds": 10800}})
        );
        assert_eq!(sticky["spec"]["type"], "ClusterIP");
        assert!(sticky["spec"].get("externalTrafficPolicy").is_none());

        let job = defaulted(
            "io.k8s.api.batch.v1.Job",
            json!({"metadata": {"name": "j"}, "spec": {"template": {"metadata": {"labels": {"run": "j"}}, "spec": {"restartPolicy": "Never"}}}}),
        );
        assert_eq!(
            (
                &job["spec"]["completions"],
                &job["spec"]["parallelism"],
                &job["spec"]["backoffLimit"]
            ),
            (&json!(1), &json!(1), &json!(6))
        );
        assert_eq!(
            (&job["spec"]["completionMode"], &job["spec"]["suspend"]),
            (&json!("NonIndexed"), &json!(false))
        );
        assert_eq!(job["metadata"]["labels"], json!({"run": "j"}));
        assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never");
        let parallel = defaulted(
            "io.k8s.api.batch.v1.Job",
            json!({"spec": {"parallelism": 3}}),
        );
        assert!(parallel["spec"].get("completions").is_none());

        let set = defaulted(
            "io.k8s.api.apps.v1.StatefulSet",
            json!({"spec": {"volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {}}]}}),
        );
        assert_eq!(
            set["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
        );
        assert_eq!(set["spec"]["podManagementPolicy"], "OrderedReady");
        assert_eq!(
            set["spec"]["persistentVolumeClaimRetentionPolicy"],
            json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
        );
        assert_eq!(
            set["spec"]["volumeClaimTemplates"][0]["spec"]["volumeMode"],
            "Filesystem"
        );
        let secret = defaulted("io.k8s.api.core.v1.Secret", json!({"data": {}}));
        assert_eq!(secret["type"], "Opaque");
    }

    /// The realistic pods the seeding writes (and the benchmarks list) are what a cluster
    /// stores: they decode with no unknown field and the defaults add nothing to them.
    #[test]
    fn replication_controllers_and_limit_ranges_get_theirs() {
        let mut rc = json!({"metadata": {"name": "old"}, "spec": {"template": {
            "metadata": {"labels": {"app": "old"}}, "spec": {"containers": []}}}});
        apply("io.k8s.api.core.v1.ReplicationController", &mut rc);
        assert_eq!(
            (
                &rc["spec"]["selector"],
                &rc["metadata"]["labels"],
                &rc["spec"]["replicas"]
            ),
            (&json!({"app": "old"}), &json!({"app": "old"}), &json!(1))
        );
        let mut limits = json!({"spec": {"limits": [{"type": "Container",
            "max": {"cpu": "2"}, "min": {"memory": "64Mi"}, "default": {"memory": "1Gi"}}]}});
        apply("io.k8s.api.core.v1.LimitRange", &mut limits);
        assert_eq!(
            limits["spec"]["limits"][0],
            json!({"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"},
                   "default": {"memory": "1Gi", "cpu": "2"},
                   "defaultRequest": {"memory": "1Gi", "cpu": "2"}})
        );
    }

    #[test]
    fn other_groups_get_their_defaults() {
        let mut webhook = json!({"webhooks": [{"name": "v.example.com",
            "clientConfig": {"service": {"namespace": "a", "name": "hook"}},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": ["pods"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"]}]});
        apply(
            "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration",
            &mut webhook,
        );
        let hook = &webhook["webhooks"][0];
        assert_eq!(
            (
                &hook["failurePolicy"],
                &hook["matchPolicy"],
                &hook["namespaceSelector"],
                &hook["objectSelector"],
                &hook["timeoutSeconds"],
                &hook["reinvocationPolicy"],
                &hook["rules"][0]["scope"],
                &hook["clientConfig"]["service"]["port"],
            ),
            (
                &json!("Fail"),
                &json!("Equivalent"),
                &json!({}),
                &json!({}),
                &json!(10),
                &json!("Never"),
                &json!("*"),
                &json!(443)
            )
        );
        let mut hpa = json!({"spec": {"maxReplicas": 5, "behavior": {"scaleDown": {
            "stabilizationWindowSeconds": 60}}}});
        apply(
            "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler",
            &mut hpa,
        );
        assert_eq!(hpa["spec"]["minReplicas"], 1);
        assert_eq!(
            hpa["spec"]["metrics"][0]["resource"]["target"],
            json!({"type": "Utilization", "averageUtilization": 80})
        );
        assert_eq!(
            hpa["spec"]["behavior"]["scaleDown"],
            json!({"stabilizationWindowSeconds": 60, "selectPolicy": "Max",
                   "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]})
        );
        assert_eq!(
            hpa["spec"]["behavior"]["scaleUp"]["policies"][0]["value"],
            4
        );
        let mut policy =
            json!({"spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}]}]}});
        apply("io.k8s.api.networking.v1.NetworkPolicy", &mut policy);
        assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert_eq!(policy["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
        let mut binding = json!({"roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "jane"},
                         {"kind": "ServiceAccount", "name": "bot", "namespace": "a"}]});
        apply("io.k8s.api.rbac.v1.RoleBinding", &mut binding);
        assert_eq!(binding["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
        assert_eq!(
            binding["subjects"][0]["apiGroup"],
            "rbac.authorization.k8s.io"
        );
        assert_eq!(binding["subjects"][1].get("apiGroup"), None);
        let mut class = json!({"provisioner": "example.com/disk"});
        apply("io.k8s.api.storage.v1.StorageClass", &mut class);
        assert_eq!(
            (&class["reclaimPolicy"], &class["volumeBindingMode"]),
            (&json!("Delete"), &json!("Immediate"))
        );
    }

    #[test]
    fn seeded_pods_are_already_decoded_and_defaulted() {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for i in 0..50 {
            let pod = crate::seed::pod("ns", &format!("p{i}"), &mut rng);
            let mut body = pod.clone();
            assert_eq!(
                typed::decode("io.k8s.api.core.v1.Pod", &mut body),
                Ok(Vec::new())
            );
            apply("io.k8s.api.core.v1.Pod", &mut body);
            assert_eq!(body, pod);
        }
    }

    #[test]
    fn image_tags_are_read_as_upstream_reads_them() {
        for (image, tag) in [
            ("nginx", "latest"),
            ("nginx:latest", "latest"),
            ("nginx:1.27", "1.27"),
            ("localhost:5000/nginx", "latest"),
            ("localhost:5000/nginx:2", "2"),
            ("nginx@sha256:abc", ""),
            ("nginx:1@sha256:abc", "1"),
        ] {
            assert_eq!(image_tag(image), tag, "{image}");
        }
    }
}
