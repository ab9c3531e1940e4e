//! The built-in resources: every resource a Kubernetes 1.37 API server serves in a stable
//! version (HorizontalPodAutoscalers in two, [`crate::twins`]), read from `builtin_resources.txt`, which `cargo xtask codegen` generates from
//! k8s-openapi's `Resource` impls (group, version, kind, list kind, plural, scope, and whether
//! the type has a `status`). What k8s-openapi does not know is added here: short names and
//! categories (which the real server's registry declares), and the `scale` subresource.

use super::ResourceDef;

/// The generated table; see the header of the file for its columns.
const TABLE: &str = include_str!("builtin_resources.txt");

/// Short names, as the real server's discovery documents list them.
const SHORT_NAMES: &[(&str, &str, &[&str])] = &[
    ("", "componentstatuses", &["cs"]),
    ("", "configmaps", &["cm"]),
    ("", "endpoints", &["ep"]),
    ("", "events", &["ev"]),
    ("", "limitranges", &["limits"]),
    ("", "namespaces", &["ns"]),
    ("", "nodes", &["no"]),
    ("", "persistentvolumeclaims", &["pvc"]),
    ("", "persistentvolumes", &["pv"]),
    ("", "pods", &["po"]),
    ("", "replicationcontrollers", &["rc"]),
    ("", "resourcequotas", &["quota"]),
    ("", "serviceaccounts", &["sa"]),
    ("", "services", &["svc"]),
    (
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        &["crd", "crds"],
    ),
    ("apps", "daemonsets", &["ds"]),
    ("apps", "deployments", &["deploy"]),
    ("apps", "replicasets", &["rs"]),
    ("apps", "statefulsets", &["sts"]),
    ("autoscaling", "horizontalpodautoscalers", &["hpa"]),
    ("batch", "cronjobs", &["cj"]),
    (
        "certificates.k8s.io",
        "certificatesigningrequests",
        &["csr"],
    ),
    ("events.k8s.io", "events", &["ev"]),
    ("networking.k8s.io", "ingresses", &["ing"]),
    ("networking.k8s.io", "networkpolicies", &["netpol"]),
    ("networking.k8s.io", "ipaddresses", &["ip"]),
    ("policy", "poddisruptionbudgets", &["pdb"]),
    ("scheduling.k8s.io", "priorityclasses", &["pc"]),
    ("storage.k8s.io", "storageclasses", &["sc"]),
];

/// Resources in the `all` category (`kubectl get all`).
const CATEGORY_ALL: &[(&str, &str)] = &[
    ("", "pods"),
    ("", "replicationcontrollers"),
    ("", "services"),
    ("apps", "daemonsets"),
    ("apps", "deployments"),
    ("apps", "replicasets"),
    ("apps", "statefulsets"),
    ("autoscaling", "horizontalpodautoscalers"),
    ("batch", "cronjobs"),
    ("batch", "jobs"),
];

/// Resources with a `scale` subresource (`autoscaling/v1` `Scale`).
const SCALE: &[(&str, &str)] = &[
    ("", "replicationcontrollers"),
    ("apps", "deployments"),
    ("apps", "replicasets"),
    ("apps", "statefulsets"),
];

/// The order the first resources keep (the set served before the table existed, in the order
/// discovery listed them); everything else follows in the table's order (group, plural).
const FIRST: &[(&str, &str)] = &[
    ("", "pods"),
    ("", "configmaps"),
    ("", "secrets"),
    ("", "services"),
    ("", "namespaces"),
    ("", "nodes"),
    ("", "events"),
    ("apps", "deployments"),
];

impl ResourceDef {
    /// The built-in resources: every resource of Kubernetes 1.37 in each stable version,
    /// newest first (only HorizontalPodAutoscalers have two), core/v1 first (pods, configmaps, secrets, services, namespaces, nodes, events,
    /// ...), then apps/v1, then the other groups.
    pub fn builtins() -> Vec<Self> {
        builtins()
    }
}

