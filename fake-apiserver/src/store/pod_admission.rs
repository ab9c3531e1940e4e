//! What the API server's default admission plugins add to a pod created through a request,
//! before it is stored: `ServiceAccount` (`plugin/pkg/admission/serviceaccount`: the
//! `default` account, the projected `kube-api-access-<suffix>` token volume mounted at
//! `/var/run/secrets/kubernetes.io/serviceaccount` in every container, the account's image
//! pull secrets), `Priority` (`plugin/pkg/admission/priority`: the priority and preemption
//! policy of the pod's PriorityClass, or of the global default one, or 0 and
//! `PreemptLowerPriority`) and `DefaultTolerationSeconds` (five minutes of tolerating
//! `node.kubernetes.io/not-ready` and `unreachable`). A controller comparing the pod it
//! asked for with the one stored meets these fields as on a cluster.

use informer_core::Status;
use serde_json::{Value, json};

use super::Store;
use crate::object::meta_str;

/// Where the service account token is mounted.
const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The token volume's name prefix.
const TOKEN_VOLUME_PREFIX: &str = "kube-api-access-";
/// The priority classes the API server creates at start, with their values.
const SYSTEM_PRIORITY_CLASSES: [(&str, i64); 2] = [
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];

impl Store {
    /// Applies the default admission plugins to pod `name` (`body`, in `namespace`) about to
    /// be created; a 403 for a PriorityClass that does not exist or a priority that does
    /// not match its class.
    pub(super) fn admit_new_pod(
        &mut self,
        body: &mut Value,
        namespace: &str,
        name: &str,
    ) -> Result<(), Status> {
        let forbidden = |why: String| {
            Status::failure(
                403,
                "Forbidden",
                format!("pods {name:?} is forbidden: {why}"),
            )
        };
        let mirror = body
            .pointer("/metadata/annotations/kubernetes.io~1config.mirror")
            .is_some();
        let priority = self.pod_priority(body.get("spec").unwrap_or(&Value::Null));
        let Some(spec) = body.get_mut("spec").and_then(Value::as_object_mut) else {
            return Ok(());
        };
        if !mirror {
            // ServiceAccount: the account may not exist here, as no controller makes the
            // `default` one; the token is then mounted unless the pod says otherwise.
            let account_name = spec
                .get("serviceAccountName")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .unwrap_or("default")
                .to_owned();
            spec.insert("serviceAccountName".into(), json!(account_name));
            spec.insert("serviceAccount".into(), json!(account_name));
            let account = self.stored_object("", "serviceaccounts", Some(namespace), &account_name);
            let automount = spec
                .get("automountServiceAccountToken")
                .and_then(Value::as_bool)
                .or_else(|| {
                    account
                        .as_ref()
                        .and_then(|a| a.get("automountServiceAccountToken"))
                        .and_then(Value::as_bool)
                })
                .unwrap_or(true);
            if automount {
                let suffix = self.name_suffix();
                mount_token(spec, &format!("{TOKEN_VOLUME_PREFIX}{suffix}"));
            }
            let pull_secrets = spec
                .get("imagePullSecrets")
                .and_then(Value::as_array)
                .is_some_and(|s| !s.is_empty());
            if let Some(secrets) = account
                .as_ref()
                .and_then(|a| a.get("imagePullSecrets"))
                .and_then(Value::as_array)
                .filter(|s| !pull_secrets && !s.is_empty())
            {
                let names: Vec<Value> = secrets
                    .iter()
                    .map(|s| json!({"name": s.get("name").cloned().unwrap_or(Value::Null)}))
                    .collect();
                spec.insert("imagePullSecrets".into(), Value::Array(names));
            }
        }
        // Priority.
        let (class, value, policy) = priority.map_err(forbidden)?;
        if let Some(sent) = spec.get("priority").and_then(Value::as_i64)
            && sent != value
        {
            return Err(forbidden(format!(
                "the integer value of priority ({sent}) must not be provided in pod spec; \
                 priority admission controller computed {value} from the given PriorityClass \
                 name"
            )));
        }
        if let Some(sent) = spec.get("preemptionPolicy").and_then(Value::as_str)
            && sent != policy
        {
            return Err(forbidden(format!(
                "the string value of PreemptionPolicy ({sent}) must not be provided in pod \
                 spec; priority admission controller computed {policy} from the given \
                 PriorityClass name"
            )));
        }
        if let Some(class) = class {
            spec.insert("priorityClassName".into(), json!(class));
        }
        spec.insert("priority".into(), json!(value));
        spec.insert("preemptionPolicy".into(), json!(policy));
        // DefaultTolerationSeconds.
        let tolerations = spec
            .entry("tolerations")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(list) = tolerations.as_array_mut() {
            for key in [
                "node.kubernetes.io/not-ready",
                "node.kubernetes.io/unreachable",
            ] {
                let tolerated = list.iter().any(|t| {
                    let field = |f: &str| t.get(f).and_then(Value::as_str).unwrap_or("");
                    (field("key") == key || field("key").is_empty())
                        && (field("effect") == "NoExecute" || field("effect").is_empty())
                });
                if !tolerated {
                    list.push(
                        json!({"key": key, "operator": "Exists", "effect": "NoExecute",
                                     "tolerationSeconds": 300}),
                    );
                }
            }
        }
        Ok(())
    }

