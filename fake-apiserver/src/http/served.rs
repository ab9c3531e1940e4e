//! What the fake API server serves and what it does not, as text for `fake-apiserver --help`
//! (built from the same tables the server uses, so it cannot drift from them).

use std::fmt::Write as _;

use crate::ResourceDef;

/// A plain-text summary of what the fake API server serves: every built-in resource by group
/// version (with its subresources), the field selectors beyond `metadata.name` and
/// `metadata.namespace`, admission, content types, limits and safety (with the flags that
/// change them), and what is not served.
pub fn served_summary() -> String {
    let defs = ResourceDef::builtins();
    let mut out = String::from("What is served (Kubernetes 1.37's stable API, as JSON objects):\n");
    let mut groups: Vec<(String, Vec<&ResourceDef>)> = Vec::new();
    for def in &defs {
        let gv = def.api_version();
        match groups.iter_mut().find(|(g, _)| *g == gv) {
            Some((_, list)) => list.push(def),
            None => groups.push((gv, vec![def])),
        }
    }
    for (gv, list) in &groups {
        let names: Vec<String> = list
            .iter()
            .map(|d| {
                let mut name = d.plural.clone();
                let mut subs = Vec::new();
                if d.status_subresource {
                    subs.push("status");
                }
                if d.scale_subresource {
                    subs.push("scale");
                }
                if !subs.is_empty() {
                    let _ = write!(name, "[{}]", subs.join(","));
                }
                name
            })
            .collect();
        let _ = writeln!(out, "  {gv}: {}", names.join(" "));
    }
    out.push_str(
        "  [status]: writes to the resource ignore .status, writes to <object>/status change \
         only .status. [scale]: autoscaling/v1 Scale over .spec.replicas (kubectl scale); \
         custom resources' over their CRD's subresources.scale paths.\n  \
         pods/<name>/log: what POST /_fake/pod-logs wrote as the container's output, read \
         as a kubelet serves it (kubectl logs, -f, --tail, --timestamps, --previous).\n  \
         pods/<name>/exec: WebSocket (v5/v4.channel.k8s.io), the command answered by PUT \
         /_fake/exec's rules (kubectl exec, with -i; exit codes).\n  \
         Custom resources: POST a CustomResourceDefinition (every served version, one \
         storage, as upstream's None conversion; under Webhook the storage version only), or \
         POST /_fake/resources.\n\nField selectors (every resource: metadata.name, and \
         metadata.namespace except nodes and namespaces):\n",
    );
    for def in &defs {
        let extra: Vec<&str> = def
            .field_labels()
            .into_iter()
            .filter(|l| !matches!(*l, "metadata.name" | "metadata.namespace"))
            .collect();
        if !extra.is_empty() {
            let _ = writeln!(
                out,
                "  {} ({}): {}",
                def.plural,
                def.api_version(),
                extra.join(", ")
            );
        }
    }
    out.push_str(
        "  Custom resources: their CRD's selectableFields. Other labels are a 400 \"field label \
         not supported\". Lists, watches and both front ends honour them.\n\n\
         Shard selectors (KEP-5866, Kubernetes 1.36 alpha, on here unless \
         --disable-sharded-list-and-watch): lists and watches honour shardSelector \
         (shardRange(object.metadata.uid|object.metadata.namespace, '0x<16 hex>', '0x<16 hex>' \
         or '0x10000000000000000') joined with ||; 64-bit FNV-1a of the field, [start, end)); \
         JSON and Table list answers echo it in metadata.shardInfo.selector (protobuf answers \
         do not: k8s-pb's ListMeta has no such field); a malformed one is a 400.\n\n\
         Admission and validation (requests only; the admin API and seeding write directly):\n  \
         a create in a namespace that does not exist is a 404, in one being deleted a 403, \
         and default, kube-system and kube-public cannot be deleted (--allow-missing-namespaces \
         turns this off); names must be DNS subdomains, label keys and values and annotation keys \
         valid, annotations at most 256 KiB (422 with causes); metadata fields of the wrong type \
         (`name: 5`) are a 400. Built-in kinds get upstream's defaults (core, apps, batch: \
         strategies, pod template policies, image pull policies, probes, service ports...). \
         No workload controllers (only the garbage \
         collector and the namespace controller, below), no RBAC. Built-in \
         kinds are decoded into their Go types: unknown fields are dropped with a warning \
         (fieldValidation=Strict, kubectl's default, refuses them; server-side apply always \
         does), values of the wrong type are a 400 in Go's words; custom resources \
         are pruned, defaulted and validated by their CRD's structural schema (type, \
         required, enum, bounds, pattern, format, combinators, CEL rules), and \
         fieldValidation=Strict refuses their undeclared fields. Dry runs (dryRun=All, or in a \
         DELETE's options) are answered and write nothing; metadata.generation is kept as the \
         real server keeps it; empty metadata values (finalizers: [], labels: {}) are not \
         stored. Events are one storage served as v1 and as events.k8s.io/v1 Events, fields \
         renamed as upstream converts them. Access reviews (kubectl auth can-i) are allowed \
         and who-am-I reviews answer system:admin: there is no authorizer. Deletes cascade to \
         dependents (ownerReferences) as the garbage collector does, by propagationPolicy \
         (Background by default, Foreground, Orphan), within the request; a deleted namespace \
         terminates and goes once its content is deleted (--disable-garbage-collection turns \
         both off). Evictions (pods/<name>/eviction) delete the pod unless its \
         PodDisruptionBudget's status forbids it (429); budgets' status is the caller's to \
         set, as no disruption controller runs. Bindings (pods/<name>/binding, bindings) \
         place a pod on a node as a scheduler does (409 once bound or while gated). \
         Pods created through requests get what the default admission plugins add: \
         serviceAccountName default and the kube-api-access token volume mounted in every \
         container (the account need not exist: no controller creates it), the priority of \
         their PriorityClass (403 for one that does not exist) or of the global default, \
         and five minutes of tolerating not-ready and unreachable nodes. \
         Ephemeral containers are added through pods/<name>/ephemeralcontainers (kubectl \
         debug), never removed or changed; no kubelet runs them. \
         ValidatingAdmissionPolicies and their bindings are enforced on every write (CEL; \
         Deny and Warn actions, parameters, match conditions). Admission webhooks \
         (Mutating/ValidatingWebhookConfigurations) are called over HTTPS at their \
         clientConfig.url, trusting their caBundle, on creates, updates, patches and deletes \
         of objects and their subresources (scale as Scales, evictions, bindings, token \
         requests, exec as CONNECT): rules, selectors, match conditions, JSON patches, \
         reinvocation, timeouts (at most 30 s), failurePolicy, sideEffects under dry runs; \
         a clientConfig.service is called where PUT /_fake/service-routes routes it (no \
         cluster network). \
         Containers are resized in place through pods/<name>/resize (kubectl patch \
         --subresource resize): CPU and memory only, the QoS class kept; no kubelet acts. \
         Namespaces' spec.finalizers change through namespaces/<name>/finalize (kubectl \
         replace --raw), which releases a terminating namespace. \
         Certificate signing requests record the caller as requester and are approved \
         through certificatesigningrequests/<name>/approval (kubectl certificate approve) \
         and issued through /status, as upstream's strategies allow; no signer runs. \
         Service account tokens \
         (serviceaccounts/<name>/token, kubectl create token) are JWTs with upstream's \
         claims, signed by no key, which TokenReviews authenticate until they expire or \
         their service account or bound object goes.\n\n\
         Content types: request bodies in application/json, application/yaml and \
         application/vnd.kubernetes.protobuf (built-in kinds), other types 415; bodies over \
         3 MiB 413. Answers in JSON, YAML or protobuf as Accept asks (406 when none can be \
         produced); watches in JSON lines or length-delimited protobuf; Tables (built-in \
         kinds with upstream's printer columns, custom resources with their CRD's \
         additionalPrinterColumns) and PartialObjectMetadata for kubectl. PATCH: merge, JSON, strategic merge (approximated: \
         merge keys of well-known lists) and server-side apply (field ownership in \
         metadata.managedFields, kept by every write; conflicts unless force=true).\n\n",
    );
    let _ = write!(
        out,
        "Limits and safety (defaults; the flags change them):\n  \
         a request head must arrive within {header} s of the accept or of its first byte \
         (--header-read-timeout); a keep-alive connection waits at most {idle} s for its next \
         request (--idle-timeout; never applies to an open watch); at most {conns} connections \
         at once, one more is closed as soon as it is accepted (--max-connections); an exec \
         session lasts at most {exec} s once upgraded (--exec-timeout); the \
         history of all resources holds at most {history} MiB of objects, oldest events first \
         out, watchers behind them get ERROR 410 (--history-max-bytes); churn never falls more \
         than {backlog} ms behind its rate (writes owed beyond that are skipped and counted, \
         GET /_fake/churn). timeoutSeconds: any value (negative ends the watch at once); \
         resourceVersions stop at {max_rv} (a write past it is a 500), never wrap. Requests \
         with a foreign Origin, or a Host other than the listener's address or localhost (DNS \
         rebinding), get a 403. Bearer tokens: the scheme in any case. --kubeconfig-out writes \
         mode 0600. SIGTERM or Ctrl-C stops the server within a second (requests in flight \
         get {grace} ms).\n\n",
        header = super::DEFAULT_HEADER_READ_TIMEOUT.as_secs_f64(),
        idle = super::DEFAULT_IDLE_TIMEOUT.as_secs_f64(),
        conns = super::DEFAULT_MAX_CONNECTIONS,
        exec = super::DEFAULT_EXEC_TIMEOUT.as_secs(),
        history = crate::DEFAULT_HISTORY_MAX_BYTES >> 20,
        backlog = crate::seed::MAX_CHURN_BACKLOG.as_millis(),
        max_rv = crate::MAX_RESOURCE_VERSION,
        grace = super::serve::SHUTDOWN_GRACE.as_millis(),
    );
    out.push_str(
        "Not served: alpha and beta API versions, other subresources (attach, portforward, \
         proxies), exec over SPDY, \
         aggregated APIs \
         (metrics), and protobuf for kinds newer than the k8s-pb crate's protos.\n",
    );
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn lists_resources_subresources_and_field_selectors() {
        let text = super::served_summary();
        assert!(
            text.contains("apps/v1: deployments[status,scale]"),
            "{text}"
        );
        assert!(text.contains("coordination.k8s.io/v1: leases"), "{text}");
        assert!(
            text.contains("pods (v1): spec.nodeName, spec.restartPolicy"),
            "{text}"
        );
        assert!(
            text.contains("application/vnd.kubernetes.protobuf"),
            "{text}"
        );
        for flag in [
            "--header-read-timeout",
            "--idle-timeout",
            "--max-connections",
            "--exec-timeout",
            "--history-max-bytes",
            "--disable-sharded-list-and-watch",
        ] {
            assert!(text.contains(flag), "{flag} is not documented: {text}");
        }
    }
}
