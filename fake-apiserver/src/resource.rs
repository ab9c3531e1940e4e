//! The resource registry: which kinds of objects the fake server serves, and under which URLs.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

/// One kind of resource the fake server serves: `group/version`, plural name, kind, scope.
///
/// The built-in set ([`ResourceDef::builtins`]) is every resource a Kubernetes 1.37 API server
/// serves in a stable version (64 of them: pods, deployments, jobs, leases, RBAC, ...; the
/// list is generated from k8s-openapi, see the [module docs](super#built-in-resources)).
/// Others (custom resources) are registered at run time with
/// [`FakeApiServer::register`](super::FakeApiServer::register) and stored as schemaless JSON
/// like everything else.
///
/// ```
/// use fake_apiserver::ResourceDef;
///
/// let widgets = ResourceDef::namespaced("example.com", "v1", "widgets", "Widget");
/// assert_eq!(widgets.api_version(), "example.com/v1");
/// assert_eq!(widgets.list_kind, "WidgetList");
/// assert_eq!(
///     widgets.collection_path(Some("prod")),
///     "/apis/example.com/v1/namespaces/prod/widgets"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceDef {
    /// API group; empty for the core group.
    pub group: String,
    /// API version, for example `v1`.
    pub version: String,
    /// Plural resource name as it appears in URLs (`pods`).
    pub plural: String,
    /// Singular name (`pod`).
    pub singular: String,
    /// Object kind (`Pod`).
    pub kind: String,
    /// List kind (`PodList`).
    pub list_kind: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Short names for discovery (`po`).
    pub short_names: Vec<String>,
    /// Categories for discovery (`all` for `kubectl get all`).
    pub categories: Vec<String>,
    /// Whether the resource has a `status` subresource: then writes to the resource ignore
    /// `.status` and writes to `<object>/status` change only `.status`, as on the real server.
    pub status_subresource: bool,
    /// Whether the resource has a `scale` subresource (`autoscaling/v1` `Scale` over
    /// `.spec.replicas`).
    pub scale_subresource: bool,
    /// The OpenAPI definition name of the kind (`io.k8s.api.core.v1.Pod`) for built-in kinds.
    pub definition: Option<String>,
    /// Whether the kind has a protobuf encoding the HTTP front end speaks (built-in kinds).
    pub protobuf: bool,
    /// A custom resource's structural schema (its CRD's `openAPIV3Schema`): every write is
    /// pruned, defaulted and validated against it, as the real server does. `None`: stored
    /// as sent.
    pub schema: Option<Arc<Value>>,
    /// A custom resource's selectable fields (its CRD version's `selectableFields`, without
    /// the leading dot: `spec.color`): field selectors may use them besides `metadata.name`
    /// and `metadata.namespace`, as on the real server.
    pub selectable_fields: Vec<String>,
    /// A custom resource's printer columns (its CRD version's `additionalPrinterColumns`):
    /// the server's `Table`s (`kubectl get`) show them after NAME, as the real server does;
    /// empty: NAME and AGE.
    pub printer_columns: Vec<PrinterColumn>,
    /// A custom resource's `scale` subresource (its CRD version's `subresources.scale`):
    /// where the `Scale`'s replicas and selector live in the object. `None` with
    /// [`scale_subresource`](Self::scale_subresource) set: the built-in workloads' layout
    /// (`.spec.replicas`, `.status.replicas`, `.spec.selector`).
    pub scale_paths: Option<ScalePaths>,
    /// A deprecated version's warning (a CRD version's `deprecated: true`, with its
    /// `deprecationWarning` or upstream's default text): every request to this version
    /// answers it in a `Warning` header, as the real server does. `None`: not deprecated.
    pub deprecation_warning: Option<String>,
}

/// Where a custom resource's `scale` subresource reads and writes (a CRD's
/// `subresources.scale`), as dot paths without the leading dot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    /// `specReplicasPath` (`spec.replicas`): the `Scale`'s `spec.replicas`, read and written.
    pub spec_replicas: String,
    /// `statusReplicasPath` (`status.replicas`): the `Scale`'s `status.replicas`.
    pub status_replicas: String,
    /// `labelSelectorPath` (`status.selector`): a string, the `Scale`'s `status.selector`.
    pub label_selector: Option<String>,
}