    /// The priority class a pod with `spec` gets (none: no class named, no global default),
    /// its value and its preemption policy; why not, for a class that does not exist.
    fn pod_priority(&self, spec: &Value) -> Result<(Option<String>, i64, String), String> {
        let policy_of = |class: &Value| {
            class
                .get("preemptionPolicy")
                .and_then(Value::as_str)
                .unwrap_or("PreemptLowerPriority")
                .to_owned()
        };
        let value_of = |class: &Value| class.get("value").and_then(Value::as_i64).unwrap_or(0);
        let named = spec
            .get("priorityClassName")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty());
        match named {
            Some(name) => {
                if let Some(class) =
                    self.stored_object("scheduling.k8s.io", "priorityclasses", None, name)
                {
                    return Ok((None, value_of(&class), policy_of(&class)));
                }
                SYSTEM_PRIORITY_CLASSES
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| (None, *v, "PreemptLowerPriority".to_owned()))
                    .ok_or_else(|| format!("no PriorityClass with name {name} was found"))
            }
            None => {
                // The global default with the highest value, as upstream picks it.
                let default = self
                    .stored("scheduling.k8s.io", "priorityclasses")
                    .into_iter()
                    .filter(|c| c.get("globalDefault").and_then(Value::as_bool) == Some(true))
                    .max_by_key(|c| value_of(c));
                Ok(match default {
                    Some(class) => (
                        meta_str(&class, "name").map(str::to_owned),
                        value_of(&class),
                        policy_of(&class),
                    ),
                    None => (None, 0, "PreemptLowerPriority".to_owned()),
                })
            }
        }
    }
}

/// Mounts the token volume `volume` (or the pod's own `kube-api-access-` volume) read-only at
/// the token path in every container and init container without a mount there, adding the
/// projected volume if one was mounted.
fn mount_token(spec: &mut serde_json::Map<String, Value>, volume: &str) {
    let existing = spec.get("volumes").and_then(Value::as_array).and_then(|v| {
        v.iter()
            .filter_map(|v| v.get("name").and_then(Value::as_str))
            .find(|n| n.starts_with(TOKEN_VOLUME_PREFIX))
            .map(str::to_owned)
    });
    let name = existing.clone().unwrap_or_else(|| volume.to_owned());
    let mut mounted = false;
    for list in ["initContainers", "containers"] {
        for container in spec
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            let Some(c) = container.as_object_mut() else {
                continue;
            };
            let mounts = c
                .entry("volumeMounts")
                .or_insert_with(|| Value::Array(Vec::new()));
            let Some(mounts) = mounts.as_array_mut() else {
                continue;
            };
            if mounts
                .iter()
                .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(TOKEN_MOUNT_PATH))
            {
                continue;
            }
            mounts.push(json!({"name": name, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH}));
            mounted = true;
        }
    }
    if mounted && existing.is_none() {
        let volumes = spec
            .entry("volumes")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(volumes) = volumes.as_array_mut() {
            volumes.push(json!({
                "name": name,
                "projected": {
                    "defaultMode": 420,
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {"configMap": {"name": "kube-root-ca.crt",
                                       "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                        {"downwardAPI": {"items": [{"path": "namespace",
                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
                    ],
                },
            }));
        }
    }
}
