//! Discovery: `/api`, `/apis`, `/api/v1`, `/apis/<group>[/<version>]` (legacy JSON and the
//! aggregated `apidiscovery.k8s.io` form kubectl asks for first), and `/version`.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::ResourceDef;
use crate::versions::by_priority;

/// The Kubernetes version the fake server reports at `/version` and in OpenAPI documents.
pub(crate) const KUBERNETES_VERSION: (&str, &str) = ("1", "37");

/// The verbs every resource supports.
pub(crate) const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// The verbs of a `status` subresource.
const STATUS_VERBS: &[&str] = &["get", "patch", "update"];

/// The verbs of a `scale` subresource.
const SCALE_VERBS: &[&str] = &["get", "patch", "update"];

/// Resources that have a `status` subresource (writes to it change only `.status`).
pub(crate) fn has_status(def: &ResourceDef) -> bool {
    def.status_subresource
}

/// One served version of a group and its resources.
pub(crate) type VersionResources = (String, Vec<Arc<ResourceDef>>);

/// One group and its versions.
pub(crate) type GroupEntry = (String, Vec<VersionResources>);

/// The group versions served, in first-registered order, each with its resources.
pub(crate) struct GroupVersions {
    /// `(group, versions)`; each version with its resources.
    pub groups: Vec<GroupEntry>,
    /// `(group, plural)` of the resources that take `create` only (the reviews).
    create_only: Vec<(String, String)>,
}

impl GroupVersions {
    pub(crate) fn new(resources: &[Arc<ResourceDef>]) -> Self {
        let mut groups: Vec<GroupEntry> = Vec::new();
        for def in resources {
            let gi = match groups.iter().position(|(g, _)| *g == def.group) {
                Some(i) => i,
                None => {
                    groups.push((def.group.clone(), Vec::new()));
                    groups.len() - 1
                }
            };
            let versions = &mut groups[gi].1;
            let vi = match versions.iter().position(|(v, _)| *v == def.version) {
                Some(i) => i,
                None => {
                    versions.push((def.version.clone(), Vec::new()));
                    versions.len() - 1
                }
            };
            versions[vi].1.push(Arc::clone(def));
        }
        for (_, versions) in &mut groups {
            // Upstream lists a group's versions by priority, the preferred one first (`v2`,
            // `v1`, `v1beta1`, ...); a stable sort keeps equal ones as registered.
            versions.sort_by(|(a, _), (b, _)| by_priority(a, b));
        }
        Self {
            groups,
            create_only: Vec::new(),
        }
    }

    /// `resources` and `create_only`, the resources that take `create` only (the reviews).
    pub(crate) fn with_create_only(
        resources: &[Arc<ResourceDef>],
        create_only: &[Arc<ResourceDef>],
    ) -> Self {
        let all: Vec<Arc<ResourceDef>> = resources.iter().chain(create_only).cloned().collect();
        let mut gvs = Self::new(&all);
        gvs.create_only = create_only
            .iter()
            .map(|d| (d.group.clone(), d.plural.clone()))
            .collect();
        gvs
    }

    /// The verbs of a resource: every verb, or `create` alone.
    fn verbs(&self, def: &ResourceDef) -> &'static [&'static str] {
        if self.is_create_only(def) {
            &["create"]
        } else {
            VERBS
        }
    }

    /// Whether a resource takes `create` only (a review).
    pub(crate) fn is_create_only(&self, def: &ResourceDef) -> bool {
        self.create_only
            .iter()
            .any(|(g, p)| *g == def.group && *p == def.plural)
    }

    /// The resources of one group version, `None` if it is not served.
    pub(crate) fn resources(&self, group: &str, version: &str) -> Option<&[Arc<ResourceDef>]> {
        self.versions(group)?
            .iter()
            .find(|(v, _)| v == version)
            .map(|(_, r)| r.as_slice())
    }

    fn versions(&self, group: &str) -> Option<&[VersionResources]> {
        self.groups
            .iter()
            .find(|(g, _)| g == group)
            .map(|(_, v)| v.as_slice())
    }

    fn named_groups(&self) -> impl Iterator<Item = &GroupEntry> {
        self.groups.iter().filter(|(g, _)| !g.is_empty())
    }
}