/// One of a CRD version's `additionalPrinterColumns`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrinterColumn {
    /// The column's header (`Replicas`).
    pub name: String,
    /// `integer`, `number`, `string`, `boolean` or `date` (shown as an age).
    pub type_name: String,
    /// An OpenAPI format hint (`int32`, `date-time`...), passed on to clients.
    pub format: String,
    /// The column's description.
    pub description: String,
    /// 0: shown by default; higher: only in wide output (`kubectl get -o wide`).
    pub priority: i32,
    /// A JSONPath into the object, as client-go's (`.spec.replicas`,
    /// `.status.conditions[?(@.type=="Ready")].status`).
    pub json_path: String,
}

impl ResourceDef {
    /// A namespaced resource; singular and list kind are derived from `kind`.
    pub fn namespaced(group: &str, version: &str, plural: &str, kind: &str) -> Self {
        Self::new(group, version, plural, kind, true)
    }

    /// A cluster-scoped resource; singular and list kind are derived from `kind`.
    pub fn cluster_scoped(group: &str, version: &str, plural: &str, kind: &str) -> Self {
        Self::new(group, version, plural, kind, false)
    }

    fn new(group: &str, version: &str, plural: &str, kind: &str, namespaced: bool) -> Self {
        Self {
            group: group.to_owned(),
            version: version.to_owned(),
            plural: plural.to_owned(),
            singular: kind.to_ascii_lowercase(),
            kind: kind.to_owned(),
            list_kind: format!("{kind}List"),
            namespaced,
            short_names: Vec::new(),
            categories: Vec::new(),
            status_subresource: false,
            scale_subresource: false,
            definition: None,
            protobuf: false,
            schema: None,
            selectable_fields: Vec::new(),
            printer_columns: Vec::new(),
            scale_paths: None,
            deprecation_warning: None,
        }
    }

    /// Sets the structural schema writes are pruned, defaulted and validated against.
    pub fn with_schema(mut self, schema: Value) -> Self {
        self.schema = Some(Arc::new(schema));
        self
    }

    /// Sets the selectable fields (dot paths into the object, `spec.color`; a leading dot is
    /// dropped) field selectors may use, as a CRD version's `selectableFields` do.
    ///
    /// ```
    /// use fake_apiserver::ResourceDef;
    ///
    /// let def = ResourceDef::namespaced("example.com", "v1", "widgets", "Widget")
    ///     .with_selectable_fields(&[".spec.color"]);
    /// assert_eq!(def.field_labels(), ["metadata.name", "metadata.namespace", "spec.color"]);
    /// ```
    pub fn with_selectable_fields(mut self, paths: &[&str]) -> Self {
        self.selectable_fields = paths
            .iter()
            .map(|p| p.trim_start_matches('.').to_owned())
            .collect();
        self
    }

    /// Adds short names (for discovery).
    pub fn with_short_names(mut self, names: &[&str]) -> Self {
        self.short_names = names.iter().map(|n| (*n).to_owned()).collect();
        self
    }

    /// Whether this is the core group's pods (graceful deletes, the eviction subresource).
    pub(crate) fn is_pods(&self) -> bool {
        self.group.is_empty() && self.plural == "pods"
    }

    /// Whether this is apps' DaemonSets (a template generation kept in an annotation).
    pub(crate) fn is_daemon_sets(&self) -> bool {
        self.group == "apps" && self.plural == "daemonsets"
    }

    /// Whether this is batch's Jobs (a selector generated on create).
    pub(crate) fn is_jobs(&self) -> bool {
        self.group == "batch" && self.plural == "jobs"
    }

    /// Whether this is certificates.k8s.io's signing requests (approval and issuance kept
    /// apart).
    pub(crate) fn is_csrs(&self) -> bool {
        self.group == "certificates.k8s.io" && self.plural == "certificatesigningrequests"
    }

    /// Whether this is apiextensions' CustomResourceDefinitions (stored versions recorded).
    pub(crate) fn is_crds(&self) -> bool {
        self.group == "apiextensions.k8s.io" && self.plural == "customresourcedefinitions"
    }

    /// Whether this is the core group's services (cluster IPs and node ports allocated).
    pub(crate) fn is_services(&self) -> bool {
        self.group.is_empty() && self.plural == "services"
    }

    /// Whether this is the core group's namespaces (the finalize subresource).
    pub(crate) fn is_namespaces(&self) -> bool {
        self.group.is_empty() && self.plural == "namespaces"
    }

    /// Whether this is the core group's service accounts (the token subresource).
    pub(crate) fn is_service_accounts(&self) -> bool {
        self.group.is_empty() && self.plural == "serviceaccounts"
    }