/// Every built-in resource, core group first, then `apps`, then the others by group.
pub(crate) fn builtins() -> Vec<ResourceDef> {
    let mut defs: Vec<ResourceDef> = TABLE
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(parse_line)
        .collect();
    let rank = |d: &ResourceDef| {
        let first = FIRST
            .iter()
            .position(|(g, p)| *g == d.group && *p == d.plural)
            .unwrap_or(FIRST.len());
        let group = match d.group.as_str() {
            "" => 0,
            "apps" => 1,
            _ => 2,
        };
        (group, first)
    };
    // A stable sort keeps the table's order within a rank.
    defs.sort_by_key(rank);
    defs
}

fn parse_line(line: &str) -> Option<ResourceDef> {
    let cols: Vec<&str> = line.split_whitespace().collect();
    let [
        group,
        version,
        plural,
        kind,
        list_kind,
        scope,
        status,
        definition,
        protobuf,
    ] = cols.as_slice()
    else {
        return None;
    };
    let group = if *group == "-" { "" } else { group };
    let mut def = if *scope == "N" {
        ResourceDef::namespaced(group, version, plural, kind)
    } else {
        ResourceDef::cluster_scoped(group, version, plural, kind)
    };
    def.list_kind = (*list_kind).to_owned();
    def.status_subresource = *status == "1";
    def.scale_subresource = SCALE.contains(&(group, plural));
    def.definition = Some((*definition).to_owned());
    def.protobuf = *protobuf == "1";
    if let Some((_, _, names)) = SHORT_NAMES
        .iter()
        .find(|(g, p, _)| *g == group && p == plural)
    {
        def.short_names = names.iter().map(|n| (*n).to_owned()).collect();
    }
    if CATEGORY_ALL.contains(&(group, plural)) {
        def.categories = vec!["all".to_owned()];
    }
    if group == "apiextensions.k8s.io" {
        def.categories = vec!["api-extensions".to_owned()];
    }
    Some(def)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_covers_the_stable_api() {
        let defs = builtins();
        assert!(defs.len() >= 60, "{}", defs.len());
        let find = |g: &str, p: &str| {
            defs.iter()
                .find(|d| d.group == g && d.plural == p)
                .unwrap_or_else(|| panic!("{g}/{p} missing"))
        };
        assert_eq!(defs[0].plural, "pods");
        let rs = find("apps", "replicasets");
        assert!(rs.namespaced && rs.status_subresource && rs.scale_subresource);
        assert_eq!(rs.short_names, ["rs"]);
        assert_eq!(
            rs.definition.as_deref(),
            Some("io.k8s.api.apps.v1.ReplicaSet")
        );
        let hpa = find("autoscaling", "horizontalpodautoscalers");
        assert_eq!(hpa.version, "v2", "the newest stable version first");
        let versions: Vec<&str> = defs
            .iter()
            .filter(|d| d.plural == "horizontalpodautoscalers")
            .map(|d| d.version.as_str())
            .collect();
        assert_eq!(versions, ["v2", "v1"]);
        let pv = find("", "persistentvolumes");
        assert!(!pv.namespaced);
        let lease = find("coordination.k8s.io", "leases");
        assert!(!lease.status_subresource && lease.protobuf);
        for (g, p) in [
            ("", "serviceaccounts"),
            ("", "endpoints"),
            ("", "resourcequotas"),
            ("", "limitranges"),
            ("batch", "cronjobs"),
            ("discovery.k8s.io", "endpointslices"),
            ("networking.k8s.io", "ingresses"),
            ("networking.k8s.io", "ingressclasses"),
            ("networking.k8s.io", "networkpolicies"),
            ("rbac.authorization.k8s.io", "clusterrolebindings"),
            ("policy", "poddisruptionbudgets"),
            ("storage.k8s.io", "storageclasses"),
            ("scheduling.k8s.io", "priorityclasses"),
            ("events.k8s.io", "events"),
        ] {
            find(g, p);
        }
        assert!(
            defs.iter().all(|d| d
                .version
                .strip_prefix('v')
                .is_some_and(|n| n.parse::<u32>().is_ok())),
            "stable versions only"
        );
    }
}