/// `GET /api`: `APIVersions`.
pub(crate) fn api_versions(gvs: &GroupVersions, server_address: &str) -> Value {
    let versions: Vec<&str> = gvs
        .versions("")
        .map(|v| v.iter().map(|(v, _)| v.as_str()).collect())
        .unwrap_or_default();
    json!({
        "kind": "APIVersions",
        "versions": versions,
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn api_group(group: &str, versions: &[VersionResources]) -> Value {
    let list: Vec<Value> = versions
        .iter()
        .map(|(v, _)| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    let preferred = list.first().cloned().unwrap_or(Value::Null);
    json!({
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": list,
        "preferredVersion": preferred,
    })
}

/// `GET /apis`: `APIGroupList`.
pub(crate) fn api_group_list(gvs: &GroupVersions) -> Value {
    let groups: Vec<Value> = gvs
        .named_groups()
        .map(|(g, versions)| {
            let mut v = api_group(g, versions);
            if let Some(m) = v.as_object_mut() {
                m.remove("kind");
                m.remove("apiVersion");
            }
            v
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `GET /apis/<group>`: `APIGroup`, `None` for an unknown group.
pub(crate) fn api_group_of(gvs: &GroupVersions, group: &str) -> Option<Value> {
    if group.is_empty() {
        return None;
    }
    gvs.versions(group).map(|v| api_group(group, v))
}

/// A subresource the server serves: its name, the kind it answers, its verbs.
struct Subresource<'d> {
    name: &'static str,
    group: &'d str,
    version: &'d str,
    kind: &'d str,
    verbs: &'static [&'static str],
}

/// The subresources of `def`, as both discovery forms list them.
fn subresources(def: &ResourceDef) -> Vec<Subresource<'_>> {
    let own = |name, verbs| Subresource {
        name,
        group: &def.group,
        version: &def.version,
        kind: &def.kind,
        verbs,
    };
    let other = |name, group, version, kind, verbs| Subresource {
        name,
        group,
        version,
        kind,
        verbs,
    };
    let mut subs = Vec::new();
    if has_status(def) {
        subs.push(own("status", STATUS_VERBS));
    }
    if def.scale_subresource {
        subs.push(other("scale", "autoscaling", "v1", "Scale", SCALE_VERBS));
    }
    if def.is_pods() {
        subs.push(other("eviction", "policy", "v1", "Eviction", &["create"]));
        subs.push(own("ephemeralcontainers", &["get", "patch", "update"]));
        subs.push(own("resize", &["get", "patch", "update"]));
        subs.push(own("log", &["get"]));
        subs.push(other(
            "exec",
            "",
            "v1",
            "PodExecOptions",
            &["create", "get"],
        ));
        subs.push(other("binding", "", "v1", "Binding", &["create"]));
    }
    if def.is_namespaces() {
        subs.push(own("finalize", &["update"]));
    }
    if def.is_csrs() {
        subs.push(own("approval", &["get", "patch", "update"]));
    }
    if def.is_service_accounts() {
        subs.push(other(
            "token",
            "authentication.k8s.io",
            "v1",
            "TokenRequest",
            &["create"],
        ));
    }
    subs
}

/// `GET /api/v1`, `GET /apis/<group>/<version>`: `APIResourceList`, `None` if not served.
pub(crate) fn api_resource_list(gvs: &GroupVersions, group: &str, version: &str) -> Option<Value> {
    let defs = gvs.resources(group, version)?;
    let mut resources = Vec::new();
    for def in defs {
        let mut r = json!({
            "name": def.plural,
            "singularName": def.singular,
            "namespaced": def.namespaced,
            "kind": def.kind,
            "verbs": gvs.verbs(def),
        });
        if !def.short_names.is_empty() {
            r["shortNames"] = json!(def.short_names);
        }
        if !def.categories.is_empty() {
            r["categories"] = json!(def.categories);
        }
        resources.push(r);
        for sub in subresources(def) {
            let mut entry = json!({
                "name": format!("{}/{}", def.plural, sub.name),
                "singularName": "",
                "namespaced": def.namespaced,
                "kind": sub.kind,
                "verbs": sub.verbs,
            });
            if (sub.group, sub.version) != (def.group.as_str(), def.version.as_str()) {
                entry["group"] = json!(sub.group);
                entry["version"] = json!(sub.version);
            }
            resources.push(entry);
        }
    }
    let gv = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": gv,
        "resources": resources,
    }))
}

/// The aggregated discovery versions the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Aggregated {
    /// `apidiscovery.k8s.io/v2`.
    V2,
    /// `apidiscovery.k8s.io/v2beta1`.
    V2Beta1,
}