    /// `apiVersion` of the objects: `v1` for the core group, else `group/version`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The resource's name qualified by its group, as error messages and kubectl spell it:
    /// `pods`, `deployments.apps`.
    pub fn qualified_name(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// Whether `name` designates this resource: its plural, `plural.group`,
    /// `plural.version.group` (as kubectl spells one version of a resource served in several:
    /// `widgets.v2.example.com`), singular or a short name.
    ///
    /// ```
    /// use fake_apiserver::ResourceDef;
    ///
    /// let v2 = ResourceDef::namespaced("example.com", "v2", "widgets", "Widget");
    /// assert!(v2.is_named("widgets.example.com") && v2.is_named("widgets.v2.example.com"));
    /// assert!(!v2.is_named("widgets.v1.example.com"));
    /// ```
    pub fn is_named(&self, name: &str) -> bool {
        match name.split_once('.') {
            Some((plural, rest)) => {
                let group_matches = rest == self.group
                    || rest
                        .strip_prefix(self.version.as_str())
                        .and_then(|r| r.strip_prefix('.'))
                        .is_some_and(|g| g == self.group);
                group_matches && (plural == self.plural || plural == self.singular)
            }
            None => {
                name == self.plural
                    || name == self.singular
                    || self.short_names.iter().any(|s| s == name)
            }
        }
    }

    /// The URL prefix of the group version: `/api/v1` or `/apis/<group>/<version>`.
    pub fn group_version_path(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }

    /// The collection URL path, in a namespace or across all of them.
    pub fn collection_path(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) if self.namespaced => {
                format!(
                    "{}/namespaces/{ns}/{}",
                    self.group_version_path(),
                    self.plural
                )
            }
            _ => format!("{}/{}", self.group_version_path(), self.plural),
        }
    }

    /// The URL path of one object.
    pub fn object_path(&self, namespace: Option<&str>, name: &str) -> String {
        format!("{}/{name}", self.collection_path(namespace))
    }
}

impl fmt::Display for ResourceDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.qualified_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_names() {
        let defs = ResourceDef::builtins();
        let pods = &defs[0];
        assert_eq!(pods.collection_path(Some("a")), "/api/v1/namespaces/a/pods");
        assert_eq!(pods.collection_path(None), "/api/v1/pods");
        assert_eq!(
            pods.object_path(Some("a"), "x"),
            "/api/v1/namespaces/a/pods/x"
        );
        assert!(pods.is_named("pods") && pods.is_named("po") && pods.is_named("pod"));
        let deploy = defs.iter().find(|d| d.plural == "deployments").unwrap();
        assert!(deploy.is_named("deployments.apps") && !deploy.is_named("deployments.extensions"));
        assert_eq!(deploy.qualified_name(), "deployments.apps");
        let ns = defs.iter().find(|d| d.plural == "namespaces").unwrap();
        assert_eq!(ns.collection_path(Some("ignored")), "/api/v1/namespaces");
    }

    #[test]
    fn names_follow_the_crd_grammars() {
        assert!(
            ResourceDef::namespaced("example.com", "v1alpha1", "widgets", "Widget")
                .validate()
                .is_ok()
        );
        assert!(
            ResourceDef::cluster_scoped("", "v1", "things", "Thing")
                .validate()
                .is_ok()
        );
        for def in ResourceDef::builtins() {
            assert!(def.validate().is_ok(), "{def}");
        }
        let bad = [
            ("../x", "v1", "widgets", "Widget", "spec.group"),
            ("Example.com", "v1", "widgets", "Widget", "spec.group"),
            ("example..com", "v1", "widgets", "Widget", "spec.group"),
            ("example.com", "V1", "widgets", "Widget", "spec.version"),
            ("example.com", "1", "widgets", "Widget", "spec.version"),
            ("example.com", "v1", "a/b", "Widget", "spec.names.plural"),
            ("example.com", "v1", "", "Widget", "spec.names.plural"),
            ("example.com", "v1", "widgets", "Wid get", "spec.names.kind"),
        ];
        for (group, version, plural, kind, field) in bad {
            let s = ResourceDef::namespaced(group, version, plural, kind)
                .validate()
                .unwrap_err();
            assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"), "{s:?}");
            let causes = &s.details.as_ref().unwrap().causes;
            assert!(causes.iter().any(|c| c.field == field), "{field}: {s:?}");
        }
        let long = "a".repeat(64);
        assert!(
            ResourceDef::namespaced("", "v1", &long, "Widget")
                .validate()
                .is_err()
        );
        let mut shorts = ResourceDef::namespaced("", "v1", "widgets", "Widget");
        shorts.short_names = vec!["w/".into()];
        assert!(shorts.validate().is_err());
    }
}