impl Aggregated {
    fn version(self) -> &'static str {
        match self {
            Self::V2 => "v2",
            Self::V2Beta1 => "v2beta1",
        }
    }

    /// The response's `Content-Type`, which tells client-go the body is aggregated.
    pub(crate) fn content_type(self) -> String {
        format!(
            "application/json;g=apidiscovery.k8s.io;v={};as=APIGroupDiscoveryList",
            self.version()
        )
    }
}

/// What an `Accept` header asks of `/api` or `/apis`: the first media type the server can
/// produce wins (`None`: legacy JSON).
pub(crate) fn negotiate_discovery(accept: Option<&str>) -> Option<Aggregated> {
    for media in accept.unwrap_or("").split(',') {
        let params = MediaType::parse(media);
        if !params.is_json() {
            continue;
        }
        if params.param("as") == Some("APIGroupDiscoveryList")
            && params.param("g") == Some("apidiscovery.k8s.io")
        {
            match params.param("v") {
                Some("v2") => return Some(Aggregated::V2),
                Some("v2beta1") => return Some(Aggregated::V2Beta1),
                _ => continue,
            }
        }
        // Plain JSON (no `as=`) is legacy discovery; anything else is skipped.
        params.param("as")?;
    }
    None
}

/// One media type of an `Accept` header: `type/subtype;k=v;...`.
pub(crate) struct MediaType<'a> {
    essence: &'a str,
    params: Vec<(&'a str, &'a str)>,
}

impl<'a> MediaType<'a> {
    pub(crate) fn parse(text: &'a str) -> Self {
        let mut parts = text.split(';');
        let essence = parts.next().unwrap_or("").trim();
        let params = parts
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.trim(), v.trim().trim_matches('"')))
            .collect();
        Self { essence, params }
    }

    /// The media type without parameters (`application/json`).
    pub(crate) fn essence(&self) -> &'a str {
        self.essence
    }

    /// `application/json` or a wildcard.
    pub(crate) fn is_json(&self) -> bool {
        matches!(self.essence, "application/json" | "*/*" | "application/*")
    }

    pub(crate) fn param(&self, name: &str) -> Option<&'a str> {
        self.params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
    }
}

/// `GET /api` (`core = true`) or `GET /apis` in aggregated form.
pub(crate) fn aggregated(gvs: &GroupVersions, core: bool, form: Aggregated) -> Value {
    let items: Vec<Value> = gvs
        .groups
        .iter()
        .filter(|(g, _)| g.is_empty() == core)
        .map(|(group, versions)| {
            let versions: Vec<Value> = versions
                .iter()
                .map(|(version, defs)| {
                    let resources: Vec<Value> =
                        defs.iter().map(|d| discovery_resource(gvs, d)).collect();
                    json!({"version": version, "resources": resources, "freshness": "Current"})
                })
                .collect();
            let metadata = if group.is_empty() {
                json!({"creationTimestamp": null})
            } else {
                json!({"name": group, "creationTimestamp": null})
            };
            json!({"metadata": metadata, "versions": versions})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{}", form.version()),
        "metadata": {},
        "items": items,
    })
}

fn discovery_resource(gvs: &GroupVersions, def: &ResourceDef) -> Value {
    let kind = json!({"group": def.group, "version": def.version, "kind": def.kind});
    let mut r = json!({
        "resource": def.plural,
        "responseKind": kind,
        "scope": if def.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": def.singular,
        "verbs": gvs.verbs(def),
    });
    if !def.short_names.is_empty() {
        r["shortNames"] = json!(def.short_names);
    }
    if !def.categories.is_empty() {
        r["categories"] = json!(def.categories);
    }
    let subresources: Vec<Value> = subresources(def)
        .into_iter()
        .map(|sub| {
            json!({
                "subresource": sub.name,
                "responseKind": {"group": sub.group, "version": sub.version, "kind": sub.kind},
                "verbs": sub.verbs,
            })
        })
        .collect();
    if !subresources.is_empty() {
        r["subresources"] = Value::Array(subresources);
    }
    r
}

/// `GET /version`.
pub(crate) fn version_info() -> Value {
    let (major, minor) = KUBERNETES_VERSION;
    json!({
        "major": major,
        "minor": minor,
        "gitVersion": format!("v{major}.{minor}.0-fake"),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gvs() -> GroupVersions {
        let defs: Vec<Arc<ResourceDef>> =
            ResourceDef::builtins().into_iter().map(Arc::new).collect();
        GroupVersions::new(&defs)
    }

    #[test]
    fn kubectl_accept_header_gets_aggregated_v2() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,\
                       application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,\
                       application/json";
        assert_eq!(negotiate_discovery(Some(kubectl)), Some(Aggregated::V2));
        let beta = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(negotiate_discovery(Some(beta)), Some(Aggregated::V2Beta1));
        assert_eq!(negotiate_discovery(Some("application/json")), None);
        assert_eq!(negotiate_discovery(None), None);
        assert_eq!(
            negotiate_discovery(Some(
                "application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
            )),
            None
        );
    }

    #[test]
    fn legacy_documents() {
        let gvs = gvs();
        let api = api_versions(&gvs, "127.0.0.1:1");
        assert_eq!(api["versions"], json!(["v1"]));
        let groups = api_group_list(&gvs);
        assert_eq!(groups["groups"][0]["name"], "apps");
        assert_eq!(
            groups["groups"][0]["preferredVersion"]["groupVersion"],
            "apps/v1"
        );
        let core = api_resource_list(&gvs, "", "v1").unwrap();
        let pods = &core["resources"][0];
        assert_eq!(pods["name"], "pods");
        assert_eq!(pods["shortNames"], json!(["po"]));
        assert_eq!(core["resources"][1]["name"], "pods/status");
        assert!(api_resource_list(&gvs, "apps", "v2").is_none());
        assert!(
            api_group_of(&gvs, "apps").is_some() && api_group_of(&gvs, "example.com").is_none()
        );
    }

    #[test]
    fn aggregated_documents() {
        let gvs = gvs();
        let core = aggregated(&gvs, true, Aggregated::V2);
        assert_eq!(core["items"].as_array().unwrap().len(), 1);
        let pods = &core["items"][0]["versions"][0]["resources"][0];
        assert_eq!(pods["scope"], "Namespaced");
        assert_eq!(pods["responseKind"]["kind"], "Pod");
        let apis = aggregated(&gvs, false, Aggregated::V2Beta1);
        assert_eq!(apis["apiVersion"], "apidiscovery.k8s.io/v2beta1");
        assert_eq!(apis["items"][0]["metadata"]["name"], "apps");
    }
}
